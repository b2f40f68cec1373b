"""The batched ``cp-pair`` plans and draws (mdsd_ot.verifiers.chain.batched_pairs).

Checked against the one-position plan of :mod:`mdsd_ot.verifiers.chain.pairs` (the same order,
law, acceptance, hand-overs and reasons), against α*, by the rule's law enumerated over every
draft set (within the a-priori bound), the segmented flows and order statistics against the
per-block ones, by simulation (G-test of the output against p, acceptance within 4 standard
errors of α), and numpy against CPU torch.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mdsd_ot.drafts import ConditionalPoisson
from mdsd_ot.fast import alpha_star
from mdsd_ot.synthetic import synthetic_pair
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain.batched_pairs import (
    EPS,
    _inflow,
    _outflow,
    _Segments,
    _set_sums,
    pair_rows,
    sample_pair_rows,
)
from mdsd_ot.verifiers.chain.pairs import PAIR_TOL, SET_MARGIN, pair_plan, set_sums
from mdsd_ot.verifiers.chain.pairs import _inflow as inflow_1
from mdsd_ot.verifiers.chain.pairs import _outflow as outflow_1
from mdsd_ot.verifiers.chain.pieces import cp_levels
from mdsd_ot.verifiers.chain.plan import chain_order, heavy_last, sort_keys
from testkit import SYNC_OPS, g_test_pvalue, peaked_random_row, torch_spy

CP = "conditional-poisson"


def _one(p: np.ndarray, q: np.ndarray, n: int):
    """The one-position plan (or its reason) in the chain order of ``cp-pair``."""
    return pair_plan(p, q, n, heavy_last(chain_order(p, q), sort_keys(p, q), q))


def _synthetic_rows(V: int, temps, seeds) -> tuple[np.ndarray, np.ndarray]:
    rows = [synthetic_pair(V, T, np.random.default_rng(s), noise=1.0) for T in temps for s in seeds]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def _check_rule(plans, b: int) -> None:
    """The rule check of a fitted row by brute force over the givers (n - 1 largest g below y
    in its block, q > 0) and the shortfall of its law, from the plan's own arrays."""
    theta, g, qs, blk = (np.asarray(x[b]) for x in (plans.theta, plans.g, plans.qs, plans.block))
    worst = 0.0
    for y in np.flatnonzero(theta > 0):
        below = np.flatnonzero((np.arange(len(qs)) < y) & (blk == blk[y]) & (qs > 0))
        top = np.sort(g[below])[::-1][: plans.n - 1]
        worst = max(worst, float(theta[y] * top.sum()))
    assert worst <= 1.0 - SET_MARGIN
    short = float(np.maximum(np.asarray(plans.s[b]) - np.asarray(plans.T[b]), 0).sum())
    assert short <= PAIR_TOL + 1e-15 * len(qs)


@pytest.mark.parametrize("V", [50, 300, 2000])
@pytest.mark.parametrize("n", [3, 4, 6])
def test_rows_are_the_one_position_plans(V, n):
    """Synthetic rows (T = 0.5, 1, 2; two seeds) in one batch: where ``pair_plan`` fits, the
    row fits with the same order, hold-back, set sum, law T and acceptance (1e-10 of the row's
    total flow), the same hand-overs θ_y g_x (1e-10) and α within 1e-9 of α*; where it does
    not, the row does not fit and says why in the same words."""
    P, Q = _synthetic_rows(V, (0.5, 1.0, 2.0), (V, V + 1, V + 2))
    plans = pair_rows(P, Q, n)
    rng = np.random.default_rng(V * n)
    fitted = 0
    for b in range(len(P)):
        one = _one(P[b], Q[b], n)
        if isinstance(one, str):
            assert not plans.fits[b] and plans.why[b] == one, (b, one, plans.why[b])
            continue
        fitted += 1
        assert plans.fits[b] and plans.why[b] is None, (b, plans.why[b])
        assert np.array_equal(plans.order[b], one.order)
        assert plans.hold_back[b] == one.info["hold_back"]
        assert plans.set_sum[b] == pytest.approx(one.info["set_sum"], rel=1e-9)
        tol = 1e-10 * float(plans.flows[b])
        assert np.abs(plans.T[b] - one.T).max() <= tol
        assert np.abs(plans.acc[b] - one.s).sum() <= tol
        assert abs(float(plans.alpha[b]) - one.acceptance) <= tol
        a = float(alpha_star(P[b], Q[b], n=n, scheme=CP))
        assert -1e-12 <= a - float(plans.alpha[b]) <= 1e-9
        # hand-overs on random pairs x < y of one block (the rule's λ = θ_y g_x)
        y = rng.integers(1, V, 4000)
        x = (rng.random(4000) * y).astype(np.int64)
        mine = np.where(
            plans.block[b][x] == plans.block[b][y], plans.theta[b][y] * plans.g[b][x], 0
        )
        assert np.abs(mine - one.pair.hand_over(y, x)).max() <= 1e-10
        assert 0 < float(plans.law_error[b]) <= 2.0 * one.law_error + 1e-12
        _check_rule(plans, b)
    assert fitted >= 2


def _dirichlet_batch(rng, B: int, V: int) -> tuple[np.ndarray, np.ndarray]:
    conc = rng.choice([0.3, 1.0, 3.0], size=(B, 1))
    P = rng.gamma(np.broadcast_to(conc, (B, V)))
    Q = rng.gamma(np.broadcast_to(conc, (B, V)))
    return P / P.sum(1, keepdims=True), Q / Q.sum(1, keepdims=True)


def _rule_law(qs, theta, g, block, n) -> np.ndarray:
    """The selection law of the hand-over rule by slot, summed over every n-set of slots with
    the conditional-Poisson weights (products of q, normalised)."""
    V = len(qs)
    T = np.zeros(V)
    total = 0.0
    for S in itertools.combinations(range(V), n):
        w = float(np.prod(qs[list(S)]))
        y = max(S)
        lam = [theta[y] * g[x] if x < y and block[x] == block[y] else 0.0 for x in S]
        for x, la in zip(S, lam, strict=True):
            T[x] += w * la
        T[y] += w * (1.0 - sum(lam))
        total += w
    return T / total


def test_the_law_is_the_rules():
    """V = 5-7, n = 3, 4 (Dirichlet rows): on every fitted row the law of the rule read from
    the plan's θ, g and blocks, enumerated over all draft sets, is the plan's T within its law
    error, and every draft set hands over with probability at most 1."""
    rng = np.random.default_rng(20)
    used = moved = 0
    for V, n in [(5, 3), (6, 3), (6, 4), (7, 3), (7, 4)]:
        P, Q = _dirichlet_batch(rng, 24, V)
        plans = pair_rows(P, Q, n)
        for b in np.flatnonzero(plans.fits):
            qs, th, g, blk = (x[b] for x in (plans.qs, plans.theta, plans.g, plans.block))
            T = _rule_law(qs, th, g, blk, n)
            assert np.abs(T - plans.T[b]).sum() <= plans.law_error[b] + 1e-12, (V, n, b)
            for S in itertools.combinations(range(V), n):
                y = max(S)
                assert sum(th[y] * g[x] for x in S if x < y and blk[x] == blk[y]) <= 1.0
            used += 1
            moved += bool(np.any(th > 0))
    assert used >= 30 and moved >= 15, (used, moved)


def test_segmented_flows_and_order_statistics():
    """Random blocks (one batch, each row its own cuts): In and Out by segmented sums are the
    per-block sums of the one-position plan within γ_d times the unsegmented flows (d the
    depth of :func:`pair_rows`' bound), and the rule check is :func:`pairs.set_sums` exactly."""
    rng = np.random.default_rng(21)
    B, V = 12, 300
    for n in (3, 4, 6):
        qs = rng.dirichlet(np.full(V, 0.3), size=B)
        theta = rng.random((B, V)) * (rng.random((B, V)) < 0.5)
        g = rng.random((B, V)) * (rng.random((B, V)) < 0.5)
        e = np.stack([cp_levels(qs[b], n) for b in range(B)])
        lo, hi, blocks = np.zeros((B, V), np.int64), np.zeros((B, V), np.int64), []
        for b in range(B):
            cuts = np.unique(np.r_[0, rng.integers(1, V, size=int(rng.integers(0, 8))), V])
            blocks.append([(int(a), int(c)) for a, c in itertools.pairwise(cuts) if c - a > 1])
            for a, c in itertools.pairwise(cuts):
                lo[b, a:c], hi[b, a:c] = a, c
        seg = _Segments(lo, hi)
        In, Out = _inflow(qs, e, n, seg, theta), _outflow(qs, e, n, seg, g)
        InG, OutG = _inflow(qs, e, n, None, theta), _outflow(qs, e, n, None, g)
        d = 3 * n * (V + 3) + 6 * n + 16
        gam = d * EPS / (1 - d * EPS)
        worst = _set_sums(theta, g, qs, n, lo, V)
        try:  # torch's doubling scan (numpy's is a complex running maximum): the same values
            import torch

            tt = [torch.tensor(x) for x in (theta, g, qs, lo)]
            assert np.array_equal(_set_sums(*tt[:3], n, tt[3], V).numpy(), worst)
        except ImportError:  # pragma: no cover - the torch extra is not installed
            pass
        for b in range(B):
            want_in = inflow_1(qs[b], e[b], n, blocks[b], theta[b])
            want_out = outflow_1(qs[b], e[b], n, blocks[b], g[b])
            assert np.all(np.abs(In[b] - want_in) <= gam * InG[b]), (n, b)
            assert np.all(np.abs(Out[b] - want_out) <= gam * OutG[b]), (n, b)
            assert worst[b] == set_sums(theta[b], g[b], qs[b], n, blocks[b]), (n, b)


def _fitted_row(V: int, n: int) -> tuple[np.ndarray, np.ndarray, object]:
    for seed in range(20):
        p, q = synthetic_pair(V, 1.0, np.random.default_rng(seed), noise=1.0)
        plans = pair_rows(p[None], q[None], n)
        if plans.fits[0] and np.any(plans.theta[0] > 0):
            return p, q, plans
    raise AssertionError("no fitted row")  # pragma: no cover


def test_draws_pass_the_g_test():
    """V = 40, n = 3: 2·10^5 conditional-Poisson tuples; the output passes the G-test against
    p and the acceptance is within 4 standard errors of α."""
    p, q, plans = _fitted_row(40, 3)
    g = np.random.default_rng(22)
    N = 200_000
    t = sample_drafts(ConditionalPoisson(q, 3), g, N)
    out, acc = sample_pair_rows(plans, t[None], g)
    assert out.shape == acc.shape == (1, N)
    assert np.array_equal(acc[0], (t == out[0][:, None]).any(axis=1))
    assert g_test_pvalue(out[0], p) > 1e-4
    a = float(plans.alpha[0])
    assert abs(float(acc.mean()) - a) <= 4 * np.sqrt(a * (1 - a) / N) + 1e-9
    o1, a1 = sample_pair_rows(plans, t[:1], 3)  # (B, n): one tuple per row
    assert o1.shape == a1.shape == (1,)


def test_torch_cpu_equals_numpy():
    """The same plans (1e-12) and reasons from torch tensors; with the same numpy seed the
    same draws, with a ``torch.Generator`` valid tensors (reproducible, no host read)."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    P, Q = _synthetic_rows(300, (0.5, 1.0, 2.0), (3, 4))
    a, b = pair_rows(P, Q, 4), pair_rows(torch.tensor(P), torch.tensor(Q), 4)
    assert a.why == b.why and a.hold_back == b.hold_back
    assert np.array_equal(a.fits, b.fits.numpy()) and np.array_equal(a.order, b.order.numpy())
    for name in ("T", "acc", "theta", "g", "s", "D", "alpha", "law_error", "set_sum"):
        x, y = getattr(a, name), getattr(b, name).numpy()
        assert np.allclose(x, y, rtol=1e-12, atol=1e-15), name
    rows = np.flatnonzero(a.fits)
    assert len(rows) >= 2
    rng = np.random.default_rng(5)
    t = np.stack([sample_drafts(ConditionalPoisson(Q[r], 4), rng, 500) for r in rows])
    sub_a, sub_b = (
        pair_rows(P[rows], Q[rows], 4),
        pair_rows(torch.tensor(P[rows]), torch.tensor(Q[rows]), 4),
    )
    o1, c1 = sample_pair_rows(sub_a, t, np.random.default_rng(6))
    o2, c2 = sample_pair_rows(sub_b, torch.tensor(t), np.random.default_rng(6))
    assert np.array_equal(o1, o2.numpy()) and np.array_equal(c1, c2.numpy())
    with torch_spy() as spy:  # the draws read nothing back to the host
        runs = [
            sample_pair_rows(sub_b, torch.tensor(t), torch.Generator().manual_seed(7))
            for _ in range(2)
        ]
    assert not spy.ops & SYNC_OPS
    out, acc = runs[0]
    assert torch.equal(out, runs[1][0]) and out.dtype == torch.int64 and out.shape == t.shape[:2]
    assert torch.equal(acc, (torch.tensor(t) == out[..., None]).any(dim=-1))
    assert bool(((out >= 0) & (out < 300)).all())


def test_a_mixed_batch_says_which_rows_fit_and_why():
    """V = 200, n = 4: a row that fits with ``"min"``, one with ``"bottom"``, a cold row (T =
    0.3) whose heaviest token receives, so a relay is tried first and fits (it also hands over),
    one whose n largest q multiply below 2^-1000 and one with e_n(q) below 2^(-32 n) (designed
    on 2^k q; its heaviest token receives too, and no try is a rule): the flags, reasons and
    relays of the one-position plan."""
    V, n = 200, 4
    rows = [synthetic_pair(V, 0.3, np.random.default_rng(s), noise=1.0) for s in (0, 4, 1)]
    q_under = np.r_[1.0, np.full(V - 1, 1e-110)]
    q_tiny = np.r_[1.0, np.full(V - 1, 1e-60)]
    p_flat = np.full(V, 1.0 / V)
    rows += [(p_flat, q_under / q_under.sum()), (p_flat, q_tiny / q_tiny.sum())]
    P, Q = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    plans = pair_rows(P, Q, n)
    assert plans.fits.tolist() == [True, True, True, False, False]
    assert plans.hold_back == ["min", "bottom", "min", None, None]
    assert plans.why[:3] == [None, None, None]
    cold = _one(P[2], Q[2], n)  # its heaviest token receives: the relay is tried first
    assert "pair_retry" not in cold.info and cold.info["relay"]["share"] == 0.9
    assert plans.relay[2] == cold.info["relay"] and plans.relay[1] is None
    assert plans.relay[0] == _one(P[0], Q[0], n).info.get("relay")
    assert plans.relay[2]["token"] == int(np.argmax(Q[2]))  # the heaviest token receives
    assert plans.why[3] == _one(P[3], Q[3], n) == "products underflow"
    tiny = _one(P[4], Q[4], n)
    assert plans.why[4] == tiny and tiny.startswith("min, relay 0.9: ")  # heavy receiver
    assert "; min: not a rule" in tiny and "; bottom: not a rule" in tiny
    assert plans.scale.tolist() == [0, 0, 0, 0, 146]
    for b in (0, 1, 2):
        _check_rule(plans, b)
        one = _one(P[b], Q[b], n)
        assert abs(float(plans.alpha[b]) - one.acceptance) <= 1e-12


def test_a_row_no_try_fits_reports_its_first_design_whatever_the_batch():
    """p = q uniform (V = 200, n = 4: no try is a rule, set sums above 1) beside a row whose
    heaviest token receives (its first try is a relay, so the batch's first try is split):
    the uniform row reports the set sum, shortfall and steps of its own first try, as alone."""
    V, n = 200, 4
    flat = np.full(V, 1.0 / V)
    p, q = synthetic_pair(V, 0.3, np.random.default_rng(1), noise=1.0)
    both = pair_rows(np.array([p, flat]), np.array([q, flat]), n)
    alone = pair_rows(flat[None], flat[None], n)
    assert both.relay[0] is not None and not both.fits[1] and not alone.fits[0]
    assert both.why[1] == alone.why[0] and both.why[1].startswith("min: not a rule")
    assert float(both.set_sum[1]) == float(alone.set_sum[0]) > 1.0
    assert float(both.shortfall[1]) == float(alone.shortfall[0])
    assert int(both.iterations[1]) == int(alone.iterations[0]) > 0


def test_tiny_levels_are_designed_on_scaled_q():
    """Peaked rows whose e_n(q) is below 2^(-32 n) (V = 27, n = 24; V = 31, n = 16): the
    design runs on 2^k q as the one-position plan's and gives its law and acceptance."""
    for seed in (51, 92):
        p, q, n = peaked_random_row(seed)
        plans = pair_rows(p[None], q[None], n)
        one = _one(p, q, n)
        assert plans.fits[0] and plans.scale[0] >= 32, plans.why
        assert np.abs(plans.T[0] - one.T).max() <= 1e-10 * float(plans.flows[0])
        assert abs(float(plans.alpha[0]) - one.acceptance) <= 1e-12
        _check_rule(plans, 0)


def test_ties_and_zeros():
    """Ties of p/q (ordered by q ascending), q = 0 and p = 0 tokens, 1e-300 masses (V = 60,
    n = 3, 4): the one-position plan's order, flags, reasons and law, and torch's order."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    rng = np.random.default_rng(23)
    V, B = 60, 8
    for kind in ("ties", "zero q", "zero p", "ties and zero q", "tiny"):
        P, Q = rng.dirichlet(np.full(V, 0.5), size=B), rng.dirichlet(np.full(V, 0.5), size=B)
        if "ties" in kind:
            P = Q * rng.choice([0.5, 1.0, 2.0], size=(B, V))
        if "zero q" in kind:
            Q[:, : V // 4] = 0.0
        if kind == "zero p":
            P[:, V // 2 :] = 0.0
        if kind == "tiny":
            Q[:, ::3], P[:, 1::3] = 1e-300, 1e-300
        P, Q = P / P.sum(1, keepdims=True), Q / Q.sum(1, keepdims=True)
        for n in (3, 4):
            plans = pair_rows(P, Q, n)
            t_order = pair_rows(torch.tensor(P), torch.tensor(Q), n).order.numpy()
            assert np.array_equal(plans.order, t_order), kind
            for b in range(B):
                one = _one(P[b], Q[b], n)
                if isinstance(one, str):
                    assert not plans.fits[b] and plans.why[b] == one, (kind, n, b)
                    continue
                assert plans.fits[b] and np.array_equal(plans.order[b], one.order), (kind, b)
                assert np.abs(plans.T[b] - one.T).max() <= 1e-10 * float(plans.flows[b])


@pytest.mark.parametrize(
    "n, shape, match",
    [
        (2, (2, 5), "n: cp-pair needs an integer n >= 3"),
        (3.0, (2, 5), "n: cp-pair needs an integer n >= 3"),
        (True, (2, 5), "n: cp-pair needs an integer n >= 3"),
        (6, (2, 5), "n: at most V = 5"),
        (3, (5,), r"P, Q: expected two \(B, V\) arrays"),
        (3, (0, 5), r"P, Q: no rows \(B = 0\)"),
    ],
)
def test_bad_inputs_are_refused(n, shape, match):
    P = np.full(shape, 0.2)
    with pytest.raises(ValueError, match=match):
        pair_rows(P, P.copy(), n)
    with pytest.raises(ValueError, match="P, Q: expected float64 rows"):
        pair_rows(np.full((2, 5), 0.2, np.float32), np.full((2, 5), 0.2), 3)


# -- through verify_rows and the verifier's tensor route ---------------------------------------


def test_verify_rows_draws_the_rows_that_do_not_fit_on_the_host():
    """verify_rows(construction="cp-pair") on a batch where some rows fit and some do not
    (V = 300, n = 4): the rows that fit keep the batched plan's α; the others are drawn by the
    one-position plan (its ``cp-swap`` fallback), whose acceptance and bound replace theirs;
    every row's output passes a G-test against p."""
    from mdsd_ot.verifiers.chain.batched import verify_rows
    from mdsd_ot.verifiers.chain.plan import build_plan

    V, n, N = 300, 4, 60_000
    rows = [synthetic_pair(V, T, np.random.default_rng(s), noise=1.0)
            for s, T in ((0, 1.0), (1, 0.3), (3, 0.5))]  # fmt: skip
    P, Q = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    g = np.random.default_rng(31)
    t = np.stack([sample_drafts(ConditionalPoisson(Q[b], n), g, N) for b in range(len(rows))])
    out, acc, plans = verify_rows(P, Q, n, t, g, construction="cp-pair", return_plans=True)
    fits = np.asarray(plans.fits)
    assert fits.any() and not fits.all(), fits  # both kinds in the batch
    alone = pair_rows(P, Q, n)
    for b in range(len(rows)):
        if fits[b]:
            assert abs(plans.alpha[b] - alone.alpha[b]) <= 1e-12  # renormalised rows
        else:
            one = build_plan(P[b], Q[b], n, "cp-pair")
            assert one.construction == "cp-swap" and "pair" in one.info
            # verify_rows renormalises the rows: the same plan up to an ulp of p and q
            assert abs(plans.alpha[b] - one.acceptance) <= 1e-12
            assert plans.law_error[b] == pytest.approx(one.law_error, rel=1e-6)
        a = float(alpha_star(P[b], Q[b], n=n, scheme=CP))
        assert 0.0 <= a - float(plans.alpha[b]) <= 1e-9
        assert g_test_pvalue(out[b], P[b]) > 1e-4, b
        assert abs(float(acc[b].mean()) - float(plans.alpha[b])) <= 4 * np.sqrt(0.25 / N)


def test_verify_rows_refuses_repeats_and_small_n():
    from mdsd_ot.verifiers.chain.batched import verify_rows

    p, q = synthetic_pair(50, 1.0, np.random.default_rng(0), noise=1.0)
    with pytest.raises(
        ValueError, match="n: cp-pair is the conditional-Poisson verifier for n >= 3"
    ):
        verify_rows(p[None], q[None], 2, np.array([[0, 1]]), 0, construction="cp-pair")
    with pytest.raises(ValueError, match="distinct"):
        verify_rows(p[None], q[None], 3, np.array([[0, 1, 1]]), 0, construction="cp-pair")


def test_tensor_rows_of_conditional_poisson_route_by_device(monkeypatch):
    """``verifiers.get("optimal", ConditionalPoisson(q, 4)).sample_rows`` on torch tensors:
    on the CPU the rows go to the numpy route (faster there, ``device_route``); on another
    device through ``verify_rows(construction="cp-pair")`` (here: the route forced on for CPU
    tensors, with the host copy made to fail), where the rows that fit are drawn without a
    copy to the host."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    from mdsd_ot import verifiers
    from mdsd_ot.verifiers.chain import batched
    from mdsd_ot.verifiers.chain import verifier as chain_verifier

    V, n = 300, 4
    P, Q = _synthetic_rows(V, (1.0, 2.0), (1, 2))
    assert pair_rows(P, Q, n).fits.all()
    rng = np.random.default_rng(8)
    t = np.stack([sample_drafts(ConditionalPoisson(Q[b], n), rng, 50) for b in range(len(P))])
    v = verifiers.get("optimal", ConditionalPoisson(Q[0], n))
    Pt, Qt, tt = torch.tensor(P), torch.tensor(Q), torch.tensor(t)
    assert not chain_verifier.device_route("cp-pair", Pt)
    calls = []
    real = chain_verifier.on_host
    monkeypatch.setattr(chain_verifier, "on_host", lambda *a: calls.append(1) or real(*a))
    out, acc = v.sample_rows(Pt, Qt, tt, torch.Generator().manual_seed(0))
    assert calls and isinstance(out, torch.Tensor) and out.shape == (len(P), 50)

    def refuse(*a, **k):
        raise AssertionError("copied to the host")

    monkeypatch.setattr(chain_verifier, "on_host", refuse)
    monkeypatch.setattr(chain_verifier, "device_route", lambda con, P: con == "cp-pair")
    out, acc = v.sample_rows(Pt, Qt, tt, torch.Generator().manual_seed(0))
    assert out.shape == (len(P), 50) and torch.equal(acc, (tt == out[..., None]).any(dim=-1))
    host = []
    monkeypatch.setattr(batched, "_host_rows", lambda *a, **k: host.append(a[0].fits))
    v.sample_rows(Pt, Qt, tt, torch.Generator().manual_seed(0))
    assert len(host) == 1 and bool(host[0].all())  # called, with nothing to draw


def test_no_tuples_give_empty_outputs():
    """(B, 0, n) tuples: empty (B, 0) outputs from verify_rows("cp-pair") on a batch with a
    row that does not fit (its host plan is cp-swap, whose piece sampler indexed the first
    tuple) and from the numpy route (a review of 2026-12-07)."""
    from mdsd_ot.verifiers.chain import draw_rows
    from mdsd_ot.verifiers.chain.batched import verify_rows

    V, n = 300, 4
    rows = [
        synthetic_pair(V, T, np.random.default_rng(s), noise=1.0) for s, T in ((0, 1.0), (1, 0.3))
    ]
    P, Q = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    t = np.zeros((2, 0, n), dtype=np.int64)
    out, acc, plans = verify_rows(P, Q, n, t, 0, construction="cp-pair", return_plans=True)
    assert not np.asarray(plans.fits).all()
    assert out.shape == acc.shape == (2, 0) and out.dtype == np.int64
    assert draw_rows(P, Q, n, "cp-pair", t, np.random.default_rng(0)).shape == (2, 0)
