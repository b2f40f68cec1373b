r"""The design of a ``seq2`` plan: pairing, pair masses, region widths (proofs/optimal_verifier.md, §9).

:func:`fifo` pairs the supply :math:`(D - s)^+` with the demand :math:`(s - D)^+` first-in
first-out from the top of the chain (``_fifo_compiled``: the same lists collected by the
compiled top-down pass of :mod:`._passes`).  :func:`design` runs the monotone iteration from
above that gives every pair its masses and every paired token its region width (B = 1, then
:math:`B \leftarrow \max(W_1, W_2)` until every token fits, or the overfull tokens' pairs are
scaled down), and ``_quantised`` rounds the four pair probabilities down to multiples of
:math:`2^{-52}` (the sampler's integer uniforms realise them exactly).  :data:`MAX_ROUNDS` and
:data:`SCALE_TOL` are the iteration's limits (re-exported by :mod:`.seq2`, whose
:func:`~.seq2.seq2_or_swap_plan` reads ``seq2.MAX_ROUNDS`` at call time).  The plan that uses
them, and the construction, is :mod:`.seq2`.

Examples
--------
>>> import numpy as np
>>> tau, kd, js, dslot, sslot = fifo(np.array([0.2, -0.1, 0.1, -0.3]), 4)
>>> len(tau), dslot.tolist(), sslot.tolist()
(3, [2, 0], [3, 1])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arena import SCRATCH
from .relabel import QUANT
from .seq2_kernel import _sum_by

_NONE = np.empty(0)  # an absent array argument of the compiled passes

__all__ = ["MAX_ROUNDS", "SCALE_TOL", "fifo", "design"]

#: Region-width iterations of :func:`design` before the overfull tokens are scaled down.
MAX_ROUNDS: int = 12
#: :func:`design` scales the overfull tokens down at once when that costs at most this much
#: acceptance (rounding noise: a demand of a few ulps at a token of tiny mass).
SCALE_TOL: float = 1e-12

_Q = float(QUANT)


def _floor_q(x: np.ndarray) -> np.ndarray:
    """Round down to a multiple of 1/QUANT (in place)."""
    x *= _Q
    np.floor(x, out=x)
    x /= _Q
    return x


def _ceil_q(x: np.ndarray) -> np.ndarray:
    """x rounded up to a multiple of 1/QUANT (a new array)."""
    x = x * _Q
    np.ceil(x, out=x)
    x /= _Q
    return x


# -- pairing and design (numpy) ---------------------------------------------------------------


def fifo(dE: np.ndarray, live: int, E: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    r"""First-in first-out pairing of the demand :math:`dE^+` with the supply :math:`(-dE)^+` on
    the slots ``[0, live)``, counted from the top of the chain.

    Only the tokens that take part are kept: the supply up to the last demand unit and the
    demand up to the last supply unit.  With the transfer path E (:math:`E_j` = supply minus
    demand of the slots >= j, j = 0..V) the supply is searched only above the highest cut with
    :math:`E_j \ge` the total demand (the supply there already covers every demand unit).
    Returns ``(tau, kd, js, dslot, sslot)`` in pairing order
    (top down): the transfer of each pair, the index of its demand (supply) token in ``dslot``
    (``sslot``), and the slots of those tokens.  Pairs that rounding puts out of order
    (supply slot <= demand slot) are dropped.

    Examples
    --------
    >>> tau, kd, js, dslot, sslot = fifo(np.array([0.2, -0.1, 0.1, -0.3]), 4)
    >>> dslot[kd].tolist(), sslot[js].tolist(), tau.round(12).tolist()
    ([2, 0, 0], [3, 3, 1], [0.1, 0.2, 0.0])
    """
    g = dE[live - 1 :: -1] if live > 0 else dE[:0]
    mask = SCRATCH.get("mask", len(g) + 1, dtype=np.bool_)
    jd = np.flatnonzero(np.greater(g, 0.0, out=mask[: len(g)]))
    if len(jd) == 0:
        return _fifo_pairs(jd, np.zeros(0), jd, np.zeros(0), live)
    ed = np.cumsum(g[jd])
    top = len(g)
    if E is not None:  # the highest cut j whose supply above covers the total demand
        cover = np.greater_equal(E[live::-1], ed[-1], out=mask[: live + 1])  # cuts live..0
        first = int(np.argmax(cover))
        if cover[first]:
            top = first  # cut live - first: the supply in top-down [0, first)
    js_ = np.flatnonzero(np.less(g[:top], 0.0, out=mask[:top]))
    es = np.cumsum(g[js_])
    np.negative(es, out=es)
    return _fifo_pairs(jd, ed, js_, es, live)


def _fifo_pairs(
    jd: np.ndarray, ed: np.ndarray, js_: np.ndarray, es: np.ndarray, live: int
) -> tuple[np.ndarray, ...]:
    """:func:`fifo` from the top-down indices of the demand (supply) tokens and their
    cumulative demand (supply)."""
    z = np.zeros(0, dtype=np.int64)
    if len(jd) == 0 or len(js_) == 0:
        return np.zeros(0), z, z, z, z
    nd = min(len(ed), int(np.searchsorted(ed, es[-1], "left")) + 1)
    ns = min(len(es), int(np.searchsorted(es, ed[nd - 1], "left")) + 1)
    ed, es = ed[:nd], es[:ns]
    dslot, sslot = live - 1 - jd[:nd], live - 1 - js_[:ns]
    # merge the two sorted end lists, supply first on ties: demand end k has k demand ends and
    # #(supply ends <= it) supply ends before it
    pos_d = np.searchsorted(es, ed, "right")
    pos_d += np.arange(nd)
    is_d = np.zeros(nd + ns, dtype=bool)
    is_d[pos_d] = True
    b = np.empty(nd + ns)
    b[pos_d] = ed
    b[~is_d] = es
    k = np.cumsum(is_d)
    k -= is_d  # demand interval containing the segment that ends at b (demand ends before it)
    j = np.arange(nd + ns) - k  # supply interval containing it (supply ends before it)
    tau = np.diff(b, prepend=0.0)
    keep = (k < nd) & (j < ns) & (tau > 0)
    keep &= sslot[np.minimum(j, ns - 1)] > dslot[np.minimum(k, nd - 1)]
    return tau[keep], k[keep], j[keep], dslot, sslot


def _fifo_compiled(kern, F, D, ps, s, dE, live) -> tuple[float, tuple[np.ndarray, ...]]:
    """The top-down pass (E into F, dE, s) and :func:`fifo` in compiled loops: the demand and
    supply lists are collected in the same pass, the supply cut at the highest cover."""
    jd, ed = SCRATCH.get("jd", live, dtype=np.int64), SCRATCH.get("ed", live)
    js_, es = SCRATCH.get("js", live, dtype=np.int64), SCRATCH.get("es", live)
    min_F, nd, ns = kern["back"](F, D, ps, s, dE, live, 1, 1.0, jd, ed, _NONE, js_, es, _NONE)
    jd, ed = jd[:nd], ed[:nd]
    if nd:
        top = kern["cover_cut"](F, live, ed[-1])
        if top <= live:  # the supply in top-down [0, top)
            ns = int(np.searchsorted(js_[:ns], top, "left"))
    return min_F, _fifo_pairs(jd, ed, js_[:ns], es[:ns], live)


def design(
    tau: np.ndarray,
    span: tuple[np.ndarray, np.ndarray],
    mass_x: tuple[np.ndarray, np.ndarray],
    mass_y: tuple[np.ndarray, np.ndarray],
    kd: np.ndarray,
    js: np.ndarray,
    mass_d: tuple[np.ndarray, np.ndarray],
    mass_s: tuple[np.ndarray, np.ndarray],
    max_rounds: int = MAX_ROUNDS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    r"""Pair masses and region widths: the monotone iteration from above.

    With :math:`w = (\min(r_x, r_y), \min(q_x, q_y))` and the coefficients
    :math:`a = q[x..y] - (q_x B_x + q_y B_y)/2`, :math:`b = r[x..y] - (r_x B_x + r_y B_y)/2`, a pair
    carries :math:`f = \tau / (w_1 a + w_2 b)` (masses :math:`f w`), and token k moves the
    probabilities :math:`W_{t,k} = \sum_{p \ni k} f_p w_{t,p} / \text{mass}_{t,k}`.  W is increasing
    in B, so from :math:`B = 1` the iteration :math:`B \leftarrow \min(B, \max_t W_t)` decreases
    and keeps :math:`W(B) \le B` wherever :math:`B < 1`; it stops at the first B with
    :math:`W \le 1` everywhere (every pair realises its τ exactly), or after ``max_rounds``,
    or when B no longer moves, or when scaling costs at most :data:`SCALE_TOL` of acceptance:
    then the pairs of overfull tokens are scaled down by the smaller of their two ends'
    factors.

    Parameters
    ----------
    tau : (P,) ndarray
        Transfer of each pair (first-in first-out order).
    span : ((P,), (P,)) ndarrays
        q and r mass of the slots x..y of each pair.
    mass_x, mass_y : ((P,), (P,)) ndarrays
        (r, q) of each pair's demand and supply token.
    kd, js : (P,) int ndarrays
        Index of each pair's demand (supply) token among the demand (supply) tokens.
    mass_d, mass_s : ((nd,), (nd,)) and ((ns,), (ns,)) ndarrays
        (r, q) of the demand and supply tokens.
    max_rounds : int
        Largest number of region widths tried.

    Returns
    -------
    f, w1, w2 : (P,) ndarrays
        The pair scale and directions (masses ``f * w1``, ``f * w2``).
    Bd, Bs : ndarrays
        Region widths of the demand and supply tokens.
    info : dict
        ``rounds`` (widths tried), ``fits`` (no scaling needed), ``overfull`` (largest
        :math:`\max_t W_t` of the last round), ``loss`` (where scaled: the transfer lost).

    Examples
    --------
    >>> one, i0 = np.ones(1), np.zeros(1, dtype=int)
    >>> half = (0.5 * one, 0.5 * one)
    >>> f, w1, w2, Bd, Bs, info = design(0.1 * one, (one, one), half, half, i0, i0, half, half)
    >>> info["fits"], round(float(f[0] * (w1[0] * 0.5 + w2[0] * 0.5)), 12)  # a = b = 1/2
    (True, 0.1)
    """
    nd, ns = len(mass_d[0]), len(mass_s[0])
    rx, qx = mass_x
    ry, qy = mass_y
    w1 = np.minimum(rx, ry)
    w2 = np.minimum(qx, qy)
    Bd, Bs = np.ones(nd), np.ones(ns)
    info: dict[str, Any] = {"rounds": 0, "fits": True, "overfull": 0.0}
    f = np.zeros(len(tau))
    last = max(1, max_rounds) - 1
    for rnd in range(last + 1):
        if rnd == 0:
            a = span[0] - 0.5 * (qx + qy)
            b = span[1] - 0.5 * (rx + ry)
        else:
            bx, by = Bd[kd], Bs[js]
            a = span[0] - 0.5 * (qx * bx + qy * by)
            b = span[1] - 0.5 * (rx * bx + ry * by)
        a *= w1
        b *= w2
        a += b
        f = np.divide(tau, a, out=a)
        Md = _moved(f, w1, w2, kd, nd, mass_d)
        Ms = _moved(f, w1, w2, js, ns, mass_s)
        over = max(Md.max(initial=0.0), Ms.max(initial=0.0))
        info["rounds"], info["overfull"] = rnd + 1, over
        if over <= 1.0:
            break
        sd = np.minimum(1.0, 1.0 / np.maximum(Md, 1e-300))
        ss = np.minimum(1.0, 1.0 / np.maximum(Ms, 1e-300))
        scale = np.minimum(sd[kd], ss[js])
        loss = float(tau @ (1.0 - scale))  # the shortfall that scaling now would cost
        nBd, nBs = np.minimum(Bd, Md), np.minimum(Bs, Ms)
        if (
            loss <= SCALE_TOL
            or rnd == last
            or (np.array_equal(nBd, Bd) and np.array_equal(nBs, Bs))
        ):
            info["fits"], info["loss"] = False, loss
            f *= scale
            break
        Bd, Bs = nBd, nBs
    return f, w1, w2, Bd, Bs, info


def _moved(f, w1, w2, idx, n, mass) -> np.ndarray:
    r""":math:`\max_t W_t` per token (type t's probability moved to partners)."""
    W1 = _sum_by(idx, f * w1, n)
    W1 /= mass[0]
    W2 = _sum_by(idx, f * w2, n)
    W2 /= mass[1]
    return np.maximum(W1, W2, out=W1)


def _quantised(f, w1, w2, rx, qx, ry, qy, kd, js, nd, ns):
    """The four pair probabilities (multiples of 1/QUANT) and the per-token sums W (exact)."""
    m1, m2 = f * w1, f * w2
    prob = (m1 / rx, m1 / ry, m2 / qx, m2 / qy)
    for pr in prob:
        _floor_q(pr)
    Wd = np.stack([_sum_by(kd, prob[0], nd), _sum_by(kd, prob[2], nd)])
    Ws = np.stack([_sum_by(js, prob[1], ns), _sum_by(js, prob[3], ns)])
    for W, idx, cols in ((Wd, kd, (0, 2)), (Ws, js, (1, 3))):  # rounding guard: rows within 1
        for t in (0, 1):
            bad = W[t] > 1.0
            if bad.any():
                hit = bad[idx]
                pr = prob[cols[t]]
                pr[hit] = np.floor(pr[hit] / W[t][idx[hit]] * (1 - 2**-40) * _Q) / _Q
                W[t] = _sum_by(idx, pr, len(W[t]))
    return prob, Wd, Ws
