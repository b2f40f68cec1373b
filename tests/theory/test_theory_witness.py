"""Witness files (mdsd_ot/theory/witness.py): exact round trip, output paths checked first,
atomic writes, clean refusals of unreadable files."""

from __future__ import annotations

import json
import os
from fractions import Fraction

import pytest

from mdsd_ot.theory import witness as W


def test_round_trip_is_exact(tmp_path):
    w = {"claim": "T12b", "kind": "en_formula", "q": [Fraction(1, 2), Fraction(1, 2)], "H": (0,)}
    f = W.save(tmp_path / "w.json", w)
    [back] = W.load(f)
    assert back == {"claim": "T12b", "kind": "en_formula", "q": ["1/2", "1/2"], "H": [0]}
    assert W.decode(back)["q"] == [Fraction(1, 2)] * 2
    W.save(f, [w, w])
    assert len(W.load(f)) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["w.json"]  # no temporary file left


def test_save_replaces_atomically_and_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    f = tmp_path / "w.json"
    W.save(f, {"kind": "n1", "claim": "T4"})
    before = f.read_bytes()

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(ValueError, match=r"--out: cannot write .*No space left on device"):
        W.save(f, {"kind": "n1", "claim": "T9"}, "--out")
    assert f.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["w.json"]


@pytest.mark.parametrize(
    "where, message",
    [
        ("{tmp}", "is a directory; give a file name inside it"),
        ("{tmp}/no/w.json", "does not exist; create it first"),
        ("{tmp}/f.txt/w.json", "is not a directory"),
    ],
)
def test_output_path_refused_with_the_option_name(tmp_path, where, message):
    (tmp_path / "f.txt").write_text("x")
    path = where.format(tmp=tmp_path)
    with pytest.raises(ValueError, match=f"^--out: .*{message}"):
        W.check_output_path(path, "--out")
    with pytest.raises(ValueError, match="--save"):
        W.save(path, {"kind": "n1"}, "--save")


def test_load_refuses_what_is_not_a_witness_file(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        W.load(tmp_path / "none.json")
    with pytest.raises(ValueError, match="is a directory"):
        W.load(tmp_path)
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="is not JSON"):
        W.load(tmp_path / "bin")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a witness file"):
        W.load(tmp_path / "list.json")
    (tmp_path / "bad.json").write_text(json.dumps({"format": W.FORMAT, "witnesses": "x"}))
    with pytest.raises(ValueError, match="list of objects"):
        W.load(tmp_path / "bad.json")


@pytest.mark.parametrize("claim", ["T12b", "T5b", "T9b", "T7b", "T3c"])
def test_a_stored_figure_that_is_not_the_instances_is_not_reproduced(claim):
    """A witness whose instance still shows the effect but whose stored figures were edited
    (or written by another version) is reported as not reproduced, naming the field."""
    from mdsd_ot.theory.claims import reproduce, run

    w = W.encode(run(claim, trials=5).witness)
    assert reproduce(w).reproduced
    rep = reproduce(w)
    shared = [
        k
        for k, v in rep.values.items()
        if isinstance(v, int | Fraction) and not isinstance(v, bool) and k in w
    ]
    assert shared, rep.values  # the check below is not vacuous
    bad = dict(w, **{shared[0]: str(Fraction(rep.values[shared[0]]) + Fraction(1, 7))})
    out = reproduce(bad)
    assert not out.reproduced
    assert f"the file's {shared[0]}=" in out.detail
