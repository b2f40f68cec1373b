r"""The primal transport LP (7), through highspy directly and as a readable cvxpy model.

Variables C(i, ī) ≥ 0 for i ∈ Σ and ī ∈ supp(p_draft) (the LP over all of Σⁿ has the same
optimum: a tuple of probability 0 carries no mass):

.. math::

   \alpha^* = \max_C \sum_i \sum_{\bar i \ni i} C(i, \bar i) \quad\text{s.t.}\quad
   \sum_{\bar i} C(i, \bar i) = p(i), \quad \sum_i C(i, \bar i) = p_{draft}(\bar i).

Numerics (the known traps of HiGHS on this LP):

- the two equality blocks have one redundant row (both sum to 1); it is dropped, since HiGHS
  presolve can call the balanced system infeasible on tiny masses (HiGHS issue 2511);
- the primal simplex starts from a least-cost spanning-tree basis (:func:`crash_basis`;
  ~25x fewer iterations at V = 16, n = 3); should that run not end optimal, cold solves with
  presolve, without presolve, and by interior point follow (``info["attempts"]``);
- HiGHS runs with feasibility tolerances ``LP_TOL`` of :mod:`._highs` (1e-10,
  its minimum); even so its values can miss the marginals by ~1e-9 and its objective α*
  by ~5e-10.  So the reported α is P(H) + 1 − Q(H) for the best level set H of the token
  potentials u (:func:`~mdsd_ot.exact._graph.best_level_set`), an upper bound on α*, and
  the plan's matched part, repaired into a feasible maximum b-matching
  (:func:`~mdsd_ot.exact.plans.repair_matching`), gives a lower bound.  Their difference,
  ``info["gap"]``, bounds the error; the status is ``"optimal"`` when it is ≤ 1e-9 (the
  registered accuracy, also checked against the exact alpha bank in the tests).
- The returned plan is the Lemma 1 completion of the repaired matching: marginals p and
  p_draft to rounding, objective ``info["lower_bound"]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..drafts import DraftLaw, Vector
from ..methods import register, timed
from . import _limits
from ._graph import DraftGraph, draft_graph
from ._highs import highs_lp, solve_highs_lp
from .plans import certified_status, certify_flows, complete_dense

__all__ = ["transport_lp", "transport_problem", "MAX_VARIABLES", "MAX_VARIABLES_CVXPY"]

#: Largest number of LP variables V·|supp(p_draft)| the highspy primal accepts.
MAX_VARIABLES: int = 2**21
#: Same for the cvxpy model (slower to build and solve).
MAX_VARIABLES_CVXPY: int = 2**18


def _check(draft: DraftLaw, limit: int, what: str) -> None:
    """Refuse, before enumerating p_draft, more than ``limit`` LP variables V·|supp(p_draft)|."""
    _limits.check_tuples(
        draft,
        per_tuple=draft.V,
        limit=limit,
        what=what,
        hint=_limits.instead(draft, "fast", "reduced"),
        unit="LP variables",
    )


def transport_matrix(graph: DraftGraph, drop_last: bool = True) -> sp.csc_matrix:
    """Constraint matrix of (7): column i·K + k is C(i, ī_k); rows p-block then p_draft-block.

    With ``drop_last`` the last p_draft row, implied by the others, is left out.
    """
    V, K = graph.V, graph.K
    nv = V * K
    col = np.arange(nv)
    row_p = np.repeat(np.arange(V), K)
    row_t = V + np.tile(np.arange(K), V)
    keep = row_t < V + K - 1 if drop_last else np.ones(nv, dtype=bool)
    rows = np.concatenate([row_p, row_t[keep]])
    cols = np.concatenate([col, col[keep]])
    m = V + K - 1 if drop_last else V + K
    return sp.csc_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, nv))


def crash_basis(p: np.ndarray, graph: DraftGraph):
    r"""A starting basis for (7): a spanning tree of V + K − 1 cells, matching edges first.

    The classical least-cost rule of the transportation simplex: cells are visited edges
    (i ∈ ī, objective 1) first, largest min(p(i), p_draft(ī)) first, then the north-west corner
    on what is left; each visited cell gets min(residual row, residual column) and retires
    exactly one line, so the V + K − 1 cells form a spanning tree (a basis, primal feasible).
    The primal simplex from it takes ~250 iterations at V = 16, n = 3 instead of ~6,000 cold.
    """
    import highspy

    V, K = graph.V, graph.K
    r, s = p.astype(np.float64).copy(), graph.w.copy()
    row_on, col_on = [True] * V, [True] * K
    live = [V, K]  # rows and columns not yet retired
    basic: list[int] = []

    def visit(i: int, k: int) -> None:
        x = min(r[i], s[k])
        r[i] -= x
        s[k] -= x
        basic.append(i * K + k)
        if (r[i] <= s[k] and live[0] > 1) or live[1] == 1:
            row_on[i] = False
            live[0] -= 1
        else:
            col_on[k] = False
            live[1] -= 1

    order = np.argsort(-np.minimum(p[graph.edge_i], graph.w[graph.edge_k]), kind="stable")
    for i, k in zip(graph.edge_i[order].tolist(), graph.edge_k[order].tolist(), strict=True):
        if live[0] + live[1] <= 1:
            break
        if row_on[i] and col_on[k]:
            visit(i, k)
    rows = [i for i in range(V) if row_on[i]]
    cols = [k for k in range(K) if col_on[k]]
    a = b = 0
    while live[0] + live[1] > 1:
        i, k = rows[a], cols[b]
        visit(i, k)
        if row_on[i]:
            b += 1
        else:
            a += 1
    if len(basic) != V + K - 1:  # pragma: no cover - the rule above always yields a tree
        return None
    B = highspy.HighsBasis()
    status = np.full(V * K, highspy.HighsBasisStatus.kLower, dtype=object)
    status[basic] = highspy.HighsBasisStatus.kBasic
    B.col_status = status.tolist()
    B.row_status = [highspy.HighsBasisStatus.kLower] * (V + K - 1)
    B.valid = True
    return B


def transport_lp(p: Any, draft: DraftLaw) -> dict[str, Any]:
    r"""Solve the transport LP (7) with highspy over Σ × supp(p_draft).

    Parameters
    ----------
    p : (V,) array_like
        Target distribution.
    draft : DraftLaw
        The draft law.

    Returns
    -------
    dict
        ``alpha`` (certified P(H) + 1 − Q(H)), ``H``, ``C`` ((V, K) plan), ``u`` (V,) and
        ``v`` (K,) row duals (v of the dropped row is 0), ``graph``, ``objective`` (HiGHS's),
        ``lower_bound``, ``gap`` and ``attempts``.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> out = transport_lp([0.5, 0.5], WithReplacement([0.75, 0.25], 2))
    >>> round(out["alpha"], 12), out["C"].shape
    (0.9375, (2, 4))
    """
    pv = p.float if isinstance(p, Vector) else Vector(p, "p").float
    _check(draft, MAX_VARIABLES, "the transport LP (7)")
    g = draft_graph(draft)
    V, K = g.V, g.K
    A = transport_matrix(g)
    rhs = np.concatenate([pv, g.w[:-1]])
    lp = highs_lp(g.match_matrix().ravel(), A, rhs, rhs, maximize=True)
    h, tried = solve_highs_lp(lp, basis=crash_basis(pv, g))
    sol = h.getSolution()
    C = np.asarray(sol.col_value, dtype=np.float64).reshape(V, K)
    duals = np.asarray(sol.row_dual, dtype=np.float64)
    u, v = duals[:V], np.concatenate([duals[V:], [0.0]])
    H, value, x, lower = certify_flows(pv, g, C[g.edge_i, g.edge_k], u)
    return dict(
        alpha=value,
        H=H,
        C=C,
        x=x,
        u=u,
        v=v,
        graph=g,
        objective=float(h.getInfo().objective_function_value),
        lower_bound=lower,
        gap=value - lower,
        attempts=tried,
    )


def _plan_fields(p: np.ndarray, g: DraftGraph, x: np.ndarray, u: np.ndarray, v: np.ndarray):
    """The repaired plan (Lemma 1 completion of the certified matching x) and the duals.

    Dense (V,)+(V,)*n arrays when small; else the plan as a sparse (V, K) COO matrix in
    ``info["plan_coo"]`` and v aligned with ``info["tuples"]``.
    """
    C = complete_dense(p, g, x)
    if g.wants_dense():
        vd = np.zeros(g.V**g.n)
        vd[np.ravel_multi_index(tuple(g.tuples.T), (g.V,) * g.n)] = v
        return g.dense_plan(C), {"u": u, "v": vd.reshape((g.V,) * g.n)}, {}
    return None, {"u": u, "v": v}, {"plan_coo": sp.coo_matrix(C)}


@register("primal", accuracy=1e-9)
def _solve_primal(p, draft):
    """Transport LP (7) over Σ × supp(p_draft) through highspy (sparse, tightened tolerances)."""
    with timed() as t:
        out = transport_lp(p, draft)
        g = out["graph"]
        plan, duals, extra = _plan_fields(p.float, g, out["x"], out["u"], out["v"])
    return dict(
        alpha=out["alpha"],
        H=out["H"],
        plan=plan,
        duals=duals,
        status=certified_status(out["gap"]),
        seconds=t.seconds,
        info={
            "objective": out["objective"],
            "lower_bound": out["lower_bound"],
            "gap": out["gap"],
            "variables": g.V * g.K,
            "tuples": g.tuples,
            "attempts": out["attempts"],
            **extra,
        },
    )


# -- the same LP as a cvxpy model ------------------------------------------------------------


def transport_problem(p: Any, draft: DraftLaw):
    r"""The transport LP (7) as a readable ``cvxpy.Problem``.

    Variable ``C`` of shape (V, K) (K = |supp(p_draft)|, columns in the sorted order of
    ``draft.joint_items()``); ``constraints[0]`` is the p-marginal (V rows),
    ``constraints[1]`` the p_draft-marginal (K rows); the objective is
    :math:`\max \sum_{i, k} M_{ik} C_{ik}` with :math:`M_{ik} = 1[i \in \bar i_k]`.
    After ``problem.solve()``, ``problem.value`` is α* and ``constraints[j].dual_value`` are the
    transport potentials (unique only up to a common shift).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> prob = transport_problem([0.5, 0.5], WithReplacement([0.75, 0.25], 2))
    >>> prob.variables()[0].shape, len(prob.constraints)
    ((2, 4), 2)
    >>> round(float(prob.solve(solver="CLARABEL")), 6)
    0.9375
    >>> prob.constraints[0].dual_value.shape
    (2,)
    """
    pv = p.float if isinstance(p, Vector) else Vector(p, "p").float
    _check(draft, MAX_VARIABLES_CVXPY, "the cvxpy transport model (7)")  # before importing cvxpy
    import cvxpy as cp

    g = draft_graph(draft)
    M = g.match_matrix()
    C = cp.Variable((g.V, g.K), nonneg=True, name="C")
    constraints = [cp.sum(C, axis=1) == pv, cp.sum(C, axis=0) == g.w]
    return cp.Problem(cp.Maximize(cp.sum(cp.multiply(M, C))), constraints)


#: Solver attempts for the cvxpy model: HiGHS with tightened tolerances (its defaults leave
#: ~1e-7 errors), again without presolve (HiGHS issue 2511), then Clarabel (interior point).
_CVXPY_ATTEMPTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("HIGHS", dict(primal_feasibility_tolerance=1e-10, dual_feasibility_tolerance=1e-10)),
    (
        "HIGHS",
        dict(primal_feasibility_tolerance=1e-10, dual_feasibility_tolerance=1e-10, presolve="off"),
    ),
    ("CLARABEL", dict(tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=200)),
)

_BANNER_ABSORBED = False


def _absorb_highs_banner() -> None:
    """Send HiGHS's once-per-process banner to /dev/null.

    cvxpy builds ``highspy.Highs()``, whose constructor prints the banner on the C-level
    stdout before any option can silence it; it would corrupt machine-readable output
    (``mdsd-ot crosscheck --json``).  Best effort: skipped where file descriptors or libc
    cannot be reached.
    """
    global _BANNER_ABSORBED
    if _BANNER_ABSORBED:
        return
    _BANNER_ABSORBED = True
    try:
        import ctypes
        import os
        import sys

        import highspy

        libc = ctypes.CDLL(None)
        sys.stdout.flush()
        libc.fflush(None)
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                highspy.Highs()
                libc.fflush(None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    except Exception:  # pragma: no cover - platform dependent
        pass


def solve_transport_problem(prob) -> tuple[str, list[str]]:
    """Solve a :func:`transport_problem`, trying the solvers of ``_CVXPY_ATTEMPTS`` in turn.

    Returns the solver that succeeded and the status of each attempt.
    """
    import cvxpy as cp

    tried = []
    for solver, opts in _CVXPY_ATTEMPTS:
        if solver == "HIGHS":
            _absorb_highs_banner()
        try:
            prob.solve(solver=solver, **opts)
            status = prob.status
        except cp.error.SolverError as exc:
            status = f"error: {exc}"
        tried.append(f"{solver} {opts.get('presolve', '')}: {status}".replace("  ", " "))
        if status == cp.OPTIMAL:
            return solver, tried
    raise RuntimeError(f"cvxpy found no optimal solution; attempts: {'; '.join(tried)}")


@register("primal-cvxpy", accuracy=1e-9)
def _solve_primal_cvxpy(p, draft):
    """Transport LP (7) as a cvxpy model (HiGHS, tightened tolerances); H from its duals."""
    with timed() as t:
        prob = transport_problem(p, draft)
        g = draft_graph(draft)
        solver, tried = solve_transport_problem(prob)
        C = np.asarray(prob.variables()[0].value, dtype=np.float64)
        u = np.asarray(prob.constraints[0].dual_value, dtype=np.float64)
        v = np.asarray(prob.constraints[1].dual_value, dtype=np.float64)
        H, value, x, lower = certify_flows(p.float, g, C[g.edge_i, g.edge_k], u)
        plan, duals, extra = _plan_fields(p.float, g, x, u, v)
    gap = value - lower
    return dict(
        alpha=value,
        H=H,
        plan=plan,
        duals=duals,
        status=certified_status(gap),
        seconds=t.seconds,
        info={
            "objective": float(prob.value),
            "solver": solver,
            "attempts": tried,
            "lower_bound": lower,
            "gap": gap,
            "tuples": g.tuples,
            **extra,
        },
    )
