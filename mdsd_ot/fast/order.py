r"""The chain order of T7 by one integer sort: p/q keys packed with their indices.

Every sorting route of the package orders the tokens by the ratio :math:`p(i)/q(i) \ge 0`
(:func:`mdsd_ot.fast.prefix.sort_key`).  ``np.argsort`` of V float64 values is a comparison sort
that moves (key, index) pairs; numpy's *value* sort of 64-bit integers is vectorised and several
times faster.  :func:`ratio_order` turns the argsort into value sorts:

1. **Pack.**  A non-negative float's bit pattern, read as an unsigned integer, is monotone in
   its value (the sign bit cleared, so ``-0.0`` is ``0.0``; NaN above :math:`+\infty`).  With
   :math:`b = \lceil \log_2 V \rceil` bits for the index, the word
   :math:`w_i = (\text{bits}(k_i) \wedge \neg(2^b - 1)) \vee i` holds the key's top
   :math:`63 - b` bits and the index.  Sorting the words orders the tokens by truncated key,
   ties by index.
2. **Repair.**  Two keys that agree in their top bits but differ below (relative distance under
   :math:`2^{b - 52}`, rare) may come out of order.  Such pairs sit in *runs* of equal
   truncated keys, found by comparing neighbours; each run is sorted again on the words
   :math:`(\text{bits}(k_i) \wedge (2^b - 1)) \cdot 2^b \vee i` (the key's low bits, then the
   index), which orders it by the full key, ties by index.  Float32 keys need no repair: the
   32-bit pattern and the index fit in one word.
3. **NaN** (:math:`p = q = 0`) keys come last, in index order.

The result equals ``np.argsort(key, axis=-1, kind="stable")`` exactly (tested on ties, near
ties, zeros, infinities, NaN and subnormals), at about a third of the cost of the unstable
``np.argsort`` at V = 152,064 (``benchmarks/fast.py``).  Rows of a (B, V) array are ordered
independently.  Other inputs (torch tensors, negative keys, very short rows, V above
:math:`2^{21}` where a run's repair words would not fit) go to the library's own argsort.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _backend as bk

__all__ = ["ratio_order", "PACKED_MIN_V", "UNSTABLE_MIN_V"]

#: Rows shorter than this are ordered by ``np.argsort`` itself (the packing does not pay).
PACKED_MIN_V: int = 512
#: With ``stable=False``, rows shorter than this are ordered by numpy's (unstable) argsort,
#: which is faster than the packing there.
UNSTABLE_MIN_V: int = 4096
#: Index bits up to which the repair words (run, low key bits, index) fit in 63 bits.
_MAX_BITS: int = 21
_IDX: dict[int, np.ndarray] = {}
#: Entries sorted together when a (B, V) array has many rows (a few MB of words at a time).
_CHUNK: int = 1 << 19


def ratio_order(key: Any, stable: bool = True, *, out: Any = None, work: Any = None) -> Any:
    r"""Indices ordering each row by :math:`|k|` ascending (NaN last), ties by index.

    Parameters
    ----------
    key : array of shape (V,) or (B, V)
        Ratios :math:`p/q \ge 0` (``+inf`` and NaN allowed), as
        :func:`mdsd_ot.fast.prefix.sort_key` returns them; numpy float64 or float32, or a torch
        tensor.  Keys are ordered by their absolute value (``-0.0`` is ``0.0``).
    out : int64 array of the shape of ``key``, optional
        Where to write the order (numpy; returned).
    work : uint64 array of the shape of ``key``, optional
        A buffer for the packed words of a single numpy float64 row (none is allocated then).
    stable : bool
        Whether equal keys must keep their order.  numpy rows of at least
        :data:`UNSTABLE_MIN_V` keys are always ordered stably; ``stable=False`` lets shorter
        rows (and torch tensors) use the library's unstable argsort.

    Returns
    -------
    array of int64, the shape of ``key``
        ``order`` with ``|key|[..., order]`` ascending; for numpy input with ``stable=True``
        equal to ``np.argsort(np.abs(key), axis=-1, kind="stable")``.

    Examples
    --------
    >>> k = np.array([2.0, 0.5, np.inf, 0.5, np.nan, 0.0, 1.0 + 2.0**-50, 1.0])
    >>> ratio_order(k).tolist()
    [5, 1, 3, 7, 6, 0, 2, 4]
    """
    if not isinstance(key, np.ndarray):
        key = abs(key)
        return bk.stable_argsort(key) if stable else bk.argsort(key)
    V = key.shape[-1]
    b = max(1, (V - 1).bit_length())
    if not stable and V < UNSTABLE_MIN_V:
        order = np.argsort(np.abs(key), axis=-1)
    elif (
        key.ndim not in (1, 2)
        or V < PACKED_MIN_V
        or b > _MAX_BITS
        or key.dtype not in (np.float64, np.float32)
    ):
        order = np.argsort(np.abs(key), axis=-1, kind="stable")
    else:
        rows = np.ascontiguousarray(key.reshape(-1, V))
        if rows.shape[0] == 1:
            if work is not None:
                work = work.reshape(1, V)
            dest = None if out is None else out.reshape(1, V)
            return _order_rows(rows, b, dest, work).reshape(key.shape)
        # many rows: a few at a time, so that the words stay a few MB (not a (B, V) array)
        order = np.empty(rows.shape, dtype=np.int64) if out is None else out.reshape(rows.shape)
        step = max(1, _CHUNK // V)
        for r0 in range(0, rows.shape[0], step):
            order[r0 : r0 + step] = _order_rows(rows[r0 : r0 + step], b)
        return order.reshape(key.shape)
    if out is None:
        return order
    out[...] = order
    return out


def _order_rows(rows: np.ndarray, b: int, out=None, work=None) -> np.ndarray:
    """:func:`ratio_order` of C-contiguous (B, V) float rows, V >= 2 ** (b - 1); ``out``
    (int64) and ``work`` (uint64, float64 rows only) are optional (B, V) buffers."""
    idx = _indices(rows.shape[1])
    dest = None if out is None else out.view(np.uint64)
    if rows.dtype == np.float32:  # the whole pattern (sign cleared) and the index: exact
        words = (rows.view(np.uint32) & np.uint32(0x7FFFFFFF)).astype(np.uint64)
        words <<= np.uint64(32)
        words |= idx
        words.sort(axis=-1)
        order = np.bitwise_and(words, np.uint64(0xFFFFFFFF), out=dest).view(np.int64)
    else:
        low = np.uint64((1 << b) - 1)
        bits = rows.view(np.uint64)
        words = np.bitwise_and(bits, np.uint64(0x7FFFFFFFFFFFFFFF) ^ low, out=work)
        words |= idx
        words.sort(axis=-1)
        order = np.bitwise_and(words, low, out=dest).view(np.int64)
        words >>= np.uint64(b)  # the truncated keys, ascending
        tied = words[:, 1:] == words[:, :-1]  # neighbours with equal truncated keys
        if tied.any():
            _repair(bits, order, tied, b)
    _nan_last(rows, order)
    return order


def _indices(V: int) -> np.ndarray:
    """0..V-1 as uint64, kept for the last few V (a fresh V-size array costs page faults)."""
    idx = _IDX.get(V)
    if idx is None:
        for old in list(_IDX)[:-3]:  # list(): one atomic copy, safe against other threads
            _IDX.pop(old, None)
        idx = _IDX[V] = np.arange(V, dtype=np.uint64)
        idx.flags.writeable = False
    return idx


def _repair(bits: np.ndarray, order: np.ndarray, tied: np.ndarray, b: int) -> None:
    """Sort each run of equal truncated keys by (low key bits, index), in place in ``order``.

    ``tied[r, j]``: positions j and j + 1 of row r share their truncated key.  A row's runs
    are sorted together, in one integer sort of the words (run, low key bits, index); the work
    is proportional to the tokens in runs, not to V.
    """
    low = np.uint64((1 << b) - 1)
    for row in np.flatnonzero(tied.any(axis=-1)):
        j = np.flatnonzero(tied[row])  # pairs (j, j + 1), ascending
        first = np.ones(j.size, dtype=bool)
        first[1:] = j[1:] != j[:-1] + 1  # a pair that starts a run
        run = np.cumsum(first)
        last = np.flatnonzero(np.append(first[1:], True))  # the last pair of each run
        # the run's slots, ascending (each run's pairs, then its end), and their run numbers
        pos = np.insert(j, last + 1, j[last] + 1)
        rank = np.insert(run, last + 1, run[last])
        orow = order[row]
        o = orow[pos]
        w = rank.astype(np.uint64) << np.uint64(2 * b)
        w |= (bits[row][o] & low) << np.uint64(b)
        w |= o.view(np.uint64)
        w.sort()
        orow[pos] = (w & low).view(np.int64)


def _nan_last(rows: np.ndarray, order: np.ndarray) -> None:
    """NaN keys (every pattern above +inf) sort last; put them in index order, as numpy does."""
    last = rows[np.arange(rows.shape[0]), order[:, -1]]
    for row in np.flatnonzero(np.isnan(last)):
        c = int(np.count_nonzero(np.isnan(rows[row])))
        order[row, -c:] = np.sort(order[row, -c:])
