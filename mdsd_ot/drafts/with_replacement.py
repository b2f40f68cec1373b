r"""n i.i.d. drafts from q (docs/reference.md, "With replacement"): :math:`Q(H) = q(H)^n`."""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _validate as V_
from ._base import _EPS, QLaw, as_rng, one, zero
from ._sets import (
    SetWeights,
    combinations,
    compositions,
    count_sets,
    covering_weights,
    product_tuples,
)
from .sampling import inverse_cdf_table

__all__ = ["WithReplacement", "EXACT_POWER_BITS"]

#: Exact Q(H) = q(H)^n refuses rationals larger than this many bits (about 8 MB).
EXACT_POWER_BITS: int = 2**26


class WithReplacement(QLaw):
    r"""n i.i.d. drafts from q: :math:`p_{draft}(\bar i) = \prod_j q(\bar i_j)`, :math:`Q(H) = q(H)^n`.

    q-convex (T5): along any chain, :math:`Q = t^n` is a convex function of :math:`t = q(H)`.

    Examples
    --------
    >>> d = WithReplacement(["1/2", "1/2"], 2)
    >>> d.Q([0])
    Fraction(1, 4)
    >>> d.set_weights()[frozenset({0, 1})]
    Fraction(1, 2)
    """

    scheme = "with"
    kernel = "with"
    q_convex = True
    summary = "n i.i.d. drafts from q (with replacement)"

    def _Q(self, mask, exact):
        qv = self.qvals(exact)
        s = sum((qv[i] for i in np.flatnonzero(mask)), zero(exact))
        if exact and 0 < s < 1:
            bits = self.n * (s.numerator.bit_length() + s.denominator.bit_length())
            if bits > EXACT_POWER_BITS:
                raise ValueError(
                    f"exact: Q(H) = q(H)^n with n = {self.n:,} needs rationals of about "
                    f"{bits:,} bits (limit {EXACT_POWER_BITS:,}); use exact=False (floats)"
                )
        return s**self.n

    def _items(self, exact):
        qv = self.qvals(exact)
        for t in itertools.product(self.support().tolist(), repeat=self.n):
            yield t, math.prod((qv[i] for i in t), start=one(exact))

    def support_size_bound(self):
        return self.support_count() ** self.n

    def _sample(self, rng, size):
        """``size`` tuples of n i.i.d. draws (inverse CDF: O(size·n·log V) time, O(size·n) memory)."""
        table = inverse_cdf_table(self.q)
        g = as_rng(rng)
        return table.draw(g.random((int(size), self.n)))

    # -- set and tuple weights ---------------------------------------------------------------
    def _sizes(self) -> range:
        return range(1, min(self.n, self.support_count()) + 1)

    def set_count_bound(self):
        return count_sets(self.support_count(), self._sizes())

    def _route(self, k: int, exact: bool) -> str:
        """Compositions (C(n−1, k−1) terms) or the covering DP (n·k·2^k), whichever is cheaper;
        in floats compositions only while n! fits a float (n ≤ 170)."""
        comps = math.comb(self.n - 1, k - 1) * k
        dp = self.n * k * 2**k
        if comps <= dp and (exact or self.n <= 170):
            return "compositions"
        return "dp"

    def _set_weight_terms(self, exact: bool) -> int:
        """Per set of size k, the terms of the route :meth:`set_weight_table` takes: C(n−1, k−1)
        compositions × k, or the covering DP's n·k·2^k (floats take the DP when n! overflows,
        n > 170)."""
        m, n = self.support_count(), self.n
        return sum(
            math.comb(m, k)
            * (
                math.comb(n - 1, k - 1) * k
                if self._route(k, exact) == "compositions"
                else n * k * 2**k
            )
            for k in self._sizes()
        )

    def set_weight_table(self, exact=None):
        r"""Closed form :math:`w_S = \sum_{m} \binom{n}{m_1, \dots, m_k} \prod_j q(s_j)^{m_j}`.

        The sum runs over the compositions m of n into k = |S| positive parts (all terms
        positive: no cancellation in floats); where that has more terms than the covering
        dynamic program (:func:`~mdsd_ot.drafts._sets.covering_weights`, n·k·2^k per set), or n!
        would overflow a float, the DP is used.
        """
        ex = self.rational if exact is None else exact
        self._guard_set_table(exact=ex)
        sup, n = self.support(), self.n
        q = np.array(list(self.qvals(ex)), dtype=object if ex else np.float64)
        blocks, err = [], 0.0
        for k in self._sizes():
            mem = sup[combinations(len(sup), k)]
            if self._route(k, ex) == "dp":
                w = covering_weights(mem, [q] * n, ex)
                err += n * (2 * k + 1) * _EPS
            else:
                cols = [q[mem[:, j]] for j in range(k)]
                w = np.zeros(len(mem), dtype=q.dtype)
                terms = 0
                for comp in compositions(n, k):
                    coef = math.factorial(n) // math.prod(math.factorial(c) for c in comp)
                    term = np.full(len(mem), one(ex) * coef, dtype=q.dtype)
                    for j, c in enumerate(comp):
                        term = term * cols[j] ** c
                    w = w + term
                    terms += 1
                err += (2 * n + terms) * _EPS
            blocks.append((mem, w))
        err += (n + 1) * (self.V + 1) * _EPS  # floats vs the exact rationals they denote
        return SetWeights.from_blocks(blocks, n, ex, self.V, err)

    def tuple_weights(self, *, with_error=False):
        r"""Vectorised :math:`\prod_j q(\bar i_j)` over the support tuples."""
        from ._sets import MAX_TUPLES, TUPLE_HINT

        n = self.n
        what = f"the draft tuples of {self!r}"  # refused before n copies of q are listed
        self._refuse_above_bits(
            n * math.log2(max(self.support_count(), 2)), MAX_TUPLES, what, TUPLE_HINT
        )
        V_.check_size(self.support_count() ** n, MAX_TUPLES, what, TUPLE_HINT)
        t, w = product_tuples(
            self.support(), [self.q] * n, distinct=False, what=f"the draft tuples of {self!r}"
        )
        err = (n + 1) * _EPS + (n + 1) * (self.V + 1) * _EPS
        return (t, w, err) if with_error else (t, w)
