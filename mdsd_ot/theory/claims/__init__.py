r"""The claims registry: every claim T1..T12 of docs/reference.md as an executable check.

Each :class:`Claim` has an id, the statement, a reference, how its instances are generated, a
check run on ``trials`` seeded instances, and a proof status.  Theorems (``expect="holds"``)
must hold; the known-false statements carry sub-ids and ``expect="fails"``, and their check must
*find* a counterexample.  One module per claim mirrors the proof files ``proofs/TNN_*.md``
(:mod:`.t01_equivalence` … :mod:`.t12_en_formula`, each with its known-false neighbours);
:mod:`._registry` gathers them, :mod:`.runner` runs them and reproduces witnesses.

======  ==================================================================  ========  =======
id      statement                                                           expect    proof
======  ==================================================================  ========  =======
T1      primal = b-matching = max-flow = reduced = dual = subset            holds     proved
T2      the dual (10) has an integral optimum; simplex vertices are 0/1     holds     proved
T3      (10)'s constraint matrix is TU (every scheme)                       holds     proved
T3b     the token-vs-tuple biadjacency matrix is TU                         fails     refuted
T3c     every edge-vertex incidence matrix (any graph) is TU                fails     refuted
T4      n = 1: α* = Σ min(p, q)                                             holds     proved
T5      q-convexity: with, without (sequential), conditional Poisson        holds     checked
T5b     q-convexity of greedy and SpecHub laws                              fails     refuted
T5c     q-convexity of product laws (mean marginal as q)                    fails     refuted
T6      every Q is supermodular (Möbius weights ≥ 0)                        holds     proved
T7      a level set of p/q is optimal for q-convex laws                     holds     proved
T7b     a level set of p/q is optimal for greedy / SpecHub laws             fails     refuted
T7c     a level set of p/q̄ is optimal for product laws                      fails     refuted
T8      α*_without ≥ α*_with (Q_without ≤ Q_with pointwise)                 holds     proved
T9      greedy: closed-form α*, optimal H*, lossless verifier attaining α*  holds     proved
T9b     greedy α* ≥ without-replacement α*                                  fails     refuted
T10     n = 2 i.i.d.: α* = min_S [P(S)+1−q(S)²]; α* = 1 on an interval      holds     proved
T11     every verifier outputs p and accepts at most α*; optimal attains    holds     proved
T12     Q = e_n(q|_H)/e_n(q) for conditional-Poisson drafts                 holds     proved
T12b    Q = e_n(q|_H)/e_n(q) for sequential without-replacement drafts      fails     refuted
======  ==================================================================  ========  =======

T5 is *checked, not proved* for sequential without-replacement drafts at n ≥ 3 (its
``proof_note`` says exactly what the check covers; the status is declared once, in
:data:`mdsd_ot.theory.claims.t05_q_convexity.PROOF`).

A run reports ``status`` ``"holds"`` (no violation in ``trials`` instances), ``"counterexample"``
(with an exact witness) or ``"skipped"`` (never counted as ok for a theorem).  ``ok`` is
``status == "holds"`` for theorems and ``status == "counterexample"`` for the known-false
statements.  Every witness can be recomputed by :func:`reproduce`.

Examples
--------
>>> r = run("T12b", trials=1)
>>> r.ok, r.proof, reproduce(r.witness).reproduced
(True, 'refuted', True)
"""

from __future__ import annotations

from ..oracles import conditioned_iid_Q, greedy_verifier_law
from ._base import (
    FLOAT_TOL,
    PROOF_STATES,
    Claim,
    ClaimRun,
    Outcome,
    Reproduction,
)
from ._registry import CLAIMS, KINDS, get
from .runner import PROOF_TAGS, reproduce, row, run, run_all, table
from .t10_two_drafts import t10_inside
from .t12_en_formula import en_ratio

__all__ = [
    "Claim",
    "Outcome",
    "ClaimRun",
    "Reproduction",
    "CLAIMS",
    "KINDS",
    "FLOAT_TOL",
    "PROOF_STATES",
    "PROOF_TAGS",
    "get",
    "run",
    "run_all",
    "reproduce",
    "row",
    "table",
    "en_ratio",
    "conditioned_iid_Q",
    "greedy_verifier_law",
    "t10_inside",
]
