"""Counterexample hunting: finds T12's counterexample on a tiny budget; CLI with progress bar."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from mdsd_ot.cli import claims as cli_claims
from mdsd_ot.theory import claims as C
from mdsd_ot.theory import hunt

runner = CliRunner()


def make_app() -> typer.Typer:
    app = typer.Typer()
    cli_claims.register(app)
    return app


def test_tiny_hunt_finds_t12_counterexample():
    # T12b: the e_n law overstates the sequential α*; tiny evaluation budget, deterministic
    r = hunt.run("en-vs-sequential", budget=None, seed=0, max_evals=500, stop_when_found=True)
    assert r.found and r.exact_value > 0 and r.evaluations <= 500
    assert r.witness["claim"] == "T12b"
    rep = C.reproduce(r.witness)
    assert rep.reproduced and rep.values["alpha_en"] > rep.values["alpha_sequential"]


def test_tiny_time_budget_finds_t12_counterexample():
    r = hunt.run("en-vs-sequential", budget=1.5, seed=1)
    assert r.found and r.seconds < 10


def test_hunt_is_deterministic_for_an_evaluation_budget():
    a = hunt.run("qconvex-spechub", budget=None, seed=4, max_evals=200)
    b = hunt.run("qconvex-spechub", budget=None, seed=4, max_evals=200)
    assert a.value == b.value and a.witness == b.witness and a.evaluations == 200


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
        hunt._qconv(lambda x: hunt.drafts.WithoutReplacement(x.vecs[1], x.n)),
        hunt._c_qconv(lambda v, n: hunt.drafts.WithoutReplacement(v[1], n)),
    )
    hunt.CONJECTURES["qconvex-without"] = c
    try:
        r = hunt.run("qconvex-without", budget=None, seed=0, max_evals=300)
    finally:
        del hunt.CONJECTURES["qconvex-without"]
    assert not r.found and r.value <= 1e-9


def test_hunt_cli_out_and_reproduce(tmp_path):
    f = tmp_path / "h.json"
    res = runner.invoke(make_app(), ["hunt", "en-vs-sequential", "--budget", "1", "--out", str(f)])
    assert res.exit_code == 0, res.output
    assert "violated" in res.output and f.exists()
    res = runner.invoke(make_app(), ["claims", "--witness", str(f)])
    assert res.exit_code == 0 and "reproduced" in res.output


def test_hunt_cli_json():
    res = runner.invoke(make_app(), ["hunt", "qconvex-greedy", "--budget", "1", "--json"])
    assert res.exit_code == 0
    body = json.loads(res.stdout)
    assert body["found"] is True and body["witness"]["kind"] == "qconvex"


def test_hunt_bad_input():
    assert runner.invoke(make_app(), ["hunt", "nope"]).exit_code == 2
    assert runner.invoke(make_app(), ["hunt", "qconvex-greedy", "--budget", "0"]).exit_code == 2
    with pytest.raises(ValueError, match="max_evals"):
        hunt.run("qconvex-greedy", budget=None)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(hunt.CONJECTURES))
def test_every_conjecture_slow(name):
    r = hunt.run(name, budget=20, seed=0)
    if name == "rrs-without-vs-with":
        return  # an open question: the report records what it finds
    assert r.found, name
