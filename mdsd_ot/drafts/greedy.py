r"""The greedy construction (Hu et al. §5.1, T9) and SpecHub (n = 2), which has the same Q.

Greedy: the first n − 1 drafts are :math:`T = \mathrm{Top}_{n-1}(q)` (tie rule: larger q first,
then smaller index), the last draft :math:`\hat x \sim q' = q^{\neg T}`, so
:math:`Q(H) = 1[T \subseteq H]\, q'(H \setminus T)` and (T9)
:math:`\alpha^* = P(T) + \sum_{x \notin T} \min(p(x), q'(x))`.  Neither law is q-convex in
general (the fast solver uses the closed form, not prefixes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ._base import _EPS, Number, QLaw, as_rng, zero
from ._sets import SetWeights, sorted_sets
from .sampling import InverseCDF

__all__ = ["Greedy", "SpecHub", "greedy_top"]


def greedy_top(q: np.ndarray, k: int) -> tuple[int, ...]:
    """Top-k tokens of ``q`` with the fixed tie rule: larger q first, then smaller index.

    Examples
    --------
    >>> greedy_top(np.array([0.2, 0.4, 0.4]), 2)
    (1, 2)

    Exact numbers (a sequence of Fractions) are compared exactly, not by their floats:

    >>> from fractions import Fraction as Fr
    >>> greedy_top([Fr(1, 2) - Fr(1, 10**400), Fr(1, 2), Fr(1, 10**400)], 1)
    (1,)
    """
    if not isinstance(q, np.ndarray) and any(isinstance(v, Fraction) for v in q):
        return tuple(sorted(range(len(q)), key=lambda i: (-q[i], i))[:k])
    order = np.lexsort((np.arange(len(q)), -np.asarray(q, dtype=np.float64)))
    return tuple(int(i) for i in order[:k])


def _mass_outside(law: QLaw, excluded: Sequence[int], exact: bool) -> Number:
    """Σ q over the tokens not in ``excluded``, summed directly (never 1 − q(excluded))."""
    if not exact:
        keep = np.ones(law.V, dtype=bool)
        keep[list(excluded)] = False
        return float(np.sum(law.q[keep]))
    ex = set(excluded)
    return sum((v for x, v in enumerate(law.qvals(True)) if x not in ex), zero(True))


class Greedy(QLaw):
    r"""Hu et al. §5.1: drafts 1..n-1 are T = Top_{n-1}(q), the last draft x̂ ~ q' = q^{¬T}.

    Tie rule for T: larger q first, then smaller index.  The tuple is (T in that order, x̂).
    :math:`Q(H) = 1[T \subseteq H]\, q'(H \setminus T)`.  Needs positive mass outside T (however
    small: the mass outside T is summed directly, never computed as 1 − q(T)).

    Examples
    --------
    >>> d = Greedy(["1/2", "3/10", "1/5"], 2)
    >>> d.Q([0, 2])
    Fraction(2, 5)
    >>> d.alpha_closed_form(["1/5", "1/5", "3/5"])  # P(T) + sum min(p, q') = 1/5 + 1/5 + 2/5
    Fraction(4, 5)
    """

    scheme = "greedy"
    kernel = "greedy"
    distinct = True
    random_full_support = True
    summary = "the top n-1 tokens of q, then one draw from q without them (Hu et al. §5.1)"

    def _check_support(self) -> None:
        """The last draft needs positive mass outside T (however small)."""
        self.T = greedy_top(self.qvals(self.rational), self.n - 1)  # exact order if rational
        if self.n - 1 >= self.V or not (self._rest(self.rational) > 0):
            raise ValueError(
                f"q: the greedy scheme with n={self.n} needs positive mass outside its top "
                f"{self.n - 1} token(s); use a smaller n or a q with more support"
            )

    def _rest(self, exact: bool) -> Number:
        return _mass_outside(self, self.T, exact)

    def _float_lossy(self, what: str) -> bool:
        """The mass outside T is positive but 0.0 as floats: q' has no float copy."""
        return self.rational and float(_mass_outside(self, self.T, False)) <= 0.0

    def q_prime(self, exact: bool | None = None) -> Sequence[Number] | np.ndarray:
        """q' = q with T removed and renormalised (the law of the last draft)."""
        ex = self.rational if exact is None else exact
        rest = self._rest(ex)
        if not ex:
            out = self.q.copy()
            out[list(self.T)] = 0.0
            return out / rest
        qv = self.qvals(True)
        T = set(self.T)
        return [zero(True) if i in T else qv[i] / rest for i in range(self.V)]

    def alpha_closed_form(self, p: Any, exact: bool | None = None) -> Number:
        r"""T9: :math:`\alpha^* = P(T) + \sum_{x \notin T} \min(p(x), q'(x))`."""
        from ._base import Vector

        pv = Vector(p, "p")
        ex = (self.rational and pv.rational) if exact is None else exact
        pp, qp = pv.values(ex), self.q_prime(ex)
        T = set(self.T)
        return sum((pp[i] for i in T), zero(ex)) + sum(
            (min(pp[x], qp[x]) for x in range(self.V) if x not in T), zero(ex)
        )

    def _Q(self, mask, exact):
        if not all(mask[t] for t in self.T):
            return zero(exact)
        qp = self.q_prime(exact)
        return sum((qp[i] for i in np.flatnonzero(mask)), zero(exact))

    def _items(self, exact):
        qp = self.q_prime(exact)
        for x in range(self.V):
            if qp[x] > 0:
                yield (*self.T, x), qp[x]

    def support_size_bound(self):
        return self.V

    def support_size_bits(self) -> float:
        return math.log2(max(self.V, 2))

    def set_count_bound(self):
        return self.V

    def set_weight_table(self, exact=None):
        r""":math:`w_{T \cup \{x\}} = q'(x)`."""
        ex = self.rational if exact is None else exact
        if not ex:
            self._check_float_route("set_weight_table")
        qp = self.q_prime(ex)
        agg = {tuple(sorted({*self.T, x})): qp[x] for x in range(self.V) if qp[x] > 0}
        mem, w = sorted_sets(agg, self.n)
        if ex:
            return SetWeights.build(mem, w, True, self.V)
        err = (self.V + 4) * _EPS + (self.n + 1) * (self.V + 1) * _EPS
        return SetWeights.build(mem, np.array(w, dtype=np.float64), False, self.V, err)

    def _sample(self, rng, size):
        last = InverseCDF(np.asarray(self.q_prime(False))).draw(as_rng(rng).random(int(size)))
        out = np.empty((int(size), self.n), dtype=np.int64)
        out[:, : self.n - 1] = self.T
        out[:, -1] = last
        return out


class SpecHub(QLaw):
    r"""SpecHub (n = 2): ī_1 ~ q; if ī_1 = a = Top_1(q) then ī_2 ~ q^{¬a}, else ī_2 = a.

    :math:`Q(H) = 1[a \in H]\, q(H \setminus \{a\}) / (1 - q(a))` (the same Q as greedy, n = 2,
    so the same α*; the joint laws and the verifiers differ).

    Examples
    --------
    >>> SpecHub(["1/2", "3/10", "1/5"]).Q([0, 1])
    Fraction(3, 5)
    """

    scheme = "spechub"
    kernel = "greedy"
    distinct = True
    fixed_n = 2
    random_full_support = True
    summary = "SpecHub (n = 2): x1 ~ q; x2 ~ q without the top token if x1 is it, else the top"

    def __init__(self, q: Any, n: int = 2):
        super().__init__(q, n)

    def _check_support(self) -> None:
        """The second draft needs positive mass outside the top token a."""
        self.a = greedy_top(self.qvals(self.rational), 1)[0]  # exact order if rational
        if not (self._rest(self.rational) > 0):
            raise ValueError(
                "q: SpecHub needs positive mass outside its top token; q is a point mass: use "
                "a q with more support"
            )

    def _rest(self, exact: bool) -> Number:
        return _mass_outside(self, [self.a], exact)

    def _float_lossy(self, what: str) -> bool:
        """The mass outside a is positive but 0.0 as floats: the second draft has no float law."""
        return self.rational and float(_mass_outside(self, [self.a], False)) <= 0.0

    def _Q(self, mask, exact):
        if not mask[self.a]:
            return zero(exact)
        qv = self.qvals(exact)
        inside = sum((qv[i] for i in np.flatnonzero(mask) if i != self.a), zero(exact))
        return inside / self._rest(exact)  # not 1 - q(a)

    def _items(self, exact):
        qv, a = self.qvals(exact), self.a
        rest = self._rest(exact)
        for x in range(self.V):
            if x != a and qv[x] > 0:
                yield (a, x), qv[a] * qv[x] / rest  # rest, not 1 - q(a): no cancellation
                yield (x, a), qv[x]

    def support_size_bound(self):
        return 2 * self.V

    def support_size_bits(self) -> float:
        return math.log2(2 * self.V)

    def set_count_bound(self):
        return self.V

    def set_weight_table(self, exact=None):
        r""":math:`w_{\{a, x\}} = q(x) / (1 - q(a))`, with 1 − q(a) the sum of the others."""
        ex = self.rational if exact is None else exact
        if not ex:
            self._check_float_route("set_weight_table")
        qv, a = self.qvals(ex), self.a
        rest = self._rest(ex)
        agg = {tuple(sorted((a, x))): qv[x] / rest for x in range(self.V) if x != a and qv[x] > 0}
        mem, w = sorted_sets(agg, 2)
        if ex:
            return SetWeights.build(mem, w, True, self.V)
        err = (self.V + 4) * _EPS + 3 * (self.V + 1) * _EPS
        return SetWeights.build(mem, np.array(w, dtype=np.float64), False, self.V, err)

    def _sample(self, rng, size):
        g = as_rng(rng)
        size = int(size)
        first = InverseCDF(self.q).draw(g.random(size))
        second_if_a = InverseCDF(self.q).draw_excluding(
            g.random(size), np.full((size, 1), self.a, dtype=np.int64)
        )
        second = np.where(first == self.a, second_if_a, self.a)
        return np.stack([first, second], axis=1).astype(np.int64)
