r"""The compiled loops of the piece kernels and their design, at module level (numba).

The grouping of the pieces by token (``_k_csr``), :func:`~.pieces.build_pieces` up to the draws
(``_k_build``, its runs sorted by sub-level by ``_k_run_sort``), the first-in first-out pairing
of :func:`~.relabel.fifo_pairs` (``_k_fifo``), the pair masses of :func:`~.pieces.pair_masses`
(``_k_pairs``, with ``_k_without``, ``_k_magnitude`` and ``_k_ab``; ``_k_window_coeffs`` and ``_k_pairs_at``
for the pairs recomputed from their windows, :mod:`.windows`), and the supply / demand split and the model-corrected
residual of :func:`~.pieces.design` (``_k_split``, ``_k_residual``).

Imported only when numba is installed (:func:`._cutjit._kernels`).  Module-level functions (not
closures), each helper in the file of the kernels that call it, so that numba's disk cache
serves them to every new process.  What each kernel computes, and why its operations are the
numpy route's in the same order, is documented at its wrapper in :mod:`._cutjit`.
"""

from __future__ import annotations

import numpy as np

from ...fast._fused import jit_decorator

jit = jit_decorator()


@jit
def _k_csr(tok, V, start, order, nxt):  # pragma: no cover - compiled
    # stable counting sort of the pieces by token (= np.argsort(tok, kind="stable"))
    for k in range(V + 1):
        start[k] = 0
    for e in range(tok.shape[0]):
        start[tok[e] + 1] += 1
    for k in range(V):
        start[k + 1] += start[k]
    for k in range(V):
        nxt[k] = start[k]
    for e in range(tok.shape[0]):
        k = tok[e]
        order[nxt[k]] = e
        nxt[k] += 1


@jit
def _k_run_sort(o, lo, hi, V, key):  # pragma: no cover - compiled
    # sort o[lo:hi] by sub-level, stably (ascending: kept; strictly descending, the
    # first-in first-out order: reversed; else a stable merge sort)
    up = True
    down = True
    prev = key[o[lo] - V]
    for i in range(lo + 1, hi):
        k = key[o[i] - V]
        if k < prev:
            up = False
        if k >= prev:
            down = False
        prev = k
    if up:
        return
    if down:
        i, j = lo, hi - 1
        while i < j:
            t = o[i]
            o[i] = o[j]
            o[j] = t
            i += 1
            j -= 1
        return
    keys = np.empty(hi - lo, dtype=np.int64)
    for i in range(lo, hi):
        keys[i - lo] = key[o[i] - V]
    sub = o[lo:hi].copy()
    perm = np.argsort(keys, kind="mergesort")
    for i in range(hi - lo):
        o[lo + i] = sub[perm[i]]


@jit
def _k_build(qs, x, y, a, b, quant, tok, prob, o):  # pragma: no cover - compiled
    # pieces.build_pieces up to the draws: returns (number of pieces, largest ratio);
    # tok, prob and o (the stable sort of the pieces by (slot, sub-level) from the
    # concatenation own pieces, lifts, drops) are filled
    V = qs.shape[0]
    P = x.shape[0]
    out = np.zeros(V)
    for i in range(P):
        out[x[i]] += a[i]
    out2 = np.zeros(V)
    for i in range(P):
        out2[y[i]] += b[i]
    rmax = 0.0
    for k in range(V):  # out <- the scale of the token's pieces
        tot = out[k] + out2[k]
        r = tot / qs[k] if qs[k] > 0 else 0.0
        if k == 0 or r > rmax or r != r:
            rmax = r
        out[k] = (1.0 - 2.0**-40) / r if r > 1.0 else 1.0
    pa = np.empty(P)
    pb = np.empty(P)
    na = 0
    nb = 0
    for i in range(P):
        pa[i] = np.floor(a[i] * out[x[i]] / qs[x[i]] * quant) / quant
        pb[i] = np.floor(b[i] * out[y[i]] / qs[y[i]] * quant) / quant
        na += pa[i] > 0
        nb += pb[i] > 0
    N = V + na + nb
    src = np.empty(na + nb, dtype=np.int64)  # lift: the pair i; drop: -1 - i
    key = np.empty(na + nb, dtype=np.int64)  # sub-level: lift V + 1 + x, drop y
    nd = np.zeros(V, dtype=np.int64)  # drops and lifts per slot
    nl = np.zeros(V, dtype=np.int64)
    for k in range(V):
        out[k] = 0.0
        out2[k] = 0.0
    j = 0
    for i in range(P):
        if pa[i] > 0:
            src[j] = i
            key[j] = V + 1 + x[i]
            out[x[i]] += pa[i]
            nl[y[i]] += 1
            j += 1
    for i in range(P):
        if pb[i] > 0:
            src[j] = -1 - i
            key[j] = y[i]
            out2[y[i]] += pb[i]
            nd[x[i]] += 1
            j += 1
    # counting sort by slot: drops (sub < V), the own piece (sub = V), lifts (sub > V),
    # each run in concatenation order, then sorted by sub stably
    dpos = np.empty(V, dtype=np.int64)
    lpos = np.empty(V, dtype=np.int64)
    c = 0
    for k in range(V):
        dpos[k] = c
        o[c + nd[k]] = k
        lpos[k] = c + nd[k] + 1
        c += nd[k] + 1 + nl[k]
    for j in range(na + nb):
        i = src[j]
        if i >= 0:
            o[lpos[y[i]]] = V + j
            lpos[y[i]] += 1
        else:
            o[dpos[x[-1 - i]]] = V + j
            dpos[x[-1 - i]] += 1
    c = 0
    for k in range(V):
        if nd[k] > 1:
            _k_run_sort(o, c, c + nd[k], V, key)
        if nl[k] > 1:
            _k_run_sort(o, c + nd[k] + 1, c + nd[k] + 1 + nl[k], V, key)
        c += nd[k] + 1 + nl[k]
    for e in range(N):
        f = o[e]
        if f < V:
            tok[e] = f
            prob[e] = 1.0 - (out[f] + out2[f])
        else:
            i = src[f - V]
            if i >= 0:
                tok[e] = x[i]
                prob[e] = pa[i]
            else:
                tok[e] = y[-1 - i]
                prob[e] = pb[-1 - i]
    return N, rmax


@jit
def _k_fifo(sup, dem, x_out, y_out, t_out, js, jd, S, Dm):  # pragma: no cover - compiled
    # relabel.fifo_pairs: the unit ends of supply and demand from the top of the chain
    # (cumulative sums of non-negative terms: ascending), merged (supply first on ties)
    V = sup.shape[0]
    ns = 0
    nd = 0
    cs = 0.0
    cd = 0.0
    for r in range(V):
        k = V - 1 - r
        if sup[k] > 0:
            cs = sup[k] if ns == 0 else cs + sup[k]
            S[ns] = cs
            js[ns] = r
            ns += 1
        if dem[k] > 0:
            cd = dem[k] if nd == 0 else cd + dem[k]
            Dm[nd] = cd
            jd[nd] = r
            nd += 1
    if ns == 0 or nd == 0:
        return 0
    i = 0
    l = 0
    prev = 0.0
    P = 0
    while i < ns or l < nd:
        j, k = i, l
        if l >= nd or (i < ns and S[i] <= Dm[l]):
            b = S[i]
            i += 1
        else:
            b = Dm[l]
            l += 1
        tau = b - prev
        prev = b
        if j < ns and k < nd and tau > 0:
            x = V - 1 - jd[k]
            y = V - 1 - js[j]
            if y > x:
                x_out[P] = x
                y_out[P] = y
                t_out[P] = tau
                P += 1
    return P


@jit
def _k_without(E, j, qx, m):  # pragma: no cover - compiled; pieces._without, one pair
    out = 0.0
    pw = 1.0
    for k in range(m + 1):
        out += pw * E[m - k, j]
        pw = pw * -qx
    return out if not out < 0.0 else 0.0


@jit
def _k_magnitude(E, j, qx, m):  # pragma: no cover - compiled
    # the sum of |terms| of _k_without: |(-qx)^k E| = qx^k E, the same bits (E >= 0); a
    # separate loop, as a helper returning both ran at half the speed
    out = 0.0
    pw = 1.0
    for k in range(m + 1):
        out += pw * E[m - k, j]
        pw = pw * qx
    return out


@jit
def _k_ab(t, h, hp, Iv, Jv, a_out, b_out, i):  # pragma: no cover - compiled
    # pieces.pair_masses from the coefficients, one pair
    det = Iv * Jv + Iv * h + hp * Jv
    s1 = Iv + h + hp
    flat = t / (s1 if s1 > 1e-300 else 1e-300)
    if det > 1e-12 * ((Iv + hp) * (Jv + h) + h * hp):
        a_out[i] = t * Jv / det
        b_out[i] = t * Iv / det
    else:
        a_out[i] = flat
        b_out[i] = flat


@jit
def _k_pairs(qs, n, E, x, y, tau, cancel, a_out, b_out, bad):  # pragma: no cover - compiled
    # pieces.pair_masses without rigid slots, the same operations per pair; bad[i] = 1 where a
    # prefix formula keeps too few digits (pieces.pair_coefficients: the window's values then)
    V1 = E.shape[1]
    en = E[n, V1 - 1]
    en = en if en > 1e-300 else 1e-300  # max(en, 1e-300), en >= 0
    lo = n - 2 if n >= 2 else 0
    for i in range(x.shape[0]):
        xi, yi, t = x[i], y[i], tau[i]
        qx, qy = qs[xi], qs[yi]
        h = qx * E[lo, xi] / en
        ok = True
        if n >= 2:
            wo2 = _k_without(E, yi, qx, n - 2)
            hp = qy * wo2 / en
            if n >= 3:  # (a nan is not above: recomputed too)
                ok = wo2 > cancel * _k_magnitude(E, yi, qx, n - 2)
        else:
            hp = qy / en
        wo1 = _k_without(E, yi, qx, n - 1)
        En1x = E[n - 1, xi]
        En1y = E[n - 1, yi]
        Id = wo1 - En1x
        Jd = En1y - E[n - 1, xi + 1]
        if n >= 2:
            ok = ok & (Id > cancel * (_k_magnitude(E, yi, qx, n - 1) + En1x))
            ok = ok & (Jd > cancel * En1y)
        bad[i] = 0 if ok else 1
        Iv = (Id if not Id < 0.0 else 0.0) / en
        Jv = (Jd if not Jd < 0.0 else 0.0) / en
        _k_ab(t, h, hp, Iv, Jv, a_out, b_out, i)


@jit
def _k_window_coeffs(qs, n, E, x, y, idx, blocks, width, en, hp, Iv, Jv):  # pragma: no cover
    # windows.window_coefficients for the pairs idx (written at 0..len(idx) - 1), each window
    # in the canonical order of windows.window_levels (slot steps, whole aligned blocks, slot
    # steps); n >= 2
    w = np.zeros(n)
    c = np.zeros(n)
    for r in range(idx.shape[0]):
        i = idx[r]
        xi, yi = x[i], y[i]
        w[:] = 0.0
        w[0] = 1.0
        lo_ = xi + 1
        first = -(-lo_ // width) * width
        nblk = (yi - first) // width
        nblk = nblk if nblk > 0 else 0
        head_end = first if nblk > 0 else (yi if yi > lo_ else lo_)
        for k in range(lo_, head_end):
            q = qs[k]
            for m in range(n - 1, 0, -1):
                w[m] = w[m] + q * w[m - 1]
        for b in range(nblk):
            row = first // width + b
            for m in range(n):
                acc = 0.0
                for j in range(m + 1):
                    acc = acc + w[j] * blocks[row, m - j]
                c[m] = acc
            w[:] = c
        if nblk > 0:
            for k in range(first + nblk * width, yi):
                q = qs[k]
                for m in range(n - 1, 0, -1):
                    w[m] = w[m] + q * w[m - 1]
        wo2 = 0.0
        i_sum = 0.0
        j_sum = 0.0
        for j in range(n - 1):
            wo2 = wo2 + E[j, xi] * w[n - 2 - j]
            i_sum = i_sum + E[j, xi] * w[n - 1 - j]
            j_sum = j_sum + E[j, xi + 1] * w[n - 1 - j]
        hp[r] = qs[yi] * wo2 / en
        Iv[r] = i_sum / en
        Jv[r] = j_sum / en


@jit
def _k_pairs_at(qs, n, E, x, tau, idx, hp, Iv, Jv, a_out, b_out):  # pragma: no cover
    # pair_masses of the pairs idx from their coefficients (hp, Iv, Jv at 0..len(idx) - 1)
    V1 = E.shape[1]
    en = E[n, V1 - 1]
    en = en if en > 1e-300 else 1e-300
    lo = n - 2 if n >= 2 else 0
    for r in range(idx.shape[0]):
        i = idx[r]
        h = qs[x[i]] * E[lo, x[i]] / en
        _k_ab(tau[i], h, hp[r], Iv[r], Jv[r], a_out, b_out, i)


@jit
def _k_split(D, t, live, sup, dem):  # pragma: no cover - compiled
    # np.where(live, np.maximum(D - t, 0), 0) and the same of t - D
    for k in range(D.shape[0]):
        u = D[k] - t[k]
        w = t[k] - D[k]
        sup[k] = (u if not u < 0.0 else 0.0) if live[k] else 0.0
        dem[k] = (w if not w < 0.0 else 0.0) if live[k] else 0.0


@jit
def _k_residual(D, s, T, t, live, x, y, tau, f, by):  # pragma: no cover - compiled
    # M = D + bincount(x, tau) - bincount(y, tau); f = where(live, (s - T) + (M - t), 0)
    for k in range(D.shape[0]):
        f[k] = 0.0
        by[k] = 0.0
    for i in range(x.shape[0]):
        f[x[i]] += tau[i]
    for i in range(y.shape[0]):
        by[y[i]] += tau[i]
    for k in range(D.shape[0]):
        M = (D[k] + f[k]) - by[k]
        f[k] = ((s[k] - T[k]) + (M - t[k])) if live[k] else 0.0
