r"""The ``relabel`` verifier for many positions at once, on numpy or torch (the array API).

Positions are the rows of (B, V) arrays p and q (i.i.d. drafts, ``WithReplacement``, any n);
every step is a whole-array operation through the fast solver's backend layer
(:mod:`mdsd_ot.fast._backend`): no per-row Python loop and, on a GPU, no host synchronisation.
The rule is the one of :mod:`.relabel` and :mod:`.rows` (proofs/optimal_verifier.md, §2 and
§10): sort by p/q, form the optimal sub-law

.. math:: s_k = D_k + E_k - E_{k-1}, \qquad D_k = q_k d_k, \quad
          d_k = \sum_{l<n} c_k^l\, c_{k-1}^{n-1-l},

pair the supply :math:`(D - s)^+` with the demand :math:`(s - D)^+` first-in first-out from the
top of the chain, relabel each draw along its pairs, select the highest slot and thin by s/T.
What differs from :mod:`.rows` is how a draw finds its kernel entry: without enumerating its
partners.  A draw at slot x owns an interval :math:`[A_0, A_1)` of supply or demand units
(length :math:`\ell`); its partners are the intervals of the other kind that overlap it.  With a
uniform u, the draw takes the first partner j whose share

.. math:: \theta_j = \mathrm{fl}\bigl(\mathrm{fl}(\min(\max(L_j, A_0), A_1) - A_0) / \ell\bigr)

exceeds u (:math:`L_j` the partner intervals' ends: θ is non-decreasing in j, so a bisection
over all V slots finds it in :math:`\lceil \log_2 (V+1) \rceil` gathers), and moves there with
probability :math:`\ell / ((d_{hi} - d_{lo})\, q_x)`.  Its kernel entry is then
:math:`(\theta_j - \theta_{j-1})\,\ell / ((d_{hi} - d_{lo}) q_x)`, that is
:math:`\tau_{xy} / ((d_y - d_x) q_x) = m_{xy}/q_x` up to rounding: the swap kernel of §2, with
both ends of a pair computing the same overlap :math:`\tau` from the same four numbers.

Examples
--------
>>> import numpy as np
>>> P, Q = np.array([[0.6, 0.4]]), np.array([[0.5, 0.5]])
>>> plans = relabel_rows(P, Q, 2)
>>> round(float(plans.alpha[0]), 12)  # α* = 1: token 0 is selected from {0, 1} w.p. 0.7
1.0
>>> t = np.array([[[0, 1]] * 20000])  # 20,000 tuples (0, 1) at the one position
>>> out, acc = sample_relabel_rows(plans, t, np.random.default_rng(0))
>>> round(float((out == 0).mean()), 1), bool(acc.all())
(0.6, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...fast import _backend as bk
from ...fast.order import ratio_order

__all__ = [
    "RowPlans",
    "relabel_rows",
    "cp2_rows",
    "sample_relabel_rows",
    "verify_rows",
    "CONSTRUCTIONS",
    "law_error_bound",
    "kernel_row",
]

U = 2.0**-53  #: unit roundoff of float64
_GRID = 2**53  #: uniforms are k / 2**53 (exactly representable; the sampler's resolution


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
    w = (c - qs) * qs  # e_2 increments q_k c_{k-1} >= 0
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
    gap = s - 2.0 * qs * (c - qs) / two_e2[:, None]  # s - D_CP in the new order
    cum = _intervals(gap, qs > 0, two_e2)
    d = c + (c - qs)  # i.i.d. slot rates, n = 2
    err = law_error_bound(2, V) / two_e2  # on the device: no host synchronisation
    return RowPlans(2, order, _ranks(order), ps, qs, d, s, cum, alpha, err, two_e2, c)


def _sublaw(ps: Any, F: Any, D: Any) -> tuple[Any, Any, Any]:
    r"""The optimal sub-law of Theorem 1 from F = P - Q on the prefixes 1..V (:math:`F_0 = 0`)
    and the deterministic rule's law D: ``(s, dE, alpha)``.

    :math:`E_j = \max(0, F_j - \min_{i > j} F_i)` (:math:`E_V = 0`), :math:`dE_k = E_{k+1} -
    E_k`, :math:`s = \min(\max(D + dE, 0), p)` and :math:`\alpha^* = \min(1, 1 + \min_j F_j)`:
    the operations of ``plan._transfer`` and ``plan._sublaw``, on (B, V) rows.
    """
    xp = bk.namespace(F)
    zero = xp.zeros_like(F[:, :1])
    S = _flip(bk.cummin(_flip(F)))  # S_k = min over prefixes k..V (prefixes 1..V)
    S_next = xp.concat([S[:, 1:], zero], axis=-1)  # min over prefixes k+1..V; F_V is 0 there
    E = xp.concat([xp.maximum(F - S_next, zero)[:, :-1], zero], axis=-1)  # prefixes 1..V
    E_prev = xp.concat([xp.maximum(-S[:, :1], zero), E[:, :-1]], axis=-1)  # E_0 = max(0, -S_1)
    dE = E - E_prev
    s = xp.minimum(xp.maximum(D + dE, zero), ps)
    alpha = xp.minimum(1.0 + xp.minimum(S[:, 0], zero[:, 0]), zero[:, 0] + 1.0)
    return s, dE, alpha


def _uniforms(rng: Any, shape: tuple[int, ...], like: Any) -> Any:
    """Uniforms k / 2**53 on the device of ``like`` (a numpy Generator, a seed, or a
    ``torch.Generator``; a numpy generator's numbers are copied to the device)."""
    if bk.is_numpy_array(like):
        g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        return g.integers(0, _GRID, size=shape, dtype=np.int64) * U
    import torch

    if isinstance(rng, torch.Generator):
        k = torch.randint(0, _GRID, shape, generator=rng, device=rng.device, dtype=torch.int64)
        return k.to(device=like.device, dtype=torch.float64) * U
    g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    k = g.integers(0, _GRID, size=shape, dtype=np.int64)
    return torch.from_numpy(k * U).to(like.device)


def _gather_flat(x: Any, idx: Any) -> Any:
    """``x[b, idx[b, ...]]`` for (B, N) ``x`` and an index array of shape (B, ...)."""
    B = idx.shape[0]
    flat = bk.take_rows(x, bk.namespace(idx).reshape(idx, (B, -1)))
    return bk.namespace(idx).reshape(flat, idx.shape)


def kernel_row(plans: RowPlans, b: int, slot: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The realised kernel row of ``slot`` in row ``b``: destination slots and probabilities.

    The probabilities are :math:`(\theta_j - \theta_{j-1}) \min(1, \ell/((d_{hi} - d_{lo}) q_x))`
    over the partners j (module docstring), computed by enumeration on the host; for tests and
    inspection (the sampler never forms rows).

    Examples
    --------
    >>> plans = relabel_rows(np.array([[0.6, 0.4]]), np.array([[0.5, 0.5]]), 2)
    >>> dest, prob = kernel_row(plans, 0, 0)  # slot 0 (token 1) moves up w.p. 0.3
    >>> dest.tolist(), prob.round(6).tolist()
    ([1], [0.3])
    """
    cum, d, qs = _host(plans.cum[b]), _host(plans.d[b]), _host(plans.qs[b])
    V = len(qs)
    r = V - 1 - slot
    for side in (1, 0):  # demand first, then supply (a slot is at most one of them)
        A1 = cum[side, r]
        A0 = cum[side, r - 1] if r > 0 else 0.0
        ln = A1 - A0
        if ln > 0:
            break
    else:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    L = cum[1 - side]
    theta = (np.minimum(np.maximum(L, A0), A1) - A0) / ln
    share = np.diff(theta, prepend=0.0)
    j = np.flatnonzero(share > 0)
    partner = V - 1 - j
    ok = partner > slot if side == 1 else partner < slot
    j, partner = j[ok], partner[ok]
    lo, hi = np.minimum(partner, slot), np.maximum(partner, slot)
    den = (d[hi] - d[lo]) * qs[slot]
    acc = np.where(den > 0, np.minimum(1.0, ln / np.where(den > 0, den, 1.0)), 0.0)
    return partner, share[j] * acc


def _first_above(flat: Any, base: Any, V: int, value: Any, u: Any) -> Any:
    """Per entry, the smallest j in 0..V-1 with ``value(flat[b, base + j]) > u`` (V if none),
    for ``value`` non-decreasing in j: a bisection of ceil(log2(V + 1)) gathers, exact (no
    offsets added to the keys)."""
    xp = bk.namespace(u)
    lo = xp.zeros_like(base)
    hi = xp.full_like(base, V)
    top = xp.full_like(base, V - 1)
    for _ in range(max(1, math.ceil(math.log2(V + 1)))):
        open_ = lo < hi
        mid = xp.minimum((lo + hi) // 2, top)
        right = open_ & ~(value(_gather_flat(flat, mid + base)) > u)
        lo = xp.where(right, mid + 1, lo)
        hi = xp.where(open_ & ~right, mid, hi)
    return lo


def _relabel_draws(plans: RowPlans, slot: Any, rng: Any) -> Any:
    """The slot of every draw after relabelling; ``slot`` (B, N) are the draws' own slots."""
    xp = bk.namespace(slot)
    B, V = plans.qs.shape
    N = slot.shape[1]
    cum = xp.reshape(plans.cum, (B, 2 * V))
    r = (V - 1) - slot
    rm = xp.maximum(r - 1, xp.zeros_like(r))
    first = r == 0
    own = []
    for side in (0, 1):  # side 0 supply, 1 demand: the draw's own interval
        A1 = _gather_flat(cum, r + side * V)
        A0 = xp.where(first, xp.zeros_like(A1), _gather_flat(cum, rm + side * V))
        own.append((A0, A1))
    is_dem = own[1][1] > own[1][0]
    A0 = xp.where(is_dem, own[1][0], own[0][0])
    A1 = xp.where(is_dem, own[1][1], own[0][1])
    ln = A1 - A0
    has = ln > 0
    safe_ln = xp.where(has, ln, xp.ones_like(ln))
    base = xp.where(is_dem, xp.zeros_like(slot), xp.full_like(slot, V))  # partner side offset
    u = _uniforms(rng, (B, N), plans.qs)
    j = _first_above(  # the first partner whose share theta_j exceeds u
        cum, base, V, lambda L: (xp.minimum(xp.maximum(L, A0), A1) - A0) / safe_ln, u
    )
    partner = (V - 1) - xp.minimum(j, xp.full_like(j, V - 1))
    valid = has & (j < V) & xp.where(is_dem, partner > slot, partner < slot)
    hi_s = xp.maximum(partner, slot)
    lo_s = xp.minimum(partner, slot)
    den = (_gather_flat(plans.d, hi_s) - _gather_flat(plans.d, lo_s)) * _gather_flat(plans.qs, slot)
    valid = valid & (den > 0)
    acc = xp.minimum(ln / xp.where(valid, den, xp.ones_like(den)), xp.ones_like(den))
    u2 = _uniforms(rng, (B, N), plans.qs)
    move = valid & (u2 < acc)
    return xp.where(move, partner, slot)


def _selection_law(plans: RowPlans, slot: Any) -> Any:
    r"""T at the given slots: :math:`D + (\text{paired demand}) - (\text{paired supply})`.

    Only partners on the right side count (supply above a demand slot, demand below a supply
    slot): the demand of x met by the supply strictly above it, :math:`[A_0, A_1) \cap [0,
    \mathrm{Sup}(x))`, and the supply of y met by the demand strictly below it,
    :math:`[A_0, A_1) \cap [\mathrm{Dem}(y), \mathrm{Dem}_{tot})` (in exact arithmetic the
    whole demand, and the supply up to the total demand).
    """
    xp = bk.namespace(slot)
    B, V = plans.qs.shape
    cum = xp.reshape(plans.cum, (B, 2 * V))
    r = (V - 1) - slot
    rm = xp.maximum(r - 1, xp.zeros_like(r))
    first = r == 0

    def ends(side):
        A1 = _gather_flat(cum, r + side * V)
        A0 = xp.where(first, xp.zeros_like(A1), _gather_flat(cum, rm + side * V))
        return A0, A1

    (s0, s1), (d0, d1) = ends(0), ends(1)
    tot_d = xp.broadcast_to(plans.cum[:, 1, V - 1 : V], s1.shape)
    zero = xp.zeros_like(s1)
    paired_dem = xp.maximum(xp.minimum(d1, s0) - d0, zero)  # s0: supply strictly above
    paired_sup = xp.maximum(xp.minimum(s1, tot_d) - xp.maximum(s0, d1), zero)  # d1: demand above
    qx = _gather_flat(plans.qs, slot)
    if plans.two_e2 is None:
        return qx * _gather_flat(plans.d, slot) + paired_dem - paired_sup
    # cp2: (T_iid - q^2) / 2e_2 with D_iid - q^2 = 2 q c_{k-1} (no cancellation)
    base = qx * (2.0 * (_gather_flat(plans.c, slot) - qx))
    return (base + paired_dem - paired_sup) / plans.two_e2[:, None]


def sample_relabel_rows(plans: RowPlans, t: Any, rng: Any = None) -> tuple[Any, Any]:
    r"""Verify draft tuples: ``t`` (B, n) or (B, k, n) token ids, row b drawn i.i.d. from q[b].

    Each draw is relabelled (module docstring), the highest slot is selected (ties uniformly
    at random), output with probability :math:`\min(s, T)/T`, else a token is drawn from
    the residual :math:`(p - s)^+` normalised.  Returns the output tokens ((B,) or (B, k)) and
    whether each is one of its tuple's drafts.  ``rng``: a numpy ``Generator`` or seed, or a
    ``torch.Generator`` on the tensors' device (numbers drawn on the device: no host copy).

    Examples
    --------
    >>> plans = relabel_rows(np.array([[0.6, 0.4]]), np.array([[0.5, 0.5]]), 2)
    >>> out, acc = sample_relabel_rows(plans, np.array([[1, 1]]), 0)
    >>> out.tolist(), acc.tolist()  # two drafts of token 1: output 1 (accepted) or 0
    ([1], [True])
    """
    xp = bk.namespace(plans.qs)
    B, V = plans.qs.shape
    single = t.ndim == 2
    T3 = t[:, None, :] if single else t
    k, n = T3.shape[1], T3.shape[2]
    tok = xp.reshape(T3, (B, k * n))
    own = _gather_flat(plans.rank, tok)
    z = _relabel_draws(plans, own, rng)
    tie = _uniforms(rng, (B, k * n), plans.qs)
    key = xp.reshape(xp.astype(z, plans.qs.dtype) + 0.5 * tie, (B, k, n))
    pick = xp.argmax(key, axis=-1)  # (B, k)
    own3 = xp.reshape(own, (B, k, n))
    sel_slot = xp.reshape(
        bk.take_rows(xp.reshape(own3, (B * k, n)), xp.reshape(pick, (B * k, 1))), (B, k)
    )
    sel_tok = xp.reshape(
        bk.take_rows(xp.reshape(T3, (B * k, n)), xp.reshape(pick, (B * k, 1))), (B, k)
    )
    T = _selection_law(plans, sel_slot)
    s = _gather_flat(plans.s, sel_slot)
    ok = T > 0
    a = xp.where(ok, xp.minimum(s, T) / xp.where(ok, T, xp.ones_like(T)), xp.zeros_like(T))
    keep = _uniforms(rng, (B, k), plans.qs) < a
    res = xp.cumulative_sum(xp.maximum(plans.ps - plans.s, xp.zeros_like(plans.s)), axis=-1)
    total = res[:, V - 1 : V]
    empty = total <= 0
    res = xp.where(empty, xp.cumulative_sum(plans.ps, axis=-1), res)
    total = res[:, V - 1 : V]
    u = _uniforms(rng, (B, k), plans.qs) * total
    slot = _first_above(res, xp.zeros_like(sel_slot), V, lambda x: x, u)
    slot = xp.minimum(slot, xp.full_like(slot, V - 1))
    out = xp.where(keep, sel_tok, bk.take_rows(plans.order, slot))
    accepted = xp.any(T3 == out[:, :, None], axis=-1)
    return (out[:, 0], accepted[:, 0]) if single else (out, accepted)


def _check_tokens(t: Any, B: int, V: int, n: int) -> Any:
    """Draft tuples as int64 of shape (B, n) or (B, k, n), every id in 0..V-1."""
    xp = bk.namespace(t)
    if t.ndim not in (2, 3) or t.shape[0] != B or t.shape[-1] != n:
        raise ValueError(
            f"draft_tokens: expected shape (B, n) = ({B}, {n}) or (B, k, n) with B = {B} rows "
            f"and n = {n} drafts, got {tuple(t.shape)}; give one tuple (or k tuples) per row"
        )
    if not xp.isdtype(t.dtype, "integral"):
        raise ValueError(f"draft_tokens: must hold integer token ids, got dtype {t.dtype}")
    t = xp.astype(t, xp.int64)
    if t.size if bk.is_numpy_array(t) else t.numel():
        lo, hi = (int(v) for v in bk.to_host(xp.min(t), xp.max(t)))  # one host synchronisation
        if lo < 0 or hi >= V:
            bad = lo if lo < 0 else hi
            raise ValueError(
                f"draft_tokens: token id {bad} is outside the vocabulary 0..{V - 1}; give ids "
                "of the rows' vocabulary"
            )
    return t


#: The constructions of this module and the fast kernel (law) each one verifies.
CONSTRUCTIONS: dict[str, str] = {"relabel": "with", "cp2": "conditional-poisson"}


def verify_rows(
    P: Any,
    Q: Any,
    n: int,
    draft_tokens: Any,
    rng: Any = None,
    construction: str = "relabel",
    *,
    return_plans: bool = False,
) -> tuple[Any, ...]:
    r"""The optimal verifier on (B, V) rows of numpy arrays or tensors: ``relabel`` (i.i.d.
    drafts, any n) or ``cp2`` (conditional Poisson, n = 2; its tuples hold distinct tokens).

    Validates p and q once (on their device, one host synchronisation for the flags and one for
    the token range), renormalises the rows, computes in float64 (float32 input is cast, so
    the law error stays that of :func:`law_error_bound`), builds the plans of all rows with one
    sort each and verifies ``draft_tokens`` ((B, n) or (B, k, n)).  Returns the output tokens
    and the accepted flags, on the input's device; with ``return_plans=True`` also the
    :class:`RowPlans` (``alpha``: each row's α*, the acceptance of the verifier;
    ``law_error``: its bound).

    Examples
    --------
    >>> P, Q = np.array([[0.6, 0.4], [0.2, 0.8]]), np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> out, acc = verify_rows(P, Q, 2, np.array([[1, 1], [0, 1]]), 0)
    >>> out.shape, acc.dtype
    ((2,), dtype('bool'))
    >>> _, _, plans = verify_rows(P, Q, 2, np.array([[1, 1], [0, 1]]), 0, return_plans=True)
    >>> plans.alpha.round(4).tolist()  # α* of each position: the verifier's acceptance
    [1.0, 0.95]
    """
    from ... import _validate as V_
    from ...fast._check import check_array, check_numpy

    n = V_.check_n(n)
    if construction not in CONSTRUCTIONS:
        raise ValueError(
            f"construction: expected one of {', '.join(CONSTRUCTIONS)}, got {construction!r}"
        )
    if construction == "cp2" and n != 2:
        raise ValueError(f"n: cp2 is the conditional-Poisson verifier for n = 2, got n = {n}")
    kernel = CONSTRUCTIONS[construction]
    if bk.is_numpy_array(P) and bk.is_numpy_array(Q):
        P2, Q2, (sp, sq) = check_numpy(P, Q, n, kernel)
        t = np.asarray(draft_tokens)
    else:
        P2, Q2, (sp, sq) = check_array(P, Q, n, kernel)
        xp = bk.namespace(P2)
        P2, Q2 = xp.astype(P2, xp.float64), xp.astype(Q2, xp.float64)
        sp, sq = xp.astype(sp, xp.float64), xp.astype(sq, xp.float64)
        t = draft_tokens
        if bk.is_numpy_array(t) or not hasattr(t, "device"):
            t = xp.asarray(np.asarray(t), device=P2.device)
        elif t.device != P2.device:
            raise ValueError(
                f"draft_tokens: is on {t.device} but p is on {P2.device}; put both on one device"
            )
    P2, Q2 = P2 / sp[:, None], Q2 / sq[:, None]
    B, V = Q2.shape
    t = _check_tokens(t, B, V, n)
    plans = relabel_rows(P2, Q2, n) if construction == "relabel" else cp2_rows(P2, Q2)
    out, accepted = sample_relabel_rows(plans, t, rng)
    return (out, accepted, plans) if return_plans else (out, accepted)
