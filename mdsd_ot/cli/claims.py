"""``mdsd-ot claims`` (run / reproduce the claims T1..T12) and ``mdsd-ot hunt`` (search for
counterexamples with random restarts and local search)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ._common import bad_input_exits_2


def register(app: typer.Typer) -> None:
    """Add the ``claims`` and ``hunt`` commands to ``app``."""

    @app.command("claims")
    @bad_input_exits_2
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
            None, "--save", help="Write the witnesses found to FILE (readable by --witness)."
        ),
    ) -> None:
        """Run the claims of docs/reference.md: theorems must hold, known-false ones must be refuted.

        Exit code 0 when every claim behaves as expected, 1 otherwise, 2 on bad input.
        """
        from ..theory import claims as C
        from ..theory import witness as W

        if witness is not None:
            reps = [C.reproduce(w) for w in W.load(witness)]
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

        if as_json:
            runs = C.run_all(id or None, trials, seed)
        else:
            from rich.console import Console

            console = Console()

            def show(r: C.ClaimRun) -> None:
                mark = "[green]ok[/green]" if r.ok else "[red]FAIL[/red]"
                what = "holds" if r.status == "holds" else r.status
                console.print(
                    f"{mark} [bold]{r.id}[/bold] ({r.trials} trials, "
                    f"{r.seconds:.2f} s) {what}: {r.statement}"
                )
                if r.detail:
                    console.print(f"     {r.detail}", markup=False, highlight=False)
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
            W.save(save, [r.witness for r in runs if r.witness is not None])
        if as_json:
            typer.echo(json.dumps({"ok": ok, "claims": [r.to_json() for r in runs]}))
        raise typer.Exit(0 if ok else 1)

    @app.command("hunt")
    @bad_input_exits_2
    def hunt_cmd(
        conjecture: str = typer.Argument(..., help="Conjecture name (see --list)."),
        budget: float = typer.Option(10.0, "--budget", help="Seconds of search."),
        seed: int = typer.Option(0, "--seed", help="Generator seed."),
        out: Path = typer.Option(None, "--out", help="Write the exact witness to FILE."),  # noqa: B008
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Search for the largest violation of a conjecture (random restarts + local search).

        Conjectures: greedy-vs-without, en-vs-sequential, prefix-greedy, prefix-product,
        qconvex-greedy, qconvex-spechub, qconvex-product, rrs-without-vs-with.
        """
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from ..theory import hunt as Hn
        from ..theory import witness as W

        Hn.get(conjecture)  # validate the name before starting the bar
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

            def tick(frac: float, best: float, evals: int) -> None:
                bar.update(task, completed=frac, best=f"{best:.4g}", evals=evals)

            res = Hn.run(conjecture, budget=budget, seed=seed, progress=tick)
        if out is not None and res.witness is not None:
            W.save(out, res.witness)
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
                    }
                )
            )
            return
        if res.found:
            typer.echo(
                f"{conjecture}: violated; largest exact violation {res.exact_value} "
                f"(≈ {float(res.exact_value):.6g}) after {res.evaluations} evaluations, "
                f"{res.restarts} restarts, {res.seconds:.1f} s"
            )
            typer.echo(json.dumps(W.encode(res.witness)))
            if out is not None:
                typer.echo(f"witness written to {out} (check: mdsd-ot claims --witness {out})")
        else:
            typer.echo(
                f"{conjecture}: no violation found in {res.seconds:.1f} s "
                f"({res.evaluations} evaluations, {res.restarts} restarts; best "
                f"{res.value:.3g})"
            )
