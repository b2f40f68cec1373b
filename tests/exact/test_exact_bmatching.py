"""The b-matching LP (9): its primal is a feasible b-matching, its row duals a feasible
w-vertex cover (10) of the same value (strong duality), within 1e-9."""

from __future__ import annotations

import numpy as np

from mdsd_ot import drafts as D
from mdsd_ot.exact import b_matching
from mdsd_ot.exact.subset import subset_selection


def test_primal_matching_and_dual_cover_are_feasible_and_tight():
    rng = np.random.default_rng(9)
    for scheme in ("with", "without", "product"):
        law = D.random_law(rng, scheme, 5, 2)
        p = rng.dirichlet(np.ones(5))
        out = b_matching(p, law)
        g, x, y, z = out["graph"], out["x"], out["y"], out["z"]
        # the repaired matching: mass only on edges, marginals at most p and p_draft
        assert x.min() >= 0.0
        assert np.all(np.bincount(g.edge_i, x, minlength=g.V) <= p + 1e-15)
        assert np.all(np.bincount(g.edge_k, x, minlength=g.K) <= g.w + 1e-15)
        # the row duals cover every edge: |y_i| + |z_k| >= 1 (HiGHS's sign for a max problem)
        ya, za = np.abs(y), np.abs(z)
        assert np.all(ya[g.edge_i] + za[g.edge_k] >= 1.0 - 1e-9)
        cover = float(ya @ p + za @ g.w)
        ref, _ = subset_selection(list(p), law)
        assert abs(cover - ref) <= 1e-9 and abs(out["alpha"] - ref) <= 1e-9
        assert out["lower_bound"] <= out["alpha"] + 1e-15 and out["gap"] <= 1e-9  # float sums
