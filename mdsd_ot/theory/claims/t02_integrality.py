"""T2 — the dual (10) has an integral optimum (proofs/T02_integrality.md).

On T1's instances, the theory's own LP (:func:`mdsd_ot.theory.oracles.dual_lp`, HiGHS dual
simplex) must reach α* at a 0/1 vertex, and method ``'dual'`` must report LP = IP = α*.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...api import solve
from ...drafts import DraftLaw, from_spec
from ..oracles import dual_lp
from ._base import FLOAT_TOL, HU, Claim, Outcome, alpha, witness
from .t01_equivalence import small_instance

__all__ = ["CLAIMS", "KINDS"]


def evaluate(p: Any, d: DraftLaw) -> tuple[bool, dict[str, Any]]:
    """(violated, values): LP value, α*, the vertex's distance from 0/1, method 'dual'."""
    lp, x = dual_lp(p, d)
    a = float(alpha(p, d))
    frac_dist = float(np.max(np.minimum(np.abs(x), np.abs(x - 1)))) if x.size else 0.0
    vals = {"lp": lp, "alpha": a, "max_fractionality": frac_dist}
    bad = abs(lp - a) > 1e-9 or frac_dist > 1e-9
    info = solve(p, d, method="dual").info
    vals.update(dual_lp=info.get("lp"), dual_ip=info.get("ip"), dual_integral=info.get("integral"))
    bad = bad or not info.get("integral", False)
    bad = bad or abs(float(info["lp"]) - float(info["ip"])) > FLOAT_TOL
    bad = bad or abs(float(info["ip"]) - a) > FLOAT_TOL
    return bad, vals


def check(trials: int, rng: np.random.Generator) -> Outcome:
    for t in range(trials):
        p, d = small_instance(rng)
        bad, vals = evaluate(p, d)
        if bad:
            return Outcome(
                "counterexample",
                t + 1,
                witness("T2", "dual", p=p, draft=d.spec(), **vals),
                "LP ≠ IP or vertex not 0/1",
            )
    return Outcome(
        "holds",
        trials,
        None,
        "own HiGHS dual simplex and method 'dual': LP = α* within 1e-9, vertex 0/1 within 1e-9",
    )


def reproduce_dual(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    return evaluate(w["p"], from_spec(w["draft"]))


CLAIMS = [
    Claim(
        "T2",
        "The dual (10) has an integral optimum: LP optimum = 0/1 optimum, and simplex "
        "vertices are 0/1.",
        f"docs/reference.md T2; {HU} §3",
        "as T1",
        "holds",
        check,
        4,
        40,
    )
]

KINDS = {"dual": reproduce_dual}
