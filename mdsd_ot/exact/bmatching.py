r"""The b-matching LP (9) on the bipartite draft graph, and the Lemma 1 completion of a matching.

The draft graph has the tokens i ∈ Σ on one side, the tuples ī ∈ supp(p_draft) on the other, and
an edge (i, ī) whenever i ∈ ī (docs/reference.md, "b-matching (9)"):

.. math::

   \max \sum_{(i, \bar i):\, i \in \bar i} C(i, \bar i) \quad \text{s.t.} \quad
   \sum_{\bar i \ni i} C(i, \bar i) \le p(i), \quad
   \sum_{i \in \bar i} C(i, \bar i) \le p_{draft}(\bar i), \quad C \ge 0 .

Its optimum is α* (T1).  The row duals (y, z) of the two blocks form an optimal w-vertex cover
(10); the best level set H = {i : y_i > θ} of y is an optimal set of the subset form (8)
(see :func:`best_level_set`).  A matching completes to a full coupling with marginals exactly p
and p_draft by :func:`complete_plan` (Lemma 1).

This module also holds the pieces the LP forms share: the graph (:func:`draft_graph`), the
level-set rounding of a dual solution, a quiet HiGHS instance and a robust HiGHS LP solve.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import _validate as V_
from ..drafts import DraftLaw, Vector
from ..methods import register, timed

__all__ = [
    "DraftGraph",
    "draft_graph",
    "subset_value",
    "best_level_set",
    "complete_plan",
    "complete_dense",
    "repair_matching",
    "certify_flows",
    "certified_status",
    "b_matching",
    "new_highs",
    "solve_highs_lp",
    "MAX_EDGES",
    "DENSE_PLAN_MAX",
    "LP_TOL",
]

#: Largest number of graph edges (i, ī) the b-matching LP accepts.
MAX_EDGES: int = 2**22
#: Plans are returned as dense (V,)+(V,)*n arrays up to this many entries, else as a mapping.
DENSE_PLAN_MAX: int = 20_000_000
#: Primal and dual feasibility tolerance passed to HiGHS (its default 1e-7 leaves ~1e-7 errors).
LP_TOL: float = 1e-10
#: Largest certified gap (upper bound P(H)+1-Q(H) minus the LP's lower bound) accepted.
GAP_TOL: float = 1e-9


@dataclass(frozen=True)
class DraftGraph:
    """The bipartite draft graph over the support of p_draft.

    Attributes
    ----------
    V, n : int
        Vocabulary size and number of drafts.
    tuples : (K, n) int64 ndarray
        The tuples ī with p_draft(ī) > 0, in sorted order.
    w : (K,) float64 ndarray
        Their probabilities p_draft(ī).
    items : dict
        ``{tuple: probability}`` as given by ``draft.joint_items`` (floats or Fractions).
    edge_i, edge_k : (E,) int64 ndarray
        The edges: token ``edge_i[e]`` lies in tuple ``tuples[edge_k[e]]`` (each pair once).
    """

    V: int
    n: int
    tuples: np.ndarray
    w: np.ndarray
    items: dict
    edge_i: np.ndarray
    edge_k: np.ndarray

    @property
    def K(self) -> int:
        """Number of tuples in the support."""
        return len(self.w)

    def match_matrix(self) -> np.ndarray:
        """Dense (V, K) 0/1 matrix with 1 where token i lies in tuple k (the objective of (7))."""
        M = np.zeros((self.V, self.K))
        M[self.edge_i, self.edge_k] = 1.0
        return M

    def dense_plan(self, C: np.ndarray) -> np.ndarray:
        """Scatter a (V, K) plan into the dense (V,)+(V,)*n array (zero off the support)."""
        out = np.zeros((self.V, self.V**self.n))
        flat = np.ravel_multi_index(tuple(self.tuples.T), (self.V,) * self.n)
        out[:, flat] = C
        return out.reshape((self.V,) + (self.V,) * self.n)

    def wants_dense(self) -> bool:
        """Whether the dense plan fits under :data:`DENSE_PLAN_MAX` entries."""
        return self.V ** (self.n + 1) <= DENSE_PLAN_MAX


def support_bound(draft: DraftLaw) -> int:
    """An upper bound on |supp(p_draft)| known without enumerating it."""
    return int(draft.support_size_bound())


def draft_graph(draft: DraftLaw, exact: bool = False) -> DraftGraph:
    """Build the bipartite draft graph of ``draft`` over the support of p_draft.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> g = draft_graph(WithReplacement([0.5, 0.5], 2))
    >>> g.tuples.tolist(), g.w.tolist()
    ([[0, 0], [0, 1], [1, 0], [1, 1]], [0.25, 0.25, 0.25, 0.25])
    >>> list(zip(g.edge_i.tolist(), g.edge_k.tolist()))
    [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (1, 3)]
    """
    items = draft.joint_items(exact=exact)
    keys = sorted(items)
    V, n, K = draft.V, draft.n, len(keys)
    T = np.array(keys, dtype=np.int64).reshape(K, n)
    w = np.array([float(items[t]) for t in keys], dtype=np.float64)
    codes = (T * K + np.arange(K)[:, None]).ravel()
    codes = np.unique(codes)
    edge_i, edge_k = np.divmod(codes, K)
    order = np.lexsort((edge_k, edge_i))
    return DraftGraph(V, n, T, w, {t: items[t] for t in keys}, edge_i[order], edge_k[order])


def subset_value(p: np.ndarray, graph: DraftGraph, H: np.ndarray) -> float:
    r"""P(H) + 1 − Q(H) (subset form (8)) with Q(H) = Σ_{ī ⊆ H} p_draft(ī) summed over the graph."""
    H = np.asarray(H, dtype=bool)
    Q = float(graph.w[H[graph.tuples].all(axis=1)].sum()) if graph.K else 0.0
    return float(p[H].sum()) + 1.0 - Q


def best_level_set(
    p: np.ndarray, graph: DraftGraph, scores: np.ndarray, decimals: int = 6
) -> tuple[np.ndarray, float]:
    r"""The best prefix H of the tokens sorted by a dual score, in either direction.

    For an optimal dual (y, z) of (9) or (10) (or token potentials u of the transport LP (7),
    shifted so that min u = 0), every level set :math:`H_\theta = \{i : y_i > \theta\}`,
    θ ∈ [0, 1), is optimal for (8):

    .. math::

       \sum_i y_i p(i) + \sum_{\bar i} z_{\bar i}\, p_{draft}(\bar i)
       \ge \int_0^1 \big[P(H_\theta) + 1 - Q(H_\theta)\big]\, d\theta \ge \alpha^* ,

    because :math:`\int_0^1 1[y_i > \theta] d\theta \le y_i` and
    :math:`\int_0^1 1[\bar i \not\subseteq H_\theta] d\theta \le z_{\bar i}` (from
    :math:`y_i + z_{\bar i} \ge 1` for i ∈ ī).  The level sets are prefixes of the tokens sorted
    by y; all V + 1 prefixes of both orders (the sign convention of a solver's duals does not
    matter) are evaluated in O(nK + V log V).  Scores are rounded to ``decimals`` first so that
    solver noise does not split ties (basic duals of these LPs are integers).

    Returns
    -------
    H : (V,) bool ndarray
        The best prefix found.
    value : float
        Its value P(H) + 1 − Q(H).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> g = draft_graph(WithReplacement([0.75, 0.25], 1))
    >>> best_level_set(np.array([0.5, 0.5]), g, np.array([0.0, 1.0]))
    (array([ True, False]), 0.75)
    """
    s = np.round(np.asarray(scores, dtype=np.float64), decimals)
    V = graph.V
    best_H, best_val = None, np.inf
    for order in (np.argsort(-s, kind="stable"), np.argsort(s, kind="stable")):
        rank = np.empty(V, dtype=np.int64)
        rank[order] = np.arange(V)
        maxrank = rank[graph.tuples].max(axis=1) if graph.K else np.zeros(0, dtype=np.int64)
        Qk = np.concatenate([[0.0], np.cumsum(np.bincount(maxrank, graph.w, minlength=V))])
        Pk = np.concatenate([[0.0], np.cumsum(p[order])])
        vals = Pk + 1.0 - Qk
        k = int(np.argmin(vals))
        if vals[k] < best_val:
            best_val = float(vals[k])
            best_H = np.zeros(V, dtype=bool)
            best_H[order[:k]] = True
    return best_H, subset_value(p, graph, best_H)


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


# -- HiGHS plumbing shared by the LP forms -------------------------------------------------


def new_highs(tol: float = LP_TOL, **options: Any):
    """A silent HiGHS instance with primal/dual feasibility tolerances ``tol``.

    The core ``_Highs`` class is used where available: the Python wrapper's constructor enables
    callbacks before any option can be set, which prints HiGHS's banner on the C-level stdout
    (it would corrupt ``mdsd-ot crosscheck --json``).
    """
    import highspy

    core = getattr(getattr(highspy, "_core", None), "_Highs", None)
    h = core() if core is not None else highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", tol)
    h.setOptionValue("dual_feasibility_tolerance", tol)
    for k, v in options.items():
        h.setOptionValue(k, v)
    return h


def highs_lp(
    cost: np.ndarray,
    A: sp.spmatrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    *,
    maximize: bool,
    col_upper: np.ndarray | None = None,
    integer: bool = False,
):
    """A ``highspy.HighsLp`` with columns ≥ 0, a column-wise sparse matrix and row bounds."""
    import highspy

    A = sp.csc_matrix(A)
    m, ncol = A.shape
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = ncol, m
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_ = np.zeros(ncol)
    lp.col_upper_ = np.full(ncol, inf) if col_upper is None else np.asarray(col_upper, float)
    lp.row_lower_ = np.where(np.isfinite(row_lower), row_lower, -inf).astype(np.float64)
    lp.row_upper_ = np.where(np.isfinite(row_upper), row_upper, inf).astype(np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = ncol, m
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    if integer:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * ncol
    return lp


#: Option sets tried in turn: presolve can call a feasible transport LP infeasible on tiny
#: masses (HiGHS issue 2511), so the later attempts switch it off.
_ATTEMPTS: tuple[dict[str, Any], ...] = (
    {},
    {"presolve": "off"},
    {"presolve": "off", "solver": "ipm", "run_crossover": "on"},
)


#: For the 0/1 program presolve goes first *off*: with masses near 1e-10 HiGHS's MIP presolve
#: returned 0/1 points up to 1.6e-9 above the optimum (seen on seeded random instances).
#: Without presolve, HiGHS's branch and bound never finished on a 3-token instance with a
#: 1e-16 mass (tests/test_exact_lp.py::test_dual_ip_terminates_on_tiny_masses), and a
#: ``time_limit`` there could deadlock HiGHS's task scheduler on the next solve; a node limit
#: ends that attempt cleanly (a 0/1 vertex of (10) is found at the root otherwise, T2).
_MIP_ATTEMPTS: tuple[dict[str, Any], ...] = ({"presolve": "off", "mip_max_nodes": 10_000}, {})


def solve_highs_lp(lp, *, tol: float = LP_TOL, mip: bool = False, attempts=None, basis: Any = None):
    """Solve ``lp`` with HiGHS, retrying without presolve if it does not report optimal.

    Parameters
    ----------
    lp : highspy.HighsLp
        The model (see :func:`highs_lp`).
    tol : float
        Primal and dual feasibility tolerance.
    mip : bool
        Solve as an integer program (zero gap tolerances).
    attempts : sequence of dict, optional
        HiGHS option sets tried in turn (defaults per LP / MIP).
    basis : highspy.HighsBasis, optional
        A starting basis; when given, a first attempt runs the primal simplex from it.

    Returns
    -------
    h : highspy Highs
        The solved instance (read ``getSolution()``, ``getInfo()``).
    tried : list of str
        The status of each attempt (for ``Result.info``).

    Raises
    ------
    RuntimeError
        When no attempt reports optimal (never seen on valid input; tested down to 1e-12).
    """
    import highspy

    if attempts is None:
        attempts = _MIP_ATTEMPTS if mip else _ATTEMPTS
    runs = [(dict(opts), None) for opts in attempts]
    if basis is not None:
        runs.insert(0, ({"simplex_strategy": 4}, basis))
    tried = []
    for opts, start in runs:
        extra = dict(opts)
        if mip:
            extra.pop("solver", None)
            extra.pop("run_crossover", None)
            extra.update(mip_rel_gap=0.0, mip_abs_gap=1e-13, mip_feasibility_tolerance=tol)
        h = new_highs(tol, **extra)
        h.passModel(lp)
        if start is not None:
            h.setBasis(start)
        h.run()
        status = h.getModelStatus()
        label = ("warm " if start is not None else "") + (str(opts) if opts else "default")
        tried.append(f"{label}: {h.modelStatusToString(status)}")
        if status == highspy.HighsModelStatus.kOptimal:
            return h, tried
    raise RuntimeError(f"HiGHS found no optimal solution; attempts: {'; '.join(tried)}")


# -- the b-matching LP (9) ---------------------------------------------------------------


def check_graph_size(draft: DraftLaw, limit: int, what: str, per_tuple: int | None = None) -> None:
    """Refuse before enumerating p_draft when the LP would exceed ``limit`` entries."""
    per = draft.n if per_tuple is None else per_tuple
    V_.check_size(
        support_bound(draft) * per,
        limit,
        what,
        "use method='fast' (q-convex laws) or method='reduced' (the set-reduced flow)",
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
    check_graph_size(draft, MAX_EDGES, "the b-matching LP (9)")
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
