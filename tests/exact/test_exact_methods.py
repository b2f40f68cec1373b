"""The LP forms side by side: transport LP (7) via highspy and cvxpy, b-matching (9), dual
(10), POT's emd — every registered LP method of :mod:`mdsd_ot.exact`.

Claims: T1 (every form gives the same α*), T2 (the dual LP optimum equals its 0/1 optimum and
the simplex vertex is 0/1), Lemma 1 (the returned plans are couplings of value α*).  Float
methods are held to the accuracy they register (``METHODS[name].accuracy``, 1e-9); exact checks
use Fractions.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mdsd_ot import drafts as D
from mdsd_ot.drafts import Vector
from mdsd_ot.exact import METHODS

LP_METHODS = ("primal", "primal-cvxpy", "bmatching", "dual", "emd")
#: Methods whose status says whether the two-sided certificate closed (gap <= 1e-9).
CERTIFIED = ("primal", "primal-cvxpy", "bmatching", "dual")
#: Methods returning a dense plan for small instances.
PLAN_METHODS = ("primal", "primal-cvxpy", "bmatching", "emd")
#: Every scheme, in the registry's order (the seeds below depend on the position).
SCHEMES = tuple(D.SCHEMES)


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


# -- the alpha bank: tests/test_bank.py runs every method (these LP forms included) over it
# once, with the exact H check and T2 for the dual ------------------------------------------


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
