r"""The sorting path of T7: sort by p/q, evaluate Q on every prefix, take the minimum.

.. math::

   \alpha^* = 1 + \min_{k = 0..V} \bigl[P(H_k) - Q(H_k)\bigr], \qquad
   H_k = \{\text{the } k \text{ tokens of smallest } p/q\}.

The prefix evaluation of each q-convex law is a *kernel*, looked up by name in :data:`KERNELS`
(the names are the draft laws' ``kernel`` attributes, :mod:`mdsd_ot.drafts`); every kernel
maps the q values in prefix order, shape (B, V), to Q on the prefixes k = 1..V and an extra
error bound (0, or per row for the certified series).  Validated inputs only (rows summing to 1,
:mod:`mdsd_ot.fast._check`); no host synchronisation on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _backend as bk
from .order import ratio_order
from .prefix import (
    order_key,
    prefix_min,
    prefix_Q_conditional_poisson,
    prefix_Q_with,
    prefix_Q_without2,
)
from .without import prefix_Q_without

__all__ = ["KERNELS", "prefix_Q", "solve_sorted"]


def _with(qs: Any, n: int) -> tuple[Any, Any]:
    return prefix_Q_with(qs, n), 0.0


def _conditional_poisson(qs: Any, n: int) -> tuple[Any, Any]:
    return prefix_Q_conditional_poisson(qs, n), 0.0


def _without(qs: Any, n: int) -> tuple[Any, Any]:
    if n == 2:
        return prefix_Q_without2(qs), 0.0
    Qfull, err = prefix_Q_without(qs, n)
    return Qfull[..., 1:], err


#: Prefix kernels by name: ``KERNELS[name](qs, n) -> (Q on prefixes 1..V, extra error bound)``;
#: ``qs`` (q in prefix order) may be overwritten.
KERNELS: dict[str, Callable[[Any, int], tuple[Any, Any]]] = {
    "with": _with,
    "without": _without,
    "conditional-poisson": _conditional_poisson,
}


def prefix_Q(qs: Any, n: int, kernel: str) -> tuple[Any, Any]:
    """Q on the prefixes k = 1..V by the named kernel, and its extra error bound (0 or per row).

    Examples
    --------
    >>> import numpy as np
    >>> Q, err = prefix_Q(np.array([[0.5, 0.5]]), 2, "with")
    >>> Q.tolist(), err
    ([[0.25, 1.0]], 0.0)
    """
    return KERNELS[kernel](qs, n)


def solve_sorted(p: Any, q: Any, n: int, kernel: str, return_set: bool = False):
    r"""T7 on validated (B, V) rows: sort by p/q, scan prefixes; returns (α*, H mask or None, err).

    ``err`` is the extra error bound of the Q evaluation (0 for the closed forms; per row for
    sequential without replacement with n >= 3), to be added to
    :func:`mdsd_ot.fast.prefix.error_bound`.

    Examples
    --------
    >>> import numpy as np
    >>> a, H, _ = solve_sorted(np.array([[0.5, 0.5]]), np.array([[0.75, 0.25]]), 2, "with", True)
    >>> a.tolist(), H.tolist()
    ([0.9375], [[True, False]])
    """
    xp = bk.namespace(p, q)
    key = order_key(p, q)  # p/q, also where it overflows
    perm = ratio_order(key, stable=False)
    Q, err = prefix_Q(bk.gather(q, perm, out=key), n, kernel)  # reuse the key buffer
    alpha, k = prefix_min(bk.cumsum(bk.gather(p, perm)), Q, return_set)
    del Q
    if not return_set:
        return alpha, None, err
    Hs = bk.arange_like(p, p.shape[-1]) < k[..., None]
    H = bk.scatter(Hs, perm)
    return alpha, xp.astype(H, xp.bool), err
