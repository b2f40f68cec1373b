"""The tests of statistical mode: level and power checked by simulating counts (multinomial)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from mdsd_ot.lossless import stats

#: Monte-Carlo slack: rates are compared with 4 standard errors of their estimate.
Z = 4.0


def _reject_rate(p, p_alt, N, level, reps, seed):
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(N, p_alt, size=reps)
    pv = stats.p_values(counts, p)
    assert np.array_equal(pv[:50], [stats.law_tests(c, p).p_value for c in counts[:50]])
    return float(np.mean(pv <= level))


def test_g_test_statistic_and_p_value():
    t = stats.law_tests([30, 70], [0.5, 0.5])
    G = 2 * (30 * np.log(30 / 50) + 70 * np.log(70 / 50))
    assert t.statistic == pytest.approx(G, rel=1e-12) and t.df == 1
    assert t.g == pytest.approx(sps.chi2.sf(G / (1 + 3 / 600), 1), rel=1e-12)  # Williams
    assert t.pool_tokens == 0 and t.pool == 1.0 and t.m == 2


def test_pool_test_is_an_exact_binomial_upper_test():
    p = np.array([0.5, 0.4999, 0.0001])
    t = stats.law_tests([500, 497, 3], p)  # expected 0.1 in the pool: pooled, not in G
    assert t.pool_tokens == 1 and t.pool_count == 3 and t.df == 1
    assert t.pool == pytest.approx(sps.binom.sf(2, 1000, 0.0001), rel=1e-12)
    zero = stats.law_tests([500, 499, 1], [0.5, 0.5, 0.0])
    assert zero.pool == 0.0 and zero.p_value == 0.0


def test_acceptance_upper_test():
    assert stats.acceptance_p_value(60, 100, 0.5) == pytest.approx(sps.binom.sf(59, 100, 0.5))
    assert stats.acceptance_p_value(100, 100, 1.0) == 1.0
    assert stats.acceptance_p_value(0, 100, 0.3) == 1.0


def test_holm_matches_its_definition():
    rng = np.random.default_rng(0)
    for _ in range(200):
        pv = rng.random(6) ** 3
        level = 0.05
        order = np.argsort(pv)
        k = next((j for j, i in enumerate(order) if pv[i] > level / (6 - j)), 6)
        expect = np.zeros(6, bool)
        expect[order[:k]] = True
        assert np.array_equal(stats.holm(pv, level), expect)
    assert stats.holm([], 0.05).size == 0


@pytest.mark.parametrize(
    "p",
    [
        np.array([0.25] * 4),
        np.array([0.6, 0.25, 0.1, 0.0495, 0.0005]),  # a pooled token at N = 2000
        np.array([1 - 2e-9, 1e-9, 1e-9]),  # nearly one-hot: G has nothing to test
    ],
    ids=["uniform", "pooled", "one-hot"],
)
def test_level_under_the_null(p):
    """Under H0 the law tests reject at most at their level (20,000 simulated samples of N)."""
    for level in (0.01, 1e-3):
        rate = _reject_rate(p, p, 2000, level, 20_000, seed=1)
        assert rate <= level + Z * np.sqrt(level * (1 - level) / 20_000)


def _balanced(p, delta):
    """The worst case of Pinsker / Cauchy-Schwarz: p (1 ± 2δ) on two halves of mass 1/2."""
    for r in range(1, len(p)):
        for S in itertools.combinations(range(len(p)), r):
            if abs(p[list(S)].sum() - 0.5) < 1e-12:
                s = -np.ones(len(p))
                s[list(S)] = 1
                return p * (1 + 2 * delta * s)
    raise AssertionError("no half-mass split")


@pytest.mark.parametrize(
    "p", [np.array([0.25] * 4), np.array([0.5, 0.5]), np.array([0.4, 0.1, 0.3, 0.2])]
)
def test_power_statement_holds_at_the_worst_case(p):
    """At N = samples_needed(δ), the worst-case alternative at TV δ is rejected w.p. >= 0.9."""
    delta, level = 0.05, 1e-3
    N = stats.samples_needed(p, delta, level)
    alt = _balanced(p, delta)
    assert 0.5 * np.abs(alt - p).sum() == pytest.approx(delta)
    assert stats.power(p, N, delta, level) >= 0.9
    rate = _reject_rate(p, alt, N, level, 3000, seed=2)
    assert rate >= 0.9 - Z * np.sqrt(0.09 / 3000)


def test_power_statement_when_the_error_hides_in_the_pool():
    """Nearly one-hot p: an error of TV δ must move mass onto the tiny tokens (pool test)."""
    p = np.array([1 - 3e-9, 1e-9, 1e-9, 1e-9])
    delta, level = 0.01, 1e-3
    N = stats.samples_needed(p, delta, level)
    assert N < 500  # 1 - (1 - δ)^N >= 0.9 needs N >= 230
    alt = np.array([1 - 3e-9 - delta, 1e-9 + delta, 1e-9, 1e-9])
    rate = _reject_rate(p, alt, N, level, 3000, seed=3)
    assert rate >= 0.9 - Z * np.sqrt(0.09 / 3000)


def test_samples_needed_is_the_smallest_to_a_few_percent():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    N = stats.samples_needed(p, 0.02, 2e-5)
    assert stats.power(p, N, 0.02, 2e-5) >= stats.POWER
    assert stats.power(p, int(N * 0.97), 0.02, 2e-5) < stats.POWER
    d = stats.detectable_tv(p, N, 2e-5)
    assert d <= 0.02 * 1.001 and stats.power(p, N, d, 2e-5) >= stats.POWER
    assert stats.power(p, N, 0.5 * d, 2e-5) < stats.POWER
    with pytest.raises(ValueError, match="not detectable"):
        stats.samples_needed([1.0], 0.01, 1e-3)


def test_power_statement_text():
    s = stats.PowerStatement(1000, 1e-3, 0.05)
    assert str(s) == (
        "with 1,000 samples this detects a total-variation error >= 0.05 with probability "
        ">= 0.9 at level 0.001"
    )
    assert s.to_json()["statement"] == str(s)
