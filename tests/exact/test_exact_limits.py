"""Size guards (issue 10, classes 1 and 5): every exact method counts the work an instance needs
and refuses it above a named limit *before* doing any, pointing to a method that scales.

"Before doing any work" is checked, not timed: the law's enumerations (joint law, tuple and set
weights, Q) are replaced by functions that fail the test if called, and so are its exact counts
where even computing them would take seconds (V = 10⁶ with n = 10⁴; n = 10⁶).
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
import pytest

import mdsd_ot
from mdsd_ot import drafts as D
from mdsd_ot.drafts import Vector
from mdsd_ot.exact import METHODS, DraftGraph, certify, optimal_plan
from mdsd_ot.exact._limits import COUNT_BITS, amount, check_sets, check_subsets, check_tuples

#: Every method of the exact package (derived from the registry, not listed by hand).
EXACT = sorted(m for m, spec in METHODS.items() if spec.func.__module__.startswith("mdsd_ot.exact"))
#: The methods that enumerate draft tuples.
TUPLE_METHODS = ("primal", "primal-cvxpy", "emd", "bmatching", "dual", "maxflow", "maxflow-scipy")


def _solve(method: str, p, law):
    """Run a registered method directly (no installed-extra check: refusals come first)."""
    return METHODS[method].func(p if isinstance(p, Vector) else Vector(p, "p"), law)


def _forbid(monkeypatch, law, *names):
    """Make the law's enumerations (and, where named, its exact counts) fail the test."""

    def boom(*args, **kwargs):
        raise AssertionError("the size guard let the method start enumerating")

    for name in (
        "joint_items",
        "tuple_weights",
        "set_weight_table",
        "set_weights",
        "Q",
        "joint",
        *names,
    ):
        monkeypatch.setattr(law, name, boom, raising=name != "set_weight_work")


def test_every_exact_method_is_guarded():
    assert set(EXACT) >= {
        "primal",
        "primal-cvxpy",
        "emd",
        "bmatching",
        "dual",
        "maxflow",
        "maxflow-scipy",
        "reduced",
        "subset",
        "subset-exact",
    }


# -- huge V: V = 10^6 (issue 10, class 5) ------------------------------------------------------


@pytest.mark.parametrize("method", EXACT)
def test_huge_vocabulary_refused_before_any_work(method, monkeypatch):
    """V = 10⁶, n = 2: a ValueError naming the limit and a method that scales; p is never
    converted to Fractions and the law is never enumerated."""
    V = 10**6
    pv = Vector(np.full(V, 1.0 / V), "p")
    law = D.WithReplacement(np.full(V, 1.0 / V), 2)
    _forbid(monkeypatch, law)
    with pytest.raises(ValueError, match="instance too large") as info:
        _solve(method, pv, law)
    msg = str(info.value)
    assert "limit" in msg and "method='fast'" in msg, msg
    assert "4300 digits" not in msg
    assert pv._exact is None  # no Fraction conversion of 10^6 floats (subset-exact did: 47 s)


def test_subset_at_a_million_tokens_names_the_limit_and_the_methods():
    """The issue's example: Python's "Exceeds the limit (4300 digits)" after seconds of work."""
    V = 10**6
    p = np.full(V, 1.0 / V)
    law = D.WithReplacement(p, 2)
    t0 = time.perf_counter()
    for method in ("subset", "subset-exact"):
        with pytest.raises(ValueError) as info:
            mdsd_ot.solve(p, law, method=method)
        msg = str(info.value)
        assert "brute-force subset selection" in msg and "2^1,000,000 subsets" in msg
        assert "limit 1,048,576" in msg and "V <= 16" in msg
        assert "method='fast'" in msg and "method='reduced'" in msg
    assert time.perf_counter() - t0 < 30  # was 47 s for subset-exact; ~0.1 s now


def test_subset_limit_is_2_to_the_16_subsets_times_16_tokens():
    ok = D.WithReplacement(np.full(16, 1 / 16), 1)
    assert check_subsets(16, 2**16 * 16, "x", "y") == 2**16 * 16
    with pytest.raises(ValueError, match="subset-token steps"):
        mdsd_ot.solve(np.full(17, 1 / 17), D.WithReplacement(np.full(17, 1 / 17), 1), "subset")
    assert mdsd_ot.exact.subset.check_size(ok) == 2**20


# -- huge n -------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", TUPLE_METHODS)
def test_huge_n_refused_without_computing_the_count(method, monkeypatch):
    """n = 10⁶ drafts over 2 tokens: 2^(10⁶) tuples.  The law's exact count (a million-bit
    integer) is never computed; the message names the bound and the methods to use."""
    law = D.WithReplacement([0.5, 0.5], 10**6)
    _forbid(monkeypatch, law, "support_size_bound", "set_count_bound")
    with pytest.raises(ValueError, match=f"beyond the 2\\^{COUNT_BITS}") as info:
        _solve(method, [0.5, 0.5], law)
    msg = str(info.value)
    assert "2^1,000,000 draft tuples" in msg and "method='reduced'" in msg


@pytest.mark.parametrize(
    "law",
    [
        D.WithoutReplacement(np.full(10**5, 1e-5), 10**4),
        D.ConditionalPoisson(np.full(10**5, 1e-5), 10**4),
        D.Greedy(np.linspace(1.0, 2.0, 10**5) / np.linspace(1.0, 2.0, 10**5).sum(), 10**4),
    ],
    ids=["without", "conditional-poisson", "greedy"],
)
def test_large_v_and_n_refused_by_reduced_without_counting(law, monkeypatch):
    """V = 10⁵, n = 10⁴: C(10⁵, 10⁴) has ~10⁵ bits (seconds); refused from the cheap bound."""
    _forbid(monkeypatch, law, "support_size_bound", "set_count_bound", "set_weight_work")
    with pytest.raises(ValueError, match="token sets of size <= n") as info:
        _solve("reduced", np.full(law.V, 1.0 / law.V), law)
    assert "method='fast'" in str(info.value)


def test_product_too_large_for_reduced_says_there_is_no_fast_route():
    law = D.Product([np.full(100, 0.01)] * 5)  # sum_{k<=5} C(100, k) = 79,375,495 sets
    with pytest.raises(ValueError) as info:
        mdsd_ot.solve(np.full(100, 0.01), law, method="reduced")
    msg = str(info.value)
    assert "79,375,495 token sets" in msg and "limit 8,388,608" in msg
    assert "no fast route" in msg and "method='fast'" not in msg


# -- counts in the unit of the work --------------------------------------------------------------


def test_exact_maxflow_counts_edges_n_per_tuple():
    """V = 19, n = 4: 130,321 tuples passed the old tuple count (2^17); their 521,284 edges
    exceed the networkx limit (2^17 tuples at n = 3 = 393,216 edges)."""
    law = D.WithReplacement(np.full(19, 1 / 19), 4)
    with pytest.raises(ValueError, match="521,284 edges") as info:
        _solve("maxflow", np.full(19, 1 / 19), law)
    msg = str(info.value)
    assert "limit 393,216" in msg and "method='maxflow-scipy'" in msg


def test_set_table_entries_counted_n_per_set():
    law = D.Greedy(np.arange(1, 11) / 55, 5)  # at most V = 10 sets of 5 tokens: 50 entries
    assert check_sets(law, max_sets=10, max_work=50, what="x", hint="y") == 10
    with pytest.raises(ValueError, match="needs 50 set-table entries"):
        check_sets(law, max_sets=10, max_work=49, what="x", hint="y")


def test_check_tuples_counts_per_tuple_work():
    law = D.WithoutReplacement([0.5, 0.25, 0.25], 2)  # 3 * 2 ordered pairs
    assert check_tuples(law, per_tuple=3, limit=18, what="x", hint="y") == 6
    with pytest.raises(ValueError, match="needs 18 LP variables"):
        check_tuples(law, per_tuple=3, limit=17, what="x", hint="y", unit="LP variables")


def test_amount_never_prints_a_huge_integer():
    assert amount(10**17) == "100,000,000,000,000,000"
    assert amount(3**100_000) == "at least 2^158,496"


# -- the LP forms (moved from the LP tests) ----------------------------------------------------


@pytest.mark.parametrize(
    ("method", "what"),
    [
        ("primal", "transport LP"),
        ("primal-cvxpy", "cvxpy transport model"),
        ("bmatching", "b-matching LP"),
        ("dual", "w-vertex-cover dual"),
        ("emd", "ot.emd"),
    ],
)
def test_refuses_too_large(method, what):
    """Too large: a ValueError naming the size and pointing to method='fast' / 'reduced'.

    (Refused before POT or cvxpy is imported, so this runs without them.)"""
    V, n = 200, 4  # 1.6e9 tuples: refused before enumerating anything
    law = D.WithReplacement(np.full(V, 1.0 / V), n)
    with pytest.raises(ValueError, match=what) as info:
        _solve(method, np.full(V, 1.0 / V), law)
    msg = str(info.value)
    assert "instance too large" in msg and "method='fast'" in msg and "'reduced'" in msg
    assert "1,600,000,000" in msg or "320,000,000,000" in msg or "6,400,000,000" in msg


# -- certificates and plans ---------------------------------------------------------------------


def test_certify_refuses_before_computing_exact_capacities(monkeypatch):
    law = D.WithReplacement(np.full(200, 1 / 200), 4)
    _forbid(monkeypatch, law)
    with pytest.raises(ValueError, match="exact certificate") as info:
        certify(np.full(200, 1 / 200), law, {(0, (0, 0, 0, 0)): Fraction(1, 2)}, [0])
    assert "6,400,000,000 entries" in str(info.value) and "method='reduced'" in str(info.value)


def test_optimal_plan_refuses_a_huge_dense_plan_at_once():
    V = 10**6
    law = D.WithReplacement(np.full(V, 1 / V), 10**3)
    with pytest.raises(ValueError, match=r"needs 1,000,000\^1,001 entries"):
        optimal_plan(np.full(V, 1 / V), law)


def test_dense_plan_decision_never_computes_a_huge_power():
    empty = np.zeros(0, dtype=np.int64)
    g = DraftGraph(10**6, 10**6, np.zeros((0, 10**6), np.int64), np.zeros(0), {}, empty, empty)
    assert not g.wants_dense()
    small = DraftGraph(4, 3, np.zeros((0, 3), np.int64), np.zeros(0), {}, empty, empty)
    assert small.wants_dense()


# -- issue 10, class 1: product drafts on a tiny vocabulary ------------------------------------


@pytest.mark.parametrize("n", [10, 40])
def test_product_many_drafts_tiny_vocabulary_within_a_second(n):
    """``mdsd-ot solve --p 0.5,0.5 --q 0.2,0.8 -n 10 --scheme product`` ran for minutes; the
    set weights are now a DP over covered subsets.  Answer checked against the closed form
    α* = min over the 4 subsets of P(H) + 1 − Q(H), Q(H) = q(H)^n."""
    mdsd_ot.solve([0.5, 0.5], D.Product([[0.2, 0.8]] * 2))  # warm-up: imports stay untimed
    t0 = time.perf_counter()
    r = mdsd_ot.solve([0.5, 0.5], D.Product([[0.2, 0.8]] * n))
    assert time.perf_counter() - t0 < 1.0
    assert r.alpha == 1.0  # P(H) + 1 - Q(H) >= 1 for every H
    law = D.Product([["1/5", "4/5"]] * n)
    r = mdsd_ot.solve(["9/10", "1/10"], law)
    F = Fraction
    expect = min(F(1), F(19, 10) - F(1, 5) ** n, F(11, 10) - F(4, 5) ** n)
    assert r.alpha_exact == expect
    assert r.method == "reduced" and r.info["sets"] == 3
