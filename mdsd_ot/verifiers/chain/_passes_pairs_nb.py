r"""The compiled flows of the ``cp-pair`` scaling (:func:`~.pairs.pair_flows`), at module level
(numba).

``pair_inflow`` runs down each block from its top slot and ``pair_outflow`` up from its bottom
slot, keeping the n - 1 running sums R_i (resp. U_m) of :func:`~.pairs.pair_flows` at once.
Each sum adds the same rounded products in the same order as the numpy route's sequential
``np.cumsum`` (a cumulative sum starts from its first term, and 0 + x = x exactly), and the
level terms of In are added in the route's order, so both routes are *bit-identical* (tested
in ``tests/verifiers/test_cp_pair.py``).  Imported only when numba is installed
(:func:`._passes.kernels`).
"""

from __future__ import annotations

import numpy as np

from ...fast._fused import jit_decorator

jit = jit_decorator()


@jit
def pair_inflow(q, e, n, los, his, theta, out):  # pragma: no cover - compiled
    # out[k] = q_k sum_{i=0}^{n-2} e[n-2-i, k] R_i(k), R_0(k) = sum_{j>k} theta_j q_j,
    # R_i(k) = sum_{j>k} q_j R_{i-1}(j), sums within [los[b], his[b])
    R = np.zeros(max(n - 1, 1))
    for b in range(los.shape[0]):
        lo, hi = los[b], his[b]
        for i in range(n - 1):
            R[i] = 0.0
        for k in range(hi - 1, lo - 1, -1):
            if k < hi - 1:
                j = k + 1
                for i in range(n - 2, 0, -1):
                    R[i] = R[i] + q[j] * R[i - 1]
                R[0] = R[0] + theta[j] * q[j]
            acc = e[n - 2, k] * R[0]
            for i in range(1, n - 1):
                acc += e[n - 2 - i, k] * R[i]
            out[k] = q[k] * acc


@jit
def pair_outflow(q, e, n, los, his, g, out):  # pragma: no cover - compiled
    # out[k] = q_k U_{n-2}(k), U_0(k) = sum_{j<k} g_j q_j,
    # U_m(k) = sum_{j<k} (q_j U_{m-1}(j) + g_j q_j e[m, j]), sums within [los[b], his[b])
    U = np.zeros(max(n - 1, 1))
    for b in range(los.shape[0]):
        lo, hi = los[b], his[b]
        for m in range(n - 1):
            U[m] = 0.0
        for k in range(lo, hi):
            if k > lo:
                j = k - 1
                gq = g[j] * q[j]
                for m in range(n - 2, 0, -1):
                    U[m] = U[m] + (q[j] * U[m - 1] + gq * e[m, j])
                U[0] = U[0] + gq
            out[k] = q[k] * U[n - 2]
