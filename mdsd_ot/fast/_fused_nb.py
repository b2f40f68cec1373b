r"""The compiled kernels of :mod:`mdsd_ot.fast._fused`, at module level (numba).

Imported only when numba is installed (:func:`mdsd_ot.fast._fused._kernels`).  The kernels are
module-level functions, not closures, so that numba's disk cache finds them again in a new
process: a closure (or a kernel that calls one) is compiled anew in every process.  What each
kernel computes, and why its results equal the numpy route's, is documented at its wrapper in
:mod:`mdsd_ot.fast._fused`.
"""

from __future__ import annotations

import numpy as np

from ._fused import BLOCK, jit_decorator

jit = jit_decorator()

S = BLOCK  # block of the vectorised loops: a small scratch, no V-size temporary
G = 64  # block of gather's vectorised count (a compile-time constant)


@jit
def front(p, q, shift, base, top, outside_max, dense_max, ids, stats, qmax):  # pragma: no cover
    # stats (out): the smallest p and q read as int64 (negative: a sign bit is set) and
    # the number of q > 0 (positive bits), integer reductions that vectorise (validation);
    # qmax (out, when it has V // S + 1 entries): the largest q of each block of S, as int64
    V = p.shape[0]
    pb = p.view(np.int64)
    qb = q.view(np.int64)
    mp = np.int64(0)
    mq = np.int64(0)
    npos = np.int64(0)
    key = np.empty(S, dtype=np.float64)
    kb = key.view(np.int64)
    # the histograms of the whole window, formed in the same pass while the block is in L1
    # (a second pass over p, q and the ids cost 0.25 of 0.6 ms at V = 152,064); a bucket's
    # sums of p and q and its count (a float, exact below 2^53) share one cache line.  One
    # lane: tokens of one bucket rarely follow each other (0.1% of neighbours on the synthetic
    # family), and a row whose tokens all share a bucket (a chain of dependent additions,
    # 0.25 ms more) is one that goes to numpy's route as crowded
    h = np.zeros((top + 1) * 3, dtype=np.float64)  # [bucket, (p, q, count)]
    lo = np.int64(1) << 62
    hi = np.int64(-1)
    inf = np.int64(0x7FF0000000000000)
    outside = np.int64(0)  # tokens of a finite positive ratio beyond the window
    over = np.int64(0)  # tokens of q > 0 whose ratio overflowed to +inf (q subnormal)
    for s in range(0, V, S):
        m = min(S, V - s)
        ps, qs, out = p[s : s + m], q[s : s + m], ids[s : s + m]
        psb, qsb = pb[s : s + m], qb[s : s + m]
        bm = np.int64(-1) << 63
        # one loop for the ratios and the integer reductions, in select form with int64
        # counts (numba's min/max and bool sums vectorised worse: 0.12 ms more at V = 152,064)
        for i in range(m):
            key[i] = abs(ps[i] / qs[i])
            a, b = psb[i], qsb[i]
            mp = a if a < mp else mp
            mq = b if b < mq else mq
            bm = b if b > bm else bm
            npos += np.int64(b > 0)
        if qmax.shape[0] > s // S:
            qmax[s // S] = bm
        for i in range(m):
            k = kb[i]
            j = (k >> shift) - base
            outside += np.int64(((j < 1) & (k > 0)) | ((j >= top) & (k < inf)))
            over += np.int64((k == inf) & (qsb[i] > 0))
            b = min(max(j, 0), top)
            out[i] = b
            lo = b if b < lo else lo
            hi = b if b > hi else hi
        for i in range(m):
            t = out[i] * 3
            h[t] += ps[i]
            h[t + 1] += qs[i]
            h[t + 2] += 1.0
    stats[0] = mp
    stats[1] = mq
    stats[2] = npos
    NB = hi - lo + 1
    cmax = 0.0
    for b in range(lo, hi + 1):
        cmax = max(cmax, h[3 * b + 2])
    # left to numpy: ratios beyond the window, one crowded bucket, or an overflowed ratio
    # (its tokens would tie at +inf; numpy's route sends the row to the sorting path)
    if outside > outside_max or cmax > dense_max or over:
        z = np.zeros(0, dtype=np.float64)
        return -1, z, z, np.zeros(0, dtype=np.int64)
    for i in range(V):
        ids[i] -= lo
    hp = np.empty(NB, dtype=np.float64)
    hq = np.empty(NB, dtype=np.float64)
    hn = np.empty(NB, dtype=np.int64)
    for b in range(NB):
        t = (lo + b) * 3
        hp[b] = h[t]
        hq[b] = h[t + 1]
        hn[b] = np.int64(h[t + 2])
    return lo, hp, hq, hn


@jit
def powers(ids, q, d1, d2, heavy, K, NB, odds, c):  # pragma: no cover - compiled
    # _powers with K a constant for conditional Poisson's n = 2, 3, 4: LLVM inlines the call
    # and unrolls the loop over the powers (measured at V = 152,064: K = 2 0.16 -> 0.11 ms,
    # K = 4 0.21 -> 0.17 ms; the series' K = 8 gained 0.03 ms of 1.8, not worth the 0.5 s
    # each copy adds to the first compilation); the same operations in the same order, the
    # same bits
    if not odds:
        if K == 2:
            return _powers(ids, q, d1, d2, heavy, 2, NB, False, c)
        if K == 3:
            return _powers(ids, q, d1, d2, heavy, 3, NB, False, c)
        if K == 4:
            return _powers(ids, q, d1, d2, heavy, 4, NB, False, c)
    return _powers(ids, q, d1, d2, heavy, K, NB, odds, c)


@jit
def _powers(ids, q, d1, d2, heavy, K, NB, odds, c):  # pragma: no cover - compiled
    V = ids.shape[0]
    # [bucket, power]: a token's K sums share a cache line (the (K, NB) layout cost 0.05 ms
    # more at V = 152,064, K = 2); the same additions in the same order, the same bits
    acc = np.zeros(NB * K, dtype=np.float64)
    u = np.empty(S, dtype=np.float64)  # the divisions vectorise in loops of their own
    w = np.empty(S, dtype=np.float64)
    nh = heavy.shape[0]
    for s in range(0, V, S):
        m = min(S, V - s)
        qs, bs = q[s : s + m], ids[s : s + m]
        if d1 == 1.0 and d2 == 1.0:  # q itself (x / 1 = x)
            for i in range(m):
                u[i] = qs[i]
        elif d2 == 1.0:
            for i in range(m):
                u[i] = qs[i] / d1
        else:
            for i in range(m):
                u[i] = qs[i] / d1 / d2
        for j in range(nh):
            if s <= heavy[j] < s + m:
                u[heavy[j] - s] = 0.0
        if odds:
            for i in range(m):
                w[i] = u[i] / (c - u[i])
            for i in range(m):
                b = bs[i] * 2
                acc[b] += u[i]
                acc[b + 1] += w[i]
        else:
            for i in range(m):
                b = bs[i] * K
                x = u[i]
                y = x
                acc[b] += y
                for k in range(1, K):
                    y = y * x
                    acc[b + k] += y
    out = np.empty((K, NB), dtype=np.float64)
    for b in range(NB):
        for k in range(K):
            out[k, b] = acc[b * K + k]
    return out


@jit
def gather(ids, lo, hi, cap):  # pragma: no cover - compiled
    idx = np.empty(cap + 1, dtype=np.int64)
    lo32, hi32 = np.int32(lo), np.int32(hi)
    m = 0
    if 8 * cap > ids.shape[0]:  # many: branch-free, write always, advance when inside
        for i in range(ids.shape[0]):
            x = ids[i]
            idx[min(m, cap)] = i
            m += (x >= lo32) & (x <= hi32)
    else:  # few (the usual case): blocks of G ids counted first (a constant trip count, so
        # the count vectorises), then a well-predicted branch over the blocks that hold one
        V = ids.shape[0]
        full = V // G
        for blk in range(full):
            s = blk * G
            w = ids[s : s + G]
            hit = 0
            for i in range(G):
                x = w[i]
                hit += (x >= lo32) & (x <= hi32)
            if hit:
                for i in range(G):
                    x = w[i]
                    if (x >= lo32) & (x <= hi32):
                        idx[min(m, cap)] = s + i
                        m += 1
        for i in range(full * G, V):
            x = ids[i]
            if (x >= lo32) & (x <= hi32):
                idx[min(m, cap)] = i
                m += 1
    return idx[: min(m, cap)], m


@jit
def top_many(row, k, qmax):  # pragma: no cover - compiled
    # k > 16 with the block maxima known (front's qmax as int64 bits, blocks of S, k at most
    # their number): each of the k largest is at least t, the k-th largest block maximum, so
    # only the blocks whose maximum reaches t are read; their entries >= t, in index order,
    # are sorted stably by value descending (then smaller index first) and the first k kept
    nbk = qmax.shape[0]
    V = row.shape[0]
    tb = np.empty(1, dtype=np.int64)
    tb[0] = np.sort(qmax)[nbk - k]
    tf = tb.view(np.float64)[0]
    if tb[0] < 0:  # a sign bit set (not a validated row): read every block, keep every entry
        tb[0] = np.iinfo(np.int64).min
        tf = -np.inf
    m = 0
    for b in range(nbk):
        if qmax[b] >= tb[0]:
            m += min(S, V - b * S)
    bv = np.empty(m, dtype=np.float64)
    bi = np.empty(m, dtype=np.int64)
    m = 0
    for b in range(nbk):
        if qmax[b] >= tb[0]:
            for i in range(b * S, min(b * S + S, V)):
                x = row[i]
                if x >= tf:
                    bv[m] = x
                    bi[m] = i
                    m += 1
    order = np.argsort(-bv[:m], kind="mergesort")[: min(k, m)]
    return bv[order].copy(), bi[order].copy()


@jit
def top(row, k):  # pragma: no cover - compiled
    # candidates above the threshold go to a buffer of 4k; a full buffer keeps its k
    # largest (value descending, then index: a stable sort of entries in index order), and
    # the threshold becomes the k-th value (a later equal value has a larger index: out)
    cap = 4 * k
    bv = np.empty(cap, dtype=np.float64)
    bi = np.empty(cap, dtype=np.int64)
    m = 0
    thr = -np.inf
    for i in range(row.shape[0]):
        x = row[i]
        if x > thr:
            bv[m] = x
            bi[m] = i
            m += 1
            if m == cap:
                keep = np.sort(bi[np.argsort(-bv, kind="mergesort")[:k]])
                for j in range(k):  # in index order again, for the next stable sort
                    bi[j] = keep[j]
                    bv[j] = row[keep[j]]
                m = k
                thr = np.min(bv[:k])
    order = np.argsort(-bv[:m], kind="mergesort")[: min(k, m)]
    return bv[order].copy(), bi[order].copy()


@jit
def _top_insert(row, s, e, tv, ti, nt, kth, k):  # pragma: no cover - compiled
    # entries s..e-1 into the sorted list (tv, ti) of the nt <= k largest (value descending,
    # then index); returns the new (nt, k-th value)
    for i in range(s, e):
        x = row[i]
        if nt < k or x > kth:  # an equal later value loses the tie
            j = min(nt, k - 1)
            while j > 0 and tv[j - 1] < x:
                tv[j] = tv[j - 1]
                ti[j] = ti[j - 1]
                j -= 1
            tv[j] = x
            ti[j] = i
            nt = min(nt + 1, k)
            if nt == k:
                kth = tv[k - 1]
    return nt, kth


@jit
def top_small(row, k):  # pragma: no cover - compiled
    # insertion into a sorted list of the k largest (value descending, then index): a block
    # whose maximum does not beat the k-th is skipped after one vectorised pass
    tv = np.empty(k, dtype=np.float64)
    ti = np.empty(k, dtype=np.int64)
    nt = 0
    kth = -np.inf
    V = row.shape[0]
    bits = row.view(np.int64)  # ordered as the values when the k-th is >= 0 (see below)
    for s in range(0, V, 256):
        e = min(s + 256, V)
        if nt == k and kth >= 0.0:  # x > kth >= 0 iff bits(x) > bits(kth), negatives
            kb = np.int64(tv[k - 1 : k].view(np.int64)[0])  # (sign bit) included
            mb = np.int64(-1) << 63
            for i in range(s, e):
                mb = max(mb, bits[i])
            if mb <= kb:
                continue
        nt, kth = _top_insert(row, s, e, tv, ti, nt, kth, k)
    return tv[:nt].copy(), ti[:nt].copy()


@jit
def top_blocks(row, k, qmax):  # pragma: no cover - compiled
    # top_small with the block maxima known (front's qmax, blocks of S): a block whose
    # maximum does not beat the k-th is skipped without reading it
    tv = np.empty(k, dtype=np.float64)
    ti = np.empty(k, dtype=np.int64)
    nt = 0
    kth = -np.inf
    V = row.shape[0]
    for s in range(0, V, S):
        if nt == k and kth >= 0.0:
            kb = np.int64(tv[k - 1 : k].view(np.int64)[0])
            if qmax[s // S] <= kb:
                continue
        nt, kth = _top_insert(row, s, min(s + S, V), tv, ti, nt, kth, k)
    return tv[:nt].copy(), ti[:nt].copy()


@jit
def _two_sum(a, b):  # pragma: no cover - compiled; a + b = t + e exactly (Knuth)
    t = a + b
    z = t - a
    return t, (a - (t - z)) + (b - z)


@jit
def sum2(x):  # pragma: no cover - compiled
    # eight lanes of error-free TwoSum (Ogita, Rump and Oishi's Sum2) in scalar locals (they
    # stay in registers), the lane totals joined by TwoSum too; returns (hi, lo)
    V = x.shape[0]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = 0.0
    n8 = V - V % 8
    for i in range(0, n8, 8):
        s0, e0 = _two_sum(s0, x[i])
        s1, e1 = _two_sum(s1, x[i + 1])
        s2, e2 = _two_sum(s2, x[i + 2])
        s3, e3 = _two_sum(s3, x[i + 3])
        s4, e4 = _two_sum(s4, x[i + 4])
        s5, e5 = _two_sum(s5, x[i + 5])
        s6, e6 = _two_sum(s6, x[i + 6])
        s7, e7 = _two_sum(s7, x[i + 7])
        c0 += e0
        c1 += e1
        c2 += e2
        c3 += e3
        c4 += e4
        c5 += e5
        c6 += e6
        c7 += e7
    for i in range(n8, V):  # the tail joins lane 0
        s0, e0 = _two_sum(s0, x[i])
        c0 += e0
    hi = s0
    lo = ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7))
    for b in (s1, s2, s3, s4, s5, s6, s7):
        hi, e = _two_sum(hi, b)
        lo += e
    return hi, lo


@jit
def _nmin(a, b):  # pragma: no cover - compiled; np.minimum: NaN if either is NaN
    if a != a or b != b:
        return np.nan
    return a if a < b else b


@jit
def _nmax(a, b):  # pragma: no cover - compiled; np.maximum
    if a != a or b != b:
        return np.nan
    return a if a > b else b


@jit
def bounds(P, Q, Hp, qm, lo, hi, c, cut, LB, keep):  # pragma: no cover - compiled
    # the bucket path's lower bound per bucket, entry by entry as the array code forms it
    nb = Hp.shape[0]
    first, last, count = -1, -1, 0
    for b in range(nb):
        rlo = lo[b] * c * (1 - 4 * 2.0**-53)
        rhi = hi[b] * c * (1 + 4 * 2.0**-53)
        finite = np.isfinite(rhi)
        if finite and rhi > rlo:
            t = (rhi * qm[b] - Hp[b]) / (rhi - rlo)
        else:
            t = qm[b]
        t = _nmin(_nmax(t, 0.0), qm[b])
        frac = t / qm[b] if qm[b] > 0 else t * 0.0
        chord = Q[b] + (Q[b + 1] - Q[b]) * frac
        inner = P[b] + rlo * t - chord
        x = _nmin(_nmin(P[b] - Q[b], P[b + 1] - Q[b + 1]), inner)
        LB[b] = x
        k = x < cut
        keep[b] = k
        if k:
            if first < 0:
                first = b
            last = b
            count += 1
    return first, last, count


@jit
def less(hi, lo, vals):  # pragma: no cover - compiled
    # (hi + lo) - sum(vals) by TwoSum steps: the rounding errors, exact, are added to lo
    err = 0.0
    for a in vals:
        hi, e = _two_sum(hi, -a)
        lo += e
        err += abs(e)
    return hi, lo, err
