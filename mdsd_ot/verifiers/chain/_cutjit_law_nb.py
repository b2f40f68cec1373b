r"""The compiled loops of the piece-kernel laws' passes, at module level (numba).

The streaming blocked cumulative sum (``_k_push``, ``_k_advance``, ``_k_levels``, ``_k_close``)
and the passes made with it: the exclusive blocked sum (``_k_excl``), the levels of
:func:`~.cutlaw.cp_law` in one loop (``_k_cp_pass``; ``_k_cp_pass4`` for n <= 5, the level-0
state in scalars), the per-token sums of :func:`~.cutlaw.before_after` (``_k_before_after``,
``_k_before``), the pieces' masses (``_k_mass``) and the law's two weighted bincounts
(``_k_bincount2``).

Imported only when numba is installed (:func:`._cutjit._kernels`).  Module-level functions (not
closures), each helper in the file of the kernels that call it, so that numba's disk cache
serves them to every new process.  What each kernel computes, and why its additions are the
numpy route's in the same order, is documented at its wrapper in :mod:`._cutjit`.
"""

from __future__ import annotations

import numpy as np

from ...fast._fused import jit_decorator

_BLOCK = 64  #: block of the blocked sums, :mod:`.cutlaw`'s (a compile-time constant)

jit = jit_decorator()


@jit
def _k_push(loc, off, pos, c, y):  # pragma: no cover - compiled
    # channel c's next item at level 0; its inclusive blocked sum (positions not advanced)
    if pos[0] == 0:
        loc[c, 0] = y
    else:
        loc[c, 0] += y
    return off[c, 0] + loc[c, 0]


@jit
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


@jit
def _k_levels(N):  # pragma: no cover - compiled
    L = 0
    while N > _BLOCK:
        N = (N + _BLOCK - 1) // _BLOCK
        L += 1
    return L


@jit
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


@jit
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


@jit
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


@jit
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


@jit
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


@jit
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


@jit
def _k_mass(qs, tok, prob, d):  # pragma: no cover - compiled; PieceKernel.mass
    for e in range(tok.shape[0]):
        d[e] = qs[tok[e]] * prob[e]


@jit
def _k_bincount2(tok, d, g, ga, V, T, T_abs, inc, inc_abs):  # pragma: no cover - compiled
    # inc = d * g, inc_abs = d * ga and their np.bincount by token (index order)
    for e in range(tok.shape[0]):
        u = d[e] * g[e]
        w = d[e] * ga[e]
        inc[e] = u
        inc_abs[e] = w
        T[tok[e]] += u
        T_abs[tok[e]] += w
