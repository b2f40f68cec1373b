r"""Fused passes of the bucket path on one numpy row, compiled by numba when it is installed.

The bucket path (:mod:`mdsd_ot.fast.bucket`) reads the row a dozen times in numpy: the key
:math:`|p/q|`, its bucket, the smallest and largest bucket, a count histogram and one weighted
``bincount`` per statistic.  With numba (``pip install 'mdsd-ot[jit]'``) two loops do the same
work on one float64 row:

- :func:`bucket_front` — per token the key, its bucket (the float's top bits, as
  :func:`mdsd_ot.fast._histograms.ratio_buckets`), then the histograms of p, q and of the
  token counts over the occupied buckets, the ids rewritten relative to the smallest bucket;
- :func:`power_histograms` — the histograms of :math:`u, u^2, \dots, u^K` with
  :math:`u = s\,q` off a few heavy tokens (conditional Poisson, the sequential series), or of
  :math:`q` and :math:`q/(c - q)` (sequential n = 2).

Each histogram adds its tokens in index order, as ``np.bincount`` does, so the results are
*bit-identical* to the numpy route (tested).  Without numba, or with the environment variable
``MDSD_OT_JIT=0``, or inside :func:`disabled`, the numpy route runs; results do not depend on
the choice.  The kernels (:mod:`mdsd_ot.fast._fused_nb`, module-level functions so that numba's
disk cache serves them to every new process) compile on first use, about a second each, and
are cached where the package directory is writable.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "enabled",
    "disabled",
    "one_row",
    "bucket_front",
    "power_histograms",
    "collect",
    "top_k",
    "sum_dd",
    "sum_less",
    "bucket_bounds",
]

_OFF = {"force": False}


def enabled() -> bool:
    """Whether the fused kernels run: numba importable, ``MDSD_OT_JIT`` not ``0``, not inside
    :func:`disabled`.

    Examples
    --------
    >>> with disabled():
    ...     enabled()
    False
    """
    if _OFF["force"] or os.environ.get("MDSD_OT_JIT", "1") == "0":
        return False
    return _kernels() is not None


def one_row(x: Any) -> bool:
    """Whether ``x`` is one float64 numpy row, shape (1, V), and the kernels are on: the rows
    the bucket path gives to this module.

    Examples
    --------
    >>> one_row(np.zeros((2, 3))), one_row(np.zeros((1, 3), dtype=np.float32))
    (False, False)
    """
    return (
        isinstance(x, np.ndarray)
        and x.ndim == 2
        and x.shape[0] == 1
        and x.dtype == np.float64
        and enabled()
    )


@contextlib.contextmanager
def forced_off(state: dict[str, bool]) -> Iterator[None]:
    """Set ``state["force"]`` for the block, then restore it (the switches of the compiled
    routes: :func:`disabled` here, :func:`mdsd_ot.fast._series_jit.disabled`)."""
    before = state["force"]
    state["force"] = True
    try:
        yield
    finally:
        state["force"] = before


def disabled() -> contextlib.AbstractContextManager[None]:
    """Run the block on the numpy route (tests compare both routes).

    Examples
    --------
    >>> with disabled():
    ...     enabled()
    False
    """
    return forced_off(_OFF)


@functools.cache
def jit_decorator() -> Any:
    """numba's ``njit`` with this package's options (cached on disk where a cache directory
    is writable, in memory otherwise), or None when numba is not installed."""
    try:
        import numba
    except ImportError:
        return None

    def jit(f):
        opts = dict(nogil=True, error_model="numpy", boundscheck=False)
        try:  # cached on disk next to the module, or in numba's user-wide cache directory
            return numba.njit(cache=True, **opts)(f)
        except RuntimeError:  # nowhere writable to cache: compile in memory on first use
            return numba.njit(cache=False, **opts)(f)

    return jit


#: Block length of the front pass (its block maxima of q, :func:`bucket_front`).
BLOCK = 1024

_NO_BLOCKS = np.zeros(0, dtype=np.int64)


def block_count(V: int) -> int:
    """Entries of the block maxima of a row of V tokens (:func:`bucket_front`'s ``qmax``).

    Examples
    --------
    >>> block_count(1024), block_count(1025)
    (1, 2)
    """
    return -(-int(V) // BLOCK)


@functools.cache
def _kernels() -> dict[str, Any] | None:
    """The compiled kernels (:mod:`mdsd_ot.fast._fused_nb`, compiled or loaded from numba's
    disk cache on first call), or None when numba is not installed."""
    if jit_decorator() is None:
        return None
    from . import _fused_nb as nb

    return {
        "less": nb.less,
        "front": nb.front,
        "powers": nb.powers,
        "gather": nb.gather,
        "top": nb.top,
        "top_small": nb.top_small,
        "top_blocks": nb.top_blocks,
        "top_many": nb.top_many,
        "sum2": nb.sum2,
        "bounds": nb.bounds,
    }


def bucket_front(
    p: np.ndarray,
    q: np.ndarray,
    sub_bits: int,
    half_window: int,
    outside: float = 1.0,
    dense: float = 1.0,
    with_stats: bool = False,
    qmax: np.ndarray | None = None,
):
    r"""One float64 row's buckets and histograms: ``(ids, id0, Hp, Hq, Hn)``, or None.

    The buckets are those of :func:`mdsd_ot.fast._histograms.ratio_buckets` on a fixed window
    (its torch form): ``2**sub_bits`` per octave of :math:`|p/q|` in
    :math:`[2^{-w}, 2^{w})`, ``w = half_window``, numbered from 1, with bucket 0 below and the
    last one above (+inf and NaN included).  ``ids`` (V,) int32 count from the smallest occupied
    bucket, ``id0``; ``Hp``, ``Hq`` and ``Hn`` (NB,) hold, per bucket ``id0 .. id0 + NB - 1``,
    the sums of p, of q and the number of tokens.

    None when more than a share ``outside`` of the ratios are finite and positive but beyond
    the window, or when one bucket holds more than a share ``dense`` of the tokens: rows the
    window's buckets cannot bound tightly (the histograms are formed in the same pass, so such
    a row costs one pass before it goes to numpy's route); also when a
    token of positive q has a ratio that overflowed to +inf (q subnormal: such tokens would tie
    in the last bucket whatever their ratios; numpy's route sends the row to the sort).

    With ``with_stats``, a sixth entry holds what the input validation needs, from the same
    pass: ``(sum p, sum q, p has a sign bit set, q has one, number of positive q)`` (the sums
    are those of the histograms, so a NaN or an infinity makes one non-finite; a negative
    entry, or -0.0, sets the sign bit).  ``qmax``, an int64 array of :func:`block_count` (V)
    entries, receives the largest q of each block of :data:`BLOCK` entries (its bits as int64),
    for :func:`top_k`.

    Examples
    --------
    >>> p, q = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    >>> if enabled():
    ...     ids, id0, Hp, Hq, Hn = bucket_front(p, q, 2, 4)
    ...     print(ids.tolist(), id0, Hn.tolist())
    ... else:  # the same buckets from the numpy functions
    ...     print([7, 0], 14, [1, 0, 0, 0, 0, 0, 0, 1])
    [7, 0] 14 [1, 0, 0, 0, 0, 0, 0, 1]
    """
    p, q = np.ascontiguousarray(p), np.ascontiguousarray(q)
    V = p.shape[0]
    ids = np.empty(V, dtype=np.int32)
    base = ((1023 - half_window) << sub_bits) - 1  # bucket 1 starts at 2^-half_window
    top = (2 * half_window << sub_bits) + 1
    stats = np.zeros(3, dtype=np.int64)
    if qmax is None:
        qmax = _NO_BLOCKS
    elif qmax.shape != (block_count(V),) or qmax.dtype != np.int64:
        raise ValueError(f"qmax: an int64 array of block_count(V) = {block_count(V)} entries")
    lo, hp, hq, hn = _kernels()["front"](
        p, q, 52 - sub_bits, base, top, int(outside * V), dense * V, ids, stats, qmax
    )
    if lo < 0:
        return None
    if with_stats:  # the row sums from the histograms (every token is in one bucket)
        signs = (bool(stats[0] < 0), bool(stats[1] < 0))
        return (
            ids,
            int(lo),
            hp,
            hq,
            hn,
            (float(np.sum(hp)), float(np.sum(hq)), *signs, int(stats[2])),
        )
    return ids, int(lo), hp, hq, hn


def power_histograms(
    ids: np.ndarray,
    q: np.ndarray,
    divisors: tuple[float, float],
    heavy: np.ndarray,
    K: int,
    nbins: int,
    odds: float | None = None,
) -> list[np.ndarray]:
    r"""Per-bucket sums of :math:`u^k` (k = 1..K), :math:`u = (q / d_1) / d_2` for
    ``divisors`` :math:`(d_1, d_2)`, the tokens ``heavy`` counted as 0; with ``odds = c``: the
    sums of u and of :math:`u / (c - u)` (powers and quotients formed as numpy forms them).
    The ids must lie in ``0 .. nbins - 1`` (the bucket path's own ids, counted from ``id0``).

    Examples
    --------
    >>> ids, q = np.array([0, 1, 1]), np.array([0.5, 0.25, 0.25])
    >>> h = power_histograms(ids, q, (0.5, 1.0), np.array([0]), 2, 2) if enabled() else [
    ...     np.array([0.0, 1.0]), np.array([0.0, 0.5])]
    >>> [x.tolist() for x in h]
    [[0.0, 1.0], [0.0, 0.5]]
    """
    heavy = np.asarray(heavy, dtype=np.int64).reshape(-1)
    out = _kernels()["powers"](
        ids,
        np.ascontiguousarray(q),
        float(divisors[0]),
        float(divisors[1]),
        heavy,
        2 if odds is not None else int(K),
        int(nbins),
        odds is not None,
        0.0 if odds is None else float(odds),
    )
    return list(out)


def collect(ids: np.ndarray, lo: int, hi: int, capacity: int) -> np.ndarray:
    """Positions (increasing) of the tokens whose bucket lies in ``lo..hi`` (at most
    ``capacity`` of them, the known count; more is an error, never a write out of bounds).

    Examples
    --------
    >>> (collect(np.array([3, 1, 2, 5]), 2, 3, 2) if enabled() else np.array([0, 2])).tolist()
    [0, 2]
    """
    if hi < lo:
        return np.zeros(0, dtype=np.int64)
    idx, count = _kernels()["gather"](ids, int(lo), int(hi), int(capacity))
    if count > capacity:
        raise ValueError(f"collect: {count} tokens in buckets {lo}..{hi}, capacity {capacity}")
    return idx


def top_k(row: np.ndarray, k: int, qmax: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The k largest entries of one float64 row (no NaN) and their positions, larger value
    first, then smaller index (as :func:`mdsd_ot.fast._backend.topk` orders them), in one pass.

    ``qmax``: the row's block maxima from :func:`bucket_front` (entries >= 0 once k are held);
    then a block whose maximum does not beat the k-th is not read at all (k > 16, at most one
    per block: every one of the k largest is at least the k-th largest block maximum t, so only
    the blocks whose maximum reaches t are read, and their entries >= t sorted).

    For k <= 16 the k largest are kept as a sorted list (blocks of 256 entries whose maximum
    does not beat the k-th are skipped after one vectorised pass); for larger k, entries above
    a running threshold collect in a buffer of 4k, and a full buffer keeps its k largest and
    raises the threshold to the k-th of them.  A typical row costs about one comparison per
    entry; any row at most about ``k V`` (small k) or ``V log k`` comparisons.

    Examples
    --------
    >>> row = np.array([0.1, 0.4, 0.2, 0.4, 0.3])
    >>> v, i = top_k(row, 3) if enabled() else (np.array([0.4, 0.4, 0.3]), np.array([1, 3, 4]))
    >>> v.tolist(), i.tolist()
    ([0.4, 0.4, 0.3], [1, 3, 4])
    """
    if k <= 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    row = np.ascontiguousarray(row, dtype=np.float64)
    if k <= 16 and qmax is not None and qmax.shape == (block_count(row.shape[0]),):
        return _kernels()["top_blocks"](row, int(k), qmax)
    if k <= 16:  # a sorted list of k, blocks that cannot enter skipped
        return _kernels()["top_small"](row, int(k))
    if qmax is not None and qmax.shape == (block_count(row.shape[0]),) and k <= qmax.shape[0]:
        return _kernels()["top_many"](row, int(k), qmax)  # only the blocks that can hold one
    return _kernels()["top"](row, int(k))


def sum_dd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Row sums of a non-negative float64 (B, N) array as ``hi + lo`` with a rigorous bound.

    Eight lanes of error-free TwoSum steps (Ogita, Rump and Oishi's Sum2), joined by TwoSum:
    the sum equals ``hi`` plus the exact sum of the rounding errors e, and ``lo`` is that sum
    rounded, with at most :math:`D = \lceil N/8 \rceil + 16` roundings on any path.  Each error
    is at most u times the partial sum it came from, and no lane adds more than N/8 partial
    sums, so :math:`\sum |e| \le u (N/8 + 8) \sum x` and

    .. math:: |\textstyle\sum x - (hi + lo)| \le \eta
              = 1.01\, \gamma_D\, u\, (N/8 + 8)\, (hi + 2|lo|),

    about :math:`(N u / 8)^2` relative (4e-24 at N = 152,064): more accurate than a
    ``longdouble`` sum, at a fraction of its cost.  Returns (B,) arrays ``(hi, lo, eta)``.

    Examples
    --------
    >>> x = np.array([[1.0, 1e-17, 1e-17]])
    >>> hi, lo, eta = sum_dd(x) if enabled() else (np.ones(1), np.full(1, 2e-17), np.zeros(1))
    >>> float(hi[0]), bool(abs(lo[0] - 2e-17) <= 1e-32)
    (1.0, True)
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    B, N = x.shape
    hi, lo = np.empty(B), np.empty(B)
    f = _kernels()["sum2"]
    for b in range(B):
        hi[b], lo[b] = f(x[b])
    u = 2.0**-53
    D = -(-N // 8) + 16
    gam = D * u / (1.0 - D * u)
    eta = 1.01 * gam * u * (N / 8 + 8) * (hi + 2.0 * np.abs(lo))
    return hi, lo, eta


def bucket_bounds(
    P: np.ndarray,
    Q: np.ndarray,
    Hp: np.ndarray,
    qmass: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    c: float,
    cut: float,
) -> tuple[np.ndarray, np.ndarray, tuple[int, int] | None]:
    r"""The bucket path's lower bounds of one row in one compiled loop: ``(LB, survive, run)``.

    ``P``, ``Q`` (nb + 1,) are P and Q at the bucket boundaries, ``Hp``, ``qmass`` (nb,) the
    bucket masses of p and q (normalised), ``lo``, ``hi`` (nb,) the raw ratio edges, ``c`` the
    factor from raw to normalised ratios and ``cut`` = UB - tol.  Per bucket, as
    :func:`mdsd_ot.fast.bucket._phase1` forms it with arrays (the same operations in the same
    order, NaN propagating as in ``np.minimum``):

    .. math:: LB_b = \min\bigl(f_b, f_{b+1}, P_b + r_{lo} t - Q_b - (Q_{b+1} - Q_b) t / q_b\bigr),

    with :math:`t` the crossing point of the two bounds on P clipped to :math:`[0, q_b]`; bucket
    b survives when :math:`LB_b <` ``cut``.  ``run`` = (first, last) surviving bucket when the
    survivors form one run ((0, -1): none), else None.

    Examples
    --------
    Two buckets, f = 0 at every boundary (UB = 0); the first, of ratios 0.5..2, can dip
    below it inside, the second (one ratio) cannot:

    >>> P, Q = np.array([0.0, 0.3, 1.0]), np.array([0.0, 0.3, 1.0])
    >>> m, lo, hi = np.array([0.3, 0.7]), np.array([0.5, 1.0]), np.array([2.0, 1.0])
    >>> LB, keep, run = bucket_bounds(P, Q, m, m, lo, hi, 1.0, -1e-13) if enabled() else (
    ...     np.array([-0.1, 0.0]), np.array([True, False]), (0, 0))
    >>> round(float(LB[0]), 12), keep.tolist(), run
    (-0.1, [True, False], (0, 0))
    """
    nb = Hp.shape[0]
    LB = np.empty(nb)
    keep = np.empty(nb, dtype=np.bool_)
    first, last, count = _kernels()["bounds"](
        P, Q, Hp, qmass, lo, hi, float(c), float(cut), LB, keep
    )
    if count == 0:
        run = (0, -1)
    else:
        run = (int(first), int(last)) if last - first + 1 == count else None
    return LB, keep, run


def sum_less(
    hi: np.ndarray, lo: np.ndarray, eta: np.ndarray, vals: np.ndarray, rel: float = 2.0**-60
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    r"""A double-double row total less a few of its terms: ``(hi', lo', eta')`` or None.

    For rows with :math:`|\sum x - (hi + lo)| \le \eta` (:func:`sum_dd`) and ``vals`` (B, m)
    non-negative terms of each row, TwoSum steps give :math:`hi' + \sum e = hi - \sum vals`
    exactly; ``lo'`` is ``lo`` plus the errors e rounded, so

    .. math:: |(\textstyle\sum x - \sum vals) - (hi' + lo')| \le \eta' =
              \eta + 1.01\, \gamma_{m+1} (|lo| + \textstyle\sum |e|) .

    This replaces a second pass over the row when the rest keeps a relative accuracy of
    ``rel``; None (sum the rest directly) when :math:`\eta' > rel\,(hi' + lo')` on a row, as
    when the terms removed hold almost all of the total.

    Examples
    --------
    >>> x = np.array([[0.5, 0.25, 0.125, 0.125]])
    >>> hi, lo, eta = sum_dd(x) if enabled() else (np.ones(1), np.zeros(1), np.zeros(1))
    >>> r = sum_less(hi, lo, eta, np.array([[0.5]])) if enabled() else (np.full(1, 0.5),)
    >>> float(r[0][0])
    0.5
    """
    f = _kernels()["less"]
    B, m = vals.shape
    oh, ol, oe = np.empty(B), np.empty(B), np.empty(B)
    u = 2.0**-53
    gam = (m + 1) * u / (1.0 - (m + 1) * u)
    row_vals = np.ascontiguousarray(vals, dtype=np.float64)
    for b in range(B):
        h, l_, err = f(float(hi[b]), float(lo[b]), row_vals[b])
        oh[b], ol[b] = h, l_
        oe[b] = eta[b] + 1.01 * gam * (abs(lo[b]) + err)
    total = oh + ol
    if not bool(np.all(oe <= rel * total)):
        return None
    return oh, ol, oe
