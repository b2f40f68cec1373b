r"""``mdsd-ot lossless``: run the losslessness kit on a verifier or sampler given as MODULE:FUNCTION.

.. code-block:: text

   mdsd-ot lossless MODULE:FUNCTION --scheme with -n 3 --vocab 4 --instances 200
                    [--exact | --samples N] --seed 0 [--level 1e-3] [--batch] [--json]

``MODULE`` is an importable module or a path to a ``.py`` file.  ``--exact`` (the default)
enumerates every draft tuple and coin path of ``verify(p, q, drafts, coins)``; ``--samples N``
tests ``sampler(p, q, drafts, rng)`` statistically on N draft tuples per instance (a function
whose fourth parameter is named ``coins`` is run with random coins).  Prints a table (instance,
law error, acceptance, α*, verdict) and the witness of the worst instance.  Exit codes: 0 when no
instance fails, 1 when one does, 2 on bad usage.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any

import typer

from ._bounds import MAX_SAMPLES, MAX_TRIALS, MAX_VOCAB, check_float, check_int, check_seed
from ._common import (
    JsonOption,
    NOption,
    OutOption,
    SeedOption,
    check_drafts_option,
    cli_command,
    option_names,
    strict_json,
)
from ._files import check_output_file, write_text

__all__ = ["register", "MAX_EXACT_VOCAB"]

#: Exact mode enumerates every draft tuple of every instance: vocabularies up to this size.
MAX_EXACT_VOCAB = 64


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "—"
    v = float(Fraction(x)) if isinstance(x, str) else float(x)  # "a/b" in exact rows
    if v != 0 and abs(v) < 10**-digits:
        return f"{v:.1e}"
    return f"{v:.{digits}f}"


def _table(rows: list[dict[str, Any]], statistical: bool, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    cols = ["instance", "kind", "law error", "acceptance", "α*"]
    cols += ["p-value", "verdict"] if statistical else ["verdict"]
    for c in cols:
        table.add_column(c, justify="left" if c in ("kind", "verdict") else "right")
    for r in rows:
        err = r.get("tv_hat") if statistical else r.get("law_error")
        cells = [str(r["instance"]), r["kind"], _fmt(err), _fmt(r.get("acceptance"))]
        cells.append(_fmt(r.get("alpha_star")))
        if statistical:
            cells.append(_fmt(r.get("p_value"), 3) if "p_value" in r else "—")
        cells.append(r["verdict"])
        table.add_row(*cells)
    console = Console()
    if not console.is_terminal:
        console = Console(width=120)
    console.print(table)


def _summary(report: Any, statistical: bool) -> str:
    n_fail = len(report.failures)
    head = f"{report.checked} instance(s) checked, {n_fail} failing"
    if statistical:
        deltas = [c.power.delta for c in report.checks if c is not None]
        ns = sorted({c.samples for c in report.checks if c is not None})
        level = next(c.level for c in report.checks if c is not None)
        head += (
            f"; power: with {', '.join(f'{n:,}' for n in ns)} samples per instance each test "
            f"detects a total-variation error >= {max(deltas):.3g} with probability >= 0.9 at "
            f"level {level:.3g} (Holm at family level {report.level:g})"
        )
    else:
        head += f"; max law error {_fmt(report.max_error, 6)}"
    return head


def _check(func, scheme, instances, samples, level, vocab, n, seed, batch):
    """The report of the statistical (``samples`` given) or the exact check, and its rows."""
    from ..lossless import check_exact, check_sampler_family, controls
    from ..lossless.load import takes_coins
    from ..lossless.sampler import SamplerError

    if samples is not None:
        sampler = controls.verify_sampler(func) if takes_coins(func) else func
        try:
            report = check_sampler_family(
                sampler, scheme, instances, samples, level,
                vocab=vocab, n=n, seed=seed, batch=batch,
            )  # fmt: skip
        except SamplerError as exc:
            typer.echo(f"FAIL: {exc}", err=True)
            raise typer.Exit(1) from None
        return report, [report.row(k) for k in range(len(report.checks))]
    report = check_exact(func, scheme, instances, vocab=vocab, n=n, seed=seed)
    return report, [c.row() for c in report.checks]


def register(app: typer.Typer) -> None:
    """Add the ``lossless`` command to ``app``."""

    @app.command("lossless")
    @cli_command
    def lossless_cmd(
        function: Annotated[
            str,
            typer.Argument(
                metavar="MODULE:FUNCTION",
                help="verify(p, q, drafts, coins) (--exact) or sampler(p, q, drafts, rng) "
                "(--samples); MODULE is importable or a .py path.",
            ),
        ],
        scheme: Annotated[
            str, typer.Option("--scheme", help="Draft law of the instances (mdsd_ot.drafts).")
        ] = "with",
        n: NOption = None,
        vocab: Annotated[int, typer.Option("--vocab", help="Vocabulary size V.")] = 4,
        instances: Annotated[
            int, typer.Option("--instances", help="Instances of the seeded family.")
        ] = 200,
        exact: Annotated[
            bool, typer.Option("--exact", help="Exact mode: enumerate every coin path (default).")
        ] = False,
        samples: Annotated[
            int | None,
            typer.Option("--samples", help="Statistical mode: N draft tuples per instance."),
        ] = None,
        seed: SeedOption = 0,
        level: Annotated[
            float | None,
            typer.Option("--level", help="Family-wise level (statistical mode; default 1e-3)."),
        ] = None,
        batch: Annotated[
            bool,
            typer.Option("--batch", help="The sampler takes an (N, n) array of draft tuples."),
        ] = False,
        as_json: JsonOption = False,
        out: OutOption = None,
    ) -> None:
        """Check that a verifier's output law is p (exactly, or by tests with stated power)."""
        from ..lossless.load import load_function

        if exact and samples is not None:
            raise ValueError("--exact, --samples: choose one mode (exact enumeration or N samples)")

        check_drafts_option(n)
        nn = 2 if n is None else n
        check_int(instances, "--instances", 1, MAX_TRIALS)
        check_int(vocab, "--vocab", 1, MAX_EXACT_VOCAB if samples is None else MAX_VOCAB)
        if samples is not None:
            check_int(samples, "--samples", 1, MAX_SAMPLES)
        check_seed(seed)
        if level is not None:
            check_float(level, "--level", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        if samples is None and (batch or level is not None):
            which = "--batch" if batch else "--level"
            raise ValueError(
                f"{which}: applies to statistical mode; add --samples N, or drop {which} (exact "
                "mode enumerates every coin path of verify(p, q, drafts, coins), one tuple at a "
                "time, and compares exactly)"
            )
        level = 1e-3 if level is None else level
        if out is not None:
            check_output_file(out, "--out", (".json",))
        func = load_function(function)
        statistical = samples is not None
        # the checks name their arguments (draft_factory: ...); the messages name the options
        with option_names(draft_factory="--scheme", scheme="--scheme"):
            report, rows = _check(func, scheme, instances, samples, level, vocab, nn, seed, batch)
        if report.checked == 0:
            reason = next(iter(rows[0]["reasons"]), "") if rows else ""
            raise ValueError(
                f"--scheme: the {scheme} law is undefined on every instance (V = {vocab}, "
                f"n = {nn}): {reason}"
            )
        result = {"function": function, "scheme": scheme, **report.to_json()}
        if out is not None:
            write_text(out, "--out", strict_json(result) + "\n")
        if as_json:
            typer.echo(strict_json(result))
        else:
            mode = f"{samples:,} samples" if statistical else "exact"
            _table(rows, statistical, f"lossless: {function} on {scheme}, V = {vocab}, n = {nn} "
                   f"({mode}, seed {seed})")  # fmt: skip
            typer.echo(_summary(report, statistical))
            w = report.witness
            if w is not None and not report.passed:
                typer.echo("witness (worst instance; replay with the function below):")
                typer.echo(strict_json(w))
        if not report.passed:
            raise typer.Exit(1)
