r"""T11 — every verifier is lossless and accepts at most α* (proofs/T11_verifiers.md).

Each verifier of :data:`mdsd_ot.verifiers.NAMES` is enumerated exactly (``.exact``) on a random
rational law it is defined for: its output law must be p, its acceptance at most α*
(``subset-exact``), and the optimal-plan verifier must attain α*.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ... import verifiers as ver
from ...drafts import (
    SCHEMES,
    DraftLaw,
    WithoutReplacement,
    WithReplacement,
    from_spec,
    random_law,
    rational_simplex,
)
from ._base import Claim, Outcome, alpha, joint_table_law, pick, witness

__all__ = ["CLAIMS", "KINDS"]


def random_law_for(name: str, rng: np.random.Generator, V: int) -> DraftLaw:
    """A random rational law verifier ``name`` is defined for: one of its laws (any scheme
    when it accepts every law), n = its required number of drafts or 2, joint tables V = 3."""
    laws = ver.LAWS[name]
    scheme = pick(rng, list(SCHEMES) if laws is None else list(laws))
    n = ver.get(name).n_required or 2
    return random_law(rng, scheme, 3 if joint_table_law(SCHEMES[scheme]) else V, n)


def evaluate(name: str, p: Any, d: DraftLaw) -> tuple[bool, dict[str, Any]]:
    """(violated, values): the verifier's exact output law and acceptance against α*."""
    law, acc = ver.get(name, d).exact(p, d)
    a = alpha(p, d)
    exact = all(isinstance(x, Fraction) for x in law)
    if exact:
        lossless = list(law) == list(p)
        bounded = Fraction(acc) <= a
        attains = Fraction(acc) == a
    else:
        lossless = max(abs(float(x) - float(y)) for x, y in zip(law, p, strict=True)) <= 1e-9
        bounded = float(acc) <= float(a) + 1e-9
        attains = abs(float(acc) - float(a)) <= 1e-9
    bad = not lossless or not bounded or (name == "optimal" and not attains)
    return bad, {"law": list(law), "acceptance": acc, "alpha": a, "exact": exact}


def check(trials: int, rng: np.random.Generator) -> Outcome:
    count = 0
    for t in range(max(trials, 1)):
        for name in ver.NAMES:
            V = int(rng.integers(3, 5))
            d = random_law_for(name, rng, V)
            p = rational_simplex(rng, d.V, zeros=True)
            try:
                bad, vals = evaluate(name, p, d)
            except ValueError:
                continue
            count += 1
            if bad:
                return Outcome(
                    "counterexample",
                    t + 1,
                    witness("T11", "verifier", name=name, p=p, draft=d.spec(), **vals),
                    f"verifier {name!r} is lossy or beats α*",
                )
    return Outcome(
        "holds",
        trials,
        None,
        f"{count} exact enumerations over {len(ver.NAMES)} verifiers: law = p, "
        "acceptance ≤ α*, 'optimal' attains α*",
    )


def reproduce_verifier(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    return evaluate(w["name"], w["p"], from_spec(w["draft"]))


def reproduce_rrs(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """The hunt 'rrs-without-vs-with': RRS without replacement accepts less than with."""
    n = int(w["n"])
    dw, do = WithReplacement(w["q"], n), WithoutReplacement(w["q"], n)
    aw = Fraction(ver.get("rrs-with", dw).exact(w["p"], dw)[1])
    ao = Fraction(ver.get("rrs-without", do).exact(w["p"], do)[1])
    return ao < aw, {"acceptance_with": aw, "acceptance_without": ao}


CLAIMS = [
    Claim(
        "T11",
        "Every verifier outputs exactly p and accepts at most α* of its law; the "
        "optimal verifier attains α*.",
        "docs/reference.md T11",
        "each verifier on a random compatible rational law, V ≤ 4",
        "holds",
        check,
        1,
        10,
    )
]

KINDS = {"verifier": reproduce_verifier, "rrs_order": reproduce_rrs}
