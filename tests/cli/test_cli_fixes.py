"""Regressions of the command line: input tolerances by stored dtype, output paths checked
before the computation, help texts, a closed stdout and the option names in messages.

The whole app is run in-process (``mdsd_ot.cli.app``) except where a real pipe is needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mdsd_ot import fast
from mdsd_ot.cli import app

runner = CliRunner()


def _rows(dtype, V: int = 4000, B: int = 3, seed: int = 0) -> np.ndarray:
    """(B, V) softmax rows computed in float64 and stored in ``dtype`` (sums off by ~1e-7)."""
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((B, V)) * 3
    E = np.exp(L - L.max(-1, keepdims=True))
    return (E / E.sum(-1, keepdims=True)).astype(dtype)


def test_gap_checks_float32_files_at_float32_tolerance(tmp_path):
    """gap used to cast to float64 before the check: float32 rounding failed 1e-9."""
    P, Q = _rows(np.float32), _rows(np.float32, seed=1)
    assert np.abs(P.astype(np.float64).sum(-1) - 1).max() > 1e-9
    np.save(tmp_path / "p.npy", P)
    np.save(tmp_path / "q.npy", Q)
    r = runner.invoke(app, ["gap", "--p", str(tmp_path / "p.npy"), "--q", str(tmp_path / "q.npy"),
                            "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["results"]
    torch = pytest.importorskip("torch")
    for dt in (torch.float32, torch.bfloat16):
        torch.save(torch.from_numpy(P).to(dt), tmp_path / "p.pt")
        torch.save(torch.from_numpy(Q).to(dt), tmp_path / "q.pt")
        r = runner.invoke(app, ["gap", "--p", str(tmp_path / "p.pt"), "--q",
                                str(tmp_path / "q.pt"), "--json"])  # fmt: skip
        assert r.exit_code == 0, (dt, r.output)
    bad = P.copy()
    bad[1, 0] += 1e-3
    np.save(tmp_path / "bad.npy", bad)
    r = runner.invoke(app, ["gap", "--p", str(tmp_path / "bad.npy"), "--q",
                            str(tmp_path / "q.npy")])  # fmt: skip
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --p[1]: entries sum to 1.001, not 1 (tolerance 0.0001)")


_PROC = Path("/proc")


@pytest.mark.skipif(not (_PROC / "self").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["report", "--demo", "--positions", "16", "--out", "/proc/x.json"], "--out"),
        (["report", "--demo", "--positions", "16", "--plot", "/proc/x"], "--plot"),
        (["gap", "--synthetic", "--out", "/proc/x.json"], "--out"),
        (["gap", "--synthetic", "--plot", "/proc/x.png"], "--plot"),
        (["alpha", "--p", "0.5,0.5", "--q", "0.5,0.5", "--out", "/proc/x.npy"], "--out"),
        (["solve", "--p", "0.5,0.5", "--q", "0.5,0.5", "--plan", "/proc/x.npy"], "--plan"),
    ],
)
def test_uncreatable_output_refused_before_the_computation(args, option, monkeypatch):
    """/proc passes the permission bits (as root) but holds no new files: the up-front check
    creates and removes a temporary file (or directory) there, so nothing is computed."""
    import mdsd_ot.reports as reports
    from mdsd_ot.cli import gap as gap_cmd

    def never(*a, **k):
        raise AssertionError("computed before the output check")

    monkeypatch.setattr(reports, "report", never)
    monkeypatch.setattr(gap_cmd, "_run", never)
    monkeypatch.setattr("mdsd_ot.fast.alpha_star", never)
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(f"error: {option}: ") and "/proc" in r.stderr, r.stderr


def test_probes_leave_nothing_behind(tmp_path):
    """The probes of the output checks remove what they create."""
    from mdsd_ot._outputs import check_output_file
    from mdsd_ot.cli._files import check_output_dir

    check_output_file(tmp_path / "a.json", "--out", (".json",))
    check_output_dir(tmp_path, "--plot")
    check_output_dir(tmp_path / "new" / "sub", "--plot")
    assert list(tmp_path.iterdir()) == []


def test_plot_write_error_names_the_option(monkeypatch, tmp_path):
    """An OSError of the plot writer (outside mdsd_ot._outputs) names --plot."""
    import mdsd_ot.reports as reports

    def broken(rep, d):
        raise FileNotFoundError(2, "No such file or directory", str(d))

    monkeypatch.setattr(reports, "write_plots", broken)
    r = runner.invoke(app, ["report", "--demo", "--positions", "16", "-n", "2", "--plot",
                            str(tmp_path / "plots")])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(f"error: --plot: cannot write {tmp_path / 'plots'} (No such file")


def test_closed_stdout_exits_quietly(tmp_path):
    """``mdsd-ot solve ... --full | head``: no ``error: Broken pipe``; exit 141 (docs/cli.md)."""
    import os
    import subprocess
    import sys

    rng = np.random.default_rng(0)
    np.save(tmp_path / "p.npy", rng.dirichlet(np.ones(3000)))
    np.save(tmp_path / "q.npy", rng.dirichlet(np.ones(3000)))
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    cmd = [sys.executable, "-m", "mdsd_ot", "solve", "--p", str(tmp_path / "p.npy"), "--q",
           str(tmp_path / "q.npy"), "--full"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # the reader goes away before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""


def _help(command: str) -> str:
    r = runner.invoke(app, [command, "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    return " ".join(r.output.replace("│", " ").split())  # the rich boxes wrap lines


def test_help_texts():
    """alpha --out names the file types it writes (not 'the full result (JSON)'); -n shows its
    default as [default: 2], not [default: (2)]."""
    alpha = _help("alpha")
    assert "full result (JSON)" not in alpha
    assert "α* of every row to this file, by suffix: .npy, .pt, .json, .csv or .txt" in alpha
    for command in ("crosscheck", "solve", "lossless"):
        text = _help(command)
        assert "Number of drafts. [default: 2]" in text, (command, text)
        assert "(2)" not in text, command


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["solve", "--p", "0.5,0.6", "--q", "0.5,0.5"], "error: --p: entries sum to 1.1"),
        (["crosscheck", "--p", "0.5,0.6", "--q", "0.5,0.5"], "error: --p: entries sum to 1.1"),
        (["alpha", "--p", "0.5,0.5", "--q", "0.5,0.6"], "error: --q: entries sum to 1.1"),
        (["solve", "--p", "0.5,0.5", "--q", "0.5,0.5", "--method", "bogus"],
         "error: --method: unknown method 'bogus'"),
        (["lossless", "KERNEL", "--scheme", "bogus"],
         "error: --scheme: unknown scheme 'bogus'"),
    ],
)  # fmt: skip
def test_messages_name_the_options(args, start, tmp_path):
    """The validators' argument names (p, method, draft_factory) become the options' names."""
    kernel = tmp_path / "kernel.py"
    kernel.write_text("def verify(p, q, drafts, coins):\n    return drafts[0], True\n")
    args = [f"{kernel}:verify" if a == "KERNEL" else a for a in args]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(start), r.stderr


def test_solve_and_crosscheck_check_pt_rows_at_their_stored_dtype(tmp_path):
    """``solve`` / ``crosscheck`` with float32 and bfloat16 .pt vectors: checked at the stored
    dtype's tolerance (float32 1e-4, bfloat16 2**-7), then cast to float64 and renormalised
    (they were cast first and refused at float64's 1e-9); a bad row is still refused, by name."""
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(3)
    p = torch.softmax(torch.randn(300, generator=g) * 3, -1)
    q = torch.softmax(torch.randn(300, generator=g) * 3, -1)
    assert abs(float(p.double().sum()) - 1) > 1e-9 or abs(float(q.double().sum()) - 1) > 1e-9
    p64, q64 = (x.double().numpy() for x in (p, q))
    ref = float(fast.alpha_star(p64 / p64.sum(), q64 / q64.sum(), n=2, scheme="with"))
    for stem, dt, tol in (("f32", torch.float32, 1e-6), ("bf16", torch.bfloat16, 2e-2)):
        torch.save(p.to(dt), tmp_path / f"p{stem}.pt")
        torch.save(q.to(dt), tmp_path / f"q{stem}.pt")
        args = ["--p", str(tmp_path / f"p{stem}.pt"), "--q", str(tmp_path / f"q{stem}.pt")]
        r = runner.invoke(app, ["solve", *args, "-n", "2"])
        assert r.exit_code == 0, (stem, r.output)
        alpha = float(r.output.split("α* = ")[1].split()[0])
        assert alpha == pytest.approx(ref, abs=tol)
    torch.save(torch.tensor([0.2, 0.3, 0.55]), tmp_path / "bad.pt")
    r = runner.invoke(app, ["solve", "--p", str(tmp_path / "bad.pt"), "--q", "0.2,0.3,0.5"])
    assert r.exit_code == 2 and "--p" in r.output and "1.05" in r.output, r.output


# -- the second CLI fuzz (2026-12-06) -----------------------------------------------------------


def test_explicit_scheme_without_table_names_table():
    """``--scheme explicit`` without ``--table`` asked for --q, which the next run refused."""
    for cmd in ("solve", "crosscheck"):
        r = runner.invoke(app, [cmd, "--p", "1/3,1/3,1/3", "--scheme", "explicit"])
        assert r.exit_code == 2
        assert "--table" in r.output and "give --q" not in r.output


def test_sparse_tensor_is_refused_naming_the_option(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(torch.tensor([0.5, 0.5]).to_sparse(), tmp_path / "s.pt")
    r = runner.invoke(app, ["alpha", "--p", str(tmp_path / "s.pt"), "--q", "0.5,0.5"])
    assert r.exit_code == 2, r.output
    assert "--p:" in r.output and "dense" in r.output


def test_solve_names_the_option_of_ragged_rows_and_lengths(tmp_path):
    (tmp_path / "r.json").write_text("[[0.5, 0.5], [1.0]]")
    r = runner.invoke(app, ["solve", "--p", str(tmp_path / "r.json"), "--q", "0.5,0.5"])
    assert r.exit_code == 2 and "--p: the rows of" in r.output and "different lengths" in r.output
    r = runner.invoke(app, ["solve", "--p", "0.5,0.5", "--q", "0.5,0.5,0"])
    assert (
        r.exit_code == 2
        and "--q: the draft law has length 3 (its vocabulary) but --p has length 2" in r.output
    )


def test_report_n_refuses_empty_and_repeated_entries():
    r = runner.invoke(app, ["report", "--demo", "-n", "2,,3"])
    assert r.exit_code == 2 and "-n: empty entry" in r.output
    r = runner.invoke(app, ["report", "--demo", "-n", "2,2"])
    assert r.exit_code == 2 and "-n: 2 is given twice" in r.output


def test_alpha_out_refuses_to_overwrite_its_input(tmp_path):
    f = tmp_path / "P.npy"
    np.save(f, np.full((2, 4), 0.25))
    r = runner.invoke(app, ["alpha", "--p", str(f), "--q", str(f), "--out", str(f)])
    assert r.exit_code == 2 and "--out:" in r.output and "is the --p file" in r.output
    assert np.array_equal(np.load(f), np.full((2, 4), 0.25))  # the input is untouched


def test_positions_without_demo_and_an_empty_p_are_refused(tmp_path):
    r = runner.invoke(app, ["report", str(tmp_path), "--positions", "5"])
    assert r.exit_code == 2 and "--positions: sets the size of the --demo study" in r.output
    r = runner.invoke(app, ["solve", "--p", "", "--q", "0.5,0.5"])
    assert r.exit_code == 2 and "--p: empty" in r.output
    r = runner.invoke(app, ["report", "--demo", "--positions", "10000000"])
    assert r.exit_code == 2 and "error: --positions: at most" in r.output, r.output
