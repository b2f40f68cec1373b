"""``mdsd-ot crosscheck``: every exact formulation on the same instances (T1).

Three ways to choose the instances:

- no instance options: the built-in bank (:func:`mdsd_ot.reports.crosscheck.builtin_instances`),
  optionally filtered by ``--scheme`` and ``-n``;
- ``--p`` and ``--q``: one instance.  For ``--scheme product`` give ``--q`` once per draft
  (``--q 0.5,0.5 --q 0.9,0.1``), or one ``.json`` file holding a list of lists, or a single q
  with ``-n`` (the same q for every draft);
- ``--vocab V`` (and/or ``--trials``, ``--seed``): seeded random Dirichlet instances of size V.

Exit codes: 0 when every instance agrees within ``--tol``, 1 on a disagreement (or a crashed
method), 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from typing import Annotated, Any

import numpy as np
import typer
from rich.markup import escape

from ..drafts import make
from ..reports.crosscheck import (
    DEFAULT_TOL,
    CrosscheckReport,
    Instance,
    builtin_instances,
    crosscheck,
    make_instance,
    random_instances,
)
from ._common import (
    SCHEME_HELP,
    JsonOption,
    NOption,
    POption,
    QOption,
    bad_input_exits_2,
    check_drafts_option,
    read_vector,
)

__all__ = ["register", "instance_from_options", "render_report"]

CLI_SCHEMES = ("with", "without", "conditional-poisson", "product", "greedy", "spechub")


def _check_scheme(scheme: str) -> str:
    if scheme not in CLI_SCHEMES:
        raise ValueError(
            f"--scheme: unknown scheme {scheme!r}; choose one of {', '.join(CLI_SCHEMES)}"
        )
    return scheme


def _is_matrix(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim == 2
    return isinstance(x, list) and len(x) > 0 and all(isinstance(r, list) for r in x)


def instance_from_options(
    p: str | None, q: list[str] | None, n: int | None, scheme: str | None
) -> Instance:
    """Build one validated instance from the ``--p``, ``--q``, ``-n`` and ``--scheme`` options.

    ``--q`` may be repeated for ``--scheme product`` (one q per draft), or be a ``.json`` list of
    lists / a 2-D ``.npy`` array; every other scheme takes exactly one ``--q``.
    """
    scheme = _check_scheme(scheme or "with")
    if p is None:
        raise ValueError("--p: give the target distribution p (a comma list or a .npy/.json file)")
    if not q:
        raise ValueError("--q: give the draft distribution q (a comma list or a .npy/.json file)")
    pv = read_vector(p, "p")
    qvals = [read_vector(x, "q") for x in q]
    if scheme == "product":
        if len(qvals) > 1:
            qs = qvals
        elif _is_matrix(qvals[0]):
            qs = list(qvals[0])
        else:
            qs = None
        if qs is not None:
            law = make("product", qs=qs, n=n)
        else:
            law = make("product", qvals[0], 2 if n is None else n)
    else:
        if len(qvals) > 1:
            raise ValueError(
                f"--q: the {scheme} scheme takes one q; repeat --q only for --scheme product"
            )
        law = make(scheme, qvals[0], 2 if n is None else n)
    return make_instance(pv, law)


def _select_builtin(scheme: str | None, n: int | None) -> list[Instance]:
    bank = builtin_instances()
    if scheme is not None:
        bank = [i for i in bank if i.draft.scheme == _check_scheme(scheme)]
    if n is not None:
        bank = [i for i in bank if i.draft.n == n]
    if not bank:
        raise ValueError(
            f"--scheme/-n: no built-in instance has scheme={scheme} and n={n}; "
            "drop the filter or give --vocab for random instances"
        )
    return bank


def _fmt_alpha(a: float) -> str:
    return f"{a:.15f}"


def render_report(report: CrosscheckReport) -> None:
    """Print the cross-check as a rich table: one block of rows per instance."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    # Piped output (CI logs, CliRunner) gets a fixed width so the 15-digit values fit.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 110)
    table = Table(
        title=f"α* by every method (tolerance {report.tolerance:g} on the spread)",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("instance", overflow="fold", max_width=32)
    table.add_column("method")
    table.add_column("α*", justify="right")
    table.add_column("time", justify="right")
    table.add_column("spread", justify="right")
    table.add_column("result")
    notes: list[str] = []
    for k, r in enumerate(report.instances):
        if k:
            table.add_section()
        rows: list[tuple[str, str, str]] = []
        for m, a in r.alpha.items():
            rows.append((m, _fmt_alpha(a), f"{1e3 * r.seconds[m]:.1f} ms"))
        c = r.certificate
        if c is not None:
            mark = "[green]✓[/green]" if c["ok"] else "[red]✗[/red]"
            how = "exact" if c["exact"] else "floats"
            rows.append((f"certificate {mark}", _fmt_alpha(float(Fraction(c["alpha"]))), how))
        for m, why in r.skipped.items():
            rows.append((m, "[dim]skipped[/dim]", ""))
            notes.append(f"[dim]skipped: {m} on '{r.instance.label}': {escape(why)}[/dim]")
        for m, why in r.errors.items():
            rows.append((m, "[red]error[/red]", ""))
            notes.append(f"[red]error: {m} on '{r.instance.label}': {escape(why)}[/red]")
        cells = [r.instance.label]
        if r.alpha_exact is not None and len(str(r.alpha_exact)) <= 24:
            cells.append(f"[dim]exact α* = {r.alpha_exact}[/dim]")
        if len(rows) < len(cells):
            cells = ["\n".join(cells)]
        verdict = "[green]pass[/green]" if r.ok else "[bold red]FAIL[/bold red]"
        for j, (m, a, t) in enumerate(rows):
            first = j == 0
            table.add_row(
                cells[j] if j < len(cells) else "",
                m,
                a,
                t,
                f"{r.spread:.2e}" if first else "",
                verdict if first else "",
            )
    console.print(table)
    for line in notes:
        console.print(line, overflow="fold")
    for m, why in report.excluded.items():
        console.print(f"[dim]not run: {m} ({escape(why)})[/dim]")
    bad = sum(not r.ok for r in report.instances)
    summary = (
        f"{len(report.instances)} instances, {len(report.methods)} methods, "
        f"max spread {report.max_spread:.2e}, {report.seconds:.1f} s: "
    )
    if report.ok:
        console.print(summary + "[green]all agree within the tolerance[/green]")
    else:
        console.print(summary + f"[bold red]{bad} instance(s) FAIL[/bold red]")


def register(app: typer.Typer) -> None:
    """Add the ``crosscheck`` command to ``app``."""

    @app.command("crosscheck")
    @bad_input_exits_2
    def crosscheck_cmd(
        p: POption = None,
        q: QOption = None,
        n: NOption = None,
        scheme: Annotated[
            str | None,
            typer.Option("--scheme", help=SCHEME_HELP),
        ] = None,
        vocab: Annotated[
            int | None, typer.Option("--vocab", help="Random instances over this many tokens.")
        ] = None,
        trials: Annotated[
            int | None, typer.Option("--trials", help="Number of random instances (default 5).")
        ] = None,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the random instances.")] = 0,
        methods: Annotated[
            str | None,
            typer.Option(
                "--methods",
                help="Comma list of methods (default: every installed "
                "method whose stated accuracy is within --tol).",
            ),
        ] = None,
        tol: Annotated[
            float, typer.Option("--tol", help="Largest allowed spread of α* over methods.")
        ] = DEFAULT_TOL,
        certify: Annotated[
            bool,
            typer.Option(
                "--certify/--no-certify",
                help="Also check an optimal plan and set exactly (weak duality in Fractions).",
            ),
        ] = True,
        as_json: JsonOption = False,
    ) -> None:
        """Solve instances with every exact formulation and check that α* agrees (T1)."""
        check_drafts_option(n)
        if p is not None or q:
            if vocab is not None or trials is not None:
                raise ValueError("--vocab/--trials: give either --p/--q or --vocab, not both")
            instances = [instance_from_options(p, q, n, scheme)]
        elif vocab is not None or trials is not None:
            instances = random_instances(
                None if scheme is None else _check_scheme(scheme),
                V=4 if vocab is None else vocab,
                n=2 if n is None else n,
                trials=5 if trials is None else trials,
                seed=seed,
            )
        else:
            instances = _select_builtin(scheme, n)
        names = None
        if methods is not None:
            names = [m.strip() for m in methods.split(",") if m.strip()]
        report = crosscheck(instances, methods=names, tol=tol, certify=certify)
        if as_json:
            typer.echo(json.dumps(report.to_json()))
        else:
            render_report(report)
        if not report.ok:
            raise typer.Exit(1)
