"""``mdsd-ot solve``: α*, H*, time and the plan file for one instance (T1, subset form (8)).

Exact values are compared as Fractions; plan marginals within 1e-9 (float LP / flow solvers).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from fractions import Fraction

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

import mdsd_ot
from mdsd_ot import drafts
from mdsd_ot.cli import solve as cli_solve
from mdsd_ot.cli.solve import write_plan
from mdsd_ot.exact import METHODS, Method

runner = CliRunner()

P, Q = "1/2,1/3,1/6", "1/6,1/3,1/2"


def _app() -> typer.Typer:
    app = typer.Typer()
    cli_solve.register(app)

    @app.command("noop")  # a second command keeps "solve" as a named subcommand
    def _noop() -> None:
        """Unused."""

    return app


def _solve(*args: str):
    return runner.invoke(_app(), ["solve", *args])


def test_solve_prints_alpha_H_and_time():
    res = _solve("--p", P, "--q", Q, "-n", "2", "--method", "subset-exact")
    assert res.exit_code == 0, res.output
    # α* = 1 + min_H [P(H) − Q(H)] = 1 + 1/2 − 25/36 at H = {1, 2} (Q(H) = (5/6)^2)
    assert "α* = 0.805555555555556 = 29/36" in res.stdout
    assert "H* = {1, 2}" in res.stdout
    assert "ms" in res.stdout


def test_solve_json_matches_the_library():
    res = _solve("--p", P, "--q", Q, "-n", "2", "--scheme", "without", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    law = drafts.WithoutReplacement(Q.split(","), 2)
    H = np.zeros(3, dtype=bool)
    H[out["H"]] = True
    p = [Fraction(x) for x in P.split(",")]
    # the reported H attains the reported α* exactly (subset form (8))
    value = sum((p[i] for i in out["H"]), Fraction(0)) + 1 - law.Q(H, exact=True)
    assert out["alpha"] == pytest.approx(float(value), abs=1e-12)
    assert out["scheme"] == "without" and out["q"] == Q.split(",")
    assert {"alpha", "H", "method", "status", "seconds"} <= set(out)


def test_solve_product_with_repeated_q():
    res = _solve(
        "--p", "1/2,1/2", "--q", "1/2,1/2", "--q", "1/4,3/4", "--scheme", "product",
        "--method", "subset-exact", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n"] == 2 and out["alpha_exact"] == "1"


def _plan_methods() -> list[str]:
    return [
        m
        for m in ("primal", "bmatching", "emd", "maxflow", "maxflow-scipy", "reduced")
        if m in METHODS and METHODS[m].is_installed()
    ]


@pytest.mark.parametrize("method", _plan_methods() or ["(none registered yet)"])
def test_plan_file_is_an_optimal_coupling(method, tmp_path):
    """The written plan carries α* (T1): a dense coupling with marginals p and p_draft, or a
    sparse flow on the accepting edges within the capacities p(i) and p_draft (tolerance 1e-9).
    """
    if method not in METHODS:
        pytest.skip("no method yielding a plan is registered")
    p = np.array([1 / 2, 1 / 3, 1 / 6])
    law = drafts.WithReplacement(Q.split(","), 2)
    sparse = isinstance(mdsd_ot.solve(P.split(","), law, method=method).plan, Mapping)
    path = tmp_path / ("plan.json" if sparse else "plan.npy")
    res = _solve("--p", P, "--q", Q, "-n", "2", "--method", method, "--plan", str(path), "--json")
    assert res.exit_code == 0, res.output
    alpha = json.loads(res.stdout)["alpha"]
    if not sparse:
        C = np.load(path)
        assert C.shape == (3, 3, 3)
        np.testing.assert_allclose(C.sum(axis=(1, 2)), p, atol=1e-9)
        np.testing.assert_allclose(C.sum(axis=0), law.joint(), atol=1e-9)
        tuples = itertools.product(range(3), repeat=2)
        accepted = sum(C[(i, *t)] for t in tuples for i in set(t))
        assert accepted == pytest.approx(alpha, abs=1e-9)
        return
    data = json.loads(path.read_text())
    assert data["format"] == "sparse"
    joint = law.joint()
    out_i, into = np.zeros(3), {}
    for e in data["entries"]:
        key = tuple(e["tuple"]) if "tuple" in e else frozenset(e["S"])
        assert e["i"] in key  # mass only moves from i to drafts containing i
        m = float(Fraction(e["mass"]))
        out_i[e["i"]] += m
        into[key] = into.get(key, 0.0) + m
    assert out_i.sum() == pytest.approx(alpha, abs=1e-9)
    assert np.all(out_i <= p + 1e-9)
    for key, m in into.items():
        if isinstance(key, tuple):  # capacity p_draft(ī)
            cap = joint[key]
        else:  # capacity w_S = Pr[set of drafts = S]
            cap = sum(joint[t] for t in itertools.product(range(3), repeat=2) if set(t) == key)
        assert m <= cap + 1e-9


def test_write_plan_formats(tmp_path):
    C = np.arange(8, dtype=float).reshape(2, 2, 2) / 28
    np.testing.assert_array_equal(np.load(write_plan(C, tmp_path / "a.npy")), C)
    d = json.loads(write_plan(C, tmp_path / "a.json").read_text())
    assert d["shape"] == [2, 2, 2] and np.allclose(np.array(d["plan"]), C)
    exact = np.array([[Fraction(1, 3), Fraction(2, 3)]], dtype=object)
    assert json.loads(write_plan(exact, tmp_path / "e.json").read_text())["plan"] == [
        ["1/3", "2/3"]
    ]
    sparse = {(0, frozenset({0, 1})): Fraction(1, 2)}
    e = json.loads(write_plan(sparse, tmp_path / "s.json").read_text())["entries"]
    assert e == [{"i": 0, "S": [0, 1], "mass": "1/2"}]
    with pytest.raises(ValueError, match="sparse plan"):
        write_plan(sparse, tmp_path / "s.npy")
    with pytest.raises(ValueError, match="no transport plan"):
        write_plan(None, tmp_path / "x.npy", "subset")


def test_plan_requested_from_a_method_without_plan_exits_2(tmp_path):
    res = _solve("--p", P, "--q", Q, "--method", "subset", "--plan", str(tmp_path / "x.npy"))
    assert res.exit_code == 2
    assert "no transport plan" in res.stderr and "Traceback" not in res.output
    assert (
        "use --method primal, primal-cvxpy, emd, bmatching, maxflow, maxflow-scipy or "
        "reduced" in " ".join(res.stderr.split())
    )


def test_the_methods_named_for_a_plan_are_those_that_return_one():
    """The docs review of 2026-12-07: the message named four of the seven methods with a plan."""
    law = drafts.WithReplacement([0.75, 0.25], 2)
    with_plan = {m for m in METHODS if mdsd_ot.solve([0.5, 0.5], law, method=m).plan is not None}
    assert with_plan == set(cli_solve._PLAN_METHODS)


def test_solve_uses_injected_plan_method(monkeypatch, tmp_path):
    """--plan writes exactly what the method returned (dense, as float64 .npy)."""
    C = np.zeros((2, 2))
    C[0, 0] = C[1, 1] = 0.5

    def func(p, draft):
        return dict(alpha=1.0, H=np.zeros(2, dtype=bool), plan=C)

    monkeypatch.setitem(METHODS, "diag", Method("diag", func, accuracy=0.0))
    path = tmp_path / "c.npy"
    res = _solve(
        "--p", "0.5,0.5", "--q", "0.5,0.5", "-n", "1", "--method", "diag", "--plan", str(path)
    )
    assert res.exit_code == 0, res.output
    np.testing.assert_array_equal(np.load(path), C)
    assert f"plan written to {path}" in res.stdout


BAD = [
    (["--p", "0.5,nan", "--q", "0.5,0.5"], "finite"),
    (["--p", "-0.5,1.5", "--q", "0.5,0.5"], "negative"),
    (["--p", "0.5,0.6", "--q", "0.5,0.5"], "sum"),
    (["--p", "0.5,0.5", "--q", "0.2,0.3,0.5"], "length"),
    (["--p", "0.5,0.5", "--q", "0.5,0.5", "-n", "0"], ">= 1"),
    (["--p", "0.5,0.5", "--q", "1,0", "-n", "2", "--scheme", "without"], "n <= 1"),
    (["--p", "0.5,0.5", "--q", "1,0", "-n", "2", "--scheme", "conditional-poisson"], "n <= 1"),
    (["--p", "0.5,0.5", "--q", "0.5,0.5", "-n", "3", "--scheme", "greedy"], "outside its top"),
    (["--p", "0.5,0.5", "--q", "0.5,0.5", "--scheme", "bogus"], "unknown scheme"),
    (["--p", "0.5,0.5", "--q", "0.5,0.5", "--method", "nope"], "unknown method"),
    (["--p", "0.5,0.5", "--q", "0.5,0.5", "--plan", "out.txt"], ".npy or .json"),
    (["--q", "0.5,0.5"], "--p"),
]


@pytest.mark.parametrize("args, match", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_solve_bad_input_exits_2(args, match):
    res = _solve(*args)
    assert res.exit_code == 2, res.output
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and match in err, err
    assert "Traceback" not in res.output and res.stdout == ""


def test_review_2026_12_06_exact_digits_plan_suffix_and_table_n(tmp_path):
    """An exact α* of ~9,500 digits (n = 10,000) was an un-named error (Python's 4,300-digit
    guard on str(int)); --plan plan.NPY was refused after the solve; an explicit --table of
    n = 3 was refused without -n (the default n = 2 was passed along)."""
    import sys

    res = _solve("--p", "1,0", "--q", "1/3,2/3", "-n", "10000", "--method", "subset-exact")
    assert res.exit_code == 0 and "exactly a fraction of" in res.output, res.output
    res = _solve("--p", "1,0", "--q", "1/3,2/3", "-n", "10000", "--method", "subset-exact",
                 "--json")  # fmt: skip
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        body = json.loads(res.output)
        assert abs(float(Fraction(body["alpha_exact"])) - body["alpha"]) <= 1e-15
    finally:
        sys.set_int_max_str_digits(old)
    res = _solve("--p", P, "--q", Q, "-n", "2", "--method", "primal", "--plan",
                 str(tmp_path / "plan.NPY"))  # fmt: skip
    assert res.exit_code == 0 and np.load(tmp_path / "plan.NPY").shape == (3, 3, 3)
    np.save(tmp_path / "t3.npy", np.full((2, 2, 2), 1 / 8))
    res = _solve("--scheme", "explicit", "--table", str(tmp_path / "t3.npy"), "--p", "1/2,1/2")
    assert res.exit_code == 0 and "explicit V=2 n=3" in res.output, res.output
