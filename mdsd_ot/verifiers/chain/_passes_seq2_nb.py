r"""The compiled loops of seq2's two kernels, at module level (numba).

The kernel law of the quantised kernels and the bound's sums (``seq2_law``:
:func:`~.seq2_kernel.kernel_law`, the same operations term by term, the sums that enter only
the bound sequential) and the level draws of :meth:`~.seq2_kernel.Seq2Kernel.pair_levels`
with the uniforms given (``seq2_levels``: each draw's kernel row scanned in one loop).

Imported only when numba is installed (:func:`._passes.kernels`).  Module-level functions (not
closures), so that numba's disk cache serves them to every new process; neither calls another
kernel.  Why their operations are the numpy route's is documented in :mod:`._passes`.
"""

from __future__ import annotations

import numpy as np

from ...fast._fused import jit_decorator

jit = jit_decorator()


@jit
def seq2_law(
    D, qn, r, c0, R0, dslot, sslot, kd, js, prob, Bd, Bs, Wd, Ws, T
):  # pragma: no cover - compiled
    # seq2_kernel.kernel_law of the quantised kernels (nd, ns > 0): T (written) and the bound's
    # sums (absum, unpaired); the same operations as the numpy route, term by term, except
    # that the sums entering only the bound are sequential
    V = D.shape[0]
    nd = dslot.shape[0]
    ns = sslot.shape[0]
    P = kd.shape[0]
    p1x, p1y, p2x, p2y = prob
    m1x = np.empty(P)
    m1y = np.empty(P)
    m2x = np.empty(P)
    m2y = np.empty(P)
    td = np.zeros((4, nd))  # out1, out2, vis1, vis2 of the demand tokens
    ts = np.zeros((4, ns))  # the same of the supply tokens
    for e in range(P):
        k = kd[e]
        j = js[e]
        x = dslot[k]
        y = sslot[j]
        a = r[x] * p1x[e]
        b = r[y] * p1y[e]
        c = qn[x] * p2x[e]
        d = qn[y] * p2y[e]
        m1x[e] = a
        m1y[e] = b
        m2x[e] = c
        m2y[e] = d
        td[0, k] += a
        td[1, k] += c
        td[2, k] += b
        td[3, k] += d
        ts[0, j] += b
        ts[1, j] += d
        ts[2, j] += a
        ts[3, j] += c
    # Lambda (exclusive cumulative imbalance) in slot order: both lists are descending
    L1d = np.empty(nd)
    L2d = np.empty(nd)
    L1s = np.empty(ns)
    L2s = np.empty(ns)
    i1 = 0.0
    i2 = 0.0
    u1 = 0.0
    u2 = 0.0
    a1 = 0.0
    a2 = 0.0
    ia = nd - 1
    ib = ns - 1
    for _ in range(nd + ns):
        dem = ib < 0 or (ia >= 0 and dslot[ia] < sslot[ib])
        if dem:
            z = dslot[ia]
            t = td
            i = ia
        else:
            z = sslot[ib]
            t = ts
            i = ib
        d1 = t[2, i] - t[0, i]
        d2 = t[3, i] - t[1, i]
        i1 += d1
        i2 += d2
        if dem:
            L1d[i] = i1 - d1
            L2d[i] = i2 - d2
            ia -= 1
        else:
            L1s[i] = i1 - d1
            L2s[i] = i2 - d2
            ib -= 1
        tr = R0[V] - R0[z + 1]
        if not tr > 0.0:
            tr = 0.0
        tq = c0[V] - c0[z + 1]
        if not tq > 0.0:
            tq = 0.0
        u1 += abs(d2) * tr
        u2 += abs(d1) * tq
        a2 += (t[3, i] + t[1, i]) * tr
        a1 += (t[2, i] + t[0, i]) * tq
    unpaired = u1 + u2
    absum = 2.0 + (a2 + a1)
    for k in range(V):
        T[k] = D[k]
    sgx = np.zeros(nd)
    sly = np.zeros(ns)
    b1 = 0.0
    b2 = 0.0
    agx = 0.0
    aly = 0.0
    for e in range(P):
        k = kd[e]
        j = js[e]
        x = dslot[k]
        y = sslot[j]
        rx = r[x]
        qx = qn[x]
        ry = r[y]
        qy = qn[y]
        Bx = Bd[k]
        By = Bs[j]
        G2 = (c0[y] - c0[x]) + (L2s[j] - L2d[k])
        G1 = (R0[y] - R0[x]) + (L1s[j] - L1d[k])
        d2y = ts[3, j] - ts[1, j]
        d1y = ts[2, j] - ts[0, j]
        d2x = td[3, k] - td[1, k]
        d1x = td[2, k] - td[0, k]
        half_y = 1.0 - 0.5 * By
        gx = m1x[e] * (G2 + qy * half_y + 0.5 * d2y - 0.5 * qx)
        gx = gx + m2x[e] * (G1 + ry * half_y + 0.5 * d1y - 0.5 * rx)
        ly = m1y[e] * (G2 - 0.5 * (qx * Bx + d2x) + 0.5 * qy)
        ly = ly + m2y[e] * (G1 - 0.5 * (rx * Bx + d1x) + 0.5 * ry)
        b1 += (m1x[e] + m1y[e]) * (c0[y] + c0[x] + qx + qy)
        b2 += (m2x[e] + m2y[e]) * (R0[y] + R0[x] + rx + ry)
        sgx[k] += gx
        sly[j] += ly
        agx += abs(gx)
        aly += abs(ly)
    absum += b1 + b2 + agx + aly
    ao = 0.0
    for i in range(nd):
        z = dslot[i]
        qd = qn[z]
        rd = r[z]
        B = Bd[i]
        d1 = td[2, i] - td[0, i]
        d2 = td[3, i] - td[1, i]
        own = 0.5 * (1.0 - B) * (qd * td[0, i] + rd * td[1, i])
        own = own + (
            rd * d2 * (1.0 - 0.5 * (B + Wd[0, i])) + qd * d1 * (1.0 - 0.5 * (B + Wd[1, i]))
        )
        base = rd * L2d[i] + qd * L1d[i]
        T[z] = T[z] + (sgx[i] + own + base)
        ao += abs(own)
    for i in range(ns):
        z = sslot[i]
        qv = qn[z]
        rv = r[z]
        B = Bs[i]
        d1 = ts[2, i] - ts[0, i]
        d2 = ts[3, i] - ts[1, i]
        own = -0.5 * (1.0 - B) * (qv * ts[0, i] + rv * ts[1, i])
        own = own + 0.5 * (rv * d2 * (B - Ws[0, i]) + qv * d1 * (B - Ws[1, i]))
        base = rv * L2s[i] + qv * L1s[i]
        T[z] = T[z] + (own - sly[i] + base)
        ao += abs(own)
    absum += ao
    return absum, unpaired


@jit
def seq2_levels(
    slots, kinds, u, dslot, sslot, Bd, Bs, Wd, Ws, kd, js, prob, out
):  # pragma: no cover - compiled
    # Seq2Kernel.pair_levels with the uniforms u given: per draw, the first entry of its
    # row (rest, region, moves in pair order) whose cumulative integer probability
    # exceeds u (rows sum to exactly 1, so one is found)
    nd = dslot.shape[0]
    ns = sslot.shape[0]
    P = kd.shape[0]
    for d in range(slots.shape[0]):
        z = slots[d]
        t = kinds[d] - 1
        side = 0
        i = -1
        lo = 0
        hi = nd  # dslot descending: the first index with dslot <= z
        while lo < hi:
            mid = (lo + hi) // 2
            if dslot[mid] > z:
                lo = mid + 1
            else:
                hi = mid
        if lo < nd and dslot[lo] == z:
            side = -1
            i = lo
        else:
            lo = 0
            hi = ns
            while lo < hi:
                mid = (lo + hi) // 2
                if sslot[mid] > z:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < ns and sslot[lo] == z:
                side = 1
                i = lo
        if side == 0:
            out[d] = 2 * z
            continue
        if side == -1:
            B = Bd[i]
            W = Wd[t, i]
            rest = 2 * z + 1
            region = 2 * z
            keys = kd
            pr = prob[2 * t]
        else:
            B = Bs[i]
            W = Ws[t, i]
            rest = 2 * z
            region = 2 * z + 1
            keys = js
            pr = prob[2 * t + 1]
        ud = u[d]
        cum = np.int64(np.rint((1.0 - B) * 4503599627370496.0))
        if cum > ud:
            out[d] = rest
            continue
        cum += np.int64(np.rint((B - W) * 4503599627370496.0))
        if cum > ud:
            out[d] = region
            continue
        lo = 0
        hi = P  # the first pair of token i (keys non-decreasing)
        while lo < hi:
            mid = (lo + hi) // 2
            if keys[mid] < i:
                lo = mid + 1
            else:
                hi = mid
        lev = region
        e = lo
        while e < P and keys[e] == i:
            cum += np.int64(np.rint(pr[e] * 4503599627370496.0))
            lev = 2 * sslot[js[e]] + 1 if side == -1 else 2 * dslot[kd[e]]
            if cum > ud:
                break
            e += 1
        out[d] = lev
