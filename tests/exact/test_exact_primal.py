"""The transport LP (7): "primal" (highspy) on tiny masses (HiGHS issue 2511) and the
readable cvxpy model."""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import drafts as D
from mdsd_ot.drafts import Vector
from mdsd_ot.exact import METHODS, draft_graph
from mdsd_ot.exact.primal import transport_problem


def _solve(method: str, p, law):
    """Run a registered method directly (p validated once, as mdsd_ot.solve does)."""
    return METHODS[method].func(p if isinstance(p, Vector) else Vector(p, "p"), law)


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
