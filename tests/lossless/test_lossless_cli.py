"""``mdsd-ot lossless``: exit codes 0 / 1 / 2, the table, the witness, module and file loading."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import typer
from typer.testing import CliRunner

from mdsd_ot.cli import lossless as lossless_cmd
from mdsd_ot.lossless import controls, replay

runner = CliRunner()
OK = "mdsd_ot.lossless.controls:rrs_with"
BAD = "mdsd_ot.lossless.controls:rrs_unnormalised"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    lossless_cmd.register(a)

    @a.command("noop")  # a second command keeps typer in multi-command mode
    def _noop() -> None:  # pragma: no cover - never invoked
        pass

    return a


def _run(app, *args):
    return runner.invoke(app, ["lossless", *args])


def test_registered_in_the_main_app():
    from mdsd_ot.cli import COMMAND_MODULES, app

    assert "lossless" in COMMAND_MODULES
    assert "lossless" in {c.name for c in app.registered_commands}


def test_exact_pass_exits_0_with_a_table(app):
    r = _run(app, OK, "--scheme", "with", "-n", "3", "--vocab", "4", "--instances", "7",
             "--exact", "--seed", "0")  # fmt: skip
    assert r.exit_code == 0, r.output
    for col in ("instance", "law error", "acceptance", "α*", "verdict", "pass"):
        assert col in r.output
    assert "7 instance(s) checked, 0 failing" in r.output
    assert "witness" not in r.output


def test_exact_failure_exits_1_with_a_replayable_witness(app):
    r = _run(app, BAD, "--scheme", "with", "-n", "3", "--vocab", "4", "--instances", "7",
             "--json")  # fmt: skip
    assert r.exit_code == 1
    out = json.loads(r.output)
    assert out["passed"] is False and out["failures"] >= 1 and out["mode"] == "exact"
    assert len(out["instances"]) == 7 and out["function"] == BAD
    w = out["witness"]
    assert w["verdict"] == "fail"
    assert str(replay(w, controls.rrs_unnormalised).error) == w["law_error"]
    assert replay(w, controls.rrs_with).error == 0
    table = _run(app, BAD, "-n", "3", "--instances", "7")
    assert table.exit_code == 1 and "witness (worst instance" in table.output
    assert '"law_error"' in table.output and "fail" in table.output


def test_file_path_and_statistical_mode(app, tmp_path):
    f = tmp_path / "my_verifier.py"
    f.write_text(
        "def verify(p, q, drafts, coins):\n"
        "    x = drafts[0]\n"
        "    if coins.bernoulli(min(1, p[x] / q[x])):\n"
        "        return x, True\n"
        "    return coins.categorical([max(a - b, 0) for a, b in zip(p, q)]), False\n"
        "def always_first(p, q, drafts, rng):\n"
        "    return drafts[0], True\n"
    )
    r = _run(app, f"{f}:verify", "-n", "1", "--vocab", "3", "--instances", "7")
    assert r.exit_code == 0, r.output
    r = _run(app, f"{f}:verify", "-n", "1", "--vocab", "3", "--instances", "3",
             "--samples", "3000")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "p-value" in r.output and "detects a total-variation error" in r.output
    r = _run(app, f"{f}:always_first", "-n", "2", "--vocab", "3", "--instances", "3",
             "--samples", "3000", "--json")  # fmt: skip
    assert r.exit_code == 1
    out = json.loads(r.output)
    assert out["mode"] == "statistical" and out["witness"]["p_value"] < 1e-6
    assert Fraction(out["witness"]["p"][0]) >= 0


def test_crashing_sampler_exits_1(app, tmp_path):
    f = tmp_path / "crash.py"
    f.write_text("def sampler(p, q, drafts, rng):\n    raise RuntimeError('kernel died')\n")
    r = _run(app, f"{f}:sampler", "--instances", "2", "--samples", "10")
    assert r.exit_code == 1 and "kernel died" in r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["mdsd_ot.lossless.controls"], "expected MODULE:FUNCTION"),
        (["no_such_module_xyz:f"], "cannot import module"),
        (["/nonexistent/file.py:f"], "does not exist"),
        (["mdsd_ot.lossless.controls:nope"], "has no attribute"),
        ([OK, "--exact", "--samples", "10"], "choose one mode"),
        ([OK, "--scheme", "nope"], "unknown scheme"),
        ([OK, "-n", "0"], "-n"),
        ([OK, "--instances", "0"], "--instances"),
        ([OK, "--scheme", "without", "-n", "5", "--vocab", "4"], "undefined on every instance"),
        (
            [OK, "--scheme", "without", "-n", "5", "--vocab", "4", "--samples", "10"],
            "draft law undefined: q: the without scheme draws n=5 distinct tokens",
        ),
        ([OK, "--batch"], "--batch: applies to statistical mode; add --samples N"),
        ([OK, "--level", "0.01"], "--level: applies to statistical mode; add --samples N"),
    ],
)
def test_bad_usage_exits_2(app, args, message):
    r = _run(app, *args)
    assert r.exit_code == 2, r.output
    assert message in r.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seed", "-1"], "--seed: must be an integer in [0, 2^63 - 1]"),
        (["--level", "nan"], "--level: must be a finite number > 0 and < 1"),
        (["--vocab", "100000000"], "--vocab: must be an integer in [1, 64]"),
        (["--samples", "0"], "--samples: must be an integer in [1, 10,000,000]"),
        (["--instances", "0"], "--instances: must be an integer in [1, 1,000,000]"),
        (["--out", "/nonexistent-dir/r.json"], "--out: directory /nonexistent-dir does not exist"),
    ],
)
def test_bounds_and_output_paths_are_checked_before_any_work(app, args, message):
    res = _run(app, OK, *args)
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())


def test_out_writes_the_json_result(app, tmp_path):
    f = tmp_path / "r.json"
    res = _run(app, OK, "-n", "2", "--instances", "3", "--out", str(f))
    assert res.exit_code == 0, res.output
    data = json.loads(f.read_text())
    assert data["function"] == OK and data["scheme"] == "with"
    assert data["passed"] is True


def test_batched_sampler_without_batch_gets_a_hint(app, tmp_path):
    """A batched sampler run without --batch failed with bare shapes (N, 2); the message says
    it looks batched and names --batch (and the reverse: a one-tuple sampler with --batch)."""
    f = tmp_path / "batched.py"
    f.write_text(
        "import numpy as np\n"
        "def sample(p, q, drafts, rng):\n"
        "    d = np.atleast_2d(drafts)\n"
        "    return d[:, 0], np.ones(len(d), dtype=bool)\n"
        "def one_pair(p, q, drafts, rng):  # one pair for the whole batch\n"
        "    return drafts[0][0], True\n"
    )
    args = ["-n", "2", "--vocab", "3", "--instances", "1", "--samples", "50"]
    r = _run(app, f"{f}:sample", *args)
    assert r.exit_code == 1
    assert "the sampler returned shapes (50, 1), (50, 1)" in r.output
    assert "as a batched sampler does" in r.output and "--batch" in r.output
    assert "returned shapes" not in _run(app, f"{f}:sample", *args, "--batch").output
    r = _run(app, f"{f}:one_pair", *args, "--batch")
    assert r.exit_code == 1
    assert "the sampler returned shapes (), ()" in r.output
    assert "drop batch=True (mdsd-ot lossless --batch)" in r.output


def test_a_sampler_typeerror_gets_the_batch_hint(app, tmp_path):
    """A TypeError of a batched sampler run without --batch (or of a one-tuple sampler run with
    it) was reported bare; the message names --batch."""
    f = tmp_path / "typeerr.py"
    f.write_text(
        "import numpy as np\n"
        "def batched(p, q, drafts, rng):\n"
        "    return drafts[:, 0], np.ones(len(drafts), dtype=bool)\n"
        "def one(p, q, drafts, rng):\n"
        "    return int(drafts[0]), True\n"
    )
    args = ["-n", "2", "--vocab", "3", "--instances", "1", "--samples", "50"]
    r = _run(app, f"{f}:batched", *args)
    assert r.exit_code == 1 and "FAIL: the sampler raised TypeError" in r.output
    assert "called on one draft tuple" in r.output and "--batch" in r.output
    assert "TypeError" not in _run(app, f"{f}:batched", *args, "--batch").output  # it runs
    r = _run(app, f"{f}:one", *args, "--batch")
    assert r.exit_code == 1 and "FAIL: the sampler raised TypeError" in r.output
    assert "drop batch=True (mdsd-ot lossless --batch)" in r.output
    assert "TypeError" not in _run(app, f"{f}:one", *args).output


def test_a_module_that_raises_on_import_exits_2(app, tmp_path, monkeypatch):
    """By module name as by file path: the module's own error, named, exit 2 (it was an
    'internal error', exit 3, by module name)."""
    (tmp_path / "raises_on_import.py").write_text("raise RuntimeError('no GPU here')\n")
    (tmp_path / "bad_syntax.py").write_text("def f(:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for spec in ("raises_on_import:f", str(tmp_path / "raises_on_import.py") + ":f"):
        r = _run(app, spec)
        assert r.exit_code == 2, r.output
        assert "raised RuntimeError: no GPU here" in r.output
    r = _run(app, "bad_syntax:f")
    assert r.exit_code == 2 and "raised SyntaxError" in r.output, r.output
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(0)\n")
    for spec in ("exits:f", str(tmp_path / "exits.py") + ":f"):  # not a check that passed
        r = _run(app, spec)
        assert r.exit_code == 2 and "raised SystemExit: 0" in r.output, r.output


def test_exact_mode_above_v16_uses_an_exact_alpha_star(app):
    """--vocab 17-64 in exact mode: α* by the set-reduced max-flow in Fractions (subset
    selection refuses V > 16; every such run used to exit 2)."""
    r = _run(app, OK, "-n", "1", "--vocab", "17", "--instances", "2", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["passed"] and all(i["verdict"] == "pass" for i in data["instances"])


def test_json_is_strict_when_the_power_is_nil(app):
    """One sample detects nothing: delta is inf, written as null (Infinity is not JSON)."""
    r = _run(app, OK, "--vocab", "3", "--samples", "1", "--instances", "1", "--json")
    assert "Infinity" not in r.output and "NaN" not in r.output
    data = json.loads(r.output)
    power = data["instances"][0]["power"]
    assert power["delta"] is None and "no total-variation error is detected" in power["statement"]
