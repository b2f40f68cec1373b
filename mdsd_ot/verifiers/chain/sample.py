r"""Vectorised sampling of the chain verifier: relabel, select the highest slot, thin, residual.

For a batch of draft tuples ``t`` (B, n) drawn from the plan's law:

1. ``stream`` only: :func:`stream_to_iid` replaces each sequential tuple by the first n values of
   an i.i.d. stream whose first n distinct values are the drafts (exact posterior resampling);
2. each draw of token i keeps its slot ``rank[i]`` or moves to a paired slot with the kernel's
   probabilities (integer uniforms below QUANT, so the kernel is realised exactly);
3. the draw with the highest slot is selected (ties by an independent uniform: a symmetric rule);
4. it is output w.p. ``accept[token]``; otherwise a token is drawn from the residual law.

The swap constructions (piece kernels) replace 2-3: each drafted token picks one piece
(``cp-swap``), or, for ``seq-swap``, the stopped stream is resampled (:func:`stream_counts`: the
number of draws of every draft until the n-th new value) and every draw picks a piece (for
``seq-swap-h`` the tokens of ``plan.single`` pick once); the draft with the highest piece is
selected (levels are distinct: no ties).  ``seq2`` (two sequential
drafts) relabels the first draft with its kernel A1 and the second with A2 (the tuple's order
matters), each to a level of :class:`~.seq2_kernel.Seq2Kernel`; the higher level
wins, a tie is a fair coin.

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

from ._arena import SCRATCH
from ._passes import kernels
from .plan import Plan, build_plan
from .relabel import QUANT, rates_from_cum
from .rows import kernel_rows, selection_law_at

__all__ = [
    "stream_to_iid",
    "stream_counts",
    "relabel_slots",
    "piece_levels",
    "sample_plan",
    "sample_plans",
    "draw_rows",
]


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


def stream_counts(t: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""Draws of each draft in the stopped stream (until the n-th new value), given the drafts.

    Between the m-th and the (m+1)-th new value the stream repeats seen values a geometric
    number of times (success probability :math:`1 - w_m`, :math:`w_m = q(x_1..x_m)`), each a
    repeat of :math:`x_i` with probability :math:`q(x_i)/w_m` (proofs/optimal_verifier.md,
    Lemma 6 with the stopping time of the n-th new value).  Returns (B, n) counts >= 1.
    """
    B, n = t.shape
    qt = q[t] / float(np.sum(q))
    N = np.ones((B, n), dtype=np.int64)
    rest = np.maximum(1.0 - np.cumsum(qt, axis=1), 0.0)
    for m in range(1, n):
        succ = np.clip(rest[:, m - 1], 1e-300, 1.0)  # probability that the next value is new
        R = rng.geometric(succ) - 1
        left = R.copy()
        mass = np.cumsum(qt[:, :m][:, ::-1], axis=1)[:, ::-1]  # q(x_i..x_m)
        for i in range(m - 1):
            pi = np.clip(qt[:, i] / np.maximum(mass[:, i], 1e-300), 0.0, 1.0)
            k = rng.binomial(left, pi)
            N[:, i] += k
            left -= k
        N[:, m - 1] += left
    return N


def _draw_entries(
    row_of: np.ndarray, prob: np.ndarray, n_rows: int, rows: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    r"""One entry of its row per draw, by a vectorised binary search (the integer kernel).

    ``row_of`` (non-decreasing, values below ``n_rows``) gives the row of every entry and ``prob``
    its probability, realised exactly as the integer :math:`\mathrm{rint}(prob \cdot QUANT)`.
    Draw d (of row ``rows[d]``) takes, with a uniform integer :math:`u_d < QUANT`, the first entry
    of its row whose cumulative integer probability within the row exceeds :math:`u_d`.  Returns
    that index and the end of the row, per draw: index = end where :math:`u_d` is past the
    row's total (no entry drawn; the rest of the row's mass).
    """
    pint = np.rint(prob * QUANT).astype(np.int64)
    cum = np.cumsum(pint)
    first = np.flatnonzero(np.r_[True, row_of[1:] != row_of[:-1]])
    cnt = np.diff(np.r_[first, row_of.size])
    cum -= np.repeat(cum[first] - pint[first], cnt)
    start = np.zeros(n_rows, dtype=np.int64)
    count = np.zeros(n_rows, dtype=np.int64)
    start[row_of[first]] = first
    count[row_of[first]] = cnt
    lo = start[rows]
    hi = lo + count[rows]
    end = hi.copy()
    u = rng.integers(0, QUANT, size=len(rows), dtype=np.int64)
    while True:  # first entry with cum > u inside [start, start + count)
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        right = open_ & (cum[np.where(open_, mid, 0)] <= u)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)
    return lo, end


def piece_levels(plan: Plan, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The level of every draft's highest piece (shape of ``t``): one pick per drafted token
    (``cp-swap``) or the maximum over its draws of the resampled stopped stream (``seq-swap``;
    ``seq-swap-h``: the tokens of ``plan.single`` pick once for all their draws)."""
    own = plan.slots_of(t)
    reps = None
    if plan.construction in ("seq-swap", "seq-swap-h"):
        reps = stream_counts(t, plan.q, rng)
        if plan.single is not None and plan.single.size:
            reps[np.isin(t, plan.single)] = 1  # one pick, independent of the stream
    uniq, inv = np.unique(own.ravel(), return_inverse=True)
    qi, lev, prob = plan.pieces.rows(uniq)
    draft = np.arange(own.size) if reps is None else np.repeat(np.arange(own.size), reps.ravel())
    lo, _ = _draw_entries(qi, prob, len(uniq), inv.ravel()[draft], rng)
    level = lev[np.minimum(lo, len(lev) - 1)]
    out = np.full(own.size, -1, dtype=np.int64)
    np.maximum.at(out, draft, level)
    return out.reshape(t.shape)


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
    lo, end = _draw_entries(qi, prob, len(uniq), inv, rng)
    moved = lo < end
    return own.reshape(t.shape), np.where(moved, dest[np.where(moved, lo, 0)], own).reshape(t.shape)


def sample_plan(plan: Plan, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One output token per tuple of ``t`` (B, n) (int64 array of shape (B,))."""
    t = np.asarray(t, dtype=np.int64)
    rows = np.arange(len(t))
    if plan.pieces is not None:
        pick = np.argmax(piece_levels(plan, t, rng), axis=1)
        sel = t[rows, pick]
        sel_slot = plan.slots_of(sel)
    elif plan.seq2 is not None:  # first draft by kernel A1, second by A2; higher level wins
        own = plan.slots_of(t)
        l1, l2 = plan.seq2.pair_levels(own[:, 0], own[:, 1], rng)
        pick = np.where(l1 == l2, rng.random(len(t)) < 0.5, l2 > l1).astype(np.int64)
        sel, sel_slot = t[rows, pick], own[rows, pick]
    else:
        if plan.construction == "stream":
            t = stream_to_iid(t, plan.q, rng)
        own, slots = relabel_slots(plan, t, rng)
        top = slots.max(axis=1, keepdims=True)
        tie = np.where(slots == top, rng.random(t.shape), -1.0)
        pick = np.argmax(tie, axis=1)
        sel, sel_slot = t[rows, pick], own[rows, pick]
    uniq, inv = np.unique(sel_slot, return_inverse=True)
    T = selection_law_at(plan, uniq)[inv]
    acc = np.divide(np.minimum(plan.s_at(sel_slot), T), T, out=np.zeros(len(t)), where=T > 0)
    keep = rng.random(len(t)) < acc
    if keep.all():
        return sel
    res = plan.residual if plan._residual is not None or len(t) > _FEW else _residual_once(plan)
    slot = np.minimum(
        np.searchsorted(res, rng.random(len(t)) * res[-1], side="right"), len(res) - 1
    )
    return np.where(keep, sel, plan.order[slot])


#: Batches of at most this many tuples draw the residual from a scratch cumulative law (one
#: fused pass, nothing kept); larger ones build the plan's cached :attr:`Plan.residual`.
_FEW: int = 8


def _residual_once(plan: Plan) -> np.ndarray:
    r"""The cumulative residual law of :attr:`Plan.residual` in a per-thread scratch buffer
    (valid until the next call): the same numbers, without the plan's V-size arrays ``ps`` and
    (``relabel``) ``s_full``.  Compiled: one pass over the slots (:mod:`._passes`)."""
    V = len(plan.order)
    out = SCRATCH.get("residual", V)
    kern = kernels()
    iid2 = plan.s is None and plan.dE is not None and plan.n == 2 and plan.two_e2 is None
    if kern is not None and (plan.s is not None or iid2):
        if plan.s is not None:
            total = kern["residual_cumsum"](plan.p, plan.order, plan.s, out)
        else:
            total = kern["residual_cumsum_iid2"](plan.p, plan.q, plan.order, plan.c, plan.dE, out)
        if not total > 0:
            kern["cumsum_p"](plan.p, plan.order, out)
        return out
    ps = np.take(plan.p, plan.order, out=SCRATCH.get("residual_ps", V))
    s = plan.s
    if s is None:  # Plan.s_at on every slot, in scratch: q (c + (c - q)) + dE for n = 2
        qk = np.take(plan.q, plan.order, out=SCRATCH.get("residual_qs", V))
        s = np.subtract(plan.c, qk, out=SCRATCH.get("residual_s", V))
        work = (SCRATCH.get("residual_w1", V), SCRATCH.get("residual_w2", V)) if plan.n > 2 else ()
        s = rates_from_cum(plan.c, s, plan.n, work)
        s *= qk
        s += plan.dE
        np.minimum(s, ps, out=s)  # np.clip(s, 0, p): the same for p >= 0
        np.maximum(s, 0.0, out=s)
    w = np.subtract(ps, s, out=out)
    np.maximum(w, 0.0, out=w)
    np.cumsum(w, out=out)
    if not out[-1] > 0:
        np.cumsum(ps, out=out)
    return out


def sample_plans(plans: Sequence[Plan], t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Batched positions: row b of ``t`` (B, n) is verified with ``plans[b]``."""
    t = np.asarray(t, dtype=np.int64)
    return np.array([sample_plan(pl, t[b : b + 1], rng)[0] for b, pl in enumerate(plans)])


def draw_rows(
    P: np.ndarray, Q: np.ndarray, n: int, construction: str, t: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Batched positions, one plan at a time: row b of ``t`` (B, n) verified against ``P[b]``
    with drafts from ``Q[b]``; returns the B output tokens.  With ``t`` of shape (B, k, n)
    (k tuples per position) each plan verifies its row's k tuples: (B, k) output tokens.

    The same draws as ``sample_plans(build_plans(P, Q, n, construction), t, rng)`` (same plans,
    same random numbers in the same order), but each plan is *pooled* (``build_plan(...,
    pooled=True)``: its V-size arrays reuse the previous row's buffers) and dropped once its row
    is drawn, so the working memory is that of one position, not B plans' V-size arrays, and no
    fresh V-size array is touched after the first row (fresh arrays cost page faults).

    Examples
    --------
    >>> P = np.array([[0.6, 0.4], [0.1, 0.9]])
    >>> Q = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> t = np.array([[0, 0], [0, 0]])
    >>> draw_rows(P, Q, 2, "relabel", t, np.random.default_rng(0)).shape
    (2,)
    >>> draw_rows(P, Q, 2, "relabel", np.zeros((2, 5, 2), int), np.random.default_rng(0)).shape
    (2, 5)
    """
    t = np.asarray(t, dtype=np.int64)
    t3 = t if t.ndim == 3 else t[:, None, :]  # (B, k, n): k tuples per row (k = 1 for (B, n))
    out = np.empty(t3.shape[:2], dtype=np.int64)
    for b in range(len(P)):
        plan = build_plan(P[b], Q[b], n, construction, pooled=True)
        out[b] = sample_plan(plan, t3[b], rng)
    return out if t.ndim == 3 else out[:, 0]
