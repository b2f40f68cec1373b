r"""The ``cp-pair`` verifier for many positions at once, on numpy or torch (the array API).

Conditional-Poisson drafts, n >= 3 (proofs/optimal_verifier.md §11, the one-position plan in
:mod:`.pairs`).  Every row of (B, V) arrays gets the design of :func:`.pairs.pair_plan`: chain
order (p/q ascending, ties by q ascending as :func:`.plan.heavy_last`), the levels
:math:`e_m(H_k)` (:func:`.pieces.cp_levels`), the law D of "select the top draft", the transfer
path E and the sub-law s, the target path E' (``"min"``, then ``"bottom"`` for the rows where
``"min"`` is not a rule), the blocks (zero cuts of E'), the rank-one start and the alternating
scaling :math:`g = \delta / \mathrm{In}(\theta)`, :math:`\theta = \sigma / \mathrm{Out}(g)`, the
rule check and the law T, all with whole-array operations through the fast solver's backend
layer (:mod:`mdsd_ot.fast._backend`): no per-row Python loop over the arrays (only the
reasons' strings are formed row by row, on the host), one host synchronisation per scaling
step (have all rows stopped?) and a few more (ties, scaled rows, the reasons, the bound).

**Segmented sums.**  The flows are cumulative sums restricted to a row's block, and the blocks
differ per row.  An exclusive suffix sum within the block is the row's global inclusive suffix
sum at k + 1 less its value at the block's end (one gather by the block-end index), clamped at
0; an exclusive prefix sum, the global exclusive prefix sum at k less its value at the block's
start.  The subtraction loses the relative accuracy of the positive sums: its error is bounded
by a multiple of u times the *unsegmented* sum of the same non-negative terms (the sum over all
slots above k, or below k, not only those of k's block), so the law's a-priori bound
(:func:`pair_rows`, ``law_error``) is formed with the flows recomputed once by unsegmented sums,
:math:`\mathrm{In}^G \ge \mathrm{In}` and :math:`\mathrm{Out}^G \ge \mathrm{Out}`.

**Running order statistics** (the rule check, :func:`.pairs.set_sums`) reset at every block:
on torch the segmented running maximum is a log-step doubling scan (Hillis-Steele) whose
shifted operand is zeroed where it crosses a block boundary (the values are non-negative: 0 is
the identity of max), :math:`\lceil \log_2 L \rceil` steps for the longest block L; on numpy
one running maximum of complex numbers (block id, value), which numpy compares
lexicographically.  Both exact (max rounds nothing).

:func:`sample_pair_rows` verifies draft tuples with the plans (the hand-over of
:func:`.sample.sample_plan`'s ``cp-pair`` branch, then the thinning and the residual draw of
:func:`.batched_draws.sample_relabel_rows`).

Examples
--------
>>> import numpy as np
>>> from mdsd_ot.fast import alpha_star
>>> p, q = np.array([0.05, 0.15, 0.3, 0.5]), np.array([0.4, 0.3, 0.2, 0.1])
>>> plans = pair_rows(p[None], q[None], 3)
>>> a = float(alpha_star(p, q, n=3, scheme="conditional-poisson"))
>>> bool(plans.fits[0]), bool(abs(float(plans.alpha[0]) - a) < 1e-9)
(True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...drafts.sampling import SCALE_FROM
from ...fast import _backend as bk
from ...fast.order import ratio_order
from .batched_draws import _first_above, _gather_flat, _generator, _uniforms
from .batched_plans import U, _dev, _flip, _ranks, transfer_path
from .pairs import (
    _NOISE,
    PAIR_ITERATIONS,
    PAIR_TOL,
    PAIR_TRIES,
    PAIR_TRIES_HEAVY,
    SET_MARGIN,
    heavy_receiver,
    try_name,
)
from .plan import CP_UNDERFLOW_BITS, UNCERTIFIED

__all__ = ["PairRowPlans", "pair_rows", "sample_pair_rows"]

EPS = float(np.finfo(np.float64).eps)  #: 2u, as in the one-position bound
_TINY = float(np.finfo(np.float64).smallest_subnormal)
_NORMAL_EN = 2.0**-32  #: e_n(q) below this to the n-th power: the levels of 2^k q


@dataclass
class PairRowPlans:
    r"""The ``cp-pair`` (or ``seq-pair``) verifier of B positions, by slot (chain order of each
    row).

    Arrays live on the rows' device (numpy or torch); ``why`` and ``hold_back`` are host lists.
    Only the rows with ``fits`` True are plans: the others hold whatever the design reached
    (possibly NaN) and go to the host route.

    Attributes
    ----------
    n : int
        Number of conditional-Poisson drafts (>= 3).
    order, rank : (B, V) int64
        Token of each slot, and slot of each token.
    ps, qs : (B, V)
        p and q by slot.
    D : (B, V)
        Law of "select the top draft", :math:`q_k e_{n-1}(H_k) / e_n` (``seq-pair``: the
        differences of the sequential Q on the prefixes).
    s : (B, V)
        The optimal accepted sub-law, clipped to [0, p].
    theta, g : (B, V)
        Hand-over factors: :math:`\lambda(y, x) = \mathrm{fl}(\theta_y g_x)` for x < y in one
        block (0 otherwise).
    block : (B, V) int64
        Block of each slot, named by its first slot (slots x, y share a block iff equal).
    T : (B, V)
        The rule's selection law by slot.
    acc : (B, V)
        The accepted sub-law :math:`\min(s, T)` clipped to [0, p].
    alpha : (B,)
        :math:`\sum_k \mathrm{acc}_k`, the acceptance rate (up to ``law_error``).
    law_error : (B,)
        A-priori bound on the total variation of the output law from p (:func:`pair_rows`).
    fits : (B,) bool
        Whether the design is a certified plan of the row.
    why : list of (str or None)
        Per row, why the design does not fit (None where it fits); the one-position plan's
        wording (``"min: not a rule: ...; bottom: ..."``, ``"products underflow"``, ...).
    shortfall, set_sum : (B,)
        :math:`\sum (s - T)^+` of the kept scaling step, and the largest hand-over probability
        of a draft set (the rule check, before ``1 - SET_MARGIN``).
    iterations : (B,) int64
        Scaling steps of the kept target path.
    hold_back : list of (str or None)
        The target path that fits (``"min"`` or ``"bottom"``), per row.
    en : (B,)
        :math:`e_n(2^k q)` of each row (k = ``scale``); ``seq-pair``: :math:`1/n!`, the
        normaliser of its kernel.
    scale : (B,)
        The exponent k: where :math:`e_n(q) < 2^{-32n}` the levels, D, θ, g and the flows are
        those of :math:`2^k q` (:func:`~mdsd_ot.drafts.sampling.scale_exponent`; the law is
        homogeneous of degree 0, and θ g with it), as in the one-position plan; else 0.
    flows : (B,)
        :math:`\sum D + \sum (g\,\mathrm{In}^G + \theta\,\mathrm{Out}^G) / e_n`, the mass the
        law error bound is proportional to.
    relay : list of (dict or None)
        Per fitted row whose design has a relay (the heaviest receiver also hands over,
        proofs/optimal_verifier.md §11), ``{"token": id, "share": ρ}`` as in the one-position
        plan's ``info["relay"]``; None otherwise.
    thin : tuple or None
        ``seq-pair`` (sequential drafts): ``(qn, hi, lo, u)``, the normalised q and the
        weights u by slot and the double-double sum of qn per row, from which the sampler
        forms each draft set's thinning r(S) (:func:`.seqpair.SetThinning`); None for
        ``cp-pair``.

    Examples
    --------
    >>> P, Q = np.array([[0.05, 0.15, 0.3, 0.5]]), np.array([[0.4, 0.3, 0.2, 0.1]])
    >>> plans = pair_rows(P, Q, 3)
    >>> plans.shape, plans.why, plans.hold_back
    ((1, 4), [None], ['min'])
    """

    n: int
    order: Any
    rank: Any
    ps: Any
    qs: Any
    D: Any
    s: Any
    theta: Any
    g: Any
    block: Any
    T: Any
    acc: Any
    alpha: Any
    law_error: Any
    fits: Any
    why: list
    shortfall: Any
    set_sum: Any
    iterations: Any
    hold_back: list
    en: Any
    flows: Any
    scale: Any = None
    relay: list | None = None
    thin: tuple | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """(B, V)."""
        return tuple(self.qs.shape)


# --- whole-array helpers ------------------------------------------------------------------


def _np(x: Any) -> bool:
    return bk.is_numpy_array(x)


def _zeros_col(x: Any) -> Any:
    """A (B, 1) zero column like ``x``."""
    return bk.namespace(x).zeros_like(x[:, :1])


def _suffix(x: Any) -> Any:
    """Inclusive suffix sums :math:`\\sum_{j \\ge k} x_j` along the last axis."""
    xp = bk.namespace(x)
    if _np(x):
        return np.cumsum(x[:, ::-1], axis=-1)[:, ::-1]
    return _flip(xp.cumulative_sum(_flip(x), axis=-1))


def _excl_prefix(x: Any) -> Any:
    """Exclusive prefix sums :math:`\\sum_{j < k} x_j`, (B, V)."""
    xp = bk.namespace(x)
    c = xp.cumulative_sum(x, axis=-1)
    return xp.concat([_zeros_col(x), c[:, :-1]], axis=-1)


@dataclass
class _Segments:
    """Block boundaries by slot: ``lo`` the first slot of k's block, ``hi`` one past its last."""

    lo: Any
    hi: Any


def _seg_excl_suffix(x: Any, seg: _Segments | None) -> Any:
    r""":math:`\sum_{k < j < hi(k)} x_j`: the global suffix sum at k + 1 less the one at hi(k),
    clamped at 0 (``seg`` None: the global exclusive suffix sum)."""
    if _np(x):  # the same operations, into one buffer
        B, V = x.shape
        S = np.empty((B, V + 1))
        S[:, V] = 0.0
        np.cumsum(x[:, ::-1], axis=-1, out=S[:, V - 1 :: -1] if V > 0 else S[:, :0])
        if seg is None:
            return S[:, 1:]
        out = bk.take_rows(S, seg.hi)
        np.subtract(S[:, 1:], out, out=out)
        return np.maximum(out, 0.0, out=out)
    xp = bk.namespace(x)
    S = xp.concat([_suffix(x), _zeros_col(x)], axis=-1)  # S_j = sum_{i >= j}, j = 0..V
    if seg is None:
        return S[:, 1:]
    return xp.maximum(S[:, 1:] - bk.take_rows(S, seg.hi), xp.zeros_like(x))


def _seg_excl_prefix(x: Any, seg: _Segments | None) -> Any:
    r""":math:`\sum_{lo(k) \le j < k} x_j`: the global exclusive prefix sum at k less the one at
    lo(k), clamped at 0 (``seg`` None: the global exclusive prefix sum)."""
    if _np(x):  # the same operations, into one buffer
        P = np.empty_like(x)
        P[:, :1] = 0.0
        np.cumsum(x[:, :-1], axis=-1, out=P[:, 1:])
        if seg is None:
            return P
        np.subtract(P, bk.take_rows(P, seg.lo), out=P)
        return np.maximum(P, 0.0, out=P)
    xp = bk.namespace(x)
    P = _excl_prefix(x)
    if seg is None:
        return P
    return xp.maximum(P - bk.take_rows(P, seg.lo), xp.zeros_like(x))


def _inflow(qs: Any, e: Any, n: int, seg: _Segments | None, theta: Any) -> Any:
    r""":math:`\mathrm{In}` of :func:`.pairs.pair_flows` (times :math:`e_n`) on (B, V) rows,
    the sums within each slot's block (``seg``), or over all slots above it (``seg`` None: the
    upper bound :math:`\mathrm{In}^G` of the law error bound); the operations of
    :func:`.pairs._inflow`, in its order."""
    R = _seg_excl_suffix(theta * qs, seg)
    acc = e[:, n - 2, :-1] * R
    for i in range(1, n - 1):
        R = _seg_excl_suffix(qs * R, seg)
        acc = acc + e[:, n - 2 - i, :-1] * R
    return qs * acc


def _outflow(qs: Any, e: Any, n: int, seg: _Segments | None, g: Any) -> Any:
    r""":math:`\mathrm{Out}` of :func:`.pairs.pair_flows` (times :math:`e_n`), as
    :func:`_inflow` (``seg`` None: :math:`\mathrm{Out}^G`); the operations of
    :func:`.pairs._outflow`, in its order."""
    gq = g * qs
    Ub = _seg_excl_prefix(gq, seg)  # e_0 = 1
    for m in range(1, n - 1):
        Ub = _seg_excl_prefix(qs * Ub + gq * e[:, m, :-1], seg)
    return qs * Ub


def _seg_cummax(x: Any, block: Any, shifts: list[tuple[int, Any]]) -> Any:
    """Running maximum within blocks of non-negative finite ``x``.

    numpy: one running maximum of the complex numbers ``block + 1j x``, which numpy orders
    lexicographically (real part first): the block ids do not decrease along a row, so the
    running maximum at k has k's block as real part and the largest x of that block so far as
    imaginary part (exact).  Otherwise a Hillis-Steele doubling scan, the shifted operand times
    ``same`` (slot k and k - s share a block; 0 is the identity of max), each step reading the
    previous step's values."""
    if _np(x):
        z = np.empty(x.shape, dtype=np.complex128)
        z.real, z.imag = block, x
        return np.maximum.accumulate(z, axis=-1).imag
    x = x.clone()
    for s, same in shifts:
        x[:, s:] = bk.namespace(x).maximum(x[:, s:], x[:, :-s] * same)
    return x


def _set_sums(theta: Any, g: Any, qs: Any, n: int, block: Any, longest: int) -> Any:
    r"""Per row, :func:`.pairs.set_sums`: the largest :math:`\theta_y \times` (sum of the n - 1
    largest :math:`g_x`, x < y in y's block, :math:`q_x > 0`), by the running order statistics
    of levels (:math:`T_r` the running maximum of :math:`B_r` within the block,
    :math:`B_{r+1}(j) = \min(B_r(j), T_r(j - 1))`), the sum from the largest down as there.
    ``block`` names each slot's block by its first slot; ``longest`` is the longest block."""
    xp = bk.namespace(g)
    zero = xp.zeros_like(g)
    shifts = []
    s = 1
    while s < longest and not _np(g):
        shifts.append((s, block[:, s:] == block[:, :-s]))
        s *= 2
    first = block[:, 1:] == block[:, :-1]  # slot k - 1 in k's block
    b = xp.where(qs > 0, g, zero)
    top = zero
    for _ in range(n - 1):
        run = _seg_cummax(b, block, shifts)
        before = xp.concat(
            [_zeros_col(g), xp.where(first, run[:, :-1], xp.zeros_like(run[:, :-1]))], axis=-1
        )
        top = top + before
        b = xp.minimum(b, before)
    return xp.max(theta * top, axis=-1)


def _take(x: Any, rows: Any) -> Any:
    """Rows ``rows`` (an index array on x's device) of ``x``."""
    return x[rows]


def _put(x: Any, rows: Any, values: Any) -> Any:
    """``x`` with rows ``rows`` replaced by ``values`` (a copy)."""
    out = x.copy() if _np(x) else x.clone()
    out[rows] = values
    return out


def _index(like: Any, rows: np.ndarray) -> Any:
    return bk.namespace(like).asarray(rows.astype(np.int64), device=_dev(like))


# --- the design ------------------------------------------------------------------------------


def _chain_order(P: Any, Q: Any) -> tuple[Any, Any]:
    """Chain order of each row (p/q ascending, q = 0 last, NaN keys (p = q = 0) after them, equal
    keys by q ascending, then by token id: :func:`.plan.chain_order` and
    :func:`.plan.heavy_last`), and the keys."""
    xp = bk.namespace(P, Q)
    key = P / Q  # q = 0: inf (p > 0) or NaN (p = 0), as plan.sort_keys
    order = ratio_order(key)  # stable: ties by token id
    ks = bk.take_rows(key, order)
    tie = ks[:, 1:] == ks[:, :-1]  # NaN == NaN is False: NaN keys stay in id order
    if not bk.to_host(xp.any(xp.reshape(tie, (-1,)), keepdims=True))[0][0]:  # one read
        return order, key  # no tie in any row: no second sort
    run = xp.concat(
        [xp.zeros_like(order[:, :1]), xp.cumulative_sum(xp.astype(~tie, xp.int64), axis=-1)],
        axis=-1,
    )
    o1 = bk.stable_argsort(bk.take_rows(Q, order))  # by q, stably ...
    o2 = bk.stable_argsort(bk.take_rows(run, o1))  # ... then by tie class, stably
    return bk.take_rows(order, bk.take_rows(o1, o2)), key


def _levels(qs: Any, n: int) -> Any:
    r""":math:`e_m(H_k)`, (B, n + 1, V + 1), by the positive prefix recursion
    (:func:`.pieces.cp_levels` on every row)."""
    xp = bk.namespace(qs)
    B, V = qs.shape
    if _np(qs):  # the same operations, into one buffer
        e = np.empty((B, n + 1, V + 1))
        e[:, 0] = 1.0
        e[:, 1:, 0] = 0.0
        for m in range(1, n + 1):
            np.cumsum(qs * e[:, m - 1, :-1], axis=-1, out=e[:, m, 1:])
        return e
    zero = _zeros_col(qs)
    rows = [xp.concat([zero + 1.0, xp.ones_like(qs)], axis=-1)]
    for _ in range(1, n + 1):
        rows.append(xp.concat([zero, xp.cumulative_sum(qs * rows[-1][:, :-1], axis=-1)], axis=-1))
    return xp.stack(rows, axis=1)


def _scale_exponents(top: Any, Q: Any, n: int) -> Any:
    r""":func:`~mdsd_ot.drafts.sampling.scale_exponent` of every row (float, (B,)): with L the
    sum of :math:`\log_2` of the n largest q (``top``) and m the positive masses,
    :math:`k = -\mathrm{round}((L + \log_2 \binom{m}{n} / 2) / n)` where that is at least
    ``SCALE_FROM`` and m >= n, else 0 (the binomial as a sum over n terms)."""
    xp = bk.namespace(top)
    m = xp.astype(bk.count_true(Q > 0), top.dtype)
    lb = xp.zeros_like(m)
    safe = xp.where(m >= n, m, xp.full_like(m, float(n)))
    for i in range(n):
        lb = lb + xp.log2((safe - i) / (i + 1))
    k = -xp.round((xp.sum(xp.log2(top), axis=-1) + 0.5 * lb) / n)
    return xp.where((m >= n) & (k >= SCALE_FROM), k, xp.zeros_like(k))


def _ldexp(x: Any, k: Any) -> Any:
    """:math:`2^k x` per row (k (B,) integral floats, 0 <= k <= 2046), exact for x >= 0."""
    if _np(x):
        return np.ldexp(x, k.astype(np.int64)[:, None])
    half = (k // 2)[:, None]
    return x * (2.0**half) * (2.0 ** (k[:, None] - half))


def _targets(E: Any, hold: str) -> Any:
    r""":func:`.pairs._targets` on (B, V + 1) rows, the end cuts set to 0."""
    xp = bk.namespace(E)
    if hold == "min":
        Ep = E - bk.cummin(E)
    else:
        sup = xp.maximum(E[:, :-1] - E[:, 1:], xp.zeros_like(E[:, 1:]))
        below = xp.concat([_zeros_col(E), xp.cumulative_sum(sup, axis=-1)], axis=-1)
        Ep = E - E[:, :1] + xp.minimum(E[:, :1], below)
        Ep = xp.maximum(Ep, xp.zeros_like(Ep))
    zero = _zeros_col(E)
    return xp.concat([zero, Ep[:, 1:-1], zero], axis=-1)


def _segments(Ep: Any) -> _Segments:
    """The blocks of the cuts where E' = 0: per slot the last zero cut at or below it and the
    first zero cut above it (cuts 0 and V are zero)."""
    xp = bk.namespace(Ep)
    B, V1 = Ep.shape
    V = V1 - 1
    ar = xp.broadcast_to(xp.reshape(bk.arange_like(Ep, V), (1, V)), (B, V))
    zero = Ep == 0.0
    lo = bk.cummax(xp.where(zero[:, :-1], ar, xp.zeros_like(ar)))
    hi = _flip(bk.cummin(_flip(xp.where(zero[:, 1:], ar + 1, xp.full_like(ar, V)))))
    return _Segments(lo, hi)


def _rank_one(qs: Any, e: Any, n: int, Ep: Any, give: Any = None) -> Any:
    r"""θ of the product model (:func:`.pairs._rank_one`) on every row: :math:`\log G` steps by
    :math:`\log(E'_{c+1}/(E'_c - \gamma_c))` at receivers with :math:`E'_c > 0` (γ = ``give``,
    > 0 at a relay only), one running sum over the row (0 outside the blocks),
    :math:`\theta_y = \Delta_y / (q_y e_{n-2}(H_y) G_y)` at givers and
    :math:`\gamma / (q\, e_{n-2} G)` at a relay, G on the cut below it."""
    xp = bk.namespace(qs)
    zero = xp.zeros_like(qs)
    gam = zero if give is None else give
    d = Ep[:, :-1] - Ep[:, 1:]
    rec = (d < 0) & (Ep[:, :-1] > 0)
    ratio = Ep[:, 1:] / xp.where(rec, Ep[:, :-1] - gam, xp.ones_like(qs))
    step = xp.where(rec, xp.log(xp.where(rec, ratio, xp.ones_like(qs))), zero)
    logG = xp.cumulative_sum(step, axis=-1)
    logG = logG - logG[:, -1:]
    giv = d > 0
    rel = gam > 0
    a = qs * e[:, n - 2, :-1]
    den = a * xp.exp(xp.where(rel, logG - step, logG))
    num = xp.where(rel, gam, d)
    return xp.where(giv | rel, num / xp.where(giv | rel, den, xp.ones_like(den)), zero)


@dataclass
class _Design:
    theta: Any
    g: Any
    T: Any
    short: Any
    worst: Any
    iters: Any
    started: Any  # rank-one start finite (and, with a relay share, a receiver to relay)
    block: Any
    relay: Any  # a receiver to relay (all True without a relay share)
    relay_slot: Any  # its slot (0 where none)


def _empty_design(qs: Any) -> _Design:
    """A full-size :class:`_Design` that no row has reached yet (the rows each try serves are
    put into it): θ = g = T = 0, shortfall ∞, not started."""
    xp = bk.namespace(qs)
    zero = xp.zeros_like(qs)
    col = zero[:, 0]
    slot = xp.astype(col, xp.int64)
    return _Design(zero, zero, zero, col + math.inf, col, col, col > 0, xp.astype(zero, xp.int64),
                   col > 0, slot)  # fmt: skip


def _scale(qs, e, en, n, D, s, Ep, live, tol, share: float = 0.0) -> _Design:
    """The scaling of :func:`.pairs._scaled` on every row of a sub-batch (``live``: rows whose
    levels are usable), each row keeping its best step; stops when every row has stopped.
    ``share`` > 0: each row's heaviest receiver with E' > 0 below it relays that share of the
    flow across that cut (its θ fixed at the start, its g covering what it hands over); rows
    without such a receiver do not start (``_Design.relay`` False)."""
    xp = bk.namespace(qs)
    zero = xp.zeros_like(qs)
    seg = _segments(Ep)
    delta = Ep[:, :-1] - Ep[:, 1:]
    noise = _NOISE * xp.max(Ep, axis=-1, keepdims=True)
    sig = xp.where(delta > noise, delta, zero)
    dem = xp.where(delta < -noise, -delta, zero)
    give = zero
    onehot = xp.zeros_like(qs) > 0
    has_relay = zero[:, 0] == 0.0  # all True: no relay asked for
    if share:
        cand = (dem > 0) & (Ep[:, :-1] > 0)
        r = xp.argmax(xp.where(cand, qs, xp.full_like(qs, -1.0)), axis=-1)
        onehot = (bk.arange_like(Ep, qs.shape[-1])[None, :] == r[:, None]) & cand
        has_relay = xp.any(onehot, axis=-1)
        give = xp.where(onehot, share * Ep[:, :-1], zero)
    theta = _rank_one(qs, e, n, Ep, give)
    th_relay = xp.where(onehot, theta, zero)
    started = xp.all(xp.isfinite(theta), axis=-1) & has_relay
    active = live & started
    en2 = en[:, None]
    inf = xp.full_like(en, math.inf)
    best = None
    best_short = inf
    iters = xp.zeros_like(en)
    hist = []
    Out = zero
    for it in range(PAIR_ITERATIONS):
        In = _inflow(qs, e, n, seg, theta)
        if share and it:  # what the relay hands over with the last g
            give = xp.where(onehot, th_relay * Out / en2, zero)
        g = xp.where(In > 0, (dem + give) * en2 / xp.where(In > 0, In, xp.ones_like(In)), zero)
        Out = _outflow(qs, e, n, seg, g)
        T = D + (g * In - theta * Out) / en2
        short = xp.sum(xp.maximum(s - T, zero), axis=-1)
        finite = xp.isfinite(short)
        upd = active & finite & (short < best_short)
        if best is None:
            best = [theta, g, T]
        else:
            best = [xp.where(upd[:, None], a, b) for a, b in zip((theta, g, T), best, strict=True)]
        best_short = xp.where(upd, short, best_short)
        iters = iters + xp.astype(active & finite, en.dtype)
        stop = ~finite | (short <= tol)
        if it >= 3:
            stop = stop | (short > 0.5 * hist[it - 3])
        hist.append(short)
        active = active & ~stop
        (more,) = bk.to_host(xp.any(active, axis=-1, keepdims=True))  # one synchronisation
        if not more[0]:
            break
        theta = xp.where(Out > 0, sig * en2 / xp.where(Out > 0, Out, xp.ones_like(Out)), zero)
        theta = xp.where(onehot, th_relay, theta)
    theta, g, T = best
    ok = started & (best_short <= tol)
    longest = int(bk.to_host(xp.max(seg.hi - seg.lo, axis=-1))[0].max(initial=1))
    worst = _set_sums(
        xp.where(ok[:, None], theta, zero), xp.where(ok[:, None], g, zero), qs, n, seg.lo, longest
    )
    relay_slot = xp.argmax(xp.astype(onehot, qs.dtype), axis=-1)
    return _Design(theta, g, T, best_short, worst, iters, started, seg.lo, has_relay, relay_slot)


def pair_rows(P: Any, Q: Any, n: int, law: str = "conditional-poisson") -> PairRowPlans:
    r"""The ``cp-pair`` plans (:func:`.pairs.pair_plan`) of the rows of ``P`` and ``Q``; with
    ``law="without"`` the ``seq-pair`` plans of sequential drafts
    (:func:`.seqpair.seq_pair_plan`: D, E and s from the certified sequential Q of every
    prefix, :func:`mdsd_ot.fast.series.series`; the design on the weights
    :math:`w = q u` of :func:`.seqpair.thinning_weights` with :math:`n!` in place of
    :math:`1/e_n`; the law bound adds D's error, the weights' roundings and the sampler's
    relative error of the thinning r(S) times the handed-over flow, as the one-position plan).

    ``P`` and ``Q`` are validated float64 (B, V) rows summing to 1 (numpy arrays or torch
    tensors, on any device); ``n >= 3`` conditional-Poisson drafts.  Per row: the chain order,
    the levels, :math:`D_k = q_k e_{n-1}(H_k)/e_n`, the transfer path E and the sub-law s, the
    target path E' and its blocks, the rank-one start and the scaling

    .. math:: g = \delta' e_n / \mathrm{In}(\theta), \qquad
              \theta = \sigma' e_n / \mathrm{Out}(g), \qquad
              T = D + (g\,\mathrm{In} - \theta\,\mathrm{Out}) / e_n,

    stopped per row as the one-position plan stops (shortfall :math:`\sum (s - T)^+ \le`
    ``PAIR_TOL`` + 1e-15 V, not halving in three steps, ``PAIR_ITERATIONS``; each row keeps its
    best step), the rule check (the n - 1 largest :math:`\theta_y g_x` of every giver sum to at
    most 1 - ``SET_MARGIN``), the next try of :data:`~.pairs.PAIR_TRIES` where one fails
    (``"bottom"``, and relays: the heaviest receiver also hands over; each row in its own
    order, :data:`~.pairs.PAIR_TRIES_HEAVY` where a receiver holds half of q, each try run on
    the rows it serves as a sub-batch), and the accepted sub-law :math:`\min(s, T)`.  The
    flows are *segmented* sums (module docstring).

    **Law error.**  Let u = 2^-53, :math:`\gamma_k = k\varepsilon / (1 - k\varepsilon)` with
    :math:`\varepsilon = 2u` (a factor 2 of margin, as the one-position bound) and c = V + 1,
    the depth of every cumulative sum (each prefix sum a tree of additions of its terms, any
    order: numpy's sequential scan and torch's parallel one alike).  A segmented sum is
    fl(A - B), A and B partial sums of one scan of computed terms :math:`\hat x_j`, B's terms
    among A's; with :math:`|\hat x_j - x_j| \le \gamma_a x_j^G` (:math:`x^G \ge x` the same
    terms with unsegmented inner sums) its error is at most
    :math:`\gamma_c (A + B) + u (A - B) + \ldots \le \gamma_{2c+1} A`, so
    :math:`\gamma_{a + 2c + 1}` times the unsegmented sum :math:`A^G = \sum_{j>k} x_j^G` (the
    clamp at 0 only helps, as the exact value is >= 0).  Nesting: the levels have depth at most
    m c; :math:`R_i` depth :math:`(i + 1)(2c + 3)`, :math:`U_m` depth at most
    :math:`(m + 1)(2c + 4)`, so In and Out are within :math:`\gamma_{d_F} \mathrm{In}^G`,
    :math:`\gamma_{d_F} \mathrm{Out}^G` of the exact segmented flows of the computed θ and g,
    :math:`d_F = (n - 1)(2c + 4) + n`; the products with g and θ, their difference, the
    division by :math:`e_n` (depth nc) and the sum with D add nc + 5, so per slot

    .. math:: |\hat T_k - T_k| \le \gamma_d \bigl(D_k + (g_k \mathrm{In}^G_k
              + \theta_k \mathrm{Out}^G_k) / e_n\bigr), \qquad d = 3n(V + 3) + 6n + 16,

    with a margin for the computed :math:`\mathrm{In}^G, \mathrm{Out}^G` themselves (relative
    :math:`\gamma_{d_F}`) and for :math:`\lambda = \mathrm{fl}(\theta g)` (one rounding of the
    product the law counts).  The output law is within twice the law's error
    (thinning by the computed T, residual mass), so

    .. math:: \beta = \frac{2\gamma_d}{1 - \gamma_d} \Bigl(\sum D + \sum \frac{g\,\mathrm{In}^G
              + \theta\,\mathrm{Out}^G}{e_n}\Bigr) + 4(V + 1)u + (2n + 6)u
              + \frac{16 n (V + 2)^2 (1 + \max g)(1 + \max \theta)\, 2^{-1074}}{e_n},

    the second and third terms the residual's cumulative sum and the uniforms (as
    :func:`.batched_plans.law_error_bound`), the last the absolute errors of products below the
    normal range (at most :math:`2^{-1075}` each, carried into every later partial sum and
    scaled by at most :math:`\max g` and :math:`\max \theta`).  One unsegmented pass serves
    both flow sums: :math:`\sum_x g_x \mathrm{In}^G_x = \sum_y \theta_y \mathrm{Out}^G_y`,
    both the total of :math:`\theta_y g_x q_y q_x e_{n-2}(H_y \setminus x)` over x < y.
    Measured on synthetic rows (V = 50-2,000, n = 3-6): β is 1.03-1.34 times the one-position
    bound; 1.06e-9 against 1.00e-9 at V = 152,064, n = 4, T = 1.  On rows with several blocks
    whose θ and g differ in scale by orders of magnitude (each block's θ g is fixed, its θ and
    g only up to a factor) the cross-block terms can inflate β far more: a review (2026-12-07)
    measured a median of 1.09 on 199k peaked Dirichlet rows (V = 30), 0.15 % above 10 times
    and up to 5.5e6 times, where a row can exceed ``UNCERTIFIED`` and go to the host route
    (still exact, only slower).

    Where :math:`e_n(q) < 2^{-32n}` the design runs on :math:`2^k q` (``scale``), as the
    one-position plan.  A row has ``fits`` False, and ``why`` its reason in the one-position
    plan's words, where the n largest q multiply to less than :math:`2^{-1000}`
    (:func:`.plan.cp_products_underflow`), where the levels are not finite, where neither
    target path gives a rule that reaches the tolerance, or where :math:`\beta >`
    :data:`.plan.UNCERTIFIED`.

    Examples
    --------
    >>> P = np.array([[0.05, 0.15, 0.3, 0.5], [0.25, 0.25, 0.25, 0.25]])
    >>> Q = np.array([[0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]])
    >>> plans = pair_rows(P, Q, 3)
    >>> plans.fits.tolist(), round(float(plans.alpha[0]), 9), float(plans.law_error[0]) < 1e-12
    ([True, False], 1.0, True)
    >>> plans.why[1][:46]  # p = q uniform: the separable hand-overs are not a rule
    'min: not a rule: a draft set would hand over w'
    >>> seq = pair_rows(P[:1], Q[:1], 3, law="without")  # sequential drafts: seq-pair
    >>> from mdsd_ot.fast import alpha_star
    >>> a = float(alpha_star(P[0], Q[0], n=3, scheme="without"))
    >>> bool(seq.fits[0]), bool(0 <= a - float(seq.alpha[0]) < 1e-9), seq.thin is not None
    (True, True, True)
    """
    if law not in ("conditional-poisson", "without"):
        raise ValueError(
            f"law: expected 'conditional-poisson' (cp-pair) or 'without' (seq-pair), got {law!r}"
        )
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 3:
        raise ValueError(
            f"n: {'cp-pair' if law != 'without' else 'seq-pair'} needs an integer n >= 3 drafts,"
            f" got {n!r}; for n = 2 use batched_plans.cp2_rows (conditional Poisson) or the "
            "one-position seq2 plans (sequential)"
        )
    n = int(n)
    if getattr(P, "ndim", None) != 2 or tuple(P.shape) != tuple(getattr(Q, "shape", ())):
        raise ValueError(
            f"P, Q: expected two (B, V) arrays of one shape, got {getattr(P, 'shape', None)} and "
            f"{getattr(Q, 'shape', None)}; stack the positions as rows"
        )
    B, V = P.shape
    xp = bk.namespace(P, Q)
    if P.dtype != xp.float64 or Q.dtype != xp.float64:
        raise ValueError(
            f"P, Q: expected float64 rows, got {P.dtype} and {Q.dtype}; cast them (the law "
            "error bound is that of float64)"
        )
    if B == 0:
        raise ValueError("P, Q: no rows (B = 0): there is no plan to build")
    if V < n:
        raise ValueError(f"n: at most V = {V} distinct drafts, got n = {n}; lower n")
    if _np(P):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            return _pair_rows(P, Q, n, law)
    return _pair_rows(P, Q, n, law)


def _seq_prelude(ps: Any, qs: Any, n: int) -> tuple:
    """The sequential rows' (``seq-pair``) inputs of the design: weights, levels, normaliser,
    D, E, s, live rows, reasons, the thinning (qn, hi, lo, u), the bound's extra terms."""
    from ...fast._dd import accurate_sum
    from ...fast.series import series
    from .seqpair import rest_error, rest_mass, thinning_weights

    xp = bk.namespace(qs)
    B, V = qs.shape
    Qf, berr = series(qs, n, xp, per_prefix=True)  # Q and its bound on every prefix 0..V
    zero = xp.zeros_like(qs)
    D = xp.maximum(Qf[:, 1:] - Qf[:, :-1], zero)
    E = transfer_path(xp.cumulative_sum(ps, axis=-1) - Qf[:, 1:])[0]
    s = xp.maximum(xp.minimum(D + (E[:, 1:] - E[:, :-1]), ps), zero)
    d_err = 2.0 * xp.sum(berr, axis=-1) - berr[:, 0] - berr[:, -1] + EPS * xp.sum(D, axis=-1)
    hi, _, eta = accurate_sum(qs, xp)
    qn = qs / hi[:, None]
    th, tl, teta = accurate_sum(qn, xp)
    top, _ = bk.topk(qn, n - 1)  # descending
    est = rest_mass((th, tl), top)  # the mass outside the n - 1 heaviest (seqpair.thinning)
    second = top[:, 1]
    delta = (est - n * (n - 2) * EPS * second - teta) / (1.0 + (n + 3) * EPS) * (1.0 - EPS)
    ok = delta > 0
    safe_delta = xp.where(ok, delta, xp.ones_like(delta))
    # the sampler's relative error of r(S), and that of the two sums (their bounds η)
    rel = rest_error(n, second, safe_delta) + (n + 1) * (teta / safe_delta + eta / hi)
    u = thinning_weights(qn, n)
    w = qn * u
    e = _levels(w, n)
    en = xp.full_like(hi, 1.0 / math.factorial(n))
    finite = xp.all(xp.isfinite(e[:, :, -1]), axis=-1) & xp.all(xp.isfinite(w), axis=-1)
    finite = finite & xp.all(u > 0, axis=-1)  # r(S) >= 0 needs u > 0
    live = finite & ok & xp.isfinite(d_err)
    ok_h, finite_h = (np.asarray(f).astype(bool) for f in bk.to_host(ok, finite))
    why: list = [None] * B
    for b in range(B):  # host strings only (no array work per row)
        if not ok_h[b]:
            why[b] = "the n - 1 heaviest tokens hold all of q"
        elif not finite_h[b]:
            why[b] = "thinned weights out of range"
    return w, e, en, en, D, E, s, live, why, xp.zeros_like(hi), (qn, th, tl, u, rel, d_err)


def _cp_prelude(P: Any, Q: Any, ps: Any, qs: Any, n: int) -> tuple:
    """The conditional-Poisson rows' (``cp-pair``) inputs of the design (as
    :func:`_seq_prelude`; no thinning, no extra bound terms)."""
    xp = bk.namespace(P, Q)
    B, V = P.shape
    top, _ = bk.topk(Q, n)
    total = xp.sum(Q, axis=-1, keepdims=True)
    under = xp.sum(xp.log2(top / total), axis=-1) < CP_UNDERFLOW_BITS
    e = _levels(qs, n)
    en = e[:, n, -1]
    k = xp.where((en >= _NORMAL_EN**n) | under, xp.zeros_like(en), _scale_exponents(top, Q, n))
    (k_h,) = bk.to_host(k)
    qd = qs  # q by slot for the design: 2^k q where e_n(q) is tiny (the same law)
    if np.any(k_h != 0):
        qd = _ldexp(qs, k)
        e = _levels(qd, n)
        en = e[:, n, -1]
    finite = xp.all(xp.isfinite(e[:, :, -1]), axis=-1) & xp.isfinite(en) & (en > 0)
    safe_en = xp.where(finite, en, xp.ones_like(en))
    D = qd * e[:, n - 1, :-1] / safe_en[:, None]
    E = transfer_path(xp.cumulative_sum(ps, axis=-1) - e[:, n, 1:] / safe_en[:, None])[0]
    s = D + (E[:, 1:] - E[:, :-1])
    s = xp.maximum(xp.minimum(s, ps), xp.zeros_like(s))
    live = finite & ~under
    under_h, finite_h = (np.asarray(f).astype(bool) for f in bk.to_host(under, finite))
    why: list = [None] * B
    for b in range(B):  # host strings only (no array work per row)
        if under_h[b]:
            why[b] = "products underflow"
        elif not finite_h[b]:
            why[b] = "elementary symmetric levels out of range"
    return qd, e, en, safe_en, D, E, s, live, why, k, None


def _pair_rows(P: Any, Q: Any, n: int, law: str = "conditional-poisson") -> PairRowPlans:
    """:func:`pair_rows` after its checks."""
    xp = bk.namespace(P, Q)
    B, V = P.shape
    order, _ = _chain_order(P, Q)
    ps, qs = bk.take_rows(P, order), bk.take_rows(Q, order)
    rank = _ranks(order)
    if law == "without":
        pre = _seq_prelude(ps, qs, n)
    else:
        pre = _cp_prelude(P, Q, ps, qs, n)
    qd, e, en, safe_en, D, E, s, live, why, k, thin = pre
    tol = PAIR_TOL + 1e-15 * V
    # per row its order of tries (pairs.pair_plan): heavy-receiver rows try a relay first
    (heavy_h,) = bk.to_host(heavy_receiver(qs, D, s))
    heavy_h = np.asarray(heavy_h).astype(bool)
    order_of = [PAIR_TRIES_HEAVY if heavy_h[b] else PAIR_TRIES for b in range(B)]
    chosen: list = [None] * B  # the (target path, relay share) that fits, per row
    reasons: list[list[str]] = [[] for _ in range(B)]
    out = None
    designed = np.zeros(B, dtype=bool)  # rows whose fields hold a design's (the first tried)
    pending = np.arange(B)
    for h in range(len(PAIR_TRIES)):
        groups: dict[tuple[str, float], list[int]] = {}
        for b in pending:  # a relay only while every earlier try failed the rule check
            t = order_of[b][h]
            if not t[1] or all("not a rule" in r for r in reasons[b]):
                groups.setdefault(t, []).append(int(b))
        served = set()
        for (hold, share), members in groups.items():
            rows = np.array(members)
            if out is None and len(rows) == B:
                d = out = _scale(qd, e, safe_en, n, D, s, _targets(E, hold), live, tol, share)
            else:  # the rows this try serves, as a sub-batch
                if out is None:  # a full-size design to put the sub-batches' rows into
                    out = _empty_design(qs)
                idx = _index(qs, rows)
                sub = [_take(x, idx) for x in (qd, e, safe_en, D, s, E, live)]
                d = _scale(*sub[:3], n, *sub[3:5], _targets(sub[5], hold), sub[6], tol, share)
            st, sh, wo, rl = (
                np.asarray(x) for x in bk.to_host(d.started, d.short, d.worst, d.relay)
            )
            st, rl = st.astype(bool), rl.astype(bool)  # to_host reads tensors as float64
            good = st & (sh <= tol) & (wo <= 1.0 - SET_MARGIN)
            for j, b in enumerate(rows):
                if why[b] is not None:
                    good[j] = False
                    served.add(int(b))
                    continue
                if not rl[j]:
                    r = "no receiver to relay"
                elif not st[j]:
                    r = "rank-one start out of range"
                elif not np.isfinite(sh[j]):
                    r = "scaling out of range"
                elif sh[j] > tol:
                    r = f"scaling stopped at a shortfall of {sh[j]:.3g}"
                elif not good[j]:
                    r = f"not a rule: a draft set would hand over with probability {wo[j]:.6g}"
                else:
                    chosen[b] = (hold, share)
                    served.add(int(b))
                    continue
                reasons[b].append(f"{try_name(hold, share)}: {r}")
            # the rows that fit, and the others' first design (what they report if none fits)
            keep = np.flatnonzero(good | ~designed[rows])
            designed[rows] = True
            if d is not out and len(keep):
                got, dst = _index(qs, keep), _index(qs, rows[keep])
                for name in ("theta", "g", "T", "short", "worst", "iters", "started", "block",
                             "relay_slot"):  # fmt: skip
                    setattr(out, name, _put(getattr(out, name), dst, _take(getattr(d, name), got)))
        pending = np.array([b for b in pending if b not in served], dtype=int)
        if len(pending) == 0:
            break
    for b in range(B):
        if why[b] is None and chosen[b] is None:
            why[b] = "; ".join(reasons[b])
    theta, g, T = out.theta, out.g, out.T
    zero = xp.zeros_like(qs)
    acc = xp.maximum(xp.minimum(s, T), zero)
    alpha = xp.sum(acc, axis=-1)
    # sum_k g_k In^G_k = sum_y theta_y Out^G_y (both the total of theta_y g_x M^G(y, x) e_n)
    handed = 2.0 * xp.sum(g * _inflow(qd, e, n, None, theta), axis=-1) / safe_en
    flows = xp.sum(D, axis=-1) + handed
    extra = 0 if thin is None else 4 * n + 4  # seq-pair: the roundings of q / Σ q and q u
    law_error = _law_error(n, V, flows, safe_en, xp.max(g, axis=-1), xp.max(theta, axis=-1), extra)
    if thin is not None:  # D's own error and the sampler's relative error of r(S)
        law_error = law_error + thin[5] + thin[4] * handed
    fitted = _index(qs, np.array([b for b in range(B) if chosen[b] is not None], dtype=int))
    fits = _put(xp.zeros_like(live), fitted, xp.ones_like(live[fitted]))
    signs = xp.all(theta >= 0, axis=-1) & xp.all(g >= 0, axis=-1)  # the bound assumes them
    fits = fits & (law_error <= UNCERTIFIED) & signs
    (err_h,) = bk.to_host(law_error)
    hold_back: list = [None] * B
    relay: list = [None] * B
    relayed = any(c is not None and c[1] for c in chosen)
    if relayed:  # the relays' token ids: one gather on the device, one read
        (tok_h,) = bk.to_host(bk.take_rows(order, xp.reshape(out.relay_slot, (-1, 1))))
    for b in range(B):
        if chosen[b] is not None:
            if not err_h[b] <= UNCERTIFIED:
                why[b] = f"law error bound {err_h[b]:.3g} above {UNCERTIFIED:g}"
                continue
            hold, share = chosen[b]
            hold_back[b] = hold
            if share:
                relay[b] = {"token": int(tok_h[b][0]), "share": share}
    iters = xp.astype(out.iters, xp.int64)
    return PairRowPlans(
        n, order, rank, ps, qs, D, s, theta, g, out.block, T, acc, alpha, law_error, fits, why,
        out.short, out.worst, iters, hold_back, en, flows, k, relay,
        None if thin is None else thin[:4],
    )  # fmt: skip


def _law_error(n: int, V: int, flows: Any, en: Any, gmax: Any, tmax: Any, extra: int = 0) -> Any:
    """The bound β of :func:`pair_rows` per row (non-finite inputs give a non-finite bound;
    ``extra``: more roundings in the depth)."""
    d = 3 * n * (V + 3) + 6 * n + 16 + extra
    gam = d * EPS / (1.0 - d * EPS)
    tiny = 16.0 * n * float(V + 2) ** 2 * _TINY
    return (
        2.0 * gam / (1.0 - gam) * flows
        + (4.0 * (V + 1) + 2 * n + 6) * U
        + tiny * (1.0 + gmax) * (1.0 + tmax) / en
    )


# --- the draws -------------------------------------------------------------------------------


def _thin_factor(thin: tuple, own: Any) -> Any:
    r"""The thinning :math:`r(S)` of every draft set, (B, k), from ``own`` (B, k, n) slots and
    the plans' ``thin`` = (qn, hi, lo, u): :func:`.seqpair.set_factor` on the gathered masses
    and weights, each row with its own total."""
    from .seqpair import set_factor

    qn, hi, lo, u = thin
    return set_factor(_gather_flat(qn, own), _gather_flat(u, own), (hi[:, None], lo[:, None]))


def sample_pair_rows(plans: PairRowPlans, t: Any, rng: Any = None) -> tuple[Any, Any]:
    r"""Verify conditional-Poisson draft tuples with the ``cp-pair`` plans.

    ``t``: int64 token ids of shape (B, n) or (B, k, n), the n drafts of a tuple distinct
    (the caller checks).  Per tuple, with slots :math:`x_i = \mathrm{rank}[t_i]` and y the
    highest: draft i (:math:`x_i < y`, same block) is selected with probability
    :math:`\lambda(y, x_i) = \mathrm{fl}(\theta_y g_{x_i})` (one uniform u against the running
    sum of λ in the tuple's order, as :func:`.sample.sample_plan`), y otherwise; the selected
    slot z is output with probability :math:`\mathrm{acc}_z / T_z`, else a token drawn from the
    residual :math:`(p - \mathrm{acc})^+` normalised (p itself where that is 0), by the
    bisection of :func:`.batched_draws.sample_relabel_rows`.  Returns the output tokens ((B,) or
    (B, k)) and whether each is one of its tuple's drafts.

    Only rows with ``plans.fits`` True may be sampled here (the others are not plans: send them
    to the host route).  ``rng``: a numpy ``Generator`` or seed, or a ``torch.Generator`` on the
    tensors' device.

    Examples
    --------
    >>> P, Q = np.array([[0.05, 0.15, 0.3, 0.5]]), np.array([[0.4, 0.3, 0.2, 0.1]])
    >>> plans = pair_rows(P, Q, 3)
    >>> t = np.array([[[0, 1, 2]] * 4000])  # one draft set, 4,000 times
    >>> out, acc = sample_pair_rows(plans, t, np.random.default_rng(0))
    >>> out.shape, bool(acc.all())  # every output is a draft (T = s on these three slots)
    ((1, 4000), True)
    """
    xp = bk.namespace(plans.qs)
    B, V = plans.qs.shape
    rng = _generator(rng)
    single = t.ndim == 2
    T3 = t[:, None, :] if single else t
    k, n = T3.shape[1], T3.shape[2]
    own = xp.reshape(_gather_flat(plans.rank, xp.reshape(T3, (B, k * n))), (B, k, n))
    top = xp.argmax(own, axis=-1)  # (B, k): the first draft with the highest slot
    flat = xp.reshape(own, (B * k, n))
    y = xp.reshape(bk.take_rows(flat, xp.reshape(top, (B * k, 1))), (B, k))
    lam = _gather_flat(plans.theta, y)[:, :, None] * _gather_flat(plans.g, own)
    same = _gather_flat(plans.block, own) == _gather_flat(plans.block, y)[:, :, None]
    lam = xp.where((own < y[:, :, None]) & same, lam, xp.zeros_like(lam))
    if plans.thin is not None:  # seq-pair: each draft set's thinning r(S)
        lam = lam * _thin_factor(plans.thin, own)[:, :, None]
    cum = xp.cumulative_sum(lam, axis=-1)
    u = _uniforms(rng, (B, k), plans.qs)
    hit = u[:, :, None] < cum
    first = xp.argmax(xp.astype(hit, xp.int64), axis=-1)
    pick = xp.where(u < cum[:, :, -1], first, top)
    pick2 = xp.reshape(pick, (B * k, 1))
    z = xp.reshape(bk.take_rows(flat, pick2), (B, k))
    sel_tok = xp.reshape(bk.take_rows(xp.reshape(T3, (B * k, n)), pick2), (B, k))
    T = _gather_flat(plans.T, z)
    a_z = _gather_flat(plans.acc, z)
    ok = T > 0
    a = xp.where(ok, a_z / xp.where(ok, T, xp.ones_like(T)), xp.zeros_like(T))
    keep = _uniforms(rng, (B, k), plans.qs) < a
    zero = xp.zeros_like(plans.ps)
    res = xp.cumulative_sum(xp.maximum(plans.ps - plans.acc, zero), axis=-1)
    empty = res[:, V - 1 : V] <= 0
    res = xp.where(empty, xp.cumulative_sum(plans.ps, axis=-1), res)
    total = res[:, V - 1 : V]
    ur = _uniforms(rng, (B, k), plans.qs) * total
    slot = _first_above(res, xp.zeros_like(z), V, lambda x: x, ur)
    slot = xp.minimum(slot, xp.full_like(slot, V - 1))
    out = xp.where(keep, sel_tok, _gather_flat(plans.order, slot))
    accepted = xp.any(T3 == out[:, :, None], axis=-1)
    return (out[:, 0], accepted[:, 0]) if single else (out, accepted)
