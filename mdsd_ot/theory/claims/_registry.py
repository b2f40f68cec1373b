"""The registry of claims: :data:`CLAIMS` (id → :class:`Claim`, in the order of
docs/reference.md) and :data:`KINDS` (witness kind → recomputation), gathered from the claim
modules ``t01_equivalence`` … ``t12_en_formula`` (one per proof file ``proofs/TNN_*.md``).
"""

from __future__ import annotations

from . import (
    t01_equivalence,
    t02_integrality,
    t03_tum,
    t04_single_draft,
    t05_q_convexity,
    t06_supermodularity,
    t07_prefix,
    t08_draft_order,
    t09_greedy,
    t10_two_drafts,
    t11_verifiers,
    t12_en_formula,
)
from ._base import Claim, Reproducer

__all__ = ["CLAIMS", "KINDS", "MODULES", "get"]

#: The claim modules, in the order of the proofs (T01 … T12).
MODULES = (
    t01_equivalence,
    t02_integrality,
    t03_tum,
    t04_single_draft,
    t05_q_convexity,
    t06_supermodularity,
    t07_prefix,
    t08_draft_order,
    t09_greedy,
    t10_two_drafts,
    t11_verifiers,
    t12_en_formula,
)

#: Every claim by id: the theorems T1..T12 and their known-false neighbours (T3b, T5b, ...).
CLAIMS: dict[str, Claim] = {c.id: c for m in MODULES for c in m.CLAIMS}

#: Witness kind → recomputation ``w -> (violation found again, recomputed values)``.
KINDS: dict[str, Reproducer] = {k: f for m in MODULES for k, f in m.KINDS.items()}


def get(claim_id: str) -> Claim:
    """The claim with id ``claim_id`` (case-insensitive; ``T5`` or ``t5``).

    Examples
    --------
    >>> get("t12B").id, get("T5").proof
    ('T12b', 'proved')
    """
    key = claim_id.strip()
    for k in CLAIMS:
        if k.lower() == key.lower():
            return CLAIMS[k]
    raise ValueError(f"--id: unknown claim {claim_id!r}; choose one of {', '.join(CLAIMS)}")
