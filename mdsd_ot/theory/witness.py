"""Witness files: counterexamples saved exactly (rationals as ``"a/b"`` strings) and reloaded.

A witness file is JSON::

    {"format": "mdsd-ot-witness/1", "claim": "T12b", "kind": "en_formula", ...instance...}

or ``{"format": "mdsd-ot-witness/1", "witnesses": [w1, w2, ...]}``.  Fractions are written as
``"a/b"`` strings, tuples as lists; :func:`decode` turns ``"a/b"`` strings back into Fractions.
``mdsd-ot claims --witness FILE`` recomputes each witness from its instance
(:func:`mdsd_ot.theory.claims.reproduce`).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .._outputs import atomic_write, check_output_file

__all__ = ["FORMAT", "encode", "decode", "save", "load", "frac", "check_output_path"]

FORMAT = "mdsd-ot-witness/1"


def encode(x: Any) -> Any:
    """JSON-ready copy: Fractions → ``"a/b"``, tuples/arrays → lists, numpy scalars → Python.

    Examples
    --------
    >>> encode({"q": (Fraction(1, 2), Fraction(1, 2)), "H": (0, 1)})
    {'q': ['1/2', '1/2'], 'H': [0, 1]}
    """
    if isinstance(x, Fraction):
        return f"{x.numerator}/{x.denominator}"
    if isinstance(x, dict):
        return {str(k): encode(v) for k, v in x.items()}
    if isinstance(x, list | tuple | np.ndarray):
        return [encode(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, frozenset | set):
        return sorted(encode(v) for v in x)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def frac(s: Any) -> Fraction:
    """Read one exact number (``"a/b"``, int or Fraction)."""
    return Fraction(s)


def decode(x: Any) -> Any:
    """Inverse of :func:`encode` for numbers: ``"a/b"`` strings become Fractions.

    Examples
    --------
    >>> decode({"q": ["1/2", "1/2"], "n": 2})
    {'q': [Fraction(1, 2), Fraction(1, 2)], 'n': 2}
    """
    if isinstance(x, str) and "/" in x:
        try:
            return Fraction(x)
        except ValueError:
            return x
        except ZeroDivisionError:
            raise ValueError(
                f"witness: {x!r} divides by zero; exact numbers are 'a/b' with b > 0"
            ) from None
    if isinstance(x, dict):
        return {k: decode(v) for k, v in x.items()}
    if isinstance(x, list):
        return [decode(v) for v in x]
    return x


def check_output_path(path: str | Path, option: str = "path") -> Path:
    """Check that ``path`` can be written (before any long computation) and return it.

    The package's output check (:func:`mdsd_ot._outputs.check_output_file`), suggesting
    ``witness.json`` when ``path`` is a directory.  Refused with a ValueError naming ``option``:
    a directory, a missing parent directory, a parent that is not a directory or that is not
    writable, an existing file that is not writable, a suffix other than ``.json``.

    Examples
    --------
    >>> check_output_path("/", "--out")
    Traceback (most recent call last):
    ...
    ValueError: --out: / is a directory; give a file name inside it (e.g. /witness.json)
    """
    return check_output_file(path, option, (".json",), example="witness.json")


def save(
    path: str | Path, witnesses: dict[str, Any] | list[dict[str, Any]], option: str = "path"
) -> Path:
    """Write one witness (dict) or several (list) to ``path``.

    The path is checked first (:func:`check_output_path`); the file is written to a temporary
    name in the same directory and renamed when complete
    (:func:`mdsd_ot._outputs.atomic_write`), so a failed write never leaves a half-written
    witness file; an :class:`OSError` is a ValueError naming ``option`` and the file.
    """
    path = check_output_path(path, option)
    if isinstance(witnesses, list):
        body: dict[str, Any] = {"format": FORMAT, "witnesses": [encode(w) for w in witnesses]}
    else:
        body = {"format": FORMAT, **encode(witnesses)}
    text = json.dumps(body, indent=2) + "\n"
    return atomic_write(path, option, lambda fh: fh.write(text), binary=False)


def load(path: str | Path) -> list[dict[str, Any]]:
    """Read a witness file: a list of witness dicts (still in their JSON form)."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"--witness: file {path} does not exist")
    if path.is_dir():
        raise ValueError(f"--witness: {path} is a directory; give a witness file")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"--witness: {path} is not JSON ({exc})") from None
    except OSError as exc:
        raise ValueError(f"--witness: cannot read {path} ({exc.strerror or exc})") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ValueError(f"--witness: {path} is not a witness file (format {FORMAT!r} expected)")
    if "witnesses" in body:
        ws = body["witnesses"]
        if not isinstance(ws, list) or not all(isinstance(w, dict) for w in ws):
            raise ValueError(f"--witness: {path}: 'witnesses' must be a list of objects")
        return list(ws)
    return [{k: v for k, v in body.items() if k != "format"}]
