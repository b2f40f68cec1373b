"""The ``claims`` and ``hunt`` commands (mdsd_ot/cli/claims.py): exit codes, JSON, witnesses,
proof status, reproducible hunts (--evals), bounds refused up front, --list, output paths."""

from __future__ import annotations

import json
import os

import pytest
import typer
from typer.testing import CliRunner

from mdsd_ot.cli import claims as cli_claims
from mdsd_ot.theory import claims as C
from mdsd_ot.theory import witness as W

runner = CliRunner()


def make_app() -> typer.Typer:
    app = typer.Typer()
    cli_claims.register(app)
    return app


def invoke(*args: str):
    return runner.invoke(make_app(), list(args))


# -- claims -----------------------------------------------------------------------------------


def test_failing_theorem_makes_ok_false(monkeypatch):
    bad = C.Claim(
        "T4",
        "x",
        "r",
        "i",
        "holds",
        lambda trials, rng: C.Outcome("counterexample", 1, {"kind": "n1"}),
        1,
        1,
    )
    monkeypatch.setitem(C.CLAIMS, "T4", bad)
    assert not C.run("T4").ok
    res = invoke("claims", "--id", "T4", "--json")
    assert res.exit_code == 1
    assert json.loads(res.stdout)["ok"] is False


def test_cli_json_shape_and_exit_code():
    res = invoke("claims", "--id", "T4", "--id", "T12b", "--trials", "2", "--json")
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)
    assert body["ok"] is True
    assert [c["id"] for c in body["claims"]] == ["T4", "T12b"]
    for c in body["claims"]:
        assert set(c) >= {"id", "status", "trials", "witness"}
    assert body["claims"][0]["status"] == "holds" and body["claims"][0]["witness"] is None
    assert body["claims"][1]["status"] == "counterexample"


def test_cli_json_keys_are_the_old_ones_plus_the_proof_status():
    res = invoke("claims", "--id", "T5", "--id", "T4", "--id", "T5b", "--trials", "1", "--json")
    assert res.exit_code == 0, res.output
    old = {"id", "status", "trials", "witness", "expect", "ok", "statement", "detail", "seconds"}
    rows = json.loads(res.stdout)["claims"]
    for c in rows:
        assert set(c) == old | {"proof", "proof_note"}
    assert [(c["id"], c["proof"]) for c in rows] == [
        ("T5", "proved"),
        ("T4", "proved"),
        ("T5b", "refuted"),
    ]
    assert rows[0]["proof_note"] == rows[1]["proof_note"] == ""


def test_cli_text_output():
    res = invoke("claims", "--id", "T5b", "--trials", "1")
    assert res.exit_code == 0
    assert "T5b" in res.output and "counterexample" in res.output and "witness" in res.output
    assert "[refuted]" in res.output


def test_cli_text_keeps_the_false_tag_of_refuted_statements():
    # "[false] ..." is text, not rich markup: it must reach the terminal
    res = invoke("claims", "--id", "T12b", "--trials", "1")
    out = " ".join(res.output.split())
    assert res.exit_code == 0 and "[refuted]: [false] Sequential without-replacement" in out


def test_cli_text_shows_t5_proved_and_what_it_scans():
    res = invoke("claims", "--id", "T5", "--trials", "1")
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())  # rich may wrap long lines
    assert "[proved]" in out and "not proved" not in out
    assert "sequential without replacement at n ≥ 3: 1 instance(s)" in out


def test_cli_save_then_reproduce(tmp_path):
    f = tmp_path / "w.json"
    res = invoke("claims", "--id", "T12b", "--id", "T3b", "--save", str(f))
    assert res.exit_code == 0
    assert len(W.load(f)) == 2
    res = invoke("claims", "--witness", str(f))
    assert res.exit_code == 0 and res.output.count("reproduced") == 2
    body = json.loads(f.read_text())
    body["witnesses"][0]["Q_en"] = "1/2"
    f.write_text(json.dumps(body))
    res = invoke("claims", "--witness", str(f))
    assert res.exit_code == 1 and "NOT reproduced" in res.output
    body["witnesses"][0]["claim"] = "T99"  # an unknown claim id was reported as "T99 [...]"
    f.write_text(json.dumps(body))
    res = invoke("claims", "--witness", str(f))
    assert res.exit_code == 2 and "unknown claim 'T99'" in res.output


def test_cli_bad_input_exits_2(tmp_path):
    assert invoke("claims", "--id", "T99").exit_code == 2
    assert invoke("claims", "--id", "T4", "--trials", "0").exit_code == 2
    assert invoke("claims", "--witness", str(tmp_path / "no")).exit_code == 2
    (tmp_path / "x.json").write_text("{}")
    assert invoke("claims", "--witness", str(tmp_path / "x.json")).exit_code == 2


@pytest.mark.parametrize(
    "where, message",
    [
        ("{tmp}", "is a directory"),
        ("{tmp}/missing/w.json", "does not exist"),
        ("{tmp}/file.txt/w.json", "is not a directory"),
    ],
)
def test_cli_save_path_checked_before_running(tmp_path, monkeypatch, where, message):
    (tmp_path / "file.txt").write_text("x")
    ran = []
    monkeypatch.setattr(C, "run_all", lambda *a, **k: ran.append(1) or [])
    res = invoke("claims", "--id", "T4", "--save", where.format(tmp=tmp_path))
    assert res.exit_code == 2 and "--save" in res.output and message in res.output
    assert ran == []  # refused before any claim ran


def test_cli_witness_directory_or_garbage_exits_2(tmp_path):
    res = invoke("claims", "--witness", str(tmp_path))
    assert res.exit_code == 2 and "directory" in res.output
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    assert invoke("claims", "--witness", str(tmp_path / "bin.json")).exit_code == 2
    (tmp_path / "bad.json").write_text(json.dumps({"format": W.FORMAT, "witnesses": [1, 2]}))
    assert invoke("claims", "--witness", str(tmp_path / "bad.json")).exit_code == 2


@pytest.mark.parametrize(
    "body, message",
    [
        ({"kind": "tu_minor", "matrix": [[1, 0], [0, 1]], "rows": [5], "cols": [0]},
         "malformed witness (IndexError"),
        ({"claim": "T12b", "kind": "en_formula", "q": ["1/0", "1"], "n": 2},
         "'1/0' divides by zero"),
        ({"witnesses": []}, "holds no witness"),
    ],
)  # fmt: skip
def test_cli_malformed_witnesses_exit_2_naming_the_field(tmp_path, body, message):
    """Review of 2026-12-06: such files exited 3 (an internal error), or 0 with nothing read."""
    f = tmp_path / "w.json"
    f.write_text(json.dumps({"format": W.FORMAT, **body}))
    res = invoke("claims", "--witness", str(f))
    assert res.exit_code == 2 and message in " ".join(res.output.split()), res.output


def test_cli_witness_refuses_out(tmp_path):
    f = tmp_path / "w.json"
    f.write_text(json.dumps({"format": W.FORMAT, "witnesses": []}))
    res = invoke("claims", "--witness", str(f), "--out", str(tmp_path / "x.json"))
    assert res.exit_code == 2 and "--out: writes the witnesses a run" in res.output


# -- hunt -------------------------------------------------------------------------------------


def test_hunt_cli_out_and_reproduce(tmp_path):
    f = tmp_path / "h.json"
    res = invoke("hunt", "en-vs-sequential", "--budget", "1", "--out", str(f))
    assert res.exit_code == 0, res.output
    assert "violated" in res.output and f.exists()
    assert "bounded by --budget 1 s" in res.output and "not reproducible" in res.output
    res = invoke("claims", "--witness", str(f))
    assert res.exit_code == 0 and "reproduced" in res.output


def test_hunt_cli_json():
    res = invoke("hunt", "qconvex-greedy", "--budget", "1", "--json")
    assert res.exit_code == 0
    body = json.loads(res.stdout)
    assert body["found"] is True and body["witness"]["kind"] == "qconvex"
    assert body["bounded_by"] == "budget" and body["reproducible"] is False
    assert body["budget"] == 1.0 and body["max_evals"] is None


def test_hunt_evals_gives_the_same_witness_byte_for_byte(tmp_path):
    # issue 10, class 6: the same --seed and --evals give the same witness, twice in one test
    outs, bodies = [], []
    for k in range(2):
        f = tmp_path / f"w{k}.json"
        res = invoke("hunt", "greedy-vs-without", "--seed", "7", "--evals", "300", "--json")
        res_out = invoke(
            "hunt", "greedy-vs-without", "--seed", "7", "--evals", "300", "--out", str(f)
        )
        assert res.exit_code == 0 and res_out.exit_code == 0, (res.output, res_out.output)
        bodies.append(json.loads(res.stdout))
        outs.append(f.read_bytes())
    a, b = bodies
    assert a["found"] and a["bounded_by"] == "evals" and a["reproducible"] is True
    assert a["evaluations"] == b["evaluations"] == 300 and a["max_evals"] == 300
    assert a["budget"] is None  # --evals alone: the clock plays no part
    assert json.dumps(a["witness"]).encode() == json.dumps(b["witness"]).encode()
    assert {k: v for k, v in a.items() if k != "seconds"} == {
        k: v for k, v in b.items() if k != "seconds"
    }
    assert outs[0] == outs[1] and json.loads(outs[0])["kind"] == "greedy_vs_without"
    text = invoke("hunt", "greedy-vs-without", "--seed", "7", "--evals", "300")
    assert "bounded by --evals 300 (reproducible" in text.output


def test_hunt_both_bounds_says_which_stopped_it():
    res = invoke("hunt", "qconvex-spechub", "--evals", "50", "--budget", "600", "--json")
    body = json.loads(res.stdout)
    assert res.exit_code == 0 and body["bounded_by"] == "evals" and body["evaluations"] == 50


@pytest.mark.parametrize(
    "args, message",
    [
        (["--budget", "nan"], "--budget: give a finite number of seconds in (0, 604800]"),
        (["--budget", "inf"], "--budget: give a finite number of seconds in (0, 604800]"),
        (["--budget", "-inf"], "--budget: give a finite number"),
        (["--budget", "0"], "got 0.0"),
        (["--budget", "-2"], "got -2.0"),
        (["--budget", "1e9"], "(0, 604800]"),
        (["--evals", "0"], "--evals: give a whole number of evaluations in [1, 1000000000]"),
        (["--evals", "-5"], "got -5"),
        (["--evals", "10000000000"], "[1, 1000000000]"),
        (["--evals", "10", "--budget", "nan"], "--budget"),
    ],
)
def test_hunt_refuses_nonsense_bounds_up_front(monkeypatch, args, message):
    from mdsd_ot.theory import hunt

    monkeypatch.setattr(hunt, "run", lambda *a, **k: pytest.fail("the search started"))
    res = invoke("hunt", "qconvex-greedy", *args)
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output


def test_hunt_bad_input():
    assert invoke("hunt", "nope").exit_code == 2
    assert invoke("hunt", "qconvex-greedy", "--budget", "0").exit_code == 2
    res = invoke("hunt")
    assert res.exit_code == 2 and "--list" in res.output


def test_hunt_list():
    from mdsd_ot.theory import hunt

    res = invoke("hunt", "--list")
    assert res.exit_code == 0
    lines = res.output.strip().splitlines()
    assert len(lines) == len(hunt.CONJECTURES)
    for line, (name, c) in zip(lines, hunt.CONJECTURES.items(), strict=True):
        assert line.split()[0] == name and line.split()[1] == (c.claim or "open")
    body = json.loads(invoke("hunt", "--list", "--json").stdout)
    assert [r["name"] for r in body["conjectures"]] == list(hunt.CONJECTURES)
    assert body["conjectures"][0] == {
        "name": "greedy-vs-without",
        "claim": "T9b",
        "statement": hunt.CONJECTURES["greedy-vs-without"].statement,
        "V": [3, 4, 5],
        "n": [2, 3],
    }


@pytest.mark.parametrize(
    "where, message",
    [
        ("{tmp}", "is a directory"),
        ("{tmp}/missing/w.json", "does not exist"),
        ("{tmp}/file.txt/w.json", "is not a directory"),
    ],
)
def test_hunt_out_path_checked_before_the_search(tmp_path, monkeypatch, where, message):
    from mdsd_ot.theory import hunt

    (tmp_path / "file.txt").write_text("x")
    monkeypatch.setattr(hunt, "run", lambda *a, **k: pytest.fail("the search started"))
    res = invoke("hunt", "qconvex-greedy", "--evals", "10", "--out", where.format(tmp=tmp_path))
    assert res.exit_code == 2 and "--out" in res.output and message in res.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_hunt_out_unwritable_directory(tmp_path):  # pragma: no cover - CI runs as a user
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        res = invoke("hunt", "qconvex-greedy", "--evals", "10", "--out", str(d / "w.json"))
        assert res.exit_code == 2 and "permission denied" in res.output
    finally:
        d.chmod(0o700)


def test_hunt_out_not_written_without_a_witness(tmp_path):
    f = tmp_path / "w.json"
    res = invoke("hunt", "prefix-greedy", "--seed", "7", "--evals", "30", "--out", str(f))
    assert res.exit_code == 0 and "no violation found" in res.output
    assert "nothing written" in res.output and not f.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_hunt_witness_headline_value_is_checked(tmp_path):
    """Review of 2026-12-06: a hunt witness's stored "value" (and "excess") was never compared,
    nor was a stored figure that is not a number; "99" or -1 still "reproduced"."""
    f = tmp_path / "h.json"
    assert invoke("hunt", "en-vs-sequential", "--budget", "1", "--out", str(f)).exit_code == 0
    body = json.loads(f.read_text())
    assert invoke("claims", "--witness", str(f)).exit_code == 0
    w = body["witnesses"][0] if "witnesses" in body else body
    for key, bad in (("value", "99"), ("value", -1), ("excess", "1/2"), ("alpha_en", "x")):
        changed = {**w, key: bad}
        g = tmp_path / "bad.json"
        g.write_text(
            json.dumps({**body, "witnesses": [changed]} if "witnesses" in body else changed)
        )
        res = invoke("claims", "--witness", str(g))
        assert res.exit_code == 1, (key, bad, res.output)
