"""Known shortfalls of the swap constructions (proofs/optimal_verifier.md §4.6), pinned.

A peaked real-text row (the built-in demo's kind: one token with q ≈ 0.75 and p ≈ 0.97) under
sequential drafts, n = 3 and 4.  α* = 1 there, so the selection law must equal p exactly; the
`seq-swap` fixed point stalls with the heavy token's supply unplaced (shortfall 2.5e-2 at n = 3,
3.1e-2 at n = 4, the same in every iteration after the second; the damped retry of
``pieces.design_or_retry`` brings n = 3 to 9.0e-3 and does not help at n = 4).  That construction stays
lossless (Lemma 0) and its certified acceptance stays a lower bound of the true one; its
shortfall is pinned as a strict xfail, so that a design which closes it turns the xfail red and
the docs' figures get updated with it.  The verifier itself (``seq-best``) takes the ``stream``
plan there: α* of i.i.d. drafts is 1 as well, which the stream attains exactly.  Conditional
Poisson on the same row converges, and so does ``seq-swap-h``, where the heavy tokens pick once
(tests/verifiers/test_seqsingle.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import drafts, fast
from mdsd_ot.verifiers.chain import ChainOptimal, build_plan
from mdsd_ot.verifiers.chain.exact import exact_swap_plan, given

P_PEAKED = np.array([9.68479e-01, 1.45790e-02, 9.00800e-03, 2.16000e-03, 1.50700e-03, 1.50500e-03,
                     1.50500e-03, 8.33000e-04, 1.77000e-04, 1.14000e-04, 7.00000e-05, 6.30000e-05])  # fmt: skip
Q_PEAKED = np.array([7.47673e-01, 1.16705e-01, 7.21120e-02, 1.72900e-02, 1.20650e-02, 1.20490e-02,
                     1.20480e-02, 6.67100e-03, 1.41700e-03, 9.09000e-04, 5.58000e-04, 5.03000e-04])  # fmt: skip
P_PEAKED = P_PEAKED / P_PEAKED.sum()
Q_PEAKED = Q_PEAKED / Q_PEAKED.sum()


@pytest.mark.parametrize("n", [3, 4])
def test_peaked_row_seq_swap_stays_lossless_and_its_certificate_is_a_lower_bound(n):
    """``seq-swap`` alone: output law (enumerated over the draft tuples, float64) = p within its
    law error bound plus 1e-12; certified acceptance <= true acceptance <= α*."""
    law = drafts.WithoutReplacement(Q_PEAKED, n)
    plan = build_plan(P_PEAKED, Q_PEAKED, n, "seq-swap")
    items = law.joint_items(exact=False)
    # the swap plan in plain numbers: the float design, the selection law enumerated over the
    # draft tuples, float arithmetic
    eplan = exact_swap_plan(list(P_PEAKED), list(Q_PEAKED), n, "seq-swap", items,
                            lambda H: law.Q(H, exact=False))  # fmt: skip
    out = np.zeros(len(P_PEAKED))
    acc = 0.0
    for tup, w in items.items():
        for tok, pr in given(eplan, tuple(tup)).items():
            out[tok] += w * pr
            acc += w * pr * (tok in tup)
    assert np.abs(out - P_PEAKED).sum() <= plan.law_error + 1e-12
    a = float(fast.alpha_star(P_PEAKED, law))
    assert a == pytest.approx(1.0, abs=1e-12)
    # a lower bound: the thinning's accepted sub-law (the residual may land in the drafts too)
    assert plan.acceptance - plan.law_error <= acc + 1e-12 <= a + plan.law_error + 2e-12
    assert a - plan.acceptance > 5e-3  # the shortfall the xfail below pins


@pytest.mark.xfail(strict=True, reason="seq-swap stalls on a heavy supply token (q ≈ 0.75), §4.6")
@pytest.mark.parametrize("n", [3, 4])
def test_peaked_row_seq_swap_reaches_alpha_star(n):
    plan = build_plan(P_PEAKED, Q_PEAKED, n, "seq-swap")
    assert 1.0 - plan.acceptance <= 1e-6


@pytest.mark.parametrize("n", [3, 4])
def test_peaked_row_the_verifier_takes_the_stream_and_attains_alpha_star(n):
    law = drafts.WithoutReplacement(Q_PEAKED, n)
    v = ChainOptimal(law)
    cert = v.certificate(P_PEAKED)
    assert cert["construction"] == "stream" and cert["seq-best"]["designed"] is False
    assert cert["eps"] <= 1e-12
    if n == 3:  # enumeration over the tuples and their stream resamplings (n = 4: a minute)
        out, acc = v.exact(P_PEAKED, exact=False)
        assert np.abs(out - P_PEAKED).sum() <= 1e-12
        assert float(acc) == pytest.approx(1.0, abs=1e-12)


def test_seq_best_designs_where_the_stream_falls_short_and_keeps_the_better_plan(monkeypatch):
    """Synthetic row (α*_with well below α*_without): ``seq-pair`` fits; where it is declined
    the piece design runs and wins."""
    from mdsd_ot.synthetic import synthetic_pair
    from mdsd_ot.verifiers.chain import seqpair

    p, q = synthetic_pair(300, 0.5, np.random.default_rng(1), noise=1.0)
    pair = build_plan(p, q, 3, "seq-best")
    assert pair.construction == "seq-pair" and pair.info["seq-best"]["pair"] is None
    monkeypatch.setattr(seqpair, "seq_pair_plan", lambda *a, **k: "declined (test)")
    plan = build_plan(p, q, 3, "seq-best")
    info = plan.info["seq-best"]
    assert info["designed"] is True and plan.construction in ("seq-swap-h", "seq-swap")
    assert info["pair"] == "declined (test)"
    assert abs(pair.acceptance - plan.acceptance) <= 1e-9
    assert info["stream_acceptance"] < info["alpha_without"] - 1e-3
    # T = 0.5: a heavy token picks once, that design converges, so seq-swap is not designed
    assert plan.construction == "seq-swap-h" and info["single"] == plan.single.tolist()
    assert info["swap_h_acceptance"] == plan.acceptance and info["swap_acceptance"] is None
    assert plan.acceptance >= info["stream_acceptance"]
    assert info["alpha_without"] - plan.acceptance <= 1e-6


@pytest.mark.parametrize("n", [3, 4])
def test_peaked_row_conditional_poisson_reaches_alpha_star(n):
    cert = ChainOptimal(drafts.ConditionalPoisson(Q_PEAKED, n)).certificate(P_PEAKED)
    assert cert["construction"] in ("cp-pair", "cp-swap") and cert["eps"] <= 1e-8
    plan = build_plan(P_PEAKED, np.asarray(Q_PEAKED, float), n, "cp-swap")
    assert plan.construction == "cp-swap" and plan.info["shortfall"] <= 1e-8
