"""Counterexample hunting (mdsd_ot/theory/hunt.py): finds T12's counterexample on a tiny
budget, is deterministic for an evaluation budget, says which bound stopped it, refuses
nonsense bounds (the CLI: tests/cli/test_cli_claims.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mdsd_ot import drafts
from mdsd_ot.theory import claims as C
from mdsd_ot.theory import conjectures, hunt


def test_tiny_hunt_finds_t12_counterexample():
    # T12b: the e_n law overstates the sequential α*; tiny evaluation budget, deterministic
    r = hunt.run("en-vs-sequential", budget=None, seed=0, max_evals=500, stop_when_found=True)
    assert r.found and r.exact_value > 0 and r.evaluations <= 500
    assert r.witness["claim"] == "T12b"
    assert r.bounded_by == "found" and r.reproducible
    rep = C.reproduce(r.witness)
    assert rep.reproduced and rep.values["alpha_en"] > rep.values["alpha_sequential"]


def test_tiny_time_budget_finds_t12_counterexample():
    r = hunt.run("en-vs-sequential", budget=1.5, seed=1)
    assert r.found and r.seconds < 10
    assert r.bounded_by == "budget" and not r.reproducible and r.max_evals is None


def test_hunt_is_deterministic_for_an_evaluation_budget():
    a = hunt.run("qconvex-spechub", budget=None, seed=4, max_evals=200)
    b = hunt.run("qconvex-spechub", budget=None, seed=4, max_evals=200)
    assert a.value == b.value and a.witness == b.witness and a.evaluations == 200
    assert a.bounded_by == b.bounded_by == "evals"


def test_evals_bound_the_search_even_with_a_long_budget():
    r = hunt.run("qconvex-greedy", budget=600, seed=2, max_evals=120)
    assert r.evaluations == 120 and r.bounded_by == "evals" and r.budget == 600.0


def test_greedy_vs_without_found():
    r = hunt.run("greedy-vs-without", budget=None, seed=0, max_evals=2000, stop_when_found=True)
    assert r.found and r.witness["alpha_greedy"] < r.witness["alpha_without"]
    assert C.reproduce(r.witness).reproduced


def test_q_convex_law_yields_nothing():
    # a hunt must not invent violations: T5 holds for the sequential law, so rounding to
    # rationals and recomputing exactly must reject every candidate
    c = hunt.Conjecture(
        "qconvex-without",
        "without is q-convex",
        "T5",
        (3, 4),
        (2,),
        2,
        conjectures.q_convexity_objective(lambda x: drafts.WithoutReplacement(x.vecs[1], x.n)),
        conjectures.q_convexity_confirmation(lambda v, n: drafts.WithoutReplacement(v[1], n)),
    )
    hunt.CONJECTURES["qconvex-without"] = c
    try:
        r = hunt.run("qconvex-without", budget=None, seed=0, max_evals=300)
    finally:
        del hunt.CONJECTURES["qconvex-without"]
    assert not r.found and r.value <= 1e-9


def test_hunt_bad_input():
    with pytest.raises(ValueError, match="max_evals"):
        hunt.run("qconvex-greedy", budget=None)
    with pytest.raises(ValueError, match="unknown conjecture 'nope'.*--list"):
        hunt.run("nope", budget=1)


@pytest.mark.parametrize("budget", [0, -1.0, math.nan, math.inf, -math.inf, 1e12, "2", True])
def test_budget_refused_with_its_bound(budget):
    with pytest.raises(ValueError, match=r"budget: give a finite number of seconds in \(0, "):
        hunt.run("qconvex-greedy", budget=budget, seed=0)


@pytest.mark.parametrize("evals", [0, -3, 10**10, 2.5, "10", True, None])
def test_evals_refused_with_its_bound(evals):
    if evals is None:  # a None max_evals is "no evaluation bound", refused only with no budget
        assert hunt.run("qconvex-greedy", budget=0.2, max_evals=None).evaluations > 0
        return
    with pytest.raises(ValueError, match=r"max_evals: give a whole number .* \[1, 1000000000\]"):
        hunt.run("qconvex-greedy", budget=None, max_evals=evals)


def test_checks_accept_the_edges_of_their_ranges():
    assert hunt.check_budget(hunt.MAX_BUDGET) == hunt.MAX_BUDGET
    assert hunt.check_budget(1e-3) == 1e-3
    assert hunt.check_evals(1) == 1 and hunt.check_evals(np.int64(hunt.MAX_EVALS)) == 10**9


def test_listing_names_every_conjecture_and_its_claim():
    rows = hunt.listing()
    assert [r["name"] for r in rows] == list(hunt.CONJECTURES)
    claims = {r["name"]: r["claim"] for r in rows}
    assert claims["qconvex-product"] == "T5c" and claims["rrs-without-vs-with"] is None
    assert all(r["claim"] is None or r["claim"] in C.CLAIMS for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(hunt.CONJECTURES))
def test_every_conjecture_slow(name):
    r = hunt.run(name, budget=20, seed=0)
    if name == "rrs-without-vs-with":
        return  # an open question: the report records what it finds
    assert r.found, name
