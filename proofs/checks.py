"""Machine checks of the proofs in this folder, one function per claim (run by tests/test_proofs.py).

Each ``check_Txx()`` returns a dict of what it verified and raises ``AssertionError`` when the
claim (or the proof step it checks) fails.  Symbolic checks use sympy; positivity on the simplex
is certified by *homogenisation*: a polynomial N in masses that sum to at most 1 is rewritten with
every constant 1 replaced by the total mass (including a slack w ≥ 0); if all coefficients of the
homogeneous result are ≥ 0, then N ≥ 0 on the region.  Non-algebraic claims are checked
exhaustively or on seeded random instances through :mod:`mdsd_ot.theory.claims`.
"""

from __future__ import annotations

import importlib.util
import itertools
from fractions import Fraction
from pathlib import Path

import sympy as sp

from mdsd_ot import drafts, solve
from mdsd_ot.theory import claims, tum

__all__ = [f"check_T{k:02d}" for k in range(1, 13)] + ["t05_sequential"]


def _helper(name: str):
    """Load a sibling helper of proofs/ (this file is loaded by path, not as a package)."""
    spec = importlib.util.spec_from_file_location(
        f"proofs_{name}", Path(__file__).with_name(f"{name}.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: The proof of T5 for sequential drafts, every n (Lemmas A–C): ``proofs/t05_sequential.py``.
t05_sequential = _helper("t05_sequential")


def _claim(cid: str, trials: int, seed: int = 0) -> dict:
    r = claims.run(cid, trials=trials, seed=seed)
    assert r.ok, f"{cid}: expected {r.expect}, got {r.status}: {r.detail} {r.witness}"
    return {"claim": cid, "status": r.status, "trials": r.trials}


def nonneg_on_simplex(expr: sp.Expr, masses: list[sp.Symbol]) -> bool:
    """True when ``expr`` (a polynomial in ``masses``, Σ masses ≤ 1) is certified ≥ 0 by
    homogenisation with a slack w = 1 − Σ masses: every coefficient of the result is ≥ 0."""
    w = sp.Symbol("w_slack", nonnegative=True)
    poly = sp.Poly(sp.expand(expr), *masses)
    D = poly.total_degree()
    total = sum(masses) + w
    hom = sum(
        c * sp.Mul(*[m**e for m, e in zip(masses, mon, strict=True)]) * total ** (D - sum(mon))
        for mon, c in poly.terms()
    )
    coeffs = sp.Poly(sp.expand(hom), *masses, w).coeffs()
    return all(c >= 0 for c in coeffs)


# --------------------------------------------------------------------------------------------


def check_T01() -> dict:
    """Equivalence of all formulations: randomised (every installed method vs subset-exact)."""
    return _claim("T1", 3)


def check_T02() -> dict:
    """Integrality of the dual: LP = IP, simplex vertex 0/1 (randomised, exact reference)."""
    return _claim("T2", 6)


def check_T03() -> dict:
    """TU of (10): exhaustive on the V = 3, n = 2 i.i.d. matrix, structural certificate, and the
    non-bipartite control (C_3) must fail."""
    d = drafts.WithReplacement(["1/3", "1/3", "1/3"], 2)
    A, _ = tum.dual_matrix(d)
    ex = tum.is_totally_unimodular(A, "exhaustive")
    assert ex.is_tu is True, ex
    assert tum.bipartite_incidence_certificate(A, d.V).holds
    c3 = tum.is_totally_unimodular(tum.odd_cycle_incidence(3), "exhaustive")
    assert c3.is_tu is False and abs(c3.certificate.det) == 2
    found = tum.smallest_non_tu_biadjacency(max_V=3, max_n=3)
    assert found is not None and found[:2] == (3, 2), found
    out = _claim("T3", 6)
    return {**out, "exhaustive_minors": ex.minors_checked, "biadjacency_smallest": (3, 2)}


def check_T04() -> dict:
    r"""n = 1, symbolic for V = 3: on every sign region of d_i = q_i − p_i, the subset objective
    P(H) + 1 − q(H) minus Σ min(p, q) is a combination of the |d_i| with coefficients ≥ 0, and is
    0 at H* = {i : p_i ≤ q_i}.  Then exact random instances."""
    V = 3
    p = sp.symbols("p0:3", positive=True)
    d = sp.symbols("d0:3", real=True)
    regions = 0
    for signs in itertools.product([1, -1], repeat=V):  # +1: d_i ≥ 0 (q_i ≥ p_i)
        q = [p[i] + d[i] for i in range(V)]
        mins = sum(p[i] if signs[i] > 0 else q[i] for i in range(V))
        one = sum(q)  # 1 = Σ q
        Hstar = [i for i in range(V) if signs[i] > 0]
        for k in range(V + 1):
            for H in itertools.combinations(range(V), k):
                diff = sp.expand(sum(p[i] for i in H) + one - sum(q[i] for i in H) - mins)
                # in the region, substitute d_i = s_i * a_i with a_i ≥ 0; coefficients must be ≥ 0
                a = sp.symbols("a0:3", nonnegative=True)
                diff_a = sp.expand(diff.subs({d[i]: signs[i] * a[i] for i in range(V)}))
                poly = sp.Poly(diff_a, *a, *p)
                assert all(c >= 0 for c in poly.coeffs()), (signs, H, diff_a)
                if list(H) == Hstar:
                    assert diff_a == 0, (signs, H, diff_a)
        regions += 1
    return {**_claim("T4", 20), "symbolic_regions": regions}


def _seq_Q_n2(q, H):
    """Sequential Q for n = 2 by enumeration of ordered pairs (symbolic or exact)."""
    return sum(q[i] * q[j] / (1 - q[i]) for i in H for j in H if i != j)


def check_T05() -> dict:
    r"""q-convexity.

    (a) with replacement, symbolic for n = 1..6: with s = q(H), a = q(x), b = q(y),
    :math:`\frac{(s+a+b)^n - (s+a)^n}{b} - \frac{(s+a)^n - s^n}{a}` is a polynomial with
    coefficients ≥ 0 in (s, a, b).
    (b) sequential n = 2, symbolic: the closed form Q(H) = q(H) − (1 − q(H)) Σ_{i∈H} q_i/(1−q_i)
    equals the enumeration (V = 4, every H), and D2 − D1 has a numerator certified ≥ 0 on the
    simplex (independent of the rest of H).
    (c) conditional Poisson, symbolic V = 5: D1 = e_{n−1}(H)/e_n, D2 − D1 = q_x e_{n−2}(H)/e_n.
    (d) the general-n closed form of the sequential Q (I_m sums) equals enumeration, exact, n = 3.
    (e) the exhaustive exact scan of the registry (with, without, CP) and the refutation for
    greedy / SpecHub / product laws.
    (f) sequential, every n (``proofs/t05_sequential.py``): Lemma B symbolically (|h| ≤ 2),
    Lemma A's identity (≤ 3 factors), Lemma C certified (|h| ≤ 1), and an exact random sweep of
    Lemma B, Lemma C and the chain D1 ≤ M ≤ D2 against the package's Q (V ≤ 9, n ≤ 6).
    """
    s, a, b = sp.symbols("s a b", nonnegative=True)
    for n in range(1, 7):
        expr = sp.cancel(((s + a + b) ** n - (s + a) ** n) / b - ((s + a) ** n - s**n) / a)
        poly = sp.Poly(sp.expand(expr), s, a, b)
        assert all(c >= 0 for c in poly.coeffs()), (n, expr)

    q = sp.symbols("q0:4", positive=True)
    for k in range(5):
        for H in itertools.combinations(range(4), k):
            qH = sum((q[i] for i in H), sp.Integer(0))
            closed = qH - (1 - qH) * sum((q[i] / (1 - q[i]) for i in H), sp.Integer(0))
            assert sp.simplify(closed - _seq_Q_n2(q, H)) == 0, H

    qx, qy, S, g = sp.symbols("q_x q_y s g", positive=True)

    def Qc(mass, gsum):
        return mass - (1 - mass) * gsum

    rx, ry = qx / (1 - qx), qy / (1 - qy)
    D1 = (Qc(S + qx, g + rx) - Qc(S, g)) / qx
    D2 = (Qc(S + qx + qy, g + rx + ry) - Qc(S + qx, g + rx)) / qy
    num, den = sp.fraction(sp.factor(sp.together(D2 - D1)))
    assert g not in num.free_symbols and g not in den.free_symbols, "g must cancel"
    assert nonneg_on_simplex(num, [qx, qy, S]), num
    # the denominator is (1 − q_x)(1 − q_y) > 0 up to a positive constant
    ratio = sp.simplify(den / ((1 - qx) * (1 - qy)))
    assert ratio.is_number and ratio > 0, den

    qs = sp.symbols("c0:5", positive=True)
    for n in range(1, 4):
        for k in range(0, 4):
            H = list(range(k))
            x, y = 3, 4
            e = lambda vals, m: sp.expand(  # noqa: E731
                sum((sp.Mul(*c) for c in itertools.combinations(vals, m)), sp.Integer(0))
                if m >= 0
                else sp.Integer(0)
            )
            qH = [qs[i] for i in H]
            d1 = sp.cancel((e(qH + [qs[x]], n) - e(qH, n)) / qs[x])
            d2 = sp.cancel((e(qH + [qs[x], qs[y]], n) - e(qH + [qs[x]], n)) / qs[y])
            assert sp.expand(d1 - e(qH, n - 1)) == 0
            assert sp.expand(d2 - d1 - qs[x] * e(qH, n - 2)) == 0

    qv = [Fraction(3, 10), Fraction(1, 4), Fraction(1, 5), Fraction(3, 20), Fraction(1, 10)]
    law = drafts.WithoutReplacement(qv, 3)
    for k in range(6):
        for H in itertools.combinations(range(5), k):
            assert _seq_Q_closed(qv, 3, H) == law.Q(list(H), exact=True), H
    seq = t05_sequential
    sequential = {
        "absorption_identities": seq.absorption_symbolic(2),
        "logconvex_factors": seq.logconvex_identity(3),
        "splitting_certified": seq.splitting_certificate(1),
        **seq.sweep(12, seed=0, max_V=9, max_n=6),
    }
    out = {name: _claim(name, t)["status"] for name, t in [("T5", 12), ("T5b", 2), ("T5c", 1)]}
    return {
        "symbolic_with_n_max": 6,
        "sequential_n2": "certified",
        "sequential_all_n": sequential,
        "cp": "identity",
        **out,
    }


def _seq_Q_closed(q, n, H):
    r"""Q(H) = 1 − (1 − q(H)) Σ_{m<n} I_m(H), I_m = Σ_{S⊆H,|S|=m} Σ_{U⊆S} (−1)^{m−|U|}/(1−q(U))."""
    total = Fraction(0)
    for m in range(n):
        for S in itertools.combinations(H, m):
            for u in range(m + 1):
                for U in itertools.combinations(S, u):
                    total += Fraction((-1) ** (m - u)) / (1 - sum((q[i] for i in U), Fraction(0)))
    return 1 - (1 - sum((q[i] for i in H), Fraction(0))) * total


def check_T06() -> dict:
    """Supermodularity of every Q (Möbius weights = set weights ≥ 0), incl. non-q-convex laws."""
    g = drafts.Greedy(["2/5", "3/10", "1/5", "1/10"], 2)
    from mdsd_ot.theory import qconvex as qc

    assert not qc.q_convexity_violation(g).holds  # not q-convex ...
    assert qc.supermodularity_violation(g).holds  # ... yet supermodular
    return _claim("T6", 14)


def check_T07() -> dict:
    """Prefix optimality: exact, exhaustive over H, for with / without / CP; refuted for greedy
    and product laws."""
    out = {name: _claim(name, t)["status"] for name, t in [("T7", 12), ("T7b", 1), ("T7c", 1)]}
    return out


def check_T08() -> dict:
    return _claim("T8", 12)


def _greedy_symbolic(V: int, n: int) -> int:
    """T9 symbolically: output law = p, acceptance = P(T) + Σ min(p, q'), and H* optimal, on
    every sign region of p_x − q'_x (x ∉ T).  T = {0..n−2} (q sorted)."""
    q = sp.symbols(f"q0:{V}", positive=True)
    p = sp.symbols(f"p0:{V}", positive=True)
    T = list(range(n - 1))
    rest = [x for x in range(V) if x not in T]
    qT = sum(q[x] for x in rest)
    qp = {x: q[x] / qT for x in rest}
    regions = 0
    for signs in itertools.product([True, False], repeat=len(rest)):  # True: p_x ≤ q'_x
        if not any(signs):  # p_x > q'_x for every x ∉ T is impossible: Σ p ≤ 1 = Σ q'
            continue
        sgn = dict(zip(rest, signs, strict=True))
        m = {y: (p[y] if sgn[y] else qp[y]) if y in rest else sp.Integer(0) for y in range(V)}
        acc = {x: (p[x] / qp[x] if sgn[x] else sp.Integer(1)) for x in rest}
        M = sum(m.values())
        r = {y: (p[y] - m[y]) / (1 - M) for y in range(V)}
        reject = 1 - sum(qp[x] * acc[x] for x in rest)
        for y in range(V):
            law = (qp[y] * acc[y] if y in rest else 0) + reject * r[y]
            assert sp.simplify(law - p[y]) == 0, (signs, y)
        acceptance = sum(qp[x] * acc[x] for x in rest) + reject * sum(r[y] for y in T)
        formula = sum(p[t] for t in T) + sum(m[x] for x in rest)
        assert sp.simplify(acceptance - formula) == 0, signs
        # optimality of H* among sets containing T: F(H) − F(H*) = Σ ± d_x with d_x = p_x − q'_x
        a = sp.symbols(f"a0:{V}", nonnegative=True)  # |d_x|
        dx = {x: (-a[x] if sgn[x] else a[x]) for x in rest}
        Fstar = sum((dx[x] for x in rest if sgn[x]), sp.Integer(0))  # H* \ T = {d_x ≤ 0}
        for k in range(len(rest) + 1):
            for Hr in itertools.combinations(rest, k):
                diff = sp.expand(sum((dx[x] for x in Hr), sp.Integer(0)) - Fstar)
                assert diff == 0 or all(c >= 0 for c in sp.Poly(diff, *a).coeffs()), (signs, Hr)
        regions += 1
    return regions


def check_T09() -> dict:
    regions = sum(_greedy_symbolic(V, n) for V, n in [(3, 2), (3, 3), (4, 2), (4, 3)])
    return {**_claim("T9", 12), "symbolic_regions": regions}


def t10_interval() -> tuple[sp.Expr, sp.Expr]:
    r"""Solve {q₂ ∈ [0, 2/3] : P(S) ≥ q(S)² for every S} with sympy: the closed-form interval."""
    q2 = sp.Symbol("q2", real=True)
    q = [sp.Rational(1, 3), q2, sp.Rational(2, 3) - q2]
    region = sp.Interval(0, sp.Rational(2, 3))
    for k in range(1, 4):
        for S in itertools.combinations(range(3), k):
            cond = sp.Rational(k, 3) - sum(q[i] for i in S) ** 2 >= 0
            region = region.intersect(sp.solve_univariate_inequality(cond, q2, relational=False))
    return region.inf, region.sup


def check_T10() -> dict:
    lo, hi = t10_interval()
    assert sp.simplify(lo - (1 - sp.sqrt(6) / 3)) == 0, lo
    assert sp.simplify(hi - (sp.sqrt(6) / 3 - sp.Rational(1, 3))) == 0, hi
    p = [Fraction(1, 3)] * 3
    for e, side in [(lo, -1), (lo, 1), (hi, -1), (hi, 1)]:
        q2 = Fraction(float(e)).limit_denominator(10**6) + side * Fraction(1, 10**5)
        a = solve(
            p,
            drafts.WithReplacement([Fraction(1, 3), q2, Fraction(2, 3) - q2], 2),
            method="subset-exact",
        ).alpha_exact
        inside = (e == lo and side > 0) or (e == hi and side < 0)
        assert (a == 1) == inside, (float(e), side, a)
    return {**_claim("T10", 20), "interval": (str(lo), str(hi))}


def check_T11() -> dict:
    r = claims.run("T11", trials=2)
    assert r.status in ("holds", "skipped"), (r.status, r.detail, r.witness)
    return {"claim": "T11", "status": r.status, "detail": r.detail}


def check_T12() -> dict:
    """The counterexample in exact rationals, from the definitions (no library Q)."""
    q = [sp.Rational(1, 2), sp.Rational(3, 10), sp.Rational(1, 5)]
    seq = q[0] * q[1] / (1 - q[0]) + q[1] * q[0] / (1 - q[1])  # first two draws in {0, 1}
    e2 = lambda v: sum(a * b for a, b in itertools.combinations(v, 2))  # noqa: E731
    en = e2(q[:2]) / e2(q)
    assert seq == sp.Rational(18, 35) and en == sp.Rational(15, 31) and seq != en
    law = drafts.WithoutReplacement(["1/2", "3/10", "1/5"], 2)
    assert law.Q([0, 1], exact=True) == Fraction(18, 35)
    cp = drafts.ConditionalPoisson(["1/2", "3/10", "1/5"], 2)
    assert cp.Q([0, 1], exact=True) == Fraction(15, 31)
    out = {name: _claim(name, t)["status"] for name, t in [("T12", 8), ("T12b", 1)]}
    return {
        **out,
        "Q_sequential": "18/35",
        "Q_en": "15/31",
        "float": (round(float(seq), 6), round(float(en), 6)),
    }
