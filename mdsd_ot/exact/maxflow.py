r"""Max-flow / min-cut form of the MDSD transport problem (theory.md, "Max-flow"; T1).

The network has a source, one node per token i (edge source → i of capacity p(i)), one node per
draft tuple ī (edge ī → sink of capacity p_draft(ī)), and an unbounded edge i → ī whenever
i ∈ ī.  Its maximum flow value is α*, and a minimum cut gives an optimal set:

.. math::

   \text{cut}(A) = \sum_{i \notin A} p(i) + \Pr[\bar i \cap A \neq \emptyset]
                 = P(H) + 1 - Q(H), \qquad H = \Sigma \setminus A,

where A is the set of tokens on the source side (every tuple touching A must lie on the source
side too, or an unbounded edge would cross the cut).  So H is the set of tokens on the **sink**
side, and α* = P(H) + 1 − Q(H) (subset selection (8)).

Two solvers share the bipartite engines below (the set-reduced form of :mod:`.reduced` reuses
them with token sets in place of tuples):

``"maxflow"`` (exact)
    networkx ``preflow_push`` on integer capacities: the rational capacities are multiplied by
    their common denominator, so every step is exact.  Float inputs are first converted exactly
    to rationals (``Vector.exact``, ``joint_items(exact=True)``), so the answer is the exact α*
    of the instance the floats denote.  ``alpha_exact`` is always set.
``"maxflow-scipy"`` (fast)
    ``scipy.sparse.csgraph.maximum_flow`` accepts int32 capacities only (larger values are
    silently truncated; checked on scipy 1.17), so the capacities are quantised.  A single
    quantisation at scale 2^30 would cost up to (V + T)·2^-30 on α*; instead the solver
    refines: capacities are fixed on the grid 2^-60 (floor), and passes at units 2^-30, then
    finer, each solve the max-flow of the residual network quantised at the current unit
    (residual capacities capped at 2^30 units, which does not change its max-flow value).  After
    each pass the capacity of the cut found bounds what is left exactly; the loop stops when
    that bound is 0, so the result is the exact max flow of the 2^-60-grid instance.  The stated
    accuracy (per result) is ``(V + T)·2^-60`` for the grid plus the float error of the tuple
    weights, ``4(n + 1)·2^-53``; registered as ``1e-10`` for every size the method accepts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector
from ._common import register, timed

__all__ = [
    "SparsePlan",
    "bipartite_maxflow_exact",
    "bipartite_maxflow_scipy",
    "tuple_weights",
    "tuple_flow",
    "FINE_BITS",
    "MAX_TUPLES_EXACT",
    "MAX_TUPLES_SCIPY",
]

#: Capacities of the fast solver are fixed on the grid 2^-FINE_BITS (floor).
FINE_BITS: int = 60
#: scipy's maximum_flow works in int32: every quantised capacity is capped at 2^30.
_CAP: int = 2**30
#: Stand-in for the unbounded token → tuple edges on the fine grid (above any cut of capacity <= 2).
_INF: int = 2**62
#: Largest number of draft tuples the exact networkx solver accepts.
MAX_TUPLES_EXACT: int = 2**17
#: Largest number of draft tuples the scipy solver accepts.
MAX_TUPLES_SCIPY: int = 2**22


# --------------------------------------------------------------------------------------------
# A plan stored as arrays, read as a mapping {(i, key): mass}
# --------------------------------------------------------------------------------------------
class SparsePlan(Mapping):
    """The flow on the token → node edges, as a read-only mapping ``{(i, key): mass}``.

    ``key`` is the draft tuple (``kind="tuple"``) or the frozenset of drafted tokens
    (``kind="set"``).  Only edges with positive flow are stored.  The arrays are kept (``token``,
    ``members`` padded with -1, ``mass``) and the dict is built only when first needed, so large
    set-reduced plans stay cheap.

    Examples
    --------
    >>> plan = SparsePlan([0, 1], np.array([[0, 1], [1, -1]]), [0.25, 0.5], kind="set")
    >>> plan[(1, frozenset({1}))]
    0.5
    >>> sorted(plan.token_sums().items())
    [(0, 0.25), (1, 0.5)]
    """

    def __init__(self, token: Sequence[int], members: np.ndarray, mass: Sequence[Any], kind: str):
        if kind not in ("tuple", "set"):
            raise ValueError(f"kind: must be 'tuple' or 'set', got {kind!r}")
        self.token = np.asarray(token, dtype=np.int64)
        self.members = np.asarray(members, dtype=np.int64).reshape(len(self.token), -1)
        self.mass = mass if isinstance(mass, np.ndarray) else list(mass)
        self.kind = kind
        self._dict: dict | None = None

    def _key(self, row: np.ndarray) -> tuple[int, ...] | frozenset:
        vals = [int(v) for v in row if v >= 0]
        return tuple(vals) if self.kind == "tuple" else frozenset(vals)

    def _as_dict(self) -> dict:
        if self._dict is None:
            m = self.mass
            self._dict = {
                (int(i), self._key(row)): (float(m[k]) if isinstance(m, np.ndarray) else m[k])
                for k, (i, row) in enumerate(zip(self.token, self.members, strict=True))
            }
        return self._dict

    def __getitem__(self, key):
        return self._as_dict()[key]

    def __iter__(self) -> Iterator:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self.token)

    def total(self):
        """Σ mass (the flow value)."""
        m = self.mass
        return float(np.sum(m)) if isinstance(m, np.ndarray) else sum(m, Fraction(0))

    def token_sums(self) -> dict[int, Any]:
        """{i: Σ_key mass(i, key)} over the tokens with positive flow."""
        out: dict[int, Any] = {}
        for k, i in enumerate(self.token):
            v = float(self.mass[k]) if isinstance(self.mass, np.ndarray) else self.mass[k]
            out[int(i)] = out.get(int(i), 0) + v
        return out

    def __repr__(self) -> str:
        return f"SparsePlan(kind={self.kind!r}, edges={len(self)}, total={float(self.total()):.6g})"


# --------------------------------------------------------------------------------------------
# Bipartite engines: left nodes (tokens) with capacities, right nodes with capacities, edges
# --------------------------------------------------------------------------------------------
def bipartite_maxflow_exact(
    left: Sequence[Fraction], right: Sequence[Fraction], edges: Iterable[tuple[int, int]]
) -> tuple[Fraction, dict[tuple[int, int], Fraction], np.ndarray]:
    r"""Exact max-flow of source → left (cap ``left``) → right (unbounded) → sink (cap ``right``).

    The capacities are scaled to integers by their common denominator D and solved with
    networkx's ``preflow_push`` (exact integer arithmetic), then divided by D.

    Returns
    -------
    value : Fraction
        The max-flow value.
    flow : dict
        ``{(left index, right index): Fraction}`` for the edges with positive flow.
    sink_side : (len(left),) bool ndarray
        Left nodes not reachable from the source in the final residual network: H of the cut
        :math:`\text{value} = \sum_{i\in H} \text{left}_i + \sum_{r \text{ touching } A}
        \text{right}_r` with A the complement.

    Examples
    --------
    >>> v, f, H = bipartite_maxflow_exact([Fraction(1, 2)] * 2, [Fraction(1)], [(0, 0)])
    >>> v, H.tolist()
    (Fraction(1, 2), [False, True])
    """
    import networkx as nx
    from networkx.algorithms.flow import preflow_push

    left = [Fraction(x) for x in left]
    right = [Fraction(x) for x in right]
    L, M = len(left), len(right)
    D = 1
    for x in (*left, *right):
        D = math.lcm(D, x.denominator)
    s, k = L + M, L + M + 1
    G = nx.DiGraph()
    G.add_nodes_from(range(L + M + 2))
    for i, c in enumerate(left):
        if c:
            G.add_edge(s, i, capacity=c.numerator * (D // c.denominator))
    for r, c in enumerate(right):
        if c:
            G.add_edge(L + r, k, capacity=c.numerator * (D // c.denominator))
    for i, r in edges:
        G.add_edge(int(i), L + int(r))  # no capacity attribute: unbounded
    R = preflow_push(G, s, k, value_only=False)
    value = Fraction(R.graph["flow_value"], D)
    flow = {}
    for i in range(L):
        for v, d in R[i].items():
            if L <= v < L + M and d["flow"] > 0:
                flow[(i, v - L)] = Fraction(d["flow"], D)
    # source side: reachable from s through edges with residual capacity (flow < capacity)
    seen = {s}
    stack = [s]
    while stack:
        u = stack.pop()
        for v, d in R[u].items():
            if v not in seen and d["flow"] < d["capacity"]:
                seen.add(v)
                stack.append(v)
    sink_side = np.array([i not in seen for i in range(L)], dtype=bool)
    return value, flow, sink_side


def _fine(x: np.ndarray) -> np.ndarray:
    """floor(x · 2^FINE_BITS) as int64 (exact: scaling by a power of two is exact in floats)."""
    return np.floor(np.asarray(x, dtype=np.float64) * 2.0**FINE_BITS).astype(np.int64)


def bipartite_maxflow_scipy(
    left: np.ndarray, right: np.ndarray, edge_left: np.ndarray, edge_right: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray, dict[str, Any]]:
    r"""Max-flow of the same bipartite network with ``scipy.sparse.csgraph.maximum_flow``.

    Capacities are floored onto the grid 2^-60 and the flow is found by refinement passes at
    units 2^-30, ..., 1 (in grid units) on the residual network (see the module docstring), so
    the result is the **exact** max flow of the floored instance.  The floored instance differs
    from the float one by less than 2^-60 per capacity, so

    .. math::

       0 \le \alpha - \text{value}\cdot 2^{-60} < (|\text{left}| + |\text{right}|)\, 2^{-60}.

    Returns
    -------
    value : int
        The max-flow value in units of 2^-60.
    flow : (E,) int64 ndarray
        The flow on each edge (edge_left[e] → edge_right[e]) in units of 2^-60.
    sink_side : (len(left),) bool ndarray
        Left nodes not reachable from the source in the final residual network (H).
    info : dict
        ``passes`` and the ``units`` used.

    Examples
    --------
    >>> v, f, H, info = bipartite_maxflow_scipy(
    ...     np.array([0.5, 0.5]), np.array([1.0]), np.array([0]), np.array([0]))
    >>> v / 2**60, H.tolist()
    (0.5, [False, True])
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    L, M, E = len(left), len(right), len(edge_left)
    N = L + M + 2
    s, k = L + M, L + M + 1
    # every edge (u -> v) with its fine capacity; the reverse entry (v -> u) carries the flow
    u = np.concatenate([np.full(L, s), np.asarray(edge_left, np.int64), L + np.arange(M)])
    v = np.concatenate([np.arange(L), L + np.asarray(edge_right, np.int64), np.full(M, k)])
    c = np.concatenate([_fine(left), np.full(E, _INF, np.int64), _fine(right)])
    f = np.zeros_like(c)
    rows = np.concatenate([u, v])
    cols = np.concatenate([v, u])
    order = np.lexsort((cols, rows))
    indices = cols[order].astype(np.int32)
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=N), out=indptr[1:])
    # position of each entry in CSR order
    indptr32 = indptr.astype(np.int32)
    pos = np.empty_like(order)
    pos[order] = np.arange(len(order))
    nE = len(u)
    unit = 2 ** (FINE_BITS - 30)
    units = []
    while True:
        units.append(unit)
        fw = np.minimum((c - f) // unit, _CAP)
        bw = np.minimum(f // unit, _CAP)
        data = np.concatenate([fw, bw])[order].astype(np.int32)
        g = sp.csr_matrix((data, indices, indptr32), shape=(N, N))
        res = maximum_flow(g, s, k)
        F = res.flow.tocsr()
        if F.nnz == g.nnz and np.array_equal(F.indptr, g.indptr) and np.array_equal(
            F.indices, g.indices
        ):
            fdata = np.asarray(F.data, dtype=np.int64)
        else:  # pragma: no cover - scipy changed the layout of the returned flow
            fdata = np.asarray(F[rows[order], cols[order]], dtype=np.int64).ravel()
        d = fdata[pos[:nE]]  # net flow added on each edge u -> v, in units
        f = f + d * unit
        resid = data.astype(np.int64) - fdata
        R = sp.csr_matrix(
            ((resid > 0).astype(np.int8), indices, indptr32), shape=(N, N), copy=True
        )
        R.eliminate_zeros()  # in place: hence copy=True above (indices is shared)
        reach = np.zeros(N, dtype=bool)
        reach[breadth_first_order(R, s, directed=True, return_predecessors=False)] = True
        cross_f = reach[u] & ~reach[v]
        cross_b = reach[v] & ~reach[u]
        # exact capacity left across the cut found: an upper bound on the flow still missing
        gap = int((c - f)[cross_f].sum()) + int(f[cross_b].sum())
        if gap == 0 or unit == 1:
            break
        unit = 1 if gap <= _CAP else 1 << math.ceil(math.log2(gap / _CAP))
    value = int(f[:L].sum())
    info = {"passes": len(units), "units_log2": [int(x).bit_length() - 1 for x in units]}
    return value, f[L : L + E], ~reach[:L], info


# --------------------------------------------------------------------------------------------
# Draft tuples
# --------------------------------------------------------------------------------------------
def _grid(sup: Sequence[int], n: int) -> np.ndarray:
    """All tuples over ``sup`` of length n as an (|sup|^n, n) int64 array (lexicographic)."""
    s = np.asarray(sup, dtype=np.int64)
    if n == 0 or s.size == 0:
        return np.zeros((0, n), dtype=np.int64)
    idx = np.indices((len(s),) * n).reshape(n, -1).T
    return s[idx]


def _distinct_rows(t: np.ndarray) -> np.ndarray:
    """Mask of the rows of t whose entries are pairwise distinct."""
    ok = np.ones(len(t), dtype=bool)
    for a in range(t.shape[1]):
        for b in range(a):
            ok &= t[:, a] != t[:, b]
    return ok


def tuple_weights(draft: DraftLaw) -> tuple[np.ndarray, np.ndarray]:
    r"""The support of p_draft in floats: (tuples (T, n) int64, weights (T,) float64).

    Vectorised for the with-replacement, product, without-replacement and conditional-Poisson
    laws (:math:`\prod_j q(\bar i_j)`, :math:`\prod_j q_j(\bar i_j)`,
    :math:`\prod_j q(\bar i_j)/(1 - \sum_{l<j} q(\bar i_l))`, :math:`\prod_j q(\bar i_j)/(n!\,e_n(q))`);
    other laws go through ``joint_items``.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> t, w = tuple_weights(WithReplacement([0.5, 0.5], 2))
    >>> t.tolist(), w.tolist()
    ([[0, 0], [0, 1], [1, 0], [1, 1]], [0.25, 0.25, 0.25, 0.25])
    """
    n = draft.n
    scheme = draft.scheme
    if scheme in ("with", "without", "conditional-poisson", "product"):
        qs = draft.qs if scheme == "product" else [draft.q] * n
        sup = np.flatnonzero(np.any(np.stack(qs) > 0, axis=0))
        V_.check_size(len(sup) ** n, MAX_TUPLES_SCIPY, f"the draft tuples of {draft!r}", _HINT)
        t = _grid(sup, n)
        if scheme in ("without", "conditional-poisson"):
            t = t[_distinct_rows(t)]
        w = np.ones(len(t))
        if scheme == "without":
            q = draft.q
            used = np.zeros(len(t))
            for j in range(n):
                qj = q[t[:, j]]
                w *= qj / np.maximum(1.0 - used, qj)
                used += qj
        else:
            for j in range(n):
                w *= qs[j][t[:, j]]
            if scheme == "conditional-poisson":
                from ..drafts import elementary_symmetric

                en = elementary_symmetric([float(x) for x in draft.q], n)[n]
                w /= en * math.factorial(n)
        keep = w > 0
        return t[keep], w[keep]
    items = draft.joint_items(exact=False)
    V_.check_size(len(items), MAX_TUPLES_SCIPY, f"the draft tuples of {draft!r}", _HINT)
    t = np.array(list(items.keys()), dtype=np.int64).reshape(len(items), n)
    return t, np.array([float(x) for x in items.values()])


_HINT = "use method='reduced' (token sets instead of tuples) or method='fast'"


def _tuple_edges(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges (token, tuple index) for each distinct token of each tuple."""
    el, er = [], []
    ar = np.arange(len(t))
    for j in range(t.shape[1]):
        first = np.ones(len(t), dtype=bool)
        for l in range(j):
            first &= t[:, j] != t[:, l]
        el.append(t[first, j])
        er.append(ar[first])
    return np.concatenate(el), np.concatenate(er)


def _pvector(p: Any, draft: DraftLaw) -> Vector:
    pv = p if isinstance(p, Vector) else Vector(p, "p")
    V_.check_same_length(pv.float, np.empty(draft.V), "p", "draft (its vocabulary)")
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
    >>> r["alpha_exact"], r["H"].tolist()
    (Fraction(15, 16), [False, True])
    """
    pv = _pvector(p, draft)
    n, Vv = draft.n, draft.V
    if exact:
        items = draft.joint_items(exact=True)
        V_.check_size(len(items), MAX_TUPLES_EXACT, "the exact max-flow (networkx)", _HINT + " or 'maxflow-scipy'")
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
    t, w = tuple_weights(draft)
    el, er = _tuple_edges(t)
    value, fl, H, info = bipartite_maxflow_scipy(pv.float, w, el, er)
    alpha = value / 2.0**FINE_BITS
    accuracy = (Vv + len(w)) * 2.0**-FINE_BITS + 4 * (n + 1) * 2.0**-53
    P = float(pv.float[H].sum())
    Q = float(w[np.all(H[t], axis=1)].sum())
    pos = fl > 0
    # round each flow down onto 53 bits so no float sum exceeds its capacity in exact terms
    mass = np.array([_down(int(x)) for x in fl[pos]], dtype=np.float64)
    plan = SparsePlan(el[pos], t[er[pos]], mass, kind="tuple")
    info.update(tuples=len(w), edges=len(el), cut_value=P + 1.0 - Q)
    return dict(alpha=alpha, H=H, plan=plan, accuracy=accuracy, info=info)


def _down(x: int) -> float:
    """x · 2^-60 rounded toward zero to a float."""
    extra = max(0, x.bit_length() - 53)
    return ((x >> extra) << extra) / 2.0**FINE_BITS


@register("maxflow", accuracy=0.0, exact=True)
def _solve_maxflow(p, draft):
    """networkx max-flow / min-cut on exact integers (rationals scaled by their denominator)."""
    with timed() as tm:
        out = tuple_flow(p, draft, exact=True)
    out["seconds"] = tm.seconds
    return out


@register("maxflow-scipy", accuracy=1e-10, exact=False)
def _solve_maxflow_scipy(p, draft):
    """scipy.sparse.csgraph max-flow, int32 capacities refined to the 2^-60 grid."""
    with timed() as tm:
        out = tuple_flow(p, draft, exact=False)
    out["seconds"] = tm.seconds
    return out
