"""Brute-force subset selection (8): the objective and the deterministic choice of H."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from mdsd_ot import drafts as D
from mdsd_ot.exact.subset import subset_objective, subset_selection


def test_ties_go_to_the_fewest_tokens_then_the_smallest_indices():
    """p = q = (1/2, 1/2), n = 2: ∅ and Σ both give 1 (the singletons 5/4): H = ∅."""
    half = [Fraction(1, 2)] * 2
    alpha, H = subset_selection(half, D.WithReplacement(half, 2), exact=True)
    assert alpha == 1 and H.tolist() == [False, False]
    # n = 1, p = q: every H gives 1; again the empty set
    alpha, H = subset_selection([0.25, 0.75], D.WithReplacement([0.25, 0.75], 1))
    assert abs(alpha - 1.0) <= 1e-12 and not H.any()


def test_objective_takes_masks_or_indices():
    law = D.WithoutReplacement(["1/2", "3/10", "1/5"], 2)
    p = [Fraction(1, 5), Fraction(1, 5), Fraction(3, 5)]
    by_index = subset_objective(p, law, [0, 1], exact=True)
    by_mask = subset_objective(p, law, np.array([True, True, False]), exact=True)
    assert by_index == by_mask == Fraction(2, 5) + 1 - Fraction(18, 35)
