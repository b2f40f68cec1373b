r"""T12 — :math:`Q(H) = e_n(q|_H)/e_n(q)` for conditional-Poisson drafts
(proofs/T12_en_formula.md), and T12b: the same formula is *false* for sequential sampling
without replacement (the identity Hu et al. use, §4.2.2 and the proof of Thm 4).

T12 compares three computations on every H: the law's ``Q``, the law's e_n ratio
(:meth:`mdsd_ot.drafts.ConditionalPoisson.e`) and the enumeration of conditioned i.i.d. draws
(:func:`mdsd_ot.theory.oracles.conditioned_iid_Q`, independent of both).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np

from ...drafts import ConditionalPoisson, WithoutReplacement, rational_simplex
from ..oracles import conditioned_iid_Q
from ._base import HU, Claim, Outcome, alpha, witness

__all__ = ["CLAIMS", "KINDS", "en_ratio"]


def en_ratio(q: list[Fraction], n: int, H: tuple[int, ...]) -> Fraction:
    r""":math:`e_n(q|_H) / e_n(q)` in exact rationals (the law's :meth:`ConditionalPoisson.e`).

    Examples
    --------
    >>> en_ratio([Fraction(1, 2), Fraction(3, 10), Fraction(1, 5)], 2, (0, 1))
    Fraction(15, 31)
    """
    cp = ConditionalPoisson(q, n)
    return cp.e(n, list(H), exact=True) / cp.e(n, exact=True)


def evaluate(q: list[Fraction], n: int, H: tuple[int, ...]) -> tuple[bool, dict[str, Any]]:
    """(violated, values): the law's Q, its e_n ratio and the enumeration must agree."""
    cp = ConditionalPoisson(q, n).Q(list(H), exact=True)
    en, en_enum = en_ratio(q, n, H), conditioned_iid_Q(q, n, H)
    return not (cp == en == en_enum), {"Q_cp": cp, "Q_en": en, "Q_enumerated": en_enum}


def check(trials: int, rng: np.random.Generator) -> Outcome:
    for t in range(trials):
        V = int(rng.integers(2, 6))
        n = int(rng.integers(1, V + 1))
        q = rational_simplex(rng, V)
        for k in range(V + 1):
            for H in itertools.combinations(range(V), k):
                bad, vals = evaluate(q, n, H)
                if bad:
                    return Outcome(
                        "counterexample",
                        t + 1,
                        witness("T12", "cp_formula", q=q, n=n, H=H, **vals),
                    )
    return Outcome(
        "holds",
        trials,
        None,
        "exact: e_n ratio = enumeration of conditioned i.i.d. draws = "
        "ConditionalPoisson.Q on every H",
    )


def reproduce_cp_formula(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    return evaluate(w["q"], int(w["n"]), tuple(w["H"]))


def evaluate_sequential(q: list[Fraction], n: int, H: tuple[int, ...]):
    """(formula fails, values): the sequential law's Q against the e_n ratio."""
    qs = WithoutReplacement(q, n).Q(list(H), exact=True)
    en = en_ratio(q, n, H)
    return qs != en, {"Q_sequential": qs, "Q_en": en}


def _alphas(p: Any, q: Any, n: int) -> tuple[Fraction, Fraction]:
    """(sequential α*, α* of the e_n law), exact."""
    return alpha(p, WithoutReplacement(q, n)), alpha(p, ConditionalPoisson(q, n))


def check_sequential(trials: int, rng: np.random.Generator) -> Outcome:
    """T12b: the first H where the sequential Q differs from the e_n ratio, and by how much
    α* is overstated on 20 random p."""
    for t in range(max(trials, 1)):
        V = int(rng.integers(3, 5))
        n = int(rng.integers(2, V))
        q = rational_simplex(rng, V)
        for k in range(n, V):
            for H in itertools.combinations(range(V), k):
                bad, vals = evaluate_sequential(q, n, H)
                if bad:
                    w = witness("T12b", "en_formula", q=q, n=n, H=H, **vals)
                    best = None
                    for _ in range(20):
                        p = rational_simplex(rng, V)
                        a_s, a_e = _alphas(p, q, n)
                        if best is None or a_e - a_s > best[0]:
                            best = (a_e - a_s, p, a_s, a_e)
                    if best[0] > 0:
                        w.update(p=best[1], alpha_sequential=best[2], alpha_en=best[3])
                    return Outcome(
                        "counterexample",
                        t + 1,
                        w,
                        f"Q_seq = {vals['Q_sequential']} ≠ e_n ratio {vals['Q_en']}"
                        + (f"; α* overstated by {float(best[0]):.4g}" if best[0] > 0 else ""),
                    )
    return Outcome("holds", trials, None, "no discrepancy found")


def reproduce_en_formula(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    bad, vals = evaluate_sequential(w["q"], int(w["n"]), tuple(w["H"]))
    ok = bad and vals["Q_sequential"] == w["Q_sequential"] and vals["Q_en"] == w["Q_en"]
    if ok and "p" in w:
        a_s, a_e = _alphas(w["p"], w["q"], int(w["n"]))
        vals.update(alpha_sequential=a_s, alpha_en=a_e)
        ok = a_e > a_s
    return ok, vals


def reproduce_en_alpha(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """The hunt 'en-vs-sequential': the e_n law's α* exceeds the sequential α*."""
    a_s, a_e = _alphas(w["p"], w["q"], int(w["n"]))
    return a_e > a_s and a_e - a_s == w["excess"], {"alpha_sequential": a_s, "alpha_en": a_e}


CLAIMS = [
    Claim(
        "T12",
        "Conditional-Poisson drafts: Q(H) = e_n(q|_H)/e_n(q).",
        "docs/reference.md T12",
        "random rational q, V ≤ 5, every H",
        "holds",
        check,
        4,
        40,
    ),
    Claim(
        "T12b",
        "[false] Sequential without-replacement drafts: Q(H) = e_n(q|_H)/e_n(q) "
        f"({HU}, §4.2.2 and proof of Thm 4).",
        "docs/reference.md T12",
        "random rational q, V ≤ 4",
        "fails",
        check_sequential,
        1,
        10,
    ),
]

KINDS = {
    "cp_formula": reproduce_cp_formula,
    "en_formula": reproduce_en_formula,
    "en_alpha": reproduce_en_alpha,
}
