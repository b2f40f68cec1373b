r"""The built-in offline study: two byte-level n-gram language models of real text.

Every Python installation carries the same kind of text: the documentation of its standard
library.  :func:`corpus` concatenates the docstrings of :data:`MODULES` (module, public classes
and functions, public methods; in a fixed order) — about 260 kB of English prose and examples.
From it the package builds, in well under a second:

- the **target**: an interpolated absolute-discounting byte model of order
  :data:`TARGET_ORDER` (context of 5 bytes),
- the **draft**: the same construction of order :data:`DRAFT_ORDER` (context of 2 bytes),

.. math::

   P_k(w \mid h) = \frac{\max(c(h w) - d, 0)}{c(h)}
   + \frac{d\, N_{1+}(h\,\cdot)}{c(h)}\, P_{k-1}(w \mid h'), \qquad
   P_0(w) = \tfrac{1}{256},

with :math:`h'` the context without its first byte, :math:`N_{1+}(h\,\cdot)` the number of
distinct bytes seen after h, and :math:`P_k = P_{k-1}` for contexts never seen.  Both are
trained on the first 90 % of the corpus; the study's positions are consecutive bytes of the
held-out last 10 % (teacher forcing: ``token`` is the text's next byte, ``position`` its offset
in its sequence of :data:`SEQUENCE_LENGTH` bytes).  V = 256 (bytes).  The shards hold the rows
at T = 1 and the log-probabilities as logits, so reports may re-temper them.

The numbers depend (slightly) on the Python version, whose docstrings differ, and on nothing
else: the docstrings are read in a fresh interpreter (``python -I -S``), so libraries imported
by the caller (torch, transformers patch ``inspect`` and ``logging``) do not change them, and
the caller's ``-OO`` does not strip them.  Where the interpreter has no docstrings at all the
standard library's source files are used instead.

Examples
--------
>>> rows = demo_rows(positions=4)
>>> rows["p"].shape, bool(abs(rows["q"].sum(axis=1) - 1).max() < 1e-12)
((4, 256), True)
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path

import numpy as np

from ..io import make_metadata, write_shard

__all__ = [
    "MODULES",
    "TARGET_ORDER",
    "DRAFT_ORDER",
    "DISCOUNT",
    "SEQUENCE_LENGTH",
    "ByteNGram",
    "corpus",
    "demo_rows",
    "demo_shards",
]

#: Standard-library modules whose documentation is the corpus (pure-Python modules).
MODULES: tuple[str, ...] = tuple(
    "argparse ast calendar collections contextlib dataclasses difflib email.message fractions "
    "functools heapq inspect ipaddress json logging os pathlib pickle random shutil statistics "
    "string subprocess tarfile textwrap threading typing unittest urllib.parse zipfile".split()
)
#: n-gram order of the target (context of order − 1 bytes) and of the draft.
TARGET_ORDER: int = 6
DRAFT_ORDER: int = 3
#: Absolute discount d of both models.
DISCOUNT: float = 0.75
#: Bytes per held-out sequence.
SEQUENCE_LENGTH: int = 128
#: Share of the corpus used for training (the rest is held out).
TRAIN_SHARE: float = 0.9


#: ``collect(names)``: the docstrings of the named modules joined by blank lines (module, then
#: the public classes and functions defined there, by name, each class's public methods); run
#: as a script it writes them for the modules of ``sys.argv[1:]`` to stdout (UTF-8).
_SCRIPT = """
import importlib, inspect, sys, warnings

def docstrings(mod):
    out = [inspect.getdoc(mod) or ""]
    for name in sorted(vars(mod)):
        obj = vars(mod)[name]
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out.append(inspect.getdoc(obj) or "")
        if inspect.isclass(obj):
            for meth_name, meth in sorted(vars(obj).items()):
                if not meth_name.startswith("_") and inspect.isfunction(meth):
                    out.append(inspect.getdoc(meth) or "")
    return [d for d in out if d]

def collect(names):
    parts = []
    with warnings.catch_warnings():  # e.g. typing.io's deprecation on reading its docstring
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in names:
            parts += docstrings(importlib.import_module(name))
    return "\\n\\n".join(parts)

if __name__ == "__main__":
    sys.stdout.buffer.write(collect(sys.argv[1:]).encode("utf-8"))
"""


def _docstring_text() -> str:
    """The docstrings of :data:`MODULES` as a fresh interpreter sees them (``python -I -S``: no
    site packages, no environment variables, docstrings kept whatever the caller's ``-OO``).

    In-process introspection would depend on what the caller imported: torch replaces
    ``inspect.getsourcefile`` and transformers adds ``logging.Logger.warning_once``, and both
    changed the corpus (and every figure of the study) when imported first.  Where no
    subprocess can be started, the same code runs here, with a warning saying so.
    """
    try:
        run = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _SCRIPT, *MODULES],
            capture_output=True, check=True, timeout=120,
        )  # fmt: skip
        return run.stdout.decode("utf-8")
    except (OSError, subprocess.SubprocessError) as exc:
        warnings.warn(
            f"demo: could not run a fresh interpreter for the corpus ({exc}); reading the "
            "docstrings in this process, where imported libraries may have changed them",
            RuntimeWarning,
            stacklevel=3,
        )
    ns: dict = {"__name__": "mdsd_ot_demo_corpus"}
    exec(compile(_SCRIPT, "<demo corpus>", "exec"), ns)  # the same code, in this process
    return ns["collect"](MODULES)


@functools.cache
def corpus() -> bytes:
    """The standard library's documentation of :data:`MODULES` (UTF-8), or its sources
    (computed once per process, in a fresh interpreter: :func:`_docstring_text`)."""
    text = _docstring_text()
    if len(text) < 50_000:  # docstrings stripped (this Python's -OO build): read the sources
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        files = [stdlib / (m.replace(".", os.sep) + ".py") for m in MODULES]
        text = "\n\n".join(f.read_text(encoding="utf-8") for f in files if f.is_file())
    if len(text) < 50_000:
        raise RuntimeError(
            "demo: this Python has neither docstrings nor sources of its standard library; "
            "run without -OO"
        )
    return text.encode("utf-8")


def _context_ids(data: np.ndarray, at: np.ndarray, k: int) -> np.ndarray:
    """Integer id of the k bytes before each index of ``at`` (base 256)."""
    ids = np.zeros(len(at), dtype=np.int64)
    for j in range(k, 0, -1):
        ids = ids * 256 + data[at - j]
    return ids


class ByteNGram:
    """An interpolated absolute-discounting byte model (module docstring).

    Parameters
    ----------
    data : bytes
        Training text.
    order : int
        n-gram order (context of ``order - 1`` bytes), 1 to 7.
    discount : float
        The absolute discount d, in (0, 1).
    """

    def __init__(self, data: bytes, order: int, discount: float = DISCOUNT):
        if not 1 <= int(order) <= 7:
            raise ValueError(f"order: must be in 1..7, got {order}")
        if not 0 < discount < 1:
            raise ValueError(f"discount: must be in (0, 1), got {discount}")
        self.order, self.discount = int(order), float(discount)
        arr = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
        self.levels = []
        for k in range(self.order):
            at = np.arange(k, len(arr))
            keys, counts = np.unique(_context_ids(arr, at, k) * 256 + arr[at], return_counts=True)
            ctx, inv = np.unique(keys // 256, return_inverse=True)
            totals = np.bincount(inv, weights=counts)
            types = np.bincount(inv).astype(np.float64)
            self.levels.append((keys, counts.astype(np.float64), ctx, totals, types))

    def probs(self, data: bytes | np.ndarray, at: np.ndarray) -> np.ndarray:
        """Next-byte distributions (len(at), 256) given the bytes of ``data`` before each index."""
        arr = np.frombuffer(data, np.uint8).astype(np.int64) if isinstance(data, bytes) else data
        at = np.asarray(at, dtype=np.int64)
        if at.size and at.min() < self.order - 1:
            raise ValueError(f"at: positions need {self.order - 1} bytes of context")
        m, d = len(at), self.discount
        P = np.full((m, 256), 1.0 / 256)
        for k, (keys, counts, ctx, totals, types) in enumerate(self.levels):
            h = _context_ids(arr, at, k)
            j = np.minimum(np.searchsorted(ctx, h), len(ctx) - 1)
            seen = ctx[j] == h
            rows = np.flatnonzero(seen)
            lo = np.searchsorted(keys, h[rows] * 256)
            hi = np.searchsorted(keys, h[rows] * 256 + 256)
            lens = hi - lo
            idx = (
                np.arange(lens.sum())
                - np.repeat(np.cumsum(lens) - lens, lens)
                + np.repeat(lo, lens)
            )
            C = np.zeros((len(rows), 256))
            C[np.repeat(np.arange(len(rows)), lens), keys[idx] % 256] = counts[idx]
            tot, typ = totals[j[rows]][:, None], types[j[rows]][:, None]
            P[rows] = np.maximum(C - d, 0.0) / tot + d * typ / tot * P[rows]
        return P / P.sum(axis=1, keepdims=True)


def demo_rows(positions: int = 1024) -> dict[str, np.ndarray]:
    """The study's rows: ``p``, ``q``, ``logits_p``, ``logits_q``, ``token``, ``position``,
    ``sequence`` (float64 / int64) for the first ``positions`` held-out bytes."""
    if int(positions) < 1:
        raise ValueError(f"positions: must be >= 1, got {positions}")
    data = corpus()
    split = int(len(data) * TRAIN_SHARE)
    if int(positions) > len(data) - split:
        raise ValueError(f"positions: at most {len(data) - split} held-out bytes, got {positions}")
    target = ByteNGram(data[:split], TARGET_ORDER)
    draft = ByteNGram(data[:split], DRAFT_ORDER)
    at = split + np.arange(int(positions))
    arr = np.frombuffer(data, np.uint8).astype(np.int64)
    P, Q = target.probs(arr, at), draft.probs(arr, at)
    k = np.arange(int(positions))
    return {
        "p": P,
        "q": Q,
        "logits_p": np.log(P),
        "logits_q": np.log(Q),
        "token": arr[at],
        "position": k % SEQUENCE_LENGTH,
        "sequence": k // SEQUENCE_LENGTH,
    }


def demo_shards(directory: str | os.PathLike, positions: int = 1024, shards: int = 2) -> list[Path]:
    """Write the study as ``shards`` shards (``demo-00000.safetensors`` …) into ``directory``."""
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"directory: {d} does not exist; create it first")
    rows = demo_rows(positions)
    meta = make_metadata(
        f"byte {TARGET_ORDER}-gram (absolute discounting d={DISCOUNT}) of the standard library's docs",
        f"byte {DRAFT_ORDER}-gram (absolute discounting d={DISCOUNT}) of the standard library's docs",
        temperature=1.0, top_k=0, top_p=1.0, vocab_size=256,
    )  # fmt: skip
    out = []
    for j, part in enumerate(np.array_split(np.arange(int(positions)), max(1, int(shards)))):
        if part.size:
            out.append(
                write_shard(
                    d / f"demo-{j:05d}.safetensors",
                    metadata=meta,
                    **{key: v[part] for key, v in rows.items()},
                )  # fmt: skip
            )
    return out
