"""One place that checks probability inputs at the package boundary.

Every public entry point (draft laws, ``alpha_star``/``solve``, the fast and torch solvers, the
verifiers, the CLI) validates its probability vectors here, once, and works on the cleaned
values afterwards.  Errors are :class:`ValueError` whose message names the argument and the fix.

Tolerances
----------
A float vector is accepted when every entry is finite and ``>= -NEG_TOL`` and its sum is within
the tolerance of its dtype *as given* (:func:`sum_tol`) of 1: ``SUM_TOL`` (float64, and integers),
``SUM_TOL_F32`` (float32), ``SUM_TOL_F16`` (float16) or ``SUM_TOL_BF16`` (bfloat16).  The
low-precision tolerances are twice the format's unit roundoff u: a normalised vector rounded
entry by entry to the format has ``|sum - 1| <= u * sum(p) = u``, so ``2u`` accepts every such
vector (and its sum computed in a wider format) and nothing much further off.  Accepted vectors
are clipped at 0 and renormalised to sum 1 (to within one rounding; float16 / bfloat16 tensors in
float32), so downstream code may rely on exact marginals.  Rational inputs (``fractions.Fraction``, integers, or strings ``"a/b"``) must sum to
exactly 1 and are kept exact.

Dtypes (one rule for 1-D and 2-D inputs, numpy arrays and torch tensors)
---------------------------------------------------------------------------
Entries must be real numbers: floats, integers, or exact rationals.  Complex and boolean inputs
are refused everywhere with the same message (:func:`check_dtype`); nothing is cast silently.
numpy inputs are computed in float64.  Tensors (:func:`device_rows`) keep float32 / float64,
float16 and bfloat16 are checked at their own tolerance, then cast to float32, renormalised there
and computed in float32; integer tensors are computed in float64; a tensor that
requires grad is detached (α* is piecewise linear in p and q and the solvers give no gradient:
the result never requires grad); a tensor on the ``meta`` device (no values) is refused.
Python lists given to :func:`mdsd_ot.torch.alpha_star` become float64 tensors (or the dtype of
the other argument when that one is a tensor), never torch's default float32.

Rows: :func:`prob_rows` checks (V,) or (B, V) numpy rows in one fused pass (a sum and a minimum
per row; a bad row is examined entry by entry only for its message); :func:`device_rows` and
:func:`device_flags` do the same on a tensor's device, and :func:`raise_first_bad_row` gives the
same messages.

Outputs are not inputs: the path checks and atomic writes of every output file live in
:mod:`mdsd_ot._outputs` (:func:`mdsd_ot._outputs.check_output_file`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from numbers import Rational
from typing import Any

import numpy as np

#: Largest allowed deviation of a float64 probability vector's sum from 1.
SUM_TOL: float = 1e-9
#: Same for float32 inputs, e.g. a float32 softmax over 152k tokens.
SUM_TOL_F32: float = 1e-4
#: float16 (11 significand bits, unit roundoff u = 2^-11): 2u.  Rounding a normalised vector
#: entry by entry moves its sum by at most u (each entry by at most u times itself), so 2u
#: accepts every float16 copy of a distribution, e.g. ``softmax(logits.half())``, with a margin
#: for the rounding of the sum itself (computed in float32).
SUM_TOL_F16: float = 2 * 2.0**-11
#: bfloat16 (8 significand bits, u = 2^-8): 2u, by the same argument as :data:`SUM_TOL_F16`.
SUM_TOL_BF16: float = 2 * 2.0**-8
#: Entries in ``[-NEG_TOL, 0)`` are rounding noise and are clipped to 0; below that is an error.
NEG_TOL: float = 1e-15

_SUM_TOLS = {"float32": SUM_TOL_F32, "float16": SUM_TOL_F16, "bfloat16": SUM_TOL_BF16}
#: dtypes whose rows are checked at their own tolerance and then computed in float32.
LOW_PRECISION: frozenset[str] = frozenset({"float16", "bfloat16"})


def dtype_name(dtype: Any) -> str:
    """The bare name of a numpy or tensor dtype (``"float32"``, ``"bfloat16"``, ``"int64"``).

    Examples
    --------
    >>> dtype_name(np.dtype(np.float16))
    'float16'
    """
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        dtype = np.dtype(dtype)
    return str(getattr(dtype, "name", dtype)).rsplit(".", 1)[-1]


def sum_tol(dtype: Any) -> float:
    """The allowed ``|sum - 1|`` of a row given in ``dtype`` (numpy or tensor dtype).

    float64 and integers: :data:`SUM_TOL`; float32: :data:`SUM_TOL_F32`; float16 and bfloat16:
    twice their unit roundoff (:data:`SUM_TOL_F16`, :data:`SUM_TOL_BF16`, module docstring).

    Examples
    --------
    >>> sum_tol(np.dtype(np.float64)), sum_tol(np.dtype(np.float32)), sum_tol("bfloat16")
    (1e-09, 0.0001, 0.0078125)
    """
    return _SUM_TOLS.get(dtype_name(dtype), SUM_TOL)


def _low_precision_hint(name: str, dtype: Any, tensor: bool) -> str:
    """The fix for a float16 / bfloat16 row whose sum is off: normalise in float32."""
    cast = f"{name}.float()" if tensor else f"{name}.astype(np.float32)"
    return (
        f"convert {name} to float32 and normalise it there ({name} = {cast}; "
        f"{name} = {name} / {name}.sum(-1, keepdims=True)); normalising in {dtype_name(dtype)} "
        f"cannot do better than its rounding"
    )


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


_DTYPE_HINTS = {
    "complex": "give the real probabilities (x.real, if the imaginary parts are meant to be 0)",
    "bool": "a 0/1 mask is not a distribution: convert it to floats and normalise (x / x.sum())",
    "other": "give floats, ints, or exact rationals (Fractions or 'a/b' strings)",
}


def _dtype_kind(x: Any) -> str:
    """'real', 'complex', 'bool' or 'other' for a numpy array or an array-API tensor."""
    dt = x.dtype
    if isinstance(dt, np.dtype):
        k = dt.kind
        return {"b": "bool", "c": "complex", "f": "real", "i": "real", "u": "real"}.get(k, "other")
    from array_api_compat import array_namespace

    xp = array_namespace(x)
    if xp.isdtype(dt, "bool"):
        return "bool"
    if xp.isdtype(dt, "complex floating"):
        return "complex"
    return "real" if xp.isdtype(dt, ("real floating", "integral")) else "other"


def check_dtype(x: Any, name: str = "p") -> None:
    """Refuse complex, boolean and non-numeric arrays (numpy or tensors), with one message.

    Examples
    --------
    >>> check_dtype(np.array([0.5 + 0j, 0.5]), "q")
    Traceback (most recent call last):
    ...
    ValueError: q: entries must be real numbers, got dtype complex128; give the real probabilities (x.real, if the imaginary parts are meant to be 0)
    """
    kind = _dtype_kind(x)
    if kind != "real":
        raise ValueError(
            f"{name}: entries must be real numbers, got dtype {x.dtype}; {_DTYPE_HINTS[kind]}"
        )


def prob_vector(x: Any, name: str = "p", *, tol: float | None = None) -> np.ndarray:
    """Validate a probability vector and return it as a float64 array summing to 1.

    Parameters
    ----------
    x : (V,) array_like
        Probabilities (floats, or exact rationals which are converted to float).
    name : str
        The argument's name, used in error messages.
    tol : float, optional
        Allowed ``|sum(x) - 1|``; default the tolerance of ``x``'s dtype (:func:`sum_tol`).

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
    check_dtype(arr, name)
    hint = _low_precision_hint(name, arr.dtype, False) if arr.dtype == np.float16 else None
    if tol is None:
        tol = sum_tol(arr.dtype)
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name}: must be a 1-D vector of probabilities, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: is empty; give at least one probability")
    return _check_and_normalise(arr, name, tol, hint)


def _check_and_normalise(
    arr: np.ndarray, name: str, tol: float, hint: str | None = None
) -> np.ndarray:
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
    with np.errstate(over="ignore"):  # finite entries whose sum overflows: refused just below
        s = float(arr.sum())
    if not abs(s - 1.0) <= tol:
        raise ValueError(
            f"{name}: entries sum to {_digits_apart(s)}, not 1 (tolerance {tol:g}); "
            + (hint or f"normalise {name} ({name} / {name}.sum()) first")
        )
    return arr / s


def prob_batch(x: Any, name: str = "p", *, tol: float | None = None) -> np.ndarray:
    """Validate a (V,) or (B, V) array of probability rows; errors name the bad row.

    Returns a float64 array of the same shape, each row clipped at 0 and renormalised to sum 1.

    Examples
    --------
    >>> prob_batch([[0.25, 0.75], [1.0, 0.0]]).tolist()
    [[0.25, 0.75], [1.0, 0.0]]
    """
    X, sums, single = prob_rows(x, name, tol=tol)
    out = normalise(X, sums)
    return out[0] if single else out


def real_array(x: Any, name: str) -> np.ndarray:
    """``x`` as a real numpy array by the dtype rule: exact rationals, object and string
    entries become float64; complex, boolean and non-numeric inputs are refused (naming ``name``)."""
    if is_rational_input(x) and np.ndim(x) == 1:  # exact rationals: their sum must be exactly 1
        return np.array([float(v) for v in exact_vector(x, name)], dtype=np.float64)
    arr = np.asarray(x)
    if arr.dtype == object or arr.dtype.kind in "US":  # Fractions, 'a/b' strings, mixed
        try:
            arr = np.array([float(Fraction(v)) for v in arr.ravel()]).reshape(arr.shape)
        except (TypeError, ValueError, ZeroDivisionError) as exc:
            raise ValueError(
                f"{name}: entries must be numbers; give floats, ints or 'a/b' strings"
            ) from exc
    check_dtype(arr, name)
    return arr


def prob_rows(x: Any, name: str = "p", *, tol: float | None = None):
    """Validate (V,) or (B, V) numpy rows in one fused pass; return ``(X, sums, single)``.

    ``X`` is (B, V) float64, clipped at 0 (the input itself, without a copy, when it is already
    a non-negative float64 array); ``sums`` (B,) are its row sums, within the tolerance of 1;
    ``single`` says the input was one row.  The rows are *not* divided by their sums (see
    :func:`normalise`).  One sum and one minimum per row decide; only a bad row is examined
    entry by entry, for the message (it names the row, the entry and the fix).

    Examples
    --------
    >>> X, sums, single = prob_rows([0.25, 0.75])
    >>> X.tolist(), sums.tolist(), single
    ([[0.25, 0.75]], [1.0], True)
    """
    arr = real_array(x, name)
    if tol is None:
        tol = sum_tol(arr.dtype)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name}: must have shape (V,) or (B, V), got {arr.shape}")
    single = arr.ndim == 1
    X = np.asarray(arr, dtype=np.float64)
    X = X[None, :] if single else X
    if X.shape[1] == 0:
        raise ValueError(
            f"{name}: is empty; give at least one probability"
            if single
            else f"{name}: rows are empty; give at least one probability per row"
        )
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, 1e308 + 1e308: bad rows
        sums = np.add.reduce(X, axis=-1)
    low = np.minimum.reduce(X, axis=-1)
    good = sum_ok(sums, tol) & (low >= -NEG_TOL)
    if not good.all():
        hint = _low_precision_hint(name, arr.dtype, False) if arr.dtype == np.float16 else None
        raise_first_bad_row(X, ~good, name, tol, batched=not single, hint=hint)
    if (low < 0).any():  # rounding noise in [-NEG_TOL, 0): clipped (a copy, rare)
        X = np.clip(X, 0.0, None)
        sums = np.add.reduce(X, axis=-1)
    return X, sums, single


def sum_ok(sums: Any, tol: float = SUM_TOL) -> Any:
    """Whether row sums pass :func:`prob_rows`: finite and within ``tol`` of 1 (elementwise).

    Examples
    --------
    >>> sum_ok(np.array([1.0, 1.1, np.nan])).tolist()
    [True, False, False]
    """
    return np.isfinite(sums) & (np.abs(sums - 1.0) <= tol)


def normalise(X: Any, sums: Any) -> Any:
    """Rows divided by their sums (``X`` itself when every sum is exactly 1 in numpy)."""
    if isinstance(X, np.ndarray) and bool(np.all(sums == 1.0)):
        return X
    return X / sums[:, None]


def _digits_apart(s: float) -> str:
    """``s`` with the fewest significant digits (at least 6) that do not print as ``1``."""
    for d in range(6, 18):
        text = f"{s:.{d}g}"
        if text != "1":
            return text
    return repr(s)


def raise_first_bad_row(
    X: Any, bad: Any, name: str, tol: float, batched: bool, *, hint: str | None = None
) -> None:
    """Raise the message of the first bad row of ``X`` (numpy, or a tensor copied to the host).

    ``bad`` flags the rows that failed the fused check; ``hint`` replaces the suggested fix of a
    sum that is off (default: normalise ``name``).
    """
    Xn = _host(X)
    rows = np.flatnonzero(_host(bad))
    row = int(rows[0]) if rows.size else 0
    label = f"{name}[{row}]" if batched else name
    try:
        _check_and_normalise(Xn[row].astype(np.float64), label, tol, hint)
    except ValueError as exc:
        if not batched:
            raise
        raise ValueError(f"{exc} (row {row} of {Xn.shape[0]})") from None
    raise ValueError(  # flagged in the input's own precision (float32 sums), fine in float64
        f"{label}: entries do not sum to 1 within {tol:g} in the input's precision; normalise "
        f"{name} in float64 first"
    )


def _host(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def checked_before_cast(a: np.ndarray, name: str, itemsize: int) -> np.ndarray:
    """numpy rows about to be cast to a float type of ``itemsize`` bytes: where their own float
    type is narrower, checked at its tolerance as given and renormalised in float64 first
    (:func:`checked_rows`: a normalised float32 row sums to 1 within float32's rounding, not
    float64's); otherwise returned as they are.

    Examples
    --------
    >>> q32 = np.array([1 / 3, 1 / 3, 1 / 3], np.float32)
    >>> q32 /= q32.sum()
    >>> checked_before_cast(q32, "q", 8).dtype, round(float(checked_before_cast(q32, "q", 8).sum()), 15)
    (dtype('float64'), 1.0)
    """
    if a.dtype.kind == "f" and a.dtype.itemsize < itemsize:
        X, single = checked_rows(a, name)
        return X[0] if single else X
    return a


def device_rows(x: Any, name: str = "p") -> Any:
    """A tensor checked by the dtype rule, as (B, V) rows.

    Refuses the ``meta`` device, complex and boolean dtypes and shapes other than (V,) / (B, V)
    with V >= 1; detaches a tensor that requires grad; integer tensors become float64 (module
    docstring).  Reads no values, except for float16 / bfloat16 rows: those are checked here at
    their own tolerance (:func:`sum_tol`, twice the unit roundoff; one host synchronisation),
    then cast to float32 and renormalised there, so they pass the float32 checks that follow.
    Returns the tensor as (B, V).

    Examples
    --------
    >>> import torch
    >>> device_rows(torch.tensor([0.2, 0.3, 0.5], dtype=torch.bfloat16)).dtype  # sums to 1.00098
    torch.float32
    """
    if getattr(x, "is_meta", False) or str(getattr(x, "device", "")) == "meta":
        raise ValueError(
            f"{name}: is a tensor on the 'meta' device, which holds no values; create it on a "
            "real device (e.g. 'cpu' or 'cuda')"
        )
    if getattr(x, "requires_grad", False):
        x = x.detach()  # no gradient through alpha*: the result never requires grad
    check_dtype(x, name)
    from array_api_compat import array_namespace

    xp = array_namespace(x)
    given = x.dtype
    if x.dtype not in (xp.float32, xp.float64):
        x = xp.astype(x, xp.float64 if xp.isdtype(x.dtype, "integral") else xp.float32)
    if x.ndim not in (1, 2):
        raise ValueError(f"{name}: must have shape (V,) or (B, V), got {tuple(x.shape)}")
    if x.shape[-1] == 0:
        raise ValueError(f"{name}: rows are empty; give at least one probability per row")
    batched = x.ndim == 2
    X = x if batched else x[None, :]
    if dtype_name(given) in LOW_PRECISION:
        sums, ok, tol = device_flags(X, sum_tol(given))
        if not bool(xp.all(ok)):
            hint = _low_precision_hint(name, given, tensor=True)
            raise_first_bad_row(X, ~ok, name, tol, batched, hint=hint)
        X = xp.clip(X, min=0.0) / sums[:, None]
    return X


def device_flags(X: Any, tol: float | None = None) -> tuple[Any, Any, float]:
    """Per-row checks of (B, V) tensor rows on their device: ``(sums, ok, tol)``; no host sync.

    ``sums`` are the row sums after clipping at 0 (the renormalisation constants), ``ok`` is
    True for rows that are finite, ``>= -NEG_TOL`` and sum to 1 within ``tol`` (default by
    dtype).  Read ``ok`` once (one synchronisation) and call :func:`raise_first_bad_row`.
    """
    from array_api_compat import array_namespace

    xp = array_namespace(X)
    if tol is None:
        tol = sum_tol(X.dtype)
    sums = xp.sum(xp.clip(X, min=0.0), axis=-1)  # NaN stays NaN; -inf counts 0 but fails `low`
    low = xp.min(X, axis=-1)
    ok = xp.isfinite(sums) & (low >= -NEG_TOL) & (xp.abs(sums - 1.0) <= tol)
    return sums, ok, tol


def checked_rows(x: Any, name: str = "p") -> tuple[Any, bool]:
    """Rows validated in the precision they are given in, clipped at 0 and normalised.

    The sum tolerance follows the dtype of ``x`` as given (:func:`sum_tol`), so a float32 file
    is checked at float32's tolerance even when it is computed in float64 afterwards: validate
    here first, then cast (and renormalise in the new dtype).

    Parameters
    ----------
    x : (V,) or (B, V) array_like or tensor
        Probability rows: numpy arrays, lists, or tensors of any array-API library.
    name : str
        The argument's name, used in error messages.

    Returns
    -------
    X : (B, V) numpy.ndarray or tensor
        float64 numpy rows for numpy and list inputs (:func:`prob_rows`); for tensors the
        float32 / float64 rows of :func:`device_rows`, on their device.  Each row sums to 1
        to within one rounding.
    single : bool
        Whether ``x`` was one row.

    Examples
    --------
    >>> X, single = checked_rows(np.array([0.5, 0.50001], dtype=np.float32))
    >>> X.dtype, single, round(float(X.sum()), 12)
    (dtype('float64'), True, 1.0)
    """
    if isinstance(x, np.ndarray | list | tuple) or not hasattr(x, "dtype"):
        X, sums, single = prob_rows(x, name)
        return normalise(X, sums), single
    single = x.ndim == 1
    X = device_rows(x, name)
    sums, ok, tol = device_flags(X)
    from array_api_compat import array_namespace

    xp = array_namespace(X)
    if not bool(xp.all(ok)):
        raise_first_bad_row(X, ~ok, name, tol, batched=not single)
    return xp.clip(X, min=0.0) / sums[:, None], single


def exact_vector(x: Any, name: str = "p", *, tol: float | None = None) -> tuple[Fraction, ...]:
    """Validate and convert to a tuple of Fractions summing to exactly 1.

    Rational inputs must sum to exactly 1.  Float inputs are converted exactly (every float is a
    dyadic rational), checked with ``tol``, and renormalised exactly, so exact methods solve the
    rational instance nearest the floats in the sense ``x / sum(x)``.

    Parameters
    ----------
    x : (V,) array_like
        Probabilities: exact rationals (Fractions, ints, ``"a/b"`` strings) or floats.
    name : str
        The argument's name, used in error messages.
    tol : float, optional
        Allowed ``|sum(x) - 1|`` of float inputs; default the tolerance of their dtype as given
        (:func:`sum_tol`: float32 rows are checked at :data:`SUM_TOL_F32`, not at float64's
        :data:`SUM_TOL`, which they cannot meet).  Rational inputs ignore it.

    Examples
    --------
    >>> exact_vector(["1/3", "2/3"])
    (Fraction(1, 3), Fraction(2, 3))
    >>> sum(exact_vector(np.array([0.1, 0.2, 0.70001], dtype=np.float32)))  # float32: 1e-4
    Fraction(1, 1)
    """
    rational = is_rational_input(x)
    vals = list(_flatten(x)) if not isinstance(x, np.ndarray) else list(x.ravel())
    nested = not isinstance(x, np.ndarray) and any(
        isinstance(v, list | tuple | np.ndarray) for v in x
    )
    if isinstance(x, np.ndarray) and x.ndim != 1 or (not vals) or nested:
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


def check_count(x: Any, name: str = "size") -> int:
    """Validate a number of samples: an integer ``>= 1`` (not a bool, a float or a string).

    Examples
    --------
    >>> check_count(np.int64(5))
    5
    >>> check_count(2.5)
    Traceback (most recent call last):
    ...
    ValueError: size: the number of samples must be an integer >= 1, got 2.5
    """
    if isinstance(x, bool) or not isinstance(x, int | np.integer):
        raise ValueError(f"{name}: the number of samples must be an integer >= 1, got {x!r}")
    if x < 1:
        raise ValueError(f"{name}: the number of samples must be >= 1, got {x}")
    return int(x)


def check_support(q: Sequence[Any] | np.ndarray, n: int, scheme: str, name: str = "q") -> None:
    """Check that ``q`` has at least ``n`` tokens of positive mass (distinct-token schemes)."""
    if isinstance(q, np.ndarray) and q.dtype != object:
        support = int(np.count_nonzero(q > 0))
    else:
        support = int(sum(1 for v in q if v > 0))
    if support < n:
        raise ValueError(
            f"{name}: the {scheme} scheme draws n={n} distinct tokens but {name} has only "
            f"{support} token(s) with positive mass; use n <= {support}, a {name} with more "
            "support, or a with-replacement law"
        )


def check_same_length(p: Sequence[Any], q: Sequence[Any], pname: str = "p", qname: str = "q"):
    """Check that two vectors index the same vocabulary."""
    if len(p) != len(q):
        raise ValueError(
            f"{qname}: has length {len(q)} but {pname} has length {len(p)}; both must be "
            "distributions over the same vocabulary"
        )


def check_on_vocabulary(values: Sequence[Any], V: int, name: str = "p") -> None:
    """Check that a vector named ``name`` is over the draft law's vocabulary of ``V`` tokens;
    the error names ``name`` first, since that is the argument a caller mistyped."""
    if len(values) != V:
        raise ValueError(
            f"{name}: has length {len(values)} but the draft law is over V = {V} tokens; pass a "
            f"{name} of length {V}, or build the draft over {name}'s vocabulary"
        )


def check_size(size: int, limit: int, what: str, hint: str) -> None:
    """Refuse an instance larger than ``limit`` (named ``what``), pointing to ``hint``."""
    if size > limit:
        # integers above 4,300 digits cannot be printed; never spell out huge counts
        need = f"{size:,}" if size < 10**18 else f"at least 2^{int(size).bit_length() - 1:,}"
        raise ValueError(
            f"instance too large for {what}: needs {need} entries (limit {limit:,}); {hint}"
        )


#: The torch device names the package accepts (checked before torch is imported).
DEVICE_PATTERN = r"cpu|mps|cuda(:[0-9]+)?"


def check_torch_device(device: Any, torch: Any, name: str = "device") -> str:
    """A torch device the machine has: ``cpu``, ``cuda``, ``cuda:N`` (N below the device count)
    or ``mps``; the error names ``name`` and the fix (``cpu``)."""
    import re

    if not isinstance(device, str) or not re.fullmatch(DEVICE_PATTERN, device):
        raise ValueError(f"{name}: give cpu, cuda, cuda:N or mps, got {device!r}")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"{name}: cuda requested but torch sees no CUDA device; use cpu")
        k = int(device.split(":")[1]) if ":" in device else 0
        if k >= torch.cuda.device_count():
            raise ValueError(
                f"{name}: {device} requested but torch sees {torch.cuda.device_count()} CUDA "
                "device(s); use cuda:0 or cpu"
            )
    if device == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name}: mps requested but torch sees no MPS device; use cpu")
    return device
