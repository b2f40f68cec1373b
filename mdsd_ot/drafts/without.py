r"""Sequential sampling without replacement (docs/reference.md, "Without replacement").

Draw j uses q with the earlier draws removed and renormalised.  This law is *not* the
conditional-Poisson law (T12b).  Its Q has no product form; the law owns three independent
evaluations of it:

- :meth:`WithoutReplacement.Q` — the recursion on the first draw, memoised over drawn sets,
  its last level in closed form (floats: numpy blocks of tuples);
- :meth:`WithoutReplacement.Q_inclusion_exclusion` — the closed form of the reference,
  :math:`Q(H) = 1 - (1 - q(H)) \sum_{m<n} I_m(H)`,
  :math:`I_m(H) = \sum_{S \subseteq H, |S| = m} \sum_{U \subseteq S} (-1)^{m-|U|} / (1 - q(U))`;
- the sum of :meth:`sequence_probabilities` over the tuples inside Hⁿ (the set weights).

The fast solver evaluates Q on every prefix of the p/q order with its own kernels
(:mod:`mdsd_ot.fast`); for n = 2 the closed form :meth:`Q_two` is
:math:`Q(H) = q(H) - (1 - q(H)) \sum_{i \in H} q(i)/(1 - q(i))`.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from .. import _validate as V_
from ._base import _EPS, JOINT_MAX_ENTRIES, QLaw, as_rng, one, zero
from ._sets import (
    SetWeights,
    combinations,
    complement_sums,
    product_tuples,
)
from .sampling import InverseCDF

__all__ = ["WithoutReplacement", "sequence_probabilities"]


def sequence_probabilities(q: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Sequential probabilities of ordered distinct tuples, with error bounds.

    .. math::

       p(\bar i) = \prod_{j} \frac{q(\bar i_j)}{r_{j}}, \qquad
       r_j = \sum_{x \notin \{\bar i_1, \dots, \bar i_{j-1}\}} q(x)
           = 1 - \sum_{l<j} q(\bar i_l).

    In floats :math:`r_j` is the complement sum (:func:`~mdsd_ot.drafts._sets.complement_sums`,
    no cancellation), so each probability is accurate to relative
    :math:`(2n + 2n(V + n))\epsilon`; the second value returned is that bound times the
    probability.  Works on object arrays of Fractions too (exact; the error bound is then 0).

    Examples
    --------
    >>> w, err = sequence_probabilities(np.array([0.5, 0.3, 0.2]), np.array([[0, 1]]))
    >>> round(float(w[0]), 12), bool(err[0] < 1e-14)
    (0.3, True)
    """
    exact = q.dtype == object
    K, n = t.shape
    if exact:
        w = np.full(K, Fraction(1), dtype=object)
        rem = np.full(K, Fraction(1), dtype=object)
        for j in range(n):
            qj = q[t[:, j]]
            w = w * qj / rem
            rem = rem - qj
        return w, np.zeros(K)
    w = np.ones(K)
    for j in range(n):
        qj = q[t[:, j]]
        rem = complement_sums(q, t[:, :j]) if j else np.full(K, float(np.sum(q)))
        w = w * (qj / np.maximum(rem, qj))  # the ratio first: q(x) w can be subnormal
    V = len(q)
    return w, w * (2 * n + 2 * n * (V + n)) * _EPS


#: From this many drafts on, the set weights come from the subset dynamic program (2^n·n
#: terms per set) rather than the n! orders (n!·n).
SUBSET_DP_N: int = 6


class WithoutReplacement(QLaw):
    r"""Sequential sampling without replacement: draw j from q with earlier draws removed.

    :math:`p_{draft}(\bar i) = \prod_j q(\bar i_j) / (1 - \sum_{l<j} q(\bar i_l))` on tuples of
    distinct tokens.  Needs at least n tokens with q > 0.  This is *not* the conditional-Poisson
    law (T12).  q-convex for every n (T5, proved in ``proofs/T05_q_convexity.md``).

    Examples
    --------
    >>> d = WithoutReplacement(["1/2", "3/10", "1/5"], 2)
    >>> d.Q([0, 1])  # the T12 counterexample: 0.514286..., not e_2(q|H)/e_2(q) = 0.483871...
    Fraction(18, 35)
    >>> d.Q_inclusion_exclusion([0, 1]) == d.Q_two([0, 1]) == d.Q([0, 1])
    True
    """

    scheme = "without"
    kernel = "without"
    q_convex = True
    distinct = True
    summary = "sequential sampling without replacement from q (not conditional Poisson)"

    def _Q(self, mask, exact):
        r"""The recursion on the first draw with its last level in closed form.

        :math:`f(D, k)` = Pr[the next k draws lie in H | drawn set D] (only D matters);
        :math:`f(D, 1) = q(H \setminus D) / q(\Sigma \setminus D)`, so Q sums over the ordered
        (n−1)-tuples of distinct tokens of H: O(|H|^{n−1}) terms (n = 3: O(|H|²)).

        In Fractions (exact; rational input) the drawn sets of size < n − 1 are memoised, one
        Fraction step each: about |H|^{n−1}/(n−2)! steps, so n = 3 at |H| = 5,000 is some 10⁷
        Fraction operations (minutes).  In floats the terms are numpy blocks of tuples
        (:func:`sequence_probabilities`, the complements by :func:`complement_sums`, no
        cancellation), relative error about :math:`(2n + 2(n+1)(V + n))\epsilon`; n = 3 at
        V = 5,000 takes seconds.
        """
        qv = self.qvals(exact)
        H = [int(i) for i in np.flatnonzero(mask) if qv[i] > 0]
        V_.check_size(
            self._Q_work(len(H), exact),
            JOINT_MAX_ENTRIES,
            f"Q(H) of {self!r} with |H| = {len(H)}",
            "Q of the sequential law sums over the ordered (n-1)-tuples of H; use a smaller H "
            "(or Q_two when n = 2), or the fast solver (mdsd_ot.alpha_star), which never "
            "evaluates Q",
        )
        if not exact:
            return self._Q_floats(np.asarray(qv, dtype=np.float64), np.array(H, dtype=np.int64))
        o = one(True)
        z = o - o
        total = sum(qv, z)  # Σ q (1 for a law built from rationals)
        qH = sum((qv[x] for x in H), z)
        memo: dict[frozenset, object] = {}

        def f(D: frozenset, qD, k: int):
            left = total - qD  # exact: the mass not yet drawn
            if k == 1:
                return (qH - qD) / left
            if D in memo:
                return memo[D]
            tot = z
            for x in H:
                if x not in D:
                    tot += qv[x] / left * f(D | {x}, qD + qv[x], k - 1)
            memo[D] = tot
            return tot

        return f(frozenset(), z, self.n)

    def _Q_work(self, m: int, exact: bool) -> int:
        """Terms of one Q(H) with m tokens of H in the support: the ordered (n−1)-tuples in
        floats; in Fractions the memoised drawn sets of size < n − 1, m steps each."""
        if self.n <= 1 or m < self.n:
            return m
        if exact:
            return sum(math.comb(m, k) for k in range(self.n - 1)) * m
        return math.perm(m, self.n - 1)

    def _Q_floats(self, q: np.ndarray, H: np.ndarray) -> float:
        """Q(H) in floats: the sum over blocks of ordered (n−1)-tuples of distinct tokens of H."""
        n, m = self.n, len(H)
        if m < n:
            return 0.0
        qin = np.zeros_like(q)
        qin[H] = q[H]  # q restricted to H: its complement sums are q(H \ D)
        if n == 1:
            return float(np.sum(qin) / np.sum(q))
        perms = list(itertools.permutations(H.tolist(), n - 2))
        prefixes = np.array(perms, dtype=np.int64).reshape(len(perms), n - 2)
        block = max(1, (1 << 20) // m)
        total = 0.0
        for a in range(0, len(prefixes), block):
            pre = prefixes[a : a + block]
            t = np.concatenate([np.repeat(pre, m, axis=0), np.tile(H, len(pre))[:, None]], axis=1)
            if n > 2:
                t = t[np.all(t[:, :-1] != t[:, -1:], axis=1)]
            w, _ = sequence_probabilities(q, t)
            num = complement_sums(qin, t)
            den = complement_sums(q, t)
            last = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
            total += float(np.sum(w * np.minimum(last, 1.0)))
        return total

    def Q_two(self, H, exact: bool | None = None):
        r"""The n = 2 closed form :math:`q(H) - (1 - q(H)) \sum_{i\in H} q(i)/(1 - q(i))`.

        O(|H|) in Fractions (:math:`1 - q(i)` as Σq − q(i), exact); one numpy pass in floats
        (:math:`1 - q(i)` as the complement sum, no cancellation)."""
        if self.n != 2:
            raise ValueError(f"n: Q_two is the n = 2 closed form, this law has n={self.n}")
        ex = self.rational if exact is None else exact
        qv = self.qvals(ex)
        idx = [int(i) for i in np.flatnonzero(self._mask(H))]
        if not ex:
            q = np.asarray(qv, dtype=np.float64)
            at = np.array(idx, dtype=np.int64)
            qH = float(np.sum(q[at]))
            rest = complement_sums(q, at[:, None])
            return qH - (1 - qH) * float(np.sum(q[at] / rest))
        qH = sum((qv[i] for i in idx), zero(ex))
        total = sum(qv, zero(ex))
        rest = [total - qv[i] for i in idx]
        return qH - (1 - qH) * sum((qv[i] / r for i, r in zip(idx, rest, strict=True)), zero(ex))

    def Q_inclusion_exclusion(self, H, exact: bool | None = None):
        r"""The closed form :math:`1 - (1 - q(H)) \sum_{m=0}^{n-1} I_m(H)` (exponential clocks).

        :math:`I_m(H) = \sum_{S\subseteq H,|S|=m} \sum_{U\subseteq S} (-1)^{m-|U|}/(1-q(U))`;
        O(3^{|H|}) work, for checks on small sets.
        """
        ex = self.rational if exact is None else exact
        qv = self.qvals(ex)
        idx = [int(i) for i in np.flatnonzero(self._mask(H)) if qv[i] > 0]
        o = one(ex)
        qH = sum((qv[i] for i in idx), zero(ex))
        total = zero(ex)
        for m in range(min(self.n, len(idx) + 1)):
            for S in itertools.combinations(idx, m):
                for u in range(m + 1):
                    for U in itertools.combinations(S, u):
                        total += (-1) ** (m - u) * o / (o - sum((qv[i] for i in U), zero(ex)))
        return o - (o - qH) * total

    def _mask(self, H):
        from ._base import as_mask

        return as_mask(H, self.V)

    def _items(self, exact):
        qv = np.array(list(self.qvals(exact)), dtype=object if exact else np.float64)
        perms = list(itertools.permutations(self.support().tolist(), self.n))
        w, _ = sequence_probabilities(qv, np.array(perms, dtype=np.int64).reshape(-1, self.n))
        yield from zip(perms, w.tolist(), strict=True)

    def support_size_bound(self):
        return math.perm(self.support_count(), self.n)

    def _sample(self, rng, size):
        """``size`` sequential tuples: each draw is an inverse-CDF draw from q with the earlier
        draws removed (exact law; O(size·n²) arithmetic and O(size·n·log V) searches)."""
        g = as_rng(rng)
        table = InverseCDF(self.q)
        size = int(size)
        out = np.empty((size, self.n), dtype=np.int64)
        for j in range(self.n):
            out[:, j] = table.draw_excluding(g.random(size), out[:, :j])
        return out

    def q_eval_work(self) -> int:
        """An upper bound on the steps of one Q(H): every drawn set of size < n inside H, times
        2V (the recursion's cost before its last level was closed; kept as the guards' unit)."""
        m = self.support_count()
        return sum(math.comb(m, k) for k in range(self.n)) * 2 * self.V

    # -- set and tuple weights ---------------------------------------------------------------
    def set_count_bound(self):
        return math.comb(self.support_count(), self.n)

    def _set_weight_terms(self, exact: bool) -> int:
        """Terms summed by :meth:`set_weight_table`: C(m, n) sets × n factors × the n! orders,
        or the 2^n subsets of the dynamic program from n = 6 on (:data:`SUBSET_DP_N`)."""
        n = self.n
        per_set = 2**n if n >= SUBSET_DP_N else math.factorial(n)
        return self.set_count_bound() * per_set * n

    def _float_lossy(self, what: str) -> bool:
        """Fewer than n tokens positive as floats (the rest below the float range): every
        float route would condition on masses that are 0.0."""
        return self.rational and int(np.count_nonzero(self.q > 0)) < self.n

    def set_weight_table(self, exact=None):
        r""":math:`w_S` = the sum over the n! orders of S of the sequential probability."""
        ex = self.rational if exact is None else exact
        if not ex:
            self._check_float_route("set_weight_table")
        self._guard_set_table(exact=ex)
        sup, n = self.support(), self.n
        q = np.array(list(self.qvals(ex)), dtype=object if ex else np.float64)
        mem = sup[combinations(len(sup), n)]
        if n >= SUBSET_DP_N:
            return self._set_weights_dp(q, mem, ex)
        w = np.zeros(len(mem), dtype=q.dtype)
        e = np.zeros(len(mem))
        for perm in itertools.permutations(range(n)):
            term, te = sequence_probabilities(q, mem[:, list(perm)])
            w = w + term
            e = e + te
        err = float(e.sum()) + math.factorial(n) * _EPS + (n + 1) * (self.V + 1) * _EPS
        return SetWeights.from_blocks([(mem, w)], n, ex, self.V, err)

    def _set_weights_dp(self, q: np.ndarray, mem: np.ndarray, exact: bool):
        r""":math:`w_S` by dynamic programming over the subsets of S drawn first.

        With the members of S numbered 0..n−1 and :math:`f(A)` the probability that the first
        |A| draws are the tokens of A (in any order),

        .. math:: f(\emptyset) = 1, \qquad f(A) = \sum_{j \in A} f(A \setminus j)\,
                  \frac{q(s_j)}{r(A \setminus j)}, \qquad w_S = f(S),

        :math:`r(B)` the mass outside B (:func:`complement_sums`, no cancellation): 2^n·n
        terms per set instead of n!·n.  Every term is positive, so in floats each f(A) is
        accurate to relative :math:`|A|\,(3 + n + 2(V + n))\epsilon`.
        """
        n, M = self.n, len(mem)
        f = {0: np.full(M, one(exact), dtype=q.dtype)}  # the layer |A| = k - 1, then k
        total = sum(self.qvals(exact), zero(exact))
        for k in range(1, n + 1):  # layer by layer: two layers of C(n, k) vectors in memory
            rest = {}  # r(B) for the previous layer's subsets B
            for B in f:
                cols = [i for i in range(n) if B >> i & 1]
                if exact:
                    rest[B] = total - sum((q[mem[:, i]] for i in cols), zero(True))
                else:
                    rest[B] = complement_sums(q, mem[:, cols]) if cols else np.full(M, float(total))
            layer = {}
            for A in (A for A in range(1 << n) if A.bit_count() == k):
                acc = np.zeros(M, dtype=q.dtype)
                for j in range(n):
                    if not A >> j & 1:
                        continue
                    B = A & ~(1 << j)
                    qj = q[mem[:, j]]
                    step = qj / rest[B] if exact else qj / np.maximum(rest[B], qj)
                    acc = acc + f[B] * step
                layer[A] = acc
            f = layer
        w = f[(1 << n) - 1]
        err = 0.0
        if not exact:
            err = n * (3 + n + 2 * (self.V + n)) * _EPS * float(np.sum(w))
            err += (n + 1) * (self.V + 1) * _EPS  # floats vs the exact rationals they denote
        return SetWeights.from_blocks([(mem, w)], n, exact, self.V, err)

    def tuple_weights(self, *, with_error=False):
        """Vectorised sequential probabilities of the ordered distinct support tuples."""
        n, sup = self.n, self.support()
        what = f"the draft tuples of {self!r}"
        ones = np.ones(self.V)  # every distinct support tuple: a product of q may underflow
        t, _ = product_tuples(sup, [ones] * n, distinct=True, what=what)  # where its ratios don't
        w, e = sequence_probabilities(self.q, t)
        keep = w > 0
        tiny = float(np.finfo(np.float64).tiny)  # a tuple computed as 0 weighs less than this
        err = float(e[keep].sum()) + (n + 1) * (self.V + 1) * _EPS + int((~keep).sum()) * tiny
        return (t[keep], w[keep], err) if with_error else (t[keep], w[keep])
