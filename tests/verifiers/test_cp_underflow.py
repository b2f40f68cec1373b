"""Conditional Poisson with several heavy tokens beside tails so light that every n-set weight
underflows (found by the verifier fuzzer, 2026-12-07): ``cp-swap`` certified a law error of
1.9e-13 while its output was 0.31 from p in total variation (five heavy tokens, fifteen of
1e-200, n = 9), and its acceptance exceeded α*.  A design that falls short there now gives
way to ``top``; designs that reach α* (tests/verifiers/test_near_point_mass.py) are kept."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mdsd_ot import alpha_star, verifiers
from mdsd_ot.drafts import ConditionalPoisson
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain.plan import CP_UNDERFLOW_BITS, cp_products_underflow

#: The fuzzer's row (V = 20): five heavy tokens, fifteen near 1e-201; p has seven heavy tokens.
Q0 = np.array([
    0.23573861364836135, 0.26045941574093867, 0.18573674769407203, 0.24406160535176452,
    0.07400361756486344, 2.6283632980139235e-202, 1.3637515454167261e-201,
    5.368474462199393e-202, 2.6574343744377932e-201, 1.771810319864552e-201,
    2.238693861828304e-202, 3.735992088414249e-201, 1.3210114635997038e-201,
    2.164170789729856e-201, 2.5848220671209357e-201, 2.8574331590175536e-201,
    3.870168902727721e-201, 1.2474689380482522e-202, 2.7868470043875862e-201,
    2.8889325980886942e-201,
])  # fmt: skip
P0 = np.array([
    0.09459246839929235, 0.16480281192071128, 0.18369037686265524, 0.07028873958199265,
    0.22102413376678062, 0.22699403456296421, 0.03860743490560376, 1.4551060485479528e-203,
    1.7749184857342052e-202, 2.2571526630112535e-202, 3.774343192440412e-204,
    2.0750846925187274e-202, 4.266781312015434e-203, 2.379422155831635e-202,
    1.7951409344618143e-202, 1.0098093625534457e-202, 1.4567590855080593e-202,
    5.539890948694642e-203, 4.36153860949609e-203, 1.8634437576952977e-202,
])  # fmt: skip


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
    assert cert["construction"] == "cp-swap" and cert["eps"] <= 1e-9


def test_a_design_that_accepts_nothing_there_gives_way_too():
    """The review of 2026-12-07: on such a row a design with no law ("accepts nothing",
    certified as ε = α*) kept its sampler, which read NaN piece probabilities (a cast warning)
    and accepted 0.889 of the drafts.  It gives way to ``top`` as well."""
    p = np.array([
        0.07145578765048372, 0.19113243727202636, 0.3130106396520911, 0.23881673771108444,
        0.04043764137997317, 0.0005141691478954467, 0.1446325871864457, 2.4547585121915896e-204,
        1.424802057625071e-204, 7.994915982844588e-204, 6.863286499978246e-204,
        2.1241520084291366e-204, 2.6758181472053056e-204, 9.392198314329573e-204,
        2.685379750922671e-204, 7.024058780438564e-204, 1.2955324664319047e-204,
        8.150358692078323e-204, 1.1759001121764335e-204, 5.1604112678076085e-204,
    ])  # fmt: skip
    q = np.array([
        0.24813002831866546, 0.14544383311325573, 0.10257870969163325, 0.09147222389768858,
        0.41237520497875685, 6.078612287284864e-234, 3.357260391971401e-234,
        5.128772399345338e-234, 1.8662874881205545e-235, 7.241263048247244e-234,
        6.939210761945335e-234, 4.2105114124691764e-234, 8.514810904687165e-234,
        7.555260958502992e-234, 3.3668459837591615e-234, 7.74979697373107e-235,
        1.3222302482887625e-234, 1.8427222933480677e-234, 3.039180290119385e-234,
        4.475157242205989e-234,
    ])  # fmt: skip
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
