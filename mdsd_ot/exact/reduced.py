r"""The set-reduced flow (docs/reference.md, "Set-reduced flow"; T1): tuples merged by their set of tokens.

Two draft tuples with the same set of distinct tokens have the same neighbours in the bipartite
graph, so they merge into one node S ⊆ Σ, |S| ≤ n, of capacity

.. math::

   w_S = \Pr[\{\bar i_1, \dots, \bar i_n\} = S], \qquad Q(H) = \sum_{S \subseteq H} w_S .

The network source → i (capacity p(i)) → S ∋ i (unbounded) → sink (capacity w_S) has max-flow
value α* and at most :math:`\sum_{k \le n} \binom{V}{k}` set nodes instead of Vⁿ tuples.  An
optimal flow is an optimal verifier: a draft whose token set is S outputs i ∈ S with probability
flow(i, S) / w_S, else draws from a residual law.

The weights are computed without enumerating Σⁿ where the law allows
(:func:`set_weights`):

- with replacement: :math:`w_S = \sum_{m} \binom{n}{m_1, \dots, m_k} \prod_j q(s_j)^{m_j}`
  over compositions m of n into k = |S| positive parts (all terms positive: no cancellation);
- product: :math:`w_S = \sum_{\sigma} \prod_j q_j(\sigma(j))` over the surjections σ: [n] → S;
- without replacement (sequential): |S| = n, the sum over the n! orders of S of the sequential
  probability (:func:`~mdsd_ot.exact.maxflow.sequential_without`);
- conditional Poisson: |S| = n, :math:`w_S = \prod_{i \in S} q(i) / e_n(q)`;
- greedy: :math:`w_{T \cup \{x\}} = q'(x)`; SpecHub: :math:`w_{\{a, x\}} = q(x) / (1 - q(a))`;
- explicit tables: the joint law aggregated by token set.

Solvers: rational inputs (p and the law both rational) go through networkx on exact integers
(:func:`~mdsd_ot.exact.maxflow.bipartite_maxflow_exact`); float inputs, or rational ones with
more than :data:`MAX_SETS_EXACT` sets, through the refined scipy max-flow
(:func:`~mdsd_ot.exact.maxflow.bipartite_maxflow_scipy`), exact on the 2^-60 grid; its stated
accuracy is ``(V + M)·2^-60`` plus the float error of the weights (per result, ``accuracy``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector, elementary_symmetric
from ._common import register, timed
from .maxflow import (
    FINE_BITS,
    SparsePlan,
    bipartite_maxflow_exact,
    bipartite_maxflow_scipy,
    sequential_without,
    to_float_down,
)

__all__ = [
    "SetWeights",
    "set_weights",
    "set_weight_table",
    "set_count_bound",
    "reduced_problem",
    "largest_v_within",
    "MAX_SETS",
    "MAX_SETS_EXACT",
]

#: Largest number of token sets the float (scipy) route accepts (about 0.85 kB of memory each
#: at peak: 2^23 sets need ~7 GB).
MAX_SETS: int = 2**23
#: Largest number of token sets solved exactly (networkx); larger rational inputs use floats.
MAX_SETS_EXACT: int = 50_000

_EPS = 2.0**-53


class SetWeights(Mapping):
    """The set weights w_S as arrays, read as a mapping ``{frozenset S: w_S}``.

    Attributes
    ----------
    members : (M, n) int64 ndarray
        Row m lists the tokens of set m in ascending order, padded with -1.
    weights : (M,) float64 ndarray, or list of Fraction
        w_S for each set (only sets with w_S > 0 are kept).
    exact : bool
        Whether the weights are exact Fractions.
    error : float
        A bound on :math:`\\sum_S |w_S^{float} - w_S|` (0 when exact).
    """

    def __init__(self, members: np.ndarray, weights: Any, exact: bool, V: int, error: float = 0.0):
        self.members = np.asarray(members, dtype=np.int64)
        self.weights = weights
        self.exact = exact
        self.V = V
        self.error = float(error)
        self._dict: dict | None = None

    def _as_dict(self) -> dict[frozenset, Any]:
        if self._dict is None:
            w = self.weights
            self._dict = {
                frozenset(int(v) for v in row if v >= 0): (w[m] if self.exact else float(w[m]))
                for m, row in enumerate(self.members)
            }
        return self._dict

    def __getitem__(self, S):
        return self._as_dict()[frozenset(S)]

    def __iter__(self) -> Iterator[frozenset]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self.members)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(token, set index) for every i ∈ S, sorted by (set, token)."""
        mask = self.members >= 0
        sets = np.repeat(np.arange(len(self.members)), self.members.shape[1])
        return self.members[mask], sets[mask.ravel()]

    def contained(self, H: np.ndarray) -> np.ndarray:
        """Boolean mask of the sets S ⊆ H (H a boolean mask of length V)."""
        Hx = np.append(np.asarray(H, dtype=bool), True)  # index -1 (padding) reads True
        return np.all(Hx[self.members], axis=1)

    def Q(self, H: np.ndarray) -> Any:
        """Q(H) = Σ_{S ⊆ H} w_S."""
        inside = self.contained(H)
        if self.exact:
            return sum((w for w, k in zip(self.weights, inside, strict=True) if k), Fraction(0))
        return float(np.sum(self.weights[inside]))

    def __repr__(self) -> str:
        return f"SetWeights(sets={len(self)}, exact={self.exact})"


# --------------------------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------------------------
def _combinations(m: int, k: int) -> np.ndarray:
    """All k-subsets of range(m) as an (C(m, k), k) int64 array, lexicographic, vectorised."""
    if k == 0:
        return np.zeros((1, 0), dtype=np.int64)
    rows = np.arange(m, dtype=np.int64)[:, None]
    for _ in range(k - 1):
        last = rows[:, -1]
        cnt = m - 1 - last
        total = int(cnt.sum())
        rep = np.repeat(rows, cnt, axis=0)
        starts = np.repeat(np.cumsum(cnt) - cnt, cnt)
        new = np.repeat(last + 1, cnt) + (np.arange(total) - starts)
        rows = np.hstack([rep, new[:, None]])
    return rows


def _compositions(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Compositions of n into k positive parts."""
    for cuts in itertools.combinations(range(1, n), k - 1):
        b = (0, *cuts, n)
        yield tuple(b[j + 1] - b[j] for j in range(k))


def _surjections(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Maps [n] -> [k] hitting every value (as tuples of values)."""
    for s in itertools.product(range(k), repeat=n):
        if len(set(s)) == k:
            yield s


def _arr(values: Any, exact: bool) -> np.ndarray:
    return np.array(list(values), dtype=object if exact else np.float64)


def _count_sets(m: int, ks: Any) -> int:
    return sum(math.comb(m, k) for k in ks)


def _q_sets(draft: DraftLaw, exact: bool):
    """Closed-form weights for the q-based laws and the product law: list of (members, w, err)."""
    n, scheme = draft.n, draft.scheme
    one = Fraction(1) if exact else 1.0
    if scheme == "product":
        qs = [_arr(draft.qvals(j, exact), exact) for j in range(n)]
        sup = np.flatnonzero(np.any(np.stack(draft.qs) > 0, axis=0))
    else:
        q = _arr(draft.qvals(exact), exact)
        sup = np.flatnonzero(draft.q > 0)
    ks = range(1, n + 1) if scheme in ("with", "product") else [n]
    V_.check_size(
        _count_sets(len(sup), ks),
        MAX_SETS,
        f"the token sets of {draft!r}",
        "use method='fast' where the law is q-convex",
    )
    out = []
    for k in ks:
        mem = sup[_combinations(len(sup), k)]
        if scheme == "with":
            cols = [q[mem[:, j]] for j in range(k)]
            w = np.zeros(len(mem), dtype=object if exact else np.float64)
            terms = 0
            for comp in _compositions(n, k):
                coef = math.factorial(n) // math.prod(math.factorial(c) for c in comp)
                term = np.full(len(mem), one * coef, dtype=w.dtype)
                for j, c in enumerate(comp):
                    term = term * cols[j] ** c
                w = w + term
                terms += 1
            err = (2 * n + terms) * _EPS
        elif scheme == "product":
            w = np.zeros(len(mem), dtype=object if exact else np.float64)
            terms = 0
            for sig in _surjections(n, k):
                term = np.full(len(mem), one, dtype=w.dtype)
                for j, c in enumerate(sig):
                    term = term * qs[j][mem[:, c]]
                w = w + term
                terms += 1
            err = (n + terms) * _EPS
        elif scheme == "without":
            w = np.zeros(len(mem), dtype=object if exact else np.float64)
            e = np.zeros(len(mem))
            for perm in itertools.permutations(range(k)):
                term, te = sequential_without(q, mem[:, list(perm)])
                w = w + term
                e = e + te
            err = 0.0 if exact else float(e.sum()) + math.factorial(n) * _EPS
        else:  # conditional Poisson
            en = elementary_symmetric(list(draft.qvals(exact)), n, one)[n]
            w = np.full(len(mem), one, dtype=object if exact else np.float64)
            for j in range(k):
                w = w * q[mem[:, j]]
            w = w / en
            err = (2 * n + 2 * len(sup) + 2) * _EPS
        out.append((mem, w, 0.0 if exact else err))
    return out


def _sorted_sets_from(pairs: dict[tuple[int, ...], Any], n: int):
    keys = sorted(pairs, key=lambda s: (len(s), s))
    mem = np.full((len(keys), n), -1, dtype=np.int64)
    for m, s in enumerate(keys):
        mem[m, : len(s)] = s
    return mem, [pairs[s] for s in keys]


def _other_sets(draft: DraftLaw, exact: bool):
    """Greedy, SpecHub and explicit laws (and any other): (members, weights, err)."""
    n, scheme = draft.n, draft.scheme
    agg: dict[tuple[int, ...], Any] = {}
    if scheme == "greedy":
        qp = draft.q_prime(exact)  # renormalised by the sum of the tokens outside T
        for x in range(draft.V):
            if qp[x] > 0:
                agg[tuple(sorted({*draft.T, x}))] = qp[x]
        err = (draft.V + 4) * _EPS
    elif scheme == "spechub":
        qv, a = draft.qvals(exact), draft.a
        # q(x) / (1 - q(a)) with 1 - q(a) as the sum of the others (no cancellation in floats)
        rest = sum((qv[x] for x in range(draft.V) if x != a), Fraction(0) if exact else 0.0)
        for x in range(draft.V):
            if x != a and qv[x] > 0:
                agg[tuple(sorted((a, x)))] = qv[x] / rest
        err = (draft.V + 4) * _EPS
    else:
        items = draft.joint_items(exact=exact)
        zero = Fraction(0) if exact else 0.0
        for t, w in items.items():
            s = tuple(sorted(set(t)))
            agg[s] = agg.get(s, zero) + w
        # Python sums of <= n^n tuples per set; the table renormalised by numpy's pairwise sum
        err = (n + 4 + n**n + 128 + math.log2(len(items) + 1)) * _EPS
    mem, w = _sorted_sets_from(agg, n)
    return mem, (w if exact else np.array(w, dtype=np.float64)), (0.0 if exact else err)


def set_count_bound(draft: DraftLaw) -> int:
    """An upper bound on the number of sets with w_S > 0 (computed without building them).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> set_count_bound(WithReplacement([0.25] * 4, 2))  # C(4, 1) + C(4, 2)
    10
    """
    n, scheme = draft.n, draft.scheme
    if scheme in ("with", "product"):
        qs = draft.qs if scheme == "product" else [draft.q]
        m = int(np.count_nonzero(np.any(np.stack(qs) > 0, axis=0)))
        return _count_sets(m, range(1, n + 1))
    if scheme in ("without", "conditional-poisson"):
        return math.comb(int(np.count_nonzero(draft.q)), n)
    if scheme in ("greedy", "spechub"):
        return draft.V
    return draft.support_size_bound()


def set_weight_table(draft: DraftLaw, exact: bool | None = None) -> SetWeights:
    r"""The set weights w_S of ``draft`` as a :class:`SetWeights` table (arrays; see module doc).

    Parameters
    ----------
    draft : DraftLaw
        Any draft law.
    exact : bool, optional
        Fractions (default: when the law is rational); float inputs are converted exactly.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> tab = set_weight_table(WithReplacement(["1/2", "1/2"], 2))
    >>> tab.members.tolist(), tab.weights
    ([[0, -1], [1, -1], [0, 1]], [Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)])
    """
    if exact is None:
        exact = draft.rational
    n = draft.n
    if draft.scheme in ("with", "without", "conditional-poisson", "product"):
        blocks = _q_sets(draft, exact)
        mem = np.full((sum(len(b[0]) for b in blocks), n), -1, dtype=np.int64)
        r = 0
        for b, _, _ in blocks:
            mem[r : r + len(b), : b.shape[1]] = b
            r += len(b)
        if exact:
            w = [x for _, wb, _ in blocks for x in wb]
            keep = [m for m, x in enumerate(w) if x != 0]
            return SetWeights(mem[keep], [w[m] for m in keep], True, draft.V)
        w = np.concatenate([wb for _, wb, _ in blocks]).astype(np.float64)
        err = sum(e for _, _, e in blocks) + (n + 1) * (draft.V + 1) * _EPS
        keep = w > 0
        return SetWeights(mem[keep], w[keep], False, draft.V, err)
    mem, w, err = _other_sets(draft, exact)
    if exact:
        keep = [m for m, x in enumerate(w) if x != 0]
        return SetWeights(mem[keep], [w[m] for m in keep], True, draft.V)
    keep = w > 0
    err += (n + 1) * (draft.V + 1) * _EPS  # floats vs the exact rationals they denote
    return SetWeights(mem[keep], w[keep], False, draft.V, err)


def set_weights(draft: DraftLaw, exact: bool | None = None) -> dict[frozenset, Any]:
    r"""w_S = Pr[the set of drafted tokens is S] for every S with w_S > 0 (|S| ≤ n).

    .. math::

       w_S = \sum_{\bar i:\ \{\bar i_1, \dots, \bar i_n\} = S} p_{draft}(\bar i),
       \qquad Q(H) = \sum_{S \subseteq H} w_S .

    Closed forms per law (module docstring), never enumerating Σⁿ for the q-based laws.

    Parameters
    ----------
    draft : DraftLaw
        Any draft law.
    exact : bool, optional
        Return Fractions (default: when the law was built from rationals).

    Returns
    -------
    dict
        ``{frozenset S: w_S}``.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithoutReplacement
    >>> w = set_weights(WithoutReplacement(["1/2", "3/10", "1/5"], 2))
    >>> w[frozenset({0, 1})]  # 1/2 * 3/10 / (1/2) + 3/10 * 1/2 / (7/10)
    Fraction(18, 35)
    """
    return dict(set_weight_table(draft, exact).items())


# --------------------------------------------------------------------------------------------
# The reduced flow
# --------------------------------------------------------------------------------------------
def reduced_problem(p: Any, draft: DraftLaw, exact: bool | None = None) -> dict[str, Any]:
    r"""Build and solve the set-reduced flow; return the :class:`~mdsd_ot.result.Result` fields.

    Parameters
    ----------
    p : (V,) array_like or Vector
        Target distribution.
    draft : DraftLaw
        Any draft law.
    exact : bool, optional
        Solve in exact rationals.  Default: when p and the law are rational and there are at
        most :data:`MAX_SETS_EXACT` sets.

    Returns
    -------
    dict
        ``alpha``, ``alpha_exact`` (exact route), ``H`` (optimal set, verified:
        P(H) + 1 − Σ_{S⊆H} w_S = α within ``accuracy``), ``plan`` (a
        :class:`~mdsd_ot.exact.maxflow.SparsePlan` ``{(i, S): flow}`` with
        Σ_S flow(i, S) ≤ p(i), Σ_i flow(i, S) ≤ w_S and total α), ``accuracy`` and ``info``
        (``weights``: the :class:`SetWeights` mapping ``{S: w_S}``, ``sets``, ``edges``,
        ``route``, ``cut_value``, timings).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> r = reduced_problem(["1/2", "1/2"], WithReplacement(["3/4", "1/4"], 2))
    >>> r["alpha_exact"], r["H"].tolist()
    (Fraction(15, 16), [True, False])
    >>> for (i, S), m in r["plan"].items():
    ...     print(i, sorted(S), m)
    0 [0] 1/2
    1 [1] 1/16
    1 [0, 1] 3/8
    """
    pv = p if isinstance(p, Vector) else Vector(p, "p")
    V_.check_same_length(pv.float, np.empty(draft.V), "p", "draft (its vocabulary)")
    t0 = time.perf_counter()
    if exact is None:
        exact = pv.rational and draft.rational and set_count_bound(draft) <= MAX_SETS_EXACT
    elif exact:
        V_.check_size(
            set_count_bound(draft),
            MAX_SETS_EXACT,
            "the exact set-reduced flow",
            "use exact=False (the float route, exact on the 2^-60 grid)",
        )
    tab = set_weight_table(draft, exact=bool(exact))
    t_weights = time.perf_counter() - t0
    el, er = tab.edges()
    n = draft.n
    if exact:
        value, flow, H = bipartite_maxflow_exact(pv.exact, tab.weights, zip(el, er, strict=True))
        P = sum((pv.exact[i] for i in np.flatnonzero(H)), Fraction(0))
        cut = P + 1 - tab.Q(H)
        if cut != value:  # pragma: no cover - max-flow min-cut theorem
            raise RuntimeError(f"reduced: max-flow {value} != cut value {cut}")
        keys = sorted(flow)
        plan = SparsePlan(
            [i for i, _ in keys],
            tab.members[[m for _, m in keys]].reshape(len(keys), n),
            [flow[key] for key in keys],
            kind="set",
        )
        out = dict(alpha=float(value), alpha_exact=value, H=H, plan=plan, accuracy=0.0)
        info = {"route": "exact (networkx, integers)"}
    else:
        value, fl, H, info = bipartite_maxflow_scipy(pv.float, tab.weights, el, er)
        alpha = value / 2.0**FINE_BITS
        accuracy = (draft.V + len(tab)) * 2.0**-FINE_BITS + tab.error + 2.0**-52
        cut = float(pv.float[H].sum()) + 1.0 - tab.Q(H)
        if abs(cut - alpha) > accuracy + 4 * (draft.V + len(tab)) * _EPS:
            raise RuntimeError(  # pragma: no cover - max-flow min-cut theorem
                f"reduced: max-flow {alpha} and cut value {cut} differ beyond the accuracy"
            )
        pos = fl > 0
        plan = SparsePlan(el[pos], tab.members[er[pos]], to_float_down(fl[pos]), kind="set")
        out = dict(alpha=alpha, H=H, plan=plan, accuracy=accuracy)
        info["route"] = "float (scipy, 2^-60 grid)"
    info.update(
        weights=tab,
        sets=len(tab),
        edges=len(el),
        cut_value=cut,
        seconds_weights=t_weights,
    )
    out["info"] = info
    return out


@register("reduced", accuracy=1e-10, exact=True)
def _solve_reduced(p, draft):
    """Set-reduced max-flow over token sets |S| <= n (exact for rational inputs)."""
    with timed() as tm:
        out = reduced_problem(p, draft)
    out["seconds"] = tm.seconds
    return out


# --------------------------------------------------------------------------------------------
# Scale measurement (benchmarks/reduced.py prints it)
# --------------------------------------------------------------------------------------------
def largest_v_within(
    n: int,
    scheme: str,
    budget: float = 60.0,
    *,
    seed: int = 0,
    start: int = 8,
    growth: float = 1.25,
    concentration: float = 1.0,
    clock: str = "wall",
    verbose: bool = False,
) -> tuple[int, float, list[dict[str, Any]]]:
    """Largest V whose float set-reduced solve takes at most ``budget`` seconds.

    Grows V geometrically from ``start`` (factor ``growth``) on seeded Dirichlet p and q until a
    solve exceeds the budget on ``clock`` (``"wall"`` or ``"cpu"``: process time, robust to a
    shared machine), or the set count exceeds :data:`MAX_SETS`.

    Returns
    -------
    (V, seconds, trace)
        The largest V within the budget, its time on ``clock``, and one dict per V tried
        (``V``, ``sets``, ``wall``, ``cpu``, ``alpha``).
    """
    from ..drafts import make

    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock: must be 'wall' or 'cpu', got {clock!r}")
    rng = np.random.default_rng(seed)
    best, best_t, trace = 0, 0.0, []
    V = start
    while True:
        p = rng.dirichlet(np.full(V, concentration))
        q = rng.dirichlet(np.full(V, concentration))
        draft = make(scheme, q, n)
        if set_count_bound(draft) > MAX_SETS:
            break
        t0, c0 = time.perf_counter(), time.process_time()
        r = reduced_problem(p, draft, exact=False)
        row = {
            "V": V,
            "sets": r["info"]["sets"],
            "wall": time.perf_counter() - t0,
            "cpu": time.process_time() - c0,
            "alpha": r["alpha"],
        }
        trace.append(row)
        if verbose:
            print(
                f"  n={n} {scheme:8s} V={V:5d} sets={row['sets']:>10,d} "
                f"wall {row['wall']:7.2f} s  cpu {row['cpu']:7.2f} s",
                flush=True,
            )
        if row[clock] > budget:
            break
        best, best_t = V, row[clock]
        V = max(V + 1, int(V * growth))
    return best, best_t, trace
