r"""The compiled V-size passes of the chain plans and the residual draw, at module level (numba).

The gathers by the chain order (``gather``); the *front* passes in slot order, the masses, the
cumulative sums and the transfer path F of ``relabel`` / ``stream`` (``relabel_front``),
``cp2`` (``cp2_front``, ``cp2_mid``, and ``rho_of``, the key of its second sort) and ``seq2``
(``seq2_front``); the *back* pass from the top down, E, dE, s and the supply and demand lists
of the first-in first-out pairing (``back``) and seq2's supply cut (``cover_cut``); the
cumulative :math:`(p - s)^+` of the residual draw (``residual_cumsum``,
``residual_cumsum_iid2``, ``cumsum_p``).

Imported only when numba is installed (:func:`._passes.kernels`).  Module-level functions (not
closures), so that numba's disk cache serves them to every new process; none calls another
kernel.  Why their operations are the numpy route's, in the same order, is documented in
:mod:`._passes`.
"""

from __future__ import annotations

import numpy as np

from ...fast._fused import jit_decorator

jit = jit_decorator()


@jit
def gather(p, q, order, ps, qs):  # pragma: no cover - compiled
    # ps = p[order], qs = q[order]
    for k in range(order.shape[0]):
        o = order[k]
        ps[k] = p[o]
        qs[k] = q[o]


@jit
def back(
    F, D, ps, s, dE, live, mode, scale, A, A_cum, A0, B, B_cum, B0
):  # pragma: no cover - compiled
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
def relabel_front(p, q, order, c, F, square):  # pragma: no cover - compiled
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
def cp2_front(ps, qs, c, w):  # pragma: no cover - compiled
    # c = cumsum(qs), w = c_{k-1} qs (the previous prefix sum); returns the number of q > 0
    cq = 0.0
    live = 0
    for k in range(qs.shape[0]):
        qk = qs[k]
        w[k] = cq * qk
        cq += qk
        c[k] = cq
        if qk != 0.0:
            live += 1
    return live


@jit
def cp2_mid(ps, w, e2, F):  # pragma: no cover - compiled
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
def rho_of(s, qs, two_e2, live, rho):  # pragma: no cover - compiled
    # rho = two_e2 s / q + q on the live slots, inf after them
    for k in range(live):
        rho[k] = s[k] / qs[k] * two_e2 + qs[k]
    for k in range(live, qs.shape[0]):
        rho[k] = np.inf


@jit
def seq2_front(ps, qs, qn, r, total, heavy, rh, c0, R0, D, F):  # pragma: no cover - compiled
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
def cover_cut(E, live, total):  # pragma: no cover - compiled
    # the first i (cut live - i, i = 0..live) with E >= total, or live + 1 when none
    for i in range(live + 1):
        if E[live - i] >= total:
            return i
    return live + 1


@jit
def residual_cumsum(p, order, s, out):  # pragma: no cover - compiled
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
def residual_cumsum_iid2(p, q, order, c, dE, out):  # pragma: no cover - compiled
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
def cumsum_p(p, order, out):  # pragma: no cover - compiled
    acc = 0.0
    for k in range(order.shape[0]):
        acc += p[order[k]]
        out[k] = acc
    return acc
