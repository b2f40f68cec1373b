r"""Compiled passes of the piece-kernel laws (:mod:`.cutlaw`, :mod:`.pieces`), by numba.

The numpy route of :func:`~.cutlaw.cp_law` makes, per level m < n, an exclusive blocked
cumulative sum over all pieces (and its absolute-value twin) and a deflation of the piece's own
token; :func:`~.cutlaw.before_after` makes running sums per token.  Here one loop over the pieces
does all levels at once, with the *same* summation order: a *streaming* blocked cumulative sum
keeps, per channel and per block level j, the partial sum of the current block and its offset
(the inclusive sum of the blocks before it, from level j + 1).  When a block of 64 closes its
total becomes the next item of level j + 1, and the new offset is level j + 1's inclusive value
after it, exactly as :func:`~.cutlaw.blocked_cumsum` forms ``off`` from the blocked cumulative
sum of the block totals; the top level (at most 64 items) is a plain running sum.  Every
addition of the numpy route is made, on the same operands and in the same order, so the results
are *bit-identical* (tested) and the rounding depth is the same,
:func:`~.cutlaw.cumsum_depth` (N) for N items: the error bounds of :mod:`.cutlaw` hold unchanged.

The same holds for the rest: :func:`before_after` and :func:`before` (per-token sums, a
token of more than 8 pieces by the blocked sum of its padded row), :func:`build_pieces` (the
stable sort by slot and sub-level as a counting sort), :func:`csr` (the permutation of a
stable :func:`numpy.argsort` by token), :func:`bincount2` (the law's two weighted
``np.bincount``), the design's :func:`split`, :func:`fifo_pairs` (one merge of the supply and
demand ends), :func:`pair_masses` and :func:`residual`, and :func:`total_mass` (CPython's
``math.fsum``).  Sums that numpy forms pairwise (``np.sum``, BLAS products) stay in numpy.

The loops (``_k_*``) are plain Python until :func:`_kernels` compiles them; their helpers
become numba functions as module globals, so that numba caches every kernel on disk.

Without numba, with ``MDSD_OT_JIT=0`` or inside :func:`mdsd_ot.fast._fused.disabled`,
:func:`enabled` is False and the numpy code runs.

Examples
--------
>>> import numpy as np
>>> from .cutlaw import _exclusive
>>> x = np.random.default_rng(0).random(5000)
>>> got = exclusive(x) if enabled() else _exclusive(x)
>>> bool(np.array_equal(got, _exclusive(x)))
True
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...fast import _fused

__all__ = [
    "enabled", "levels", "exclusive", "cp_pass", "run_pass", "before_after", "bincount2", "build_pieces",
    "before", "csr", "mass", "split", "residual", "total_mass", "fifo_pairs", "pair_masses",
]  # fmt: skip

_BLOCK = 64


def enabled() -> bool:
    """Whether the compiled passes run (numba importable and the package's kernels on,
    :func:`mdsd_ot.fast._fused.enabled`).

    Examples
    --------
    >>> from mdsd_ot.fast._fused import disabled
    >>> with disabled():
    ...     enabled()
    False
    """
    return _fused.enabled() and _kernels() is not None


def levels(N: int) -> int:
    """Number of blocked levels of :func:`~.cutlaw.blocked_cumsum` on N items (0: one plain
    cumulative sum), :math:`\\min\\{L : \\lceil N / 64^L \\rceil \\le 64\\}`.

    Examples
    --------
    >>> levels(64), levels(65), levels(4096), levels(4097)
    (0, 1, 1, 2)
    """
    L = 0
    while N > _BLOCK:
        N = -(-N // _BLOCK)
        L += 1
    return L


# -- the compiled loops (plain Python here; numba functions once _kernels() has run) --


def _k_push(loc, off, pos, c, y):  # pragma: no cover - compiled
    # channel c's next item at level 0; its inclusive blocked sum (positions not advanced)
    if pos[0] == 0:
        loc[c, 0] = y
    else:
        loc[c, 0] += y
    return off[c, 0] + loc[c, 0]


def _k_advance(loc, off, pos, L, C):  # pragma: no cover - compiled
    # after every channel's item: close the full blocks, their totals the next items above
    pos[0] += 1
    j = 0
    while j < L and pos[j] == _BLOCK:
        pos[j] = 0
        for c in range(C):
            if pos[j + 1] == 0:
                loc[c, j + 1] = loc[c, j]
            else:
                loc[c, j + 1] += loc[c, j]
            off[c, j] = off[c, j + 1] + loc[c, j + 1]
        pos[j + 1] += 1
        j += 1


def _k_levels(N):  # pragma: no cover - compiled
    L = 0
    while N > _BLOCK:
        N = (N + _BLOCK - 1) // _BLOCK
        L += 1
    return L


def _k_excl(x, out):  # pragma: no cover - compiled
    # the exclusive blocked sum, level 0 in scalars (the upper levels as _k_advance)
    N = x.shape[0]
    L = _k_levels(max(N - 1, 0))
    loc = np.zeros((1, L + 1))
    off = np.zeros((1, L + 1))
    pos = np.zeros(L + 1, dtype=np.int64)
    prev = 0.0
    part = 0.0  # partial sum of the current level-0 block
    o0 = 0.0  # its offset
    p0 = 0
    for e in range(N):
        out[e] = prev
        if e < N - 1:
            part = x[e] if p0 == 0 else part + x[e]
            prev = o0 + part
            p0 += 1
            if p0 == _BLOCK and L > 0:
                loc[0, 0] = part
                pos[0] = _BLOCK - 1
                _k_advance(loc, off, pos, L, 1)
                o0 = off[0, 0]
                p0 = 0


def _k_cp_pass(d, v, n, tok, skip, stop, g_out, ga_out, flag):  # pragma: no cover
    # levels m = 1..n-1 of cutlaw._cp_pass in one loop; channel 2(m-1): e_m of the low
    # masses before the piece, 2(m-1)+1: its absolute-value twin.  skip >= 0: that token's
    # pieces count as mass 0 and only they are written (the pass without the token).
    N = d.shape[0]
    C = 2 * (n - 1)
    L = _k_levels(max(N - 1, 0))
    loc = np.zeros((C, L + 1))
    off = np.zeros((C, L + 1))
    pos = np.zeros(L + 1, dtype=np.int64)
    prevb = np.zeros(n)
    preva = np.zeros(n)
    eb = np.ones(n)
    ea = np.ones(n)
    g = np.ones(n)
    ga = np.ones(n)
    for e in range(stop):
        de = d[e]
        ve = v[e]
        mine = skip >= 0 and tok[e] == skip
        if mine:
            de = 0.0
            ve = 0.0
        for m in range(1, n):
            eb[m] = prevb[m]
            ea[m] = preva[m]
        for m in range(1, n):
            gm = eb[m]
            gam = ea[m]
            if ve > 0:  # deflate the piece's own token: sum_i (-v)^i e_{m-i}
                pw = -ve
                for i in range(1, m + 1):
                    gm += pw * eb[m - i]
                    gam += abs(pw) * ea[m - i]
                    pw = pw * -ve
            g[m] = gm if not gm < 0.0 else 0.0
            ga[m] = gam
        if skip < 0 or mine:
            g_out[e] = g[n - 1]
            ga_out[e] = ga[n - 1]
            if skip < 0 and ve > 0 and ga[n - 1] > 1e3 * g[n - 1]:
                flag[tok[e]] = 1
        if e < N - 1:
            for m in range(1, n):
                prevb[m] = _k_push(loc, off, pos, 2 * (m - 1), de * g[m - 1])
                preva[m] = _k_push(loc, off, pos, 2 * (m - 1) + 1, de * ga[m - 1])
            _k_advance(loc, off, pos, L, C)


def _k_close(loc, off, pos, L, C, lb, la, ob, oa):  # pragma: no cover - compiled
    # a level-0 block of the scalar kernel closed: its totals lb[c], la[c] go up, and the
    # new offsets come back in ob, oa (channel 2c: e_{c+1}, 2c + 1: its twin)
    for c in range(C // 2):
        loc[2 * c, 0] = lb[c]
        loc[2 * c + 1, 0] = la[c]
    pos[0] = _BLOCK - 1
    _k_advance(loc, off, pos, L, C)
    for c in range(C // 2):
        ob[c] = off[2 * c, 0]
        oa[c] = off[2 * c + 1, 0]


def _k_cp_pass4(d, v, n, tok, skip, stop, g_out, ga_out, flag):  # pragma: no cover
    # cp_pass for n <= 5 with the level-0 state in scalars (the same additions: the
    # deflation powers pw_i = pw_{i-1} * -v, e_m + pw_1 e_{m-1} + ... + pw_m e_0, e_0 = 1)
    N = d.shape[0]
    K = n - 1
    C = 8
    L = _k_levels(max(N - 1, 0))
    loc = np.zeros((C, L + 1))
    off = np.zeros((C, L + 1))
    pos = np.zeros(L + 1, dtype=np.int64)
    lb = np.zeros(4)
    la = np.zeros(4)
    ob = np.zeros(4)
    oa = np.zeros(4)
    b1 = b2 = b3 = b4 = 0.0  # e_m before the piece (inclusive blocked sums so far)
    a1 = a2 = a3 = a4 = 0.0
    l1 = l2 = l3 = l4 = 0.0  # level-0 partial sums of the current block
    k1 = k2 = k3 = k4 = 0.0
    o1 = o2 = o3 = o4 = 0.0  # and their offsets
    p1 = p2 = p3 = p4 = 0.0
    fresh = True
    p0 = 0
    for e in range(stop):
        de = d[e]
        ve = v[e]
        mine = skip >= 0 and tok[e] == skip
        if mine:
            de = 0.0
            ve = 0.0
        g1 = b1
        h1 = a1
        g2 = b2
        h2 = a2
        g3 = b3
        h3 = a3
        g4 = b4
        h4 = a4
        if ve > 0:
            w1 = -ve
            w2 = w1 * -ve
            w3 = w2 * -ve
            w4 = w3 * -ve
            u1, u2, u3, u4 = abs(w1), abs(w2), abs(w3), abs(w4)
            g1 += w1 * 1.0
            h1 += u1 * 1.0
            if K >= 2:
                g2 += w1 * b1
                g2 += w2 * 1.0
                h2 += u1 * a1
                h2 += u2 * 1.0
            if K >= 3:
                g3 += w1 * b2
                g3 += w2 * b1
                g3 += w3 * 1.0
                h3 += u1 * a2
                h3 += u2 * a1
                h3 += u3 * 1.0
            if K >= 4:
                g4 += w1 * b3
                g4 += w2 * b2
                g4 += w3 * b1
                g4 += w4 * 1.0
                h4 += u1 * a3
                h4 += u2 * a2
                h4 += u3 * a1
                h4 += u4 * 1.0
        g1 = g1 if not g1 < 0.0 else 0.0
        g2 = g2 if not g2 < 0.0 else 0.0
        g3 = g3 if not g3 < 0.0 else 0.0
        if skip < 0 or mine:
            if K == 1:
                g_out[e] = g1
                ga_out[e] = h1
            elif K == 2:
                g_out[e] = g2
                ga_out[e] = h2
            elif K == 3:
                g_out[e] = g3
                ga_out[e] = h3
            else:
                g_out[e] = g4 if not g4 < 0.0 else 0.0
                ga_out[e] = h4
            if skip < 0 and ve > 0 and ga_out[e] > 1e3 * g_out[e]:
                flag[tok[e]] = 1
        if e < N - 1:  # push the items d * g_{m-1}, d * ga_{m-1}
            y1 = de * 1.0
            if fresh:
                l1 = y1
                k1 = y1
                l2 = de * g1
                k2 = de * h1
                l3 = de * g2
                k3 = de * h2
                l4 = de * g3
                k4 = de * h3
                fresh = False
            else:
                l1 += y1
                k1 += y1
                l2 += de * g1
                k2 += de * h1
                l3 += de * g2
                k3 += de * h2
                l4 += de * g3
                k4 += de * h3
            b1 = o1 + l1
            a1 = p1 + k1
            b2 = o2 + l2
            a2 = p2 + k2
            b3 = o3 + l3
            a3 = p3 + k3
            b4 = o4 + l4
            a4 = p4 + k4
            p0 += 1
            if p0 == _BLOCK and L > 0:
                lb[0], lb[1], lb[2], lb[3] = l1, l2, l3, l4
                la[0], la[1], la[2], la[3] = k1, k2, k3, k4
                _k_close(loc, off, pos, L, C, lb, la, ob, oa)
                o1, o2, o3, o4 = ob[0], ob[1], ob[2], ob[3]
                p1, p2, p3, p4 = oa[0], oa[1], oa[2], oa[3]
                p0 = 0
                fresh = True


def _k_before_after(order, start, mass, row_len, v_out, a_out):  # pragma: no cover
    # cutlaw.before_after: tokens of <= 8 pieces by running sums, larger ones by the
    # blocked sum of their padded row (row_len: the bucket's longest), minus the term
    V = start.shape[0] - 1
    loc = np.zeros((1, 8))
    off = np.zeros((1, 8))
    pos = np.zeros(8, dtype=np.int64)
    for k in range(V):
        a = start[k]
        c = start[k + 1] - a
        if c == 0:
            continue
        if c <= 8:
            s = 0.0
            v_out[order[a]] = 0.0
            for r in range(1, c):
                s = s + mass[order[a + r - 1]]
                v_out[order[a + r]] = s
            s = 0.0
            a_out[order[a + c - 1]] = 0.0
            for r in range(1, c):
                s = s + mass[order[a + c - r]]
                a_out[order[a + c - 1 - r]] = s
            continue
        Lr = row_len[k]
        L = _k_levels(Lr)
        for direction in range(2):
            for j in range(L + 1):
                loc[0, j] = 0.0
                off[0, j] = 0.0
                pos[j] = 0
            if direction == 1:  # the reversed padded row starts with its zeros
                for _ in range(Lr - c):
                    _k_push(loc, off, pos, 0, 0.0)
                    _k_advance(loc, off, pos, L, 1)
            for r in range(c):
                e = order[a + r] if direction == 0 else order[a + c - 1 - r]
                y = mass[e]
                val = _k_push(loc, off, pos, 0, y)
                _k_advance(loc, off, pos, L, 1)
                if direction == 0:
                    v_out[e] = val - y
                else:
                    a_out[e] = val - y


def _k_before(tok, d, start, row_len, v_out, acc, bid):  # pragma: no cover - compiled
    # the first output of before_after in one pass in level order: a running sum per
    # token of <= 8 pieces, a streaming blocked sum (its own state) per larger token
    V = start.shape[0] - 1
    nbig = 0
    for k in range(V):
        acc[k] = 0.0
        bid[k] = -1
        if start[k + 1] - start[k] > 8:
            bid[k] = nbig
            nbig += 1
    loc = np.zeros((nbig, 1, 8))
    off = np.zeros((nbig, 1, 8))
    pos = np.zeros((nbig, 8), dtype=np.int64)
    Ls = np.zeros(nbig, dtype=np.int64)
    for k in range(V):
        if bid[k] >= 0:
            Ls[bid[k]] = _k_levels(row_len[k])
    for e in range(tok.shape[0]):
        k = tok[e]
        y = d[e]
        b = bid[k]
        if b < 0:
            v_out[e] = acc[k]
            acc[k] = acc[k] + y
        else:
            val = _k_push(loc[b], off[b], pos[b], 0, y)
            _k_advance(loc[b], off[b], pos[b], Ls[b], 1)
            v_out[e] = val - y


def _k_mass(qs, tok, prob, d):  # pragma: no cover - compiled; PieceKernel.mass
    for e in range(tok.shape[0]):
        d[e] = qs[tok[e]] * prob[e]


def _k_bincount2(tok, d, g, ga, V, T, T_abs, inc, inc_abs):  # pragma: no cover - compiled
    # inc = d * g, inc_abs = d * ga and their np.bincount by token (index order)
    for e in range(tok.shape[0]):
        u = d[e] * g[e]
        w = d[e] * ga[e]
        inc[e] = u
        inc_abs[e] = w
        T[tok[e]] += u
        T_abs[tok[e]] += w


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


def _k_without(E, j, qx, m):  # pragma: no cover - compiled; pieces._without, one pair
    out = 0.0
    pw = 1.0
    for k in range(m + 1):
        out += pw * E[m - k, j]
        pw = pw * -qx
    return out if not out < 0.0 else 0.0


def _k_pairs(qs, n, E, x, y, tau, a_out, b_out):  # pragma: no cover - compiled
    # pieces.pair_masses without rigid slots, the same operations per pair
    V1 = E.shape[1]
    en = E[n, V1 - 1]
    en = en if en > 1e-300 else 1e-300  # max(en, 1e-300), en >= 0
    lo = n - 2 if n >= 2 else 0
    for i in range(x.shape[0]):
        xi, yi, t = x[i], y[i], tau[i]
        qx, qy = qs[xi], qs[yi]
        h = qx * E[lo, xi] / en
        if n >= 2:
            hp = qy * _k_without(E, yi, qx, n - 2) / en
        else:
            hp = qy / en
        Iv = _k_without(E, yi, qx, n - 1) - E[n - 1, xi]
        Iv = (Iv if not Iv < 0.0 else 0.0) / en
        Jv = E[n - 1, yi] - E[n - 1, xi + 1]
        Jv = (Jv if not Jv < 0.0 else 0.0) / en
        det = Iv * Jv + Iv * h + hp * Jv
        s1 = Iv + h + hp
        flat = t / (s1 if s1 > 1e-300 else 1e-300)
        if det > 1e-12 * s1 * (Jv + h + hp):
            a_out[i] = t * Jv / det
            b_out[i] = t * Iv / det
        else:
            a_out[i] = flat
            b_out[i] = flat


def _k_split(D, t, live, sup, dem):  # pragma: no cover - compiled
    # np.where(live, np.maximum(D - t, 0), 0) and the same of t - D
    for k in range(D.shape[0]):
        u = D[k] - t[k]
        w = t[k] - D[k]
        sup[k] = (u if not u < 0.0 else 0.0) if live[k] else 0.0
        dem[k] = (w if not w < 0.0 else 0.0) if live[k] else 0.0


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


def _k_msum_add(p, n, x):  # pragma: no cover - compiled; CPython's math.fsum, one term
    i = 0
    for j in range(n):
        y = p[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            p[i] = lo
            i += 1
        x = hi
    p[i] = x
    return i + 1


def _k_msum_value(p, n):  # pragma: no cover - compiled; math.fsum's correctly rounded sum
    hi = 0.0
    if n > 0:
        n -= 1
        hi = p[n]
        lo = 0.0
        while n > 0:
            x = hi
            n -= 1
            y = p[n]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


def _k_fsum2(q):  # pragma: no cover - compiled
    # (fsum(q), fsum(q + [-fsum(q)])) for finite q: Shewchuk's partials, as CPython
    p = np.empty(1100)  # partials are non-overlapping: at most ~ 2100 / 53 + 2 of them
    n = 0
    for k in range(q.shape[0]):
        n = _k_msum_add(p, n, q[k])
    hi = _k_msum_value(p, n)
    n = _k_msum_add(p, n, -hi)
    return hi, _k_msum_value(p, n)


#: numba functions called by the kernels (compiled first, :func:`_kernels`).
_HELPERS = (
    "_k_push",
    "_k_advance",
    "_k_levels",
    "_k_close",
    "_k_run_sort",
    "_k_without",
    "_k_msum_add",
    "_k_msum_value",
)
#: The kernels by key.
_KERNELS = {
    "fsum2": "_k_fsum2",
    "split": "_k_split",
    "residual": "_k_residual",
    "fifo": "_k_fifo",
    "pairs": "_k_pairs",
    "build": "_k_build",
    "excl": "_k_excl",
    "cp_pass": "_k_cp_pass",
    "cp_pass4": "_k_cp_pass4",
    "before_after": "_k_before_after",
    "bincount2": "_k_bincount2",
    "mass": "_k_mass",
    "before": "_k_before",
    "csr": "_k_csr",
}


@functools.cache
def _kernels() -> dict[str, Any] | None:
    """Compile-on-first-call kernels (cached on disk by numba), or None without numba.

    The loops are the module's ``_k_*`` functions; the helpers they call are made numba
    functions first, as module globals, so that every kernel is cached on disk (a kernel that
    calls a closure would be compiled again in every process)."""
    jit = _fused.jit_decorator()
    if jit is None:
        return None
    g = globals()
    for name in _HELPERS:
        if not hasattr(g[name], "py_func"):
            g[name] = jit(g[name])
    return {key: jit(g[name]) for key, name in _KERNELS.items()}


def exclusive(x: np.ndarray) -> np.ndarray:
    r"""Exclusive blocked cumulative sum, :math:`\mathrm{out}_e = \sum_{i<e} x_i`, bit-identical
    to :func:`~.cutlaw._exclusive` (rounding depth :func:`~.cutlaw.cumsum_depth` (N - 1)).

    Examples
    --------
    >>> out = exclusive(np.array([1.0, 2.0, 3.0])) if enabled() else np.array([0.0, 1.0, 3.0])
    >>> out.tolist()
    [0.0, 1.0, 3.0]
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    _kernels()["excl"](x, out)
    return out


def cp_pass(
    d: np.ndarray,
    v: np.ndarray,
    n: int,
    tok: np.ndarray,
    skip: int = -1,
    V: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Level n - 1 of :func:`~.cutlaw._cp_pass`, per piece: :math:`g = e_{n-1}` of the low
    masses before the piece with its own token removed,
    :math:`e_{m}(w \setminus x) = \sum_i (-v)^i e_{m-i}(w)` (clipped at 0 between levels), and
    ``ga`` the same in absolute values.  ``skip`` >= 0: the pass without that token's pieces
    (their mass and v set to 0), written only at those pieces (the rest are left unset).
    The third array (V,) flags the tokens (``V`` of them; none when ``V`` is 0) with a split
    piece where the deflation cancels, :math:`v > 0` and ``ga`` > 1000 ``g`` (main pass).

    Examples
    --------
    >>> if enabled():
    ...     g, ga, _ = cp_pass(np.array([0.5, 0.3, 0.2]), np.zeros(3), 2, np.arange(3))
    ...     print(g.tolist())
    ... else:
    ...     print([0.0, 0.5, 0.8])
    [0.0, 0.5, 0.8]
    """
    g, ga = np.empty(len(d)), np.empty(len(d))
    if skip < 0 and V == 0:
        V = int(tok.max(initial=-1)) + 1
    flag = np.empty(V if skip < 0 else 0, dtype=np.uint8)
    flag[:] = 0
    run_pass(d, v, n, tok, skip, g, ga, None, flag)
    return g, ga, flag


def run_pass(
    d: np.ndarray,
    v: np.ndarray,
    n: int,
    tok: np.ndarray,
    skip: int,
    g: np.ndarray,
    ga: np.ndarray,
    stop: int | None = None,
    flag: np.ndarray | None = None,
) -> None:
    """:func:`cp_pass` into ``g``, ``ga`` (and ``flag``, main pass) over the pieces before
    ``stop`` (default all): the scalar kernel for n <= 5, the general one above."""
    stop = len(d) if stop is None else stop
    flag = np.zeros(0, dtype=np.uint8) if flag is None else flag
    kern = _kernels()["cp_pass4" if 2 <= n <= 5 else "cp_pass"]
    kern(d, v, n, tok, skip, stop, g, ga, flag)


def before_after(
    order: np.ndarray, start: np.ndarray, mass: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per piece (level order) the mass of the same token's earlier and later pieces, the
    additions of :func:`~.cutlaw.before_after` (bit-identical; ``mass`` in level order).

    Examples
    --------
    >>> from .pieces import identity_pieces
    >>> k = identity_pieces(3)
    >>> if enabled():
    ...     v, a = before_after(k.order, k.start, np.ones(3))
    ...     print(v.tolist(), a.tolist())
    ... else:
    ...     print([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    [0.0, 0.0, 0.0] [0.0, 0.0, 0.0]
    """
    v = np.empty_like(mass)
    after = np.empty_like(mass)
    _kernels()["before_after"](order, start, mass, _row_len(start), v, after)
    return v, after


def bincount2(
    tok: np.ndarray,
    d: np.ndarray,
    g: np.ndarray,
    ga: np.ndarray,
    V: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``inc = d * g``, ``inc_abs = d * ga``, ``np.bincount(tok, inc, V)`` and
    ``np.bincount(tok, inc_abs, V)`` in one loop (the same operations, in index order);
    returns the two bincounts, then inc and inc_abs.

    Examples
    --------
    >>> one = np.ones(2)
    >>> if enabled():
    ...     print(bincount2(np.array([1, 1]), one, one, one, 3)[0].tolist())
    ... else:
    ...     print(np.bincount(np.array([1, 1]), one, 3).tolist())
    [0.0, 2.0, 0.0]
    """
    T = np.zeros(V)
    T_abs = np.empty(V)
    T_abs[:] = 0.0
    inc, inc_abs = np.empty(len(d)), np.empty(len(d))
    _kernels()["bincount2"](tok, d, g, ga, V, T, T_abs, inc, inc_abs)
    return T, T_abs, inc, inc_abs


def mass(qs: np.ndarray, tok: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """:meth:`~.pieces.PieceKernel.mass`, ``qs[tok] * prob`` (one loop, no gathered copy).

    Examples
    --------
    >>> tok, prob = np.array([1, 0]), np.array([0.5, 1.0])
    >>> d = mass(np.array([0.25, 0.5]), tok, prob) if enabled() else [0.25, 0.25]
    >>> list(map(float, d))
    [0.25, 0.25]
    """
    d = np.empty(len(tok))
    _kernels()["mass"](qs, tok, prob, d)
    return d


def before(tok: np.ndarray, mass: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The first output of :func:`before_after` (the mass of the same token's earlier pieces)
    in one pass in level order, without the grouping by token (bit-identical).

    Examples
    --------
    >>> tok, mass = np.array([0, 1, 0, 0]), np.array([0.25, 0.5, 0.125, 0.5])
    >>> v = before(tok, mass, np.array([0, 3, 4])) if enabled() else np.array([0, 0, 0.25, 0.375])
    >>> v.tolist()
    [0.0, 0.0, 0.25, 0.375]
    """
    V = len(start) - 1
    v = np.empty(len(mass))
    _kernels()["before"](
        tok, mass, start, _row_len(start), v, np.empty(V), np.empty(V, dtype=np.int64)
    )
    return v


def _row_len(start: np.ndarray) -> np.ndarray:
    r"""Per token of more than 8 pieces, the padded row of :func:`~.cutlaw.before_after`: the
    longest count of its bucket (counts with the same :math:`\lceil \log_2 \rceil`)."""
    cnt = np.diff(start)
    row_len = np.zeros(len(cnt), dtype=np.int64)
    big = np.flatnonzero(cnt > 8)
    if big.size:
        lg = np.ceil(np.log2(cnt[big])).astype(np.int64)
        for b in np.unique(lg):
            ks = big[lg == b]
            row_len[ks] = int(cnt[ks].max())
    return row_len


def build_pieces(
    qs: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    quant: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """:func:`~.pieces.build_pieces` without ``draws``, up to the grouping by token: the
    pieces' ``tok``, ``prob`` in level order, the permutation ``o`` from the concatenation
    (own pieces, lifts, drops) and the largest ratio (pieces' mass) / q; the same operations
    (bit-identical, tested).

    Examples
    --------
    >>> qs = np.array([0.5, 0.3, 0.2])
    >>> x, y, a, b = np.array([0]), np.array([2]), np.array([0.1]), np.array([0.05])
    >>> if enabled():
    ...     tok, prob, o, r = build_pieces(qs, x, y, a, b, 2.0**52)
    ...     print(tok.tolist(), o.tolist())
    ... else:
    ...     print([2, 0, 1, 2, 0], [4, 0, 1, 2, 3])
    [2, 0, 1, 2, 0] [4, 0, 1, 2, 3]
    """
    V, P = len(qs), len(x)
    tok = np.empty(V + 2 * P, dtype=np.int64)
    prob = np.empty(V + 2 * P)
    o = np.empty(V + 2 * P, dtype=np.int64)
    N, rmax = _kernels()["build"](qs, x, y, a, b, float(quant), tok, prob, o)
    return tok[:N], prob[:N], o[:N], float(rmax)


def total_mass(qs: np.ndarray) -> tuple[float, float] | None:
    """:func:`~.cutlaw.total_mass` (``math.fsum`` of q, and of q with the sum subtracted)
    by CPython's algorithm compiled, the same two floats; None when q has a non-finite entry
    (math.fsum's special cases: left to it).

    Examples
    --------
    >>> import math
    >>> q = np.array([0.1] * 10)  # the sum of the ten floats is 1 + 5.55e-17
    >>> hi, lo = total_mass(q) if enabled() else (1.0, math.fsum([0.1] * 10 + [-1.0]))
    >>> hi, lo == math.fsum([0.1] * 10 + [-1.0])
    (1.0, True)
    """
    qs = np.ascontiguousarray(qs, dtype=np.float64)
    if not np.isfinite(qs).all():
        return None
    hi, lo = _kernels()["fsum2"](qs)
    if not (np.isfinite(hi) and np.isfinite(lo)):  # an overflow: math.fsum's own handling
        return None
    return float(hi), float(lo)


def split(D: np.ndarray, t: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The supply :math:`(D - t)^+` and the demand :math:`(t - D)^+` on the live slots (0
    elsewhere), as :func:`~.pieces.design` forms them.

    Examples
    --------
    >>> D, t, live = np.array([0.5, 0.2]), np.array([0.3, 0.4]), np.array([True, True])
    >>> sup, dem = split(D, t, live) if enabled() else (np.array([0.2, 0]), np.array([0, 0.2]))
    >>> sup.round(3).tolist(), dem.round(3).tolist()
    ([0.2, 0.0], [0.0, 0.2])
    """
    sup, dem = np.empty(len(D)), np.empty(len(D))
    _kernels()["split"](D, t, live, sup, dem)
    return sup, dem


def residual(
    D: np.ndarray,
    s: np.ndarray,
    T: np.ndarray,
    t: np.ndarray,
    live: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    tau: np.ndarray,
) -> np.ndarray:
    r"""The model-corrected residual of :func:`~.pieces.design`,
    :math:`f = (s - T) + (M - t)` on the live slots (0 elsewhere), with
    :math:`M = D + \mathrm{bincount}(x, 	au) - \mathrm{bincount}(y, 	au)`.

    Examples
    --------
    >>> one, live = np.ones(2), np.array([True, False])
    >>> args = (one, one, one, one, live, np.array([0]), np.array([1]), np.array([0.5]))
    >>> (residual(*args) if enabled() else np.array([0.5, 0.0])).tolist()
    [0.5, 0.0]
    """
    f, by = np.empty(len(D)), np.empty(len(D))
    _kernels()["residual"](D, s, T, t, live, x, y, tau, f, by)
    return f


def fifo_pairs(sup: np.ndarray, dem: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~.relabel.fifo_pairs` as one merge of the supply and demand ends (the same
    pairs and transfers, bit-identical: the ends are the same cumulative sums).

    Examples
    --------
    >>> sup, dem = np.array([0.0, 0.0, 0.3]), np.array([0.2, 0.1, 0.0])
    >>> x, y, tau = fifo_pairs(sup, dem) if enabled() else ([1, 0], [2, 2], [0.1, 0.2])
    >>> list(map(int, x)), list(map(int, y))
    ([1, 0], [2, 2])
    """
    V = len(sup)
    x, y, tau = np.empty(2 * V, dtype=np.int64), np.empty(2 * V, dtype=np.int64), np.empty(2 * V)
    P = _kernels()["fifo"](
        np.ascontiguousarray(sup, dtype=np.float64), np.ascontiguousarray(dem, dtype=np.float64),
        x, y, tau, np.empty(V, dtype=np.int64), np.empty(V, dtype=np.int64), np.empty(V),
        np.empty(V),
    )  # fmt: skip
    return x[:P], y[:P], tau[:P]


def pair_masses(
    qs: np.ndarray,
    n: int,
    E: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    tau: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~.pieces.pair_masses` without rigid slots (``E``: the levels of
    :func:`~.pieces.cp_levels` stacked, (n + 1, V + 1)); the same operations per pair.

    Examples
    --------
    >>> from .pieces import cp_levels
    >>> qs = np.array([0.5, 0.3, 0.2])
    >>> E = np.stack(cp_levels(qs, 2))
    >>> if enabled():
    ...     a, b = pair_masses(qs, 2, E, np.array([0]), np.array([2]), np.array([0.01]))
    ...     print(a.round(4).tolist(), b.round(4).tolist())
    ... else:
    ...     print([0.0031], [0.0031])
    [0.0031] [0.0031]
    """
    a, b = np.empty(len(x)), np.empty(len(x))
    _kernels()["pairs"](qs, n, E, x, y, tau, a, b)
    return a, b


def csr(tok: np.ndarray, V: int) -> tuple[np.ndarray, np.ndarray]:
    """``start`` (V + 1,) and ``order`` of the pieces grouped by token, level order kept:
    the counting sort equal to ``np.argsort(tok, kind="stable")``.

    Examples
    --------
    >>> if enabled():
    ...     start, order = csr(np.array([1, 0, 1]), 2)
    ...     print(start.tolist(), order.tolist())
    ... else:
    ...     print([0, 1, 3], [1, 0, 2])
    [0, 1, 3] [1, 0, 2]
    """
    start = np.empty(V + 1, dtype=np.int64)
    order = np.empty(len(tok), dtype=np.int64)
    nxt = np.empty(V, dtype=np.int64)
    _kernels()["csr"](np.ascontiguousarray(tok, dtype=np.int64), V, start, order, nxt)
    return start, order
