"""Output files (mdsd_ot/_outputs.py): path checks before any computation, atomic writes, and
every writer of the package going through them (nothing half-written, nothing left behind)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from mdsd_ot import _outputs as O
from mdsd_ot import io as sio
from mdsd_ot.cli import _files
from mdsd_ot.theory import witness as W

ROOT = os.geteuid() == 0  # root may write anywhere: permission checks cannot fail


def test_public_names_are_the_ones_of_outputs():
    assert _files.check_output_file is O.check_output_file
    assert _files.atomic_write is O.atomic_write
    assert W.check_output_file is O.check_output_file
    assert sio.atomic_path is O.atomic_path
    assert "atomic_path" in sio.__all__


@pytest.mark.parametrize(
    "where, kwargs, message",
    [
        ("{tmp}", {"example": "w.json"}, "--out: {tmp} is a directory; give a file name inside it "
         "(e.g. {tmp}/w.json)"),
        ("{tmp}", {}, "--out: {tmp} is a directory; give a file name inside it"),
        ("{tmp}/a.txt", {"suffixes": (".json", ".csv")},
         "--out: give a file name ending in .json or .csv, got '{tmp}/a.txt'"),
        ("{tmp}/no/a.json", {}, "--out: directory {tmp}/no does not exist; create it first"),
        ("{tmp}/f/a.json", {}, "--out: {tmp}/f is not a directory, so {tmp}/f/a.json cannot be "
         "created"),
    ],
)  # fmt: skip
def test_check_output_file_messages(tmp_path, where, kwargs, message):
    (tmp_path / "f").write_text("x")
    path = where.format(tmp=tmp_path)
    with pytest.raises(ValueError) as err:
        O.check_output_file(path, "--out", **kwargs)
    assert str(err.value) == message.format(tmp=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # a check writes nothing


def test_check_output_file_accepts_new_and_existing_files(tmp_path):
    assert O.check_output_file(tmp_path / "a.JSON", "--out", (".json",)) == tmp_path / "a.JSON"
    (tmp_path / "b.json").write_text("{}")
    assert O.check_output_file(str(tmp_path / "b.json")) == tmp_path / "b.json"
    assert not (tmp_path / "a.JSON").exists()


@pytest.mark.skipif(ROOT, reason="root ignores permissions")
def test_check_output_file_permissions(tmp_path):  # pragma: no cover - CI runs as a user
    d = tmp_path / "ro"
    d.mkdir()
    (d / "old.json").write_text("{}")
    (d / "old.json").chmod(0o400)
    d.chmod(0o500)
    try:
        with pytest.raises(ValueError, match=r"--out: cannot write to directory .*permission"):
            O.check_output_file(d / "a.json", "--out")
    finally:
        d.chmod(0o700)
    with pytest.raises(ValueError, match=r"--out: cannot overwrite .*old.json \(permission"):
        O.check_output_file(d / "old.json", "--out")


def test_atomic_path_is_hidden_next_to_the_file(tmp_path):
    tmp = O.atomic_path(tmp_path / "r.json")
    assert tmp.parent == tmp_path and tmp.name == f".r.json.{os.getpid()}.tmp"


@pytest.mark.parametrize("binary", [False, True])
def test_atomic_write_replaces_the_file(tmp_path, binary):
    f = tmp_path / "r.json"
    f.write_text("old")
    data = b"new\n" if binary else "new\n"
    assert O.atomic_write(f, "--out", lambda fh: fh.write(data), binary=binary) == f
    assert f.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_atomic_write_text_is_utf8(tmp_path):
    f = O.atomic_write(tmp_path / "a.txt", "--out", lambda fh: fh.write("α*"), binary=False)
    assert f.read_bytes() == "α*".encode()


@pytest.mark.parametrize("stage", ["write", "replace"])
def test_atomic_write_failure_keeps_the_old_file(tmp_path, monkeypatch, stage):
    f = tmp_path / "r.json"
    f.write_text("old")

    def full(*_):
        raise OSError(28, "No space left on device")

    def write(fh):
        fh.write("half")
        if stage == "write":
            full()

    if stage == "replace":
        monkeypatch.setattr(os, "replace", full)
    with pytest.raises(ValueError) as err:
        O.atomic_write(f, "--plan", write, binary=False)
    assert str(err.value) == f"--plan: cannot write {f} (No space left on device)"
    assert f.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_other_errors_propagate_and_leave_nothing(tmp_path):
    def write(fh):
        fh.write(b"half")
        raise RuntimeError("serialiser died")

    with pytest.raises(RuntimeError, match="serialiser died"):
        O.atomic_write(tmp_path / "a.npy", "--out", write, binary=True)
    with pytest.raises(KeyError):
        with O.atomic_file(tmp_path / "b.bin", "--out") as tmp:
            tmp.write_bytes(b"half")
            raise KeyError("x")
    assert list(tmp_path.iterdir()) == []


def test_atomic_file_gives_a_name_and_renames(tmp_path):
    with O.atomic_file(tmp_path / "a.bin", "--out") as tmp:
        assert tmp == O.atomic_path(tmp_path / "a.bin")
        assert not (tmp_path / "a.bin").exists()  # nothing visible until complete
        tmp.write_bytes(b"\x00\x01")
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert [p.name for p in tmp_path.iterdir()] == ["a.bin"]


# -- every writer of the package goes through _outputs ----------------------------------------


def _shard(suffix):
    def write(path):
        meta = sio.make_metadata("t", "d", temperature=1.0, top_k=0, top_p=1.0, vocab_size=2)
        P = np.array([[0.5, 0.5]])
        return sio.write_shard(path, P, P, metadata=meta, overwrite=True)

    return f"a{suffix}", "path", write


def _witness(path):
    return W.save(path, {"claim": "T4", "kind": "n1"}, "--out")


def _png(path):
    plt = pytest.importorskip("matplotlib.pyplot")
    from mdsd_ot.reports.plots import save_png

    fig = plt.figure(figsize=(1, 1))
    try:
        return save_png(fig, path, option="--plot")
    finally:
        plt.close(fig)


WRITERS = {
    "shard-safetensors": _shard(".safetensors"),
    "shard-npz": _shard(".npz"),
    "witness": ("w.json", "--out", _witness),
    "png": ("a.png", "--plot", _png),
    "cli-text": ("r.json", "--out", lambda path: _files.write_text(path, "--out", "[]\n")),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_is_atomic(tmp_path, monkeypatch, writer):
    name, option, write = WRITERS[writer]
    f = tmp_path / name
    assert write(f) == f and f.stat().st_size > 0
    before = f.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == [name]

    def full(src, dst):
        assert os.fspath(src) == os.fspath(O.atomic_path(f))  # written under the temporary name
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(ValueError) as err:
        write(f)
    assert str(err.value) == f"{option}: cannot write {f} (No space left on device)"
    assert f.read_bytes() == before  # the old file is intact
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary left behind


def test_witness_written_is_json(tmp_path):
    f = _witness(tmp_path / "w.json")
    assert json.loads(f.read_text())["format"] == W.FORMAT


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("dangling", [False, True])
def test_every_writer_writes_through_a_symlink(tmp_path, writer, dangling):
    """A link such as ``latest.json -> runs/r.json`` stays a link; the file it names is
    (re)written, created when the link dangles."""
    name, _, write = WRITERS[writer]
    runs = tmp_path / "runs"
    runs.mkdir()
    target = runs / name
    if not dangling:
        target.write_bytes(b"old")
    link = tmp_path / name
    link.symlink_to(target)
    assert write(link) == link
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.stat().st_size > 0 and target.read_bytes() != b"old"
    assert sorted(p.name for p in runs.iterdir()) == [name]  # no temporary left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "runs"])


def test_check_output_file_follows_a_link(tmp_path):
    link = tmp_path / "a.json"
    link.symlink_to(tmp_path / "gone" / "a.json")
    with pytest.raises(ValueError, match=r"^--out: directory .*/gone does not exist; create it"):
        O.check_output_file(link, "--out")
    chain = tmp_path / "b.json"
    chain.symlink_to(link)  # a chain of links ends at the same file
    assert O.resolve_link(chain) == O.resolve_link(link) == (tmp_path / "gone" / "a.json")


def test_a_loop_of_links_is_refused(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(ValueError, match=r"^--out: .*a.json is a loop of symbolic links"):
        O.check_output_file(a, "--out")
    with pytest.raises(ValueError, match=r"^--out: cannot write .*a.json \(a loop of symbolic"):
        O.atomic_write(a, "--out", lambda fh: fh.write("x"), binary=False)
    assert a.is_symlink() and b.is_symlink()  # both links left as they were
