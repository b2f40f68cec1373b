r"""Vectorised sampling of the chain verifier: relabel, select the highest slot, thin, residual.

For a batch of draft tuples ``t`` (B, n) drawn from the plan's law:

1. ``stream`` only: :func:`stream_to_iid` replaces each sequential tuple by the first n values of
   an i.i.d. stream whose first n distinct values are the drafts (exact posterior resampling);
2. each draw of token i keeps its slot ``rank[i]`` or moves to a paired slot with the kernel's
   probabilities (integer uniforms below QUANT, so the kernel is realised exactly);
3. the draw with the highest slot is selected (ties by an independent uniform: a symmetric rule);
4. it is output w.p. ``accept[token]``; otherwise a token is drawn from the residual law.

The swap constructions (piece kernels) replace 2-3: each drafted token picks one piece
(``cp-swap``), or, for ``seq-swap``, every draw of the stopped stream picks a piece (for
``seq-swap-h`` the tokens of ``plan.single`` pick once) and the highest piece over all draws is
drawn in one step from its distribution function given the drafts (:func:`stream_select`: the
generating function of the stream's counts, :func:`stream_counts`, in closed form); the draft
with the highest piece is selected (levels are distinct: no ties).  ``seq2`` (two sequential
drafts) relabels the first draft with its kernel A1 and the second with A2 (the tuple's order
matters), each to a level of :class:`~.seq2_kernel.Seq2Kernel`; the higher level
wins, a tie is a fair coin.

Cost O(n log(max entries per slot)) per tuple after the plan is built (``seq-swap``: O(n P), P
the pieces per drafted slot).

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

import math
from collections.abc import Sequence
from itertools import pairwise

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
    "stream_select",
    "unseen_mass",
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


def unseen_mass(t: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, float]:
    r"""The mass outside the first m drafts, :math:`r_m = \sum_{v \notin \{x_1..x_m\}} q_v`
    (column m - 1, m = 1..n, of a (B, n) array), and :math:`T = \sum_v q_v`.

    A sum of unseen masses, never T minus the seen ones: the K = min(n, V) heaviest tokens of q
    are summed one by one where unseen (lightest first), the others through their total L, less
    the seen ones among them.  That difference keeps its digits: a tuple that holds a light
    token misses a heavy one, so :math:`r_m \ge q_{(K)} \ge` every light mass and
    :math:`L \le V q_{(K)}`, so the relative error of :math:`r_m` is at most about
    :math:`(V + 2n) u`.  A double-double T less the drafts (the previous form) is exact only to
    :math:`2^{-106} T`: with two heavy tokens and a tail of 1e-60 it lost the tail, and the
    ``seq-swap`` sampler, whose law is a ratio of unseen masses, was not lossless there.
    """
    qv = np.asarray(q, dtype=np.float64)
    t = np.asarray(t, dtype=np.int64)
    V = len(qv)
    K = min(t.shape[1], V)
    top = np.argpartition(qv, V - K)[V - K :] if K < V else np.arange(V)
    top = top[np.argsort(qv[top], kind="stable")]  # lightest first: the order of the sums
    light = np.ones(V, dtype=bool)
    light[top] = False
    L = float(qv[light].sum())
    qt = qv[t]
    hit = t[:, :, None] == top[None, None, :]  # (B, n, K): draft i is heavy token j
    seen_top = np.logical_or.accumulate(hit, axis=1)  # heavy token j among x_1..x_m
    unseen_top = np.where(seen_top, 0.0, qv[top][None, None, :]).sum(axis=2)
    seen_light = np.cumsum(np.where(hit.any(axis=2), 0.0, qt), axis=1)
    return unseen_top + np.maximum(L - seen_light, 0.0), math.fsum(qv)


def stream_counts(t: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""Draws of each draft in the stopped stream (until the n-th new value), given the drafts.

    Between the m-th and the (m+1)-th new value the stream repeats seen values a geometric
    number of times (success probability :math:`1 - w_m`, :math:`w_m = q(x_1..x_m)`), each a
    repeat of :math:`x_i` with probability :math:`q(x_i)/w_m` (proofs/optimal_verifier.md,
    Lemma 6 with the stopping time of the n-th new value).  Returns (B, n) counts >= 1.

    The reference law of the counts (tests); :func:`sample_plan` does not draw them: its
    ``seq-swap`` selection uses their generating function (:func:`stream_select`), whose cost
    does not grow with :math:`1/(1 - q_{max})`, the mean count of a peaked row.
    """
    B, n = t.shape
    rest, total = unseen_mass(t, q)
    qt = q[t] / total
    rest = rest / total
    N = np.ones((B, n), dtype=np.int64)
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
    return _first_above(cum, u, lo, hi), end  # first entry with cum > u in [start, start + count)


def _first_above(values: np.ndarray, u: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per draw d, the first index i in ``[lo[d], hi[d])`` with ``values[i] > u[d]`` (``hi[d]``
    where there is none): a vectorised binary search over segments on which ``values`` does not
    decrease (cumulative sums of one row, of one tuple)."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        right = open_ & (values[np.where(open_, mid, 0)] <= u)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)


#: ``seq-swap`` / ``seq-swap-h``: tuples whose stopped stream is expected to pick at most this
#: many pieces beyond one per draft (repeats of ``plan.single`` tokens pick nothing) are
#: sampled by resampling the stream (a binary search per pick); the others by
#: :func:`stream_select`, whose cost, n times the pieces of a slot (up to thousands at
#: V = 152,064), does not grow with :math:`1/(1 - q_{max})`.
STREAM_REPEATS: float = 32.0


#: ... and whose stopped stream is expected to hold at most this many repeats in all (the
#: counts are int64 geometric draws; a peaked row repeats its heavy tokens about
#: :math:`1/(1 - q_{max})` times).
STREAM_DRAWS: float = 2.0**32


def piece_levels(plan: Plan, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Levels whose maximum along a row is the selected draft's highest piece (shape of ``t``).

    ``cp-swap``: one pick per drafted token, every draft's level.  ``seq-swap`` and
    ``seq-swap-h`` (the tokens of ``plan.single`` pick once for all their draws): the highest
    piece over all draws of the stopped stream, either by resampling the stream
    (:func:`stream_counts`; tuples expecting at most :data:`STREAM_REPEATS` extra picks: every
    draft's level) or drawn in one step by :func:`stream_select` (the others: the selected
    draft holds its level, the rest -1, their highest pieces lying below it).  Both realise the
    same law given the tuple (:func:`stream_select`'s proof), so ``np.argmax(..., axis=1)`` is
    the selected draft either way.
    """
    if plan.construction in ("seq-swap", "seq-swap-h"):
        rest, T = unseen_mass(t, plan.q)
        single = np.zeros(t.shape, dtype=bool)
        if plan.construction == "seq-swap-h" and plan.single is not None and plan.single.size:
            single = np.isin(t, plan.single)  # picks once, however often it is drawn
        # expected picks beyond one per draft: between the m-th and the (m+1)-th new value the
        # stream repeats E[R_m] = (T - r_m) / r_m seen values, a share (picking mass of
        # x_1..x_m) / (T - r_m) of them picking a piece
        seen = np.cumsum(np.where(single, 0.0, plan.q[t]), axis=1)[:, :-1]
        r = np.maximum(rest[:, :-1], 1e-300)
        picks = np.sum(seen / r, axis=1)
        # and the stream itself stays short: its repeats R_m ~ Geometric(r_m / T) are int64
        # counts (the tokens of plan.single repeat too, though they pick once)
        draws = np.sum((T - rest[:, :-1]) / r, axis=1)
        few = (picks <= STREAM_REPEATS) & (draws <= STREAM_DRAWS)
        out = np.full(t.shape, -1, dtype=np.int64)
        if few.any():
            reps = stream_counts(t[few], plan.q, rng)
            if plan.single is not None and plan.single.size:
                reps[np.isin(t[few], plan.single)] = 1  # one pick, independent of the stream
            out[few] = _highest_pieces(plan, t[few], rng, reps)
        if not few.all():
            rows = np.flatnonzero(~few)
            pick, level = stream_select(plan, t[rows], rng)
            out[rows, pick] = level
        return out
    return _highest_pieces(plan, t, rng)


def _highest_pieces(
    plan: Plan, t: np.ndarray, rng: np.random.Generator, reps: np.ndarray | None = None
) -> np.ndarray:
    """Every draft's highest piece over ``reps`` picks of its slot (one pick without)."""
    own = plan.slots_of(t)
    uniq, inv = np.unique(own.ravel(), return_inverse=True)
    qi, lev, prob = plan.pieces.rows(uniq)
    draft = np.arange(own.size) if reps is None else np.repeat(np.arange(own.size), reps.ravel())
    lo, _ = _draw_entries(qi, prob, len(uniq), inv.ravel()[draft], rng)
    level = lev[np.minimum(lo, len(lev) - 1)]
    out = np.full(own.size, -1, dtype=np.int64)
    np.maximum.at(out, draft, level)
    return out.reshape(t.shape)


def stream_select(
    plan: Plan, t: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    r"""``seq-swap`` / ``seq-swap-h``: the draft whose piece is highest over every draw of the
    stopped stream, and that piece's level, for each tuple of ``t`` (B, n).

    Rather than resampling the stream (:func:`stream_counts`: about :math:`1/(1 - q_{max})`
    draws of a peaked row, each picking a piece), the maximum piece M is drawn from its
    distribution function given the drafts :math:`\bar x`,

    .. math:: G(c) = \Pr[M \le c \mid \bar x] = \prod_{i=1}^n b_i(c)
              \prod_{m=1}^{n-1} \frac{r_m}{r_m + \sum_{i \le m} q_{x_i} (1 - \tilde b_i(c))},

    :math:`b_i(c)` the probability that one pick of :math:`x_i` is at or below the cut c,
    :math:`r_m = \sum_{v \notin \{x_1..x_m\}} q_v`, :math:`\tilde b_i = b_i` except
    :math:`\tilde b_i = 1` for a token of ``plan.single`` (``seq-swap-h``: one pick for all its
    draws).  The same law as the stream.  *Proof.*  Given :math:`\bar x`, draft
    :math:`x_i` is drawn :math:`N_i = 1 + \sum_{m \ge i} K_{m,i}` times, where between the
    m-th and the (m+1)-th new value the stream repeats :math:`R_m` seen values,
    :math:`\Pr[R_m = k] = (1 - \rho_m)^k \rho_m` with :math:`\rho_m = r_m / T`
    (:math:`T = \sum_v q_v`), each repeat :math:`x_i` w.p. :math:`q_{x_i} / w_m`,
    :math:`w_m = T - r_m`, independently (:func:`stream_counts`).  The picks are independent
    given the counts, so :math:`\Pr[M \le c \mid N] = \prod_i b_i^{N_i}` and
    :math:`G = E[\prod_i b_i^{N_i}] = \prod_i b_i \prod_m E[s_m^{R_m}]` with
    :math:`s_m = \sum_{i \le m} q_{x_i} \tilde b_i / w_m`; the geometric generating
    function gives :math:`E[s^{R_m}] = \rho_m / (1 - (1 - \rho_m) s_m) =
    r_m / (T - \sum_{i \le m} q_{x_i} \tilde b_i)`, and
    :math:`T - \sum_{i \le m} q_{x_i} \tilde b_i = r_m + \sum_{i \le m} q_{x_i}(1 -
    \tilde b_i)`.  A token of ``plan.single`` picks once (:math:`b_i`) whatever its count
    (:math:`\tilde b_i = 1` in :math:`s_m`).  M has distribution function G, so M is the first
    piece c (in level order) with :math:`G(c) > U`, U uniform; the selected draft owns it
    (levels are distinct).  This is the formula of
    :func:`~mdsd_ot.verifiers.chain.exact._pieces_select`, which the tests compare with.  ∎

    Every factor is a ratio of non-negative terms: :math:`1 - b_i` is the exact integer tail
    of the quantised kernel and :math:`r_m` comes from :func:`unseen_mass`, so G carries a
    relative error of a few units of roundoff at any :math:`q_{max}`.  Cost O(B n P) time, P the
    pieces per drafted slot, and memory for at most :data:`STREAM_ENTRIES` (draft, piece)
    entries at a time (the tuples go in blocks: at V = 152,064 a slot holds up to a few
    thousand pieces, and 10⁵ tuples in one block took 24 GB); nothing grows with
    :math:`1/(1 - q_{max})`.
    """
    t = np.asarray(t, dtype=np.int64)
    B, n = t.shape
    if B == 0:
        return _stream_select_block(plan, t, rng)
    uniq, inv = np.unique(plan.slots_of(t).ravel(), return_inverse=True)
    cnt = np.bincount(plan.pieces.rows(uniq)[0], minlength=len(uniq))
    ends = np.cumsum(cnt[inv.ravel()].reshape(B, n).sum(axis=1))  # entries up to each tuple
    marks = np.arange(STREAM_ENTRIES, int(ends[-1]), STREAM_ENTRIES)
    bounds = np.unique(np.concatenate([[0], np.searchsorted(ends, marks, side="right"), [B]]))
    parts = [_stream_select_block(plan, t[a:b], rng) for a, b in pairwise(bounds.tolist())]
    return np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])


#: :func:`stream_select` handles its tuples in blocks of about this many (draft, piece) entries
#: (a dozen arrays of this length: about 0.4 GB).
STREAM_ENTRIES: int = 1 << 22


def _stream_select_block(
    plan: Plan, t: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`stream_select` on one block of tuples, all (draft, piece) entries at once."""
    B, n = t.shape
    own = plan.slots_of(t).ravel()
    uniq, inv = np.unique(own, return_inverse=True)
    inv = inv.ravel()
    qi, lev, prob = plan.pieces.rows(uniq)
    cnt = np.bincount(qi, minlength=len(uniq))
    first = np.cumsum(cnt) - cnt
    # one entry per (draft, piece of its slot): draft-major, levels ascending within a draft
    per = cnt[inv]
    d_of = np.repeat(np.arange(B * n), per)
    off = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)
    e_piece = first[inv][d_of] + off
    pint = np.rint(prob[e_piece] * QUANT).astype(np.int64)
    cum = np.cumsum(pint)
    cum -= np.repeat(cum[np.cumsum(per) - per] - pint[np.cumsum(per) - per], per)  # per draft
    level = lev[e_piece]
    b_of, i_of = d_of // n, d_of % n
    order = np.lexsort((level, b_of))  # each tuple's entries in level order
    level, b_of, i_of, cum = level[order], b_of[order], i_of[order], cum[order]
    E = len(level)
    seg = np.searchsorted(b_of, np.arange(B + 1))  # tuple b holds entries seg[b]:seg[b + 1]
    start_of = seg[b_of]
    ar = np.arange(E)
    C = np.empty((E, n), dtype=np.int64)  # integer b_i(level_k) * QUANT of every draft i
    for i in range(n):
        last = np.maximum.accumulate(np.where(i_of == i, ar, -1))
        C[:, i] = np.where(last >= start_of, cum[np.maximum(last, 0)], 0)
    G = np.prod(C / QUANT, axis=1)
    rest, _ = unseen_mass(t, plan.q)  # r_m, m = 1..n (column m - 1)
    qw = plan.q[t]
    if plan.construction == "seq-swap-h" and plan.single is not None and plan.single.size:
        qw = np.where(np.isin(t, plan.single), 0.0, qw)  # b~ = 1: no weight in the stream terms
    over = np.zeros(E)
    for m in range(1, n):  # the draws between the m-th and the (m+1)-th new value
        over += qw[b_of, m - 1] * ((QUANT - C[:, m - 1]) / QUANT)
        r = rest[b_of, m - 1]
        G *= r / (r + over)
    u = rng.random(B)
    lo = _first_above(G, u, seg[:-1], seg[1:])  # first entry of its tuple with G > u
    k = np.minimum(lo, seg[1:] - 1)  # G = 1 at a tuple's last entry: u < 1 stops before
    return i_of[k], level[k]


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
    """One output token per tuple of ``t`` (B, n) (int64 array of shape (B,); no tuple: an
    empty array, and no random number drawn)."""
    t = np.asarray(t, dtype=np.int64)
    if len(t) == 0:  # the piece samplers index their cumulative sums at the first tuple
        return np.zeros(0, dtype=np.int64)
    rows = np.arange(len(t))
    if plan.pieces is not None:  # the highest piece (seq-swap: the stream or stream_select)
        pick = np.argmax(piece_levels(plan, t, rng), axis=1)
        sel = t[rows, pick]
        sel_slot = plan.slots_of(sel)
    elif plan.pair is not None:  # the highest drafted slot hands over to another, or keeps
        own = plan.slots_of(t)
        top = np.argmax(own, axis=1)
        y = own[rows, top]
        lam = plan.pair.hand_over(y[:, None], own)  # 0 at the top itself (x < y fails)
        if plan.pair.thin is not None:  # seq-pair: the set's thinning r(S)
            lam = lam * plan.pair.thin.factor(own)[:, None]
        cum = np.cumsum(lam, axis=1)
        u = rng.random(len(t))
        pick = np.where(u < cum[:, -1], np.argmax(u[:, None] < cum, axis=1), top)
        sel, sel_slot = t[rows, pick], own[rows, pick]
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
