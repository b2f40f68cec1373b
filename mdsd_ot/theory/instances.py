"""Seeded random instances for the claims: exact rational points of the simplex and draft laws.

Rational instances keep every claim check exact (Fractions); denominators stay small so that the
witnesses are readable.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..drafts import SCHEMES, DraftLaw, QLaw, rational_simplex
from ..drafts import random_law as drafts_random_law

__all__ = ["rational_simplex", "random_law", "to_rational", "Q_SCHEMES"]

#: The laws built from one q and n (product and explicit are built otherwise), from the registry.
Q_SCHEMES: tuple[str, ...] = tuple(name for name, cls in SCHEMES.items() if issubclass(cls, QLaw))


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


def random_law(
    rng: np.random.Generator,
    scheme: str,
    V: int,
    n: int,
    *,
    denom: int = 12,
    zeros: bool = False,
) -> DraftLaw:
    """A random rational draft law of ``scheme`` (the law class decides what it needs).

    See :func:`mdsd_ot.drafts.random_law`: distinct-token schemes get full support, greedy and
    SpecHub mass outside their top tokens, ``explicit`` a random joint table.
    """
    return drafts_random_law(rng, scheme, V, n, denom=denom, zeros=zeros)
