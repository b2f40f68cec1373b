"""Max-flow / min-cut form (docs/reference.md "Max-flow"; T1): exact networkx and refined scipy solvers.

Tolerances: "maxflow" is exact (Fraction equality); "maxflow-scipy" must lie within the accuracy
it states per result (grid 2^-60 plus the float error of the weights), which itself must stay
below its registered 1e-10.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import mdsd_ot
from mdsd_ot import drafts
from mdsd_ot.drafts import Vector
from mdsd_ot.exact import METHODS
from mdsd_ot.exact import maxflow as mf
from mdsd_ot.exact.subset import subset_selection
from testkit import bank_alpha, bank_law, dirichlet, load_bank

BANK = [(inst, law) for inst in load_bank() if (law := bank_law(inst)) is not None]


def _cut_value(p_exact, draft, H):
    """P(H) + 1 - Q(H) exactly (subset-selection form (8))."""
    P = sum((p_exact[i] for i in np.flatnonzero(H)), Fraction(0))
    return P + 1 - draft.Q(H, exact=True)


def _random_law(rng, scheme, V, n, conc):
    if scheme == "product":
        return drafts.Product([dirichlet(rng, V, conc) for _ in range(n)])
    if scheme == "explicit":
        t = rng.dirichlet(np.full(V**n, conc))
        t[rng.random(V**n) < 0.3] = 0.0
        if t.sum() == 0:
            t[0] = 1.0
        return drafts.Explicit((t / t.sum()).reshape((V,) * n))
    if scheme == "spechub":
        n = 2
    return drafts.make(scheme, dirichlet(rng, V, conc), n)


SCHEMES = list(drafts.SCHEMES)


def test_registered():
    assert METHODS["maxflow"].exact and METHODS["maxflow"].accuracy == 0.0
    assert not METHODS["maxflow-scipy"].exact and METHODS["maxflow-scipy"].accuracy == 1e-10


def test_maxflow_exact_matches_bank_to_the_last_digit():
    """T1: the exact max-flow value equals the independently computed α* (Fraction equality)."""
    for inst, law in BANK:
        r = mdsd_ot.solve(inst["p"], law, method="maxflow")
        assert r.alpha_exact == bank_alpha(inst), inst
        # the min cut's sink side attains the same value in the subset form (8)
        assert _cut_value(Vector(inst["p"], "p").exact, law, r.H) == r.alpha_exact, inst


def test_maxflow_plan_is_a_bmatching_of_value_alpha():
    """The returned flow is feasible for LP (9): rows <= p, columns <= p_draft, i in the tuple."""
    for inst, law in BANK[::4]:
        r = mf.tuple_flow(inst["p"], law, exact=True)
        p = Vector(inst["p"], "p").exact
        items = law.joint_items(exact=True)
        rows, cols = {}, {}
        for (i, t), m in r["plan"].items():
            assert m > 0 and i in t
            rows[i] = rows.get(i, 0) + m
            cols[t] = cols.get(t, 0) + m
        assert all(rows[i] <= p[i] for i in rows)
        assert all(cols[t] <= items[t] for t in cols)
        assert sum(r["plan"].values(), Fraction(0)) == r["alpha_exact"]


def test_maxflow_scipy_within_stated_bound_on_bank():
    for inst, law in BANK:
        r = mdsd_ot.solve(inst["p"], law, method="maxflow-scipy")
        err = abs(Fraction(r.alpha) - bank_alpha(inst))
        assert err <= r.accuracy, (inst, float(err), r.accuracy)
        assert r.accuracy < METHODS["maxflow-scipy"].accuracy


@pytest.mark.parametrize("scheme", SCHEMES)
def test_float_inputs_solved_exactly_and_scipy_within_bound(scheme):
    """Float inputs: "maxflow" is the exact α* of the rationals the floats denote (checked by
    exact subset selection); "maxflow-scipy" within its stated accuracy of it.  Includes zeros,
    ties, masses near 1e-12 and concentrations 0.05, 0.5, 5."""
    rng = np.random.default_rng(100 + SCHEMES.index(scheme))
    done = 0
    for k in range(30):
        V, n, conc = int(rng.integers(2, 6)), int(rng.integers(1, 4)), (0.05, 0.5, 5.0)[k % 3]
        p = dirichlet(rng, V, conc)
        try:
            law = _random_law(rng, scheme, V, n, conc)
        except ValueError:
            continue  # e.g. greedy without mass outside its top n - 1
        pv = Vector(p, "p")
        ref, _ = subset_selection(pv.exact, law, exact=True)
        r = mf.tuple_flow(pv, law, exact=True)
        assert r["alpha_exact"] == ref
        s = mf.tuple_flow(pv, law, exact=False)
        assert abs(Fraction(s["alpha"]) - ref) <= s["accuracy"] < 1e-12
        # the scipy min cut is optimal up to the same accuracy
        assert abs(_cut_value(pv.exact, law, s["H"]) - ref) <= 2 * s["accuracy"]
        done += 1
    assert done >= 15


def test_extreme_draft_mass_stays_within_bound():
    """q with one token near 1 (1 - q(a) ~ 1e-10): the without-replacement weights use
    complement sums, so the stated accuracy holds (1 - q(a) in floats would be off by 1e-7)."""
    q = np.array([1 - 3e-10, 1e-10, 1e-10, 1e-10])
    p = np.array([0.25, 0.25, 0.25, 0.25])
    for scheme in ("without", "spechub", "conditional-poisson", "greedy"):
        law = drafts.make(scheme, q, 2)
        pv = Vector(p, "p")
        ref = mf.tuple_flow(pv, law, exact=True)["alpha_exact"]
        s = mf.tuple_flow(pv, law, exact=False)
        assert abs(Fraction(s["alpha"]) - ref) <= s["accuracy"] < 1e-13, scheme


def test_exact_maxflow_refuses_too_many_tuples():
    law = drafts.WithReplacement(np.full(60, 1 / 60), 3)  # 216,000 tuples
    with pytest.raises(ValueError, match="reduced"):
        mf.tuple_flow(np.full(60, 1 / 60), law, exact=True)


def test_maxflow_scipy_at_v32_n3():
    """The issue's size for the fast variant (timing is reported by benchmarks/, not tested):
    it solves, and agrees with the set-reduced form within both accuracies."""
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(32)), rng.dirichlet(np.ones(32))
    law = drafts.WithReplacement(q, 3)
    r = mdsd_ot.solve(p, law, method="maxflow-scipy")
    red = mdsd_ot.solve(p, law, method="reduced")
    assert r.info["tuples"] == 32**3
    assert abs(r.alpha - red.alpha) <= r.accuracy + red.accuracy


@pytest.mark.parametrize("exact", [True, False])
def test_disjoint_supports_give_zero_and_an_empty_plan(exact):
    """α* = 0 when p and the drafts share no token: the plan is empty, H = supp(p)."""
    law = drafts.WithReplacement([0.0, 0.0, 1.0], 2)
    r = mf.tuple_flow([0.5, 0.5, 0.0], law, exact=exact)
    assert r["alpha"] == 0.0 and len(r["plan"]) == 0 and dict(r["plan"]) == {}
    assert r["info"]["cut_value"] == 0
