r"""The claims registry: every claim T1..T12 of docs/reference.md as an executable check.

Each :class:`Claim` has an id, the statement, a reference, how its instances are generated, and a
check run on ``trials`` seeded instances.  Theorems (``expect="holds"``) must hold; the known-false
statements carry sub-ids and ``expect="fails"``, and their check must *find* a counterexample:

======  ==================================================================  ========
id      statement                                                           expect
======  ==================================================================  ========
T1      primal = b-matching = max-flow = reduced = dual = subset            holds
T2      the dual (10) has an integral optimum; simplex vertices are 0/1     holds
T3      (10)'s constraint matrix is TU (every scheme)                       holds
T3b     the token-vs-tuple biadjacency matrix is TU                         fails
T3c     every edge-vertex incidence matrix (any graph) is TU                fails
T4      n = 1: α* = Σ min(p, q)                                             holds
T5      q-convexity: with, without (sequential), conditional Poisson        holds
T5b     q-convexity of greedy and SpecHub laws                              fails
T5c     q-convexity of product laws (mean marginal as q)                    fails
T6      every Q is supermodular (Möbius weights ≥ 0)                        holds
T7      a level set of p/q is optimal for q-convex laws                     holds
T7b     a level set of p/q is optimal for greedy / SpecHub laws             fails
T7c     a level set of p/q̄ is optimal for product laws                      fails
T8      α*_without ≥ α*_with (Q_without ≤ Q_with pointwise)                 holds
T9      greedy: closed-form α*, optimal H*, lossless verifier attaining α*  holds
T9b     greedy α* ≥ without-replacement α*                                  fails
T10     n = 2 i.i.d.: α* = min_S [P(S)+1−q(S)²]; α* = 1 on an interval      holds
T11     every verifier outputs p and accepts at most α*; optimal attains    holds
T12     Q = e_n(q|_H)/e_n(q) for conditional-Poisson drafts                 holds
T12b    Q = e_n(q|_H)/e_n(q) for sequential without-replacement drafts      fails
======  ==================================================================  ========

A run reports ``status`` ``"holds"`` (no violation in ``trials`` instances), ``"counterexample"``
(with an exact witness) or ``"skipped"`` (a dependency is missing; never counted as ok for a
theorem).  ``ok`` is ``status == "holds"`` for theorems and ``status == "counterexample"`` for
the known-false statements.  Every witness can be recomputed by :func:`reproduce`.
"""

from __future__ import annotations

import importlib
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .. import drafts, fast
from .. import verifiers as ver
from ..api import solve
from ..drafts import DraftLaw, elementary_symmetric, from_spec
from ..exact import METHODS
from ..exact import dual as exact_dual
from . import qconvex as qc
from . import tum
from .instances import random_law, rational_simplex
from .witness import decode, encode

__all__ = [
    "Claim",
    "Outcome",
    "ClaimRun",
    "CLAIMS",
    "get",
    "run",
    "run_all",
    "reproduce",
    "Reproduction",
]

FLOAT_TOL = 1e-6  # LP solvers (HiGHS tolerances ~1e-7, architecture.md); exact methods use 0


@dataclass(frozen=True)
class Outcome:
    status: str  # "holds" | "counterexample" | "skipped"
    trials: int
    witness: dict[str, Any] | None = None
    detail: str = ""


@dataclass(frozen=True)
class Claim:
    """One claim of docs/reference.md with its executable check."""

    id: str
    statement: str
    reference: str
    instances: str
    expect: str  # "holds" or "fails"
    check: Callable[[int, np.random.Generator], Outcome]
    trials: int = 10
    slow_trials: int = 100


@dataclass(frozen=True)
class ClaimRun:
    """The result of running one claim."""

    id: str
    statement: str
    expect: str
    status: str
    trials: int
    witness: dict[str, Any] | None
    detail: str
    seconds: float

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
# helpers


def _alpha(p: Any, draft: DraftLaw) -> Fraction:
    return solve(p, draft, method="subset-exact").alpha_exact


def _F(p: list[Fraction], draft: DraftLaw, H: tuple[int, ...]) -> Fraction:
    return sum((p[i] for i in H), Fraction(0)) - draft.Q(list(H), exact=True)


def _spec(d: DraftLaw) -> dict[str, Any]:
    return d.spec()


def _wit(claim: str, kind: str, **data: Any) -> dict[str, Any]:
    return {"claim": claim, "kind": kind, **data}


def _pick(rng: np.random.Generator, seq: Any) -> Any:
    return seq[int(rng.integers(len(seq)))]


# --------------------------------------------------------------------------------------------
# T1 equivalence


def _t1_instance(rng):
    scheme = _pick(
        rng, ["with", "without", "conditional-poisson", "product", "greedy", "spechub", "explicit"]
    )
    V = int(rng.integers(2, 4)) if scheme not in ("greedy",) else 3
    n = int(rng.integers(1, 3)) if scheme not in ("greedy", "spechub") else 2
    if scheme in ("without", "conditional-poisson") and n > V:
        n = V
    return rational_simplex(rng, V, zeros=True), random_law(rng, scheme, V, n, zeros=True)


def _t1_compare(p, d, method):
    m = METHODS[method]
    try:
        r = solve(p, d, method=method)
    except ValueError:
        return None  # not applicable to this law (e.g. the fast solver on an explicit law)
    ref = _alpha(p, d)
    if m.exact and r.alpha_exact is not None:
        return r.alpha_exact != ref, r.alpha_exact, ref, 0.0
    tol = max(FLOAT_TOL, m.accuracy)
    return abs(r.alpha - float(ref)) > tol, r.alpha, ref, tol


def _check_t1(trials, rng):
    methods = [k for k, m in METHODS.items() if k != "subset-exact" and m.is_installed()]
    compared = 0
    for t in range(trials):
        p, d = _t1_instance(rng)
        for meth in methods:
            res = _t1_compare(p, d, meth)
            if res is None:
                continue
            compared += 1
            bad, a, ref, tol = res
            if bad:
                w = _wit(
                    "T1",
                    "method_alpha",
                    p=p,
                    draft=_spec(d),
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


def _rep_method_alpha(w):
    d = from_spec(w["draft"])
    res = _t1_compare(w["p"], d, w["method"])
    if res is None:
        return False, {"note": "method not applicable"}
    bad, a, ref, _ = res
    return bad, {"alpha": a, "reference": ref}


# --------------------------------------------------------------------------------------------
# T2 integrality of the dual


def _dual_lp(p, d):
    """Solve (10) with HiGHS dual simplex on our own matrix: (value, vertex x)."""
    from scipy.optimize import linprog

    A, ts = tum.dual_matrix(d, identity=False)
    items = d.joint_items(exact=False)
    c = np.concatenate([np.asarray([float(v) for v in p]), [float(items[t]) for t in ts]])
    res = linprog(c, A_ub=-A, b_ub=-np.ones(A.shape[0]), bounds=(0, None), method="highs-ds")
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"dual LP failed: {res.message}")
    return float(res.fun), res.x


def _t2_eval(p, d):
    lp, x = _dual_lp(p, d)
    a = float(_alpha(p, d))
    frac_dist = float(np.max(np.minimum(np.abs(x), np.abs(x - 1)))) if x.size else 0.0
    vals = {"lp": lp, "alpha": a, "max_fractionality": frac_dist}
    bad = abs(lp - a) > 1e-9 or frac_dist > 1e-9
    if "dual" in METHODS:
        info = solve(p, d, method="dual").info
        vals.update(
            dual_lp=info.get("lp"), dual_ip=info.get("ip"), dual_integral=info.get("integral")
        )
        bad = bad or not info.get("integral", False)
        bad = bad or abs(float(info["lp"]) - float(info["ip"])) > FLOAT_TOL
        bad = bad or abs(float(info["ip"]) - a) > FLOAT_TOL
    return bad, vals


def _check_t2(trials, rng):
    for t in range(trials):
        p, d = _t1_instance(rng)
        bad, vals = _t2_eval(p, d)
        if bad:
            return Outcome(
                "counterexample",
                t + 1,
                _wit("T2", "dual", p=p, draft=_spec(d), **vals),
                "LP ≠ IP or vertex not 0/1",
            )
    who = "own HiGHS dual simplex" + (" and method 'dual'" if "dual" in METHODS else "")
    return Outcome("holds", trials, None, f"{who}: LP = α* within 1e-9, vertex 0/1 within 1e-9")


def _rep_dual(w):
    return _t2_eval(w["p"], from_spec(w["draft"]))


# --------------------------------------------------------------------------------------------
# T3 total unimodularity


def _t3_eval(d):
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


def _check_t3(trials, rng):
    schemes = ["with", "without", "conditional-poisson", "product", "greedy", "spechub"]
    methods = set()
    for t in range(trials):
        scheme = schemes[t % len(schemes)]
        V = int(rng.integers(2, 4)) if scheme != "greedy" else 3
        n = 2 if scheme in ("greedy", "spechub") else int(rng.integers(1, 3))
        d = random_law(rng, scheme, V, n)
        bad, out, res, A = _t3_eval(d)
        methods.add(res.method)
        if bad:
            c = res.certificate
            w = _wit(
                "T3",
                "tu_minor",
                matrix=A.toarray(),
                rows=c.rows if c else [],
                cols=c.cols if c else [],
                det=c.det if c else None,
                draft=_spec(d),
                **out,
            )
            return Outcome("counterexample", t + 1, w, "the dual matrix failed a TU test")
    return Outcome(
        "holds",
        trials,
        None,
        f"structural certificate + TU test ({', '.join(sorted(methods))}) on every "
        "instance; compared with mdsd_ot.exact.dual.dual_constraint_matrix when present",
    )


def _check_t3b(trials, rng):
    found = tum.smallest_non_tu_biadjacency(max_V=4, max_n=3)
    if found is None:  # pragma: no cover - would mean the claim is true
        return Outcome("holds", trials, None, "no (V, n) ≤ (4, 3) gave a non-TU biadjacency")
    V, n, res, ts = found
    B, _ = tum.biadjacency_matrix(drafts.make("with", [Fraction(1, V)] * V, n))
    c = res.certificate
    w = _wit(
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


def _check_t3c(trials, rng):
    for k, t in zip(range(3, 3 + 2 * max(trials, 1), 2), itertools.count(1)):
        M = tum.odd_cycle_incidence(k)
        res = tum.is_totally_unimodular(M, "exhaustive")
        if res.is_tu is False:
            c = res.certificate
            return Outcome(
                "counterexample",
                t,
                _wit("T3c", "tu_minor", matrix=M, rows=c.rows, cols=c.cols, det=c.det),
                f"odd cycle C_{k}: det {c.det} (the graph is not bipartite)",
            )
    return Outcome("holds", trials, None, "no odd cycle refuted (the TU test is broken)")


def _rep_tu_minor(w):
    M = np.asarray(w["matrix"], dtype=np.int64)
    d = tum.minor(M, w["rows"], w["cols"]) if w["rows"] else None
    return d is not None and d not in (-1, 0, 1) and d == w.get("det", d), {"det": d}


# --------------------------------------------------------------------------------------------
# T4 single draft


def _t4_eval(p, q):
    a = _alpha(p, drafts.WithReplacement(q, 1))
    formula = sum((min(x, y) for x, y in zip(p, q, strict=True)), Fraction(0))
    return a != formula, {"alpha": a, "formula": formula}


def _check_t4(trials, rng):
    for t in range(trials):
        V = int(rng.integers(2, 7))
        p, q = rational_simplex(rng, V, zeros=True), rational_simplex(rng, V, zeros=True)
        bad, vals = _t4_eval(p, q)
        if bad:
            return Outcome("counterexample", t + 1, _wit("T4", "n1", p=p, q=q, **vals))
    return Outcome("holds", trials, None, "exact equality in rationals (subset-exact)")


def _rep_n1(w):
    return _t4_eval(w["p"], w["q"])


# --------------------------------------------------------------------------------------------
# T5 q-convexity, T6 supermodularity


def _qconv_wit(claim, d, v, q=None):
    return _wit(claim, "qconvex", draft=_spec(d), q=q, value=v.value, **v.witness)


def _check_qconvex(claim, schemes, trials, rng):
    for t in range(trials):
        scheme = schemes[t % len(schemes)]
        V = int(rng.integers(3, 6))
        n = int(rng.integers(1, 4)) if scheme not in ("spechub",) else 2
        d = random_law(rng, scheme, V, min(n, V - (scheme == "greedy")), zeros=True)
        v = qc.q_convexity_violation(d, exact=True)
        if not v.holds:
            return Outcome(
                "counterexample",
                t + 1,
                _qconv_wit(claim, d, v),
                f"{scheme}: D1 − D2 = {v.value} > 0",
            )
    return Outcome(
        "holds", trials, None, f"exact scan of all (H, x, y), V ≤ 5, schemes {', '.join(schemes)}"
    )


def _check_t5(trials, rng):
    return _check_qconvex("T5", ["with", "without", "conditional-poisson"], trials, rng)


def _check_t5b(trials, rng):
    out = _check_qconvex("T5b", ["greedy", "spechub"], max(trials, 1), rng)
    if out.status == "counterexample":
        return out
    d = drafts.Greedy(["2/5", "3/10", "1/5", "1/10"], 2)  # documented fallback (proofs/T05)
    v = qc.q_convexity_violation(d)
    return Outcome(
        "counterexample",
        out.trials + 1,
        _qconv_wit("T5b", d, v),
        "documented instance (random search found none)",
    )


def _t5c_fallback():
    d = drafts.Product([["0", "0", "1/100", "99/100"], ["49/50", "1/100", "0", "1/100"]])
    return _qconv_wit("T5c", d, qc.q_convexity_violation(d))


def _check_t5c(trials, rng):
    return _hunted("T5c", "qconvex-product", trials, rng, _t5c_fallback)


def _rep_qconvex(w):
    d = from_spec(w["draft"])
    q = w.get("q")
    H, x, y = tuple(w["H"]), int(w["x"]), int(w["y"])
    qv = list(qc._qvec(d, q, True))
    Q = lambda S: d.Q(list(S), exact=True)  # noqa: E731
    d1 = (Q(H + (x,)) - Q(H)) / qv[x]
    d2 = (Q(H + (x, y)) - Q(H + (x,))) / qv[y]
    return d1 > d2 and d1 - d2 == w["value"], {"D1": d1, "D2": d2, "value": d1 - d2}


def _t6_eval(d):
    v = qc.supermodularity_violation(d, exact=True)
    mw, sw = qc.mobius_weights(d, exact=True), qc.set_weights(d, exact=True)
    sw = {k: x for k, x in sw.items() if x != 0}
    bad = (not v.holds) or mw != sw or any(x < 0 for x in mw.values())
    return bad, v, mw == sw


def _check_t6(trials, rng):
    schemes = ["with", "without", "conditional-poisson", "product", "greedy", "spechub", "explicit"]
    for t in range(trials):
        scheme = schemes[t % len(schemes)]
        V = int(rng.integers(3, 5)) if scheme != "explicit" else 3
        n = 2 if scheme in ("greedy", "spechub", "explicit") else int(rng.integers(1, 4))
        d = random_law(rng, scheme, V, n, zeros=True)
        bad, v, same = _t6_eval(d)
        if bad:
            w = _wit(
                "T6",
                "supermodular",
                draft=_spec(d),
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


def _rep_supermodular(w):
    d = from_spec(w["draft"])
    bad, v, same = _t6_eval(d)
    return bad, {"value": v.value, "mobius_equals_set_weights": same}


# --------------------------------------------------------------------------------------------
# T7 prefix optimality


def _t7_eval(p, d):
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


def _check_t7(trials, rng):
    schemes = ["with", "without", "conditional-poisson"]
    for t in range(trials):
        scheme = schemes[t % 3]
        V = int(rng.integers(2, 7))
        n = min(int(rng.integers(1, 4)), V)
        p, d = rational_simplex(rng, V, zeros=True), random_law(rng, scheme, V, n, zeros=True)
        bad, vals = _t7_eval(p, d)
        if bad:
            return Outcome(
                "counterexample",
                t + 1,
                _wit("T7", "prefix", p=p, draft=_spec(d), **vals),
                f"{scheme}: no level set of p/q is optimal (or fast solver differs)",
            )
    return Outcome(
        "holds",
        trials,
        None,
        "exact gap 0 between brute force and the best level set; fast solver "
        "(mdsd_ot.fast.alpha_star) within 1e-9",
    )


def _hunted(claim, conjecture, trials, rng, fallback):
    from . import hunt

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


def _t7b_fallback():
    p, q = ["1/2", "2/5", "1/20", "1/20"], ["3/10", "1/4", "1/4", "1/5"]
    d = drafts.Greedy(q, 2)
    _, vals = _t7_eval(p, d)
    return _wit("T7b", "prefix", p=p, draft=_spec(d), **vals)


def _check_t7b(trials, rng):
    return _hunted("T7b", "prefix-greedy", trials, rng, _t7b_fallback)


def _t7c_fallback():
    p = ["9/50", "3/5", "9/250", "67/1000", "117/1000"]
    d = drafts.Product(
        [
            ["1/1000", "579/1000", "259/1000", "0", "161/1000"],
            ["223/250", "1/100", "1/250", "93/1000", "1/1000"],
        ]
    )
    _, vals = _t7_eval(p, d)
    return _wit("T7c", "prefix", p=p, draft=_spec(d), **vals)


def _check_t7c(trials, rng):
    return _hunted("T7c", "prefix-product", trials, rng, _t7c_fallback)


def _rep_prefix(w):
    bad, vals = _t7_eval(w["p"], from_spec(w["draft"]))
    return bad and vals["gap"] == w["gap"], vals


# --------------------------------------------------------------------------------------------
# T8 draft order


def _t8_eval(p, q, n):
    dw, do = drafts.WithReplacement(q, n), drafts.WithoutReplacement(q, n)
    V = len(q)
    for k in range(V + 1):
        for H in itertools.combinations(range(V), k):
            if do.Q(list(H), exact=True) > dw.Q(list(H), exact=True):
                return True, {
                    "H": H,
                    "Q_without": do.Q(list(H), exact=True),
                    "Q_with": dw.Q(list(H), exact=True),
                }
    aw, ao = _alpha(p, dw), _alpha(p, do)
    return ao < aw, {"alpha_with": aw, "alpha_without": ao}


def _check_t8(trials, rng):
    for t in range(trials):
        V = int(rng.integers(2, 6))
        n = int(rng.integers(1, V + 1))
        p, q = rational_simplex(rng, V, zeros=True), rational_simplex(rng, V)
        bad, vals = _t8_eval(p, q, n)
        if bad:
            return Outcome("counterexample", t + 1, _wit("T8", "order", p=p, q=q, n=n, **vals))
    return Outcome("holds", trials, None, "exact: Q_without ≤ Q_with on every H; α* ordered")


def _rep_order(w):
    return _t8_eval(w["p"], w["q"], int(w["n"]))


# --------------------------------------------------------------------------------------------
# T9 greedy


def greedy_verifier_law(p: list[Fraction], d: drafts.Greedy) -> tuple[list[Fraction], Fraction]:
    """T9's verifier, enumerated exactly: (output law, acceptance rate)."""
    qp = d.q_prime(True)
    T = set(d.T)
    m = [Fraction(0) if y in T else min(p[y], qp[y]) for y in range(d.V)]
    rest = 1 - sum(m, Fraction(0))
    r = [(p[y] - m[y]) / rest if rest else Fraction(0) for y in range(d.V)]
    law = [Fraction(0)] * d.V
    acc = Fraction(0)
    for x in range(d.V):
        if qp[x] == 0:
            continue
        a = min(Fraction(1), p[x] / qp[x])
        law[x] += qp[x] * a
        acc += qp[x] * a
        for y in range(d.V):
            law[y] += qp[x] * (1 - a) * r[y]
            if y in T:
                acc += qp[x] * (1 - a) * r[y]
    return law, acc


def _t9_eval(p, q, n):
    d = drafts.Greedy(q, n)
    qp = d.q_prime(True)
    T = set(d.T)
    formula = sum((p[i] for i in T), Fraction(0)) + sum(
        (min(p[x], qp[x]) for x in range(d.V) if x not in T), Fraction(0)
    )
    a = _alpha(p, d)
    Hs = tuple(sorted(T | {x for x in range(d.V) if x not in T and qp[x] >= p[x]}))
    law, acc = greedy_verifier_law(p, d)
    vals = {
        "alpha": a,
        "formula": formula,
        "H_star": Hs,
        "alpha_H_star": 1 + _F(p, d, Hs),
        "verifier_law": law,
        "acceptance": acc,
    }
    bad = formula != a or 1 + _F(p, d, Hs) != a or law != list(p) or acc != a
    # the registry's greedy verifier, besides the enumeration above
    vlaw, vacc = ver.get("greedy", d).exact(p, d)
    vals.update(registry_acceptance=vacc)
    bad = bad or [Fraction(x) for x in vlaw] != list(p) or Fraction(vacc) != a
    return bad, vals


def _check_t9(trials, rng):
    for t in range(trials):
        V = int(rng.integers(3, 6))
        n = int(rng.integers(2, min(V, 3) + 1))
        p, q = rational_simplex(rng, V, zeros=True), rational_simplex(rng, V)
        bad, vals = _t9_eval(p, q, n)
        if bad:
            return Outcome("counterexample", t + 1, _wit("T9", "greedy", p=p, q=q, n=n, **vals))
    reg = " and mdsd_ot.verifiers 'greedy'"
    return Outcome(
        "holds",
        trials,
        None,
        f"exact: closed form = subset-exact α* = α* at H*; own enumeration{reg}: "
        "output law = p, acceptance = α*",
    )


def _rep_greedy(w):
    return _t9_eval(w["p"], w["q"], int(w["n"]))


def _t9b_fallback():
    p, q, n = ["3/100", "17/25", "9/50", "11/100"], ["13/50", "21/100", "13/50", "27/100"], 3
    return _alpha_order_wit("T9b", p, q, n)


def _alpha_order_wit(claim, p, q, n):
    ag, aw = _alpha(p, drafts.Greedy(q, n)), _alpha(p, drafts.WithoutReplacement(q, n))
    return _wit(claim, "greedy_vs_without", p=p, q=q, n=n, alpha_greedy=ag, alpha_without=aw)


def _check_t9b(trials, rng):
    return _hunted("T9b", "greedy-vs-without", trials, rng, _t9b_fallback)


def _rep_greedy_vs_without(w):
    n = int(w["n"])
    ag = _alpha(w["p"], drafts.Greedy(w["q"], n))
    aw = _alpha(w["p"], drafts.WithoutReplacement(w["q"], n))
    return ag < aw and ag == w["alpha_greedy"], {"alpha_greedy": ag, "alpha_without": aw}


# --------------------------------------------------------------------------------------------
# T10 two i.i.d. drafts


def t10_inside(q2: Fraction) -> bool:
    r"""Exact membership of q₂ in :math:`[1 - \sqrt{2/3},\ \sqrt{2/3} - 1/3]` (squares compared)."""
    lo_ok = (1 - q2) <= 0 or (1 - q2) ** 2 <= Fraction(2, 3)
    hi_ok = (q2 + Fraction(1, 3)) ** 2 <= Fraction(2, 3)
    return lo_ok and hi_ok


def _t10_eval(q2):
    p = [Fraction(1, 3)] * 3
    q = [Fraction(1, 3), q2, Fraction(2, 3) - q2]
    d = drafts.WithReplacement(q, 2)
    a = _alpha(p, d)
    formula = min(
        sum((p[i] for i in S), Fraction(0)) + 1 - sum((q[i] for i in S), Fraction(0)) ** 2
        for k in range(4)
        for S in itertools.combinations(range(3), k)
    )
    inside = t10_inside(q2)
    vals = {"alpha": a, "formula": formula, "inside": inside}
    bad = a != formula or (a == 1) != inside
    if "maxflow" in METHODS:
        am = solve(p, d, method="maxflow").alpha
        vals["alpha_maxflow"] = am
        bad = bad or abs(am - float(a)) > FLOAT_TOL
    return bad, vals


def _check_t10(trials, rng):
    lo, hi = 1 - math.sqrt(2 / 3), math.sqrt(2 / 3) - 1 / 3
    pts = []
    for e in (lo, hi):  # both sides of both endpoints, then random points
        c = Fraction(e).limit_denominator(10**4)
        pts += [c - Fraction(1, 10**4), c + Fraction(1, 10**4)]
    pts += [Fraction(int(rng.integers(0, 61)), 90) for _ in range(trials)]
    n_in = 0
    for t, q2 in enumerate(pts):
        bad, vals = _t10_eval(q2)
        n_in += vals["inside"]
        if bad:
            return Outcome("counterexample", t + 1, _wit("T10", "interval", q2=q2, **vals))
    return Outcome(
        "holds",
        len(pts),
        None,
        f"α* = 1 exactly iff q₂ ∈ [1 − √(2/3), √(2/3) − 1/3] ≈ [{lo:.4f}, {hi:.4f}] "
        f"({n_in} of {len(pts)} points inside, incl. both sides of each endpoint)",
    )


def _rep_interval(w):
    return _t10_eval(w["q2"])


# --------------------------------------------------------------------------------------------
# T11 verifiers


def _t11_law(name, laws, rng, V):
    ok = (
        laws
        if laws is not None
        else ("with", "without", "conditional-poisson", "product", "greedy", "spechub", "explicit")
    )
    scheme = _pick(rng, list(ok))
    n = 1 if name == "single" else 2
    if scheme == "explicit":
        return random_law(rng, "explicit", 3, n)
    return random_law(rng, scheme, V, n)


def _t11_eval(name, p, d):
    ver = importlib.import_module("mdsd_ot.verifiers")
    law, acc = ver.get(name, d).exact(p, d)
    a = _alpha(p, d)
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


def _check_t11(trials, rng):
    count = 0
    for t in range(max(trials, 1)):
        for name in ver.NAMES:
            V = int(rng.integers(3, 5))
            d = _t11_law(name, ver.LAWS[name], rng, V)
            p = rational_simplex(rng, d.V, zeros=True)
            try:
                bad, vals = _t11_eval(name, p, d)
            except ValueError:
                continue
            count += 1
            if bad:
                return Outcome(
                    "counterexample",
                    t + 1,
                    _wit("T11", "verifier", name=name, p=p, draft=_spec(d), **vals),
                    f"verifier {name!r} is lossy or beats α*",
                )
    return Outcome(
        "holds",
        trials,
        None,
        f"{count} exact enumerations over {len(ver.NAMES)} verifiers: law = p, "
        "acceptance ≤ α*, 'optimal' attains α*",
    )


def _rep_verifier(w):
    return _t11_eval(w["name"], w["p"], from_spec(w["draft"]))


# --------------------------------------------------------------------------------------------
# T12 the e_n formula


def en_ratio(q: list[Fraction], n: int, H: tuple[int, ...]) -> Fraction:
    """e_n(q|_H) / e_n(q) in exact rationals."""
    one = Fraction(1)
    return (
        elementary_symmetric([q[i] for i in H], n, one)[n]
        / elementary_symmetric(list(q), n, one)[n]
    )


def conditioned_iid_Q(q: list[Fraction], n: int, H: tuple[int, ...]) -> Fraction:
    """Pr[all n drafts in H] for i.i.d. draws conditioned on distinctness, by enumeration."""
    Hs = set(H)
    num = den = Fraction(0)
    for t in itertools.permutations(range(len(q)), n):
        w = math.prod((q[i] for i in t), start=Fraction(1))
        den += w
        if Hs.issuperset(t):
            num += w
    return num / den


def _t12_eval(q, n, H):
    cp = drafts.ConditionalPoisson(q, n).Q(list(H), exact=True)
    en, en_enum = en_ratio(q, n, H), conditioned_iid_Q(q, n, H)
    return not (cp == en == en_enum), {"Q_cp": cp, "Q_en": en, "Q_enumerated": en_enum}


def _check_t12(trials, rng):
    for t in range(trials):
        V = int(rng.integers(2, 6))
        n = int(rng.integers(1, V + 1))
        q = rational_simplex(rng, V)
        for k in range(V + 1):
            for H in itertools.combinations(range(V), k):
                bad, vals = _t12_eval(q, n, H)
                if bad:
                    return Outcome(
                        "counterexample", t + 1, _wit("T12", "cp_formula", q=q, n=n, H=H, **vals)
                    )
    return Outcome(
        "holds",
        trials,
        None,
        "exact: e_n ratio = enumeration of conditioned i.i.d. draws = "
        "ConditionalPoisson.Q on every H",
    )


def _rep_cp_formula(w):
    return _t12_eval(w["q"], int(w["n"]), tuple(w["H"]))


def _t12b_eval(q, n, H):
    qs = drafts.WithoutReplacement(q, n).Q(list(H), exact=True)
    en = en_ratio(q, n, H)
    return qs != en, {"Q_sequential": qs, "Q_en": en}


def _check_t12b(trials, rng):
    for t in range(max(trials, 1)):
        V = int(rng.integers(3, 5))
        n = int(rng.integers(2, V))
        q = rational_simplex(rng, V)
        for k in range(n, V):
            for H in itertools.combinations(range(V), k):
                bad, vals = _t12b_eval(q, n, H)
                if bad:
                    w = _wit("T12b", "en_formula", q=q, n=n, H=H, **vals)
                    # by how much α* can be overstated: search p on a small grid
                    best = None
                    for _ in range(20):
                        p = rational_simplex(rng, V)
                        a_s = _alpha(p, drafts.WithoutReplacement(q, n))
                        a_e = _alpha(p, drafts.ConditionalPoisson(q, n))
                        if best is None or a_e - a_s > best[0]:
                            best = (a_e - a_s, p, a_s, a_e)
                    if best[0] > 0:
                        w.update(p=best[1], alpha_sequential=best[2], alpha_en=best[3])
                    return Outcome(
                        "counterexample",
                        t + 1,
                        w,
                        f"Q_seq = {vals['Q_sequential']} ≠ e_n ratio {vals['Q_en']}"
                        + (f"; α* overstated by {float(best[0]):.4g}" if best[0] > 0 else ""),
                    )
    return Outcome("holds", trials, None, "no discrepancy found")


def _rep_en_formula(w):
    bad, vals = _t12b_eval(w["q"], int(w["n"]), tuple(w["H"]))
    ok = bad and vals["Q_sequential"] == w["Q_sequential"] and vals["Q_en"] == w["Q_en"]
    if ok and "p" in w:
        n = int(w["n"])
        a_s = _alpha(w["p"], drafts.WithoutReplacement(w["q"], n))
        a_e = _alpha(w["p"], drafts.ConditionalPoisson(w["q"], n))
        vals.update(alpha_sequential=a_s, alpha_en=a_e)
        ok = a_e > a_s
    return ok, vals


def _rep_en_alpha(w):
    n = int(w["n"])
    a_s = _alpha(w["p"], drafts.WithoutReplacement(w["q"], n))
    a_e = _alpha(w["p"], drafts.ConditionalPoisson(w["q"], n))
    return a_e > a_s and a_e - a_s == w["excess"], {"alpha_sequential": a_s, "alpha_en": a_e}


def _rep_rrs(w):
    n = int(w["n"])
    dw, do = drafts.WithReplacement(w["q"], n), drafts.WithoutReplacement(w["q"], n)
    aw = Fraction(ver.get("rrs-with", dw).exact(w["p"], dw)[1])
    ao = Fraction(ver.get("rrs-without", do).exact(w["p"], do)[1])
    return ao < aw, {"acceptance_with": aw, "acceptance_without": ao}


# --------------------------------------------------------------------------------------------
# the registry

_H = "Hu et al. 2025 (arXiv 2502.18779)"

CLAIMS: dict[str, Claim] = {
    c.id: c
    for c in [
        Claim(
            "T1",
            "For any p and draft law: primal LP = b-matching = max-flow = set-reduced flow "
            "= dual LP = subset selection.",
            f"docs/reference.md T1; {_H} §3",
            "random rational p (with zeros) and laws of every scheme incl. explicit, V ≤ 3, n ≤ 2; "
            "every installed method against subset-exact",
            "holds",
            _check_t1,
            4,
            40,
        ),
        Claim(
            "T2",
            "The dual (10) has an integral optimum: LP optimum = 0/1 optimum, and simplex "
            "vertices are 0/1.",
            f"docs/reference.md T2; {_H} §3",
            "as T1",
            "holds",
            _check_t2,
            4,
            40,
        ),
        Claim(
            "T3",
            "The constraint matrix of (10) is totally unimodular.",
            "docs/reference.md T3; Schrijver, Theory of Linear and Integer Programming, §19",
            "dual matrices of every scheme, V ≤ 3, n ≤ 2 (exhaustive when V^n ≤ 16, else "
            "budgeted exhaustive → CMR → random minors)",
            "holds",
            _check_t3,
            6,
            24,
        ),
        Claim(
            "T3b",
            "[false] The token-vs-tuple biadjacency matrix B[i, ī] = 1[i ∈ ī] is TU.",
            "docs/reference.md T3",
            "(V, n) in lexicographic order up to (4, 3), i.i.d. full support",
            "fails",
            _check_t3b,
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
            _check_t3c,
            1,
            3,
        ),
        Claim(
            "T4",
            "n = 1: α* = Σ_i min(p(i), q(i)) = 1 − TV(p, q).",
            "docs/reference.md T4",
            "random rational p, q, V ≤ 6",
            "holds",
            _check_t4,
            10,
            200,
        ),
        Claim(
            "T5",
            "Q is q-convex for with, without (sequential) and conditional-Poisson drafts.",
            f"docs/reference.md T5; {_H} Thms 3–4",
            "random rational q, V ≤ 5, n ≤ 3",
            "holds",
            _check_t5,
            6,
            60,
        ),
        Claim(
            "T5b",
            "[false] Greedy and SpecHub laws are q-convex.",
            "docs/reference.md T5, T9",
            "random rational q, V ≤ 5",
            "fails",
            _check_t5b,
            4,
            20,
        ),
        Claim(
            "T5c",
            "[false] Product laws are q-convex (q = mean marginal).",
            "docs/reference.md T5",
            "hunt 'qconvex-product' (seeded, evaluation budget)",
            "fails",
            _check_t5c,
            1,
            5,
        ),
        Claim(
            "T6",
            "Every Q is supermodular; Q(H) = Σ_{S⊆H} w_S with w_S = Pr[set(ī) = S] ≥ 0.",
            "docs/reference.md T6",
            "every scheme incl. explicit, V ≤ 4, n ≤ 3",
            "holds",
            _check_t6,
            7,
            70,
        ),
        Claim(
            "T7",
            "For q-convex Q an optimal H is a level set of p/q (prefix algorithm).",
            f"docs/reference.md T7; {_H} Thm 3",
            "with/without/CP, V ≤ 6, n ≤ 3",
            "holds",
            _check_t7,
            6,
            90,
        ),
        Claim(
            "T7b",
            "[false] A level set of p/q is optimal for greedy/SpecHub laws.",
            "docs/reference.md T7, T9",
            "hunt 'prefix-greedy' (seeded, evaluation budget)",
            "fails",
            _check_t7b,
            1,
            5,
        ),
        Claim(
            "T7c",
            "[false] A level set of p/q̄ is optimal for product laws.",
            "docs/reference.md T7",
            "hunt 'prefix-product' (seeded, evaluation budget)",
            "fails",
            _check_t7c,
            1,
            5,
        ),
        Claim(
            "T8",
            "α*_without(p, q, n) ≥ α*_with(p, q, n); Q_without ≤ Q_with pointwise.",
            "docs/reference.md T8",
            "random rational p, q, V ≤ 5, n ≤ V",
            "holds",
            _check_t8,
            6,
            60,
        ),
        Claim(
            "T9",
            "Greedy: α* = P(T) + Σ_{x∉T} min(p, q'); H* = T ∪ {q' ≥ p} is optimal; the "
            "verifier outputs p and attains α*.",
            f"docs/reference.md T9; {_H} §5.1",
            "random rational p, q, V ≤ 5, n ≤ 3",
            "holds",
            _check_t9,
            6,
            60,
        ),
        Claim(
            "T9b",
            "[false] Greedy α* ≥ without-replacement α*.",
            f"docs/reference.md T9; {_H} §6",
            "hunt 'greedy-vs-without'",
            "fails",
            _check_t9b,
            1,
            5,
        ),
        Claim(
            "T10",
            "n = 2 i.i.d.: α* = min_S [P(S) + 1 − q(S)²]; for p uniform on 3 tokens and "
            "q = (1/3, q₂, 2/3 − q₂), α* = 1 iff q₂ ∈ [1 − √(2/3), √(2/3) − 1/3].",
            "docs/reference.md T10; Khisti et al. 2024 (arXiv 2410.18234)",
            "both sides of both endpoints + random q₂ = k/90",
            "holds",
            _check_t10,
            6,
            60,
        ),
        Claim(
            "T11",
            "Every verifier outputs exactly p and accepts at most α* of its law; the "
            "optimal verifier attains α*.",
            "docs/reference.md T11",
            "each verifier on a random compatible rational law, V ≤ 4",
            "holds",
            _check_t11,
            1,
            10,
        ),
        Claim(
            "T12",
            "Conditional-Poisson drafts: Q(H) = e_n(q|_H)/e_n(q).",
            "docs/reference.md T12",
            "random rational q, V ≤ 5, every H",
            "holds",
            _check_t12,
            4,
            40,
        ),
        Claim(
            "T12b",
            "[false] Sequential without-replacement drafts: Q(H) = e_n(q|_H)/e_n(q) "
            f"({_H}, §4.2.2 and proof of Thm 4).",
            "docs/reference.md T12",
            "random rational q, V ≤ 4",
            "fails",
            _check_t12b,
            1,
            10,
        ),
    ]
}

#: Witness kind → recomputation ``w -> (violation found again, recomputed values)``.
KINDS: dict[str, Callable[[dict[str, Any]], tuple[bool, dict[str, Any]]]] = {
    "method_alpha": _rep_method_alpha,
    "dual": _rep_dual,
    "tu_minor": _rep_tu_minor,
    "n1": _rep_n1,
    "qconvex": _rep_qconvex,
    "supermodular": _rep_supermodular,
    "prefix": _rep_prefix,
    "order": _rep_order,
    "greedy": _rep_greedy,
    "greedy_vs_without": _rep_greedy_vs_without,
    "interval": _rep_interval,
    "verifier": _rep_verifier,
    "cp_formula": _rep_cp_formula,
    "en_formula": _rep_en_formula,
    "en_alpha": _rep_en_alpha,
    "rrs_order": _rep_rrs,
}


def get(claim_id: str) -> Claim:
    """The claim with id ``claim_id`` (case-insensitive; ``T5`` or ``t5``)."""
    key = claim_id.strip()
    for k in CLAIMS:
        if k.lower() == key.lower():
            return CLAIMS[k]
    raise ValueError(f"--id: unknown claim {claim_id!r}; choose one of {', '.join(CLAIMS)}")


def run(claim: Claim | str, trials: int | None = None, seed: int = 0) -> ClaimRun:
    """Run one claim's check on ``trials`` seeded instances (default: the claim's own count).

    Examples
    --------
    >>> r = run("T4", trials=3, seed=1)
    >>> r.status, r.ok
    ('holds', True)
    """
    c = get(claim) if isinstance(claim, str) else claim
    if trials is not None and trials < 1:
        raise ValueError(f"--trials: must be >= 1, got {trials}")
    rng = np.random.default_rng([seed, sum(map(ord, c.id))])
    t0 = time.perf_counter()
    out = c.check(c.trials if trials is None else trials, rng)
    return ClaimRun(
        c.id,
        c.statement,
        c.expect,
        out.status,
        out.trials,
        out.witness,
        out.detail,
        time.perf_counter() - t0,
    )


def run_all(
    ids: list[str] | None = None,
    trials: int | None = None,
    seed: int = 0,
    on_done: Callable[[ClaimRun], None] | None = None,
) -> list[ClaimRun]:
    """Run several claims (all by default) in registry order."""
    chosen = [get(i) for i in ids] if ids else list(CLAIMS.values())
    out = []
    for c in chosen:
        r = run(c, trials, seed)
        out.append(r)
        if on_done is not None:
            on_done(r)
    return out


def reproduce(witness: dict[str, Any]) -> Reproduction:
    """Recompute a witness (JSON form, rationals as ``"a/b"``) from its instance.

    Examples
    --------
    >>> w = run("T12b", trials=1).witness
    >>> reproduce(encode(w)).reproduced
    True
    """
    w = decode(witness)
    kind = w.get("kind")
    if kind not in KINDS:
        raise ValueError(
            f"--witness: unknown witness kind {kind!r}; expected one of {', '.join(KINDS)}"
        )
    found, vals = KINDS[kind](w)
    detail = ", ".join(f"{k}={_short(v)}" for k, v in vals.items())
    return Reproduction(str(w.get("claim", "?")), kind, bool(found), detail, vals)


def _short(v: Any) -> str:
    if isinstance(v, Fraction):
        return str(v)
    if isinstance(v, list) and len(v) > 6:
        return f"[{len(v)} entries]"
    return str(encode(v))
