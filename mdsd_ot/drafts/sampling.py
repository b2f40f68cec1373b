r"""Exact samplers that scale: inverse CDF on cumulative sums, O(m·n·log V) for m tuples.

Drawing m draft tuples must not cost O(m·V) (a Gumbel key for every token of every tuple wants
45 GiB for 40,000 tuples at V = 152,064).  Every law samples through the two tables here:

- :class:`InverseCDF` — tokens sorted by ascending mass, cumulative sums C (small masses are
  summed first, so each token's interval is accurate to relative rounding), and a draw is one
  ``searchsorted``.  :meth:`InverseCDF.draw_excluding` draws from q with a few tokens removed
  (sequential sampling without replacement) by walking the gaps between the removed tokens'
  intervals: the remaining mass is the sum of the gaps (no cancellation in 1 − q(removed)), so
  the law of the draw is q restricted and renormalised, to rounding.
- :class:`ConditionalPoissonTable` — the suffix elementary symmetric polynomials
  :math:`E[k, m] = e_m(w_k, \dots, w_{V-1})` (tokens sorted by descending mass w) built by one
  suffix sum per level; the set is drawn as a chain of "next included token" jumps,
  :math:`\Pr[\text{next} \ge j \mid k, m] = E[j, m] / E[k, m]`, each one ``searchsorted``.

Zero-mass tokens are never drawn.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "InverseCDF",
    "ConditionalPoissonTable",
    "inverse_cdf_table",
    "scale_exponent",
    "SCALE_FROM",
]


class InverseCDF:
    """Inverse-CDF sampler of a fixed non-negative vector ``q`` (normalised internally).

    Examples
    --------
    >>> t = InverseCDF(np.array([0.5, 0.0, 0.5]))
    >>> t.draw(np.array([0.1, 0.9])).tolist()
    [0, 2]
    >>> t.draw_excluding(np.array([0.3]), np.array([[2]])).tolist()
    [0]
    """

    def __init__(self, q: np.ndarray):
        q = np.asarray(q, dtype=np.float64)
        self.V = len(q)
        self.order = np.argsort(q, kind="stable")  # ascending mass
        self.rank = np.empty(self.V, dtype=np.int64)
        self.rank[self.order] = np.arange(self.V)
        self.w = q[self.order]  # masses in ascending order
        self.C = np.concatenate([[0.0], np.cumsum(self.w)])
        self.first = int(np.searchsorted(q[self.order], 0.0, side="right"))  # first positive

    def draw(self, u: np.ndarray) -> np.ndarray:
        """Tokens for uniforms ``u`` in [0, 1) (any shape)."""
        x = np.asarray(u, dtype=np.float64) * self.C[-1]
        pos = np.searchsorted(self.C, x, side="right") - 1
        pos = np.clip(pos, self.first, self.V - 1)
        return self.order[pos]

    def draw_excluding(self, u: np.ndarray, drawn: np.ndarray) -> np.ndarray:
        """One token per row, from q without the row's ``drawn`` tokens (renormalised).

        Parameters
        ----------
        u : (K,) float array
            Uniforms in [0, 1).
        drawn : (K, j) int array
            Distinct tokens already drawn in each row (j may be 0).
        """
        u = np.asarray(u, dtype=np.float64)
        K = len(u)
        r = np.sort(self.rank[np.asarray(drawn, dtype=np.int64).reshape(K, -1)], axis=1)
        lo = np.concatenate([np.zeros((K, 1), np.int64), r + 1], axis=1)  # gap starts
        hi = np.concatenate([r, np.full((K, 1), self.V, np.int64)], axis=1)  # gap ends (excl.)
        L = np.maximum(self.C[hi] - self.C[lo], 0.0)  # gap masses
        cum = np.cumsum(L, axis=1)
        # the undrawn mass vanished in the differences of C (tiny q), or is so small that
        # u * mass rounds on the subnormal grid (a few multiples of 5e-324: the end tokens got
        # half weight): drawn by the masses themselves, scaled, below
        lost = cum[:, -1] < TINY_GAP
        if lost.any():
            L[lost, -1] = 1.0  # a placeholder gap; these rows are drawn directly below
            cum = np.cumsum(L, axis=1)
        x = u * cum[:, -1]
        g = np.minimum((cum <= x[:, None]).sum(axis=1), L.shape[1] - 1)
        rows = np.arange(K)
        for k in np.flatnonzero(L[rows, g] <= 0):  # rounding pointed at an empty gap (rare):
            full = np.flatnonzero(L[k] > 0)  # the next non-empty one, else the last before it
            after = full[full >= g[k]]
            g[k] = after[0] if after.size else full[-1]
        before = cum[rows, g] - L[rows, g]
        target = self.C[lo[rows, g]] + (x - before)
        pos = np.searchsorted(self.C, target, side="right") - 1
        pos = np.clip(pos, np.maximum(lo[rows, g], self.first), hi[rows, g] - 1)
        for k in np.flatnonzero(lost):  # rare: masses below the rounding of the cumulative sum
            pos[k] = self._draw_tiny(u[k], r[k])
        return self.order[pos]

    def _draw_tiny(self, u: float, taken: np.ndarray) -> int:
        """One position by the masses themselves (scaled by their maximum), ``taken`` excluded."""
        free = np.setdiff1d(np.arange(self.first, self.V), taken)
        w = self.w[free] / self.w[free].max()
        c = np.cumsum(w)
        return int(free[min(int(np.searchsorted(c, u * c[-1], side="right")), len(free) - 1)])


#: :meth:`InverseCDF.draw_excluding` draws a row whose undrawn mass is below this by the masses
#: themselves, scaled by their maximum: u times such a mass keeps fewer than 53 bits (2^-960
#: leaves 62 bits of normal range below it).
TINY_GAP: float = 2.0**-960


def inverse_cdf_table(q: np.ndarray) -> InverseCDF:
    """The :class:`InverseCDF` of ``q``."""
    return InverseCDF(q)


#: :func:`scale_exponent` rescales q only when :math:`e_n(q)` is estimated below
#: :math:`2^{-n \cdot \text{SCALE_FROM}}`: other rows keep their bits.
SCALE_FROM: int = 32


def scale_exponent(qs: np.ndarray, n: int) -> int:
    r"""k such that :math:`e_n(2^k q)` is about 1, or 0 when :math:`e_n(q)` is not tiny.

    The conditional-Poisson law (its set sampler, :class:`ConditionalPoissonTable`; the optimal
    verifier's piece-kernel law and design model) uses q only through ratios to
    :math:`e_n(q)`, which are the same for :math:`2^k q` (n-th powers cancel; a power of two
    scales every operation exactly, so rounding is unchanged).
    A draft almost sure of one token with tails of :math:`10^{-150}` has
    :math:`e_4(q) \approx 10^{-450}`: it underflows to 0; the sampler's suffix tables
    then drew the same tail tokens every time, the verifier's law was lost (its plan accepted
    nothing where :math:`\alpha^* = 0.82`) and its model divided by a clamp.  With
    :math:`L = \sum \log_2` of the n largest masses (one term of :math:`e_n`, so
    :math:`L \le \log_2 e_n(q) \le L + \log_2 \binom{m}{n}`, m the positive masses),
    :math:`k = -\operatorname{round}((L + \log_2 \binom{m}{n} / 2) / n)` puts
    :math:`e_n(2^k q)` within a factor :math:`2^{n/2} \binom{m}{n}^{1/2}` of 1.  The other
    :math:`e_m(2^k q)` stay finite unless several tokens are heavy and the rest lie below
    :math:`10^{-300}`; the law is then refused as before (no law, nothing accepted, lossless).
    Returns 0 unless :math:`k \ge` :data:`SCALE_FROM` (ordinary rows, even a draft
    :math:`1 - 10^{-8}` sure of one token, keep their bits), and 0 with fewer than n positive
    masses.

    Examples
    --------
    >>> q = np.full(2001, 1e-200 / 2000)
    >>> q[0] = 1.0
    >>> k = scale_exponent(q, 4)
    >>> k > 300, scale_exponent(np.full(4, 0.25), 4)
    (True, 0)
    """
    pos = qs[qs > 0]
    m = len(pos)
    if m < n or n < 2:
        return 0
    top = np.partition(pos, m - n)[m - n :]
    log_binom = (math.lgamma(m + 1) - math.lgamma(n + 1) - math.lgamma(m - n + 1)) / math.log(2)
    k = -round((float(np.sum(np.log2(top))) + 0.5 * log_binom) / n)
    return int(k) if k >= SCALE_FROM else 0


#: The smallest table entry :class:`ConditionalPoissonTable` keeps in floats (2^-1000, above
#: the subnormal range by 2^22); a smaller one sends the law to logarithmic tables.
TABLE_MIN: float = 2.0**-1000


class ConditionalPoissonTable:
    r"""Sampler of n distinct tokens with :math:`\Pr[S] \propto \prod_{i \in S} q(i)`.

    The tokens by decreasing mass; the suffix tables :math:`E[m, k] = e_m` of the masses from
    position k on pick each next token with probability :math:`w_j E[m-1, j+1] / E[m, k]`.
    Where :math:`e_n(q)` is tiny the tables are formed from :math:`2^k q`
    (:func:`scale_exponent`: the same ratios); where an entry a draw can read would still be
    non-finite or below :data:`TABLE_MIN` (several heavy tokens beside subnormal ones), from
    logarithms (``log``), so no term is lost to underflow.

    Examples
    --------
    >>> t = ConditionalPoissonTable(np.array([0.5, 0.3, 0.2]), 2)
    >>> sorted(t.draw_sets(np.random.default_rng(0), 3)[0].tolist()) in ([0, 1], [0, 2], [1, 2])
    True
    """

    def __init__(self, q: np.ndarray, n: int):
        q = np.asarray(q, dtype=np.float64)
        self.V, self.n = len(q), int(n)
        self.order = np.argsort(-q, kind="stable")  # descending mass
        w = q[self.order]
        if k := scale_exponent(w, self.n):  # e_n(q) tiny: the suffix tables of 2^k q (the
            w = np.ldexp(w, k)  # draws read ratios of them only), which do not underflow
        E = np.zeros((self.n + 1, self.V + 1))
        E[0, :] = 1.0
        with np.errstate(over="ignore", under="ignore"):  # checked next: logarithms then
            for m in range(1, self.n + 1):
                # E[m, k] = sum_{i >= k} w_i E[m-1, i+1]: a suffix sum, accurate from the tail
                E[m, : self.V] = np.cumsum((w * E[m - 1, 1:])[::-1])[::-1]
        #: Whether the tables hold logarithms (:meth:`_log_tables`).
        self.log = not self._tables_ok(E, w)
        self.E = self._log_tables(w) if self.log else E

    def _tables_ok(self, E: np.ndarray, w: np.ndarray) -> bool:
        """Whether every entry a draw can read is finite and at least :data:`TABLE_MIN` where
        the suffix holds m positive masses: a term lost to underflow (or rounded as a
        subnormal) is then below 2^-74 of the entry it belongs to."""
        npos = np.cumsum((w > 0)[::-1])[::-1]  # positive masses at positions >= k
        for m in range(1, self.n + 1):
            need = npos >= m
            row = E[m, : self.V]
            if not (np.all(np.isfinite(row)) and np.all(row[need] >= TABLE_MIN)):
                return False
        return True

    def _log_tables(self, w: np.ndarray) -> np.ndarray:
        r"""The tables as natural logarithms, :math:`\log E[m, k] = \operatorname{logaddexp}
        _{i \ge k} (\log w_i + \log E[m-1, i+1])`: no overflow or underflow whatever the spread
        of q (several heavy tokens beside subnormal ones, where no single power of two keeps
        every :math:`e_m` in range); relative error about :math:`|\log E|` u per entry."""
        with np.errstate(divide="ignore"):
            lw = np.log(w)
        L = np.full((self.n + 1, self.V + 1), -np.inf)
        L[0, :] = 0.0
        for m in range(1, self.n + 1):
            terms = (lw + L[m - 1, 1:])[::-1]
            L[m, : self.V] = np.logaddexp.accumulate(terms)[::-1]
        return L

    def draw_sets(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` sets as an (size, n) int64 array of tokens in ascending position order."""
        out = np.empty((size, self.n), dtype=np.int64)
        k = np.zeros(size, dtype=np.int64)
        for step in range(self.n):
            m = self.n - step
            Em = self.E[m]  # non-increasing in k
            u = rng.random(size)
            if self.log:
                with np.errstate(divide="ignore"):
                    x = np.log(u) + Em[k]
            else:
                x = u * Em[k]
            # next = the j >= k with E[m, j+1] <= x < E[m, j]
            neg = -Em  # non-decreasing
            j = np.searchsorted(neg, -x, side="left") - 1
            j = np.clip(j, k, self.V - m)
            out[:, step] = j
            k = j + 1
        return self.order[out]
