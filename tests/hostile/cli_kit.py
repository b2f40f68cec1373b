"""Helpers of the command-line hostility tests: run ``mdsd-ot`` in-process or in a fresh
interpreter, and check that a refusal is one line on stderr naming the option (exit code 2)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from mdsd_ot.cli import app

runner = CliRunner()
#: The repository root (for subprocesses: PYTHONPATH).
ROOT = Path(__file__).resolve().parents[2]

#: Hang guard (seconds): generous for a loaded 2-core machine; a hang runs for minutes.
HANG = 60.0


def cli(*args: str):
    """Run ``mdsd-ot ARGS`` in-process; return the result and the seconds it took."""
    t0 = time.perf_counter()
    res = runner.invoke(app, [str(a) for a in args])
    return res, time.perf_counter() - t0


def refused(res, *needles: str) -> str:
    """Exit 2, one line on stderr naming the needles, nothing on stdout, no traceback."""
    err = res.stderr.strip()
    assert res.exit_code == 2, res.output
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: "), err
    for needle in needles:
        assert needle in err, (needle, err)
    assert "Traceback" not in res.output
    return err


def finishes(code: str, seconds: float) -> subprocess.CompletedProcess | None:
    """Run ``code`` in a fresh interpreter; None when it is still running after ``seconds``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env,
            timeout=seconds, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None


def make_files(d: Path) -> Path:
    """Good, empty, corrupt and wrong-typed input files, and a directory, in ``d``."""
    np.save(d / "p.npy", np.array([0.5, 0.5]))
    np.save(d / "q.npy", np.array([0.2, 0.8]))
    np.save(d / "P.npy", np.array([[0.5, 0.5], [0.1, 0.9]]))
    np.save(d / "empty.npy", np.zeros((0, 3)))
    np.save(d / "empty1.npy", np.zeros(0))
    np.save(d / "complex.npy", np.array([0.5 + 1j, 0.5]))
    np.save(d / "bool.npy", np.array([True, False]))
    np.save(d / "object.npy", np.array([0.5, 0.5], dtype=object), allow_pickle=True)
    np.savez(d / "two.npz", a=np.ones(2) / 2, b=np.ones(2) / 2)
    (d / "empty.json").write_text("[]")
    (d / "dict.json").write_text('{"x": [0.5, 0.5], "y": [1, 0]}')
    (d / "number.json").write_text("0.5")
    for suffix in (".npy", ".pt", ".safetensors", ".npz"):
        (d / f"corrupt{suffix}").write_bytes(b"\x93NUMPY garbage {oops")
    (d / "corrupt.json").write_text("[0.5, 0.5")  # truncated
    (d / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (d / "p.txt").write_text("0.5,0.5")
    (d / "adir").mkdir()
    return d
