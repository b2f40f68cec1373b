r"""The solver core on validated rows: one route per kernel, numpy blocks, no host synchronisation.

.. math::

   \alpha^* = 1 + \min_{H} \bigl[P(H) - Q(H)\bigr]

Routes, looked up by kernel name (the draft laws' ``kernel`` attribute, :mod:`mdsd_ot.drafts`):
the closed forms without a sort (:data:`CLOSED_FORMS`: one draft, T4, and greedy, T9) and the
prefix kernels of T7 (:data:`mdsd_ot.fast.scan.KERNELS`) through the sorting path
:func:`mdsd_ot.fast.scan.solve_sorted`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _validate as V_
from . import _backend as bk
from .bucket import shared_buckets, solve_bucketed, supports
from .greedy import greedy, single
from .order import ratio_order
from .prefix import order_key, prefix_min
from .scan import KERNELS, solve_sorted

__all__ = [
    "CLOSED_FORMS",
    "NUMPY_BLOCK",
    "PATHS",
    "BUCKET_MIN_V",
    "GPU_SORTED_DTYPES",
    "solve_rows",
    "solve_rows_laws",
    "uses_buckets",
]

#: numpy inputs are solved in blocks of about this many entries (at least one row).
NUMPY_BLOCK = 2**18


def _single(p: Any, q: Any, n: int, return_set: bool) -> tuple[Any, Any]:
    return single(p, q, return_set)


#: Closed forms that need no sort: ``CLOSED_FORMS[name](p, q, n, return_set) -> (alpha, H)``.
CLOSED_FORMS: dict[str, Callable[..., tuple[Any, Any]]] = {"single": _single, "greedy": greedy}


#: The routes of the prefix kernels: ``"auto"`` (bucket-and-bound from :data:`BUCKET_MIN_V`
#: tokens on, sorting below), ``"sort"`` (the sorting path of T7), ``"bucket"`` (always).
PATHS: tuple[str, ...] = ("auto", "sort", "bucket")

#: ``path="auto"`` uses bucket-and-bound from this many tokens on (below, one sort is cheap).
BUCKET_MIN_V: int = 4096

#: ``path="auto"`` on a CUDA device: the dtypes whose closed-form laws (with, conditional
#: Poisson, without n = 2) are sorted.  A GPU sorts 155 million float32 keys in 11 ms, and the
#: bucket route's array operations cost more than the sort they spare there (H200, V = 152,064,
#: B = 1,024: with n = 2, 2.32x ``torch.sort`` against 1.82x for the sort; B = 64: 7.2x against
#: 3.2x; docs/fast.md "On a GPU"); float64 rows and the sequential series (n >= 3, 11.5x
#: against 68x) keep the buckets.
GPU_SORTED_DTYPES: tuple[str, ...] = ("float32",)


def solve_rows(
    p: Any,
    q: Any,
    n: int,
    kernel: str,
    return_set: bool = False,
    *,
    sums: tuple[Any, Any] | None = None,
    path: str = "auto",
    shared: Any = None,
):
    r"""The solver core on validated (B, V) rows (numpy or torch): ``(alpha, H, extra_err)``.

    No validation: rows must be non-negative and q must have at least n positive entries for the
    distinct-token laws (``alpha_star`` checks this).  ``sums`` = (row sums of p, of q) when the
    rows are not normalised (the law is that of the normalised rows); ``None`` means they sum to
    1.  ``kernel`` is a key of :data:`CLOSED_FORMS` or :data:`mdsd_ot.fast.scan.KERNELS`
    (``with``, ``without``, ``conditional-poisson``, ``greedy``, ``single``); ``path`` one of
    :data:`PATHS` (the prefix kernels: :mod:`mdsd_ot.fast.bucket` or
    :func:`mdsd_ot.fast.scan.solve_sorted`).  ``extra_err`` is the error bound of the Q
    evaluation beyond the rounding bound :func:`mdsd_ot.fast.prefix.error_bound` (the certified
    series for ``without`` with n >= 3, the bucket path's pruning slack and Newton bound).
    ``shared``: the bucketing pass of these rows when the validation formed it already
    (:func:`mdsd_ot.fast.bucket.validated_front`), or
    :data:`mdsd_ot.fast.bucket.FUSED_DECLINED` when that pass left the row to numpy's route;
    used by the bucket path, ignored otherwise.

    Examples
    --------
    >>> a, H, err = solve_rows(np.array([[0.5, 0.5]]), np.array([[0.75, 0.25]]), 2, "with")
    >>> a.tolist(), H, err
    ([0.9375], None, 0.0)
    """
    if kernel not in CLOSED_FORMS and kernel not in KERNELS:
        raise ValueError(  # pragma: no cover - the public entry points check the kernel
            f"kernel: unknown solver route {kernel!r}; one of {[*CLOSED_FORMS, *KERNELS]}"
        )
    if path not in PATHS:
        raise ValueError(f"path: one of {', '.join(PATHS)}, got {path!r}")
    B, V = p.shape
    if sums is None:
        xp = bk.namespace(p)
        one = xp.ones((B,), dtype=p.dtype, device=getattr(p, "device", None))
        sums = (one, one)
    rows = max(1, NUMPY_BLOCK // V)
    if B > rows and not bk.is_torch(p):
        # numpy: blocks of rows that stay in cache (about 2x faster per row than one pass over a
        # (64, 152064) batch, whose temporaries stream from memory); torch runs the whole batch.
        parts = [
            _solve_block(
                p[i : i + rows],
                q[i : i + rows],
                n,
                kernel,
                return_set,
                (sums[0][i : i + rows], sums[1][i : i + rows]),
                path,
            )
            for i in range(0, B, rows)
        ]
        alpha = np.concatenate([a for a, _, _ in parts])
        H = np.concatenate([h for _, h, _ in parts]) if return_set else None
        err = np.concatenate([np.broadcast_to(np.asarray(e, float), a.shape) for a, _, e in parts])
        return alpha, H, err
    return _solve_block(p, q, n, kernel, return_set, sums, path, shared)


def uses_buckets(
    kernel: str, V: int, path: str = "auto", n: int | None = None, like: Any = None
) -> bool:
    """Whether :func:`solve_rows` takes the bucket-and-bound path for this kernel and V.

    ``like``: the rows (or None); ``path="auto"`` sorts the float32 rows of a CUDA device
    (:data:`GPU_SORTED_DTYPES`) unless the law is the sequential series (``without``, n >= 3).

    Examples
    --------
    >>> uses_buckets("with", 152_064), uses_buckets("with", 100), uses_buckets("greedy", 10**6)
    (True, False, False)
    """
    if kernel in CLOSED_FORMS or not supports(kernel):
        return False
    if path != "auto":
        return path == "bucket"
    if V < BUCKET_MIN_V:
        return False
    series = kernel == "without" and n is not None and n >= 3
    device = getattr(getattr(like, "device", None), "type", None)
    if device == "cuda" and not series:
        return str(like.dtype).rsplit(".", 1)[-1] not in GPU_SORTED_DTYPES
    return True


def normalised(p: Any, q: Any, sums: tuple[Any, Any]) -> tuple[Any, Any]:
    """Rows divided by their sums (numpy: no division where a sum is exactly 1)."""
    return V_.normalise(p, sums[0]), V_.normalise(q, sums[1])


def _solve_block(p, q, n, kernel, return_set, sums, path, shared=None):
    closed = CLOSED_FORMS.get("single" if n == 1 else kernel)
    if closed is not None:
        alpha, H = closed(*normalised(p, q, sums), n, return_set)
        return alpha, H, 0.0
    if uses_buckets(kernel, p.shape[-1], path, n, p):
        return solve_bucketed(p, q, sums[0], sums[1], n, kernel, return_set, shared)
    return solve_sorted(*normalised(p, q, sums), n, kernel, return_set)


def solve_rows_laws(
    p: Any,
    q: Any,
    routes: list[tuple[str, int]],
    *,
    sums: tuple[Any, Any] | None = None,
    path: str = "auto",
    shared: Any = None,
) -> list[Any]:
    r"""α* of several laws over the same validated (B, V) rows, with the work shared.

    ``routes`` lists ``(kernel, n)`` pairs.  The prefix order by p/q is the same for every
    q-convex law (T7), so the laws share one bucketing pass (the bucket of every token and the
    histogram of p; :mod:`mdsd_ot.fast.bucket`), or on the sorting path one sort and one
    cumulative sum of p; the closed forms need neither (``shared``: that bucketing pass when
    the validation formed it, as in :func:`solve_rows`).  Returns one (B,) array of α* per
    route, in order.

    Examples
    --------
    >>> P, Q = np.array([[0.05, 0.05, 0.9]]), np.array([[0.5, 0.3, 0.2]])
    >>> [round(float(a[0]), 12) for a in solve_rows_laws(P, Q, [("with", 2), ("without", 2)])]
    [0.46, 0.585714285714]
    """
    B, V = p.shape
    if sums is None:
        one = bk.namespace(p).ones((B,), dtype=p.dtype, device=getattr(p, "device", None))
        sums = (one, one)
    out: list[Any] = [None] * len(routes)
    pending = []
    for i, (kernel, n) in enumerate(routes):
        closed = CLOSED_FORMS.get("single" if n == 1 else kernel)
        if closed is not None:
            out[i] = closed(*normalised(p, q, sums), n, False)[0]
        else:
            pending.append(i)
    bucketed = [i for i in pending if uses_buckets(routes[i][0], V, path, routes[i][1], p)]
    if bucketed:
        shared = shared_buckets(p, q, shared)
        for i in bucketed:
            kernel, n = routes[i]
            out[i] = solve_bucketed(p, q, sums[0], sums[1], n, kernel, False, shared)[0]
    rest = [i for i in pending if i not in bucketed]
    if rest:
        xp = bk.namespace(p, q)
        P, Q = normalised(p, q, sums)
        perm = ratio_order(order_key(P, Q), stable=False)
        qs = bk.gather(Q, perm)
        Pc = bk.cumsum(bk.gather(P, perm))
        for i in rest:
            kernel, n = routes[i]
            Qk, _ = KERNELS[kernel](xp.asarray(qs, copy=True), n)
            out[i], _ = prefix_min(xp.asarray(Pc, copy=True), Qk, False)
    return out
