"""``mdsd-ot solve``: α*, an optimal set H* and the solve time for one instance.

``--plan FILE`` writes the transport plan of methods that yield one: a dense plan (shape
``(V,) + (V,)*n``, ``plan[i, ī]`` = mass moved from target token i to draft tuple ī) as ``.npy``
(float64) or ``.json`` (nested lists, exact rationals as ``"a/b"`` strings); a sparse plan
(``{(i, ī): mass}`` from the max-flow forms, ``{(i, S): mass}`` from the set-reduced form) as
``.json``: ``{"format": "sparse", "entries": [{"i": i, "tuple": [...], "mass": m}, ...]}`` with
``"S"`` (the set of drafted tokens) in place of ``"tuple"`` for set-reduced plans.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from ..api import DEFAULT_METHOD, solve
from ..result import Result
from ._common import (
    SCHEME_HELP,
    JsonOption,
    NOption,
    POption,
    QOption,
    bad_input_exits_2,
    check_drafts_option,
)
from .crosscheck import instance_from_options

__all__ = ["register", "write_plan"]


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
    if plan is None:
        raise ValueError(
            f"--plan: method {method!r} returns no transport plan; use --method primal, "
            "bmatching, maxflow or reduced"
        )
    if path.suffix not in (".npy", ".json"):
        raise ValueError(f"--plan: give a file name ending in .npy or .json, got {str(path)!r}")
    if isinstance(plan, Mapping):
        if path.suffix == ".npy":
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
        path.write_text(json.dumps({"format": "sparse", "method": method, "entries": entries}))
        return path
    arr = np.asarray(plan)
    if path.suffix == ".npy":
        np.save(path, arr.astype(np.float64), allow_pickle=False)
    else:
        data = np.vectorize(_jsonable, otypes=[object])(arr).tolist() if arr.size else []
        path.write_text(
            json.dumps(
                {"format": "dense", "method": method, "shape": list(arr.shape), "plan": data}
            )
        )
    return path


def _summary(res: Result) -> dict[str, Any]:
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
        out["alpha_exact"] = str(res.alpha_exact)
    return out


def register(app: typer.Typer) -> None:
    """Add the ``solve`` command to ``app``."""

    @app.command("solve")
    @bad_input_exits_2
    def solve_cmd(
        p: POption = None,
        q: QOption = None,
        n: NOption = None,
        scheme: Annotated[
            str,
            typer.Option("--scheme", help=SCHEME_HELP),
        ] = "with",
        method: Annotated[
            str, typer.Option("--method", help="A method of mdsd_ot.METHODS, or auto.")
        ] = DEFAULT_METHOD,
        plan: Annotated[
            str | None,
            typer.Option("--plan", help="Write the transport plan to this .npy or .json file."),
        ] = None,
        as_json: JsonOption = False,
    ) -> None:
        """Solve one instance: print α*, an optimal set H* and the time."""
        check_drafts_option(n)
        inst = instance_from_options(p, q, n, scheme)
        if plan is not None and Path(plan).suffix not in (".npy", ".json"):
            raise ValueError(f"--plan: give a file name ending in .npy or .json, got {plan!r}")
        res = solve(inst.p, inst.draft, method=method)
        out = _summary(res)
        if plan is not None:
            out["plan"] = str(write_plan(res.plan, plan, res.method))
        if as_json:
            out.update(inst.spec())
            typer.echo(json.dumps(out))
            return
        exact = f" = {res.alpha_exact}" if res.alpha_exact is not None else ""
        typer.echo(f"instance: {inst.label}")
        typer.echo(f"α* = {res.alpha:.15g}{exact}")
        typer.echo(f"H* = {{{', '.join(map(str, out['H']))}}}")
        typer.echo(f"method: {res.method} ({res.status}), {1e3 * res.seconds:.2f} ms")
        if plan is not None:
            typer.echo(f"plan written to {out['plan']}")
