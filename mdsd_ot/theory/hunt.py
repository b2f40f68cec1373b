r"""Counterexample hunting: random restarts plus local search on the simplex.

Each :class:`Conjecture` has a float ``violation(x)`` (> 0 means the conjecture fails at the
instance ``x``), a random ``sample`` and an exact ``confirm``: the float optimum is rounded to
rationals on the grid k/D, D ∈ {10², 10³, 10⁴, 10⁵} (the coarsest grid that still violates),
and the violation is recomputed in Fractions; only a confirmed exact violation becomes a
witness (readable by ``mdsd-ot claims --witness``).

Search: sample an instance (Dirichlet vectors; V and n drawn from the conjecture's ranges), then
hill-climb by multiplicative log-normal perturbations of the probability vectors with a step
that shrinks on failure; restart after 40 failures in a row or 300 steps; stop at the time
``budget`` or after ``max_evals`` evaluations (deterministic for a given seed).

.. math::

   x \leftarrow \mathrm{normalise}\big(x \odot e^{\sigma \xi}\big),\quad \xi \sim N(0, I),
   \quad \text{accepted iff the violation increases.}
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import drafts
from ..api import solve
from . import qconvex as qc
from .instances import to_rational

__all__ = ["Conjecture", "HuntResult", "CONJECTURES", "run", "get"]

LOCAL_STEPS = 300  # local-search steps per restart
FLOOR = 1e-4  # entries are kept ≥ FLOOR so distinct-token laws stay defined after rounding


@dataclass
class Instance:
    vecs: list[np.ndarray]  # vecs[0] = p, then the draft distributions
    n: int

    @property
    def V(self) -> int:
        return len(self.vecs[0])


@dataclass(frozen=True)
class Conjecture:
    name: str
    statement: str
    claim: str | None
    Vs: tuple[int, ...]
    ns: tuple[int, ...]
    nvecs: int
    violation: Callable[[Instance], float]
    confirm: Callable[[list[list[Fraction]], int], dict[str, Any] | None]
    requires: str | None = None


@dataclass(frozen=True)
class HuntResult:
    """Outcome of a hunt: the best float violation and, if confirmed exactly, a witness."""

    conjecture: str
    value: float
    exact_value: Fraction | None
    witness: dict[str, Any] | None
    evaluations: int
    restarts: int
    seconds: float
    budget: float | None
    seed: int

    @property
    def found(self) -> bool:
        return self.witness is not None


# --------------------------------------------------------------------------------------------
# float objectives


def _level_alpha(p: np.ndarray, d: drafts.DraftLaw, q: np.ndarray) -> float:
    """α* by the best level set of p/q (exact optimum for q-convex laws, T7)."""
    best = 0.0
    for s in qc.level_sets(list(p), list(q)):
        best = min(best, float(sum(p[i] for i in s)) - float(d.Q(list(s), exact=False)))
    return 1.0 + best


def _greedy_alpha(p: np.ndarray, q: np.ndarray, n: int) -> float:
    d = drafts.Greedy(q, n)
    qp = d.q_prime(False)
    T = set(d.T)
    return float(sum(p[i] for i in T) + sum(min(p[x], qp[x]) for x in range(len(p)) if x not in T))


def _v_greedy_without(x: Instance) -> float:
    p, q = x.vecs
    return _level_alpha(p, drafts.WithoutReplacement(q, x.n), q) - _greedy_alpha(p, q, x.n)


def _v_en_seq(x: Instance) -> float:
    p, q = x.vecs
    return _level_alpha(p, drafts.ConditionalPoisson(q, x.n), q) - _level_alpha(
        p, drafts.WithoutReplacement(q, x.n), q
    )


def _v_prefix_greedy(x: Instance) -> float:
    p, q = x.vecs
    return float(qc.prefix_optimality_gap(p, drafts.Greedy(q, x.n), exact=False).gap)


def _v_prefix_product(x: Instance) -> float:
    p, *qs = x.vecs
    return float(qc.prefix_optimality_gap(p, drafts.Product(qs), exact=False).gap)


def _qconv(law: Callable[[Instance], drafts.DraftLaw]) -> Callable[[Instance], float]:
    def f(x: Instance) -> float:
        v = qc.q_convexity_violation(law(x), exact=False)
        return float(v.value) if v.witness is not None else -np.inf

    return f


def _v_rrs(x: Instance) -> float:
    from .. import verifiers

    p, q = x.vecs
    dw, do = drafts.WithReplacement(q, x.n), drafts.WithoutReplacement(q, x.n)
    aw = float(verifiers.get("rrs-with", dw).exact(p, dw)[1])
    ao = float(verifiers.get("rrs-without", do).exact(p, do)[1])
    return aw - ao


# --------------------------------------------------------------------------------------------
# exact confirmations (witness dicts; None when the rounded instance shows no violation)


def _alpha(p: Any, d: drafts.DraftLaw) -> Fraction:
    return solve(p, d, method="subset-exact").alpha_exact


def _c_greedy_without(v, n):
    p, q = v
    ag, aw = _alpha(p, drafts.Greedy(q, n)), _alpha(p, drafts.WithoutReplacement(q, n))
    if ag >= aw:
        return None
    return {
        "kind": "greedy_vs_without",
        "p": p,
        "q": q,
        "n": n,
        "alpha_greedy": ag,
        "alpha_without": aw,
        "value": aw - ag,
    }


def _c_en_seq(v, n):
    p, q = v
    a_s = _alpha(p, drafts.WithoutReplacement(q, n))
    a_e = _alpha(p, drafts.ConditionalPoisson(q, n))
    if a_e <= a_s:
        return None
    return {
        "kind": "en_alpha",
        "p": p,
        "q": q,
        "n": n,
        "alpha_sequential": a_s,
        "alpha_en": a_e,
        "excess": a_e - a_s,
        "value": a_e - a_s,
    }


def _c_prefix(law):
    def c(v, n):
        d = law(v, n)
        g = qc.prefix_optimality_gap(v[0], d, exact=True)
        if g.gap <= 0:
            return None
        return {
            "kind": "prefix",
            "p": v[0],
            "draft": d.spec(),
            "gap": g.gap,
            "brute_H": g.brute_H,
            "prefix_H": g.prefix_H,
            "alpha": 1 + g.brute_value,
            "alpha_prefix": 1 + g.prefix_value,
            "value": g.gap,
        }

    return c


def _c_qconv(law):
    def c(v, n):
        d = law(v, n)
        viol = qc.q_convexity_violation(d, exact=True)
        if viol.holds:
            return None
        return {
            "kind": "qconvex",
            "draft": d.spec(),
            "q": None,
            "value": viol.value,
            **viol.witness,
        }

    return c


def _c_rrs(v, n):
    from .. import verifiers

    p, q = v
    dw, do = drafts.WithReplacement(q, n), drafts.WithoutReplacement(q, n)
    aw = Fraction(verifiers.get("rrs-with", dw).exact(p, dw)[1])
    ao = Fraction(verifiers.get("rrs-without", do).exact(p, do)[1])
    if ao >= aw:
        return None
    return {
        "kind": "rrs_order",
        "p": p,
        "q": q,
        "n": n,
        "acceptance_with": aw,
        "acceptance_without": ao,
        "value": aw - ao,
    }


def _greedy_law(v, n):
    return drafts.Greedy(v[1], n)


def _product_law(v, n):
    return drafts.Product(v[1:])


CONJECTURES: dict[str, Conjecture] = {
    c.name: c
    for c in [
        Conjecture(
            "greedy-vs-without",
            "α*_greedy(p, q, n) ≥ α*_without(p, q, n)",
            "T9b",
            (3, 4, 5),
            (2, 3),
            2,
            _v_greedy_without,
            _c_greedy_without,
        ),
        Conjecture(
            "en-vs-sequential",
            "α* with the e_n law ≤ sequential α* (e_n value is a safe bound)",
            "T12b",
            (3, 4, 5),
            (2, 3),
            2,
            _v_en_seq,
            _c_en_seq,
        ),
        Conjecture(
            "prefix-greedy",
            "a level set of p/q is optimal for greedy laws",
            "T7b",
            (4, 5),
            (2, 3),
            2,
            _v_prefix_greedy,
            _c_prefix(_greedy_law),
        ),
        Conjecture(
            "prefix-product",
            "a level set of p/q̄ is optimal for product laws",
            "T7c",
            (3, 4, 5),
            (2,),
            3,
            _v_prefix_product,
            _c_prefix(_product_law),
        ),
        Conjecture(
            "qconvex-greedy",
            "greedy laws are q-convex",
            "T5b",
            (3, 4, 5),
            (2, 3),
            2,
            _qconv(lambda x: drafts.Greedy(x.vecs[1], x.n)),
            _c_qconv(_greedy_law),
        ),
        Conjecture(
            "qconvex-spechub",
            "SpecHub laws are q-convex",
            "T5b",
            (3, 4, 5),
            (2,),
            2,
            _qconv(lambda x: drafts.SpecHub(x.vecs[1])),
            _c_qconv(lambda v, n: drafts.SpecHub(v[1])),
        ),
        Conjecture(
            "qconvex-product",
            "product laws are q-convex (q = mean marginal)",
            "T5c",
            (3, 4),
            (2,),
            3,
            _qconv(lambda x: drafts.Product(x.vecs[1:])),
            _c_qconv(_product_law),
        ),
        Conjecture(
            "rrs-without-vs-with",
            "RRS without replacement accepts at least as often as RRS with replacement",
            None,
            (3, 4),
            (2, 3),
            2,
            _v_rrs,
            _c_rrs,
            requires="mdsd_ot.verifiers",
        ),
    ]
}


def get(name: str) -> Conjecture:
    """The conjecture called ``name``."""
    if name not in CONJECTURES:
        raise ValueError(
            f"CONJECTURE: unknown conjecture {name!r}; choose one of {', '.join(CONJECTURES)}"
        )
    return CONJECTURES[name]


# --------------------------------------------------------------------------------------------
# the search


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.maximum(v, FLOOR)
    return v / v.sum()


def _sample(c: Conjecture, rng: np.random.Generator) -> Instance:
    V = int(rng.choice(c.Vs))
    n = int(rng.choice([m for m in c.ns if m < V] or [min(c.ns)]))
    conc = float(rng.choice([0.3, 1.0, 3.0]))
    return Instance([_normalise(rng.dirichlet(np.full(V, conc))) for _ in range(c.nvecs)], n)


def _perturb(x: Instance, step: float, rng: np.random.Generator) -> Instance:
    return Instance(
        [_normalise(v * np.exp(step * rng.standard_normal(v.size))) for v in x.vecs], x.n
    )


def _eval(c: Conjecture, x: Instance) -> float:
    try:
        return float(c.violation(x))
    except (ValueError, ZeroDivisionError):
        return -np.inf


def _confirm(c: Conjecture, x: Instance) -> dict[str, Any] | None:
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
        Seconds of search (None: only ``max_evals`` bounds it).
    seed : int
        Generator seed (with ``max_evals`` and no budget the hunt is deterministic).
    max_evals : int, optional
        Maximum violation evaluations.
    stop_when_found : bool
        Stop at the first exactly confirmed violation.
    progress : callable, optional
        ``progress(fraction_done, best_value, evaluations)`` after each restart.

    Examples
    --------
    >>> r = run("en-vs-sequential", budget=None, seed=0, max_evals=300, stop_when_found=True)
    >>> r.found, r.witness["kind"], r.exact_value > 0
    (True, 'en_alpha', True)
    """
    c = get(conjecture)
    if c.requires is not None:
        import importlib

        try:
            importlib.import_module(c.requires)
        except ImportError as exc:
            raise ImportError(f"conjecture {c.name!r} needs {c.requires}") from exc
    if budget is None and max_evals is None:
        raise ValueError("budget: give a time budget in seconds or max_evals")
    if budget is not None and budget <= 0:
        raise ValueError(f"--budget: must be positive, got {budget}")
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
    )
