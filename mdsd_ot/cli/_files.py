"""Input and output files of the commands: every problem is one line naming the option and file.

Inputs (``--p``, ``--q`` and the other vector options) are a comma list (``0.2,0.8`` or
``1/5,4/5``: rationals stay exact) or a file: ``.npy``, ``.npz`` / ``.pt`` / ``.safetensors``
(one array, or one named after the option: ``p`` or ``q``), ``.json`` (a list, a list of lists,
or an object with a ``"p"`` / ``"q"`` list).  Missing
files, directories, corrupt or empty files, and non-real arrays are refused here.

Outputs are checked before any computation and written to a temporary name in the same
directory, then renamed: a failed or interrupted run never leaves a half-written file.  The
file helpers are the package's one home for output files, :mod:`mdsd_ot._outputs`
(:func:`check_output_file`, :func:`atomic_write`), re-exported here with :func:`write_text`;
:func:`check_output_dir` checks a directory option (``collect --out``, ``report --plot``).

Examples
--------
>>> read_vector("1/2, 1/2", "--p")
['1/2', '1/2']
>>> read_vector("0.25,0.75", "--q")
[0.25, 0.75]
>>> read_vector("0.5,x", "--p")
Traceback (most recent call last):
...
ValueError: --p: cannot read '0.5,x': give numbers like 0.2,0.8 or 1/5,4/5, or a file (.npy, .npz, .json, .pt, .safetensors)
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .._outputs import atomic_write, check_output_file, probe_directory

__all__ = [
    "INPUT_SUFFIXES",
    "read_vector",
    "read_array",
    "read_rows",
    "check_input_file",
    "check_output_file",
    "check_output_dir",
    "atomic_write",
    "write_text",
]

#: The file types an input option reads.
INPUT_SUFFIXES = (".npy", ".npz", ".json", ".pt", ".safetensors")


def _is_file_name(text: str) -> bool:
    return Path(text).suffix.lower() in INPUT_SUFFIXES or Path(text).exists()


def read_vector(text: str | None, option: str) -> Any:
    """Read an input option: a comma list, or a file (see the module docstring).

    Comma lists of rationals (an entry with ``/``) are returned as strings so that the exact
    methods see rationals; other lists as floats; files as arrays (numpy, or torch for ``.pt``),
    lists (``.json``) or nested lists.  ``option`` is the option's name as the user typed it
    (``"--p"``); a bare name (``"p"``) gets the ``--`` prefix.
    """
    if text is None:
        return None
    if not option.startswith("-"):
        option = f"--{option}"
    if not text.strip():
        raise ValueError(f"{option}: empty; give a comma-separated list of probabilities or a file")
    if _is_file_name(text):
        return read_array(Path(text), option)
    parts = [s.strip() for s in text.split(",")]
    if not any(parts):
        raise ValueError(f"{option}: give a comma-separated list of probabilities or a file")
    if "" in parts:
        raise ValueError(f"{option}: empty entry in {text!r}; give numbers like 0.2,0.8")
    if any("/" in s for s in parts):
        from fractions import Fraction

        try:
            for s in parts:
                Fraction(s)
        except (ValueError, ZeroDivisionError):
            raise ValueError(
                f"{option}: cannot read {text!r} as rationals; give entries like 1/5,4/5"
            ) from None
        return parts
    try:
        return [float(s) for s in parts]
    except ValueError:
        raise ValueError(
            f"{option}: cannot read {text!r}: give numbers like 0.2,0.8 or 1/5,4/5, or a file "
            f"({', '.join(INPUT_SUFFIXES)})"
        ) from None


def read_rows(text: str | Path, option: str) -> Any:
    """Read a (B, V) or (V,) array of rows for ``option``: a comma list (one row) or a file.

    Arrays and tensors are returned as read; lists (inline or ``.json``) become float64 arrays,
    rationals ``"a/b"`` included.

    Examples
    --------
    >>> read_rows("1/4,3/4", "--p").tolist()
    [0.25, 0.75]
    """
    obj = read_vector(str(text), option)
    if not isinstance(obj, list):
        return obj
    try:
        if all(isinstance(r, list) for r in obj):  # equal lengths: read_array checked
            return np.array([[_num(v) for v in r] for r in obj], dtype=np.float64)
        return np.array([_num(v) for v in obj], dtype=np.float64)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
        if str(exc).startswith(option):
            raise
        raise ValueError(
            f"{option}: cannot read {text} as rows of numbers ({type(exc).__name__}: {exc})"
        ) from None


def _num(v: Any) -> float:
    from fractions import Fraction

    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise TypeError(f"{v!r} is not a number")
    return float(Fraction(v)) if isinstance(v, str) else float(v)


def check_input_file(path: Path, option: str) -> Path:
    """Refuse a missing path, a directory, or an unreadable file (before reading it)."""
    if not path.exists():
        raise ValueError(f"{option}: file {path} does not exist")
    if path.is_dir():
        raise ValueError(f"{option}: {path} is a directory; give a file")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{option}: cannot read {path} (permission denied)")
    return path


def _pick(arrays: dict[str, Any], option: str, path: Path) -> Any:
    if not arrays:
        raise ValueError(f"{option}: {path} holds no arrays")
    if len(arrays) == 1:
        return next(iter(arrays.values()))
    name = option.lstrip("-").removesuffix("-file")
    if name in arrays:
        return arrays[name]
    raise ValueError(
        f"{option}: {path} holds arrays {sorted(arrays)}; store one array, or one named {name!r}"
    )


def _load(path: Path, option: str) -> Any:
    suffix = path.suffix.lower()
    what = f"{option}: cannot read {path} as {suffix}"
    if suffix == ".npy":
        try:
            return np.load(path, allow_pickle=False)
        except ValueError as exc:
            if "pickle" in str(exc).lower() or "object arrays" in str(exc).lower():
                raise ValueError(
                    f"{what} (it holds Python objects; save a numeric array)"
                ) from None
            raise ValueError(f"{what} ({_first_line(exc)})") from None
        except (OSError, EOFError) as exc:
            raise ValueError(f"{what} ({_first_line(exc) or 'truncated file'})") from None
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                return _pick({k: z[k] for k in z.files}, option, path)
        except ValueError as exc:
            if str(exc).startswith(option):
                raise
            raise ValueError(f"{what} ({_first_line(exc)})") from None
        except (OSError, EOFError, KeyError) as exc:
            raise ValueError(f"{what} ({_first_line(exc) or 'not a zip archive'})") from None
        except Exception as exc:  # zipfile.BadZipFile and friends
            raise ValueError(f"{what} ({type(exc).__name__}: {_first_line(exc)})") from None
    if suffix == ".json":
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{option}: {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg})"
            ) from None
        except UnicodeDecodeError:
            raise ValueError(f"{option}: {path} is not a UTF-8 text file") from None
        if isinstance(obj, dict):
            obj = _pick(obj, option, path)
        if not isinstance(obj, list):
            raise ValueError(
                f"{option}: {path} must hold a JSON list of probabilities (or a list of lists), "
                f"got a {type(obj).__name__}"
            )
        return obj
    if suffix == ".pt":
        torch = _torch(option, path)
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises RuntimeError, UnpicklingError, EOFError...
            first = _first_line(exc).split(". ")[0].rstrip(".")
            raise ValueError(f"{what} ({type(exc).__name__}: {first})") from None
        if isinstance(obj, dict):
            obj = _pick(obj, option, path)
        if not torch.is_tensor(obj):
            raise ValueError(
                f"{option}: {path} must hold a tensor (or a dict of tensors), got "
                f"{type(obj).__name__}"
            )
        if obj.layout != torch.strided:  # sparse, quantised or nested: no dense values
            raise ValueError(
                f"{option}: {path} holds a {str(obj.layout).removeprefix('torch.')} tensor; save "
                "a dense one (tensor.to_dense())"
            )
        return obj.detach()
    if suffix == ".safetensors":
        try:
            from safetensors.numpy import load_file
        except ImportError as exc:
            raise ValueError(
                f"{option}: {path} is a .safetensors file, which needs the safetensors "
                "package; pip install 'mdsd-ot[torch]'"
            ) from exc
        try:
            arrays = load_file(str(path))
        except Exception as exc:  # SafetensorError and friends
            raise ValueError(f"{what} ({_first_line(exc)})") from None
        return _pick(arrays, option, path)
    raise ValueError(
        f"{option}: unsupported file type {suffix or path.name!r}; use one of "
        f"{', '.join(INPUT_SUFFIXES)}"
    )


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def _torch(option: str, path: Path):
    try:
        import torch
    except ImportError as exc:
        raise ValueError(
            f"{option}: {path} is a .pt file, which needs PyTorch; install it with "
            "pip install 'mdsd-ot[torch]'"
        ) from exc
    return torch


def read_array(path: Path, option: str) -> Any:
    """Read one array from ``path`` and refuse empty and non-real ones, naming ``option``."""
    check_input_file(path, option)
    obj = _load(path, option)
    if isinstance(obj, list):
        if len(obj) == 0 or all(isinstance(r, list) and len(r) == 0 for r in obj):
            raise ValueError(f"{option}: {path} holds an empty list; give at least one probability")
        nested = [isinstance(r, list) for r in obj]
        if any(nested) and (not all(nested) or len({len(r) for r in obj}) > 1):
            raise ValueError(
                f"{option}: the rows of {path} have different lengths; give one list of "
                "probabilities or a list of rows of one length"
            )
        return obj
    shape = tuple(obj.shape)
    kind = _kind(obj)
    if kind not in ("f", "i", "u"):
        names = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes"}
        raise ValueError(
            f"{option}: {path} holds {names.get(kind, f'values of dtype {obj.dtype}')}; give "
            "real probabilities (a float array)"
        )
    if len(shape) == 0 or 0 in shape:
        raise ValueError(
            f"{option}: {path} holds an empty array of shape {shape}; give at least one row of "
            "probabilities"
        )
    return obj


def _kind(obj: Any) -> str:
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind
    dt = obj.dtype  # a torch tensor
    if dt.is_complex:
        return "c"
    if dt.is_floating_point:
        return "f"
    return "b" if str(dt) == "torch.bool" else "i"


# -- outputs (files: mdsd_ot._outputs, shared with the witness files, shards and figures) ---
def check_output_dir(path: str | Path, option: str) -> Path:
    """Check that ``path`` is a writable directory, or can be created as one; return it.

    Besides the permission bits, a file (or, for a missing ``path``, a directory) is created and
    removed there, so ``/proc/x`` or a read-only mount is refused before any computation.
    """
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"{option}: {path} exists and is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"{option}: cannot write to directory {path} (permission denied)")
        probe_directory(path, option)
        return path
    parent = path.parent
    while not parent.exists():  # mkdir(parents=True) creates the missing ones
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{option}: {parent} is not a directory, so {path} cannot be created")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{option}: cannot create {path} in {parent} (permission denied)")
    try:  # permission bits do not tell everything (/proc, read-only mounts): try it
        os.rmdir(tempfile.mkdtemp(prefix=".mdsd-ot.", suffix=".probe", dir=parent))
    except OSError as exc:
        raise ValueError(
            f"{option}: cannot create {path} ({exc.strerror or exc}); give a path in a writable "
            "directory"
        ) from None
    return path


def write_text(path: str | Path, option: str, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, option, lambda fh: fh.write(text), binary=False)
