"""Machine checks of proofs/optimal_verifier.md (run by tests/verifiers/test_optimal_checks.py).

Each ``check_*()`` returns a dict of what it verified and raises ``AssertionError`` when the
statement (or the proof step it checks) fails.  Symbolic steps use sympy; the rest is exhaustive
or on seeded random instances in exact Fractions.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction as Fr

import sympy as sp

from mdsd_ot import drafts
from mdsd_ot.verifiers.chain.exact import exact_plan, stream_tuples
from mdsd_ot.verifiers.chain.relabel import slot_rates_list
from mdsd_ot.verifiers.chain.sublaw import optimal_sublaw_list

__all__ = [
    "check_sublaw_identity",
    "check_sublaw_optimal",
    "check_linear_law",
    "check_fifo_masses",
    "check_affine_identity",
    "check_polymatroid_map",
    "check_stream_posterior",
]

LAWS = (drafts.WithReplacement, drafts.WithoutReplacement, drafts.ConditionalPoisson)


def _rv(rng: random.Random, V: int, zeros: bool = True) -> list[Fr]:
    while True:
        x = [Fr(rng.choice(([0] if zeros else []) + [1, 1, 2, 3, 5, 8, 40])) for _ in range(V)]
        if sum(x) > 0:
            return [a / sum(x) for a in x]


def _order(p: list, q: list) -> list[int]:
    return sorted(range(len(p)), key=lambda i: (0, p[i] / q[i]) if q[i] > 0 else (1, 0))


def check_sublaw_identity() -> dict:
    """Theorem 1, second form: with a = F_{i-1}, b = F_i, c = S_{i+1},
    (b − a) − max(0, min(b, c) − a) = max(0, b − c) − max(0, a − min(b, c)) on every cell of the
    arrangement of {a, b, c} (each weak order fixes every max/min branch; both sides are then
    linear and are compared symbolically)."""
    a, b, c = sp.symbols("a b c", real=True)
    cells = 0
    for ranks in itertools.product(range(3), repeat=3):  # weak orders of (a, b, c), with repeats
        if set(ranks) != set(range(max(ranks) + 1)):
            continue
        val = dict(zip((a, b, c), ranks, strict=True))

        def mx(x, y, val=val):  # the branch of max(x, y) on this cell (comparing ranks)
            return x if sp.sympify(x).subs(val) >= sp.sympify(y).subs(val) else y

        def mn(x, y, val=val):
            return x if sp.sympify(x).subs(val) <= sp.sympify(y).subs(val) else y

        m = mn(b, c)
        lhs = (b - a) - mx(0 * a, m - a)
        rhs = mx(0 * a, b - c) - mx(0 * a, a - m)
        # a linear identity on the cell: substitute the cell's equalities, compare symbolically
        eqs = {}
        for x, y in itertools.combinations((a, b, c), 2):
            if val[x] == val[y]:
                eqs[y] = eqs.get(x, x)
        assert sp.simplify((lhs - rhs).subs(eqs)) == 0, (ranks, lhs, rhs)
        cells += 1
    return {"cells": cells}


def _prefix(law, order: list[int]) -> list:
    return [law.Q(order[:k], exact=True) for k in range(len(order) + 1)]


def check_sublaw_optimal(trials: int = 60, seed: int = 0) -> dict:
    """Theorem 1 and Lemma 1 in Fractions: s ≤ p, s ≥ 0, s(A) ≤ g(A) for every A, Σ s = α*
    (brute force over all H), and min over supersets of every prefix attained at a prefix."""
    rng = random.Random(seed)
    done = 0
    while done < trials:
        V, n = rng.randint(2, 5), rng.randint(2, 3)
        cls = LAWS[done % 3]
        p, q = _rv(rng, V), _rv(rng, V)
        try:
            law = cls([str(x) for x in q], n)
        except ValueError:
            continue
        o = _order(p, q)
        Pk = [sum((p[i] for i in o[:k]), Fr(0)) for k in range(V + 1)]
        alpha, s, _ = optimal_sublaw_list(Pk, _prefix(law, o))
        Qs = {
            H: law.Q(list(H), exact=True)
            for k in range(V + 1)
            for H in itertools.combinations(range(V), k)
        }
        F = {H: sum((p[i] for i in H), Fr(0)) - Qs[H] for H in Qs}
        assert alpha == 1 + min(F.values()), (p, q, n)
        by_tok = {o[k]: s[k] for k in range(V)}
        assert all(0 <= by_tok[i] <= p[i] for i in range(V))
        for A in Qs:
            g = 1 - Qs[tuple(i for i in range(V) if i not in A)]
            assert sum((by_tok[i] for i in A), Fr(0)) <= g, (A,)
        for k in range(V + 1):  # Lemma 1
            sup = [H for H in F if set(o[:k]) <= set(H)]
            best = min(F[H] for H in sup)
            assert best == min(F[tuple(sorted(o[:j]))] for j in range(k, V + 1))
        done += 1
    return {"instances": done}


def _rule_law(qs: list, rows: list, n: int) -> list:
    """Selection law of the relabelling rule by enumeration (i.i.d. draws, uniform ties)."""
    V = len(qs)
    T = [Fr(0)] * V
    for tup in itertools.product([k for k in range(V) if qs[k] > 0], repeat=n):
        w = Fr(1)
        for k in tup:
            w *= qs[k]
        for combo in itertools.product(*[list(rows[k].items()) for k in tup]):
            pr = w
            for _, a in combo:
                pr *= a
            if pr:
                top = max(sl for sl, _ in combo)
                tied = [tup[j] for j, (sl, _) in enumerate(combo) if sl == top]
                for y in tied:
                    T[y] += pr / len(tied)
    return T


def check_linear_law(trials: int = 40, seed: int = 1) -> dict:
    """Lemma 2: T_i = q_i Σ_j A_ij d_j^ν for random kernels (any column masses ν = qA)."""
    rng = random.Random(seed)
    for _ in range(trials):
        V, n = rng.randint(2, 4), rng.randint(1, 3)
        qs = _rv(rng, V, zeros=False)
        rows = []
        for _i in range(V):
            w = [Fr(rng.randint(0, 3)) for _ in range(V)]
            w[_i] += 1
            rows.append({j: x / sum(w) for j, x in enumerate(w) if x})
        nu = [sum((qs[i] * rows[i].get(j, 0) for i in range(V)), Fr(0)) for j in range(V)]
        d = slot_rates_list(nu, n)
        want = [qs[i] * sum((a * d[j] for j, a in rows[i].items()), Fr(0)) for i in range(V)]
        assert _rule_law(qs, rows, n) == want
    return {"kernels": trials}


def check_fifo_masses(trials: int = 150, seed: int = 2) -> dict:
    """Theorem 2 (i.i.d., π-order) and Theorem 3 (conditional Poisson n = 2, π- or ρ*-order):
    the pairs go upward, the kernel rows are probabilities, and T ≥ s with Σ s = α*."""
    rng = random.Random(seed)
    counts = {"with": 0, "cp2": 0, "cp2_resorted": 0}
    while counts["with"] + counts["cp2"] < trials:
        V, n = rng.randint(2, 6), rng.randint(2, 4)
        p, q = _rv(rng, V), _rv(rng, V)
        con = "cp2" if rng.random() < 0.5 else "relabel"
        if con == "cp2" and sum(x > 0 for x in q) < 2:
            continue
        plan = exact_plan(p, q, 2 if con == "cp2" else n, con)
        for k, row in enumerate(plan.rows):
            assert all(x >= 0 for x in row.values()) and sum(row.values()) == 1, (k, row)
        assert all(0 <= plan.accept[i] <= 1 for i in range(V))
        law = (drafts.ConditionalPoisson if con == "cp2" else drafts.WithReplacement)(
            [str(x) for x in q], 2 if con == "cp2" else n
        )
        Qs = [
            law.Q(list(H), exact=True)
            for k in range(V + 1)
            for H in itertools.combinations(range(V), k)
        ]
        Ps = [
            sum((p[i] for i in H), Fr(0))
            for k in range(V + 1)
            for H in itertools.combinations(range(V), k)
        ]
        assert plan.acceptance == 1 + min(a - b for a, b in zip(Ps, Qs, strict=True))
        slot_order = sorted(range(V), key=lambda i: plan.rank[i])
        counts["with" if con == "relabel" else "cp2"] += 1
        counts["cp2_resorted"] += con == "cp2" and slot_order != _order(p, q)
    return counts


def check_affine_identity(trials: int = 30, seed: int = 3) -> dict:
    """Lemma 4: T_iid = (1 − Σq²) T_CP + q² for random symmetric pair rules."""
    rng = random.Random(seed)
    for _ in range(trials):
        V = rng.randint(2, 5)
        q = _rv(rng, V, zeros=False)
        w = {}
        for a, b in itertools.combinations(range(V), 2):
            w[a, b] = Fr(rng.randint(0, 6), 6)
            w[b, a] = 1 - w[a, b]
        e2 = sum((q[a] * q[b] for a, b in itertools.combinations(range(V), 2)), Fr(0))
        cp = [
            sum((q[a] * q[b] / e2 * w[a, b] for b in range(V) if b != a), Fr(0)) for a in range(V)
        ]
        iid = [
            q[a] ** 2 + sum((2 * q[a] * q[b] * w[a, b] for b in range(V) if b != a), Fr(0))
            for a in range(V)
        ]
        one = 1 - sum((x * x for x in q), Fr(0))
        assert iid == [one * c + x * x for c, x in zip(cp, q, strict=True)]
    return {"rules": trials}


def check_polymatroid_map() -> dict:
    """Lemma 5, symbolic: g_iid(C) − [2 e_2 g_CP(C) + Σ_C q²] = 0 with x = q(C), a = Σ_C q²,
    y = q(C^c), b = Σ_{C^c} q², x + y = 1 (n = 2)."""
    x, a, b = sp.symbols("x a b", nonnegative=True)
    y = 1 - x
    e2_all = ((x + y) ** 2 - a - b) / 2
    e2_rest = (y**2 - b) / 2
    g_iid = 1 - y**2
    g_cp = 1 - e2_rest / e2_all
    assert sp.simplify(g_iid - (2 * e2_all * g_cp + a)) == 0
    return {"identity": "g_iid = 2 e2 g_cp + sum_C q^2"}


def check_stream_posterior(max_V: int = 4, max_n: int = 3) -> dict:
    """Lemma 6, exhaustive: resampling sequential tuples gives i.i.d. q^n tuples of drafts."""
    checked = 0
    for V in range(2, max_V + 1):
        for n in range(1, min(V, max_n) + 1):
            q = [Fr(k + 1, V * (V + 1) // 2) for k in range(V)]
            law = drafts.WithoutReplacement([str(x) for x in q], n)
            out: dict = {}
            for tup, w in law.joint_items(exact=True).items():
                for y, pr in stream_tuples(tup, q):
                    assert set(y) <= set(tup)
                    out[y] = out.get(y, 0) + w * pr
            for y in itertools.product(range(V), repeat=n):
                want = Fr(1)
                for k in y:
                    want *= q[k]
                assert out.get(y, 0) == want, (V, n, y)
            checked += 1
    return {"cases": checked}
