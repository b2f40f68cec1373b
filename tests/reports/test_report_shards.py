"""The shard report (mdsd_ot.reports.report and ``mdsd-ot report``): one implementation with gap.

T11: every closed-form or exact acceptance is ≤ α* of its law (gap ≥ −1e-12, float rounding);
T9: the greedy verifier has gap 0 (within 1e-12).
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from mdsd_ot.cli import app
from mdsd_ot.io import make_metadata, write_shard
from mdsd_ot.reports import gap_report, report, to_csv, write_plots
from mdsd_ot.reports.summary import CSV_COLUMNS
from mdsd_ot.synthetic import softmax, synthetic_logits

runner = CliRunner()


def _meta(V, T=1.0):
    return make_metadata("t", "d", temperature=T, top_k=0, top_p=1.0, vocab_size=V)


def _dataset(d, m=10, V=6, seed=0, T=1.0, logits=False, shards=2, prefix="s"):
    L, D = synthetic_logits(V, seed, size=m)
    P, Q = softmax(L, T), softmax(D, T)
    extra = dict(logits_p=L, logits_q=D) if logits else {}
    for j, part in enumerate(np.array_split(np.arange(m), shards)):
        write_shard(
            d / f"{prefix}{j}.safetensors", P[part], Q[part], metadata=_meta(V, T),
            **{k: v[part] for k, v in extra.items()},
        )  # fmt: skip
    return P, Q, L, D


def _T11(rep, tol=1e-12):
    checked = 0
    for r in rep["results"]:
        for v in r["verifiers"]:
            if v["method"] in ("closed-form", "exact") and v["gap"] is not None:
                assert v["gap"]["q05"] >= -tol and v["gap"]["mean"] >= -tol, (r["law"], v)
                checked += 1
            if v["name"] == "greedy":
                assert abs(v["gap"]["mean"]) <= tol
    return checked


def _close(a, b, tol):
    """Same structure, same strings, numbers within ``tol``."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k], tol)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _close(x, y, tol)
    elif isinstance(a, float) and isinstance(b, float):
        assert abs(a - b) <= tol, (a, b)
    else:
        assert a == b


def test_report_equals_gap_report_on_the_same_rows(tmp_path):
    """One implementation: shards through ``report`` = rows in memory through ``gap_report``.

    V = 6, n = 2: every number is closed-form or exact (no simulation), so they agree to
    rounding (1e-12: the stored rows are renormalised once more when read).
    """
    P, Q, _, _ = _dataset(tmp_path, m=10, V=6)
    rep = report(tmp_path, [2], chunk_rows=3)
    ref = gap_report(P, Q, 2, temperatures=[1.0])
    assert rep["positions"] == 10 and rep["shards"] == 2 and rep["n"] == [2]
    assert rep["temperatures"] == [1.0] and not rep["retempered"]
    _close(rep["results"], ref["results"], 1e-12)
    assert _T11(rep) >= 4


def test_report_several_n_and_temperatures_from_metadata(tmp_path):
    _dataset(tmp_path, m=6, V=40, T=0.5, prefix="a")
    _dataset(tmp_path, m=4, V=40, T=2.0, seed=1, prefix="b")
    rep = report(tmp_path, [2, 3], samples=300)
    keys = [(r["n"], r["temperature"], r["law"]) for r in rep["results"]]
    assert keys[:5] == [
        (2, 0.5, x) for x in ("with", "without", "conditional-poisson", "greedy", "spechub")
    ]
    assert {(n, T) for n, T, _ in keys} == {(2, 0.5), (2, 2.0), (3, 0.5), (3, 2.0)}
    assert {r["positions"] for r in rep["results"] if r["temperature"] == 0.5} == {6}
    sim = [v for r in rep["results"] for v in r["verifiers"] if v["method"] == "simulated"]
    assert sim and all(v["name"] == "rrs-without" for v in sim)  # n = 3 at V = 40
    assert _T11(rep) > 0
    for r in rep["results"]:
        a = r["alpha_star"]
        assert a["q05"] <= a["q25"] <= a["q50"] <= a["q75"] <= a["q95"]
        assert 1 <= r["alpha_star_tokens"]["mean"] <= 1 + rep["depth"]


def test_retempering_needs_logits_and_says_so(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _dataset(tmp_path / "a", m=5, V=8, T=1.0)
    with pytest.raises(ValueError, match="holds no logits"):
        report(tmp_path / "a", [2], temperatures=[0.5])
    _dataset(tmp_path / "b", m=5, V=8, T=1.0, logits=True)
    plain = report(tmp_path / "b", [2])
    again = report(tmp_path / "b", [2], temperatures=[1.0, 0.5])
    assert again["retempered"] and again["temperatures"] == [0.5, 1.0]
    at1 = [r for r in again["results"] if r["temperature"] == 1.0]
    for x, y in zip(plain["results"], at1, strict=True):  # logits stored as float32
        assert abs(x["alpha_star"]["mean"] - y["alpha_star"]["mean"]) < 1e-6
    cooler = {
        r["law"]: r["alpha_star"]["mean"] for r in again["results"] if r["temperature"] == 0.5
    }
    assert cooler != {r["law"]: r["alpha_star"]["mean"] for r in at1}


def test_filters_and_bad_options(tmp_path):
    _dataset(tmp_path, m=4, V=8)
    rep = report(tmp_path, [2, 3], laws=["with", "spechub"], verifiers=["k-seq"])
    assert [(r["n"], r["law"]) for r in rep["results"]] == [
        (2, "with"),
        (2, "spechub"),
        (3, "with"),
    ]
    assert [v["name"] for r in rep["results"] for v in r["verifiers"]] == ["k-seq", "k-seq"]
    with pytest.raises(ValueError, match="--laws: unknown or unreportable law"):
        report(tmp_path, [2], laws=["product"])
    with pytest.raises(ValueError, match="--verifiers: unknown verifier"):
        report(tmp_path, [2], verifiers=["best"])
    with pytest.raises(ValueError, match="-n"):
        report(tmp_path, [0])


def test_dataset_with_two_vocabularies_is_refused(tmp_path):
    _dataset(tmp_path, m=3, V=8, prefix="a", shards=1)
    _dataset(tmp_path, m=3, V=9, prefix="b", shards=1)
    with pytest.raises(ValueError, match="share one vocabulary"):
        report(tmp_path, [2])


def test_bad_row_names_file_and_row(tmp_path):
    P, Q, _, _ = _dataset(tmp_path, m=4, V=5, shards=1)
    Q[2, 0] = np.nan
    np.savez(tmp_path / "z.npz", p=P, q=Q, **{k: np.array(v) for k, v in _meta(5).items()})
    with pytest.raises(ValueError, match=r"z.npz: q\[2\]: entry 0 is nan"):
        report(tmp_path, [2], chunk_rows=1)


def test_csv_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "data").mkdir()
    _dataset(tmp_path / "data", m=5, V=10)
    rep = report(tmp_path / "data", [2, 3], keep_values=True, samples=200)
    rows = list(csv.reader(io.StringIO(to_csv(rep))))
    assert tuple(rows[0]) == CSV_COLUMNS
    nver = sum(max(1, len(r["verifiers"])) for r in rep["results"])
    assert len(rows) == 1 + nver
    first = dict(zip(rows[0], rows[1], strict=True))
    assert float(first["alpha_star_mean"]) == rep["results"][0]["alpha_star"]["mean"]
    files = write_plots(rep, tmp_path / "plots")
    names = sorted(f.name for f in files)
    assert names == ["acceptance_n2.png", "acceptance_n3.png", "hist_n2_T1.png", "hist_n3_T1.png"]
    for f in files:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(f.name for f in (tmp_path / "plots").iterdir()) == names  # no temporary files


# -- the command line ---------------------------------------------------------------------------


def test_cli_json_csv_table_and_plot(tmp_path):
    _dataset(tmp_path, m=4, V=12)
    r = runner.invoke(app, ["report", str(tmp_path), "-n", "2,3", "--json", "--samples", "200"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["schema"] == "mdsd-ot/report/1" and rep["n"] == [2, 3] and rep["positions"] == 4
    assert "values" not in json.dumps(rep)
    r = runner.invoke(app, ["report", str(tmp_path), "-n", "2", "--csv"])
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == ",".join(CSV_COLUMNS)
    r = runner.invoke(app, ["report", str(tmp_path), "-n", "2", "--laws", "with"])
    assert r.exit_code == 0 and "rrs-with" in r.stdout and "k-seq" in r.stdout
    pytest.importorskip("matplotlib")
    r = runner.invoke(
        app, ["report", str(tmp_path), "-n", "2", "--json", "--plot", str(tmp_path / "p")]
    )
    assert r.exit_code == 0, r.output
    assert sorted(json.loads(r.stdout)["plots"]) == [
        str(tmp_path / "p" / "acceptance_n2.png"), str(tmp_path / "p" / "hist_n2_T1.png"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "args, match",
    [
        (["report"], "SHARDS"),
        (["report", "--demo", "x"], "SHARDS"),
        (["report", "missing-dir"], "does not exist"),
        (["report", "DATA", "--json", "--csv"], "--csv"),
        (["report", "DATA", "-n", "2,x"], "-n"),
        (["report", "DATA", "--temperatures", "0.5"], "holds no logits"),
        (["report", "DATA", "--workers", "2", "--scheduler", "tcp://x:1"], "--scheduler"),
        (["report", "DATA", "--laws", "explicit"], "--laws"),
    ],
)
def test_cli_bad_input_exits_2(tmp_path, args, match):
    _dataset(tmp_path, m=2, V=5)
    r = runner.invoke(app, [str(tmp_path) if a == "DATA" else a for a in args])
    assert r.exit_code == 2, r.output
    assert match in r.output


def test_empty_temperatures_refused(tmp_path):
    """``temperatures=[]`` reported ``retempered: true`` on the stored rows."""
    _dataset(tmp_path, m=4, V=6, logits=True)
    with pytest.raises(ValueError, match="at least one temperature"):
        report(tmp_path, [2], temperatures=[])


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"seed": -1}, "--seed: must be an integer >= 0"),
        ({"samples": 2.5}, "--samples"),
        ({"depth": -1}, "--depth: the draft depth"),
    ],  # fmt: skip
)
def test_report_arguments_checked_in_python(tmp_path, kw, match):
    """seed=-1 raised numpy's message, samples=2.5 was truncated, depth=-1 gave 0 tokens."""
    _dataset(tmp_path, m=4, V=6)
    with pytest.raises(ValueError, match=match):
        report(tmp_path, [2], **kw)


def _refused_first(d, bad_name):
    """Five rows of V = 5, n = 3 "without": the row of ``bad_name`` has q on two tokens only (the
    law is undefined there: α* NaN), the other shard's four rows are ordinary."""
    rng = np.random.default_rng(4)
    P = rng.dirichlet(np.ones(5), size=5)
    Q = rng.dirichlet(np.ones(5), size=5)
    Q[0] = [0.5, 0.5, 0.0, 0.0, 0.0]
    good = "b.npz" if bad_name == "a.npz" else "a.npz"
    write_shard(d / bad_name, P[:1], Q[:1], metadata=_meta(5))
    write_shard(d / good, P[1:], Q[1:], metadata=_meta(5))
    return P, Q


@pytest.mark.parametrize("bad_name", ["a.npz", "b.npz"])
@pytest.mark.parametrize("chunk_rows", [None, 1, 2])
def test_a_law_refused_on_a_whole_chunk_keeps_its_verifiers(tmp_path, bad_name, chunk_rows):
    """The verifiers of a law do not depend on shard order or chunking: a first chunk whose
    rows the law refuses everywhere used to drop every verifier of that law from the report.
    ``skipped`` names the dataset position of the refused row (not its index in the chunk)."""
    _refused_first(tmp_path, bad_name)
    rep = report(tmp_path, [3], laws=["without"], chunk_rows=chunk_rows, seed=0)
    (res,) = rep["results"]
    names = [v["name"] for v in res["verifiers"]]
    assert names == ["rrs-without", "optimal"], names
    assert res["positions"] == 5 and res["skipped_positions"] == 1
    where = 0 if bad_name == "a.npz" else 4  # shards in name order
    assert res["skipped"].startswith(f"position {where}: "), res["skipped"]
    ref = report(tmp_path, [3], laws=["without"], seed=0)["results"][0]["verifiers"]
    for v, w in zip(res["verifiers"], ref, strict=True):  # the same values whatever the chunks
        assert v["acceptance"]["mean"] == pytest.approx(w["acceptance"]["mean"], abs=1e-12)


def test_tasks_carry_absolute_shard_paths(tmp_path, monkeypatch):
    """A Dask worker may run in another directory: the tasks name the shards absolutely."""
    from mdsd_ot.reports.report import plan

    _dataset(tmp_path, m=4, shards=2)
    monkeypatch.chdir(tmp_path)
    tasks, _ = plan(".", [2])
    assert [t.path for t in tasks] == [
        str(tmp_path / "s0.safetensors"),
        str(tmp_path / "s1.safetensors"),
    ]
    assert [t.offset for t in tasks] == [0, 2]
