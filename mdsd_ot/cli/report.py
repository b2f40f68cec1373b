r"""``mdsd-ot report``: α*, every verifier's acceptance and the gaps on a dataset of shards.

.. code-block:: text

   mdsd-ot report SHARDS -n 2,3,4 [--laws ...] [--verifiers ...] [--temperatures ...]
                  [--json | --csv] [--out FILE] [--plot DIR] [--workers N | --scheduler ADDRESS]
   mdsd-ot report --demo [...]

SHARDS is a shard file or a directory of shards (``docs/shards.md``).  ``--demo`` runs the
built-in offline study (:mod:`mdsd_ot.reports.demo`) instead.  The table (or ``--json`` /
``--csv``) goes to stdout; ``--out FILE`` also writes it to a ``.json`` or ``.csv`` file (by
suffix); ``--plot DIR`` writes the acceptance-vs-temperature plots and the
per-position histograms there.  ``--workers N`` runs on a local Dask cluster of N workers,
``--scheduler ADDRESS`` on an existing one (results identical to the serial run).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from ._bounds import (
    MAX_DEPTH,
    MAX_SAMPLES,
    MAX_WORKERS,
    check_drafts,
    check_int,
    check_seed,
)
from ._common import (
    DepthOption,
    JsonOption,
    SamplesOption,
    SeedOption,
    cli_command,
    option_names,
    option_os_errors,
)
from ._files import check_output_dir, check_output_file, write_text

__all__ = ["register", "print_table", "parse_list", "parse_ns", "progress_bar"]


def parse_list(text: str | None, name: str) -> list[str] | None:
    """``"a,b"`` → ``["a", "b"]``; ``None`` → ``None``."""
    if text is None:
        return None
    parts = [s.strip() for s in text.split(",")]
    if not any(parts):
        raise ValueError(f"{name}: give a comma-separated list")
    if "" in parts:
        raise ValueError(f"{name}: empty entry in {text!r}; drop the extra comma")
    return parts


def parse_ns(text: str) -> list[int]:
    """``"2,3,4"`` → ``[2, 3, 4]`` (each in [1, 10,000], the bound of every ``-n``)."""
    out = []
    for s in parse_list(text, "-n") or []:
        try:
            n = int(s)
        except ValueError:
            raise ValueError(f"-n: cannot read {s!r}; give numbers of drafts like 2,3,4") from None
        n = check_drafts(n, "-n")
        if n in out:
            raise ValueError(f"-n: {n} is given twice in {text!r}; give each number of drafts once")
        out.append(n)
    return out


def _fmt(stat: dict[str, float] | None, digits: int = 4) -> str:
    if stat is None:
        return "—"
    m = 0.0 if abs(stat["mean"]) < 0.5 * 10**-digits else stat["mean"]
    return f"{m:.{digits}f}±{stat['se']:.{digits}f}" if stat["se"] else f"{m:.{digits}f}"


def print_table(report: dict[str, Any], title: str | None = None) -> None:
    """The report as a rich table on stdout (one line per law and verifier), notes on stderr."""
    from rich.console import Console
    from rich.table import Table

    from ..reports import table_rows

    ns = report["n"] if isinstance(report["n"], list) else [report["n"]]
    table = Table(
        title=title
        or f"verifier gaps: n = {', '.join(map(str, ns))}, V = {report['V']}, "
        f"{report['positions']} position(s) (mean ± s.e.)"
    )
    cols = ("n", "T", "draft law", "α*", "verifier", "acceptance", "gap", "tokens/call", "how")
    for col in cols:
        right = col in ("n", "T", "α*", "acceptance", "gap", "tokens/call")
        table.add_column(col, justify="right" if right else "left")
    last = None
    for r in table_rows(report):
        T = "as given" if r["temperature"] is None else f"{r['temperature']:g}"
        key = (r["n"], r["temperature"], r["law"])
        new = key != last
        table.add_row(
            str(r["n"]) if new else "",
            T if new else "",
            r["law"] if new else "",
            _fmt(r["alpha_star"]) if new else "",
            r["verifier"] or "—",
            _fmt(r["acceptance"]),
            _fmt(r["gap"]),
            _fmt(r["tokens"], 3),
            r["method"] or "",
            end_section=False,
        )
        last = key
    console = Console()
    if not console.is_terminal:  # piped output: do not wrap the table at 80 columns
        console = Console(width=140)
    console.print(table)
    skipped: dict[str, list[int]] = {}  # one note per reason, with the n it applies to
    for r in report["results"]:
        if r.get("skipped"):
            ns = skipped.setdefault(f"{r['law']}: {r['skipped']}", [])
            if r["n"] not in ns:
                ns.append(r["n"])
    for why, ns in skipped.items():
        typer.echo(f"note (n = {', '.join(map(str, ns))}): {why}", err=True)


@contextmanager
def progress_bar(
    total: int, quiet: bool, label: str = "positions", unit: str = "positions"
) -> Iterator[Any]:
    """A rich progress bar on stderr (shown on a terminal unless ``quiet``): ``label``, the count
    and the rate in ``unit`` per second; yields ``advance(k)``."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet or not console.is_terminal,
    ) as prog:
        task = prog.add_task(label, total=total, rate="")

        def advance(k: int) -> None:
            prog.advance(task, k)
            speed = prog.tasks[0].speed
            prog.update(task, rate=f"{speed:,.1f} {unit}/s" if speed else "")

        yield advance


def _strip_values(report: dict[str, Any]) -> None:
    for r in report["results"]:
        r.pop("alpha_values", None)
        for v in r["verifiers"]:
            v.pop("values", None)


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to ``app``."""

    @app.command("report")
    @cli_command
    def report_cmd(
        shards: Annotated[
            str | None,
            typer.Argument(
                metavar="SHARDS", help="A .safetensors/.npz shard or a directory of shards."
            ),
        ] = None,
        ns: Annotated[
            str, typer.Option("-n", "--drafts", help="Numbers of drafts, e.g. 2,3,4.")
        ] = "2,3,4",
        laws: Annotated[
            str | None,
            typer.Option(
                "--laws", "--schemes", help="Draft laws, e.g. with,without (default: all)."
            ),
        ] = None,
        verifiers: Annotated[
            str | None,
            typer.Option("--verifiers", help="Verifiers, e.g. rrs-with,k-seq (default: all)."),
        ] = None,
        temperatures: Annotated[
            str | None,
            typer.Option(
                "--temperatures",
                help="Re-temper the stored logits, e.g. 0.5,1,2 (shards must hold logits).",
            ),
        ] = None,
        as_json: JsonOption = False,
        as_csv: Annotated[bool, typer.Option("--csv", help="Print the report as CSV.")] = False,
        out: Annotated[
            str | None,
            typer.Option("--out", help="Also write the report to this .json or .csv file."),
        ] = None,
        plot: Annotated[
            str | None,
            typer.Option(
                "--plot",
                metavar="DIR",
                help="Write PNG plots (acceptance vs T, histograms) to DIR.",
            ),
        ] = None,
        demo: Annotated[
            bool,
            typer.Option("--demo", help="The built-in offline study (stdlib-docs n-gram models)."),
        ] = False,
        positions: Annotated[
            int | None,
            typer.Option("--positions", help="Positions of the --demo study (default 256)."),
        ] = None,
        workers: Annotated[
            int | None,
            typer.Option(
                "--workers", metavar="N", help="Run on a local Dask cluster of N workers."
            ),
        ] = None,
        scheduler: Annotated[
            str | None,
            typer.Option(
                "--scheduler", metavar="ADDRESS", help="Run on the Dask scheduler at ADDRESS."
            ),
        ] = None,
        samples: SamplesOption = 2000,
        seed: SeedOption = 0,
        depth: DepthOption = 4,
    ) -> None:
        """α* per draft law, every verifier's acceptance, the gap and tokens per call."""
        from ..reports import report, to_csv, write_plots

        if as_json and as_csv:
            raise ValueError("--csv: give one of --json and --csv (both print to stdout)")
        if demo == (shards is not None):
            raise ValueError("SHARDS: give a shard file or directory, or --demo (not both)")
        if workers is not None and scheduler is not None:
            raise ValueError("--scheduler: give either --workers N or --scheduler ADDRESS")
        check_int(depth, "--depth", 0, MAX_DEPTH)
        check_int(samples, "--samples", 1, MAX_SAMPLES)
        check_seed(seed)
        if demo:
            positions = check_int(256 if positions is None else positions, "--positions", 1)
        elif positions is not None:
            raise ValueError(
                "--positions: sets the size of the --demo study; add --demo or drop it"
            )
        if workers is not None:
            check_int(workers, "--workers", 1, MAX_WORKERS)
        if out is not None:
            check_output_file(out, "--out", (".json", ".csv"))
        if plot is not None:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise ValueError("--plot: needs matplotlib; pip install 'mdsd-ot[plot]'") from None
            check_output_dir(plot, "--plot")
        temps = None
        if temperatures is not None:
            from .gap import parse_temperatures

            temps = parse_temperatures(temperatures)
        kwargs = dict(
            laws=parse_list(laws, "--laws"), verifiers=parse_list(verifiers, "--verifiers"),
            temperatures=temps, samples=samples, seed=seed, depth=depth, workers=workers,
            scheduler=scheduler, keep_values=plot is not None,
        )  # fmt: skip
        n_list = parse_ns(ns)
        quiet = as_json or as_csv
        with tempfile.TemporaryDirectory(prefix="mdsd-ot-demo-") as tmp:
            source = shards
            if demo:
                from ..reports.demo import demo_shards

                with option_names(positions="--positions"):
                    demo_shards(tmp, positions=positions)
                source = tmp
            from ..io import shard_files

            _warn_unmatched(n_list, kwargs["laws"], kwargs["verifiers"], shard_files(source))
            total = sum(_rows(f) for f in shard_files(source))
            total *= len(n_list) * (len(temps) if temps else 1)
            with progress_bar(total, quiet) as advance:
                rep = report(source, n_list, progress=advance, **kwargs)
            if demo:
                rep["source"] = "demo"
        with option_os_errors("--plot"):
            files = write_plots(rep, plot) if plot is not None else []
        _strip_values(rep)
        if files:
            rep["plots"] = [str(f) for f in files]
        if out is not None:
            body = to_csv(rep) if Path(out).suffix.lower() == ".csv" else json.dumps(rep, indent=2)
            write_text(out, "--out", body if body.endswith("\n") else body + "\n")
            rep_out = str(out)
        else:
            rep_out = None
        if as_json:
            typer.echo(json.dumps(rep, indent=2))
        elif as_csv:
            typer.echo(to_csv(rep), nl=False)
        else:
            note = " — re-tempered from stored logits" if rep["retempered"] else ""
            what = "demo: byte n-gram models of the stdlib docs" if demo else str(shards)
            print_table(
                rep,
                title=f"{what}: V = {rep['V']}, {rep['positions']} positions, "
                f"n = {', '.join(map(str, rep['n']))} (mean ± s.e.){note}",
            )
            for f in files:
                typer.echo(f"wrote {f}")
            if rep_out is not None:
                typer.echo(f"wrote {rep_out}")


def _warn_unmatched(
    ns: list[int], laws: list[str] | None, verifiers: list[str] | None, files: list[Path]
) -> None:
    """A warning on stderr for each of ``--verifiers`` defined for none of the requested laws
    (it would get no row: the table's verifier column shows "—")."""
    from ..drafts import SCHEMES
    from ..io import Shard
    from ..reports.report import unmatched_verifiers
    from ..verifiers import LAWS

    if verifiers is None or not files:
        return
    from ..verifiers import NAMES

    verifiers = [v for v in verifiers if v in NAMES]  # unknown names: the report's own error
    if not verifiers:
        return
    asked = f"{'--laws ' + ','.join(laws) if laws else 'any law'} at -n {','.join(map(str, ns))}"
    for v, where in unmatched_verifiers(ns, laws, verifiers, Shard(files[0]).V).items():
        if where:
            ok = ", ".join(f"{law} (n = {n})" for law, n in where)
            fix = "add it to --laws" if len(where) == 1 else "add one of them to --laws"
        else:
            domain = LAWS.get(v)
            ok = f"no law the report covers at -n {','.join(map(str, ns))}"
            if v == "single":
                ok += " (single is one draft: -n 1)"
            elif domain:
                fixed = {law: SCHEMES[law].fixed_n for law in domain if law in SCHEMES}
                ok += (
                    " (only for "
                    + ", ".join(
                        law if fixed.get(law) is None else f"{law}, n = {fixed[law]}"
                        for law in domain
                    )
                    + ")"
                )
            fix = "change -n"
        typer.echo(
            f"warning: --verifiers: {v} is not defined for {asked}, so it has no row; it is "
            f"defined for {ok}; {fix}, or drop {v} from --verifiers",
            err=True,
        )


def _rows(path: Path) -> int:
    from ..io import Shard

    return Shard(path).m
