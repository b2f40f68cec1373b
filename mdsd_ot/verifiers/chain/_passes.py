r"""The V-size passes of the chain plans, fused into compiled loops when numba is installed.

A plan of ``relabel`` / ``stream`` (any n), ``cp2`` or ``seq2`` reads the vocabulary a dozen
times in numpy: two gathers by the chain order, a few cumulative sums, the suffix minimum of the transfer
path :math:`F = P - Q`, :math:`E_j = \max(0, F_j - \min_{i>j} F_i)`, its increments dE, the
sub-law s and the supply and demand lists of the first-in first-out pairing.  Cumulative sums
and suffix minima are sequential scans (numpy's run at about 3 ns per entry), so a few loops do
the same work:

- a *front* pass (slot order): the gathers, the masses and the cumulative sums, F;
- a *back* pass (top down): the running minimum, E and dE, s, and the supply and demand lists
  (or the full-length cumulative supply and demand of :meth:`.rows.Pairing.full`);
- seq2's kernel law on the pairs (:func:`mdsd_ot.verifiers.chain.seq2_kernel.kernel_law`);
- the residual draw: the cumulative :math:`(p - s)^+` by slot;
- seq2's level draws (:meth:`mdsd_ot.verifiers.chain.seq2_kernel.Seq2Kernel.pair_levels`): each
  draw's kernel row scanned in one loop, with the same uniforms.

Every loop performs the same floating-point operations, in the same order, as the numpy route
(sequential cumulative sums, elementwise products and quotients; the pairwise sums that numpy
computes, such as :math:`\sum q`, stay in numpy), so the two routes agree *bit for bit* up to the
sign of zeros (tested); the one exception is seq2's ``law_error``, whose sums of absolute terms
are sequential here (equal to 1e-12 relative; the bound's rounding depth is unchanged,
proofs/optimal_verifier.md §9.5).  Without numba, with ``MDSD_OT_JIT=0`` or inside
:func:`mdsd_ot.fast._fused.disabled`, :func:`kernels` returns None and the callers run numpy.
The loops compile on first use (a few seconds in all, cached on disk by numba where the package
directory is writable).

Examples
--------
>>> import numpy as np
>>> k = kernels()
>>> k is None or callable(k["gather"])
True
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...fast import _fused

__all__ = ["kernels"]


def kernels() -> dict[str, Any] | None:
    """The compiled passes, or None when they are off (no numba, ``MDSD_OT_JIT=0``, or inside
    :func:`mdsd_ot.fast._fused.disabled`).

    Examples
    --------
    >>> from mdsd_ot.fast._fused import disabled
    >>> with disabled():
    ...     kernels() is None
    True
    """
    if not _fused.enabled():
        return None
    return _compiled()


@functools.cache
def _compiled() -> dict[str, Any] | None:  # pragma: no cover - compiled code
    jit = _fused.jit_decorator()
    if jit is None:
        return None

    @jit
    def gather(p, q, order, ps, qs):
        # ps = p[order], qs = q[order]
        for k in range(order.shape[0]):
            o = order[k]
            ps[k] = p[o]
            qs[k] = q[o]

    @jit
    def back(F, D, ps, s, dE, live, mode, scale, A, A_cum, A0, B, B_cum, B0):
        # F (V + 1): the transfer path P - Q on prefixes 0..V, overwritten by
        # E_j = max(0, F_j - min_{i>j} F_i) (E_V = 0); dE_j = E_{j+1} - E_j; where s has length
        # V, s = clip(D + dE, 0, ps).  On the slots below ``live``, top down (i = live - 1 - j):
        # mode 1: the demand (dE > 0) and supply (dE < 0) entries, A / B their indices i and
        # A_cum / B_cum the cumulative scale dE and -scale dE (Pairing.from_increments, fifo),
        # and, where A0 / B0 are not empty, the cumulative sums before each entry;
        # mode 2: A_cum[i] = -cumsum(min(dE, 0)), B_cum[i] = cumsum(max(dE, 0)) at full length
        # (Pairing.full, scale 1).  Returns (min F, demand count, supply count).
        V = dE.shape[0]
        m = F[V]
        e_next = 0.0  # E_V
        F[V] = 0.0
        nd = 0
        ns = 0
        cd = 0.0
        cs = 0.0
        with_s = s.shape[0] == V
        with_0 = A0.shape[0] > 0
        neg = -scale
        for j in range(V - 1, -1, -1):
            f = F[j]
            e = f - m
            if not e > 0.0:
                e = 0.0
            if f < m:
                m = f
            F[j] = e
            de = e_next - e
            dE[j] = de
            e_next = e
            if with_s:
                v = D[j] + de
                if v > ps[j]:
                    v = ps[j]
                if not v > 0.0:
                    v = 0.0
                s[j] = v
            if j < live:
                i = live - 1 - j
                if mode == 1:
                    if de > 0.0:
                        A[nd] = i
                        x = scale * de
                        cd += x
                        A_cum[nd] = cd
                        if with_0:
                            A0[nd] = cd - x
                        nd += 1
                    elif de < 0.0:
                        B[ns] = i
                        x = neg * de
                        cs += x
                        B_cum[ns] = cs
                        if with_0:
                            B0[ns] = cs - x
                        ns += 1
                elif mode == 2:
                    if de < 0.0:
                        cs += de
                    elif de > 0.0:
                        cd += de
                    A_cum[i] = -cs
                    B_cum[i] = cd
        return m, nd, ns

    @jit
    def relabel_front(p, q, order, c, F, square):
        # i.i.d. drafts: c = cumsum(q[order]) and F = cumsum(p[order]) on prefixes 0..V, minus
        # c^2 when ``square`` (n = 2; otherwise the caller subtracts c^n); returns q of the
        # last slot
        P = 0.0
        cq = 0.0
        F[0] = 0.0
        qk = 0.0
        for k in range(order.shape[0]):
            o = order[k]
            qk = q[o]
            P += p[o]
            cq += qk
            c[k] = cq
            F[k + 1] = P - cq * cq if square else P
        return qk

    @jit
    def cp2_front(ps, qs, c, w):
        # c = cumsum(qs), w = (c - qs) qs; returns the number of q > 0
        cq = 0.0
        live = 0
        for k in range(qs.shape[0]):
            qk = qs[k]
            cq += qk
            c[k] = cq
            w[k] = (cq - qk) * qk
            if qk != 0.0:
                live += 1
        return live

    @jit
    def cp2_mid(ps, w, e2, F):
        # w /= e2 (the conditional-Poisson law D), F = cumsum(ps) - cumsum(w)
        P = 0.0
        W = 0.0
        F[0] = 0.0
        for k in range(ps.shape[0]):
            wk = w[k] / e2
            w[k] = wk
            P += ps[k]
            W += wk
            F[k + 1] = P - W

    @jit
    def rho_of(s, qs, two_e2, live, rho):
        # rho = two_e2 s / q + q on the live slots, inf after them
        for k in range(live):
            rho[k] = s[k] / qs[k] * two_e2 + qs[k]
        for k in range(live, qs.shape[0]):
            rho[k] = np.inf

    @jit
    def seq2_front(ps, qs, qn, r, total, heavy, rh, c0, R0, D, F):
        # qn = qs / total (qn is qs when total == 1), r = qs / (total - qs) (r_h = qs_h / rh
        # at a heavy slot h), c0, R0 = cumulative qn and r with a leading 0,
        # D = r c0 + qn R0, F = cumsum(ps - D) with a leading 0
        V = qs.shape[0]
        norm = total != 1.0
        c = 0.0
        R = 0.0
        f = 0.0
        c0[0] = 0.0
        R0[0] = 0.0
        F[0] = 0.0
        for k in range(V):
            x = qs[k]
            if norm:
                qk = x / total
                qn[k] = qk
            else:
                qk = x
            rk = x / (rh if k == heavy else total - x)
            r[k] = rk
            d = rk * c + qk * R
            D[k] = d
            c += qk
            R += rk
            c0[k + 1] = c
            R0[k + 1] = R
            f += ps[k] - d
            F[k + 1] = f

    @jit
    def cover_cut(E, live, total):
        # the first i (cut live - i, i = 0..live) with E >= total, or live + 1 when none
        for i in range(live + 1):
            if E[live - i] >= total:
                return i
        return live + 1

    @jit
    def residual_cumsum(p, order, s, out):
        # out = cumsum((p[order] - s)^+); returns its total
        acc = 0.0
        for k in range(order.shape[0]):
            v = p[order[k]] - s[k]
            if not v > 0.0:
                v = 0.0
            acc += v
            out[k] = acc
        return acc

    @jit
    def residual_cumsum_iid2(p, q, order, c, dE, out):
        # the same with s = clip(q (c + (c - q)) + dE, 0, p) (i.i.d. n = 2: Plan.s_at)
        acc = 0.0
        for k in range(order.shape[0]):
            o = order[k]
            pk = p[o]
            qk = q[o]
            ck = c[k]
            v = qk * (ck + (ck - qk)) + dE[k]
            if v > pk:
                v = pk
            if not v > 0.0:
                v = 0.0
            v = pk - v
            if not v > 0.0:
                v = 0.0
            acc += v
            out[k] = acc
        return acc

    @jit
    def cumsum_p(p, order, out):
        acc = 0.0
        for k in range(order.shape[0]):
            acc += p[order[k]]
            out[k] = acc
        return acc

    @jit
    def seq2_law(D, qn, r, c0, R0, dslot, sslot, kd, js, prob, Bd, Bs, Wd, Ws, T):
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
    def seq2_levels(slots, kinds, u, dslot, sslot, Bd, Bs, Wd, Ws, kd, js, prob, out):
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

    return {
        "seq2_levels": seq2_levels,
        "seq2_law": seq2_law,
        "gather": gather,
        "back": back,
        "relabel_front": relabel_front,
        "cp2_front": cp2_front,
        "cp2_mid": cp2_mid,
        "rho_of": rho_of,
        "seq2_front": seq2_front,
        "cover_cut": cover_cut,
        "residual_cumsum": residual_cumsum,
        "residual_cumsum_iid2": residual_cumsum_iid2,
        "cumsum_p": cumsum_p,
    }
