r"""Kernel rows on demand: the relabelling kernel of only the slots that were drafted.

The first-in first-out pairing of :func:`mdsd_ot.verifiers.chain.relabel.fifo_pairs` is an
overlap of two interval partitions of the line (supply and demand units counted from the top of
the chain).  A slot's partners are therefore found by two binary searches in the cumulative
supply and demand arrays, and its kernel row :math:`A_{i\cdot}` and its selection probability
:math:`T_i = q_i \sum_j A_{ij} d_j` follow from its own pairs alone.  A position then costs the
sort and O(1) passes over V (prefix sums, suffix minimum, two cumulative sums), and a draft tuple
O(n log V): no kernel of size V is ever built.  The pair masses depend only on the pair
:math:`(x, y, \tau)`, so both ends of a pair compute the same mass.

Examples
--------
>>> import numpy as np
>>> from .plan import build_plan
>>> plan = build_plan(np.array([0.6, 0.4]), np.array([0.5, 0.5]), 2, "relabel")
>>> q_, dest, prob = kernel_rows(plan, np.array([0, 1]))
>>> q_.tolist(), dest.tolist(), prob.round(6).tolist()  # slot 0 (token 1) moves up w.p. 0.3
([0, 1], [1, 0], [0.3, 0.3])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arena import kept
from .relabel import QUANT

__all__ = ["Pairing", "pairing", "kernel_rows", "selection_law_at", "slot_mass_imbalance"]


class Pairing:
    """Compressed supply and demand intervals (top-down) and the slot -> interval maps."""

    def __init__(self, sup: np.ndarray, dem: np.ndarray):
        V = len(sup)
        rs, rd = sup[::-1], dem[::-1]
        self.V = V
        self.js = np.flatnonzero(rs > 0)
        self.jd = np.flatnonzero(rd > 0)
        es, ed = rs[self.js], rd[self.jd]
        self.Ls = np.cumsum(es)
        self.Ls0 = self.Ls - es
        self.Ld = np.cumsum(ed)
        self.Ld0 = self.Ld - ed

    @classmethod
    def from_increments(cls, dE: np.ndarray, live: int, scale: float = 1.0) -> Pairing:
        """Supply :math:`(-dE)^+` and demand :math:`dE^+` on the first ``live`` slots, times
        ``scale``, without building the two V-size arrays."""
        self = cls.__new__(cls)
        V = len(dE)
        r = dE[live - 1 :: -1] if live > 0 else dE[:0]
        self.V = V
        off = V - live  # top-down index of r[0]
        js = np.flatnonzero(r < 0)
        jd = np.flatnonzero(r > 0)
        es, ed = -scale * r[js], scale * r[jd]
        self.js, self.jd = js + off, jd + off
        self.Ls = np.cumsum(es)
        self.Ls0 = self.Ls - es
        self.Ld = np.cumsum(ed)
        self.Ld0 = self.Ld - ed
        return self

    @classmethod
    def full(cls, dE: np.ndarray, live: int, scale: float = 1.0) -> Pairing:
        """The same intervals as :meth:`from_increments`, kept at full length (one interval per
        live slot, most of them empty): two cumulative sums and no compaction, which is what a
        plan needs before its first draw.  ``js`` and ``jd`` are ``None``; interval starts are
        the previous ends."""
        self = cls.__new__(cls)
        V = len(dE)
        r = dE[live - 1 :: -1] if live > 0 else dE[:0]
        self.V, self.off = V, V - live
        self.Ls = np.minimum(r, 0.0, out=kept("Ls", len(r)))  # accumulated in place
        np.cumsum(self.Ls, out=self.Ls)
        self.Ls *= -scale
        self.Ld = np.maximum(r, 0.0, out=kept("Ld", len(r)))
        np.cumsum(self.Ld, out=self.Ld)
        if scale != 1.0:
            self.Ld *= scale
        self.js = self.jd = None
        return self

    @classmethod
    def full_from(cls, V: int, live: int, Ls: np.ndarray, Ld: np.ndarray) -> Pairing:
        """:meth:`full` from its two cumulative arrays, computed elsewhere (the compiled top-down
        pass of :mod:`._passes`)."""
        self = cls.__new__(cls)
        self.V, self.off = V, V - live
        self.Ls, self.Ld = Ls, Ld
        self.js = self.jd = None
        return self

    @classmethod
    def compact(
        cls,
        V: int,
        live: int,
        lists: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    ) -> Pairing:
        """:meth:`from_increments` from its arrays, computed elsewhere: top-down indices among
        the live slots, ends and starts of the supply and of the demand intervals."""
        self = cls.__new__(cls)
        js, Ls, Ls0, jd, Ld, Ld0 = lists
        self.V = V
        off = V - live
        self.js, self.jd = (js + off, jd + off) if off else (js, jd)
        self.Ls, self.Ls0, self.Ld, self.Ld0 = Ls, Ls0, Ld, Ld0
        return self

    def starts(self, supply: bool, idx: np.ndarray) -> np.ndarray:
        """Start of the given supply (or demand) intervals."""
        if self.js is not None:
            return (self.Ls0 if supply else self.Ld0)[idx]
        L = self.Ls if supply else self.Ld
        return np.where(idx > 0, L[np.maximum(idx - 1, 0)], 0.0)

    def partner_slot(self, supply: bool, idx: np.ndarray) -> np.ndarray:
        """Slots of the given supply (or demand) intervals."""
        if self.js is None:
            return self.V - 1 - (idx + self.off)
        return self.V - 1 - (self.js if supply else self.jd)[idx]

    def index(self, slots: np.ndarray, supply: bool) -> np.ndarray:
        """Position of each slot among the supply (or demand) intervals, -1 if it has none."""
        if self.js is None:
            L = self.Ls if supply else self.Ld
            r = self.V - 1 - slots - self.off
            ok = (r >= 0) & (r < len(L))
            rc = np.where(ok, r, 0)
            ok &= L[rc] > self.starts(supply, rc)
            return np.where(ok, rc, -1)
        j = self.js if supply else self.jd
        r = self.V - 1 - slots
        k = np.searchsorted(j, r)
        hit = (k < len(j)) & (j[np.minimum(k, max(len(j) - 1, 0))] == r) if len(j) else k < 0
        return np.where(hit, k, -1)


def pairing(sup: np.ndarray, dem: np.ndarray) -> Pairing:
    """The :class:`Pairing` of supply ``sup`` and demand ``dem`` (chain order, >= 0)."""
    return Pairing(sup, dem)


def _side(pr: Pairing, slots: np.ndarray, supply: bool) -> tuple[np.ndarray, ...]:
    """Pairs of the queried slots that are demand (supply=False) or supply (supply=True)."""
    own = pr.index(slots, supply)
    qi = np.flatnonzero(own >= 0)
    a = own[qi]
    if supply:  # partners: demand intervals overlapping the supply interval
        A0, A1, B1 = pr.starts(True, a), pr.Ls[a], pr.Ld
    else:
        A0, A1, B1 = pr.starts(False, a), pr.Ld[a], pr.Ls
    nb = len(B1)
    if nb == 0 or qi.size == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0)
    lo = np.searchsorted(B1, A0, side="right")
    hi = np.minimum(np.searchsorted(B1, A1, side="left"), nb - 1)
    cnt = np.where(lo < nb, hi - lo + 1, 0).clip(0)
    g = np.repeat(np.arange(len(qi)), cnt)
    j = lo[g] + np.arange(len(g)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    tau = np.minimum(A1[g], B1[j]) - np.maximum(A0[g], pr.starts(not supply, j))
    partner = pr.partner_slot(not supply, j)
    me = slots[qi[g]]
    keep = (tau > 0) & ((partner < me) if supply else (partner > me))
    return qi[g][keep], partner[keep], tau[keep]


def kernel_rows(plan: Any, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Kernel entries of the queried slots: (query index, destination slot, probability).

    Entries are grouped by query index (ascending).  Probabilities are multiples of 1/QUANT with
    sum at most 1 per query; the rest is the probability of keeping the own slot.
    """
    slots = np.asarray(slots, dtype=np.int64).ravel()
    parts = [_side(plan.pairs, slots, False), _side(plan.pairs, slots, True)]
    qi = np.concatenate([parts[0][0], parts[1][0]])
    if qi.size == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0)
    dest = np.concatenate([parts[0][1], parts[1][1]])
    tau = np.concatenate([parts[0][2], parts[1][2]])
    me = slots[qi]
    lo, hi = np.minimum(me, dest), np.maximum(me, dest)
    m = tau / (plan.rate(hi) - plan.rate(lo))
    np.minimum(m, np.minimum(plan.q_at(lo), plan.q_at(hi)), out=m)
    prob = np.floor(m / plan.q_at(me) * QUANT) / QUANT
    o = np.argsort(qi, kind="stable")
    qi, dest, prob = qi[o], dest[o], prob[o]
    tot = np.bincount(qi, prob, len(slots))
    over = tot > 1.0  # rounding only: scale that row down below 1
    if over.any():
        f = np.where(over, 1.0 / np.where(over, tot, 1.0), 1.0)[qi]
        prob = np.floor(prob * f * (1 - 2**-40) * QUANT) / QUANT
    return qi, dest, prob


def selection_law_at(plan: Any, slots: np.ndarray) -> np.ndarray:
    r"""The selection law T at the queried slots (the law the thinning divides by).

    i.i.d. land: :math:`T_i = q_i\,[(1 - \sum_e a_e)\, d_i + \sum_e a_e d_{dest_e}]`; for
    ``cp2`` :math:`(T_i - q_i^2) / (1 - \sum q^2)`; for ``top`` the deterministic law D.
    """
    slots = np.asarray(slots, dtype=np.int64).ravel()
    if plan.T is not None:
        return plan.T[slots]
    if plan.D is not None:
        return plan.D[slots]
    qi, dest, prob = kernel_rows(plan, slots)
    k = len(slots)
    qk = plan.q_at(slots)
    stay = 1.0 - np.bincount(qi, prob, k)
    if plan.two_e2 is None:
        return qk * (stay * plan.rate(slots) + np.bincount(qi, prob * plan.rate(dest), k))
    # conditional Poisson: (T_iid - q^2) / (2 e_2) with d_j - q_i = dm_j + q_j - q_i, dm = 2 c_m
    move = prob * (plan.rate_minus_q(dest) + plan.q_at(dest) - qk[qi])
    return qk * (stay * plan.rate_minus_q(slots) + np.bincount(qi, move, k)) / plan.two_e2


def _with_pairs(plan: Any, pairs: Pairing) -> Any:
    import copy

    out = copy.copy(plan)
    out.pairs = pairs
    return out


def slot_mass_imbalance(plan: Any) -> float:
    r""":math:`\sum_j |\nu_j - q_j|` for the whole kernel (:math:`\nu = qA`; 0 in exact arithmetic).

    Rounding of the pair masses and the per-row guard of :func:`kernel_rows` move a little slot
    mass; the law computed with the slot rates of q is then off by at most
    :math:`2 n (n-1) \sum_j |\nu_j - q_j|` in total variation (proofs/optimal_verifier.md, §6).
    """
    if plan.pairs is None or plan.T is not None:  # no swap kernel, or T is the kernel's own law
        return 0.0
    qs = plan.qs
    qi, dest, prob = _all_rows(plan)
    moved = qs[qi] * prob
    V = len(qs)
    return float(np.abs(np.bincount(dest, moved, V) - np.bincount(qi, moved, V)).sum())


def _all_rows(plan: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`kernel_rows` of every slot."""
    if plan.pairs.js is None:  # every slot's rows: the compacted intervals enumerate less
        live = len(plan.order) if plan.qs[-1] > 0 else int(np.count_nonzero(plan.q))
        plan = _with_pairs(plan, Pairing.from_increments(plan.dE, live))
    return kernel_rows(plan, np.arange(len(plan.order)))


def below(c: np.ndarray) -> np.ndarray:
    """:math:`c_{k-1}` by slot from the prefix sums c: moved up one slot, 0 first (exact,
    unlike ``c - q``, which keeps no digit when one token holds almost all of q)."""
    out = np.empty_like(c)
    out[0] = 0.0
    out[1:] = c[:-1]
    return out


def cp2_kernel_law(plan: Any) -> tuple[np.ndarray, float]:
    r"""The ``cp2`` selection law of the rounded kernel itself, by slot, and a bound on its error.

    Lemma 4 holds for the kernel as rounded, with the slot masses :math:`\nu = qA` it really
    has: :math:`T_k = q_k [A_{kk} (2 C_{k-1} + \delta_k) + \sum_{j \ne k} A_{kj} (2 C_{j-1}
    + q_j + \delta_j - q_k)] / (2 e_2)` with :math:`\delta = \nu - q` (the net inflow, a sum
    of the moved masses :math:`q_i A_{ij}`, never :math:`\nu - q` by subtraction) and
    :math:`C = \text{cumsum}(q + \delta)`.  No term cancels when one token holds almost all of
    q, where the law from the slot rates of q is off by :math:`O(\varepsilon / 2e_2)`
    (proofs/optimal_verifier.md, §6).  The bound repeats the formula on absolute values
    (:math:`|\delta|` by the sum of the moved masses in and out) times
    :math:`\gamma = (2V + 16)\,\varepsilon`, plus γ Σ|T| for :math:`2e_2`'s own rounding.
    """
    qs = plan.qs
    V = len(qs)
    qi, dest, prob = _all_rows(plan)
    moved = qs[qi] * prob
    inflow, outflow = np.bincount(dest, moved, V), np.bincount(qi, moved, V)
    delta, absd = inflow - outflow, inflow + outflow
    Cb, Cab = below(np.cumsum(qs + delta)), below(np.cumsum(qs + absd))
    stay = 1.0 - np.bincount(qi, prob, V)  # exact: multiples of 1/QUANT
    move = prob * (2.0 * Cb[dest] + qs[dest] + delta[dest] - qs[qi])
    move_abs = prob * (2.0 * Cab[dest] + qs[dest] + absd[dest] + qs[qi])
    w = qs / plan.two_e2  # first: q_k C_{k-1} alone may underflow when q is tiny off one token
    T = w * (stay * (2.0 * Cb + delta) + np.bincount(qi, move, V))
    T_abs = w * (stay * (2.0 * Cab + absd) + np.bincount(qi, move_abs, V))
    gamma = (2 * V + 16) * float(np.finfo(np.float64).eps)
    return T, gamma * float(T_abs.sum() + np.abs(T).sum())
