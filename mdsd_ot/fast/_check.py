"""Input checks of the fast and torch solvers, built on :mod:`mdsd_ot._validate`.

numpy inputs go through :func:`mdsd_ot._validate.prob_rows` (float64, one fused pass, row-naming
errors).  Array
inputs of another library (torch) are checked where they live: the per-row flags (finite,
non-negative, sum within tolerance, enough support) are computed on the device and reduced to one
boolean, which is read once (a single host synchronisation at the boundary; the solver core has
none).  Only when that boolean reports a problem is the first bad row copied to the host and
handed to the same :mod:`mdsd_ot._validate` functions, so the messages and tolerances are those
of the shared validator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V_
from .. import drafts as D
from . import _backend as bk

#: The ``scheme`` strings the fast solvers accept (from the draft-law registry).
SCHEMES: tuple[str, ...] = D.FAST_SCHEMES

#: Kernels whose laws draw n distinct tokens, so q needs at least n positive entries.
DISTINCT: frozenset[str] = frozenset(
    cls.kernel for cls in D.SCHEMES.values() if cls.kernel is not None and cls.distinct
)


def check_scheme_n(scheme: Any, n: Any) -> tuple[str, int]:
    """Validate ``scheme`` and ``n``; return the kernel name and n (int)."""
    n = V_.check_n(n)
    return D.kernel_for(scheme, n), n


def _check_shapes(p_shape: tuple, q_shape: tuple, names: tuple[str, str] = ("p", "q")) -> None:
    pn, qn = names
    if len(p_shape) not in (1, 2):
        raise ValueError(f"{pn}: must have shape (V,) or (B, V), got {tuple(p_shape)}")
    if tuple(p_shape) != tuple(q_shape):
        raise ValueError(
            f"{qn}: has shape {tuple(q_shape)} but {pn} has shape {tuple(p_shape)}; give one "
            f"{qn} row per {pn} row over the same vocabulary"
        )


def _support_error(Q: Any, n: int, kernel: str, batched: bool, name: str = "q") -> None:
    """Raise the shared message for the first row of q with fewer than n positive masses."""
    Qn = V_._host(Q)
    support = np.count_nonzero(Qn > 0, axis=-1)
    row = int(np.flatnonzero(support < n)[0])
    schemes = [c.scheme for c in D.SCHEMES.values() if c.kernel == kernel]  # the laws' names
    scheme = " / ".join(schemes) if schemes else kernel
    V_.check_support(Qn[row], n, scheme, f"{name}[{row}]" if batched else name)


def check_numpy(
    p: Any, q: Any, n: int, kernel: str, names: tuple[str, str] = ("p", "q")
) -> tuple[Any, Any, tuple[Any, Any]]:
    """Validate numpy-like inputs (one fused pass per array): float64 (B, V) rows clipped at 0
    (the inputs themselves when nothing needed clipping) and their row sums (p's, q's).
    ``names``: the caller's argument names, which the errors name."""
    _check_shapes(np.shape(p), np.shape(q), names)
    P, sp, single = V_.prob_rows(p, names[0])
    Q, sq, _ = V_.prob_rows(q, names[1])
    if kernel in DISTINCT and n > 1 and np.any(np.count_nonzero(Q, axis=-1) < n):
        _support_error(Q, n, kernel, not single, names[1])
    return P, Q, (sp, sq)


def check_array(
    p: Any, q: Any, n: int, kernel: str, names: tuple[str, str] = ("p", "q")
) -> tuple[Any, Any, tuple[Any, Any]]:
    """Validate tensors (any array-API library) on their device: rows clipped at 0, row sums.

    The dtype rule, the meta device and gradients are handled by
    :func:`mdsd_ot._validate.device_rows`; the per-row flags are reduced on the device and read
    once (one host synchronisation).  The sum tolerance follows the dtype.  ``names``: the
    caller's argument names, which the errors name.
    """
    pn, qn = names
    _check_shapes(tuple(p.shape), tuple(q.shape), names)
    P, Q = V_.device_rows(p, pn), V_.device_rows(q, qn)
    if p.device != q.device:
        raise ValueError(
            f"{qn}: is on {q.device} but {pn} is on {p.device}; put both on one device"
        )
    if P.dtype != Q.dtype:
        raise ValueError(
            f"{qn}: has dtype {q.dtype} but {pn} has {p.dtype}; give both in one dtype"
        )
    xp = bk.namespace(P, Q)
    sp, okp, tol = V_.device_flags(P)
    sq, okq, _ = V_.device_flags(Q, tol)
    ok = okp & okq
    distinct = kernel in DISTINCT and n > 1
    if distinct:
        ok = ok & (xp.sum(xp.astype(Q > 0, xp.int32), axis=-1) >= min(n, Q.shape[-1] + 1))
    if not bool(xp.all(ok)):  # the one host synchronisation
        batched = p.ndim == 2
        if not bool(xp.all(okp)):
            V_.raise_first_bad_row(P, ~okp, pn, tol, batched)
        if not bool(xp.all(okq)):
            V_.raise_first_bad_row(Q, ~okq, qn, tol, batched)
        _support_error(bk.clip(Q, 0.0, None), n, kernel, batched, qn)
    return bk.clip(P, 0.0, None), bk.clip(Q, 0.0, None), (sp, sq)


#: The fused pass sums bucket by bucket, the validator pairwise: the two differ by at most about
#: V u (1e-10 covers V = 10^6), so a row whose sum lies that close to the tolerance is left to
#: the validator, whose verdict then stands.
FUSED_SUM_MARGIN: float = 1e-10


def fused_rows_ok(stats: tuple, n: int, kernel: str) -> bool:
    """Whether one row pair passes :func:`check_numpy` from the figures of the fused bucketing
    pass (:func:`mdsd_ot.fast.bucket.validated_front`): both sums finite and within
    :data:`mdsd_ot._validate.SUM_TOL` of 1 by a margin (:data:`FUSED_SUM_MARGIN`), no entry with its sign bit set (negatives, even the
    clipped rounding noise, and -0.0 go the usual way), and q positive on at least n tokens for
    the distinct-token laws.  False only means "validate the usual way", which raises the
    message or clips the noise.

    Examples
    --------
    >>> fused_rows_ok((1.0, 1.0 - 1e-12, False, False, 3), 2, "without")
    True
    >>> fused_rows_ok((1.0, 1.0, False, True, 3), 2, "without")  # a negative entry in q
    False
    """
    sp, sq, neg_p, neg_q, npos = stats
    tol = V_.SUM_TOL - FUSED_SUM_MARGIN  # a sum near the limit goes the usual way
    if neg_p or neg_q or not (V_.sum_ok(sp, tol) and V_.sum_ok(sq, tol)):
        return False
    return not (kernel in DISTINCT and n > 1 and npos < n)
