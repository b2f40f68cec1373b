"""Seeded random instances for the claims: exact rational points of the simplex and draft laws.

Rational instances keep every claim check exact (Fractions); denominators stay small so that the
witnesses are readable.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..drafts import DraftLaw, make

__all__ = ["rational_simplex", "random_law", "to_rational", "Q_SCHEMES"]

#: The laws built from one q and n (product and explicit are built separately).
Q_SCHEMES = ("with", "without", "conditional-poisson", "greedy", "spechub")


def rational_simplex(
    rng: np.random.Generator, V: int, *, denom: int = 12, zeros: bool = False
) -> list[Fraction]:
    """A random point of the simplex with rational entries (numerators in [1, denom]).

    With ``zeros=True`` one entry may be 0 (probability 1/4).

    Examples
    --------
    >>> sum(rational_simplex(np.random.default_rng(0), 4))
    Fraction(1, 1)
    """
    w = [int(v) for v in rng.integers(1, denom + 1, size=V)]
    if zeros and V > 2 and rng.random() < 0.25:
        w[int(rng.integers(V))] = 0
    s = sum(w)
    return [Fraction(v, s) for v in w]


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
    """A random rational draft law of ``scheme`` (``explicit`` draws a random joint table).

    Distinct-token schemes get full support; greedy gets mass outside its top n-1.
    """
    if scheme == "explicit":
        flat = rational_simplex(rng, V**n, denom=denom, zeros=True)
        table = np.array(flat, dtype=object).reshape((V,) * n).tolist()
        return make("explicit", table=table)
    if scheme == "product":
        return make(
            "product", qs=[rational_simplex(rng, V, denom=denom, zeros=zeros) for _ in range(n)]
        )
    full = scheme in ("without", "conditional-poisson", "greedy", "spechub")
    q = rational_simplex(rng, V, denom=denom, zeros=zeros and not full)
    return make(scheme, q, 2 if scheme == "spechub" else n)
