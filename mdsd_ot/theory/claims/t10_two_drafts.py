r"""T10 — two i.i.d. drafts (proofs/T10_two_drafts.md).

:math:`\alpha^* = \min_S [P(S) + 1 - q(S)^2]`; for p uniform on three tokens and
:math:`q = (1/3, q_2, 2/3 - q_2)`, :math:`\alpha^* = 1` iff
:math:`q_2 \in [1 - \sqrt{2/3}, \sqrt{2/3} - 1/3]`.  Checked exactly on both sides of both
endpoints and at random :math:`q_2 = k/90`, and against method ``'maxflow'``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from ...api import solve
from ...drafts import WithReplacement
from ._base import FLOAT_TOL, Claim, Outcome, alpha, witness

__all__ = ["CLAIMS", "KINDS", "t10_inside"]


def t10_inside(q2: Fraction) -> bool:
    r"""Exact membership of q₂ in :math:`[1 - \sqrt{2/3},\ \sqrt{2/3} - 1/3]` (squares compared).

    Examples
    --------
    >>> t10_inside(Fraction(1, 4)), t10_inside(Fraction(1, 10))
    (True, False)
    """
    lo_ok = (1 - q2) <= 0 or (1 - q2) ** 2 <= Fraction(2, 3)
    hi_ok = (q2 + Fraction(1, 3)) ** 2 <= Fraction(2, 3)
    return lo_ok and hi_ok


def evaluate(q2: Fraction) -> tuple[bool, dict[str, Any]]:
    """(violated, values): subset-exact α*, the min-over-S formula, the interval, maxflow."""
    p = [Fraction(1, 3)] * 3
    q = [Fraction(1, 3), q2, Fraction(2, 3) - q2]
    d = WithReplacement(q, 2)
    a = alpha(p, d)
    formula = min(
        sum((p[i] for i in S), Fraction(0)) + 1 - sum((q[i] for i in S), Fraction(0)) ** 2
        for k in range(4)
        for S in itertools.combinations(range(3), k)
    )
    inside = t10_inside(q2)
    vals = {"alpha": a, "formula": formula, "inside": inside}
    bad = a != formula or (a == 1) != inside
    am = solve(p, d, method="maxflow").alpha
    vals["alpha_maxflow"] = am
    bad = bad or abs(am - float(a)) > FLOAT_TOL
    return bad, vals


def check(trials: int, rng: np.random.Generator) -> Outcome:
    lo, hi = 1 - math.sqrt(2 / 3), math.sqrt(2 / 3) - 1 / 3
    pts = []
    for e in (lo, hi):  # both sides of both endpoints, then random points
        c = Fraction(e).limit_denominator(10**4)
        pts += [c - Fraction(1, 10**4), c + Fraction(1, 10**4)]
    pts += [Fraction(int(rng.integers(0, 61)), 90) for _ in range(trials)]
    n_in = 0
    for t, q2 in enumerate(pts):
        bad, vals = evaluate(q2)
        n_in += vals["inside"]
        if bad:
            return Outcome("counterexample", t + 1, witness("T10", "interval", q2=q2, **vals))
    return Outcome(
        "holds",
        len(pts),
        None,
        f"α* = 1 exactly iff q₂ ∈ [1 − √(2/3), √(2/3) − 1/3] ≈ [{lo:.4f}, {hi:.4f}] "
        f"({n_in} of {len(pts)} points inside, incl. both sides of each endpoint)",
    )


def reproduce_interval(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    return evaluate(w["q2"])


CLAIMS = [
    Claim(
        "T10",
        "n = 2 i.i.d.: α* = min_S [P(S) + 1 − q(S)²]; for p uniform on 3 tokens and "
        "q = (1/3, q₂, 2/3 − q₂), α* = 1 iff q₂ ∈ [1 − √(2/3), √(2/3) − 1/3].",
        "docs/reference.md T10; Khisti et al. 2024 (arXiv 2410.18234)",
        "both sides of both endpoints + random q₂ = k/90",
        "holds",
        check,
        6,
        60,
    )
]

KINDS = {"interval": reproduce_interval}
