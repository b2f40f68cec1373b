"""T1 — every formulation of α* gives the same value (proofs/T01_equivalence.md).

Every installed method of :data:`mdsd_ot.methods.METHODS` is compared with ``subset-exact`` on
small random rational instances of every scheme of :data:`mdsd_ot.drafts.SCHEMES` (explicit
joint laws included): exact methods must agree as Fractions, LP methods within
``max(FLOAT_TOL, method accuracy)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...api import solve
from ...drafts import SCHEMES, DraftLaw, from_spec, random_law, rational_simplex
from ...methods import METHODS
from ._base import (
    FLOAT_TOL,
    HU,
    Claim,
    Outcome,
    alpha,
    pick,
    top_token_law,
    witness,
)

__all__ = ["CLAIMS", "KINDS", "small_instance", "small_size"]


def small_size(cls: type[DraftLaw], rng: np.random.Generator) -> tuple[int, int]:
    """(V, n) for a small random law of class ``cls``: V ∈ {2, 3}, n ∈ {1, 2} (T1–T3).

    Greedy laws get V = 3, n = 2 and SpecHub n = 2 (T9's laws, :func:`top_token_law`);
    distinct-token laws n ≤ V.
    """
    top = top_token_law(cls)
    V = 3 if top and cls.fixed_n is None else int(rng.integers(2, 4))
    n = 2 if top else int(rng.integers(1, 3))
    return V, min(n, V) if cls.distinct else n


def small_instance(rng: np.random.Generator) -> tuple[list, DraftLaw]:
    """A random rational (p, law) of a random scheme, sized by :func:`small_size` (T1, T2)."""
    scheme = pick(rng, list(SCHEMES))
    V, n = small_size(SCHEMES[scheme], rng)
    return rational_simplex(rng, V, zeros=True), random_law(rng, scheme, V, n, zeros=True)


def compare(p: Any, d: DraftLaw, method: str) -> tuple[bool, Any, Any, float] | None:
    """(disagrees, method's α*, subset-exact α*, tolerance); None when not applicable."""
    m = METHODS[method]
    try:
        r = solve(p, d, method=method)
    except ValueError:
        return None  # not applicable to this law (e.g. the fast solver on an explicit law)
    ref = alpha(p, d)
    if m.exact and r.alpha_exact is not None:
        return r.alpha_exact != ref, r.alpha_exact, ref, 0.0
    tol = max(FLOAT_TOL, m.accuracy)
    return abs(r.alpha - float(ref)) > tol, r.alpha, ref, tol


def check(trials: int, rng: np.random.Generator) -> Outcome:
    methods = [k for k, m in METHODS.items() if k != "subset-exact" and m.is_installed()]
    compared = 0
    for t in range(trials):
        p, d = small_instance(rng)
        for meth in methods:
            res = compare(p, d, meth)
            if res is None:
                continue
            compared += 1
            bad, a, ref, tol = res
            if bad:
                w = witness(
                    "T1",
                    "method_alpha",
                    p=p,
                    draft=d.spec(),
                    method=meth,
                    alpha=a,
                    reference=ref,
                    tol=tol,
                )
                return Outcome("counterexample", t + 1, w, f"{meth} disagrees with subset-exact")
    return Outcome(
        "holds",
        trials,
        None,
        f"{compared} comparisons against subset-exact over {len(methods)} methods "
        f"({', '.join(methods)}); tolerance {FLOAT_TOL} for LP methods, 0 for exact",
    )


def reproduce_method_alpha(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    res = compare(w["p"], from_spec(w["draft"]), w["method"])
    if res is None:
        return False, {"note": "method not applicable"}
    bad, a, ref, _ = res
    return bad, {"alpha": a, "reference": ref}


CLAIMS = [
    Claim(
        "T1",
        "For any p and draft law: primal LP = b-matching = max-flow = set-reduced flow "
        "= dual LP = subset selection.",
        f"docs/reference.md T1; {HU} §3",
        "random rational p (with zeros) and laws of every scheme incl. explicit, V ≤ 3, n ≤ 2; "
        "every installed method against subset-exact",
        "holds",
        check,
        4,
        40,
    )
]

KINDS = {"method_alpha": reproduce_method_alpha}
