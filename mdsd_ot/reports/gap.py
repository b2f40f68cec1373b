r"""The gap report on rows in memory (the synthetic family, ``.npy``/``.json`` files).

For every position (a target ``p`` and a draft model ``q``), every draft law L built from q with
``n`` drafts (:func:`laws_for`: with and without replacement, conditional Poisson, greedy, and
SpecHub when n = 2) and every verifier v defined for L (:func:`mdsd_ot.verifiers.applicable`):

.. math:: \text{gap}(v) = \alpha^*(p, L) - \text{acceptance}(v; p, L) \ \ge 0 \quad (T11),

averaged over the positions with the standard error of the mean over positions
(:math:`s / \sqrt m`; with one position, the Monte-Carlo standard error where one applies) and
quantiles.  The per-position numbers come from :func:`mdsd_ot.reports.evaluate.evaluate` and the
summaries from :func:`mdsd_ot.reports.summary.summarise`, the same code as the shard report
(:mod:`mdsd_ot.reports.report`); the result keys are documented in ``docs/report.md``.

Temperatures: logits are divided by T (:mod:`mdsd_ot.synthetic`); probability rows are tempered
as :math:`p_T \propto p^{1/T}` (:func:`temper`, the same as dividing logits by T).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _validate as V_
from ..synthetic import softmax
from .evaluate import evaluate
from .laws import report_laws
from .summary import DEFAULT_DEPTH, summarise

__all__ = ["gap_report", "temper", "laws_for"]


def laws_for(n: int) -> tuple[str, ...]:
    """The draft-law schemes reported for ``n`` drafts (:func:`~.laws.report_laws`)."""
    return report_laws(n)


def temper(P: np.ndarray, temperature: float | None) -> np.ndarray:
    r"""Rows :math:`p^{1/T} / \sum p^{1/T}` (zeros stay zero); ``None`` returns ``P`` unchanged.

    Examples
    --------
    >>> temper(np.array([0.2, 0.8]), 0.5).round(6)
    array([0.058824, 0.941176])
    """
    if temperature is None:
        return P
    with np.errstate(divide="ignore"):
        logs = np.log(P)
    out = softmax(np.where(np.isfinite(logs), logs, -np.inf), temperature)
    return np.where(P > 0, out, 0.0)


def gap_report(
    P: Any,
    Q: Any,
    n: int,
    *,
    temperatures: Sequence[float | None] = (None,),
    logits: bool = False,
    samples: int = 2000,
    seed: int = 0,
    exact_max_tuples: int = 4096,
    optimal_max_v: int = 8,
    depth: int = DEFAULT_DEPTH,
    progress: Callable[[int], None] | None = None,
    meta: dict[str, Any] | None = None,
    keep_values: bool = False,
) -> dict[str, Any]:
    r"""α*, verifier acceptance and gap per draft law, averaged over positions, per temperature.

    Parameters
    ----------
    P, Q : (m, V) or (V,) array_like
        Target and draft rows: probabilities, or logits with ``logits=True``.
    n : int
        Number of drafts.
    temperatures : sequence of float or None
        ``None`` keeps the rows as given (probabilities only).  Logits are divided by T;
        probabilities are tempered as :math:`p^{1/T}` (:func:`temper`).
    samples : int
        Draft tuples per position for simulated acceptance.
    seed : int
        Seed of the simulation randomness.
    exact_max_tuples, optimal_max_v : int
        Size limits for enumeration and for the optimal verifier
        (:mod:`mdsd_ot.reports.evaluate`).
    depth : int
        Draft depth γ of the expected tokens per target call.
    progress : callable, optional
        Called with 1 after each (temperature, position).
    meta : dict, optional
        Extra fields copied into the report (e.g. the synthetic family's parameters).
    keep_values : bool
        Also keep the per-position values (``alpha_values`` per law, ``values`` per verifier),
        e.g. for paired comparisons between verifiers.

    Returns
    -------
    dict
        ``{"n", "V", "positions", "samples", "seed", "depth", "results": [...], ...meta}``; the
        results are those of :func:`mdsd_ot.reports.summary.summarise`.

    Examples
    --------
    >>> rep = gap_report([[0.5, 0.3, 0.2]], [[0.2, 0.3, 0.5]], 2)
    >>> [(r["law"], [v["name"] for v in r["verifiers"]]) for r in rep["results"]][:2]
    [('with', ['rrs-with', 'k-seq', 'optimal']), ('without', ['rrs-without', 'optimal'])]
    """
    n = V_.check_n(n)
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 1:
        raise ValueError(
            f"samples: the draft tuples per position must be an integer >= 1, got {samples!r}"
        )
    # probabilities keep their dtype until validated (a float32 row is checked to float32's
    # tolerance, as by fast.alpha_star and the CLI); logits are float64 from the start
    A = np.asarray(P, dtype=np.float64 if logits else None)
    B = np.asarray(Q, dtype=np.float64 if logits else None)
    if A.ndim == 1:
        A, B = A[None, :], B[None, :]
    if A.shape != B.shape or A.ndim != 2:
        raise ValueError(
            f"q: target and draft rows must have the same shape (m, V), got {A.shape} and {B.shape}"
        )
    if not logits:
        A, B = np.atleast_2d(V_.prob_batch(A, "p")), np.atleast_2d(V_.prob_batch(B, "q"))
    m, V = A.shape
    g = np.random.default_rng(seed)
    results = []
    for T in temperatures:
        if logits:
            if T is None:
                raise ValueError("temperatures: logits need a temperature (e.g. 1.0)")
            Pt, Qt = softmax(A, T), softmax(B, T)
        else:
            Pt, Qt = temper(A, T), temper(B, T)
        rows = evaluate(
            Pt, Qt, n, rng=g, samples=samples, exact_max_tuples=exact_max_tuples,
            optimal_max_v=optimal_max_v, progress=progress,
        )  # fmt: skip
        results += summarise(rows, n=n, temperature=T, depth=depth, keep_values=keep_values)
    return {
        "n": n,
        "V": V,
        "positions": m,
        "samples": samples,
        "seed": seed,
        "depth": depth,
        **(meta or {}),
        "results": results,
    }
