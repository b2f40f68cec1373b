r"""The compiled loops of the sequential series (:mod:`.seqseries`), at module level (numba).

``_k_heavy``: the scaled heavy moments :math:`J_{a,k}` of every heavy configuration, in one
pass over the configurations that recomputes only the subsets D holding a token whose mass
changed (:func:`.seqseries._heavy`'s operations, bit-identical).  ``_k_series``: the pass over
the pieces of :func:`.seqseries.seq_series_law` (power sums, the cumulant series, the sum with
the heavy moments, Φ and the cut bound), blocks of pieces side by side so that the loops over a
block vectorise; for several variants that share the light pieces and differ in their heavy
moments and λ (:func:`.seqseries.seq_series_subsets`, used by :mod:`.seqsingle`), the light
part (``_light_block``: power sums and cumulant series) once per block and the heavy part
(``_finish_block``) once per variant.

``_push`` is the streaming blocked sum of the power sums (``_k_series`` and, for the tests,
``_k_power_sums``: :func:`.seqseries.power_sums`).

Imported only when numba is installed (:func:`.seqseries.kernels`).  Module-level functions (not
closures), each helper in the file of the kernels that call it, so that numba's disk cache
serves them to every new process.  Why their operations are the numpy route's is documented in :mod:`.seqseries`.
"""

from __future__ import annotations

import numpy as np

from ...fast._fused import jit_decorator

U = 2.0**-53  #: unit roundoff (:data:`.cutlaw.U`)

_BLOCK = 64  #: block of the blocked sums, :mod:`.cutlaw`'s (a compile-time constant)

jit = jit_decorator()


@jit
def _levels(N):  # pragma: no cover - compiled
    # the block levels of cutlaw.blocked_cumsum on N terms (0: a plain running sum)
    L = 0
    while N > _BLOCK:
        N = (N + _BLOCK - 1) // _BLOCK
        L += 1
    return L


@jit
def _push(loc, off, pos, L, x, out):  # pragma: no cover - compiled
    # the streaming cutlaw.blocked_cumsum (as _cutjit_law_nb._k_push / _k_advance) of the
    # channels j = 0..len(x)-1, L block levels: the next item x[j] at level 0, its inclusive
    # blocked sum to out[j]; per level t, loc[j, t] is the partial sum of the current block and
    # off[j, t] its offset (the inclusive blocked sum of the earlier blocks' totals, level t + 1)
    C = x.shape[0]
    for j in range(C):
        if pos[0] == 0:
            loc[j, 0] = x[j]
        else:
            loc[j, 0] += x[j]
        out[j] = off[j, 0] + loc[j, 0]
    pos[0] += 1
    _close(loc, off, pos, L)


@jit
def _close(loc, off, pos, L):  # pragma: no cover - compiled
    # after an item: the full blocks close, their totals the next items one level up, and the
    # new offsets the inclusive blocked sums there (blocked_cumsum's offsets)
    C = loc.shape[0]
    t = 0
    while t < L and pos[t] == _BLOCK:
        pos[t] = 0
        for j in range(C):
            if pos[t + 1] == 0:
                loc[j, t + 1] = loc[j, t]
            else:
                loc[j, t + 1] += loc[j, t]
            off[j, t] = off[j, t + 1] + loc[j, t + 1]
        pos[t + 1] += 1
        t += 1


@jit
def _k_power_sums(x, chunk, out):  # pragma: no cover - compiled
    # seqseries.power_sums by the compiled pass's streaming sums (x, out: (C, N)); for tests
    C, N = x.shape
    Lmax = _levels(min(chunk, N))
    loc = np.zeros((C, Lmax + 1))
    off = np.zeros((C, Lmax + 1))
    pos = np.zeros(Lmax + 1, dtype=np.int64)
    carry = np.zeros(C)
    cs = np.zeros(C)
    col = np.zeros(C)
    L = 0
    for c in range(N):
        if c % chunk == 0:
            L = _levels(min(chunk, N - c))
            for t in range(L + 1):
                pos[t] = 0
                for j in range(C):
                    off[j, t] = 0.0
        for j in range(C):
            col[j] = x[j, c]
        _push(loc, off, pos, L, col, cs)
        for j in range(C):
            out[j, c] = cs[j] + carry[j]
        if c % chunk == chunk - 1 or c == N - 1:
            for j in range(C):
                carry[j] = out[j, c]


@jit
def _k_configs(dh, th, Wc):  # pragma: no cover - compiled
    # seqseries.heavy_configs: per heavy token the Sum2 running sum (TwoSum chain, fl(hi + lo))
    # of its pieces' masses, held between its pieces; Wc (H + 1, m) zero on entry
    H = dh.shape[0]
    m = Wc.shape[1]
    hi = np.zeros(m)
    lo = np.zeros(m)
    for s in range(H):
        t = th[s]
        for u in range(m):
            Wc[s + 1, u] = Wc[s, u]
        x = dh[s]
        h = hi[t]
        sm = h + x
        bb = sm - h
        lo[t] = lo[t] + ((h - (sm - bb)) + (x - bb))
        hi[t] = sm
        Wc[s + 1, t] = sm + lo[t]


@jit
def _k_heavy(
    W, above, base, kt, g0, mem, par, mask, lay, J, G, dd, todo, acc, wv, pv
):  # pragma: no cover - compiled
    # W (S, m) configurations, above (S, m) the heavy masses above the cut, base (N,) the
    # subsets' T - q(D) (seqseries.subset_bases); subsets by global index i (0: the empty set, size a holds
    # lay[a] <= i < lay[a + 1]), members mem[i, :a] ascending (bit set mask[i]), par[i, r] the
    # index of D less member r; G (N, K + 1) the G_D of the current configuration, dd (N,) their
    # d(D); J (S, n, K + 1) written for a = 1 .. A (the caller sets a = 0 and the rest).  Each
    # G_D recomputed is formed by _heavy's operations on the same operands; only the schedule
    # differs (for a >= 2 the Taylor order k outside the subsets of the size, so that the
    # divisions of independent subsets overlap); wv, pv (N, max a) scratch: the recomputed
    # subsets' member masses and parents
    S, m = W.shape
    K1 = kt.shape[0]
    A = lay.shape[0] - 2
    for k in range(K1):
        G[0, k] = g0[k]
    for s in range(S):
        chm = 0
        for t in range(m):
            if s == 0 or not (W[s, t] == W[s - 1, t] and above[s, t] == above[s - 1, t]):
                chm |= np.int64(1) << t
        if chm == 0:  # the same masses: the same G_D, the same sums
            for a in range(1, A + 1):
                for k in range(K1):
                    J[s, a, k] = J[s - 1, a, k]
            continue
        for a in range(1, A + 1):
            nt = 0
            for i in range(lay[a], lay[a + 1]):
                if mask[i] & chm:  # a member changed (else G_D's inputs, and bits, are the same)
                    todo[nt] = i
                    nt += 1
                    # d(D) = b(D) + the members' masses above the cut (seqseries._heavy)
                    h = base[i]
                    for r in range(a):
                        h = h + above[s, mem[i, r]]
                    dd[i] = h
            for u in range(nt):  # the members' masses and the parents, by position
                i = todo[u]
                for r in range(a):
                    wv[u, r] = W[s, mem[i, r]]
                    pv[u, r] = par[i, r]
            if a == 1:
                for u in range(nt):
                    i = todo[u]
                    w0 = wv[u, 0]
                    di = dd[i]
                    g = w0 * G[0, 0] / di
                    G[i, 0] = g
                    for k in range(1, K1):
                        g = (w0 * G[0, k] + kt[k] * g) / di
                        G[i, k] = g
            elif a == 2:
                for k in range(K1):
                    for u in range(nt):
                        i = todo[u]
                        f = wv[u, 0] * G[pv[u, 0], k]
                        f += wv[u, 1] * G[pv[u, 1], k]
                        if k == 0:
                            G[i, 0] = f / dd[i]
                        else:
                            G[i, k] = (f + kt[k] * G[i, k - 1]) / dd[i]
            elif a == 3:
                for k in range(K1):
                    for u in range(nt):
                        i = todo[u]
                        f = wv[u, 0] * G[pv[u, 0], k]
                        f += wv[u, 1] * G[pv[u, 1], k]
                        f += wv[u, 2] * G[pv[u, 2], k]
                        if k == 0:
                            G[i, 0] = f / dd[i]
                        else:
                            G[i, k] = (f + kt[k] * G[i, k - 1]) / dd[i]
            else:
                for k in range(K1):
                    for u in range(nt):
                        i = todo[u]
                        f = wv[u, 0] * G[pv[u, 0], k]
                        for r in range(1, a):
                            f += wv[u, r] * G[pv[u, r], k]
                        if k == 0:
                            G[i, 0] = f / dd[i]
                        else:
                            G[i, k] = (f + kt[k] * G[i, k - 1]) / dd[i]
            # J_a = the layer's G_D summed in index order (numpy's g.sum(axis=1))
            i0 = lay[a]
            for k in range(K1):
                acc[k] = G[i0, k]
            for i in range(i0 + 1, lay[a + 1]):
                for k in range(K1):
                    acc[k] += G[i, k]
            for k in range(K1):
                J[s, a, k] = acc[k]


@jit
def _light_block(
    d, v, light, tau, chunk, c0, nb, kap, n, st, carry, loc, off, pos, pi, Lam, cser, acc, prod, sc
):  # pragma: no cover - compiled
    # the light part of the pass over the pieces for the block of nb pieces from c0: the Horner
    # increments, the power sums pi (power_sums' order: blocked sums per chunk, plus the carry;
    # the streaming state carry, loc, off, pos and st[0] = the current chunk's block levels
    # kept between blocks), the products Lam and the cumulant series cser; sc (K1 + 5, B)
    # scratch: the increments and the Horner terms
    P = d.shape[0]
    K1 = kap.shape[0]
    inc = sc[:K1]
    zb, vb, ub, pw, raw = sc[K1], sc[K1 + 1], sc[K1 + 2], sc[K1 + 3], sc[K1 + 4]
    for b in range(nb):
        c = c0 + b
        zc = 0.0
        vc = 0.0
        if light[c] and tau > 0:
            zc = d[c] / tau
            vc = v[c] / tau
        zb[b] = zc
        vb[b] = vc
        ub[b] = vc + zc
        pw[b] = 1.0
        inc[0, b] = 0.0
    for j in range(1, K1):  # sum_{i<j} up^i vv^(j-1-i), by a Horner step
        for b in range(nb):
            pwp = pw[b]
            pw[b] = pwp * ub[b]
            if j == 1:
                raw[b] = 0.0 + pwp
            else:
                raw[b] = raw[b] * vb[b] + pwp
            inc[j, b] = raw[b] * zb[b]
    for b in range(nb):  # power_sums' order: blocked sums per chunk, plus the carry
        c = c0 + b
        if c % chunk == 0:
            st[0] = _levels(min(chunk, P - c))
            for t in range(st[0] + 1):
                pos[t] = 0
                for j in range(K1):
                    off[j, t] = 0.0
        L = st[0]
        # level 0 inline (_push's operations): the partial sum of the current 64-block
        if pos[0] == 0:
            for j in range(K1):
                loc[j, 0] = inc[j, b]
        else:
            for j in range(K1):
                loc[j, 0] += inc[j, b]
        for j in range(K1):
            pi[j, b] = (off[j, 0] + loc[j, 0]) + carry[j]
        pos[0] += 1
        if L > 0 and pos[0] == _BLOCK:
            _close(loc, off, pos, L)
        if c % chunk == chunk - 1 or c == P - 1:
            for j in range(K1):
                carry[j] = pi[j, b]
    for i in range(1, n):
        for j in range(K1):
            kj = kap[j, i]
            for b in range(nb):
                Lam[i, j, b] = kj * pi[j, b]
    for k in range(K1):
        for b in range(nb):
            cser[0, k, b] = 1.0 if k == 0 else 0.0
    for l in range(1, n):
        fl = float(l)
        for k in range(K1):
            for b in range(nb):
                acc[k, b] = fl * Lam[l, k, b]
        for i in range(1, l):
            for k in range(K1):
                for b in range(nb):
                    prod[k, b] = 0.0
            for jj in range(1, K1):
                for k in range(jj, K1):
                    for b in range(nb):
                        prod[k, b] += Lam[i, jj, b] * cser[l - i, k - jj, b]
            fi = float(i)
            for k in range(K1):
                for b in range(nb):
                    acc[k, b] = acc[k, b] + fi * prod[k, b]
        for k in range(K1):
            for b in range(nb):
                cser[l, k, b] = acc[k, b] / fl


@jit
def _majorants(nb, n, pi, Bl, P1l):  # pragma: no cover - compiled
    # the light factors of the cut bound, per level l = 1..n-1: Bl[l] = binom(pi_1 + l - 1, l)
    # (the |kappa| majorant) and P1l[l] = pi_1^l (the truncation's), by _pieces' recursions
    for b in range(nb):
        p1 = pi[1, b]
        B_l = 1.0
        p1l = 1.0
        for l in range(1, n):
            fl = float(l)
            B_l = B_l * (p1 + fl - 1.0) / fl
            p1l = p1l * p1
            Bl[l, b] = B_l
            P1l[l, b] = p1l


@jit
def _finish_block(
    c0, nb, seg, lam, lam_off, Jh, beta, tail, n, g_tot, Bl, P1l, cser, Sv, e, sgb, Phi, bound
):  # pragma: no cover - compiled
    # the heavy part for the block: S = sum_l sum_k c_{l,k} Jh_{l,k} (the einsum's sum over k
    # in order, then the levels), Phi = 1 - lambda S and the cut bound; lambda = lam + lam_off.
    # Most blocks lie in one heavy configuration (seg non-decreasing): its moments are then
    # read once per (l, k), the same products
    K1 = cser.shape[1]
    for b in range(nb):
        Sv[b] = 0.0
        sgb[b] = seg[c0 + b + 1]
    one = sgb[0] == sgb[nb - 1]
    s0 = sgb[0]
    for l in range(n):
        for b in range(nb):
            e[b] = 0.0  # the einsum's sum over k, in order
        if one:
            for k in range(K1):
                jv = Jh[s0, l, k]
                for b in range(nb):
                    e[b] = e[b] + cser[l, k, b] * jv
        else:
            for k in range(K1):
                for b in range(nb):
                    e[b] = e[b] + cser[l, k, b] * Jh[sgb[b], l, k]
        for b in range(nb):
            Sv[b] = Sv[b] + e[b]
    for b in range(nb):
        c = c0 + b
        sg = sgb[b]
        lm = lam[c + 1] + lam_off
        Phi[c + 1] = 1.0 - lm * Sv[b]
        s_abs = beta[sg, 0]
        tl = 0.0
        for l in range(1, n):
            s_abs = s_abs + Bl[l, b] * beta[sg, l]
            tl = tl + P1l[l, b] * tail[sg, l]
        bound[c + 1] = (g_tot * lm * s_abs + lm * tl + 4.0 * U) * (1.0 + 1e-6)


@jit
def _k_series(
    d, v, light, seg, lam, lam_off, Jh, beta, tail, kap, tau, n, chunk, g_tot, Phi, bound, B
):  # pragma: no cover - compiled
    # seq_series_law's loop over the pieces for NV variants that share the pieces and differ
    # in their heavy moments Jh[u], beta[u], tail[u] (u = 0..NV-1) and in lambda = lam +
    # lam_off[u]; cut c + 1 (after piece c) is written to Phi[u] and bound[u].  Pieces in
    # blocks of B (B divides chunk): per block the power sums one piece after the other (the
    # cumulative sums restart every `chunk` pieces, with the carry), then the cumulant series
    # with the block's pieces side by side (_light_block, once), then per variant the sums,
    # Phi and the bound (_finish_block)
    P = d.shape[0]
    K1 = kap.shape[0]
    NV = lam_off.shape[0]
    pi = np.zeros((K1, B))
    Lam = np.zeros((n, K1, B))
    cser = np.zeros((n, K1, B))
    acc = np.zeros((K1, B))
    prod = np.zeros((K1, B))
    sc = np.zeros((K1 + 5, B))
    Sv, e = np.zeros(B), np.zeros(B)
    Bl, P1l = np.zeros((n, B)), np.zeros((n, B))
    sgb = np.zeros(B, dtype=np.int64)
    carry = np.zeros(K1)
    Lmax = _levels(min(chunk, P))
    loc = np.zeros((K1, Lmax + 1))
    off = np.zeros((K1, Lmax + 1))
    pos = np.zeros(Lmax + 1, dtype=np.int64)
    st = np.zeros(1, dtype=np.int64)
    for c0 in range(0, P, B):
        nb = min(B, P - c0)
        _light_block(
            d, v, light, tau, chunk, c0, nb, kap, n, st, carry, loc, off, pos, pi, Lam, cser,
            acc, prod, sc,
        )  # fmt: skip
        _majorants(nb, n, pi, Bl, P1l)
        for u in range(NV):
            _finish_block(
                c0, nb, seg, lam, lam_off[u], Jh[u], beta[u], tail[u], n, g_tot, Bl, P1l, cser,
                Sv, e, sgb, Phi[u], bound[u],
            )  # fmt: skip


@jit
def _k_cut_counts(is_h, d, v, seg, light_sum, first):  # pragma: no cover - compiled
    # per cut c = 0..P (above the first c pieces), in one pass: the heavy pieces below
    # (np.cumsum of is_h), the running sum of the light pieces' masses (np.cumsum of
    # np.where(light, d, 0.0): the same additions, in order) and the pieces that are their
    # token's first with mass (np.cumsum of (v == 0) & (d > 0))
    seg[0] = 0
    light_sum[0] = 0.0
    first[0] = 0
    for e in range(d.shape[0]):
        h = is_h[e] != 0
        seg[e + 1] = seg[e] + (1 if h else 0)
        light_sum[e + 1] = light_sum[e] + (0.0 if h else d[e])
        first[e + 1] = first[e] + (1 if (v[e] == 0 and d[e] > 0) else 0)
