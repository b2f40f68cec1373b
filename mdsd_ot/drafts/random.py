"""Seeded random rational draft laws (exact instances for checks and cross-checks).

Rational instances keep every exact check exact (Fractions); denominators stay small so that
witnesses are readable.  Each law class builds its own random instance (:meth:`random` of the
classes), so what a law needs (full support for distinct-token laws, mass outside greedy's
top tokens) is known by the law.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["rational_simplex"]


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
