"""``mdsd-ot solve``: α*, an optimal set H* and the solve time for one instance.

``--plan FILE`` writes the transport plan of methods that yield one: a dense plan (shape
``(V,) + (V,)*n``, ``plan[i, ī]`` = mass moved from target token i to draft tuple ī) as ``.npy``
(float64) or ``.json`` (nested lists, exact rationals as ``"a/b"`` strings); a sparse plan
(``{(i, ī): mass}`` from the max-flow forms, ``{(i, S): mass}`` from the set-reduced form) as
``.json``: ``{"format": "sparse", "entries": [{"i": i, "tuple": [...], "mass": m}, ...]}`` with
``"S"`` (the set of drafted tokens) in place of ``"tuple"`` for set-reduced plans.

An optimal set H* of more than :data:`H_PRINT_MAX` tokens is summarised (its size, its mass
P(H*) and Q(H*), its first and last tokens); ``--full`` prints every token and ``--out FILE``
writes the full result (JSON, with every token of H*).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from .._outputs import exact_text
from ..api import DEFAULT_METHOD, solve
from ..result import Result
from ._common import (
    SCHEME_HELP,
    JsonOption,
    NOption,
    OutOption,
    POption,
    QOption,
    check_drafts_option,
    cli_command,
    option_names,
)
from ._files import atomic_write, check_output_file, write_text
from .crosscheck import TableOption, instance_from_options

__all__ = ["register", "write_plan", "H_PRINT_MAX", "EXACT_PRINT_MAX", "set_summary"]

#: The text output prints an exact α* of at most this many characters (a law with n = 10,000
#: drafts has one of some 10,000 digits); --json and --out always carry it whole.
EXACT_PRINT_MAX: int = 400

#: Optimal sets with more tokens than this are summarised on the terminal (``--full``: all).
H_PRINT_MAX = 64
#: The methods whose result carries a transport plan (``--plan``); a test solves a small
#: instance with every registered method and checks this list against ``Result.plan``.
_PLAN_METHODS: tuple[str, ...] = (
    "primal", "primal-cvxpy", "emd", "bmatching", "maxflow", "maxflow-scipy", "reduced"
)  # fmt: skip
#: Tokens shown at each end of a summarised set.
H_ENDS = 5


def _jsonable(v: Any) -> Any:
    if isinstance(v, Fraction):
        return str(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating | float):
        return float(v)
    if isinstance(v, frozenset | set):
        return sorted(_jsonable(x) for x in v)
    if isinstance(v, tuple | list):
        return [_jsonable(x) for x in v]
    return v


def write_plan(plan: Any, path: str | Path, method: str = "") -> Path:
    """Write a plan to ``.npy`` (dense only) or ``.json`` (dense or sparse); return the path.

    Raises
    ------
    ValueError
        When the method gave no plan, the suffix is neither ``.npy`` nor ``.json``, or a sparse
        plan is asked for as ``.npy``.
    """
    path = Path(path)
    if plan is None:  # every method with a plan, named for the fix
        raise ValueError(
            f"--plan: method {method!r} returns no transport plan; use --method "
            + ", ".join(_PLAN_METHODS[:-1])
            + f" or {_PLAN_METHODS[-1]}"
        )
    if path.suffix.lower() not in (".npy", ".json"):
        raise ValueError(f"--plan: give a file name ending in .npy or .json, got {str(path)!r}")
    if isinstance(plan, Mapping):
        if path.suffix.lower() == ".npy":
            raise ValueError(
                f"--plan: method {method!r} returns a sparse plan {{(i, key): mass}}; "
                "write it to a .json file"
            )
        entries = []
        for key, mass in plan.items():
            if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], int | np.integer):
                # (i, draft tuple) for full forms, (i, frozenset S) for the set-reduced form
                name = "S" if isinstance(key[1], frozenset | set) else "tuple"
                entries.append({"i": int(key[0]), name: _jsonable(key[1]), "mass": _jsonable(mass)})
            else:
                entries.append({"key": _jsonable(key), "mass": _jsonable(mass)})
        body = {"format": "sparse", "method": method, "entries": entries}
        return write_text(path, "--plan", json.dumps(body))
    arr = np.asarray(plan)
    if path.suffix.lower() == ".npy":
        data64 = arr.astype(np.float64)
        return atomic_write(
            path, "--plan", lambda fh: np.save(fh, data64, allow_pickle=False), binary=True
        )
    data = np.vectorize(_jsonable, otypes=[object])(arr).tolist() if arr.size else []
    body = {"format": "dense", "method": method, "shape": list(arr.shape), "plan": data}
    return write_text(path, "--plan", json.dumps(body))


def set_summary(H: list[int], mass: float, q_mass: float) -> dict[str, Any]:
    """Size, mass P(H), Q(H) and the first and last tokens of an optimal set H (sorted).

    Examples
    --------
    >>> set_summary(list(range(100)), 0.75, 0.5)["first"]
    [0, 1, 2, 3, 4]
    """
    return {
        "size": len(H),
        "mass": float(mass),
        "Q": float(q_mass),
        "first": H[:H_ENDS],
        "last": H[-H_ENDS:] if len(H) > H_ENDS else [],
    }


def _summary(res: Result, p: np.ndarray) -> dict[str, Any]:
    H = [] if res.H is None else np.flatnonzero(res.H).tolist()
    out: dict[str, Any] = {
        "alpha": float(res.alpha),
        "H": H,
        "method": res.method,
        "status": res.status,
        "seconds": float(res.seconds),
        "accuracy": float(res.accuracy),
    }
    if res.alpha_exact is not None:
        out["alpha_exact"] = exact_text(res.alpha_exact)
    mass = float(p[H].sum()) if H else 0.0
    # α* = 1 + P(H*) − Q(H*) (subset form (8)), so Q(H*) = 1 + P(H*) − α*
    out["H_summary"] = set_summary(H, mass, 1.0 + mass - float(res.alpha))
    return out


def _set_text(out: dict[str, Any], full: bool) -> str:
    H, summ = out["H"], out["H_summary"]
    if full or len(H) <= H_PRINT_MAX:
        return f"H* = {{{', '.join(map(str, H))}}}"
    first, last = ", ".join(map(str, summ["first"])), ", ".join(map(str, summ["last"]))
    return (
        f"H* = {{{first}, …, {last}}}: {summ['size']:,} tokens, P(H*) = {summ['mass']:.6g}, "
        f"Q(H*) = {summ['Q']:.6g} (--full prints every token, --out FILE writes them)"
    )


def register(app: typer.Typer) -> None:
    """Add the ``solve`` command to ``app``."""

    @app.command("solve")
    @cli_command
    def solve_cmd(
        p: POption = None,
        q: QOption = None,
        n: NOption = None,
        scheme: Annotated[
            str,
            typer.Option("--scheme", help=SCHEME_HELP),
        ] = "with",
        table: TableOption = None,
        method: Annotated[
            str, typer.Option("--method", help="A method of mdsd_ot.METHODS, or auto.")
        ] = DEFAULT_METHOD,
        plan: Annotated[
            str | None,
            typer.Option("--plan", help="Write the transport plan to this .npy or .json file."),
        ] = None,
        full: Annotated[
            bool,
            typer.Option(
                "--full", help=f"Print every token of H* (default: a summary above {H_PRINT_MAX})."
            ),
        ] = False,
        as_json: JsonOption = False,
        out: OutOption = None,
    ) -> None:
        """Solve one instance: print α*, an optimal set H* and the time."""
        check_drafts_option(n)
        if plan is not None:
            check_output_file(plan, "--plan", (".npy", ".json"))
        if out is not None:
            check_output_file(out, "--out", (".json",))
            if plan is not None and Path(out).resolve() == Path(plan).resolve():
                raise ValueError("--out: give a file other than --plan's")
        inst = instance_from_options(p, q, n, scheme, table)
        with option_names(method="--method", p="--p", q="--q"):
            res = solve(inst.p, inst.draft, method=method)
        summary = _summary(res, inst.p.float)
        if plan is not None:
            summary["plan"] = str(write_plan(res.plan, plan, res.method))
        summary.update(inst.spec())
        if out is not None:
            write_text(out, "--out", json.dumps(summary) + "\n")
        shown = dict(summary)
        if not full and len(summary["H"]) > H_PRINT_MAX:
            del shown["H"]  # the summary stays; --full or --out give every token
            if len(inst.p) > H_PRINT_MAX:
                for key in ("p", "q", "qs", "table"):
                    shown.pop(key, None)
        if as_json:
            typer.echo(json.dumps(shown))
            return
        exact = ""
        if res.alpha_exact is not None:
            text = exact_text(res.alpha_exact)
            exact = (
                f" = {text}"
                if len(text) <= EXACT_PRINT_MAX
                else f" (exactly a fraction of {len(text):,} characters: --json or --out give it)"
            )
        typer.echo(f"instance: {inst.label}")
        typer.echo(f"α* = {res.alpha:.15g}{exact}")
        typer.echo(_set_text(summary, full))
        typer.echo(f"method: {res.method} ({res.status}), {1e3 * res.seconds:.2f} ms")
        if plan is not None:
            typer.echo(f"plan written to {summary['plan']}")
        if out is not None:
            typer.echo(f"result written to {out}")
