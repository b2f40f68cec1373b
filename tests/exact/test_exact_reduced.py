"""The set-reduced flow (docs/reference.md "Set-reduced flow"; T1, T6, T7).

- Closed-form set weights equal the aggregation of the enumerated joint law, exactly.
- Q(H) = Σ_{S⊆H} w_S for every H (the identity behind T6's "every Q is supermodular").
- T1: the reduced flow equals the full forms (exact subset selection, exact tuple max-flow)
  on seeded random laws of every scheme, random explicit tables included.
- The plan contract the `optimal` verifier relies on: Σ_S flow(i,S) ≤ p(i),
  Σ_i flow(i,S) ≤ w_S, i ∈ S, total = α; and H attains α.
Tolerances: exact routes compare Fractions; the float route within its stated ``accuracy``.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import mdsd_ot
from mdsd_ot import drafts
from mdsd_ot.drafts import Vector
from mdsd_ot.drafts._sets import combinations
from mdsd_ot.exact import reduced as rd
from mdsd_ot.exact.maxflow import tuple_flow
from mdsd_ot.exact.subset import subset_selection
from testkit import bank_alpha, bank_law, dirichlet, load_bank

SCHEMES = list(drafts.SCHEMES)  # the registry order (the seeds depend on the position)


def _rational(rng, V, total=60, zeros=True):
    """A random rational distribution with denominator `total` (zeros allowed)."""
    c = rng.multinomial(total, rng.dirichlet(np.full(V, 0.7)))
    if not zeros or c.sum() == 0:
        c = c + 1
    s = int(c.sum())
    return [Fraction(int(x), s) for x in c]


def _law(rng, scheme, V, n, rational=True, conc=0.5):
    draw = (lambda: _rational(rng, V)) if rational else (lambda: dirichlet(rng, V, conc))
    if scheme == "product":
        return drafts.Product([draw() for _ in range(n)])
    if scheme == "explicit":
        if rational:
            flat = _rational(rng, V**n, total=3 * V**n)
            table = np.array(flat, dtype=object).reshape((V,) * n).tolist()
        else:
            t = rng.dirichlet(np.full(V**n, conc))
            t[rng.random(V**n) < 0.3] = 0.0
            t = (t / t.sum() if t.sum() > 0 else np.eye(1, V**n)[0]).reshape((V,) * n)
            table = t
        return drafts.Explicit(table)
    if scheme == "spechub":
        return drafts.SpecHub(draw())
    return drafts.make(scheme, draw(), n)


def _laws(seed, count, rational=True, Vmax=5, nmax=3):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        scheme = SCHEMES[len(out) % len(SCHEMES)]
        V, n = int(rng.integers(2, Vmax + 1)), int(rng.integers(1, nmax + 1))
        try:
            out.append((scheme, _law(rng, scheme, V, n, rational, (0.05, 0.5, 5.0)[len(out) % 3])))
        except ValueError:
            continue  # outside the law's domain (e.g. support smaller than n)
    return rng, out


def _aggregate(law):
    agg = {}
    for t, w in law.joint_items(exact=True).items():
        agg[frozenset(t)] = agg.get(frozenset(t), Fraction(0)) + w
    return agg


@pytest.mark.parametrize("scheme", SCHEMES)
def test_closed_forms_equal_enumerated_aggregation(scheme):
    """w_S from the closed forms == Σ of p_draft over the tuples with set S (Fractions)."""
    rng = np.random.default_rng(10 + SCHEMES.index(scheme))
    checked = 0
    for k in range(12):
        V = int(rng.integers(2, 6))
        n = 2 if scheme == "spechub" else int(rng.integers(1, 5 if V <= 3 else 4))
        try:
            law = _law(rng, scheme, V, n, rational=k % 3 != 2)
        except ValueError:
            continue
        w = law.set_weights(exact=True)
        assert w == _aggregate(law), (scheme, V, n)
        assert sum(w.values()) == 1 and all(len(S) <= n and x > 0 for S, x in w.items())
        # float weights: within the stated error bound of the exact ones
        tab = law.set_weight_table(exact=False)
        diff = sum(abs(Fraction(float(tab[S])) - x) for S, x in w.items())
        assert len(tab) == len(w) and diff <= tab.error
        checked += 1
    assert checked >= 8


def test_q_is_the_sum_of_weights_of_contained_sets():
    """Q(H) = Σ_{S⊆H} w_S for every H ⊆ Σ (exact), also through SetWeights.Q."""
    _, laws = _laws(1, 21, rational=True, Vmax=4)
    for scheme, law in laws:
        tab = law.set_weight_table(exact=True)
        for H in itertools.product([False, True], repeat=law.V):
            mask = np.array(H)
            direct = sum((x for S, x in tab.items() if all(mask[i] for i in S)), Fraction(0))
            assert direct == law.Q(mask, exact=True) == tab.Q(mask), scheme


def test_reduced_matches_bank_exactly():
    for inst in load_bank():
        law = bank_law(inst)
        if law is None:
            continue
        r = mdsd_ot.solve(inst["p"], law, method="reduced")
        assert r.alpha_exact == bank_alpha(inst), inst
        assert r.info["route"].startswith("exact")


def _check_contract(p_exact, law, out, exact):
    """Plan sums within capacities (exact rational comparison of the returned numbers)."""
    weights = out["info"]["weights"]
    cap = {S: Fraction(x) for S, x in weights.items()}
    rows, cols, total = {}, {}, Fraction(0)
    for (i, S), m in out["plan"].items():
        m = Fraction(m)
        assert m > 0 and i in S and S in cap
        rows[i] = rows.get(i, 0) + m
        cols[S] = cols.get(S, 0) + m
        total += m
    if exact:
        assert all(rows[i] <= p_exact[i] for i in rows)
        assert all(cols[S] <= cap[S] for S in cols)
        assert total == out["alpha_exact"]
    else:
        assert all(cols[S] <= cap[S] for S in cols)
        assert abs(total - Fraction(out["alpha"])) <= out["accuracy"]


def test_t1_reduced_equals_full_forms_rational():
    """T1 on seeded random rational laws of every scheme (explicit tables included): the exact
    reduced flow == exact subset selection == exact tuple max-flow, and H attains it."""
    _, laws = _laws(2, 140, rational=True)
    rng = np.random.default_rng(22)
    for scheme, law in laws:
        p = _rational(rng, law.V)
        out = rd.reduced_problem(p, law)
        ref, _ = subset_selection(p, law, exact=True)
        assert out["alpha_exact"] == ref == tuple_flow(p, law)["alpha_exact"], scheme
        H = out["H"]
        P = sum((p[i] for i in np.flatnonzero(H)), Fraction(0))
        assert P + 1 - law.Q(H, exact=True) == ref
        _check_contract(p, law, out, exact=True)


def test_t1_reduced_float_route_within_accuracy():
    """Float inputs: the scipy route within its stated accuracy of the exact α* of the
    rationals the floats denote; its plan respects the capacities exactly."""
    _, laws = _laws(3, 70, rational=False)
    rng = np.random.default_rng(33)
    for scheme, law in laws:
        p = dirichlet(rng, law.V, 0.5)
        pv = Vector(p, "p")
        out = rd.reduced_problem(pv, law)
        assert out["info"]["route"].startswith("float") and "alpha_exact" not in out
        ref, _ = subset_selection(pv.exact, law, exact=True)
        assert abs(Fraction(out["alpha"]) - ref) <= out["accuracy"] < 1e-12, scheme
        # the same instance solved exactly by the reduced flow itself
        assert rd.reduced_problem(pv, law, exact=True)["alpha_exact"] == ref
        # plan rows within p (floats read exactly; flows were rounded down)
        rows = {}
        for (i, _S), m in out["plan"].items():
            rows[i] = rows.get(i, 0) + Fraction(m)
        assert all(rows[i] <= Fraction(pv.float[i]) for i in rows)
        _check_contract(pv.exact, law, out, exact=False)


def _prefix_alpha(p, q, n, scheme, order):
    """T7 prefix scan (independent of the weights): min over prefixes of P(H) + 1 - Q(H), with
    Q(H) = q(H)^n (with replacement) or, for n = 2 without replacement, the closed form of
    docs/reference.md: Q(H) = q(H) - (1 - q(H)) Σ_{i∈H} q(i)/(1 - q(i))."""
    best, H = 2.0, np.zeros(len(p), dtype=bool)
    for k in range(len(p) + 1):
        H[:] = False
        H[order[:k]] = True
        qH = float(q[H].sum())
        Q = qH**n if scheme == "with" else qH - (1 - qH) * float((q[H] / (1 - q[H])).sum())
        best = min(best, float(p[H].sum()) + 1.0 - Q)
    return best


def test_reduced_solves_hundreds_of_tokens():
    """Beyond the full forms' reach: V = 120, n = 3 (288k sets) and V = 400, n = 2 agree with
    the T7 prefix scan on closed-form Q (q-convex laws), within the stated accuracy + 1e-12
    for the float evaluation of the scan."""
    rng = np.random.default_rng(4)
    for V, n, scheme in ((120, 3, "with"), (400, 2, "without")):
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        law = drafts.make(scheme, q, n)
        out = rd.reduced_problem(p, law)
        ref = _prefix_alpha(p, q, n, scheme, np.lexsort((np.arange(V), p / q)))
        assert abs(out["alpha"] - ref) <= out["accuracy"] + 1e-12, (V, n, scheme)
        assert out["info"]["sets"] >= 79_800  # C(400, 2); C(120, 1..3) = 288,100


def test_exact_route_falls_back_to_floats_when_large(monkeypatch):
    law = drafts.WithReplacement(["1/4"] * 4, 2)
    p = ["1/8", "3/8", "1/4", "1/4"]
    assert rd.reduced_problem(p, law)["info"]["route"].startswith("exact")
    monkeypatch.setattr(rd, "MAX_SETS_EXACT", 5)
    out = rd.reduced_problem(p, law)
    assert out["info"]["route"].startswith("float")
    ref, _ = subset_selection(Vector(p, "p").exact, law, exact=True)
    assert abs(Fraction(out["alpha"]) - ref) <= out["accuracy"]
    with pytest.raises(ValueError, match="exact=False"):
        rd.reduced_problem(p, law, exact=True)


@pytest.mark.parametrize("exact", [True, False])
def test_disjoint_supports_give_zero(exact):
    law = drafts.Product([[0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    out = rd.reduced_problem([1.0, 0.0, 0.0], law, exact=exact)
    assert out["alpha"] == 0.0 and len(out["plan"]) == 0
    assert out["H"].tolist() == [False, True, True]  # P(H) + 1 - Q(H) = 0 + 1 - 1


def test_set_count_bound_and_combinations():
    for m, k in [(6, 3), (5, 1), (7, 4), (4, 4)]:
        got = combinations(m, k).tolist()
        assert got == [list(c) for c in itertools.combinations(range(m), k)]
    law = drafts.WithoutReplacement([0.5, 0.25, 0.25, 0.0], 2)
    assert law.set_count_bound() == 3 == len(law.set_weights())


def test_info_weights_are_the_set_weights():
    law = drafts.ConditionalPoisson(["1/2", "1/4", "1/8", "1/8"], 2)
    out = mdsd_ot.solve(["1/4"] * 4, law, method="reduced")
    assert dict(out.info["weights"]) == law.set_weights()
    assert out.info["sets"] == 6 and out.accuracy == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("scheme", SCHEMES)
def test_t1_sweep_500_per_scheme(scheme):
    """T1 sweep: 500 seeded random instances per scheme (V ≤ 6, n ≤ 3, concentrations 0.05,
    0.5, 5, zeros, ties, 1e-12 masses), reduced == exact tuple max-flow (exact on the floats'
    rationals) and the float route within its accuracy."""
    rng = np.random.default_rng(500 + SCHEMES.index(scheme))
    done = 0
    while done < 500:
        V, n, conc = int(rng.integers(2, 7)), int(rng.integers(1, 4)), (0.05, 0.5, 5.0)[done % 3]
        try:
            law = _law(rng, scheme, V, n, rational=False, conc=conc)
        except ValueError:
            continue
        pv = Vector(dirichlet(rng, V, conc), "p")
        ref = tuple_flow(pv, law, exact=True)["alpha_exact"]
        assert rd.reduced_problem(pv, law, exact=True)["alpha_exact"] == ref
        out = rd.reduced_problem(pv, law)
        assert abs(Fraction(out["alpha"]) - ref) <= out["accuracy"]
        done += 1
