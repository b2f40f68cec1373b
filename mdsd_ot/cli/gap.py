"""``mdsd-ot gap``: α* of each draft law beside the acceptance of each verifier, and the gap.

Positions come from files (``--p-file``/``--q-file``: ``.npy`` or ``.json`` arrays of shape
``(V,)`` or ``(m, V)``, one target/draft row per position) or from the documented synthetic family
(``--synthetic``, :mod:`mdsd_ot.synthetic`).  Each number is averaged over the positions with its
standard error; how it was computed (fast solver, closed form, enumeration, simulation) is in the
``method`` column (see :mod:`mdsd_ot.reports.evaluate`).  This is the in-memory shortcut of
``mdsd-ot report`` (same computation, same result keys: :mod:`mdsd_ot.reports`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import numpy as np
import typer

from ._common import bad_input_exits_2, read_vector
from .report import print_table

__all__ = ["register", "parse_temperatures"]


def parse_temperatures(text: str | None) -> list[float | None]:
    """``"0.5,1,2"`` → ``[0.5, 1.0, 2.0]``; ``None`` → ``[None]`` (rows as given)."""
    if text is None:
        return [None]
    out = []
    for s in (x.strip() for x in text.split(",")):
        if not s:
            continue
        try:
            t = float(s)
        except ValueError:
            raise ValueError(
                f"--temperatures: cannot read {s!r}; give numbers like 0.5,1,2"
            ) from None
        if not np.isfinite(t) or t <= 0:
            raise ValueError(f"--temperatures: each temperature must be > 0, got {s}")
        out.append(t)
    if not out:
        raise ValueError("--temperatures: give at least one temperature, e.g. 0.5,1,2")
    return out


def _positions(
    p_file: str | None,
    q_file: str | None,
    synthetic: bool,
    vocab: int,
    positions: int,
    noise: float,
    zipf: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, bool, dict[str, Any]]:
    if synthetic == (p_file is not None or q_file is not None):
        raise ValueError(
            "--synthetic: give either --synthetic or both --p-file and --q-file (not both, not "
            "neither)"
        )
    if synthetic:
        from ..synthetic import synthetic_logits

        if positions < 1:
            raise ValueError(f"--positions: must be >= 1, got {positions}")
        L, D = synthetic_logits(vocab, seed, noise=noise, zipf=zipf, size=positions)
        meta = {
            "source": "synthetic",
            "synthetic": {"V": vocab, "positions": positions, "noise": noise, "zipf": zipf,
                          "seed": seed},
        }  # fmt: skip
        return L, D, True, meta
    if p_file is None or q_file is None:
        raise ValueError("--q-file: give both --p-file and --q-file (or use --synthetic)")
    P = np.asarray(read_vector(p_file, "p-file"), dtype=np.float64)
    Q = np.asarray(read_vector(q_file, "q-file"), dtype=np.float64)
    if P.shape != Q.shape:
        raise ValueError(
            f"--q-file: shape {Q.shape} differs from --p-file's {P.shape}; give one draft row per "
            "target row"
        )
    return P, Q, False, {"source": "files", "p_file": p_file, "q_file": q_file}


def register(app: typer.Typer) -> None:
    """Add the ``gap`` command to ``app``."""

    @app.command("gap")
    @bad_input_exits_2
    def gap_cmd(
        p_file: Annotated[
            str | None,
            typer.Option("--p-file", help="Targets: .npy/.json of shape (V,) or (m, V)."),
        ] = None,
        q_file: Annotated[
            str | None, typer.Option("--q-file", help="Draft models q, same shape as --p-file.")
        ] = None,
        synthetic: Annotated[
            bool, typer.Option("--synthetic", help="Use the synthetic family (mdsd_ot.synthetic).")
        ] = False,
        n: Annotated[int, typer.Option("-n", "--drafts", help="Number of drafts.")] = 2,
        temperatures: Annotated[
            str | None,
            typer.Option(
                "--temperatures",
                help="Comma list, e.g. 0.5,1,2 (synthetic default 0.5,1,2; files: p^(1/T)).",
            ),
        ] = None,
        vocab: Annotated[int, typer.Option("--vocab", help="Synthetic vocabulary size V.")] = 1000,
        positions: Annotated[
            int, typer.Option("--positions", help="Synthetic positions per temperature.")
        ] = 16,
        noise: Annotated[
            float, typer.Option("--noise", help="Synthetic draft logit noise σ.")
        ] = 1.0,
        zipf: Annotated[float, typer.Option("--zipf", help="Synthetic Zipf exponent s.")] = 1.0,
        samples: Annotated[
            int, typer.Option("--samples", help="Draft tuples per position when simulating.")
        ] = 2000,
        seed: Annotated[
            int, typer.Option("--seed", help="Seed (synthetic family, simulation).")
        ] = 0,
        as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
        plot: Annotated[
            str | None,
            typer.Option(
                "--plot", help="Write acceptance vs temperature to this PNG (matplotlib)."
            ),
        ] = None,
    ) -> None:
        """α* per draft law and each verifier's acceptance and gap, averaged over positions."""
        P, Q, logits, meta = _positions(
            p_file, q_file, synthetic, vocab, positions, noise, zipf, seed
        )
        temps = parse_temperatures(temperatures)
        if logits and temps == [None]:
            temps = [0.5, 1.0, 2.0]
        if plot is not None and temps == [None]:
            raise ValueError("--plot: plotting against temperature needs --temperatures")
        if plot is not None:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise ValueError("--plot: needs matplotlib; pip install 'mdsd-ot[plot]'") from None
        m = 1 if P.ndim == 1 else P.shape[0]
        total = m * len(temps)
        report = _run(P, Q, n, temps, logits, samples, seed, meta, total)
        if plot is not None:
            import matplotlib.pyplot as plt

            from ..reports import plot_gap

            plt.close(plot_gap(report, plot))
            report["plot"] = plot
        if as_json:
            typer.echo(json.dumps(report, indent=2))
        else:
            print_table(report)
            if plot is not None:
                typer.echo(f"wrote {plot}")


def _run(P, Q, n, temps, logits, samples, seed, meta, total):
    """The report, with a rich progress bar on stderr (a terminal) over many positions."""
    from ..reports import gap_report

    kwargs = dict(temperatures=temps, logits=logits, samples=samples, seed=seed, meta=meta)
    if total < 8:
        return gap_report(P, Q, n, **kwargs)
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("positions", total=total)
        return gap_report(P, Q, n, progress=lambda k: bar.advance(task, k), **kwargs)
