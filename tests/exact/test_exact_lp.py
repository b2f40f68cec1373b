"""The LP forms: transport LP (7) via highspy and cvxpy, b-matching (9), dual (10), POT's emd.

Claims: T1 (every form gives the same α*), T2 (the dual LP optimum equals its 0/1 optimum and
the simplex vertex is 0/1), T4 (n = 1 is 1 − TV), Lemma 1 (a maximum b-matching completes to a
coupling with the same value).  Float methods are held to the accuracy they register
(``METHODS[name].accuracy``, 1e-9); exact checks use Fractions.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts as D
from mdsd_ot.drafts import Vector
from mdsd_ot.exact import METHODS
from mdsd_ot.exact.bmatching import (
    complete_dense,
    complete_plan,
    draft_graph,
    repair_matching,
)
from mdsd_ot.exact.dual import dual_constraint_matrix, w_vertex_cover
from mdsd_ot.exact.primal import transport_problem
from testkit import bank_alpha, bank_law, load_bank

LP_METHODS = ("primal", "primal-cvxpy", "bmatching", "dual", "emd")
#: Methods whose status says whether the two-sided certificate closed (gap <= 1e-9).
CERTIFIED = ("primal", "primal-cvxpy", "bmatching", "dual")
#: Methods returning a dense plan for small instances.
PLAN_METHODS = ("primal", "primal-cvxpy", "bmatching", "emd")
SCHEMES = ("with", "without", "conditional-poisson", "product", "greedy", "spechub", "explicit")


def _needs(method: str) -> None:
    if method == "emd":
        pytest.importorskip("ot")


def _solve(method: str, p, law):
    """Run a registered method directly (p validated once, as mdsd_ot.solve does)."""
    return METHODS[method].func(p if isinstance(p, Vector) else Vector(p, "p"), law)


# -- random instances: Dirichlet 0.05 / 0.5 / 5, zeros, ties, masses near 1e-12 -------------


def _vec(rng: np.random.Generator, V: int, conc: float, support: int = 1) -> np.ndarray:
    x = rng.dirichlet(np.full(V, conc))
    u = rng.random()
    if u < 0.25:  # exact zeros
        k = int(rng.integers(0, V - support + 1))
        x[rng.choice(V, size=k, replace=False)] = 0.0
    elif u < 0.45:  # ties
        i, j = rng.choice(V, size=2, replace=False)
        x[j] = x[i]
    elif u < 0.65:  # masses near 1e-12
        k = int(rng.integers(1, V))
        x[rng.choice(V, size=k, replace=False)] = 1e-12 * (1.0 + rng.random(k))
    if np.count_nonzero(x > 1e-9) < support:
        x = np.where(x == 0, rng.random(V), x)
    return x / x.sum()


def random_instance(rng: np.random.Generator, scheme: str):
    """A seeded (p, law) pair of the given scheme, V <= 6, n <= 3 (explicit: V <= 4)."""
    conc = float(rng.choice([0.05, 0.5, 5.0]))
    n = 2 if scheme == "spechub" else int(rng.integers(1, 4))
    if scheme == "explicit":
        V = int(rng.integers(2, 5))
        return _vec(rng, V, conc), D.Explicit(_vec(rng, V**n, conc).reshape((V,) * n))
    V = int(rng.integers(max(2, n), 7))
    p = _vec(rng, V, conc)
    if scheme == "product":
        return p, D.Product([_vec(rng, V, conc) for _ in range(n)])
    support = {"without": n, "conditional-poisson": n, "greedy": n, "spechub": 2}.get(scheme, 1)
    return p, D.make(scheme, _vec(rng, V, conc, support), n)


def instances(scheme: str, count: int, seed: int):
    rng = np.random.default_rng([seed, SCHEMES.index(scheme)])
    out = []
    while len(out) < count:
        try:
            out.append(random_instance(rng, scheme))
        except ValueError:  # e.g. greedy without mass outside its top n-1: outside the domain
            continue
    return out


def _installed_lp_methods():
    return [m for m in LP_METHODS if METHODS[m].is_installed()]


def _check_instance(p, law) -> None:
    """T1: every LP form agrees with brute-force subset selection within its accuracy."""
    pv = Vector(p, "p")
    ref = _solve("subset", pv, law)["alpha"]  # accuracy 1e-12 at V <= 6
    for m in _installed_lp_methods():
        r = _solve(m, pv, law)
        acc = METHODS[m].accuracy
        assert abs(r["alpha"] - ref) <= acc + 1e-12, (m, law.spec(), r["alpha"], ref)
        # the returned H attains alpha: P(H) + 1 - Q(H) within the accuracy
        H = np.asarray(r["H"], dtype=bool)
        val = float(pv.float[H].sum()) + 1.0 - float(law.Q(H, exact=False))
        assert abs(val - ref) <= acc + 1e-12, (m, "H", val, ref)
        if m in CERTIFIED:
            assert r["status"] == "optimal", (m, r["status"])
        if m == "dual":  # T2 on every instance
            assert abs(r["info"]["lp"] - r["info"]["ip"]) <= 1e-9
            assert r["info"]["integral"]


# -- the alpha bank --------------------------------------------------------------------------

BANK = [(inst, bank_law(inst)) for inst in load_bank()]
BANK = [(inst, law) for inst, law in BANK if law is not None]


@pytest.mark.parametrize("method", LP_METHODS)
def test_alpha_bank(method):
    """Each LP form reproduces the 189 exact alphas within its registered accuracy (T1);
    for "dual" also T2 (LP optimum = 0/1 optimum = α*, integral vertex)."""
    _needs(method)
    acc = METHODS[method].accuracy
    assert acc <= 1e-9
    worst = 0.0
    for inst, law in BANK:
        pv = Vector(inst["p"], "p")
        r = _solve(method, pv, law)
        exact = bank_alpha(inst)
        worst = max(worst, abs(r["alpha"] - float(exact)))
        # H is optimal exactly, up to the stated accuracy: P(H) + 1 - Q(H) in Fractions
        H = np.asarray(r["H"], dtype=bool)
        val = sum((pv.exact[i] for i in np.flatnonzero(H)), Fraction(0)) + 1 - law.Q(H, exact=True)
        assert abs(val - exact) <= acc, (method, inst, val, exact)
        if method == "dual":  # T2 on the bank: LP = IP = exact alpha, vertex integral
            assert r["info"]["integral"], inst
            assert abs(r["info"]["lp"] - r["info"]["ip"]) <= 1e-9, inst
            assert abs(r["info"]["lp"] - float(exact)) <= 1e-9, inst
    assert worst <= acc, (method, worst)


# -- T1 on seeded random instances of every scheme -------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_T1_random(scheme):
    """9 seeded instances per scheme (63 in all): every LP form against brute force."""
    for p, law in instances(scheme, 9, seed=11):
        _check_instance(p, law)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", SCHEMES)
def test_T1_random_sweep(scheme):
    """The full sweep: 500 seeded instances per scheme."""
    for p, law in instances(scheme, 500, seed=2024):
        _check_instance(p, law)


# -- T2 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_T2_lp_equals_ip_and_vertex_is_integral(seed):
    """T2: the LP optimum of (10) equals the 0/1 optimum, and the simplex vertex is 0/1."""
    rng = np.random.default_rng(seed)
    p, law = rng.dirichlet(np.ones(5)), D.WithReplacement(rng.dirichlet(np.ones(5)), 3)
    lp = w_vertex_cover(p, law)
    ip = w_vertex_cover(p, law, integer=True)
    assert abs(lp["value"] - ip["value"]) <= 1e-9
    assert lp["integral"] and ip["integral"]
    x = np.concatenate([lp["y"], lp["z"]])
    assert np.all(np.isclose(x, 0.0, atol=1e-9) | np.isclose(x, 1.0, atol=1e-9))
    # y = 1_H, z = 1[tuple not inside H]: the integer dual of (8)
    H = lp["y"] > 0.5
    g = draft_graph(law)
    inside = H[g.tuples].all(axis=1)
    assert np.allclose(lp["z"][g.w > 0], ~inside, atol=1e-9)
    assert abs(lp["value"] - (p[H].sum() + 1.0 - law.Q(H))) <= 1e-9


# -- plans: marginals p and p_draft, objective alpha ------------------------------------------


@pytest.mark.parametrize("method", PLAN_METHODS)
def test_plan_marginals_and_objective(method):
    """The dense plan has marginals p and p_draft and objective α*, all within 1e-9."""
    _needs(method)
    cases = [instances(s, 2, seed=5) for s in SCHEMES]
    for p, law in itertools.chain.from_iterable(cases):
        r = _solve(method, p, law)
        plan = r["plan"]
        V, n = law.V, law.n
        assert plan.shape == (V,) + (V,) * n
        assert plan.min() >= -1e-12
        axes = tuple(range(1, n + 1))
        assert np.abs(plan.sum(axis=axes) - Vector(p, "p").float).max() <= 1e-9
        assert np.abs(plan.sum(axis=0) - law.joint()).max() <= 1e-9
        # objective: mass on pairs (i, t) with i in t
        hit = np.zeros_like(plan, dtype=bool)
        for idx in itertools.product(range(V), repeat=n):
            for i in set(idx):
                hit[(i, *idx)] = True
        assert abs(plan[hit].sum() - r["alpha"]) <= 1e-9, (method, law.spec())


# -- Lemma 1: complete_plan ------------------------------------------------------------------


def test_complete_plan_exact_marginals_and_value():
    """n = 1: the matching min(p, q) on the diagonal is maximum; completed, its value is
    Σ min(p, q) = 1 − TV exactly (T4) and its marginals are exactly p and q (Fractions)."""
    p = [Fraction(1, 2), Fraction(1, 3), Fraction(1, 6), Fraction(0)]
    q = [Fraction(1, 4), Fraction(1, 4), Fraction(1, 4), Fraction(1, 4)]
    law = D.WithReplacement(q, 1)
    items = law.joint_items(exact=True)
    matched = {(i, (i,)): min(p[i], q[i]) for i in range(4)}
    plan = complete_plan(p, items, matched)
    for i in range(4):
        assert sum(m for (j, _), m in plan.items() if j == i) == p[i]
    for t, w in items.items():
        assert sum(m for (_, s), m in plan.items() if s == t) == w
    value = sum(m for (i, t), m in plan.items() if i in t)
    assert value == sum(map(min, p, q)) == Fraction(2, 3)
    assert all(isinstance(m, Fraction) for m in plan.values())


def test_complete_plan_exact_n3():
    """n = 3 with a feasible (greedy, not maximum) matching: marginals still exact."""
    q = [Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)]
    p = [Fraction(1, 5), Fraction(2, 5), Fraction(2, 5)]
    items = D.WithoutReplacement(q, 3).joint_items(exact=True)
    r, s, matched = list(p), dict(items), {}
    for t in sorted(items):
        for i in set(t):
            m = min(r[i], s[t])
            if m > 0:
                matched[(i, t)] = m
                r[i] -= m
                s[t] -= m
    plan = complete_plan(p, items, matched)
    for i in range(3):
        assert sum(m for (j, _), m in plan.items() if j == i) == p[i]
    for t, w in items.items():
        assert sum(m for (_, u), m in plan.items() if u == t) == w


def test_complete_plan_rejects_overfull_matching():
    items = {(0,): Fraction(1, 2), (1,): Fraction(1, 2)}
    with pytest.raises(ValueError, match="matched"):
        complete_plan([Fraction(1, 4), Fraction(3, 4)], items, {(0, (0,)): Fraction(1, 2)})
    with pytest.raises(ValueError, match="matched"):
        complete_plan([Fraction(1, 2)] * 2, items, {(0, (5,)): Fraction(1, 4)})


def test_complete_dense_matches_complete_plan():
    """The float64 grid completion equals the generic one entry by entry (1e-15)."""
    rng = np.random.default_rng(3)
    p, law = rng.dirichlet(np.ones(4)), D.WithReplacement(rng.dirichlet(np.ones(4)), 2)
    g = draft_graph(law)
    x = repair_matching(p, g, np.zeros(len(g.edge_i)))  # a near-maximum b-matching
    C = complete_dense(p, g, x)
    matched = {
        (int(i), tuple(map(int, g.tuples[k]))): float(m)
        for i, k, m in zip(g.edge_i, g.edge_k, x, strict=True)
    }
    plan = complete_plan(list(p), g.items, matched)
    for (i, t), m in plan.items():
        k = next(j for j, u in enumerate(g.tuples.tolist()) if tuple(u) == t)
        assert abs(C[i, k] - m) <= 1e-15
    assert abs(sum(plan.values()) - 1.0) <= 1e-12
    # from zero flows the quantum is 1 / 2**30: the total is a lower bound on α*, short of it
    # by at most (V + K) quanta (the bound stated in repair_matching)
    alpha = _solve("subset", p, law)["alpha"]
    assert alpha - (g.V + g.K) / 2**30 <= x.sum() <= alpha + 1e-12


# -- tiny masses: HiGHS presolve (issue 2511) --------------------------------------------------


@pytest.mark.parametrize("scheme", ["with", "without", "product", "explicit"])
def test_primal_tiny_masses(scheme):
    """Masses near 1e-12 in p and q: "primal" answers, certified, and agrees exactly."""
    tiny = [1e-12, 3e-12, 0.5 - 2e-12, 0.5 - 2e-12]
    p = [0.5 - 2e-12, 1e-12, 0.5 - 2e-12, 3e-12]
    if scheme == "explicit":
        law = D.Explicit(np.outer(tiny, p[::-1]))
    elif scheme == "product":
        law = D.Product([tiny, p[::-1], tiny[::-1]])
    else:
        law = D.make(scheme, tiny, 3)
    r = _solve("primal", p, law)
    exact = _solve("subset-exact", p, law)["alpha_exact"]
    assert r["status"] == "optimal"
    assert abs(r["alpha"] - float(exact)) <= METHODS["primal"].accuracy
    assert r["info"]["gap"] <= 1e-9


def test_primal_tiny_masses_random():
    """A seeded batch where most masses sit near 1e-12 (the 2511 regime)."""
    rng = np.random.default_rng(77)
    for _ in range(20):
        V = int(rng.integers(3, 6))
        p = np.where(rng.random(V) < 0.6, 1e-12 * rng.random(V), rng.random(V))
        q = np.where(rng.random(V) < 0.6, 1e-12 * rng.random(V), rng.random(V))
        p, q = p / p.sum(), q / q.sum()
        law = D.WithReplacement(q, 2)
        r = _solve("primal", p, law)
        ref = _solve("subset", p, law)["alpha"]
        assert abs(r["alpha"] - ref) <= METHODS["primal"].accuracy
        assert r["status"] == "optimal"


# -- the cvxpy builder and the dual's constraint matrix ---------------------------------------


def test_transport_problem_is_inspectable():
    p, law = [0.2, 0.3, 0.5], D.WithReplacement([0.5, 0.25, 0.25], 2)
    prob = transport_problem(p, law)
    (C,) = prob.variables()
    assert C.shape == (3, 9)
    assert len(prob.constraints) == 2
    value = prob.solve(solver="CLARABEL")
    alpha = _solve("subset", p, law)["alpha"]
    assert abs(value - alpha) <= 1e-7  # Clarabel at default tolerances
    u = prob.constraints[0].dual_value
    v = prob.constraints[1].dual_value
    assert u.shape == (3,) and v.shape == (9,)
    # strong duality: Σ u p + Σ v w equals the optimum (potentials up to a shift)
    w = draft_graph(law).w
    assert abs(abs(float(u @ p + v @ w)) - alpha) <= 1e-6


def test_dual_constraint_matrix_structure():
    """Edge rows have one 1 among y and one among z; then an identity (input for T3)."""
    law = D.WithReplacement([0.5, 0.3, 0.2], 2)
    g = draft_graph(law)
    A = dual_constraint_matrix(law).toarray()
    V, K, E = g.V, g.K, len(g.edge_i)
    assert A.shape == (E + V + K, V + K)
    assert set(np.unique(A)) <= {0.0, 1.0}
    assert np.all(A[:E, :V].sum(axis=1) == 1) and np.all(A[:E, V:].sum(axis=1) == 1)
    assert np.array_equal(A[E:], np.eye(V + K))
    # edges are exactly the pairs i in tuple
    pairs = {(int(i), int(k) - V) for i, k in (np.flatnonzero(row) for row in A[:E])}
    assert pairs == {(i, k) for k, t in enumerate(g.tuples.tolist()) for i in set(t)}


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "what"),
    [
        ("primal", "transport LP"),
        ("primal-cvxpy", "cvxpy transport model"),
        ("bmatching", "b-matching LP"),
        ("dual", "w-vertex-cover dual"),
        ("emd", "ot.emd"),
    ],
)
def test_refuses_too_large(method, what):
    """Too large: a ValueError naming the size and pointing to method='fast' / 'reduced'."""
    _needs(method)
    V, n = 200, 4  # 1.6e9 tuples: refused before enumerating anything
    law = D.WithReplacement(np.full(V, 1.0 / V), n)
    with pytest.raises(ValueError, match=what) as info:
        _solve(method, np.full(V, 1.0 / V), law)
    msg = str(info.value)
    assert "instance too large" in msg and "method='fast'" in msg and "'reduced'" in msg
    assert "1,600,000,000" in msg or "320,000,000,000" in msg or "6,400,000,000" in msg


def test_dual_ip_terminates_on_tiny_masses():
    """T2 on an instance where HiGHS's MIP without presolve never finished (1e-16 masses)."""
    law = D.ConditionalPoisson([0.23560215273879043, 0.7643978472612095, 8.486520900032986e-17], 2)
    p = [0.0, 0.9999999997172946, 2.8270541463371046e-10]
    lp = w_vertex_cover(p, law)
    ip = w_vertex_cover(p, law, integer=True)
    assert abs(lp["value"] - ip["value"]) <= 1e-9  # LP optimum = 0/1 optimum (T2)
    assert lp["integral"] and ip["integral"]
