r"""The bipartite draft graph of the LP forms, and the level-set rounding of a dual solution.

The draft graph has the tokens i ∈ Σ on one side, the tuples ī ∈ supp(p_draft) on the other,
and an edge (i, ī) whenever i ∈ ī (docs/reference.md, "b-matching (9)").  The transport LP (7),
the b-matching LP (9), the w-vertex-cover dual (10) and POT's network simplex are all written on
it (:mod:`.primal`, :mod:`.bmatching`, :mod:`.dual`, :mod:`.emd`).  Their dual solutions are
rounded to an optimal set H of the subset form (8) by :func:`best_level_set`:

.. math::

   H_\theta = \{i : y_i > \theta\}, \qquad
   P(H_\theta) + 1 - Q(H_\theta) = \alpha^* \text{ for an optimal dual } y .
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..drafts import DraftLaw

__all__ = ["DraftGraph", "draft_graph", "subset_value", "best_level_set", "DENSE_PLAN_MAX"]

#: Plans are returned as dense (V,)+(V,)*n arrays up to this many entries, else sparse.
DENSE_PLAN_MAX: int = 20_000_000


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
        """Whether the dense plan fits under :data:`DENSE_PLAN_MAX` entries (V^(n+1))."""
        if self.V > 1 and (self.n + 1) * math.log2(self.V) > 64:  # never a huge power
            return False
        return self.V ** (self.n + 1) <= DENSE_PLAN_MAX


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
