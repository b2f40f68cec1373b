"""Statistical mode on the package's vectorised samplers: no false alarm.

Default suite: 4 instances per verifier and law, 10,000 samples.  ``-m slow``: 50 instances per
verifier and law at family level 1e-3 with the N whose power statement detects TV >= 0.01.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mdsd_ot import drafts, verifiers
from mdsd_ot.drafts import WithReplacement
from mdsd_ot.lossless import (
    check_sampler,
    check_sampler_family,
    controls,
    replay_sampler,
)
from mdsd_ot.lossless.sampler import SamplerError

VOCAB = (2, 3, 4, 5)


def _cases():
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


@pytest.mark.parametrize(("name", "scheme", "ns"), CASES, ids=IDS)
def test_package_samplers_no_false_alarm_quick(name, scheme, ns):
    rep = check_sampler_family(
        controls.package_sampler(name, scheme), scheme, 4, 10_000, 1e-3,
        vocab=VOCAB, n=ns, seed=0, batch=True,
    )  # fmt: skip
    assert rep.passed, rep.witness


@pytest.mark.slow
@pytest.mark.parametrize(("name", "scheme", "ns"), CASES, ids=IDS)
def test_package_samplers_no_false_alarm_50(name, scheme, ns):
    rep = check_sampler_family(
        controls.package_sampler(name, scheme), scheme, 50, None, 1e-3,
        delta=0.01, vocab=VOCAB, n=ns, seed=0, batch=True,
    )  # fmt: skip
    assert rep.checked >= 45
    assert rep.passed, rep.witness
    assert all(c.power.delta <= 0.01 * 1.001 for c in rep.checks if c is not None)


def test_result_fields_and_replay():
    law = WithReplacement([0.5, 0.3, 0.2], 2)
    r = check_sampler(
        controls.package_sampler("rrs-with", "with"), [0.2, 0.3, 0.5], law, 5000, batch=True
    )
    assert r.passed and r.samples == 5000 and r.counts.sum() == 5000
    assert r.acceptance == r.in_drafts <= float(r.alpha_star) + 0.05
    assert 0 < r.power.delta < 0.1 and r.power.samples == 5000
    rep = check_sampler_family(
        controls.verify_sampler(controls.always_accept), "with", 3, 3000, vocab=3, n=2
    )
    assert not rep.passed
    w = json.loads(json.dumps(rep.witness))
    again = replay_sampler(w, controls.verify_sampler(controls.always_accept))
    assert again.p_value == w["p_value"] and again.counts.tolist() == w["counts"]


def test_samples_sized_by_delta():
    law = WithReplacement([0.25] * 4, 1)
    r = check_sampler(controls.verify_sampler(controls.speculative), [0.25] * 4, law, delta=0.05)
    assert r.passed and r.power.delta <= 0.05 * 1.001
    with pytest.raises(ValueError, match="samples"):
        check_sampler(controls.verify_sampler(controls.speculative), [0.25] * 4, law)


def test_misbehaving_samplers():
    law = WithReplacement([0.5, 0.5], 1)

    def crash(p, q, d, rng):
        raise RuntimeError("kernel died")

    def off_range(p, q, d, rng):
        return 7, True

    def liar(p, q, d, rng):
        y = int(rng.random() < p[1])
        return y, True

    with pytest.raises(SamplerError, match="kernel died"):
        check_sampler(crash, [0.5, 0.5], law, 10)
    with pytest.raises(SamplerError, match="outside"):
        check_sampler(off_range, [0.5, 0.5], law, 10)
    r = check_sampler(liar, [0.5, 0.5], law, 1000)
    assert not r.passed and r.inconsistent > 0 and r.tests.g > 1e-3
    with pytest.raises(ValueError, match="level"):
        check_sampler(liar, [0.5, 0.5], law, 10, level=2.0)
    assert np.isfinite(r.tv_hat)


@pytest.mark.parametrize("batch", [False, True])
def test_accepted_flags_0_1_in_both_modes_and_nothing_else(batch):
    """The flag: a bool or the integer 0 / 1, one tuple at a time or batched; 2 or 0.5 are
    refused (they used to be cast to True)."""
    law = WithReplacement([0.5, 0.5], 1)
    pkg = controls.package_sampler("rrs-with", "with", batch=batch)

    def with_flag(cast):
        def s(p, q, d, rng):
            tok, acc = pkg(p, q, d, rng)
            return tok, (np.asarray(acc).astype(np.int64) if batch else int(acc)) * cast

        return s

    r = check_sampler(with_flag(1), [0.7, 0.3], law, 2000, batch=batch)
    ref = check_sampler(pkg, [0.7, 0.3], law, 2000, batch=batch)
    assert r.passed and r.acceptance == ref.acceptance > 0  # same draws, same flags
    with pytest.raises(SamplerError, match=r"accepted flags that are not booleans"):
        check_sampler(with_flag(2), [0.7, 0.3], law, 200, batch=batch)
    with pytest.raises(SamplerError, match=r"accepted flags that are not booleans"):
        check_sampler(with_flag(0.5), [0.7, 0.3], law, 200, batch=batch)


def test_a_batched_sampler_without_batch_true_gets_a_hint():
    from mdsd_ot.drafts import WithReplacement
    from mdsd_ot.lossless import controls
    from mdsd_ot.lossless.sampler import SamplerError, check_sampler

    law = WithReplacement([0.2, 0.3, 0.5], 2)
    batched = controls.package_sampler("rrs-with", "with", batch=True)
    with pytest.raises(SamplerError, match=r"looks|batched sampler does.*batch=True"):
        check_sampler(batched, [0.5, 0.3, 0.2], law, samples=100)
    assert check_sampler(batched, [0.5, 0.3, 0.2], law, samples=100, batch=True).samples == 100


def test_alpha_star_is_a_float_for_float_inputs_and_a_fraction_for_rationals():
    """alpha_star of float inputs was the Fraction of their binary values (30-digit terms)."""
    from fractions import Fraction

    from mdsd_ot.lossless import controls
    from mdsd_ot.lossless.sampler import check_sampler

    s = controls.package_sampler("rrs-with", "with", batch=False)
    r = check_sampler(s, [0.2, 0.3, 0.5], WithReplacement([0.5, 0.3, 0.2], 2), samples=200)
    assert type(r.alpha_star) is float and r.alpha_star == pytest.approx(0.86, abs=1e-12)
    assert r.row()["alpha_star"] == r.alpha_star
    law = WithReplacement(["1/2", "3/10", "1/5"], 2)
    r = check_sampler(s, ["1/5", "3/10", "1/2"], law, samples=200)
    assert r.alpha_star == Fraction(43, 50) and isinstance(r.alpha_star, Fraction)
    assert r.row()["alpha_star"] == 0.86
    r = check_sampler(s, [0.2, 0.3, 0.5], law, samples=200)  # float p, rational law
    assert type(r.alpha_star) is float


def test_a_sampler_typeerror_names_batch_either_way():
    """A TypeError of the sampler, as a batched sampler called on one tuple (or the reverse)
    raises, reached the user as a bare SamplerError; it is now a TypeError (and a
    SamplerError) whose message names batch=True / --batch and whose cause is the original."""
    from mdsd_ot.drafts import WithReplacement
    from mdsd_ot.lossless.sampler import SamplerError, SamplerTypeError, check_sampler

    law = WithReplacement([0.2, 0.3, 0.5], 2)

    def batched(p, q, drafts, rng):  # indexes an (N, n) array: TypeError on a tuple
        return drafts[:, 0], np.ones(len(drafts), dtype=bool)

    def one(p, q, drafts, rng):  # int() of one draft: TypeError on an (N, n) array
        return int(drafts[0]), True

    with pytest.raises(TypeError, match=r"called on one draft tuple.*batch=True") as info:
        check_sampler(batched, [0.5, 0.3, 0.2], law, samples=50)
    assert isinstance(info.value, SamplerError) and isinstance(info.value, SamplerTypeError)
    assert type(info.value.__cause__) is TypeError
    assert "(mdsd-ot lossless --batch)" in str(info.value)
    assert check_sampler(batched, [0.5, 0.3, 0.2], law, samples=50, batch=True).samples == 50
    with pytest.raises(TypeError, match=r"called on the \(N, n\) array.*drop batch=True") as info:
        check_sampler(one, [0.5, 0.3, 0.2], law, samples=50, batch=True)
    assert type(info.value.__cause__) is TypeError
    assert check_sampler(one, [0.5, 0.3, 0.2], law, samples=50).samples == 50

    def crash(p, q, drafts, rng):  # other exceptions: a SamplerError, not a TypeError
        raise KeyError("kernel died")

    with pytest.raises(SamplerError, match="KeyError") as info:
        check_sampler(crash, [0.5, 0.3, 0.2], law, samples=50)
    assert not isinstance(info.value, TypeError)


def test_an_output_of_probability_zero_fails_whatever_the_tests_say():
    """A token of p = 0 in the output is a certain counterexample: with 2 such outputs in
    10,000 the pool test alone may pass (its mass is shared with a token of p = 1e-4)."""
    law = WithReplacement([0.25, 0.25, 0.25, 0.25], 1)
    p = [0.5, 0.4999, 0.0001, 0.0]

    def leaky(p_, q, d, rng):
        u = rng.random(len(d))
        tok = np.where(u < 2e-4, 3, np.where(u < 0.5001, 0, 1))
        return tok, np.zeros(len(d), bool)

    r = check_sampler(leaky, p, law, 10_000, batch=True, seed=1)
    assert not r.passed and r.impossible == int(r.counts[3]) > 0
    assert any("probability 0 under p" in x for x in r.reasons)
    assert r.row()["impossible"] == r.impossible


def test_tensor_and_ragged_outputs():
    """Torch tensors (with grad, or as a list of 0-d tensors) are read through the host; a
    ragged output is a SamplerError naming the pairs, not a numpy error."""
    torch = pytest.importorskip("torch")
    law = WithReplacement([0.5, 0.5], 1)

    def batched(p, q, d, rng):
        x = torch.tensor(d[:, 0], dtype=torch.float64, requires_grad=True)
        return (x * 1.0).long(), torch.ones(len(d), dtype=torch.bool)

    def single(p, q, d, rng):
        return torch.tensor(d[0]), torch.tensor(True)

    assert check_sampler(batched, [0.5, 0.5], law, 500, batch=True).passed
    assert check_sampler(single, [0.5, 0.5], law, 500).passed

    def ragged(p, q, d, rng):
        return ([0] if d[0] == 0 else d[0]), True

    with pytest.raises(SamplerError, match=r"numpy cannot read as 50 \(token, accepted\) pairs"):
        check_sampler(ragged, [0.5, 0.5], law, 50)
