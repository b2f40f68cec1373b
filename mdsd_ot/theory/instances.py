"""Rounding float search points to exact rationals (the hunt's witnesses).

Random rational instances come from the laws themselves (:func:`mdsd_ot.drafts.random_law`,
:func:`mdsd_ot.drafts.rational_simplex`); this module turns a float vector found by the hunt
into a rational one with a small denominator, so that the violation can be recomputed exactly
and the witness stays readable.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["to_rational"]


def to_rational(x: Any, max_den: int = 1000) -> list[Fraction]:
    """Round a probability vector to the grid ``k / max_den`` (sum exactly 1, entries ≥ 0).

    The rounding error is moved to the largest entry.

    Examples
    --------
    >>> to_rational([0.5, 0.25, 0.25])
    [Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)]
    >>> to_rational([0.3333, 0.3333, 0.3334], 10)
    [Fraction(3, 10), Fraction(3, 10), Fraction(2, 5)]
    """
    v = np.asarray(x, dtype=np.float64)
    if v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)) or np.any(v < 0) or v.sum() <= 0:
        raise ValueError("x: give a non-negative, non-zero vector to round to a distribution")
    v = v / v.sum()
    k = np.rint(v * max_den).astype(np.int64)
    k[int(np.argmax(v))] += max_den - int(k.sum())
    if np.any(k < 0):
        raise ValueError(f"x: cannot round to the grid 1/{max_den}; use a finer grid")
    return [Fraction(int(a), max_den) for a in k]
