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
LAWS: dict[str, int] = {"with": 0, "without": 1, "conditional-poisson": 2}


@functools.cache
def _kernels() -> dict[str, Any] | None:
    jit = _fused.jit_decorator()
    base = _fused._kernels()
    if jit is None or base is None:
        return None
    bounds = base["bounds"]
    gather = base["gather"]

    @jit
    def q_at(law, n, qc, L, seg, scale, delta, hq0, EA, Nt):  # pragma: no cover - compiled
        # Q at one chain point from its statistics (chain.With / Without2 / ConditionalPoisson)
        if law == 0:
            return qc**n
        if law == 1:
            cl = L[0] * scale  # the light mass of H (normalised)
            out = cl * L[1] - L[1] + cl
            if seg > 0:
                out = out + hq0 * (cl / delta + L[1])
            return out
        e = np.empty(n + 1)  # Newton's identities on the light power sums, then t^j
        e[0] = 1.0
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
        delta = L[nb, 0] * scale
        hq0 = hmass[0] if h > 0 else 0.0
        UB = np.inf
        jb = 0
        Qb = np.empty(nb + 1)
        for j in range(nb + 1):
            Qb[j] = q_at(law, n, QC[j], L[j], SG[j], scale, delta, hq0, EA, Nt)
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
        sc = 0.0
        sg = 0
        acc = np.zeros(K)
        pt = np.empty(K)
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
            Qs = q_at(law, n, QC[b] + sc, pt, SG[b] + sg, scale, delta, hq0, EA, Nt)
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
    ctx: dict[str, Any],
    sp: float,
    sq: float,
    edges: tuple[np.ndarray, np.ndarray],
    tol: float,
    max_fraction: float,
    return_set: bool,
    Nt: float = 1.0,
) -> tuple[float, np.ndarray | None] | None:
    r"""α* (and an optimal set) of one fused-route row from its histograms, or None (declined).

    ``law`` is a key of :data:`LAWS`; ``p``, ``q`` the raw (V,) row with sums ``sp``, ``sq``;
    ``shared`` the bucketing pass (:func:`mdsd_ot.fast.bucket._shared`: ``ids``, ``Hp``,
    ``Hn``), ``hists`` the law's histograms and ``ctx`` its setup (:mod:`mdsd_ot.fast.chain`:
    ``heavy``, ``hq``, ``scale``; conditional Poisson also ``EA`` and ``tau``, with ``Nt`` its
    :math:`e_n` of the whole row from :meth:`~mdsd_ot.fast.chain.ConditionalPoisson._totals`);
    ``edges`` the raw ratio edges of every bucket; ``tol`` the pruning slack.

    Examples
    --------
    The public call takes this route for one float64 row (with numba); the sorting path
    agrees:

    >>> from mdsd_ot.fast import alpha_star
    >>> from mdsd_ot.synthetic import synthetic_pair
    >>> p, q = synthetic_pair(8000, 1.0, 0)
    >>> a, b = (alpha_star(p, q, n=2, scheme="with", path=x) for x in ("bucket", "sort"))
    >>> round(a, 12), abs(a - b) <= 1e-12
    (0.835236091717, True)
    """
    k = _kernels()
    if k is None:
        return None
    ids = shared["ids"][0]
    Hs = np.ascontiguousarray(np.concatenate([h for h in hists], axis=0))
    hpos = np.ascontiguousarray(np.asarray(ctx["heavy"][0], dtype=np.int64))
    hbkt = ids[hpos].astype(np.int64)
    hmass = np.ascontiguousarray(np.asarray(ctx["hq"][0], dtype=np.float64))
    EA = ctx["EA"][0] if "EA" in ctx else np.zeros((1, 1))
    tau = float(ctx["tau"][0]) if "tau" in ctx else 1.0
    scale = float(ctx["scale"][0])
    status, best, UB, jb, bstar, cs, srt = k["solve"](
        LAWS[law], n, p, q, ids, shared["Hp"][0], shared["Hn"][0], Hs, hpos, hbkt, hmass,
        float(sp), float(sq), scale, edges[0], edges[1], float(tol), float(max_fraction),
        np.ascontiguousarray(EA, dtype=np.float64), float(Nt), tau,
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
