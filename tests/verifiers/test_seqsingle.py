"""``seq-swap-h``: the heaviest tokens pick once (mdsd_ot.verifiers.chain.seqsingle; §4.8).

The series route against the exact law in Fractions (Lemma 9 with one pick for S, enumerated
over the ordered tuples), the choice of S, the sampler against the computed law (G-test), the
exact plan's output law (= p in Fractions), and the peaked rows where ``seq-swap`` stalls.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from mdsd_ot import drafts, fast
from mdsd_ot.reports.demo import demo_rows
from mdsd_ot.verifiers.chain import ChainOptimal, build_plan
from mdsd_ot.verifiers.chain.exact import ExactPlan, select_law
from mdsd_ot.verifiers.chain.pieces import build_pieces
from mdsd_ot.verifiers.chain.sample import piece_levels
from mdsd_ot.verifiers.chain.seqseries import seq_series_law
from mdsd_ot.verifiers.chain.seqsingle import (
    SINGLE_DRAWS,
    SINGLE_MAX,
    seq_single_law,
    single_tokens,
)
from mdsd_ot.verifiers.chain.swap import stream_draws
from testkit import g_test_pvalue, peaked_random_row


def _exact_law(qs: np.ndarray, n: int, kern, single) -> list[Fraction]:
    """Lemma 9 with one pick for ``single`` (exact.py's rule), summed over the ordered tuples."""
    V = len(qs)
    q = [Fraction(float(x)) for x in qs]
    rows: list[dict[int, Fraction]] = [{} for _ in range(V)]
    for e, (k, pr) in enumerate(zip(kern.tok.tolist(), kern.prob.tolist(), strict=True)):
        rows[k][e] = Fraction(pr)
    plan = ExactPlan("seq-swap-h", n, q, list(range(V)), rows, [], [], Fraction(0), [],
                     single=frozenset(int(h) for h in single))  # fmt: skip
    total = sum(q, Fraction(0))
    T = [Fraction(0)] * V
    for tup in itertools.permutations(range(V), n):
        w, rest = Fraction(1), total
        for x in tup:
            w *= q[x] / rest
            rest -= q[x]
        for k, pr in select_law(plan, tup).items():
            T[k] += w * pr
    return T


def _random_kernel(rng: np.random.Generator, qs: np.ndarray, pairs: int):
    V = len(qs)
    x = rng.integers(0, V - 1, pairs)
    y = np.minimum(x + 1 + rng.integers(0, 3, pairs), V - 1)
    a = rng.random(pairs) * qs[x] * 0.3
    b = rng.random(pairs) * qs[y] * 0.3
    return build_pieces(qs, x, y, a, b)


@pytest.mark.parametrize("n", [3, 4])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_series_equals_the_exact_law_within_its_bound(n, m):
    rng = np.random.default_rng([n, m, 12])
    for _ in range(3):
        V = 6
        qs = rng.dirichlet(np.full(V, 0.5))
        kern = _random_kernel(rng, qs, 5)
        single = np.sort(rng.choice(V, m, replace=False))
        T, err = seq_single_law(qs, n, kern, single)
        ref = np.array([float(x) for x in _exact_law(qs, n, kern, single)])
        assert np.abs(T - ref).sum() <= err  # the certified bound holds
        assert np.abs(T - ref).max() <= 1e-14 and err <= 1e-10


def test_no_single_token_is_the_seq_swap_law_and_one_piece_tokens_change_nothing():
    rng = np.random.default_rng(3)
    qs = rng.dirichlet(np.full(7, 0.7))
    kern = _random_kernel(rng, qs, 6)
    T0, _ = seq_series_law(qs, 3, kern)
    T, _ = seq_single_law(qs, 3, kern, np.empty(0, np.int64))
    assert np.abs(T - T0).max() <= 1e-15
    lone = np.flatnonzero(np.diff(kern.start) == 1)  # tokens with one piece: one pick anyway
    T1, _ = seq_single_law(qs, 3, kern, lone[:2])
    assert np.abs(T1 - T0).max() <= 1e-14


def test_single_tokens_takes_the_most_drawn_tokens_above_the_threshold():
    draws = np.array([1.0, 9.0, SINGLE_DRAWS, SINGLE_DRAWS - 1e-9, 4.0, 2.0, 3.0])
    got = single_tokens(draws)
    assert got.tolist() == sorted(np.argsort(-draws, kind="stable")[:SINGLE_MAX].tolist())
    assert got.tolist() == [1, 4, 6]
    assert single_tokens(np.ones(5)).size == 0
    flat = np.full(50, 1 / 50)
    assert single_tokens(stream_draws(flat, 4)).size == 0  # no heavy token, no single pick


PEAKED_P = np.array([0.968479, 0.014579, 0.009008, 0.00216, 0.001507, 0.001505, 0.001505,
                     0.000833, 0.000177, 0.000114, 0.00007, 0.000063])  # fmt: skip
PEAKED_Q = np.array([0.747673, 0.116705, 0.072112, 0.01729, 0.012065, 0.012049, 0.012048,
                     0.006671, 0.001417, 0.000909, 0.000558, 0.000503])  # fmt: skip


@pytest.mark.parametrize("n", [3, 4])
def test_sampler_realises_the_computed_selection_law(n):
    """The selection step of the sampler (stream resampled, S picks once) against plan.T: a
    G-test over the tokens with expected count >= 5 (the rest pooled), 2e5 tuples."""
    p, q = PEAKED_P / PEAKED_P.sum(), PEAKED_Q / PEAKED_Q.sum()
    plan = build_plan(p, q, n, "seq-swap-h")
    assert plan.single is not None and plan.single.size >= 1 and plan.pieces is not None
    rng = np.random.default_rng([n, 5])
    N = 200_000
    t = drafts.WithoutReplacement(q, n).sample(rng, N)
    sel = t[np.arange(N), np.argmax(piece_levels(plan, t, rng), axis=1)]
    T = np.empty(len(q))
    T[plan.order] = plan.T  # by token id
    obs = np.bincount(sel, minlength=len(q)).astype(float)
    exp = N * T / T.sum()
    big = exp >= 5
    o = np.r_[obs[big], obs[~big].sum()]
    e = np.r_[exp[big], exp[~big].sum()]
    keep = e > 0
    G = 2 * np.sum(np.where(o[keep] > 0, o[keep] * np.log(o[keep] / e[keep]), 0.0))
    assert G < chi2.ppf(1 - 1e-4, keep.sum() - 1), (G, o, e)


@pytest.mark.parametrize("n", [3, 4])
def test_peaked_row_seq_swap_h_attains_alpha_star(n):
    p, q = PEAKED_P / PEAKED_P.sum(), PEAKED_Q / PEAKED_Q.sum()
    plan = build_plan(p, q, n, "seq-swap-h")
    a = float(fast.alpha_star(p, q, n=n, scheme="without"))
    assert a == pytest.approx(1.0, abs=1e-12)
    assert 0 <= a - plan.acceptance <= 1e-9 and plan.law_error <= 1e-9
    assert plan.info["single"] == plan.single.tolist() and 0 in plan.single  # the q = 0.75 token


def _rational_peaked(rng: np.random.Generator, V: int):
    """A rational row with one heavy draft token, p and q in lowest terms (sum 1)."""
    q = rng.dirichlet(np.full(V, 0.4))
    q[0] += 1.5
    p = rng.dirichlet(np.full(V, 0.4))
    fr_q = [Fraction(int(x * 10**6) + 1) for x in q]
    fr_p = [Fraction(int(x * 10**6) + 1) for x in p]
    sq, sp = sum(fr_q), sum(fr_p)
    return [str(x / sp) for x in fr_p], [str(x / sq) for x in fr_q]


def test_exact_plan_is_lossless_in_fractions():
    """Rows (V = 5, n = 3) where ``seq-best`` takes ``seq-swap-h``: the output law is p exactly
    and the acceptance lies between the certified lower bound and α* (Fractions)."""
    rng = np.random.default_rng(21)
    done = 0
    for _ in range(40):
        p, q = _rational_peaked(rng, 5)
        law = drafts.WithoutReplacement(q, 3)
        v = ChainOptimal(law)
        ctx = v._setup([Fraction(x) for x in p], law, True)
        if ctx.construction != "seq-swap-h":
            continue
        out, acc = v.exact(p)
        assert all(out[i] == Fraction(p[i]) for i in range(5)), (p, q)
        ref = fast.alpha_star(np.array([float(Fraction(x)) for x in p]), law)
        assert ctx.acceptance <= acc and float(acc) <= float(ref) + 1e-12
        assert float(ref) - float(ctx.acceptance) <= 1e-8
        done += 1
        if done == 3:
            break
    assert done == 3


@pytest.mark.parametrize("n", [3, 4])
def test_demo_rows_reach_alpha_star(n):
    """The built-in demo's real-text rows (V = 256), where ``seq-swap`` alone left ε up to
    2.5e-2: the verifier's certified ε is at most 1e-9 on each of the first 24 rows."""
    rows = demo_rows(24)
    for r in range(24):
        p, q = rows["p"][r], rows["q"][r]
        p, q = p / p.sum(), q / q.sum()
        cert = ChainOptimal(drafts.WithoutReplacement(q, n)).certificate(p)
        assert cert["eps"] <= 1e-9 and cert["law_error"] <= 1e-8, (r, cert)


def _simulate_swap_h(V: int, T: float, n: int, size: int) -> None:
    from mdsd_ot.synthetic import synthetic_pair
    from mdsd_ot.verifiers._draws import sample_drafts

    p, q = synthetic_pair(V, T, np.random.default_rng([V, n, 7]), noise=1.0)
    law = drafts.WithoutReplacement(q, n)
    v = ChainOptimal(law)
    cert = v.certificate(p)
    assert cert["construction"] == "seq-swap-h" and cert["single"], cert
    assert 0 <= cert["eps"] <= 1e-9 and cert["law_error"] <= 1e-6, cert
    g = np.random.default_rng([V, n, 8])
    out, acc = v.sample(p, sample_drafts(law, g, size), g)
    assert g_test_pvalue(out, p, min_expected=5.0) > 1e-4
    a_hat = float(acc.mean())
    se = float(np.sqrt(max(a_hat * (1 - a_hat), 1e-12) / size))
    assert cert["acceptance"] - 4 * se <= a_hat <= cert["alpha_star"] + 4 * se, (a_hat, cert)


def test_simulation_vocab_2000():
    """V = 2,000, T = 0.5, n = 3 (a token is drawn 35 times on average in the stream): 10^5
    verified tuples pass the G-test against p, the acceptance within 4 s.e. of the certificate."""
    _simulate_swap_h(2000, 0.5, 3, 100_000)


@pytest.mark.slow
def test_simulation_vocab_152064():
    _simulate_swap_h(152_064, 0.5, 4, 100_000)


@pytest.mark.parametrize("seed", [25, 32, 49])
def test_seq_best_widens_the_single_picks_where_three_fall_short(seed):
    """Rows with four to six tokens drawn often (V = 10-53, n = 5-6, peaked): with three of them
    picking once, ``seq-swap-h`` stopped at ε = 1.1e-3 to 0.15 (the others, drawn up to 30,000
    times in the stopped stream, picked a lifted piece almost surely); ``seq-best`` now designs
    it again with up to SINGLE_WIDE = 6 single picks and reaches ε ≤ 1e-9."""
    from mdsd_ot.fast import alpha_star
    from mdsd_ot.verifiers.chain.seqsingle import SINGLE_MAX

    p, q, n = peaked_random_row(seed)
    plan = build_plan(p, q, n, "seq-best")
    a = float(alpha_star(p, q, n=n, scheme="without"))
    assert plan.construction == "seq-swap-h" and a - plan.acceptance <= 1e-9
    choice = plan.info["seq-best"]
    assert len(choice["single_wide"]) > SINGLE_MAX and plan.single.size > SINGLE_MAX
    assert choice["swap_h_acceptance"] < a - 1e-4  # the three-token design fell short


def test_wide_single_plan_sampler_realises_its_law():
    """The sampler of a plan with five single picks (the row of seed 69) against plan.T: a
    G-test over the tokens with expected count >= 5 (the rest pooled), 2e5 tuples."""
    p, q, n = peaked_random_row(69)
    plan = build_plan(p, q, n, "seq-best")
    assert plan.single.size > 3
    rng = np.random.default_rng(69)
    N = 200_000
    t = drafts.WithoutReplacement(q, n).sample(rng, N)
    sel = t[np.arange(N), np.argmax(piece_levels(plan, t, rng), axis=1)]
    T = np.empty(len(q))
    T[plan.order] = plan.T
    obs = np.bincount(sel, minlength=len(q)).astype(float)
    exp = N * T / T.sum()
    big = exp >= 5
    o, e = np.r_[obs[big], obs[~big].sum()], np.r_[exp[big], exp[~big].sum()]
    keep = e > 0
    G = 2 * np.sum(np.where(o[keep] > 0, o[keep] * np.log(o[keep] / e[keep]), 0.0))
    assert G < chi2.ppf(1 - 1e-4, keep.sum() - 1), (G, o, e)
