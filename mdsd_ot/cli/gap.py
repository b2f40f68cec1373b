"""``mdsd-ot gap``: α* of each draft law beside the acceptance of each verifier, and the gap.

Positions come from ``--p``/``--q`` (``--p-file``/``--q-file``: a comma list, or a file holding an
array of shape ``(V,)`` or ``(m, V)``, one target/draft row per position; the file types of
:mod:`mdsd_ot.cli._files`) or from the documented synthetic family (``--synthetic``,
:mod:`mdsd_ot.synthetic`).  Each number is averaged over the positions with its
standard error; how it was computed (fast solver, closed form, enumeration, simulation) is in the
``method`` column (see :mod:`mdsd_ot.reports.evaluate`).  This is the in-memory shortcut of
``mdsd-ot report`` (same computation, same result keys: :mod:`mdsd_ot.reports`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import numpy as np
import typer

from .._validate import checked_rows
from ._bounds import (
    MAX_DEPTH,
    MAX_ENTRIES,
    MAX_SAMPLES,
    MAX_VOCAB,
    check_entries,
    check_float,
    check_int,
    check_seed,
)
from ._common import (
    DEFAULT_DRAFTS,
    DepthOption,
    JsonOption,
    OutOption,
    SamplesOption,
    SeedOption,
    check_drafts_option,
    cli_command,
    option_names,
    option_os_errors,
)
from ._files import check_output_file, read_rows, write_text
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
            raise ValueError(
                f"--temperatures: each temperature must be a finite number > 0, got {s}"
            )
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
            "--synthetic: give either --synthetic or both --p and --q (--p-file/--q-file), not "
            "both, not neither"
        )
    if synthetic:
        from ..synthetic import synthetic_logits

        check_int(vocab, "--vocab", 2, MAX_VOCAB)
        check_int(positions, "--positions", 1, MAX_ENTRIES)
        check_float(noise, "--noise", lo=0.0)
        check_float(zipf, "--zipf", lo=0.0, lo_open=True)
        check_entries(positions, vocab, "--positions", "the synthetic batch")
        L, D = synthetic_logits(vocab, seed, noise=noise, zipf=zipf, size=positions)
        meta = {
            "source": "synthetic",
            "synthetic": {"V": vocab, "positions": positions, "noise": noise, "zipf": zipf,
                          "seed": seed},
        }  # fmt: skip
        return L, D, True, meta
    if p_file is None or q_file is None:
        which = "--p" if p_file is None else "--q"
        raise ValueError(f"{which}: give both --p and --q (or use --synthetic)")
    with option_names(p="--p", q="--q"):
        P = _rows64(read_rows(p_file, "--p"), "p")
        Q = _rows64(read_rows(q_file, "--q"), "q")
    if P.shape != Q.shape:
        raise ValueError(
            f"--q: shape {Q.shape} differs from --p's {P.shape}; give one draft row per target row"
        )
    return P, Q, False, {"source": "files", "p_file": p_file, "q_file": q_file}


def _rows64(x: Any, name: str) -> np.ndarray:
    """Rows checked at the tolerance of the dtype they are stored in (a float32 file at
    float32's), then as float64 numpy rows renormalised in float64; the shape of ``x``."""
    X, single = checked_rows(x, name)
    if not isinstance(X, np.ndarray):  # a tensor: float32 or float64 rows
        X = X.detach().cpu().double().numpy()
        X = X / X.sum(-1, keepdims=True)
    return X[0] if single else X


def register(app: typer.Typer) -> None:
    """Add the ``gap`` command to ``app``."""

    @app.command("gap")
    @cli_command
    def gap_cmd(
        p_file: Annotated[
            str | None,
            typer.Option(
                "--p",
                "--p-file",
                help="Targets: a comma list or a file (.npy, .npz, .json, .pt, .safetensors) of "
                "shape (V,) or (m, V).",
            ),
        ] = None,
        q_file: Annotated[
            str | None,
            typer.Option("--q", "--q-file", help="Draft models q, same shape as --p."),
        ] = None,
        synthetic: Annotated[
            bool, typer.Option("--synthetic", help="Use the synthetic family (mdsd_ot.synthetic).")
        ] = False,
        n: Annotated[
            int, typer.Option("-n", "--drafts", help="Number of drafts.")
        ] = DEFAULT_DRAFTS,
        temperatures: Annotated[
            str | None,
            typer.Option(
                "--temperatures",
                help="Comma list, e.g. 0.5,1,2 (synthetic default 0.5,1,2; files: p^(1/T)).",
            ),
        ] = None,
        vocab: Annotated[
            int,
            typer.Option("--vocab", help=f"Synthetic vocabulary size V, in [2, {MAX_VOCAB:,}]."),
        ] = 1000,
        positions: Annotated[
            int,
            typer.Option(
                "--positions",
                help=f"Synthetic positions per temperature (positions x V <= {MAX_ENTRIES:,}).",
            ),
        ] = 16,
        noise: Annotated[
            float, typer.Option("--noise", help="Synthetic draft logit noise σ >= 0.")
        ] = 1.0,
        zipf: Annotated[float, typer.Option("--zipf", help="Synthetic Zipf exponent s > 0.")] = 1.0,
        samples: SamplesOption = 2000,
        seed: SeedOption = 0,
        depth: DepthOption = 4,
        as_json: JsonOption = False,
        plot: Annotated[
            str | None,
            typer.Option(
                "--plot", help="Write acceptance vs temperature to this PNG (matplotlib)."
            ),
        ] = None,
        out: OutOption = None,
    ) -> None:
        """α* per draft law and each verifier's acceptance and gap, averaged over positions."""
        check_drafts_option(n)
        check_int(samples, "--samples", 1, MAX_SAMPLES)
        check_int(depth, "--depth", 0, MAX_DEPTH)
        check_seed(seed)
        temps = parse_temperatures(temperatures)
        if plot is not None:
            check_output_file(plot, "--plot", (".png",))
        if out is not None:
            check_output_file(out, "--out", (".json",))
        if plot is not None and temps == [None] and not synthetic:
            raise ValueError("--plot: plotting against temperature needs --temperatures")
        if plot is not None:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise ValueError("--plot: needs matplotlib; pip install 'mdsd-ot[plot]'") from None
        P, Q, logits, meta = _positions(
            p_file, q_file, synthetic, vocab, positions, noise, zipf, seed
        )
        if logits and temps == [None]:
            temps = [0.5, 1.0, 2.0]
        m = 1 if P.ndim == 1 else P.shape[0]
        total = m * len(temps)
        report = _run(P, Q, n, temps, logits, samples, seed, depth, meta, total)
        if plot is not None:
            import matplotlib.pyplot as plt

            from ..reports import plot_gap

            with option_os_errors("--plot"):
                plt.close(plot_gap(report, plot))
            report["plot"] = plot
        if out is not None:
            write_text(out, "--out", json.dumps(report, indent=2) + "\n")
        if as_json:
            typer.echo(json.dumps(report, indent=2))
        else:
            print_table(report)
            if plot is not None:
                typer.echo(f"wrote {plot}")
            if out is not None:
                typer.echo(f"wrote {out}")


def _run(P, Q, n, temps, logits, samples, seed, depth, meta, total):
    """The report, with a rich progress bar on stderr (a terminal) over many positions."""
    from ..reports import gap_report

    kwargs = dict(
        temperatures=temps, logits=logits, samples=samples, seed=seed, depth=depth, meta=meta
    )
    if total < 8:
        return gap_report(P, Q, n, **kwargs)
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("positions", total=total)
        return gap_report(P, Q, n, progress=lambda k: bar.advance(task, k), **kwargs)
