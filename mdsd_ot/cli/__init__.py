"""The ``mdsd-ot`` command line (typer + rich).

Each command lives in its own module with a ``register(app)`` function; this module assembles
them.  Bad input (a :class:`ValueError` from the validators) becomes a one-line message and exit
code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer

app = typer.Typer(
    name="mdsd-ot",
    help="Multi-draft speculative decoding as optimal transport: exact and fast α*, "
    "verifiers, and the claims of the theory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Command modules of this package, each with ``register(app)``.
COMMAND_MODULES = (
    "crosscheck",
    "solve",
    "alpha",
    "claims",
    "gap",
    "report",
    "collect",
    "lossless",
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(app)


def main() -> None:
    """Console-script entry point: run the app, mapping bad input to exit code 2."""
    try:
        app(standalone_mode=True)
    except ValueError as exc:  # validators' messages name the argument and the fix
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
