r"""T8 — drafting without replacement never hurts (proofs/T08_draft_order.md).

:math:`Q_{without}(H) \le Q_{with}(H)` for every H, hence
:math:`\alpha^*_{without}(p, q, n) \ge \alpha^*_{with}(p, q, n)`; both checked exactly.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np

from ...drafts import WithoutReplacement, WithReplacement, rational_simplex
from ._base import Claim, Outcome, alpha, witness

__all__ = ["CLAIMS", "KINDS"]


def evaluate(p: list[Fraction], q: list[Fraction], n: int) -> tuple[bool, dict[str, Any]]:
    """(violated, values): the first H with Q_without > Q_with, else both α*."""
    dw, do = WithReplacement(q, n), WithoutReplacement(q, n)
    V = len(q)
    for k in range(V + 1):
        for H in itertools.combinations(range(V), k):
            if do.Q(list(H), exact=True) > dw.Q(list(H), exact=True):
                return True, {
                    "H": H,
                    "Q_without": do.Q(list(H), exact=True),
                    "Q_with": dw.Q(list(H), exact=True),
                }
    aw, ao = alpha(p, dw), alpha(p, do)
    return ao < aw, {"alpha_with": aw, "alpha_without": ao}


def check(trials: int, rng: np.random.Generator) -> Outcome:
    for t in range(trials):
        V = int(rng.integers(2, 6))
        n = int(rng.integers(1, V + 1))
        p, q = rational_simplex(rng, V, zeros=True), rational_simplex(rng, V)
        bad, vals = evaluate(p, q, n)
        if bad:
            return Outcome("counterexample", t + 1, witness("T8", "order", p=p, q=q, n=n, **vals))
    return Outcome("holds", trials, None, "exact: Q_without ≤ Q_with on every H; α* ordered")


def reproduce_order(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    return evaluate(w["p"], w["q"], int(w["n"]))


CLAIMS = [
    Claim(
        "T8",
        "α*_without(p, q, n) ≥ α*_with(p, q, n); Q_without ≤ Q_with pointwise.",
        "docs/reference.md T8",
        "random rational p, q, V ≤ 5, n ≤ V",
        "holds",
        check,
        6,
        60,
    )
]

KINDS = {"order": reproduce_order}
