r"""Build the chain verifier for one position: sort once, sub-law, pairs, kernel, thinning.

A :class:`Plan` is everything :func:`mdsd_ot.verifiers.chain.sample.sample_plan` needs, indexed
by the original token ids: the slot (rank) of each token, the relabelling kernel, the probability
of accepting a selected token and the residual law.  Four constructions
(proofs/optimal_verifier.md):

``relabel`` (i.i.d. drafts, any n)
    The relabelling kernel of the optimal sub-law s in p/q order; selection law T >= s with
    equality off H*, accept w.p. s/T.  Acceptance α* (exact up to rounding).
``cp2`` (conditional Poisson, n = 2)
    The same rule read on distinct pairs: :math:`T^{CP} = (T^{iid} - q^2) / (1 - \sum q^2)` for
    every symmetric rule, so the kernel is built for the i.i.d. target
    :math:`(1 - \sum q^2)\, s^{CP} + q^2` (sorted by its ratio to q when p/q order does not fit).
    Acceptance α* of the conditional-Poisson law.
``stream`` (sequential without replacement, any n)
    The drafts are the first n distinct values of an i.i.d. stream; given them, the stream's first
    n values are resampled exactly (a repeat of a seen value v w.p. q(v), else the next draft),
    which gives an i.i.d. tuple of drafted tokens; then ``relabel``.  Exactly lossless, acceptance
    :math:`\alpha^*_{with} = \alpha^*_{without} - \varepsilon` (T8), ε reported.
``top`` (any law with prefix Q; conditional Poisson with n >= 3, and n = 1)
    Select the draft of largest p/q (law :math:`D_k = Q(H_k) - Q(H_{k-1})`), accept w.p.
    :math:`\min(1, p/D)`.  Acceptance :math:`\sum \min(p, D)`, ε reported (0 for n = 1).

Examples
--------
>>> import numpy as np
>>> plan = build_plan(np.array([0.6, 0.4]), np.array([0.5, 0.5]), 2, "relabel")
>>> round(plan.acceptance, 12), plan.order.tolist()
(1.0, [1, 0])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...fast.prefix import prefix_Q_conditional_poisson, sort_key
from .relabel import rates_from_cum, slot_rates
from .rows import Pairing

__all__ = ["CONSTRUCTIONS", "Plan", "build_plan", "build_plans", "chain_order"]

#: The constructions, in the order of the module docstring.
CONSTRUCTIONS: tuple[str, ...] = ("relabel", "cp2", "stream", "top")

EPS = float(np.finfo(np.float64).eps)


@dataclass
class Plan:
    r"""One position's verifier.  Arrays are indexed by *slot* (the place of a token in the
    construction's chain order) unless said otherwise; kernel rows are computed on demand
    (:mod:`.rows`).

    Attributes
    ----------
    construction : str
        One of :data:`CONSTRUCTIONS`.
    n : int
        Number of drafts.
    q : ndarray
        The draft model's q by token id (the stream construction resamples with it).
    order : (V,) int64 ndarray
        Token of each slot.
    ps, qs : (V,) ndarrays
        p and q by slot.
    d : (V,) ndarray or None
        Slot rates of the i.i.d. kernel (``None`` for ``top``).
    D : (V,) ndarray or None
        The selection law of ``top`` (``None`` otherwise).
    s : (V,) ndarray
        The accepted sub-law by slot, clipped to [0, p].
    pairs : Pairing or None
        Supply and demand intervals of the first-in first-out pairing.
    two_e2 : float or None
        :math:`1 - \sum q^2` for ``cp2`` (the i.i.d. law of the kernel maps to the
        conditional-Poisson law by :math:`T \mapsto (T - q^2)/(1 - \sum q^2)`).
    acceptance : float
        :math:`\sum s`, the acceptance rate up to ``law_error`` (for ``stream`` and ``top`` a
        lower bound: a residual draw may also hit an unselected draft).
    law_error : float
        Bound on the total-variation distance of the output law from p caused by rounding.
    """

    construction: str
    n: int
    q: np.ndarray
    order: np.ndarray
    ps: np.ndarray
    qs: np.ndarray
    d: np.ndarray | None
    D: np.ndarray | None
    s: np.ndarray
    pairs: Pairing | None
    two_e2: float | None
    acceptance: float
    law_error: float
    info: dict[str, Any] = field(default_factory=dict)
    _rank: np.ndarray | None = None
    _residual: np.ndarray | None = None

    @property
    def rank(self) -> np.ndarray:
        """Slot of each token id (the inverse of ``order``; computed once)."""
        if self._rank is None:
            self._rank = np.empty(len(self.order), dtype=np.int64)
            self._rank[self.order] = np.arange(len(self.order))
        return self._rank

    @property
    def residual(self) -> np.ndarray:
        """Cumulative residual law :math:`(p - s)^+` by slot (p itself when that is 0)."""
        if self._residual is None:
            r = np.cumsum(np.maximum(self.ps - self.s, 0.0))
            self._residual = r if r[-1] > 0 else np.cumsum(self.ps)
        return self._residual


def chain_order(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Tokens sorted by p/q ascending (q = 0 last), one argsort along the last axis."""
    return np.argsort(sort_key(p, q), axis=-1)


def _iid_err(n: int, V: int) -> float:
    return 2.0 * (n * n + 6 * n + 8) * (V + 1) * EPS


def _transfer(F: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, dE) from F = P - Q on prefixes k = 0..V and D: E_j = max(0, F_j - min_{i>j} F_i)."""
    S = np.minimum.accumulate(F[::-1])[::-1]
    E = F[:-1] - S[1:]
    np.maximum(E, 0.0, out=E)
    dE = np.empty_like(D)
    dE[:-1] = E[1:] - E[:-1]
    dE[-1] = -E[-1]
    return D + dE, dE


def _F(ps: np.ndarray, Q: np.ndarray) -> np.ndarray:
    F = np.empty(len(ps) + 1)
    F[0] = 0.0
    np.cumsum(ps, out=F[1:])
    F[1:] -= Q
    return F


def _clip(s: np.ndarray, ps: np.ndarray) -> np.ndarray:
    np.minimum(s, ps, out=s)
    return np.maximum(s, 0.0, out=s)


def _relabel(p, q, n, order, construction="relabel") -> Plan:
    ps, qs = p[order], q[order]
    c = np.cumsum(qs)
    Q = c**n
    d = rates_from_cum(c, c - qs, n)
    D = qs * d
    s, dE = _transfer(_F(ps, Q), D)
    live = int(np.count_nonzero(q))  # q = 0 tokens sort last: no supply or demand there
    sup = np.maximum(-dE, 0.0)
    dem = np.maximum(dE, 0.0, out=dE)
    sup[live:] = 0.0
    dem[live:] = 0.0
    s = _clip(s, ps)
    return Plan(
        construction, n, q, order, ps, qs, d, None, s, Pairing(sup, dem), None,
        float(s.sum()), _iid_err(n, len(p)),
    )  # fmt: skip


def _fits(pr: Pairing, d: np.ndarray, rho: np.ndarray) -> bool:
    r"""The sufficient mass condition of the proof note on every pair (x, y) with a positive
    overlap: :math:`d_y \ge \rho_x` and :math:`d_x \le \rho_y` (d is increasing, so it is
    enough to check the lowest partner of each demand slot and the highest of each supply slot)."""
    V, ns, nd = pr.V, len(pr.js), len(pr.jd)
    if ns == 0 or nd == 0:
        return True
    first = np.searchsorted(pr.Ls, pr.Ld0, side="right")
    last = np.minimum(np.searchsorted(pr.Ls, pr.Ld, side="left"), ns - 1)
    has = first < ns
    x = V - 1 - pr.jd[has]
    ok_x = d[V - 1 - pr.js[last[has]]] >= rho[x]
    top = np.searchsorted(pr.Ld, pr.Ls0, side="right")
    has = top < nd
    has[has] &= pr.Ld0[top[has]] < pr.Ls[has]
    y = V - 1 - pr.js[has]
    ok_y = d[V - 1 - pr.jd[top[has]]] <= rho[y]
    return bool(ok_x.all() and ok_y.all())


def _cp2(p, q, n, order) -> Plan:
    """Conditional Poisson, n = 2, through the i.i.d. kernel (no cancellation: see the note)."""
    ps, qs = p[order], q[order]
    c = np.cumsum(qs)
    cm = c - qs
    w = qs * cm  # e_2 increments, >= 0
    e2 = float(w.sum())
    DC = w / e2
    s, dE = _transfer(_F(ps, np.cumsum(DC)), DC)
    s = _clip(s, ps)
    two_e2 = 2.0 * e2
    live = int(np.count_nonzero(q))
    resorted = False
    sup, dem = two_e2 * np.maximum(-dE, 0.0), two_e2 * np.maximum(dE, 0.0)
    sup[live:] = dem[live:] = 0.0
    d = 2.0 * cm + qs
    pr = Pairing(sup, dem)
    rho = np.full(len(qs), np.inf)
    rho[:live] = two_e2 * s[:live] / qs[:live] + qs[:live]
    if not _fits(pr, d, rho):  # sort by the i.i.d. target's ratio t/q (nearly sorted already)
        o2 = np.argsort(rho, kind="stable")
        order, ps, qs, s = order[o2], ps[o2], qs[o2], s[o2]
        cm = np.cumsum(qs) - qs
        d = 2.0 * cm + qs
        gap = s - 2.0 * qs * cm / two_e2  # s - D_CP in the new order (times 2 e_2 below)
        sup, dem = two_e2 * np.maximum(-gap, 0.0), two_e2 * np.maximum(gap, 0.0)
        sup[live:] = dem[live:] = 0.0
        pr = Pairing(sup, dem)
        resorted = True
    err = _iid_err(2, len(p)) / two_e2
    plan = Plan("cp2", 2, q, order, ps, qs, d, None, s, pr, two_e2, float(s.sum()), err)
    plan.info.update(resorted=resorted, dm=2.0 * cm)
    return plan


def _top(p, q, n, order, distinct: bool) -> Plan:
    ps, qs = p[order], q[order]
    if n == 1:
        D = qs.copy()
    elif distinct:
        QC = prefix_Q_conditional_poisson(qs[None, :].copy(), n)[0]
        D = np.clip(np.diff(QC, prepend=0.0), 0, None)
    else:  # pragma: no cover - the i.i.d. law always uses ``relabel``
        D = qs * slot_rates(qs, n)
    s = np.minimum(ps, D)
    err = 2.0 * (2 * n + 8) * (len(p) + 1) * EPS
    return Plan("top", n, q, order, ps, qs, None, D, s, None, None, float(s.sum()), err)


def build_plan(
    p: np.ndarray, q: np.ndarray, n: int, construction: str, order: np.ndarray | None = None
) -> Plan:
    """The plan of one position (validated float64 p and q); ``order`` reuses a p/q sort.

    Examples
    --------
    >>> plan = build_plan(np.array([0.5, 0.5]), np.array([0.75, 0.25]), 2, "cp2")
    >>> round(plan.acceptance, 12)  # α* of two distinct drafts = 1 (they cover both tokens)
    1.0
    """
    if order is None:
        order = chain_order(p, q)
    if construction == "top" or n == 1:
        return _top(p, q, n, order, distinct=construction == "top")
    if construction == "cp2":
        return _cp2(p, q, n, order)
    if construction in ("relabel", "stream"):
        return _relabel(p, q, n, order, construction)
    raise ValueError(
        f"construction: expected one of {', '.join(CONSTRUCTIONS)}, got {construction!r}"
    )


def build_plans(P: np.ndarray, Q: np.ndarray, n: int, construction: str) -> list[Plan]:
    """Plans for a (B, V) batch of positions: one batched argsort, then one pass per row."""
    orders = chain_order(P, Q)
    return [build_plan(P[b], Q[b], n, construction, orders[b]) for b in range(P.shape[0])]
