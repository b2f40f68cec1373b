r"""q-convexity (T5), supermodularity (T6) and prefix optimality (T7) by exhaustive search.

All three scan the :math:`2^V` sets of a small vocabulary with a table of ``Q`` indexed by
bitmask, in exact rationals when the law (and ``p``) are rational, in floats otherwise.

- T5, q-convexity: for every H and distinct :math:`x, y \notin H` with :math:`q(x), q(y) > 0`

  .. math::

     D_1 = \frac{Q(H \cup x) - Q(H)}{q(x)} \;\le\; D_2 = \frac{Q(H \cup \{x, y\}) - Q(H \cup x)}{q(y)}.

  The violation is :math:`\max (D_1 - D_2)`; q-convex iff it is :math:`\le 0`.
- T6, supermodularity (local form, equivalent to :math:`Q(A) + Q(B) \le Q(A\cup B) + Q(A\cap B)`):
  :math:`Q(H \cup x) + Q(H \cup y) - Q(H) - Q(H \cup \{x,y\}) \le 0`.
- T7, prefix optimality: :math:`\min_H [P(H) - Q(H)]` over all sets minus the minimum over the
  level sets :math:`\{i : p(i)/q(i) \le \tau\}` (ratio :math:`+\infty` when :math:`q(i) = 0`).
  Level sets rather than prefixes of one sorted order: tokens of equal ratio enter together, and
  for q-convex Q the objective is concave along a block of equal ratio, so nothing is lost.

The reference q: ``draft.q`` where the law has one; for product and explicit laws, the mean
marginal :math:`\bar q(i) = \frac1n \sum_j \Pr[\bar i_j = i]` unless ``q`` is given.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector

__all__ = [
    "Violation",
    "PrefixGap",
    "q_table",
    "reference_q",
    "q_vector",
    "q_convexity_violation",
    "supermodularity_violation",
    "set_weights",
    "mobius_weights",
    "prefix_optimality_gap",
    "level_sets",
    "MAX_V",
]

#: Largest vocabulary scanned (2^V sets, V^2 pairs each).
MAX_V = 12


@dataclass(frozen=True)
class Violation:
    """The worst violation of an inequality over all (H, x, y).

    ``value`` > 0 is a violation (exact Fraction when computed exactly); ``witness`` names the
    triple and both sides; ``checked`` counts the triples; ``holds`` compares with ``tol``.
    """

    value: Any
    witness: dict[str, Any] | None
    checked: int
    exact: bool
    tol: float = 0.0

    @property
    def holds(self) -> bool:
        return self.witness is None or self.value <= self.tol


@dataclass(frozen=True)
class PrefixGap:
    """Brute-force optimum of :math:`F(H) = P(H) - Q(H)` against the best level set.

    ``gap`` = best level-set value − brute-force minimum (≥ 0; 0 iff a level set is optimal).
    α* = 1 + ``brute_value``.
    """

    gap: Any
    brute_value: Any
    prefix_value: Any
    brute_H: tuple[int, ...]
    prefix_H: tuple[int, ...]
    exact: bool
    order: list[int] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return self.gap <= 0 if self.exact else self.gap <= 1e-12


def _exact_flag(draft: DraftLaw, exact: bool | None, *extra: bool) -> bool:
    if exact is not None:
        return exact
    return bool(draft.rational and all(extra))


def q_table(draft: DraftLaw, exact: bool | None = None) -> list[Any]:
    """``Q(H)`` for every H ⊆ Σ, indexed by bitmask (bit i set ⟺ token i ∈ H).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> q_table(WithReplacement(["1/2", "1/2"], 2))
    [Fraction(0, 1), Fraction(1, 4), Fraction(1, 4), Fraction(1, 1)]
    """
    V_.check_size(2**draft.V, 2**MAX_V, "an exhaustive scan of Q", f"use V <= {MAX_V}")
    ex = _exact_flag(draft, exact)
    V = draft.V
    out = []
    for mask in range(2**V):
        m = np.array([(mask >> i) & 1 for i in range(V)], dtype=bool)
        out.append(draft.Q(m, exact=ex))
    return out


def reference_q(draft: DraftLaw, exact: bool) -> list[Any]:
    """The q of T5 for ``draft``: its own q, else the mean marginal of the drafts (the law's)."""
    return list(draft.reference_q(exact=exact))


def q_vector(draft: DraftLaw, q: Any, exact: bool) -> list[Any]:
    """The q the scans divide by: ``q`` validated against the law's vocabulary, or the law's
    :func:`reference_q` when ``q`` is None (Fractions with ``exact=True``)."""
    if q is None:
        return reference_q(draft, exact)
    v = Vector(q, "q")
    V_.check_on_vocabulary(v.float, draft.V, "q")
    return list(v.values(exact))


def _bits(mask: int, V: int) -> tuple[int, ...]:
    return tuple(i for i in range(V) if (mask >> i) & 1)


def q_convexity_violation(
    draft: DraftLaw, q: Any = None, *, exact: bool | None = None, tol: float = 0.0
) -> Violation:
    r"""Worst violation of q-convexity (T5): :math:`\max_{H, x, y} (D_1 - D_2)`, see module doc.

    Parameters
    ----------
    draft : DraftLaw
        V ≤ :data:`MAX_V`.
    q : (V,) array_like, optional
        The reference distribution (default: see :func:`reference_q`).
    exact : bool, optional
        Fractions (default when the law is rational).
    tol : float
        ``holds`` means value ≤ tol (use ~1e-12 in floats).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithoutReplacement, Greedy
    >>> q_convexity_violation(WithoutReplacement(["1/2", "3/10", "1/5"], 2)).holds
    True
    >>> v = q_convexity_violation(Greedy(["2/5", "3/10", "1/5", "1/10"], 2))
    >>> v.holds, v.witness["H"], v.witness["x"], v.value
    (False, (1, 2), 0, Fraction(5, 12))
    """
    ex = _exact_flag(draft, exact)
    Qt = q_table(draft, ex)
    qv = q_vector(draft, q, ex)
    V = draft.V
    best, wit, checked = None, None, 0
    pos = [i for i in range(V) if qv[i] > 0]
    for H in range(2**V):
        out = [i for i in pos if not (H >> i) & 1]
        for x in out:
            Hx = H | (1 << x)
            d1 = (Qt[Hx] - Qt[H]) / qv[x]
            for y in out:
                if y == x:
                    continue
                d2 = (Qt[Hx | (1 << y)] - Qt[Hx]) / qv[y]
                checked += 1
                v = d1 - d2
                if best is None or v > best:
                    best = v
                    wit = {"H": _bits(H, V), "x": x, "y": y, "D1": d1, "D2": d2}
    if best is None:
        best = Fraction(0) if ex else 0.0
    return Violation(best, wit, checked, ex, tol)


def supermodularity_violation(
    draft: DraftLaw, *, exact: bool | None = None, tol: float = 0.0
) -> Violation:
    r"""Worst violation of supermodularity (T6):
    :math:`\max_{H, x \ne y \notin H} [Q(H\cup x) + Q(H\cup y) - Q(H) - Q(H\cup\{x,y\})]`.

    Examples
    --------
    >>> from mdsd_ot.drafts import Greedy
    >>> supermodularity_violation(Greedy(["2/5", "3/10", "1/5", "1/10"], 2)).holds
    True
    """
    ex = _exact_flag(draft, exact)
    Qt = q_table(draft, ex)
    V = draft.V
    best, wit, checked = None, None, 0
    for H in range(2**V):
        out = [i for i in range(V) if not (H >> i) & 1]
        for x, y in itertools.combinations(out, 2):
            Hx, Hy = H | (1 << x), H | (1 << y)
            v = Qt[Hx] + Qt[Hy] - Qt[H] - Qt[Hx | Hy]
            checked += 1
            if best is None or v > best:
                best = v
                wit = {"H": _bits(H, V), "x": x, "y": y, "A": _bits(Hx, V), "B": _bits(Hy, V)}
    if best is None:
        best = Fraction(0) if ex else 0.0
    return Violation(best, wit, checked, ex, tol)


def set_weights(draft: DraftLaw, exact: bool | None = None) -> dict[frozenset, Any]:
    r"""The non-zero set-reduced weights :math:`w_S` of the law (``draft.set_weights``).

    Compared with :func:`mobius_weights` (T6): the law's closed forms against the Möbius
    inversion of its Q.
    """
    return draft.set_weights(exact=_exact_flag(draft, exact))


def mobius_weights(draft: DraftLaw, exact: bool | None = None) -> dict[frozenset, Any]:
    r"""Möbius inversion of Q: :math:`w_S = \sum_{T \subseteq S} (-1)^{|S \setminus T|} Q(T)`.

    T6's proof: :math:`Q(H) = \sum_{S \subseteq H} w_S` with :math:`w_S \ge 0`, and each
    :math:`H \mapsto 1[S \subseteq H]` is supermodular.  Returns the non-zero weights.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> w = mobius_weights(WithReplacement(["1/2", "1/2"], 2))
    >>> w[frozenset({0, 1})]
    Fraction(1, 2)
    """
    ex = _exact_flag(draft, exact)
    Qt = list(q_table(draft, ex))
    V = draft.V
    # fast zeta inverse over the subset lattice
    for i in range(V):
        bit = 1 << i
        for m in range(2**V):
            if m & bit:
                Qt[m] = Qt[m] - Qt[m ^ bit]
    return {frozenset(_bits(m, V)): w for m, w in enumerate(Qt) if w != 0}


def _ratio_key(p: Any, q: Any) -> tuple[int, Any]:
    # p/q ascending; q = 0 last (ratio +inf)
    return (1, 0) if q <= 0 else (0, p / q)


def level_sets(p: Any, q: Any) -> list[tuple[int, ...]]:
    """The sets {i : p(i)/q(i) ≤ τ} for every threshold τ, from ∅ to Σ (T7's candidates).

    Examples
    --------
    >>> level_sets([0.5, 0.2, 0.3], [0.25, 0.5, 0.25])
    [(), (1,), (1, 2), (0, 1, 2)]
    """
    V = len(p)
    keys = [_ratio_key(p[i], q[i]) for i in range(V)]
    order = sorted(range(V), key=lambda i: (keys[i], i))
    out: list[tuple[int, ...]] = [()]
    cur: list[int] = []
    for k, i in enumerate(order):
        cur.append(i)
        if k + 1 == V or keys[order[k + 1]] != keys[i]:
            out.append(tuple(sorted(cur)))
    return out


def prefix_optimality_gap(
    p: Any, draft: DraftLaw, q: Any = None, *, exact: bool | None = None
) -> PrefixGap:
    r"""Brute-force :math:`\min_H [P(H) - Q(H)]` against the best level set of p/q (T7).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> g = prefix_optimality_gap(["1/2", "1/4", "1/4"], WithReplacement(["1/4", "1/4", "1/2"], 2))
    >>> g.gap, 1 + g.brute_value
    (Fraction(0, 1), Fraction(15, 16))
    """
    pv = Vector(p, "p")
    V_.check_on_vocabulary(pv.float, draft.V, "p")
    ex = _exact_flag(draft, exact, pv.rational)
    Qt = q_table(draft, ex)
    pl = list(pv.values(ex))
    qv = q_vector(draft, q, ex)
    V = draft.V
    zero = Fraction(0) if ex else 0.0
    P = [zero] * (2**V)
    for m in range(1, 2**V):
        low = (m & -m).bit_length() - 1
        P[m] = P[m & (m - 1)] + pl[low]
    F = [P[m] - Qt[m] for m in range(2**V)]
    bm = min(range(2**V), key=lambda m: (F[m], bin(m).count("1"), m))
    lv = level_sets(pl, qv)
    masks = [sum(1 << i for i in s) for s in lv]
    pm = min(masks, key=lambda m: (F[m], bin(m).count("1"), m))
    order = [i for s_prev, s in itertools.pairwise(lv) for i in sorted(set(s) - set(s_prev))]
    return PrefixGap(F[pm] - F[bm], F[bm], F[pm], _bits(bm, V), _bits(pm, V), ex, order)
