r"""T7 — for q-convex Q an optimal H is a level set of p/q (proofs/T07_prefix.md).

The exact brute-force minimum of :math:`F(H) = P(H) - Q(H)` over all :math:`2^V` sets is
compared with the best level set (:func:`mdsd_ot.theory.qconvex.prefix_optimality_gap`), and
with the fast prefix solver (:func:`mdsd_ot.fast.alpha_star`) where the law has a fast kernel.
T7b (greedy / SpecHub) and T7c (product laws, level sets of p/q̄) must be refuted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import fast
from ...drafts import SCHEMES, DraftLaw, Greedy, Product, from_spec, random_law, rational_simplex
from .. import qconvex as qc
from ._base import HU, Claim, Outcome, hunted, witness

__all__ = ["CLAIMS", "KINDS"]


def evaluate(p: Any, d: DraftLaw) -> tuple[bool, dict[str, Any]]:
    """(no level set optimal or fast solver off by > 1e-9, values)."""
    g = qc.prefix_optimality_gap(p, d, exact=True)
    vals = {
        "gap": g.gap,
        "brute_H": g.brute_H,
        "prefix_H": g.prefix_H,
        "alpha": 1 + g.brute_value,
        "alpha_prefix": 1 + g.prefix_value,
    }
    bad = g.gap > 0
    if d.fast_kernel is not None:
        try:
            af = float(fast.alpha_star([float(x) for x in p], d.q, n=d.n, scheme=d.scheme))
            vals["alpha_fast"] = af
            bad = bad or abs(af - float(1 + g.brute_value)) > 1e-9
        except ValueError:
            pass
    return bad, vals


def check(trials: int, rng: np.random.Generator) -> Outcome:
    schemes = [name for name, cls in SCHEMES.items() if cls.q_convex]
    for t in range(trials):
        scheme = schemes[t % len(schemes)]
        V = int(rng.integers(2, 7))
        n = min(int(rng.integers(1, 4)), V)
        p, d = rational_simplex(rng, V, zeros=True), random_law(rng, scheme, V, n, zeros=True)
        bad, vals = evaluate(p, d)
        if bad:
            return Outcome(
                "counterexample",
                t + 1,
                witness("T7", "prefix", p=p, draft=d.spec(), **vals),
                f"{scheme}: no level set of p/q is optimal (or fast solver differs)",
            )
    return Outcome(
        "holds",
        trials,
        None,
        "exact gap 0 between brute force and the best level set; fast solver "
        "(mdsd_ot.fast.alpha_star) within 1e-9",
    )


def _greedy_fallback() -> dict[str, Any]:
    p, q = ["1/2", "2/5", "1/20", "1/20"], ["3/10", "1/4", "1/4", "1/5"]
    d = Greedy(q, 2)
    _, vals = evaluate(p, d)
    return witness("T7b", "prefix", p=p, draft=d.spec(), **vals)


def check_greedy(trials: int, rng: np.random.Generator) -> Outcome:
    """T7b: the hunt 'prefix-greedy', else the documented instance (proofs/T07_prefix.md)."""
    return hunted("T7b", "prefix-greedy", trials, rng, _greedy_fallback)


def _product_fallback() -> dict[str, Any]:
    p = ["9/50", "3/5", "9/250", "67/1000", "117/1000"]
    d = Product(
        [
            ["1/1000", "579/1000", "259/1000", "0", "161/1000"],
            ["223/250", "1/100", "1/250", "93/1000", "1/1000"],
        ]
    )
    _, vals = evaluate(p, d)
    return witness("T7c", "prefix", p=p, draft=d.spec(), **vals)


def check_product(trials: int, rng: np.random.Generator) -> Outcome:
    """T7c: the hunt 'prefix-product', else the documented instance."""
    return hunted("T7c", "prefix-product", trials, rng, _product_fallback)


def reproduce_prefix(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    bad, vals = evaluate(w["p"], from_spec(w["draft"]))
    return bad and vals["gap"] == w["gap"], vals


CLAIMS = [
    Claim(
        "T7",
        "For q-convex Q an optimal H is a level set of p/q (prefix algorithm).",
        f"docs/reference.md T7; {HU} Thm 3",
        "with/without/CP, V ≤ 6, n ≤ 3",
        "holds",
        check,
        6,
        90,
    ),
    Claim(
        "T7b",
        "[false] A level set of p/q is optimal for greedy/SpecHub laws.",
        "docs/reference.md T7, T9",
        "hunt 'prefix-greedy' (seeded, evaluation budget)",
        "fails",
        check_greedy,
        1,
        5,
    ),
    Claim(
        "T7c",
        "[false] A level set of p/q̄ is optimal for product laws.",
        "docs/reference.md T7",
        "hunt 'prefix-product' (seeded, evaluation budget)",
        "fails",
        check_product,
        1,
        5,
    ),
]

KINDS = {"prefix": reproduce_prefix}
