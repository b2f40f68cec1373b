"""``mdsd-ot claims`` (run / reproduce the claims T1..T12) and ``mdsd-ot hunt`` (search for
counterexamples with random restarts and local search)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ._bounds import MAX_TRIALS, check_int, check_seed
from ._common import cli_command
from ._files import check_input_file

#: The time budget of ``hunt`` when neither --budget nor --evals is given (seconds).
DEFAULT_BUDGET = 10.0


def register(app: typer.Typer) -> None:
    """Add the ``claims`` and ``hunt`` commands to ``app``."""

    @app.command("claims")
    @cli_command
    def claims_cmd(
        id: list[str] = typer.Option(  # noqa: B008 - typer's idiom
            None, "--id", help="Claim id (repeatable), e.g. T5 or T12b; default: all."
        ),
        trials: int = typer.Option(
            None, "--trials", help="Instances per claim (default: the claim's own)."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the instance generator."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        witness: Path = typer.Option(  # noqa: B008
            None, "--witness", help="Reproduce the witness(es) in FILE instead of running claims."
        ),
        save: Path = typer.Option(  # noqa: B008
            None,
            "--out",
            "--save",
            help="Write the witnesses found to FILE (readable by --witness).",
        ),
    ) -> None:
        """Run the claims of docs/reference.md: theorems must hold, known-false ones must be refuted.

        Each claim shows its proof status: proved, checked (not proved: the note says what
        the check covers) or refuted.  Exit code 0 when every claim behaves as expected, 1
        otherwise, 2 on bad input.
        """
        from ..theory import claims as C
        from ..theory import witness as W

        check_seed(seed)
        if trials is not None:
            check_int(trials, "--trials", 1, MAX_TRIALS)
        if witness is not None:
            check_input_file(Path(witness), "--witness")
            if save is not None:
                raise ValueError(
                    "--out: writes the witnesses a run of the claims finds; --witness only "
                    "reproduces those in its file, so drop --out (or --witness)"
                )
            reps = []
            found = W.load(witness)
            if not found:
                raise ValueError(f"--witness: {witness} holds no witness")
            for k, w in enumerate(found):
                try:
                    reps.append(C.reproduce(w))
                except ValueError as exc:  # name the file and the witness
                    raise ValueError(f"{witness} (witness {k}): {exc}") from None
                except (IndexError, KeyError, TypeError, ZeroDivisionError, AttributeError) as exc:
                    # a field of the wrong shape or type (rows out of range, "1/0", H = 0)
                    raise ValueError(
                        f"{witness} (witness {k}): malformed witness ({type(exc).__name__}: "
                        f"{exc}); write it with --out of a run, or fix the field named"
                    ) from None
            if as_json:
                typer.echo(
                    json.dumps(
                        {
                            "ok": all(r.reproduced for r in reps),
                            "witnesses": [
                                {
                                    "claim": r.claim,
                                    "kind": r.kind,
                                    "reproduced": r.reproduced,
                                    "values": W.encode(r.values),
                                }
                                for r in reps
                            ],
                        }
                    )
                )
            else:
                for r in reps:
                    tag = "reproduced" if r.reproduced else "NOT reproduced"
                    typer.echo(f"{r.claim} [{r.kind}]: {tag}: {r.detail}")
            raise typer.Exit(0 if all(r.reproduced for r in reps) else 1)

        if id:
            for i in id:
                C.get(i)  # unknown ids are refused before anything runs
        if save is not None:
            W.check_output_path(save, "--out/--save")  # before the claims run, not after
        if as_json:
            runs = C.run_all(id or None, trials, seed)
        else:
            from rich.console import Console
            from rich.markup import escape

            console = Console()

            def show(r: C.ClaimRun) -> None:
                row = C.row(r)
                mark = "[green]ok[/green]" if r.ok else "[red]FAIL[/red]"
                console.print(
                    f"{mark} [bold]{r.id}[/bold] ({row['trials']} trials, {row['seconds']} s) "
                    f"{row['status']} \\[{row['proof']}]: {escape(r.statement)}"
                )
                if r.detail:
                    console.print(f"     {r.detail}", markup=False, highlight=False)
                if row["proof_note"]:
                    console.print(f"     proof: {row['proof_note']}", markup=False, highlight=False)
                if r.witness is not None:
                    body = json.dumps(W.encode(r.witness))
                    console.print(
                        f"     witness: {body[:300]}{'…' if len(body) > 300 else ''}",
                        markup=False,
                        highlight=False,
                    )

            runs = C.run_all(id or None, trials, seed, on_done=show)
        ok = all(r.ok for r in runs)
        if save is not None:
            W.save(save, [r.witness for r in runs if r.witness is not None], "--out/--save")
        if as_json:
            typer.echo(json.dumps({"ok": ok, "claims": [r.to_json() for r in runs]}))
        raise typer.Exit(0 if ok else 1)

    @app.command("hunt")
    @cli_command
    def hunt_cmd(
        conjecture: str = typer.Argument(None, help="Conjecture name (see --list)."),
        list_: bool = typer.Option(False, "--list", help="List the conjectures and exit."),
        budget: float = typer.Option(
            None,
            "--budget",
            help=f"Seconds of search (wall clock: not reproducible), in (0, 604800]. Default "
            f"{DEFAULT_BUDGET:g} when --evals is not given either.",
        ),
        evals: int = typer.Option(
            None,
            "--evals",
            help="Evaluations of the violation, in [1, 10^9]: deterministic, the same --seed "
            "and --evals give the same witness. Alone, it is the only bound.",
        ),
        seed: int = typer.Option(0, "--seed", help="Generator seed, in [0, 2^63)."),
        out: Path = typer.Option(None, "--out", help="Write the exact witness to FILE."),  # noqa: B008
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Search for the largest violation of a conjecture (random restarts + local search).

        The search stops at --evals evaluations or after --budget seconds, whichever comes
        first; the output says which bound stopped it.  `mdsd-ot hunt --list` lists the
        conjectures.
        """
        from ..theory import hunt as Hn
        from ..theory import witness as W

        if list_:
            _print_listing(Hn.listing(), as_json)
            return
        if conjecture is None:
            raise ValueError(
                "CONJECTURE: give the conjecture to hunt; list them with mdsd-ot hunt --list"
            )
        Hn.get(conjecture)  # validate everything before starting the bar
        check_seed(seed)
        if budget is not None:
            budget = Hn.check_budget(budget, "--budget")
        if evals is not None:
            evals = Hn.check_evals(evals, "--evals")
        if budget is None and evals is None:
            budget = DEFAULT_BUDGET
        if out is not None:
            W.check_output_path(out, "--out")
        res = _search(Hn, conjecture, budget, evals, seed, as_json)
        if out is not None and res.witness is not None:
            W.save(out, res.witness, "--out")
        bound = _bound_text(res)
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "conjecture": res.conjecture,
                        "found": res.found,
                        "value": res.value,
                        "exact_value": W.encode(res.exact_value),
                        "evaluations": res.evaluations,
                        "restarts": res.restarts,
                        "seconds": res.seconds,
                        "seed": seed,
                        "witness": W.encode(res.witness),
                        "budget": res.budget,
                        "max_evals": res.max_evals,
                        "bounded_by": res.bounded_by,
                        "reproducible": res.reproducible,
                    }
                )
            )
            return
        if res.found:
            typer.echo(
                f"{conjecture}: violated; largest exact violation {res.exact_value} "
                f"(≈ {float(res.exact_value):.6g}) after {res.evaluations} evaluations, "
                f"{res.restarts} restarts, {res.seconds:.1f} s; {bound}"
            )
            typer.echo(json.dumps(W.encode(res.witness)))
            if out is not None:
                typer.echo(f"witness written to {out} (check: mdsd-ot claims --witness {out})")
        else:
            typer.echo(
                f"{conjecture}: no violation found in {res.seconds:.1f} s "
                f"({res.evaluations} evaluations, {res.restarts} restarts; best "
                f"{res.value:.3g}); {bound}"
            )
            if out is not None:
                typer.echo(f"no witness: nothing written to {out}")


def _search(Hn, conjecture, budget, evals, seed, as_json):
    """Run the hunt behind a progress bar (hidden with --json)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("best {task.fields[best]}"),
        TextColumn("{task.fields[evals]} evals"),
        TimeElapsedColumn(),
        transient=as_json,
        disable=as_json,
    ) as bar:
        task = bar.add_task(conjecture, total=1.0, best="-", evals=0)

        def tick(frac: float, best: float, n_evals: int) -> None:
            bar.update(task, completed=frac, best=f"{best:.4g}", evals=n_evals)

        return Hn.run(conjecture, budget=budget, seed=seed, max_evals=evals, progress=tick)


def _bound_text(res) -> str:
    """Which bound stopped the search, and whether the run is reproducible."""
    if res.bounded_by == "evals":
        return (
            f"bounded by --evals {res.max_evals} (reproducible: the same --seed and --evals "
            "give the same witness)"
        )
    return (
        f"bounded by --budget {res.budget:g} s (wall clock: not reproducible; use --evals N "
        "for a reproducible search)"
    )


def _print_listing(rows: list[dict], as_json: bool) -> None:
    """``hunt --list``: one line per conjecture (name, claim it refutes, statement)."""
    if as_json:
        typer.echo(json.dumps({"conjectures": rows}))
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        claim = r["claim"] or "open"
        typer.echo(f"{r['name']:<{width}}  {claim:<5}  {r['statement']}")
