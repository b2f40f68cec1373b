r"""Max-flow / min-cut form of the MDSD transport problem (docs/reference.md, "Max-flow"; T1).

The network has a source, one node per token i (edge source → i of capacity p(i)), one node per
draft tuple ī (edge ī → sink of capacity p_draft(ī)), and an unbounded edge i → ī whenever
i ∈ ī.  Its maximum flow value is α*, and a minimum cut gives an optimal set:

.. math::

   \text{cut}(A) = \sum_{i \notin A} p(i) + \Pr[\bar i \cap A \neq \emptyset]
                 = P(H) + 1 - Q(H), \qquad H = \Sigma \setminus A,

where A is the set of tokens on the source side (every tuple touching A must lie on the source
side too, or an unbounded edge would cross the cut).  So H is the set of tokens on the **sink**
side, and α* = P(H) + 1 − Q(H) (subset selection (8)).

Two solvers, on the bipartite engines of :mod:`._flow` (shared with the set-reduced form of
:mod:`.reduced`, which puts token sets in place of tuples):

``"maxflow"`` (exact)
    networkx on integer capacities (:func:`~mdsd_ot.exact._flow.bipartite_maxflow_exact`).
    Float inputs are first converted exactly to rationals (``Vector.exact``,
    ``joint_items(exact=True)``), so the answer is the exact α* of the instance the floats
    denote.  ``alpha_exact`` is always set.
``"maxflow-scipy"`` (fast)
    ``scipy.sparse.csgraph.maximum_flow`` refined to the 2^-60 grid
    (:func:`~mdsd_ot.exact._flow.bipartite_maxflow_scipy`): the exact max flow of the floored
    instance.  The stated accuracy (per result, ``accuracy``) is ``(V + T)·2^-60`` for the
    grid, plus the bound of ``law.tuple_weights`` on the float error of the T tuple weights,
    plus 2^-52 for p (α* is 1-Lipschitz in every capacity); registered as ``1e-10``, which it
    stays below for every size the method accepts.

Both refuse, before enumerating p_draft, a network of more edges (n per draft tuple) than
:data:`MAX_EDGES_EXACT` / :data:`MAX_EDGES_SCIPY`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector
from ..drafts._sets import MAX_TUPLES
from ..methods import register, timed
from . import _limits
from ._flow import (
    FINE_BITS,
    SparsePlan,
    bipartite_maxflow_exact,
    bipartite_maxflow_scipy,
    to_float_down,
)

__all__ = ["tuple_flow", "MAX_EDGES_EXACT", "MAX_EDGES_SCIPY"]

#: Largest network (edges, counted as n per draft tuple) the exact networkx solver accepts:
#: 2^17 tuples at n = 3.
MAX_EDGES_EXACT: int = 3 * 2**17
#: Largest network the scipy solver accepts: the laws' tuple-table limit at n = 3.
MAX_EDGES_SCIPY: int = 3 * MAX_TUPLES


def _tuple_edges(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges (token, tuple index), one per distinct token of each tuple, sorted by (tuple, token)."""
    ts = np.sort(t, axis=1)
    first = np.ones(ts.shape, dtype=bool)
    first[:, 1:] = ts[:, 1:] != ts[:, :-1]
    return ts[first], np.repeat(np.arange(len(t)), t.shape[1])[first.ravel()]


def _pvector(p: Any, draft: DraftLaw) -> Vector:
    pv = p if isinstance(p, Vector) else Vector(p, "p")
    V_.check_on_vocabulary(pv.float, draft.V, "p")
    return pv


def tuple_flow(p: Any, draft: DraftLaw, *, exact: bool = True) -> dict[str, Any]:
    r"""Solve the tuple max-flow network; return the :class:`~mdsd_ot.result.Result` fields.

    Parameters
    ----------
    p : (V,) array_like or Vector
        Target distribution.
    draft : DraftLaw
        The draft law.
    exact : bool
        ``True``: networkx on exact integers (``alpha_exact`` set; float inputs are converted
        exactly).  ``False``: scipy with refinement (accuracy in ``accuracy``).

    Returns
    -------
    dict
        ``alpha``, ``alpha_exact`` (exact only), ``H`` (sink-side tokens), ``plan`` (a
        :class:`SparsePlan` of the flow on the (i, ī) edges: a b-matching, feasible for LP (9)),
        ``accuracy`` and ``info`` (sizes, ``cut_value`` = P(H) + 1 − Q(H)).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> r = tuple_flow(["1/2", "1/2"], WithReplacement(["3/4", "1/4"], 2))
    >>> r["alpha_exact"], r["H"].tolist()  # H = {0}: P(H) + 1 - Q(H) = 1/2 + 1 - 9/16
    (Fraction(15, 16), [True, False])
    """
    pv = _pvector(p, draft)
    n, Vv = draft.n, draft.V
    if exact:
        _limits.check_tuples(
            draft,
            per_tuple=n,
            limit=MAX_EDGES_EXACT,
            what="the exact max-flow (networkx; draft tuples)",
            hint=_limits.instead(draft, "reduced", "fast", "maxflow-scipy"),
            unit="edges",
        )
        items = draft.joint_items(exact=True)
        tuples = list(items)
        edges = [(i, r) for r, t in enumerate(tuples) for i in sorted(set(t))]
        value, flow, H = bipartite_maxflow_exact(pv.exact, list(items.values()), edges)
        P = sum((pv.exact[i] for i in np.flatnonzero(H)), Fraction(0))
        Q = sum((w for t, w in items.items() if all(H[i] for i in t)), Fraction(0))
        cut = P + 1 - Q
        if cut != value:  # pragma: no cover - max-flow min-cut theorem
            raise RuntimeError(f"max-flow {value} != cut value {cut}")
        keys = sorted(flow)
        plan = SparsePlan(
            [i for i, _ in keys],
            np.array([tuples[r] for _, r in keys], dtype=np.int64).reshape(len(keys), n),
            [flow[key] for key in keys],
            kind="tuple",
        )
        return dict(
            alpha=float(value),
            alpha_exact=value,
            H=H,
            plan=plan,
            accuracy=0.0,
            info={"tuples": len(tuples), "edges": len(edges), "cut_value": cut},
        )
    _limits.check_tuples(
        draft,
        per_tuple=n,
        limit=MAX_EDGES_SCIPY,
        what="the scipy max-flow (draft tuples)",
        hint=_limits.instead(draft, "reduced", "fast"),
        unit="edges",
    )
    t, w, werr = draft.tuple_weights(with_error=True)
    el, er = _tuple_edges(t)
    value, fl, H, info = bipartite_maxflow_scipy(pv.float, w, el, er)
    alpha = value / 2.0**FINE_BITS
    # alpha is 1-Lipschitz in the capacities (L1): grid floor + float error of w and of p
    accuracy = (Vv + len(w)) * 2.0**-FINE_BITS + werr + 2.0**-52
    P = float(pv.float[H].sum())
    Q = float(w[np.all(H[t], axis=1)].sum())
    pos = fl > 0
    mass = to_float_down(fl[pos])
    plan = SparsePlan(el[pos], t[er[pos]], mass, kind="tuple")
    info.update(tuples=len(w), edges=len(el), cut_value=P + 1.0 - Q)
    return dict(alpha=alpha, H=H, plan=plan, accuracy=accuracy, info=info)


@register("maxflow", accuracy=0.0, exact=True, set_plan=True)
def _solve_maxflow(p, draft):
    """networkx max-flow / min-cut on exact integers (rationals scaled by their denominator)."""
    with timed() as tm:
        out = tuple_flow(p, draft, exact=True)
    out["seconds"] = tm.seconds
    return out


@register("maxflow-scipy", accuracy=1e-10, exact=False, set_plan=True)
def _solve_maxflow_scipy(p, draft):
    """scipy.sparse.csgraph max-flow, int32 capacities refined to the 2^-60 grid."""
    with timed() as tm:
        out = tuple_flow(p, draft, exact=False)
    out["seconds"] = tm.seconds
    return out
