r"""Exact α* in O(V log V) for q-convex draft laws (docs/reference.md T7), batched, numpy or torch.

.. math::

   \alpha^* = 1 + \min_{k=0..V} \bigl[P(H_k) - Q(H_k)\bigr], \qquad
   H_k = \text{the } k \text{ tokens of smallest } p/q,

with one routine per law evaluating Q on every prefix (:mod:`mdsd_ot.fast.prefix`) and closed
forms without a sort for one draft (T4) and the greedy construction (T9,
:mod:`mdsd_ot.fast.greedy`).  The same functions run on numpy arrays and on torch tensors
(array-API standard through ``array-api-compat``, plus the small backend layer
:mod:`mdsd_ot.fast._backend`); :func:`mdsd_ot.torch.alpha_star` is this solver on tensors.

Schemes: ``with`` (i.i.d.), ``without`` (sequential without replacement; n = 2 closed form,
n >= 3 through :mod:`mdsd_ot.fast.without`), ``conditional-poisson`` (T12: *not* the sequential
law), ``greedy`` (T9), ``spechub`` (same α* as greedy with n = 2), ``single`` (n = 1).

Importing this package registers ``method="fast"`` for :func:`mdsd_ot.solve`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..methods import register
from . import _backend as bk
from ._check import SCHEMES, check_numpy, check_scheme_n
from .greedy import greedy, single
from .prefix import error_bound, solve_sorted

__all__ = ["alpha_star", "solve_rows", "error_bound", "SCHEMES"]


def solve_rows(p: Any, q: Any, n: int, scheme: str, return_set: bool = False):
    r"""The solver core on validated (B, V) rows (numpy or torch): ``(alpha, H, extra_err)``.

    No validation and no host synchronisation: rows must sum to 1 and be non-negative, and q
    must have at least n positive entries for the distinct-token schemes (``alpha_star`` checks
    this).  ``scheme`` is one of ``with``, ``without``, ``conditional-poisson``, ``greedy``,
    ``single``.  ``extra_err`` is the error bound of the Q evaluation beyond the rounding bound
    :func:`error_bound` (non-zero only for ``without`` with n >= 3).

    Examples
    --------
    >>> a, H, err = solve_rows(np.array([[0.5, 0.5]]), np.array([[0.75, 0.25]]), 2, "with")
    >>> a.tolist(), H, err
    ([0.9375], None, 0.0)
    """
    B, V = p.shape
    rows = max(1, NUMPY_BLOCK // V)
    if B > rows and not bk.is_torch(p):
        # numpy: blocks of rows that stay in cache (about 2x faster per row than one pass over a
        # (64, 152064) batch, whose temporaries stream from memory); torch runs the whole batch.
        parts = [
            _solve_block(p[i : i + rows], q[i : i + rows], n, scheme, return_set)
            for i in range(0, B, rows)
        ]
        alpha = np.concatenate([a for a, _, _ in parts])
        H = np.concatenate([h for _, h, _ in parts]) if return_set else None
        err = np.concatenate([np.broadcast_to(np.asarray(e, float), a.shape) for a, _, e in parts])
        return alpha, H, err
    return _solve_block(p, q, n, scheme, return_set)


#: numpy inputs are solved in blocks of about this many entries (at least one row).
NUMPY_BLOCK = 2**18


def _solve_block(p: Any, q: Any, n: int, scheme: str, return_set: bool):
    if scheme == "single" or n == 1:
        alpha, H = single(p, q, return_set)
        return alpha, H, 0.0
    if scheme == "greedy":
        alpha, H = greedy(p, q, n, return_set)
        return alpha, H, 0.0
    return solve_sorted(p, q, n, scheme, return_set)


def alpha_star(p: Any, q: Any, *, n: int, scheme: str, return_set: bool = False):
    r"""Exact α* for a q-convex draft law by the prefix algorithm (T7), batched.

    .. math::

       \alpha^* = 1 + \min_{H \subseteq \Sigma} [P(H) - Q(H)]
                = 1 + \min_{k} [P(H_k) - Q(H_k)]

    Parameters
    ----------
    p, q : (V,) or (B, V) array_like
        Target and draft distributions (rows), validated by :mod:`mdsd_ot._validate` (errors
        name the bad row).  torch tensors are accepted too (see :func:`mdsd_ot.torch.alpha_star`).
    n : int
        Number of drafts.
    scheme : str
        ``"with"``, ``"without"`` (sequential), ``"conditional-poisson"``, ``"greedy"``,
        ``"spechub"`` (n = 2) or ``"single"`` (n = 1).
    return_set : bool
        Also return an optimal H as a boolean mask in the original token order.

    Returns
    -------
    alpha : float or (B,) ndarray
        α* (a float for a single row).
    H : (V,) or (B, V) bool ndarray
        Only with ``return_set=True``: :math:`\alpha^* = P(H) + 1 - Q(H)`.

    Notes
    -----
    Floating-point accuracy: absolute error at most :func:`error_bound` (about
    :math:`(2n+8) V \varepsilon`, a worst case; observed errors are near :math:`\sqrt V\varepsilon`),
    plus the certified bound of :mod:`mdsd_ot.fast.without` for sequential drafts with n >= 3.

    Examples
    --------
    >>> alpha_star([0.5, 0.5], [0.75, 0.25], n=2, scheme="with")
    0.9375
    >>> a, H = alpha_star([0.05, 0.05, 0.9], [0.5, 0.3, 0.2], n=2, scheme="without", return_set=True)
    >>> round(a, 12), H.tolist()  # exact: 41/70
    (0.585714285714, [True, True, False])
    >>> alpha_star([[0.5, 0.5], [0.1, 0.9]], [[0.5, 0.5], [0.9, 0.1]], n=1, scheme="single")
    array([1. , 0.2])
    """
    scheme, n = check_scheme_n(scheme, n)
    if bk.is_torch(p) or bk.is_torch(q):
        from ..torch import alpha_star as torch_alpha_star

        return torch_alpha_star(p, q, n=n, scheme=scheme, return_set=return_set)
    single_row = np.ndim(p) == 1
    P, Q = check_numpy(p, q, n, scheme)
    alpha, H, _ = solve_rows(P, Q, n, scheme, return_set)
    if single_row:
        alpha = float(alpha[0])
        H = None if H is None else H[0]
    return (alpha, H) if return_set else alpha


def _route(draft: Any) -> tuple[str, int, np.ndarray]:
    """(scheme, n, q) of a draft law object for the fast solver."""
    from .. import drafts as D

    if draft.n == 1:
        if isinstance(draft, D.Product):
            return "single", 1, draft.qs[0]
        if isinstance(draft, D.Explicit):
            return "single", 1, draft.table.reshape(-1)
        return "single", 1, draft.q
    routes = {
        D.WithReplacement: "with",
        D.WithoutReplacement: "without",
        D.ConditionalPoisson: "conditional-poisson",
        D.Greedy: "greedy",
        D.SpecHub: "greedy",  # same Q as greedy with n = 2 (docs/reference.md, SpecHub)
    }
    for cls, scheme in routes.items():
        if type(draft) is cls:
            return scheme, draft.n, draft.q
    raise ValueError(
        f"draft: method='fast' needs a q-convex law (with, without, conditional-poisson, greedy, "
        f"spechub); {type(draft).__name__} with n={draft.n} is not one; use method='reduced'"
    )


@register("fast", accuracy=1e-12)
def _solve_fast(p, draft) -> dict[str, Any]:
    """Prefix algorithm of T7 (sort by p/q) and the closed forms T4, T9, in float64."""
    scheme, n, q = _route(draft)
    P, Q = p.float[None, :], np.asarray(q, dtype=np.float64)[None, :]
    alpha, H, err = solve_rows(P, Q, n, scheme, return_set=True)
    bound = error_bound(draft.V, n, float(np.finfo(np.float64).eps)) + float(np.max(err))
    return dict(alpha=float(alpha[0]), H=H[0], accuracy=bound, info={"scheme": scheme, "n": n})
