r"""The compiled evaluator of :mod:`mdsd_ot.fast._fused_row`, at module level (numba).

Imported only when numba is installed; module-level functions (not closures) so that numba's
disk cache serves them to every new process (a closure is compiled again in each one, several
seconds for :func:`solve`).  See :func:`mdsd_ot.fast._fused_row.solve_row` for what it computes.
"""

from __future__ import annotations

import numpy as np

from ._fused import jit_decorator
from ._fused_nb import bounds, gather

jit = jit_decorator()


@jit
def q_at(law, n, qc, L, seg, scale, delta, hq0, EA, Nt, e):  # pragma: no cover - compiled
    # Q at one chain point from its statistics (chain.With / Without2 / ConditionalPoisson);
    # e: scratch of n + 1 entries (conditional Poisson), allocated once by the caller
    if law == 0:
        return qc**n
    if law == 1:
        cl = L[0] * scale  # the light mass of H (normalised)
        out = cl * L[1] - L[1] + cl
        if seg > 0:
            out = out + hq0 * (cl / delta + L[1])
        return out
    e[0] = 1.0  # Newton's identities on the light power sums, then t^j
    for j in range(1, n + 1):
        acc = e[j - 1] * L[0]
        for i in range(2, j + 1):
            term = e[j - i] * L[i - 1]
            acc = acc + term if i % 2 else acc - term
        e[j] = acc / j
    tj = 1.0
    for j in range(1, n + 1):
        tj = tj * scale
        e[j] = e[j] * tj
    N = EA[seg, n]
    for j in range(1, n + 1):
        N = N + EA[seg, n - j] * e[j]
    return min(max(N / Nt, 0.0), 1.0)


@jit
def solve(
    law,
    n,
    p,
    q,
    ids,
    Hp,
    Hn,
    Hs,
    hpos,
    hbkt,
    hmass,
    sp,
    sq,
    scale,
    lo,
    hi,
    tol,
    maxfrac,
    EA,
    Nt,
    tau,
):  # pragma: no cover - compiled
    # returns (status, best, UB, jb, bstar, cs, idx): status 0 solved, 1 declined
    NB = Hp.shape[0]
    V = ids.shape[0]
    K = Hs.shape[0]
    h = hpos.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    b0 = 0
    while b0 < NB and Hp[b0] + Hs[0, b0] == 0.0:
        b0 += 1
    b1 = NB
    while b1 > b0 and Hp[b1 - 1] + Hs[0, b1 - 1] == 0.0:
        b1 -= 1
    if b0 == b1:
        b0, b1 = 0, 1
    for r in range(h):
        b0 = min(b0, hbkt[r])
        b1 = max(b1, hbkt[r] + 1)
    nb = b1 - b0
    hh = np.zeros(nb)  # heavy mass and count per bucket
    hc = np.zeros(nb, dtype=np.int64)
    for r in range(h):
        hh[hbkt[r] - b0] += hmass[r]
        hc[hbkt[r] - b0] += 1
    P = np.zeros(nb + 1)
    QC = np.zeros(nb + 1)
    L = np.zeros((nb + 1, K))
    SG = np.zeros(nb + 1, dtype=np.int64)
    hpn = np.empty(nb)
    qm = np.empty(nb)
    for j in range(nb):
        b = b0 + j
        hpn[j] = Hp[b] / sp
        qm[j] = scale * Hs[0, b] + hh[j]
        P[j + 1] = P[j] + hpn[j]
        QC[j + 1] = QC[j] + qm[j]
        for k in range(K):
            L[j + 1, k] = L[j, k] + Hs[k, b]
        SG[j + 1] = SG[j] + hc[j]
    jdone = 0  # boundaries j >= jdone: no mass after them, f = 0 exactly (every token)
    for j in range(nb):
        if hpn[j] != 0.0 or qm[j] != 0.0:
            jdone = j + 1
    delta = L[nb, 0] * scale
    hq0 = hmass[0] if h > 0 else 0.0
    UB = np.inf
    jb = 0
    Qb = np.empty(nb + 1)
    e = np.empty(n + 1)  # q_at's scratch
    pt = np.empty(K)
    for j in range(nb + 1):
        if law == 0:  # q_at's first case, without the call
            Qb[j] = QC[j] ** n
        else:
            for k in range(K):  # the row of L as a scratch, not a view (no reference count)
                pt[k] = L[j, k]
            Qb[j] = q_at(law, n, QC[j], pt, SG[j], scale, delta, hq0, EA, Nt, e)
        f = 0.0 if j >= jdone else P[j] - Qb[j]
        if f != f:
            return 1, 0.0, 0.0, 0, 0, 0, empty
        if f < UB:
            UB = f
            jb = j
    LB = np.empty(nb)
    keep = np.empty(nb, dtype=np.bool_)
    c = sq / sp
    first, last, count = bounds(P, Qb, hpn, qm, lo[b0:b1], hi[b0:b1], c, UB - tol, LB, keep)
    if count == 0:
        return 0, UB, UB, jb + b0, 0, -1, empty
    if last - first + 1 != count:  # survivors in several runs: the array code
        return 1, 0.0, 0.0, 0, 0, 0, empty
    C = 0
    for b in range(b0 + first, b0 + last + 1):
        C += Hn[b]
    if C > maxfrac * V:
        return 1, 0.0, 0.0, 0, 0, 0, empty
    idx, _ = gather(ids, b0 + first, b0 + last, C)  # the tokens of the run, in order
    keys = np.empty(C)
    for i in range(C):
        t = idx[i]
        keys[i] = p[t] / q[t]
        if not np.isfinite(keys[i]):  # the last bucket's ratios: left to the array code
            return 1, 0.0, 0.0, 0, 0, 0, empty
    order = np.argsort(keys, kind="mergesort")  # stable: index order among equal ratios
    srt = idx[order]
    best = np.inf
    cs = -1
    bstar = 0
    cur = -1
    ps_ = 0.0
    sc = 0.0
    sg = 0
    acc = np.zeros(K)
    w = np.empty(K)
    for i in range(C):
        t = srt[i]
        b = ids[t] - b0
        if b != cur:  # a new bucket: continue from its boundary
            cur = b
            ps_ = 0.0
            sc = 0.0
            sg = 0
            acc[:] = 0.0
        heavy = False
        for r in range(h):
            heavy = heavy or hpos[r] == t
        qt = q[t]
        if law == 1:  # q and q / (sum q - q), off the heavy token
            qz = 0.0 if heavy else qt
            w[0] = qz
            w[1] = qz / (sq - qz)
        elif law == 2:  # powers of q / tau, off the heavy tokens
            u = 0.0 if heavy else qt / tau
            y = u
            w[0] = y
            for k in range(1, K):
                y = y * u
                w[k] = y
        else:
            w[0] = qt
        ps_ += p[t] / sp
        sc += qt / sq
        for k in range(K):
            acc[k] += w[k]
            pt[k] = L[b, k] + acc[k]
        sg += 1 if heavy else 0
        Qs = q_at(law, n, QC[b] + sc, pt, SG[b] + sg, scale, delta, hq0, EA, Nt, e)
        f = 0.0 if i == C - 1 and b + 1 >= jdone else (P[b] + ps_) - Qs
        if f != f:
            return 1, 0.0, 0.0, 0, 0, 0, empty
        if f < best:
            best = f
            cs = i
            bstar = b
    if best < UB:
        return 0, best, UB, jb + b0, bstar + b0, cs, srt
    return 0, UB, UB, jb + b0, 0, -1, srt
