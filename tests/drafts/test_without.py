"""Tuple weights of the sequential law when a product of q underflows.

At q = (1, 1e-300 x 4) the product of three masses underflows although the sequential
probabilities (ratios q(x)/r_j) are of order 1; ``tuple_weights`` used to drop those tuples
before weighing them, reporting no tuples and an error claim of 2.7e-15, and ``solve(...,
"maxflow-scipy")`` returned α = 0 where α* = 1.  Tolerance: the weights sum to 1 within the
reported error; α to 1e-12.
"""

from __future__ import annotations

from fractions import Fraction

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


@pytest.mark.parametrize("V,n", [(7, 6), (8, 7), (10, 6)])
def test_subset_dp_set_weights_equal_the_sum_over_orders(V, n, monkeypatch):
    """From n = 6 on the set weights come from the subset dynamic program (2^n·n terms per
    set instead of n!·n: n = 9 at V = 9 took 68 s).  In Fractions it equals the sum over the
    n! orders exactly; in floats it is within the stated error bound of the exact weights."""
    import mdsd_ot.drafts.without as W

    rng = np.random.default_rng(V)
    counts = rng.integers(1, 20, V)
    q = [Fraction(int(c), int(counts.sum())) for c in counts]
    dp = dict(drafts.WithoutReplacement(q, n).set_weight_table(True).items())
    monkeypatch.setattr(W, "SUBSET_DP_N", 99)  # the orders
    orders = dict(drafts.WithoutReplacement(q, n).set_weight_table(True).items())
    monkeypatch.undo()
    assert dp == orders and sum(dp.values()) == 1
    tab = drafts.WithoutReplacement(np.array([float(x) for x in q]), n).set_weight_table(False)
    dev = sum(abs(Fraction(float(w)) - dp[S]) for S, w in tab.items())
    assert dev <= tab.error, (dev, tab.error)
