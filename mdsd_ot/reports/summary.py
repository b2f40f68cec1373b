r"""From per-position values to the report's results, its table rows and its CSV.

One *result* per (n, temperature, law), with stable keys (documented in ``docs/report.md``):

``n``, ``temperature``, ``law``, ``positions``
    The group and its number of positions.
``alpha_star``, ``alpha_method``, ``alpha_star_tokens``
    α* of the law (a summary, :func:`mdsd_ot.reports.stats.stat`: ``mean``, ``se``, ``q05`` …
    ``q95``), how it was computed, and the expected tokens per target call it would allow.
``verifiers``
    A list of ``{"name", "method", "acceptance", "gap", "tokens"}``: each verifier defined for the
    law, its acceptance, the gap :math:`\alpha^* - \text{acceptance}` (T11: ≥ 0) and its expected
    tokens per target call (:func:`~mdsd_ot.reports.stats.expected_tokens`).
``skipped``, ``skipped_positions`` (only when present)
    Why some positions of this law have no value, and how many of the ``positions`` they are
    (the summaries are over the others).

Examples
--------
>>> from mdsd_ot.reports.evaluate import evaluate
>>> res = summarise(evaluate([[0.5, 0.5]], [[0.9, 0.1]], 2, rng=0, laws=["with"]), n=2,
...                 temperature=1.0)
>>> res[0]["law"], round(res[0]["alpha_star"]["mean"], 4), res[0]["verifiers"][0]["name"]
('with', 0.69, 'rrs-with')
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from .evaluate import LawRows
from .stats import QUANTILE_KEYS, expected_tokens, stat

__all__ = ["DEFAULT_DEPTH", "summarise", "table_rows", "to_csv", "CSV_COLUMNS"]

#: Default draft depth γ of the expected-tokens column.
DEFAULT_DEPTH: int = 4


def _list(a: np.ndarray) -> list[float | None]:
    return [None if not np.isfinite(x) else float(x) for x in a]


def summarise(
    rows: Sequence[LawRows],
    *,
    n: int,
    temperature: float | None,
    depth: int = DEFAULT_DEPTH,
    keep_values: bool = False,
) -> list[dict[str, Any]]:
    """One result per law (module docstring); ``keep_values`` keeps the per-position values."""
    out = []
    for r in rows:
        m = len(r.alpha)
        res: dict[str, Any] = {
            "n": int(n),
            "temperature": temperature,
            "law": r.law,
            "positions": m,
            "alpha_star": stat(r.alpha),
            "alpha_method": r.alpha_method,
            "alpha_star_tokens": stat(expected_tokens(r.alpha, depth)),
            "verifiers": [],
        }
        for name in r.names:
            acc = r.acceptance[name]
            se1 = float(r.se[name][0]) if m == 1 else 0.0
            row = {
                "name": name,
                "method": r.method[name],
                "acceptance": stat(acc, se1),
                "gap": stat(_gap(r.alpha, acc, r.se[name]), se1),
                "tokens": stat(expected_tokens(acc, depth)),
            }
            if keep_values:
                row["values"] = _list(acc)
            res["verifiers"].append(row)
        if keep_values:
            res["alpha_values"] = _list(r.alpha)
        if r.skipped:
            res["skipped"] = r.skipped
            # how many of the group's positions have no value (the summaries leave them out)
            res["skipped_positions"] = int(np.count_nonzero(np.isnan(np.asarray(r.alpha, float))))
        out.append(res)
    return out


def table_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Flatten a report: one dict per (n, temperature, law, verifier) with α*, acceptance, gap,
    and the group's ``positions``, ``skipped_positions`` (0 when none) and ``skipped`` (None
    when none).

    A law with no verifier (e.g. conditional Poisson, unless ``optimal`` is reported) gives one
    row with ``verifier = None``.
    """
    rows = []
    for r in report["results"]:
        base = {
            "n": r.get("n", report.get("n")),
            "temperature": r["temperature"],
            "law": r["law"],
            "alpha_star": r["alpha_star"],
            "alpha_star_tokens": r.get("alpha_star_tokens"),
            "positions": r.get("positions"),
            "skipped_positions": r.get("skipped_positions", 0),
            "skipped": r.get("skipped"),
        }
        if not r["verifiers"]:
            rows.append(
                {**base, "verifier": None, "method": None, "acceptance": None, "gap": None,
                 "tokens": None}
            )  # fmt: skip
        for v in r["verifiers"]:
            rows.append(
                {
                    **base,
                    "verifier": v["name"],
                    "method": v["method"],
                    "acceptance": v["acceptance"],
                    "gap": v["gap"],
                    "tokens": v.get("tokens"),
                }
            )
    return rows


_STATS = ("alpha_star", "acceptance", "gap", "tokens")
#: The CSV columns (one line per row of :func:`table_rows`); the last three say how many
#: positions the group has, how many of them the law skipped (its summaries are over the
#: others) and why (empty when none).
CSV_COLUMNS: tuple[str, ...] = (
    "n", "temperature", "law", "verifier", "method",
    *(f"{s}_{k}" for s in _STATS for k in ("mean", "se", *QUANTILE_KEYS)),
    "positions", "skipped_positions", "skipped",
)  # fmt: skip


def to_csv(report: dict[str, Any]) -> str:
    """The report as CSV text (:data:`CSV_COLUMNS`; empty cells where a value is undefined)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in table_rows(report):
        line = [r["n"], "" if r["temperature"] is None else r["temperature"], r["law"]]
        line += [r["verifier"] or "", r["method"] or ""]
        for s in _STATS:
            st = r[s] or {}
            line += [repr(st[k]) if k in st else "" for k in ("mean", "se", *QUANTILE_KEYS)]
        line += ["" if r["positions"] is None else r["positions"], r["skipped_positions"]]
        line += [r["skipped"] or ""]
        w.writerow(line)
    return buf.getvalue()


def _gap(alpha: np.ndarray, acc: np.ndarray, se: np.ndarray) -> np.ndarray:
    """α* − acceptance per position, at least 0 where the acceptance is not a Monte-Carlo
    estimate (se = 0): T11 makes it ≥ 0, so a negative value there is rounding (≤ 1e-12)."""
    gap = alpha - acc
    return np.where((se == 0) & (gap < 0) & (gap >= -1e-12), 0.0, gap)
