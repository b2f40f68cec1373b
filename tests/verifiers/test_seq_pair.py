"""The thinned pair rule for sequential drafts (``seq-pair``; proofs/optimal_verifier.md §12)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts
from mdsd_ot.fast import alpha_star
from mdsd_ot.synthetic import synthetic_pair
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import ChainOptimal, build_plan
from mdsd_ot.verifiers.chain.plan import chain_order
from mdsd_ot.verifiers.chain.seqpair import exact_factor, seq_pair_plan, thinning
from testkit import check_exact_pair_plan, g_test_pvalue

SEQ = "without"


def _rational(x: np.ndarray) -> list[Fraction]:
    fr = [Fraction(int(round(v * 10**6)) + 1, 10**6) for v in x]
    t = sum(fr)
    return [v / t for v in fr]


def test_thinning_is_at_most_one_exactly_and_the_floats_follow_it():
    """Lemmas 16 and 16' for the stored weights: r(S) <= 1 in exact arithmetic (Fractions of
    the float u, the law of q / Σ q) on every n-set of random rows, peaked ones and drafts
    within 1e-6 of a point mass included, and the sampler's float r(S) is within its declared
    relative error of the exact one."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for trial in range(40):
        V, n = int(rng.integers(4, 8)), int(rng.integers(3, 6))
        if n >= V:
            continue
        q = rng.dirichlet(np.full(V, float(rng.choice([0.1, 0.5, 2.0]))))
        if trial % 4 == 0:  # a draft almost sure of one token
            q[0] += 1e6
        th = thinning(q, n)
        sets = np.array(list(itertools.combinations(range(V), n)))
        approx = th.factor(sets)
        qf = [Fraction(float(x)) for x in q]  # the law of q / Σ q, exactly
        tot = sum(qf)
        for S, a in zip(sets, approx, strict=True):
            r = exact_factor([qf[j] / tot for j in S], [Fraction(float(th.u[j])) for j in S])
            assert r <= 1, (trial, S)
            rel = abs(Fraction(float(a)) - r) / r
            assert rel <= th.rel_error, (trial, S, float(rel))
            worst = max(worst, float(rel))
    assert worst > 0.0  # the floats do round


def _check_exact(p: list, q: list, n: int, trial: int) -> bool:
    """Where ``seq-best`` takes ``seq-pair`` on rational rows,
    :func:`testkit.check_exact_pair_plan` (exact output law p, the float law within its
    bound, acceptance within 1e-8 of α*); False where the plan is another construction."""
    pf, qf = np.array([float(x) for x in p]), np.array([float(x) for x in q])
    plan = build_plan(pf / pf.sum(), qf / qf.sum(), n, "seq-best")
    if plan.construction != "seq-pair":
        return False
    check_exact_pair_plan(plan, p, q, n, drafts.WithoutReplacement, trial)
    return True


def test_exact_law_is_p_and_close_to_the_float_law():
    """Small V, rational input, Dirichlet concentrations 0.3-3: where ``seq-best`` takes
    ``seq-pair`` (relays included) the exact output law is p, the exact selection law is
    within the plan's law error of the float one, and the acceptance within 1e-8 of α*."""
    rng = np.random.default_rng(3)
    used = relays = 0
    for trial in range(60):
        V, n = int(rng.integers(4, 7)), int(rng.integers(3, 5))
        if n >= V:
            continue
        conc = float(rng.choice([0.3, 1.0, 3.0]))
        p = _rational(rng.dirichlet(np.full(V, conc)))
        q = _rational(rng.dirichlet(np.full(V, conc)))
        if _check_exact(p, q, n, trial):
            used += 1
            pf, qf = np.array([float(x) for x in p]), np.array([float(x) for x in q])
            relays += "relay" in build_plan(pf / pf.sum(), qf / qf.sum(), n, "seq-best").info
    assert used >= 20 and relays >= 1, (used, relays)


def test_the_rule_moves_selection_mass_as_the_formula_says():
    """The float law of the plan (D plus the thinned flows) against the law of the rule by
    enumeration of the ordered draws in floats of the plan's own numbers: n = 3 at V = 7
    (with a relay and without), n = 4 at V = 12 (two blocks)."""
    for V, n, seed, relay in ((7, 3, 0, False), (7, 3, 4, True), (12, 4, 2, False)):
        p, q = synthetic_pair(V, 1.0, np.random.default_rng([seed, n]), noise=1.0)
        plan = seq_pair_plan(p, q, n, chain_order(p, q))
        assert not isinstance(plan, str), plan
        assert ("relay" in plan.info) == relay
        T = np.zeros(V)
        for tup in itertools.permutations(range(V), n):
            pr, seen = 1.0, 0.0
            for k in tup:
                pr *= q[k] / (1.0 - seen)
                seen += q[k]
            own = plan.slots_of(np.array(tup))[None, :]
            y = int(own.max())
            lam = plan.pair.hand_over(np.full(n, y), own[0]) * plan.pair.thin.factor(own)[0]
            for tok, la in zip(tup, lam, strict=True):
                T[tok] += pr * la
            T[plan.order[y]] += pr * (1.0 - lam.sum())
        Tp = np.empty(V)
        Tp[plan.order] = plan.T
        assert np.abs(T - Tp).sum() <= plan.law_error + 1e-13


@pytest.mark.parametrize("n", [3, 4])
def test_draws_at_a_real_vocabulary(n):
    """V = 20,000: the default verifier of sequential drafts takes ``seq-pair``, ε <= 1e-9, and
    50,000 draws pass the G-test against p with an acceptance within 4 standard errors of the
    certified one."""
    p, q = synthetic_pair(20_000, 1.0, np.random.default_rng([7, n]), noise=1.0)
    law = drafts.WithoutReplacement(q, n)
    v = ChainOptimal(law)
    cert = v.certificate(p)
    assert cert["construction"] == "seq-pair" and 0 <= cert["eps"] <= 1e-9
    assert cert["law_error"] <= 1e-7 and cert["hold_back"] in ("min", "bottom")
    assert 0 < cert["set_sum"] < 1 and cert["seq-best"]["pair"] is None
    g = np.random.default_rng([8, n])
    out, acc = v.sample(p, sample_drafts(law, g, 50_000), g)
    assert g_test_pvalue(out, p) > 1e-4
    se = float(np.sqrt(cert["acceptance"] * (1 - cert["acceptance"]) / len(acc)))
    assert abs(float(acc.mean()) - cert["acceptance"]) <= 4 * se + 1e-9


def test_the_benchmark_row_at_the_largest_vocabulary():
    """V = 152,064, T = 1 (the row of benchmarks/optimal_verifier.py, section 1), n = 3 and 4:
    ``seq-pair`` with ε <= 1e-9 and a law bound <= 1e-6."""
    p, q = synthetic_pair(152_064, 1.0, np.random.default_rng(1), noise=1.0)
    for n in (3, 4):
        plan = build_plan(p, q, n, "seq-best")
        a = float(alpha_star(p, q, n=n, scheme=SEQ))
        assert plan.construction == "seq-pair", plan.info["seq-best"]
        assert 0 <= a - plan.acceptance <= 1e-9 and plan.law_error <= 1e-6


def test_where_the_design_is_not_a_rule_seq_best_designs_the_swap():
    """A cold row (T = 0.3): the thinned hand-overs ask more than 1 of some draft set, so
    ``seq-best`` keeps its other plans and records why; asked for directly, ``seq-pair``
    gives way to ``seq-best``'s plan with ``info["pair"]``."""
    p, q = synthetic_pair(300, 0.3, np.random.default_rng(1), noise=1.0)
    why = seq_pair_plan(p, q, 4, chain_order(p, q))
    assert isinstance(why, str) and "not a rule" in why
    plan = build_plan(p, q, 4, "seq-best")
    assert plan.construction != "seq-pair"
    assert "not a rule" in plan.info["seq-best"]["pair"]
    direct = build_plan(p, q, 4, "seq-pair")
    assert direct.construction == plan.construction and "not a rule" in direct.info["pair"]


def test_two_drafts_are_declined_with_a_reason():
    """n < 3 is ``seq2``'s: a reason, not a plan."""
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.5, 0.5, 0.0])
    assert seq_pair_plan(p, q, 2, np.arange(3)) == "n < 3 or V <= n"


# --- many positions at once (batched_pairs.pair_rows(law="without")) ---------------------------


def _seq_rows(V: int, specs) -> tuple[np.ndarray, np.ndarray]:
    rows = [synthetic_pair(V, T, np.random.default_rng(s), noise=1.0) for s, T in specs]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def test_rows_are_the_one_position_plans():
    """pair_rows(law="without") on a batch of fitting and non-fitting rows (V = 300, n = 3, 4):
    the same rows fit as for seq_pair_plan, with the same reasons, α (1e-12), law (1e-13) and
    law bound (within 1 %); the thinning of the batched draws is SetThinning.factor's (1e-14)."""
    from mdsd_ot.verifiers.chain.batched_pairs import _thin_factor, pair_rows
    from mdsd_ot.verifiers.chain.plan import heavy_last, sort_keys

    P, Q = _seq_rows(300, ((0, 1.0), (1, 0.3), (2, 2.0), (3, 0.5), (4, 1.0)))
    for n in (3, 4):
        plans = pair_rows(P, Q, n, law="without")
        fits = np.asarray(plans.fits)
        assert fits.any() and not fits.all(), fits
        for b in range(len(P)):
            order = heavy_last(chain_order(P[b], Q[b]), sort_keys(P[b], Q[b]), Q[b])
            one = seq_pair_plan(P[b], Q[b], n, order)
            assert fits[b] == (not isinstance(one, str)), (n, b, one)
            if not fits[b]:
                assert plans.why[b] == one
                continue
            assert abs(float(plans.alpha[b]) - one.acceptance) <= 1e-12
            assert np.abs(plans.T[b] - one.T).max() <= 1e-13
            assert plans.law_error[b] == pytest.approx(one.law_error, rel=1e-2)
            sets = np.random.default_rng([n, b]).permuted(np.tile(np.arange(300), (50, 1)), axis=1)
            sets = sets[:, :n]
            r1 = one.pair.thin.factor(sets)
            r2 = _thin_factor(tuple(x[b : b + 1] for x in plans.thin), sets[None])[0]
            assert np.allclose(r1, r2, rtol=1e-14, atol=0)


def test_verify_rows_numpy_and_torch():
    """verify_rows(construction="seq-pair"), V = 300, n = 3, on numpy and CPU torch: rows that
    fit are drawn from the batched plans, the others on the host by ``seq-best``'s plan; every
    row's 40,000 outputs pass the G-test against p with an acceptance within 4 standard errors
    of its certified one; torch's plans are numpy's (1e-12)."""
    from mdsd_ot.verifiers.chain.batched import verify_rows
    from mdsd_ot.verifiers.chain.plan import build_plan

    n, N = 3, 40_000
    P, Q = _seq_rows(300, ((0, 1.0), (1, 0.3), (2, 2.0)))
    g = np.random.default_rng(41)
    t = np.stack([sample_drafts(drafts.WithoutReplacement(Q[b], n), g, N) for b in range(3)])
    out, acc, plans = verify_rows(P, Q, n, t, g, construction="seq-pair", return_plans=True)
    fits = np.asarray(plans.fits)
    assert fits.any() and not fits.all(), fits
    for b in range(3):
        if not fits[b]:
            one = build_plan(P[b], Q[b], n, "seq-pair")
            assert one.construction != "seq-pair" and "pair" in one.info
            assert abs(float(plans.alpha[b]) - one.acceptance) <= 1e-12
        a = float(alpha_star(P[b], Q[b], n=n, scheme=SEQ))
        assert 0.0 <= a - float(plans.alpha[b]) <= 1e-9
        assert g_test_pvalue(out[b], P[b]) > 1e-4, b
        assert abs(float(acc[b].mean()) - float(plans.alpha[b])) <= 4 * np.sqrt(0.25 / N)
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    from mdsd_ot.verifiers.chain.batched_pairs import pair_rows

    Pn, Qn = P / P.sum(axis=1, keepdims=True), Q / Q.sum(axis=1, keepdims=True)
    a, b = pair_rows(Pn, Qn, n, law="without"), pair_rows(torch.tensor(Pn), torch.tensor(Qn), n,
                                                          law="without")  # fmt: skip
    assert np.array_equal(np.asarray(b.fits), fits) and a.why == b.why
    for name in ("T", "acc", "theta", "g", "alpha", "law_error"):
        x, y = np.asarray(getattr(a, name)), getattr(b, name).numpy()
        assert np.allclose(x[fits], y[fits], rtol=1e-12, atol=1e-15), name
    Pt, Qt, tt = torch.tensor(P), torch.tensor(Q), torch.tensor(t[:, :2000])
    o2, a2 = verify_rows(Pt, Qt, n, tt, torch.Generator().manual_seed(3), construction="seq-pair")
    assert o2.shape == (3, 2000) and torch.equal(a2, (tt == o2[..., None]).any(dim=-1))


def test_verify_rows_refuses_two_drafts_and_repeats():
    from mdsd_ot.verifiers.chain.batched import verify_rows

    p, q = synthetic_pair(50, 1.0, np.random.default_rng(0), noise=1.0)
    with pytest.raises(ValueError, match="seq-pair is the sequential-drafts verifier for n >= 3"):
        verify_rows(p[None], q[None], 2, np.array([[0, 1]]), 0, construction="seq-pair")
    with pytest.raises(ValueError, match="WithoutReplacement"):
        verify_rows(p[None], q[None], 3, np.array([[0, 1, 1]]), 0, construction="seq-pair")


def test_tensor_rows_of_sequential_drafts_route_by_device(monkeypatch):
    """``ChainOptimal(WithoutReplacement(q, 4)).sample_rows`` on torch tensors: on the CPU the
    numpy route (``device_route`` is False for ``seq-pair`` there); on another device (here
    forced on for CPU tensors, the host copy made to fail) ``verify_rows(construction=
    "seq-pair")`` draws the rows at once."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    from mdsd_ot.verifiers.chain import verifier as chain_verifier

    n = 4
    P, Q = _seq_rows(300, ((0, 1.0), (2, 2.0)))
    rng = np.random.default_rng(8)
    t = np.stack([sample_drafts(drafts.WithoutReplacement(Q[b], n), rng, 50) for b in range(2)])
    v = ChainOptimal(drafts.WithoutReplacement(Q[0], n))
    Pt, Qt, tt = torch.tensor(P), torch.tensor(Q), torch.tensor(t)
    assert not chain_verifier.device_route("seq-pair", Pt)

    def refuse(*a, **k):
        raise AssertionError("copied to the host")

    monkeypatch.setattr(chain_verifier, "on_host", refuse)
    monkeypatch.setattr(chain_verifier, "device_route", lambda con, P: con == "seq-pair")
    out, acc = v.sample_rows(Pt, Qt, tt, torch.Generator().manual_seed(0))
    assert out.shape == (2, 50) and torch.equal(acc, (tt == out[..., None]).any(dim=-1))


@pytest.mark.parametrize("gap", [1e-8, 1e-12, 1e-14, 1e-15])
def test_weights_stay_positive_and_exact_near_a_point_mass(gap):
    """A draft within ``gap`` of a point mass (V = 6, n = 3 and 4): the stored weights are
    positive and finite and r(S) <= 1 in exact arithmetic on every set (the earlier slack,
    1 - 4n^2 u / (1 - q), was negative from about 1e-14 on); where ``seq-best`` takes
    ``seq-pair`` the exact output law is p."""
    rng = np.random.default_rng(int(-np.log10(gap)))
    used = 0
    for n in (3, 4):
        q = np.concatenate([[1.0 - gap], rng.dirichlet(np.ones(5)) * gap])
        q = q / q.sum()
        th = thinning(q, n)
        assert np.all(th.u > 0) and np.all(np.isfinite(th.u))
        qf = [Fraction(float(x)) for x in q]
        tot = sum(qf)
        for S in itertools.combinations(range(6), n):
            r = exact_factor([qf[j] / tot for j in S], [Fraction(float(th.u[j])) for j in S])
            assert 0 < r <= 1, (n, S)
        p = rng.dirichlet(np.ones(6))
        pr, qr = _rational(p), [x / tot for x in qf]
        used += _check_exact(pr, qr, n, n)  # checks only where the plan is seq-pair
    assert used >= 1 or gap < 1e-14  # n = 3 takes seq-pair down to 1e-14


@pytest.mark.parametrize("row", ["review", "fits"])
def test_rows_within_rounding_of_a_point_mass(row):
    """1 - q_h of 3e-16 and 1.2e-14, n = 4.  On the first (a review's row) the weights' earlier
    slack made u_h negative, the scaling returned negative θ, the rule check saw nothing
    (set_sum 0) and the sampler's law was 1.0e-3 from p; now its weights are positive and
    ``seq-best`` designs another plan.  On the second ``seq-pair`` fits: its hand-overs are
    non-negative, every draft set hands over at most 1, and its float law is within its bound
    of the law of the rule the sampler runs (enumeration of the ordered draws, Fractions)."""
    if row == "review":
        p = [0.07868304503705806, 0.1881830387168638, 0.07287343503397206,
             0.09641664087074368, 0.11586907962965942, 0.1973729647072287,
             0.25060179600447413]  # fmt: skip
        q = [0.9999999999999997, 4.687783614537522e-17, 6.253548987764489e-22,
             3.086314808279207e-16, 4.020619599578762e-19, 2.175325829655824e-17,
             1.5695450149006834e-17]  # fmt: skip
    else:
        p = [0.004397164123239988, 0.18743773687902013, 0.0013878466670179115,
             0.33968059784599985, 0.05945483112046861, 0.3454348988728812,
             0.0622069244913722]  # fmt: skip
        q = [0.999999999999988, 4.258315846359782e-21, 4.647138464575839e-15,
             1.3032397864268915e-15, 6.058121879184469e-15, 1.0639258339248926e-23,
             4.5259673862729775e-20]  # fmt: skip
    p, q, n = np.array(p), np.array(q), 4
    th = thinning(q, n)
    assert not isinstance(th, str) and np.all(th.u > 0)
    plan = build_plan(p, q, n, "seq-best")
    assert (plan.construction == "seq-pair") == (row == "fits"), plan.construction
    if row == "review":
        return
    assert np.all(plan.pair.theta >= 0) and np.all(plan.pair.g >= 0)
    qf = [Fraction(float(x)) for x in q]
    tot = sum(qf)
    T = np.zeros(len(q))
    for tup in itertools.permutations(range(len(q)), n):
        pr, seen = Fraction(1), Fraction(0)
        for k in tup:
            pr *= (qf[k] / tot) / (1 - seen)
            seen += qf[k] / tot
        own = plan.slots_of(np.array(tup))[None, :]
        y = int(own.max())
        lam = plan.pair.hand_over(np.full(n, y), own[0]) * plan.pair.thin.factor(own)[0]
        assert lam.sum() <= 1.0
        for tok, la in zip(tup, lam, strict=True):
            T[tok] += float(pr) * la
        T[plan.order[y]] += float(pr) * (1.0 - lam.sum())
    Tp = np.empty(len(q))
    Tp[plan.order] = plan.T
    assert np.abs(T - Tp).sum() <= plan.law_error + 1e-13
