"""The built-in offline study: byte n-gram models of the standard library's documentation."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from typer.testing import CliRunner

from mdsd_ot.cli import app
from mdsd_ot.io import read_shards
from mdsd_ot.reports import demo


def _naive(text: bytes, order: int, d: float, history: bytes) -> np.ndarray:
    """Interpolated absolute discounting written out with dictionaries (the module's formula)."""
    P = np.full(256, 1 / 256)
    for k in range(order):
        h = history[len(history) - k :] if k else b""
        c = Counter(text[t] for t in range(k, len(text)) if text[t - k : t] == h)
        tot = sum(c.values())
        if tot == 0:
            continue
        C = np.zeros(256)
        for w, x in c.items():
            C[w] = x
        P = np.maximum(C - d, 0) / tot + d * len(c) / tot * P
    return P / P.sum()


def test_byte_ngram_matches_the_formula():
    text = b"abracadabra, abracadabra! the cat sat on the mat; the rat sat too."
    for order in (1, 2, 4):
        model = demo.ByteNGram(text, order, 0.6)
        at = np.array([5, 20, 30, len(text) - 1])
        got = model.probs(text, at)
        for row, t in zip(got, at, strict=True):
            ref = _naive(text, order, 0.6, text[:t])
            assert np.allclose(row, ref, atol=1e-14, rtol=0), (order, t)
    with pytest.raises(ValueError, match="order"):
        demo.ByteNGram(text, 9)


def test_demo_rows_are_real_text_and_deterministic():
    a, b = demo.demo_rows(300), demo.demo_rows(300)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert a["p"].shape == (300, 256) and (a["p"] > 0).all()
    assert np.allclose(a["p"].sum(axis=1), 1, atol=1e-12, rtol=0)
    assert a["sequence"].tolist()[-1] == 299 // demo.SEQUENCE_LENGTH
    text = demo.corpus()
    split = int(len(text) * demo.TRAIN_SHARE)
    assert bytes(a["token"][:40].astype(np.uint8)) == text[split : split + 40]  # held-out bytes
    # the higher-order target predicts the held-out text better than the draft (bits per byte)
    bits = {k: -np.log2(a[k][np.arange(300), a["token"]]).mean() for k in ("p", "q")}
    assert bits["p"] < bits["q"]


def test_demo_shards_and_cli(tmp_path):
    files = demo.demo_shards(tmp_path, positions=24, shards=2)
    shards = list(read_shards(tmp_path))
    assert [s.path for s in shards] == files and [s.m for s in shards] == [12, 12]
    assert shards[0].has_logits and shards[0].V == 256
    r = CliRunner().invoke(
        app, ["report", "--demo", "--positions", "16", "-n", "2", "--json", "--samples", "100"]
    )
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["source"] == "demo" and rep["V"] == 256 and rep["positions"] == 16
    r = CliRunner().invoke(
        app, ["report", "--demo", "--positions", "8", "-n", "2", "--temperatures", "0.5,1",
              "--laws", "greedy"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "re-tempered from" in r.stdout and "greedy" in r.stdout  # the title may wrap


@pytest.mark.slow
def test_cli_workers_uses_process_workers_with_serial_results(tmp_path):
    demo.demo_shards(tmp_path, positions=40, shards=4)
    runner = CliRunner()
    serial = runner.invoke(app, ["report", str(tmp_path), "-n", "2,3", "--json"])
    dask = runner.invoke(app, ["report", str(tmp_path), "-n", "2,3", "--json", "--workers", "2"])
    assert serial.exit_code == 0 and dask.exit_code == 0, dask.output
    assert json.loads(dask.stdout) == json.loads(serial.stdout)


def test_corpus_does_not_depend_on_what_the_caller_patched(monkeypatch):
    """torch replaces ``inspect.getsourcefile`` and transformers adds
    ``logging.Logger.warning_once`` when imported; read in-process, both changed the corpus and
    so every figure of the study.  The corpus is read in a fresh interpreter instead."""
    import inspect
    import logging

    before = demo._docstring_text()

    def getsourcefile(obj):  # a library's wrapper: defined outside inspect
        return None

    def warning_once(self, *args):
        """A method a library attached to the stdlib's Logger."""

    monkeypatch.setattr(inspect, "getsourcefile", getsourcefile)
    monkeypatch.setattr(logging.Logger, "warning_once", warning_once, raising=False)
    assert demo._docstring_text() == before
    ns: dict = {"__name__": "probe"}
    exec(demo._SCRIPT, ns)
    assert ns["collect"](demo.MODULES) != before  # in-process reading sees the patches


def test_corpus_without_a_subprocess_warns_and_reads_in_process(monkeypatch):
    import subprocess

    text = demo._docstring_text()

    def refuse(*args, **kwargs):
        raise OSError("no subprocesses here")

    monkeypatch.setattr(subprocess, "run", refuse)
    with pytest.warns(RuntimeWarning, match="fresh interpreter"):
        here = demo._docstring_text()
    assert len(here) > 50_000 and here.split("\n\n")[0] == text.split("\n\n")[0]
