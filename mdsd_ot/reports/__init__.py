"""Reports: from target/draft rows to α*, verifier acceptance, gaps and plots (one family).

- :func:`report` (:mod:`.report`): a dataset of shards (:mod:`mdsd_ot.io`), serially or on
  Dask; ``mdsd-ot report``;
- :func:`gap_report` (:mod:`.gap`): rows in memory (the synthetic family, files); ``mdsd-ot gap``;
- both compute per-position values with :func:`.evaluate.evaluate` (α* from
  :func:`.laws.alpha_rows`) and summarise them with :func:`.summary.summarise`; tables, CSV and
  figures (:mod:`.summary`, :mod:`.plots`) serve both;
- :mod:`.demo`: the built-in offline study (byte-level n-gram models of the standard library's
  documentation), ``mdsd-ot report --demo``;
- :mod:`.crosscheck`: every exact formulation on the same instances (T1), ``mdsd-ot crosscheck``
  (the module is callable: ``mdsd_ot.reports.crosscheck(...)`` runs the cross-check); its
  instances (the built-in bank, random draws) are :mod:`.crosscheck_instances`.

The functions :func:`report` and :func:`evaluate` share their names with their modules; the
package attributes are the functions.
"""

from __future__ import annotations

from .evaluate import evaluate
from .gap import gap_report
from .plots import plot_gap, plot_histograms, write_plots
from .report import report
from .summary import summarise, table_rows, to_csv

__all__ = [
    "report",
    "gap_report",
    "evaluate",
    "summarise",
    "table_rows",
    "to_csv",
    "plot_gap",
    "plot_histograms",
    "write_plots",
]
