r"""Closed forms that need no sort: one draft (T4) and the greedy construction (T9).

.. math::

   n = 1:\quad \alpha^* = \sum_x \min(p(x), q(x)), \qquad
   \text{greedy}:\quad \alpha^* = P(T) + \sum_{x \notin T} \min(p(x), q'(x)),

with :math:`T = \mathrm{Top}_{n-1}(q)` (larger q first, then smaller index, as
:func:`mdsd_ot.drafts.greedy_top`) and :math:`q' = q^{\neg T}`.  Optimal sets:
:math:`\{x : q(x) > p(x)\}` for one draft and :math:`T \cup \{x : q'(x) \ge p(x)\}` for greedy.
Both cost O(nV) (``n - 1`` argmax passes to find T), no sort.  SpecHub has the same Q as greedy
with n = 2 and therefore the same α*.

The prefix route of T7 agrees: with T first (key :math:`-\infty`) and the rest by
:math:`p/q'`, :math:`Q(H_k) = q'(H_k)` once T is in, so the prefix minimum is the sum of the
negative parts of :math:`p - q'` outside T; ``tests/fast/test_fast_solver.py`` checks both routes.
"""

from __future__ import annotations

from typing import Any

from . import _backend as bk

__all__ = ["single", "greedy_top_mask", "greedy"]


def single(p: Any, q: Any, return_set: bool = False) -> tuple[Any, Any]:
    r"""One draft (T4): :math:`\alpha^* = \sum_x \min(p(x), q(x)) = 1 - TV(p, q)`.

    Examples
    --------
    >>> import numpy as np
    >>> a, H = single(np.array([[0.5, 0.5]]), np.array([[0.75, 0.25]]), True)
    >>> a.tolist(), H.tolist()
    ([0.75], [[True, False]])
    """
    xp = bk.namespace(p, q)
    alpha = bk.clip(xp.sum(xp.minimum(p, q), axis=-1), 0.0, 1.0)
    return alpha, (q > p) if return_set else None


def greedy_top_mask(q: Any, k: int) -> Any:
    """Boolean mask of :math:`\\mathrm{Top}_k(q)` per row: larger q first, then smaller index.

    ``k`` argmax passes (argmax returns the first maximiser, which is the tie rule).

    Examples
    --------
    >>> import numpy as np
    >>> greedy_top_mask(np.array([[0.2, 0.4, 0.4]]), 1).tolist()
    [[False, True, False]]
    """
    xp = bk.namespace(q)
    idx = bk.arange_like(q, q.shape[-1])
    T = xp.zeros(q.shape, dtype=xp.bool, device=getattr(q, "device", None))
    work = q
    neg = xp.full_like(q, -1.0)
    for _ in range(k):
        hit = idx == xp.argmax(work, axis=-1)[..., None]
        T = T | hit
        work = xp.where(hit, neg, work)
    return T


def greedy(p: Any, q: Any, n: int, return_set: bool = False) -> tuple[Any, Any]:
    r"""Greedy drafts (T9): :math:`\alpha^* = P(T) + \sum_{x\notin T}\min(p(x), q'(x))`.

    Parameters
    ----------
    p, q : (B, V) arrays
        Validated rows; q has at least n positive entries (mass outside T).
    n : int
        Number of drafts (T has n - 1 tokens).

    Examples
    --------
    >>> import numpy as np
    >>> a, H = greedy(np.array([[0.2, 0.5, 0.3]]), np.array([[0.5, 0.3, 0.2]]), 2, True)
    >>> round(float(a[0]), 12), H.tolist()  # T = {0}, q' = (0, 0.6, 0.4)
    (0.9, [[True, True, True]])
    """
    xp = bk.namespace(p, q)
    if n == 1:
        return single(p, q, return_set)
    T = greedy_top_mask(q, n - 1)
    zero = xp.zeros_like(q)
    rest = xp.where(T, zero, q)
    qp = rest / xp.sum(rest, axis=-1, keepdims=True)
    alpha = bk.clip(xp.sum(xp.where(T, p, xp.minimum(p, qp)), axis=-1), 0.0, 1.0)
    if not return_set:
        return alpha, None
    return alpha, T | (qp >= p)
