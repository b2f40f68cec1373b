r"""α* below the cost of one sort: bucket the ratios, bound each bucket, sort only the survivors.

The optimum of T7 is a prefix of the tokens in the order of :math:`r = p/q`.  Instead of sorting
all V ratios, one linear pass puts every token in a *bucket* of ratios (the float's exponent and
its top :data:`SUB_BITS` mantissa bits: 16 buckets per octave over :math:`2^{\pm 32}`, two end
buckets for the rest) and histograms, per bucket, p and the few statistics the law's Q needs
(:mod:`mdsd_ot.fast.chain`).  Cumulative sums over the buckets give the objective
:math:`f = P - Q` exactly at every bucket boundary (each is a prefix of the sorted order), so

.. math::

   UB = \min_{j} f(H_{<j}) \;\ge\; \min_k f(H_k) = \alpha^* - 1 .

Inside bucket b (ratios in :math:`[r_{lo}, r_{hi})`, masses :math:`p_b, q_b`) any prefix adds a
set S of the bucket with :math:`t = q(S)`; then :math:`P \ge \max(P_b + r_{lo} t,\;
P_{b+1} - r_{hi}(q_b - t))` (P grows at a rate between :math:`r_{lo}` and :math:`r_{hi}` per
unit of q), and Q lies below the chord between the bucket's ends (Q is convex along every chain:
q-convexity, T5).  The bound

.. math::

   LB_b = \min_{t \in \{0,\ t^*,\ q_b\}} \Bigl[\max(P_b + r_{lo} t,\ P_{b+1} - r_{hi}(q_b - t))
          - Q_b - (Q_{b+1} - Q_b)\,t / q_b\Bigr],
   \qquad t^* = \frac{r_{hi} q_b - p_b}{r_{hi} - r_{lo}},

is piecewise linear in t, so its minimum sits at one of the three points.  A bucket with
:math:`LB_b \ge UB - \text{tol}` cannot hold a better prefix; the others (usually one bucket of
a few thousand tokens) are sorted and scanned exactly, their statistics continuing from the
bucket's boundary.  The result is the sorting path's α* (the same prefix minimum, summed in
another order; ``tol`` = :data:`TOL` plus the law's own error bound).

Scanning C survivors costs about what the sorting path costs on C tokens, so survivors are
scanned even when they are many; a row is sorted instead when its fullest bucket holds more than
the law's ``dense_fraction`` of V (estimated from every :data:`STRIDE`-th token right after the
bucketing pass, before any histogram: the worst case then costs the sort plus about a tenth;
a misjudged row only costs time, never accuracy), when its survivors exceed
:data:`MAX_FRACTION` of V, or when the law cannot bound its error (conditional Poisson with an
ill-conditioned light part); in a batch, the most crowded rows are sorted alone where that costs
less than widening the second phase for every row (:func:`phase2_capacity`).  numpy and torch
run the same code; on torch the histograms are
``scatter_add_``, there is no per-row loop, and the only host synchronisation reads the
survivor counts (which fix the shape of the second phase).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V_
from . import _backend as bk
from . import _fused, _fused_row, _fused_series
from . import _histograms as hg
from .chain import CHAINS, Chain, chain_for
from .order import ratio_order
from .prefix import sort_key
from .scan import solve_sorted

__all__ = [
    "SUB_BITS",
    "HALF_WINDOW",
    "TOL",
    "MAX_FRACTION",
    "solve_bucketed",
    "phase2_capacity",
    "shared_buckets",
    "supports",
    "validated_front",
    "FUSED_DECLINED",
]

#: What :func:`validated_front` returns, and the validator hands on as ``shared``, when the fused
#: bucketing pass ran on the row and left it to numpy's route (ratios beyond the window, one
#: crowded bucket): the bucket path then goes to numpy's route at once, without that pass again.
FUSED_DECLINED: str = "fused route declined"

#: Mantissa bits per bucket: 2**SUB_BITS buckets per octave of p/q.
SUB_BITS: int = 4
#: Mantissa bits per bucket on the fused route (:mod:`mdsd_ot.fast._fused`), whose histograms
#: cost the same whatever their number: finer buckets, tighter bounds, fewer survivors.
FUSED_SUB_BITS: int = 7
#: Buckets cover p/q in [2**-FUSED_HALF_WINDOW, 2**FUSED_HALF_WINDOW) on the fused route.
FUSED_HALF_WINDOW: int = 64
#: The fused route merges buckets (fewer mantissa bits) while a row occupies more than this many.
FUSED_MAX_BUCKETS: int = 4096
#: The fused route leaves a row to numpy's buckets (every octave of float64 its own) when more
#: than this share of its ratios lie beyond the window (positive, finite, outside 2**±64).
FUSED_OUTSIDE: float = 0.1
#: ... or when one of its buckets holds more than this share of the tokens (sampled): the laws'
#: dense-bucket test (``dense_fraction``, at least this share) then decides on numpy's route.
FUSED_DENSE: float = 0.25
#: Buckets cover p/q in [2**-HALF_WINDOW, 2**HALF_WINDOW); two end buckets hold the rest.
HALF_WINDOW: int = 32
#: numpy: the dense-bucket test counts the tokens of every STRIDE-th column only.
STRIDE: int = 8
#: Absolute slack of the pruning test (beyond the law's own error bound).
TOL: float = 1e-13
#: A row whose surviving buckets hold more than this share of V is sorted instead.
MAX_FRACTION: float = 0.75
#: numpy: rows whose fullest bucket holds more than a share of V are sorted at once, before the
#: law's statistics are formed (the bounds could not spare much of the sort); the share is the
#: law's ``dense_fraction`` (:mod:`mdsd_ot.fast.chain`: 0.4, conditional Poisson 0.25, the
#: sequential series 0.6).

_U = 2.0**-53


def supports(kernel: str) -> bool:
    """Whether the bucket path has a chain evaluator for this kernel."""
    return kernel in CHAINS


def _excl(x: Any, xp: Any) -> Any:
    """Cumulative sums along the last axis with a leading 0: entry j sums the first j terms."""
    return bk.exclusive(xp.cumulative_sum(x, axis=-1), xp)


def _suffix(x: Any, xp: Any) -> Any:
    """Entry j = sum of the terms j.. (a trailing 0): the mass *outside* the first j buckets."""
    s = xp.flip(xp.cumulative_sum(xp.flip(x, axis=-1), axis=-1), axis=-1)
    return xp.concat([s, xp.zeros_like(s[:, :1])], axis=-1)


def solve_bucketed(
    p: Any,
    q: Any,
    sp: Any,
    sq: Any,
    n: int,
    kernel: str,
    return_set: bool = False,
    shared: Any = None,
) -> tuple[Any, Any, Any]:
    r"""α* of validated (B, V) rows by bucket-and-bound; ``(alpha, H or None, err)``.

    ``p``, ``q`` are non-negative rows (not necessarily normalised) with row sums ``sp``, ``sq``
    (the law is that of the normalised rows).  ``err`` is the law's error bound per row, as in
    :func:`mdsd_ot.fast.scan.solve_sorted`.  Rows the bounds cannot settle cheaply are solved
    by the sorting path.  ``shared`` (from :func:`shared_buckets`) lets several laws on the same
    rows reuse one bucketing pass (:data:`FUSED_DECLINED`: numpy's route at once).

    Examples
    --------
    >>> p, q = np.array([[0.05, 0.05, 0.9]]), np.array([[0.5, 0.3, 0.2]])
    >>> a, H, err = solve_bucketed(p, q, np.ones(1), np.ones(1), 2, "without", True)
    >>> round(float(a[0]), 12), H.tolist()  # exact: 41/70
    (0.585714285714, [[True, True, False]])
    """
    xp = bk.namespace(p, q)
    B, V = p.shape
    law = chain_for(kernel, n)
    if shared is FUSED_DECLINED:  # the validator's fused pass left the row to numpy's route
        shared = _shared_numpy(p, q)
    shared = shared if shared is not None else _shared(p, q, law.fused_sub_bits)
    if shared["one_ratio"]:  # numpy: every ratio equal, the chain one block of ties
        # P is linear and Q convex along it (T5), so f = P - Q is concave and its minimum is
        # at an end: f(empty) = 0 = f(everything), alpha* = 1 with the empty set (T7)
        alpha = xp.ones((B,), dtype=p.dtype)
        H = xp.zeros((B, V), dtype=xp.bool) if return_set else None
        return alpha, H, xp.zeros((B,), dtype=xp.float64)
    exact = None
    Hn = shared["Hs"]  # numpy: tokens per bucket in every STRIDE-th column (an estimate)
    if Hn is not None and B == 1 and Hn.max() * shared["stride"] > law.dense_fraction * V:
        # numpy: one bucket holds most of the row.  If all its ratios are equal, the objective
        # is concave along it (P linear, Q convex): its ends bound it exactly.  Otherwise its
        # bounds could not spare the sort, so sort now (what was spent: one division, one
        # shift and two bincounts).
        exact = _equal_ratio_buckets(p, q, shared["ids"], Hn[0], law.dense_fraction * V
                                     / shared["stride"])  # fmt: skip
        if exact is None:
            a, h, e = solve_sorted(V_.normalise(p, sp), V_.normalise(q, sq), n, kernel, return_set)
            return a, h, xp.zeros_like(xp.astype(sq, xp.float64)) + e
    if exact is None and B == 1 and _fused_row.serves(law, shared, p):
        out = _solve_fused_row(p, q, sp, sq, law, shared, return_set)
        if out is not None:
            return out
    elif exact is None and B == 1 and _fused_series.serves(law, shared, p):
        out = _solve_fused_series(p, q, sp, sq, law, shared, return_set)
        if out is not None:
            return out
    st = _phase1(p, q, sp, sq, law, xp, shared, exact)
    # the one host synchronisation (tensors): the survivor counts, which fix phase 2's shapes
    counts, fallback = bk.to_host(st["counts"], st["fallback"])
    counts, fallback = counts.astype(np.int64), fallback.astype(bool)
    C, fallback = phase2_capacity(counts, fallback, V)
    slow = np.flatnonzero(fallback)
    if slow.size == B:  # every row: the sorting path on the rows themselves (no copies)
        a, h, e = solve_sorted(V_.normalise(p, sp), V_.normalise(q, sq), n, kernel, return_set)
        return a, h, xp.zeros_like(xp.astype(sq, xp.float64)) + e
    if slow.size:  # their survivors are not collected; the sort overwrites their results
        # one copy of the row numbers to the device, shared by every use below (each copy from
        # host memory is a synchronisation on a GPU)
        slow = xp.asarray(slow, device=getattr(p, "device", None))
        if st["mask"] is not None:
            keep = xp.ones((B,), dtype=xp.bool, device=getattr(p, "device", None))
            keep[slow] = False
            st["mask"] = st["mask"] & keep[:, None]
    alpha, H, err = _phase2(st, law, C, return_set, xp)
    if slow.shape[0]:
        Pn = _rows(p, slow, xp) / _rows(sp, slow, xp)[:, None]
        Qn = _rows(q, slow, xp) / _rows(sq, slow, xp)[:, None]
        a, h, e = solve_sorted(Pn, Qn, n, kernel, return_set)
        e = xp.zeros_like(a) + e
        alpha, H, err = _merge(alpha, H, err, slow, a, h, xp.astype(e, xp.float64), xp)
    return alpha, H, err


def phase2_capacity(counts: np.ndarray, fallback: np.ndarray, V: int) -> tuple[int, np.ndarray]:
    r"""The width C of phase 2 for B rows with these survivor counts, and the rows to sort instead.

    Phase 2 gathers, sorts and scans a (B, C) block, C the largest count it keeps, so one row
    with many survivors would make every row pay for them.  With the rows already falling back
    (``fallback``) sorted whatever happens, the others are ordered by count and the k largest
    are sent to the sorting path (V tokens each) where that costs less:

    .. math::

       C = c_{(k+1)}, \qquad k = \arg\min_{k \ge 0} \bigl[B\,c_{(k+1)} + k\,V\bigr],

    :math:`c_{(1)} \ge c_{(2)} \ge \dots` the counts of the rows kept (:math:`c_{(B'+1)} = 0`);
    ties keep more rows.  One row (B = 1) is never sent (C ≤ V).  Only time depends on the
    choice: both paths give the same α* (``tests/fast/test_bucket.py``).

    Examples
    --------
    >>> C, slow = phase2_capacity(np.array([40, 50, 60_000, 30]), np.zeros(4, bool), 100_000)
    >>> C, slow.tolist()  # one crowded row: sorted alone, the others share a block of 50
    (50, [False, False, True, False])
    >>> phase2_capacity(np.array([7]), np.zeros(1, bool), 10)[0]
    7
    """
    B = len(counts)
    fallback = np.asarray(fallback, dtype=bool).copy()
    kept = np.flatnonzero(~fallback)
    if kept.size == 0:
        return 0, fallback
    order = kept[np.argsort(-counts[kept], kind="stable")]
    c = np.append(counts[order], 0)  # c[k] = the width once the k largest are sorted
    cost = B * c + V * np.arange(len(c))
    k = int(np.argmin(cost))  # the first minimum: the fewest rows sent
    fallback[order[:k]] = True
    return int(c[k]), fallback


def _solve_fused_row(p, q, sp, sq, law: Chain, shared: dict[str, Any], return_set: bool):
    r"""One fused-route row of a law with a closed-form Q, after its histograms, in one
    compiled call (:func:`mdsd_ot.fast._fused_row.solve_row`); None where it declines.

    The error bound is the law's (conditional Poisson: :math:`\gamma_D \kappa` with the depth
    D taken at its largest, every token and bucket; 0 otherwise), tripled, plus :data:`TOL`,
    as the array code reports it."""
    ctx = law.setup(p, q, sq, np, shared.get("qmax"))
    ids, NB = shared["ids"], shared["NB"]
    hists = law.histograms(ids, q, ctx, NB, shared.get("Hq"))
    err, Nt = 0.0, 1.0
    if law.kernel == "conditional-poisson":
        ctx["L_total"] = [np.cumsum(h[0])[-1:] for h in hists]
        V = ids.shape[-1]
        Nts, bound = law._totals(ctx, 2 * V + NB, np)
        err, Nt = float(bound[0]), float(Nts[0, 0])
        if not np.isfinite(err):  # ill-conditioned: the array code sorts the row
            return None
    id0 = shared["id0"]
    edges = hg.bucket_edges(p, shared["sub_bits"], shared["half_window"], id0, id0 + NB, True)
    out = _fused_row.solve_row(
        law.kernel, law.n, p[0], q[0], shared, hists, ctx, float(sp[0]), float(sq[0]), edges,
        TOL, MAX_FRACTION, return_set, Nt,
    )  # fmt: skip
    if out is None:
        return None
    alpha, H = out
    return np.array([alpha]), (None if H is None else H[None, :]), np.array([3.0 * err + TOL])


def _solve_fused_series(p, q, sp, sq, law: Chain, shared: dict[str, Any], return_set: bool):
    r"""One fused-route row of the sequential series (without, n >= 3) after the series' setup
    and its power histograms, in five calls (:func:`mdsd_ot.fast._fused_series.solve_row`);
    None where it declines.  The error bound is the series' largest at the points evaluated,
    tripled, plus :data:`TOL`, as the array code reports it."""
    ctx = law.setup(p, q, sq, np, shared.get("qmax"))  # the heavy tokens: q's block maxima
    if bool(ctx["refuse"][0]):  # tiny masses beyond the n - 1 largest: the array code sorts it
        return None
    hists = law.histograms(shared["ids"], q, ctx, shared["NB"], shared.get("Hq"))
    out = _fused_series.solve_row(
        p[0], q[0], shared, hists, ctx, float(sp[0]), float(sq[0]), TOL, MAX_FRACTION, return_set
    )
    if out is None:
        return None
    alpha, H, err = out
    return np.array([alpha]), (None if H is None else H[None, :]), np.array([3.0 * err + TOL])


def shared_buckets(p: Any, q: Any, shared: Any = None) -> dict[str, Any]:
    """One bucketing pass for several laws on the same rows (see :func:`solve_bucketed`);
    ``shared``: the pass already formed (returned as is), :data:`FUSED_DECLINED` (numpy's
    route), or None."""
    if shared is FUSED_DECLINED:
        return _shared_numpy(p, q)
    return shared if shared is not None else _shared(p, q)


def _rows(x: Any, rows: Any, xp: Any) -> Any:
    """Rows ``rows`` (an index array of x's library, on its device) of an array (numpy or
    torch), or the value itself for non-arrays."""
    if not bk.is_array(x) or x.ndim == 0:
        return x
    return xp.take(x, rows, axis=0)


def _merge(alpha, H, err, rows, a, h, e, xp):
    """Results ``a``, ``h``, ``e`` of the rows ``rows`` (index array on the device) put back."""
    if bk.is_torch(alpha):
        alpha = alpha.index_copy(0, rows, a.to(alpha.dtype))
        err = err.index_copy(0, rows, e.to(err.dtype))
        H = None if H is None else H.index_copy(0, rows, h)
    else:
        alpha[rows] = a
        err[rows] = e
        if H is not None:
            H[rows] = h
    return alpha, H, err


#: Buckets holding more than this share of the (sampled) tokens are checked for one ratio
#: once the fullest bucket is dense and of one ratio (ties in a few ratios: none is scanned).
TIE_SHARE: float = 0.05


def _equal_ratio_buckets(
    p: Any, q: Any, ids: Any, counts: np.ndarray, dense: float
) -> list[tuple[int, float]] | None:
    """The buckets of one ratio among the fullest of the one numpy row: ``[(b, r), ...]``, or
    None when a bucket over ``dense`` (sampled) tokens holds several ratios (the row is sorted).

    The fullest bucket decides first; when it is of one ratio, every other bucket holding more
    than :data:`TIE_SHARE` of the tokens is checked too (a row of ties in a few ratios then
    has every tie bucket bounded by its ends, none of them scanned)."""
    order = np.argsort(counts)[::-1]
    first = _equal_ratio_bucket(p, q, ids, int(order[0]))
    if first is None:
        return None
    out = [first]
    share = TIE_SHARE * counts.sum()
    for b in order[1:32]:
        if counts[b] <= share:
            break
        tie = _equal_ratio_bucket(p, q, ids, int(b))
        if tie is not None:
            out.append(tie)
        elif counts[b] > dense:
            return None
    return out


def _equal_ratio_bucket(p: Any, q: Any, ids: Any, b: int) -> tuple[int, float] | None:
    """(b, r) when every token of bucket b of the one numpy row has the ratio r, else None.

    The bucket holds a large share of the row, so its tokens among the first 4,096 decide
    most cases at once; only a bucket whose sample is of one ratio is read in full."""
    for head in (ids[0, :4096], ids[0]):
        sel = np.flatnonzero(head == b)
        key = sort_key(p[0, sel], q[0, sel])
        if sel.size and key.min() != key.max():
            return None
    r = float(key.min()) if sel.size else np.nan
    return (b, r) if np.isfinite(r) else None


def _shared(p: Any, q: Any, sub_bits: int | None = None) -> dict[str, Any]:
    """What every law shares: the bucket of every token and their number; (numpy) the tokens
    per bucket among every ``stride``-th column (``Hs``, for the dense-bucket test), or
    ``one_ratio`` when every ratio is the same; p's histogram (``Hp``) and the exact tokens per
    bucket (``Hn``), formed on first use by :func:`_phase1`; ``id0``: numpy, one row, the ids
    count from the smallest occupied bucket (its absolute id, for the bucket edges); the bucket
    layout (``sub_bits``, ``half_window``, ``window``).  One float64 numpy row with numba takes
    the fused route (:mod:`mdsd_ot.fast._fused`: finer buckets on the window, ``Hp``, ``Hq``
    and ``Hn`` from the same pass), unless its ratios spread beyond the window or crowd into one
    bucket."""
    if _fused.one_row(p):  # numba: key, buckets and the histograms of p, q, counts in two loops
        out, _ = _shared_fused(p, q, sub_bits)
        if out is not None:
            return out
    return _shared_numpy(p, q)


def _shared_fused(
    p: np.ndarray, q: np.ndarray, sub_bits: int | None = None
) -> tuple[dict[str, Any] | None, Any]:
    """The fused route's :func:`_shared` of one float64 (1, V) row and the validation figures
    of the same pass (:func:`mdsd_ot.fast._fused.bucket_front`), or ``(None, None)`` when the
    row's ratios spread beyond the window or crowd into one bucket (numpy's route).
    ``sub_bits``: buckets per octave as 2**sub_bits (default :data:`FUSED_SUB_BITS`; a law's
    ``fused_sub_bits``, :mod:`mdsd_ot.fast.chain`)."""
    sub_bits = FUSED_SUB_BITS if sub_bits is None else int(sub_bits)
    qmax = np.empty(_fused.block_count(p.shape[-1]), dtype=np.int64)
    front = _fused.bucket_front(
        p[0], q[0], sub_bits, FUSED_HALF_WINDOW, FUSED_OUTSIDE, FUSED_DENSE, True, qmax
    )
    if front is None:
        return None, None
    ids, id0, Hp, Hq, Hn, stats = front
    out = {"ids": ids[None, :], "NB": Hp.size, "Hp": Hp[None, :], "Hq": Hq[None, :]}
    out["qmax"] = qmax  # q's block maxima, for the heavy tokens (Chain.setup)
    out.update(Hn=Hn[None, :], Hs=Hn[None, :], stride=1, id0=id0, one_ratio=False)
    out.update(sub_bits=sub_bits, half_window=FUSED_HALF_WINDOW, window=True)
    if Hp.size > FUSED_MAX_BUCKETS:  # ratios spread wide: coarser buckets, a bounded phase 1
        _coarsen(out, (Hp.size - 1) // FUSED_MAX_BUCKETS)
    if Hp.size == 1:  # one bucket: are all ratios equal?
        out["one_ratio"] = _one_ratio(p, q)
    return out, stats


def validated_front(
    p: Any, q: Any, sub_bits: int | None = None
) -> tuple[dict[str, Any], tuple] | str | None:
    r"""The fused route's first pass on raw input rows, before validation: ``(shared, stats)``.

    For one float64 C-contiguous numpy row (shape (V,) or (1, V)) with the compiled kernels on,
    the bucketing pass also yields what :func:`mdsd_ot._validate.prob_rows` reads (the row
    sums, whether an entry has its sign bit set, the positive entries of q:
    :func:`mdsd_ot.fast._fused.bucket_front`), so the input is read once for both.  The caller
    accepts the rows from ``stats`` (:func:`mdsd_ot.fast._check.fused_rows_ok`) or, on any
    doubt, validates them the usual way.  None when the row does not qualify;
    :data:`FUSED_DECLINED` when the pass ran and left the row to numpy's route (it then bounds
    nothing: the caller validates the usual way).  ``sub_bits`` as in :func:`_shared_fused`
    (the law's choice).
    """
    if not (isinstance(p, np.ndarray) and isinstance(q, np.ndarray) and p.shape == q.shape):
        return None
    if p.ndim == 1:
        p, q = p[None, :], q[None, :]
    if not (p.flags.c_contiguous and q.flags.c_contiguous and q.dtype == np.float64):
        return None
    if not _fused.one_row(p):
        return None
    shared, stats = _shared_fused(p, q, sub_bits)
    return FUSED_DECLINED if shared is None else (shared, stats)


def _shared_numpy(p: Any, q: Any) -> dict[str, Any]:
    """:func:`_shared` by array operations (numpy, torch)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        key = sort_key(p, q)
    ids, NB = hg.ratio_buckets(key, SUB_BITS, HALF_WINDOW)  # overwrites the key (numpy)
    out = {"ids": ids, "NB": NB, "Hp": None, "Hn": None, "Hs": None, "one_ratio": False, "id0": 0}
    out.update(Hq=None, sub_bits=SUB_BITS, half_window=HALF_WINDOW)
    out["window"] = not isinstance(p, np.ndarray)
    if not isinstance(p, np.ndarray):
        # the window's last bucket also holds finite ratios: flag the overflowed ones here (on
        # the device, read with the survivor counts; numpy's own bucket of +inf is its q
        # histogram's business, _overflowed).  key * q is +inf exactly there: q = 0 gives NaN
        # (inf * 0), every finite key about p
        xp = bk.namespace(key)
        out["overflow"] = xp.any(xp.isinf(key * q), axis=-1)
    else:
        B, V = ids.shape
        stride = STRIDE if V >= 64 * STRIDE else 1
        if B == 1:  # ids from the smallest one: histograms of the occupied range only
            out["id0"] = id0 = int(ids.min())
            out["NB"] = NB = int(ids.max()) - id0 + 1
            if id0:
                ids -= id0
        # the sample after the shift: its counts are indexed as the ids (a copy taken before
        # it counted absolute buckets, and the dense bucket was never found equal-ratio)
        sample = np.ascontiguousarray(ids[:, ::stride])
        Hs = hg.count_histogram(sample, NB)
        if bool(np.all(np.max(Hs, axis=-1) == sample.shape[-1])):  # perhaps one bucket: are
            out["one_ratio"] = _one_ratio(p, q)  # all ratios equal?
        out["Hs"], out["stride"] = Hs, stride
    return out


def _coarsen(out: dict[str, Any], factor: int) -> None:
    r"""Merge the fused route's buckets by ``2**k >= factor`` (one row, in place).

    On the window, bucket j >= 1 is :math:`\text{bits} \gg \text{shift} - \text{base}` and
    :math:`(j - 1) \gg k + 1` is that formula with k fewer mantissa bits, end buckets included
    (0 stays 0, the last stays last), so the merged ids and histograms are those of bucketing
    with ``sub_bits - k`` from the start."""
    k = min(int(factor).bit_length(), out["sub_bits"])
    id0 = out["id0"]
    new0 = ((id0 - 1) >> k) + 1
    ids = out["ids"]
    ids += id0 - 1  # in place, int32: (rel + id0 - 1) >> k + 1 - new0
    ids >>= k
    ids -= new0 - 1
    # old bucket j (absolute id0 + j) joins group (id0 + j - 1) >> k, at place (id0 + j - 1) % g
    g, NB = 1 << k, out["NB"]
    off = (id0 - 1) % g
    groups = -(-(off + NB) // g)
    for name in ("Hp", "Hq", "Hn"):
        buf = np.zeros((1, groups * g), dtype=out[name].dtype)
        buf[:, off : off + NB] = out[name]
        view = buf.reshape(1, groups, g)
        acc = view[..., 0].copy()
        for i in range(1, g):  # g strided adds: faster than a sum over a short last axis
            acc += view[..., i]
        out[name] = acc
    out.update(Hs=out["Hn"], NB=groups, id0=new0, sub_bits=out["sub_bits"] - k)


def _one_ratio(p: np.ndarray, q: np.ndarray) -> bool:
    """numpy: whether every row's ratios are all equal (rare: the key is formed again for it)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        key = sort_key(p, q)
    return bool(np.all(np.max(key, axis=-1) == np.min(key, axis=-1)))


def _phase1(
    p: Any, q: Any, sp: Any, sq: Any, law: Chain, xp: Any, shared: Any = None, exact: Any = None
) -> dict[str, Any]:
    """Histograms, boundary values, bounds and the survivor mask; no host synchronisation.

    ``exact`` = [(bucket, ratio), ...]: those buckets' ratios are all equal (their edges
    become the ratio itself, and their bounds the smaller end value)."""
    B, V = p.shape
    numpy = isinstance(p, np.ndarray)
    ctx = law.setup(p, q, sq, xp)
    shared = shared if shared is not None else _shared(p, q)
    ids, NB, Hn = shared["ids"], shared["NB"], shared["Hn"]
    if shared["Hp"] is None:
        shared["Hp"] = hg.histogram(ids, p, NB)
    Hp = shared["Hp"]
    Hs = law.histograms(ids, q, ctx, NB, shared.get("Hq"))
    b0, b1 = 0, NB
    if numpy:  # keep only the occupied range of buckets (a few hundred of the 32,768)
        occ = np.flatnonzero(Hp[0] + Hs[0][0] if B == 1 else np.any((Hp != 0) | (Hs[0] != 0), 0))
        hb = bk.take_rows(ids, ctx["heavy"])
        lo_h, hi_h = (int(hb.min()), int(hb.max()) + 1) if hb.size else (NB, 0)
        b0, b1 = (int(occ[0]), int(occ[-1]) + 1) if occ.size else (0, 1)
        b0, b1 = min(b0, lo_h), max(b1, hi_h)
        Hp, Hs, ids_off = Hp[:, b0:b1], [h[:, b0:b1] for h in Hs], b0
    else:
        ids_off = 0
    Hp = Hp / sp[:, None]
    heavy = ctx["heavy"]
    hb = bk.take_rows(ids, heavy) - ids_off
    NBt = b1 - b0
    Hhq = hg.histogram(hb, xp.astype(ctx["hq"], Hs[0].dtype), NBt)
    Hhc = hg.histogram(hb, xp.ones_like(xp.astype(ctx["hq"], Hs[0].dtype)), NBt)
    qmass = ctx["scale"][:, None] * Hs[0] + Hhq
    Hc = None
    if "cnt" in law.uses:  # tokens per bucket: every finite ratio has q > 0, and a q = 0 token
        # (ratio +inf or NaN, the last buckets) only follows every positive mass in the chain
        if Hn is None:  # counted once, for every law that needs it
            Hn = shared["Hn"] = hg.count_histogram(ids, NB)
        Hc = Hn[:, b0:b1]
    nb = b1 - b0
    uses = law.uses
    P_b = _excl(Hp, xp)
    L_b = [_excl(h, xp) for h in Hs] if "L" in uses else None
    seg_b = xp.astype(xp.round(_excl(Hhc, xp)), xp.int64) if "seg" in uses else None
    qc_b = _excl(qmass, xp)
    lam_b = _suffix(qmass, xp) if "lam" in uses else None
    cnt_b = xp.astype(xp.round(_excl(Hc, xp)), xp.int64) if "cnt" in uses else None
    ctx["L_total"] = [L[:, -1] for L in L_b] if L_b is not None else None
    depth = (int(np.max(Hc)) if numpy else V) + nb + 2 if Hc is not None else V + nb
    Q_b, err_b = law.Q(ctx, L_b, seg_b, qc_b, lam_b, cnt_b, depth)
    err_b = xp.zeros_like(sq) + err_b
    f_b = P_b - Q_b
    # a boundary after which no bucket holds mass ends at every token: P = Q = 1 exactly, where
    # the rounded sums can miss 0 by 1e-12 (p = q uniform, V = 150,000: -2.6e-12)
    done = _massless_after(Hp, qmass, xp)
    f_b = xp.where(done, xp.zeros_like(f_b), f_b)
    UB = xp.min(f_b, axis=-1)

    id0 = shared["id0"]  # numpy, one row: the ids start at the smallest bucket
    lo, hi = hg.bucket_edges(
        p, shared["sub_bits"], shared["half_window"], b0 + id0, b1 + id0, window=shared["window"]
    )
    if exact:
        lo, hi = lo.copy(), hi.copy()
        for b, r in exact:
            if b0 <= b < b1:
                lo[b - b0] = hi[b - b0] = r
    if not numpy:
        lo = bk.const(p, ("bucket-lo", SUB_BITS, HALF_WINDOW, b0, b1), lambda: lo)
        hi = bk.const(p, ("bucket-hi", SUB_BITS, HALF_WINDOW, b0, b1), lambda: hi)
    c = (sq / sp)[:, None]  # normalised ratio = raw ratio * sum(q) / sum(p)
    fused = Hn is not None and _fused.one_row(p)
    if fused:  # one compiled loop over the buckets: the same bounds, the survivors' run
        cut = float(UB[0]) - TOL
        LB, survive, run = _fused.bucket_bounds(
            P_b[0], Q_b[0], Hp[0], qmass[0], lo, hi, float(c[0, 0]), cut
        )
        LB, survive = LB[None, :], survive[None, :]
    else:
        LB = _bounds(P_b, Q_b, f_b, Hp, qmass, lo, hi, c, xp)
        survive = LB < (UB - TOL)[:, None]
        run = None
    mask = None
    if run is not None:  # fused: counted from the histogram, collected in phase 2 in one loop
        counts = np.sum(Hn[:, b0 + run[0] : b0 + run[1] + 1], axis=-1)
        run = (b0 + run[0], b0 + run[1])
    elif numpy:
        mask = hg.survivor_mask(survive, ids, b0, NB)
    else:
        mask = bk.take_rows(survive, ids)
    if mask is not None:
        counts = bk.count_true(mask)
    fallback = (counts > MAX_FRACTION * V) | ~xp.isfinite(err_b)
    fallback = fallback | _overflowed(shared, qmass, b0, p.dtype, xp)
    return {
        "p": p, "q": q, "sp": sp, "sq": sq, "ids": ids, "mask": mask,
        "P_b": P_b, "L_b": L_b, "seg_b": seg_b, "qc_b": qc_b, "lam_b": lam_b, "cnt_b": cnt_b,
        "f_b": f_b, "UB": UB, "LB": LB, "survive": survive, "err_b": err_b, "counts": counts,
        "done": done,
        "fallback": fallback,
        "ctx": ctx, "b0": b0, "depth": depth, "run": run,
    }  # fmt: skip


def _overflowed(shared: dict[str, Any], qmass: Any, b0: int, dtype: Any, xp: Any) -> Any:
    r"""(B,) True where a token of positive q has a ratio p/q that overflowed to +inf.

    Such tokens (q subnormal, below :math:`p / \text{DBL\_MAX}`) tie at +inf in the sort of
    phase 2 whatever their true ratios, so their rows go to the sorting path, whose key
    (:func:`mdsd_ot.fast.prefix.order_key`) orders them.  numpy's buckets give +inf a bucket of
    its own (every octave has its buckets), whose q mass is then positive: read from the
    histogram, no pass over the row.  The window's last bucket (torch) also holds finite
    ratios: :func:`_shared_numpy` flags those rows on the device.  The fused route declines
    such a row (:func:`mdsd_ot.fast._fused.bucket_front`), which then comes here by numpy's.
    """
    if "overflow" in shared:
        return shared["overflow"]
    B, nb = qmass.shape
    if shared.get("window"):  # the fused route: it declined rows with an overflowed ratio
        return xp.zeros((B,), dtype=xp.bool)
    mant, _ = hg.float_layout(dtype)
    top = (1 << (63 - mant if mant == 52 else 31 - mant)) - 1  # exponent bits all set: +inf
    rel = (top << shared["sub_bits"]) - shared["id0"] - b0  # +inf's bucket in qmass
    if not 0 <= rel < nb:
        return xp.zeros((B,), dtype=xp.bool)
    return qmass[:, rel] > 0


def _bounds(P_b, Q_b, f_b, Hp, qmass, lo, hi, c, xp):
    """Per-bucket lower bounds LB (B, nb) by array operations (the bound of the module
    docstring; :func:`mdsd_ot.fast._fused.bucket_bounds` is the same loop compiled)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rlo = xp.astype(lo, f_b.dtype) * c * (1 - 4 * _U)
        rhi = xp.astype(hi, f_b.dtype) * c * (1 + 4 * _U)
        finite = xp.isfinite(rhi)
        open_ = finite & (rhi > rlo)  # a bucket of one ratio: P is linear, t = q_b will do
        gap = xp.where(open_, rhi - rlo, xp.ones_like(rhi))
        t = xp.where(open_, (xp.where(finite, rhi, xp.zeros_like(rhi)) * qmass - Hp) / gap, qmass)
        t = xp.minimum(xp.maximum(t, xp.zeros_like(t)), qmass)
        frac = xp.where(qmass > 0, t / xp.where(qmass > 0, qmass, xp.ones_like(qmass)), t * 0)
        chord = Q_b[:, :-1] + (Q_b[:, 1:] - Q_b[:, :-1]) * frac
        inner = P_b[:, :-1] + rlo * t - chord
    return xp.minimum(xp.minimum(f_b[:, :-1], f_b[:, 1:]), inner)


def _continued(boundary: Any, bs: Any, x: Any, first: Any, xp: Any) -> Any:
    """Statistic at each survivor: its bucket's boundary value plus the run's sum up to it.

    ``first`` is None when every survivor lies in one bucket (one run, starting at 0).
    """
    if first is None:
        return xp.cumulative_sum(x, axis=-1) + bk.take_rows(boundary, bs[:, :1])
    E = bk.exclusive(xp.cumulative_sum(x, axis=-1), xp)  # E[j] = sum of the first j terms
    # (A - B) + C, A = boundary[bs], B = E[first], C = E[i + 1].  A - B cancels when little
    # mass precedes the run (A and B both hold the run's earlier buckets), but the sum does not:
    # the terms are >= 0, B's lie among A's and C extends B's running sum (C = B(1 + phi) + the
    # m = i + 1 - first terms of i's bucket, |phi| <= gamma_m), so fl((A - B) + C) - S =
    # A*theta_A + B*(phi - delta) + ... with S >= A, B: relative error <= gamma(D_A + m + 4),
    # D_A <= (max count) + nb - 1 the boundary's depth, m <= C - 1 (two buckets at least), so
    # within the depth + C that phase 2 counts (tests/fast/test_continued.py).  A parallel
    # scan (torch on a GPU) rounds B and C apart: 2 x its depth (~2 log2 C) instead of m.
    return (bk.take_rows(boundary, bs) - bk.take_rows(E, first)) + E[:, 1:]


def _massless_after(Hp: Any, qmass: Any, xp: Any) -> Any:
    """(B, nb + 1): True at the bucket boundaries j after which no bucket holds p or q mass
    (there f = P - Q = 0 exactly: every token with mass is in the prefix)."""
    occ = xp.astype((Hp != 0) | (qmass != 0), xp.int64)
    return _suffix(occ, xp) == 0


def _pin_full(f_s: Any, valid: Any, bs: Any, done: Any, xp: Any) -> Any:
    """f = 0 at a row's last survivor when no bucket after its own holds mass (``done``): that
    prefix holds every token with mass (P = Q = 1 exactly), as at the boundaries of ``done``.
    Survivors are whole buckets, so the last one ends its bucket."""
    nb = done.shape[-1] - 1
    one = xp.ones_like(bs[:, :1])
    jl = xp.maximum(xp.sum(xp.astype(valid, bs.dtype), axis=-1, keepdims=True) - one, 0 * one)
    nxt = xp.minimum(bk.take_rows(bs, jl) + one, nb * one)
    pin = bk.take_rows(done, nxt) & (bk.arange_like(bs, bs.shape[-1])[None, :] == jl) & valid
    return xp.where(pin, xp.zeros_like(f_s), f_s)


def _phase2(st: dict[str, Any], law: Chain, C: int, return_set: bool, xp: Any):
    """Sort the survivors, continue the statistics from their buckets' boundaries, scan."""
    p, q, ids, ctx = st["p"], st["q"], st["ids"], st["ctx"]
    B, V = p.shape
    UB, err_b, b0 = st["UB"], st["err_b"], st["b0"]
    nb = st["P_b"].shape[-1] - 1
    best, err = UB, err_b
    from_s = xp.zeros(UB.shape, dtype=xp.bool, device=getattr(UB, "device", None))
    uses = law.uses
    if C > 0:
        if st["run"] is not None:  # fused, one row: the tokens of one run of buckets
            idx = _fused.collect(ids[0], st["run"][0], st["run"][1], C)[None, :]
            valid = np.ones(idx.shape, dtype=bool)
        else:
            idx, valid = hg.compact(st["mask"], C)
        full = isinstance(valid, np.ndarray) and B == 1  # numpy, one row: every slot is filled
        ps, qs = bk.take_rows(p, idx), bk.take_rows(q, idx)
        ks = sort_key(ps, qs)
        if not full:
            ks = xp.where(valid, ks, xp.full_like(ps, float("nan")))
        # ties in p/q may come in any order (T7), except among the heavy tokens, whose chain
        # order (by p/q, then index) the law fixed in its setup: a stable sort keeps it
        perm = ratio_order(ks, stable=ctx.get("heavy_ties", True))
        idx, ps, qs = bk.take_rows(idx, perm), bk.take_rows(ps, perm), bk.take_rows(qs, perm)
        bs = bk.take_rows(ids, idx) - b0
        if full:
            ps = ps / st["sp"][:, None]
        else:
            valid = bk.take_rows(valid, perm)
            bs = xp.where(valid, bs, xp.full_like(idx, nb))
            zero = xp.zeros_like(ps)
            ps = xp.where(valid, ps, zero) / st["sp"][:, None]
            qs = xp.where(valid, qs, zero)
        one_run = full and int(bs[0, 0]) == int(bs[0, -1])  # sorted: one surviving bucket
        # the start of each survivor's run (None: a single run)
        first = None if one_run else bk.searchsorted_rows(bs, bs, "left")
        heavy = ctx["heavy"]
        hf = bk.isin_rows(idx, heavy) & valid
        P_s = _continued(st["P_b"], bs, ps, first, xp)
        L_s = seg_s = qc_s = lam_s = cnt_s = None
        if "L" in uses:
            stats = law.stats(qs, ctx, hf)
            L_s = [_continued(Lb, bs, x, first, xp) for Lb, x in zip(st["L_b"], stats, strict=True)]
        if "seg" in uses:
            seg_s = _continued(st["seg_b"], bs, xp.astype(hf, xp.int64), first, xp)
        if "qc" in uses or "lam" in uses:
            qn = qs / st["sq"][:, None]
        if "qc" in uses:
            qc_s = _continued(st["qc_b"], bs, qn, first, xp)
        if "lam" in uses:  # suffix sums (relative accuracy): the mass after each survivor
            nxt = bk.searchsorted_rows(bs, bs, "right")
            R = _suffix(qn, xp)
            after = bk.take_rows(st["lam_b"], xp.minimum(bs + 1, xp.full_like(bs, nb)))
            # (A - B) + C again, mirrored: R[stop] lies among the buckets after (A) and R[i + 1]
            # extends it, so lambda keeps its relative accuracy (see _continued)
            lam_s = (after - bk.take_rows(R, nxt)) + R[:, 1:]
        if "cnt" in uses:
            cnt_s = _continued(st["cnt_b"], bs, xp.astype(qs > 0, xp.int64), first, xp)
        Q_s, err_s = law.Q(ctx, L_s, seg_s, qc_s, lam_s, cnt_s, st["depth"] + C)
        f_s = P_s - Q_s if full else xp.where(valid, P_s - Q_s, xp.full_like(P_s, float("inf")))
        f_s = _pin_full(f_s, valid, bs, st["done"], xp)
        ms = xp.min(f_s, axis=-1)
        from_s = ms < UB
        best = xp.minimum(UB, ms)
        err = xp.maximum(err_b, xp.zeros_like(err_b) + err_s)
    alpha = bk.clip(1.0 + xp.minimum(best, xp.zeros_like(best)), 0.0, 1.0)
    if alpha.dtype != p.dtype:  # the sequential series' Q is float64 (float32 rows: cast back,
        alpha = xp.astype(alpha, p.dtype)  # as the sorting path's P - Q is: one dtype per input)
    err = 3.0 * err + TOL  # pruning slack, and the law's error in UB, LB and the survivors
    err = xp.where(xp.isnan(err), xp.full_like(err, float("inf")), err)  # no bound: inf, as sorted
    if not return_set:
        return alpha, None, err
    jb = xp.argmin(st["f_b"], axis=-1)
    thr = jb + b0
    extra = None
    if C > 0:
        cs = xp.argmin(f_s, axis=-1)[:, None]
        b_star = bk.take_rows(bs, cs)
        thr = xp.where(from_s, b_star[:, 0] + b0, thr)
        pos = bk.arange_like(bs, C)[None, :]
        sel = valid & (bs == b_star) & (pos <= cs) & from_s[:, None]
        extra = hg.scatter_or(idx, sel, (B, V))
    H = ids < thr[:, None]
    if extra is not None:
        H = H | extra
    return alpha, H & (best < 0)[:, None], err
