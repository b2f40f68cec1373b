"""q-convexity (T5), supermodularity (T6) and prefix optimality (T7) scans."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts
from mdsd_ot.drafts import DraftLaw, random_law, rational_simplex
from mdsd_ot.theory import qconvex as qc


class TableLaw(DraftLaw):
    """A fake law with an arbitrary Q table (lets the checks see a violation)."""

    scheme = "fake"

    def __init__(self, Qfun, V):
        self.V, self.n, self._f = V, 1, Qfun

    def _Q(self, mask, exact):
        return self._f(int(mask.sum()))


@pytest.mark.parametrize("scheme", ["with", "without", "conditional-poisson"])
def test_q_convex_laws_hold_exactly(scheme):
    # T5: exact scan of every (H, x, y)
    rng = np.random.default_rng(0)
    for _ in range(4):
        V = int(rng.integers(3, 6))
        d = random_law(rng, scheme, V, int(rng.integers(1, 4)))
        v = qc.q_convexity_violation(d)
        assert v.exact and v.holds and v.value <= 0, (d.spec(), v)
        assert v.checked > 0


def test_greedy_violation_by_hand():
    # T5b: Q(H) = 1[T ⊆ H] q'(H \ T), T = {0}; H = {1, 2}, x = 0, y = 3
    d = drafts.Greedy(["2/5", "3/10", "1/5", "1/10"], 2)
    v = qc.q_convexity_violation(d)
    qp = [Fraction(0), Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)]  # q' = q / (1 - 2/5)
    d1 = (qp[1] + qp[2]) / Fraction(2, 5)
    d2 = qp[3] / Fraction(1, 10)
    assert v.value == d1 - d2 == Fraction(5, 12)
    assert (v.witness["H"], v.witness["x"], v.witness["y"]) == ((1, 2), 0, 3)


def test_greedy_on_three_tokens_is_q_convex():
    # the T5b failure needs q(S) > q(top) for some S, impossible with V = 3, n = 2
    rng = np.random.default_rng(5)
    for _ in range(10):
        assert qc.q_convexity_violation(random_law(rng, "greedy", 3, 2)).holds


def test_q_convexity_detects_concave_Q():
    d = TableLaw(lambda k: Fraction(k, 3) ** Fraction(1, 1) * (2 - Fraction(k, 3)), 3)  # concave
    v = qc.q_convexity_violation(d, q=["1/3", "1/3", "1/3"], exact=True)
    assert not v.holds and v.value > 0


def test_supermodularity_holds_for_every_law_and_detects_submodular():
    # T6: every Q supermodular, including non-q-convex greedy and explicit laws
    rng = np.random.default_rng(1)
    for scheme in [
        "with",
        "without",
        "conditional-poisson",
        "product",
        "greedy",
        "spechub",
        "explicit",
    ]:
        d = random_law(rng, scheme, 3 if scheme == "explicit" else 4, 2)
        assert qc.supermodularity_violation(d).holds, scheme
        mw, sw = qc.mobius_weights(d), qc.set_weights(d)
        assert mw == {k: v for k, v in sw.items() if v != 0}
        assert all(v > 0 for v in mw.values())
    sub = TableLaw(lambda k: Fraction(min(k, 1)), 3)  # 1[H ≠ ∅] is submodular
    v = qc.supermodularity_violation(sub, exact=True)
    assert not v.holds and v.value == 1


def test_prefix_gap_zero_for_q_convex_laws():
    # T7, exact
    rng = np.random.default_rng(2)
    for scheme in ["with", "without", "conditional-poisson"]:
        for _ in range(3):
            V = int(rng.integers(2, 7))
            d = random_law(rng, scheme, V, min(V, int(rng.integers(1, 4))))
            g = qc.prefix_optimality_gap(rational_simplex(rng, V, zeros=True), d)
            assert g.exact and g.gap == 0 and g.holds


def test_prefix_gap_positive_for_greedy():
    # T7b: the documented instance; H* = T ∪ {q' ≥ p} = {0, 2, 3} is not a level set of p/q
    p = ["1/2", "2/5", "1/20", "1/20"]
    g = qc.prefix_optimality_gap(p, drafts.Greedy(["3/10", "1/4", "1/4", "1/5"], 2))
    assert g.gap == Fraction(3, 70) and g.brute_H == (0, 2, 3) and not g.holds
    assert 1 + g.brute_value == Fraction(67, 70)


def test_level_sets_group_ties_and_zero_q_last():
    s = qc.level_sets(
        [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2), Fraction(0)],
        [Fraction(1, 4), Fraction(1, 4), Fraction(0), Fraction(1, 2)],
    )
    assert s == [(), (3,), (0, 1, 3), (0, 1, 2, 3)]


def test_float_mode_and_explicit_q():
    d = drafts.WithoutReplacement([0.5, 0.3, 0.2], 2)
    v = qc.q_convexity_violation(d, tol=1e-12)
    assert not v.exact and v.holds
    v2 = qc.q_convexity_violation(d, q=[0.2, 0.3, 0.5], tol=1e-12)  # the wrong q breaks it
    assert not v2.holds
    with pytest.raises(ValueError, match="q"):
        qc.q_convexity_violation(d, q=[0.5, 0.5])


def test_product_default_q_is_mean_marginal():
    d = drafts.Product([["1/2", "1/2", "0"], ["0", "1/2", "1/2"]])
    assert qc.reference_q(d, True) == [Fraction(1, 4), Fraction(1, 2), Fraction(1, 4)]


def test_size_limit():
    with pytest.raises(ValueError, match="too large"):
        qc.q_table(drafts.WithReplacement([1 / 13] * 13, 1))


@pytest.mark.slow
def test_q_convexity_wide_sweep():
    rng = np.random.default_rng(10)
    for _ in range(60):
        scheme = ["with", "without", "conditional-poisson"][int(rng.integers(3))]
        V = int(rng.integers(3, 7))
        d = random_law(rng, scheme, V, min(V, int(rng.integers(1, 5))))
        assert qc.q_convexity_violation(d).holds
        assert qc.prefix_optimality_gap(rational_simplex(rng, V), d).gap == 0
