r"""The ``seq2`` plan: two sequential drafts without replacement (proofs/optimal_verifier.md, §9).

For ``WithoutReplacement(q, 2)`` the ordered draft pair has
:math:`\Pr[X_1 = a, X_2 = b] = r_a q_b` (:math:`a \ne b`), :math:`r = q / (1 - q)`: the product
law :math:`\hat r \otimes q` (:math:`\hat r = r / R`, :math:`R = \sum r`) conditioned on two
different values, an event of probability 1/R.  For a rule that selects a on a collision
(a, a) the product and sequential selection laws are tied by the affine identity
:math:`T^{prod} = T^{seq} / R + \hat r \circ q`, and in product space the two draws are
independent, so relabelling each draw by its own kernel (A1 for the first draft, A2 for the
second) and selecting the higher *level* (ties: a fair coin) has a law that is linear in the
kernels once the level masses :math:`\nu_1 = r A_1`, :math:`\nu_2 = q A_2` are fixed:

.. math::

   T^{seq}_i = r_i \sum_l A_{1,il} \Bigl(\varphi_2(l) - \frac{q_i}{2}\Bigr)
             + q_i \sum_l A_{2,il} \Bigl(\varphi_1(l) - \frac{r_i}{2}\Bigr),
   \qquad \varphi_t(l) = \nu_t(\text{levels} < l) + \tfrac12 \nu_t(l).

Levels: every slot k (chain order p/q ascending) has two sub-levels, a *region* of width
:math:`B_k` and the *rest*; the region is the bottom of the slot for a demand token and its top
for a supply token.  A pair (x, y, τ) of the first-in first-out pairing (demand x below supply y)
exchanges mass :math:`m_1` of first draws and :math:`m_2` of second draws between the two regions
(x's draws in its region move to y's region w.p. :math:`m_t / \text{mass}`, y's to x's): level
masses are unchanged, tokens between x and y are unchanged, and x gains exactly

.. math::

   \tau = m_1 \Bigl(q[x..y] - \frac{q_x B_x + q_y B_y}{2}\Bigr)
        + m_2 \Bigl(r[x..y] - \frac{r_x B_x + r_y B_y}{2}\Bigr),

which y loses (:math:`q[x..y]` the q mass of the slots x..y).  The masses follow the lighter
token, :math:`(m_1, m_2) \propto (\min(r_x, r_y), \min(q_x, q_y))`, and the region widths come
from a monotone iteration from above (:func:`design`): :math:`B = 1` (plain slot swaps), then
:math:`B \leftarrow \max(W_1, W_2)`, the probabilities moved out of each token, until every
token fits (:math:`W \le 1`; in exact arithmetic :math:`W \le B` then holds everywhere).  Where
no fit is reached the pairs of the overfull tokens are scaled down and the plan falls short of
the optimum by the computed :math:`\sum (s - T)^+`; above :data:`TOL` ``build_plan(..., "seq2")``
uses ``seq-swap`` instead (:func:`seq2_or_swap_plan`).  Lemmas 11-13 and Theorem 5 of the note
prove that a design that fits attains α*; that it always fits is measured, not proved.

Kernel probabilities are multiples of :math:`2^{-52}` (the sampler draws integers), and the law
T of the quantised kernels is computed with their actual level masses (:func:`kernel_law`), so
the thinning :math:`\min(s, T)/T` is lossless up to the rounding bound ``law_error``.

Examples
--------
>>> import numpy as np
>>> from mdsd_ot.fast import alpha_star
>>> from mdsd_ot.synthetic import synthetic_pair
>>> p, q = synthetic_pair(2000, 1.0, 0)
>>> plan = seq2_plan(p, q, 2, None)
>>> plan.construction, bool(abs(plan.acceptance - alpha_star(p, q, n=2, scheme="without")) < 1e-9)
('seq2', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ._arena import SCRATCH, kept
from ._passes import kernels
from .relabel import QUANT

_NONE = np.empty(0)  # an absent array argument of the compiled passes

__all__ = [
    "TOL",
    "MAX_ROUNDS",
    "SCALE_TOL",
    "Seq2Kernel",
    "seq2_plan",
    "seq2_or_swap_plan",
    "fifo",
    "design",
    "kernel_law",
    "seq2_lists",
    "linear_law_list",
    "select_pair",
    "enumerate_law_list",
]

#: Largest shortfall :math:`\sum_k (s_k - T_k)^+` of a ``seq2`` plan that
#: :func:`seq2_or_swap_plan` keeps (absolute: acceptances are probabilities); above it the
#: ``seq-swap`` plan is built instead.
TOL: float = 1e-9
#: Region-width iterations of :func:`design` before the overfull tokens are scaled down.
MAX_ROUNDS: int = 12
#: :func:`design` scales the overfull tokens down at once when that costs at most this much
#: acceptance (rounding noise: a demand of a few ulps at a token of tiny mass).
SCALE_TOL: float = 1e-12

EPS = float(np.finfo(np.float64).eps)
_Q = float(QUANT)


def _sum_by(idx: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """``np.bincount(idx, w, n)`` as float64 (also when there are no entries)."""
    if len(idx) == 0:
        return np.zeros(n)
    return np.bincount(idx, w, n)


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


# -- the plan ---------------------------------------------------------------------------------


def _heavy(qs: np.ndarray, total: float) -> tuple[int, float]:
    r"""The slot h of a token with more than half of :math:`S = \sum q` and :math:`S - q_h`
    summed directly, or (-1, 0.0)."""
    h = int(np.argmax(qs))
    if 2.0 * qs[h] > total:
        return h, float(qs[:h].sum() + qs[h + 1 :].sum())
    return -1, 0.0


def _front_compiled(kern, ps: np.ndarray, qs: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`_masses`, the cumulative masses c0 and R0, D and F in one compiled loop (the same
    numbers as the numpy route of :func:`seq2_plan`)."""
    V = len(qs)
    total = float(qs.sum())
    h, rh = _heavy(qs, total)
    qn = SCRATCH.get("qn", V) if total != 1.0 else qs
    r = SCRATCH.get("r", V)
    z = SCRATCH.get("c0R0", 2 * (V + 1))
    c0, R0 = z[: V + 1], z[V + 1 :]
    D, F = SCRATCH.get("D", V), SCRATCH.get("F", V + 1)
    kern["seq2_front"](ps, qs, qn, r, total, h, rh, c0, R0, D, F)
    return qn, r, c0, R0, D, F


def _masses(qs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Second-draw masses :math:`\bar q = q / S` and first-draw masses :math:`r = q / (S - q)`
    (:math:`S = \sum q`; :math:`\Pr[X_1 = a, X_2 = b] = r_a \bar q_b` for a != b).

    :math:`S - q_k` is the sum of the other masses; for a token with more than half of S it is
    summed as such (no cancellation when it holds almost all of q); otherwise
    :math:`S - q_k \ge S/2`.
    """
    V = len(qs)
    total = float(qs.sum())
    qn = np.divide(qs, total, out=SCRATCH.get("qn", V)) if total != 1.0 else qs
    r = np.subtract(total, qs, out=SCRATCH.get("r", V))
    h, rh = _heavy(qs, total)
    if h >= 0:  # a heavy token: its complement summed directly
        r[h] = rh
    np.divide(qs, r, out=r)  # q = 0 gives 0
    return qn, r


def seq2_plan(
    p: np.ndarray,
    q: np.ndarray,
    n: int,
    order: np.ndarray | None,
    *,
    max_rounds: int = MAX_ROUNDS,
) -> Any:
    r"""The ``seq2`` :class:`~mdsd_ot.verifiers.chain.plan.Plan` of one position (n = 2).

    Sort by p/q (unless ``order`` is given), form the sequential law of "select the draft of
    largest p/q", :math:`D_k = r_k c_{k-1} + q_k r(H_{k-1})`, the optimal sub-law s, pair the
    supply :math:`(D - s)^+` with the demand :math:`(s - D)^+` first-in first-out (:func:`fifo`),
    design the regions and pair masses (:func:`design`), quantise, and compute the exact law T
    of the kernels (:func:`kernel_law`).  ``plan.info``: ``shortfall``
    :math:`\sum (s - T)^+`, ``rounds``, ``fits``, ``overfull``, ``pairs``.

    Examples
    --------
    >>> p, q = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])
    >>> plan = seq2_plan(p, q, 2, None)
    >>> round(plan.acceptance * 840, 9), plan.info["fits"]  # α* = 701/840
    (701.0, True)
    """
    from .plan import Plan, _gather, chain_order

    if n != 2:
        raise ValueError(f"n: the seq2 construction is for two drafts, got n = {n}")
    if order is None:
        order = chain_order(p, q)
    V = len(order)
    kern = kernels()
    if kern is not None:
        ps, qs = SCRATCH.get("ps", V), SCRATCH.get("qs", V)
        kern["gather"](p, q, order, ps, qs)
    else:
        ps, qs = _gather(p, q, order)
    live = V if qs[-1] > 0 else int(np.count_nonzero(q))
    if kern is not None:
        qn, r, c0, R0, D, F = _front_compiled(kern, ps, qs)
        s = kept("s", V)
        min_F, (tau, kd, js, dslot, sslot) = _fifo_compiled(
            kern, F, D, ps, s, SCRATCH.get("tmp", V), live
        )
        alpha = min(1.0, 1.0 + min_F)
    else:
        qn, r = _masses(qs)
        # cumulative q and r with a leading 0 (c0[k] = c_{k-1}), both in one complex
        # cumulative sum (two independent chains of additions; the same sums as two float
        # cumsums)
        z = SCRATCH.get("cz", V + 1, dtype=np.complex128)
        z[0] = 0.0
        z.real[1:] = qn
        z.imag[1:] = r
        np.cumsum(z, out=z)
        c0, R0 = z.real, z.imag
        D = np.multiply(r, c0[:-1], out=SCRATCH.get("D", V))
        tmp = np.multiply(qn, R0[:-1], out=SCRATCH.get("tmp", V))
        D += tmp
        # F = P - Q on prefixes, E = max(0, F - suffix min), s = D + dE (as plan._transfer)
        np.subtract(ps, D, out=tmp)
        F = SCRATCH.get("F", V + 1)
        F[0] = 0.0
        np.cumsum(tmp, out=F[1:])
        S = SCRATCH.get("S", V + 1)
        np.minimum.accumulate(F[::-1], out=S[::-1])
        alpha = min(1.0, 1.0 + float(S[0]))
        np.subtract(F[:-1], S[1:], out=F[:-1])
        F[-1] = 0.0
        np.maximum(F, 0.0, out=F)
        dE = np.subtract(F[1:], F[:-1], out=tmp)
        s = np.add(D, dE, out=kept("s", V))
        np.clip(s, 0.0, ps, out=s)
        tau, kd, js, dslot, sslot = fifo(dE, live, F)
    nd, ns = len(dslot), len(sslot)
    x, y = dslot[kd], sslot[js]
    rx, qx, ry, qy = r[x], qn[x], r[y], qn[y]
    span2 = c0[y + 1] - c0[x]
    np.maximum(span2, qx + qy, out=span2)
    span1 = R0[y + 1] - R0[x]
    np.maximum(span1, rx + ry, out=span1)
    mass_d, mass_s = (r[dslot], qn[dslot]), (r[sslot], qn[sslot])
    f, w1, w2, Bd, Bs, info = design(
        tau, (span2, span1), (rx, qx), (ry, qy), kd, js, mass_d, mass_s, max_rounds
    )
    prob, Wd, Ws = _quantised(f, w1, w2, rx, qx, ry, qy, kd, js, nd, ns)
    # region widths: dyadic, at least the moved probability, at most 1
    Bd = np.minimum(1.0, np.maximum(_ceil_q(Bd), np.maximum(Wd[0], Wd[1])))
    Bs = np.minimum(1.0, np.maximum(_ceil_q(Bs), np.maximum(Ws[0], Ws[1])))
    kern = Seq2Kernel(dslot, sslot, Bd, Bs, Wd, Ws, kd, js, prob)
    T, law_err = kernel_law(D, qn, r, c0, R0, kern, out=kept("T", V))
    gap = np.subtract(s, T, out=SCRATCH.get("tmp", V))
    np.maximum(gap, 0.0, out=gap)
    short = float(gap.sum())
    plan = Plan("seq2", 2, p, q, order, None, None, s, None, None, float(s.sum()) - short,
                law_err)  # fmt: skip
    plan.T = T
    plan.seq2 = kern
    plan.info.update(info, shortfall=short, pairs=int(len(tau)), alpha=alpha)
    return plan


def seq2_or_swap_plan(
    p: np.ndarray, q: np.ndarray, n: int, order: np.ndarray, *, tol: float = TOL
) -> Any:
    r"""The ``seq2`` plan when its shortfall :math:`\sum (s - T)^+` is at most ``tol``, else the
    ``seq-swap`` plan (n >= 3: always ``seq-swap``).  The fallback plan's ``info["fallback"]``
    records the seq2 attempt (its shortfall, rounds and largest overfull ratio).

    Examples
    --------
    >>> p, q = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])
    >>> seq2_or_swap_plan(p, q, 2, np.arange(4)).construction
    'seq2'
    """
    from .swap import swap_plan

    if n != 2:
        return swap_plan(p, q, n, order, "seq-swap")
    plan = seq2_plan(p, q, n, order, max_rounds=MAX_ROUNDS)
    if plan.info["shortfall"] <= tol:
        return plan
    alt = swap_plan(p, q, n, plan.order, "seq-swap")
    alt.info["fallback"] = {
        "from": "seq2",
        "shortfall": plan.info["shortfall"],
        "rounds": plan.info["rounds"],
        "overfull": plan.info["overfull"],
    }
    return alt


# -- the same construction in plain Python numbers (Fractions stay exact; small V) ----------


def _cum0(x: list) -> list:
    out = [x[0] - x[0]]
    for v in x:
        out.append(out[-1] + v)
    return out


def _round_up(x: Any, bits: int = 40) -> Any:
    r"""x rounded up to a multiple of 2**-bits (Fractions; floats are returned as they are).

    Rounding the next region width up keeps the iteration's invariant :math:`W(B) \le B`
    (W(B') <= W(B) = x <= B' whenever x <= B' <= B) and the Fractions small."""
    if not isinstance(x, Fraction):
        return x
    return Fraction(-((-x.numerator << bits) // x.denominator), 1 << bits)


def seq2_lists(ps: list, qs: list, max_rounds: int | None = None) -> dict[str, Any]:
    r"""The ``seq2`` construction on lists in chain order (exact for Fractions; no rounding).

    Returns a dict with ``D``, ``s`` (the sub-law), ``pairs`` (``[(x, y, tau), ...]``), ``B``,
    ``rows1`` / ``rows2`` (kernel rows ``{level: prob}`` of each slot for first and second
    draws, levels as in :class:`Seq2Kernel`), ``qn`` and ``r`` (the masses, q normalised by
    :math:`\sum q`), ``fits`` and ``rounds`` (at most ``max_rounds``, default
    :data:`MAX_ROUNDS`).  The same steps as :func:`seq2_plan` without the rounding guards: the
    iteration stops only when every token fits, when B no longer moves or after
    ``max_rounds``.

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> out = seq2_lists([Fr(1, 10), Fr(2, 10), Fr(3, 10), Fr(4, 10)],
    ...                  [Fr(4, 10), Fr(3, 10), Fr(2, 10), Fr(1, 10)])
    >>> T = linear_law_list(out["qn"], out["rows1"], out["rows2"])
    >>> out["fits"], all(t >= s for t, s in zip(T, out["s"])), str(sum(out["s"]))  # α* = 701/840
    (True, True, '701/840')
    """
    from .relabel import fifo_pairs_list
    from .sublaw import optimal_sublaw_list

    max_rounds = MAX_ROUNDS if max_rounds is None else max_rounds
    zero = qs[0] - qs[0]
    one = zero + 1
    V = len(qs)
    total = sum(qs, zero)
    qn = [v / total for v in qs]
    r = [v / (one - v) for v in qn]
    cq, cr = _cum0(qn), _cum0(r)
    D = [r[k] * cq[k] + qn[k] * cr[k] for k in range(V)]
    _, s, _ = optimal_sublaw_list(_cum0(ps), _cum0(D))
    s = [max(zero, min(a, b)) for a, b in zip(s, ps, strict=True)]
    pairs = fifo_pairs_list(D, s, [v > 0 for v in qn])
    side = [0] * V
    for x, y, _ in pairs:
        side[x], side[y] = -1, 1
    B = [one if side[k] else zero for k in range(V)]
    info = {"fits": True, "rounds": 0}
    ms: list = []
    last = max(1, max_rounds) - 1
    for rnd in range(last + 1):
        ms, Wt = [], [[zero] * V, [zero] * V]
        for x, y, tau in pairs:
            w1, w2 = min(r[x], r[y]), min(qn[x], qn[y])
            a = cq[y + 1] - cq[x] - (qn[x] * B[x] + qn[y] * B[y]) / 2
            b = cr[y + 1] - cr[x] - (r[x] * B[x] + r[y] * B[y]) / 2
            f = tau / (w1 * a + w2 * b)
            ms.append((f * w1, f * w2))
            for k in (x, y):
                Wt[0][k] += f * w1 / r[k]
                Wt[1][k] += f * w2 / qn[k]
        M = [max(Wt[0][k], Wt[1][k]) for k in range(V)]
        info["rounds"] = rnd + 1
        if all(v <= one for v in M):
            break
        nB = [min(B[k], _round_up(M[k])) if side[k] else zero for k in range(V)]
        if rnd == last or nB == B:
            info["fits"] = False
            sc = [min(one, one / M[k]) if M[k] > 0 else one for k in range(V)]
            ms = [
                (m1 * min(sc[x], sc[y]), m2 * min(sc[x], sc[y]))
                for (m1, m2), (x, y, _) in zip(ms, pairs, strict=True)
            ]
            break
        B = nB
    rows1: list[dict[int, Any]] = [{} for _ in range(V)]
    rows2: list[dict[int, Any]] = [{} for _ in range(V)]
    region = [2 * k + 1 if side[k] == 1 else 2 * k for k in range(V)]
    rest = [2 * k + 1 if side[k] == -1 else 2 * k for k in range(V)]
    for (m1, m2), (x, y, _) in zip(ms, pairs, strict=True):
        for rows, m, mass in ((rows1, m1, r), (rows2, m2, qn)):
            rows[x][region[y]] = rows[x].get(region[y], zero) + m / mass[x]
            rows[y][region[x]] = rows[y].get(region[x], zero) + m / mass[y]
    for rows in (rows1, rows2):
        for k in range(V):
            moved = sum(rows[k].values(), zero)
            rows[k][rest[k]] = rows[k].get(rest[k], zero) + one - B[k]
            rows[k][region[k]] = rows[k].get(region[k], zero) + B[k] - moved
            rows[k] = {lev: pr for lev, pr in rows[k].items() if pr != 0}
    return {"qn": qn, "r": r, "D": D, "s": s, "pairs": pairs, "B": B, "rows1": rows1,
            "rows2": rows2, **info}  # fmt: skip


def linear_law_list(qn: list, rows1: list, rows2: list) -> list:
    r"""The two-kernel linear law :math:`T^{seq}` of kernel rows on levels (lists, exact).

    :math:`T_i = r_i \sum_l A_{1,il} (\varphi_2(l) - q_i/2) + q_i \sum_l A_{2,il}
    (\varphi_1(l) - r_i/2)`, with :math:`\nu_1 = r A_1`, :math:`\nu_2 = q A_2` the level masses
    (q normalised) and :math:`\varphi_t(l) = \nu_t(< l) + \nu_t(l)/2` (Lemma 12 of the note;
    any kernels, the level masses need not be kept).

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> q = [Fr(1, 2), Fr(1, 3), Fr(1, 6)]
    >>> ident = [{0: Fr(1)}, {2: Fr(1)}, {4: Fr(1)}]  # select the draft in the higher slot
    >>> [str(t) for t in linear_law_list(q, ident, ident)]
    ['0', '7/12', '5/12']
    >>> linear_law_list(q, ident, ident) == enumerate_law_list(q, ident, ident)
    True
    """
    zero = qn[0] - qn[0]
    r = [v / (1 - v) for v in qn]
    levels = sorted({lev for rows in (rows1, rows2) for row in rows for lev in row})
    nu1 = {lev: zero for lev in levels}
    nu2 = dict(nu1)
    for k in range(len(qn)):
        for lev, a in rows1[k].items():
            nu1[lev] += r[k] * a
        for lev, a in rows2[k].items():
            nu2[lev] += qn[k] * a
    phi1, phi2, c1, c2 = {}, {}, zero, zero
    for lev in levels:
        phi1[lev], phi2[lev] = c1 + nu1[lev] / 2, c2 + nu2[lev] / 2
        c1, c2 = c1 + nu1[lev], c2 + nu2[lev]
    return [
        sum((r[k] * a * (phi2[lev] - qn[k] / 2) for lev, a in rows1[k].items()), zero)
        + sum((qn[k] * a * (phi1[lev] - r[k] / 2) for lev, a in rows2[k].items()), zero)
        for k in range(len(qn))
    ]


def select_pair(row1: dict, row2: dict, a: int, b: int) -> dict[int, Any]:
    """The selection law of the rule for the ordered drafts (a, b): a relabelled by ``row1``,
    b by ``row2``, the higher level wins, a tie is a fair coin.

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> out = select_pair({0: Fr(1, 2), 3: Fr(1, 2)}, {3: Fr(1)}, 5, 7)
    >>> str(out[5]), str(out[7])  # level 3 ties half the time
    ('1/4', '3/4')
    """
    out: dict[int, Any] = {}
    for l1, p1 in row1.items():
        for l2, p2 in row2.items():
            w = p1 * p2
            if l1 > l2:
                out[a] = out.get(a, 0) + w
            elif l2 > l1:
                out[b] = out.get(b, 0) + w
            else:
                out[a] = out.get(a, 0) + w / 2
                out[b] = out.get(b, 0) + w / 2
    return out


def enumerate_law_list(qn: list, rows1: list, rows2: list) -> list:
    r"""The sequential selection law by enumeration of the ordered pairs (a, b), a != b, of
    weight :math:`q_a q_b / (1 - q_a)` and of the kernel rows' entries (lists, exact).

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> q = [Fr(1, 2), Fr(1, 2)]
    >>> first_wins = [{0: Fr(1)}, {0: Fr(1)}], [{-1: Fr(1)}, {-1: Fr(1)}]
    >>> [str(t) for t in enumerate_law_list(q, *first_wins)]  # the first draft: 1/2 each
    ['1/2', '1/2']
    """
    zero = qn[0] - qn[0]
    T = [zero] * len(qn)
    for a, qa in enumerate(qn):
        for b, qb in enumerate(qn):
            if a == b or qa == 0 or qb == 0:
                continue
            w = qa * qb / (1 - qa)
            for tok, pr in select_pair(rows1[a], rows2[b], a, b).items():
                T[tok] += w * pr
    return T
