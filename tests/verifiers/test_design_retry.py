"""The damped retry of the swap design (mdsd_ot.verifiers.chain.pieces.design_or_retry; §4.4).

A peaked row: the heaviest draft token (q = 0.8) has p = 0.6, so it is a demand token that must
receive most of its selection mass from above.  The full fixed-point steps oscillate there (ε
about 5e-2 at n = 4, conditional Poisson); the damped retry converges.  Where the first design
converges the retry does not run, so every other plan is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import drafts, fast
from mdsd_ot.synthetic import synthetic_pair
from mdsd_ot.verifiers.chain import ChainOptimal, build_plan
from mdsd_ot.verifiers.chain.cutlaw import cp_law
from mdsd_ot.verifiers.chain.pieces import default_tol, design, design_or_retry
from mdsd_ot.verifiers.chain.swap import _swap_sublaw


def _peaked(V: int, seed: int, top: float = 0.8, p_top: float = 0.6):
    p, q = synthetic_pair(V, 1.0, np.random.default_rng(seed), noise=1.0)
    i, j = np.argsort(q)[::-1][:2]
    q = q * (1 - top - 0.1) / (q.sum() - q[i] - q[j])
    q[i], q[j] = top, 0.1
    p = p * (1 - p_top) / (p.sum() - p[i])
    p[i] = p_top
    return p / p.sum(), q / q.sum()


def test_the_retry_converges_where_the_full_steps_oscillate():
    p, q = _peaked(300, 0)
    n = 4
    order = build_plan(p, q, n, "cp-swap").order
    qs, D, s, _ = _swap_sublaw(p, q, n, order, "cp-swap")

    def law(k):
        return cp_law(qs, n, k)

    _, _, _, first = design(qs, n, D, s, law)
    assert first["shortfall"] > 1e-2  # the oscillation
    _, T, err, info = design_or_retry(qs, n, D, s, law)
    assert info["retry"]["kept"] == "damped"
    assert info["retry"]["first"]["shortfall"] == first["shortfall"]
    assert info["shortfall"] <= default_tol(len(qs)) and err <= 1e-10
    assert float(np.maximum(s - T, 0).sum()) == info["shortfall"]


def test_the_verifier_reports_the_retry_and_attains_alpha_star():
    p, q = _peaked(300, 0)
    law = drafts.ConditionalPoisson(q, 4)
    cert = ChainOptimal(law).certificate(p)
    assert cert["construction"] == "cp-swap" and cert["retry"]["kept"] == "damped"
    assert 0 <= cert["eps"] <= 1e-9
    a = float(fast.alpha_star(p, law))
    assert cert["alpha_star"] == pytest.approx(a, abs=1e-12)


def test_no_retry_where_the_first_design_converges():
    p, q = synthetic_pair(2000, 1.0, np.random.default_rng(4), noise=1.0)
    plan = build_plan(p, q, 4, "cp-swap")
    assert "retry" not in plan.info and plan.info["shortfall"] <= default_tol(2000)


@pytest.mark.xfail(strict=True, reason="the design stalls at 2.7e-2 even with the retry, §4.4")
def test_known_stall_vocab_2000_heavy_demand_token():
    """V = 2,000, seed 1: the model asks the heavy token for 1.8 times its mass in lifts, the
    kernel is scaled back, and full and damped steps alike stall at ε = 2.7e-2."""
    p, q = _peaked(2000, 1)
    cert = ChainOptimal(drafts.ConditionalPoisson(q, 4)).certificate(p)
    assert cert["eps"] <= 1e-6


def test_known_stall_vocab_2000_stays_lossless_with_a_certified_bound():
    p, q = _peaked(2000, 1)
    law = drafts.ConditionalPoisson(q, 4)
    cert = ChainOptimal(law).certificate(p)
    assert cert["retry"]["kept"] == "first" and 1e-2 < cert["eps"] < 5e-2
    assert cert["law_error"] <= 1e-10 and cert["acceptance"] <= cert["alpha_star"]
