"""The chain optimal verifier (mdsd_ot.verifiers.chain; proofs/optimal_verifier.md; issue 11).

Exact checks (Fractions, V <= 5, n <= 3): the output law equals p and the acceptance equals α*
of ``subset-exact`` for the exact constructions (i.i.d. drafts, conditional Poisson with n = 2,
n = 1), and lies within the certified ε (<= 1e-8 here) below it for the swap constructions
(sequential drafts, conditional Poisson with n >= 3).  Statistical checks: G-tests of simulated
outputs against p (top tokens plus a tail bucket) and acceptance within 4 standard errors, at
V = 2,000 (fast subset here; the full sweep and V = 152,064 are marked slow).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts, solve
from mdsd_ot.synthetic import synthetic_pair
from mdsd_ot.verifiers import get
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import ChainOptimal, build_plan, build_plans, construction_for
from mdsd_ot.verifiers.chain.exact import exact_plan
from mdsd_ot.verifiers.chain.rows import selection_law_at
from mdsd_ot.verifiers.chain.sample import draw_rows, sample_plan, sample_plans
from mdsd_ot.verifiers.optimal import ReducedOptimal, default_method
from testkit import g_test_pvalue

LAWS = (drafts.WithReplacement, drafts.WithoutReplacement, drafts.ConditionalPoisson)
EXACT = ("relabel", "cp2")
CERTIFIED = ("cp-pair", "cp-swap", "seq-swap", "seq-swap-h", "seq2", "seq-best", "seq-pair")
#: Largest certified shortfall accepted by the tests (the issue's target is 1e-6).
EPS_MAX = 1e-6


def _rational(x: np.ndarray) -> list[str]:
    fr = [Fraction(float(v)).limit_denominator(10**14) for v in x]
    total = sum(fr, Fraction(0))
    return [str(v / total) for v in fr]


def _dirichlet(rng: np.random.Generator, V: int, conc: float) -> np.ndarray:
    x = rng.gamma(conc, size=V)
    if not x.sum() > 0:  # tiny concentrations can underflow every entry
        x[rng.integers(V)] = 1.0
    return x / x.sum()


def _instance(rng: np.random.Generator, V: int, conc: float, kind: str):
    p, q = _dirichlet(rng, V, conc), _dirichlet(rng, V, conc)
    if kind == "ties":  # equal ratios p/q on half of the tokens
        q[: V // 2 + 1] = p[: V // 2 + 1]
    elif kind == "zeros":
        p[0] = 0.0 if p[1:].sum() > 0 else p[0]
        q[-1] = 0.0 if q[:-1].sum() > 0 else q[-1]
    elif kind == "tiny":
        q[min(1, V - 1)] = 1e-12
        p[min(2, V - 1)] = 1e-12
    return _rational(p / p.sum()), _rational(q / q.sum())


def _check_exact(law, p: list[str]) -> None:
    v = ChainOptimal(law)
    out, acc = v.exact(p)
    assert all(out[i] == Fraction(p[i]) for i in range(law.V)), (law.spec(), p)
    ref = solve(p, law, method="subset-exact").alpha_exact
    con = construction_for(law)
    if con in EXACT or law.n == 1:
        assert acc == ref, (law.spec(), p, acc, ref)
        return
    assert con in CERTIFIED
    ctx = v._setup([Fraction(x) for x in p], law, True)
    if ctx.construction == "seq2":  # two sequential drafts where the seq2 design fits: α*
        assert acc == ref, (law.spec(), p, acc, ref)
        return
    # the certified lower bound sum min(s, T) is within 1e-8 of alpha* (exact arithmetic)
    lower = ctx.acceptance
    assert ref - Fraction(1, 10**8) <= lower <= acc <= ref, (law.spec(), p, lower, acc, ref)


@pytest.mark.parametrize("cls", LAWS, ids=lambda c: c.__name__)
def test_exact_law_is_p_and_acceptance_is_alpha(cls):
    rng = np.random.default_rng([11, LAWS.index(cls)])
    done = 0
    for conc in (0.05, 0.3, 1.0, 5.0):
        for kind in ("plain", "ties", "zeros", "tiny"):
            for _ in range(2):
                V, n = int(rng.integers(2, 6)), int(rng.integers(1, 4))
                p, q = _instance(rng, V, conc, kind)
                try:
                    law = cls(q, n)
                except ValueError:  # fewer than n tokens with q > 0 for a distinct-token law
                    continue
                _check_exact(law, p)
                done += 1
    assert done >= 20


def test_default_method_and_engines():
    small = [0.5, 0.3, 0.2]
    assert default_method(drafts.WithReplacement(small, 3)) == "chain"
    assert default_method(drafts.ConditionalPoisson(small, 2)) == "chain"
    assert default_method(drafts.ConditionalPoisson(small, 3)) == "reduced"
    assert default_method(drafts.WithoutReplacement(small, 2)) == "reduced"
    assert default_method(drafts.WithoutReplacement(small, 1)) == "chain"
    assert default_method(drafts.Greedy(small, 2)) == "greedy"
    assert default_method(drafts.SpecHub(small)) == "spechub"
    big = np.full(2000, 1 / 2000)
    assert default_method(drafts.WithoutReplacement(big, 2)) == "chain"
    assert isinstance(get("optimal", drafts.WithReplacement(small, 2)).engine(), ChainOptimal)
    ref = get("optimal", drafts.WithReplacement(small, 2), method="reduced").engine()
    assert isinstance(ref, ReducedOptimal)
    with pytest.raises(ValueError, match="WithReplacement, WithoutReplacement or Conditional"):
        ChainOptimal(drafts.Greedy(small, 2))


def test_numpy_plan_matches_fractions():
    """The vectorised plan (lazy kernel rows, or the piece kernel's computed law) and the list
    plan (exact enumeration for the swap constructions and seq2) agree to 1e-12 on random
    floats."""
    rng = np.random.default_rng(5)
    for trial in range(60):
        V, n = int(rng.integers(2, 13)), int(rng.integers(1, 5))
        cls = LAWS[trial % 3]
        p = rng.dirichlet(np.full(V, 0.5))
        q = rng.dirichlet(np.full(V, 0.5))
        try:
            law = cls(q, n)
        except ValueError:
            continue
        con = construction_for(law)
        if con in CERTIFIED and V > 8:
            continue  # the list plan enumerates the law's tuples
        plan = build_plan(p, law.q, n, con)
        ex = ChainOptimal(law)._setup([Fraction(x) for x in p], law, True)
        if con == "seq2" and ex.construction != plan.construction:
            continue  # seq2 fits in one arithmetic and not in the other (a borderline case)
        if con not in CERTIFIED:
            ex = exact_plan([Fraction(x) for x in p], [Fraction(x) for x in law.q], n, con,
                            lambda H, law=law: law.Q(H, exact=True))  # fmt: skip
        assert abs(plan.acceptance - float(ex.acceptance)) <= 1e-12, (trial, con)
        T = np.empty(V)
        T[plan.order] = selection_law_at(plan, np.arange(V))
        big = law.q > 1e-9
        want = np.array([float(x) for x in ex.selection])
        assert np.max(np.abs(T - want)[big], initial=0.0) <= 1e-12, (trial, con, T, want)


def _draw_and_certify(p, law, size: int, seed) -> tuple[dict, float, float]:
    """``size`` draft tuples of ``law`` verified against p: the output passes the G-test;
    returns the certificate, the sampled acceptance and its standard error."""
    g = np.random.default_rng(seed)
    v = ChainOptimal(law)
    t = sample_drafts(law, g, size)
    out, acc = v.sample(p, t, g)
    assert g_test_pvalue(out, p) > 1e-4
    a_hat = float(acc.mean())
    return v.certificate(p), a_hat, float(np.sqrt(max(a_hat * (1 - a_hat), 1e-12) / size))


def _simulate(p, law, size: int, seed: int) -> None:
    cert, a_hat, se = _draw_and_certify(p, law, size, seed)
    if cert["construction"] in EXACT or law.n == 1:
        assert abs(cert["acceptance"] - cert["alpha_star"]) <= 1e-9, cert
        assert abs(a_hat - cert["acceptance"]) <= 4 * se + 1e-9, (a_hat, cert)
    else:  # certified lower bound within EPS_MAX of α*; the sample between it and α*
        assert cert["eps"] <= EPS_MAX, cert
        assert a_hat >= cert["acceptance"] - 4 * se and a_hat <= cert["alpha_star"] + 4 * se
    assert cert["law_error"] <= 1e-6 and cert["eps"] >= 0


def test_simulation_small_vocab_against_exact():
    """V = 4: the sampler's acceptance matches the exact one within 4 s.e.; output law p."""
    rng = np.random.default_rng(8)
    for cls in LAWS:
        for n in (2, 3):
            p = rng.dirichlet(np.full(4, 0.7))
            law = cls(rng.dirichlet(np.full(4, 0.7)), n)
            v = ChainOptimal(law)
            _, acc_exact = v.exact(p)
            g = np.random.default_rng([9, n, LAWS.index(cls)])
            t = sample_drafts(law, g, 100_000)
            out, acc = v.sample(p, t, g)
            assert g_test_pvalue(out, p) > 1e-4
            se = np.sqrt(acc_exact * (1 - acc_exact) / len(acc)) + 1e-12
            assert abs(acc.mean() - acc_exact) <= 4 * se, (cls.__name__, n, acc.mean(), acc_exact)


@pytest.mark.parametrize("cls", LAWS, ids=lambda c: c.__name__)
def test_vocab_2000_two_drafts(cls):
    p, q = synthetic_pair(2000, 1.0, np.random.default_rng(3), noise=1.0)
    _simulate(p, cls(q, 2), 20_000, seed=4)


@pytest.mark.slow
@pytest.mark.parametrize("V", [2000, 152_064])
@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("cls", LAWS, ids=lambda c: c.__name__)
def test_large_vocab_simulation(cls, n, V):
    p, q = synthetic_pair(V, 1.0, np.random.default_rng([V, n]), noise=1.0)
    _simulate(p, cls(q, n), 100_000, seed=[V, n, LAWS.index(cls)])


def test_batched_rows_equal_single_rows():
    """build_plans / sample_plans on a (B, V) batch give the per-row plans and draws."""
    rng = np.random.default_rng(12)
    B, V, n = 6, 40, 3
    P = rng.dirichlet(np.full(V, 0.4), size=B)
    Q = rng.dirichlet(np.full(V, 0.4), size=B)
    plans = build_plans(P, Q, n, "relabel")
    for b, plan in enumerate(plans):
        one = build_plan(P[b], Q[b], n, "relabel")
        assert np.array_equal(plan.order, one.order) and plan.acceptance == one.acceptance
    t = np.stack([drafts.WithReplacement(Q[b], n).sample(rng, 1)[0] for b in range(B)])
    a = sample_plans(plans, t, np.random.default_rng(1))
    g = np.random.default_rng(1)
    b_ = np.array([sample_plan(plans[b], t[b : b + 1], g)[0] for b in range(B)])
    assert np.array_equal(a, b_)
    assert np.array_equal(draw_rows(P, Q, n, "relabel", t, np.random.default_rng(1)), a)
    v = ChainOptimal(drafts.WithReplacement(Q[0], n))
    out, acc = v.sample_rows(P, Q, t, np.random.default_rng(1))
    assert np.array_equal(out, a) and acc.dtype == bool


def test_certificate_and_acceptance_method():
    p, q = synthetic_pair(500, 2.0, np.random.default_rng(1), noise=1.0)
    v = get("optimal", drafts.WithReplacement(q, 3))
    cert = v.certificate(p)
    assert cert["construction"] == "relabel" and cert["exact_optimum"]
    assert cert["eps"] <= 1e-12 and cert["law_error"] <= 1e-9
    assert v.has_closed_form(3)
    assert v.acceptance(p, q, 3) == pytest.approx(cert["alpha_star"], abs=1e-12)
    chain_seq = ChainOptimal(drafts.WithoutReplacement(q, 3))
    seq = chain_seq.certificate(p)
    assert seq["construction"] == "seq-pair" and not seq["exact_optimum"]
    assert 0 <= seq["eps"] <= EPS_MAX and seq["law_error"] <= 1e-6
    assert not chain_seq.has_closed_form(3) and chain_seq.has_closed_form(1)
    assert chain_seq.acceptance(p, q, 3) == pytest.approx(seq["acceptance"], abs=1e-15)


def test_slot_lookup_with_ties_and_zeros():
    """Counting keys (few tokens) and the inverse permutation give the same slots, with ties,
    q = 0 (key inf) and p = q = 0 (key nan)."""
    p = np.array([0.1, 0.1, 0.2, 0.0, 0.3, 0.3, 0.0])
    q = np.array([0.2, 0.2, 0.1, 0.0, 0.0, 0.3, 0.2])
    plan = build_plan(p / p.sum(), q / q.sum(), 2, "relabel")
    rank = plan.rank.copy()
    plan._rank = None
    for tok in range(len(p)):
        plan._rank = None  # force the counting path (it falls back to the permutation on nan)
        assert plan.slots_of(np.array([tok]))[0] == rank[tok]
    plan._rank = None
    assert np.array_equal(plan.slots_of(np.arange(len(p))), rank)


def _swap_eps(V: int, T: float, cls, n: int) -> dict:
    p, q = synthetic_pair(V, T, np.random.default_rng([V, n, 7]), noise=1.0)
    law = cls(q, n)
    if construction_for(law) == "seq2":  # seq-swap itself (the fallback of seq2 at n = 2)
        from mdsd_ot.fast import alpha_star

        plan = build_plan(p, law.q, n, "seq-swap")
        a = float(alpha_star(p, law.q, n=n, scheme=law.fast_kernel))
        return {"construction": plan.construction, "exact_optimum": False,
                "eps": max(0.0, a - plan.acceptance), "law_error": plan.law_error}  # fmt: skip
    return ChainOptimal(law).certificate(p)


@pytest.mark.parametrize("T", [0.5, 1.0, 2.0])
@pytest.mark.parametrize(
    "cls,n",
    [
        (drafts.WithoutReplacement, 2),
        (drafts.WithoutReplacement, 3),
        (drafts.ConditionalPoisson, 3),
    ],  # fmt: skip
    ids=["without-2", "without-3", "cp-3"],
)
def test_swap_certified_eps_vocab_2000(cls, n, T):
    """The swap constructions reach the issue's target ε <= 1e-6 (in fact ~1e-10) on the
    synthetic family at V = 2,000, with a law error bound below 1e-8."""
    cert = _swap_eps(2000, T, cls, n)
    assert cert["construction"] in CERTIFIED and not cert["exact_optimum"]
    assert 0 <= cert["eps"] <= 1e-8, cert
    assert cert["law_error"] <= 1e-8, cert


@pytest.mark.slow
@pytest.mark.parametrize("T", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("cls", [drafts.WithoutReplacement, drafts.ConditionalPoisson],
                         ids=lambda c: c.__name__)  # fmt: skip
def test_swap_certified_eps_four_drafts(cls, T):
    for V in (2000, 152_064):
        cert = _swap_eps(V, T, cls, 4)
        assert 0 <= cert["eps"] <= EPS_MAX and cert["law_error"] <= 1e-6, (V, cert)


def test_stream_counts_law():
    """The resampled stopped stream: draws of each draft (n = 3) match the geometric-multinomial
    law of Lemma 6' in mean (the first draft of a heavy token repeats most)."""
    from mdsd_ot.verifiers.chain.sample import stream_counts

    q = np.array([0.6, 0.3, 0.1])
    t = np.tile([0, 1, 2], (200_000, 1))
    N = stream_counts(t, q, np.random.default_rng(3))
    assert (N >= 1).all() and (N[:, 2] == 1).all()
    # repeats: gap 1 geometric(1 - 0.6): mean 1.5, all to token 0; gap 2 geometric(0.1): mean 9,
    # split 0.6 : 0.3 between tokens 0 and 1
    want = np.array([1 + 1.5 + 9 * 2 / 3, 1 + 9 / 3, 1])
    se = N.std(axis=0) / np.sqrt(len(N)) + 1e-12
    assert np.all(np.abs(N.mean(axis=0) - want) <= 5 * se), (N.mean(axis=0), want)


@pytest.mark.parametrize("V", [40, 3000])
@pytest.mark.parametrize("construction", ["relabel", "cp2", "seq-swap"])
def test_pooled_plans_equal_owned_plans(construction, V):
    """build_plan(pooled=True) gives the same plan and draws as an owned plan; its arrays are
    the thread's pool, which the next pooled plan reuses (the owned plan is untouched)."""
    rng = np.random.default_rng([V, 7])
    p, q = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
    n = 2
    owned = build_plan(p, q, n, construction)
    pooled = build_plan(p, q, n, construction, pooled=True)
    assert np.array_equal(owned.order, pooled.order) and owned.acceptance == pooled.acceptance
    for name in ("key", "c", "s", "dE"):
        a, b = getattr(owned, name), getattr(pooled, name)
        assert (a is None) == (b is None) and (a is None or np.array_equal(a, b)), name
    t = drafts.WithReplacement(q, n).sample(rng, 64)
    assert np.array_equal(
        sample_plan(owned, t, np.random.default_rng(1)),
        sample_plan(pooled, t, np.random.default_rng(1)),
    )
    order = owned.order.copy()
    p2, q2 = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
    again = build_plan(p2, q2, n, construction, pooled=True)
    assert np.shares_memory(again.order, pooled.order)  # the pool, reused
    assert np.array_equal(owned.order, order)  # an owned plan keeps its own arrays


def test_plan_cache_is_not_fooled_by_a_reused_id():
    """acceptance(p, q, n) builds a temporary law per call; a cache keyed by id() alone handed
    the next temporary (same id once the first is freed) the first law's plan."""
    from mdsd_ot import verifiers
    from mdsd_ot.drafts import WithReplacement
    from mdsd_ot.fast import alpha_star

    v = verifiers.get("optimal", WithReplacement([0.2, 0.3, 0.5], 2))
    p = np.array([0.5, 0.3, 0.2])
    for q in ([0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.2, 0.3, 0.5]):
        want = alpha_star(p, np.array(q), n=2, scheme="with")
        assert abs(v.acceptance(p, q, 2) - want) <= 1e-12  # tolerance: float rounding
