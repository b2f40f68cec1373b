r"""What every claim module shares: the :class:`Claim` record, outcomes, proof status, helpers.

A claim of docs/reference.md is a statement with an executable check (run on seeded random
instances) and a *proof status*:

``"proved"``
    A written proof exists (``proofs/TNN_*.md``, with its machine check in ``proofs/checks.py``).
``"checked"``
    No written proof (or only for some cases); the check is evidence, not a proof.  The claim's
    ``proof_note`` says exactly what is proved and what is only checked.
``"refuted"``
    A known-false statement (``expect="fails"``): the check must find a counterexample.

The status is declared once, with the claim, in the module that mirrors its proof file (e.g.
``PROOF`` in :mod:`mdsd_ot.theory.claims.t05_q_convexity`); ``mdsd-ot claims`` shows it in its
table and JSON, and docs/claims.md is tested against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ...api import solve
from ...drafts import DraftLaw, Explicit
from .. import hunt
from ..witness import encode

__all__ = [
    "Claim",
    "Outcome",
    "ClaimRun",
    "Reproduction",
    "Reproducer",
    "PROOF_STATES",
    "FLOAT_TOL",
    "HU",
    "alpha",
    "objective",
    "witness",
    "pick",
    "hunted",
    "top_token_law",
    "joint_table_law",
]

FLOAT_TOL = 1e-6  # LP solvers (HiGHS feasibility tolerances ~1e-7); exact methods use 0

#: The proof states of a claim (see the module docstring).
PROOF_STATES: tuple[str, ...] = ("proved", "checked", "refuted")

#: How docs/reference.md cites Hu et al.
HU = "Hu et al. 2025 (arXiv 2502.18779)"

#: A witness recomputation: ``w -> (violation found again, recomputed values)``.
Reproducer = Callable[[dict[str, Any]], tuple[bool, dict[str, Any]]]


@dataclass(frozen=True)
class Outcome:
    """What a check returns: ``status`` ``"holds"``, ``"counterexample"`` or ``"skipped"``."""

    status: str  # "holds" | "counterexample" | "skipped"
    trials: int
    witness: dict[str, Any] | None = None
    detail: str = ""


@dataclass(frozen=True)
class Claim:
    """One claim of docs/reference.md with its executable check and its proof status.

    ``proof`` defaults to ``"refuted"`` for the known-false statements (``expect="fails"``) and
    ``"proved"`` for the theorems; a theorem without a complete written proof says
    ``proof="checked"`` and states in ``proof_note`` what the check covers.

    Examples
    --------
    >>> c = Claim("T0", "1 + 1 = 2.", "-", "-", "holds", lambda trials, rng: Outcome("holds", 1))
    >>> c.proof, Claim("T0b", "[false] 1 = 2.", "-", "-", "fails", c.check).proof
    ('proved', 'refuted')
    """

    id: str
    statement: str
    reference: str
    instances: str
    expect: str  # "holds" or "fails"
    check: Callable[[int, np.random.Generator], Outcome]
    trials: int = 10
    slow_trials: int = 100
    proof: str = ""
    proof_note: str = ""

    def __post_init__(self) -> None:
        if self.expect not in ("holds", "fails"):
            raise ValueError(f"expect: 'holds' or 'fails', got {self.expect!r} ({self.id})")
        if not self.proof:
            object.__setattr__(self, "proof", "refuted" if self.expect == "fails" else "proved")
        if self.proof not in PROOF_STATES:
            raise ValueError(
                f"proof: one of {', '.join(PROOF_STATES)}, got {self.proof!r} ({self.id})"
            )
        if (self.proof == "refuted") != (self.expect == "fails"):
            raise ValueError(
                f"proof: {self.id} expects {self.expect!r} but is marked {self.proof!r}; "
                "exactly the known-false claims are 'refuted'"
            )
        if self.proof == "checked" and not self.proof_note:
            raise ValueError(f"proof_note: say what is checked and what is not ({self.id})")


@dataclass(frozen=True)
class ClaimRun:
    """The result of running one claim (``to_json`` is the ``mdsd-ot claims --json`` entry)."""

    id: str
    statement: str
    expect: str
    status: str
    trials: int
    witness: dict[str, Any] | None
    detail: str
    seconds: float
    proof: str = "proved"
    proof_note: str = ""

    @property
    def ok(self) -> bool:
        if self.expect == "holds":
            return self.status == "holds"
        return self.status == "counterexample"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "trials": self.trials,
            "witness": encode(self.witness) if self.witness is not None else None,
            "expect": self.expect,
            "ok": self.ok,
            "statement": self.statement,
            "detail": self.detail,
            "seconds": round(self.seconds, 4),
            "proof": self.proof,
            "proof_note": self.proof_note,
        }


@dataclass(frozen=True)
class Reproduction:
    """Recomputation of a witness: ``reproduced`` when the stated violation is found again."""

    claim: str
    kind: str
    reproduced: bool
    detail: str
    values: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# helpers shared by the claim modules


def alpha(p: Any, draft: DraftLaw) -> Fraction:
    """α* in exact rationals (``subset-exact``): the reference every check compares with."""
    return solve(p, draft, method="subset-exact").alpha_exact


def objective(p: list[Fraction], draft: DraftLaw, H: tuple[int, ...]) -> Fraction:
    """F(H) = P(H) − Q(H), exact (α* = 1 + min_H F(H))."""
    return sum((p[i] for i in H), Fraction(0)) - draft.Q(list(H), exact=True)


def witness(claim: str, kind: str, **data: Any) -> dict[str, Any]:
    """A witness dict: the claim, the kind (see ``KINDS``) and the instance and values."""
    return {"claim": claim, "kind": kind, **data}


def pick(rng: np.random.Generator, seq: Any) -> Any:
    """One element of ``seq``, drawn with ``rng``."""
    return seq[int(rng.integers(len(seq)))]


def top_token_law(cls: type[DraftLaw]) -> bool:
    """T9's laws (greedy, SpecHub): the top tokens of q are drafted for sure, the fast solver
    uses the closed form (``kernel == "greedy"``) rather than prefixes."""
    return cls.kernel == "greedy"


def joint_table_law(cls: type[DraftLaw]) -> bool:
    """Laws given by their whole joint table (a random one has V**n free entries, so the checks
    keep V = 3)."""
    return issubclass(cls, Explicit)


def hunted(
    claim: str,
    conjecture: str,
    trials: int,
    rng: np.random.Generator,
    fallback: Callable[[], dict[str, Any]],
) -> Outcome:
    """Refute ``claim`` with the seeded hunt for ``conjecture`` (1000 evaluations per trial),
    or, when the hunt finds nothing, with the documented instance ``fallback()``."""
    res = hunt.run(
        conjecture,
        budget=None,
        seed=int(rng.integers(2**31)),
        max_evals=1000 * max(trials, 1),
        stop_when_found=True,
    )
    if res.witness is not None:
        return Outcome(
            "counterexample",
            res.evaluations,
            {**res.witness, "claim": claim},
            f"hunt {conjecture!r}: violation {float(res.exact_value):.4g} after "
            f"{res.evaluations} evaluations",
        )
    w = fallback()
    return Outcome(
        "counterexample",
        res.evaluations,
        {**w, "claim": claim},
        f"documented instance (hunt found none in {res.evaluations} evaluations)",
    )
