r"""The tests of statistical mode, their power statement and the multiple-testing correction.

Given N output tokens of a sampler on one instance (counts :math:`c_i`) and the number
:math:`h` of outputs that are one of their drafts, three tests of :math:`H_0`: "the output law is
p" (docs/lossless.md derives each statement below):

1. **pool test** (exact): tokens with expected count :math:`N p_i` below ``min_expected`` form
   the pool Z (tokens with :math:`p_i = 0` included); under :math:`H_0` its count is
   Binomial(N, π), :math:`\pi = p(Z)`; p-value :math:`\Pr[\mathrm{Bin}(N, \pi) \ge c_Z]`.
2. **G-test** on the other tokens L, given the number :math:`N_L` of outputs in L:

   .. math:: G = 2 \sum_{i \in L} c_i \ln \frac{c_i}{N_L\, p_i / p(L)}, \qquad
      G / (1 + \tfrac{|L| + 1}{6 N_L}) \;\dot\sim\; \chi^2_{|L| - 1}

   (Williams' correction).
3. **acceptance upper test** (exact): :math:`\Pr[\text{out} \in \bar i] \le \alpha^*` under
   :math:`H_0` (T11), so the p-value is :math:`\Pr[\mathrm{Bin}(N, \alpha^*) \ge h]`.

The instance's p-value is the Bonferroni combination :math:`\min(1, m \min_k p_k)` over its m
tests (:func:`n_tests`).  Across instances, :func:`holm` controls the family-wise error.

Power (:func:`power`): against every output law p' with :math:`TV(p', p) \ge \delta`, the
probability of rejecting is at least the value returned, using Pinsker's inequality
(:math:`2 N_L KL \ge 4 N_L t^2` for the conditional TV t on L) and the asymptotic noncentral
:math:`\chi^2_{|L|-1}(\lambda)` law of G with :math:`\lambda = 4 N_L t^2`, minimised over how the
error splits between L and the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

__all__ = [
    "MIN_EXPECTED",
    "POWER",
    "Tests",
    "n_tests",
    "pool_mask",
    "law_tests",
    "p_values",
    "acceptance_p_value",
    "combine",
    "power",
    "detectable_tv",
    "samples_needed",
    "PowerStatement",
    "holm",
]

#: Tokens with expected count below this go to the pool (tested exactly, not by G).
MIN_EXPECTED: float = 20.0
#: The detection probability of the power statement.
POWER: float = 0.9


def pool_mask(p: np.ndarray, samples: int, min_expected: float = MIN_EXPECTED) -> np.ndarray:
    """Tokens with expected count :math:`N p_i` below ``min_expected`` (the pool Z).

    Examples
    --------
    >>> pool_mask(np.array([0.5, 0.499, 0.001]), 1000).tolist()
    [False, False, True]
    """
    return np.asarray(p, dtype=np.float64) * samples < min_expected


def n_tests(df: int, pool_tokens: int) -> int:
    """m of the Bonferroni combination: the G-test (if df > 0), the pool test (if the pool is
    not empty) and the acceptance test (always counted).

    Examples
    --------
    >>> n_tests(3, 0), n_tests(0, 2), n_tests(2, 1)
    (2, 2, 3)
    """
    return int(df > 0) + int(pool_tokens > 0) + 1


@dataclass(frozen=True)
class Tests:
    """The p-values of one instance: G-test, pool test, acceptance test."""

    g: float
    df: int
    statistic: float
    pool: float
    pool_tokens: int
    pool_count: int
    pool_mass: float
    acceptance: float

    @property
    def m(self) -> int:
        """The number of tests in the Bonferroni combination (:func:`n_tests`)."""
        return n_tests(self.df, self.pool_tokens)

    @property
    def p_value(self) -> float:
        """The instance's p-value :math:`\\min(1, m \\min_k p_k)`."""
        return combine([self.g, self.pool, self.acceptance], self.m)


def _law_arrays(c: np.ndarray, pv: np.ndarray, min_expected: float) -> tuple:
    """G-test and pool test of each row of ``c`` (rows of one common total N)."""
    N = int(c[0].sum()) if len(c) else 0
    if np.any(c.sum(axis=1) != N):
        raise ValueError("counts: every row must have the same total N")
    Z = pool_mask(pv, N, min_expected)
    pi = float(pv[Z].sum())
    cz = c[:, Z].sum(axis=1)
    if not Z.any():
        pz = np.ones(len(c))
    elif pi <= 0:
        pz = np.where(cz > 0, 0.0, 1.0)
    else:
        pz = stats.binom.sf(cz - 1, N, min(pi, 1.0))
    cL, pL = c[:, ~Z], pv[~Z]
    k = len(pL)
    NL = cL.sum(axis=1)
    if k < 2:
        return np.ones(len(c)), 0, np.zeros(len(c)), pz, int(Z.sum()), cz, pi
    expected = NL[:, None] * (pL / pL.sum())[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(cL > 0, cL * np.log(cL / expected), 0.0)
    G = np.maximum(2.0 * terms.sum(axis=1), 0.0)
    williams = 1.0 + (k + 1) / (6.0 * np.maximum(NL, 1))
    g = np.where(NL > 0, stats.chi2.sf(G / williams, k - 1), 1.0)
    return g, k - 1, G, pz, int(Z.sum()), cz, pi


def law_tests(
    counts: Sequence[int],
    p: Sequence[float],
    acceptance: float = 1.0,
    min_expected: float = MIN_EXPECTED,
) -> Tests:
    """The G-test and the pool test of ``counts`` against ``p`` (``acceptance``: its p-value).

    Examples
    --------
    >>> t = law_tests([480, 500, 20], [0.5, 0.5, 0.0])
    >>> t.df, t.pool_count, t.pool, t.m  # 20 outputs of a token of probability 0
    (1, 20, 0.0, 3)
    """
    c = np.asarray(counts, dtype=np.int64)[None, :]
    g, df, G, pz, zt, cz, pi = _law_arrays(c, np.asarray(p, dtype=np.float64), min_expected)
    return Tests(float(g[0]), df, float(G[0]), float(pz[0]), zt, int(cz[0]), pi, float(acceptance))


def p_values(
    counts: np.ndarray,
    p: Sequence[float],
    acceptance: Any = 1.0,
    min_expected: float = MIN_EXPECTED,
) -> np.ndarray:
    """The combined p-values :attr:`Tests.p_value` of many rows of counts at once (same N).

    Examples
    --------
    >>> p_values(np.array([[50, 50], [90, 10]]), [0.5, 0.5]).round(6).tolist()
    [1.0, 0.0]
    """
    c = np.atleast_2d(np.asarray(counts, dtype=np.int64))
    g, df, _, pz, zt, _, _ = _law_arrays(c, np.asarray(p, dtype=np.float64), min_expected)
    m = n_tests(df, zt)
    acc = np.broadcast_to(np.asarray(acceptance, dtype=np.float64), g.shape)
    return np.minimum(1.0, m * np.minimum(np.minimum(g, pz), acc))


def acceptance_p_value(hits: int, samples: int, alpha_star: float) -> float:
    r""":math:`\Pr[\mathrm{Bin}(N, \alpha^*) \ge h]`: small when the acceptance exceeds α*.

    Examples
    --------
    >>> round(acceptance_p_value(60, 100, 0.5), 4)
    0.0284
    >>> acceptance_p_value(100, 100, 1.0)
    1.0
    """
    a = float(alpha_star)
    if a >= 1.0:
        return 1.0
    return float(stats.binom.sf(int(hits) - 1, int(samples), max(a, 0.0)))


def combine(p_values: Sequence[float], m: int | None = None) -> float:
    """Bonferroni: :math:`\\min(1, m \\min_k p_k)` (m defaults to the number of p-values).

    Examples
    --------
    >>> combine([0.2, 0.01, 0.5]), combine([0.2, 0.01, 0.5], 2), combine([0.9, 0.6])
    (0.03, 0.02, 1.0)
    """
    m = len(p_values) if m is None else m
    return float(min(1.0, max(m, 1) * min(p_values)))


def _g_power(t: np.ndarray, NL: np.ndarray, df: int, a: float) -> np.ndarray:
    if df <= 0:
        return np.zeros_like(t)
    williams = 1.0 + (df + 2) / (6.0 * np.maximum(NL, 1.0))  # G / williams is compared
    crit = stats.chi2.isf(a, df) * williams
    lam = 4.0 * NL * t**2
    return stats.ncx2.sf(crit, df, np.maximum(lam, 1e-300))


def _pool_power(u: np.ndarray, samples: int, pi: float, a: float) -> np.ndarray:
    if pi <= 0:
        crit = 1  # any output in the pool rejects
    else:
        crit = int(stats.binom.isf(a, samples, pi)) + 1  # smallest c with Pr[Bin >= c] <= a
        while crit > 1 and stats.binom.sf(crit - 2, samples, pi) <= a:
            crit -= 1
    return stats.binom.sf(crit - 1, samples, np.clip(pi + u, 0.0, 1.0))


def power(
    p: Sequence[float],
    samples: int,
    delta: float,
    level: float,
    min_expected: float = MIN_EXPECTED,
    grid: int = 400,
) -> float:
    r"""A lower bound on the probability of rejecting when :math:`TV(p', p) \ge \delta`.

    Each of the instance's tests runs at ``level / m`` (Bonferroni, m = 3 or fewer).  An
    alternative with TV δ has :math:`\delta \le \pi + t + u^+` (t: TV of the conditional laws on
    L, at most :math:`t_{max} = 1 - \min_L p_i / p(L)`; u: excess mass in the pool), so the bound is

    .. math:: \min_{t + u = \delta - \pi,\ 0 \le t \le t_{max}} \max\bigl(P_G(t),\ P_Z(u)\bigr),

    :math:`P_G(t) = \Pr[\chi'^2_{|L|-1}(4 N (1 - \pi - u) t^2) > \chi^2_{1-a}]`,
    :math:`P_Z(u) = \Pr[\mathrm{Bin}(N, \pi + u) \ge c_a]`, evaluated conservatively on a grid.

    Examples
    --------
    >>> round(power([0.25] * 4, 100_000, 0.01, 1e-3), 3)
    0.989
    """
    pv = np.asarray(p, dtype=np.float64)
    N = int(samples)
    Z = pool_mask(pv, N, min_expected)
    pi = float(pv[Z].sum())
    df = int((~Z).sum()) - 1
    a = level / n_tests(df, int(Z.sum()))
    span = delta - pi
    if span <= 0 or Z.all():
        return 0.0
    if not Z.any():
        return float(_g_power(np.array([delta]), np.array([float(N)]), df, a)[0])
    # t cannot exceed the largest TV from the conditional law on L, 1 - min_L p_i / p(L)
    t_max = 1.0 - float(pv[~Z].min()) / float(pv[~Z].sum())
    if span - t_max > 1.0 - pi:
        return 1.0  # no alternative at TV >= delta exists
    t = np.linspace(max(0.0, span - (1.0 - pi)), min(span, t_max), grid + 1)
    u = span - t
    pg = _g_power(t, N * np.clip(1.0 - pi - u, 0.0, 1.0), df, a)
    pz = _pool_power(u, N, pi, a)
    # P_G grows with t and P_Z shrinks with t: between grid points t_k < t < t_{k+1}, the max is
    # at least max(P_G(t_k), P_Z(t_{k+1})), so the minimum of those bounds the true minimum
    return float(np.minimum(np.maximum(pg[:-1], pz[1:]), 1.0).min())


def detectable_tv(
    p: Sequence[float],
    samples: int,
    level: float,
    probability: float = POWER,
    min_expected: float = MIN_EXPECTED,
) -> float:
    """The smallest TV error detected with ``probability`` by :func:`power` (bisection, 1e-4).

    Examples
    --------
    >>> d = detectable_tv([0.25] * 4, 10_000, 1e-3)
    >>> round(d, 3), power([0.25] * 4, 10_000, d, 1e-3) >= 0.9
    (0.026, True)
    """
    lo, hi = 0.0, 1.0
    if power(p, samples, hi, level, min_expected) < probability:
        return float("inf")
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        if power(p, samples, mid, level, min_expected) >= probability:
            hi = mid
        else:
            lo = mid
    return hi


def samples_needed(
    p: Sequence[float],
    delta: float,
    level: float,
    probability: float = POWER,
    min_expected: float = MIN_EXPECTED,
) -> int:
    """The smallest N (to 1%) whose power statement detects a TV error ≥ ``delta``.

    Examples
    --------
    >>> N = samples_needed([0.25] * 4, 0.01, 1e-3)
    >>> 50_000 < N < 80_000
    True
    """
    lo, hi = 1, 100
    while power(p, hi, delta, level, min_expected) < probability:
        lo, hi = hi, hi * 2
        if hi > 10**12:
            raise ValueError(f"delta: a TV error of {delta} is not detectable at level {level}")
    while hi - lo > max(1, hi // 100):
        mid = (lo + hi) // 2
        if power(p, mid, delta, level, min_expected) >= probability:
            hi = mid
        else:
            lo = mid
    return int(hi)


@dataclass(frozen=True)
class PowerStatement:
    """ "With N samples this detects a TV error ≥ delta with probability ≥ probability at level."

    ``level`` is the per-instance level the tests ran at (after the correction across instances).

    Examples
    --------
    >>> print(PowerStatement(80_000, 1e-3, 0.0101))
    with 80,000 samples this detects a total-variation error >= 0.0101 with probability >= 0.9 at level 0.001
    """

    samples: int
    level: float
    delta: float
    probability: float = POWER

    def __str__(self) -> str:
        if not np.isfinite(self.delta):  # too few samples for any error (delta = inf)
            return (
                f"with {self.samples:,} samples no total-variation error is detected with "
                f"probability >= {self.probability:g} at level {self.level:.3g}; take more samples"
            )
        return (
            f"with {self.samples:,} samples this detects a total-variation error >= "
            f"{self.delta:.3g} with probability >= {self.probability:g} at level {self.level:.3g}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "level": self.level,
            "delta": self.delta if np.isfinite(self.delta) else None,
            "probability": self.probability,
            "statement": str(self),
        }


def holm(p_values: Sequence[float], level: float) -> np.ndarray:
    """Holm's step-down rejections at family-wise level ``level`` (a bool array).

    Examples
    --------
    >>> holm([0.001, 0.04, 0.03, 0.5], 0.05).tolist()
    [True, False, False, False]
    """
    pv = np.asarray(p_values, dtype=np.float64)
    m = len(pv)
    out = np.zeros(m, dtype=bool)
    for k, i in enumerate(np.argsort(pv, kind="stable")):
        if pv[i] > level / (m - k):
            break
        out[i] = True
    return out
