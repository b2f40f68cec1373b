"""Issue 10, class 2: file problems are one line naming the option, the file and the problem.

Corrupt, empty, wrong-typed or missing input files and directories given as files (every
command that reads vectors), output paths that cannot be written (checked before the
computation starts: the computation is replaced by a recorder that must stay empty), atomic
writes, and the full result of ``solve`` at large V going to ``--out`` instead of the terminal.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction

import numpy as np
import pytest
from cli_kit import HANG, cli, make_files, refused

import mdsd_ot


@pytest.fixture
def files(tmp_path):
    """The input files of :func:`cli_kit.make_files`."""
    return make_files(tmp_path)


# -- class 2: file problems ---------------------------------------------------------------
INPUTS = [
    ("corrupt.npy", "corrupt.npy"),
    ("corrupt.json", "not valid JSON"),
    ("binary.json", "not a UTF-8 text file"),
    ("corrupt.pt", "corrupt.pt"),
    ("corrupt.safetensors", "corrupt.safetensors"),
    ("corrupt.npz", "corrupt.npz"),
    ("empty.npy", "empty array of shape (0, 3)"),
    ("empty1.npy", "empty array of shape (0,)"),
    ("empty.json", "empty list"),
    ("object.npy", "Python objects"),
    ("complex.npy", "complex numbers"),
    ("bool.npy", "booleans"),
    ("two.npz", "store one array"),
    ("dict.json", "store one array"),
    ("number.json", "JSON list"),
    ("missing.npy", "does not exist"),
    ("adir", "is a directory"),
    ("p.txt", "unsupported file type"),
]


@pytest.mark.parametrize("name, needle", INPUTS, ids=[n for n, _ in INPUTS])
@pytest.mark.parametrize("command", ["solve", "crosscheck", "alpha", "gap"])
def test_class2_bad_input_files_name_option_and_file(files, command, name, needle):
    path = files / name
    args = {
        "solve": ["solve", "--p", path, "--q", files / "q.npy"],
        "crosscheck": ["crosscheck", "--p-file", path, "--q", "0.2,0.8", "--methods", "subset"],
        "alpha": ["alpha", "--p-file", path, "--q-file", files / "q.npy"],
        "gap": ["gap", "--p", path, "--q", files / "q.npy"],
    }[command]
    res, secs = cli(*args)
    refused(res, "--p", needle)
    assert secs < HANG


OUTPUTS = [
    (["solve", "--p", "0.5,0.5", "--q", "0.2,0.8", "--method", "primal", "--plan", "{missing}/x.npy"], "--plan", "does not exist"),
    (["solve", "--p", "0.5,0.5", "--q", "0.2,0.8", "--method", "primal", "--plan", "{dir}"], "--plan", "directory"),
    (["solve", "--p", "0.5,0.5", "--q", "0.2,0.8", "--plan", "{tmp}/plan.csv"], "--plan", ".npy or .json"),
    (["solve", "--p", "0.5,0.5", "--q", "0.2,0.8", "--out", "{dir}"], "--out", "directory"),
    (["solve", "--p", "0.5,0.5", "--q", "0.2,0.8", "--out", "{missing}/r.json"], "--out", "does not exist"),
    (["alpha", "--p", "0.5,0.5", "--q", "0.2,0.8", "--out", "{missing}/a.npy"], "--out", "does not exist"),
    (["alpha", "--p", "0.5,0.5", "--q", "0.2,0.8", "--out", "{dir}"], "--out", "directory"),
    (["gap", "--synthetic", "--plot", "{missing}/g.png"], "--plot", "does not exist"),
    (["gap", "--synthetic", "--plot", "{dir}"], "--plot", "directory"),
    (["gap", "--synthetic", "--out", "{missing}/g.json"], "--out", "does not exist"),
    (["crosscheck", "--out", "{missing}/c.json"], "--out", "does not exist"),
    (["report", "--demo", "--out", "{missing}/r.json"], "--out", "does not exist"),
    (["report", "--demo", "--out", "{tmp}/r.xlsx"], "--out", ".json or .csv"),
    (["report", "--demo", "--plot", "{file}"], "--plot", "not a directory"),
    (["hunt", "greedy-vs-without", "--evals", "10", "--out", "{missing}/w.json"], "--out", "does not exist"),
    (["hunt", "greedy-vs-without", "--evals", "10", "--out", "{dir}"], "--out", "directory"),
    (["claims", "--id", "T4", "--save", "{dir}"], "--save", "directory"),
    (["claims", "--id", "T4", "--out", "{missing}/w.json"], "--out", "does not exist"),
    (["collect", "--target", "t", "--draft", "d", "--prompts", "p.txt", "--out", "{file}"], "--out", "not a directory"),
]  # fmt: skip


@pytest.mark.parametrize(
    "args, option, needle", OUTPUTS, ids=[" ".join(a[:1] + a[-2:-1]) for a, *_ in OUTPUTS]
)
def test_class2_output_paths_checked_before_the_computation(tmp_path, monkeypatch, args, option, needle):  # fmt: skip
    import mdsd_ot.reports as reports_pkg
    from mdsd_ot.theory import claims as C
    from mdsd_ot.theory import hunt as Hn

    ran = []
    for mod, name in ((mdsd_ot.cli.solve, "solve"), (reports_pkg, "report"), (C, "run_all"),
                      (Hn, "run"), (mdsd_ot.cli.crosscheck, "crosscheck")):  # fmt: skip
        monkeypatch.setattr(mod, name, lambda *a, **k: ran.append(1))
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    fill = {"missing": tmp_path / "no" / "such", "dir": tmp_path / "dir", "tmp": tmp_path,
            "file": tmp_path / "file"}  # fmt: skip
    res, _ = cli(*[a.format(**fill) for a in args])
    refused(res, option, needle)
    assert ran == []


def test_class2_writes_are_atomic(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    out.write_text("old")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    res, _ = cli("solve", "--p", "0.5,0.5", "--q", "0.2,0.8", "--out", out)
    refused(res, "--out", "No space left on device")
    assert out.read_text() == "old"  # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary left behind


def test_class2_full_result_goes_to_out(tmp_path):
    V = 500
    p = ",".join(["1/500"] * V)  # p = 0.002 everywhere
    q = tmp_path / "q.npy"
    np.save(q, np.r_[np.full(250, 0.001), np.full(250, 0.003)])
    out = tmp_path / "r.json"
    args = ("solve", "--p", p, "--q", q, "-n", "1")
    res, _ = cli(*args, "--out", out)
    assert res.exit_code == 0, res.output
    full = json.loads(out.read_text())
    # one draft: Q = q, so H* = {i : p_i < q_i} = the last 250 tokens, P(H*) = 1/2
    assert full["H"] == list(range(250, 500)) and full["H_summary"]["size"] == 250
    assert "250 tokens" in res.stdout and "…" in res.stdout and len(res.stdout) < 2000
    res, _ = cli(*args, "--full")
    assert ", ".join(map(str, full["H"])) in res.stdout
    res, _ = cli(*args, "--json")
    shown = json.loads(res.stdout)
    assert "H" not in shown and shown["H_summary"] == full["H_summary"]
    assert shown["H_summary"]["mass"] == pytest.approx(0.5, abs=1e-12)
    assert shown["H_summary"]["Q"] == pytest.approx(0.75, abs=1e-12)
    assert shown["H_summary"]["first"] == [250, 251, 252, 253, 254]


def test_rationals_stay_exact_through_files(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps(["1/2", "1/3", "1/6"]))
    res, _ = cli("solve", "--p", tmp_path / "p.json", "--q", "1/6,1/3,1/2", "--method",
                 "subset-exact", "--json")  # fmt: skip
    assert res.exit_code == 0 and Fraction(json.loads(res.stdout)["alpha_exact"]) == Fraction(
        29, 36
    )
