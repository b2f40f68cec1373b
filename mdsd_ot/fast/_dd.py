r"""Rounding-aware arithmetic of the fast solver: double-double sums and certified depths.

The certified prefix evaluations (:mod:`mdsd_ot.fast.series`, the closed forms
:func:`mdsd_ot.fast.prefix.certified_Q_without1` and ``...2``) bound their rounding error by
counting the roundings along every path (Higham, Lemma 3.3):
a computed sum of non-negative terms with at most ``D`` roundings on any path equals the exact
value times :math:`(1 + \theta)`, :math:`|\theta| \le \gamma_D = D u / (1 - D u)`.  This module
holds the pieces that make those depths small and the totals exact to double-double precision (the complements :math:`T - q(D)` of the heavy
sets are sums of non-negative terms instead, :func:`mdsd_ot.fast._moments.complement`):

- :func:`cumsum_blocked` — a cumulative sum in blocks of :data:`BLOCK`, so the depth is about
  :math:`3 V^{1/3}` instead of V (:func:`depth_cumsum`);
- :func:`accurate_sum` — row totals as ``hi + lo`` by a pairwise tree of error-free TwoSum steps.

Everything runs on numpy arrays and torch tensors alike (array-API namespace ``xp``) and reads
nothing back to the host.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _backend as bk
from . import _fused

__all__ = [
    "U",
    "BLOCK",
    "gamma",
    "depth_cumsum",
    "cumsum_blocked",
    "accurate_sum",
]

#: Unit roundoff of float64.
U: float = 2.0**-53
#: Block length of :func:`cumsum_blocked` (rounding depth about 3 V^(1/3)).
BLOCK: int = 64

_LD_EPS = float(np.finfo(np.longdouble).eps)


def gamma(D: Any) -> Any:
    r""":math:`\gamma_D = D u / (1 - D u)` (D a float or an array)."""
    return D * U / (1.0 - D * U)


def depth_cumsum(N: int) -> int:
    """Rounding depth of :func:`cumsum_blocked` on N terms (each output is a sum with <= this many
    roundings on any path)."""
    if N <= BLOCK:
        return max(N - 1, 0)
    nb = -(-N // BLOCK)
    return (BLOCK - 1) + depth_cumsum(nb) + 1


def cumsum_blocked(x: Any, xp: Any) -> Any:
    """Inclusive cumulative sum along the last axis, blocked (depth :func:`depth_cumsum`)."""
    N = x.shape[-1]
    if N <= BLOCK:
        return xp.cumulative_sum(x, axis=-1)
    nb = -(-N // BLOCK)
    pad = nb * BLOCK - N
    lead = tuple(x.shape[:-1])
    if pad:
        x = xp.concat([x, bk.zeros(xp, lead + (pad,), x)], axis=-1)
    loc = xp.cumulative_sum(xp.reshape(x, lead + (nb, BLOCK)), axis=-1)
    tot = cumsum_blocked(loc[..., -1], xp)
    off = xp.concat([bk.zeros(xp, lead + (1,), x), tot[..., :-1]], axis=-1)
    y = xp.reshape(loc + off[..., None], lead + (nb * BLOCK,))
    return y[..., :N]


def accurate_sum(x: Any, xp: Any, extended: bool = False) -> tuple[Any, Any, Any]:
    r"""Row sums of a non-negative (B, N) array as ``hi + lo`` (double-double), with a bound.

    A pairwise tree of error-free TwoSum steps; the rounding errors are summed separately.
    With ``extended=True``, for callers that need the total to about 1e-17 relative only (not
    to double-double precision): a float64 numpy array with the compiled kernels of
    :mod:`mdsd_ot.fast._fused` (extra ``[jit]``) is summed by
    :func:`mdsd_ot.fast._fused.sum_dd` (eight lanes of TwoSum, about :math:`(N u / 8)^2`
    relative); without them, numpy on a platform with an extended ``longdouble`` (x86: 64-bit
    mantissa) sums in it instead, about 8x faster than the tree: ``hi + lo`` is then that sum
    exactly, and ``eta`` bounds the pairwise summation's error,
    :math:`(\log_2 N + 130)\,\varepsilon_{ld} \sum x`.
    Returns (B,) arrays ``(hi, lo, eta)`` with ``|sum(x) - (hi + lo)| <= eta``.

    Examples
    --------
    >>> import numpy as np
    >>> hi, lo, eta = accurate_sum(np.array([[1.0, 1e-17, 1e-17]]), np, extended=True)
    >>> float(hi[0]), bool(abs(lo[0] - 2e-17) <= eta[0] < 1e-16)
    (1.0, True)
    """
    if extended and isinstance(x, np.ndarray) and x.dtype == np.float64 and _fused.enabled():
        return _fused.sum_dd(x)  # compiled TwoSum lanes: a tighter bound, a third of the cost
    if extended and isinstance(x, np.ndarray) and _LD_EPS < 1e-18:
        s = np.sum(x, axis=-1, dtype=np.longdouble)
        hi = s.astype(np.float64)
        lo = (s - hi).astype(np.float64)
        depth = math.log2(max(x.shape[-1], 2)) + 130
        return hi, lo, (depth * _LD_EPS * 1.01) * (hi + 2 * np.abs(lo))
    errs = []
    total_err_terms = 0
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = xp.concat([x, bk.zeros(xp, (x.shape[0], 1), x)], axis=-1)
        a, b = x[:, 0::2], x[:, 1::2]
        s = a + b
        bb = s - a
        errs.append((a - (s - bb)) + (b - bb))
        total_err_terms += s.shape[-1]
        x = s
    hi = x[:, 0]
    if not errs:
        return hi, xp.zeros_like(hi), xp.zeros_like(hi)
    E = xp.concat(errs, axis=-1)
    lo = xp.sum(E, axis=-1)
    # naive summation of the errors: any order, depth <= count - 1
    eta = gamma(float(total_err_terms)) * xp.sum(xp.abs(E), axis=-1)
    return hi, lo, eta
