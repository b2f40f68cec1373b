r"""The report on a dataset of shards: α* per law, every verifier's acceptance, gaps, tokens.

For every shard position (:mod:`mdsd_ot.io`), every number of drafts n, every temperature and
every draft law built from the draft model q (:func:`~mdsd_ot.reports.laws.report_laws`):
α* per position by the fast solver (T7), the acceptance of every verifier defined for the law
(closed form, exact or simulated: the ``method`` field), the gap α* − acceptance (T11: ≥ 0)
and the expected tokens per target call, each summarised over positions (mean ± s.e.,
quantiles) by :func:`~mdsd_ot.reports.summary.summarise`; the JSON keys are documented in
``docs/report.md``.

Temperatures are those the shards were collected at (metadata ``temperature``).  With
``temperatures=...`` the rows are recomputed from the stored logits (``logits_p``/``logits_q``)
by :func:`mdsd_ot.io.warp` with the shard's top-k/top-p, which is allowed only when every shard
holds logits; the report then says ``"retempered": true``.

The work is split into tasks of consecutive rows of one shard (each reads its rows itself,
memory-mapped, and seeds its randomness from ``(seed, shard, first row)``); they run serially or
on Dask (:mod:`mdsd_ot.reports.parallel`) with identical results.

Examples
--------
>>> import tempfile
>>> from mdsd_ot.io import make_metadata, write_shard
>>> d = tempfile.mkdtemp()
>>> meta = make_metadata("t", "d", temperature=1.0, top_k=0, top_p=1.0, vocab_size=3)
>>> _ = write_shard(f"{d}/a.npz", [[0.5, 0.3, 0.2]] * 2, [[0.2, 0.3, 0.5]] * 2, metadata=meta)
>>> rep = report(d, [2], laws=["with"])
>>> rep["positions"], [v["name"] for v in rep["results"][0]["verifiers"]]
(2, ['rrs-with', 'k-seq', 'optimal'])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate as V_
from ..io import CHUNK_ENTRIES, Shard, shard_files, warp
from ..verifiers import NAMES as VERIFIER_NAMES
from .evaluate import LawRows, _verifier_names, concat, evaluate
from .laws import report_laws
from .parallel import map_tasks
from .summary import DEFAULT_DEPTH, summarise

__all__ = ["SCHEMA", "Task", "run_task", "report", "plan", "unmatched_verifiers"]

#: The ``schema`` field of the report's JSON.
SCHEMA = "mdsd-ot/report/1"


@dataclass(frozen=True)
class Task:
    """Rows ``start:stop`` of the shard ``path`` (the ``index``-th of the dataset) and what to do."""

    index: int
    path: str
    start: int
    stop: int
    ns: tuple[int, ...]
    laws: dict[int, tuple[str, ...]]
    verifiers: tuple[str, ...] | None
    temperatures: tuple[float, ...] | None
    samples: int
    seed: int
    exact_max_tuples: int
    optimal_max_v: int
    #: The dataset position of row ``start`` (shards in order): what ``skipped`` names.
    offset: int = 0


def run_task(
    task: Task, progress: Callable[[int], None] | None = None
) -> dict[tuple[int, float], list[LawRows]]:
    """Per-position values of one task: ``{(n, temperature): [LawRows per law]}``."""
    shard = Shard(task.path)
    rows = shard.rows(task.start, task.stop)
    g = np.random.default_rng([task.seed, task.index, task.start])
    out = {}
    for T in task.temperatures or (shard.temperature,):
        if task.temperatures:
            P = warp(rows["logits_p"], T, shard.top_k, shard.top_p)
            Q = warp(rows["logits_q"], T, shard.top_k, shard.top_p)
        else:
            P, Q = rows["p"], rows["q"]
        for n in task.ns:
            out[(n, T)] = evaluate(
                P, Q, n, rng=g, laws=task.laws[n], verifiers=task.verifiers,
                samples=task.samples, exact_max_tuples=task.exact_max_tuples,
                optimal_max_v=task.optimal_max_v, progress=progress,
                first_position=task.offset,
            )  # fmt: skip
    return out


def _laws_by_n(ns: Sequence[int], laws: Sequence[str] | None) -> dict[int, tuple[str, ...]]:
    out = {n: report_laws(n) for n in ns}
    if laws is None:
        return out
    every = {x for v in out.values() for x in v}
    bad = [x for x in laws if x not in every]
    if bad:
        raise ValueError(
            f"--laws: unknown or unreportable law(s) {', '.join(map(repr, bad))}; choose from "
            f"{', '.join(dict.fromkeys(x for v in out.values() for x in v))}"
        )
    return {n: tuple(x for x in v if x in laws) for n, v in out.items()}


def unmatched_verifiers(
    ns: Sequence[int], laws: Sequence[str] | None, verifiers: Sequence[str] | None, V: int
) -> dict[str, list[tuple[str, int]]]:
    """The requested verifiers defined for none of the requested (law, n): each with the
    ``(law, n)`` it is defined for among the laws the report covers at those n (may be empty).

    A verifier is matched to a law as :func:`~mdsd_ot.reports.evaluate.evaluate` matches it
    (:func:`mdsd_ot.verifiers.applicable` on the law over V tokens); an unmatched one gives no
    row, so the report would show "—" for it without a word.

    Examples
    --------
    >>> unmatched_verifiers([2], ["with"], ["spechub", "k-seq"], 4)
    {'spechub': [('spechub', 2)]}
    """
    if verifiers is None:
        return {}
    ns = [int(n) for n in ns]
    by_n = _laws_by_n(ns, laws)
    wanted: set[str] = set()
    defined: dict[str, list[tuple[str, int]]] = {v: [] for v in verifiers}
    for n in ns:
        for law in report_laws(n):
            try:
                names = _verifier_names(law, n, V, None)
            except ValueError:  # e.g. fewer tokens than distinct drafts: the law is skipped
                continue
            for v in names:
                if v in defined:
                    defined[v].append((law, n))
                    if law in by_n[n]:
                        wanted.add(v)
    return {v: where for v, where in defined.items() if v not in wanted}


def plan(
    source: str | os.PathLike,
    ns: Sequence[int],
    *,
    laws: Sequence[str] | None = None,
    verifiers: Sequence[str] | None = None,
    temperatures: Sequence[float] | None = None,
    samples: int = 2000,
    seed: int = 0,
    exact_max_tuples: int = 4096,
    optimal_max_v: int = 8,
    chunk_rows: int | None = None,
) -> tuple[list[Task], list[Shard]]:
    """Check the dataset's headers and the options; split the work into :class:`Task` s."""
    ns = tuple(V_.check_n(int(n), "-n") for n in ns)
    if not ns:
        raise ValueError("-n: give at least one number of drafts, e.g. -n 2,3,4")
    if verifiers is not None:
        bad = [x for x in verifiers if x not in VERIFIER_NAMES]
        if bad:
            raise ValueError(
                f"--verifiers: unknown verifier(s) {', '.join(map(repr, bad))}; choose from "
                f"{', '.join(VERIFIER_NAMES)}"
            )
    for val, name, lo in ((samples, "--samples", 1), (seed, "--seed", 0)):
        if isinstance(val, bool) or not isinstance(val, int | np.integer) or val < lo:
            raise ValueError(f"{name}: must be an integer >= {lo}, got {val!r}")
    by_n = _laws_by_n(ns, laws)
    shards = [Shard(f) for f in shard_files(source)]
    first = shards[0]
    for s in shards[1:]:
        if s.V != first.V:
            raise ValueError(
                f"{s.path}: V = {s.V} but {first.path.name} has V = {first.V}; the shards of a "
                "dataset share one vocabulary"
            )
    if temperatures is not None:
        temperatures = tuple(float(t) for t in temperatures)
        if not temperatures:
            raise ValueError(
                "--temperatures: give at least one temperature, or None to use the stored rows"
            )
        for t in temperatures:
            if not np.isfinite(t) or t <= 0:
                raise ValueError(f"--temperatures: each temperature must be > 0, got {t}")
        no_logits = [s for s in shards if not s.has_logits]
        if no_logits:
            raise ValueError(
                f"--temperatures: {no_logits[0].path} holds no logits (logits_p/logits_q), so its "
                "rows cannot be re-tempered; collect with --logits, or drop --temperatures to "
                "report the temperature the shards were collected at"
            )
    step = max(1, CHUNK_ENTRIES // first.V) if chunk_rows is None else max(1, int(chunk_rows))
    before = np.concatenate([[0], np.cumsum([s.m for s in shards])]).astype(int).tolist()
    tasks = [
        Task(
            k,
            str(Path(s.path).resolve()),  # absolute: a worker may run in another directory
            start,
            min(start + step, s.m),
            ns,
            by_n,
            None if verifiers is None else tuple(verifiers),
            temperatures,
            int(samples),
            int(seed),
            int(exact_max_tuples),
            int(optimal_max_v),
            before[k] + start,
        )  # fmt: skip
        for k, s in enumerate(shards)
        for start in range(0, s.m, step)
    ]
    return tasks, shards


def report(
    source: str | os.PathLike,
    ns: Sequence[int] = (2, 3, 4),
    *,
    laws: Sequence[str] | None = None,
    verifiers: Sequence[str] | None = None,
    temperatures: Sequence[float] | None = None,
    samples: int = 2000,
    seed: int = 0,
    depth: int = DEFAULT_DEPTH,
    workers: int | None = None,
    scheduler: str | None = None,
    processes: bool = True,
    keep_values: bool = False,
    exact_max_tuples: int = 4096,
    optimal_max_v: int = 8,
    chunk_rows: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    r"""The report of a shard file or directory (module docstring).

    Parameters
    ----------
    source : path
        A ``.safetensors``/``.npz`` shard or a directory of shards.
    ns : sequence of int
        Numbers of drafts.
    laws, verifiers : sequence of str, optional
        Restrict the draft laws and the verifiers (default: all that apply).
    temperatures : sequence of float, optional
        Re-temper the stored logits at these temperatures (shards must hold logits).
    samples, seed : int
        Draft tuples per position for simulated acceptance, and the seed of that randomness.
    depth : int
        Draft depth γ of the expected tokens per target call.
    workers, scheduler : optional
        Run on Dask: a local cluster of ``workers`` workers, or the scheduler at ``scheduler``.
    processes : bool
        Local Dask workers as processes (default) or threads.
    keep_values : bool
        Keep the per-position values (for histograms; large).
    chunk_rows : int, optional
        Rows per task (default: about :data:`mdsd_ot.io.CHUNK_ENTRIES` / V).
    progress : callable, optional
        Called with a number of finished (position, n, temperature) items.

    Returns
    -------
    dict
        ``{"schema", "source", "shards", "V", "positions", "n", "temperatures", "retempered",
        "targets", "drafts", "samples", "seed", "depth", "results"}``.
    """
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < 0:
        raise ValueError(f"--depth: the draft depth must be an integer >= 0, got {depth!r}")
    tasks, shards = plan(
        source, ns, laws=laws, verifiers=verifiers, temperatures=temperatures, samples=samples,
        seed=seed, exact_max_tuples=exact_max_tuples, optimal_max_v=optimal_max_v,
        chunk_rows=chunk_rows,
    )  # fmt: skip
    ns = tasks[0].ns
    per = len(ns) * (len(temperatures) if temperatures is not None else 1)
    parts = map_tasks(
        run_task, tasks, workers=workers, scheduler=scheduler, processes=processes,
        weights=[(t.stop - t.start) * per for t in tasks], progress=progress,
    )  # fmt: skip
    keys = sorted({k for part in parts for k in part})
    results = []
    for n, T in keys:
        rows = concat([part[(n, T)] for part in parts if (n, T) in part])
        results += summarise(rows, n=n, temperature=T, depth=depth, keep_values=keep_values)
    return {
        "schema": SCHEMA,
        "source": str(source),
        "shards": len(shards),
        "V": shards[0].V,
        "positions": sum(s.m for s in shards),
        "n": list(ns),
        "temperatures": list(dict.fromkeys(T for _, T in keys)),
        "retempered": temperatures is not None,
        "targets": list(dict.fromkeys(s.metadata["target"] for s in shards)),
        "drafts": list(dict.fromkeys(s.metadata["draft"] for s in shards)),
        "samples": int(samples),
        "seed": int(seed),
        "depth": int(depth),
        "results": results,
    }
