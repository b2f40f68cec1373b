"""Input checks of the fast and torch solvers, built on :mod:`mdsd_ot._validate`.

numpy inputs go through :func:`mdsd_ot._validate.prob_batch` (float64, row-naming errors).  Array
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


def _check_shapes(p_shape: tuple, q_shape: tuple) -> None:
    if len(p_shape) not in (1, 2):
        raise ValueError(f"p: must have shape (V,) or (B, V), got {tuple(p_shape)}")
    if tuple(p_shape) != tuple(q_shape):
        raise ValueError(
            f"q: has shape {tuple(q_shape)} but p has shape {tuple(p_shape)}; give one q row per "
            "p row over the same vocabulary"
        )


def _support_error(qrow: np.ndarray, n: int, kernel: str, name: str) -> None:
    V_.check_support(qrow, n, kernel, name)


def check_numpy(p: Any, q: Any, n: int, kernel: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate numpy-like inputs; return float64 (B, V) rows summing to 1."""
    pa, qa = np.asarray(p), np.asarray(q)
    _check_shapes(pa.shape, qa.shape)
    P = V_.prob_batch(pa, "p")
    Q = V_.prob_batch(qa, "q")
    P, Q = np.atleast_2d(P), np.atleast_2d(Q)
    if kernel in DISTINCT and n > 1:
        support = np.count_nonzero(Q > 0, axis=-1)
        if np.any(support < n):
            row = int(np.flatnonzero(support < n)[0])
            _support_error(Q[row], n, kernel, f"q[{row}]" if qa.ndim == 2 else "q")
    return P, Q


def check_array(p: Any, q: Any, n: int, kernel: str) -> tuple[Any, Any]:
    """Validate arrays of any array-API library on their device; return clipped, renormalised rows.

    One host synchronisation (reading the "all good" flag).  The sum tolerance follows the dtype
    (:data:`mdsd_ot._validate.SUM_TOL` for float64, ``SUM_TOL_F32`` for float32).
    """
    xp = bk.namespace(p, q)
    _check_shapes(tuple(p.shape), tuple(q.shape))
    if p.dtype != q.dtype:
        raise ValueError(f"q: has dtype {q.dtype} but p has {p.dtype}; give both in one dtype")
    if p.dtype not in (xp.float32, xp.float64):
        raise ValueError(
            f"p: dtype {p.dtype} is not supported; convert to float32 or float64 "
            "(e.g. p.float() / p.double())"
        )
    if p.shape[-1] == 0:
        raise ValueError("p: rows are empty; give at least one probability per row")
    tol = V_.SUM_TOL if p.dtype == xp.float64 else V_.SUM_TOL_F32
    P, Q = (x if x.ndim == 2 else x[None, :] for x in (p, q))
    flags = [_row_ok(P, tol), _row_ok(Q, tol)]
    if kernel in DISTINCT and n > 1:
        flags.append(xp.sum(xp.astype(Q > 0, xp.int64), axis=-1) >= n)
    ok = flags[0] & flags[1] if len(flags) == 2 else flags[0] & flags[1] & flags[2]
    if not bool(xp.all(ok)):  # the one host synchronisation
        _raise_first_bad(P, Q, n, kernel, batched=p.ndim == 2)
    return _renormalise(P), _renormalise(Q)


def _row_ok(x: Any, tol: float) -> Any:
    xp = bk.namespace(x)
    finite = xp.all(xp.isfinite(x), axis=-1)
    nonneg = xp.all(x >= -V_.NEG_TOL, axis=-1)
    s = xp.sum(xp.where(xp.isfinite(x), x, xp.zeros_like(x)), axis=-1)
    return finite & nonneg & (xp.abs(s - 1.0) <= tol)


def _renormalise(x: Any) -> Any:
    xp = bk.namespace(x)
    x = bk.clip(x, 0.0, None)
    return x / xp.sum(x, axis=-1, keepdims=True)


def _to_numpy(x: Any) -> np.ndarray:
    if bk.is_torch(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)  # pragma: no cover - other array libraries


def _raise_first_bad(P: Any, Q: Any, n: int, kernel: str, batched: bool) -> None:
    """Re-run the shared validator on the host, which raises with the row named."""
    tol = V_.SUM_TOL if P.dtype == bk.namespace(P).float64 else V_.SUM_TOL_F32
    Pn, Qn = _to_numpy(P), _to_numpy(Q)
    if batched:
        V_.prob_batch(Pn, "p", tol=tol)
        Qn = V_.prob_batch(Qn, "q", tol=tol)
    else:
        V_.prob_vector(Pn[0], "p", tol=tol)
        Qn = V_.prob_vector(Qn[0], "q", tol=tol)[None, :]
    support = np.count_nonzero(Qn > 0, axis=-1)
    row = int(np.flatnonzero(support < n)[0])
    _support_error(Qn[row], n, kernel, f"q[{row}]" if batched else "q")
