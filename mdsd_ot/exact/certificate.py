r"""Exact certificates of optimality: a plan and a set H checked in rational arithmetic.

Weak duality between the transport LP (7) (or the b-matching LP (9), or the set-reduced flow)
and subset selection (8): for every feasible plan C and every H ⊆ Σ,

.. math::

   \sum_i \sum_{\bar i \ni i} C(i, \bar i) \;\le\; \alpha^* \;\le\; P(H) + 1 - Q(H),

because a token i ∉ H accepted on a tuple ī must come from a tuple that leaves H, and the mass
of those is 1 − Q(H).  So a feasible plan whose value **equals** P(H) + 1 − Q(H) proves that
both are optimal (T1: the forms share their optimum).  :func:`certify` checks exactly that, in
Fractions: plan ≥ 0, its marginals, which pairs carry mass, and primal = dual.

This module only checks.  :func:`mdsd_ot.exact.plans.optimal_plan` builds such a pair: the
max-flow matching (:mod:`.maxflow`) completed to a full coupling with marginals exactly p and
p_draft (Lemma 1, :func:`mdsd_ot.exact.plans.complete_plan`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector, as_mask
from ..drafts._sets import MAX_SETS
from . import _limits

__all__ = ["Certificate", "certify", "DEFAULT_TOL", "MAX_CERTIFY_WORK"]

#: Tolerance applied when the plan or the inputs are floats (the cross-check's default).
DEFAULT_TOL: float = 1e-9
#: Largest number of exact capacities × n (draft tuples, or token sets for reduced plans) that
#: :func:`certify` computes in Fractions before checking a plan.
MAX_CERTIFY_WORK: int = 2**22


@dataclass(frozen=True)
class Certificate:
    r"""The outcome of :func:`certify`.

    Attributes
    ----------
    ok : bool
        The plan is feasible (within ``tolerance``) and its value equals the dual value.
    kind : str
        What the plan was checked as: ``"coupling"`` (LP (7): marginals equal p and p_draft),
        ``"matching"`` (LP (9): mass only on pairs i ∈ ī, marginals at most p and p_draft) or
        ``"reduced"`` (set-reduced flow: pairs i ∈ S, marginals at most p and w_S).
    primal_value : Fraction
        :math:`\sum_{i \in \bar i} C(i, \bar i)` (exact value of the given numbers).
    dual_value : Fraction
        :math:`P(H) + 1 - Q(H)`.
    gap : Fraction
        ``dual_value - primal_value`` (≥ 0 for a feasible plan, by weak duality).
    row_error, col_error : Fraction
        Coupling: the largest :math:`|\text{marginal} - \text{target}|` over tokens / tuples.
        Matching and reduced: the largest excess of a marginal over its capacity (0 if none).
    negative_mass : Fraction
        Minus the most negative entry (0 if none).
    off_edge_mass : Fraction
        Matching and reduced: total |mass| on pairs with i ∉ ī (resp. i ∉ S); 0 for couplings.
    exact : bool
        True when p, the law and the plan were all exact rationals and the tolerance is 0.
    tolerance : float
        The slack allowed on every check (0 when exact).
    reason : str
        One line: why the certificate holds or the first check that failed.
    excess_mass : Fraction
        The plan's total excess over its bounds: :math:`\sum_i (\text{row}_i - p_i)^+ +
        \sum_{\bar i} (\text{col}_{\bar i} - \text{cap}_{\bar i})^+` plus the negative
        entries' mass.  Trimming it leaves a feasible plan whose value is at least
        ``primal_value - excess_mass``, so :math:`\alpha^*` lies in
        [``primal_value - excess_mass``, ``dual_value``]; ``ok`` requires that interval to be
        at most ``tolerance`` wide (each entry within tolerance is not enough: V entries each
        1e-9 over add up).
    """

    ok: bool
    kind: str
    primal_value: Fraction
    dual_value: Fraction
    gap: Fraction
    row_error: Fraction
    col_error: Fraction
    negative_mass: Fraction
    off_edge_mass: Fraction
    exact: bool
    tolerance: float
    reason: str
    excess_mass: Fraction = Fraction(0)

    def __bool__(self) -> bool:
        return self.ok


def _frac(x: Any, where: str) -> tuple[Fraction, bool]:
    """Exact value of one plan entry and whether it was given as an exact rational."""
    if isinstance(x, Rational) and not isinstance(x, bool):
        return Fraction(x), True
    try:
        v = float(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"plan: entry {where} is not a number ({x!r})") from exc
    if not np.isfinite(v):
        raise ValueError(f"plan: entry {where} is {v}; plan entries must be finite")
    return Fraction(v), False


def _parse_plan(plan: Any, V: int, n: int) -> tuple[dict, str, bool]:
    """plan -> ({(i, key): Fraction}, 'tuple' | 'set', all entries exact)."""
    out: dict = {}
    exact = True
    if isinstance(plan, np.ndarray):
        if plan.shape != (V,) + (V,) * n:
            raise ValueError(
                f"plan: a dense plan must have shape {(V,) + (V,) * n} (token, then the n "
                f"drafts), got {plan.shape}"
            )
        if plan.dtype == object:
            idx = [k for k, v in np.ndenumerate(plan) if v != 0]
        else:
            if not np.all(np.isfinite(plan)):
                raise ValueError("plan: has NaN or infinite entries; plan entries must be finite")
            idx = list(zip(*np.nonzero(plan), strict=True))
        for k in idx:
            v, e = _frac(plan[k], str(tuple(int(j) for j in k)))
            exact &= e
            out[(int(k[0]), tuple(int(j) for j in k[1:]))] = v
        if plan.dtype != object:
            exact = False
        return out, "tuple", exact
    if not isinstance(plan, Mapping):
        raise ValueError(
            "plan: give a dense (V,)+(V,)*n array or a mapping {(i, tuple): mass} / "
            f"{{(i, frozenset S): mass}}, got {type(plan).__name__}"
        )
    kinds = set()
    for key, m in plan.items():
        try:
            i, t = key
            i = int(i)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"plan: key {key!r} is not a pair (token, tuple or set)") from exc
        if not 0 <= i < V:
            raise ValueError(f"plan: token {i} in key {key!r} is outside [0, {V})")
        if isinstance(t, frozenset | set):
            kinds.add("set")
            t = frozenset(int(j) for j in t)
            if not 1 <= len(t) <= n or any(not 0 <= j < V for j in t):
                raise ValueError(f"plan: set {sorted(t)} must hold 1..{n} tokens of [0, {V})")
        else:
            kinds.add("tuple")
            t = tuple(int(j) for j in t)
            if len(t) != n or any(not 0 <= j < V for j in t):
                raise ValueError(f"plan: tuple {t} must hold {n} tokens of [0, {V})")
        v, e = _frac(m, repr(key))
        exact &= e
        if v:
            out[(i, t)] = out.get((i, t), Fraction(0)) + v
    if len(kinds) > 1:
        raise ValueError("plan: mixes tuple keys and set keys; give one kind")
    return out, (kinds.pop() if kinds else "tuple"), exact


def _check_work(draft: DraftLaw, kind: str) -> None:
    """Refuse before computing the exact capacities (p_draft or w_S) of a large instance."""
    what = f"an exact certificate ({kind} plan)"
    if kind == "reduced":
        hint = (
            "certify a smaller instance (the float route of method='reduced' states its accuracy)"
        )
        _limits.check_sets(
            draft, max_sets=MAX_SETS, max_work=MAX_CERTIFY_WORK, what=what, hint=hint, exact=True
        )
    else:
        hint = "certify the set-reduced plan of method='reduced' instead (keys (i, frozenset S))"
        _limits.check_tuples(draft, per_tuple=draft.n, limit=MAX_CERTIFY_WORK, what=what, hint=hint)


def certify(
    p: Any,
    draft: DraftLaw,
    plan: Any,
    H: Any,
    *,
    kind: str = "auto",
    tol: float | None = None,
) -> Certificate:
    r"""Check in exact rationals that ``plan`` and ``H`` are optimal (weak duality, T1).

    .. math::

       \text{primal} = \sum_{i \in \bar i} C(i, \bar i) \;=\; P(H) + 1 - Q(H) = \text{dual}

    with C feasible: C ≥ 0 and either (``"coupling"``) row sums = p and column sums =
    p_draft, or (``"matching"``) mass only on pairs i ∈ ī with row sums ≤ p and column sums ≤
    p_draft, or (``"reduced"``, keys (i, frozenset S)) mass only on i ∈ S with row sums ≤ p
    and set sums ≤ w_S.  All sums are exact Fractions; float inputs and float plans are read
    exactly (every float is a dyadic rational) and checked against ``tol``.

    Parameters
    ----------
    p : (V,) array_like or Vector
        Target distribution.
    draft : DraftLaw
        The draft law.
    plan : ndarray or mapping
        A dense ``(V,)+(V,)*n`` array (token first, then the draft tuple; floats or an object
        array of Fractions), a mapping ``{(i, tuple): mass}``, or a set-reduced mapping
        ``{(i, frozenset S): mass}`` (e.g. the ``plan`` of methods ``"maxflow"``,
        ``"reduced"``, or :func:`mdsd_ot.exact.plans.optimal_plan`).
    H : (V,) bool array or iterable of int
        The claimed optimal set.
    kind : {"auto", "coupling", "matching", "reduced"}
        ``"auto"``: ``"reduced"`` for set keys, else ``"coupling"`` when the plan's total mass
        is 1 (within tol), else ``"matching"``.
    tol : float, optional
        Slack on every check.  Default 0 when p, the law and the plan are all exact
        rationals, else :data:`DEFAULT_TOL`.

    Returns
    -------
    Certificate

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from mdsd_ot.drafts import WithReplacement
    >>> d = WithReplacement(["3/4", "1/4"], 1)
    >>> C = {(0, (0,)): F(1, 2), (1, (0,)): F(1, 4), (1, (1,)): F(1, 4)}
    >>> c = certify(["1/2", "1/2"], d, C, [0])
    >>> c.ok, c.kind, c.primal_value, c.exact
    (True, 'coupling', Fraction(3, 4), True)
    >>> certify(["1/2", "1/2"], d, C, [1]).reason
    'not optimal: primal value 3/4 < dual value P(H) + 1 - Q(H) = 5/4 (gap 1/2)'
    """
    pv = p if isinstance(p, Vector) else Vector(p, "p")
    V, n = draft.V, draft.n
    V_.check_on_vocabulary(pv.float, V, "p")
    entries, key_kind, plan_exact = _parse_plan(plan, V, n)
    exact = pv.rational and draft.rational and plan_exact
    tolerance = float(tol) if tol is not None else (0.0 if exact else DEFAULT_TOL)
    if tolerance < 0:
        raise ValueError(f"tol: must be >= 0, got {tol}")
    exact = exact and tolerance == 0.0
    T = Fraction(tolerance)
    if kind not in ("auto", "coupling", "matching", "reduced"):
        raise ValueError(f"kind: must be 'auto', 'coupling', 'matching' or 'reduced', got {kind!r}")
    if key_kind == "set":
        if kind not in ("auto", "reduced"):
            raise ValueError(
                f"kind: a plan keyed by (i, frozenset S) is a reduced plan, not {kind!r}"
            )
        kind = "reduced"
    elif kind == "reduced":
        raise ValueError("kind: 'reduced' needs a plan keyed by (i, frozenset S)")
    zero = Fraction(0)
    if kind == "auto":
        total = sum(entries.values(), zero)
        kind = "coupling" if abs(total - 1) <= T else "matching"

    _check_work(draft, kind)
    pe = pv.exact
    caps = draft.set_weights(exact=True) if kind == "reduced" else draft.joint_items(exact=True)
    rows = [zero] * V
    cols: dict = {}
    primal = zero
    off_edge = zero
    negative = zero
    neg_total = zero
    for (i, t), m in entries.items():
        if m < 0:
            negative = max(negative, -m)
            neg_total += -m
        rows[i] += m
        cols[t] = cols.get(t, zero) + m
        if i in t:
            primal += m
        else:
            off_edge += abs(m)
    if kind == "coupling":
        off_edge = zero
        row_err = max((abs(rows[i] - pe[i]) for i in range(V)), default=zero)
        col_err = max(
            (abs(cols.get(t, zero) - caps.get(t, zero)) for t in set(cols) | set(caps)),
            default=zero,
        )
    else:
        row_err = max([zero] + [rows[i] - pe[i] for i in range(V)])
        col_err = max([zero] + [c - caps.get(t, zero) for t, c in cols.items()])

    # the total excess: trimming it (and the negative entries) leaves a feasible plan that
    # loses at most this much value, so alpha* >= primal - excess
    excess = neg_total + sum((max(zero, rows[i] - pe[i]) for i in range(V)), zero)
    excess += sum((max(zero, c - caps.get(t, zero)) for t, c in cols.items()), zero)
    Hm = as_mask(H, V)
    dual = sum((pe[i] for i in np.flatnonzero(Hm)), zero) + 1 - draft.Q(Hm, exact=True)
    gap = dual - primal
    what = {"coupling": "p_draft", "matching": "p_draft", "reduced": "w_S"}[kind]
    if negative > T:
        reason = f"infeasible: an entry is negative ({-negative})"
    elif off_edge > T:
        pairs = "i not in S" if kind == "reduced" else "i not in the tuple"
        reason = f"infeasible for the {kind} form: mass {off_edge} on pairs with {pairs}"
    elif row_err > T:
        rel = "differ from" if kind == "coupling" else "exceed"
        reason = f"infeasible: token marginals {rel} p by up to {row_err}"
    elif col_err > T:
        rel = "differ from" if kind == "coupling" else "exceed"
        reason = f"infeasible: draft marginals {rel} {what} by up to {col_err}"
    elif abs(gap) > T:
        reason = (
            f"not optimal: primal value {primal} {'<' if gap > 0 else '>'} dual value "
            f"P(H) + 1 - Q(H) = {dual} (gap {gap})"
        )
    elif gap + excess > T:  # each entry within T, but together they may carry the value
        reason = (
            f"not certified: the plan exceeds its marginals by {float(excess):.3g} in total, so "
            f"alpha* may lie up to {float(gap + excess):.3g} below the dual value "
            f"P(H) + 1 - Q(H) = {float(dual):.12g} (tolerance {tolerance:g})"
        )
    else:
        reason = f"optimal: feasible {kind} plan with value {primal} = P(H) + 1 - Q(H)" + (
            "" if exact else f" within tolerance {tolerance:g}"
        )
    ok = reason.startswith("optimal")
    return Certificate(
        ok=ok,
        kind=kind,
        primal_value=primal,
        dual_value=dual,
        gap=gap,
        row_error=row_err,
        col_error=col_err,
        negative_mass=negative,
        off_edge_mass=off_edge,
        exact=exact,
        tolerance=tolerance,
        reason=reason,
        excess_mass=excess,
    )
