"""Regressions from a review of the user paths (2026-12): bounds of ``report -n``, laws the fast
solver cannot take at an n, ``--debug`` exit codes, witness files missing a field, device names,
and re-tempering of huge logits."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from mdsd_ot import _validate as V_
from mdsd_ot.cli import app
from mdsd_ot.io import warp

runner = CliRunner()


def test_report_refuses_n_above_the_bound():
    r = runner.invoke(app, ["report", "--demo", "--positions", "4", "-n", "10001"])
    assert r.exit_code == 2 and "-n: at most 10,000 drafts" in r.output


def test_report_skips_sequential_drafts_beyond_the_fast_series():
    """n = 9 > 8: the law is skipped with its reason; the other laws are reported."""
    r = runner.invoke(app, ["report", "--demo", "--positions", "4", "-n", "9", "--json",
                            "--laws", "with,without"])  # fmt: skip
    assert r.exit_code == 0, r.output
    res = {x["law"]: x for x in json.loads(r.stdout)["results"]}
    assert "supports n <= 8" in res["without"]["skipped"]
    assert res["with"]["alpha_star"] is not None


def test_debug_keeps_the_exit_code_of_bad_input():
    from mdsd_ot.cli._common import debug_enabled, set_debug

    before = debug_enabled()
    try:
        r = runner.invoke(app, ["--debug", "solve", "--p", "0.5,0.3", "--q", "0.2,0.8"])
    finally:
        set_debug(before)  # the flag is process state: later tests run without it
    assert r.exit_code == 2
    assert "Traceback" in r.output


@pytest.mark.parametrize(
    "patch, needle",
    [({"n": 3.5}, "n must be an integer"), ({"n": "3"}, "n must be an integer"),
     ({"q": None}, "needs the field 'q'")],
)  # fmt: skip
def test_witness_fields_are_checked(tmp_path, patch, needle):
    from mdsd_ot.theory import claims as C
    from mdsd_ot.theory import witness as W

    f = tmp_path / "w.json"
    W.save(f, C.run("T12b", trials=1).witness, "--out")
    data = json.loads(f.read_text())
    w = data[0] if isinstance(data, list) else data
    assert "q" in w
    for k, v in patch.items():
        if v is None:
            w.pop(k)
        else:
            w[k] = v
    f.write_text(json.dumps(data))
    r = runner.invoke(app, ["claims", "--witness", str(f)])
    assert r.exit_code == 2, r.output
    assert needle in r.output and "w.json (witness 0)" in r.output


def test_device_names_are_checked():
    torch = pytest.importorskip("torch")
    assert V_.check_torch_device("cpu", torch) == "cpu"
    with pytest.raises(ValueError, match="device: give cpu, cuda, cuda:N or mps"):
        V_.check_torch_device("bogus", torch)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device: cuda requested but torch sees no CUDA"):
            V_.check_torch_device("cuda:1", torch)


def test_warp_of_huge_finite_logits():
    """Logits of 1e308 at T = 0.5: the row is shifted by its maximum before the division."""
    p = warp(np.array([[1e308, 0.0, -1.0]]), 0.5)
    assert np.isfinite(p).all() and p[0, 0] == 1.0
