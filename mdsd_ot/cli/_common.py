"""What every command shares: the grammar's options, exit codes and the error handler.

The grammar (``docs/cli.md``): ``--p``/``--q`` (inline or a file; ``--p-file``/``--q-file`` are
the same options), ``-n``/``--drafts``, ``--scheme`` (names and help from
:data:`mdsd_ot.drafts.SCHEMES`), ``--seed``, ``--json``, ``--out``.

Exit codes: 0 success, 1 a check failed (a disagreement, a claim, a witness), 2 bad input (one
line on stderr naming the option), 3 an internal error (one line; ``--debug`` shows the
traceback), 130 interrupted, 141 stdout closed by its reader (``| head``; nothing printed).

Examples
--------
>>> one_line("instance too large:\\n  needs 10 entries")
'instance too large: needs 10 entries'
>>> describe_os_error(FileNotFoundError(2, "No such file or directory", "x.npy"))
'x.npy: No such file or directory'
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from ..drafts import scheme_help
from ._bounds import MAX_DEPTH, MAX_SAMPLES
from ._files import read_vector

__all__ = [
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_BROKEN_PIPE",
    "stdout_closed",
    "DEBUG_ENV",
    "DEFAULT_DRAFTS",
    "SCHEME_HELP",
    "cli_command",
    "cli_names",
    "option_names",
    "option_os_errors",
    "bad_input_exits_2",
    "set_debug",
    "debug_enabled",
    "one_line",
    "strict_json",
    "describe_os_error",
    "fail",
    "read_vector",
    "POption",
    "QOption",
    "NOption",
    "JsonOption",
    "SeedOption",
    "OutOption",
    "check_drafts_option",
]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
#: The reader of stdout closed it (``| head``): 128 + SIGPIPE, quietly.
EXIT_BROKEN_PIPE = 141

#: Set this environment variable (to anything but "" or "0") for tracebacks, as ``--debug`` does.
DEBUG_ENV = "MDSD_OT_DEBUG"

#: The number of drafts when ``-n`` is not given (SpecHub always uses 2).
DEFAULT_DRAFTS = 2

#: ``--scheme`` help: one line per registered law, from the registry (never a hand-written list).
SCHEME_HELP = "Draft law. " + scheme_help()

_STATE = {"debug": os.environ.get(DEBUG_ENV, "") not in ("", "0")}


def set_debug(on: bool) -> None:
    """Let errors raise with their traceback (``--debug``) instead of one line."""
    _STATE["debug"] = bool(on)


def debug_enabled() -> bool:
    """Whether ``--debug`` (or :data:`DEBUG_ENV`) asked for tracebacks."""
    return _STATE["debug"]


def one_line(text: Any) -> str:
    """The message on one line (whitespace runs, newlines included, become one space)."""
    return " ".join(str(text).split())


def strict_json(obj: Any) -> str:
    """``obj`` as standard JSON (indent 2): a non-finite float becomes ``null``, since
    ``Infinity`` and ``NaN`` are not JSON and strict parsers refuse them.

    Examples
    --------
    >>> print(strict_json({"delta": float("inf"), "p": [0.5, float("nan")]}).replace("\\n", " "))
    {   "delta": null,   "p": [     0.5,     null   ] }
    """
    import json
    import math

    def clean(x: Any) -> Any:
        if isinstance(x, float):
            return x if math.isfinite(x) else None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(obj), indent=2, allow_nan=False)


def describe_os_error(exc: OSError) -> str:
    """``FILE: reason`` for an operating-system error (missing file, permission, disk full)."""
    reason = exc.strerror or one_line(exc) or type(exc).__name__
    name = exc.filename if exc.filename is not None else ""
    return f"{name}: {reason}" if name else reason


def fail(message: Any, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``error: message`` as one line on stderr and exit with ``code``."""
    typer.echo(f"error: {one_line(message)}", err=True)
    raise typer.Exit(code)


def cli_names(exc: ValueError, names: dict[str, str]) -> ValueError:
    """``exc`` with its leading argument name replaced by the option's (``p[0]:`` → ``--p[0]:``).

    The validators start every message with the argument's name (``p``, ``q``, ``method``);
    ``names`` maps those to the command-line options.  Other messages are returned unchanged.

    Examples
    --------
    >>> str(cli_names(ValueError("p[3]: entries sum to 1.1"), {"p": "--p"}))
    '--p[3]: entries sum to 1.1'
    >>> str(cli_names(ValueError("pq: other"), {"p": "--p"}))
    'pq: other'
    """
    msg = str(exc)
    for arg in sorted(names, key=len, reverse=True):
        if msg.startswith((f"{arg}:", f"{arg}[")):
            return ValueError(names[arg] + msg[len(arg) :])
    return exc


@contextmanager
def option_names(**names: str) -> Iterator[None]:
    """Rename the leading argument of a :class:`ValueError` raised in the block (:func:`cli_names`).

    Examples
    --------
    >>> with option_names(p="--p"):
    ...     raise ValueError("p: is empty")
    Traceback (most recent call last):
    ...
    ValueError: --p: is empty
    """
    try:
        yield
    except ValueError as exc:
        new = cli_names(exc, names)
        if new is exc:
            raise
        raise new from exc


@contextmanager
def option_os_errors(option: str) -> Iterator[None]:
    """An :class:`OSError` raised in the block becomes a ValueError naming ``option`` and the file
    (for writers outside :mod:`mdsd_ot._outputs`, e.g. the plots of ``--plot``).

    Examples
    --------
    >>> with option_os_errors("--plot"):
    ...     raise FileNotFoundError(2, "No such file or directory", "/proc/x")
    Traceback (most recent call last):
    ...
    ValueError: --plot: cannot write /proc/x (No such file or directory)
    """
    try:
        yield
    except OSError as exc:
        what = exc.filename if exc.filename is not None else "the output"
        raise ValueError(f"{option}: cannot write {what} ({exc.strerror or exc})") from exc


def stdout_closed() -> int:
    """Quiet exit when the reader of stdout went away (``mdsd-ot solve --full | head``).

    As the Python documentation advises for SIGPIPE: point stdout at ``os.devnull``, so that
    the interpreter's final flush does not raise again, and print nothing.  Returns
    :data:`EXIT_BROKEN_PIPE` (128 + SIGPIPE, the status a shell reports for a process that
    SIGPIPE ended).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's captured stdout)
        pass
    return EXIT_BROKEN_PIPE


def _traceback_if_debug(code: int) -> None:
    """With ``--debug``: print the exception being handled with its traceback on stderr and
    exit with the code the one-line report would have had (2 bad input, 3 internal error)."""
    if debug_enabled():
        traceback.print_exc()
        raise typer.Exit(code)


def cli_command(func: F) -> F:
    """Decorator of every command: no traceback ever reaches the user.

    A :class:`ValueError` (bad input: the validators name the argument and the fix) or an
    :class:`OSError` (a file problem) prints one line and exits 2; any other exception is a bug:
    one line, the hint ``run with --debug for the traceback``, exit 3.  With ``--debug`` the
    traceback is printed and the exit code is the same.
    """

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # typer's own control flow and usage errors
        except KeyboardInterrupt:
            _traceback_if_debug(EXIT_INTERRUPTED)
            fail("interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:  # stdout closed by its reader: not an error, nothing to print
            raise typer.Exit(stdout_closed()) from None
        except ValueError as exc:
            _traceback_if_debug(EXIT_BAD_INPUT)
            fail(exc)
        except OSError as exc:
            _traceback_if_debug(EXIT_BAD_INPUT)
            fail(describe_os_error(exc))
        except MemoryError:
            _traceback_if_debug(EXIT_BAD_INPUT)
            fail("out of memory; give a smaller input (fewer rows, a smaller vocabulary or n)")
        except Exception as exc:  # noqa: BLE001 - the last-resort handler
            _traceback_if_debug(EXIT_INTERNAL)
            fail(
                f"internal error ({type(exc).__name__}: {one_line(exc)}); run with --debug for "
                "the traceback",
                EXIT_INTERNAL,
            )

    return wrapper  # type: ignore[return-value]


#: The old name of :func:`cli_command` (kept: other modules and tests use it).
bad_input_exits_2 = cli_command


# -- the options of the grammar -------------------------------------------------------------
POption = Annotated[
    str | None,
    typer.Option(
        "--p",
        "--p-file",
        help="Target p: a comma list (0.2,0.8 or 1/5,4/5) or a file (.npy, .npz, .json, .pt, "
        ".safetensors).",
    ),
]
QOption = Annotated[
    list[str] | None,
    typer.Option(
        "--q",
        "--q-file",
        help="Draft q: a comma list or a file, as --p. For a law with one q per draft (see "
        "--scheme) repeat it once per draft, or give a file holding one q per row.",
    ),
]
NOption = Annotated[
    int | None,
    typer.Option(
        "-n",
        "--drafts",
        # the default is None (not given) in the code; a string show_default prints "(2)"
        help=f"Number of drafts. \\[default: {DEFAULT_DRAFTS}]",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the randomness, in [0, 2^63).")]
SamplesOption = Annotated[
    int,
    typer.Option(
        "--samples", help=f"Draft tuples per position when simulating, in [1, {MAX_SAMPLES:,}]."
    ),
]
DepthOption = Annotated[
    int,
    typer.Option(
        "--depth", help=f"Draft depth γ of the tokens/call column, in [0, {MAX_DEPTH:,}]."
    ),
]
OutOption = Annotated[
    str | None, typer.Option("--out", help="Also write the full result (JSON) to this file.")
]


def check_drafts_option(n: int | None) -> None:
    """Reject ``-n`` outside [1, MAX_DRAFTS] with the validator's kind of message."""
    from ._bounds import check_drafts

    if n is not None:
        check_drafts(n)
