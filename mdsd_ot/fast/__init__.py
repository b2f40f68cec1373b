r"""Exact α* in O(V log V) for q-convex draft laws (docs/reference.md T7), batched, numpy or torch.

.. math::

   \alpha^* = 1 + \min_{k=0..V} \bigl[P(H_k) - Q(H_k)\bigr], \qquad
   H_k = \text{the } k \text{ tokens of smallest } p/q,

reached two ways: sorting by p/q and evaluating Q on every prefix with one prefix kernel per law
(:mod:`mdsd_ot.fast.scan`, :mod:`mdsd_ot.fast.prefix`, the certified series
:mod:`mdsd_ot.fast.series` for sequential drafts with n >= 3), or, below the cost of one sort,
by bucketing the ratios in one linear pass, bounding the objective inside every bucket and
sorting only the few buckets that can still hold the minimum (:mod:`mdsd_ot.fast.bucket`, the
default from 4,096 tokens on; the same α*).  One draft (T4) and the greedy construction (T9,
:mod:`mdsd_ot.fast.greedy`) are closed forms without a sort.  The same functions run on numpy arrays and on torch tensors
(array-API standard through ``array-api-compat``, plus the small backend layer
:mod:`mdsd_ot.fast._backend`); :func:`mdsd_ot.torch.alpha_star` is this solver behind a torch
boundary (tensor conversion and dtype rule).

Schemes: ``with`` (i.i.d.), ``without`` (sequential without replacement), ``conditional-poisson``
(T12: *not* the sequential law), ``greedy`` (T9), ``spechub`` (same α* as greedy with n = 2),
``single`` (n = 1); or a draft law object of :mod:`mdsd_ot.drafts` in place of ``q``.

Importing this package registers ``method="fast"`` for :func:`mdsd_ot.solve`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V_
from .. import drafts as D
from ..drafts import DraftLaw
from ..methods import register
from . import _backend as bk
from ._check import DISTINCT, SCHEMES, check_array, check_numpy, check_scheme_n, fused_rows_ok
from .bucket import FUSED_DECLINED, validated_front
from .chain import chain_for
from .prefix import error_bound
from .solver import solve_rows, solve_rows_laws, uses_buckets

__all__ = ["alpha_star", "alpha_star_laws", "solve_rows", "error_bound", "SCHEMES"]


def _routes_text() -> str:
    """'q-convex: with, ...; closed form: greedy, ...' from the draft registry."""
    routed = [(s, c) for s, c in D.SCHEMES.items() if c.kernel is not None]
    convex = ", ".join(s for s, c in routed if c.q_convex)
    closed = ", ".join(s for s, c in routed if not c.q_convex)
    return f"q-convex: {convex}; closed form: {closed}"


def _law_route(law: DraftLaw) -> tuple[str, int, Any]:
    """(kernel, n, q) of a draft law object for the fast solver."""
    kernel = law.fast_kernel
    if kernel is None:
        raise ValueError(
            f"draft: method='fast' needs a law with a fast route ({_routes_text()}); "
            f"{type(law).__name__} with n={law.n} has none; use method='reduced'"
        )
    return kernel, law.n, law.q if law.q is not None else law.reference_q()


def _route(q: Any, n: Any, scheme: Any) -> tuple[str, int, Any]:
    """(kernel, n, q) from either a draft law in place of q, or q with n and scheme."""
    if isinstance(q, DraftLaw):
        if n is not None or scheme is not None:
            raise ValueError(
                f"n, scheme: a draft law carries its own (here n={q.n}, scheme={q.scheme!r}); "
                "give either alpha_star(p, law) or alpha_star(p, q, n=..., scheme=...)"
            )
        return _law_route(q)
    if n is None or scheme is None:
        raise ValueError(
            "n, scheme: give the number of drafts and the scheme, e.g. "
            "alpha_star(p, q, n=2, scheme='without'), or pass a draft law in place of q"
        )
    kernel, n = check_scheme_n(scheme, n)
    return kernel, n, q


def _is_device_array(x: Any) -> bool:
    """An array of another array-API library than numpy (a torch tensor)."""
    return bk.is_array(x) and not isinstance(x, np.ndarray)


def _validated(
    p: Any, q: Any, n: int, kernel: str, buckets: int | None = None
) -> tuple[Any, Any, Any, bool, Any]:
    """Validated (B, V) rows on their own device, their sums, whether the input was one row,
    and (``buckets``: the caller takes the bucket path, with ``2**buckets`` buckets per octave
    on the fused route) the bucketing pass that validated them, or None.

    One float64 numpy row with the compiled kernels is read once for both: the fused bucketing
    pass yields the figures the validator needs (:func:`mdsd_ot.fast.bucket.validated_front`);
    a row they do not clear is validated the usual way (the same messages, the same clipping).
    """
    if _is_device_array(p) or _is_device_array(q):
        p, q = _same_library(p, q)
        P, Q, sums = check_array(p, q, n, kernel)
        return P, Q, sums, p.ndim == 1, None
    front = validated_front(p, q, buckets) if buckets is not None else None
    if front is FUSED_DECLINED:  # validated below; the bucket path skips the fused pass
        P, Q, sums = check_numpy(p, q, n, kernel)
        return P, Q, sums, np.ndim(p) == 1, FUSED_DECLINED
    if front is not None and fused_rows_ok(front[1], n, kernel):
        P, Q = (p[None, :], q[None, :]) if p.ndim == 1 else (p, q)
        sums = (np.array([front[1][0]]), np.array([front[1][1]]))
        return P, Q, sums, p.ndim == 1, front[0]
    P, Q, sums = check_numpy(p, q, n, kernel)
    return P, Q, sums, np.ndim(p) == 1, None


def _takes_buckets(p: Any, kernel: str, n: int, path: str) -> int | None:
    """The fused route's bucket resolution (``sub_bits``) when a numpy input of this shape goes
    the bucket path (before validation), else None."""
    shape = getattr(p, "shape", None)
    if not isinstance(p, np.ndarray) or shape is None or len(shape) not in (1, 2) or n < 2:
        return None
    if uses_buckets(kernel, shape[-1], path, n, p) and (len(shape) == 1 or shape[0] == 1):
        return chain_for(kernel, n).fused_sub_bits
    return None


def _same_library(p: Any, q: Any) -> tuple[Any, Any]:
    """Convert an argument that is not a device array to the other's library, dtype, device."""
    if _is_device_array(p) and _is_device_array(q):
        return p, q
    ref = p if _is_device_array(p) else q
    xp = bk.namespace(ref)
    dtype = ref.dtype if ref.dtype in (xp.float32, xp.float64) else None
    a = np.asarray(q if p is ref else p)
    if dtype is not None:  # checked as given where narrower, then cast
        a = V_.checked_before_cast(a, "q" if p is ref else "p", ref.dtype.itemsize)
    other = xp.asarray(a, dtype=dtype, device=ref.device)
    return (ref, other) if p is ref else (other, ref)


def alpha_star(
    p: Any,
    q: Any,
    *,
    n: int | None = None,
    scheme: str | None = None,
    return_set: bool = False,
    path: str = "auto",
):
    r"""Exact α* for a q-convex draft law by the prefix algorithm (T7), batched.

    .. math::

       \alpha^* = 1 + \min_{H \subseteq \Sigma} [P(H) - Q(H)]
                = 1 + \min_{k} [P(H_k) - Q(H_k)]

    Parameters
    ----------
    p : (V,) or (B, V) array_like
        Target distribution(s) (rows), validated by :mod:`mdsd_ot._validate` (errors name the
        bad row).  numpy arrays and array_likes, or torch tensors (solved on their device; see
        :func:`mdsd_ot.torch.alpha_star` for the conversion rules of non-tensor inputs).
    q : (V,) or (B, V) array_like, or a draft law
        Draft distribution(s), or a draft law of :mod:`mdsd_ot.drafts` (then ``n`` and
        ``scheme`` come from the law: ``alpha_star(p, WithoutReplacement(q, 3))``).
    n : int
        Number of drafts (with an array ``q``).
    scheme : str
        With an array ``q``: ``"with"``, ``"without"`` (sequential), ``"conditional-poisson"``,
        ``"greedy"``, ``"spechub"`` (n = 2) or ``"single"`` (n = 1).
    return_set : bool
        Also return an optimal H as a boolean mask in the original token order.
    path : str
        ``"auto"`` (default): bucket-and-bound for with, without and conditional Poisson from
        :data:`mdsd_ot.fast.solver.BUCKET_MIN_V` tokens on (:mod:`mdsd_ot.fast.bucket`: no full
        sort; the same α*), sorting below and for the float32 rows of the closed-form laws on a
        CUDA device (:data:`mdsd_ot.fast.solver.GPU_SORTED_DTYPES`: a GPU sorts faster than
        the bucket route's array operations); ``"sort"`` or ``"bucket"`` force one route.

    Returns
    -------
    alpha : float or (B,) ndarray
        α* (a float for a single numpy row; a tensor on the input's device for tensors).
    H : (V,) or (B, V) bool array
        Only with ``return_set=True``: :math:`\alpha^* = P(H) + 1 - Q(H)`.

    Notes
    -----
    Floating-point accuracy: absolute error at most :func:`error_bound` (about
    :math:`(2n+8) V \varepsilon`, a worst case; observed errors are near :math:`\sqrt V\varepsilon`),
    plus the certified bound of :mod:`mdsd_ot.fast.series` for sequential drafts with n >= 3.

    Examples
    --------
    >>> alpha_star([0.5, 0.5], [0.75, 0.25], n=2, scheme="with")
    0.9375
    >>> a, H = alpha_star([0.05, 0.05, 0.9], [0.5, 0.3, 0.2], n=2, scheme="without", return_set=True)
    >>> round(a, 12), H.tolist()  # exact: 41/70
    (0.585714285714, [True, True, False])
    >>> alpha_star([[0.5, 0.5], [0.1, 0.9]], [[0.5, 0.5], [0.9, 0.1]], n=1, scheme="single")
    array([1. , 0.2])
    >>> from mdsd_ot.drafts import WithoutReplacement
    >>> round(alpha_star([0.05, 0.05, 0.9], WithoutReplacement([0.5, 0.3, 0.2], 2)), 12)
    0.585714285714
    """
    kernel, n, q = _route(q, n, scheme)
    P, Q, sums, single_row, shared = _validated(p, q, n, kernel, _takes_buckets(p, kernel, n, path))
    alpha, H, _ = solve_rows(P, Q, n, kernel, return_set, sums=sums, path=path, shared=shared)
    if single_row:
        alpha = float(alpha[0]) if isinstance(alpha, np.ndarray) else alpha[0]
        H = None if H is None else H[0]
    return (alpha, H) if return_set else alpha


def alpha_star_laws(
    p: Any, q: Any, laws: list[tuple[str, int]], *, path: str = "auto"
) -> dict[tuple[str, int], Any]:
    r"""α* of several draft laws built on the same q, one sort per row for all of them (T7).

    .. math::

       \alpha^*_L = 1 + \min_k \bigl[P(H_k) - Q_L(H_k)\bigr] \quad \text{for every law } L,

    where the prefix order :math:`H_k` (by p/q) is shared by every q-convex law, so each row is
    validated once and bucketed (or sorted) once for all the laws.

    Parameters
    ----------
    p, q : (V,) or (B, V) array_like
        Target and draft rows (numpy or torch), validated once.
    laws : list of (scheme, n)
        e.g. ``[("with", 2), ("without", 2), ("conditional-poisson", 3)]``.
    path : str
        ``"auto"``, ``"sort"`` or ``"bucket"``, as in :func:`alpha_star`.

    Returns
    -------
    dict
        ``{(scheme, n): α*}``: a float per law for one row, a (B,) array for a batch.

    Examples
    --------
    >>> out = alpha_star_laws([0.05, 0.05, 0.9], [0.5, 0.3, 0.2], [("with", 2), ("without", 2)])
    >>> {k: round(v, 12) for k, v in out.items()}
    {('with', 2): 0.46, ('without', 2): 0.585714285714}
    """
    routes = [check_scheme_n(s, n) for s, n in laws]
    distinct = [(n, k) for k, n in routes if k in DISTINCT and n > 1]
    need, strict = max(distinct) if distinct else (1, "with")  # the strictest support check
    bits = [b for k, n in routes if (b := _takes_buckets(p, k, n, path)) is not None]
    P, Q, sums, single_row, shared = _validated(p, q, need, strict, max(bits, default=None))
    alphas = solve_rows_laws(P, Q, routes, sums=sums, path=path, shared=shared)
    out = {}
    for (s, n), a in zip(laws, alphas, strict=True):
        out[(s, n)] = (float(a[0]) if isinstance(a, np.ndarray) else a[0]) if single_row else a
    return out


@register("fast", accuracy=1e-12)
def _solve_fast(p, draft) -> dict[str, Any]:
    """Prefix algorithm of T7 (sort by p/q) and the closed forms T4, T9, in float64."""
    kernel, n, q = _law_route(draft)
    P, Q = p.float[None, :], np.asarray(q, dtype=np.float64)[None, :]
    alpha, H, err = solve_rows(P, Q, n, kernel, return_set=True)
    bound = error_bound(draft.V, n, float(np.finfo(np.float64).eps)) + float(np.max(err))
    return dict(alpha=float(alpha[0]), H=H[0], accuracy=bound, info={"scheme": kernel, "n": n})
