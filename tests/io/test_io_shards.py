"""The shard format (mdsd_ot.io): round trips, memory maps, streaming, and every bad input."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save_file

from mdsd_ot import io as sio

META = sio.make_metadata("t", "d", temperature=0.5, top_k=0, top_p=1.0, vocab_size=5)


def _rows(m=6, V=5, seed=0, dtype=np.float64):
    g = np.random.default_rng(seed)
    return g.dirichlet(np.ones(V), m).astype(dtype), g.dirichlet(np.ones(V), m).astype(dtype)


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_trip(tmp_path, suffix, dtype):
    P, Q = _rows(dtype=dtype)
    L = np.log(P.astype(np.float64))
    f = sio.write_shard(
        tmp_path / f"a{suffix}", P, Q, metadata=META, token=np.arange(6) % 5,
        position=np.arange(6), sequence=np.zeros(6), logits_p=L, logits_q=L,
    )  # fmt: skip
    (s,) = list(sio.read_shards(tmp_path))
    assert s.path == f and (s.m, s.V) == (6, 5) and s.metadata == META
    assert (s.temperature, s.top_k, s.top_p) == (0.5, 0, 1.0) and s.has_logits
    rows = s.rows()
    tol = 1e-6 if dtype == np.float32 else 1e-15  # float32 storage, renormalised rows
    assert np.allclose(rows["p"], P, atol=tol, rtol=0) and rows["p"].dtype == np.float64
    assert np.allclose(rows["p"].sum(axis=1), 1.0, atol=1e-15, rtol=0)
    assert rows["token"].tolist() == [0, 1, 2, 3, 4, 0] and rows["sequence"].dtype.kind == "i"
    assert np.allclose(rows["logits_p"], L, atol=1e-6, rtol=0)  # logits stored as float32
    chunks = list(s.chunks(rows=4))
    assert [c[0] for c in chunks] == [0, 4] and [len(c[1]["q"]) for c in chunks] == [4, 2]
    assert np.array_equal(np.vstack([c[1]["q"] for c in chunks]), rows["q"])


def test_npz_members_are_memory_mapped(tmp_path):
    P, Q = _rows()
    f = sio.write_shard(tmp_path / "a.npz", P, Q, metadata=META)
    with np.load(f) as npz:
        arr = sio._npz_member(f, "p", npz)
    assert isinstance(arr, np.memmap) and np.array_equal(arr, P)
    # a compressed .npz (np.savez_compressed) is read too, member by member
    np.savez_compressed(tmp_path / "b.npz", p=P, q=Q, **{k: np.array(v) for k, v in META.items()})
    s = sio.Shard(tmp_path / "b.npz")
    assert np.allclose(s.rows(2, 4)["q"], Q[2:4], atol=1e-15, rtol=0)


def test_directory_streams_sorted_shards_and_skips_temporary_files(tmp_path):
    for name, seed in (("b.safetensors", 1), ("a.npz", 2)):
        sio.write_shard(tmp_path / name, *_rows(seed=seed), metadata=META)
    (tmp_path / ".c.safetensors.123.tmp").write_bytes(b"partial")
    (tmp_path / "notes.txt").write_text("not a shard")
    it = sio.read_shards(tmp_path)
    assert next(it).path.name == "a.npz"  # a generator: one shard at a time
    assert [s.path.name for s in it] == ["b.safetensors"]


def test_warp_temperature_top_k_top_p():
    z = np.array([[3.0, 1.0, 2.0, 0.0, -1.0]])
    p = sio.warp(z, 0.5)
    e = np.exp(2 * (z - 3))
    assert np.allclose(p, e / e.sum(), atol=1e-15, rtol=0)
    pk = sio.warp(z, 1.0, top_k=2)
    assert np.flatnonzero(pk[0]).tolist() == [0, 2]
    full = sio.warp(z, 1.0)[0]
    # top-p keeps the most likely tokens until their mass reaches top_p (the first crossing kept)
    pp = sio.warp(z, 1.0, top_p=full[0] + 1e-9)[0]
    assert np.flatnonzero(pp).tolist() == [0, 2]
    assert sio.warp(z, 1.0, top_p=1e-6)[0].tolist() == [1.0, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="temperature"):
        sio.warp(z, 0.0)


def test_write_is_atomic_and_refuses_bad_data(tmp_path):
    P, Q = _rows()
    Q[3] = np.nan
    with pytest.raises(ValueError, match=r"q\[3\]"):
        sio.write_shard(tmp_path / "a.safetensors", P, Q, metadata=META)
    assert list(tmp_path.iterdir()) == []  # nothing partially written
    P, Q = _rows()
    sio.write_shard(tmp_path / "a.safetensors", P, Q, metadata=META)
    with pytest.raises(ValueError, match="exists"):
        sio.write_shard(tmp_path / "a.safetensors", P, Q, metadata=META)
    with pytest.raises(ValueError, match="must end with"):
        sio.write_shard(tmp_path / "a.pt", P, Q, metadata=META)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["a.safetensors"]


def test_write_refuses_complex_and_float16(tmp_path):
    """A complex p was written with its imaginary part dropped (a ComplexWarning only), and
    float16 rows were cast to float64 silently; both are refused, naming the tensor."""
    P, Q = _rows()
    with pytest.raises(ValueError, match=r"p: an array of dtype complex128"):
        sio.write_shard(tmp_path / "c.npz", P.astype(np.complex128), Q, metadata=META)
    with pytest.raises(ValueError, match=r"q: float16 rows.*astype\(np.float32\)"):
        sio.write_shard(tmp_path / "h.npz", P, Q.astype(np.float16), metadata=META)
    assert list(tmp_path.iterdir()) == []


def test_write_takes_torch_tensors_and_refuses_bfloat16_rows_and_missing_metadata(tmp_path):
    """Tensors go through the host; bfloat16 rows are refused like float16 and bfloat16 logits
    stored as float32 (they were a TypeError of numpy); metadata=None is a ValueError."""
    torch = pytest.importorskip("torch")
    P, Q = _rows()
    with pytest.raises(ValueError, match=r"^p: bfloat16 rows .*\(p.float\(\)\)"):
        sio.write_shard(tmp_path / "b.npz", torch.from_numpy(P).bfloat16(), Q, metadata=META)
    with pytest.raises(ValueError, match=r"^metadata: give the shard's metadata .* got NoneType"):
        sio.write_shard(tmp_path / "m.npz", P, Q, metadata=None)
    assert list(tmp_path.iterdir()) == []
    for big in (np.array([2**63 + 1] * len(P), dtype=np.uint64), np.full(len(P), 1e19),
                np.full(len(P), -1e19)):  # fmt: skip
        with pytest.raises(ValueError, match=r"^token: id -?(9223372036854775809|1e\+19) does not"):
            sio.write_shard(tmp_path / "i.npz", P, Q, metadata=META, token=big)
    ids = (torch.arange(len(P)) % 5).bfloat16()  # bfloat16 ids: read as the integers they hold
    sio.write_shard(tmp_path / "ids.npz", P, Q, metadata=META, token=ids)
    got = sio.Shard(tmp_path / "ids.npz").rows(0, len(P))["token"].tolist()
    assert got == [k % 5 for k in range(len(P))]
    (tmp_path / "ids.npz").unlink()
    L = torch.randn(*P.shape).bfloat16()
    f = sio.write_shard(
        tmp_path / "t.safetensors", torch.from_numpy(P), torch.from_numpy(Q), metadata=META,
        logits_p=L, logits_q=L,
    )  # fmt: skip
    rows = sio.Shard(f).rows(0, len(P))
    assert np.max(np.abs(rows["p"] - P)) <= 1e-15  # renormalised on reading: rounding only
    assert np.array_equal(rows["logits_p"], L.float().numpy())


# -- bad shards, written directly (the writer refuses them) ------------------------------------


def _bad(tmp_path, tensors, meta, suffix=".safetensors"):
    f = tmp_path / f"bad{suffix}"
    if suffix == ".safetensors":
        save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(f), metadata=meta)
    else:
        np.savez(f, **tensors, **{k: np.array(v) for k, v in meta.items()})
    return f


def _read_all(path):
    for s in sio.read_shards(path):
        for _ in s.chunks(rows=2):
            pass


P0, Q0 = _rows()


def _nan_row():
    p = P0.copy()
    p[3, 1] = np.nan
    return p


def _off_row():
    q = Q0.copy()
    q[5] *= 1.01
    return q


BAD = [
    ("mismatched V", {"p": P0, "q": np.ones((6, 4)) / 4}, META, r"key 'q' has shape \(6, 4\)"),
    ("NaN row", {"p": _nan_row(), "q": Q0}, META, r"p\[3\]: entry 1 is nan"),
    ("row not summing to 1", {"p": P0, "q": _off_row()}, META, r"q\[5\]: entries sum to 1.01"),
    ("missing tensor", {"p": P0}, META, r"missing tensor key\(s\) q"),
    (
        "missing metadata",
        {"p": P0, "q": Q0},
        {k: v for k, v in META.items() if k != "draft"},
        r"missing metadata key\(s\) draft",
    ),
    ("unknown metadata", {"p": P0, "q": Q0}, {**META, "foo": "1"}, r"unknown metadata key\(s\) 'foo'"),
    ("unknown tensor", {"p": P0, "q": Q0, "r": P0}, META, r"unknown key\(s\) 'r'"),
    ("vocab_size", {"p": P0, "q": Q0}, {**META, "vocab_size": "7"}, "'vocab_size' is 7 but p has V = 5"),
    ("temperature", {"p": P0, "q": Q0}, {**META, "temperature": "hot"}, "'temperature' is 'hot'"),
    ("top_p", {"p": P0, "q": Q0}, {**META, "top_p": "0"}, "'top_p' is '0'"),
    ("token range", {"p": P0, "q": Q0, "token": np.full(6, 9)}, META, r"token\[0\] is 9"),
    ("token shape", {"p": P0, "q": Q0, "token": np.zeros(5, np.int64)}, META, "key 'token' has shape"),
    ("float16", {"p": P0.astype(np.float16), "q": Q0}, META, "dtype float16"),
    ("one logits", {"p": P0, "q": Q0, "logits_p": np.log(P0)}, META, "both logits_p and logits_q"),
]  # fmt: skip


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
@pytest.mark.parametrize("case, tensors, meta, match", BAD, ids=[b[0] for b in BAD])
def test_bad_shards_one_line_errors_naming_file_key_row(
    tmp_path, suffix, case, tensors, meta, match
):
    f = _bad(tmp_path, tensors, meta, suffix)
    with pytest.raises(ValueError, match=match) as err:
        _read_all(tmp_path)
    msg = str(err.value)
    assert msg.startswith(str(f)) and "\n" not in msg


def test_bad_row_in_a_later_chunk_is_named_by_its_row_in_the_file(tmp_path):
    P, Q = _rows(m=9)
    P[7] = -P[7]
    f = _bad(tmp_path, {"p": P, "q": Q}, META)
    s = sio.Shard(f)  # the header is fine
    first = next(s.chunks(rows=3))
    assert first[0] == 0
    with pytest.raises(ValueError, match=r"p\[7\]: entry 0 is negative"):
        list(s.chunks(rows=3))


def test_paths(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        list(sio.read_shards(tmp_path / "nope"))
    with pytest.raises(ValueError, match="holds no .safetensors or .npz shards"):
        list(sio.read_shards(tmp_path))
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ValueError, match="is not a shard"):
        list(sio.read_shards(tmp_path / "x.txt"))
    (tmp_path / "y.safetensors").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        list(sio.read_shards(tmp_path / "y.safetensors"))
