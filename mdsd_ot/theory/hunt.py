r"""Counterexample hunting: random restarts plus local search on the simplex.

Each conjecture (:mod:`mdsd_ot.theory.conjectures`) has a float ``violation(x)`` (> 0 means the
conjecture fails at ``x``), and an exact ``confirm``: the float optimum is rounded to
rationals on the grid k/D, D ∈ {10², 10³, 10⁴, 10⁵} (the coarsest grid that still violates),
and the violation is recomputed in Fractions; only a confirmed exact violation becomes a
witness (readable by ``mdsd-ot claims --witness``).

Search: sample an instance (Dirichlet vectors; V and n drawn from the conjecture's ranges), then
hill-climb by multiplicative log-normal perturbations of the probability vectors with a step
that shrinks on failure; restart after 40 failures in a row or 300 steps.

.. math::

   x \leftarrow \mathrm{normalise}\big(x \odot e^{\sigma \xi}\big),\quad \xi \sim N(0, I),
   \quad \text{accepted iff the violation increases.}

Two bounds stop the search, whichever comes first: ``max_evals`` evaluations of the violation
(deterministic: the same seed and ``max_evals`` give the same witness, byte for byte) and a
wall-clock ``budget`` in seconds (not reproducible: how far the search gets depends on the
machine).  :attr:`HuntResult.bounded_by` says which one stopped it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .conjectures import CONJECTURES, Conjecture, SearchPoint, get
from .instances import to_rational

__all__ = [
    "Conjecture",
    "SearchPoint",
    "HuntResult",
    "CONJECTURES",
    "get",
    "run",
    "check_budget",
    "check_evals",
    "listing",
    "MAX_BUDGET",
    "MAX_EVALS",
]

LOCAL_STEPS = 300  # local-search steps per restart
FLOOR = 1e-4  # entries are kept ≥ FLOOR so distinct-token laws stay defined after rounding

#: Largest time budget accepted, in seconds (one week).
MAX_BUDGET: float = 7 * 24 * 3600.0
#: Largest evaluation budget accepted.
MAX_EVALS: int = 10**9


@dataclass(frozen=True)
class HuntResult:
    """Outcome of a hunt: the best float violation and, if confirmed exactly, a witness.

    ``bounded_by`` is ``"evals"`` (``max_evals`` evaluations done: reproducible), ``"budget"``
    (the time budget ran out: not reproducible) or ``"found"`` (``stop_when_found``).
    """

    conjecture: str
    value: float
    exact_value: Fraction | None
    witness: dict[str, Any] | None
    evaluations: int
    restarts: int
    seconds: float
    budget: float | None
    seed: int
    max_evals: int | None = None
    bounded_by: str = "budget"

    @property
    def found(self) -> bool:
        return self.witness is not None

    @property
    def reproducible(self) -> bool:
        """True when the evaluation budget (not the clock) decided where the search stopped."""
        return self.bounded_by != "budget"


# --------------------------------------------------------------------------------------------
# validation of the bounds


def check_budget(budget: Any, name: str = "budget") -> float:
    """A time budget in seconds: a finite number in (0, :data:`MAX_BUDGET`].

    Examples
    --------
    >>> check_budget(2)
    2.0
    >>> check_budget(float("nan"), "--budget")
    Traceback (most recent call last):
    ...
    ValueError: --budget: give a finite number of seconds in (0, 604800], got nan; ...
    """
    number = isinstance(budget, int | float | np.integer | np.floating)
    b = float(budget) if number and not isinstance(budget, bool) else math.nan
    if not (math.isfinite(b) and 0 < b <= MAX_BUDGET):
        raise ValueError(
            f"{name}: give a finite number of seconds in (0, {MAX_BUDGET:g}], got {budget!r}; "
            "for a reproducible search bound the evaluations instead (--evals N)"
        )
    return b


def check_evals(evals: Any, name: str = "max_evals") -> int:
    """An evaluation budget: a whole number in [1, :data:`MAX_EVALS`].

    Examples
    --------
    >>> check_evals(500)
    500
    >>> check_evals(0, "--evals")
    Traceback (most recent call last):
    ...
    ValueError: --evals: give a whole number of evaluations in [1, 1000000000], got 0
    """
    ok = isinstance(evals, int | np.integer) and not isinstance(evals, bool)
    if not ok or not 1 <= int(evals) <= MAX_EVALS:
        raise ValueError(
            f"{name}: give a whole number of evaluations in [1, {MAX_EVALS}], got {evals!r}"
        )
    return int(evals)


def listing() -> list[dict[str, Any]]:
    """The conjectures as rows (``mdsd-ot hunt --list``): name, claim, statement, ranges.

    Examples
    --------
    >>> listing()[0]["name"], listing()[0]["claim"]
    ('greedy-vs-without', 'T9b')
    """
    return [
        {
            "name": c.name,
            "claim": c.claim,
            "statement": c.statement,
            "V": list(c.Vs),
            "n": list(c.ns),
        }
        for c in CONJECTURES.values()
    ]


# --------------------------------------------------------------------------------------------
# the search


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.maximum(v, FLOOR)
    return v / v.sum()


def _sample(c: Conjecture, rng: np.random.Generator) -> SearchPoint:
    V = int(rng.choice(c.Vs))
    n = int(rng.choice([m for m in c.ns if m < V] or [min(c.ns)]))
    conc = float(rng.choice([0.3, 1.0, 3.0]))
    return SearchPoint([_normalise(rng.dirichlet(np.full(V, conc))) for _ in range(c.nvecs)], n)


def _perturb(x: SearchPoint, step: float, rng: np.random.Generator) -> SearchPoint:
    return SearchPoint(
        [_normalise(v * np.exp(step * rng.standard_normal(v.size))) for v in x.vecs], x.n
    )


def _eval(c: Conjecture, x: SearchPoint) -> float:
    try:
        return float(c.violation(x))
    except (ValueError, ZeroDivisionError):
        return -np.inf


def _confirm(c: Conjecture, x: SearchPoint) -> dict[str, Any] | None:
    for den in (100, 10**3, 10**4, 10**5):
        try:
            v = [to_rational(vec, den) for vec in x.vecs]
            w = c.confirm(v, x.n)
        except ValueError:
            w = None
        if w is not None:
            return {"claim": c.claim or f"hunt:{c.name}", "conjecture": c.name, **w}
    return None


def run(
    conjecture: str,
    budget: float | None = 10.0,
    seed: int = 0,
    *,
    max_evals: int | None = None,
    stop_when_found: bool = False,
    progress: Callable[[float, float, int], None] | None = None,
) -> HuntResult:
    """Search for the largest violation of ``conjecture``.

    Parameters
    ----------
    conjecture : str
        A name in :data:`CONJECTURES`.
    budget : float or None
        Seconds of search, in (0, :data:`MAX_BUDGET`] (None: only ``max_evals`` bounds it).
    seed : int
        Generator seed (with ``max_evals`` and no budget the hunt is deterministic).
    max_evals : int, optional
        Maximum violation evaluations, in [1, :data:`MAX_EVALS`].
    stop_when_found : bool
        Stop at the first exactly confirmed violation.
    progress : callable, optional
        ``progress(fraction_done, best_value, evaluations)`` after each restart.

    Examples
    --------
    >>> r = run("en-vs-sequential", budget=None, seed=0, max_evals=500, stop_when_found=True)
    >>> r.found, r.witness["kind"], r.exact_value > 0, r.bounded_by
    (True, 'en_alpha', True, 'found')
    """
    c = get(conjecture)
    if budget is None and max_evals is None:
        raise ValueError("budget: give a time budget in seconds or max_evals")
    if budget is not None:
        budget = check_budget(budget, "budget")
    if max_evals is not None:
        max_evals = check_evals(max_evals, "max_evals")
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    evals = restarts = 0
    best_f = -np.inf
    witness: dict[str, Any] | None = None

    def frac_done() -> float:
        fs = []
        if budget is not None:
            fs.append((time.perf_counter() - t0) / budget)
        if max_evals is not None:
            fs.append(evals / max_evals)
        return min(1.0, max(fs))

    while frac_done() < 1.0:
        restarts += 1
        x = _sample(c, rng)
        f = _eval(c, x)
        evals += 1
        step, fails, steps = 0.5, 0, 0
        while fails < 40 and steps < LOCAL_STEPS and frac_done() < 1.0:
            steps += 1
            y = _perturb(x, step, rng)
            fy = _eval(c, y)
            evals += 1
            if fy > f:
                x, f, fails = y, fy, 0
                step = min(1.0, step * 1.3)
            else:
                fails += 1
                step = max(1e-3, step * 0.9)
        if f > best_f:
            best_f = f
            if f > 0:
                w = _confirm(c, x)
                if w is not None and (witness is None or w["value"] > witness["value"]):
                    witness = w
        if progress is not None:
            progress(frac_done(), best_f, evals)
        if stop_when_found and witness is not None:
            break
    if max_evals is not None and evals >= max_evals:
        bounded_by = "evals"
    elif stop_when_found and witness is not None:
        bounded_by = "found"
    else:
        bounded_by = "budget"
    exact = witness["value"] if witness is not None else None
    return HuntResult(
        c.name,
        float(best_f),
        exact,
        witness,
        evals,
        restarts,
        time.perf_counter() - t0,
        budget,
        seed,
        max_evals,
        bounded_by,
    )
