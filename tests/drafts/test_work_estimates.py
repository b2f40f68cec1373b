"""The size guards' work estimates count the route that will run (found by the draft-law
fuzzer of 2026-12-06): float i.i.d. set weights with n > 170 take the covering DP, Fraction
terms grow with n, and a product of n copies of q stores n·V entries."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import solve
from mdsd_ot.drafts import Product, WithReplacement, make
from mdsd_ot.drafts._base import exact_words
from mdsd_ot.drafts._sets import MAX_EXACT_SET_WORK
from mdsd_ot.exact.reduced import reduced_problem


def test_float_iid_weights_count_the_dp_when_n_factorial_overflows():
    """V = 1, n = 10^6 was estimated at 1 term (the compositions' count) but ran the DP:
    n·k·2^k = 2·10^6 terms, 4.3 s."""
    law = WithReplacement([1.0], 10**6)
    assert law._route(1, False) == "dp"
    assert law.set_weight_work(False) == 10**6 * 1 * 2
    small = WithReplacement([0.5, 0.5], 100)  # n! fits a float: the compositions
    assert small._route(2, False) == "compositions"
    assert small.set_weight_work(False) == 2 * 1 + 1 * 99 * 2


def test_exact_terms_count_their_words():
    thirds = WithReplacement([Fraction(1, 3), Fraction(2, 3)], 10_000)
    words = exact_words(thirds.qvals(True), 10_000)
    assert words == math.ceil(10_000 * (2 + math.log2(10_001)) / 64)  # B = 2 bits (the 3)
    assert thirds.set_weight_work(True) == thirds._set_weight_terms(True) * words
    assert thirds.set_weight_work(True) > MAX_EXACT_SET_WORK
    assert WithReplacement([Fraction(1, 3), Fraction(2, 3)], 3).set_weight_work(True) == (
        WithReplacement([Fraction(1, 3), Fraction(2, 3)], 3).set_weight_work(False)
    )  # small n: one word a term, as before


def test_reduced_takes_floats_when_the_exact_weights_are_too_costly():
    """n = 10,000 rational i.i.d. drafts: the exact weights took 86 s; the default route is now
    the float one (its accuracy stated), and exact=True is refused before any work."""
    law = WithReplacement([Fraction(1, 3), Fraction(2, 3)], 10_000)
    p = [Fraction(1, 2), Fraction(1, 2)]
    r = solve(p, law, method="reduced")
    assert r.alpha_exact is None and 0 < r.accuracy < 1e-9
    assert r.alpha == pytest.approx(1.0, abs=r.accuracy)  # α* = 1: Q({i}) < 1/2 for both i
    with pytest.raises(ValueError, match=r"in Fractions: needs .* or exact=False \(floats\)"):
        reduced_problem(p, law, exact=True)
    # a small rational instance still goes through Fractions
    small = solve(p, WithReplacement([Fraction(1, 3), Fraction(2, 3)], 3), "reduced")
    assert small.alpha_exact == 1  # 1 + min_H [P(H) - Q(H)]: H = Σ, since Q({1}) = 8/27 < 1/2


def test_product_of_n_copies_refuses_n_times_v_entries():
    """make('product', q, n) stored n parsed copies of q: n = 2^16 at V = 152,064 needed 80 GB."""
    q = np.full(152_064, 1 / 152_064)
    with pytest.raises(ValueError, match=r"n = 65,536 copies of a q over V = 152,064 tokens.*"
                       r"WithReplacement\(q, n\)"):  # fmt: skip
        make("product", q=q, n=2**16)
    law = make("product", q=q, n=100)  # one parsed q, 100 references
    assert isinstance(law, Product) and law.n == 100
    assert all(a is law.qs[0] for a in law.qs)
