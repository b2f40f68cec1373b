"""The optimal verifier on drafts almost sure of one token (1 - q_max from 1e-8 to 1e-300).

A draft model that is confident puts all but 1e-8 ... 1e-30 of its mass on one token.  Three
quantities were formed as a difference with that token's mass and lost every digit there:

- the sequential series' denominators T - w(D) (``seqseries``): the certified bound grew as
  u / (1 - q_max) (0.3 at 1e-12, so ``seq-best`` took the stream plan and accepted 3e-4 where
  α* = 0.75), and ``choose_plan`` raised "math domain error" from 1e-16 on;
- the design model's :math:`e_m(H_y \\setminus x)` for the dominant x (``pieces``): the model
  asked nothing of the dominant demand token and the design stalled at a shortfall of 2e-4
  (1e-8) to 4e-2;
- the conditional-Poisson law's deflation of the dominant split token (``cutlaw.cp_law``): the
  bound grew as u / (1 - q_max) (0.3 at 1e-16).

Each is now a sum of non-negative terms.  Tolerances: ε = α* - acceptance against the fast α*
(itself exact to about 1e-12 here), the law's certified bound, and G-tests at p > 1e-4.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from mdsd_ot import drafts, fast
from mdsd_ot.drafts.conditional_poisson import elementary_symmetric
from mdsd_ot.fast._fused import disabled
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import ChainOptimal, _cutjit, build_plan, cutlaw, pieces
from testkit import g_test_pvalue


def _row(V: int, rest: float, seed: int = 0, heavy: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """p from a flat Dirichlet; q with mass ``rest`` spread at random over the last V - heavy
    tokens and the remainder on the first ``heavy`` tokens (shares 0.6 : 0.4 : 0.3)."""
    g = np.random.default_rng(seed)
    q = g.random(V)
    q[:heavy] = 0.0
    q = q / q.sum() * rest
    share = np.array([0.6, 0.4, 0.3][:heavy])
    q[:heavy] = (1.0 - q.sum()) * share / share.sum()
    return g.dirichlet(np.ones(V)), q


LAWS = {
    "seq": (drafts.WithoutReplacement, "seq-best"),
    "cp": (drafts.ConditionalPoisson, "cp-swap"),
}


@pytest.mark.parametrize("rest", [1e-8, 1e-12, 1e-16, 1e-30, 1e-150, 1e-200, 1e-300])
@pytest.mark.parametrize("law, n", [("seq", 3), ("seq", 4), ("cp", 3), ("cp", 4)])
def test_plans_attain_alpha_star(law, n, rest):
    """One token holds all but ``rest`` of q (V = 2,000).  From 1e-150 on e_n(q) underflows
    (about 1e-450 ... 1e-900): the law and the design's model are computed from 2^k q
    (``drafts.sampling.scale_exponent``); before, conditional Poisson accepted nothing
    (ε = 0.73 at n = 3, 0.82 at n = 4) and the sequential design stalled at ε = 2.2e-4 (n = 3)
    and 9.9e-3 (n = 4).  The sequential series' certified bound is 1.3e-9 at 1e-100 already
    and at most 1.8e-9 below; 3e-9 there.  Where ``seq-best`` takes ``seq-pair`` (rest 1e-8 and
    1e-12) its bound holds D's, the series' bounds of two prefixes summed over the slots:
    8.5e-10 (n = 3) and 1.3e-9 (n = 4); 2e-9 there."""
    cls, con = LAWS[law]
    p, q = _row(2000, rest)
    d = cls(q, n)
    plan = build_plan(p, d.q, n, con)
    a = float(fast.alpha_star(p, d))
    assert 0.0 <= a - plan.acceptance <= 1e-8, (a, plan.acceptance, plan.construction)
    pair = plan.construction == "seq-pair"
    assert plan.law_error <= (2e-9 if pair else 1e-9 if rest >= 1e-30 else 3e-9)


@pytest.mark.parametrize("heavy", [2, 3])
@pytest.mark.parametrize("law", ["seq", "cp"])
def test_plans_attain_alpha_star_with_several_heavy_tokens(law, heavy):
    """Two or three tokens share all but 1e-16 of q (0.6 : 0.4 : 0.3), n = 4: before the
    levels of every dominant slot were formed on their own, the second one's alternating sum
    lost every digit (ε = 2.3e-3, and a conditional-Poisson law bound of 3 once designed)."""
    cls, con = LAWS[law]
    p, q = _row(2000, 1e-16, heavy=heavy)
    d = cls(q, 4)
    plan = build_plan(p, d.q, 4, con)
    a = float(fast.alpha_star(p, d))
    assert 0.0 <= a - plan.acceptance <= 1e-8, (a, plan.acceptance, plan.construction)
    assert plan.law_error <= 1e-9


def _simulate(p: np.ndarray, laws, seed: int, size: int = 100_000, short: bool = False) -> None:
    """``size`` verified tuples per law: the output passes the G-test against p and the
    acceptance is within 4 s.e. of α* (``short``: at least the plan's certified acceptance,
    less 4 s.e., for plans that fall short of α*)."""
    for d in laws:
        v = ChainOptimal(d)
        g = np.random.default_rng(seed)
        out, acc = v.sample(p, sample_drafts(d, g, size), g)
        assert g_test_pvalue(out, p) > 1e-4
        a = v.certificate(p)["acceptance"] if short else float(fast.alpha_star(p, d))
        a_hat = float(acc.mean())
        se = float(np.sqrt(a_hat * (1 - a_hat) / size))
        assert a_hat - a >= -4 * se if short else abs(a_hat - a) <= 4 * se, (a_hat, a, se)


def test_simulation_near_a_point_mass():
    """10^5 verified tuples per law at 1 - q_max = 1e-16 (V = 2,000).  Seed 6: with seed 5 the
    seq G-test gave p = 8.6e-5 once tuples whose stream repeats more than 2^32 times went to
    stream_select (6 more seeds at 3e5 draws: p 0.19-0.71)."""
    p, q = _row(2000, 1e-16, seed=3)
    _simulate(p, (drafts.WithoutReplacement(q, 3), drafts.ConditionalPoisson(q, 3)), seed=6)


def test_simulation_with_underflowing_tails():
    """10^5 verified tuples per law at 1 - q_max = 1e-200 (V = 300, n = 4): the plans built
    from 2^k q are lossless and accept α* (the conditional-Poisson drafts themselves come from
    the sampler's tables of 2^k q, which drew the same light tokens every time before)."""
    p, q = _row(300, 1e-200, seed=4)
    _simulate(p, (drafts.WithoutReplacement(q, 4), drafts.ConditionalPoisson(q, 4)), seed=7)


def test_simulation_with_three_heavy_tokens_and_tails_of_1e_300():
    """n = 5 from V = 10: three heavy tokens beside tails of 1e-300.  The rescaled sampler
    tables overflowed and drew degenerate sets, so the plan, whose law is right, met drafts
    of another law (G-test p = 0); the sampler now takes logarithmic tables.  The acceptance
    reaches the plan's certified figure (4 s.e.)."""
    t = np.random.default_rng(0).random(7)
    t = t / t.sum() * 1e-300
    q = np.r_[np.array([0.6, 0.4, 0.3]) / 1.3 * (1 - t.sum()), t]
    p = np.random.default_rng(9).dirichlet(np.ones(10))
    # the design falls short here (e_m of 2^k q overflow for m < n, proofs §4.1)
    _simulate(p, (drafts.ConditionalPoisson(q, 5),), seed=11, short=True)


def test_underflowing_conditional_poisson_law_is_refused_not_divided_by_zero(monkeypatch):
    """Without the rescaling (forced off), e_n(q) underflows at 1 - q_max = 1e-300: cp_law
    reports no law (bound inf) and the plan accepts nothing (the verifier then outputs its
    residual, p itself, so the plan's law error is 0 and ``info["no_law"]`` says why), instead
    of a ZeroDivisionError.  The refusal stays as the guard of any underflow left.  Since
    2026-12-07 such a design, on a row whose n-set weights underflow, gives way to ``top``
    (its sampler read NaN piece probabilities on other rows: tests/verifiers/test_cp_underflow.py)."""
    monkeypatch.setattr(cutlaw, "scale_exponent", lambda qs, n: 0)
    monkeypatch.setattr(pieces, "scale_exponent", lambda qs, n: 0)
    p, q = _row(300, 1e-300)
    plan = build_plan(p, q, 3, "cp-swap")
    fb = plan.info["fallback"]
    assert plan.construction == "top" and fb["construction"] == "cp-swap"
    assert fb["acceptance"] == 0.0  # the design had no law: it accepted nothing
    assert fb["reason"] == "top accepts more" and plan.law_error <= 1e-9


def test_cp_law_is_the_same_for_scaled_q():
    """cp_law(2^j q) = cp_law(q) bit for bit where nothing underflows (the law uses q only
    through ratios to e_n), so the rescaling changes no digit of an ordinary row's law."""
    p, q = _row(60, 1e-3, seed=2)
    n = 3
    plan = build_plan(p, q, n, "cp-swap")
    kern, qs = plan.pieces, q[plan.order]
    T0, b0 = cutlaw.cp_law(qs, n, kern)
    T1, b1 = cutlaw.cp_law(np.ldexp(qs, 20), n, kern)
    assert np.array_equal(T0, T1) and b0 == b1


def test_dominant_levels_are_exact():
    """e_m(H_j minus x) of each dominant slot within 1e-15 relative of the Fractions, where the
    alternating sum of pair_coefficients has no correct digit (the light masses 1e-9)."""
    qs = np.array([2e-10, 0.7 - 1e-9, 5e-10, 0.3, 3e-10])
    assert pieces.dominant_slots(qs, 4) == [1, 3]
    assert pieces.dominant_slots(qs, 2) == [1]  # at most n - 1
    lv = pieces.dominant_levels(qs, 4)
    fr = [Fr(float(v)) for v in qs]
    E = pieces.cp_levels(qs, 4)
    for x in (1, 3):
        for m in range(5):
            for j in range(6):
                want = elementary_symmetric([fr[i] for i in range(j) if i != x], m, Fr(1))[m]
                got = Fr(float(lv[x][m][j]))
                assert abs(got - want) <= Fr(1, 10**15) * want, (x, m, j)
    want = float(lv[1][3][5])  # e_3 of the others: 0.3 times e_2 of the light masses
    alt = pieces._without(E, np.array([5]), np.array([qs[1]]), 3)[0]
    assert abs(alt - want) > 0.5 * want  # the alternating sum: no digit left
    assert pieces.dominant_levels(np.full(20, 0.05), 3) is None  # none above a tenth


def _exact_cp_law(q: np.ndarray, n: int, kern: pieces.PieceKernel) -> list[Fr]:
    """T_k = sum over k's pieces of Phi(after) - Phi(before), Phi = e_n(q b) / e_n(q), in
    Fractions for the float kernel and float q."""
    qf = [Fr(float(v)) for v in q]
    V = len(qf)
    en = elementary_symmetric(qf, n, Fr(1))[n]
    b, T, prev = [Fr(0)] * V, [Fr(0)] * V, Fr(0)
    for k, pr in zip(kern.tok.tolist(), kern.prob.tolist(), strict=True):
        b[k] += Fr(pr)
        cur = elementary_symmetric([qf[i] * b[i] for i in range(V)], n, Fr(1))[n] / en
        T[k] += cur - prev
        prev = cur
    return T


@pytest.mark.parametrize("heavy", [1, 2])
@pytest.mark.parametrize("rest", [1e-6, 1e-12, 1e-20])
def test_cp_law_of_split_dominant_tokens(rest, heavy):
    """The dominant token (or two: 0.6 : 0.4) split into several pieces among the others'
    lifted and dropped pieces: the law within its bound of the exact law, the bound
    (it was about u / rest) below 1e-12, the compiled and numpy routes bitwise equal."""
    g = np.random.default_rng(8)
    V = 7
    q = g.random(V) * rest
    share = np.array([0.6, 0.4][:heavy])
    q[:heavy] = (1.0 - q[heavy:].sum()) * share / share.sum()
    x = np.array([0, 0, 0, 0, 1, 1, 2])
    y = np.array([2, 3, 4, 6, 3, 5, 6])
    a = np.array([0.1, 0.15, 0.2, 0.05, 0.2 * q[1], 0.3 * q[1], 0.2 * q[2]])
    b = np.array([0.3 * q[2], 0.2 * q[3], 0.1 * q[4], 0.25 * q[6], 0.1 * q[3], 0.3 * q[5],
                  0.1 * q[6]])  # fmt: skip
    kern = pieces.build_pieces(q, x, y, a, b)
    assert np.count_nonzero(kern.tok == 0) == 5 and np.count_nonzero(kern.tok == 1) == 3
    for n in (3, 4):
        T, err = cutlaw.cp_law(q, n, kern)
        exact = _exact_cp_law(q, n, kern)
        dev = sum(abs(Fr(float(u)) - w) for u, w in zip(T, exact, strict=True))
        assert dev <= Fr(err) and err <= 1e-12, (n, float(dev), err)
        if _cutjit.enabled():
            with disabled():
                T0, err0 = cutlaw.cp_law(q, n, kern)
            assert np.array_equal(T, T0) and err == err0


def _two_heavy(V: int, rest: float, seed: int, tails: str = "rand") -> np.ndarray:
    """Two tokens (0.6 : 0.4) hold all but ``rest``; ``rand``: the rest at random over the
    others, ``mix``: one other at ``rest``, the others at 1e-300; shuffled (seeded)."""
    g = np.random.default_rng(seed)
    if tails == "rand":
        t = g.random(V - 2)
        t = t / t.sum() * rest
    else:
        t = np.full(V - 2, 1e-300)
        t[0] = rest
    return np.r_[np.array([0.6, 0.4]) * (1 - t.sum()), t][g.permutation(V)]


def test_design_retries_the_model_on_q_itself_where_the_rescaled_one_falls_short(monkeypatch):
    """Sequential, two heavy tokens beside tails of 1e-200 (V = 300, n = 4, a peaked p): the
    design on 2^k q stalled at ε = 2.1e-3 in all its runs, and the retry with the model on q
    itself (``retry["kept"] == "raw"``) reached 1.3e-5.  Since the model's singular-system test
    is relative to the products of its own determinant (2026-12-06) the first run reaches
    ε ≤ 1e-12.  The retry is checked with runs on 2^k q that are made to stall."""
    from mdsd_ot.verifiers.chain import pieces

    q = _two_heavy(300, 1e-200, 466)
    p = np.random.default_rng(1466).dirichlet(np.full(300, 0.05))
    d = drafts.WithoutReplacement(q, 4)
    plan = build_plan(p, d.q, 4, "seq-best")
    assert float(fast.alpha_star(p, d)) - plan.acceptance <= 1e-12
    assert "retry" not in plan.info  # the first run converged

    real = pieces.design

    def stalls_when_rescaled(*args, **kw):
        kern, T, err, info = real(*args, **kw)
        if kw.get("rescale", True):  # the runs on 2^k q: report a stall
            info = dict(info, shortfall=2.1e-3)
        return kern, T, err, info

    monkeypatch.setattr(pieces, "design", stalls_when_rescaled)
    plan = build_plan(p, d.q, 4, "seq-best")
    assert plan.info["retry"]["kept"] == "raw"
    assert plan.info["retry"]["first"]["shortfall"] == 2.1e-3
    assert float(fast.alpha_star(p, d)) - plan.acceptance <= 2e-5


def test_cp_swap_gives_way_to_top_where_top_accepts_more():
    """Conditional Poisson, n = 5, two heavy tokens, one light token at 1e-100 and the rest at
    1e-300 (V = 2,000, a peaked p): the certified design falls 0.067 short, the top plan 9.4e-8;
    the plan kept is top, the design's figures in ``info["fallback"]``."""
    q = _two_heavy(2000, 1e-100, 579, tails="mix")
    p = np.random.default_rng(1579).dirichlet(np.full(2000, 0.05))
    d = drafts.ConditionalPoisson(q, 5)
    plan = build_plan(p, d.q, 5, "cp-swap")
    assert plan.construction == "top"
    fb = plan.info["fallback"]
    assert fb["reason"] == "top accepts more" and fb["acceptance"] < plan.acceptance
    assert float(fast.alpha_star(p, d)) - plan.acceptance <= 1e-6
    assert plan.law_error <= 1e-9


@pytest.mark.parametrize("law, n", [(drafts.ConditionalPoisson, 3), (drafts.ConditionalPoisson, 4),
                                    (drafts.WithoutReplacement, 3), (drafts.WithoutReplacement, 4)])  # fmt: skip
def test_heavy_demand_beside_zero_p_tails(law, n):
    """1 - q_max = 1e-15 spread evenly over 49 tails, p flat except two zeros (V = 50): the
    model's pairs of the heavy token had h and J near 1e15 and 1e13, its 2x2 system was taken
    for singular (det against (I + h + h')(J + h + h')), every pair got the same tiny flat
    masses, and the design stalled at ε = 0.057-0.067 (a second fuzz, 2026-12-06)."""
    V = 50
    q = np.full(V, 1e-15 / (V - 1))
    q[0] = 1 - 1e-15
    p = np.ones(V)
    p[1:3] = 0
    p /= p.sum()
    d = law(q, n)
    plan = build_plan(p, d.q, n, "cp-swap" if law is drafts.ConditionalPoisson else "seq-best")
    assert float(fast.alpha_star(p, d)) - plan.acceptance <= 1e-9
    assert plan.law_error <= 1e-9
