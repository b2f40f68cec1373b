r"""The bucket path's array operations: ratio buckets from float bits, histograms, compaction.

:mod:`mdsd_ot.fast.bucket` needs a few operations beyond :mod:`mdsd_ot.fast._backend`, each
written once for numpy and torch:

- :func:`ratio_buckets` / :func:`bucket_edges` — the bucket of every ratio from the top bits of
  its float (exponent and ``sub_bits`` mantissa bits: monotone in the ratio, one shift), and
  the exact ratio interval of each bucket;
- :func:`histogram` / :func:`count_histogram` — per-row, per-bucket sums (numpy ``bincount`` on
  row-offset ids, torch ``scatter_add_``: no per-row loop, no host synchronisation);
- :func:`compact` — the positions of the True entries of each row, padded to a given capacity
  (torch: a cumulative sum and a scatter, no synchronisation; the capacity is read once).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._backend import is_numpy_array

__all__ = [
    "survivor_mask",
    "scatter_or",
    "float_layout",
    "ratio_buckets",
    "bucket_edges",
    "histogram",
    "count_histogram",
    "compact",
]


def float_layout(dtype: Any) -> tuple[int, int]:
    """(mantissa bits, exponent bias) of a float32 or float64 dtype (numpy or torch)."""
    return (23, 127) if "32" in str(dtype) else (52, 1023)


def ratio_buckets(key: Any, sub_bits: int, half_window: int) -> tuple[Any, int]:
    r"""Bucket of every ratio (a key >= 0, NaN allowed): ``(ids, number of buckets)``.

    numpy float64 keys are overwritten by their bucket ids (no new (B, V) array).

    A bucket is the float's exponent and its top ``sub_bits`` mantissa bits: ``2**sub_bits``
    buckets per octave, monotone in the key.  numpy: the top bits themselves (one shift of the
    bits, every octave of float64 its own buckets; the caller trims the histograms to the
    occupied range).  torch: a fixed window of octaves :math:`[2^{-w}, 2^{w})`, buckets 1..M, with
    bucket 0 for everything below and M + 1 for everything above (+inf and NaN included), so
    that the (B, M + 2) histograms have a static, small shape.  One or three elementwise
    operations per entry: no logarithm, no sort.

    Examples
    --------
    >>> ids, nb = ratio_buckets(np.array([[0.0, 1.0, 1.2, np.inf]]), 2, 4)
    >>> ids.tolist(), nb
    ([[0, 4092, 4092, 8188]], 8192)
    """
    mant, bias = float_layout(key.dtype)
    shift = mant - sub_bits
    if is_numpy_array(key):
        if mant == 52:  # one shift, in the key's buffer (the key is overwritten); sign bit clear
            bits = key.view(np.uint64)
            np.right_shift(bits, np.uint64(shift), out=bits)
            return bits.view(np.int64), 1 << (63 - shift)
        return (key.view(np.uint32) >> np.uint32(shift)).astype(np.int64), 1 << (31 - shift)
    import torch

    base = ((bias - half_window) << sub_bits) - 1  # bucket 1 starts at 2^-half_window
    top = (2 * half_window << sub_bits) + 1
    bits = key.view(torch.int64 if mant == 52 else torch.int32).to(torch.int64)
    return ((bits >> shift) - base).clamp_(0, top), top + 1


def bucket_edges(
    key: Any, sub_bits: int, half_window: int, b0: int, b1: int, window: bool | None = None
):
    """Lower and upper ratio of the buckets ``b0..b1-1`` of :func:`ratio_buckets` (float64).

    The edges are exact: powers of two times ``1 + j / 2**sub_bits``.  Buckets of +inf and NaN
    get ``[max finite, inf]``; the torch window's end buckets ``[0, 2^-w)`` and ``[2^w, inf]``.
    ``window``: whether the ids are those of the fixed window (torch's form, also the fused
    numpy route's); None: by the key's library.

    Examples
    --------
    >>> lo, hi = bucket_edges(np.zeros(1), 2, 4, 4092, 4094)
    >>> lo.tolist(), hi.tolist()
    ([1.0, 1.25], [1.25, 1.5])
    """
    mant, _ = float_layout(key.dtype)
    window = not is_numpy_array(key) if window is None else window
    return _edges(mant, not window, sub_bits, half_window, int(b0), int(b1))


@functools.lru_cache(maxsize=64)
def _edges(mant: int, numpy: bool, sub_bits: int, half_window: int, b0: int, b1: int):
    """:func:`bucket_edges` (cached: read-only arrays; the same buckets recur row after row)."""
    lo, hi = _edges_of(mant, numpy, sub_bits, half_window, b0, b1)
    lo.flags.writeable = hi.flags.writeable = False
    return lo, hi


def _edges_of(mant: int, numpy: bool, sub_bits: int, half_window: int, b0: int, b1: int):
    j = np.arange(b0, b1 + 1, dtype=np.int64)
    if numpy:
        shift = mant - sub_bits
        edges = (
            (j << shift).view(np.float64)
            if mant == 52
            else ((j << shift).astype(np.int32).view(np.float32).astype(np.float64))
        )
        if not np.isfinite(edges[-1]):  # the buckets of +inf and NaN
            edges = np.where(np.isnan(edges), np.inf, edges)
            lo = np.where(np.isinf(edges[:-1]), np.finfo(np.float64).max, edges[:-1])
            return lo, edges[1:]
        return edges[:-1], edges[1:]
    M = 2 * half_window << sub_bits
    k = np.clip(j - 1, 0, M)
    edges = np.ldexp(
        1.0 + (k % (1 << sub_bits)) / (1 << sub_bits), k // (1 << sub_bits) - half_window
    )
    edges = np.where(j == 0, 0.0, np.where(j > M + 1, np.inf, edges))
    return edges[:-1], edges[1:]


def histogram(ids: Any, w: Any, nbins: int | None) -> Any:
    """Per-row sums of ``w`` (B, V) by bucket ``ids`` (B, V): a (B, nbins) array.

    numpy: one ``bincount`` over row-offset ids; torch: ``scatter_add_`` (no host
    synchronisation, no per-row loop).  ``nbins=None`` (numpy, one row): as many bins as the
    largest id needs, no more (fewer fresh pages to touch than the full range).  The sums are
    float64 on both (``bincount``'s dtype): float32 rows accumulated in float32 lose the mass
    of a crowded bucket (p = q uniform, V = 150,000: α* 0.99907 instead of 1).
    """
    B = ids.shape[0]
    if is_numpy_array(w):
        if B == 1:
            return np.bincount(ids.reshape(-1), w.reshape(-1), nbins or 0)[None, :]
        flat = ids + (np.arange(B, dtype=ids.dtype) * nbins)[:, None]
        return np.bincount(flat.reshape(-1), w.reshape(-1), B * nbins).reshape(B, nbins)
    import torch

    out = torch.zeros((B, nbins), dtype=torch.float64, device=ids.device)
    return out.scatter_add_(1, ids, w.to(torch.float64))


def count_histogram(ids: Any, nbins: int | None) -> Any:
    """Per-row number of entries in each bucket: a (B, nbins) array of the ids' dtype
    (``nbins=None``, numpy, one row: up to the largest id only)."""
    B = ids.shape[0]
    if is_numpy_array(ids):
        if B == 1:
            return np.bincount(ids.reshape(-1), minlength=nbins or 0)[None, :]
        flat = ids + (np.arange(B, dtype=ids.dtype) * nbins)[:, None]
        return np.bincount(flat.reshape(-1), minlength=B * nbins).reshape(B, nbins)
    out = ids.new_zeros((B, nbins))
    return out.scatter_add_(1, ids, ids.new_ones(ids.shape))


def compact(mask: Any, capacity: int) -> tuple[Any, Any]:
    """The positions of the True entries of each row of ``mask``, in order, padded to capacity.

    Returns ``(idx, valid)``, both (B, capacity): ``idx`` holds the column of the j-th True entry
    of the row (0 where there is none), ``valid`` says which slots are filled.  ``capacity`` must
    be at least the largest count (the caller knows it: numpy counts on the host, torch reads
    the counts at its one synchronisation).  torch: a cumulative sum and a scatter, no sync.
    """
    B, V = mask.shape
    if is_numpy_array(mask):
        if B == 1:
            cols = np.flatnonzero(mask[0])
            idx = np.zeros((1, capacity), dtype=np.int64)
            idx[0, : cols.size] = cols
            return idx, (np.arange(capacity) < cols.size)[None, :]
        rows, cols = np.divmod(np.flatnonzero(mask), V)
        counts = np.bincount(rows, minlength=B)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(rows.size) - start[rows]
        idx = np.zeros((B, capacity), dtype=np.int64)
        valid = np.zeros((B, capacity), dtype=bool)
        idx[rows, slot] = cols
        valid[rows, slot] = True
        return idx, valid
    import torch

    pos = torch.cumsum(mask, dim=-1, dtype=torch.int64) - 1
    dest = torch.where(mask, pos, torch.full_like(pos, capacity))
    cols = torch.arange(V, device=mask.device).expand(B, V)
    idx = torch.zeros((B, capacity + 1), dtype=torch.int64, device=mask.device)
    idx.scatter_(1, dest, cols)
    valid = torch.arange(capacity, device=mask.device)[None, :] < mask.sum(-1, keepdim=True)
    return idx[:, :capacity], valid


def survivor_mask(survive: np.ndarray, ids: np.ndarray, b0: int, NB: int) -> np.ndarray:
    """numpy: the tokens in surviving buckets (one comparison when the survivors form one run)."""
    if survive.shape[0] == 1:
        sb = np.flatnonzero(survive[0])
        if sb.size == 0:
            return np.zeros(ids.shape, dtype=bool)
        if sb[-1] - sb[0] == sb.size - 1:  # one run of buckets
            if sb.size == 1:
                return ids == b0 + sb[0]
            return (ids >= b0 + sb[0]) & (ids <= b0 + sb[-1])
    table = np.zeros((survive.shape[0], NB), dtype=bool)
    table[:, b0 : b0 + survive.shape[1]] = survive
    return np.take(table.reshape(-1), ids + (np.arange(table.shape[0])[:, None] * table.shape[1]))


def scatter_or(idx: Any, sel: Any, shape: tuple[int, int]) -> Any:
    """A (B, V) mask, True at ``idx[b, j]`` where ``sel[b, j]`` (duplicate indices allowed)."""
    if isinstance(idx, np.ndarray):
        out = np.zeros(shape, dtype=bool)
        r, c = np.nonzero(sel)
        out[r, idx[r, c]] = True
        return out
    import torch

    cnt = torch.zeros(shape, dtype=torch.int32, device=idx.device)
    return cnt.scatter_add_(1, idx, sel.to(torch.int32)) > 0
