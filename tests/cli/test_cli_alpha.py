"""``mdsd-ot alpha``: batches from .npy / .pt / .safetensors, summary lines, --out, bad input.

The command is mounted on a local typer app (``register(app)``), as every command module is.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from mdsd_ot.cli import alpha as alpha_cmd
from mdsd_ot.fast import alpha_star

runner = CliRunner()


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    alpha_cmd.register(a)

    @a.command("noop")  # a second command keeps typer in multi-command mode
    def _noop() -> None:  # pragma: no cover - never invoked
        pass

    return a


@pytest.fixture(scope="module")
def rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.dirichlet(np.ones(50), size=20), rng.dirichlet(np.ones(50) * 0.3, size=20)


def _mean(output: str) -> float:
    return float(re.search(r"mean alpha\*: ([0-9.]+)", output).group(1))


def test_npy_numpy_backend_and_out(app, rows, tmp_path):
    p, q = rows
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "q.npy", q)
    out = tmp_path / "a.npy"
    args = ["alpha", "--p-file", str(tmp_path / "p.npy"), "--q-file", str(tmp_path / "q.npy")]
    r = runner.invoke(app, [*args, "-n", "3", "--scheme", "without", "--out", str(out)])
    assert r.exit_code == 0, r.output
    expected = alpha_star(p, q, n=3, scheme="without")
    assert abs(_mean(r.output) - expected.mean()) <= 1e-6
    assert "positions: 20" in r.output and "positions/s" in r.output and "50%" in r.output
    assert np.allclose(np.load(out), expected, atol=1e-15, rtol=0)
    r = runner.invoke(
        app, [*args, "-n", "2", "--scheme", "greedy", "--out", str(tmp_path / "a.json")]
    )
    assert r.exit_code == 0, r.output
    saved = json.loads((tmp_path / "a.json").read_text())
    assert np.allclose(saved, alpha_star(p, q, n=2, scheme="greedy"), atol=1e-15, rtol=0)


def test_torch_formats_and_dtype(app, rows, tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    p, q = rows
    torch.save(torch.from_numpy(p), tmp_path / "p.pt")
    st.save_file(
        {"q": torch.from_numpy(q), "other": torch.zeros(2)}, str(tmp_path / "q.safetensors")
    )
    expected = alpha_star(p, q, n=2, scheme="conditional-poisson")
    base = [
        "alpha",
        "--p-file",
        str(tmp_path / "p.pt"),
        "--q-file",
        str(tmp_path / "q.safetensors"),
    ]
    r = runner.invoke(app, [*base, "-n", "2", "--scheme", "conditional-poisson"])
    assert r.exit_code == 0, r.output
    assert "torch float64 on cpu" in r.output
    assert abs(_mean(r.output) - expected.mean()) <= 1e-6
    out = tmp_path / "a.pt"
    r = runner.invoke(
        app,
        [
            *base,
            "-n",
            "2",
            "--scheme",
            "conditional-poisson",
            "--device",
            "cpu",
            "--dtype",
            "float32",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "torch float32 on cpu" in r.output
    assert np.max(np.abs(torch.load(out).numpy() - expected)) <= 1e-5  # FLOAT32_BOUND


def test_bad_input_exits_2_with_one_line(app, rows, tmp_path):
    p, q = rows
    bad = p.copy()
    bad[7] *= 2
    np.save(tmp_path / "p.npy", bad)
    np.save(tmp_path / "q.npy", q)
    args = ["alpha", "--p-file", str(tmp_path / "p.npy"), "--q-file", str(tmp_path / "q.npy")]
    r = runner.invoke(app, [*args, "-n", "2", "--scheme", "with"])
    assert r.exit_code == 2
    assert "p[7]" in r.output and "Traceback" not in r.output
    np.save(tmp_path / "p.npy", p)
    r = runner.invoke(app, [*args, "-n", "2", "--scheme", "product"])
    assert r.exit_code == 2 and "scheme" in r.output
    r = runner.invoke(app, [*args, "-n", "2", "--scheme", "with", "--out", str(tmp_path / "a.xls")])
    assert r.exit_code == 2 and "--out" in r.output
    (tmp_path / "p.txt").write_text("0.5,0.5")
    r = runner.invoke(
        app,
        [
            "alpha",
            "--p-file",
            str(tmp_path / "p.txt"),
            "--q-file",
            str(tmp_path / "q.npy"),
            "-n",
            "2",
            "--scheme",
            "with",
        ],
    )
    assert r.exit_code == 2 and "unsupported file type" in r.output
    r = runner.invoke(
        app,
        [
            "alpha",
            "--p-file",
            str(tmp_path / "nope.npy"),
            "--q-file",
            str(tmp_path / "q.npy"),
            "-n",
            "2",
            "--scheme",
            "with",
        ],
    )
    assert r.exit_code == 2 and "does not exist" in r.output


def test_float32_and_bf16_files_use_their_own_tolerance(app, tmp_path):
    """A float32 .pt (or .npy with --device) is checked at float32's tolerance, not float64's
    (it is cast to --dtype float64 only afterwards); a bfloat16 .pt at bfloat16's."""
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    P = torch.softmax(torch.randn(4, 32000, generator=g) * 3, -1)
    Q = torch.softmax(torch.randn(4, 32000, generator=g) * 3, -1)
    assert (P.double().sum(-1) - 1).abs().max() > 1e-9  # float32 rounding, beyond float64's tol
    ref = alpha_star(P.numpy(), Q.numpy(), n=2, scheme="with")  # float32: tolerance 1e-4
    for stem, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        torch.save(P.to(dt), tmp_path / f"p{stem}.pt")
        torch.save(Q.to(dt), tmp_path / f"q{stem}.pt")
        np.save(tmp_path / "p32.npy", P.numpy())
        np.save(tmp_path / "q32.npy", Q.numpy())
    cases = [
        (["--p", str(tmp_path / "pf32.pt"), "--q", str(tmp_path / "qf32.pt")], 1e-6),
        (["--p", str(tmp_path / "p32.npy"), "--q", str(tmp_path / "q32.npy"), "--device", "cpu"],
         1e-6),
        (["--p", str(tmp_path / "pbf16.pt"), "--q", str(tmp_path / "qbf16.pt")], 2e-2),
    ]  # fmt: skip
    for args, tol in cases:
        r = runner.invoke(app, ["alpha", *args])
        assert r.exit_code == 0, (args, r.output)
        assert _mean(r.output) == pytest.approx(ref.mean(), abs=tol)
    torch.save(torch.tensor([[0.2, 0.3, 0.55]]), tmp_path / "bad.pt")
    r = runner.invoke(app, ["alpha", "--p", str(tmp_path / "bad.pt"), "--q", "0.2,0.3,0.5"])
    assert r.exit_code == 2
    assert "--p[0]: entries sum to 1.05, not 1 (tolerance 0.0001)" in r.output


def test_float32_without_device_runs_the_torch_solver(app, rows, tmp_path):
    """--dtype float32 on numpy files: the torch solver on the CPU in float32 (the numpy solver
    has no float32 route; it used to run float64 and say so in the label)."""
    pytest.importorskip("torch")
    p, q = rows
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "q.npy", q)
    args = ["alpha", "--p", str(tmp_path / "p.npy"), "--q", str(tmp_path / "q.npy"), "-n", "3"]
    r = runner.invoke(app, [*args, "--dtype", "float32", "--out", str(tmp_path / "a.npy")])
    assert r.exit_code == 0, r.output
    assert "torch float32 on cpu" in r.output
    expected = alpha_star(p, q, n=3, scheme="with")  # the command's default scheme
    got = np.load(tmp_path / "a.npy")
    assert np.max(np.abs(got - expected)) <= 1e-5  # FLOAT32_BOUND
    r = runner.invoke(app, [*args, "--dtype", "float64"])
    assert r.exit_code == 0 and "numpy float64" in r.output
