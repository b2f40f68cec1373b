"""The w-vertex-cover dual (10): T2 (LP optimum = 0/1 optimum, integral simplex vertex), the
constraint matrix handed to the TUM check (T3), and HiGHS's MIP on tiny masses."""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import drafts as D
from mdsd_ot.exact import draft_graph
from mdsd_ot.exact.dual import dual_constraint_matrix, w_vertex_cover


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


def test_dual_ip_terminates_on_tiny_masses():
    """T2 on an instance where HiGHS's MIP without presolve never finished (1e-16 masses)."""
    law = D.ConditionalPoisson([0.23560215273879043, 0.7643978472612095, 8.486520900032986e-17], 2)
    p = [0.0, 0.9999999997172946, 2.8270541463371046e-10]
    lp = w_vertex_cover(p, law)
    ip = w_vertex_cover(p, law, integer=True)
    assert abs(lp["value"] - ip["value"]) <= 1e-9  # LP optimum = 0/1 optimum (T2)
    assert lp["integral"] and ip["integral"]


def test_dual_takes_the_integral_lp_vertex_for_the_0_1_program():
    """The CLI fuzzer (2026-12-06): ``--method dual`` did not finish in 100 s at V = 180 (i.i.d.
    n = 2): HiGHS's branch and bound kept a root bound of 0.13 under an incumbent of 0.67.  The
    LP's optimal vertex is a 0/1 point (T2), so it is the 0/1 program's optimum; the MIP runs
    only where the vertex is not integral."""
    import mdsd_ot
    from mdsd_ot.drafts import WithReplacement

    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(180)), rng.dirichlet(np.ones(180))
    law = WithReplacement(q, 2)
    r = mdsd_ot.solve(p, law, method="dual")
    assert r.info["integral"] and abs(r.info["ip"] - r.info["lp"]) <= 1e-9  # T2, recomputed
    y = r.info["ip_y"]  # the 0/1 point's own value: z = 1 on a tuple with a token outside H
    g = draft_graph(law)
    z = np.zeros(len(g.w))
    z[g.edge_k[y[g.edge_i] == 0]] = 1.0
    assert abs(float(p @ y + g.w @ z) - r.info["ip"]) <= 1e-12
    assert r.info["attempts"][-1] == "0/1 program: the LP vertex is integral (T2), optimal"
    assert abs(r.alpha - mdsd_ot.alpha_star(p, law)) <= 1e-9  # the method's stated accuracy
    assert np.all((r.info["ip_y"] == 0) | (r.info["ip_y"] == 1))


def test_tuple_lp_guards_refuse_what_would_run_for_minutes():
    """The CLI fuzzer (2026-12-06): at V = 1,000 (i.i.d. n = 2, 2,000,000 edges) the dual ran
    past 60 s and bmatching too, within guards of 2^21 and 2^22 edges; ``crosscheck --vocab
    1000`` timed out.  Both now refuse above 2^19 edges, before any work, naming the unit."""
    import mdsd_ot
    from mdsd_ot.drafts import WithReplacement
    from mdsd_ot.exact.bmatching import MAX_EDGES
    from mdsd_ot.exact.dual import MAX_EDGES_DUAL

    assert MAX_EDGES == MAX_EDGES_DUAL == 2**19
    law = WithReplacement(np.full(1000, 1e-3), 2)
    for m in ("dual", "bmatching"):
        with pytest.raises(ValueError, match=r"needs 2,000,000 edges \(n per draft tuple\) "
                           r"\(limit 524,288\); use method='fast'"):  # fmt: skip
            mdsd_ot.solve(np.full(1000, 1e-3), law, method=m)
