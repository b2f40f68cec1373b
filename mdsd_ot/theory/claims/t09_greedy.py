r"""T9 — the greedy construction (proofs/T09_greedy.md), and T9b (greedy can lose).

Greedy drafts T = Top_{n−1}(q), then :math:`\hat x \sim q'`; (T9)

.. math::

   \alpha^* = P(T) + \sum_{x \notin T} \min(p(x), q'(x)), \qquad
   H^* = T \cup \{x : q'(x) \ge p(x)\},

and the greedy verifier outputs p and attains α*.  The closed form is the law's own
(:meth:`mdsd_ot.drafts.Greedy.alpha_closed_form`); it is compared with ``subset-exact``, with
F at H*, with the verifier enumerated from its definition
(:func:`mdsd_ot.theory.oracles.greedy_verifier_law`) and with the registry's ``greedy``
verifier.  T9b (greedy α* ≥ without-replacement α*) must be refuted.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ... import verifiers as ver
from ...drafts import Greedy, WithoutReplacement, rational_simplex
from ..oracles import greedy_verifier_law
from ._base import HU, Claim, Outcome, alpha, hunted, objective, witness

__all__ = ["CLAIMS", "KINDS"]


def evaluate(p: list[Fraction], q: list[Fraction], n: int) -> tuple[bool, dict[str, Any]]:
    """(violated, values): closed form, subset-exact α*, α* at H*, both verifiers' laws."""
    d = Greedy(q, n)
    qp = d.q_prime(True)
    T = set(d.T)
    formula = d.alpha_closed_form(p, exact=True)
    a = alpha(p, d)
    Hs = tuple(sorted(T | {x for x in range(d.V) if x not in T and qp[x] >= p[x]}))
    law, acc = greedy_verifier_law(p, d)
    vals = {
        "alpha": a,
        "formula": formula,
        "H_star": Hs,
        "alpha_H_star": 1 + objective(p, d, Hs),
        "verifier_law": law,
        "acceptance": acc,
    }
    bad = formula != a or 1 + objective(p, d, Hs) != a or law != list(p) or acc != a
    # the registry's greedy verifier, besides the enumeration above
    vlaw, vacc = ver.get("greedy", d).exact(p, d)
    vals.update(registry_acceptance=vacc)
    bad = bad or [Fraction(x) for x in vlaw] != list(p) or Fraction(vacc) != a
    return bad, vals


def check(trials: int, rng: np.random.Generator) -> Outcome:
    for t in range(trials):
        V = int(rng.integers(3, 6))
        n = int(rng.integers(2, min(V, 3) + 1))
        p, q = rational_simplex(rng, V, zeros=True), rational_simplex(rng, V)
        bad, vals = evaluate(p, q, n)
        if bad:
            return Outcome("counterexample", t + 1, witness("T9", "greedy", p=p, q=q, n=n, **vals))
    return Outcome(
        "holds",
        trials,
        None,
        "exact: closed form = subset-exact α* = α* at H*; own enumeration and "
        "mdsd_ot.verifiers 'greedy': output law = p, acceptance = α*",
    )


def reproduce_greedy(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    return evaluate(w["p"], w["q"], int(w["n"]))


def _order_witness(claim: str, p: Any, q: Any, n: int) -> dict[str, Any]:
    ag, aw = alpha(p, Greedy(q, n)), alpha(p, WithoutReplacement(q, n))
    return witness(claim, "greedy_vs_without", p=p, q=q, n=n, alpha_greedy=ag, alpha_without=aw)


def _fallback() -> dict[str, Any]:
    p, q, n = ["3/100", "17/25", "9/50", "11/100"], ["13/50", "21/100", "13/50", "27/100"], 3
    return _order_witness("T9b", p, q, n)


def check_vs_without(trials: int, rng: np.random.Generator) -> Outcome:
    """T9b: the hunt 'greedy-vs-without', else the documented instance."""
    return hunted("T9b", "greedy-vs-without", trials, rng, _fallback)


def reproduce_greedy_vs_without(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    n = int(w["n"])
    ag = alpha(w["p"], Greedy(w["q"], n))
    aw = alpha(w["p"], WithoutReplacement(w["q"], n))
    return ag < aw and ag == w["alpha_greedy"], {"alpha_greedy": ag, "alpha_without": aw}


CLAIMS = [
    Claim(
        "T9",
        "Greedy: α* = P(T) + Σ_{x∉T} min(p, q'); H* = T ∪ {q' ≥ p} is optimal; the "
        "verifier outputs p and attains α*.",
        f"docs/reference.md T9; {HU} §5.1",
        "random rational p, q, V ≤ 5, n ≤ 3",
        "holds",
        check,
        6,
        60,
    ),
    Claim(
        "T9b",
        "[false] Greedy α* ≥ without-replacement α*.",
        f"docs/reference.md T9; {HU} §6",
        "hunt 'greedy-vs-without'",
        "fails",
        check_vs_without,
        1,
        5,
    ),
]

KINDS = {"greedy": reproduce_greedy, "greedy_vs_without": reproduce_greedy_vs_without}
