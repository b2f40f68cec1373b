"""Positive and negative controls: the broken verifiers are caught, their fixes pass.

Exact mode catches every broken control with a witness (default suite).  Statistical mode flags
each broken control on instances whose law error is >= 0.01 in total variation, with the sample
size its power statement gives for delta = 0.01, and passes its fix there (``-m slow`` for all;
one control, without its fix, in the default suite).
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from mdsd_ot.lossless import (
    check_exact,
    check_sampler_family,
    controls,
    instance_family,
    replay,
)

VOCAB = (2, 3, 4, 5)
COUNT = 28
DELTA, LEVEL = 0.01, 1e-3


@pytest.mark.parametrize("name", list(controls.REFERENCE))
def test_reference_controls_are_lossless(name):
    c = controls.REFERENCE[name]
    for exact in (True, False):
        rep = check_exact(c.verify, c.scheme, COUNT, vocab=VOCAB, n=c.n, exact=exact)
        assert rep.passed and rep.checked >= COUNT - 3, rep.witness


@pytest.mark.parametrize("name", list(controls.BROKEN))
def test_broken_control_caught_by_exact_mode(name):
    c = controls.BROKEN[name]
    rep = check_exact(c.verify, c.scheme, COUNT, vocab=VOCAB, n=c.n)
    assert not rep.passed
    w = json.loads(json.dumps(rep.witness))  # the witness is plain JSON
    assert w["verdict"] == "fail" and w["exact"] is True
    r = replay(w, c.verify)
    assert r.error > 0 and str(r.error) == w["law_error"]
    fixed = replay(w, c.fix)
    assert fixed.error == 0 and fixed.in_drafts <= Fraction(w["alpha_star"])
    # the fixes are the reference controls, lossless on the whole family (test above)
    assert c.fix in {r.verify for r in controls.REFERENCE.values()}


def _instances_with_tv(c, k):
    """The first k float instances of the family on which the control's exact TV is >= 0.01."""
    fam = instance_family(COUNT, VOCAB, c.n, seed=0, exact=False)
    rep = check_exact(c.verify, c.scheme, fam)
    sel = [ch for ch in rep.checks if ch.result is not None and ch.result.tv >= DELTA][:k]
    return [ch.instance for ch in sel], [float(ch.result.tv) for ch in sel]


def _statistical(name, k, check_fix=True):
    c = controls.BROKEN[name]
    insts, tvs = _instances_with_tv(c, k)
    assert insts, f"{name}: no instance with TV >= {DELTA}"
    rep = check_sampler_family(
        controls.verify_sampler(c.verify), c.scheme, insts, delta=DELTA, level=LEVEL
    )
    flagged = [not ch.passed for ch in rep.checks]
    Ns = [ch.samples for ch in rep.checks]
    for ch in rep.checks:
        assert ch.power.delta <= DELTA * 1.001  # N was sized for delta = 0.01
    assert all(flagged), (name, tvs, Ns, [ch.p_value for ch in rep.checks])
    if not check_fix:
        return
    ok = check_sampler_family(
        controls.verify_sampler(c.fix), c.scheme, insts, samples=max(Ns), level=LEVEL
    )
    assert ok.passed, (name, "fix", [ch.p_value for ch in ok.checks])
    print(f"\n{name}: TV {[round(t, 4) for t in tvs]}, samples {Ns}, flagged {flagged}")


def test_broken_control_caught_by_statistical_mode_quick():
    """The smallest error of the controls (TV 0.0119, just above 0.01) at its power-statement N."""
    _statistical("inflated_ratio", 1, check_fix=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(controls.BROKEN))
def test_broken_controls_caught_by_statistical_mode(name):
    _statistical(name, 3)
