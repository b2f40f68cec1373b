r"""Subset selection (8) by brute force: α* = min_{H⊆Σ} [P(H) + 1 − Q(H)].

``subset`` evaluates all 2^V sets in floats (absolute accuracy ~ 2^V · V · eps);
``subset-exact`` does the same in exact rationals.  The minimiser with the fewest tokens, then the
smallest index mask, is returned, so H is deterministic.

Both refuse, before converting p or evaluating any Q(H), an instance with V > :data:`MAX_V`
or more than :data:`MAX_SUBSET_WORK` steps (2^V subsets × the law's cost of one Q(H),
``law.q_eval_work()``); the check never computes 2^V itself, so V = 10⁶ is refused at once.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from ..drafts import DraftLaw
from ..methods import register, timed
from . import _limits

__all__ = ["subset_selection", "subset_objective", "check_size", "MAX_V", "MAX_SUBSET_WORK"]

#: Largest vocabulary the brute force accepts.
MAX_V: int = 16
#: Largest work of the brute force: 2^V subsets × the steps of one Q(H) (``law.q_eval_work()``);
#: 2^22 admits V = 16 for the product-form laws with n <= 4.
MAX_SUBSET_WORK: int = 2**22


def check_size(draft: DraftLaw) -> int:
    """Refuse V > :data:`MAX_V`, or more than :data:`MAX_SUBSET_WORK` steps (2^V × the cost of
    one Q(H)), before any work.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement, WithoutReplacement
    >>> check_size(WithReplacement([0.5, 0.5], 3))  # 2^2 subsets x (n V = 6) steps
    24
    >>> check_size(WithoutReplacement([1 / 14] * 14, 5))
    Traceback (most recent call last):
    ...
    ValueError: instance too large for brute-force subset selection: needs 674,824,192 subset
    steps (2^14 subsets x 41,188 steps per Q(H)) (limit 4,194,304); it enumerates 2^V subsets
    (V <= 16); use method='fast' (the fast solver) or method='reduced' (the set-reduced flow:
    token sets instead of tuples)
    """
    what = "brute-force subset selection"
    hint = f"it enumerates 2^V subsets (V <= {MAX_V}); " + _limits.instead(draft, "fast", "reduced")
    if draft.V > MAX_V:
        _limits.check_subsets(draft.V, 2**MAX_V * MAX_V, what, hint)
    return _limits.check_subsets(
        draft.V, MAX_SUBSET_WORK, what, hint, per_subset=draft.q_eval_work()
    )


def subset_objective(p, draft: DraftLaw, H, exact: bool = False):
    """P(H) + 1 − Q(H) for one set H (mask or indices), in floats or exact rationals."""
    mask = np.zeros(draft.V, dtype=bool)
    mask[np.asarray(list(H) if not isinstance(H, np.ndarray) else np.flatnonzero(H), dtype=int)] = (
        True
    )
    one = Fraction(1) if exact else 1.0
    P = sum((p[i] for i in np.flatnonzero(mask)), one - one)
    return P + one - draft.Q(mask, exact=exact)


def subset_selection(p, draft: DraftLaw, *, exact: bool = False):
    """Return (α*, optimal mask) by enumerating every subset of Σ.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> a, H = subset_selection([Fraction(1, 2)] * 2, WithReplacement(["1/2", "1/2"], 2), exact=True)
    >>> a
    Fraction(1, 1)
    """
    check_size(draft)
    best, best_mask = None, None
    for k in range(draft.V + 1):
        for H in itertools.combinations(range(draft.V), k):
            val = subset_objective(p, draft, H, exact)
            if best is None or val < best:
                best, best_mask = val, H
    mask = np.zeros(draft.V, dtype=bool)
    mask[list(best_mask)] = True
    return best, mask


@register("subset", accuracy=1e-12, exact=False)
def _solve_subset(p, draft):
    """Brute force over the 2^V subsets of Σ in floats (V <= 16)."""
    check_size(draft)  # before converting p
    with timed() as t:
        a, H = subset_selection(list(map(float, p.float)), draft, exact=False)
    return dict(alpha=float(a), H=H, seconds=t.seconds)


@register("subset-exact", accuracy=0.0, exact=True)
def _solve_subset_exact(p, draft):
    """Brute force over the 2^V subsets of Σ in exact rationals (V <= 16)."""
    check_size(draft)  # before converting p to Fractions (seconds at V = 10^6)
    with timed() as t:
        a, H = subset_selection(p.exact, draft, exact=True)
    return dict(alpha=float(a), alpha_exact=a, H=H, seconds=t.seconds)
