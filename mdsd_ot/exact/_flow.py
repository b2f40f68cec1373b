r"""Bipartite max-flow engines shared by the tuple form (:mod:`.maxflow`) and the set-reduced
form (:mod:`.reduced`), and the sparse plan they return.

The network: source → left node i (capacity ``left[i]``, the tokens' p), left → right node r
(unbounded) for every edge, right node r → sink (capacity ``right[r]``: p_draft of a tuple, or
w_S of a token set).  Its max-flow value is α* and the left nodes on the sink side of a minimum
cut form an optimal set H (docs/reference.md, "Max-flow"; T1).

:func:`bipartite_maxflow_exact`
    networkx ``preflow_push`` on integer capacities (rationals scaled by their common
    denominator): every step is exact.
:func:`bipartite_maxflow_scipy`
    ``scipy.sparse.csgraph.maximum_flow`` accepts int32 capacities only (larger values are
    silently truncated; checked on scipy 1.17), so the capacities are fixed on the grid
    2^-60 (floor) and the flow is found by refinement passes at units 2^-30, then finer, each
    solving the max-flow of the residual network quantised at the current unit (residual
    capacities capped at 2^30 units, which does not change its max-flow value).  After each
    pass the capacity of the cut found bounds what is left exactly; the loop stops when that
    bound is 0, so the result is the exact max flow of the 2^-60-grid instance.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "SparsePlan",
    "bipartite_maxflow_exact",
    "bipartite_maxflow_scipy",
    "to_float_down",
    "FINE_BITS",
]

#: Capacities of the float engine are fixed on the grid 2^-FINE_BITS (floor).
FINE_BITS: int = 60
#: scipy's maximum_flow works in int32: every quantised capacity is capped at 2^30.
_CAP: int = 2**30
#: Stand-in for the unbounded left → right edges on the fine grid (above any cut of capacity <= 2).
_INF: int = 2**62


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
        members = np.asarray(members, dtype=np.int64)
        self.members = members if members.ndim == 2 else members.reshape(len(self.token), -1)
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
    (Fraction(1, 2), [True, False])
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
    (0.5, [True, False])
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    L, M, E = len(left), len(right), len(edge_left)
    N = L + M + 2
    s, k = L + M, L + M + 1
    el = np.asarray(edge_left, np.int64)
    er = np.asarray(edge_right, np.int64)
    sorted_ = E < 2 or bool(np.all((np.diff(er) > 0) | ((np.diff(er) == 0) & (np.diff(el) > 0))))
    perm = None if sorted_ else np.lexsort((el, er))
    if perm is not None:
        el, er = el[perm], er[perm]
    # every edge (u -> v) with its fine capacity; the reverse entry (v -> u) carries the flow
    u = np.concatenate([np.full(L, s), el, L + np.arange(M)])
    v = np.concatenate([np.arange(L), L + er, np.full(M, k)])
    c = np.concatenate([_fine(left), np.full(E, _INF, np.int64), _fine(right)])
    f = np.zeros_like(c)
    indices, indptr32, pos_f, pos_b = _csr_layout(L, M, el, er)
    nnz = 2 * len(u)
    unit = 2 ** (FINE_BITS - 30)
    units = []
    while True:
        units.append(unit)
        fw = np.minimum((c - f) // unit, _CAP)
        bw = np.minimum(f // unit, _CAP)
        data = np.empty(nnz, dtype=np.int32)
        data[pos_f] = fw
        data[pos_b] = bw
        g = sp.csr_matrix((data, indices, indptr32), shape=(N, N))
        res = maximum_flow(g, s, k)
        F = res.flow.tocsr()
        if (
            F.nnz == g.nnz
            and np.array_equal(F.indptr, g.indptr)
            and np.array_equal(F.indices, g.indices)
        ):
            fdata = np.asarray(F.data, dtype=np.int64)
        else:  # another layout (e.g. explicit zeros dropped): read the net flows by position
            fdata = np.zeros(nnz, dtype=np.int64)
            fdata[pos_f] = np.asarray(F[u, v], dtype=np.int64).ravel()
            fdata[pos_b] = -fdata[pos_f]
        d = fdata[pos_f]  # net flow added on each edge u -> v, in units
        f = f + d * unit
        resid = data.astype(np.int64) - fdata
        R = sp.csr_matrix(((resid > 0).astype(np.int8), indices, indptr32), shape=(N, N), copy=True)
        R.eliminate_zeros()  # in place: hence copy=True above (indices is shared)
        reach = np.zeros(N, dtype=bool)
        reach[breadth_first_order(R, s, directed=True, return_predecessors=False)] = True
        cross_f = reach[u] & ~reach[v]
        cross_b = reach[v] & ~reach[u]
        # exact capacity left across the cut found: an upper bound on the flow still missing
        gap = int((c - f)[cross_f].sum()) + int(f[cross_b].sum())
        if gap == 0:
            break
        # smallest power of two with unit * CAP >= gap: capping residuals at CAP units then
        # keeps the residual max-flow (some max flow carries at most `gap` on every edge)
        unit = 1 << ((gap - 1) // _CAP).bit_length()
        if len(units) > 16:  # pragma: no cover - each pass shrinks the unit by >= 2^(30-log2 E)
            raise RuntimeError("maxflow-scipy: refinement did not converge")
    value = int(f[:L].sum())
    info = {"passes": len(units), "units_log2": [int(x).bit_length() - 1 for x in units]}
    flow = f[L : L + E]
    if perm is not None:
        flow = flow[np.argsort(perm)]
    return value, flow, ~reach[:L], info


def _csr_layout(L: int, M: int, el: np.ndarray, er: np.ndarray):
    """CSR structure of the network with both directions of every edge, without a global sort.

    Node order: tokens 0..L-1, right nodes L..L+M-1, source L+M, sink L+M+1.  Edges (el, er)
    must be sorted by (er, el).  Rows: token i = [i -> right nodes (ascending), i -> source];
    right r = [r -> its tokens (ascending), r -> sink]; source = [tokens]; sink = [right nodes].
    Returns (indices, indptr, positions of the forward entries, positions of the reverse
    entries), the edge list being [source -> i, el -> er, r -> sink].
    """
    E = len(el)
    deg_t = np.bincount(el, minlength=L)
    deg_r = np.bincount(er, minlength=M)
    sizes = np.concatenate([deg_t + 1, deg_r + 1, [L, M]])
    indptr = np.zeros(L + M + 3, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    st_t, st_r, st_s, st_k = indptr[:L], indptr[L : L + M], indptr[L + M], indptr[L + M + 1]
    off_t = np.concatenate([[0], np.cumsum(deg_t)[:-1]]) if L else deg_t
    off_r = np.concatenate([[0], np.cumsum(deg_r)[:-1]]) if M else deg_r
    key = el.astype(np.int16) if L < 2**15 else el
    byt = np.argsort(key, kind="stable")  # token-major, right index ascending within a token
    pe_f = np.empty(E, dtype=np.int64)
    pe_f[byt] = st_t[el[byt]] + np.arange(E) - off_t[el[byt]]
    pe_b = st_r[er] + np.arange(E) - off_r[er]
    ar_L, ar_M = np.arange(L), np.arange(M)
    pos_f = np.concatenate([st_s + ar_L, pe_f, st_r + deg_r])
    pos_b = np.concatenate([st_t + deg_t, pe_b, st_k + ar_M])
    indices = np.empty(2 * (L + E + M), dtype=np.int32)
    indices[pos_f] = np.concatenate([ar_L, L + er, np.full(M, L + M + 1)])
    indices[pos_b] = np.concatenate([np.full(L, L + M), el, L + ar_M])
    return indices, indptr.astype(np.int32), pos_f, pos_b


def to_float_down(x: np.ndarray) -> np.ndarray:
    """Grid values x (int64, units 2^-60, x >= 0) as floats rounded toward zero.

    Rounding down keeps every float sum of a plan's flows within its capacity in exact terms.
    """
    x = np.asarray(x, dtype=np.int64)
    xf = x.astype(np.float64)
    up = xf.astype(np.int64) > x  # float rounded up (possible above 2^53)
    xf[up] = np.nextafter(xf[up], 0.0)
    return xf * 2.0**-FINE_BITS
