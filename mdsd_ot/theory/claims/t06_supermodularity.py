r"""T6 — every Q is supermodular (proofs/T06_supermodularity.md).

:math:`Q(H) = \sum_{S \subseteq H} w_S` with :math:`w_S = \Pr[\mathrm{set}(\bar i) = S] \ge 0`,
and each :math:`H \mapsto 1[S \subseteq H]` is supermodular.  The check scans the local
inequality over all (H, x, y) and compares the Möbius inversion of Q with the law's own set
weights (``law.set_weights``), for every scheme, explicit joint laws and non-q-convex laws
included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...drafts import SCHEMES, DraftLaw, from_spec, random_law
from .. import qconvex as qc
from ._base import Claim, Outcome, joint_table_law, top_token_law, witness

__all__ = ["CLAIMS", "KINDS"]


def evaluate(d: DraftLaw) -> tuple[bool, qc.Violation, bool]:
    """(violated, worst local violation, Möbius weights == set weights)."""
    v = qc.supermodularity_violation(d, exact=True)
    mw, sw = qc.mobius_weights(d, exact=True), qc.set_weights(d, exact=True)
    sw = {k: x for k, x in sw.items() if x != 0}
    bad = (not v.holds) or mw != sw or any(x < 0 for x in mw.values())
    return bad, v, mw == sw


def check(trials: int, rng: np.random.Generator) -> Outcome:
    schemes = list(SCHEMES)
    for t in range(trials):
        scheme = schemes[t % len(schemes)]
        cls = SCHEMES[scheme]
        table = joint_table_law(cls)
        V = 3 if table else int(rng.integers(3, 5))
        n = 2 if table or top_token_law(cls) else int(rng.integers(1, 4))
        d = random_law(rng, scheme, V, n, zeros=True)
        bad, v, same = evaluate(d)
        if bad:
            w = witness(
                "T6",
                "supermodular",
                draft=d.spec(),
                value=v.value,
                mobius_equals_set_weights=same,
                **(v.witness or {}),
            )
            return Outcome("counterexample", t + 1, w, f"{scheme}: supermodularity fails")
    return Outcome(
        "holds",
        trials,
        None,
        "exact: local supermodularity on all (H, x, y), and Möbius(Q) = set weights "
        "≥ 0, for every scheme including explicit joint laws and non-q-convex greedy",
    )


def reproduce_supermodular(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    bad, v, same = evaluate(from_spec(w["draft"]))
    return bad, {"value": v.value, "mobius_equals_set_weights": same}


CLAIMS = [
    Claim(
        "T6",
        "Every Q is supermodular; Q(H) = Σ_{S⊆H} w_S with w_S = Pr[set(ī) = S] ≥ 0.",
        "docs/reference.md T6",
        "every scheme incl. explicit, V ≤ 4, n ≤ 3",
        "holds",
        check,
        7,
        70,
    )
]

KINDS = {"supermodular": reproduce_supermodular}
