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

import numpy as np

__all__ = ["InverseCDF", "ConditionalPoissonTable", "inverse_cdf_table"]


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
        lost = cum[:, -1] <= 0  # the undrawn mass vanished in the differences of C (tiny q)
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


def inverse_cdf_table(q: np.ndarray) -> InverseCDF:
    """The :class:`InverseCDF` of ``q``."""
    return InverseCDF(q)


class ConditionalPoissonTable:
    r"""Sampler of n distinct tokens with :math:`\Pr[S] \propto \prod_{i \in S} q(i)`.

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
        E = np.zeros((self.n + 1, self.V + 1))
        E[0, :] = 1.0
        for m in range(1, self.n + 1):
            # E[m, k] = sum_{i >= k} w_i E[m-1, i+1]: a suffix sum, accurate from the tail
            E[m, : self.V] = np.cumsum((w * E[m - 1, 1:])[::-1])[::-1]
        self.E = E

    def draw_sets(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` sets as an (size, n) int64 array of tokens in ascending position order."""
        out = np.empty((size, self.n), dtype=np.int64)
        k = np.zeros(size, dtype=np.int64)
        for step in range(self.n):
            m = self.n - step
            Em = self.E[m]  # non-increasing in k
            x = rng.random(size) * Em[k]
            # next = the j >= k with E[m, j+1] <= x < E[m, j]
            neg = -Em  # non-decreasing
            j = np.searchsorted(neg, -x, side="left") - 1
            j = np.clip(j, k, self.V - m)
            out[:, step] = j
            k = j + 1
        return self.order[out]
