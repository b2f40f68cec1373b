"""Shard files, from a review of the user paths (2026-12): file modes, integer ids, and messages
that name the file and the member for arrays that cannot be read."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from mdsd_ot.io import Shard, make_metadata, write_shard

P = np.full((2, 4), 0.25)
META = make_metadata("t", "d", temperature=1.0, top_k=0, top_p=1.0, vocab_size=4)


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
def test_shards_get_the_mode_of_a_plain_file(tmp_path, ext):
    if ext == "safetensors":
        pytest.importorskip("safetensors")
    f = tmp_path / f"a.{ext}"
    write_shard(f, P, P, metadata=META)
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~mask


def test_token_ids_must_be_whole_numbers(tmp_path):
    write_shard(tmp_path / "a.npz", P, P, token=np.array([1.0, 2.0]), metadata=META)
    with pytest.raises(
        ValueError, match=r"token: integer ids expected, got dtype float64 \(e.g. 2.7\)"
    ):
        write_shard(tmp_path / "b.npz", P, P, token=np.array([1.0, 2.7]), metadata=META)
    assert not (tmp_path / "b.npz").exists()


def _npz(path, **arrays):
    np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})
    return path


def test_unreadable_member_names_the_file_and_member(tmp_path):
    f = _npz(tmp_path / "s.npz", p=np.array([{"a": 1}], dtype=object), q=P, **META)
    with pytest.raises(ValueError, match=r"s\.npz: member 'p' is not a readable array"):
        Shard(f)


def test_metadata_stored_as_a_number(tmp_path):
    meta = {**META, "temperature": np.float64(1.0)}
    f = _npz(tmp_path / "s.npz", p=P, q=P, **meta)
    with pytest.raises(ValueError, match=r"metadata 'temperature' is stored as a float64"):
        Shard(f)


def test_big_endian_rows_get_a_fix(tmp_path):
    f = _npz(tmp_path / "s.npz", p=P.astype(">f8"), q=P, **META)
    with pytest.raises(ValueError, match=r"native \(little-endian\) byte order"):
        Shard(f)
