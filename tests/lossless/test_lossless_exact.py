"""Exact mode: every verifier of mdsd_ot.verifiers through check_exact (T11 by this route too).

Default suite: a seeded subset (``SUBSET`` instances per verifier and law).  ``-m slow``: the
full family, at least 200 checked instances per verifier and law (V <= 5, n <= 3).
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts, verifiers
from mdsd_ot.drafts import WithoutReplacement, WithReplacement
from mdsd_ot.lossless import (
    check_exact,
    controls,
    exact_law,
    instance_family,
    replay,
)
from mdsd_ot.lossless.family import KINDS, NEARLY_ZERO, TINY

VOCAB = (2, 3, 4, 5)
SUBSET = 14  # two rounds of the seven kinds
FULL = 240  # >= 200 checked after the instances a law is undefined on (V < n)


def _cases() -> list[tuple[str, str, tuple[int, ...]]]:
    """(verifier, scheme, draft counts) for every verifier and every law it is defined for that
    has a reference q (product / explicit laws have none: verify(p, q, ...) cannot see them)."""
    out = []
    for name in verifiers.NAMES:
        for scheme in verifiers.LAWS[name] or tuple(drafts.SCHEMES):
            ns = []
            for n in (1, 2, 3):
                try:
                    law = drafts.make(scheme, [0.25] * 4, n)
                except ValueError:
                    continue
                if law.q is not None and verifiers.get(name).defined_for(law):
                    ns.append(n)
            if ns:
                out.append((name, scheme, tuple(ns)))
    return out


CASES = _cases()
IDS = [f"{v}-{s}" for v, s, _ in CASES]
#: Verifiers whose acceptance is α* of their law (T11 optimal; T9 greedy; SpecHub's docstring).
ATTAINS = ("optimal", "greedy", "spechub")


def test_every_verifier_is_covered():
    assert {v for v, _, _ in CASES} == set(verifiers.NAMES)
    assert len(CASES) >= len(verifiers.NAMES)


def _run(name, scheme, ns, count, exact=True):
    rep = check_exact(
        controls.package_verify(name, scheme), scheme, count, vocab=VOCAB, n=ns, exact=exact
    )
    bad = [(c.instance.index, c.verdict, c.reasons) for c in rep.failures]
    assert rep.passed, f"{name} on {scheme}: failing instances {bad[:3]}; witness {rep.witness}"
    for c in rep.checks:
        if c.verdict == "skipped":
            continue
        r = c.result
        if exact:
            assert r.exact and r.error == 0 and isinstance(r.in_drafts, Fraction)
            assert r.in_drafts <= c.alpha_star
            if name in ATTAINS:
                assert r.in_drafts == c.alpha_star, (name, scheme, c.instance)
        else:
            assert float(r.error) <= 1e-12  # float arithmetic: within 1e-12 of p
    return rep


@pytest.mark.parametrize(("name", "scheme", "ns"), CASES, ids=IDS)
def test_package_verifiers_exact_subset(name, scheme, ns):
    rep = _run(name, scheme, ns, SUBSET)
    assert rep.checked >= SUBSET - 2


@pytest.mark.parametrize(("name", "scheme", "ns"), CASES, ids=IDS)
def test_package_verifiers_float_subset(name, scheme, ns):
    _run(name, scheme, ns, 7, exact=False)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "scheme", "ns"), CASES, ids=IDS)
def test_package_verifiers_exact_full(name, scheme, ns):
    rep = _run(name, scheme, ns, FULL)
    assert rep.checked >= 200
    assert {c.instance.kind for c in rep.checks} == set(KINDS)
    assert max(c.instance.V for c in rep.checks) == 5


# -- the family ---------------------------------------------------------------------------------
def test_family_is_a_pure_function_of_the_seed():
    a = instance_family(30, VOCAB, (1, 2, 3), seed=4)
    assert a == instance_family(30, VOCAB, (1, 2, 3), seed=4)
    assert a[:10] == instance_family(10, VOCAB, (1, 2, 3), seed=4)
    assert a != instance_family(30, VOCAB, (1, 2, 3), seed=5)


def test_family_hard_cases():
    fam = instance_family(70, 4, 2, seed=0)
    for inst in fam:
        assert sum(inst.p) == 1 and sum(inst.q) == 1
        assert all(isinstance(x, Fraction) and x >= 0 for x in (*inst.p, *inst.q))
        assert sum(1 for x in inst.q if x > 0) >= inst.n
    by = {k: [i for i in fam if i.kind == k] for k in KINDS}
    assert all(TINY in i.p and TINY in i.q for i in by["tiny"])
    assert all(max(i.p) == 1 - 3 * NEARLY_ZERO for i in by["one-hot"])
    assert all(i.p == i.q for i in by["p=q"])
    assert all(0 in i.p for i in by["zeros"])
    assert any(any(pi > 0 == qi for pi, qi in zip(i.p, i.q, strict=True)) for i in by["zeros"])
    assert all(len(set(i.q)) < 4 for i in by["ties"])
    floats = instance_family(7, 4, 2, seed=0, exact=False)
    assert all(isinstance(x, float) for x in floats[4].p) and 1e-12 in floats[4].p


# -- exact_law ----------------------------------------------------------------------------------
def test_exact_law_of_rrs_without():
    law = WithoutReplacement(["1/2", "1/4", "1/4"], 2)
    r = exact_law(controls.rrs_without, ["1/4", "1/4", "1/2"], law)
    assert list(r.law) == [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)]
    assert r.acceptance == r.in_drafts == Fraction(7, 8)  # as verifiers.RRSWithout's doctest
    assert r.exact and r.error == 0 and r.tv == 0 and r.inconsistent == 0
    assert sum(path.draft_prob * path.prob for path in r.paths) == 1
    assert {path.drafts for path in r.paths} == set(law.joint_items())


def test_exact_law_float_inputs():
    r = exact_law(controls.rrs_with, [0.75, 0.25], WithReplacement([0.5, 0.5], 2))
    assert not r.exact and r.law.dtype == np.float64
    assert abs(r.acceptance - 0.875) <= 1e-15 and float(r.error) <= 1e-15


def test_exact_law_refuses_a_mismatched_p():
    with pytest.raises(ValueError, match="V = 2"):
        exact_law(controls.rrs_with, ["1/3"] * 3, WithReplacement(["1/2", "1/2"], 1))


# -- verdicts -----------------------------------------------------------------------------------
def test_acceptance_above_alpha_star_is_a_violation():
    rep = check_exact(controls.always_accept, "with", 7, vocab=3, n=2)
    above = [c for c in rep.checks if any("above alpha*" in r for r in c.reasons)]
    assert above and all(c.result.in_drafts > c.alpha_star for c in above)


def test_accepted_non_draft_is_a_failure():
    def liar(p, q, drafts_, coins):
        y, _ = controls.rrs_with(p, q, drafts_, coins)
        return y, True  # claims acceptance on the residual draws too

    rep = check_exact(liar, "with", 7, vocab=3, n=1)
    assert not rep.passed
    assert any("not a draft" in r for c in rep.failures for r in c.reasons)
    assert all(c.law_error == 0 for c in rep.checks)  # its law is still p


def test_errors_of_the_verifier_become_error_verdicts():
    def crash(p, q, drafts_, coins):
        raise ZeroDivisionError("boom")

    def bad_token(p, q, drafts_, coins):
        return len(p), True

    def hidden(p, q, drafts_, coins, rng=np.random.default_rng(0)):  # noqa: B008
        coins.bernoulli(Fraction(1, 2))
        return drafts_[0] if coins.bernoulli(Fraction(int(rng.integers(1, 9)), 9)) else 0, False

    for f, msg in ((crash, "ZeroDivisionError: boom"), (bad_token, "tokens lie in"),
                   (hidden, "changed on replay")):  # fmt: skip
        rep = check_exact(f, "with", 3, vocab=3, n=2)
        assert not rep.passed and rep.worst.verdict == "error"
        assert msg in rep.witness["reasons"][0]


def test_accepted_may_be_0_or_1_but_nothing_else():
    """One rule for the flag in both modes: a bool, or the integer 0 / 1."""
    law = WithReplacement(["1/2", "1/2"], 1)

    def as_int(p, q, drafts_, coins):
        y, acc = controls.rrs_with(p, q, drafts_, coins)
        return y, int(acc)

    ref = exact_law(controls.rrs_with, ["3/4", "1/4"], law)
    r = exact_law(as_int, ["3/4", "1/4"], law)
    assert r.acceptance == ref.acceptance == Fraction(3, 4) and list(r.law) == list(ref.law)
    for bad in (2, 0.5, None, "yes", 2**70):

        def odd(p, q, drafts_, coins, bad=bad):
            return controls.rrs_with(p, q, drafts_, coins)[0], bad

        with pytest.raises(ValueError, match=r"accepted=.*expected a bool \(or 0 / 1\)"):
            exact_law(odd, ["3/4", "1/4"], law)


def test_undefined_laws_are_skipped_not_failed():
    rep = check_exact(controls.rrs_without, "without", 5, vocab=2, n=3)
    assert rep.checked == 0 and rep.passed
    assert all(c.verdict == "skipped" for c in rep.checks)
    with pytest.raises(ValueError, match="unknown scheme"):
        check_exact(controls.rrs_with, "nope", 1)


# -- witnesses ------------------------------------------------------------------------------------
def test_witness_round_trips_and_replays():
    rep = check_exact(controls.rrs_unnormalised, "with", 14, vocab=(3, 4), n=(2, 3))
    assert not rep.passed
    w = json.loads(json.dumps(rep.witness))
    assert w["verdict"] == "fail" and w["mode"] == "exact"
    worst = max(c.law_error for c in rep.checks if c.law_error is not None)
    assert Fraction(w["law_error"]) == worst > 0
    r = replay(w, controls.rrs_unnormalised)
    assert r.error == worst and [str(x) for x in r.law] == w["law"]
    assert replay(w, controls.rrs_with).error == 0  # the fix is lossless on the witness
