r"""Single-draft speculative sampling (docs/reference.md, "Verifiers"; T4).

Draw :math:`\hat x \sim q`; accept it with probability :math:`\min(1, p(\hat x)/q(\hat x))`;
otherwise output :math:`y \sim (p - q)^+ / \sum (p - q)^+`.  The output has law ``p`` and the
acceptance is :math:`\sum_x \min(p(x), q(x)) = 1 - TV(p, q)`, which is α* for one draft (T4).

Defined for every draft law with n = 1 (the law of its single draft is ``q``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw
from ._base import Verifier, add, inverse_cdf, pos_part_normalised

__all__ = ["Single", "single_marginal"]


def single_marginal(draft: DraftLaw, exact: bool | None = None) -> Any:
    """The law of the single draft of an n = 1 law: a float64 array, or a list of Fractions.

    For n = 1 the draft marginal is the law's reference q (greedy with n = 1: T is empty and
    q' = q; product: q_1; explicit: the table).
    """
    return draft.reference_q(exact=bool(exact))


class Single(Verifier):
    r"""Single-draft speculative sampling.

    .. math:: \Pr[\text{accept}] = \sum_x \min(p(x), q(x))

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> v = Single(WithReplacement(["1/2", "1/2"], 1))
    >>> v.exact(["3/4", "1/4"])
    (array([Fraction(3, 4), Fraction(1, 4)], dtype=object), Fraction(3, 4))
    >>> round(v.acceptance([0.75, 0.25], [0.5, 0.5], 1), 12)
    0.75
    """

    name = "single"
    laws = None
    n_required = 1
    law_hint = "a draft law with n = 1, e.g. WithReplacement(q, 1)"

    def _setup(self, p, draft, exact):
        q = single_marginal(draft, True) if exact else list(map(float, single_marginal(draft)))
        return p, q, pos_part_normalised(p, q, exact)

    def _given(self, ctx, tup):
        p, q, res = ctx
        (x,) = tup
        b = min(1, p[x] / q[x])
        out: dict[int, Any] = {}
        add(out, x, b)
        for y, r in enumerate(res):
            add(out, y, (1 - b) * r)
        return out

    def _sample(self, p, draft, t, g):
        q = np.asarray(single_marginal(draft), dtype=np.float64)
        x = t[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.minimum(1.0, p[x] / q[x])
        acc = g.random(len(x)) < b
        res = np.maximum(p - q, 0.0)
        if res.sum() <= 0:
            res = p
        return np.where(acc, x, inverse_cdf(res, g.random(len(x))))

    def has_closed_form(self, n):
        return n == 1

    def acceptance(self, p, q, n=1):
        r""":math:`\sum_x \min(p(x), q(x))` (n must be 1)."""
        n = V_.check_n(n)
        if n != 1:
            raise ValueError(
                f"n: the 'single' verifier is defined for n = 1 draft, got n = {n}; use "
                "'rrs-with' or 'k-seq' for i.i.d. drafts"
            )
        pv, qv, _ = self._pq(p, q, n)
        return float(np.minimum(pv, qv).sum())
