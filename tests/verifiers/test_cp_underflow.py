"""Conditional Poisson with several heavy tokens beside tails so light that every n-set weight
underflows (found by the verifier fuzzer, 2026-12-07): ``cp-swap`` certified a law error of
1.9e-13 while its output was 0.31 from p in total variation (five heavy tokens, fifteen of
1e-200, n = 9), and its acceptance exceeded α*.  A design that falls short there now gives
way to ``top``; designs that reach α* (tests/verifiers/test_near_point_mass.py) are kept."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from mdsd_ot import alpha_star, verifiers
from mdsd_ot.drafts import ConditionalPoisson
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import build_plan
from mdsd_ot.verifiers.chain.plan import CP_UNDERFLOW_BITS, cp_products_underflow

#: The rows (float repr, exact round trip): five heavy tokens beside fifteen tails each.
ROWS = json.loads((Path(__file__).parents[1] / "data" / "cp_underflow_rows.json").read_text())
Q0, P0 = np.array(ROWS["fuzzer_row"]["q"]), np.array(ROWS["fuzzer_row"]["p"])


def _row(tail: float):
    """The fuzzer's row with its tails rescaled to about ``tail`` (q) and ``tail / 10`` (p)."""
    q, p = Q0.copy(), P0.copy()
    q[5:] *= tail / 1e-201
    p[7:] *= tail / 1e-201
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize("tail,n", [(1e-200, 9), (1e-150, 9), (1e-200, 8)])
def test_underflowing_rows_take_top_and_stay_lossless(tail, n):
    p, q = _row(tail)
    assert cp_products_underflow(q, n)
    law = ConditionalPoisson(q, n)
    v = verifiers.get("optimal", law)
    cert = v.certificate(p)
    assert cert["construction"] == "top"
    assert v.engine().plan(p).info["fallback"]["reason"] == "products underflow"
    a = alpha_star(p, law)
    assert cert["acceptance"] <= a + 1e-12 and cert["eps"] == pytest.approx(a - cert["acceptance"])
    rng = np.random.default_rng(1)
    N = 40_000
    out, acc = v.sample(p, sample_drafts(law, rng, N), rng)
    freq = np.bincount(out, minlength=20) / N
    # 7 tokens carry the mass: a TV of 0.02 is above 6 standard errors here (was 0.31 and 0.06)
    assert 0.5 * np.abs(freq - p).sum() < 0.02
    assert acc.mean() <= a + 4 * np.sqrt(a * (1 - a) / N)  # was 0.905 where α* = 0.821


def test_rows_above_the_threshold_keep_cp_swap():
    p, q = _row(1e-60)  # heaviest 9-set weight about 2^-803
    assert not cp_products_underflow(q, 9) and CP_UNDERFLOW_BITS == -1000.0
    cert = verifiers.get("optimal", ConditionalPoisson(q, 9)).certificate(p)
    assert cert["construction"] in ("cp-pair", "cp-swap") and cert["eps"] <= 1e-9
    plan = build_plan(p, q, 9, "cp-swap")  # the swap design is kept, not top
    assert plan.construction == "cp-swap" and plan.info["shortfall"] <= 1e-9


def test_a_design_that_accepts_nothing_there_gives_way_too():
    """The review of 2026-12-07: on such a row a design with no law ("accepts nothing",
    certified as ε = α*) kept its sampler, which read NaN piece probabilities (a cast warning)
    and accepted 0.889 of the drafts.  It gives way to ``top`` as well."""
    p, q = np.array(ROWS["review_row"]["p"]), np.array(ROWS["review_row"]["q"])
    law = ConditionalPoisson(q / q.sum(), 9)
    v = verifiers.get("optimal", law)
    cert = v.certificate(p / p.sum())
    assert cert["construction"] == "top" and cert["law_error"] <= 1e-9
    rng = np.random.default_rng(1)
    N = 20_000
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no NaN is cast on the way
        out, _ = v.sample(p / p.sum(), sample_drafts(law, rng, N), rng)
    assert 0.5 * np.abs(np.bincount(out, minlength=20) / N - p / p.sum()).sum() < 0.03
