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
    "order_key",
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


#: The order key of a row whose ratio p/q overflows is :math:`|p / (q\,2^{64})|`: validated
#: masses lie in [2^-1074, ~1], so every ratio then stays below 2^1011 (see :func:`order_key`).
OVERFLOW_SHIFT: float = 2.0**64


def order_key(p: Any, q: Any) -> Any:
    r"""The key that orders a row by :math:`p/q` on the sorting path, overflow included.

    :func:`sort_key` gives :math:`p/q = +\infty` to a token of positive q below
    :math:`p / \text{DBL\_MAX}` (q subnormal, p normal): tokens of different ratios then tie with
    each other and with the :math:`q = 0` tokens, and any order of that false tie block may be
    taken, although for a law that reads the proportions of those tiny masses (conditional
    Poisson or sequential drafts with fewer than n normal masses) it moves Q by O(1).  In a row
    where this happens (numpy: found from the row's largest key, so other rows pay one
    reduction; torch: every row, as no data-dependent branch runs on a device) the key is
    :math:`|p / (q\,2^{64})|` instead: finite for every q > 0 (the ratio of validated masses is
    at most :math:`2^{1074}`), ordered like :math:`p/q` (the same quotient scaled by a power of
    two) except where it falls below the normal range; there its absolute error is at most
    :math:`2^{-1075}`, so the order is that of some :math:`p'` with
    :math:`|p'_i - p_i| \le 2^{-1011} q_i + \varepsilon p_i`, and α* moves by at most twice
    :math:`\sum_i |p'_i - p_i|`, about :math:`2^{-52}`.

    Examples
    --------
    >>> import numpy as np
    >>> p, q = np.array([[0.25, 0.25, 0.5]]), np.array([[1.0, 3e-322, 1e-322]])
    >>> sort_key(p, q).tolist()  # the last two tie at +inf
    [[0.25, inf, inf]]
    >>> np.argsort(order_key(p, q), axis=-1).tolist()  # ratios 8.4e320 and 5.1e321
    [[0, 1, 2]]
    """
    if not isinstance(p, np.ndarray):
        return _scaled_key(p, q)
    key = sort_key(p, q)
    if key.size == 0:
        return key
    rows2 = key.reshape(-1, key.shape[-1])
    check = np.flatnonzero(~(np.max(rows2, axis=-1) < np.inf))  # inf, or NaN (p = q = 0)
    if check.size:
        p2, q2 = p.reshape(rows2.shape), q.reshape(rows2.shape)
        over = check[np.any(np.isinf(rows2[check]) & (q2[check] > 0), axis=-1)]
        if over.size:
            rows2[over] = _scaled_key(p2[over], q2[over])
    return key


def _scaled_key(p: Any, q: Any) -> Any:
    """:math:`|p / (q\\,2^{64})|` (the key of :func:`order_key`'s overflowing rows)."""
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        key = p / (q * OVERFLOW_SHIFT)
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
    ratio: :math:`\tilde e_m(H_k) = \sum_{i\le k} q(i)\,\tilde e_{m-1}(H_{i-1}) / t_m` with
    :math:`t_m = \sum_i q(i)\tilde e_{m-1}(H_{i-1})`, and :math:`Q(H_k) = \tilde e_n(H_k)`.

    The levels are normalised to total 1, so a partial value :math:`\tilde e_m(H)` far below
    its total keeps only a few bits (subnormal), and a product :math:`q(i)\tilde
    e_{m-1}(H_{i-1})` may underflow although, times a large mass at the next level, it is a fair
    share of that level (masses near 1e-200 with n = 3, or a row whose masses beyond the n - 1
    largest are subnormal: Q was off by 2e-6, and Q(Σ) came out 1.0094).  :func:`_cp_levels`
    bounds what underflow may have cost each row from its level totals; no single scale would
    do (with two normal masses and n = 4 the values that decide Q lie 2^-2000 below their
    level), so the rows it flags take the recursion in logarithms (:func:`_cp_log_levels`),
    which holds any range; torch computes both forms and chooses per row (no data-dependent
    branch on a device).  Both forms end on the last level divided by its own last value:
    Q(Σ) = 1 exactly, and Q <= 1.

    Examples
    --------
    >>> import numpy as np
    >>> prefix_Q_conditional_poisson(np.array([[0.5, 0.3, 0.2]]), 2).round(6).tolist()
    [[0.0, 0.483871, 1.0]]
    >>> Q = prefix_Q_conditional_poisson(np.array([[1.0, 3e-322, 2.4e-322, 7e-320]]), 3)
    >>> Q.round(6).tolist()  # 61, 49 and 14,168 units of 2^-1074: Q(first 3) = 2989/1561469
    [[0.0, 0.0, 0.001914, 1.0]]
    """
    xp = bk.namespace(qs)
    with np.errstate(all="ignore"):
        e, lossy = _cp_levels(qs, n)
        if bk.is_torch(qs):  # no data-dependent branch on a device: both forms, chosen per row
            ok = xp.all(xp.isfinite(e), axis=-1, keepdims=True) & ~lossy[..., None]
            return xp.where(ok, e, _cp_log_levels(qs * _log_scale(qs), n))
        lossy |= ~np.all(np.isfinite(e), axis=-1)
        if bool(lossy.any()):  # underflow may have moved Q: those rows in logarithms
            e[lossy] = _cp_log_levels(qs[lossy] * _log_scale(qs[lossy]), n)
    return e


def _cp_log_levels(qs: Any, n: int) -> Any:
    r"""The level recursion in logarithms, for rows beyond the range of doubles
    (:func:`prefix_Q_conditional_poisson`): :math:`\log \tilde e_m(H_k) =
    \operatorname{logcumsumexp}_{i \le k}(\log q(i) + \log \tilde e_{m-1}(H_{i-1}))`, minus its
    last value.  Each term carries an absolute error of about ε times the magnitude of the
    logarithms it adds, so the row comes scaled by :func:`_log_scale` (subnormal masses and
    masses near 1 then both within 2^±600): on subnormal rows, n = 2..8, Q within 3e-13 of
    the exact rationals (``tests/fast/test_subnormal.py``)."""
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


#: A row whose levels underflow may have moved by more than 2^-UNDERFLOW_BITS (of the level's
#: total, :func:`_cp_levels`) takes the recursion in logarithms.
UNDERFLOW_BITS: int = 60
_UNDER = 2.0**-1074  # more than a product or quotient that underflows loses (half of this)
#: :func:`_log_scale` brings a row's largest mass to [2^(LOG_TOP - 1), 2^LOG_TOP) (float64;
#: float32, whose range is 2^±128: a tenth of it), so that its logarithms are centred.
LOG_TOP: int = 480


def _log_scale(qs: Any) -> Any:
    r"""(B, 1) powers of two :math:`2^s`, :math:`2^s \max_i q(i) \in [2^{t-1}, 2^t)` with
    :math:`t` = :data:`LOG_TOP` (float32: 48): exact, and the law (homogeneous of degree 0
    in q) is unchanged."""
    xp = bk.namespace(qs)
    top_exp = LOG_TOP // 10 if "32" in str(qs.dtype) else LOG_TOP
    cap = 2 * top_exp  # a row without mass keeps a finite scale
    top = xp.max(qs, axis=-1, keepdims=True)
    if isinstance(top, np.ndarray):
        _, ex = np.frexp(top)
        return np.ldexp(1.0, np.clip(top_exp - ex, -cap, cap))
    _, ex = top.frexp()
    return xp.ones_like(top).ldexp_((top_exp - ex).clamp_(-cap, cap))


def _cp_levels(qs: Any, n: int) -> tuple[Any, Any]:
    r"""The level recursion of :func:`prefix_Q_conditional_poisson`: products first, then each
    level divided by its total; returns ``(e, rows that underflow may have moved by more than
    2^-UNDERFLOW_BITS)``.  ``qs`` is read, not written.

    Rounding in the normal range is relative and harmless (sums of non-negative terms); what
    underflows is lost absolutely, at most :math:`2^{-1075}` per product and per quotient
    (counted as :math:`2^{-1074}`), and a
    value lost at one level is multiplied by up to :math:`q(\Sigma)/t_m` at the next (a tiny
    value times a large mass can be a fair share of a small level).  So the absolute error of
    level m in units of its total obeys

    .. math:: \delta_m \le (q(\Sigma)\,\delta_{m-1} + V\,2^{-1074}) / t_m + 2^{-1074},
              \qquad \delta_1 = 2^{-1074}

    from the level totals alone (B n scalars): a row whose :math:`\delta_n` exceeds
    :math:`2^{-60}` is flagged (all the flagged rows of the tests have masses near or below
    1e-200; ordinary rows have :math:`\delta_n` near 1e-300).
    """
    xp = bk.namespace(qs)
    V = qs.shape[-1]
    e = bk.cumsum(xp.asarray(qs, copy=True))
    mass = xp.asarray(e[..., -1:], copy=True)
    e /= mass
    delta = xp.zeros_like(mass) + _UNDER
    for _ in range(2, n + 1):
        e[..., 1:] = qs[..., 1:] * e[..., :-1]
        e[..., 0] = 0.0
        e = bk.cumsum(e)
        total = xp.asarray(e[..., -1:], copy=True)
        delta = (mass * delta + V * _UNDER) / total + _UNDER  # total = 0: inf or NaN, flagged
        e /= total
    return e, ~(delta[..., 0] <= 2.0**-UNDERFLOW_BITS)


def prefix_min(P: Any, Q: Any, return_set: bool) -> tuple[Any, Any]:
    r""":math:`\alpha^* = 1 + \min(0, \min_k [P_k - Q_k])` and the argmin k (0 = empty set).

    ``P`` and ``Q`` hold prefixes k = 1..V (``P`` is overwritten with ``P - Q``); the empty
    prefix (value 0) is added here, and the full one is pinned to its exact value 0.  α* is
    clipped to [0, 1] (rounding can leave it a few ulps outside).  Returns ``(alpha, k)`` with ``k = None`` unless ``return_set``.
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
