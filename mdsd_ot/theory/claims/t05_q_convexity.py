r"""T5 — q-convexity of Q (proofs/T05_q_convexity.md), and its known-false neighbours.

For every H and distinct :math:`x, y \notin H` with :math:`q(x), q(y) > 0`,

.. math::

   D_1 = \frac{Q(H \cup x) - Q(H)}{q(x)} \le D_2 = \frac{Q(H \cup \{x,y\}) - Q(H \cup x)}{q(y)},

scanned exactly over all (H, x, y) by :func:`mdsd_ot.theory.qconvex.q_convexity_violation`.
T5 runs on the laws declared q-convex (``cls.q_convex``); T5b (greedy, SpecHub) and T5c
(product laws, q = mean marginal) must be refuted.

T5's proof status is :data:`PROOF` / :data:`PROOF_NOTE` below (proved for every law it states,
the sequential law at every n included).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...drafts import SCHEMES, DraftLaw, Greedy, Product, WithoutReplacement, from_spec, random_law
from .. import qconvex as qc
from ._base import HU, Claim, Outcome, hunted, top_token_law, witness

__all__ = [
    "CLAIMS",
    "KINDS",
    "PROOF",
    "PROOF_NOTE",
    "SEQUENTIAL_CHECKED_FROM",
    "SEQUENTIAL_MAX_V",
]

#: T5's proof status (see :mod:`mdsd_ot.theory.claims._base`): proofs/T05_q_convexity.md covers
#: with replacement, conditional Poisson and sequential without replacement at every n.
PROOF = "proved"

#: The smallest n at which the sequential (without-replacement) case is only checked.
SEQUENTIAL_CHECKED_FROM = 3

#: What remains only checked (empty: everything T5 states is proved).
PROOF_NOTE = ""

#: The extra sequential laws T5 scans: V in [4, SEQUENTIAL_MAX_V], 3 ≤ n < V.
SEQUENTIAL_MAX_V = 6


def _qconvex_witness(claim: str, d: DraftLaw, v: qc.Violation, q: Any = None) -> dict[str, Any]:
    return witness(claim, "qconvex", draft=d.spec(), q=q, value=v.value, **v.witness)


def _scan(claim: str, schemes: list[str], trials: int, rng: np.random.Generator):
    """Exact scans of random laws of ``schemes`` (in turn): V ∈ {3, 4, 5}, n ≤ 3 (greedy laws
    n ≤ V − 1).  Returns (outcome or None, number of sequential laws with n ≥ 3 scanned)."""
    sequential = 0
    for t in range(trials):
        scheme = schemes[t % len(schemes)]
        cls = SCHEMES[scheme]
        V = int(rng.integers(3, 6))
        n = cls.fixed_n or int(rng.integers(1, 4))
        d = random_law(rng, scheme, V, min(n, V - 1 if top_token_law(cls) else V), zeros=True)
        sequential += isinstance(d, WithoutReplacement) and d.n >= SEQUENTIAL_CHECKED_FROM
        v = qc.q_convexity_violation(d, exact=True)
        if not v.holds:
            w = _qconvex_witness(claim, d, v)
            return Outcome("counterexample", t + 1, w, f"{scheme}: D1 − D2 = {v.value} > 0"), 0
    return None, sequential


def _scan_sequential(trials: int, rng: np.random.Generator):
    """Exact scans of max(1, trials // 2) random sequential laws with V ∈ {4, .., 6} and
    3 ≤ n < V, the case T5 only checks.  Returns (outcome or None, number scanned)."""
    count = max(1, trials // 2)
    for t in range(count):
        V = int(rng.integers(SEQUENTIAL_CHECKED_FROM + 1, SEQUENTIAL_MAX_V + 1))
        n = int(rng.integers(SEQUENTIAL_CHECKED_FROM, V))
        d = WithoutReplacement.random(rng, V, n)
        v = qc.q_convexity_violation(d, exact=True)
        if not v.holds:
            w = _qconvex_witness("T5", d, v)
            return Outcome("counterexample", trials + t + 1, w, f"without: D1 − D2 = {v.value}"), 0
    return None, count


def check(trials: int, rng: np.random.Generator) -> Outcome:
    schemes = [name for name, cls in SCHEMES.items() if cls.q_convex]
    out, in_mix = _scan("T5", schemes, trials, rng)
    if out is not None:
        return out
    out, extra = _scan_sequential(trials, rng)
    if out is not None:
        return out
    return Outcome(
        "holds",
        trials,
        None,
        f"exact scan of all (H, x, y), V ≤ 5, schemes {', '.join(schemes)}; sequential "
        f"without replacement at n ≥ {SEQUENTIAL_CHECKED_FROM}: {in_mix + extra} instance(s), "
        f"V ≤ {SEQUENTIAL_MAX_V}" + (" (checked, not proved)" if PROOF == "checked" else ""),
    )


def check_top_token_laws(trials: int, rng: np.random.Generator) -> Outcome:
    """T5b: greedy and SpecHub laws, by exact scans, else the documented instance."""
    schemes = [name for name, cls in SCHEMES.items() if top_token_law(cls)]
    out, _ = _scan("T5b", schemes, max(trials, 1), rng)
    if out is not None:
        return out
    d = Greedy(["2/5", "3/10", "1/5", "1/10"], 2)  # documented fallback (proofs/T05)
    v = qc.q_convexity_violation(d)
    return Outcome(
        "counterexample",
        max(trials, 1) + 1,
        _qconvex_witness("T5b", d, v),
        "documented instance (random search found none)",
    )


def _product_fallback() -> dict[str, Any]:
    d = Product([["0", "0", "1/100", "99/100"], ["49/50", "1/100", "0", "1/100"]])
    return _qconvex_witness("T5c", d, qc.q_convexity_violation(d))


def check_product(trials: int, rng: np.random.Generator) -> Outcome:
    """T5c: the hunt 'qconvex-product', else the documented instance."""
    return hunted("T5c", "qconvex-product", trials, rng, _product_fallback)


def reproduce_qconvex(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    d = from_spec(w["draft"])
    H, x, y = tuple(w["H"]), int(w["x"]), int(w["y"])
    qv = qc.q_vector(d, w.get("q"), True)

    def Q(S):
        return d.Q(list(S), exact=True)

    d1 = (Q(H + (x,)) - Q(H)) / qv[x]
    d2 = (Q(H + (x, y)) - Q(H + (x,))) / qv[y]
    return d1 > d2 and d1 - d2 == w["value"], {"D1": d1, "D2": d2, "value": d1 - d2}


CLAIMS = [
    Claim(
        "T5",
        "Q is q-convex for with, without (sequential) and conditional-Poisson drafts.",
        f"docs/reference.md T5; proofs/T05_q_convexity.md (sequential, every n); {HU} Thms 3–4",
        "random rational q, V ≤ 5, n ≤ 3",
        "holds",
        check,
        6,
        60,
        proof=PROOF,
        proof_note=PROOF_NOTE,
    ),
    Claim(
        "T5b",
        "[false] Greedy and SpecHub laws are q-convex.",
        "docs/reference.md T5, T9",
        "random rational q, V ≤ 5",
        "fails",
        check_top_token_laws,
        4,
        20,
    ),
    Claim(
        "T5c",
        "[false] Product laws are q-convex (q = mean marginal).",
        "docs/reference.md T5",
        "hunt 'qconvex-product' (seeded, evaluation budget)",
        "fails",
        check_product,
        1,
        5,
    ),
]

KINDS = {"qconvex": reproduce_qconvex}
