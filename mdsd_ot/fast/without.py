r"""Q on every prefix for sequential sampling without replacement, with a certified error bound.

For the sequential without-replacement law (docs/reference.md, "Draft constructions"; not the
conditional-Poisson law, T12) and a fixed order of the tokens, :func:`prefix_Q_without` returns

.. math::

   Q(H_k) = \Pr[\text{all } n \text{ sequential draws lie in } H_k], \qquad
   H_k = \{\text{first } k \text{ tokens}\}, \quad k = 0, \dots, V,

together with a rigorous bound on :math:`|\hat Q(H_k) - Q(H_k)|` over all k (truncation *and*
floating-point rounding).  n = 1 and n = 2 are closed forms
(:func:`mdsd_ot.fast.prefix.certified_Q_without1`, ``...2``); n >= 3 is the certified series of
:mod:`mdsd_ot.fast.series` (exact heavy tokens, Taylor series over the light ones).  Rows of a
(B, V) batch are processed together, with static shapes and no host-device synchronisation:
numpy arrays and torch tensors (any device) run the same code.  The exact
:math:`O(V^{n-1})` reference the tests compare against is in ``tests/fast/oracles.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V_
from . import _backend as bk
from ._backend import is_numpy_array
from .prefix import certified_Q_without1, certified_Q_without2
from .series import N_MAX, PLANS, series

__all__ = ["prefix_Q_without", "prefix_Q_without_n2", "N_MAX", "PLANS"]

_series = series  # the name used inside prefix_Q_without_n2, whose flag is called ``series``


def _rows(q_sorted: Any, n: Any, name: str = "q_sorted") -> tuple[Any, Any, int, bool]:
    """Rows as (B, V) float64.  numpy rows are checked (errors name the row); torch tensors
    only by shape: checking their values would read them on the host (a GPU synchronisation)."""
    n = V_.check_n(n)
    if n > N_MAX:
        raise ValueError(
            f"n: the fast solver's certified series for sequential drafts without replacement "
            f"supports n <= {N_MAX}, got {n}; use n <= {N_MAX}, or an exact method "
            "(method='reduced' / --method reduced) at small V"
        )
    if not bk.is_array(q_sorted):
        q_sorted = np.asarray(q_sorted)
        if q_sorted.dtype == object:  # Fractions and other numbers
            q_sorted = q_sorted.astype(np.float64)
    V_.check_dtype(q_sorted, name)  # the validator's dtype rule: no complex, no booleans
    xp = bk.namespace(q_sorted)
    q = xp.astype(q_sorted, xp.float64)
    if q.ndim not in (1, 2) or q.shape[-1] == 0:
        raise ValueError(
            f"{name}: must have shape (V,) or (B, V) with V >= 1, got {tuple(q.shape)}"
        )
    single = q.ndim == 1
    q2 = q[None, :] if single else q
    if q2.shape[-1] < n:
        raise ValueError(
            f"{name}: sequential sampling without replacement draws n={n} distinct tokens but "
            f"there are only V={q2.shape[-1]}; use n <= {q2.shape[-1]}"
        )
    if is_numpy_array(q2):
        ok_finite = np.all(np.isfinite(q2), axis=1)
        ok_sign = np.all(q2 >= 0, axis=1)
        support = np.count_nonzero(q2 > 0, axis=1)
        for b in range(q2.shape[0]):
            where = "" if single else f" row {b}"
            if not ok_finite[b]:
                raise ValueError(f"{name}{where}: entries must be finite (check for NaN/inf)")
            if not ok_sign[b]:
                raise ValueError(f"{name}{where}: entries must be >= 0")
            if support[b] < n:
                raise ValueError(
                    f"{name}{where}: sequential sampling without replacement draws n={n} "
                    f"distinct tokens but only {support[b]} have positive mass; "
                    f"use n <= {support[b]}"
                )
    return xp, q2, n, single


def _finish(Q: Any, err: Any, single: bool) -> tuple[Any, Any]:
    if single:
        return Q[0], (float(err[0]) if is_numpy_array(err) else err[0])
    return Q, err


def prefix_Q_without(q_sorted: Any, n: int) -> tuple[Any, Any]:
    r"""Q on every prefix for sequential sampling without replacement, with an error bound.

    .. math::

       Q(H_k) = \Pr[\bar\imath_1, \dots, \bar\imath_n \in H_k], \qquad
       1 - Q(H) = q(H^c) \sum_{m=0}^{n-1} \int_0^\infty e^{-t}\,
       e_m\bigl(\{e^{q(x)t} - 1\}_{x \in H}\bigr)\, dt,

    evaluated by exact sums over the heavy tokens and a certified Taylor series over the light
    ones (:mod:`mdsd_ot.fast.series`).  n = 1 and n = 2 use closed forms.  All rows are processed at once
    with shapes fixed by (B, V, n); nothing is read back to the host, so on a GPU the call does
    not synchronise.

    Parameters
    ----------
    q_sorted : (V,) or (B, V) array_like (numpy or torch)
        The draft distribution q, already permuted into the prefix order.  Rows need not sum
        exactly to 1: the law is that of ``q / q.sum()``.  float32 is computed in float64.
        numpy rows must be finite, >= 0, with at least n positive entries (ValueError naming
        the row otherwise); torch tensors are not value-checked (that would synchronise a GPU):
        :func:`mdsd_ot.torch.alpha_star` validates them on the device first.
    n : int
        Number of drafts, 1 <= n <= :data:`N_MAX`.

    Returns
    -------
    Q_prefix : (..., V+1) array of float64 (same library and device as ``q_sorted``)
        ``Q_prefix[..., k]`` = Q(first k tokens); ``Q_prefix[..., 0] = 0``.
    err_bound : float or (B,) array of float64 (numpy); 0-d or (B,) tensor (torch, same device)
        A rigorous bound on ``|Q_prefix - Q|`` over all k (truncation and rounding), per row.

    Examples
    --------
    >>> Q, err = prefix_Q_without([0.5, 0.3, 0.2], 2)
    >>> Q.round(6).tolist(), bool(err < 1e-14)   # T12: Q({0, 1}) = 18/35 sequentially
    ([0.0, 0.0, 0.514286, 1.0], True)
    >>> Q3, err3 = prefix_Q_without([0.4, 0.1, 0.3, 0.2], 3)
    >>> round(float(Q3[3]), 12), bool(err3 < 1e-12)  # Q({0, 1, 2}) = 76/315
    (0.24126984127, True)
    """
    xp, q2, n, single = _rows(q_sorted, n)
    if n == 1:
        Q, err = certified_Q_without1(q2, xp)
    elif n == 2:
        Q, err = certified_Q_without2(q2, xp)
    else:
        Q, err = series(q2, n, xp)
    return _finish(Q, err, single)


def prefix_Q_without_n2(q_sorted: Any, *, series: bool = False) -> tuple[Any, Any]:
    r"""n = 2 on every prefix: the closed form, or (``series=True``) the general series method.

    .. math::

       Q(H) = \frac{1}{T}\Bigl[q(H) - q(H^c) \sum_{x \in H} \frac{q(x)}{T - q(x)}\Bigr],
       \qquad T = \sum_x q(x)

    (docs/reference.md; O(1) per prefix with running sums).  The two routes share nothing but the
    input, so they cross-check each other (tests/fast/test_without_series.py).

    Examples
    --------
    >>> Q, err = prefix_Q_without_n2([0.5, 0.3, 0.2])
    >>> Q.round(6).tolist()
    [0.0, 0.0, 0.514286, 1.0]
    >>> Qs, err_s = prefix_Q_without_n2([0.5, 0.3, 0.2], series=True)
    >>> bool(abs(Qs - Q).max() <= err + err_s)
    True
    """
    xp, q2, n, single = _rows(q_sorted, 2)
    Q, err = _series(q2, 2, xp) if series else certified_Q_without2(q2, xp)
    return _finish(Q, err, single)
