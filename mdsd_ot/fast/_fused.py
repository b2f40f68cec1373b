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
the choice.  The kernels compile on first use (about a second each, cached on disk by numba
where the package directory is writable).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["enabled", "disabled", "one_row", "bucket_front", "power_histograms", "collect"]

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
def disabled() -> Iterator[None]:
    """Run the block on the numpy route (tests compare both routes)."""
    before = _OFF["force"]
    _OFF["force"] = True
    try:
        yield
    finally:
        _OFF["force"] = before


@functools.cache
def _kernels() -> dict[str, Any] | None:
    """Compile-on-first-call kernels, or None when numba is not installed."""
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

    S = 1024  # block of the vectorised loops: a small scratch, no V-size temporary

    @jit
    def front(p, q, shift, base, top, outside_max, dense_max, ids):  # pragma: no cover
        V = p.shape[0]
        key = np.empty(S, dtype=np.float64)
        kb = key.view(np.int64)
        sample = np.zeros(top + 1, dtype=np.int64)  # tokens per bucket, every 8th token
        lo = np.int64(1) << 62
        hi = np.int64(-1)
        inf = np.int64(0x7FF0000000000000)
        outside = 0  # tokens of a finite positive ratio beyond the window
        for s in range(0, V, S):
            m = min(S, V - s)
            ps, qs, out = p[s : s + m], q[s : s + m], ids[s : s + m]
            for i in range(m):
                key[i] = abs(ps[i] / qs[i])
            for i in range(m):
                k = kb[i]
                j = (k >> shift) - base
                outside += ((j < 1) & (k > 0)) | ((j >= top) & (k < inf))
                b = min(max(j, 0), top)
                out[i] = b
                lo = min(lo, b)
                hi = max(hi, b)
            for i in range(0, m, 8):
                sample[out[i]] += 1
        NB = hi - lo + 1
        drawn = (V // S) * (S // 8) + (V % S + 7) // 8  # tokens sampled
        if outside > outside_max or sample.max() * V > dense_max * drawn:  # left to numpy
            z = np.zeros(0, dtype=np.float64)
            return -1, z, z, np.zeros(0, dtype=np.int64)
        # four lanes (token i in lane i % 4): a run of tokens in one bucket is not one chain
        # of dependent additions
        hp = np.zeros((4, NB), dtype=np.float64)
        hq = np.zeros((4, NB), dtype=np.float64)
        hn = np.zeros((4, NB), dtype=np.int64)
        for i in range(V):
            b = ids[i] - lo
            ids[i] = b
            r = i & 3
            hp[r, b] += p[i]
            hq[r, b] += q[i]
            hn[r, b] += 1
        for r in range(1, 4):
            for b in range(NB):
                hp[0, b] += hp[r, b]
                hq[0, b] += hq[r, b]
                hn[0, b] += hn[r, b]
        return lo, hp[0].copy(), hq[0].copy(), hn[0].copy()

    @jit
    def powers(ids, q, d1, d2, heavy, K, NB, odds, c):  # pragma: no cover - compiled
        V = ids.shape[0]
        out = np.zeros((K, NB), dtype=np.float64)
        u = np.empty(S, dtype=np.float64)  # the divisions vectorise in loops of their own
        w = np.empty(S, dtype=np.float64)
        nh = heavy.shape[0]
        for s in range(0, V, S):
            m = min(S, V - s)
            qs, bs = q[s : s + m], ids[s : s + m]
            if d1 == 1.0 and d2 == 1.0:  # q itself (x / 1 = x)
                for i in range(m):
                    u[i] = qs[i]
            elif d2 == 1.0:
                for i in range(m):
                    u[i] = qs[i] / d1
            else:
                for i in range(m):
                    u[i] = qs[i] / d1 / d2
            for j in range(nh):
                if s <= heavy[j] < s + m:
                    u[heavy[j] - s] = 0.0
            if odds:
                for i in range(m):
                    w[i] = u[i] / (c - u[i])
                for i in range(m):
                    b = bs[i]
                    out[0, b] += u[i]
                    out[1, b] += w[i]
            else:
                for i in range(m):
                    b = bs[i]
                    x = u[i]
                    y = x
                    out[0, b] += y
                    for k in range(1, K):
                        y = y * x
                        out[k, b] += y
        return out

    @jit
    def gather(ids, lo, hi, cap):  # pragma: no cover - compiled
        idx = np.empty(cap + 1, dtype=np.int64)
        width = np.uint64(hi - lo)
        m = 0
        for i in range(ids.shape[0]):  # branch-free: write always, advance when inside
            idx[min(m, cap)] = i
            m += np.uint64(ids[i] - lo) <= width
        return idx[: min(m, cap)], m

    return {"front": front, "powers": powers, "gather": gather}


def bucket_front(
    p: np.ndarray,
    q: np.ndarray,
    sub_bits: int,
    half_window: int,
    outside: float = 1.0,
    dense: float = 1.0,
):
    r"""One float64 row's buckets and histograms: ``(ids, id0, Hp, Hq, Hn)``, or None.

    The buckets are those of :func:`mdsd_ot.fast._histograms.ratio_buckets` on a fixed window
    (its torch form): ``2**sub_bits`` per octave of :math:`|p/q|` in
    :math:`[2^{-w}, 2^{w})`, ``w = half_window``, numbered from 1, with bucket 0 below and the
    last one above (+inf and NaN included).  ``ids`` (V,) int32 count from the smallest occupied
    bucket, ``id0``; ``Hp``, ``Hq`` and ``Hn`` (NB,) hold, per bucket ``id0 .. id0 + NB - 1``,
    the sums of p, of q and the number of tokens.

    None (before any histogram is formed) when more than a share ``outside`` of the ratios are
    finite and positive but beyond the window, or when one bucket holds more than a share
    ``dense`` of every 8th token: rows the window's buckets cannot bound tightly.

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
    lo, hp, hq, hn = _kernels()["front"](
        p, q, 52 - sub_bits, base, top, int(outside * V), dense * V, ids
    )
    return None if lo < 0 else (ids, int(lo), hp, hq, hn)


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
