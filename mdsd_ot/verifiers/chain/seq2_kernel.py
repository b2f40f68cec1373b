r"""The two relabelling kernels of a ``seq2`` plan and their exact law (proofs/optimal_verifier.md, §9).

:class:`Seq2Kernel` holds the kernels that :mod:`.seq2` designs, A1 for the first draft and A2
for the second, on the levels :math:`2k + \{0, 1\}` (a paired slot's region and its rest), and
draws their levels for the sampler (integer uniforms: the kernels' probabilities, multiples of
:math:`2^{-52}`, are realised exactly).  :func:`kernel_law` computes the law T of the quantised
kernels with the level masses they realise (the selection law of "the higher level wins, a tie
is a fair coin", linear in the kernels once their level masses are fixed: :mod:`.seq2`), and a
bound on its rounding (``law_error``).

Examples
--------
>>> import numpy as np
>>> from .seq2 import seq2_plan
>>> plan = seq2_plan(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1]), 2, None)
>>> isinstance(plan.seq2, Seq2Kernel), bool(abs(plan.T.sum() - 1.0) < 1e-15)
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._passes import kernels
from .relabel import QUANT

__all__ = ["Seq2Kernel", "kernel_law"]

EPS = float(np.finfo(np.float64).eps)


def _sum_by(idx: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """``np.bincount(idx, w, n)`` as float64 (also when there are no entries)."""
    if len(idx) == 0:
        return np.zeros(n)
    return np.bincount(idx, w, n)


@dataclass
class Seq2Kernel:
    r"""The two relabelling kernels of a ``seq2`` plan on the levels :math:`2k + \{0, 1\}`.

    Slot k's *region* is its lower sub-level (level 2k) for a demand token and its upper one
    (2k + 1) for a supply token; every other slot has the single level 2k.  A draw of type t
    (t = 1: the first draft, kernel A1; t = 2: the second draft, A2) of a paired slot stays
    outside its region w.p. :math:`1 - B`, in it w.p. :math:`B - W_t`, and moves to the region of
    its partner in pair e w.p. ``prob[c][e]`` (c = 0: x's type-1 draw to y, 1: y's type-1 draw
    to x, 2: x's type-2 draw to y, 3: y's type-2 draw to x).  All probabilities are multiples of
    1/QUANT, every row sums to exactly 1.  Tokens and pairs are stored top down (pairing order):
    ``dslot`` / ``sslot`` descending, ``kd`` / ``js`` non-decreasing.

    Attributes
    ----------
    dslot, sslot : int64 ndarrays
        Slots of the paired demand and supply tokens.
    Bd, Bs : ndarrays
        Their region widths.
    Wd, Ws : (2, nd), (2, ns) ndarrays
        Their moved probabilities, by type.
    kd, js : (P,) int64 ndarrays
        Demand and supply token (index into ``dslot`` / ``sslot``) of each pair.
    prob : tuple of four (P,) ndarrays
        The pair probabilities ``x1, y1, x2, y2``.
    """

    dslot: np.ndarray
    sslot: np.ndarray
    Bd: np.ndarray
    Bs: np.ndarray
    Wd: np.ndarray
    Ws: np.ndarray
    kd: np.ndarray
    js: np.ndarray
    prob: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

    @property
    def x(self) -> np.ndarray:
        """Demand slot of each pair."""
        return self.dslot[self.kd]

    @property
    def y(self) -> np.ndarray:
        """Supply slot of each pair."""
        return self.sslot[self.js]

    def _find(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(side, index) of each slot: -1 / +1 and its index in ``dslot`` / ``sslot``, or 0."""
        side = np.zeros(len(slots), dtype=np.int8)
        idx = np.zeros(len(slots), dtype=np.int64)
        for sgn, tok in ((-1, self.dslot), (1, self.sslot)):
            n = len(tok)
            if n == 0:
                continue
            # tok is descending: the number of entries > slot is the count of -tok < -slot
            pos = np.minimum(n - np.searchsorted(tok[::-1], slots, "right"), n - 1)
            hit = tok[pos] == slots
            side[hit] = sgn
            idx[hit] = pos[hit]
        return side, idx

    def rows(self, slots: np.ndarray, kind: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""Kernel rows of the given slots for draws of type ``kind`` (1 or 2).

        Returns (row index, level, probability) per entry, grouped by row: the own rest, the
        own region, then the moves; every row sums to exactly 1.

        Examples
        --------
        >>> from .seq2 import seq2_plan
        >>> plan = seq2_plan(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1]),
        ...                  2, np.arange(4))
        >>> row, lev, pr = plan.seq2.rows(np.array([0]), 1)
        >>> bool(pr.sum() == 1.0), bool((lev[2:] % 2 == 1).all())  # moves land in upper regions
        (True, True)
        """
        slots = np.asarray(slots, dtype=np.int64).ravel()
        k = len(slots)
        side, idx = self._find(slots)
        dem, sup = side == -1, side == 1
        B = np.zeros(k)
        W = np.zeros(k)
        B[dem], W[dem] = self.Bd[idx[dem]], self.Wd[kind - 1, idx[dem]]
        B[sup], W[sup] = self.Bs[idx[sup]], self.Ws[kind - 1, idx[sup]]
        rest = np.where(dem, 2 * slots + 1, 2 * slots)
        region = np.where(sup, 2 * slots + 1, 2 * slots)
        lo = np.zeros(k, dtype=np.int64)
        hi = np.zeros(k, dtype=np.int64)
        lo[dem] = np.searchsorted(self.kd, idx[dem], "left")
        hi[dem] = np.searchsorted(self.kd, idx[dem], "right")
        lo[sup] = np.searchsorted(self.js, idx[sup], "left")
        hi[sup] = np.searchsorted(self.js, idx[sup], "right")
        cnt = hi - lo
        g = np.repeat(np.arange(k), cnt)
        e = lo[g] + np.arange(len(g)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        as_x = dem[g]
        c = 0 if kind == 1 else 2
        mv_p = np.where(as_x, self.prob[c][e], self.prob[c + 1][e])
        mv_lev = np.where(as_x, 2 * self.sslot[self.js[e]] + 1, 2 * self.dslot[self.kd[e]])
        start = np.cumsum(cnt + 2) - (cnt + 2)  # row i: rest, region, then its moves
        m = int(start[-1] + cnt[-1] + 2) if k else 0
        rows, lev, pr = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.empty(m)
        at = start + 1
        rows[start], lev[start], pr[start] = np.arange(k), rest, 1.0 - B
        rows[at], lev[at], pr[at] = np.arange(k), region, B - W
        at = start[g] + 2 + (e - lo[g])
        rows[at], lev[at], pr[at] = g, mv_lev, mv_p
        return rows, lev, pr

    def levels(self, slots: np.ndarray, kind: int, rng: np.random.Generator) -> np.ndarray:
        """One level per draw of type ``kind`` from the given slots (integer uniforms: the
        kernel's probabilities are realised exactly)."""
        return self.pair_levels(np.asarray(slots, dtype=np.int64), None, rng, kind)[0]

    def pair_levels(
        self, first: np.ndarray, second: np.ndarray | None, rng: np.random.Generator, kind: int = 1
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Levels of the first drafts (slots ``first``, kernel A1) and of the second drafts
        (``second``, A2), in one vectorised draw (``kind`` is the first array's kernel when
        ``second`` is None).

        Examples
        --------
        >>> from .seq2 import seq2_plan
        >>> plan = seq2_plan(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1]),
        ...                  2, np.arange(4))
        >>> l1, l2 = plan.seq2.pair_levels(np.array([0, 3]), np.array([3, 0]),
        ...                                np.random.default_rng(0))
        >>> l1.shape, bool(((l1 >= 0) & (l1 < 8)).all())
        ((2,), True)
        """
        from .sample import _draw_entries

        jit = kernels()
        if jit is not None:  # the same uniforms, each draw's row scanned in a compiled loop
            a = np.asarray(first, dtype=np.int64)
            b = np.asarray(second, dtype=np.int64) if second is not None else a[:0]
            slots = np.concatenate([a.ravel(), b.ravel()])
            kinds = np.full(len(slots), 2, dtype=np.int64)
            kinds[: a.size] = kind
            u = rng.integers(0, QUANT, size=len(slots), dtype=np.int64)
            out = np.empty(len(slots), dtype=np.int64)
            jit["seq2_levels"](slots, kinds, u, self.dslot, self.sslot, self.Bd, self.Bs,
                               self.Wd, self.Ws, self.kd, self.js, self.prob, out)  # fmt: skip
            l1 = out[: a.size].reshape(a.shape)
            return l1, (out[a.size :].reshape(b.shape) if second is not None else None)
        parts = [(np.asarray(first, dtype=np.int64), kind)]
        if second is not None:
            parts.append((np.asarray(second, dtype=np.int64), 2))
        rows, levs, prs, draw_rows = [], [], [], []
        base = 0
        for slots, knd in parts:
            uniq, inv = np.unique(slots.ravel(), return_inverse=True)
            row, lev, pr = self.rows(uniq, knd)
            keep = pr > 0
            rows.append(row[keep] + base)
            levs.append(lev[keep])
            prs.append(pr[keep])
            draw_rows.append(inv.ravel() + base)
            base += len(uniq)
        lev = np.concatenate(levs)
        idx, _ = _draw_entries(np.concatenate(rows), np.concatenate(prs), base,
                               np.concatenate(draw_rows), rng)  # fmt: skip
        out = lev[np.minimum(idx, len(lev) - 1)]
        n1 = parts[0][0].size
        l1 = out[:n1].reshape(parts[0][0].shape)
        return l1, (out[n1:].reshape(parts[1][0].shape) if second is not None else None)


def kernel_law(
    D: np.ndarray,
    qn: np.ndarray,
    r: np.ndarray,
    c0: np.ndarray,
    R0: np.ndarray,
    kern: Seq2Kernel,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    r"""The exact law T (by slot) of the quantised kernels, with the level masses they realise.

    With :math:`\delta_{t,k}` = (type-t mass moved into slot k) − (moved out) and
    :math:`\Lambda_{t,k} = \sum_{j<k} \delta_{t,j}`, the type-t mass below slot k is
    :math:`C_{t,k-1} + \Lambda_{t,k}` (:math:`C_2` = ``c0``, the cumulative q; :math:`C_1` =
    ``R0``, the cumulative r; both with a leading 0), so every slot has
    :math:`T_k = D_k + r_k \Lambda_{2,k} + q_k \Lambda_{1,k}` plus, for a paired slot, the terms
    of its moves and of its two sub-levels (proofs/optimal_verifier.md, §9.5).  Every term is a
    product of non-negative factors, or a move's mass times a difference of level masses, so
    none cancels catastrophically (in particular none is a difference of
    :math:`r_k \varphi_2` and :math:`r_k q_k / 2` when one token holds almost all of q).
    Slots without a pair get :math:`\hat T_k = D_k`: the imbalance :math:`\Lambda` (rounding
    of the kernel's probabilities, a few ulps of the moved masses) moves their law by at most
    :math:`\sum_i |\delta_{2,i}|\, r(\text{slots} > z_i) + |\delta_{1,i}|\, q(\text{slots} > z_i)`
    over the paired slots :math:`z_i`, which is added to the bound (a pass over V saved).

    Parameters
    ----------
    D, qn, r : (V,) ndarrays
        The deterministic rule's law, q (normalised) and r by slot.
    c0, R0 : (V + 1,) ndarrays
        Cumulative q and r with a leading 0.
    kern : Seq2Kernel
        The quantised kernels.
    out : (V,) ndarray, optional
        Where to write T.

    Returns
    -------
    T : (V,) ndarray
        The selection law by slot.
    err : float
        A bound on :math:`\sum_k |\hat T_k - T_k|`: :math:`2 (V + 20)\, \epsilon` times the sum
        of the absolute values of all terms and of the factors' sizes (rounding), plus twice
        that imbalance bound.

    Examples
    --------
    >>> from .seq2 import seq2_plan
    >>> plan = seq2_plan(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1]),
    ...                  2, np.arange(4))
    >>> bool(abs(plan.T.sum() - 1.0) < 1e-15), bool((plan.T >= plan.s - 1e-15).all())
    (True, True)
    """
    V = len(D)
    dslot, sslot, kd, js = kern.dslot, kern.sslot, kern.kd, kern.js
    nd, ns = len(dslot), len(sslot)
    T = out if out is not None else np.empty(V)
    if nd == 0 or ns == 0:
        np.copyto(T, D)
        return T, 2.0 * (V + 20) * EPS * 2.0
    jit = kernels()
    if jit is not None:
        absum, unpaired = jit["seq2_law"](D, qn, r, c0, R0, dslot, sslot, kd, js, kern.prob,
                                          kern.Bd, kern.Bs, kern.Wd, kern.Ws, T)  # fmt: skip
        return T, 2.0 * (V + 20) * EPS * absum + 2.0 * unpaired
    x, y = dslot[kd], sslot[js]
    p1x, p1y, p2x, p2y = kern.prob
    rx, qx, ry, qy = r[x], qn[x], r[y], qn[y]
    m1x, m1y, m2x, m2y = rx * p1x, ry * p1y, qx * p2x, qy * p2y
    out1d, out2d = _sum_by(kd, m1x, nd), _sum_by(kd, m2x, nd)
    vis1d, vis2d = _sum_by(kd, m1y, nd), _sum_by(kd, m2y, nd)
    out1s, out2s = _sum_by(js, m1y, ns), _sum_by(js, m2y, ns)
    vis1s, vis2s = _sum_by(js, m1x, ns), _sum_by(js, m2x, ns)
    d1d, d2d, d1s, d2s = vis1d - out1d, vis2d - out2d, vis1s - out1s, vis2s - out2s
    # Lambda: the paired tokens in slot order, exclusive cumulative imbalance
    zs = np.concatenate([dslot, sslot])
    o = np.argsort(zs, kind="stable")
    zo = zs[o]
    ex = []
    for dd, ds in ((d1d, d1s), (d2d, d2s)):
        cum = np.concatenate([dd, ds])[o]
        np.cumsum(cum, out=cum)
        cum -= np.concatenate([dd, ds])[o]  # exclusive: the imbalance of the paired slots below
        ex.append(cum)
    rank = np.empty(len(o), dtype=np.int64)
    rank[o] = np.arange(len(o))
    ex1, ex2 = ex[0][rank], ex[1][rank]  # Lambda_1, Lambda_2 at each paired token
    L1d, L1s, L2d, L2s = ex1[:nd], ex1[nd:], ex2[:nd], ex2[nd:]
    # the slots without pairs keep T = D: the imbalance below them moves their law by
    # r Lambda_2 + q Lambda_1, at most sum_i |delta_i| (mass above z_i) in all (a bound only)
    np.copyto(T, D)
    tail_r = np.maximum(R0[-1] - R0[zo + 1], 0.0)
    tail_q = np.maximum(c0[-1] - c0[zo + 1], 0.0)
    d1z = np.abs(np.concatenate([d1d, d1s])[o])
    d2z = np.abs(np.concatenate([d2d, d2s])[o])
    unpaired = float(d2z @ tail_r + d1z @ tail_q)
    a1z = np.concatenate([vis1d + out1d, vis1s + out1s])[o]
    a2z = np.concatenate([vis2d + out2d, vis2s + out2s])[o]
    absum = 2.0 + float(a2z @ tail_r + a1z @ tail_q)
    # moves: G = level mass of the slots x..y-1 (type 2 in q units, type 1 in r units)
    Bd, Bs = kern.Bd, kern.Bs
    Bx, By = Bd[kd], Bs[js]
    G2 = (c0[y] - c0[x]) + (L2s[js] - L2d[kd])
    G1 = (R0[y] - R0[x]) + (L1s[js] - L1d[kd])
    d2y, d1y = d2s[js], d1s[js]
    d2x, d1x = d2d[kd], d1d[kd]
    half_y = 1.0 - 0.5 * By
    gx = m1x * (G2 + qy * half_y + 0.5 * d2y - 0.5 * qx)
    gx += m2x * (G1 + ry * half_y + 0.5 * d1y - 0.5 * rx)
    ly = m1y * (G2 - 0.5 * (qx * Bx + d2x) + 0.5 * qy)
    ly += m2y * (G1 - 0.5 * (rx * Bx + d1x) + 0.5 * ry)
    big = (m1x + m1y) @ (c0[y] + c0[x] + qx + qy) + (m2x + m2y) @ (R0[y] + R0[x] + rx + ry)
    # own sub-levels (the closed forms of section 9.5)
    qd, rd = qn[dslot], r[dslot]
    qs_, rs_ = qn[sslot], r[sslot]
    W1d, W2d = kern.Wd
    W1s, W2s = kern.Ws
    own_d = 0.5 * (1.0 - Bd) * (qd * out1d + rd * out2d)
    own_d += rd * d2d * (1.0 - 0.5 * (Bd + W1d)) + qd * d1d * (1.0 - 0.5 * (Bd + W2d))
    own_s = -0.5 * (1.0 - Bs) * (qs_ * out1s + rs_ * out2s)
    own_s += 0.5 * (rs_ * d2s * (Bs - W1s) + qs_ * d1s * (Bs - W2s))
    base_d = rd * L2d + qd * L1d
    base_s = rs_ * L2s + qs_ * L1s
    T[dslot] += _sum_by(kd, gx, nd) + own_d + base_d
    T[sslot] += own_s - _sum_by(js, ly, ns) + base_s
    absum += float(big + np.abs(gx).sum() + np.abs(ly).sum())
    absum += float(np.abs(own_d).sum() + np.abs(own_s).sum())
    return T, 2.0 * (V + 20) * EPS * absum + 2.0 * unpaired
