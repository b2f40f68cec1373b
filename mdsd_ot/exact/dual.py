r"""The w-vertex-cover dual (10), as an LP (simplex vertex) and as a 0/1 integer program (T2).

.. math::

   \min_{y, z \ge 0} \sum_i y_i\, p(i) + \sum_{\bar i} z_{\bar i}\, p_{draft}(\bar i)
   \quad\text{s.t.}\quad y_i + z_{\bar i} \ge 1 \quad (i \in \bar i).

The constraint matrix (edge–vertex incidence of the bipartite draft graph stacked on
identities, :func:`dual_constraint_matrix`) is totally unimodular (T3), so every vertex of the
LP is 0/1 and the LP optimum equals the integer optimum (T2).  A 0/1 optimum is y = 1_H,
z_ī = 1[ī ⊄ H] for an optimal set H of the subset form (8).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..drafts import DraftLaw, Vector
from ..methods import register, timed
from . import _limits
from ._graph import DraftGraph, best_level_set, draft_graph, subset_value
from ._highs import highs_lp, solve_highs_lp
from .plans import certified_status, repair_matching

__all__ = ["dual_constraint_matrix", "w_vertex_cover", "MAX_EDGES_DUAL", "INTEGRAL_TOL"]

#: Largest number of edges (constraints y_i + z_ī ≥ 1) the dual accepts: HiGHS's time grows
#: about as E^1.75 (i.i.d. n = 2 on a 2-core machine: V = 300, 180,000 edges, 3.3 s; V = 500,
#: 500,000 edges, 20 s; V = 1,000 did not finish in 60 s), so 2^19 edges is about 20 s.
MAX_EDGES_DUAL: int = 2**19
#: A vertex counts as integral when every coordinate is within this of 0 or 1.
INTEGRAL_TOL: float = 1e-9


def _check(draft: DraftLaw) -> None:
    """Refuse, before enumerating p_draft, more than :data:`MAX_EDGES_DUAL` edge constraints."""
    _limits.check_tuples(
        draft,
        per_tuple=draft.n,
        limit=MAX_EDGES_DUAL,
        what="the w-vertex-cover dual (10)",
        unit="edges (n per draft tuple)",
        hint=_limits.instead(draft, "fast", "reduced"),
    )


def _edge_block(g: DraftGraph) -> sp.csr_matrix:
    E = len(g.edge_i)
    rows = np.concatenate([np.arange(E), np.arange(E)])
    cols = np.concatenate([g.edge_i, g.V + g.edge_k])
    return sp.csr_matrix((np.ones(2 * E), (rows, cols)), shape=(E, g.V + g.K))


def dual_constraint_matrix(draft: DraftLaw) -> sp.csr_matrix:
    r"""The constraint matrix of (10): edge rows, then identity rows for y and z.

    Columns are :math:`y_0, \dots, y_{V-1}` then :math:`z_{\bar i}` for the tuples of
    supp(p_draft) in sorted order.  The first E rows are the edges (i, ī), i ∈ ī, sorted by
    (i, tuple index), each with a 1 in column y_i and in column z_ī; the last V + K rows are the
    identity (the sign constraints y, z ≥ 0).  Totally unimodular (T3): a bipartite incidence
    matrix stacked on an identity.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> A = dual_constraint_matrix(WithReplacement([0.5, 0.5], 1))
    >>> A.toarray().astype(int).tolist()
    [[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    """
    _check(draft)
    g = draft_graph(draft)
    return sp.vstack([_edge_block(g), sp.identity(g.V + g.K, format="csr")], format="csr")


def w_vertex_cover(p: Any, draft: DraftLaw, integer: bool = False) -> dict[str, Any]:
    r"""Solve (10) with HiGHS: simplex LP (a vertex) or, with ``integer=True``, the 0/1 program.

    Parameters
    ----------
    p : (V,) array_like
        Target distribution.
    draft : DraftLaw
        The draft law.
    integer : bool
        Solve the integer program (HiGHS MIP, zero gap tolerance) instead of the LP.

    Returns
    -------
    dict
        ``value`` (the optimum), ``y`` (V,), ``z`` (K,), ``flow`` (the LP's row duals, a
        maximum b-matching, or None for the integer program), ``integral`` (every coordinate
        within :data:`INTEGRAL_TOL` of 0 or 1), ``graph`` and ``attempts``.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> out = w_vertex_cover([0.5, 0.5], WithReplacement([0.75, 0.25], 1))
    >>> round(out["value"], 12), out["y"].tolist(), out["integral"]
    (0.75, [1.0, 0.0], True)
    """
    pv = p.float if isinstance(p, Vector) else Vector(p, "p").float
    _check(draft)
    g = draft_graph(draft)
    E = len(g.edge_i)
    A = _edge_block(g)
    cost = np.concatenate([pv, g.w])
    lp = highs_lp(cost, A, np.ones(E), np.full(E, np.inf), maximize=False, integer=integer)
    h, tried = solve_highs_lp(lp, mip=integer)
    sol = h.getSolution()
    x = np.asarray(sol.col_value, dtype=np.float64)
    y, z = x[: g.V], x[g.V :]
    integral = bool(np.all(np.abs(x - np.round(x)) <= INTEGRAL_TOL))
    flow = None if integer else np.asarray(sol.row_dual, dtype=np.float64)
    return dict(
        value=float(h.getInfo().objective_function_value),
        y=y,
        z=z,
        flow=flow,
        integral=integral,
        graph=g,
        attempts=tried,
    )


@register("dual", accuracy=1e-9)
def _solve_dual(p, draft):
    """w-vertex-cover dual (10): simplex LP vertex and 0/1 integer program (T2); H = {y = 1}.

    The 0/1 program is solved by HiGHS only where the LP vertex is not integral (T2 says
    never); otherwise that vertex is its optimum (``info["attempts"]`` says which).
    """
    with timed() as t:
        lp = w_vertex_cover(p, draft)
        if lp["integral"]:
            # the LP's optimal vertex is a 0/1 point (T2): feasible for the 0/1 program and
            # optimal there, since the LP relaxes it.  HiGHS's branch and bound is not needed,
            # and it did not always end: at V = 180 (i.i.d. n = 2) its root bound stayed at
            # 0.13 below an incumbent of 0.67 for 10,000 nodes, then searched for 250 s.
            y01, z01 = np.round(lp["y"]), np.round(lp["z"])
            g0 = lp["graph"]
            if not np.all(y01[g0.edge_i] + z01[g0.edge_k] >= 1):  # pragma: no cover - T2
                raise RuntimeError("dual: the rounded LP vertex is not a cover")
            ip = {  # its value recomputed from the 0/1 point itself
                "value": float(np.dot(p.float, y01) + np.dot(g0.w, z01)),
                "y": y01,
                "attempts": ["0/1 program: the LP vertex is integral (T2), optimal"],
            }
        else:  # never seen (T2); the integer program itself
            ip = w_vertex_cover(p, draft, integer=True)
        g = lp["graph"]
        pv = p.float
        H = lp["y"] > 0.5
        value = subset_value(pv, g, H)
        # T2 guarantees the rounded vertex is optimal; the level sets are a safeguard
        H2, value2 = best_level_set(pv, g, lp["y"])
        if value2 < value:
            H, value = H2, value2
        # a lower bound: the LP's row duals form a b-matching (9), repaired to feasibility
        lower = float(repair_matching(pv, g, np.abs(lp["flow"]), upper=value).sum())
    gap = value - lower
    return dict(
        alpha=value,
        H=H,
        duals={"y": lp["y"], "z": lp["z"]},
        status=certified_status(gap),
        seconds=t.seconds,
        info={
            "lp": lp["value"],
            "ip": ip["value"],
            "integral": lp["integral"],
            "ip_y": ip["y"],
            "lower_bound": lower,
            "gap": gap,
            "tuples": g.tuples,
            "attempts": lp["attempts"] + ip["attempts"],
        },
    )
