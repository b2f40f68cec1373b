"""One place that checks probability inputs at the package boundary.

Every public entry point (draft laws, ``alpha_star``/``solve``, the fast and torch solvers, the
verifiers, the CLI) validates its probability vectors here, once, and works on the cleaned
values afterwards.  Errors are :class:`ValueError` whose message names the argument and the fix.

Tolerances
----------
A float vector is accepted when every entry is finite and ``>= -NEG_TOL`` and its sum is within
``SUM_TOL`` (float64) or ``SUM_TOL_F32`` (float32 and lower) of 1.  Accepted vectors are clipped
at 0 and renormalised to sum 1 (to within one rounding), so downstream code may rely on exact
marginals.  Rational inputs (``fractions.Fraction``, integers, or strings ``"a/b"``) must sum to
exactly 1 and are kept exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from numbers import Rational
from typing import Any

import numpy as np

#: Largest allowed deviation of a float64 probability vector's sum from 1.
SUM_TOL: float = 1e-9
#: Same for float32 (and lower precision) inputs, e.g. a float32 softmax over 152k tokens.
SUM_TOL_F32: float = 1e-4
#: Entries in ``[-NEG_TOL, 0)`` are rounding noise and are clipped to 0; below that is an error.
NEG_TOL: float = 1e-15


def _is_rational_scalar(x: Any) -> bool:
    return isinstance(x, Rational | str) and not isinstance(x, bool)


def is_rational_input(x: Any) -> bool:
    """True when ``x`` is a sequence of exact rationals (Fraction, int, or ``"a/b"`` strings).

    Examples
    --------
    >>> from fractions import Fraction
    >>> is_rational_input([Fraction(1, 3), Fraction(2, 3)])
    True
    >>> is_rational_input([0.5, 0.5])
    False
    """
    if isinstance(x, np.ndarray):
        return x.dtype == object and x.size > 0 and all(_is_rational_scalar(v) for v in x.flat)
    if isinstance(x, list | tuple) and len(x) > 0:
        flat = list(_flatten(x))
        return all(_is_rational_scalar(v) for v in flat) and any(
            isinstance(v, Fraction | str) for v in flat
        )
    return False


def _flatten(x: Iterable[Any]) -> Iterable[Any]:
    for v in x:
        if isinstance(v, list | tuple | np.ndarray):
            yield from _flatten(v)
        else:
            yield v


def _to_fraction(v: Any, name: str) -> Fraction:
    try:
        f = Fraction(v) if not isinstance(v, float) else Fraction(v)
    except (ValueError, TypeError, ZeroDivisionError) as exc:
        raise ValueError(
            f"{name}: cannot read {v!r} as a rational number; give Fractions, ints or 'a/b' strings"
        ) from exc
    return f


def prob_vector(x: Any, name: str = "p", *, tol: float | None = None) -> np.ndarray:
    """Validate a probability vector and return it as a float64 array summing to 1.

    Parameters
    ----------
    x : (V,) array_like
        Probabilities (floats, or exact rationals which are converted to float).
    name : str
        The argument's name, used in error messages.
    tol : float, optional
        Allowed ``|sum(x) - 1|``; default :data:`SUM_TOL` (float64) or :data:`SUM_TOL_F32`.

    Examples
    --------
    >>> prob_vector([0.25, 0.75])
    array([0.25, 0.75])
    >>> prob_vector([0.5, 0.6], "q")
    Traceback (most recent call last):
    ...
    ValueError: q: entries sum to 1.1, not 1 (tolerance 1e-09); normalise q (q / q.sum()) first
    """
    if is_rational_input(x):
        return np.array([float(v) for v in exact_vector(x, name)], dtype=np.float64)
    arr = np.asarray(x)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: entries must be numbers") from exc
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"{name}: entries must be real numbers, got dtype {arr.dtype}")
    if tol is None:
        tol = SUM_TOL_F32 if arr.dtype in (np.float32, np.float16) else SUM_TOL
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name}: must be a 1-D vector of probabilities, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: is empty; give at least one probability")
    return _check_and_normalise(arr, name, tol)


def _check_and_normalise(arr: np.ndarray, name: str, tol: float) -> np.ndarray:
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(
            f"{name}: entry {bad} is {arr[bad]}; probabilities must be finite (check for NaN/inf)"
        )
    if np.any(arr < -NEG_TOL):
        bad = int(np.flatnonzero(arr < -NEG_TOL)[0])
        raise ValueError(
            f"{name}: entry {bad} is negative ({arr[bad]:.3g}); probabilities must be >= 0"
        )
    arr = np.clip(arr, 0.0, None)
    s = float(arr.sum())
    if abs(s - 1.0) > tol:
        raise ValueError(
            f"{name}: entries sum to {s:.6g}, not 1 (tolerance {tol:g}); "
            f"normalise {name} ({name} / {name}.sum()) first"
        )
    return arr / s


def prob_batch(x: Any, name: str = "p", *, tol: float | None = None) -> np.ndarray:
    """Validate a (V,) or (B, V) array of probability rows; errors name the bad row.

    Returns a float64 array of the same shape, each row renormalised to sum 1.
    """
    arr = np.asarray(x)
    if arr.ndim == 1:
        return prob_vector(arr, name, tol=tol)
    if arr.ndim != 2:
        raise ValueError(f"{name}: must have shape (V,) or (B, V), got {arr.shape}")
    if tol is None:
        tol = SUM_TOL_F32 if arr.dtype in (np.float32, np.float16) else SUM_TOL
    a = arr.astype(np.float64)
    if a.shape[1] == 0:
        raise ValueError(f"{name}: rows are empty; give at least one probability per row")
    finite = np.isfinite(a).all(axis=1)
    nonneg = (a >= -NEG_TOL).all(axis=1)
    sums = np.where(np.isfinite(a), a, 0.0).sum(axis=1)
    good = finite & nonneg & (np.abs(sums - 1.0) <= tol)
    if not good.all():
        row = int(np.flatnonzero(~good)[0])
        try:
            _check_and_normalise(a[row], f"{name}[{row}]", tol)
        except ValueError as exc:
            raise ValueError(f"{exc} (row {row} of {a.shape[0]})") from None
    a = np.clip(a, 0.0, None)
    return a / a.sum(axis=1, keepdims=True)


def exact_vector(x: Any, name: str = "p", *, tol: float = SUM_TOL) -> tuple[Fraction, ...]:
    """Validate and convert to a tuple of Fractions summing to exactly 1.

    Rational inputs must sum to exactly 1.  Float inputs are converted exactly (every float is a
    dyadic rational), checked with ``tol``, and renormalised exactly, so exact methods solve the
    rational instance nearest the floats in the sense ``x / sum(x)``.

    Examples
    --------
    >>> exact_vector(["1/3", "2/3"])
    (Fraction(1, 3), Fraction(2, 3))
    """
    rational = is_rational_input(x)
    vals = list(_flatten(x)) if not isinstance(x, np.ndarray) else list(x.ravel())
    if isinstance(x, np.ndarray) and x.ndim != 1 or (not vals):
        raise ValueError(f"{name}: must be a non-empty 1-D vector of probabilities")
    if not rational:
        arr = prob_vector(x, name, tol=tol)  # float checks first (NaN, negatives, sum)
        fr = [Fraction(float(v)) for v in arr]
    else:
        fr = [_to_fraction(v, name) for v in vals]
        for i, f in enumerate(fr):
            if f < 0:
                raise ValueError(f"{name}: entry {i} is negative ({f}); probabilities must be >= 0")
        s = sum(fr, Fraction(0))
        if s != 1:
            raise ValueError(
                f"{name}: rational entries sum to {s}, not exactly 1; normalise {name} first"
            )
        return tuple(fr)
    s = sum(fr, Fraction(0))
    return tuple(f / s for f in fr)


def check_n(n: Any, name: str = "n") -> int:
    """Validate a number of drafts: an integer ``>= 1``."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise ValueError(f"{name}: the number of drafts must be an integer >= 1, got {n!r}")
    if n < 1:
        raise ValueError(f"{name}: the number of drafts must be >= 1, got {n}")
    return int(n)


def check_support(q: Sequence[Any] | np.ndarray, n: int, scheme: str, name: str = "q") -> None:
    """Check that ``q`` has at least ``n`` tokens of positive mass (distinct-token schemes)."""
    if isinstance(q, np.ndarray) and q.dtype != object:
        support = int(np.count_nonzero(q > 0))
    else:
        support = int(sum(1 for v in q if v > 0))
    if support < n:
        raise ValueError(
            f"{name}: the {scheme} scheme draws n={n} distinct tokens but {name} has only "
            f"{support} token(s) with positive mass; use n <= {support} or a with-replacement law"
        )


def check_same_length(p: Sequence[Any], q: Sequence[Any], pname: str = "p", qname: str = "q"):
    """Check that two vectors index the same vocabulary."""
    if len(p) != len(q):
        raise ValueError(
            f"{qname}: has length {len(q)} but {pname} has length {len(p)}; both must be "
            "distributions over the same vocabulary"
        )


def check_size(size: int, limit: int, what: str, hint: str) -> None:
    """Refuse an instance larger than ``limit`` (named ``what``), pointing to ``hint``."""
    if size > limit:
        # integers above 4,300 digits cannot be printed; never spell out huge counts
        need = f"{size:,}" if size < 10**18 else f"at least 2^{int(size).bit_length() - 1:,}"
        raise ValueError(
            f"instance too large for {what}: needs {need} entries (limit {limit:,}); {hint}"
        )
