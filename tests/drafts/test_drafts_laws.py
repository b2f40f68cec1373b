"""Draft laws (docs/reference.md, "Draft constructions"): Q(H), joint tables, sampling, T12."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

from mdsd_ot import drafts
from mdsd_ot.drafts import (
    ConditionalPoisson,
    Explicit,
    Greedy,
    Product,
    SpecHub,
    WithoutReplacement,
    WithReplacement,
)
from testkit import bank_law, dirichlet

Q3 = ["1/2", "3/10", "1/5"]


def all_laws(q, n):
    out = [WithReplacement(q, n), Product([q] * n)]
    if n <= sum(1 for v in q if F(v) > 0):
        out += [WithoutReplacement(q, n), ConditionalPoisson(q, n)]
    try:
        out.append(Greedy(q, n))
    except ValueError:
        pass
    if n == 2:
        out.append(SpecHub(q))
    return out


def subsets(V):
    for k in range(V + 1):
        yield from itertools.combinations(range(V), k)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_joint_sums_to_one_and_Q_matches_joint_exactly(n):
    # Q(H) must equal the joint mass of H^n, exactly (Fractions), for every law and every H.
    q = ["1/4", "1/3", "1/6", "1/4"]
    for law in all_laws(q, n):
        items = law.joint_items(exact=True)
        assert sum(items.values()) == 1, law
        assert all(len(t) == n for t in items)
        for H in subsets(4):
            expected = sum((w for t, w in items.items() if set(t) <= set(H)), F(0))
            assert law.Q(H) == expected, (law, H)
        # the dense float table agrees with the exact items to 1e-15
        J = law.joint()
        assert J.shape == (4,) * n
        for t, w in items.items():
            assert abs(J[t] - float(w)) <= 1e-15


def test_T12_sequential_is_not_conditional_poisson():
    # docs/reference.md T12: q = (0.5, 0.3, 0.2), n = 2, H = {0, 1}.
    seq = WithoutReplacement(Q3, 2).Q([0, 1])
    cp = ConditionalPoisson(Q3, 2).Q([0, 1])
    assert seq == F(18, 35)  # 0.514286
    assert cp == F(15, 31)  # 0.483871 = e_2(q|H) / e_2(q)
    assert round(float(seq), 6) == 0.514286 and round(float(cp), 6) == 0.483871


def test_without_n2_closed_form():
    # docs/reference.md: Q(H) = q(H) - (1 - q(H)) * sum_{i in H} q(i) / (1 - q(i)) for n = 2.
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = [F(int(x)) for x in rng.integers(1, 20, size=5)]
        s = sum(q)
        q = [x / s for x in q]
        law = WithoutReplacement(q, 2)
        for H in subsets(5):
            qH = sum((q[i] for i in H), F(0))
            closed = qH - (1 - qH) * sum((q[i] / (1 - q[i]) for i in H), F(0))
            assert law.Q(H) == closed


def test_greedy_tie_rule_and_spechub_share_Q():
    q = ["1/4", "1/4", "1/4", "1/8", "1/8"]
    g = Greedy(q, 3)
    assert g.T == (0, 1)  # ties: larger q first, then smaller index
    g2, s = Greedy(q, 2), SpecHub(q)
    assert g2.T == (0,) and s.a == 0
    for H in subsets(5):
        assert g2.Q(H) == s.Q(H)  # docs/reference.md: greedy (n = 2) and SpecHub have the same Q
    assert g2.joint_items() != s.joint_items()  # but different joint laws


@pytest.mark.parametrize(
    "law",
    [
        WithReplacement([0.5, 0.3, 0.2], 2),
        WithoutReplacement([0.5, 0.3, 0.2], 2),
        WithoutReplacement([0.4, 0.3, 0.2, 0.1], 3),
        ConditionalPoisson([0.4, 0.3, 0.2, 0.1], 2),
        ConditionalPoisson([0.4, 0.3, 0.2, 0.1], 3),
        Product([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]),
        Greedy([0.4, 0.3, 0.2, 0.1], 3),
        SpecHub([0.5, 0.3, 0.2]),
        Explicit([[0.1, 0.2], [0.3, 0.4]]),
    ],
    ids=lambda d: repr(d),
)
def test_sampling_follows_joint(law):
    # Empirical tuple frequencies of 40,000 seeded samples vs the exact joint law: every cell
    # within 5 standard errors (a fixed seed; fails only on a wrong sampler).
    N = 40_000
    s = law.sample(np.random.default_rng(123), N)
    assert s.shape == (N, law.n) and s.dtype == np.int64
    J = law.joint()
    counts = np.zeros_like(J)
    np.add.at(counts, tuple(s.T), 1)
    emp = counts / N
    se = np.sqrt(J * (1 - J) / N) + 1e-12
    assert np.all(np.abs(emp - J) <= 5 * se + 1e-9)


def test_rational_inputs_stay_exact_and_floats_convert_exactly():
    law = WithReplacement(["1/3", "2/3"], 2)
    assert law.rational and law.Q([1]) == F(4, 9)
    lf = WithReplacement([0.25, 0.75], 2)
    assert not lf.rational and lf.Q([1]) == 0.5625
    assert lf.Q([1], exact=True) == F(9, 16)


def test_spec_round_trip(bank):
    for inst in bank[::7]:
        law = bank_law(inst)
        if law is None:
            continue
        again = drafts.from_spec(law.spec())
        assert again.joint_items(exact=True) == law.joint_items(exact=True)


def test_random_laws_Q_is_monotone_and_normalised():
    rng = np.random.default_rng(5)
    for _ in range(30):
        q = dirichlet(rng, 5, 0.5)
        for law in all_laws(list(q), 2):
            assert abs(law.Q(range(5)) - 1.0) <= 1e-12
            assert law.Q([]) == 0
            full = np.ones(5, bool)
            for i in range(5):
                m = full.copy()
                m[i] = False
                assert law.Q(m) <= 1.0 + 1e-12


# ----- bad input: every error names the argument and the fix ---------------------------------
@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: WithReplacement([0.5, float("nan")], 2), r"q: entry 1 is nan"),
        (lambda: WithReplacement([0.7, -0.2, 0.5], 2), r"q: entry 1 is negative"),
        (lambda: WithReplacement([0.5, 0.6], 2), r"q: entries sum to 1.1.*normalise q"),
        (lambda: WithReplacement(["1/2", "1/3"], 2), r"q: rational entries sum to 5/6"),
        (lambda: WithReplacement([0.5, 0.5], 0), r"n: the number of drafts must be >= 1"),
        (lambda: WithReplacement([0.5, 0.5], 1.5), r"n: the number of drafts must be an integer"),
        (lambda: WithoutReplacement([0.5, 0.5, 0.0], 3), r"only 2 token\(s\) with positive mass"),
        (lambda: ConditionalPoisson([1.0, 0.0], 2), r"only 1 token\(s\) with positive mass"),
        (lambda: Greedy([0.5, 0.5, 0.0], 3), r"greedy scheme with n=3 needs positive mass outside"),
        (lambda: Greedy(["2/5", "3/5"], 3), r"needs positive mass outside its top 2"),
        (lambda: SpecHub([1.0, 0.0]), r"SpecHub needs positive mass outside its top token"),
        (lambda: SpecHub([0.5, 0.5], 3), r"SpecHub is defined for n = 2"),
        (lambda: Product([[0.5, 0.5], [0.2, 0.3, 0.5]]), r"qs\[1\]: has length 3 but qs\[0\]"),
        (lambda: Explicit([[0.5, 0.5], [0.5, 0.5]]), r"table: entries sum to 2"),
        (lambda: Explicit([[0.5, 0.5, 0.0]]), r"table: an explicit joint law must have shape"),
        (lambda: drafts.make("nope", [1.0], 1), r"scheme: unknown scheme 'nope'"),
    ],
)
def test_bad_input_names_argument_and_fix(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_joint_refuses_huge_tables_with_size():
    law = WithReplacement(np.full(200, 1 / 200), 4)
    with pytest.raises(ValueError, match=r"needs 1,600,000,000 entries.*fast solver"):
        law.joint()
    assert law.Q(range(100)) == pytest.approx(0.5**4, abs=1e-15)


#: q with masses at and near the bottom of float64 (found by the hostility properties): the
#: sequential joint law once multiplied w·q(x) before dividing by the remaining mass, so the
#: subnormal product rounded (one tuple got probability 1.0, the rest 0).
SUBNORMAL_Q = (0.5494635427875731, 0.015420722207105877, 0.43511573500532097, 5e-324, 5.494635427875732e-301)  # fmt: skip


def test_without_joint_with_subnormal_masses_matches_exact():
    law = drafts.make("without", SUBNORMAL_Q, 5)
    total = sum(F(x) for x in SUBNORMAL_Q)  # the floats sum to 1 only in float arithmetic
    exact = drafts.WithoutReplacement([F(x) / total for x in SUBNORMAL_Q], 5).joint_items()
    got = law.joint_items()
    for t, w in exact.items():  # relative 1e-12 wherever the float value is a normal number
        if float(w) > 1e-290:
            assert abs(got[t] - float(w)) <= 1e-12 * float(w), (t, got.get(t), float(w))
    assert abs(sum(got.values()) - 1.0) <= 1e-12


def test_without_sampler_with_subnormal_masses_terminates_and_draws_the_law():
    """The sampler's gap masses (differences of cumulative sums) lose masses below the rounding
    of the sum; it then draws among the rest by the masses themselves (it looped forever)."""
    law = drafts.make("without", SUBNORMAL_Q, 5)
    draws = law.sample(np.random.default_rng(0), 2000)
    assert draws.shape == (2000, 5) and all(sorted(t) == [0, 1, 2, 3, 4] for t in draws.tolist())
    assert (draws[:, 3:] == [4, 3]).all()  # Pr[3 before 4] = 5e-324 / 5.5e-301 ≈ 1e-23
    # the first draw is q: token 0 with probability 0.549 (binomial, 5 standard errors)
    share = (draws[:, 0] == 0).mean()
    assert abs(share - SUBNORMAL_Q[0]) <= 5 * (SUBNORMAL_Q[0] * (1 - SUBNORMAL_Q[0]) / 2000) ** 0.5


@pytest.mark.parametrize(
    "q,n",
    [
        ([1.0, 1e-16, 1e-16, 1e-300], 4),  # e_4 = 1e-332: below the smallest float
        ([1.0, 1e-200, 1e-200, 1e-150], 3),  # products of three masses underflow
        ([0.5, 0.5, 1e-170, 1e-170], 4),
    ],
)
def test_conditional_poisson_float_weights_survive_an_underflowing_e_n(q, n):
    """When e_n(q) is below the normal floats, the float routes (joint items, tuple weights,
    set weights, Q) are the exact law of the floats rounded once, not a division by zero or
    tuples dropped for a weight that underflowed (found by the hostile property suite)."""
    d = ConditionalPoisson(np.array(q), n)
    fr = [F(x) for x in d.q.tolist()]  # the law is that of the floats (scale-free in q)
    exact = ConditionalPoisson([x / sum(fr) for x in fr], n)
    want = exact.joint_items()
    got = d.joint_items()
    assert set(got) == set(want)
    assert all(abs(got[t] - float(want[t])) <= 1e-15 * float(want[t]) for t in want)
    t, w = d.tuple_weights()
    assert len(t) == len(want) and abs(w.sum() - 1.0) <= 1e-12
    for row, x in zip(t.tolist(), w.tolist(), strict=True):
        assert abs(x - float(want[tuple(row)])) <= 1e-15 * float(want[tuple(row)])
    table = d.set_weight_table()
    assert not table.exact
    for H in ([0, 1, 2], [0, 1, 2, 3], [1, 2, 3]):
        assert abs(d.Q(H) - float(exact.Q(H))) <= 1e-15 * float(exact.Q(H)) + 1e-300


# -- the review of 2026-12-06 (helper fuzzing of mdsd_ot.drafts) ---------------------------------


def test_sample_size_is_checked_and_zero_gives_an_empty_array():
    from mdsd_ot.drafts import make

    for scheme, n in (("with", 2), ("without", 2), ("conditional-poisson", 2), ("greedy", 2),
                      ("spechub", 2)):  # fmt: skip
        law = make(scheme, [0.5, 0.3, 0.2], n)
        assert law.sample(0, 0).shape == (0, n) and law.sample(0, 0).dtype == np.int64
        for bad in (2.9, "3", None, -1, True):
            with pytest.raises(ValueError, match=r"^size: the number of draft tuples must be"):
                law.sample(0, bad)
    with pytest.raises(ValueError, match=r"^size: 2 tuples of n = .* draw fewer tuples"):
        make("with", [0.5, 0.5], 10**30).sample(0, 2)


def test_a_list_of_bools_is_a_mask_and_other_indices_are_refused():
    from mdsd_ot.drafts import make

    law = make("with", ["1/2", "1/3", "1/6"], 1)
    assert law.Q([False, False, True]) == law.Q(np.array([False, False, True])) == F(1, 6)
    for bad in ([1.9], "12", [0.0]):
        with pytest.raises(ValueError, match=r"^H: "):
            law.Q(bad)
    assert law.Q([]) == 0 and law.Q(range(3)) == 1


def test_rational_q_below_the_float_range_refuses_the_float_routes_that_change_the_law():
    """q = (1 - 2t, t, t), t = 1/10^400: the float copy is (1, 0, 0); distinct-draft laws and
    greedy/SpecHub condition on t, so their samplers crashed or drew another law (greedy: (0, 2)
    always, conditional Poisson: {0, 1} always) and the float Q of "without" was 0 where the
    exact one is 1/2.  The exact routes answer; the float ones say why they cannot."""
    from mdsd_ot.drafts import make

    t = F(1, 10**400)
    q = [1 - 2 * t, t, t]
    for scheme in ("without", "conditional-poisson", "greedy", "spechub"):
        law = make(scheme, q, 2)
        assert abs(float(law.Q([0, 1])) - 0.5) <= 1e-15  # exact: 1/2 up to terms in t
        with pytest.raises(ValueError, match=r"^sample: q is rational with positive entries"):
            law.sample(0, 10)
    for scheme in ("without", "greedy", "spechub"):
        law = make(scheme, q, 2)
        for route in (lambda law=law: law.Q([0, 1], exact=False),
                      lambda law=law: law.joint_items(exact=False)):  # fmt: skip
            with pytest.raises(ValueError, match=r"q is rational with positive entries below"):
                route()
    cp = make("conditional-poisson", q, 2)  # its float Q is formed otherwise, and stays right
    assert abs(cp.Q([0, 1], exact=False) - 0.5) <= 1e-15
    assert make("with", q, 2).sample(0, 5).shape == (5, 2)  # i.i.d.: t changes nothing in floats


def test_subnormal_remaining_mass_is_drawn_by_its_relative_sizes():
    """After the heavy token, the rest is (5e-324, 1e-323): u * mass fell on the subnormal grid
    and gave the end tokens half weight ((0, 1) at 0.167 for 1/3).  Tolerance: 5 standard
    errors."""
    from mdsd_ot.drafts import make

    N = 100_000
    for scheme in ("without", "spechub"):
        law = make(scheme, np.array([1.0, 5e-324, 1e-323]), 2)
        s = law.sample(np.random.default_rng(1), N)
        got = float(np.mean((s[:, 0] == 0) & (s[:, 1] == 1)))
        want = law.joint_items()[(0, 1)]
        assert abs(got - want) <= 5 * np.sqrt(want * (1 - want) / N), (scheme, got, want)


def test_float_Q_stays_within_0_and_1():
    from mdsd_ot.drafts import make

    q = [4.6e-311, 0.1212, 5e-324, 0.4927, 0.3435, 0.0425]
    q = np.array(q) / np.sum(q)
    for scheme in ("with", "without", "conditional-poisson", "greedy"):
        assert 0.0 <= make(scheme, q, 3).Q(range(6)) <= 1.0


def test_specs_and_make_refuse_what_they_cannot_read():
    from mdsd_ot.drafts import from_spec, make

    for bad in ({}, None, [1, 2]):
        with pytest.raises(ValueError, match=r"^spec: expected a mapping with a \"scheme\" key"):
            from_spec(bad)
    with pytest.raises(ValueError, match=r"^scheme: unknown scheme \['with'\]"):
        make(["with"], [0.5, 0.5], 1)
    with pytest.raises(ValueError, match=r"^n: got n=3 but the explicit law given has n = 2"):
        make("explicit", table=[[0.25, 0.25], [0.25, 0.25]], n=3)
    with pytest.raises(ValueError, match=r"^table: give one of q, qs and table"):
        make("with", [0.5, 0.5], 2, table=[[1.0]])
    with pytest.raises(ValueError, match=r"^q: must be a non-empty 1-D vector"):
        make("with", [["1/2", "1/2"]], 1)
    with pytest.raises(ValueError, match=r"^table: an explicit joint law must have shape"):
        make("explicit", table=[["1/3", "1/3"], [], ["1/3"]])
    with pytest.raises(ValueError, match=r"^instance too large for the draft tuples"):
        make("with", [0.5, 0.5], 10**30).tuple_weights()


def test_float_specs_round_trip_bit_for_bit():
    """The draft-law fuzzer (2026-12-06): spec() stored the normalised floats and from_spec
    divided them by their sum again, moving the last ulp of about 13% of random q.  A float
    spec now says ``"normalised": true`` and from_spec keeps those floats as they are (after
    the same validation); rational specs and specs without the key are read as before."""
    import json

    from mdsd_ot.drafts import from_spec, make

    rng = np.random.default_rng(0)
    moved = 0
    for _ in range(100):
        V = int(rng.integers(3, 30))
        q = rng.dirichlet(np.ones(V))
        moved += not np.array_equal(q / q.sum(), (q / q.sum()) / np.sum(q / q.sum()))
        for scheme in ("with", "without", "conditional-poisson", "greedy", "spechub"):
            law = make(scheme, q, 2)
            spec = json.loads(json.dumps(law.spec()))
            assert spec["normalised"] is True
            again = from_spec(spec)
            assert np.array_equal(again.q, law.q) and again.spec() == spec
        prod = make("product", qs=[q, rng.dirichlet(np.ones(V))])
        again = from_spec(json.loads(json.dumps(prod.spec())))
        assert all(np.array_equal(a, b) for a, b in zip(again.qs, prod.qs, strict=True))
    assert moved > 0  # the second division does move bits: the test could fail
    assert "normalised" not in make("with", ["1/2", "1/2"], 2).spec()
    with pytest.raises(ValueError, match=r"^q: entries sum to 1.1"):  # still validated
        from_spec({"scheme": "with", "n": 2, "q": [0.5, 0.6], "normalised": True})
