r"""Vectorised sampling of the chain verifier: relabel, select the highest slot, thin, residual.

For a batch of draft tuples ``t`` (B, n) drawn from the plan's law:

1. ``stream`` only: :func:`stream_to_iid` replaces each sequential tuple by the first n values of
   an i.i.d. stream whose first n distinct values are the drafts (exact posterior resampling);
2. each draw of token i keeps its slot ``rank[i]`` or moves to a paired slot with the kernel's
   probabilities (integer uniforms below QUANT, so the kernel is realised exactly);
3. the draw with the highest slot is selected (ties by an independent uniform: a symmetric rule);
4. it is output w.p. ``accept[token]``; otherwise a token is drawn from the residual law.

Cost O(n log(max entries per slot)) per tuple after the plan is built.

Examples
--------
>>> import numpy as np
>>> from .plan import build_plan
>>> plan = build_plan(np.array([0.6, 0.4]), np.array([0.5, 0.5]), 2, "relabel")
>>> out = sample_plan(plan, np.array([[0, 1]] * 20000), np.random.default_rng(0))
>>> round(float((out == 0).mean()), 1)  # selects token 0 from {0, 1} w.p. 0.7
0.7
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .plan import Plan
from .relabel import QUANT
from .rows import kernel_rows, selection_law_at

__all__ = ["stream_to_iid", "relabel_slots", "sample_plan", "sample_plans"]


def stream_to_iid(t: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""I.i.d. tuples from sequential without-replacement tuples (exact posterior resampling).

    Given that the first n distinct values of an i.i.d. q-stream are :math:`x_1, \dots, x_n` in
    this order, the stream continues, after m distinct values of total mass :math:`w_m`, with a
    repeat of the seen value v w.p. :math:`q(v)` and with :math:`x_{m+1}` w.p. :math:`1 - w_m`.
    The first n stream values are then i.i.d. q and every one of them is a draft.
    """
    B, n = t.shape
    qt = q[t]
    cq = np.cumsum(qt, axis=1)
    out = np.empty_like(t)
    out[:, 0] = t[:, 0]
    rows = np.arange(B)
    m = np.ones(B, dtype=np.int64)
    cols = np.arange(n)[None, :]
    for k in range(1, n):
        u = rng.random(B)
        w = cq[rows, m - 1]
        rep = u < w
        j = ((cq <= u[:, None]) & (cols < m[:, None])).sum(axis=1)
        out[:, k] = np.where(rep, t[rows, np.minimum(j, m - 1)], t[rows, np.minimum(m, n - 1)])
        m = m + ~rep
    return out


def relabel_slots(
    plan: Plan, t: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The own slot of every draw and its slot after relabelling (both of the shape of ``t``).

    Kernel rows are built once per distinct drafted slot; each draw then finds its entry by a
    vectorised binary search over its row's cumulative integer probabilities.
    """
    own = plan.slots_of(t).ravel()
    if plan.pairs is None:
        return own.reshape(t.shape), own.reshape(t.shape)
    uniq, inv = np.unique(own, return_inverse=True)
    qi, dest, prob = kernel_rows(plan, uniq)
    if qi.size == 0:
        return own.reshape(t.shape), own.reshape(t.shape)
    pint = np.rint(prob * QUANT).astype(np.int64)
    cum = np.cumsum(pint)
    first = np.flatnonzero(np.r_[True, qi[1:] != qi[:-1]])
    cum -= np.repeat(cum[first] - pint[first], np.diff(np.r_[first, qi.size]))
    start = np.zeros(len(uniq), dtype=np.int64)
    count = np.zeros(len(uniq), dtype=np.int64)
    start[qi[first]] = first
    count[qi[first]] = np.diff(np.r_[first, qi.size])
    lo = start[inv]
    hi = lo + count[inv]
    end = hi.copy()
    u = rng.integers(0, QUANT, size=own.size, dtype=np.int64)
    while True:  # first entry with cum > u inside [start, start + count)
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        right = open_ & (cum[np.where(open_, mid, 0)] <= u)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)
    moved = lo < end
    return own.reshape(t.shape), np.where(moved, dest[np.where(moved, lo, 0)], own).reshape(t.shape)


def sample_plan(plan: Plan, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One output token per tuple of ``t`` (B, n) (int64 array of shape (B,))."""
    t = np.asarray(t, dtype=np.int64)
    if plan.construction == "stream":
        t = stream_to_iid(t, plan.q, rng)
    own, slots = relabel_slots(plan, t, rng)
    top = slots.max(axis=1, keepdims=True)
    tie = np.where(slots == top, rng.random(t.shape), -1.0)
    pick = np.argmax(tie, axis=1)
    rows = np.arange(len(t))
    sel, sel_slot = t[rows, pick], own[rows, pick]
    uniq, inv = np.unique(sel_slot, return_inverse=True)
    T = selection_law_at(plan, uniq)[inv]
    acc = np.divide(np.minimum(plan.s[sel_slot], T), T, out=np.zeros(len(t)), where=T > 0)
    keep = rng.random(len(t)) < acc
    if keep.all():
        return sel
    res = plan.residual
    slot = np.minimum(
        np.searchsorted(res, rng.random(len(t)) * res[-1], side="right"), len(res) - 1
    )
    return np.where(keep, sel, plan.order[slot])


def sample_plans(plans: Sequence[Plan], t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Batched positions: row b of ``t`` (B, n) is verified with ``plans[b]``."""
    t = np.asarray(t, dtype=np.int64)
    return np.array([sample_plan(pl, t[b : b + 1], rng)[0] for b, pl in enumerate(plans)])
