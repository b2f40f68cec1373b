"""Plans: the Lemma 1 completion (exact and float64), the repair of LP flows, optimal
couplings (:mod:`mdsd_ot.exact.plans`)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts as D
from mdsd_ot.drafts import Vector
from mdsd_ot.exact import METHODS, draft_graph
from mdsd_ot.exact.plans import (
    complete_dense,
    complete_plan,
    optimal_plan,
    repair_matching,
)


def _solve(method: str, p, law):
    """Run a registered method directly (p validated once, as mdsd_ot.solve does)."""
    return METHODS[method].func(p if isinstance(p, Vector) else Vector(p, "p"), law)


# -- Lemma 1: complete_plan ------------------------------------------------------------------


def test_complete_plan_exact_marginals_and_value():
    """n = 1: the matching min(p, q) on the diagonal is maximum; completed, its value is
    Σ min(p, q) = 1 − TV exactly (T4) and its marginals are exactly p and q (Fractions)."""
    p = [Fraction(1, 2), Fraction(1, 3), Fraction(1, 6), Fraction(0)]
    q = [Fraction(1, 4), Fraction(1, 4), Fraction(1, 4), Fraction(1, 4)]
    law = D.WithReplacement(q, 1)
    items = law.joint_items(exact=True)
    matched = {(i, (i,)): min(p[i], q[i]) for i in range(4)}
    plan = complete_plan(p, items, matched)
    for i in range(4):
        assert sum(m for (j, _), m in plan.items() if j == i) == p[i]
    for t, w in items.items():
        assert sum(m for (_, s), m in plan.items() if s == t) == w
    value = sum(m for (i, t), m in plan.items() if i in t)
    assert value == sum(map(min, p, q)) == Fraction(2, 3)
    assert all(isinstance(m, Fraction) for m in plan.values())


def test_complete_plan_exact_n3():
    """n = 3 with a feasible (greedy, not maximum) matching: marginals still exact."""
    q = [Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)]
    p = [Fraction(1, 5), Fraction(2, 5), Fraction(2, 5)]
    items = D.WithoutReplacement(q, 3).joint_items(exact=True)
    r, s, matched = list(p), dict(items), {}
    for t in sorted(items):
        for i in set(t):
            m = min(r[i], s[t])
            if m > 0:
                matched[(i, t)] = m
                r[i] -= m
                s[t] -= m
    plan = complete_plan(p, items, matched)
    for i in range(3):
        assert sum(m for (j, _), m in plan.items() if j == i) == p[i]
    for t, w in items.items():
        assert sum(m for (_, u), m in plan.items() if u == t) == w


def test_complete_plan_rejects_overfull_matching():
    items = {(0,): Fraction(1, 2), (1,): Fraction(1, 2)}
    with pytest.raises(ValueError, match="matched"):
        complete_plan([Fraction(1, 4), Fraction(3, 4)], items, {(0, (0,)): Fraction(1, 2)})
    with pytest.raises(ValueError, match="matched"):
        complete_plan([Fraction(1, 2)] * 2, items, {(0, (5,)): Fraction(1, 4)})


def test_complete_dense_matches_complete_plan():
    """The float64 grid completion equals the generic one entry by entry (1e-15)."""
    rng = np.random.default_rng(3)
    p, law = rng.dirichlet(np.ones(4)), D.WithReplacement(rng.dirichlet(np.ones(4)), 2)
    g = draft_graph(law)
    x = repair_matching(p, g, np.zeros(len(g.edge_i)))  # a near-maximum b-matching
    C = complete_dense(p, g, x)
    matched = {
        (int(i), tuple(map(int, g.tuples[k]))): float(m)
        for i, k, m in zip(g.edge_i, g.edge_k, x, strict=True)
    }
    plan = complete_plan(list(p), g.items, matched)
    for (i, t), m in plan.items():
        k = next(j for j, u in enumerate(g.tuples.tolist()) if tuple(u) == t)
        assert abs(C[i, k] - m) <= 1e-15
    assert abs(sum(plan.values()) - 1.0) <= 1e-12
    # from zero flows the quantum is 1 / 2**30: the total is a lower bound on α*, short of it
    # by at most (V + K) quanta (the bound stated in repair_matching)
    alpha = _solve("subset", p, law)["alpha"]
    assert alpha - (g.V + g.K) / 2**30 <= x.sum() <= alpha + 1e-12


# -- optimal couplings ---------------------------------------------------------------------


def test_optimal_plan_refuses_huge_dense_plans():
    law = D.WithReplacement(np.full(40, 1 / 40), 3)
    with pytest.raises(ValueError, match="maxflow"):
        optimal_plan(np.full(40, 1 / 40), law, exact=True)
