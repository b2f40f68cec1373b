"""The independent re-computations (mdsd_ot/theory/oracles.py) agree with the laws and the
verifiers where the theory says so, and disagree where it says they must (T12b)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts, solve, verifiers
from mdsd_ot.drafts import rational_simplex
from mdsd_ot.theory import oracles


def test_conditioned_iid_q_equals_the_conditional_poisson_law():
    rng = np.random.default_rng(0)
    for _ in range(6):
        V = int(rng.integers(2, 6))
        n = int(rng.integers(1, V + 1))
        q = rational_simplex(rng, V)
        cp = drafts.ConditionalPoisson(q, n)
        for k in range(V + 1):
            for H in itertools.combinations(range(V), k):
                assert oracles.conditioned_iid_Q(q, n, H) == cp.Q(list(H), exact=True)


def test_conditioned_iid_q_is_not_the_sequential_law():
    # T12b: the oracle tells the two laws apart (it could fail)
    q = [Fraction(1, 2), Fraction(3, 10), Fraction(1, 5)]
    seq = drafts.WithoutReplacement(q, 2).Q([0, 1], exact=True)
    assert oracles.conditioned_iid_Q(q, 2, (0, 1)) == Fraction(15, 31) != seq == Fraction(18, 35)


def test_greedy_verifier_law_is_lossless_and_attains_alpha():
    rng = np.random.default_rng(1)
    for _ in range(8):
        V = int(rng.integers(3, 6))
        n = int(rng.integers(2, min(V, 3) + 1))
        p, q = rational_simplex(rng, V, zeros=True), rational_simplex(rng, V)
        d = drafts.Greedy(q, n)
        law, acc = oracles.greedy_verifier_law(p, d)
        assert law == list(p)
        assert acc == solve(p, d, method="subset-exact").alpha_exact == d.alpha_closed_form(p)
        vlaw, vacc = verifiers.get("greedy", d).exact(p, d)
        assert Fraction(vacc) == acc


def test_greedy_verifier_law_sees_a_wrong_target():
    # a verifier built for p but fed another target does not output that target
    d = drafts.Greedy(["1/2", "3/10", "1/5"], 2)
    law, _ = oracles.greedy_verifier_law([Fraction(1, 5), Fraction(1, 5), Fraction(3, 5)], d)
    assert law != [Fraction(1, 3)] * 3


@pytest.mark.parametrize("scheme", ["with", "without", "greedy", "product"])
def test_dual_lp_reaches_alpha_at_a_01_vertex(scheme):
    rng = np.random.default_rng(2)
    d = drafts.random_law(rng, scheme, 3, 2)
    p = rational_simplex(rng, 3, zeros=True)
    value, x = oracles.dual_lp(p, d)
    a = float(solve(p, d, method="subset-exact").alpha_exact)
    assert abs(value - a) <= 1e-9
    assert np.all(np.minimum(np.abs(x), np.abs(x - 1)) <= 1e-9)
