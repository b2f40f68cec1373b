"""Helpers shared by the CLI commands: reading vectors and reporting bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
import typer

F = TypeVar("F", bound=Callable[..., Any])


def read_vector(text: str | None, name: str) -> Any:
    """Read a vector from a comma list (``"0.5,0.5"`` or ``"1/2,1/2"``) or a .npy/.json file.

    Rational entries (containing ``/``) are kept as strings so the exact methods see rationals.
    """
    if text is None:
        return None
    path = Path(text)
    if text.endswith((".npy", ".json")):
        if not path.exists():
            raise ValueError(f"--{name}: file {text} does not exist")
        if text.endswith(".npy"):
            return np.load(path, allow_pickle=False)
        return json.loads(path.read_text())
    parts = [s.strip() for s in text.split(",") if s.strip()]
    if not parts:
        raise ValueError(f"--{name}: give a comma-separated list of probabilities or a file")
    if any("/" in s for s in parts):
        return parts
    try:
        return [float(s) for s in parts]
    except ValueError:
        raise ValueError(
            f"--{name}: cannot read {text!r}; give numbers like 0.2,0.8 or 1/5,4/5"
        ) from None


def bad_input_exits_2(func: F) -> F:
    """Decorator for a command: a ValueError prints one line and exits with code 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


# -- options shared by the commands that take one instance (crosscheck, solve) ---------------
SCHEME_HELP = "with | without | conditional-poisson | product | greedy | spechub"

POption = Annotated[
    str | None,
    typer.Option("--p", help="Target p: comma list (0.2,0.8 or 1/5,4/5) or .npy/.json."),
]
QOption = Annotated[
    list[str] | None,
    typer.Option(
        "--q",
        help="Draft q: comma list or .npy/.json. For --scheme product repeat it once "
        "per draft, or give a .json list of lists.",
    ),
]
NOption = Annotated[int | None, typer.Option("-n", "--drafts", help="Number of drafts.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def check_drafts_option(n: int | None) -> None:
    """Reject ``-n`` below 1 with the validator's kind of message."""
    if n is not None and n < 1:
        raise ValueError(f"-n: the number of drafts must be >= 1, got {n}")
