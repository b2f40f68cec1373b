r"""T4 — one draft: :math:`\alpha^* = \sum_i \min(p(i), q(i)) = 1 - TV(p, q)`
(proofs/T04_single_draft.md).  Checked in exact rationals against ``subset-exact``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ...drafts import WithReplacement, rational_simplex
from ._base import Claim, Outcome, alpha, witness

__all__ = ["CLAIMS", "KINDS"]


def evaluate(p: list[Fraction], q: list[Fraction]) -> tuple[bool, dict[str, Any]]:
    """(violated, values): subset-exact α* for one draft against Σ min(p, q)."""
    a = alpha(p, WithReplacement(q, 1))
    formula = sum((min(x, y) for x, y in zip(p, q, strict=True)), Fraction(0))
    return a != formula, {"alpha": a, "formula": formula}


def check(trials: int, rng: np.random.Generator) -> Outcome:
    for t in range(trials):
        V = int(rng.integers(2, 7))
        p, q = rational_simplex(rng, V, zeros=True), rational_simplex(rng, V, zeros=True)
        bad, vals = evaluate(p, q)
        if bad:
            return Outcome("counterexample", t + 1, witness("T4", "n1", p=p, q=q, **vals))
    return Outcome("holds", trials, None, "exact equality in rationals (subset-exact)")


def reproduce_n1(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    return evaluate(w["p"], w["q"])


CLAIMS = [
    Claim(
        "T4",
        "n = 1: α* = Σ_i min(p(i), q(i)) = 1 − TV(p, q).",
        "docs/reference.md T4",
        "random rational p, q, V ≤ 6",
        "holds",
        check,
        10,
        200,
    )
]

KINDS = {"n1": reproduce_n1}
