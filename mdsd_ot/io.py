r"""Shards: target and draft distributions of real positions, on disk (the format is a contract).

A *shard* is one file holding ``m`` positions over a vocabulary of ``V`` tokens; a directory of
shards is a *dataset*.  Two containers carry the same keys: ``.safetensors`` (tensors plus string
metadata; read memory-mapped through ``safetensors.safe_open``) and ``.npz`` (every key an array;
metadata as 0-d string arrays; uncompressed members are memory-mapped with :class:`numpy.memmap`).

Tensors
    ``p``, ``q`` (required): (m, V), float32 or float64; row k is the target's (resp. draft's)
    next-token distribution at position k *after* temperature, top-k and top-p (:func:`warp`).
    ``token`` (m,) the token the target emitted; ``position`` (m,) its index in its sequence;
    ``sequence`` (m,) the sequence (prompt) it belongs to: integers, optional.
    ``logits_p``, ``logits_q`` (optional): (m, V) raw logits, so that a report may re-temper.
Metadata (all required, all strings)
    ``target``, ``draft`` (model names or paths), ``temperature`` (> 0), ``top_k`` (integer,
    ``0`` = off), ``top_p`` (in (0, 1], ``1`` = off), ``vocab_size`` (= V), ``created_by``
    (``mdsd-ot <version>``).

Reading never holds a dataset in memory: :func:`read_shards` yields one :class:`Shard` at a time
and :meth:`Shard.chunks` yields blocks of rows (about :data:`CHUNK_ENTRIES` entries each),
validated by :mod:`mdsd_ot._validate` as they are read; errors name the file, the key and the row.
Writing (:func:`write_shard`) validates first and writes to a temporary name in the target
directory, renamed when complete (:mod:`mdsd_ot._outputs`).  Documented in ``docs/shards.md``.

Examples
--------
>>> import tempfile, numpy as np
>>> d = tempfile.mkdtemp()
>>> meta = make_metadata("t", "d", temperature=1.0, top_k=0, top_p=1.0, vocab_size=3)
>>> path = write_shard(f"{d}/a.safetensors", [[0.5, 0.25, 0.25]], [[0.2, 0.3, 0.5]], metadata=meta)
>>> [(s.m, s.V, s.temperature) for s in read_shards(d)]
[(1, 3, 1.0)]
"""

from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from . import _validate as V_
from ._outputs import atomic_file, atomic_path, atomic_write
from ._version import __version__

__all__ = [
    "REQUIRED_TENSORS",
    "OPTIONAL_TENSORS",
    "METADATA_KEYS",
    "SUFFIXES",
    "CHUNK_ENTRIES",
    "Shard",
    "read_shards",
    "shard_files",
    "write_shard",
    "make_metadata",
    "warp",
    "atomic_path",
]

#: Tensors every shard holds.
REQUIRED_TENSORS: tuple[str, ...] = ("p", "q")
#: Tensors a shard may hold.
OPTIONAL_TENSORS: tuple[str, ...] = ("token", "position", "sequence", "logits_p", "logits_q")
#: String metadata every shard holds (and no other).
METADATA_KEYS: tuple[str, ...] = (
    "target", "draft", "temperature", "top_k", "top_p", "vocab_size", "created_by",
)  # fmt: skip
#: File suffixes of shards.
SUFFIXES: tuple[str, ...] = (".safetensors", ".npz")
#: Rows per chunk are chosen so that one chunk of one (m, V) tensor has about this many entries.
CHUNK_ENTRIES: int = 2**21

_ROWS = ("p", "q", "logits_p", "logits_q")
_INTS = ("token", "position", "sequence")
_FLOATS = (np.float32, np.float64)


def warp(logits: Any, temperature: float, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
    r"""The sampling distribution of logits after temperature, then top-k, then top-p (float64).

    .. math::

       p = \mathrm{softmax}(z)\ \text{restricted to } K,\quad z = \ell / T,\quad
       K = \{i : z_i \ge z_{(k)}\} \cap \{i : \textstyle\sum_{j \prec i} \pi_j < \text{top\_p}\}

    where :math:`z_{(k)}` is the k-th largest logit (ties kept; ``top_k = 0`` is off), ``≺``
    orders tokens by decreasing :math:`\pi = \mathrm{softmax}` of the top-k logits (equal π:
    the lower index first), and the most likely token is always kept (``top_p = 1`` is off).
    This is the order and the rule of Hugging Face's temperature, top-k and top-p warpers,
    except where tokens of equal π straddle the top-p cut: Hugging Face's warper takes their
    order from ``torch.sort``, which is not stable (on the CPU, 4 equal logits come out in
    index order and 40 in reverse), so which of them it keeps depends on the row's length;
    here the lower indices are kept, whatever the length.

    Examples
    --------
    >>> warp([0.0, 1.0, 2.0], 1.0, top_k=2).round(4)
    array([0.    , 0.2689, 0.7311])
    >>> warp([0.0, 1.0, 2.0], 1.0, top_p=0.5).tolist()
    [0.0, 0.0, 1.0]
    >>> warp([0.0, 0.0, 0.0, 0.0], 1.0, top_p=0.5).tolist()  # a tie at the cut: lower indices
    [0.5, 0.5, 0.0, 0.0]
    """
    t = float(temperature)
    if not np.isfinite(t) or t <= 0:
        raise ValueError(f"temperature: must be a finite number > 0, got {temperature!r}")
    z = np.array(logits, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # shift first: 1e308 / 0.5 overflows
        z = (z - z.max(axis=-1, keepdims=True)) / t
    V = z.shape[-1]
    if top_k and 0 < int(top_k) < V:
        kth = np.partition(z, V - int(top_k), axis=-1)[..., V - int(top_k)][..., None]
        z = np.where(z < kth, -np.inf, z)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    prob = e / e.sum(axis=-1, keepdims=True)
    if float(top_p) < 1.0:
        order = np.argsort(-prob, axis=-1, kind="stable")
        sp = np.take_along_axis(prob, order, axis=-1)
        before = np.cumsum(sp, axis=-1) - sp
        keep_sorted = before < float(top_p)
        keep_sorted[..., 0] = True
        keep = np.empty_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        prob = np.where(keep, prob, 0.0)
        prob = prob / prob.sum(axis=-1, keepdims=True)
    return prob


def make_metadata(
    target: str,
    draft: str,
    *,
    temperature: float,
    top_k: int,
    top_p: float,
    vocab_size: int,
) -> dict[str, str]:
    """The metadata of a shard (``created_by`` is this package's version).

    Examples
    --------
    >>> make_metadata("gpt2", "distilgpt2", temperature=0.7, top_k=0, top_p=1.0, vocab_size=50257)["top_p"]
    '1.0'
    """
    meta = {
        "target": str(target),
        "draft": str(draft),
        "temperature": repr(float(temperature)),
        "top_k": str(int(top_k)),
        "top_p": repr(float(top_p)),
        "vocab_size": str(int(vocab_size)),
        "created_by": f"mdsd-ot {__version__}",
    }
    _settings(meta, "metadata")
    return meta


def _settings(meta: Mapping[str, str], where: str) -> tuple[float, int, float, int]:
    """Parse and check temperature, top_k, top_p and vocab_size of a metadata dict."""
    missing = [k for k in METADATA_KEYS if k not in meta]
    if missing:
        raise ValueError(
            f"{where}: missing metadata key(s) {', '.join(missing)}; a shard carries "
            f"{', '.join(METADATA_KEYS)} (docs/shards.md)"
        )
    unknown = [k for k in meta if k not in METADATA_KEYS]
    if unknown:
        raise ValueError(
            f"{where}: unknown metadata key(s) {', '.join(map(repr, unknown))}; the format allows "
            f"only {', '.join(METADATA_KEYS)} (docs/shards.md)"
        )
    out = []
    for key, kind, ok, rule in (
        ("temperature", float, lambda x: np.isfinite(x) and x > 0, "a number > 0"),
        ("top_k", int, lambda x: x >= 0, "an integer >= 0 (0 = off)"),
        ("top_p", float, lambda x: 0 < x <= 1, "a number in (0, 1] (1 = off)"),
        ("vocab_size", int, lambda x: x >= 1, "an integer >= 1"),
    ):
        try:
            val = kind(str(meta[key]))
        except ValueError:
            val = None
        if val is None or not ok(val):
            raise ValueError(f"{where}: metadata {key!r} is {meta[key]!r}; it must be {rule}")
        out.append(val)
    return out[0], out[1], out[2], out[3]


def _integers(x: Any, name: str) -> np.ndarray:
    """``x`` as int64, refusing values that are not whole numbers (2.7 would be stored as 2)."""
    a = _host(x, name)
    if a.dtype.kind in "iub":
        if a.dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
            raise ValueError(
                f"{name}: id {int(a.max())} does not fit the stored int64; ids lie below 2^63"
            )
        return a.astype(np.int64)
    if a.dtype.kind == "f" and a.size and np.all(np.isfinite(a)):
        out = a[(a >= 2.0**63) | (a < -(2.0**63))]
        if out.size:
            raise ValueError(f"{name}: id {float(out.flat[0])!r} does not fit the stored int64")
    if a.dtype.kind != "f" or not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
        v = a.ravel()
        odd = v[~(np.isfinite(v) & (v == np.round(v)))] if v.dtype.kind == "f" else v
        example = f" (e.g. {float(odd[0])!r})" if odd.size and v.dtype.kind == "f" else ""
        raise ValueError(
            f"{name}: integer ids expected, got dtype {a.dtype}{example}; give an integer array "
            "(token, position and sequence are ids)"
        )
    return a.astype(np.int64)


def _host(x: Any, key: str) -> np.ndarray:
    """``x`` as a numpy array; a torch tensor (any device) through the host.  bfloat16 logits
    and ids become float32 (exactly); bfloat16 probabilities are refused like float16
    (:func:`write_shard`)."""
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            if key not in ("p", "q"):  # logits and ids: float32 holds every bfloat16 exactly
                t = t.float()
            else:
                raise ValueError(
                    f"{key}: bfloat16 rows cannot meet the sum check of a stored shard; store "
                    f"float32 or float64 ({key}.float()), normalised after the cast"
                )
        return V_._host(t)
    return np.asarray(x)


def write_shard(
    path: str | os.PathLike,
    p: Any,
    q: Any,
    *,
    metadata: Mapping[str, str],
    token: Any = None,
    position: Any = None,
    sequence: Any = None,
    logits_p: Any = None,
    logits_q: Any = None,
    overwrite: bool = False,
) -> Path:
    """Validate and write one shard (``.safetensors`` or ``.npz`` by suffix), atomically.

    ``p`` and ``q`` keep their dtype where it is float32 or float64; integer arrays and lists are
    stored as float64, and float16, complex and non-numeric arrays are refused; the optional
    integer tensors are
    stored as int64 and the logits as float32.  Nothing is written when a check fails, and the
    file appears only when complete (temporary name, then :func:`os.replace`:
    :mod:`mdsd_ot._outputs`); a failed write (an :class:`OSError`) is a ValueError naming the
    file and leaves nothing behind.
    """
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise ValueError(f"path: {path} must end with {' or '.join(SUFFIXES)}")
    if not path.parent.is_dir():
        raise ValueError(f"path: directory {path.parent} does not exist; create it first")
    if path.exists() and not overwrite:
        raise ValueError(f"path: {path} exists; remove it or pass overwrite=True")
    if not isinstance(metadata, Mapping):
        raise ValueError(
            f"metadata: give the shard's metadata (mdsd_ot.io.make_metadata(...)), got "
            f"{type(metadata).__name__}"
        )
    tensors: dict[str, np.ndarray] = {}
    for key, x in (("p", p), ("q", q)):
        a = _host(x, key)
        if a.dtype.kind not in "fiu":  # complex, bool, strings, objects: no probabilities
            raise ValueError(
                f"{key}: an array of dtype {a.dtype}; give real probabilities (float32 or float64)"
            )
        if a.dtype.kind == "f" and a.dtype.itemsize < 4:  # rounded beyond every row check
            raise ValueError(
                f"{key}: float16 rows cannot meet the sum check of a stored shard; store float32 "
                f"or float64 ({key}.astype(np.float32)), normalised after the cast"
            )
        if a.dtype not in _FLOATS:  # integers, Python lists: float64, exactly
            a = a.astype(np.float64)
        tensors[key] = np.ascontiguousarray(a)
    for key, x in (("logits_p", logits_p), ("logits_q", logits_q)):
        if x is not None:
            tensors[key] = np.ascontiguousarray(np.asarray(_host(x, key), dtype=np.float32))
    for key, x in (("token", token), ("position", position), ("sequence", sequence)):
        if x is not None:
            tensors[key] = np.ascontiguousarray(_integers(x, key))
    meta = {str(k): str(v) for k, v in metadata.items()}
    _check_header(str(path), {k: (v.shape, v.dtype) for k, v in tensors.items()}, meta)
    _check_rows(str(path), tensors, 0)
    if path.suffix == ".safetensors":
        st = _safetensors()
        with atomic_file(path, "path") as tmp:  # save_file takes a name, not a file object
            st.numpy.save_file(tensors, str(tmp), metadata=meta)
        return path
    arrays = {**tensors, **{k: np.array(v) for k, v in meta.items()}}
    return atomic_write(path, "path", lambda fh: np.savez(fh, **arrays), binary=True)


def shard_files(path: str | os.PathLike) -> list[Path]:
    """The shard files of ``path``: the file itself, or a directory's shards sorted by name."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"SHARDS: {path} does not exist; give a shard file or a directory")
    if path.is_file():
        if path.suffix not in SUFFIXES:
            raise ValueError(f"SHARDS: {path} is not a shard (expected {' or '.join(SUFFIXES)})")
        return [path]
    files = sorted(f for f in path.iterdir() if f.suffix in SUFFIXES and not f.name.startswith("."))
    if not files:
        raise ValueError(f"SHARDS: directory {path} holds no {' or '.join(SUFFIXES)} shards")
    return files


def read_shards(path: str | os.PathLike) -> Iterator[Shard]:
    """Stream the shards of a file or directory, one :class:`Shard` at a time (headers checked).

    Row data is read (memory-mapped) and validated chunk by chunk by :meth:`Shard.chunks`.
    """
    for f in shard_files(path):
        yield Shard(f)


class Shard:
    """One shard file: its header (keys, shapes, metadata) checked on opening; rows read on demand.

    Attributes
    ----------
    path : Path
    metadata : dict of str
    m, V : int
        Positions and vocabulary size.
    keys : tuple of str
        The tensors present.
    temperature, top_p : float
    top_k : int
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        header, meta = _read_header(self.path)
        self.metadata = meta
        self.temperature, self.top_k, self.top_p, _ = _check_header(str(self.path), header, meta)
        self.m, self.V = (int(x) for x in header["p"][0])
        self.keys = tuple(header)

    @property
    def has_logits(self) -> bool:
        """Whether the shard holds ``logits_p`` and ``logits_q`` (re-tempering possible)."""
        return "logits_p" in self.keys and "logits_q" in self.keys

    def rows(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        """Rows ``start:stop`` of every tensor, validated; ``p``/``q`` float64 rows summing to 1."""
        stop = self.m if stop is None else min(int(stop), self.m)
        raw = _read_rows(self.path, self.keys, int(start), stop)
        return _check_rows(str(self.path), raw, int(start))

    def chunks(self, rows: int | None = None) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """``(start, rows(start, start + rows))`` over the shard; default rows from the V."""
        step = max(1, CHUNK_ENTRIES // self.V) if rows is None else max(1, int(rows))
        for start in range(0, self.m, step):
            yield start, self.rows(start, start + step)

    def __repr__(self) -> str:
        return f"Shard({self.path.name!r}, m={self.m}, V={self.V})"


# -- headers ---------------------------------------------------------------------------------


def _safetensors() -> Any:
    try:
        import safetensors
        import safetensors.numpy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            ".safetensors shards need safetensors; pip install 'mdsd-ot[hf]' (or use .npz shards)"
        ) from exc
    return safetensors


def _read_header(path: Path) -> tuple[dict[str, tuple[tuple, Any]], dict[str, str]]:
    """``({tensor: (shape, dtype)}, metadata)`` without reading the data."""
    if path.suffix == ".safetensors":
        st = _safetensors()
        try:
            with st.safe_open(str(path), framework="numpy") as fh:
                meta = dict(fh.metadata() or {})
                header = {}
                for k in fh.keys():
                    sl = fh.get_slice(k)
                    header[k] = (tuple(sl.get_shape()), _ST_DTYPES.get(sl.get_dtype(), None))
        except (OSError, st.SafetensorError, ValueError) as exc:
            raise ValueError(f"{path}: not a readable safetensors file ({exc})") from None
        return header, meta
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n[:-4] for n in zf.namelist() if n.endswith(".npy")]
    except (OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: not a readable .npz file ({exc})") from None
    header, meta = {}, {}
    with np.load(path, allow_pickle=False) as npz:
        for k in names:
            try:
                if k in METADATA_KEYS or k not in REQUIRED_TENSORS + OPTIONAL_TENSORS:
                    v = npz[k]
                    if v.ndim == 0 and v.dtype.kind == "U":
                        meta[k] = str(v)
                        continue
                    if k in METADATA_KEYS:
                        raise ValueError(
                            f"{path}: metadata {k!r} is stored as a {v.dtype} array of shape "
                            f"{v.shape}; store it as a string (write_shard does)"
                        )
                arr = _npz_member(path, k, npz)
            except (OSError, EOFError, zipfile.BadZipFile, ValueError) as exc:
                if str(exc).startswith(str(path)):
                    raise
                raise ValueError(f"{path}: member {k!r} is not a readable array ({exc})") from None
            header[k] = (arr.shape, arr.dtype)
    return header, meta


_ST_DTYPES = {"F32": np.dtype(np.float32), "F64": np.dtype(np.float64), "I64": np.dtype(np.int64),
              "I32": np.dtype(np.int32), "F16": np.dtype(np.float16), "BF16": "bfloat16"}  # fmt: skip


def _check_header(where: str, header: Mapping[str, tuple], meta: Mapping[str, str]):
    """Keys, shapes and dtypes of the tensors, and the metadata; returns the parsed settings."""
    missing = [k for k in REQUIRED_TENSORS if k not in header]
    if missing:
        raise ValueError(
            f"{where}: missing tensor key(s) {', '.join(missing)}; a shard holds p and q"
        )
    unknown = [k for k in header if k not in REQUIRED_TENSORS + OPTIONAL_TENSORS]
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; tensors are "
            f"{', '.join(REQUIRED_TENSORS + OPTIONAL_TENSORS)} and metadata "
            f"{', '.join(METADATA_KEYS)}"
        )
    T, top_k, top_p, vocab = _settings(meta, where)
    shape_p = tuple(header["p"][0])
    if len(shape_p) != 2 or shape_p[0] < 1 or shape_p[1] < 1:
        raise ValueError(f"{where}: key 'p' has shape {shape_p}; expected (m, V) with m, V >= 1")
    m, V = shape_p
    for k, (shape, dtype) in header.items():
        want = (m, V) if k in _ROWS else (m,)
        if tuple(shape) != want:
            hint = (
                "p and q must cover the same vocabulary" if k == "q" else "one entry per row of p"
            )
            raise ValueError(
                f"{where}: key {k!r} has shape {tuple(shape)} but p has {shape_p}; {hint}"
            )
        if k in _ROWS and dtype not in _FLOATS:
            hint = (
                " in native (little-endian) byte order, e.g. a.astype('<f8')"
                if getattr(dtype, "byteorder", "=") == ">"
                else ""
            )
            raise ValueError(
                f"{where}: key {k!r} has dtype {dtype}; store float32 or float64{hint}"
            )
        if k in _INTS and not (isinstance(dtype, np.dtype) and dtype.kind in "iu"):
            raise ValueError(f"{where}: key {k!r} has dtype {dtype}; store integers (int64)")
    if vocab != V:
        raise ValueError(f"{where}: metadata 'vocab_size' is {vocab} but p has V = {V} columns")
    if ("logits_p" in header) != ("logits_q" in header):
        raise ValueError(f"{where}: store both logits_p and logits_q, or neither")
    return T, top_k, top_p, vocab


# -- rows ------------------------------------------------------------------------------------


def _read_rows(path: Path, keys: tuple[str, ...], start: int, stop: int) -> dict[str, np.ndarray]:
    if path.suffix == ".safetensors":
        with _safetensors().safe_open(str(path), framework="numpy") as fh:
            return {k: np.asarray(fh.get_slice(k)[start:stop]) for k in keys}
    with np.load(path, allow_pickle=False) as npz:
        return {k: np.array(_npz_member(path, k, npz)[start:stop]) for k in keys}


def _check_rows(where: str, raw: Mapping[str, np.ndarray], start: int) -> dict[str, np.ndarray]:
    """Validate rows with the package's validator; errors name the file, key and global row."""
    out = dict(raw)
    for key in ("p", "q"):
        a = np.asarray(raw[key])
        try:
            out[key] = np.atleast_2d(V_.prob_batch(a, key))
        except ValueError:
            for i, row in enumerate(a):
                try:
                    V_.prob_vector(row, f"{key}[{start + i}]")
                except ValueError as exc:
                    raise ValueError(f"{where}: {exc}") from None
            raise  # pragma: no cover - prob_batch and prob_vector agree
    V = out["p"].shape[1]
    for key in ("logits_p", "logits_q"):
        if key in raw:
            a = np.asarray(raw[key], dtype=np.float64)
            bad = np.isnan(a).any(axis=1) | np.isposinf(a).any(axis=1) | ~np.isfinite(a).any(axis=1)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"{where}: {key}[{start + i}] has NaN, +inf or no finite entry; logits must be "
                    "real numbers (-inf allowed for masked tokens)"
                )
            out[key] = a
    if "token" in raw:
        t = np.asarray(raw["token"])
        bad = (t < 0) | (t >= V)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{where}: token[{start + i}] is {t[i]}; token ids lie in [0, {V})")
    return out


def _npz_member(path: Path, key: str, npz: Any) -> np.ndarray:
    """A memory map of an uncompressed ``.npz`` member (compressed members are read whole)."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(f"{key}.npy")
        if info.compress_type != zipfile.ZIP_STORED:
            return npz[key]
        with open(path, "rb") as fh:
            fh.seek(info.header_offset)
            local = fh.read(30)
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            fh.seek(info.header_offset + 30 + name_len + extra_len)
            version = np.lib.format.read_magic(fh)
            if version not in ((1, 0), (2, 0)):
                return npz[key]
            read = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read(fh)
            offset = fh.tell()
    if dtype.hasobject or fortran:
        return npz[key]
    if int(np.prod(shape)) == 0:
        return np.empty(shape, dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
