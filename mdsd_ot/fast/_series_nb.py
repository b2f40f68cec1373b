r"""The compiled kernels of :mod:`mdsd_ot.fast._series_jit`, at module level (numba).

Imported only when numba is installed.  Module-level functions (not closures) so that numba's
disk cache serves them to every new process: as closures they were compiled again in each
process (about eight seconds on the first series of a row).  What each kernel computes, and why
its operations are the array code's in the array code's order, is documented at its wrapper in
:mod:`mdsd_ot.fast._series_jit`.
"""

from __future__ import annotations

import numpy as np

from ._fused import jit_decorator

U = 2.0**-53  #: unit roundoff of float64 (a compile-time constant of the kernels)

jit = jit_decorator()


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
