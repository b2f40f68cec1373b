"""The ``mdsd-ot`` command line (typer + rich); also ``python -m mdsd_ot``.

Each command lives in its own module with a ``register(app)`` function; this module assembles
them and adds the global options ``--version`` and ``--debug``.  Every command shares one grammar
and one error policy (:mod:`mdsd_ot.cli._common`, ``docs/cli.md``): bad input is one line on
stderr and exit code 2, never a traceback; an internal error is one line, the hint ``run with
--debug for the traceback`` and exit code 3.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from .._version import __version__
from ._common import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    debug_enabled,
    describe_os_error,
    one_line,
    set_debug,
    stdout_closed,
)

__all__ = ["app", "main", "COMMAND_MODULES"]

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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mdsd-ot {__version__}")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    version: Annotated[
        bool | None,
        typer.Option(
            "--version", is_eager=True, callback=_version, help="Print the version and exit."
        ),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help="Show the traceback of an error (anywhere on the command line)."
        ),
    ] = False,
) -> None:
    """Multi-draft speculative decoding as optimal transport."""
    if debug:
        set_debug(True)


def _take_debug(argv: list[str]) -> list[str]:
    """Remove ``--debug`` from anywhere before ``--`` (it is global); set debug mode if found."""
    out, rest = [], False
    for a in argv:
        if a == "--" or rest:
            rest = True
            out.append(a)
        elif a == "--debug":
            set_debug(True)
        else:
            out.append(a)
    return out


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app; every error becomes one line and an exit code.

    Usage errors and bad input exit 2, internal errors 3 (``--debug`` shows the traceback),
    an interrupt 130, a closed stdout (``| head``) 141 without a message.
    """
    args = _take_debug(list(sys.argv[1:] if argv is None else argv))
    try:
        rv = app(args=args, prog_name="mdsd-ot", standalone_mode=False)
        sys.stdout.flush()  # a closed pipe raises here, not in the interpreter's final flush
    except typer.TyperException as exc:  # usage errors: unknown option, bad integer, ...
        show = getattr(exc, "show", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and show is not None:
            show()
            sys.exit(0)
        msg = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
        typer.echo(f"error: {one_line(msg)}{hint}", err=True)
        sys.exit(getattr(exc, "exit_code", EXIT_BAD_INPUT) or EXIT_BAD_INPUT)
    except (KeyboardInterrupt, typer.Abort):
        if debug_enabled():
            raise
        typer.echo("error: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # stdout closed by its reader (| head): quietly
        sys.exit(stdout_closed())
    except ValueError as exc:  # raised outside a command (option callbacks)
        if debug_enabled():
            raise
        typer.echo(f"error: {one_line(exc)}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except OSError as exc:
        if debug_enabled():
            raise
        typer.echo(f"error: {describe_os_error(exc)}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except Exception as exc:  # noqa: BLE001 - the last-resort handler
        if debug_enabled():
            raise
        typer.echo(
            f"error: internal error ({type(exc).__name__}: {one_line(exc)}); run with --debug "
            "for the traceback",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(rv if isinstance(rv, int) else 0)
