r"""Plans: the Lemma 1 completion of a matching, the repair of LP flows, and optimal couplings.

A b-matching M (LP (9): mass only on pairs i ∈ ī, marginals at most p and p_draft) completes to
a full coupling C of p and p_draft with the same value (Lemma 1, docs/reference.md):

.. math::

   C(i, \bar i) = M(i, \bar i) + r_i\, s_{\bar i} / R, \qquad
   R = \sum_{\bar i} s_{\bar i} = \sum_i r_i ,

with the row and column residuals r, s (:func:`complete_plan` in any arithmetic,
:func:`complete_dense` in float64).  LP solvers miss the marginals by ~1e-9, so their flows are
first repaired into a feasible (near-)maximum b-matching (:func:`repair_matching`), which with
the best level set of the dual gives a two-sided certificate (:func:`certify_flows`).
:func:`optimal_plan` builds a full optimal coupling and an optimal set from the max-flow
(:mod:`.maxflow`); :func:`mdsd_ot.exact.certificate.certify` checks such a pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .. import _validate as V_
from ..drafts import DraftLaw, Vector
from . import _limits
from ._graph import DraftGraph, best_level_set
from .maxflow import tuple_flow

__all__ = [
    "complete_plan",
    "complete_dense",
    "repair_matching",
    "certify_flows",
    "certified_status",
    "optimal_plan",
    "OptimalPlan",
    "GAP_TOL",
    "DENSE_MAX",
]

#: Largest certified gap (upper bound P(H)+1-Q(H) minus the LP's lower bound) accepted.
GAP_TOL: float = 1e-9
#: Largest dense plan (V^{n+1} entries) :func:`optimal_plan` builds (object arrays when exact).
DENSE_MAX: dict[bool, int] = {True: 2**20, False: 2**26}


def complete_plan(
    p: Sequence[Any] | np.ndarray,
    items: Mapping[tuple[int, ...], Any],
    matched: Mapping[tuple[int, tuple[int, ...]], Any],
) -> dict[tuple[int, tuple[int, ...]], Any]:
    r"""Complete a b-matching to a full coupling of p and p_draft (Lemma 1).

    With row residuals :math:`r_i = p(i) - \sum_{\bar i} M(i, \bar i)`, column residuals
    :math:`s_{\bar i} = p_{draft}(\bar i) - \sum_i M(i, \bar i)` and :math:`R = \sum_{\bar i}
    s_{\bar i}` (= Σ r_i, the unmatched mass),

    .. math::

       C(i, \bar i) = M(i, \bar i) + r_i\, s_{\bar i} / R

    has marginals exactly p and p_draft.  When M is a maximum b-matching, no pair with
    r_i > 0 and s_ī > 0 is an edge (else M could grow), so the completion adds mass only on
    non-matching pairs and the plan's objective equals the matching's value, α*.

    Works in any arithmetic: with Fractions the marginals are exact; with floats they hold to
    rounding (residuals in [−1e-12, 0) are read as 0).

    Parameters
    ----------
    p : (V,) sequence
        The target distribution.
    items : dict
        ``{tuple: p_draft(tuple)}`` (e.g. ``draft.joint_items()``).
    matched : dict
        ``{(i, tuple): mass}``, a feasible b-matching (row sums ≤ p, column sums ≤ p_draft).

    Returns
    -------
    dict
        ``{(i, tuple): mass}``, the coupling (pairs with zero mass omitted).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> items = {(0,): F(1, 2), (1,): F(1, 2)}
    >>> plan = complete_plan([F(3, 4), F(1, 4)], items, {(0, (0,)): F(1, 2), (1, (1,)): F(1, 4)})
    >>> plan[(0, (1,))], sum(plan.values())
    (Fraction(1, 4), Fraction(1, 1))
    """
    V = len(p)
    r = list(p)
    s = dict(items)
    plan: dict[tuple[int, tuple[int, ...]], Any] = {}
    for (i, t), m in matched.items():
        if m == 0:
            continue
        if not 0 <= i < V or t not in s:
            raise ValueError(f"matched: pair {(i, t)!r} is not a token/tuple of this instance")
        plan[(i, t)] = m
        r[i] = r[i] - m
        s[t] = s[t] - m

    def clean(x: Any, what: str) -> Any:
        if x < 0:
            if isinstance(x, float | np.floating) and x > -1e-12:
                return 0.0
            raise ValueError(f"matched: exceeds its marginal {what} by {-x}; not a b-matching")
        return x

    r = [clean(x, f"p[{i}]") for i, x in enumerate(r)]
    s = {t: clean(x, f"p_draft{t}") for t, x in s.items()}
    zero = r[0] - r[0] if V else 0
    R = sum(s.values(), zero)
    if R == 0:
        return plan
    rows = [i for i in range(V) if r[i] > 0]
    cols = [t for t, x in s.items() if x > 0]
    for i in rows:
        ri = r[i] / R
        for t in cols:
            plan[(i, t)] = plan.get((i, t), zero) + ri * s[t]
    return plan


def complete_dense(p: np.ndarray, graph: DraftGraph, x: np.ndarray) -> np.ndarray:
    r"""The Lemma 1 completion of :func:`complete_plan` in float64 on the (V, K) grid.

    ``x`` holds the edge flows (aligned with ``graph.edge_i``, ``graph.edge_k``); returns
    :math:`C = X + r s^\top / \sum_k s_k` with the row and column residuals r, s (clipped at 0).
    """
    X = np.zeros((graph.V, graph.K))
    X[graph.edge_i, graph.edge_k] = x
    r = np.clip(p - X.sum(axis=1), 0.0, None)
    s = np.clip(graph.w - X.sum(axis=0), 0.0, None)
    R = s.sum()
    return X + np.outer(r, s) / R if R > 0 else X


def _shrink(p: np.ndarray, graph: DraftGraph, x: np.ndarray) -> np.ndarray:
    """Scale edge flows down so that no token or tuple receives more than its mass."""
    x = np.clip(np.asarray(x, dtype=np.float64), 0.0, None)
    for idx, cap in ((graph.edge_i, p), (graph.edge_k, graph.w)):
        load = np.bincount(idx, x, minlength=len(cap))
        scale = np.where(load > cap, cap / np.where(load > 0, load, 1.0), 1.0)
        x = x * scale[idx]
    return x


#: Residual capacities are quantised to multiples of (residual mass) / 2**_QBITS.
_QBITS = 30


def repair_matching(
    p: np.ndarray, graph: DraftGraph, x: np.ndarray, upper: float | None = None
) -> np.ndarray:
    r"""Turn approximate edge flows into a feasible, (near-)maximum b-matching (9).

    LP solvers return flows that miss the marginals by up to ~1e-9.  The flows are first
    shrunk to feasibility (row sums ≤ p, column sums ≤ p_draft), then augmented by a maximum
    flow in the residual network — source → i (capacity r_i), i → ī for i ∈ ī, ī → i
    (cancelling existing flow), ī → sink (capacity s_ī) — computed by
    ``scipy.sparse.csgraph.maximum_flow`` (int32 capacities) on capacities quantised down to
    integer multiples of q = B / 2**30, where B bounds what can still be pushed: B = upper −
    Σ x when an upper bound on α* is given (e.g. P(H) + 1 − Q(H)), else the residual mass.
    Capacities are capped at B, which never binds.  Rounding them down keeps the result
    feasible, so its total is a rigorous lower bound on α* (up to float rounding), short of the
    optimum by at most (V + K) q (about 1e-16 for B near 1e-9).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> from mdsd_ot.exact import draft_graph
    >>> g = draft_graph(WithReplacement([0.5, 0.5], 1))
    >>> repair_matching(np.array([0.5, 0.5]), g, np.array([0.25, 0.0])).tolist()
    [0.5, 0.5]
    """
    from scipy.sparse.csgraph import maximum_flow

    x = _shrink(p, graph, x)
    V, K, E = graph.V, graph.K, len(graph.edge_i)
    r = np.clip(p - np.bincount(graph.edge_i, x, minlength=V), 0.0, None)
    s = np.clip(graph.w - np.bincount(graph.edge_k, x, minlength=K), 0.0, None)
    budget = min(float(r.sum()), float(s.sum()))
    if upper is not None:
        budget = min(budget, 2.0 * (upper - float(x.sum())))
    if E == 0 or budget <= 0.0:
        return x
    q = budget / 2.0**_QBITS
    big = 2**_QBITS
    src, sink = V + K, V + K + 1
    tok, tup = graph.edge_i, V + graph.edge_k
    rows = np.concatenate([np.full(V, src), tok, tup, np.arange(V, V + K)])
    cols = np.concatenate([np.arange(V), tup, tok, np.full(K, sink)])
    caps = np.concatenate(
        [
            np.minimum(np.floor(r / q), big),
            np.full(E, big),
            np.minimum(np.floor(x / q), big),
            np.minimum(np.floor(s / q), big),
        ]
    ).astype(np.int32)
    keep = caps > 0
    G = sp.csr_matrix((caps[keep], (rows[keep], cols[keep])), shape=(V + K + 2, V + K + 2))
    res = maximum_flow(G, src, sink)
    if res.flow_value <= 0:
        return x
    F = sp.csr_matrix(res.flow)
    delta = np.asarray(F[tok, tup]).ravel().astype(np.float64) * q
    return _shrink(p, graph, x + delta)


def certified_status(gap: float) -> str:
    """``"optimal"`` when the certified gap is within :data:`GAP_TOL`, else says how large."""
    return "optimal" if gap <= GAP_TOL else f"optimal (certified gap {gap:.2g})"


def certify_flows(
    p: np.ndarray, graph: DraftGraph, x: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, float, np.ndarray, float]:
    r"""Two-sided certificate of an LP solution: H from the dual, a matching from the primal.

    Returns ``(H, value, x_repaired, lower)``: H is the best level set of ``scores``
    (:func:`best_level_set`) with value = P(H) + 1 − Q(H) ≥ α*, and ``x_repaired`` is a
    feasible b-matching (:func:`repair_matching`) of total ``lower`` ≤ α*.  So
    ``value − lower`` bounds the error of reporting ``value``.
    """
    H, value = best_level_set(p, graph, scores)
    xr = repair_matching(p, graph, x, upper=value)
    return H, value, xr, float(xr.sum())


class OptimalPlan(NamedTuple):
    """A full optimal coupling, an optimal set, and α* (see :func:`optimal_plan`)."""

    plan: np.ndarray
    H: np.ndarray
    alpha: Any


def optimal_plan(p: Any, draft: DraftLaw, exact: bool | None = None) -> OptimalPlan:
    r"""A full coupling C of p and p_draft that attains α*, with an optimal set H.

    The max-flow of :mod:`.maxflow` gives a maximum b-matching M (value α*) and, from its
    minimum cut, H.  Lemma 1 completes M with the unmatched mass,

    .. math::

       C(i, \bar i) = M(i, \bar i) + r_i\, s_{\bar i} / (1 - \alpha^*),

    (r, s the row and column residuals; :func:`complete_plan`), so the marginals
    are exactly p and p_draft and the value stays α*.

    Parameters
    ----------
    p : (V,) array_like or Vector
        Target distribution.
    draft : DraftLaw
        The draft law.
    exact : bool, optional
        Fractions (object array) via the exact networkx max-flow; default when p and the law
        are rational.  ``False``: float64 via the scipy max-flow (marginals to rounding).

    Returns
    -------
    OptimalPlan
        ``plan`` (dense ``(V,)+(V,)*n``), ``H`` (bool mask), ``alpha`` (Fraction when exact).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> d = WithReplacement(["3/4", "1/4"], 2)
    >>> C, H, a = optimal_plan(["1/2", "1/2"], d)
    >>> from mdsd_ot.exact.certificate import certify
    >>> a, C.shape, certify(["1/2", "1/2"], d, C, H).ok
    (Fraction(15, 16), (2, 2, 2), True)
    """
    pv = p if isinstance(p, Vector) else Vector(p, "p")
    V, n = draft.V, draft.n
    V_.check_on_vocabulary(pv.float, V, "p")
    if exact is None:
        exact = pv.rational and draft.rational
    _limits.check_power(
        V,
        n + 1,
        DENSE_MAX[bool(exact)],
        "a dense optimal plan",
        "use the plan of method='maxflow' or 'reduced' (sparse, a b-matching) instead",
        "entries",
    )
    r = tuple_flow(pv, draft, exact=bool(exact))
    if exact:
        items = draft.joint_items(exact=True)
        full = complete_plan(pv.exact, items, dict(r["plan"]))
        C = np.full((V,) + (V,) * n, Fraction(0), dtype=object)
        for (i, t), m in full.items():
            C[(i, *t)] = m
        return OptimalPlan(C, r["H"], r["alpha_exact"])
    t, w = draft.tuple_weights()
    X = np.zeros((V,) + (V,) * n)
    plan = r["plan"]
    X[(plan.token, *plan.members.T)] = plan.mass
    J = np.zeros((V,) * n)
    J[tuple(t.T)] = w
    axes = tuple(range(1, n + 1))
    rres = np.clip(pv.float - X.sum(axis=axes), 0.0, None)
    sres = np.clip(J - X.sum(axis=0), 0.0, None)
    R = float(sres.sum())
    C = X + np.multiply.outer(rres, sres) / R if R > 0 else X
    return OptimalPlan(C, r["H"], r["alpha"])
