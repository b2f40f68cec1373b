"""Machine checks of proofs/optimal_verifier.md (run by tests/verifiers/test_optimal_checks.py).

Each ``check_*()`` returns a dict of what it verified and raises ``AssertionError`` when the
statement (or the proof step it checks) fails.  Symbolic steps use sympy; the rest is exhaustive
or on seeded random instances in exact Fractions.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction as Fr

import numpy as np
import sympy as sp

from mdsd_ot import drafts
from mdsd_ot.verifiers.chain.exact import ExactPlan, exact_plan, select_law, stream_tuples
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
    "check_cp_cut_law",
    "check_stream_cut_law",
    "check_single_pick_law",
    "check_transfer_model",
    "check_series_bound",
    "check_seq2_product_law",
    "check_seq2_region_swap",
    "check_seq2_design",
    "check_pair_law",
    "check_pair_product",
    "check_pair_family_lp",
    "check_seq_pair_kernel",
    "check_seq_pair_rank",
    "check_seq_pair_thinning",
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


# -- §4: piece kernels ---------------------------------------------------------------------------


def _random_pieces(rng: random.Random, V: int) -> list[tuple[int, Fr]]:
    """A random piece kernel in level order: (owner, probability), probabilities of each owner
    summing to 1, every owner with at least one piece, levels interleaved at random."""
    pieces: list[tuple[int, Fr]] = []
    for k in range(V):
        cuts = sorted(Fr(rng.randint(1, 7), 8) for _ in range(rng.randint(0, 2)))
        bounds = [Fr(0), *cuts, Fr(1)]
        pieces += [(k, b - a) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    rng.shuffle(pieces)
    return pieces


def _cut_law(pieces: list[tuple[int, Fr]], phi, V: int) -> list[Fr]:
    """Lemma 7: T_k = sum over the pieces of k of Phi(after) - Phi(before)."""
    b = [Fr(0)] * V
    T = [Fr(0)] * V
    prev = phi(b)
    for k, pr in pieces:
        b[k] += pr
        cur = phi(b)
        T[k] += cur - prev
        prev = cur
    return T


def _e(vals: list[Fr], m: int) -> Fr:
    e = [Fr(1)] + [Fr(0)] * m
    for v in vals:
        for j in range(m, 0, -1):
            e[j] += v * e[j - 1]
    return e[m]


def _cp_law_exact(q: list[Fr], n: int, pieces: list[tuple[int, Fr]]) -> list[Fr]:
    en = _e(q, n)
    return _cut_law(pieces, lambda b: _e([q[k] * b[k] for k in range(len(q))], n) / en, len(q))


def check_cp_cut_law(trials: int = 25, seed: int = 4) -> dict:
    """Lemmas 7-8: the law of a piece kernel under conditional Poisson (one pick per drafted
    token) by enumeration of sets and picks equals the cut formula with Phi = e_n(q b)/e_n(q)."""
    rng = random.Random(seed)
    for _ in range(trials):
        V, n = rng.randint(3, 5), rng.randint(2, 3)
        q = _rv(rng, V, zeros=False)
        pieces = _random_pieces(rng, V)
        en = _e(q, n)
        want = _cp_law_exact(q, n, pieces)
        got = [Fr(0)] * V
        by_tok = [[(lev, pr) for lev, (k, pr) in enumerate(pieces) if k == t] for t in range(V)]
        for S in itertools.combinations(range(V), n):
            w = Fr(1)
            for k in S:
                w *= q[k]
            for combo in itertools.product(*(by_tok[k] for k in S)):
                pr = w / en
                for _, a in combo:
                    pr *= a
                top = max(range(n), key=lambda j, combo=combo: combo[j][0])
                got[S[top]] += pr
        assert got == want, (q, pieces)
    return {"kernels": trials}


def check_stream_cut_law(trials: int = 20, seed: int = 5) -> dict:
    """Lemmas 7, 9, 10 for sequential drafts: the conditional law of Lemma 9 summed over the
    sequential law equals, at every cut, the sequential Q of the low parts against one outside
    token (an independent computation: ``WithoutReplacement.Q`` on that alphabet), and the cut
    formula on it equals the selection law of the exact plan (Fractions)."""
    rng = random.Random(seed)
    for _ in range(trials):
        V, n = rng.randint(3, 5), rng.randint(2, 3)
        q = _rv(rng, V, zeros=False)
        pieces = _random_pieces(rng, V)
        law = drafts.WithoutReplacement([str(x) for x in q], n)
        items = law.joint_items(exact=True)
        rows: list[dict[int, Fr]] = [{} for _ in range(V)]
        for lev, (k, pr) in enumerate(pieces):
            rows[k][lev] = pr
        plan = ExactPlan("seq-swap", n, q, list(range(V)), rows, [], [], Fr(0), [])

        def phi(b, q=q, n=n, V=V):  # Lemma 10: low parts and one outside token
            w = [q[k] * b[k] for k in range(V)]
            if sum(1 for x in w if x > 0) < n:
                return Fr(0)
            out = 1 - sum(w, Fr(0))
            alpha = [str(x) for x in w] + ([str(out)] if out > 0 else [])
            return drafts.WithoutReplacement(alpha, n).Q(list(range(V)), exact=True)

        want = _cut_law(pieces, phi, V)
        got = [Fr(0)] * V
        for tup, w in items.items():
            for k, pr in select_law(plan, tuple(tup)).items():
                got[k] += w * pr
        assert got == want, (q, pieces, n)
    return {"kernels": trials}


def check_single_pick_law(trials: int = 16, seed: int = 11) -> dict:
    """Lemma 14 (``seq-swap-h``): when the tokens of S pick once and every other draw of the
    stopped stream picks its own piece, the conditional law of Lemma 9 (with b = 1 for S in the
    repeats) summed over the sequential law equals, at every cut,
    sum_A Q_A prod_A b_h prod_(S - A) (1 - b_h), Q_A the sequential Q of the low parts (the
    tokens of A whole, those of S - A outside) against one outside token (Fractions)."""
    rng = random.Random(seed)
    for _ in range(trials):
        V, n = rng.randint(3, 5), 3
        q = _rv(rng, V, zeros=False)
        pieces = _random_pieces(rng, V)
        S = sorted(rng.sample(range(V), rng.randint(1, 2)))
        law = drafts.WithoutReplacement([str(x) for x in q], n)
        rows: list[dict[int, Fr]] = [{} for _ in range(V)]
        for lev, (k, pr) in enumerate(pieces):
            rows[k][lev] = pr
        plan = ExactPlan("seq-swap-h", n, q, list(range(V)), rows, [], [], Fr(0), [],
                         single=frozenset(S))  # fmt: skip

        def Q_low(w, n=n, V=V):  # Lemma 10: low masses w and one outside token
            if sum(1 for x in w if x > 0) < n:
                return Fr(0)
            out = 1 - sum(w, Fr(0))
            alpha = [str(x) for x in w] + ([str(out)] if out > 0 else [])
            return drafts.WithoutReplacement(alpha, n).Q(list(range(V)), exact=True)

        def phi(b, q=q, S=S, V=V, Q_low=Q_low):
            total = Fr(0)
            for r in range(len(S) + 1):
                for A in itertools.combinations(S, r):
                    w = [q[k] * b[k] for k in range(V)]
                    weight = Fr(1)
                    for h in S:
                        w[h] = q[h] if h in A else Fr(0)
                        weight *= b[h] if h in A else 1 - b[h]
                    if weight:
                        total += weight * Q_low(w)
            return total

        want = _cut_law(pieces, phi, V)
        got = [Fr(0)] * V
        for tup, w in law.joint_items(exact=True).items():
            for k, pr in select_law(plan, tuple(tup)).items():
                got[k] += w * pr
        assert got == want, (q, pieces, S)
        assert sum(got, Fr(0)) == 1
    return {"kernels": trials}


def check_transfer_model(trials: int = 20, seed: int = 6) -> dict:
    """§4.4: for one pair (x < y) lifting mass a of x above y and dropping mass b of y below x,
    the first derivatives of the conditional-Poisson law at a = b = 0 are the model's G, h
    (for x), -h', -L (for y) and -I, +J summed over the tokens between them (the law is a
    polynomial of degree <= 2 in (a, b), so a three-point difference is exact)."""
    rng = random.Random(seed)
    for _ in range(trials):
        V, n = rng.randint(4, 6), rng.randint(2, 3)
        q = _rv(rng, V, zeros=False)
        x = rng.randint(0, V - 3)
        y = rng.randint(x + 2, V - 1)

        def law(a: Fr, b: Fr, q=q, n=n, x=x, y=y, V=V) -> list[Fr]:
            pieces = []
            for k in range(V):
                if k == x:  # drop of y first, then x's own piece
                    pieces += [(y, b / q[y]), (x, 1 - a / q[x])]
                elif k == y:
                    pieces += [(y, 1 - b / q[y]), (x, a / q[x])]
                else:
                    pieces.append((k, Fr(1)))
            return _cp_law_exact(q, n, pieces)

        hstep = min(q[x], q[y]) / 16
        T0 = law(Fr(0), Fr(0))

        def deriv(da: Fr, db: Fr, law=law, hs=hstep, T0=T0) -> list[Fr]:
            T1, T2 = law(da * hs, db * hs), law(2 * da * hs, 2 * db * hs)
            return [(4 * u - w - 3 * z) / (2 * hs) for z, u, w in zip(T0, T1, T2, strict=True)]

        dA, dB = deriv(Fr(1), Fr(0)), deriv(Fr(0), Fr(1))
        E = [[_e(q[:j], m) for j in range(V + 1)] for m in range(n + 1)]
        en = E[n][V]

        def without(j: int, m: int, q=q, x=x) -> Fr:  # e_m(H_j minus x), x in H_j
            return _e([q[k] for k in range(j) if k != x], m)

        h = q[x] * E[n - 2][x] / en
        hp = q[y] * without(y, n - 2) / en
        Iv = (without(y, n - 1) - E[n - 1][x]) / en
        Jv = (E[n - 1][y] - E[n - 1][x + 1]) / en
        assert dA[x] == Iv + hp and dB[x] == h, (q, x, y)
        assert dB[y] == -(Jv + h) and dA[y] == -hp, (q, x, y)
        assert sum(dA[x + 1 : y]) == -Iv and sum(dB[x + 1 : y]) == Jv, (q, x, y)
    return {"pairs": trials}


def check_series_bound(trials: int = 12, seed: int = 7) -> dict:
    """§4.3: the float law of random piece kernels under sequential drafts, n = 3, 4
    (``seqseries``), is within its reported bound of the exact law (Lemma 9 in Fractions)."""
    from mdsd_ot.verifiers.chain.pieces import build_pieces
    from mdsd_ot.verifiers.chain.seqseries import seq_series_law

    g = np.random.default_rng(seed)
    worst = 0.0
    for t in range(trials):
        V, n = int(g.integers(4, 7)), 3 + t % 2
        qf = g.dirichlet(np.full(V, 0.6))
        P = int(g.integers(1, 5))
        x = g.integers(0, V - 1, P)
        y = np.minimum(x + 1 + g.integers(0, 3, P), V - 1)
        kern = build_pieces(qf, x, y, g.random(P) * qf[x] * 0.4, g.random(P) * qf[y] * 0.4)
        T, err = seq_series_law(qf, n, kern)
        q = [Fr(float(v)) for v in qf]
        q = [v / sum(q, Fr(0)) for v in q]  # the law of q / sum(q), as the float evaluation
        rows: list[dict[int, Fr]] = [{} for _ in range(V)]
        for lev, (k, pr) in enumerate(zip(kern.tok.tolist(), kern.prob.tolist(), strict=True)):
            rows[k][lev] = Fr(pr)
        plan = ExactPlan("seq-swap", n, q, list(range(V)), rows, [], [], Fr(0), [])
        law = drafts.WithoutReplacement([str(v) for v in q], n)
        exact = [Fr(0)] * V
        for tup, w in law.joint_items(exact=True).items():
            for k, pr in select_law(plan, tuple(tup)).items():
                exact[k] += w * pr
        dev = sum(abs(Fr(float(a)) - b) for a, b in zip(T, exact, strict=True))
        assert dev <= Fr(err), (V, n, float(dev), err)
        worst = max(worst, float(dev))
    return {"kernels": trials, "largest deviation": worst}


# -- §9: two sequential drafts, the product law -------------------------------------------------


def _seq2_rows(rng: random.Random, V: int) -> list[dict[int, Fr]]:
    rows = []
    for _ in range(V):
        lev = rng.sample(range(2 * V), rng.randint(1, 3))
        w = [Fr(rng.randint(1, 4)) for _ in lev]
        rows.append({a: b / sum(w) for a, b in zip(lev, w, strict=True)})
    return rows


def check_seq2_product_law(trials: int = 25, seed: int = 8) -> dict:
    """Lemmas 11 and 12: the ordered pair of ``WithoutReplacement(q, 2)`` (its own joint table)
    is r̂ ⊗ q given A != B, a rule selecting a on (a, a) has T^prod = T^seq / R + r̂ q, and for
    arbitrary kernels A1, A2 on arbitrary levels (level masses not kept) the sequential law of
    "higher level wins, a tie is a coin" is the two-kernel linear law."""
    from mdsd_ot.verifiers.chain.seq2_exact import linear_law_list, select_pair

    rng = random.Random(seed)
    for _ in range(trials):
        V = rng.randint(2, 5)
        q = _rv(rng, V, zeros=False)
        r = [v / (1 - v) for v in q]
        R = sum(r)
        joint = drafts.WithoutReplacement([str(v) for v in q], 2).joint_items(exact=True)
        assert all(w == r[a] * q[b] for (a, b), w in joint.items())
        rows1, rows2 = _seq2_rows(rng, V), _seq2_rows(rng, V)
        seq = [Fr(0)] * V
        for (a, b), w in joint.items():
            for k, pr in select_pair(rows1[a], rows2[b], a, b).items():
                seq[k] += w * pr
        prod = [Fr(0)] * V
        for a in range(V):
            for b in range(V):
                for k, pr in select_pair(rows1[a], rows2[b], a, b).items():
                    prod[k] += r[a] / R * q[b] * pr
        assert all(prod[i] == seq[i] / R + r[i] / R * q[i] for i in range(V))
        assert seq == linear_law_list(q, rows1, rows2)
    return {"kernel pairs": trials}


def _region_rows(V: int, x: int, y: int, B: dict, m: Fr, mass: list, swap: bool) -> list:
    """Kernel rows with regions at the bottom of slot x and the top of slot y (widths B) and,
    when ``swap``, mass m of each moved to the other's region (levels 2k + {0, 1})."""
    region, rest = {x: 2 * x, y: 2 * y + 1}, {x: 2 * x + 1, y: 2 * y}
    out = []
    for k in range(V):
        if k not in B:
            out.append({2 * k: Fr(1)})
            continue
        mv = m / mass[k] if swap else Fr(0)
        row = {rest[k]: 1 - B[k], region[k]: B[k] - mv}
        if mv:
            row[region[y if k == x else x]] = mv
        out.append(row)
    return out


def check_seq2_region_swap(trials: int = 25, seed: int = 9) -> dict:
    """Lemma 13: with regions of widths B (bottom of a demand slot x, top of a supply slot y), one
    balanced swap of masses (m1, m2) between the regions of x < y moves exactly
    τ = m1 (q[x..y] − (q_x B_x + q_y B_y)/2) + m2 (r[x..y] − (r_x B_x + r_y B_y)/2) of selection
    probability from y to x and leaves every other token's law unchanged."""
    from mdsd_ot.verifiers.chain.seq2_exact import linear_law_list

    rng = random.Random(seed)
    for _ in range(trials):
        V = rng.randint(2, 6)
        q = _rv(rng, V, zeros=False)
        r = [v / (1 - v) for v in q]
        x = rng.randrange(V - 1)
        y = rng.randrange(x + 1, V)
        B = {x: Fr(rng.randint(1, 8), 8), y: Fr(rng.randint(1, 8), 8)}
        m1 = min(r[x], r[y]) * min(B.values()) * Fr(rng.randint(1, 8), 8)
        m2 = min(q[x], q[y]) * min(B.values()) * Fr(rng.randint(1, 8), 8)

        def rows(m, mass, swap, V=V, x=x, y=y, B=B):
            return _region_rows(V, x, y, B, m, mass, swap)

        base = linear_law_list(q, rows(m1, r, False), rows(m2, q, False))
        new = linear_law_list(q, rows(m1, r, True), rows(m2, q, True))
        tau = m1 * (sum(q[x : y + 1]) - (q[x] * B[x] + q[y] * B[y]) / 2)
        tau += m2 * (sum(r[x : y + 1]) - (r[x] * B[x] + r[y] * B[y]) / 2)
        ident_rows = [{2 * k: Fr(1)} for k in range(V)]
        ident = linear_law_list(q, ident_rows, ident_rows)
        assert base == ident  # regions alone change nothing
        assert new[x] - base[x] == tau and base[y] - new[y] == tau, (q, x, y)
        assert all(new[k] == base[k] for k in range(V) if k not in (x, y))
    return {"swaps": trials}


def check_seq2_design(trials: int = 200, seed: int = 10) -> dict:
    """Theorem 5 (and the counts of §9.6): where the region iteration fits, the kernels' law
    (by enumeration of the ordered pairs) dominates s, so the acceptance is α*; on these random
    instances it always fits within 3 rounds, while plain slot swaps (one round, B = 1) do not."""
    from mdsd_ot.verifiers.chain.seq2_exact import enumerate_law_list, seq2_lists

    rng = random.Random(seed)
    slot_only = fits = 0
    for _ in range(trials):
        V = rng.randint(2, 6)
        p, q = _rv(rng, V), _rv(rng, V, zeros=False)
        order = _order(p, q)
        ps, qs = [p[i] for i in order], [q[i] for i in order]
        out = seq2_lists(ps, qs)
        assert out["fits"] and out["rounds"] <= 3, (p, q)
        T = enumerate_law_list(out["qn"], out["rows1"], out["rows2"])
        assert all(t >= v for t, v in zip(T, out["s"], strict=True)), (p, q)
        fits += 1
        slot_only += not seq2_lists(ps, qs, max_rounds=1)["fits"]
    assert slot_only > 0
    return {"instances": trials, "fit": fits, "slot swaps alone infeasible": slot_only}


# -- §11: the pair hand-over rule ------------------------------------------------------------


def _prefix_sums(x: list) -> list:
    out = [Fr(0)]
    for v in x:
        out.append(out[-1] + v)
    return out


def _pair_sets(q: list, n: int) -> dict[tuple[int, ...], Fr]:
    """The conditional-Poisson law of the n-sets (slots 0..V-1), in Fractions."""
    en = _e(q, n)
    out = {}
    for S in itertools.combinations(range(len(q)), n):
        w = Fr(1)
        for k in S:
            w *= q[k]
        if w:
            out[S] = w / en
    return out


def _pair_rule_law(sets: dict[tuple[int, ...], Fr], lam: dict, V: int) -> list[Fr]:
    """The selection law of the pair rule by enumeration: on each set S (weight w) the top
    slot y hands over to x with probability lam[y, x] and keeps the rest."""
    got = [Fr(0)] * V
    for S, w in sets.items():
        y = max(S)
        keep = Fr(1)
        for x in S:
            if x != y:
                got[x] += w * lam[y, x]
                keep -= lam[y, x]
        got[y] += w * keep
    return got


def check_pair_law(trials: int = 30, seed: int = 12) -> dict:
    """Lemma 15: for random hand-over probabilities λ(y, x) (x < y, the n - 1 largest of each
    y summing to at most 1) the rule's law by enumeration of the sets equals
    D + Σ λ(y, x) M(y, x) (e_x − e_y) with M(y, x) = q_y q_x e_{n-2}(H_y minus x) / e_n, in
    Fractions (slots in any fixed order: the lemma does not use the p/q order)."""
    rng = random.Random(seed)
    done = 0
    while done < trials:
        V, n = rng.randint(3, 6), rng.randint(2, 4)
        q = _rv(rng, V, zeros=rng.random() < 0.3)
        if sum(1 for x in q if x) < n:
            continue
        done += 1
        lam = {(y, x): Fr(rng.randint(0, 6), 6 * (n - 1)) for y in range(V) for x in range(y)}
        sets = _pair_sets(q, n)
        got = _pair_rule_law(sets, lam, V)
        en = _e(q, n)
        want = [q[k] * _e(q[:k], n - 1) / en for k in range(V)]  # D: top(S) = k
        for (y, x), la in lam.items():
            M = q[y] * q[x] * _e(q[:x] + q[x + 1 : y], n - 2) / en
            want[x] += la * M
            want[y] -= la * M
        assert got == want, (q, n)
    return {"instances": trials}


def check_pair_product(trials: int = 40, seed: int = 13) -> dict:
    """Theorem 6 for two conditional-Poisson drafts (M(y, x) = q_y q_x / e_2, a product): on
    the blocks of E' (E minus its running minimum from the bottom cut), G multiplied by
    E'_c / E'_{c-1} at the receivers, θ_y = Δ_y / (a_y G_y) and g_x = δ_x / In_x give a law
    T >= s with Σ s = α*, in Fractions; and the n - 1 = 1 largest λ(y, ·) is at most 1
    wherever the design is a rule (counted, not asserted)."""
    rng = random.Random(seed)
    rules = 0
    for _ in range(trials):
        V = rng.randint(3, 7)
        p, q = _rv(rng, V), _rv(rng, V, zeros=False)
        order = _order(p, q)
        ps, qs = [p[i] for i in order], [q[i] for i in order]
        n = 2
        sets = _pair_sets(qs, n)
        Q = [sum((w for S, w in sets.items() if max(S) < k), Fr(0)) for k in range(V + 1)]
        alpha, s, _ = optimal_sublaw_list(_prefix_sums(ps), Q)
        D = [Q[k + 1] - Q[k] for k in range(V)]
        E = [Fr(0)] * (V + 1)  # E_c = sum_{k >= c} (D_k - s_k)
        for c in range(V - 1, -1, -1):
            E[c] = E[c + 1] + D[c] - s[c]
        low, Ep = E[0], []
        for c in range(V + 1):
            low = min(low, E[c])
            Ep.append(E[c] - low)
        Ep[0] = Ep[V] = Fr(0)
        delta = [Ep[k] - Ep[k + 1] for k in range(V)]
        en = _e(qs, 2)
        G, theta, g, block, b = Fr(0), [Fr(0)] * V, [Fr(0)] * V, [0] * V, 0
        for k in range(V):  # upward: G at the cut below slot k
            if Ep[k] == 0:
                b, G = b + 1, Fr(0)
            block[k] = b
            if delta[k] < 0:
                G = Fr(1) if G == 0 else G * Ep[k + 1] / Ep[k]
            elif delta[k] > 0:
                theta[k] = delta[k] / (qs[k] / en * G)  # a_y = q_y e_0 / e_2
        for x in range(V):
            In = sum((theta[y] * qs[y] * qs[x] / en for y in range(x + 1, V)
                      if block[y] == block[x]), Fr(0))  # fmt: skip
            g[x] = -delta[x] / In if delta[x] < 0 else Fr(0)
        T = list(D)
        worst = Fr(0)
        for y in range(V):
            for x in range(y):
                if block[x] == block[y]:
                    M = qs[y] * qs[x] / en
                    T[x] += theta[y] * g[x] * M
                    T[y] -= theta[y] * g[x] * M
                    worst = max(worst, theta[y] * g[x])
        assert all(t >= v for t, v in zip(T, s, strict=True)), (p, q)
        assert sum(min(t, v) for t, v in zip(T, s, strict=True)) == alpha
        rules += worst <= 1
    return {"instances": trials, "a rule (largest λ <= 1)": rules}


def check_pair_family_lp(trials: int = 12, seed: int = 14) -> dict:
    """§11 (measured, not proved): the best rule of the whole pair family — λ(y, x) free for
    x < y, the n - 1 largest of each y summing to at most 1 (a linear program in λ, scipy's
    HiGHS) — reaches α* on random instances (V 4-6, n = 3 and 4, conditional Poisson and
    sequential drafts), to the LP's tolerance (1e-9)."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    worst = 0.0
    for t in range(trials):
        V = int(rng.integers(4, 7))
        n = int(rng.integers(3, min(V, 5)))
        law_cls = (drafts.ConditionalPoisson, drafts.WithoutReplacement)[t % 2]
        conc = float(rng.choice([0.2, 1.0, 3.0]))
        p, q = rng.dirichlet(np.full(V, conc)), rng.dirichlet(np.full(V, conc)) + 1e-9
        law = law_cls(q / q.sum(), n)
        o = np.argsort(p / law.q, kind="stable")

        def Q(idx, law=law, o=o, V=V):
            m = np.zeros(V, bool)
            m[o[list(idx)]] = True
            return float(law.Q(m))

        Qp = [Q(range(k)) for k in range(V + 1)]
        F = np.cumsum(np.r_[0.0, p[o]]) - np.array(Qp)
        alpha = 1.0 + float(F.min())
        pairs = [(y, x) for y in range(V) for x in range(y)]
        M = [Qp[y + 1] - Q([i for i in range(y + 1) if i != x]) - Qp[y]
             + Q([i for i in range(y) if i != x]) for y, x in pairs]  # fmt: skip
        P, k = len(pairs), n - 1
        N = 2 * P + 2 * V  # λ, u (top-k slack), t_y, accepted m_x
        A, b = [], []
        for x in range(V):  # m_x <= T_x = D_x + in - out
            row = np.zeros(N)
            row[2 * P + V + x] = 1.0
            for i, (yy, xx) in enumerate(pairs):
                row[i] -= M[i] * (xx == x) - M[i] * (yy == x)
            A.append(row)
            b.append(Qp[x + 1] - Qp[x])
        for y in range(V):  # k t_y + sum_x u_yx <= 1
            row = np.zeros(N)
            row[2 * P + y] = k
            row[[P + i for i, (yy, _) in enumerate(pairs) if yy == y]] = 1.0
            A.append(row)
            b.append(1.0)
        for i, (yy, _) in enumerate(pairs):  # λ_yx - t_y - u_yx <= 0
            row = np.zeros(N)
            row[i], row[2 * P + yy], row[P + i] = 1.0, -1.0, -1.0
            A.append(row)
            b.append(0.0)
        c = np.zeros(N)
        c[2 * P + V :] = -1.0
        bounds = [(0, 1)] * P + [(0, None)] * P + [(None, None)] * V + [(0, v) for v in p[o]]
        res = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=bounds, method="highs")
        assert res.status == 0
        worst = max(worst, alpha - (-res.fun))
        assert alpha - (-res.fun) <= 1e-9, (t, alpha, -res.fun)
    return {"instances": trials, "largest alpha* - LP": worst}


def _seq_sets(q: list, n: int) -> dict[tuple[int, ...], Fr]:
    """The law of the sets of n sequential draws without replacement, by enumeration of the
    ordered tuples (Pr = Π q(x_i) / (T - q(x_1..x_{i-1}))), in Fractions."""
    T, out = sum(q), {}
    for tup in itertools.permutations(range(len(q)), n):
        w, seen = Fr(1), Fr(0)
        for k in tup:
            w *= q[k] / (T - seen)
            seen += q[k]
        if w:
            key = tuple(sorted(tup))
            out[key] = out.get(key, Fr(0)) + w
    return out


def _seq_instance(rng: random.Random, n_min: int) -> tuple:
    """A random sequential instance: n in n_min..4, V in n+1..6, positive rational q (sum T),
    and the law of its draft sets."""
    n = rng.randint(n_min, 4)
    V = rng.randint(n + 1, 6)
    q = _rv(rng, V, zeros=False)
    return n, V, q, sum(q), _seq_sets(q, n)


def check_seq_pair_kernel(trials: int = 60, seed: int = 15) -> dict:
    """§12: for sequential drafts (positive masses, V > n, slots in any fixed order),
    M(y, x) = Pr[top(S) = y, x in S] by enumeration of the ordered draws equals (a)
    D_y - [Q(H_y minus x) - Q(H_{y-1} minus x)] and (b) the clock form
    Σ_{B ⊆ Z, |B| = n-2} q(outside A) ∫ e^{-Tt} Π_{j∈A} (e^{q_j t} - 1) dt, A = B + {x, y},
    Z = H_{y-1} minus x, the integral being Σ_{C ⊆ A} (-1)^{|A - C|} / (T - q(C)); and (c)
    the pair rule's law by enumeration is Lemma 15's D + Σ λ M (e_x - e_y), in Fractions."""
    rng = random.Random(seed)
    for _ in range(trials):
        n, V, q, T, sets = _seq_instance(rng, 2)

        def Q(H, sets=sets):
            return sum((w for S, w in sets.items() if set(S) <= H), Fr(0))

        def clock(A, T=T, q=q):
            tot = Fr(0)
            for r in range(len(A) + 1):
                for C in itertools.combinations(A, r):
                    tot += Fr((-1) ** (len(A) - r)) / (T - sum((q[j] for j in C), Fr(0)))
            return (T - sum((q[j] for j in A), Fr(0))) * tot

        lam = {(y, x): Fr(rng.randint(0, 6), 6 * (n - 1)) for y in range(V) for x in range(y)}
        got = _pair_rule_law(sets, lam, V)
        D = [Q(set(range(k + 1))) - Q(set(range(k))) for k in range(V)]
        want = list(D)
        for y in range(V):
            for x in range(y):
                M = sum((w for S, w in sets.items() if max(S) == y and x in S), Fr(0))
                Hy, Hy1 = set(range(y + 1)), set(range(y))
                assert M == D[y] - (Q(Hy - {x}) - Q(Hy1 - {x})), (q, n, y, x)
                Z = [k for k in range(y) if k != x]
                viaclock = sum(
                    (clock(list(B) + [x, y]) for B in itertools.combinations(Z, n - 2)), Fr(0)
                )
                assert M == viaclock, (q, n, y, x)
                want[x] += lam[y, x] * M
                want[y] -= lam[y, x] * M
        assert got == want, (q, n)
    return {"instances": trials}


def _clock_moment(k: int, factors: dict[int, int], q: list, T: Fr) -> Fr:
    """∫_0^∞ t^k e^{-Tt} Π_j (e^{q_j t} - 1)^{m_j} dt, factors = {j: m_j}, exactly:
    Σ_r Π_j C(m_j, r_j) (-1)^{m_j - r_j} k! / (T - Σ_j r_j q_j)^{k+1} (binomial expansion of
    each power; every exponent converges when T > Σ_j m_j q_j, which is asserted)."""
    items = [(q[j], m) for j, m in factors.items() if m]
    assert T > sum((m * w for w, m in items), Fr(0)), "a term of the expansion diverges"
    tot, fact = Fr(0), Fr(math.factorial(k))
    for rs in itertools.product(*(range(m + 1) for _, m in items)):
        coef, rate = Fr(1), T
        for (w, m), r in zip(items, rs, strict=True):
            coef *= math.comb(m, r) * (-1) ** (m - r)
            rate -= r * w
        tot += coef * fact / rate ** (k + 1)
    return tot


def _stirling2(a: int, i: int) -> int:
    return sum((-1) ** (i - j) * math.comb(i, j) * j**a for j in range(i + 1)) // math.factorial(i)


def _seq_pair_moments(q: list, m: int, y: int, x: int | None, a_pow: int, k: int, T: Fr):
    """(∫ t^k e^{-Tt} E_y E_x^{a_pow} A_m dt, ∫ ... B_m dt), W = H_{y-1}
    (x None: no E_x factor): B_m = e_m(E(W)), A_m = c_y e_m(E(W)) + Σ_{j∈W} q_j e_m(E(W - j)),
    c_y = q(slots above y)."""
    W = list(range(y))
    c_y = sum(q[y + 1 :], Fr(0))

    def mom(C):
        f = {y: 1}
        if x is not None:
            f[x] = f.get(x, 0) + a_pow
        for j in C:
            f[j] = f.get(j, 0) + 1
        return _clock_moment(k, f, q, T)

    e_W = sum((mom(C) for C in itertools.combinations(W, m)), Fr(0))
    rest = sum(
        (q[j] * mom(C) for j in W for C in itertools.combinations([i for i in W if i != j], m)),
        Fr(0),
    )
    return c_y * e_W + rest, e_W


def check_seq_pair_rank(trials: int = 10, seed: int = 16, K: int = 36) -> dict:
    """§12, the rank-K form of the sequential kernel, in Fractions (T = Σ q = 1, slots in index
    order, x < y): (a) the deflation form M(y, x) = Σ_{i=1}^{n-1} (-1)^{i-1} ∫ e^{-Tt} E_y E_x^i
    [A_{n-1-i} - i q_x B_{n-1-i}] dt (A, B of W = H_{y-1}, which holds x), wherever each term's
    integral converges; (b) M(y, x) = Σ_{a>=1} q_x^a W_a(y) with W_a(y) a function of y alone,
    W_a = Σ_i (-1)^{i-1} [(i! S(a,i)/a!) ∫ t^a e^{-Tt} E_y A_{n-1-i} - i (i! S(a-1,i)/(a-1)!)
    ∫ t^{a-1} e^{-Tt} E_y B_{n-1-i}] (S the Stirling numbers of the second kind; the Taylor
    series of each E_x^i, integrated term by term): the first K = 36 terms leave a relative
    error below 1e-9 wherever ρ = max_i i q_x / (T - q_y - (the n-1-i largest masses of W)),
    the ratio of the terms' geometric decay, is at most 1/2 (the largest is returned)."""
    rng = random.Random(seed)
    checked_a = checked_b = 0
    worst = Fr(0)
    for _ in range(trials):
        n, V, q, T, sets = _seq_instance(rng, 3)
        for y in range(n - 1, V):
            W = list(range(y))
            Wa = None
            for x in W:
                M = sum((w for S, w in sets.items() if max(S) == y and x in S), Fr(0))
                big = sorted((q[j] for j in W), reverse=True)
                rates = [T - q[y] - sum(big[: n - 1 - i], Fr(0)) for i in range(1, n)]
                # (a): every term converges when T > q_y + i q_x + (the n-1-i largest of W,
                # x counted once more through A and B, whose products may hold x)
                if all(
                    T > q[y] + (i + 1) * q[x] + sum(big[: n - 1 - i], Fr(0)) for i in range(1, n)
                ):
                    tot = Fr(0)
                    for i in range(1, n):
                        A, B = _seq_pair_moments(q, n - 1 - i, y, x, i, 0, T)
                        tot += (-1) ** (i - 1) * (A - i * q[x] * B)
                    assert tot == M, (q, n, y, x)
                    checked_a += 1
                rho = max(i * q[x] / rates[i - 1] for i in range(1, n)) if min(rates) > 0 else 2
                if rho > Fr(1, 2):
                    continue
                if Wa is None:  # W_a(y), a = 1..K: one list per y, shared by every x < y
                    mo = {(m, k): _seq_pair_moments(q, m, y, None, 0, k, T)
                          for m in range(n - 1) for k in range(K + 1)}  # fmt: skip
                    Wa = []
                    for a in range(1, K + 1):
                        w = Fr(0)
                        for i in range(1, min(a, n - 1) + 1):
                            sign = (-1) ** (i - 1)
                            w += (
                                sign
                                * Fr(math.factorial(i) * _stirling2(a, i), math.factorial(a))
                                * mo[n - 1 - i, a][0]
                            )
                            if a - 1 >= i:
                                c = i * Fr(
                                    math.factorial(i) * _stirling2(a - 1, i), math.factorial(a - 1)
                                )
                                w -= sign * c * mo[n - 1 - i, a - 1][1]
                        Wa.append(w)
                partial = sum((q[x] ** (a + 1) * Wa[a] for a in range(K)), Fr(0))
                err = abs(partial - M) / M
                assert err <= Fr(1, 10**9), (q, n, y, x, float(err), float(rho))
                worst = max(worst, err)
                checked_b += 1
    assert checked_a and checked_b
    return {"instances": trials, "deflation_pairs": checked_a, "series_pairs": checked_b,
            "series_rel_error": float(worst)}  # fmt: skip


def _esym(ws: list, m: int) -> Fr:
    """e_m of the list ``ws`` (Fractions)."""
    return sum((math.prod(c) for c in itertools.combinations(ws, m)), Fr(0))


def check_seq_pair_thinning(trials: int = 60, seed: int = 17) -> dict:
    """§12, the thinned pair rule (``seq-pair``), in Fractions (T = Σ q = 1, slots in index
    order): (a) Lemma 16, Σ(S) = Σ_σ Π_{m<n} 1/(1 - w^σ_m) >= n! Π_{j∈S} (1 - q_j)^{-(n-1)/2},
    checked squared (both sides rational) on every n-set, so r(S) <= 1 for u_j = (1 -
    q_j)^{-(n-1)/2}; (a') Lemma 16', Σ(S) >= n! A_h, A_h = (1/n) Σ_{k<n} (1 - q_h)^{-k}, on
    every set that holds the heaviest token h; (b) Pr[S] = Σ(S) Π_S q; (c) for random λ(y, x) and random weights u, the
    law of "hand over from top(S) = y to x with probability λ(y, x) r(S)" by enumeration of the
    draft sets is D + Σ_{x<y} λ(y, x) M'(y, x) (e_x - e_y) with M'(y, x) = n! w_y w_x
    e_{n-2}(w on H_y minus x), w = q u (the conditional-Poisson kernel of w); (d) the library's
    exact_factor is r(S)."""
    from mdsd_ot.verifiers.chain.seqpair import exact_factor

    rng = random.Random(seed)
    sets_checked = laws = boosted = 0
    tightest = None
    for _ in range(trials):
        n, V, q, T, sets = _seq_instance(rng, 3)
        q = [x / T for x in q]
        u = [Fr(rng.randint(10, 30), 10) for _ in range(V)]
        lam = {(y, x): Fr(rng.randint(0, 4), 4 * (n - 1)) for y in range(V) for x in range(y)}
        law = [Fr(0)] * V
        D = [Fr(0)] * V
        for S, pr in sets.items():
            qS = [q[j] for j in S]
            sig = Fr(0)
            for order in itertools.permutations(qS):
                term, w = Fr(1), Fr(0)
                for m in range(n - 1):
                    w += order[m]
                    term /= 1 - w
                sig += term
            assert pr == sig * math.prod(qS), (q, S)  # (b)
            lhs = (sig / math.factorial(n)) ** 2
            rhs = math.prod(1 / (1 - x) ** (n - 1) for x in qS)
            assert lhs >= rhs, (q, S)  # (a), squared
            h = max(range(V), key=lambda j: q[j])
            if h in S:  # (a'): Lemma 16', n! A_h <= Σ(S) for the sets that hold the heaviest
                c = 1 / (1 - q[h])
                assert math.factorial(n) * sum(c**k for k in range(n)) / n <= sig, (q, S)
                boosted += 1
            ratio = float(rhs / lhs)
            tightest = ratio if tightest is None else max(tightest, ratio)
            sets_checked += 1
            r = math.factorial(n) * math.prod(u[j] for j in S) / sig
            assert exact_factor(qS, [u[j] for j in S]) == r  # (d)
            y = max(S)
            D[y] += pr
            keep = Fr(1)
            for x in S:
                if x != y:
                    law[x] += pr * lam[y, x] * r
                    keep -= lam[y, x] * r
            law[y] += pr * keep
        w = [a * b for a, b in zip(q, u, strict=True)]
        formula = list(D)
        for y in range(V):
            for x in range(y):
                rest = [w[j] for j in range(y) if j != x]
                M = math.factorial(n) * w[y] * w[x] * _esym(rest, n - 2)
                formula[x] += lam[y, x] * M
                formula[y] -= lam[y, x] * M
        assert formula == law, (q, n)  # (c)
        laws += 1
    assert boosted
    return {"instances": laws, "sets": sets_checked, "sets_with_the_heaviest": boosted,
            "largest_bound_over_sigma_sq": tightest}  # fmt: skip
