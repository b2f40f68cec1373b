"""The coins protocol and the path-replay enumerator (mdsd_ot.lossless.coins)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot.lossless.coins import (
    CoinError,
    RandomCoins,
    bernoulli_options,
    categorical_options,
    enumerate_paths,
)

HALF = Fraction(1, 2)


def test_paths_cover_every_branch_with_exact_probabilities():
    def run(coins):
        a = coins.bernoulli(Fraction(1, 3))
        b = coins.categorical([1, 0, 2]) if not a else -1
        return a, b

    paths = enumerate_paths(run)
    assert sum(p.prob for p in paths) == 1
    got = {p.value: p.prob for p in paths}
    assert got == {
        (True, -1): Fraction(1, 3),
        (False, 0): Fraction(2, 9),
        (False, 2): Fraction(4, 9),  # the zero weight is never explored
    }
    assert all(isinstance(p.prob, Fraction) for p in paths)


def test_certain_coins_do_not_branch():
    paths = enumerate_paths(lambda c: (c.bernoulli(1), c.bernoulli(0), c.categorical([0, 5])))
    assert [(p.value, p.prob) for p in paths] == [((True, False, 1), 1)]


def test_float_coins_give_float_probabilities():
    paths = enumerate_paths(lambda c: c.bernoulli(0.25))
    assert sorted(p.prob for p in paths) == [0.25, 0.75]
    assert all(isinstance(p.prob, float) for p in paths)


def test_float_rounding_slack_is_clipped_and_real_errors_refused():
    assert bernoulli_options(1.0 + 1e-15) == ((True, 1.0),)
    assert categorical_options([0.5, -1e-17]) == ((0, 1.0),)
    with pytest.raises(CoinError, match=r"prob must lie in \[0, 1\]"):
        bernoulli_options(1.01)
    with pytest.raises(CoinError, match=r"prob must lie in \[0, 1\]"):
        bernoulli_options(Fraction(-1, 10**30))
    with pytest.raises(CoinError, match="weight 1 is negative"):
        categorical_options([Fraction(1), Fraction(-1, 10)])
    with pytest.raises(CoinError, match="sum to 0"):
        categorical_options([0, 0])
    with pytest.raises(CoinError, match="finite"):
        bernoulli_options(float("nan"))


def test_hidden_randomness_is_detected_on_replay():
    rng = np.random.default_rng(0)

    def run(coins):  # the second coin's probability depends on hidden state
        coins.bernoulli(HALF)
        return coins.bernoulli(Fraction(int(rng.integers(1, 1000)), 1000))

    with pytest.raises(CoinError, match="changed on replay"):
        enumerate_paths(run)


def test_unbounded_coins_hit_the_depth_limit():
    def geometric(coins):
        k = 0
        while not coins.bernoulli(HALF):
            k += 1
        return k

    with pytest.raises(CoinError, match="more than 50 coins"):
        enumerate_paths(geometric, max_depth=50)


def test_path_limit():
    with pytest.raises(CoinError, match="more than 10 coin paths"):
        enumerate_paths(lambda c: c.categorical([1] * 20), max_paths=10)


def test_random_coins_frequencies():
    coins = RandomCoins(np.random.default_rng(1))
    draws = np.array([coins.categorical([Fraction(1), 0, Fraction(3)]) for _ in range(20000)])
    assert not np.any(draws == 1)
    # share of index 2 is 3/4; 5 standard errors of 20000 draws is 0.0153
    assert abs(np.mean(draws == 2) - 0.75) < 0.0153
    heads = np.mean([coins.bernoulli(0.3) for _ in range(20000)])
    assert abs(heads - 0.3) < 5 * np.sqrt(0.21 / 20000)
    with pytest.raises(CoinError):
        coins.bernoulli(1.5)
    with pytest.raises(CoinError):
        coins.categorical([-1.0, 2.0])
