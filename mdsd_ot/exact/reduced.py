r"""The set-reduced flow (docs/reference.md, "Set-reduced flow"; T1): tuples merged by their set of tokens.

Two draft tuples with the same set of distinct tokens have the same neighbours in the bipartite
graph, so they merge into one node S ⊆ Σ, |S| ≤ n, of capacity

.. math::

   w_S = \Pr[\{\bar i_1, \dots, \bar i_n\} = S], \qquad Q(H) = \sum_{S \subseteq H} w_S .

The network source → i (capacity p(i)) → S ∋ i (unbounded) → sink (capacity w_S) has max-flow
value α* and at most :math:`\sum_{k \le n} \binom{V}{k}` set nodes instead of Vⁿ tuples.  An
optimal flow is an optimal verifier: a draft whose token set is S outputs i ∈ S with probability
flow(i, S) / w_S, else draws from a residual law.

The weights are computed by the draft laws themselves (``law.set_weight_table``, closed forms
in :mod:`mdsd_ot.drafts`, never enumerating Σⁿ for the q-based laws).

Solvers: rational inputs (p and the law both rational) go through networkx on exact integers
(:func:`~mdsd_ot.exact._flow.bipartite_maxflow_exact`); float inputs, or rational ones with
more than :data:`MAX_SETS_EXACT` sets or more than
:data:`~mdsd_ot.drafts._sets.MAX_EXACT_SET_WORK` word-terms of exact weights (large n: the
numbers grow), through the refined scipy max-flow
(:func:`~mdsd_ot.exact._flow.bipartite_maxflow_scipy`), exact on the 2^-60 grid; its stated
accuracy is ``(V + M)·2^-60`` plus the float error of the weights (per result, ``accuracy``).

Size guard: before any weight is computed, the instance is refused above :data:`MAX_SETS`
token sets, or above :data:`MAX_SET_WORK` set-table entries (n per set) or terms of the law's
set-weight computation (``law.set_weight_work()``).
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector
from ..drafts._sets import MAX_EXACT_SET_WORK, MAX_SET_WORK, MAX_SETS
from ..methods import register, timed
from . import _limits
from ._flow import (
    FINE_BITS,
    SparsePlan,
    bipartite_maxflow_exact,
    bipartite_maxflow_scipy,
    to_float_down,
)

__all__ = [
    "reduced_problem",
    "largest_v_within",
    "MAX_SETS",
    "MAX_SET_WORK",
    "MAX_SETS_EXACT",
]

#: Largest number of token sets solved exactly (networkx); larger rational inputs use floats.
MAX_SETS_EXACT: int = 50_000

_EPS = 2.0**-53


# --------------------------------------------------------------------------------------------
# The reduced flow
# --------------------------------------------------------------------------------------------
def check_size(draft: DraftLaw) -> int:
    """Refuse, before computing any weight, an instance above the set limits; return the sets.

    Examples
    --------
    >>> from mdsd_ot.drafts import Product
    >>> check_size(Product([["1/5", "4/5"]] * 40))  # {0}, {1}, {0, 1}
    3
    """
    return _limits.check_sets(
        draft,
        max_sets=MAX_SETS,
        max_work=MAX_SET_WORK,
        what=f"the set-reduced flow of {draft!r}",
        hint=_limits.instead(draft, "fast"),
        exact=False,  # the float route's work; the exact route is taken only when cheap
    )


def reduced_problem(p: Any, draft: DraftLaw, exact: bool | None = None) -> dict[str, Any]:
    r"""Build and solve the set-reduced flow; return the :class:`~mdsd_ot.result.Result` fields.

    Parameters
    ----------
    p : (V,) array_like or Vector
        Target distribution.
    draft : DraftLaw
        Any draft law.
    exact : bool, optional
        Solve in exact rationals.  Default: when p and the law are rational, there are at
        most :data:`MAX_SETS_EXACT` sets and the exact weights cost at most
        :data:`~mdsd_ot.drafts._sets.MAX_EXACT_SET_WORK` word-terms
        (``law.set_weight_work(True)``).

    Returns
    -------
    dict
        ``alpha``, ``alpha_exact`` (exact route), ``H`` (optimal set, verified:
        P(H) + 1 − Σ_{S⊆H} w_S = α within ``accuracy``), ``plan`` (a
        :class:`~mdsd_ot.exact._flow.SparsePlan` ``{(i, S): flow}`` with
        Σ_S flow(i, S) ≤ p(i), Σ_i flow(i, S) ≤ w_S and total α), ``accuracy`` and ``info``
        (``weights``: the :class:`SetWeights` mapping ``{S: w_S}``, ``sets``, ``edges``,
        ``route``, ``cut_value``, timings).

    Raises
    ------
    ValueError
        Above :data:`MAX_SETS` sets or :data:`MAX_SET_WORK` table entries / weight terms
        (:func:`check_size`), before any work.

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
    V_.check_on_vocabulary(pv.float, draft.V, "p")
    t0 = time.perf_counter()
    sets = check_size(draft)
    if exact is None:  # Fractions when they are cheap: few sets, numbers of moderate size
        exact = (
            pv.rational
            and draft.rational
            and sets <= MAX_SETS_EXACT
            and draft.set_weight_work(True) <= MAX_EXACT_SET_WORK
        )
    elif exact:
        _limits.refuse_above(
            sets,
            MAX_SETS_EXACT,
            "the exact set-reduced flow",
            "use exact=False (the float route, exact on the 2^-60 grid)",
            "token sets",
        )
    tab = draft.set_weight_table(exact=bool(exact))
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


@register("reduced", accuracy=1e-10, exact=True, set_plan=True)
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
        if draft.set_count_bound() > MAX_SETS:
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
