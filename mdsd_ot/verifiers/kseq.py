r"""K-SEQ (SpecTr, Sun et al. 2023) for i.i.d. drafts (docs/reference.md, "Verifiers").

With :math:`\rho \ge 1` and :math:`a(\rho) = \sum_x \min(p(x)/\rho, q(x))`, examine the drafts in
order and accept :math:`\bar i_j` w.p. :math:`\min(1, p(\bar i_j) / (\rho q(\bar i_j)))`; if none is
accepted, output a draw from the residual

.. math::

   r = \frac{p - \beta \min(p/\rho, q)}{(1 - a)^n}, \qquad \beta = \frac{1 - (1 - a)^n}{a}.

The first acceptance at draft j with token x has probability :math:`(1-a)^{j-1}\min(q(x), p(x)/\rho)`,
so the accepted part of the output has mass :math:`\beta \min(p/\rho, q)` and the residual's
numerator sums to :math:`1 - \beta a = (1 - a)^n`: the output has law ``p`` for *every* ρ with a
non-negative residual, i.e. with :math:`\beta(\rho) \le \rho`, i.e.
:math:`g(\rho) = \rho a(\rho) - (1 - (1 - a(\rho))^n) \ge 0`.  ``g`` is non-decreasing
(:math:`\rho a = \sum \min(p, \rho q)` grows, a shrinks) with :math:`g(n) \ge 0`
(since :math:`1 - (1-a)^n \le n a`), and the acceptance :math:`1 - (1 - a(\rho))^n` shrinks with ρ,
so K-SEQ uses the smallest root ρ* ∈ [1, n] of g.

Numerics: ρ* solves a polynomial equation and is irrational in general.  :func:`solve_rho` returns
a ρ with :math:`g(\rho) \ge 0` *as evaluated* (float64, or exactly in Fractions for rational inputs)
within ~1e-15 of ρ*: the verifier with that ρ is exactly lossless in Fractions (the residual is
non-negative, checked) and its acceptance is within ~1e-15 of the closed form at ρ*.
``g`` is evaluated in O(log V) after one sort of p/q, so the closed form is fast at V = 152,064.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ._base import Verifier, add, inverse_cdf, zero_of

__all__ = ["KSeq", "solve_rho", "kseq_residual"]

_BISECT_STEPS = 200


class _G:
    """g(ρ) and a(ρ) in O(log V) after sorting p/q ascending (floats)."""

    def __init__(self, p: np.ndarray, q: np.ndarray, n: int):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.inf)
        order = np.argsort(ratio, kind="stable")
        self.ratio = ratio[order]
        self.cumP = np.concatenate([[0.0], np.cumsum(p[order])])
        self.sufQ = np.concatenate([np.cumsum(q[order][::-1])[::-1], [0.0]])
        self.n = n

    def a_and_rho_a(self, rho: float) -> tuple[float, float]:
        # ratio < ρ: min(p, ρ q) = p; ratio >= ρ: ρ q.
        k = int(np.searchsorted(self.ratio, rho, side="left"))
        rho_a = float(self.cumP[k] + rho * self.sufQ[k])
        return rho_a / rho, rho_a

    def g(self, rho: float) -> float:
        a, rho_a = self.a_and_rho_a(rho)
        return rho_a - (1.0 - (1.0 - a) ** self.n)


def _g_exact(p: list, q: list, n: int, rho: Fraction) -> Fraction:
    a = sum((min(pi / rho, qi) for pi, qi in zip(p, q, strict=True)), Fraction(0))
    return rho * a - (1 - (1 - a) ** n)


def solve_rho(p: Any, q: Any, n: int, *, exact: bool = False) -> Any:
    r"""The smallest ρ ≥ 1 with :math:`\rho a(\rho) \ge 1 - (1 - a(\rho))^n` (to ~1e-15, from above).

    Parameters
    ----------
    p, q : (V,) sequences
        Target and draft distributions (floats, or Fractions with ``exact=True``).
    n : int
        Number of i.i.d. drafts.
    exact : bool
        Return a Fraction whose condition holds exactly in rational arithmetic.

    Examples
    --------
    >>> round(float(solve_rho([0.5, 0.5], [0.9, 0.1], 2)), 9)
    1.584428877
    >>> solve_rho([Fraction(1, 2)] * 2, [Fraction(1, 2)] * 2, 3, exact=True)
    Fraction(1, 1)
    """
    pf = np.asarray(p, dtype=np.float64)
    qf = np.asarray(q, dtype=np.float64)
    G = _G(pf, qf, n)
    lo, hi = 1.0, float(n)
    if G.g(lo) >= 0 or n == 1:
        rho_f = 1.0
    else:
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if G.g(mid) >= 0:
                hi = mid
            else:
                lo = mid
        rho_f = hi
    if not exact:
        return rho_f
    pe, qe = [Fraction(x) for x in p], [Fraction(x) for x in q]
    rho = Fraction(rho_f)
    step = Fraction(1, 2**50)
    while rho < n and _g_exact(pe, qe, n, rho) < 0:  # nudge up until it holds exactly
        rho = min(rho * (1 + step), Fraction(n))
        step *= 2
    return rho


def kseq_residual(p: list, q: list, n: int, rho: Any, exact: bool) -> tuple[Any, list]:
    r"""``(a, numerator)``: :math:`a(\rho)` and :math:`p - \beta \min(p/\rho, q)` (not clipped)."""
    zero = zero_of(exact)
    m = [min(pi / rho, qi) for pi, qi in zip(p, q, strict=True)]
    a = sum(m, zero)
    if a == 0:  # disjoint supports: nothing is ever accepted, the residual is p
        return a, list(p)
    beta = (1 - (1 - a) ** n) / a
    return a, [pi - beta * mi for pi, mi in zip(p, m, strict=True)]


class KSeq(Verifier):
    r"""K-SEQ for i.i.d. drafts; acceptance :math:`1 - (1 - a(\rho^*))^n`.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> v = KSeq(WithReplacement(["9/10", "1/10"], 2))
    >>> law, acc = v.exact(["1/2", "1/2"])
    >>> [str(x) for x in law]
    ['1/2', '1/2']
    >>> round(float(acc), 9), round(v.acceptance([0.5, 0.5], [0.9, 0.1], 2), 9)
    (0.658442888, 0.658442888)
    """

    name = "k-seq"
    laws = ("with",)
    law_hint = "WithReplacement(q, n) (i.i.d. drafts)"

    def _setup(self, p, draft, exact):
        q = list(draft.qvals(exact))
        rho = solve_rho(p, q, draft.n, exact=exact)
        a, num = kseq_residual(p, q, draft.n, rho, exact)
        zero = zero_of(exact)
        if exact:
            assert all(x >= 0 for x in num), "K-SEQ residual must be non-negative"
        num = [max(x, zero) for x in num]  # float rounding only (see module docstring)
        s = sum(num, zero)
        res = [x / s for x in num] if s > 0 else list(p)
        return p, q, rho, res

    def _given(self, ctx, tup):
        p, q, rho, res = ctx
        out: dict[int, Any] = {}
        stay = 1
        for x in tup:
            b = min(1, p[x] / (rho * q[x]))
            add(out, x, stay * b)
            stay = stay * (1 - b)
            if stay == 0:
                return out
        for y, r in enumerate(res):
            add(out, y, stay * r)
        return out

    def _sample(self, p, draft, t, g):
        q = draft.q
        rho = solve_rho(p, q, draft.n)
        _, num = kseq_residual(p, q, draft.n, rho, False)
        res = np.maximum(np.asarray(num, dtype=np.float64), 0.0)
        if res.sum() <= 0:
            res = p
        B, n = t.shape
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            b = np.minimum(1.0, p[t] / (rho * q[t]))
        acc = g.random((B, n)) < b
        first = np.argmax(acc, axis=1)
        any_acc = acc.any(axis=1)
        out = t[np.arange(B), first]
        return np.where(any_acc, out, inverse_cdf(res, g.random(B)))

    def has_closed_form(self, n):
        return True

    def acceptance(self, p, q, n):
        r""":math:`1 - (1 - a(\rho^*))^n` with ρ* from :func:`solve_rho` (O(V log V))."""
        pv, qv, n = self._pq(p, q, n)
        G = _G(pv, qv, n)
        rho = solve_rho(pv, qv, n)
        a, _ = G.a_and_rho_a(rho)
        return float(1.0 - (1.0 - a) ** n)
