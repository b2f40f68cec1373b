r"""Subset selection (8) by brute force: α* = min_{H⊆Σ} [P(H) + 1 − Q(H)].

``subset`` evaluates all 2^V sets in floats (absolute accuracy ~ 2^V · V · eps);
``subset-exact`` does the same in exact rationals.  The minimiser with the fewest tokens, then the
smallest index mask, is returned, so H is deterministic.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw
from ..methods import register, timed

#: Largest vocabulary the brute force accepts (2^V subsets).
MAX_V = 16


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
    V_.check_size(
        2**draft.V,
        2**MAX_V,
        "brute-force subset selection",
        f"it enumerates 2^V subsets (V <= {MAX_V}); use method='fast' or 'reduced'",
    )
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
    with timed() as t:
        a, H = subset_selection(list(map(float, p.float)), draft, exact=False)
    return dict(alpha=float(a), H=H, seconds=t.seconds)


@register("subset-exact", accuracy=0.0, exact=True)
def _solve_subset_exact(p, draft):
    with timed() as t:
        a, H = subset_selection(p.exact, draft, exact=True)
    return dict(alpha=float(a), alpha_exact=a, H=H, seconds=t.seconds)
