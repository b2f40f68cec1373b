r"""The bucket path of one float64 row after its histograms, in one compiled call (numba).

For the laws whose Q at a chain point is a short closed form of additive statistics
(:mod:`mdsd_ot.fast.chain`: ``with``, :math:`Q = q(H)^n`; ``without`` with n = 2,
:math:`Q = c S - S + c + [a \in H]\, q_a (c/\delta + S)`, c the light mass of H, S its odds
sum, a the heaviest token), the rest of :func:`mdsd_ot.fast.bucket.solve_bucketed` on a fused
route row is a few dozen small array operations: boundary values, bounds, the surviving run,
its tokens sorted and scanned.  :func:`solve_row` does them in one compiled call, in the order
and with the formulas of the array code (:func:`mdsd_ot.fast.bucket._phase1` and ``_phase2``):

.. math::

   f_j = P(H_{<j}) - Q(H_{<j}) \text{ at every bucket boundary}, \quad UB = \min_j f_j,
   \qquad \alpha^* = 1 + \min\bigl(UB, \min_{\text{survivors}} f, 0\bigr) .

It declines (returns None, and the array code runs) where that code would take another turn:
survivors that do not form one run of buckets, more survivors than
:data:`mdsd_ot.fast.bucket.MAX_FRACTION` of the row (the sorting path), survivors in the last
bucket (ratios +inf or NaN), or a NaN anywhere.  The tests compare both on the synthetic family
and the adversarial rows (α* to 1e-15, the same optimal set where it is unique).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import _fused

__all__ = ["LAWS", "serves", "solve_row"]

#: Law codes of the compiled evaluator: the chain kernel names it serves (n = 2 for without).
LAWS: dict[str, int] = {"with": 0, "without": 1}


@functools.cache
def _kernels() -> dict[str, Any] | None:
    jit = _fused.jit_decorator()
    base = _fused._kernels()
    if jit is None or base is None:
        return None
    bounds = base["bounds"]
    gather = base["gather"]

    @jit
    def q_at(law, n, qc, l0, l1, seg, scale, delta, hq):  # pragma: no cover - compiled
        if law == 0:
            return qc**n
        cl = l0 * scale  # the light mass of H (normalised)
        out = cl * l1 - l1 + cl
        if seg > 0:
            out = out + hq * (cl / delta + l1)
        return out

    @jit
    def solve(
        law, n, p, q, ids, Hp, Hn, H0, H1, a, ha, hq, sp, sq, scale, lo, hi, tol, maxfrac
    ):  # pragma: no cover - compiled
        # returns (status, best, UB, jb, bstar, cs, idx): status 0 solved, 1 declined
        NB = Hp.shape[0]
        V = ids.shape[0]
        empty = np.zeros(0, dtype=np.int64)
        b0 = 0
        while b0 < NB and Hp[b0] + H0[b0] == 0.0:
            b0 += 1
        b1 = NB
        while b1 > b0 and Hp[b1 - 1] + H0[b1 - 1] == 0.0:
            b1 -= 1
        if b0 == b1:
            b0, b1 = 0, 1
        if ha >= 0:
            b0 = min(b0, ha)
            b1 = max(b1, ha + 1)
        nb = b1 - b0
        P = np.zeros(nb + 1)
        Qb = np.zeros(nb + 1)
        qm = np.zeros(nb)
        hpn = np.zeros(nb)
        l0 = 0.0
        l1 = 0.0
        qc = 0.0
        pc = 0.0
        L0 = np.zeros(nb + 1)
        L1 = np.zeros(nb + 1)
        QC = np.zeros(nb + 1)
        for j in range(nb):
            b = b0 + j
            hpn[j] = Hp[b] / sp
            m = scale * H0[b] + (hq if b == ha else 0.0)
            qm[j] = m
            pc += hpn[j]
            qc += m
            l0 += H0[b]
            l1 += H1[b]
            P[j + 1] = pc
            QC[j + 1] = qc
            L0[j + 1] = l0
            L1[j + 1] = l1
        delta = L0[nb] * scale
        UB = np.inf
        jb = 0
        for j in range(nb + 1):
            seg = 1 if (ha >= 0 and j > ha - b0) else 0
            Qb[j] = q_at(law, n, QC[j], L0[j], L1[j], seg, scale, delta, hq)
            f = P[j] - Qb[j]
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
        s0 = 0.0
        s1 = 0.0
        sc = 0.0
        sg = 0
        for i in range(C):
            t = srt[i]
            b = ids[t] - b0
            if b != cur:  # a new bucket: continue from its boundary
                cur = b
                ps_ = 0.0
                s0 = 0.0
                s1 = 0.0
                sc = 0.0
                sg = 0
            heavy = t == a
            qz = 0.0 if heavy else q[t]
            ps_ += p[t] / sp
            sc += q[t] / sq
            s0 += qz
            s1 += qz / (sq - qz)
            sg += 1 if heavy else 0
            seg = (1 if (ha >= 0 and b > ha - b0) else 0) + sg
            Qs = q_at(law, n, QC[b] + sc, L0[b] + s0, L1[b] + s1, seg, scale, delta, hq)
            f = (P[b] + ps_) - Qs
            if f != f:
                return 1, 0.0, 0.0, 0, 0, 0, empty
            if f < best:
                best = f
                cs = i
                bstar = b
        if best < UB:
            return 0, best, UB, jb + b0, bstar + b0, cs, srt
        return 0, UB, UB, jb + b0, 0, -1, srt

    return {"solve": solve}


def serves(law: Any, shared: dict[str, Any], p: Any) -> bool:
    """Whether :func:`solve_row` takes this row: one float64 numpy row on the fused route
    (window buckets, exact counts), a law of :data:`LAWS` (without: n = 2), kernels on."""
    if law.kernel not in LAWS or (law.kernel == "without" and law.n != 2):
        return False
    return bool(shared.get("window")) and shared.get("Hn") is not None and _fused.one_row(p)


def solve_row(
    law: str,
    n: int,
    p: np.ndarray,
    q: np.ndarray,
    shared: dict[str, Any],
    hists: list[np.ndarray],
    heavy: int,
    hq: float,
    sp: float,
    sq: float,
    edges: tuple[np.ndarray, np.ndarray],
    tol: float,
    max_fraction: float,
    return_set: bool,
) -> tuple[float, np.ndarray | None] | None:
    r"""α* (and an optimal set) of one fused-route row from its histograms, or None (declined).

    ``law`` is a key of :data:`LAWS`; ``p``, ``q`` the raw (V,) row with sums ``sp``, ``sq``;
    ``shared`` the bucketing pass (:func:`mdsd_ot.fast.bucket._shared`: ``ids``, ``Hp``,
    ``Hn``), ``hists`` the law's histograms (with: ``[Hq]``; without: q off the heavy token and
    its odds :math:`q/(\sum q - q)`), ``heavy`` the heavy token (-1: none) and ``hq`` its
    normalised mass; ``edges`` the raw ratio edges of every bucket; ``tol`` the pruning slack.

    Examples
    --------
    >>> from mdsd_ot.fast import alpha_star
    >>> p = np.linspace(1, 2, 5000); p /= p.sum()
    >>> q = np.linspace(2, 1, 5000); q /= q.sum()
    >>> round(alpha_star(p, q, n=2, scheme="with"), 12)  # the fused route uses solve_row
    0.968743492187
    """
    k = _kernels()
    if k is None:
        return None
    ids = shared["ids"][0]
    H0 = hists[0][0]
    H1 = hists[1][0] if len(hists) > 1 else H0
    ha = int(ids[heavy]) if heavy >= 0 else -1
    status, best, UB, jb, bstar, cs, srt = k["solve"](
        LAWS[law], n, p, q, ids, shared["Hp"][0], shared["Hn"][0], H0, H1, heavy, ha,
        float(hq), float(sp), float(sq), 1.0 / float(sq), edges[0], edges[1], float(tol),
        float(max_fraction),
    )  # fmt: skip
    if status:
        return None
    alpha = min(max(1.0 + min(best, 0.0), 0.0), 1.0)
    if not return_set:
        return alpha, None
    if best >= 0:
        return alpha, np.zeros(ids.shape[0], dtype=bool)
    if cs < 0:  # the optimum is a bucket boundary
        return alpha, ids < jb
    H = ids < bstar
    H[srt[: cs + 1]] = True
    return alpha, H
