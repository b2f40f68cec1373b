"""Any joint law given as a table of shape ``(V,)*n`` (for theory checks on arbitrary laws)."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ._base import DraftLaw, Vector, as_rng, fmt
from .sampling import InverseCDF

__all__ = ["Explicit"]


class Explicit(DraftLaw):
    """Any joint law: a table of shape ``(V,)*n`` (numbers or rationals) summing to 1.

    Examples
    --------
    >>> Explicit([[0.5, 0.0], [0.25, 0.25]]).Q([0])
    0.5
    """

    scheme = "explicit"
    summary = "any joint law, given as a (V,)*n table (theory checks)"

    def __init__(self, table: Any):
        rational = V_.is_rational_input(table)
        arr = np.asarray(table, dtype=object if rational else None)
        ragged = arr.dtype == object and any(isinstance(v, list | tuple) for v in arr.ravel())
        if ragged or arr.ndim < 1 or len(set(arr.shape)) != 1 or arr.shape[0] == 0:
            raise ValueError(
                f"table: an explicit joint law must have shape (V,)*n, got {arr.shape}"
            )
        self.V, self.n = arr.shape[0], arr.ndim
        flat = Vector(list(arr.ravel()) if rational else arr.ravel(), "table")
        self._flat = flat
        self._table = flat.float.reshape(arr.shape)

    @classmethod
    def build(cls, q=None, n=None, *, qs=None, table=None):
        """The law of ``table``."""
        if table is None:
            raise ValueError("table: the explicit scheme needs a joint table")
        return cls(table)

    @classmethod
    def random(cls, rng, V, n, *, denom=12, zeros=False):
        """A random rational joint table over Σⁿ (zeros allowed)."""
        from .random import rational_simplex

        flat = rational_simplex(rng, V**n, denom=denom, zeros=True)
        return cls(np.array(flat, dtype=object).reshape((V,) * n).tolist())

    @property
    def rational(self) -> bool:
        return self._flat.rational

    @property
    def table(self) -> np.ndarray:
        """The joint table (float64, shape ``(V,)*n``)."""
        return self._table

    def q_eval_work(self) -> int:
        """Exact Q(H) sums the |H|^n entries of the table inside Hⁿ."""
        return self.V**self.n

    def _Q(self, mask, exact):
        if not exact:
            sub = self._table[np.ix_(*[mask] * self.n)]
            return float(sub.sum())
        vals = self._flat.exact
        idx = np.flatnonzero(mask)
        tot = Fraction(0)
        for t in itertools.product(idx, repeat=self.n):
            tot += vals[int(np.ravel_multi_index(t, self._table.shape))]
        return tot

    def tuple_support(self) -> np.ndarray:
        """Which draft tuples have positive probability, shape ``(V,)*n`` (judged on the exact
        entries of a rational table: an entry of 1/10^400 is a possible tuple).

        Examples
        --------
        >>> Explicit([[0.5, 0.0], [0.25, 0.25]]).tuple_support().tolist()
        [[True, False], [True, True]]
        """
        return self._flat.positive().reshape(self._table.shape)

    def _items(self, exact):
        vals = self._flat.values(exact)
        for k in np.flatnonzero(self._flat.positive()):
            yield tuple(int(i) for i in np.unravel_index(k, self._table.shape)), vals[int(k)]

    def support_size_bound(self):
        return int(np.count_nonzero(self._flat.positive()))

    def support_size_bits(self) -> float:
        return float(np.log2(max(self.support_size_bound(), 2)))

    def joint(self, max_entries=None):
        return self._table.copy()

    def _sample(self, rng, size):
        k = InverseCDF(self._flat.float).draw(as_rng(rng).random(int(size)))
        return np.stack(np.unravel_index(k, self._table.shape), axis=1).astype(np.int64)

    def spec(self):
        r = self.rational
        vals = self._flat.values(r)
        return {
            "scheme": self.scheme,
            "n": self.n,
            "table": np.array([fmt(v) for v in vals], dtype=object)
            .reshape(self._table.shape)
            .tolist(),
        }
