"""``mdsd-ot crosscheck``: every exact formulation on the same instances (T1).

Three ways to choose the instances:

- no instance options: the built-in bank (:func:`mdsd_ot.reports.crosscheck.builtin_instances`),
  optionally filtered by ``--scheme`` and ``-n``;
- ``--p`` and ``--q``: one instance.  For a law with one q per draft (``--scheme product``) give
  ``--q`` once per draft (``--q 0.5,0.5 --q 0.9,0.1``), or one file holding one q per row, or a
  single q with ``-n`` (the same q for every draft); ``--scheme explicit`` takes ``--table``;
- ``--vocab V`` (and/or ``--trials``, ``--seed``): seeded random Dirichlet instances of size V.

Exit codes: 0 when every instance agrees within ``--tol``; 1 on a disagreement, a crashed
method, or an instance on which no cross-check took place (only one method could solve it: one
value cannot disagree with anything); 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from typing import Annotated, Any

import numpy as np
import typer
from rich.markup import escape

from .. import _validate as V_
from .._outputs import exact_text
from ..drafts import SCHEMES, DraftLaw, Explicit, QLaw, make
from ..drafts._base import Vector
from ..reports.crosscheck import (
    DEFAULT_TOL,
    RANDOM_SCHEMES,
    CrosscheckReport,
    Instance,
    builtin_instances,
    crosscheck,
    make_instance,
    random_instances,
)
from ._bounds import MAX_ENTRIES, MAX_TRIALS, MAX_VOCAB, check_float, check_int, check_seed
from ._common import (
    DEFAULT_DRAFTS,
    EXIT_FAILED,
    SCHEME_HELP,
    JsonOption,
    NOption,
    OutOption,
    POption,
    QOption,
    SeedOption,
    check_drafts_option,
    cli_command,
    cli_names,
    option_names,
    read_vector,
)
from ._files import check_output_file, write_text

__all__ = ["register", "instance_from_options", "render_report", "check_scheme"]

TableOption = Annotated[
    str | None,
    typer.Option(
        "--table",
        help="The joint law of --scheme explicit: a .json/.npy table of shape (V,)*n.",
    ),
]


def check_scheme(scheme: str, option: str = "--scheme") -> str:
    """A registered scheme name (:data:`mdsd_ot.drafts.SCHEMES`), else a ValueError."""
    if scheme not in SCHEMES:
        raise ValueError(f"{option}: unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    return scheme


def _host(x: Any, name: str | None = None) -> Any:
    """A torch tensor read from a .pt file as a float64 numpy array (exact methods take numpy).

    With ``name`` (a probability vector or rows: ``--p``, ``--q``) the tensor is checked first
    at the tolerance of the dtype it was stored in (:func:`mdsd_ot._validate.checked_rows`:
    float32 1e-4, float16 / bfloat16 twice their unit roundoff), then cast to float64 and
    renormalised there; a float32 file is not held to float64's 1e-9."""
    if not type(x).__module__.startswith("torch"):
        return x
    if name is not None and x.is_floating_point() and x.ndim in (1, 2):
        X, single = V_.checked_rows(x.detach(), name)
        X = X.cpu().double()
        X = (X / X.sum(-1, keepdim=True)).numpy()
        return X[0] if single else X
    return x.detach().cpu().double().numpy()


def _is_matrix(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim == 2
    return isinstance(x, list) and len(x) > 0 and all(isinstance(r, list) for r in x)


def _cli_names(exc: ValueError) -> ValueError:
    """Name the command-line options in a law's message (``q:`` becomes ``--q:``, ...)."""
    return cli_names(exc, {"qs": "--q", "q": "--q", "n": "-n", "table": "--table"})


def build_law(scheme: str, q: list[Any] | None, n: int | None, table: Any = None) -> DraftLaw:
    """The draft law of ``--scheme``, ``--q`` (each given value), ``-n`` and ``--table``.

    What the law is built from is the law class's business (:meth:`DraftLaw.build`): one q for
    the q-based laws (:class:`~mdsd_ot.drafts.QLaw`), one q per draft or the same q ``n`` times
    for the others, a table for an explicit law.
    """
    cls = SCHEMES[check_scheme(scheme)]
    qvals = [_host(x, "--q") for x in (q or [])]
    one_q = issubclass(cls, QLaw)
    if len(qvals) > 1 and one_q:
        raise ValueError(
            f"--q: the {scheme} scheme takes one q; repeat --q only for a law with one q per draft"
        )
    qv = qs = None
    if len(qvals) > 1:
        qs = qvals
    elif qvals and _is_matrix(qvals[0]) and not one_q:
        qs = list(qvals[0])
    elif qvals:
        qv = qvals[0]
    n_arg = n
    if n_arg is None and qs is None and table is None:  # a table (or qs) says its own n
        n_arg = cls.fixed_n or DEFAULT_DRAFTS
    try:
        law = make(scheme, qv, n_arg, qs=qs, table=_host(table))
    except ValueError as exc:
        raise _cli_names(exc) from None
    if n is not None and law.n != n:
        raise ValueError(f"-n: the {scheme} law given has n = {law.n} drafts, not {n}")
    return law


def instance_from_options(
    p: str | None,
    q: list[str] | None,
    n: int | None,
    scheme: str | None,
    table: str | None = None,
) -> Instance:
    """Build one validated instance from the ``--p``, ``--q``, ``-n``, ``--scheme`` and
    ``--table`` options.

    ``--q`` may be repeated for a law with one q per draft (``--scheme product``), or be a file
    holding one q per row; every other scheme takes exactly one ``--q``.
    """
    given = "--scheme " + scheme if scheme is not None else "the default --scheme with"
    scheme = check_scheme(scheme or "with")
    explicit = issubclass(SCHEMES[scheme], Explicit)
    if table is not None and not explicit:
        raise ValueError(
            f"--table: only --scheme explicit takes a table (got {given}); "
            "drop --table or use --scheme explicit"
        )
    if q and explicit:
        raise ValueError(
            "--q: --scheme explicit takes its law from --table alone; drop --q or use a "
            "scheme built from q (e.g. --scheme with)"
        )
    if p is None:
        raise ValueError("--p: give the target distribution p (a comma list or a file)")
    if explicit and table is None:
        raise ValueError(
            "--table: --scheme explicit takes its law from --table FILE (a joint table of shape "
            "(V,)*n); give --table, or use a scheme built from --q (e.g. --scheme with)"
        )
    if not q and table is None:
        raise ValueError("--q: give the draft distribution q (a comma list or a file)")
    pv = _host(read_vector(p, "--p"), "--p")
    qvals = [read_vector(x, "--q") for x in (q or [])]
    tab = None if table is None else read_vector(table, "--table")
    # --p is read first and checked first; when the law's options are wrong too, one message
    # names every offending option.
    try:
        with option_names(p="--p"):
            pvec = Vector(pv, "p")
    except ValueError as p_exc:
        try:
            build_law(scheme, qvals, n, tab)
        except ValueError as law_exc:
            raise ValueError(f"{p_exc}; and {law_exc}") from None
        raise
    law = build_law(scheme, qvals, n, tab)
    if law.V != len(pvec.float):
        raise ValueError(
            f"{'--table' if explicit else '--q'}: the draft law has length {law.V} (its "
            f"vocabulary) but --p has length {len(pvec.float)}; give both over the same vocabulary"
        )
    with option_names(p="--p", q="--q"):
        return make_instance(pvec, law)


def _select_builtin(scheme: str | None, n: int | None) -> list[Instance]:
    bank = builtin_instances()
    if scheme is not None:
        bank = [i for i in bank if i.draft.scheme == check_scheme(scheme)]
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
        if r.alpha_exact is not None and len(exact_text(r.alpha_exact)) <= 24:
            cells.append(f"[dim]exact α* = {r.alpha_exact}[/dim]")
        if len(rows) < len(cells):
            cells = ["\n".join(cells)]
        if not r.ok:
            verdict = "[bold red]FAIL[/bold red]"
        elif not r.checked:
            verdict = "[yellow]unchecked[/yellow]"
        else:
            verdict = "[green]pass[/green]"
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
        console.print(f"[dim]not run: {m}: {escape(why)}[/dim]")
    bad = sum(not r.ok for r in report.instances)
    summary = (
        f"{len(report.instances)} instances, {len(report.methods)} methods, "
        f"max spread {report.max_spread:.2e}, {report.seconds:.1f} s: "
    )
    alone = report.unchecked
    if alone:
        solvers = sorted({m for r in alone for m in r.alpha}) or ["none"]
        console.print(
            f"[bold yellow]no cross-check took place on {len(alone)} instance(s): only one "
            f"method solved each ({', '.join(solvers)}), and one value cannot disagree with "
            "anything; use a smaller vocabulary for a cross-check[/bold yellow]"
        )
    if not report.ok:
        console.print(summary + f"[bold red]{bad} instance(s) FAIL[/bold red]")
    elif alone:
        checked = len(report.instances) - len(alone)
        console.print(summary + f"{checked} instance(s) cross-checked, {len(alone)} not")
    else:
        console.print(summary + "[green]all agree within the tolerance[/green]")


def register(app: typer.Typer) -> None:
    """Add the ``crosscheck`` command to ``app``."""

    @app.command("crosscheck")
    @cli_command
    def crosscheck_cmd(
        p: POption = None,
        q: QOption = None,
        n: NOption = None,
        scheme: Annotated[
            str | None,
            typer.Option("--scheme", help=SCHEME_HELP + " [default: with; the bank: every law]"),
        ] = None,
        table: TableOption = None,
        vocab: Annotated[
            int | None,
            typer.Option(
                "--vocab", help=f"Random instances over this many tokens, in [1, {MAX_VOCAB:,}]."
            ),
        ] = None,
        trials: Annotated[
            int | None, typer.Option("--trials", help="Number of random instances (default 5).")
        ] = None,
        seed: SeedOption = 0,
        methods: Annotated[
            str | None,
            typer.Option(
                "--methods",
                "--method",
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
        out: OutOption = None,
    ) -> None:
        """Solve instances with every exact formulation and check that α* agrees (T1)."""
        check_drafts_option(n)
        check_seed(seed)
        check_float(tol, "--tol", lo=0.0)
        if out is not None:
            check_output_file(out, "--out", (".json",))
        if p is not None or q or table is not None:
            if vocab is not None or trials is not None:
                raise ValueError("--vocab/--trials: give either --p/--q or --vocab, not both")
            instances = [instance_from_options(p, q, n, scheme, table)]
        elif vocab is not None or trials is not None:
            V = check_int(4 if vocab is None else vocab, "--vocab", 1, MAX_VOCAB)
            T = check_int(5 if trials is None else trials, "--trials", 1, MAX_TRIALS)
            if scheme is not None and check_scheme(scheme) not in RANDOM_SCHEMES:
                raise ValueError(
                    f"--scheme: no random instances for {scheme!r} (give one with --p and "
                    f"--table); choose one of {', '.join(RANDOM_SCHEMES)}"
                )
            k = DEFAULT_DRAFTS if n is None else n
            if T * V * (k + 1) > MAX_ENTRIES:
                raise ValueError(
                    f"--trials: {T:,} instances of V = {V:,} and n = {k} hold {T * V * (k + 1):,} "
                    f"probabilities (limit {MAX_ENTRIES:,}); use fewer trials or a smaller --vocab"
                )
            instances = random_instances(scheme, V=V, n=k, trials=T, seed=seed)
        else:
            instances = _select_builtin(scheme, n)
        names = None
        if methods is not None:
            names = [m.strip() for m in methods.split(",") if m.strip()]
            if not names:
                raise ValueError("--methods: give a comma list of method names")
        report = crosscheck(instances, methods=names, tol=tol, certify=certify)
        body = report.to_json()
        if out is not None:
            write_text(out, "--out", json.dumps(body) + "\n")
        if as_json:
            typer.echo(json.dumps(body))
        else:
            render_report(report)
            if out is not None:
                typer.echo(f"wrote {out}")
        if not report.ok or not report.checked:
            raise typer.Exit(EXIT_FAILED)
