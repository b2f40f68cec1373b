"""Exact samplers that scale (issue: sampling must cost O(m·n·log V) time, O(m·n) memory)."""

from __future__ import annotations

import itertools
import math
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from mdsd_ot import drafts
from mdsd_ot.drafts import (
    ConditionalPoisson,
    Greedy,
    Product,
    SpecHub,
    WithoutReplacement,
    WithReplacement,
)
from mdsd_ot.drafts.sampling import SCALE_FROM, ConditionalPoissonTable, scale_exponent
from mdsd_ot.synthetic import synthetic_pair

V_BIG = 152_064


def _zipf_q(V, seed=0):
    _, q = synthetic_pair(V, 1.0, np.random.default_rng(seed))
    return q


@pytest.mark.parametrize(
    "make_law",
    [
        lambda q: WithReplacement(q, 4),
        lambda q: WithoutReplacement(q, 4),
        lambda q: ConditionalPoisson(q, 4),
        lambda q: Greedy(q, 4),
        lambda q: SpecHub(q),
        lambda q: Product([q, q[::-1].copy()]),
    ],
    ids=["with", "without", "conditional-poisson", "greedy", "spechub", "product"],
)
def test_sampling_at_full_vocabulary_needs_no_size_by_V_array(make_law):
    # 200 tuples at V = 152,064: a (size, V) array of keys would take 243 MB; the samplers keep
    # O(V) tables plus O(size * n) work, so the peak stays far below (bound 40 MB: the O(V)
    # tables are a few float64 copies of q).
    law = make_law(_zipf_q(V_BIG))
    tracemalloc.start()
    s = law.sample(np.random.default_rng(0), 200)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert s.shape == (200, law.n) and s.dtype == np.int64
    assert s.min() >= 0 and s.max() < V_BIG
    assert peak < 40 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    if law.distinct:
        assert all(len(set(row)) == law.n for row in s.tolist())


def test_zero_mass_tokens_are_never_drawn():
    q = np.array([0.0, 0.25, 0.0, 0.25, 0.5, 0.0])
    for law in (
        WithReplacement(q, 3),
        WithoutReplacement(q, 3),
        ConditionalPoisson(q, 3),
        Greedy(q, 3),
        SpecHub(q),
    ):
        s = law.sample(np.random.default_rng(1), 5000)
        assert not np.isin(s, [0, 2, 5]).any(), law


def test_without_replacement_after_a_dominant_token_draws_the_tiny_ones_uniformly():
    # q = (1 - 3e-12, 1e-12, 1e-12, 1e-12): the first draw is token 0 (up to 3e-12); the second
    # must be uniform over {1, 2, 3} although 1 - q(0) cancels to 3e-12 in floats.  Chi-square
    # test at level 1e-6 on 30,000 draws (seeded).
    q = np.array([1 - 3e-12, 1e-12, 1e-12, 1e-12])
    s = WithoutReplacement(q, 3).sample(np.random.default_rng(2), 30_000)
    assert np.all(s[:, 0] == 0)
    counts = np.bincount(s[:, 1], minlength=4)[1:]
    assert stats.chisquare(counts).pvalue > 1e-6
    # the third draw is uniform over the two tiny tokens left
    assert np.all(s[:, 2] != s[:, 1]) and np.all(s[:, 2] > 0)


def _tails(rest: float, V: int = 30) -> np.ndarray:
    """One token holding all but ``rest``, spread at random over the other V - 1 (seeded)."""
    q = np.random.default_rng(5).random(V)
    q[0] = 0.0
    q = q / q.sum() * rest
    q[0] = 1.0 - q.sum()
    return q


def _subnormal_tails(V: int, heavy: int) -> np.ndarray:
    """``heavy`` tokens (shares 0.6 : 0.4 : 0.3) beside V - heavy subnormal masses 5e-324 i."""
    q = np.zeros(V)
    q[heavy:] = 5e-324 * np.arange(1, V - heavy + 1)
    share = np.array([0.6, 0.4, 0.3][:heavy])
    q[:heavy] = (1.0 - q.sum()) * share / share.sum()
    return q


@pytest.mark.parametrize(
    "q, n",
    [
        (np.random.default_rng(3).dirichlet(np.full(30, 0.3)), 3),
        # e_n(q) about 1e-600 and 1e-1200: the suffix tables underflowed and every draw took
        # the same light tokens (inclusion 1.0 for two of them); now built from 2^k q
        (_tails(1e-200), 4),
        (_tails(1e-300), 5),
        # two heavy tokens beside subnormal ones: no single power of two keeps every e_m in
        # range (inclusion 1.0 for the lightest token at n = 5); logarithmic tables
        (_subnormal_tails(10, 2), 4),
        (_subnormal_tails(40, 3), 5),
    ],
    ids=["skewed", "tails-1e-200", "tails-1e-300", "subnormal-2-heavy", "subnormal-3-heavy"],
)
def test_conditional_poisson_inclusion_probabilities(q, n, request):
    # pi_i = q_i e_{n-1}(q without i) / e_n(q), exactly; empirical inclusion frequencies of
    # 40,000 seeded draws within 5 standard errors; the float tables wherever they keep
    # every entry a draw reads, logarithms only for the subnormal rows.
    V = len(q)
    law = ConditionalPoisson(q, n)
    logs = ("tails-1e-300", "subnormal-2-heavy", "subnormal-3-heavy")
    assert ConditionalPoissonTable(q, n).log == (request.node.callspec.id in logs)
    qf = [Fraction(float(x)) for x in q]
    en = drafts.elementary_symmetric(qf, n, Fraction(1))[n]
    pi = np.array(
        [
            float(
                qf[i]
                * drafts.elementary_symmetric(qf[:i] + qf[i + 1 :], n - 1, Fraction(1))[n - 1]
                / en
            )
            for i in range(V)
        ]
    )
    N = 40_000
    s = law.sample(np.random.default_rng(4), N)
    freq = np.bincount(s.ravel(), minlength=V) / N
    se = np.sqrt(pi * (1 - pi) / N) + 1e-12
    assert np.all(np.abs(freq - pi) <= 5 * se)
    assert abs(pi.sum() - n) < 1e-12


def test_product_law_with_many_drafts_is_cheap():
    # Q(H) = prod_j q_j(H): the set weights come from a DP over the covered subsets, so the
    # set-reduced flow answers for any n (here n = 40 on 2 tokens; before: k^n surjections).
    import mdsd_ot

    law = Product([[0.2, 0.8]] * 40)
    r = mdsd_ot.solve([0.5, 0.5], law)
    # alpha* = 1 + min_H [P(H) - Q(H)]: H = {} -> 0, {0} -> 0.5 - 0.2^40, {1} -> 0.5 - 0.8^40
    assert abs(r.alpha - 1.0) < 1e-12
    law2 = Product([["1/5", "4/5"]] * 12)
    w = law2.set_weights()
    assert w[frozenset({0})] == Fraction(1, 5) ** 12
    assert w[frozenset({0, 1})] == 1 - Fraction(1, 5) ** 12 - Fraction(4, 5) ** 12


def test_sequential_Q_three_ways_agree_exactly():
    rng = np.random.default_rng(5)
    for _ in range(6):
        V = int(rng.integers(3, 6))
        n = int(rng.integers(2, V + 1))
        law = drafts.random_law(rng, "without", V, n)
        for k in range(V + 1):
            for H in itertools.combinations(range(V), k):
                q_rec = law.Q(H)
                assert law.Q_inclusion_exclusion(H) == q_rec, (law.spec(), H)
                assert law.set_weight_table(exact=True).Q(drafts.as_mask(H, V)) == q_rec
                if n == 2:
                    assert law.Q_two(H) == q_rec


def test_greedy_accepts_a_tiny_but_positive_mass_outside_its_top():
    # issue 10 class 7: the mass outside the top two is 1.9e-32; the law is defined (the last
    # draft is token 1), and Q, sampling and alpha* work.
    q = np.array([0.998, 1.9e-32, 0.002])
    q = q / q.sum()
    law = Greedy(q, 3)
    assert law.T == (0, 2)
    s = law.sample(np.random.default_rng(0), 10)
    assert np.all(s[:, 2] == 1)
    assert law.Q([0, 1, 2]) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match="needs positive mass outside its top"):
        Greedy([0.5, 0.5, 0.0], 3)


def test_registry_lists_come_from_the_classes():
    assert list(drafts.SCHEMES) == [
        "with",
        "without",
        "conditional-poisson",
        "product",
        "greedy",
        "spechub",
        "explicit",
    ]
    assert set(drafts.FAST_SCHEMES) == {
        name for name, cls in drafts.SCHEMES.items() if cls.kernel
    } | {"single"}
    assert drafts.kernel_for("without", 3) == "without"
    assert drafts.kernel_for("conditional-poisson", 1) == "single"
    for bad, match in [("product", "method='reduced'"), ("nope", "unknown scheme")]:
        with pytest.raises(ValueError, match=match):
            drafts.kernel_for(bad, 2)
    with pytest.raises(ValueError, match="n = 2 drafts only"):
        drafts.kernel_for("spechub", 3)
    with pytest.raises(ValueError, match="give n=1"):
        drafts.kernel_for("single", 2)
    assert "conditional-poisson:" in drafts.scheme_help()


def test_conditional_poisson_log_tables_equal_the_float_tables():
    """Where the float tables hold, their logarithmic form (the route of rows whose entries
    would underflow) agrees to 1e-12 relative: about |log E| u per entry."""
    _, q = synthetic_pair(5_000, 1.0, np.random.default_rng(2))
    for n in (2, 4):
        t = ConditionalPoissonTable(q, n)
        assert not t.log
        L = t._log_tables(q[t.order])
        E = t.E[:, : 5_000 - n]
        assert np.allclose(np.exp(L[:, : 5_000 - n]), E, rtol=1e-12, atol=0.0)


def test_scale_exponent_puts_e_n_near_one_and_leaves_ordinary_rows_alone():
    """e_n(2^k q) within 2^(n/2) C(V, n)^(1/2) of 1 (Fractions: the float q, exactly scaled);
    k = 0 for rows whose e_n is not below 2^(-32 n): the synthetic family, a draft 1 - 1e-8
    sure of one token, fewer than n positive masses."""
    for rest, n in ((1e-150, 3), (1e-300, 4), (1e-300, 2)):
        q = _tails(rest, 40)
        k = scale_exponent(q, n)
        assert k >= SCALE_FROM
        qk = np.ldexp(q, k)
        assert np.all(qk[q > 0] > 0) and np.isfinite(qk).all()
        assert np.array_equal(np.ldexp(qk, -k), q)  # a power of two: exact
        e = drafts.elementary_symmetric([Fraction(float(v)) for v in qk], n, Fraction(1))[n]
        half = 2 ** ((n + 1) // 2) * (math.isqrt(math.comb(40, n)) + 1)  # rounded up
        assert Fraction(1, half) <= e <= half, (rest, n, float(e))
    assert scale_exponent(_tails(1e-8, 2000), 4) == 0
    assert scale_exponent(_zipf_q(5_000), 4) == 0
    assert scale_exponent(np.full(100, 0.01), 4) == 0
    assert scale_exponent(np.array([1.0, 1e-300, 0.0]), 3) == 0
