r"""Conditional Poisson drafts: n i.i.d. draws from q conditioned on being pairwise distinct.

A set S of n distinct tokens has probability :math:`\prod_{i\in S} q(i) / e_n(q)`, each of its
n! orders equally likely, so :math:`Q(H) = e_n(q|_H) / e_n(q)` (T12) — the identity Hu et al.
state for sequential sampling, where it is false (T12b; see
:mod:`mdsd_ot.drafts.without`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from ._base import _EPS, Number, QLaw, as_rng, one
from ._sets import (
    SetWeights,
    combinations,
    product_tuples,
)
from .sampling import ConditionalPoissonTable

__all__ = ["ConditionalPoisson", "elementary_symmetric", "TINY_EN"]

#: Below this float value of :math:`e_n(q)` (near the end of the normal range, 2.2e-308, with
#: room for the products of n masses) the float routes of :class:`ConditionalPoisson` form
#: their weights and Q exactly from the floats and round once.
TINY_EN: float = 1e-290


def elementary_symmetric(values: Sequence[Number], m: int, one: Number = 1.0) -> list[Number]:
    r""":math:`e_0, \dots, e_m` of ``values`` by :math:`e_k(H \cup \{x\}) = e_k(H) + x\,e_{k-1}(H)`.

    Sums of non-negative terms (no cancellation, unlike Newton's identities).

    Examples
    --------
    >>> elementary_symmetric([1, 2, 3], 3, 1)
    [1, 6, 11, 6]
    """
    e = [one] + [one - one] * m
    for x in values:
        for k in range(m, 0, -1):
            e[k] = e[k] + x * e[k - 1]
    return e


class ConditionalPoisson(QLaw):
    r"""n i.i.d. draws from q conditioned on being pairwise distinct.

    A set S of n distinct tokens has probability :math:`\prod_{i\in S} q(i) / e_n(q)`, each of its
    n! orders equally likely; :math:`Q(H) = e_n(q|_H) / e_n(q)`.  q-convex (T5, Hu et al. Thm 4).

    Examples
    --------
    >>> d = ConditionalPoisson(["1/2", "3/10", "1/5"], 2)
    >>> d.Q([0, 1])
    Fraction(15, 31)
    >>> d.e(2)  # e_2(q) = 1/2*3/10 + 1/2*1/5 + 3/10*1/5
    Fraction(31, 100)
    """

    scheme = "conditional-poisson"
    kernel = "conditional-poisson"
    q_convex = True
    distinct = True
    summary = "n i.i.d. draws from q conditioned on being distinct (not sequential)"

    def e(self, m: int, H=None, exact: bool | None = None) -> Number:
        r"""The elementary symmetric polynomial :math:`e_m(q|_H)` (H = Σ by default)."""
        ex = self.rational if exact is None else exact
        qv = self.qvals(ex)
        mask = None if H is None else self._mask(H)
        vals = [qv[i] for i in range(self.V) if mask is None or mask[i]]
        return elementary_symmetric(vals, m, one(ex))[m]

    def _mask(self, H):
        from ._base import as_mask

        return as_mask(H, self.V)

    def _tiny(self) -> bool:
        """Whether :math:`e_n(q)` in floats falls below :data:`TINY_EN` (it may underflow, and
        products of n masses with it): float weights then come from the exact ratio."""
        return not self.e(self.n, None, False) > TINY_EN

    def _Q(self, mask, exact):
        if not exact and self._tiny():  # e_n(q) underflows: the floats' exact ratio
            ratio = self.e(self.n, mask, True) / self.e(self.n, None, True)
            return float(ratio)
        return self.e(self.n, mask, exact) / self.e(self.n, None, exact)

    def _items(self, exact):
        if not exact and self._tiny():  # the exact weights of the floats, rounded once
            for t, w in self._items(True):
                yield t, float(w)
            return
        qv = self.qvals(exact)
        en = self.e(self.n, None, exact)
        nf = math.factorial(self.n)
        for t in itertools.permutations(self.support().tolist(), self.n):
            yield t, math.prod((qv[i] for i in t), start=one(exact)) / (en * nf)

    def support_size_bound(self):
        return math.perm(self.support_count(), self.n)

    def _float_lossy(self, what: str) -> bool:
        """Fewer than n tokens positive as floats: the sampler (on the floats) would draw sets
        of the rest only; the float Q and joint law are formed otherwise and stay right."""
        return what == "sample" and self.rational and int(np.count_nonzero(self.q > 0)) < self.n

    def _sample(self, rng, size):
        """``size`` tuples: the set by the suffix-e_m chain (exact), then a uniform order."""
        g = as_rng(rng)
        sets = ConditionalPoissonTable(self.q, self.n).draw_sets(g, int(size))
        perm = np.argsort(g.random((int(size), self.n)), axis=1)
        return np.take_along_axis(sets, perm, axis=1)

    # -- set and tuple weights ---------------------------------------------------------------
    def set_count_bound(self):
        return math.comb(self.support_count(), self.n)

    def _set_weight_terms(self, exact: bool) -> int:
        """Terms of :meth:`set_weight_table`: C(m, n) sets × n factors."""
        return self.set_count_bound() * self.n

    def set_weight_table(self, exact=None):
        r"""Closed form :math:`w_S = \prod_{i \in S} q(i) / e_n(q)` for |S| = n."""
        ex = self.rational if exact is None else exact
        self._guard_set_table(exact=ex)
        sup, n = self.support(), self.n
        tiny = not ex and self._tiny()  # formed exactly, rounded once at the end
        q = np.array(list(self.qvals(ex or tiny)), dtype=object if ex or tiny else np.float64)
        mem = sup[combinations(len(sup), n)]
        w = np.full(len(mem), one(ex or tiny), dtype=q.dtype)
        for j in range(n):
            w = w * q[mem[:, j]]
        w = w / self.e(n, None, ex or tiny)
        if tiny:
            w = w.astype(np.float64)
        err = (2 * n + 2 * len(sup) + 2) * _EPS + (n + 1) * (self.V + 1) * _EPS
        return SetWeights.from_blocks([(mem, w)], n, ex, self.V, err)

    def tuple_weights(self, *, with_error=False):
        r"""Vectorised :math:`\prod_j q(\bar i_j) / (n!\, e_n(q))` over ordered distinct tuples."""
        n, sup = self.n, self.support()
        what = f"the draft tuples of {self!r}"
        if self._tiny():  # products of n masses may underflow: formed exactly, rounded once
            qx = np.array(list(self.qvals(True)), dtype=object)
            t, w = product_tuples(sup, [qx] * n, distinct=True, what=what)
            w = (w / (self.e(n, None, True) * math.factorial(n))).astype(np.float64)
        else:
            t, w = product_tuples(sup, [self.q] * n, distinct=True, what=what)
            w /= self.e(n, None, False) * math.factorial(n)
        err = (3 * n + 2 * len(sup) + 2) * _EPS + (n + 1) * (self.V + 1) * _EPS
        return (t, w, err) if with_error else (t, w)
