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

__all__ = ["FORMAT", "encode", "decode", "save", "load", "frac"]

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
    if isinstance(x, dict):
        return {k: decode(v) for k, v in x.items()}
    if isinstance(x, list):
        return [decode(v) for v in x]
    return x


def save(path: str | Path, witnesses: dict[str, Any] | list[dict[str, Any]]) -> Path:
    """Write one witness (dict) or several (list) to ``path``."""
    path = Path(path)
    if isinstance(witnesses, list):
        body: dict[str, Any] = {"format": FORMAT, "witnesses": [encode(w) for w in witnesses]}
    else:
        body = {"format": FORMAT, **encode(witnesses)}
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path


def load(path: str | Path) -> list[dict[str, Any]]:
    """Read a witness file: a list of witness dicts (still in their JSON form)."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"--witness: file {path} does not exist")
    try:
        body = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"--witness: {path} is not JSON ({exc})") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ValueError(f"--witness: {path} is not a witness file (format {FORMAT!r} expected)")
    if "witnesses" in body:
        return list(body["witnesses"])
    return [{k: v for k, v in body.items() if k != "format"}]
