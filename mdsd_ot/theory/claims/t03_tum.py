"""T3 — the constraint matrix of the dual (10) is totally unimodular (proofs/T03_tum.md).

T3 tests the dual matrices of every scheme (exhaustively when V^n ≤ 16) with a structural
certificate, and compares them with :func:`mdsd_ot.exact.dual.dual_constraint_matrix`.  Two
known-false neighbours must be refuted: T3b (the token-vs-tuple biadjacency matrix is TU) and
T3c (every edge-vertex incidence matrix is TU; odd cycles are the control).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np

from ...drafts import SCHEMES, DraftLaw, WithReplacement, random_law
from ...exact import dual as exact_dual
from .. import tum
from ._base import Claim, Outcome, witness
from .t01_equivalence import small_size

__all__ = ["CLAIMS", "KINDS"]


def evaluate(d: DraftLaw) -> tuple[bool, dict[str, Any], tum.TUResult, Any]:
    """(violated, values, TU result, matrix) for the dual matrix of ``d``."""
    A, _ = tum.dual_matrix(d)
    small = d.V**d.n <= 16
    res = tum.is_totally_unimodular(A, "exhaustive" if small else "auto", samples=200)
    cert = tum.bipartite_incidence_certificate(A, d.V)
    out = {"verdict": res.verdict, "method": res.method, "structural": cert.holds}
    bad = res.is_tu is False or not cert.holds
    # the dual LP's own constraint matrix, built independently of tum.dual_matrix
    B = exact_dual.dual_constraint_matrix(d)
    rb = tum.is_totally_unimodular(B, "exhaustive" if small else "auto", samples=200)
    cb = tum.bipartite_incidence_certificate(B, d.V)
    out.update(other_shape=list(B.shape), other_verdict=rb.verdict, other_structural=cb.holds)
    bad = bad or rb.is_tu is False or not cb.holds or B.shape != A.shape
    return bad, out, res, A


def check(trials: int, rng: np.random.Generator) -> Outcome:
    schemes = list(SCHEMES)
    methods = set()
    for t in range(trials):
        scheme = schemes[t % len(schemes)]
        V, n = small_size(SCHEMES[scheme], rng)
        d = random_law(rng, scheme, V, n)
        bad, out, res, A = evaluate(d)
        methods.add(res.method)
        if bad:
            c = res.certificate
            w = witness(
                "T3",
                "tu_minor",
                matrix=A.toarray(),
                rows=c.rows if c else [],
                cols=c.cols if c else [],
                det=c.det if c else None,
                draft=d.spec(),
                **out,
            )
            return Outcome("counterexample", t + 1, w, "the dual matrix failed a TU test")
    return Outcome(
        "holds",
        trials,
        None,
        f"structural certificate + TU test ({', '.join(sorted(methods))}) on every "
        "instance; compared with mdsd_ot.exact.dual.dual_constraint_matrix",
    )


def check_biadjacency(trials: int, rng: np.random.Generator) -> Outcome:
    """T3b: the smallest (V, n) whose biadjacency matrix is not TU, with its odd cycle."""
    found = tum.smallest_non_tu_biadjacency(max_V=4, max_n=3)
    if found is None:  # pragma: no cover - would mean the claim is true
        return Outcome("holds", trials, None, "no (V, n) ≤ (4, 3) gave a non-TU biadjacency")
    V, n, res, ts = found
    B, _ = tum.biadjacency_matrix(WithReplacement([Fraction(1, V)] * V, n))
    c = res.certificate
    w = witness(
        "T3b",
        "tu_minor",
        matrix=B,
        rows=c.rows,
        cols=c.cols,
        det=c.det,
        V=V,
        n=n,
        tuples=[list(ts[j]) for j in c.cols],
    )
    examined = sum(1 for v in range(1, V + 1) for m in range(1, 4) if (v, m) <= (V, n))
    return Outcome(
        "counterexample",
        examined,
        w,
        f"smallest (V, n) = ({V}, {n}) (lexicographic; i.i.d. law, full support): "
        f"tuples {[ts[j] for j in c.cols]} form an odd cycle, det {c.det}",
    )


def check_odd_cycles(trials: int, rng: np.random.Generator) -> Outcome:
    """T3c: the incidence matrices of C_3, C_5, ... must fail the TU test."""
    for k, t in zip(range(3, 3 + 2 * max(trials, 1), 2), itertools.count(1)):
        M = tum.odd_cycle_incidence(k)
        res = tum.is_totally_unimodular(M, "exhaustive")
        if res.is_tu is False:
            c = res.certificate
            return Outcome(
                "counterexample",
                t,
                witness("T3c", "tu_minor", matrix=M, rows=c.rows, cols=c.cols, det=c.det),
                f"odd cycle C_{k}: det {c.det} (the graph is not bipartite)",
            )
    return Outcome("holds", trials, None, "no odd cycle refuted (the TU test is broken)")


def reproduce_tu_minor(w: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    M = np.asarray(w["matrix"], dtype=np.int64)
    d = tum.minor(M, w["rows"], w["cols"]) if w["rows"] else None
    return d is not None and d not in (-1, 0, 1) and d == w.get("det", d), {"det": d}


CLAIMS = [
    Claim(
        "T3",
        "The constraint matrix of (10) is totally unimodular.",
        "docs/reference.md T3; Schrijver, Theory of Linear and Integer Programming, §19",
        "dual matrices of every scheme, V ≤ 3, n ≤ 2 (exhaustive when V^n ≤ 16, else "
        "budgeted exhaustive → CMR → random minors)",
        "holds",
        check,
        6,
        24,
    ),
    Claim(
        "T3b",
        "[false] The token-vs-tuple biadjacency matrix B[i, ī] = 1[i ∈ ī] is TU.",
        "docs/reference.md T3",
        "(V, n) in lexicographic order up to (4, 3), i.i.d. full support",
        "fails",
        check_biadjacency,
        1,
        1,
    ),
    Claim(
        "T3c",
        "[false] The edge-vertex incidence matrix of any graph is TU (control: odd "
        "cycles must fail).",
        "docs/reference.md T3",
        "cycles C_3, C_5, ...",
        "fails",
        check_odd_cycles,
        1,
        3,
    ),
]

KINDS = {"tu_minor": reproduce_tu_minor}
