r"""Recursive rejection sampling, with and without replacement (docs/reference.md, "Verifiers").

Residual :math:`r \leftarrow p`; for :math:`j = 1..n`, with :math:`q_j` the law draft j was drawn
from (``q`` with replacement; ``q`` with the earlier drafts removed and renormalised without),
accept :math:`\bar i_j` w.p. :math:`\min(1, r(\bar i_j)/q_j(\bar i_j))`; on rejection
:math:`r \leftarrow (r - q_j)^+` normalised.  If every draft is rejected, output :math:`y \sim r`.

Each step is single-draft speculative sampling against the current residual, so the output has
law ``p`` (induction on the steps, T11).  A rejected draft x has :math:`r(x) < q_j(x)`, so the new
residual vanishes at x: the acceptance (output ∈ drafts) is the probability that some step accepts.

The sampler for sampling without replacement uses a one-parameter form of the residual (derived
here, checked against the definition by the tests): after rejecting the drafts
:math:`D_j = \{\bar i_1..\bar i_{j-1}\}`,

.. math::

   r_j(x) = \frac{(p(x) - c_j q(x))^+}{F(c_j)}, \quad F(c) = \sum_x (p(x) - c\, q(x))^+, \quad
   c_1 = 0, \quad c_{j+1} = c_j + \frac{F(c_j)}{1 - q(D_j)},

and the term at x ∈ D_j is already 0.  So one sort of p/q and prefix sums give every residual in
O(log V), whatever the path.  With replacement :math:`q(D_j)` is replaced by 0, the residuals no
longer depend on the path and the acceptance has the closed form

.. math:: 1 - \prod_{k=1}^{n} \Bigl(1 - \sum_x \min(p_k(x), q(x))\Bigr), \quad p_1 = p,\
   p_{k+1} = (p_k - q)^+ / \textstyle\sum (p_k - q)^+ .

Without replacement and n = 2 the acceptance also has a closed form (derived from the same
residual form; the step-2 residual is :math:`(p - q)^+ / F(1)` whatever the rejected first draft):

.. math::

   1 - F(1) + \sum_x (q(x) - p(x))^+ \, A_2(1 - q(x)), \quad
   A_2(s) = \sum_y \min\bigl(r_2(y), q(y)/s\bigr),

evaluated in O(V log V).  For n ≥ 3 the acceptance depends on the path; it is computed by
enumeration (small V) or estimated by simulation.
"""

from __future__ import annotations

import numpy as np

from ._base import Verifier, add, pos_part_normalised, zero_of

__all__ = ["RRSWith", "RRSWithout", "ResidualFamily"]


#: Below this, 1 - q(D) is recomputed as a sum over the remaining tokens (no cancellation).
_CANCEL = 1e-4


def _mass_without(q: np.ndarray) -> np.ndarray:
    """:math:`\\sum_{y \\ne x} q(y)` for every x, from prefix and suffix sums (no cancellation)."""
    pre = np.concatenate([[0.0], np.cumsum(q)[:-1]])
    suf = np.concatenate([np.cumsum(q[::-1])[::-1][1:], [0.0]])
    return pre + suf


class ResidualFamily:
    r"""The residuals :math:`(p - c q)^+ / F(c)` for every c ≥ 0, after one sort of p/q.

    Tokens are sorted by :math:`p/q` descending (``q = 0 < p`` first, ``p = 0`` last); the support
    of the residual at level c is the prefix of tokens with ratio > c.
    """

    def __init__(self, p: np.ndarray, q: np.ndarray):
        self.p, self.q = p, q
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.inf)
        ratio[p <= 0] = 0.0
        self.order = np.argsort(-ratio, kind="stable")
        self.ratio_desc = ratio[self.order]
        self._neg_ratio = -self.ratio_desc  # ascending, for searchsorted
        self.cumP = np.concatenate([[0.0], np.cumsum(p[self.order])])
        self.cumQ = np.concatenate([[0.0], np.cumsum(q[self.order])])

    def support_size(self, c: np.ndarray) -> np.ndarray:
        """Number of tokens with ratio > c (the prefix holding the residual's mass)."""
        return np.searchsorted(self._neg_ratio, -np.asarray(c, dtype=np.float64), side="left")

    def F(self, c: np.ndarray) -> np.ndarray:
        r""":math:`F(c) = \sum_x (p(x) - c q(x))^+` (vectorised over c)."""
        c = np.asarray(c, dtype=np.float64)
        k = self.support_size(c)
        return np.maximum(self.cumP[k] - c * self.cumQ[k], 0.0)

    def value(self, c: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Unnormalised residual :math:`(p(x) - c q(x))^+` at tokens x (one c per x)."""
        return np.maximum(self.p[x] - c * self.q[x], 0.0)

    def sample(self, c: np.ndarray, u: np.ndarray) -> np.ndarray:
        """One draw per row from :math:`(p - c q)^+` (normalised) for uniforms u in [0, 1)."""
        c = np.asarray(c, dtype=np.float64)
        k = self.support_size(c)
        total = self.cumP[k] - c * self.cumQ[k]
        target = u * total
        lo = np.zeros_like(k)  # invariant: G(lo) <= target < G(hi), G(m) = cumP[m] - c cumQ[m]
        hi = k.copy()
        while True:
            active = hi - lo > 1
            if not active.any():
                break
            mid = (lo + hi) // 2
            g = self.cumP[mid] - c * self.cumQ[mid]
            go_hi = active & (g > target)
            go_lo = active & ~(g > target)
            hi = np.where(go_hi, mid, hi)
            lo = np.where(go_lo, mid, lo)
        return self.order[np.minimum(lo, len(self.order) - 1)]


class _RRS(Verifier):
    replacement: bool = True

    def _setup(self, p, draft, exact):
        return p, list(draft.qvals(exact)), exact

    def _given(self, ctx, tup):
        p, q, exact = ctx
        zero = zero_of(exact)
        r, out, stay = list(p), {}, 1 if exact else 1.0
        used: list[int] = []
        for x in tup:
            if self.replacement:
                qj = q
            else:
                s = sum((q[y] for y in range(len(q)) if y not in used), zero)  # 1 - q(D_j)
                qj = [zero if y in used else q[y] / s for y in range(len(q))]
            b = min(1, r[x] / qj[x])
            add(out, x, stay * b)
            stay = stay * (1 - b)
            if stay == 0:
                return out
            r = pos_part_normalised(r, qj, exact)
            used.append(x)
        for y, ry in enumerate(r):
            add(out, y, stay * ry)
        return out

    def _sample(self, p, draft, t, g):
        fam = ResidualFamily(p, draft.q)
        q = draft.q
        B, n = t.shape
        c = np.zeros(B)
        used_q = np.zeros(B)  # q(D_j), the mass of the rejected drafts
        out = np.full(B, -1, dtype=np.int64)
        live = np.ones(B, dtype=bool)
        for j in range(n):
            x = t[:, j]
            if self.replacement:
                s = np.ones(B)
            else:
                s = 1.0 - used_q
                for row in np.flatnonzero(live & (s < _CANCEL)):  # rare: q(D_j) close to 1
                    s[row] = np.delete(q, t[row, :j]).sum()
            Fc = fam.F(c)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                r_x = np.where(Fc > 0, fam.value(c, x) / Fc, 0.0)
                b = np.minimum(1.0, r_x * s / q[x])
            acc = live & (g.random(B) < b)
            out[acc] = x[acc]
            live &= ~acc
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                c = np.where(live, c + Fc / s, c)
            used_q = used_q + np.where(live, q[x], 0.0)
        if live.any():
            out[live] = fam.sample(c[live], g.random(int(live.sum())))
        return out


class RRSWith(_RRS):
    r"""Recursive rejection sampling for i.i.d. drafts (with replacement).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> v = RRSWith(WithReplacement(["1/2", "1/2"], 2))
    >>> v.exact(["3/4", "1/4"])
    (array([Fraction(3, 4), Fraction(1, 4)], dtype=object), Fraction(7, 8))
    >>> round(v.acceptance([0.75, 0.25], [0.5, 0.5], 2), 12)
    0.875
    """

    name = "rrs-with"
    laws = ("with",)
    law_hint = "WithReplacement(q, n) (i.i.d. drafts)"
    replacement = True

    def has_closed_form(self, n):
        return True

    def acceptance(self, p, q, n):
        r""":math:`1 - \prod_{k=1}^{n} (1 - \sum_x \min(p_k(x), q(x)))`, p_{k+1} = (p_k - q)^+ normalised."""
        pk, q, n = self._pq(p, q, n)
        stay = 1.0
        for _ in range(n):
            beta = float(np.minimum(pk, q).sum())
            stay *= 1.0 - beta
            d = np.maximum(pk - q, 0.0)
            s = d.sum()
            if s <= 0 or stay <= 0:
                break
            pk = d / s
        return 1.0 - max(stay, 0.0)


class RRSWithout(_RRS):
    r"""Recursive rejection sampling for drafts sampled sequentially without replacement.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithoutReplacement
    >>> v = RRSWithout(WithoutReplacement(["1/2", "1/4", "1/4"], 2))
    >>> law, acc = v.exact(["1/4", "1/4", "1/2"])
    >>> list(law), acc
    ([Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)], Fraction(7, 8))
    >>> round(v.acceptance([0.25, 0.25, 0.5], [0.5, 0.25, 0.25], 2), 12)
    0.875
    """

    name = "rrs-without"
    laws = ("without",)
    law_hint = "WithoutReplacement(q, n) (sequential sampling without replacement)"
    replacement = False

    def has_closed_form(self, n):
        return n <= 2

    def acceptance(self, p, q, n):
        r"""Closed form for n ≤ 2 (module docstring); n ≥ 3 raises NotImplementedError."""
        pv, qv, n = self._pq(p, q, n)
        if n == 1:
            return float(np.minimum(pv, qv).sum())
        if np.count_nonzero(qv) < 2:
            raise ValueError(
                "q: sampling without replacement draws n = 2 distinct tokens but q has fewer "
                "than 2 tokens with positive mass; use n = 1"
            )
        F1 = float(np.maximum(pv - qv, 0.0).sum())
        if F1 <= 0:
            return 1.0
        r2 = np.maximum(pv - qv, 0.0) / F1
        # A_2(s) = sum_y min(r2(y), q(y)/s): sort by r2/q; tokens with r2/q < 1/s give r2.
        fam = ResidualFamily(r2, qv)
        rej = np.maximum(qv - pv, 0.0)  # Pr[first draft = x and rejected]
        xs = np.flatnonzero(rej > 0)
        s = _mass_without(qv)[xs]  # 1 - q(x) without cancellation
        inv = 1.0 / s
        k = fam.support_size(inv)  # tokens with r2/q > 1/s contribute q/s
        head_q = fam.cumQ[k]
        head_r = fam.cumP[k]
        A2 = (1.0 - head_r) + head_q * inv
        return float(1.0 - F1 + np.dot(rej[xs], A2))
