r"""The plans of the batched verifier, ``relabel`` and ``cp2`` (proofs/optimal_verifier.md, §10).

:func:`relabel_rows` (i.i.d. drafts, any n) and :func:`cp2_rows` (conditional Poisson, n = 2)
build the plans of all rows at once, with whole-array operations through the fast solver's
backend layer (:mod:`mdsd_ot.fast._backend`): one stable sort per row by p/q, prefix sums, the
slot rates d, the optimal sub-law s (``_sublaw``, the operations of :mod:`.plan` on (B, V)
rows) and the top-down cumulative supply and demand of the first-in first-out pairing, held in
a :class:`RowPlans`.  :func:`law_error_bound` is the a-priori bound on the total variation of
each row's output law from p.  :mod:`.batched_draws` samples from the plans and
:mod:`.batched` validates the rows and verifies the draft tuples.

Examples
--------
>>> import numpy as np
>>> plans = relabel_rows(np.array([[0.6, 0.4]]), np.array([[0.5, 0.5]]), 2)
>>> plans.construction, plans.shape, round(float(plans.alpha[0]), 12)
('relabel', (1, 2), 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...fast import _backend as bk
from ...fast.order import ratio_order

__all__ = ["RowPlans", "relabel_rows", "cp2_rows", "law_error_bound"]

U = 2.0**-53  #: unit roundoff of float64


@dataclass
class RowPlans:
    r"""The ``relabel`` verifier of B positions, by slot (chain order of each row).

    Attributes
    ----------
    n : int
        Number of i.i.d. drafts.
    order, rank : (B, V) int64
        Token of each slot, and slot of each token.
    ps, qs : (B, V)
        p and q by slot (float64).
    d : (B, V)
        Slot rates :math:`d_k`; ``D = qs * d`` is the law of the deterministic rule.
    s : (B, V)
        The optimal accepted sub-law, clipped to [0, p].
    cum : (B, 2, V)
        Ends of the supply (row 0) and demand (row 1) intervals, counted from the top of the
        chain: entry ``r`` belongs to slot ``V - 1 - r`` (slots of q = 0 hold empty intervals).
    alpha : (B,)
        :math:`\sum s = \alpha^*` of each row (up to rounding).
    law_error : (B,) array
        A-priori bound on the total-variation distance of each row's output law from p
        (:func:`law_error_bound`; divided by :math:`2e_2` for ``cp2``).
    c : (B, V)
        The cumulative q through each slot (``cp2``: its law at a slot uses
        :math:`c_{k-1} = c_k - q_k`).
    two_e2 : (B,) array or None
        ``cp2`` only: :math:`2 e_2 = 1 - \sum q^2`; the i.i.d. law T of the kernel then maps
        to the conditional-Poisson law :math:`(T - q^2)/(2 e_2)` (Lemma 4).
    """

    n: int
    order: Any
    rank: Any
    ps: Any
    qs: Any
    d: Any
    s: Any
    cum: Any
    alpha: Any
    law_error: Any
    two_e2: Any = None
    c: Any = None

    @property
    def construction(self) -> str:
        """``"relabel"`` or ``"cp2"``."""
        return "relabel" if self.two_e2 is None else "cp2"

    @property
    def shape(self) -> tuple[int, int]:
        """(B, V)."""
        return tuple(self.qs.shape)


def law_error_bound(n: int, V: int) -> float:
    r"""A-priori bound on the total variation between the output law and p, per row.

    .. math:: \beta = 2(n^2 + 6n + 8)(V + 1)\,\varepsilon
              + (2n(n-1) + n)\, 2u\,(5V + 3) + 4(V + 1)u + 6u,

    :math:`\varepsilon = 2u = 2^{-52}`: the prefix sums and slot rates (the bound of the
    one-position plan, proofs/optimal_verifier.md §6), the rounding of the kernel entries read
    through the shares θ (at most :math:`u(5 k_x + 3) q_x` per slot with :math:`k_x` partners,
    :math:`\sum_x q_x k_x \le V`; as slot-mass imbalance it weighs :math:`2n(n-1)`, in the law
    at the selected slot n), the residual draw's cumulative sum (one rounding per increment)
    and the uniforms of the acceptance and the tie-break (§10).

    Examples
    --------
    >>> f"{law_error_bound(2, 152_064):.1e}"
    '2.7e-09'
    """
    eps = 2.0 * U
    return (
        2.0 * (n * n + 6 * n + 8) * (V + 1) * eps
        + (2.0 * n * (n - 1) + n) * 2.0 * U * (5.0 * V + 3.0)
        + 4.0 * (V + 1) * U
        + 6.0 * U
    )


def _rates(c: Any, cm: Any, n: int) -> Any:
    r""":math:`\sum_{l<n} c^l c_m^{n-1-l}` by Horner (the operations of :func:`.relabel.rates_from_cum`)."""
    if n == 1:
        return c * 0.0 + 1.0
    d = cm + c
    cp = c
    for _ in range(3, n + 1):
        cp = cp * c
        d = d * cm + cp
    return d


def _dev(x: Any) -> Any:
    return None if bk.is_numpy_array(x) else x.device


def _host(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _flip(x: Any) -> Any:
    return x[..., ::-1].copy() if bk.is_numpy_array(x) else x.flip(-1)


def _order(P: Any, Q: Any) -> Any:
    """Chain order of each row: p/q ascending, q = 0 last, ties by token id (stable)."""
    xp = bk.namespace(P)
    with np.errstate(divide="ignore", invalid="ignore"):
        key = P / Q
    key = xp.where(Q > 0, key, xp.full_like(key, math.inf))
    return ratio_order(key)  # numpy: one packed integer sort per row; torch: a stable sort


def relabel_rows(P: Any, Q: Any, n: int) -> RowPlans:
    r"""The ``relabel`` plans of the rows of ``P`` and ``Q`` ((B, V), validated, float64).

    One stable sort per row by p/q, prefix sums, the suffix minimum of
    :math:`F_k = P_k - c_k^n`, the sub-law s and the top-down cumulative supply and demand:
    O(V) work per row after the sort, all rows at once.

    Examples
    --------
    >>> P = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    >>> Q = np.array([[0.3, 0.3, 0.4], [0.25, 0.25, 0.5]])
    >>> plans = relabel_rows(P, Q, 2)
    >>> plans.alpha.round(6).tolist(), plans.order.tolist()
    ([0.94, 0.9375], [[0, 1, 2], [2, 1, 0]])
    """
    xp = bk.namespace(P, Q)
    B, V = Q.shape
    order = _order(P, Q)
    ps, qs = bk.take_rows(P, order), bk.take_rows(Q, order)
    c = xp.cumulative_sum(qs, axis=-1)
    d = _rates(c, c - qs, n)
    Qn = c * c if n == 2 else c**n
    D = qs * d
    s, dE, alpha = _sublaw(ps, xp.cumulative_sum(ps, axis=-1) - Qn, D)
    cum = _intervals(dE, qs > 0)
    rank = _ranks(order)
    err = xp.full((B,), law_error_bound(n, V), dtype=qs.dtype, device=_dev(qs))
    return RowPlans(n, order, rank, ps, qs, d, s, cum, alpha, err, None, c)


def _before(c: Any) -> Any:
    """:math:`c_{k-1}` per row: the prefix sums moved up one slot, 0 first (exact, unlike
    ``c - q``, which cancels when one token holds almost all of q)."""
    xp = bk.namespace(c)
    return xp.concat([xp.zeros_like(c[:, :1]), c[:, :-1]], axis=-1)


def _intervals(gap: Any, live: Any, scale: Any = None) -> Any:
    """Top-down cumulative supply :math:`(-gap)^+` and demand :math:`gap^+` on live slots,
    (B, 2, V), times ``scale`` (B,) when given."""
    xp = bk.namespace(gap)
    zero = xp.zeros_like(gap)
    sup = xp.where(live & (gap < 0), -gap, zero)
    dem = xp.where(live & (gap > 0), gap, zero)
    if scale is not None:
        sup, dem = sup * scale[:, None], dem * scale[:, None]
    return xp.stack(
        [xp.cumulative_sum(_flip(sup), axis=-1), xp.cumulative_sum(_flip(dem), axis=-1)], axis=1
    )


def _ranks(order: Any) -> Any:
    xp = bk.namespace(order)
    B, V = order.shape
    ar = xp.reshape(xp.arange(V, dtype=order.dtype, device=_dev(order)), (1, V))
    return bk.scatter(xp.asarray(xp.broadcast_to(ar, (B, V)), copy=True), order)


def cp2_rows(P: Any, Q: Any) -> RowPlans:
    r"""The ``cp2`` plans (conditional Poisson, n = 2) of the rows of ``P`` and ``Q``.

    The conditional-Poisson sub-law s in p/q order (:math:`D_k = 2 q_k c_{k-1} / 2e_2`), then
    the i.i.d. kernel (n = 2) of the target :math:`t^* = 2e_2\, s + q^2` in the order of
    :math:`\rho^* = t^*/q` (Theorem 3: a second stable sort per row, always; the one-position
    plan keeps p/q order where its mass condition holds, which gives another kernel with the
    same acceptance α*).

    Examples
    --------
    >>> plans = cp2_rows(np.array([[0.5, 0.5]]), np.array([[0.75, 0.25]]))
    >>> plans.construction, round(float(plans.alpha[0]), 12)
    ('cp2', 1.0)
    """
    xp = bk.namespace(P, Q)
    B, V = Q.shape
    order = _order(P, Q)
    ps, qs = bk.take_rows(P, order), bk.take_rows(Q, order)
    c = xp.cumulative_sum(qs, axis=-1)
    w = _before(c) * qs  # e_2 increments q_k c_{k-1} >= 0
    e2 = xp.sum(w, axis=-1)
    D = w / e2[:, None]
    s, _, alpha = _sublaw(ps, xp.cumulative_sum(ps, axis=-1) - xp.cumulative_sum(D, axis=-1), D)
    two_e2 = 2.0 * e2
    live = qs > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = xp.where(live, (s / qs) * two_e2[:, None] + qs, xp.full_like(qs, math.inf))
    o2 = bk.stable_argsort(rho)
    order, ps, qs, s = (bk.take_rows(x, o2) for x in (order, ps, qs, s))
    c = xp.cumulative_sum(qs, axis=-1)
    cm = _before(c)
    gap = s - 2.0 * qs * cm / two_e2[:, None]  # s - D_CP in the new order
    cum = _intervals(gap, qs > 0, two_e2)
    d = c + cm  # i.i.d. slot rates, n = 2
    err = law_error_bound(2, V) / two_e2  # on the device: no host synchronisation
    return RowPlans(2, order, _ranks(order), ps, qs, d, s, cum, alpha, err, two_e2, c)


def transfer_path(F: Any) -> tuple[Any, Any]:
    r"""The transfer path of Theorem 1 on (B, V) rows, from F = P - Q on the prefixes 1..V
    (:math:`F_0 = 0`): :math:`E_j = \max(0, F_j - \min_{i > j} F_i)` on the cuts j = 0..V
    (:math:`E_V = 0`), (B, V + 1), and the suffix minima :math:`S_k = \min_{i \ge k} F_i`,
    k = 1..V, (B, V); the operations of ``plan._transfer``.

    Examples
    --------
    >>> E, S = transfer_path(np.array([[0.2, -0.1, 0.0]]))
    >>> E.round(12).tolist(), S.round(12).tolist()
    ([[0.1, 0.3, 0.0, 0.0]], [[-0.1, -0.1, 0.0]])
    """
    xp = bk.namespace(F)
    zero = xp.zeros_like(F[:, :1])
    S = _flip(bk.cummin(_flip(F)))  # S_k = min over prefixes k..V (prefixes 1..V)
    S_next = xp.concat([S[:, 1:], zero], axis=-1)  # min over prefixes k+1..V; F_V is 0 there
    E = xp.concat([xp.maximum(F - S_next, zero)[:, :-1], zero], axis=-1)  # prefixes 1..V
    return xp.concat([xp.maximum(-S[:, :1], zero), E], axis=-1), S  # E_0 = max(0, -S_1)


def _sublaw(ps: Any, F: Any, D: Any) -> tuple[Any, Any, Any]:
    r"""The optimal sub-law of Theorem 1 from F = P - Q on the prefixes 1..V (:math:`F_0 = 0`)
    and the deterministic rule's law D: ``(s, dE, alpha)``.

    :math:`E_j = \max(0, F_j - \min_{i > j} F_i)` (:math:`E_V = 0`), :math:`dE_k = E_{k+1} -
    E_k`, :math:`s = \min(\max(D + dE, 0), p)` and :math:`\alpha^* = \min(1, 1 + \min_j F_j)`:
    the operations of ``plan._transfer`` and ``plan._sublaw``, on (B, V) rows.
    """
    xp = bk.namespace(F)
    zero = xp.zeros_like(F[:, :1])
    E, S = transfer_path(F)
    dE = E[:, 1:] - E[:, :-1]
    s = xp.minimum(xp.maximum(D + dE, zero), ps)
    alpha = xp.minimum(1.0 + xp.minimum(S[:, 0], zero[:, 0]), zero[:, 0] + 1.0)
    return s, dE, alpha
