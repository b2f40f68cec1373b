"""The backend layer: the few array operations the array-API standard lacks or does slowly.

The fast solver is written once against the array-API standard (``array_api_compat``); numpy and
torch arrays flow through the same functions.  Everything else (arithmetic, ``cumulative_sum``,
``min``, ``argmin``, ``where``) is taken from ``array_namespace(x)``.  This module adds:

- :func:`argsort` — an unstable sort along the last axis (ties may come in any order: T7 holds
  for every order of equal keys, see :mod:`mdsd_ot.fast.prefix`);
- :func:`gather` / :func:`scatter` — ``out[..., j] = x[..., idx[..., j]]`` and its inverse
  ``out[..., idx[..., j]] = x[..., j]`` (the standard has no scatter, and the compat
  ``take_along_axis`` for torch adds a pass to wrap negative indices we never produce);
- :func:`cumsum` — a cumulative sum along the last axis, in place;
- :func:`clip` — ``np.clip`` / ``torch.clamp`` (the compat ``clip`` uses boolean-mask
  assignment, which synchronises a GPU);
- :func:`topk`, :func:`sort_int`, :func:`mark`, :func:`take_seg` — the heavy-token plumbing of the
  certified series (:mod:`mdsd_ot.fast.series`);
- :func:`zeros`, :func:`exclusive`, :func:`const` — allocation on the input's device, a leading
  zero column, and constant tables copied to the device once (cached).

None of these synchronise a GPU with the host.  The double-double arithmetic and the blocked
cumulative sums whose rounding depth the certified bounds count are in :mod:`mdsd_ot.fast._dd`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
from array_api_compat import array_namespace, device, is_torch_array
from array_api_compat import is_numpy_array as _is_numpy_array_compat

from . import _fused


def is_numpy_array(x: Any) -> bool:
    """A numpy array (or numpy scalar): ``isinstance`` first, the array-API test otherwise (it
    costs a microsecond, and the solver asks dozens of times per row)."""
    return isinstance(x, np.ndarray) or _is_numpy_array_compat(x)


__all__ = [
    "namespace",
    "argsort",
    "gather",
    "scatter",
    "cumsum",
    "clip",
    "is_torch",
    "arange_like",
    "zeros",
    "exclusive",
    "is_array",
    "kind",
    "const",
    "topk",
    "sort_int",
    "mark",
    "take_seg",
]


#: numpy >= 2.1 implements the array-API standard itself: its own namespace is used directly
#: (the compat wrappers cost about 10 us per call, which adds up over the bucket path's small
#: per-bucket arrays).
_NUMPY_IS_ARRAY_API = tuple(int(x) for x in np.__version__.split(".")[:2]) >= (2, 1)


def namespace(*arrays: Any) -> ModuleType:
    """The array-API namespace of ``arrays`` (numpy itself from 2.1 on, else array-api-compat)."""
    if _NUMPY_IS_ARRAY_API and all(isinstance(a, np.ndarray) for a in arrays):
        return np
    return array_namespace(*arrays)


def is_torch(x: Any) -> bool:
    """True for a torch tensor."""
    return is_torch_array(x)


def argsort(x: Any) -> Any:
    """Indices sorting ``x`` ascending along the last axis (not stable).

    Examples
    --------
    >>> argsort(np.array([0.3, 0.1, 0.2])).tolist()
    [1, 2, 0]
    """
    if is_numpy_array(x):
        return np.argsort(x, axis=-1)
    if is_torch_array(x):
        import torch

        return torch.argsort(x, dim=-1, stable=False)
    return namespace(x).argsort(x, axis=-1, stable=False)


def gather(x: Any, idx: Any, out: Any = None) -> Any:
    """``out[..., j] = x[..., idx[..., j]]`` along the last axis (into ``out`` when given).

    ``out`` lets the caller reuse a dead buffer of the same shape and dtype (fresh (B, V)
    temporaries cost page faults in numpy and memory on a GPU).

    Examples
    --------
    >>> gather(np.array([[1.0, 2.0, 3.0]]), np.array([[2, 0, 1]])).tolist()
    [[3.0, 1.0, 2.0]]
    """
    if is_numpy_array(x):
        if x.ndim == 1:
            return np.take(x, idx, out=out)
        B, V = x.shape
        if B == 1:
            flat = idx.reshape(-1)
        else:  # flat indexing is ~2x faster than take_along_axis on (B, V) inputs
            flat = idx + (np.arange(B, dtype=idx.dtype) * V)[:, None]
        if out is None:
            return np.take(x.reshape(-1), flat).reshape(B, V)
        np.take(x.reshape(-1), flat, out=out.reshape(flat.shape))
        return out
    if is_torch_array(x):
        import torch

        return torch.gather(x, -1, idx, out=out)
    res = namespace(x).take_along_axis(x, idx, axis=-1)  # pragma: no cover - other libraries
    if out is None:  # pragma: no cover
        return res
    out[...] = res  # pragma: no cover
    return out  # pragma: no cover


def scatter(x: Any, idx: Any) -> Any:
    """The inverse of :func:`gather` for a permutation ``idx``: ``out[..., idx[..., j]] = x[..., j]``.

    Examples
    --------
    >>> scatter(np.array([[3.0, 1.0, 2.0]]), np.array([[2, 0, 1]])).tolist()
    [[1.0, 2.0, 3.0]]
    """
    if is_numpy_array(x):
        out = np.empty_like(x)
        np.put_along_axis(out, idx, x, axis=-1)
        return out
    if is_torch_array(x):
        import torch

        return torch.empty_like(x).scatter_(-1, idx, x)
    raise TypeError(f"scatter: unsupported array type {type(x).__name__}")  # pragma: no cover


def cumsum(x: Any) -> Any:
    """Cumulative sum along the last axis, *in place* (returns ``x``, overwritten).

    In place because fresh (B, V) temporaries cost page faults (numpy) and memory (GPU).

    Examples
    --------
    >>> cumsum(np.array([1.0, 2.0, 3.0])).tolist()
    [1.0, 3.0, 6.0]
    """
    if is_numpy_array(x):
        return np.cumsum(x, axis=-1, out=x)
    if is_torch_array(x):
        return x.cumsum_(-1)
    x[...] = namespace(x).cumulative_sum(x, axis=-1)  # pragma: no cover - other libraries
    return x


def logcumsumexp(x: Any) -> Any:
    """log(cumsum(exp(x))) along the last axis, without leaving the range of doubles.

    Examples
    --------
    >>> np.exp(logcumsumexp(np.log(np.array([1.0, 2.0, 3.0])))).round(12).tolist()
    [1.0, 3.0, 6.0]
    """
    if is_numpy_array(x):
        return np.logaddexp.accumulate(x, axis=-1)
    return x.logcumsumexp(dim=-1)


def rowdot(a: Any, b: Any) -> Any:
    """Row-wise dot product along the last axis, kept as a trailing axis of length 1.

    Examples
    --------
    >>> rowdot(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]])).tolist()
    [[11.0]]
    """
    if is_numpy_array(a):
        return np.einsum("...i,...i->...", a, b)[..., None]
    return (a * b).sum(dim=-1, keepdim=True)


def clip(x: Any, lo: float | None, hi: float | None) -> Any:
    """Clamp ``x`` into ``[lo, hi]`` (``None``: no bound) without a host synchronisation.

    Examples
    --------
    >>> clip(np.array([-0.5, 0.5, 1.5]), 0.0, 1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    if is_torch_array(x):
        return x.clamp(lo, hi)
    return np.clip(x, lo, hi)


def arange_like(x: Any, n: int) -> Any:
    """``arange(n)`` as int64 on the device of ``x``."""
    xp = namespace(x)
    if is_torch_array(x):
        return xp.arange(n, dtype=xp.int64, device=x.device)
    return xp.arange(n, dtype=xp.int64)


def zeros(xp: Any, shape: tuple[int, ...], like: Any) -> Any:
    """Zeros of ``shape`` in the dtype and on the device of ``like``."""
    return xp.zeros(shape, dtype=like.dtype, device=device(like))


def exclusive(y: Any, xp: Any) -> Any:
    """Prepend a zero column: prefix k holds the sum of the first k terms."""
    return xp.concat([zeros(xp, tuple(y.shape[:-1]) + (1,), y), y], axis=-1)


def is_array(x: Any) -> bool:
    """True for a numpy array or a torch tensor."""
    return is_numpy_array(x) or is_torch_array(x)


def kind(x: Any) -> str:
    """'numpy', 'cpu' (torch on the CPU) or 'gpu' (torch elsewhere): sets the chunk sizes."""
    if is_numpy_array(x):
        return "numpy"
    return "cpu" if x.device.type == "cpu" else "gpu"


_CONSTS: dict[tuple, Any] = {}


def const(like: Any, key: tuple, build: Any) -> Any:
    """A constant array (from ``build()``, numpy) on the device of ``like``, cached.

    Copied to the device once, without blocking the host; later calls reuse it (a blocking
    host-to-device copy would be a synchronisation on a GPU).
    """
    if is_numpy_array(like):
        return build()
    full = (key, str(like.device))
    out = _CONSTS.get(full)
    if out is None:
        import torch

        out = torch.from_numpy(np.array(build())).to(like.device, non_blocking=True)
        _CONSTS[full] = out
    return out


def topk(q: Any, k: int, qmax: Any = None) -> tuple[Any, Any]:
    """Values (descending) and indices of the k largest entries of each row of a (B, V) array.

    Ties are broken towards the smaller index for numpy; torch breaks them its own way (any
    choice of the heavy set among equal masses gives the same Q, up to rounding).  ``qmax``:
    one numpy row's block maxima from the fused bucketing pass
    (:func:`mdsd_ot.fast._fused.bucket_front`), so the compiled pass reads only the blocks
    that can hold one of the k largest.
    """
    if is_torch_array(q):
        import torch

        vals, idx = torch.topk(q, k, dim=-1, largest=True, sorted=True)
        return vals, idx
    V = q.shape[-1]
    compiled = q.shape[0] == 1 and q.dtype == np.float64 and _fused.enabled()
    if k < V and compiled and (k > 3 or qmax is not None):
        vals, idx = _fused.top_k(q[0], k, qmax)  # one compiled pass, the same order
        return vals[None, :], idx[None, :]
    if k <= 8 and k < V and q.shape[0] == 1:  # a few argmax passes beat a partition
        return _topk_small(q[0], k)
    idx = (
        np.argpartition(q, V - k, axis=-1)[:, V - k :]
        if k < V
        else np.tile(np.arange(V), (len(q), 1))
    )
    vals = np.take_along_axis(q, idx, axis=-1)
    order = np.lexsort((idx, -vals), axis=-1)
    return np.take_along_axis(vals, order, -1), np.take_along_axis(idx, order, -1)


def _topk_small(row: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest of one row by k argmax passes over the segments between those found
    (larger value first, then smaller index, as :func:`topk`)."""
    found: list[int] = []
    for _ in range(k):
        cuts = [-1, *sorted(found), row.size]
        best, best_i = -np.inf, -1
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if b - a > 1:
                i = a + 1 + int(np.argmax(row[a + 1 : b]))
                if row[i] > best or (row[i] == best and i < best_i):
                    best, best_i = row[i], i
        found.append(best_i)
    idx = np.array(found, dtype=np.int64)
    return row[idx][None, :], idx[None, :]


def sort_int(x: Any) -> Any:
    """Rows of an integer array sorted ascending."""
    if is_torch_array(x):
        import torch

        return torch.sort(x, dim=-1).values
    return np.sort(x, axis=-1)


def mark(idx: Any, like: Any) -> Any:
    """A (B, V) boolean mask, True at ``idx`` (B, m) in each row (shape of ``like``)."""
    if is_torch_array(like):
        import torch

        out = torch.zeros(like.shape, dtype=torch.bool, device=like.device)
        return out.scatter_(-1, idx, True)
    out = np.zeros(like.shape, dtype=bool)
    np.put_along_axis(out, idx, True, axis=-1)
    return out


def take_seg(A: Any, sg: Any) -> Any:
    """``out[b, r, c] = A[b, r, sg[b, c]]``: (B, R, m+1) values per heavy segment -> (B, R, C)."""
    if is_torch_array(A):
        return A.gather(-1, sg[:, None, :].expand(A.shape[0], A.shape[1], sg.shape[-1]))
    return np.take_along_axis(A, sg[:, None, :], axis=-1)


def put(x: Any, idx: Any, value: float) -> Any:
    """``x[b, idx[b, j]] = value`` in place for a (B, V) array and (B, k) indices."""
    if is_numpy_array(x):
        np.put_along_axis(x, idx, value, axis=-1)
        return x
    return x.scatter_(-1, idx, value)


def take_rows(x: Any, idx: Any) -> Any:
    """``out[b, j] = x[b, idx[b, j]]`` for (B, N) ``x`` and (B, k) ``idx`` (also (B, R, N) with
    (B, R, k)): a gather along the last axis."""
    if is_numpy_array(x):
        if x.ndim == 2 and idx.ndim == 2:
            if x.shape[0] == 1:
                return np.take(x[0], idx[0])[None, :]
            N = x.shape[1]
            flat = idx + (np.arange(x.shape[0], dtype=idx.dtype) * N)[:, None]
            return np.take(x.reshape(-1), flat)
        return np.take_along_axis(x, idx, axis=-1)
    return x.gather(-1, idx)


def stable_argsort(x: Any) -> Any:
    """Indices sorting each row ascending, equal keys kept in their order (stable)."""
    if is_numpy_array(x):
        return np.argsort(x, axis=-1, kind="stable")
    return x.argsort(dim=-1, stable=True)


def cummax(x: Any) -> Any:
    """Running maximum along the last axis."""
    if is_numpy_array(x):
        return np.maximum.accumulate(x, axis=-1)
    return x.cummax(dim=-1).values


def cummin(x: Any) -> Any:
    """Running minimum along the last axis."""
    if is_numpy_array(x):
        return np.minimum.accumulate(x, axis=-1)
    return x.cummin(dim=-1).values


def count_true(mask: Any) -> Any:
    """Number of True entries per row of a (B, V) boolean array (int64, no (B, V) temporary)."""
    if is_numpy_array(mask):
        if mask.shape[0] == 1:  # the axis-free count is several times faster
            return np.array([np.count_nonzero(mask)])
        return np.count_nonzero(mask, axis=-1)
    return mask.sum(dim=-1)


def searchsorted_rows(a: Any, v: Any, side: str = "left") -> Any:
    """Per row, the insertion points of ``v`` (B, k) in the sorted rows of ``a`` (B, C)."""
    if is_numpy_array(a):
        if a.shape[0] == 1:
            return np.searchsorted(a[0], v[0], side=side)[None, :]
        span = int(max(a.max(initial=0), v.max(initial=0))) + 1
        off = (np.arange(a.shape[0], dtype=a.dtype) * span)[:, None]
        flat = np.searchsorted((a + off).reshape(-1), (v + off).reshape(-1), side=side)
        return flat.reshape(v.shape) - (np.arange(a.shape[0]) * a.shape[1])[:, None]
    import torch

    return torch.searchsorted(a.contiguous(), v.contiguous(), side=side)


def to_host(*xs: Any) -> list[np.ndarray]:
    """numpy copies of (B,) arrays, read together: for tensors, one host synchronisation."""
    if all(is_numpy_array(x) for x in xs):
        return [np.asarray(x) for x in xs]
    import torch

    rows = torch.stack([x.to(torch.float64) for x in xs]).cpu().numpy()
    return list(rows)


def isin_rows(x: Any, y: Any) -> Any:
    """``out[b, j] = x[b, j] in y[b, :]`` for (B, C) and (B, k) integer arrays."""
    if is_numpy_array(x) and x.shape[0] == 1:
        ys = np.sort(y[0])  # a few heavy tokens: binary searches beat np.isin's sort of both
        if ys.size == 0:
            return np.zeros(x.shape, dtype=bool)
        at = np.minimum(np.searchsorted(ys, x[0]), ys.size - 1)
        return (ys[at] == x[0])[None, :]
    xp = namespace(x, y)
    return xp.any(x[:, :, None] == y[:, None, :], axis=-1)
