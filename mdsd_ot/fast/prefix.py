r"""The prefix algorithm of T7: sort by p/q, evaluate Q on every prefix, take the minimum.

For a q-convex draft law (T5) an optimal set of the subset-selection form (8) is a prefix of the
tokens sorted by :math:`p(i)/q(i)` ascending, so

.. math::

   \alpha^* = 1 + \min_{k = 0..V} \bigl[P(H_k) - Q(H_k)\bigr], \qquad
   H_k = \{\text{first } k \text{ tokens in that order}\}.

Ties in :math:`p/q` may come in any order: inside a block of equal keys :math:`r`, :math:`P`
grows like :math:`r\,q(\cdot)` while :math:`Q` is convex in :math:`q(\cdot)` (T5), so
:math:`P - Q` is concave along the block and its minimum over the block sits at one of the
block's ends, which are prefixes in every tie order.

One routine per law evaluates :math:`Q` on all prefixes at once (arrays ``(B, V)``, entry ``k-1``
holding :math:`Q(H_k)`), written against the array-API standard so that numpy and torch arrays
run the same code (:mod:`mdsd_ot.fast._backend`).  All functions here take validated inputs
(rows summing to 1, see :mod:`mdsd_ot.fast._check`) and never synchronise a GPU with the host.
The sort and the scan that use them are in :mod:`mdsd_ot.fast.scan`.

Accuracy
--------
Every routine is a few cumulative sums of non-negative terms bounded by 1 plus O(1) operations
per entry, so the absolute error on each :math:`Q(H_k)` and :math:`P(H_k)` is at most
:math:`c\,V\,\varepsilon` for a small constant (sequential summation; :func:`error_bound`
returns the bound with the constant used, :math:`(2n + 8)(V+1)\varepsilon`).  Observed errors are
far smaller (about :math:`\sqrt{V}\varepsilon`); the tests check 1e-12 on the alpha bank and 1e-10
against brute force.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _backend as bk
from ._dd import U, accurate_sum, cumsum_blocked, depth_cumsum, gamma

__all__ = [
    "sort_key",
    "prefix_Q_with",
    "prefix_Q_without2",
    "prefix_Q_conditional_poisson",
    "certified_Q_without1",
    "certified_Q_without2",
    "prefix_min",
    "error_bound",
]


def sort_key(p: Any, q: Any) -> Any:
    r"""The sort key :math:`|p(i)/q(i)|` (one division, its sign bit cleared in place).

    :math:`p = 0 < q` gives 0 (first), :math:`q = 0 < p` gives :math:`+\infty` (last), also when
    the zero is a signed ``-0.0`` (hence the absolute value: :math:`p/(-0) = -\infty` would sort
    first).  A huge ratio that overflows to :math:`+\infty` sorts last, where it belongs.  The
    remaining case :math:`p = q = 0` gives NaN, which numpy and torch sort after every number;
    its place does not matter anyway, since a token with :math:`p = q = 0` changes neither
    :math:`P` nor :math:`Q` of any set (for every q-based law, a zero-mass token is never drawn).

    Examples
    --------
    >>> import numpy as np
    >>> sort_key(np.array([0.5, 0.0, 0.5, 0.0]), np.array([0.25, 0.25, -0.0, 0.5])).tolist()
    [2.0, 0.0, inf, 0.0]
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        key = p / q
    if isinstance(key, np.ndarray):
        return np.abs(key, out=key)
    return key.abs_()


def prefix_Q_with(qs: Any, n: int) -> Any:
    r"""With replacement: :math:`Q(H_k) = q(H_k)^n` for k = 1..V (overwrites ``qs``).

    Examples
    --------
    >>> import numpy as np
    >>> prefix_Q_with(np.array([[0.5, 0.5]]), 2).tolist()
    [[0.25, 1.0]]
    """
    s = bk.cumsum(qs)
    if n > 1:
        # above 2^53 the exponent is passed as a float (torch refuses ints beyond int64); the
        # relative change of n is below 1e-16, so q(H)^n moves by less than that in log
        s **= n if n < 2**53 else float(n)
    return s


def prefix_Q_without2(qs: Any) -> Any:
    r"""Sequential without replacement, n = 2, on every prefix (docs/reference.md, closed form).

    .. math::

       Q(H) = \sum_{i \in H} q(i)\, \frac{q(H) - q(i)}{1 - q(i)}
            = q(H) - (1 - q(H)) \sum_{i\in H} \frac{q(i)}{1 - q(i)} .

    The second form cancels catastrophically when some :math:`q(a)` is close to 1 (it divides by
    :math:`1 - q(a)`).  Only the largest token can have :math:`q(a) > 1/2`, so it is treated
    apart: its term is :math:`q(a)\, q(H \setminus a) / \delta` with
    :math:`\delta = 1 - q(a)` computed as the mass of the other tokens (relative accuracy
    :math:`\varepsilon`), and every other token has :math:`1 - q(i) \ge 1/2`.  The remaining sum
    :math:`q(H) S' - R'` (:math:`S' = \sum q/(1-q)`, :math:`R' = \sum q^2/(1-q)` over
    :math:`H \setminus a`, and :math:`R' = S' - q(H\setminus a)`) has terms bounded by 2, so the
    absolute error stays :math:`O(V\varepsilon)`.

    Parameters
    ----------
    qs : (B, V) array
        q permuted into the prefix order (rows sum to 1, at least 2 positive entries);
        overwritten.

    Examples
    --------
    >>> import numpy as np
    >>> prefix_Q_without2(np.array([[0.5, 0.3, 0.2]])).round(6).tolist()  # T12: Q({0,1})=18/35
    [[0.0, 0.514286, 1.0]]
    """
    xp = bk.namespace(qs)
    B, V = qs.shape
    total = xp.sum(qs, axis=-1, keepdims=True)
    a_pos = xp.argmax(qs, axis=-1)
    rows = bk.arange_like(qs, B)
    q_a = qs[rows, a_pos][:, None]
    qz = qs
    qz[rows, a_pos] = 0.0  # q without its largest token a (in place)
    w = 1.0 - qz  # >= 1/2 off a
    w **= -1
    w *= qz  # q/(1-q) off a, 0 at a
    S = bk.cumsum(w)  # S' = sum of q/(1-q) over H_k minus a  (<= 2 q(H_k minus a))
    c = bk.cumsum(qz)  # q(H_k minus a)
    delta = c[..., -1:] / total  # 1 - q(a), to relative accuracy eps
    # off a: sum q (q(H) - q)/(1-q) = c S' - R' with R' = sum q^2/(1-q) = S' - c; with S' <= 2c
    # the difference c - (1 - c) S' loses at most a few eps absolutely
    out = c * S
    out -= S
    out += c
    c /= delta
    c += S
    c *= q_a
    c *= bk.arange_like(qs, V) >= a_pos[:, None]  # a in H_{k+1}
    out += c  # + 1[a in H] q(a) (q(H minus a)/delta + S')
    return out


def prefix_Q_conditional_poisson(qs: Any, n: int) -> Any:
    r"""Conditional Poisson: :math:`Q(H_k) = e_n(q|_{H_k}) / e_n(q)` for k = 1..V.

    The recursion :math:`e_m(H \cup \{x\}) = e_m(H) + q(x)\, e_{m-1}(H)` unrolls along the
    prefix into one cumulative sum per level,

    .. math::

       e_m(H_k) = \sum_{i \le k} q(i)\, e_{m-1}(H_{i-1}),

    a sum of non-negative terms (no cancellation, unlike Newton's identities).  Each level is
    divided by its total :math:`e_m(q)` as it is formed, so every stored value lies in [0, 1]
    and neither :math:`e_m` overflows nor underflows at V = 152,064; the scales cancel in the
    ratio: :math:`\tilde e_m(H_k) = \sum_{i\le k} (q(i) / t_m)\,\tilde e_{m-1}(H_{i-1})` with
    :math:`t_m = \sum_i q(i)\tilde e_{m-1}(H_{i-1})`, and :math:`Q(H_k) = \tilde e_n(H_k)`.
    The total :math:`t_m` is formed first and divides ``q`` before the products: a term
    :math:`q(i)\tilde e_{m-1}(H_{i-1})` below the smallest double (masses near 1e-200, n = 3) is
    still a representable fraction of :math:`t_m`, and the products that underflow in
    :math:`t_m` are below :math:`\varepsilon\, t_m`.

    Examples
    --------
    >>> import numpy as np
    >>> prefix_Q_conditional_poisson(np.array([[0.5, 0.3, 0.2]]), 2).round(6).tolist()
    [[0.0, 0.483871, 1.0]]
    """
    xp = bk.namespace(qs)
    if bk.is_torch(qs):  # no data-dependent branch on a device: both forms, chosen per row
        e = _cp_levels(xp.asarray(qs, copy=True), n, scaled=True)
        ok = xp.all(xp.isfinite(e), axis=-1, keepdims=True)
        return xp.where(ok, e, _cp_log_levels(qs, n))
    with np.errstate(all="ignore"):
        e, tiny = _cp_levels(qs, n, scaled=False)
        if bool(tiny.any()):  # a level total below TINY_TOTAL: redo those rows scaled
            e[tiny] = _cp_levels(xp.asarray(qs[tiny], copy=True), n, scaled=True)
            bad = ~np.all(np.isfinite(e), axis=-1)  # the total itself subnormal: q / t overflows
            if bool(bad.any()):
                e[bad] = _cp_log_levels(qs[bad], n)
    return e


def _cp_log_levels(qs: Any, n: int) -> Any:
    r"""The level recursion in logarithms, for rows beyond the range of doubles (e.g. q(i) =
    5e-324): :math:`\log \tilde e_m(H_k) = \operatorname{logcumsumexp}_{i \le k}(\log q(i) +
    \log \tilde e_{m-1}(H_{i-1}))`, minus its last value.  Relative accuracy about
    :math:`\varepsilon \max|\log \tilde e|` (at most ~750 ε), so it serves only rows the two
    other forms cannot."""
    xp = bk.namespace(qs)
    with np.errstate(divide="ignore", invalid="ignore"):
        lq = xp.log(qs)
        L = bk.logcumsumexp(lq)
        L = L - L[..., -1:]
        for _ in range(2, n + 1):
            a = lq[..., 1:] + L[..., :-1]
            L = xp.concat([xp.full_like(L[..., :1], -math.inf), bk.logcumsumexp(a)], axis=-1)
            L = L - L[..., -1:]
        return xp.exp(L)


#: Level totals below this may have lost terms to underflow that are not below ε of the total
#: (the smallest normal double is 2.2e-308; ε · 1e-280 is far above it).
TINY_TOTAL = 1e-280


def _cp_levels(qs: Any, n: int, scaled: bool) -> Any:
    """The level recursion of :func:`prefix_Q_conditional_poisson`.

    ``scaled=False``: products first, then each level divided by its total (one pass fewer);
    returns ``(e, rows whose some level total fell below TINY_TOTAL)``.  ``scaled=True``: the
    total first, q divided by it before the products (safe at any scale); returns ``e``.
    """
    xp = bk.namespace(qs)
    e = bk.cumsum(xp.asarray(qs, copy=True))
    e /= xp.asarray(e[..., -1:], copy=True)
    tiny = None if scaled else xp.zeros(qs.shape[:-1], dtype=bool)
    for _ in range(2, n + 1):
        if scaled:
            terms = qs[..., 1:] / bk.rowdot(qs[..., 1:], e[..., :-1])  # q(i) / t_m
            terms *= e[..., :-1]
            e[..., 1:] = terms
        else:
            e[..., 1:] = qs[..., 1:] * e[..., :-1]
        e[..., 0] = 0.0
        e = bk.cumsum(e)
        if not scaled:
            total = xp.asarray(e[..., -1:], copy=True)
            tiny |= total[..., 0] < TINY_TOTAL
            e /= total
    return e if scaled else (e, tiny)


def prefix_min(P: Any, Q: Any, return_set: bool) -> tuple[Any, Any]:
    r""":math:`\alpha^* = 1 + \min(0, \min_k [P_k - Q_k])` and the argmin k (0 = empty set).

    ``P`` and ``Q`` hold prefixes k = 1..V (``P`` is overwritten with ``P - Q``); the empty
    prefix (value 0) is added here, and the full one is pinned to its exact value 0.  α* is clipped to [0, 1] (rounding can leave it a few ulps
    outside).  Returns ``(alpha, k)`` with ``k = None`` unless ``return_set``.
    """
    xp = bk.namespace(P)
    P -= Q
    # H_V = every token: P = Q = 1 exactly (validated rows), where the rounded running sums
    # can leave a few 1e-12 below 0 at large V (p = q uniform, V = 150,000: -2.6e-12)
    P[..., -1] = 0.0
    m = xp.min(P, axis=-1)
    alpha = bk.clip(1.0 + xp.minimum(m, xp.zeros_like(m)), 0.0, 1.0)
    if not return_set:
        return alpha, None
    k = xp.argmin(P, axis=-1) + 1
    k = xp.where(m < 0, k, xp.zeros_like(k))
    return alpha, k


def error_bound(V: int, n: int, eps: float) -> float:
    r"""A priori bound :math:`(2n + 8)(V+1)\varepsilon` on the rounding error of α* (floats).

    Examples
    --------
    >>> error_bound(10, 2, 2.0**-52) < 1e-13
    True
    """
    return (2 * n + 8) * (V + 1) * eps


def certified_Q_without2(q: Any, xp: Any) -> tuple[Any, Any]:
    r"""Sequential without replacement, n = 2, on every prefix k = 0..V, with a certified bound.

    .. math::

       Q(H) = 1 - \frac{q(H^c)}{T}\Bigl[1 + \sum_{x \in H} \frac{q(x)}{T - q(x)}\Bigr],
       \qquad T = \sum_x q(x)

    (docs/reference.md; the law of ``q / T``), with :math:`T - q(x)` formed against the
    double-double total so that it keeps its relative accuracy, and a rigorous bound on the
    rounding error of every prefix (the counting argument of :mod:`mdsd_ot.fast._dd`).  Prefixes
    with fewer than 2 positive masses (Q = 0) or no mass outside (Q = 1) are set exactly.

    Parameters
    ----------
    q : (B, V) float64 array
        q in prefix order (non-negative, at least 2 positive entries per row; need not sum to 1).
    xp : namespace
        The array namespace of ``q``.

    Returns
    -------
    Q : (B, V+1) array
        ``Q[:, k]`` = Q(first k tokens).
    bound : (B,) array
        Bound on the absolute error of every entry of the row.

    Examples
    --------
    >>> Q, err = certified_Q_without2(np.array([[0.5, 0.3, 0.2]]), np)
    >>> Q.round(6).tolist(), bool(err[0] < 1e-14)  # T12: Q({0, 1}) = 18/35 sequentially
    ([[0.0, 0.0, 0.514286, 1.0]], True)
    """
    B, V = q.shape
    T_hi, T_lo, T_eta = accurate_sum(q, xp)
    T = (T_hi + T_lo)[:, None]
    d = (T_hi[:, None] - q) + T_lo[:, None]  # T_hi - q is exact when q >= T_hi / 2 (Sterbenz)
    dmin = xp.min(d, axis=-1) * (1 - 8 * U)
    theta_d = 2.01 * U + (U * xp.abs(T_lo) + T_eta) / dmin
    F = bk.exclusive(cumsum_blocked(q / d, xp), xp)
    lam = xp.concat(
        [xp.flip(cumsum_blocked(xp.flip(q, axis=-1), xp), axis=-1), bk.zeros(xp, (B, 1), q)],
        axis=-1,
    )
    Phi = lam * (1.0 + F) / T
    D_cum = depth_cumsum(V)
    D_T = 1.01 + T_eta / (U * T[:, 0])
    D = 1.25 * (D_cum + (D_cum + theta_d / U + 1 + 1) + 2 + D_T) + 10
    Qv = bk.clip(1.0 - Phi, 0.0, 1.0)
    npos_pref = bk.exclusive(xp.cumulative_sum(xp.astype(q > 0, xp.int64), axis=-1), xp)
    exact = (npos_pref < 2) | (lam == 0)
    Qv = xp.where(npos_pref < 2, xp.zeros_like(Qv), xp.where(lam == 0, xp.ones_like(Qv), Qv))
    Bd = (gamma(D)[:, None] * Phi + 1.01 * U) * (1 + 1e-6)
    Bd = xp.where(exact, xp.zeros_like(Bd), Bd)
    return Qv, xp.max(Bd, axis=-1)


def certified_Q_without1(q: Any, xp: Any) -> tuple[Any, Any]:
    r"""One draft: :math:`Q(H_k) = q(H_k)/T` on every prefix k = 0..V, with a certified bound.

    The n = 1 case of :func:`certified_Q_without2` (same conventions, ``T`` the row total).

    Examples
    --------
    >>> Q, err = certified_Q_without1(np.array([[0.5, 0.3, 0.2]]), np)
    >>> Q.round(6).tolist(), bool(err < 1e-15)
    ([[0.0, 0.5, 0.8, 1.0]], True)
    """
    V = q.shape[-1]
    T_hi, T_lo, T_eta = accurate_sum(q, xp)
    T = T_hi + T_lo
    Qv = bk.clip(bk.exclusive(cumsum_blocked(q, xp), xp) / T[:, None], 0.0, 1.0)
    D = depth_cumsum(V) + 2 + T_eta / (U * T) + 2
    return Qv, gamma(D) * (1 + 1e-6)
