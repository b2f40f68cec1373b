"""Figures of a report: acceptance against temperature, per-position histograms (matplotlib).

matplotlib is imported when a figure is drawn (``pip install 'mdsd-ot[plot]'``).  Files are
written under a temporary name and renamed when complete (:func:`save_png`, through
:mod:`mdsd_ot._outputs`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._outputs import atomic_write

__all__ = ["plot_gap", "plot_histograms", "save_png", "write_plots"]


def _plt(path_given: bool) -> Any:
    try:
        import matplotlib

        if path_given:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plotting a report needs matplotlib; pip install 'mdsd-ot[plot]'"
        ) from exc
    return plt


def save_png(fig: Any, path: str | os.PathLike, *, option: str = "path") -> Path:
    """Save ``fig`` as a PNG at ``path`` atomically (:func:`mdsd_ot._outputs.atomic_write`).

    A failed write (an :class:`OSError`) is a ValueError naming ``option`` and the file, and
    leaves nothing behind.
    """

    def save(fh: Any) -> None:
        fig.savefig(fh, dpi=120, bbox_inches="tight", format="png")

    return atomic_write(path, option, save, binary=True)


def _results(report: dict[str, Any], n: int | None) -> list[dict[str, Any]]:
    res = [r for r in report["results"] if r["temperature"] is not None]
    if n is not None:
        res = [r for r in res if r.get("n", report.get("n")) == n]
    return res


def plot_gap(
    report: dict[str, Any], path: str | None = None, ax: Any = None, n: int | None = None
) -> Any:
    """Acceptance against temperature: one line per verifier, dashed lines for the α* bounds.

    ``n`` selects the number of drafts of a multi-n report.  Writes a PNG to ``path`` when given
    and returns the matplotlib figure.
    """
    plt = _plt(ax is None and path is not None)
    res = _results(report, n)
    if not res:
        raise ValueError("temperatures: the plot needs at least one numeric temperature")
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    laws = list(dict.fromkeys(r["law"] for r in res))
    colours = {law: f"C{i}" for i, law in enumerate(laws)}
    markers = "osv^Dpx*"
    for law in laws:
        rows = sorted((r for r in res if r["law"] == law), key=lambda r: r["temperature"])
        Ts = [r["temperature"] for r in rows]
        al = [r["alpha_star"]["mean"] if r["alpha_star"] else np.nan for r in rows]
        if not all(np.isnan(al)):
            ax.plot(Ts, al, "--", color=colours[law], lw=1.2, label=f"α* ({law})")
        names = list(dict.fromkeys(v["name"] for r in rows for v in r["verifiers"]))
        for j, name in enumerate(names):
            ys, es = [], []
            for r in rows:
                v = next((v for v in r["verifiers"] if v["name"] == name), None)
                acc = v["acceptance"] if v else None
                ys.append(acc["mean"] if acc else np.nan)
                es.append(acc["se"] if acc else np.nan)
            ax.errorbar(
                Ts, ys, yerr=es, color=colours[law], marker=markers[j % len(markers)],
                lw=1.5, ms=4, capsize=2, label=f"{name} ({law})",
            )  # fmt: skip
    nn = n if n is not None else report.get("n")
    ax.set_xlabel("temperature")
    ax.set_ylabel("acceptance probability")
    ax.set_title(f"verifier acceptance vs α* (n = {nn}, V = {report['V']})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    if path is not None:
        save_png(fig, path)
    return fig


def plot_histograms(
    report: dict[str, Any], n: int, temperature: float, path: str | None = None
) -> Any:
    """Per-position histograms at one (n, temperature): one panel per law, α* and each verifier.

    Needs a report computed with ``keep_values=True``.
    """
    plt = _plt(path is not None)
    res = [
        r
        for r in report["results"]
        if r.get("n", report.get("n")) == n and r["temperature"] == temperature
    ]
    if not res or "alpha_values" not in res[0]:
        raise ValueError("report: histograms need per-position values (keep_values=True)")
    fig, axes = plt.subplots(1, len(res), figsize=(3.2 * len(res), 3.0), sharey=True, squeeze=False)
    bins = np.linspace(0.0, 1.0, 41)
    for ax, r in zip(axes[0], res, strict=True):
        series = [("α*", r["alpha_values"])] + [(v["name"], v["values"]) for v in r["verifiers"]]
        for j, (label, vals) in enumerate(series):
            x = np.array([v for v in vals if v is not None], dtype=np.float64)
            x = np.clip(x, 0.0, 1.0)  # 1 + 1e-16 from rounding belongs to the last bin
            if x.size:
                ax.hist(x, bins=bins, histtype="step", lw=1.5, color=f"C{j}", label=label)
        ax.set_title(r["law"], fontsize=9)
        ax.set_xlabel("per-position value")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("positions")
    fig.suptitle(f"n = {n}, T = {temperature:g}: α* and acceptance per position", fontsize=10)
    fig.tight_layout()
    if path is not None:
        save_png(fig, path)
    return fig


def write_plots(report: dict[str, Any], directory: str | os.PathLike) -> list[Path]:
    """All figures of a report into ``directory``: ``acceptance_n{n}.png`` and
    ``hist_n{n}_T{T}.png`` (the latter need ``keep_values=True``)."""
    plt = _plt(True)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = []
    ns = list(dict.fromkeys(r.get("n", report.get("n")) for r in report["results"]))
    for n in ns:
        fig = plot_gap(report, d / f"acceptance_n{n}.png", n=n)
        plt.close(fig)
        out.append(d / f"acceptance_n{n}.png")
        temps = dict.fromkeys(r["temperature"] for r in _results(report, n) if "alpha_values" in r)
        for T in temps:
            f = d / f"hist_n{n}_T{T:g}.png"
            plt.close(plot_histograms(report, n, T, f))
            out.append(f)
    return out
