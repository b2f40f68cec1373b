"""``WithoutReplacement.Q`` and ``Q_two`` against the implementation they replaced (the plain
recursion, O(|H|^{n-1}·V) Python), in Fractions and in floats, on small V."""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot.drafts import WithoutReplacement, rational_simplex
from mdsd_ot.drafts._base import as_mask


def _old_Q(law, H, exact):
    qv = law.qvals(exact)
    o = Fraction(1) if exact else 1.0
    members = [int(i) for i in np.flatnonzero(as_mask(H, law.V)) if qv[i] > 0]
    memo = {}

    def f(D, k):
        if k == 0:
            return o
        if D in memo:
            return memo[D]
        left = sum((v for x, v in enumerate(qv) if x not in D), o - o)
        tot = o - o
        for x in members:
            if x not in D:
                tot += qv[x] / left * f(D | {x}, k - 1)
        memo[D] = tot
        return tot

    return f(frozenset(), law.n)


def _old_Q_two(law, H, exact):
    qv = law.qvals(exact)
    z = Fraction(0) if exact else 0.0
    idx = [int(i) for i in np.flatnonzero(as_mask(H, law.V))]
    qH = sum((qv[i] for i in idx), z)
    rest = [sum((v for x, v in enumerate(qv) if x != i), z) for i in idx]
    return qH - (1 - qH) * sum((qv[i] / r for i, r in zip(idx, rest, strict=True)), z)


def _laws(seed=0, trials=60):
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        V = int(rng.integers(1, 8))
        n = int(rng.integers(1, min(V, 4) + 1))
        if rng.random() < 0.5:
            q = rational_simplex(rng, V, denom=12, zeros=V > n)
        else:
            q = rng.dirichlet(np.full(V, 0.5))
            if V > n and rng.random() < 0.3:
                q[rng.integers(V)] = 0.0
                q = q / q.sum()
        if sum(1 for v in q if v > 0) < n:
            continue
        law = WithoutReplacement(q, n)
        for H in (rng.random(V) < 0.6, np.ones(V, bool), np.zeros(V, bool), rng.random(V) < 0.3):
            yield law, H


def test_Q_matches_the_old_recursion_exactly_and_in_floats():
    seen = 0
    for law, H in _laws():
        new, old = law.Q(H, exact=True), _old_Q(law, H, True)
        assert isinstance(new, Fraction) and new == old
        f_new, f_old = law.Q(H, exact=False), _old_Q(law, H, False)
        assert isinstance(f_new, float)
        assert f_new == pytest.approx(f_old, rel=1e-13, abs=1e-300)
        assert law.Q(H) == (new if law.rational else f_new)
        if law.n == 2:
            assert law.Q_two(H, exact=True) == _old_Q_two(law, H, True) == new
            assert law.Q_two(H, exact=False) == pytest.approx(_old_Q_two(law, H, False), abs=1e-15)
        seen += 1
    assert seen > 100


def test_Q_in_floats_is_fast_at_V_2000():
    """n = 3 at V = 400 took 1.1 s (O(V^3) Python); the float route is numpy blocks, O(V^2)."""
    V = 2000
    q = np.random.default_rng(0).dirichlet(np.ones(V))
    law = WithoutReplacement(q, 3)
    H = np.arange(V) % 2 == 0
    t = time.perf_counter()
    a = law.Q(H)
    assert time.perf_counter() - t < 5.0
    assert 0 < a < 1
    # against the old recursion on a subset of H small enough for it
    small = np.zeros(V, bool)
    small[:30] = True
    assert law.Q(small) == pytest.approx(_old_Q(law, small, False), rel=1e-12)
    t = time.perf_counter()
    WithoutReplacement(q, 2).Q_two(H)
    assert time.perf_counter() - t < 0.5


def test_Q_refuses_before_the_work_when_the_tuples_are_too_many():
    """Found by the draft-law fuzzer (2026-12-06): V = 40, n = 8 ran 9 s into a MemoryError.
    One Q(H) sums over perm(|H|, n-1) ordered tuples in floats, and over the memoised drawn
    sets in Fractions; both are counted first and refused above 2^24 with the way out."""
    q = np.random.default_rng(0).dirichlet(np.ones(40))
    with pytest.raises(ValueError, match=r"Q\(H\) of WithoutReplacement\(V=40, n=8\) with "
                       r"\|H\| = 40: needs 93,963,542,400 .*fast solver"):  # fmt: skip
        WithoutReplacement(q, 8).Q(np.ones(40, bool))
    with pytest.raises(ValueError, match=r"needs 183,939,160 entries"):  # the memoised count
        WithoutReplacement([Fraction(1, 40)] * 40, 8).Q(np.ones(40, bool))
    # the count is of H's support tokens: a small H of the same law is still answered
    H = np.zeros(40, bool)
    H[:9] = True
    assert 0 < WithoutReplacement(q, 8).Q(H) < 1
    assert WithoutReplacement(q, 2).Q(np.ones(40, bool)) == 1.0
