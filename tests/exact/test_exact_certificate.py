"""Exact certificates (weak duality between the plan forms and subset selection (8); T1).

- certify(optimal_plan) and certify(maxflow plan, H) give exactly the bank's α* (Fractions).
- Hypothesis strategies producing Fractions: every optimal plan is certified exactly.
- Perturbed plans and wrong sets are rejected; float plans pass within the stated tolerance
  (1e-9 by default) and fail below their actual error.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mdsd_ot
from mdsd_ot import drafts
from mdsd_ot.exact.certificate import DEFAULT_TOL, certify
from mdsd_ot.exact.plans import optimal_plan
from mdsd_ot.exact.subset import subset_selection
from testkit import bank_alpha, bank_law, load_bank

BANK = [(inst, law) for inst in load_bank() if (law := bank_law(inst)) is not None]


def test_certified_optimal_plan_equals_bank_alpha():
    """A full coupling with marginals exactly p and p_draft attains α* (Lemma 1), certified
    exactly; the certificate's values equal the bank's α* to the last digit."""
    for inst, law in BANK:
        C, H, a = optimal_plan(inst["p"], law)
        c = certify(inst["p"], law, C, H)
        assert c.ok and c.exact and c.kind == "coupling", (inst, c.reason)
        assert c.primal_value == c.dual_value == a == bank_alpha(inst)
        assert c.row_error == c.col_error == c.negative_mass == 0


def test_certified_maxflow_plan_equals_bank_alpha():
    for inst, law in BANK:
        r = mdsd_ot.solve(inst["p"], law, method="maxflow")
        c = certify(inst["p"], law, r.plan, r.H)
        assert c.ok and c.exact, (inst, c.reason)
        assert c.kind in ("matching", "coupling")  # a b-matching; a coupling when α* = 1
        assert c.primal_value == c.dual_value == bank_alpha(inst)


def test_certified_reduced_plan_equals_bank_alpha():
    for inst, law in BANK[::3]:
        r = mdsd_ot.solve(inst["p"], law, method="reduced")
        c = certify(inst["p"], law, r.plan, r.H)
        assert c.ok and c.exact and c.kind == "reduced", (inst, c.reason)
        assert c.dual_value == bank_alpha(inst)


# ---- hypothesis: rational instances ------------------------------------------------------
def _dist(counts):
    s = sum(counts)
    return [Fraction(c, s) for c in counts]


@st.composite
def rational_instances(draw):
    V = draw(st.integers(2, 4))
    scheme = draw(
        st.sampled_from(
            ["with", "without", "conditional-poisson", "product", "greedy", "spechub", "explicit"]
        )
    )
    n = 2 if scheme == "spechub" else draw(st.integers(1, 3))
    counts = st.lists(st.integers(0, 9), min_size=V, max_size=V).filter(lambda c: sum(c) > 0)
    p = _dist(draw(counts))
    if scheme == "product":
        law = drafts.Product([_dist(draw(counts)) for _ in range(n)])
    elif scheme == "explicit":
        flat = draw(
            st.lists(st.integers(0, 5), min_size=V**n, max_size=V**n).filter(lambda c: sum(c) > 0)
        )
        law = drafts.Explicit(np.array(_dist(flat), dtype=object).reshape((V,) * n).tolist())
    else:
        q = draw(counts.filter(lambda c: sum(x > 0 for x in c) > n))  # room for every scheme
        law = drafts.make(scheme, _dist(q), n)
    return p, law


@settings(max_examples=60, derandomize=True, deadline=None)
@given(rational_instances())
def test_hypothesis_optimal_plans_certify_exactly(inst):
    p, law = inst
    C, H, a = optimal_plan(p, law)
    c = certify(p, law, C, H)
    assert c.ok and c.exact, c.reason
    ref, _ = subset_selection(p, law, exact=True)
    assert c.primal_value == ref == a
    # marginals exactly p and p_draft (checked independently of certify)
    axes = tuple(range(1, law.n + 1))
    assert list(C.sum(axis=axes)) == p
    items = law.joint_items(exact=True)
    J = C.sum(axis=0)
    assert all(J[t] == items.get(t, 0) for t in np.ndindex(*J.shape))


@settings(max_examples=40, derandomize=True, deadline=None)
@given(rational_instances(), st.integers(0, 10**6))
def test_hypothesis_perturbed_plans_and_wrong_sets_fail(inst, seed):
    p, law = inst
    C, H, a = optimal_plan(p, law)
    rng = np.random.default_rng(seed)
    nz = [k for k, v in np.ndenumerate(C) if v != 0]
    k = nz[rng.integers(len(nz))]
    eps = Fraction(1, 10**6)
    bad = C.copy()
    bad[k] = bad[k] + eps  # breaks a row and a column marginal
    assert not certify(p, law, bad, H).ok
    bad = C.copy()
    bad[k] = bad[k] - eps
    assert not certify(p, law, bad, H).ok
    # any set whose subset-form value exceeds α* is rejected with a positive gap
    for m in range(2**law.V):
        Hw = np.array([(m >> i) & 1 for i in range(law.V)], dtype=bool)
        val = sum((p[i] for i in np.flatnonzero(Hw)), Fraction(0)) + 1 - law.Q(Hw, exact=True)
        c = certify(p, law, C, Hw)
        assert c.ok == (val == a)
        assert c.gap == val - a


# ---- specific rejections ------------------------------------------------------------------
def _instance():
    law = drafts.WithoutReplacement(["1/2", "3/10", "1/5"], 2)
    p = ["1/5", "1/5", "3/5"]
    return p, law, *optimal_plan(p, law)


def test_rejects_mass_moved_off_the_matching():
    """Moving mass within a row keeps the row marginal but breaks two column marginals."""
    p, law, C, H, a = _instance()
    (i, *t1) = next(k for k, v in np.ndenumerate(C) if v != 0 and k[0] in k[1:])
    t2 = next(t for t in np.ndindex(*C.shape[1:]) if i not in t and tuple(t1) != t)
    bad = C.copy()
    m = bad[(i, *t1)]
    bad[(i, *t1)] = Fraction(0)
    bad[(i, *t2)] = bad[(i, *t2)] + m
    c = certify(p, law, bad, H)
    assert not c.ok and "draft marginals" in c.reason and c.col_error == m


def test_rejects_negative_entries_and_reports_them():
    """A 2x2 cycle keeps every marginal but drives a zero entry negative."""
    p, law, C, H, a = _instance()
    t = next(t for t in np.ndindex(*C.shape[1:]) if C[(0, *t)] == 0)
    t2 = next(u for u in np.ndindex(*C.shape[1:]) if C[(1, *u)] > 0 and u != t)
    d = Fraction(1, 1000)
    bad = C.copy()
    bad[(0, *t)] -= d
    bad[(0, *t2)] += d
    bad[(1, *t)] += d
    bad[(1, *t2)] -= d
    c = certify(p, law, bad, H)
    assert not c.ok and c.negative_mass == d and "negative" in c.reason
    assert c.row_error == c.col_error == 0


def test_wrong_set_gives_positive_gap():
    p, law, C, H, a = _instance()
    c = certify(p, law, C, ~H)
    assert not c.ok and c.gap > 0 and c.reason.startswith("not optimal")


def test_reduced_plan_checked_against_set_weights():
    p, law, C, H, a = _instance()
    r = mdsd_ot.solve(p, law, method="reduced")
    plan = dict(r.plan)
    assert certify(p, law, plan, r.H).ok
    (i, S), m = next(iter(plan.items()))
    plan[(i, S)] = m + Fraction(1, 3)  # above w_S or p(i)
    c = certify(p, law, plan, r.H)
    assert not c.ok and c.kind == "reduced"
    plan = dict(r.plan)
    j = min({0, 1, 2} - S)
    plan[(j, S)] = plan.pop((i, S))  # token j is not in S: an edge the reduced graph lacks
    assert "pairs with i not in S" in certify(p, law, plan, r.H).reason


def test_float_plan_reported_against_tolerance():
    """Float inputs: the plan is read exactly; its tiny marginal errors are reported and
    accepted within DEFAULT_TOL, rejected below them."""
    rng = np.random.default_rng(8)
    p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    law = drafts.WithoutReplacement(q, 3)
    C, H, a = optimal_plan(p, law)
    assert C.dtype == np.float64
    c = certify(p, law, C, H)
    assert c.ok and not c.exact and c.tolerance == DEFAULT_TOL
    assert c.row_error <= DEFAULT_TOL and c.col_error <= DEFAULT_TOL
    assert abs(c.primal_value - c.dual_value) <= DEFAULT_TOL
    worst = max(c.row_error, c.col_error, abs(c.gap))
    if worst > 0:
        assert not certify(p, law, C, H, tol=float(worst) / 4).ok
    bad = C.copy()
    bad[0, 0, 1, 2] += 1e-6
    assert not certify(p, law, bad, H).ok  # marginals off by 1e-6 > 1e-9
    assert certify(p, law, bad, H, tol=1e-5).ok  # the stated tolerance is what is applied


def test_plan_formats_and_bad_input():
    p, law, C, H, a = _instance()
    as_dict = {(k[0], tuple(k[1:])): v for k, v in np.ndenumerate(C) if v != 0}
    assert certify(p, law, as_dict, H) == certify(p, law, C, H)
    assert certify(p, law, C, np.flatnonzero(H).tolist()).ok
    with pytest.raises(ValueError, match="shape"):
        certify(p, law, np.zeros((3, 3)), H)
    with pytest.raises(ValueError, match="mixes"):
        certify(p, law, {(0, (0, 1)): 0.1, (1, frozenset({1})): 0.1}, H)
    with pytest.raises(ValueError, match="finite"):
        certify(p, law, np.full((3, 3, 3), np.nan), H)
    with pytest.raises(ValueError, match="kind"):
        certify(p, law, C, H, kind="reduced")
    with pytest.raises(ValueError, match="tuple"):
        certify(p, law, {(0, (0, 1, 2)): Fraction(1)}, H)
    with pytest.raises(ValueError, match="outside"):
        certify(p, law, {(7, (0, 1)): Fraction(1)}, H)


def test_per_entry_slack_does_not_add_up_to_a_wrong_value():
    """Review of 2026-12-06: every token's mass 0.9e-9 over (within tol = 1e-9 each) gave a plan
    worth V * 0.9e-9 more than α*, and a non-optimal H was certified at 0.75 where α* =
    0.7499991.  The total excess now bounds α* from below, and the interval must fit tol."""
    from mdsd_ot import certify
    from mdsd_ot.drafts import make

    V = 1000
    p = np.full(V, 1 / V)
    q = p.copy()
    q[1] -= 9e-7
    q[2:] -= 0.25 / (V - 2)
    q[0] = 1 - q[1:].sum()
    law = make("with", q, 1)
    plan = {(i, (i,)): float(min(p[i], law.q[i]) + 0.9e-9) for i in range(V)}
    c = certify(p, law, plan, [0, 1])
    assert not c.ok and c.reason.startswith("not certified: the plan exceeds its marginals")
    assert abs(float(c.excess_mass) - V * 0.9e-9) <= 1e-12
    exact = {(i, (i,)): min(p[i], law.q[i]) for i in range(V)}  # the plan without the slack
    assert not certify(p, law, exact, [0, 1]).ok  # H = {0, 1} is not optimal here
    assert certify(p, law, exact, [0]).ok and certify(p, law, exact, [0]).excess_mass <= 1e-15
