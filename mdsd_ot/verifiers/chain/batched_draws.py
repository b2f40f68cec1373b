r"""The draws of the batched verifier: relabel, select, thin (proofs/optimal_verifier.md, §10).

Given the plans of :mod:`.batched_plans`, :func:`sample_relabel_rows` relabels each draw along
its pairs, selects the highest slot (ties uniformly at random) and thins by s/T, else draws from
the residual; every step is a whole-array operation through the fast solver's backend layer
(numpy or torch; the uniforms are drawn on the tensors' device).

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

:func:`kernel_row` enumerates a realised kernel row on the host (tests and inspection).

Examples
--------
>>> import numpy as np
>>> from .batched_plans import relabel_rows
>>> plans = relabel_rows(np.array([[0.6, 0.4]]), np.array([[0.5, 0.5]]), 2)
>>> t = np.array([[[0, 1]] * 20000])  # 20,000 tuples (0, 1) at the one position
>>> out, acc = sample_relabel_rows(plans, t, np.random.default_rng(0))
>>> round(float((out == 0).mean()), 1), bool(acc.all())
(0.6, True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...fast import _backend as bk
from .batched_plans import RowPlans, U, _host

__all__ = ["sample_relabel_rows", "kernel_row"]

_GRID = 2**53  #: uniforms are k / 2**53 (exactly representable; the sampler's resolution


def _generator(rng: Any) -> Any:
    """``rng`` as a generator, made once per call: a ``torch.Generator`` or numpy ``Generator``
    as given, a seed (or None) as ``np.random.default_rng(rng)``."""
    if isinstance(rng, np.random.Generator) or type(rng).__name__ == "Generator":
        return rng
    return np.random.default_rng(rng)


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
    >>> from .batched_plans import relabel_rows
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
    at0 = slot == 0  # c_{k-1}: the slot below's c (0 at slot 0)
    below = xp.where(at0, zero, _gather_flat(plans.c, xp.maximum(slot - 1, xp.zeros_like(slot))))
    base = qx * (2.0 * below)
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
    >>> from .batched_plans import relabel_rows
    >>> plans = relabel_rows(np.array([[0.6, 0.4]]), np.array([[0.5, 0.5]]), 2)
    >>> out, acc = sample_relabel_rows(plans, np.array([[1, 1]]), 0)
    >>> out.tolist(), acc.tolist()  # two drafts of token 1: output 1 (accepted) or 0
    ([1], [True])
    """
    xp = bk.namespace(plans.qs)
    B, V = plans.qs.shape
    rng = _generator(rng)  # one stream for every draw below (a seed would restart it each time)
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
