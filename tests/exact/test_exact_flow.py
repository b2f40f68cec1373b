"""The bipartite max-flow engines shared by the tuple and set-reduced forms (exact networkx,
refined scipy) and the sparse plan they return (:mod:`mdsd_ot.exact._flow`).

Tolerances: the scipy engine is exact on the 2^-60 grid, so it may differ from the exact value
by less than (number of capacities) x 2^-60; flows never exceed the floored capacities.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts
from mdsd_ot.exact._flow import (
    SparsePlan,
    bipartite_maxflow_exact,
    bipartite_maxflow_scipy,
    to_float_down,
)
from mdsd_ot.exact.maxflow import tuple_flow


def test_refinement_resolves_below_the_int32_grid():
    """Capacities 1e-12 are invisible at scale 2^30 (one int32 pass); the refinement passes
    recover the exact max flow of the 2^-60 grid."""
    left = np.array([1e-12, 1.0 - 1e-12])
    right = np.array([0.5, 0.5])
    value, flow, H, info = bipartite_maxflow_scipy(left, right, np.array([0]), np.array([0]))
    assert value == int(np.floor(1e-12 * 2.0**60))  # token 0 only reaches set 0
    assert info["passes"] >= 2 and info["units_log2"][0] == 30
    assert H.tolist() == [True, False]
    assert flow.tolist() == [value]


def test_scipy_engine_reads_other_flow_layouts(monkeypatch):
    """If scipy returns the flow with another sparsity layout, the engine still reads it."""
    import scipy.sparse.csgraph as cg

    real = cg.maximum_flow

    def relayout(g, s, t):
        res = real(g, s, t)
        F = res.flow.tocsr()
        F.eliminate_zeros()
        res.flow = F
        return res

    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(5))
    law = drafts.WithReplacement(rng.dirichlet(np.ones(5)), 2)
    expected = tuple_flow(p, law, exact=False)["alpha"]
    monkeypatch.setattr(cg, "maximum_flow", relayout)
    assert tuple_flow(p, law, exact=False)["alpha"] == expected


def test_engines_agree_on_unsorted_edges():
    rng = np.random.default_rng(7)
    L, M = 6, 9
    left, right = rng.dirichlet(np.ones(L)), rng.dirichlet(np.ones(M))
    edges = sorted({(int(rng.integers(L)), int(rng.integers(M))) for _ in range(20)})
    rng.shuffle(edges)
    el, er = np.array([e[0] for e in edges]), np.array([e[1] for e in edges])
    v, fl, H, _ = bipartite_maxflow_scipy(left, right, el, er)
    ve, fe, He = bipartite_maxflow_exact(
        [Fraction(x) for x in left], [Fraction(x) for x in right], edges
    )
    assert abs(Fraction(v, 2**60) - ve) <= (L + M) * Fraction(1, 2**60)
    # per-edge flows are returned in the caller's edge order and respect the capacities
    assert np.all(np.bincount(el, fl, minlength=L) <= np.floor(left * 2.0**60))
    assert np.all(np.bincount(er, fl, minlength=M) <= np.floor(right * 2.0**60))


def test_sparse_plan_is_a_mapping():
    plan = SparsePlan([0, 1], np.array([[0, 1], [1, 1]]), [Fraction(1, 4), Fraction(1, 2)], "tuple")
    assert dict(plan) == {(0, (0, 1)): Fraction(1, 4), (1, (1, 1)): Fraction(1, 2)}
    assert plan.total() == Fraction(3, 4) and len(plan) == 2
    with pytest.raises(ValueError, match="kind"):
        SparsePlan([0], np.array([[0]]), [1.0], "bag")


def test_to_float_down_never_rounds_up():
    x = np.array([2**60, 2**53 + 1, 2**61 - 1, 3, 0], dtype=np.int64)
    f = to_float_down(x)
    for xi, fi in zip(x.tolist(), f.tolist(), strict=True):
        assert Fraction(fi) <= Fraction(xi, 2**60)
        assert Fraction(xi, 2**60) - Fraction(fi) <= Fraction(xi, 2**60) * 2**-52
