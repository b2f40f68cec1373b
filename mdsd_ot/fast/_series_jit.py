r"""The certified series of one numpy float64 row, compiled: heavy moments, setup, evaluation.

:mod:`mdsd_ot.fast.series` and :mod:`mdsd_ot.fast._moments` form the series with arrays,
whatever the batch.  For one row (B = 1) of a few heavy tokens, most of that time is numpy's
per-call overhead (about a hundred small array operations per row, each on a few hundred
entries).  With numba (``pip install 'mdsd-ot[jit]'``) the functions here do the same work in
a few compiled loops:

- :func:`deltas_row` — the complements :math:`\delta_a` of the top sets, their accuracy
  :math:`\theta_d` and the scale :math:`\tau` of :func:`mdsd_ot.fast.series.series_setup`;
- :func:`heavy_moments_row` — :func:`mdsd_ot.fast._moments.heavy_moments`, with
  :func:`mdsd_ot.fast._moments.complement` and the blocked cumulative sums of
  :func:`mdsd_ot.fast._dd.cumsum_blocked` (the same blocks, read at the heavy prefixes only);
- :func:`setup_tail_row` — the rest of :func:`mdsd_ot.fast.series.series_setup` from the
  moments: the cumulated moments :math:`\hat J`, the bound's weights and the Hankel matrix;
- :func:`eval_row` — :func:`mdsd_ot.fast.series.series_eval` at C points, in two loops around
  the array code's own ``np.einsum`` (the products :math:`H c`: numpy's summation order there
  depends on its SIMD build, fused multiply-adds or not, so it is not re-implemented).

Every quantity is formed by the same floating-point operations, in the same order, as the
array code: elementwise formulas term by term; numpy's sums along an axis as numpy performs
them (from 0, term after term, or, when the summed axis is the inner loop of numpy's reduction,
numpy's pairwise blocks of eight: the last axis, or the middle one of a (1, K+1, C) array with
C = 1; ``pi`` must then be C-contiguous, as its callers form it, and the array code runs
otherwise); the blocked cumulative sums block by block.  Only the order *across* independent
entries changes (the loops over subsets and points are the inner ones, so that they vectorise),
which changes no value.  The results are therefore *bit-identical* (tested,
``tests/fast/test_series_jit.py``), and the rounding depths counted by the bound hold unchanged.
numba runs without ``fastmath``, so LLVM neither reassociates sums nor contracts products and
sums into fused multiply-adds.

The callers use these functions only for one float64 numpy row with the kernels on
(:func:`mdsd_ot.fast._fused.enabled`, not inside :func:`disabled`); batches, torch, rows
without numba and ``MDSD_OT_JIT=0`` keep the array code.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _fused

__all__ = [
    "available",
    "disabled",
    "rows_ok",
    "deltas_row",
    "heavy_moments_row",
    "setup_tail_row",
    "eval_row",
]

_U = 2.0**-53
_OFF = {"force": False}


def available() -> bool:
    """Whether the compiled series runs: the fused kernels are on
    (:func:`mdsd_ot.fast._fused.enabled`) and not inside :func:`disabled`.

    Examples
    --------
    >>> with disabled():
    ...     available()
    False
    """
    return not _OFF["force"] and _fused.enabled() and _kernels() is not None


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run the block with the series' array code, the other fused kernels still on (the tests
    compare the two routes of the series on the same inputs, bit for bit)."""
    before = _OFF["force"]
    _OFF["force"] = True
    try:
        yield
    finally:
        _OFF["force"] = before


def rows_ok(K: int, *xs: Any) -> bool:
    """Whether every ``x`` is a float64 numpy array of one row (shape (1, ...)), the Taylor
    order is at most 127 (numpy sums the K + 1 terms of a moment in one pairwise block) and the
    compiled series runs: the inputs this module takes.

    Examples
    --------
    >>> rows_ok(8, np.zeros((2, 3))), rows_ok(8, np.zeros((1, 3), dtype=np.float32))
    (False, False)
    """
    if K + 1 > 128:
        return False
    for x in xs:
        if not (
            isinstance(x, np.ndarray) and x.ndim >= 1 and x.shape[0] == 1 and x.dtype == np.float64
        ):
            return False
    return available()


@functools.cache
def _kernels() -> dict[str, Any] | None:
    """Compile-on-first-call kernels, or None when numba is not installed."""
    jit = _fused.jit_decorator()
    if jit is None:
        return None
    U = _U

    @jit
    def pairwise(x, n):  # pragma: no cover - compiled; numpy's pairwise_sum of x[:n], n <= 128
        if n < 8:
            res = 0.0
            for i in range(n):
                res += x[i]
            return res
        r0, r1, r2, r3 = x[0], x[1], x[2], x[3]
        r4, r5, r6, r7 = x[4], x[5], x[6], x[7]
        i = 8
        while i < n - n % 8:
            r0 += x[i]
            r1 += x[i + 1]
            r2 += x[i + 2]
            r3 += x[i + 3]
            r4 += x[i + 4]
            r5 += x[i + 5]
            r6 += x[i + 6]
            r7 += x[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += x[i]
            i += 1
        return res

    @jit
    def np_sum(x, n, inner):  # pragma: no cover - compiled
        # numpy's add.reduce of n terms from 0.0: pairwise when the summed axis is the inner
        # loop of the reduction (the last axis, or an axis whose neighbours have length 1),
        # else term after term (the inner loop runs along another axis)
        if inner:
            return 0.0 + pairwise(x, n)
        acc = 0.0
        for i in range(n):
            acc = acc + x[i]
        return acc

    @jit
    def nanmax(a, b):  # pragma: no cover - compiled; np.maximum (NaN if either is NaN)
        if a != a or b != b:
            return np.nan
        return a if a > b else b

    @jit
    def _plain_cols(x):  # pragma: no cover - compiled; cumulative sum down each column
        N, R = x.shape
        y = np.empty((N, R))
        run = np.empty(R)  # the running sums, kept apart (no store-to-load stall)
        if N > 0:
            for r in range(R):
                run[r] = x[0, r]
                y[0, r] = run[r]
            for i in range(1, N):
                for r in range(R):
                    run[r] = run[r] + x[i, r]
                    y[i, r] = run[r]
        return y

    @jit
    def _local_cols(x):  # pragma: no cover - compiled; the blocks' own cumulative sums
        N, R = x.shape
        nb = (N + 63) // 64
        loc = np.zeros((nb * 64, R))  # zero padding, as cumsum_blocked pads
        run = np.empty(R)
        for b in range(nb):
            o = b * 64
            for r in range(R):
                run[r] = x[o, r]
                loc[o, r] = run[r]
            for j in range(o + 1, min(N, o + 64)):
                for r in range(R):
                    run[r] = run[r] + x[j, r]
                    loc[j, r] = run[r]
            for j in range(max(N, o + 1), o + 64):  # the padding: + 0.0
                for r in range(R):
                    run[r] = run[r] + 0.0
                    loc[j, r] = run[r]
        ends = np.empty((nb, R))
        for b in range(nb):
            for r in range(R):
                ends[b, r] = loc[b * 64 + 63, r]
        return loc, ends

    @jit
    def cumsum_cols(x):  # pragma: no cover - compiled; _dd.cumsum_blocked down each column
        # the columns' sums are independent chains: the inner loops run across the columns;
        # the block totals' cumulative sum is blocked again, level after level (no recursion)
        N, R = x.shape
        if N <= 64:
            return _plain_cols(x)
        locs = []
        sizes = []
        cur = x
        while cur.shape[0] > 64:
            loc, ends = _local_cols(cur)
            locs.append(loc)
            sizes.append(cur.shape[0])
            cur = ends
        Y = _plain_cols(cur)  # the cumulative sums of the top level's block totals
        for L in range(len(locs) - 1, -1, -1):
            loc = locs[L]
            Ny = sizes[L]
            Yn = np.empty((Ny, R))
            for b in range((Ny + 63) // 64):
                for j in range(b * 64, min(Ny, b * 64 + 64)):
                    for r in range(R):
                        off = 0.0 if b == 0 else Y[b - 1, r]
                        Yn[j, r] = loc[j, r] + off
            Y = Yn
        return Y

    @jit
    def cumsum_at(x, pos, out):  # pragma: no cover - compiled
        # _dd.cumsum_blocked of each row of x (R, N), read at the increasing positions pos
        # only (out: (R, len(pos))): one pass keeps each row's running sum in its block (the
        # rows' chains interleaved), the blocks' totals are summed by cumsum_cols, and each
        # value read is its block's sum plus the total of the blocks before, as there
        R, N = x.shape
        P = pos.shape[0]
        run = np.empty(R)
        nb = (N + 63) // 64 if N > 64 else 1
        ends = np.empty((nb, R))
        p = 0
        for b in range(nb):
            o = b * 64
            e = min(N, o + 64) if N > 64 else N
            for r in range(R):
                run[r] = x[r, o]
            while p < P and pos[p] == o:
                for r in range(R):
                    out[r, p] = run[r]
                p += 1
            for j in range(o + 1, e):
                for r in range(R):
                    run[r] = run[r] + x[r, j]
                while p < P and pos[p] == j:
                    for r in range(R):
                        out[r, p] = run[r]
                    p += 1
            pad = N > 64 and e < o + 64  # the zero padding of the last block
            for r in range(R):
                ends[b, r] = run[r] + 0.0 if pad else run[r]
        if N <= 64:
            return
        tot = cumsum_cols(ends)
        p = 0
        for p in range(P):
            b = pos[p] // 64
            for r in range(R):
                off = 0.0 if b == 0 else tot[b - 1, r]
                out[r, p] = out[r, p] + off

    @jit
    def moments(qA, T, delta, top, theta_d, tau, K, n, Ns, offs, sub, ranks, cols, depths):
        # pragma: no cover - compiled; _moments.heavy_moments of one row.  A layer's moments
        # are kept as (K+1, N): the loops over its subsets (independent) are the inner ones;
        # each subset's terms are formed as the array code forms them
        m = qA.shape[0]
        J = np.zeros((n, K + 1, m + 1))
        step = theta_d / U + 4.0
        kt = np.empty(K + 1)
        for k in range(K + 1):
            kt[k] = k * tau
        gp = np.empty((K + 1, 1))
        gp[0, 0] = 1.0 / T
        for k in range(1, K + 1):
            gp[k, 0] = kt[k] * gp[k - 1, 0] / T
        for k in range(K + 1):
            for s in range(m + 1):
                J[0, k, s] = gp[k, 0] + 0.0
        Dg = (K + 1) * step
        D_J = Dg
        sd = np.empty(max(n, 1))
        diff = np.empty(max(n, 1))
        for li in range(Ns.shape[0]):
            a = li + 1
            N = Ns[li]
            o = offs[li]
            qs = np.empty((a, N))
            d = np.empty(N)
            for i in range(N):
                for r in range(a):
                    v = qA[sub[o + i * a + r]]
                    qs[r, i] = v
                    sd[r] = v
                for r in range(1, a):  # insertion sort, descending (complement)
                    v = sd[r]
                    j = r
                    while j > 0 and sd[j - 1] < v:
                        sd[j] = sd[j - 1]
                        j -= 1
                    sd[j] = v
                if a < 8:  # numpy's sum of the last axis: from 0, term after term
                    acc = 0.0
                    for r in range(a):
                        acc += top[r] - sd[r]
                    d[i] = delta[a] + (0.0 + acc)
                else:
                    for r in range(a):
                        diff[r] = top[r] - sd[r]
                    d[i] = delta[a] + np_sum(diff, a, True)
            g = np.empty((K + 1, N))  # first f = sum_r q_r G(D less its r-th token)
            for r in range(a):
                rk = ranks[o + r * N : o + r * N + N]
                qr = qs[r]
                for k in range(K + 1):
                    gk = gp[k]
                    gr = g[k]
                    if r == 0:
                        for i in range(N):
                            gr[i] = qr[i] * gk[rk[i]]
                    else:
                        for i in range(N):
                            gr[i] = gr[i] + qr[i] * gk[rk[i]]
            g0 = g[0]  # then G, in place: row k - 1 is final when row k is formed
            for i in range(N):
                g0[i] = g0[i] / d[i]
            for k in range(1, K + 1):
                ktk = kt[k]
                prev = g[k - 1]
                cur = g[k]
                for i in range(N):
                    cur[i] = (cur[i] + ktk * prev[i]) / d[i]
            Dg = Dg + a + (K + 1) * step
            ncol = 0  # the exclusive sums at cols: the inclusive ones at cols - 1 (cols > 0)
            for s in range(m + 1):
                ncol += cols[li, s] > 0
            pos = np.empty(ncol, dtype=np.int64)
            p = 0
            for s in range(m + 1):
                if cols[li, s] > 0:
                    pos[p] = cols[li, s] - 1
                    p += 1
            vals = np.empty((K + 1, ncol))
            cumsum_at(g, pos, vals)
            p = 0
            for s in range(m + 1):
                if cols[li, s] > 0:
                    for k in range(K + 1):
                        J[a, k, s] = vals[k, p]
                    p += 1
            D_J = nanmax(D_J, Dg + depths[li])
            gp = g
        return J, D_J

    @jit
    def pre(qtop, m, n, qL, L_eta, T, T_eta, tau, light, g0):
        # pragma: no cover - compiled; series_setup between the light total and the moments
        suffix = np.zeros(m + 1)  # heavy masses beyond the a largest (cumulative_sum, flipped)
        if m > 0:
            acc = qtop[m - 1]
            suffix[m - 1] = acc
            for j in range(m - 2, -1, -1):
                acc = acc + qtop[j]
                suffix[j] = acc
        delta = np.empty(n)
        for a in range(n):
            delta[a] = suffix[a] + qL
        rel_L = L_eta / qL if qL > 0 else 0.0
        theta_d = 1.01 * (g0 + rel_L + T_eta / T)
        delta_lo = np.empty(n)
        w = 1.0 - 2.0 * theta_d
        for a in range(n):
            delta_lo[a] = delta[a] * w
        tau2 = tau if light else delta_lo[n - 1]
        return delta, theta_d, delta_lo, tau2

    @jit
    def tail(J, D_J, tau, light, delta_lo, K, n, wts, lk, comb_a, rfac, factK):
        # pragma: no cover - compiled; series_setup after heavy_moments, one row
        m1 = J.shape[2]
        Jc = np.empty((n, K + 1, m1))
        Jc[0] = J[0]
        for a in range(1, n):
            for k in range(K + 1):
                for s in range(m1):
                    Jc[a, k, s] = Jc[a - 1, k, s] + J[a, k, s]
        Jh = np.empty((n, K + 1, m1))
        for l in range(n):
            Jh[l] = Jc[n - 1 - l]
        D = D_J + n
        gJ = 1.0 + 2.0 * (D * U / (1.0 - D * U))
        beta = np.empty((n, m1))
        tcoef = np.zeros((n, m1))
        beta[0] = Jh[0, 0]
        buf = np.empty(K + 1)
        for l in range(1, n):
            for s in range(m1):  # sum over k (axis 1 of (1, K+1, m+1))
                for k in range(K + 1):
                    buf[k] = wts[l, k] * Jh[l, k, s]
                beta[l, s] = np_sum(buf, K + 1, m1 == 1)
            for a in range(n - l):
                rho = l * tau / delta_lo[a] if light else 0.0
                r = rho * rfac[a]
                tf = comb_a[a] * rho / (1.0 - r) if r < 1.0 else np.inf
                lt = lk[l] * tf
                for s in range(m1):
                    JK = J[a, K, s] / factK
                    w = lt if JK > 0 else 0.0
                    tcoef[l, s] = tcoef[l, s] + JK * w
        scale = gJ * 1.01
        for l in range(n):
            for s in range(m1):
                beta[l, s] = beta[l, s] * scale
                tcoef[l, s] = tcoef[l, s] * scale
        Ht = np.empty((K + 1, K + 1))
        for i in range(K + 1):
            for j in range(K + 1):
                Ht[i, j] = Jh[n - 1, i + j, 0] if i + j <= K else 0.0
        return Jh, D, beta, tcoef, Ht

    @jit
    def sum_k(x, y, ys, out, inner):  # pragma: no cover - compiled
        # out[c] = sum over k of x[k, c] * y[k, ys[c]] (ys empty: y[k, c]) as numpy sums axis 1
        # of a (1, K+1, C) array: pairwise when C == 1, else term after term
        R, C = x.shape
        if inner:
            buf = np.empty(R)
            for c in range(C):
                col = ys[c] if ys.shape[0] > 0 else c
                for k in range(R):
                    buf[k] = x[k, c] * y[k, col]
                out[c] = np_sum(buf, R, True)
            return
        for c in range(C):
            out[c] = 0.0
        for k in range(R):
            xk = x[k]
            yk = y[k]
            if ys.shape[0] > 0:
                for c in range(C):
                    out[c] = out[c] + xk[c] * yk[ys[c]]
            else:
                for c in range(C):
                    out[c] = out[c] + xk[c] * yk[c]

    @jit
    def eval_a(pi, sg, Jh, kap, n, K):  # pragma: no cover - compiled; series_eval, part 1
        # each quantity is a (K+1, C) array (the loops over the points are the inner ones);
        # returns c_l (l = 1..n-2; row 0 unused) and S before its top level
        C = pi.shape[1]
        inner = C == 1  # (1, K+1, C) summed over axis 1: the inner loop when C == 1
        Lam = np.empty((max(n - 1, 1), K + 1, C))  # Lam_i, i = 1..n-2 (row 0 unused)
        for i in range(1, n - 1):
            for j in range(K + 1):
                kij = kap[j, i]
                pj = pi[j]
                lj = Lam[i, j]
                for c in range(C):
                    lj[c] = kij * pj[c]
        cc = np.empty((max(n - 1, 1), K + 1, C))
        S = np.empty(C)
        out = np.empty((K + 1, C))
        tmp = np.empty(C)
        for c in range(C):
            S[c] = Jh[0, 0, sg[c]]
        for l in range(1, n - 1):
            acc = cc[l]  # formed in place: l Lam_l + sum_i i (Lam_i * c_{l-i}), then / l
            for j in range(K + 1):
                aj = acc[j]
                lj = Lam[l, j]
                for c in range(C):
                    aj[c] = l * lj[c]
            for i in range(1, l):
                ib = l - i
                out[:] = 0.0
                for j in range(i, K + 1 - ib):  # _mul(Lam[i], c[l - i], i, l - i)
                    la = Lam[i, j]
                    for t in range(K + 1 - j - ib):
                        o_ = out[j + ib + t]
                        cb = cc[ib, ib + t]
                        for c in range(C):
                            o_[c] += la[c] * cb[c]
                for j in range(K + 1):
                    aj = acc[j]
                    oj = out[j]
                    for c in range(C):
                        aj[c] = aj[c] + i * oj[c]
            for j in range(K + 1):
                aj = acc[j]
                for c in range(C):
                    aj[c] = aj[c] / l
            sum_k(cc[l], Jh[l], sg, tmp, inner)
            for c in range(C):
                S[c] = S[c] + tmp[c]
        return cc, S

    @jit
    def eval_b(pi, sg, lm, npos, kap, S, M, J0, beta, tcoef, n, K, gD):
        # pragma: no cover - compiled; series_eval, part 2 (M[i] = Ht @ c[n - 1 - i])
        C = pi.shape[1]
        inner = C == 1
        Q = np.empty((1, C))
        Bd = np.empty((1, C))
        top = np.empty(C)
        tmp = np.empty(C)
        none = np.zeros(0, dtype=np.int64)
        La = np.empty((K + 1, C))
        J0c = np.empty((K + 1, C))
        for k in range(K + 1):
            J0c[k, :] = J0[k]
        for j in range(K + 1):  # Lam_{n-1} . J0 first, then Lam_i . M_i, i = 1..n-2
            kij = kap[j, n - 1]
            pj = pi[j]
            lj = La[j]
            for c in range(C):
                lj[c] = kij * pj[c]
        sum_k(La, J0c, none, tmp, inner)
        for c in range(C):
            top[c] = (n - 1) * tmp[c]
        for i in range(1, n - 1):
            for j in range(K + 1):
                kij = kap[j, i]
                pj = pi[j]
                lj = La[j]
                for c in range(C):
                    lj[c] = kij * pj[c]
            sum_k(La, M[i], none, tmp, inner)
            for c in range(C):
                top[c] = top[c] + i * tmp[c]
        for c in range(C):
            Sc = S[c] + top[c] / (n - 1)
            lmc = lm[c]
            Qc = 1.0 - lmc * Sc
            p1 = pi[1, c]
            s = sg[c]
            s_abs = beta[0, s]
            tl = 0.0
            p1l = 1.0
            for l in range(1, n):
                p1l = p1l * p1
                s_abs = s_abs + p1l * beta[l, s]
                tc = tcoef[l, s]
                tl = tl + (p1l * tc if p1l > 0 else 0.0)
            Bc = (gD * lmc * s_abs + lmc * tl + 1.01 * U) * (1.0 + 1e-6) + 1e-290
            if Qc == Qc:  # np.clip(Qc, 0, 1), NaN kept
                Qc = Qc if Qc > 0.0 else 0.0
                Qc = Qc if Qc < 1.0 else 1.0
            exact0 = npos[c] < n
            exact1 = lmc == 0
            if exact0:
                Qc = 0.0
            elif exact1:
                Qc = 1.0
            Q[0, c] = Qc
            Bd[0, c] = 0.0 if (exact0 or exact1) else Bc
        return Q, Bd

    return {
        "pre": pre,
        "moments": moments,
        "tail": tail,
        "eval_a": eval_a,
        "eval_b": eval_b,
        "cumsum_cols": cumsum_cols,
        "cumsum_at": cumsum_at,
        "sum_k": sum_k,
        "np_sum": np_sum,
    }


def heavy_moments_row(
    qA: np.ndarray,
    T: np.ndarray,
    delta: np.ndarray,
    top: np.ndarray,
    theta_d: np.ndarray,
    tau: np.ndarray,
    K: int,
    n: int,
    tables: tuple[np.ndarray, ...],
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`mdsd_ot.fast._moments.heavy_moments` of one row, compiled: ``(J, D_J)``.

    The same recursion over the colex subsets of the m heavy tokens,

    .. math:: \tilde G_D(k) = \frac{\sum_{x \in D} q(x)\, \tilde G_{D \setminus x}(k)
              + k\tau\, \tilde G_D(k - 1)}{d(D)}, \qquad
              d(D) = \delta_a + \sum_{i=1}^{a} (t_i - s_i),

    with the same operations in the same order (bit-identical ``J`` (1, n, K+1, m+1) and
    ``D_J`` (1,)).  ``tables`` = (Ns, offs, sub, ranks, cols, depths): the colex layers of
    :func:`mdsd_ot.fast._moments.colex` flattened (sizes, offsets, the subsets and the ranks of
    each layer one after the other, the per-prefix counts (L, m+1) and the depths of the
    layers' cumulative sums).

    Examples
    --------
    >>> from mdsd_ot.fast._moments import colex_tables, heavy_moments
    >>> qA, T = np.array([[0.5, 0.3]]), np.ones(1)
    >>> delta, top = np.array([[1.0, 0.5, 0.2]]), np.array([[0.5, 0.3]])
    >>> th, tau = np.full(1, 1e-15), np.full(1, 0.1)
    >>> J, D = heavy_moments(qA, T, delta, top, th, tau, 2, 3, np)
    >>> if available():
    ...     J2, D2 = heavy_moments_row(qA, T, delta, top, th, tau, 2, 3, colex_tables(2, 3))
    ... else:
    ...     J2, D2 = J, D
    >>> bool(np.array_equal(J, J2)), bool(np.array_equal(D, D2))
    (True, True)
    """
    Ns, offs, sub, ranks, cols, depths = tables
    J, D_J = _kernels()["moments"](
        np.ascontiguousarray(qA[0]),
        float(T[0]),
        np.ascontiguousarray(delta[0]),
        np.ascontiguousarray(top[0]),
        float(theta_d[0]),
        float(tau[0]),
        int(K),
        int(n),
        Ns,
        offs,
        sub,
        ranks,
        cols,
        depths,
    )
    return J[None], np.array([D_J])


def deltas_row(
    qtop: np.ndarray,
    m: int,
    n: int,
    L: tuple[np.ndarray, np.ndarray, np.ndarray],
    T: np.ndarray,
    T_eta: np.ndarray,
    tau: np.ndarray,
    light: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""The complements of the top sets and their accuracy, one row, compiled (as
    :func:`mdsd_ot.fast.series.series_setup` forms them):

    .. math:: \delta_a = \sum_{j > a} t_j + q(L), \qquad
              \theta_d = 1.01\,(\gamma_{m + 3n + 4} + \eta_L / q(L) + \eta_T / T), \qquad
              \delta^{lo}_a = \delta_a (1 - 2\theta_d),

    with :math:`t_1 \ge \dots \ge t_m` the heavy masses (``qtop`` (1, >= m)) summed from the
    smallest, ``L`` = (hi, lo, eta) the light total; the scale ``tau`` becomes
    :math:`\delta^{lo}_{n-1}` on a row without light mass (``light`` False).  Returns
    ``(delta, theta_d, delta_lo, tau)`` as (1, n), (1,), (1, n), (1,) arrays, bit-identical to
    the array code's.

    Examples
    --------
    >>> L = (np.full(1, 0.25), np.zeros(1), np.zeros(1))
    >>> one = np.ones(1)
    >>> if available():
    ...     d, th, dlo, tau = deltas_row(np.array([[0.5, 0.25]]), 2, 3, L, one, 0 * one,
    ...                                  np.full(1, 0.1), np.ones(1, dtype=bool))
    ...     print(d.tolist())
    ... else:
    ...     print([[1.0, 0.5, 0.25]])
    [[1.0, 0.5, 0.25]]
    """
    qL = float(L[0][0] + L[1][0])
    g0 = float(m + 3 * n + 4) * _U / (1.0 - float(m + 3 * n + 4) * _U)
    delta, theta_d, delta_lo, tau2 = _kernels()["pre"](
        np.ascontiguousarray(qtop[0]),
        int(m),
        int(n),
        qL,
        float(L[2][0]),
        float(T[0]),
        float(T_eta[0]),
        float(tau[0]),
        bool(light[0]),
        g0,
    )
    return delta[None], np.array([theta_d]), delta_lo[None], np.array([tau2])


@functools.cache
def _tail_consts(n: int, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The Python constants of the bound's tail, rounded as the array code rounds them:
    :math:`l^K / l!`, :math:`\\binom{K+1+a}{a}`, :math:`(K+2+a)/(K+2)` and :math:`K!`."""
    lk = np.array([float(l) ** K / math.factorial(l) for l in range(n)])
    comb_a = np.array([float(math.comb(K + 1 + a, a)) for a in range(n)])
    rfac = np.array([(K + 2 + a) / (K + 2) for a in range(n)])
    return lk, comb_a, rfac, float(math.factorial(K))


def setup_tail_row(
    J: np.ndarray,
    D_J: np.ndarray,
    tau: np.ndarray,
    light: np.ndarray,
    delta_lo: np.ndarray,
    wts: np.ndarray,
    K: int,
    n: int,
) -> dict[str, np.ndarray]:
    r"""The part of :func:`mdsd_ot.fast.series.series_setup` after the moments, one row, compiled.

    From ``J`` (1, n, K+1, m+1) and ``D_J`` (1,): the cumulated moments
    :math:`\hat J_{l} = \sum_{a \le n-1-l} \tilde J_a` (``Jh``), the depth ``D_J + n``, the
    bound's weights :math:`\beta_l = (1 + 2\gamma_{D_J})\,1.01 \sum_k w_{l,k} \hat J_{l,k}` and
    the tail coefficients ``tcoef``, ``J0`` and the Hankel matrix ``Ht`` of :math:`\hat J_{n-1}`
    at the empty heavy set (``wts`` = :func:`mdsd_ot.fast._moments.beta_weights`).  The entries
    are bit-identical to the array code's.

    Examples
    --------
    >>> from mdsd_ot.fast.series import series_setup
    >>> q = np.array([[0.4, 0.1, 0.3, 0.2]])
    >>> ctx = series_setup(q, 3, np, 4, 4)
    >>> ctx["Jh"].shape, ctx["beta"].shape, ctx["Ht"].shape
    ((1, 3, 5, 5), (1, 3, 5), (1, 5, 5))
    """
    lk, comb_a, rfac, factK = _tail_consts(n, K)
    Jh, D, beta, tcoef, Ht = _kernels()["tail"](
        np.ascontiguousarray(J[0]),
        float(D_J[0]),
        float(tau[0]),
        bool(light[0]),
        np.ascontiguousarray(delta_lo[0]),
        int(K),
        int(n),
        np.ascontiguousarray(wts, dtype=np.float64),
        lk,
        comb_a,
        rfac,
        factK,
    )
    Jh = Jh[None]
    return {
        "Jh": Jh,
        "J0": Jh[:, n - 1, :, 0],
        "Ht": Ht[None],
        "beta": beta[None],
        "tcoef": tcoef[None],
        "D_J": np.array([D]),
    }


def eval_row(
    ctx: dict[str, Any],
    pi: np.ndarray,
    sg: np.ndarray,
    lm: np.ndarray,
    npos: np.ndarray,
    D_cum: int,
    D_Lam: int,
    D_arith: int,
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`mdsd_ot.fast.series.series_eval` of one row, compiled: (Q, bound), both (1, C).

    Per point, the light cumulants :math:`\Lambda_i = \kappa_{\cdot, i}\,\pi`, the recursion
    :math:`l\,c_l = \sum_i i\,\Lambda_i c_{l-i}`, the sum
    :math:`S = \hat J_{0,0} + \sum_l \langle c_l, \hat J_l \rangle + \text{top}/(n-1)` and the
    bound :math:`\gamma_D \lambda S_{abs} + \lambda\,\mathrm{tail} + u`, by the array code's
    operations in its order; the products of the Hankel matrix with :math:`c_{n-1-i}` are the
    array code's own ``np.einsum`` calls, between the two compiled loops.  ``D_Lam`` and
    ``D_arith`` are the depths that :func:`mdsd_ot.fast.series.series_eval` counts.

    Examples
    --------
    >>> from mdsd_ot.fast.series import series
    >>> q = np.array([[0.4, 0.1, 0.3, 0.2]])
    >>> with disabled():  # the array code of the series
    ...     Q0, e0 = series(q, 3, np)
    >>> Q1, e1 = series(q, 3, np)  # compiled where numba is installed
    >>> bool(np.array_equal(Q0, Q1)), bool(np.array_equal(e0, e1))
    (True, True)
    """
    n, K = ctx["n"], ctx["K"]
    k = _kernels()
    pi2 = np.ascontiguousarray(pi[0])
    sg1 = np.ascontiguousarray(sg[0], dtype=np.int64)
    cc, S = k["eval_a"](pi2, sg1, ctx["Jh"][0], ctx["kap"], n, K)
    M = np.empty_like(cc)  # M[i] = Ht @ c[n - 1 - i], i = 1..n-2 (M[0] unused)
    Ht = ctx["Ht"]
    for i in range(1, n - 1):  # the array code's products, by numpy itself
        M[i] = np.einsum("bij,bjk->bik", Ht, cc[n - 1 - i][None])[0]
    D_J = float(ctx["D_J"][0])
    x = float(D_cum + 1) + D_J
    x = x + float((n - 1) * D_Lam)
    x = x + float(D_arith)
    D = 1.25 * x + 20.0
    gD = D * _U / (1.0 - D * _U)
    return k["eval_b"](
        pi2,
        sg1,
        np.ascontiguousarray(lm[0]),
        np.ascontiguousarray(npos[0], dtype=np.int64),
        np.ascontiguousarray(ctx["kap"], dtype=np.float64),
        S,
        M,
        np.ascontiguousarray(ctx["J0"][0]),
        np.ascontiguousarray(ctx["beta"][0]),
        np.ascontiguousarray(ctx["tcoef"][0]),
        n,
        K,
        gD,
    )
