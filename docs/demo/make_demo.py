"""Regenerate the demo study's table and figures shown in docs/report.md (run from the repo root).

    PYTHONPATH=$PWD python docs/demo/make_demo.py

Builds the two byte-level n-gram models of the standard library's documentation
(:mod:`mdsd_ot.reports.demo`), writes the study as shards into a temporary directory, runs the
report (n = 2, 3, 4; temperatures 0.5, 1, 2 re-tempered from the stored logits) and writes
``docs/demo/table.txt`` (the table ``mdsd-ot report --demo`` prints), ``docs/demo/report.json``
and the PNG figures next to this script.  The docs build only reads these files.
"""

from __future__ import annotations

import contextlib
import io
import json
import platform
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
POSITIONS, NS, TEMPERATURES = 512, [2, 3, 4], [0.5, 1.0, 2.0]


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mdsd_ot.cli.report import _strip_values, print_table
    from mdsd_ot.reports import plot_gap, plot_histograms, report
    from mdsd_ot.reports.demo import demo_shards
    from mdsd_ot.reports.plots import save_png

    with tempfile.TemporaryDirectory() as tmp:
        demo_shards(tmp, positions=POSITIONS)
        rep = report(tmp, NS, temperatures=TEMPERATURES, keep_values=True, seed=0)
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5), sharey=True)
    for ax, n in zip(axes, NS, strict=True):
        plot_gap(rep, ax=ax, n=n)
    fig.tight_layout()
    save_png(fig, HERE / "acceptance.png")
    for n in (2, 4):
        save_png(plot_histograms(rep, n, 1.0), HERE / f"hist_n{n}_T1.png")
    _strip_values(rep)
    rep["source"] = "demo"
    rep["python"] = platform.python_version()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_table(
            rep,
            title=f"demo: byte n-gram models of the stdlib docs: V = 256, {POSITIONS} positions, "
            "n = 2, 3, 4 (mean ± s.e.) — re-tempered from stored logits",
        )
    (HERE / "table.txt").write_text(buf.getvalue())
    (HERE / "report.json").write_text(json.dumps(rep, indent=1) + "\n")
    sys.stdout.write(buf.getvalue())


if __name__ == "__main__":
    main()
