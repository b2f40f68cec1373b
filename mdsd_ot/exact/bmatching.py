r"""The b-matching LP (9) on the bipartite draft graph (docs/reference.md, "b-matching (9)").

.. math::

   \max \sum_{(i, \bar i):\, i \in \bar i} C(i, \bar i) \quad \text{s.t.} \quad
   \sum_{\bar i \ni i} C(i, \bar i) \le p(i), \quad
   \sum_{i \in \bar i} C(i, \bar i) \le p_{draft}(\bar i), \quad C \ge 0 .

Its optimum is α* (T1).  The row duals (y, z) of the two blocks form an optimal w-vertex cover
(10); the best level set H = {i : y_i > θ} of y is an optimal set of the subset form (8)
(:func:`~mdsd_ot.exact._graph.best_level_set`).  A matching completes to a full coupling with
marginals exactly p and p_draft (Lemma 1, :func:`mdsd_ot.exact.plans.complete_plan`).

The graph, the HiGHS plumbing and the plan completion are shared with the other LP forms
(private siblings :mod:`._graph`, :mod:`._highs`; :mod:`.plans`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..drafts import DraftLaw, Vector
from ..methods import register, timed
from . import _limits
from ._graph import draft_graph
from ._highs import highs_lp, solve_highs_lp
from .plans import certified_status, certify_flows, complete_dense

__all__ = ["b_matching", "check_size", "MAX_EDGES"]

#: Largest number of graph edges (i, ī), counted as n per draft tuple, the LP (9) accepts:
#: about 15 s at 2^19 (i.i.d. n = 2 on a 2-core machine: V = 300, 2.5 s; V = 500, 13.5 s;
#: V = 1,000 over 60 s; the time grows about as E^1.7).
MAX_EDGES: int = 2**19


def check_size(draft: DraftLaw) -> int:
    """Refuse, before enumerating p_draft, a graph of more than :data:`MAX_EDGES` edges."""
    return _limits.check_tuples(
        draft,
        per_tuple=draft.n,
        limit=MAX_EDGES,
        what="the b-matching LP (9)",
        unit="edges (n per draft tuple)",
        hint=_limits.instead(draft, "fast", "reduced"),
    )


def b_matching(p: Any, draft: DraftLaw) -> dict[str, Any]:
    r"""Solve the b-matching LP (9) with HiGHS and round its dual to an optimal set H.

    Parameters
    ----------
    p : (V,) array_like
        Target distribution.
    draft : DraftLaw
        The draft law.

    Returns
    -------
    dict
        ``alpha`` (= P(H) + 1 − Q(H), certified by the LP value), ``H`` (bool mask),
        ``matched`` ({(i, tuple): mass}), ``y`` (V,), ``z`` (K,), ``graph``, ``objective``,
        ``gap`` and ``attempts``.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> out = b_matching([0.5, 0.5], WithReplacement([0.75, 0.25], 2))
    >>> round(out["alpha"], 12), out["H"].tolist()
    (0.9375, [True, False])
    """
    pv = p.float if isinstance(p, Vector) else Vector(p, "p").float
    check_size(draft)
    g = draft_graph(draft)
    V, K, E = g.V, g.K, len(g.edge_i)
    cols = np.arange(E)
    A = sp.csc_matrix(
        (np.ones(2 * E), (np.concatenate([g.edge_i, V + g.edge_k]), np.concatenate([cols, cols]))),
        shape=(V + K, E),
    )
    upper = np.concatenate([pv, g.w])
    lp = highs_lp(np.ones(E), A, np.full(V + K, -np.inf), upper, maximize=True)
    h, tried = solve_highs_lp(lp)
    sol = h.getSolution()
    duals = np.asarray(sol.row_dual, dtype=np.float64)
    y, z = duals[:V], duals[V:]
    H, value, x, lower = certify_flows(pv, g, np.asarray(sol.col_value), y)
    matched = {
        (int(i), tuple(int(v) for v in g.tuples[k])): float(m)
        for i, k, m in zip(g.edge_i, g.edge_k, x, strict=True)
        if m > 0
    }
    return dict(
        alpha=value,
        H=H,
        matched=matched,
        x=x,
        y=y,
        z=z,
        graph=g,
        objective=float(h.getInfo().objective_function_value),
        lower_bound=lower,
        gap=value - lower,
        attempts=tried,
    )


@register("bmatching", accuracy=1e-9)
def _solve_bmatching(p, draft):
    """b-matching LP (9) via highspy; plan by the Lemma 1 completion; H from the dual."""
    with timed() as t:
        out = b_matching(p, draft)
        g = out["graph"]
        pv = p.float
        # the full coupling (Lemma 1); above DENSE_PLAN_MAX use complete_plan on info["matched"]
        plan = g.dense_plan(complete_dense(pv, g, out["x"])) if g.wants_dense() else None
    status = certified_status(out["gap"])
    return dict(
        alpha=out["alpha"],
        H=out["H"],
        plan=plan,
        duals={"y": out["y"], "z": out["z"]},
        status=status,
        seconds=t.seconds,
        info={
            "objective": out["objective"],
            "lower_bound": out["lower_bound"],
            "gap": out["gap"],
            "tuples": g.tuples,
            "edges": len(g.edge_i),
            "matched": out["matched"],
            "attempts": out["attempts"],
        },
    )
