r"""The compiled kernels of :mod:`mdsd_ot.fast._fused_series`, at module level (numba).

Imported only when numba is installed; module-level functions (not closures) so that numba's
disk cache serves them to every new process.  See :func:`mdsd_ot.fast._fused_series.solve_row`
for what they compute: :func:`boundary` the statistics at the bucket boundaries (phase 1 of
:func:`mdsd_ot.fast.bucket._phase1`), :func:`survivors` the bounds, the surviving run and its
tokens' statistics (phase 2 of :func:`mdsd_ot.fast.bucket._phase2` up to the series), and
:func:`finish` the minimum over the survivors.  Every statistic is formed by the array code's
floating-point operations in its order (numpy's cumulative sums run term after term).
"""

from __future__ import annotations

import numpy as np

from ._fused import jit_decorator
from ._fused_nb import bounds, gather

jit = jit_decorator()


@jit
def boundary(Hp, Hs, Hn, hbkt, hmass, sp, scale):  # pragma: no cover - compiled
    # the occupied range b0..b1 (with the heavy tokens' buckets), then per boundary j = 0..nb:
    # P (p of the first j buckets), pi (K + 1, nb + 1; row 0 zero: the light power sums),
    # seg (heavy tokens), lam (q outside: suffix sums), cnt (tokens), as _phase1 forms them
    NB = Hp.shape[0]
    K = Hs.shape[0]
    h = hbkt.shape[0]
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
    hh = np.zeros(nb)  # heavy mass and count per bucket (bincount: in chain order, from 0)
    hc = np.zeros(nb, dtype=np.int64)
    for r in range(h):
        hh[hbkt[r] - b0] += hmass[r]
        hc[hbkt[r] - b0] += 1
    P = np.zeros(nb + 1)
    pi = np.zeros((K + 1, nb + 1))
    seg = np.zeros(nb + 1, dtype=np.int64)
    cnt = np.zeros(nb + 1, dtype=np.int64)
    lam = np.zeros(nb + 1)
    hpn = np.empty(nb)
    qm = np.empty(nb)
    top = 0
    for j in range(nb):
        b = b0 + j
        hpn[j] = Hp[b] / sp
        qm[j] = scale * Hs[0, b] + hh[j]
        P[j + 1] = P[j] + hpn[j]
        seg[j + 1] = seg[j] + hc[j]
        cnt[j + 1] = cnt[j] + Hn[b]
        top = max(top, Hn[b])
    for k in range(K):
        for j in range(nb):
            pi[k + 1, j + 1] = pi[k + 1, j] + Hs[k, b0 + j]
    lam[nb - 1] = qm[nb - 1]
    for j in range(nb - 2, -1, -1):
        lam[j] = lam[j + 1] + qm[j]
    return b0, b1, P, pi, seg, lam, cnt, hpn, qm, top + nb + 2


@jit
def survivors(
    P,
    Qb,
    hpn,
    qm,
    lo,
    hi,
    c,
    tol,
    maxfrac,
    ids,
    Hn,
    p,
    q,
    hpos,
    b0,
    sp,
    sq,
    tau,
    pib,
    segb,
    lamb,
    cntb,
):  # pragma: no cover - compiled
    # status (0 solved, 1 declined), UB, jb, then the run's tokens sorted by p/q (srt), their
    # bucket (bs, relative to b0) and statistics: P_s, pi_s (K + 1, C), seg_s, lam_s, cnt_s
    nb = hpn.shape[0]
    K = pib.shape[0] - 1
    V = ids.shape[0]
    h = hpos.shape[0]
    e_i = np.zeros(0, dtype=np.int64)
    e_f = np.zeros(0)
    e_2 = np.zeros((K + 1, 0))
    UB = np.inf
    jb = 0
    jdone = 0  # boundaries j >= jdone: no mass after them, f = 0 exactly (every token)
    for j in range(nb):
        if hpn[j] != 0.0 or qm[j] != 0.0:
            jdone = j + 1
    for j in range(nb + 1):
        f = 0.0 if j >= jdone else P[j] - Qb[j]
        if f != f:
            return 1, 0.0, 0, e_i, e_i, e_f, e_2, e_i, e_f, e_i
        if f < UB:
            UB = f
            jb = j
    LB = np.empty(nb)
    keep = np.empty(nb, dtype=np.bool_)
    first, last, count = bounds(P, Qb, hpn, qm, lo, hi, c, UB - tol, LB, keep)
    if count == 0:
        return 0, UB, jb, e_i, e_i, e_f, e_2, e_i, e_f, e_i
    if last - first + 1 != count:  # survivors in several runs: the array code
        return 1, 0.0, 0, e_i, e_i, e_f, e_2, e_i, e_f, e_i
    C = 0
    for b in range(b0 + first, b0 + last + 1):
        C += Hn[b]
    if C > maxfrac * V:  # the array code sorts the row
        return 1, 0.0, 0, e_i, e_i, e_f, e_2, e_i, e_f, e_i
    idx, _ = gather(ids, b0 + first, b0 + last, C)  # the tokens of the run, in order
    keys = np.empty(C)
    for i in range(C):
        t = idx[i]
        keys[i] = abs(p[t] / q[t])
        if not np.isfinite(keys[i]):  # the last bucket's ratios: left to the array code
            return 1, 0.0, 0, e_i, e_i, e_f, e_2, e_i, e_f, e_i
    order = np.argsort(keys, kind="mergesort")  # stable: index order among equal ratios
    srt = idx[order]
    bs = np.empty(C, dtype=np.int64)
    start = np.empty(C, dtype=np.int64)  # first survivor of its bucket (searchsorted left)
    stop = np.empty(C, dtype=np.int64)  # one past its last (searchsorted right)
    for i in range(C):
        bs[i] = ids[srt[i]] - b0
        start[i] = i if i == 0 or bs[i] != bs[i - 1] else start[i - 1]
    for i in range(C - 1, -1, -1):
        stop[i] = i + 1 if i == C - 1 or bs[i] != bs[i + 1] else stop[i + 1]
    one_run = bs[0] == bs[C - 1]
    E = np.zeros(C + 1)  # running sums of the run's terms, E[i] = sum of the first i
    u = np.empty(C)
    qn = np.empty(C)
    hf = np.zeros(C, dtype=np.int64)
    pos = np.zeros(C, dtype=np.int64)
    P_s = np.empty(C)
    qmin = np.inf  # the smallest heavy mass: a lighter token is not heavy (no search)
    for r in range(h):
        qmin = min(qmin, q[hpos[r]])
    for i in range(C):
        t = srt[i]
        if q[t] >= qmin:
            for r in range(h):
                if hpos[r] == t:
                    hf[i] = 1
        pos[i] = 1 if q[t] > 0 else 0
        qn[i] = q[t] / sq
        u[i] = (0.0 if hf[i] else qn[i]) / tau
        E[i + 1] = E[i] + p[t] / sp
    # (boundary - E[start]) + E[i + 1], as bucket._continued: the difference may cancel, the
    # sum keeps relative accuracy (E[i + 1] extends E[start], whose terms the boundary holds)
    for i in range(C):
        if one_run:
            P_s[i] = E[i + 1] + P[bs[0]]
        else:
            P_s[i] = (P[bs[i]] - E[start[i]]) + E[i + 1]
    pi_s = np.zeros((K + 1, C))
    w = np.empty(C)
    w[:] = u
    for k in range(K):
        if k > 0:
            for i in range(C):
                w[i] = w[i] * u[i]
        for i in range(C):
            E[i + 1] = E[i] + w[i]
        for i in range(C):
            if one_run:
                pi_s[k + 1, i] = E[i + 1] + pib[k + 1, bs[0]]
            else:
                pi_s[k + 1, i] = (pib[k + 1, bs[i]] - E[start[i]]) + E[i + 1]
    seg_s = np.empty(C, dtype=np.int64)
    cnt_s = np.empty(C, dtype=np.int64)
    a_seg = 0
    a_cnt = 0
    for i in range(C):
        if start[i] == i:
            a_seg = 0
            a_cnt = 0
        a_seg += hf[i]
        a_cnt += pos[i]
        seg_s[i] = segb[bs[i]] + a_seg
        cnt_s[i] = cntb[bs[i]] + a_cnt
    R = np.zeros(C + 1)  # suffix sums of q over the run (from its end), R[C] = 0
    R[C - 1] = qn[C - 1]
    for i in range(C - 2, -1, -1):
        R[i] = R[i + 1] + qn[i]
    lam_s = np.empty(C)  # (after - R[stop]) + R[i + 1]: the same argument, from the end
    for i in range(C):
        after = lamb[min(bs[i] + 1, nb)]
        lam_s[i] = (after - R[stop[i]]) + R[i + 1]
    return 0, UB, jb, srt, bs, P_s, pi_s, seg_s, lam_s, cnt_s


@jit
def finish(P_s, Q_s, B_s, pin_last):  # pragma: no cover - compiled
    # min and first argmin of f = P - Q over the survivors, the largest bound; NaN: flagged;
    # pin_last: the last survivor's prefix holds every token with mass (f = 0 exactly)
    best = np.inf
    cs = -1
    err = 0.0
    bad = False
    C = P_s.shape[0]
    for i in range(C):
        f = 0.0 if pin_last and i == C - 1 else P_s[i] - Q_s[i]
        if f != f or B_s[i] != B_s[i]:
            bad = True
        if f < best:
            best = f
            cs = i
        if B_s[i] > err:
            err = B_s[i]
    return best, cs, err, bad
