"""Tuple weights of the sequential law when a product of q underflows.

At q = (1, 1e-300 x 4) the product of three masses underflows although the sequential
probabilities (ratios q(x)/r_j) are of order 1; ``tuple_weights`` used to drop those tuples
before weighing them, reporting no tuples and an error claim of 2.7e-15, and ``solve(...,
"maxflow-scipy")`` returned α = 0 where α* = 1.  Tolerance: the weights sum to 1 within the
reported error; α to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import drafts, solve

Q = np.array([1.0, 1e-300, 1e-300, 1e-300, 1e-300])
P = np.full(5, 0.2)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_tuple_weights_keep_underflowing_products(n):
    law = drafts.WithoutReplacement(Q / Q.sum(), n)
    t, w, err = law.tuple_weights(with_error=True)
    assert len(t) > 0 and err < 1e-12
    assert abs(float(w.sum()) - 1.0) <= err + 1e-15


@pytest.mark.parametrize("n", [3, 4])
@pytest.mark.parametrize("method", ["maxflow-scipy", "reduced", "fast"])
def test_solve_methods_agree_at_1e_300(n, method):
    law = drafts.WithoutReplacement(Q / Q.sum(), n)
    assert abs(solve(P, law, method).alpha - 1.0) <= 1e-12
