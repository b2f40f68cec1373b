"""Regressions of the command line: options that used to be silently ignored, and messages
that named only one of several offending options.

The whole app is run in-process (``mdsd_ot.cli.app``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from mdsd_ot.cli import app

runner = CliRunner()


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps([[0.25, 0.25], [0.25, 0.25]]))
    return str(path)


@pytest.mark.parametrize("command", ["solve", "crosscheck"])
@pytest.mark.parametrize("scheme", [["--scheme", "with"], ["--scheme", "without"], []])
def test_table_with_a_q_scheme_is_refused(command, scheme, table):
    """--table used to be ignored by every scheme other than explicit."""
    r = runner.invoke(app, [command, "--p", "0.5,0.5", "--q", "0.5,0.5", "--table", table, *scheme])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: --table: only --scheme explicit takes a table")
    assert "drop --table or use --scheme explicit" in r.stderr


@pytest.mark.parametrize("command", ["solve", "crosscheck"])
def test_q_with_scheme_explicit_is_refused(command, table):
    """--q used to be ignored by --scheme explicit."""
    args = [command, "--p", "0.5,0.5", "--q", "0.9,0.1", "--table", table, "--scheme", "explicit"]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: --q: --scheme explicit takes its law from --table alone")
    ok = runner.invoke(app, [command, "--p", "0.5,0.5", "--table", table, "--scheme", "explicit"])
    assert ok.exit_code == 0, ok.output


def test_two_dimensional_p_and_q_are_both_named(tmp_path):
    """With 2-D files for --p and --q the message used to name --q only."""
    M = np.full((2, 2), 0.5)
    np.save(tmp_path / "p.npy", M)
    np.save(tmp_path / "q.npy", M)
    p, q = str(tmp_path / "p.npy"), str(tmp_path / "q.npy")
    r = runner.invoke(app, ["solve", "--p", p, "--q", q])
    assert r.exit_code == 2
    line = r.stderr.strip()
    assert line.startswith("error: --p: must be a 1-D vector of probabilities, got shape (2, 2)")
    assert "--q: must be a 1-D vector of probabilities, got shape (2, 2)" in line
    assert "\n" not in line
    r = runner.invoke(app, ["solve", "--p", p, "--q", "0.5,0.5"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "error: --p: must be a 1-D vector of probabilities, got shape (2, 2)"


def test_report_warns_of_a_verifier_defined_for_no_requested_law():
    """--verifiers spechub --laws with printed a row of "—" without a word."""
    args = ["report", "--demo", "--positions", "8", "-n", "2", "--laws", "with"]
    r = runner.invoke(app, [*args, "--verifiers", "spechub", "--json"])
    assert r.exit_code == 0, r.output
    assert r.stderr.strip() == (
        "warning: --verifiers: spechub is not defined for --laws with at -n 2, so it has no "
        "row; it is defined for spechub (n = 2); add it to --laws, or drop spechub from "
        "--verifiers"
    )
    rep = json.loads(r.stdout)  # the JSON is unchanged: α* of the law, no verifier
    assert [res["verifiers"] for res in rep["results"]] == [[]]
    r = runner.invoke(app, [*args, "--verifiers", "k-seq,single", "--json"])
    assert r.exit_code == 0, r.output
    assert r.stderr.count("warning:") == 1
    assert "warning: --verifiers: single is not defined for --laws with at -n 2" in r.stderr
    assert "(single is one draft: -n 1); change -n" in r.stderr
    ok = runner.invoke(app, [*args, "--verifiers", "k-seq", "--json"])
    assert ok.exit_code == 0 and "warning" not in ok.stderr


def test_gap_takes_depth_as_report_does():
    """The docs review of 2026-12-07: cli.md lists ``--depth`` and says gap and report share
    their keys, and ``gap --json`` printed ``"depth": 4``, but ``gap --depth 3`` exited 2."""
    args = ["gap", "--synthetic", "--vocab", "50", "--positions", "2", "--samples", "200"]
    r3 = runner.invoke(app, [*args, "--depth", "3", "--json"])
    r4 = runner.invoke(app, [*args, "--json"])
    assert r3.exit_code == r4.exit_code == 0, r3.output
    d3, d4 = json.loads(r3.stdout), json.loads(r4.stdout)
    assert (d3["depth"], d4["depth"]) == (3, 4)
    row3, row4 = d3["results"][0], d4["results"][0]
    key = next(k for k in row3 if "tokens" in k)
    assert row3[key] != row4[key]  # the tokens-per-call column follows γ
    bad = runner.invoke(app, [*args, "--depth", "-1"])
    assert bad.exit_code == 2 and "--depth: must be an integer in [0, 10,000]" in bad.output
