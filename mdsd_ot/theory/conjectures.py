r"""The conjectures ``mdsd-ot hunt`` searches: a float objective and an exact confirmation each.

A :class:`Conjecture` has a float ``violation(x)`` (> 0 means the conjecture fails at the search
point ``x``: a target p and the draft distributions, :class:`SearchPoint`) and an exact
``confirm(vectors, n)`` that recomputes the violation in Fractions on the rounded instance and
returns a witness dict (readable by ``mdsd-ot claims --witness``), or None.

==========================  =====================================================  =====
conjecture                  statement (believed, to refute)                        claim
==========================  =====================================================  =====
``greedy-vs-without``       α*_greedy(p, q, n) ≥ α*_without(p, q, n)               T9b
``en-vs-sequential``        α* of the e_n law ≤ sequential α*                      T12b
``prefix-greedy``           a level set of p/q is optimal for greedy laws          T7b
``prefix-product``          a level set of p/q̄ is optimal for product laws         T7c
``qconvex-greedy``          greedy laws are q-convex                               T5b
``qconvex-spechub``         SpecHub laws are q-convex                              T5b
``qconvex-product``         product laws are q-convex (q = mean marginal)          T5c
``rrs-without-vs-with``     RRS without replacement accepts at least as often      open
==========================  =====================================================  =====
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import drafts, verifiers
from ..api import solve
from . import qconvex as qc

__all__ = [
    "SearchPoint",
    "Conjecture",
    "CONJECTURES",
    "get",
    "q_convexity_objective",
    "q_convexity_confirmation",
    "prefix_confirmation",
]


@dataclass
class SearchPoint:
    """A point of the search: ``vecs[0]`` = p, then the draft distributions; n drafts."""

    vecs: list[np.ndarray]
    n: int

    @property
    def V(self) -> int:
        return len(self.vecs[0])


@dataclass(frozen=True)
class Conjecture:
    """A statement to refute: where to search (V, n, number of vectors) and how to score.

    ``violation(x)`` is the float objective (> 0: violated at x); ``confirm(vectors, n)``
    recomputes it exactly on rational vectors and returns a witness dict or None.
    """

    name: str
    statement: str
    claim: str | None
    Vs: tuple[int, ...]
    ns: tuple[int, ...]
    nvecs: int
    violation: Callable[[SearchPoint], float]
    confirm: Callable[[list[list[Fraction]], int], dict[str, Any] | None]


# --------------------------------------------------------------------------------------------
# float objectives


def _level_alpha(p: np.ndarray, d: drafts.DraftLaw, q: np.ndarray) -> float:
    """α* by the best level set of p/q (exact optimum for q-convex laws, T7)."""
    best = 0.0
    for s in qc.level_sets(list(p), list(q)):
        best = min(best, float(sum(p[i] for i in s)) - float(d.Q(list(s), exact=False)))
    return 1.0 + best


def _v_greedy_without(x: SearchPoint) -> float:
    p, q = x.vecs
    greedy = float(drafts.Greedy(q, x.n).alpha_closed_form(p, exact=False))
    return _level_alpha(p, drafts.WithoutReplacement(q, x.n), q) - greedy


def _v_en_seq(x: SearchPoint) -> float:
    p, q = x.vecs
    return _level_alpha(p, drafts.ConditionalPoisson(q, x.n), q) - _level_alpha(
        p, drafts.WithoutReplacement(q, x.n), q
    )


def _v_prefix_greedy(x: SearchPoint) -> float:
    p, q = x.vecs
    return float(qc.prefix_optimality_gap(p, drafts.Greedy(q, x.n), exact=False).gap)


def _v_prefix_product(x: SearchPoint) -> float:
    p, *qs = x.vecs
    return float(qc.prefix_optimality_gap(p, drafts.Product(qs), exact=False).gap)


def q_convexity_objective(
    law: Callable[[SearchPoint], drafts.DraftLaw],
) -> Callable[[SearchPoint], float]:
    """The float objective "worst q-convexity violation of ``law(x)``" (−inf when none)."""

    def f(x: SearchPoint) -> float:
        v = qc.q_convexity_violation(law(x), exact=False)
        return float(v.value) if v.witness is not None else -np.inf

    return f


def _v_rrs(x: SearchPoint) -> float:
    p, q = x.vecs
    dw, do = drafts.WithReplacement(q, x.n), drafts.WithoutReplacement(q, x.n)
    aw = float(verifiers.get("rrs-with", dw).exact(p, dw)[1])
    ao = float(verifiers.get("rrs-without", do).exact(p, do)[1])
    return aw - ao


# --------------------------------------------------------------------------------------------
# exact confirmations (witness dicts; None when the rounded instance shows no violation)


def _alpha(p: Any, d: drafts.DraftLaw) -> Fraction:
    return solve(p, d, method="subset-exact").alpha_exact


def _c_greedy_without(v, n):
    p, q = v
    ag, aw = _alpha(p, drafts.Greedy(q, n)), _alpha(p, drafts.WithoutReplacement(q, n))
    if ag >= aw:
        return None
    return {
        "kind": "greedy_vs_without",
        "p": p,
        "q": q,
        "n": n,
        "alpha_greedy": ag,
        "alpha_without": aw,
        "value": aw - ag,
    }


def _c_en_seq(v, n):
    p, q = v
    a_s = _alpha(p, drafts.WithoutReplacement(q, n))
    a_e = _alpha(p, drafts.ConditionalPoisson(q, n))
    if a_e <= a_s:
        return None
    return {
        "kind": "en_alpha",
        "p": p,
        "q": q,
        "n": n,
        "alpha_sequential": a_s,
        "alpha_en": a_e,
        "excess": a_e - a_s,
        "value": a_e - a_s,
    }


def prefix_confirmation(law: Callable[[list, int], drafts.DraftLaw]):
    """Exact confirmation "no level set of p/q is optimal for ``law(vectors, n)``"."""

    def c(v, n):
        d = law(v, n)
        g = qc.prefix_optimality_gap(v[0], d, exact=True)
        if g.gap <= 0:
            return None
        return {
            "kind": "prefix",
            "p": v[0],
            "draft": d.spec(),
            "gap": g.gap,
            "brute_H": g.brute_H,
            "prefix_H": g.prefix_H,
            "alpha": 1 + g.brute_value,
            "alpha_prefix": 1 + g.prefix_value,
            "value": g.gap,
        }

    return c


def q_convexity_confirmation(law: Callable[[list, int], drafts.DraftLaw]):
    """Exact confirmation "``law(vectors, n)`` is not q-convex" (witness kind ``qconvex``)."""

    def c(v, n):
        d = law(v, n)
        viol = qc.q_convexity_violation(d, exact=True)
        if viol.holds:
            return None
        return {
            "kind": "qconvex",
            "draft": d.spec(),
            "q": None,
            "value": viol.value,
            **viol.witness,
        }

    return c


def _c_rrs(v, n):
    p, q = v
    dw, do = drafts.WithReplacement(q, n), drafts.WithoutReplacement(q, n)
    aw = Fraction(verifiers.get("rrs-with", dw).exact(p, dw)[1])
    ao = Fraction(verifiers.get("rrs-without", do).exact(p, do)[1])
    if ao >= aw:
        return None
    return {
        "kind": "rrs_order",
        "p": p,
        "q": q,
        "n": n,
        "acceptance_with": aw,
        "acceptance_without": ao,
        "value": aw - ao,
    }


def _greedy_law(v, n):
    return drafts.Greedy(v[1], n)


def _product_law(v, n):
    return drafts.Product(v[1:])


CONJECTURES: dict[str, Conjecture] = {
    c.name: c
    for c in [
        Conjecture(
            "greedy-vs-without",
            "α*_greedy(p, q, n) ≥ α*_without(p, q, n)",
            "T9b",
            (3, 4, 5),
            (2, 3),
            2,
            _v_greedy_without,
            _c_greedy_without,
        ),
        Conjecture(
            "en-vs-sequential",
            "α* with the e_n law ≤ sequential α* (e_n value is a safe bound)",
            "T12b",
            (3, 4, 5),
            (2, 3),
            2,
            _v_en_seq,
            _c_en_seq,
        ),
        Conjecture(
            "prefix-greedy",
            "a level set of p/q is optimal for greedy laws",
            "T7b",
            (4, 5),
            (2, 3),
            2,
            _v_prefix_greedy,
            prefix_confirmation(_greedy_law),
        ),
        Conjecture(
            "prefix-product",
            "a level set of p/q̄ is optimal for product laws",
            "T7c",
            (3, 4, 5),
            (2,),
            3,
            _v_prefix_product,
            prefix_confirmation(_product_law),
        ),
        Conjecture(
            "qconvex-greedy",
            "greedy laws are q-convex",
            "T5b",
            (3, 4, 5),
            (2, 3),
            2,
            q_convexity_objective(lambda x: drafts.Greedy(x.vecs[1], x.n)),
            q_convexity_confirmation(_greedy_law),
        ),
        Conjecture(
            "qconvex-spechub",
            "SpecHub laws are q-convex",
            "T5b",
            (3, 4, 5),
            (2,),
            2,
            q_convexity_objective(lambda x: drafts.SpecHub(x.vecs[1])),
            q_convexity_confirmation(lambda v, n: drafts.SpecHub(v[1])),
        ),
        Conjecture(
            "qconvex-product",
            "product laws are q-convex (q = mean marginal)",
            "T5c",
            (3, 4),
            (2,),
            3,
            q_convexity_objective(lambda x: drafts.Product(x.vecs[1:])),
            q_convexity_confirmation(_product_law),
        ),
        Conjecture(
            "rrs-without-vs-with",
            "RRS without replacement accepts at least as often as RRS with replacement",
            None,
            (3, 4),
            (2, 3),
            2,
            _v_rrs,
            _c_rrs,
        ),
    ]
}


def get(name: str) -> Conjecture:
    """The conjecture called ``name``.

    Examples
    --------
    >>> get("qconvex-greedy").claim
    'T5b'
    """
    if name not in CONJECTURES:
        raise ValueError(
            f"CONJECTURE: unknown conjecture {name!r}; choose one of {', '.join(CONJECTURES)} "
            "(mdsd-ot hunt --list)"
        )
    return CONJECTURES[name]
