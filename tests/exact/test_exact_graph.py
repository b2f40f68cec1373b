"""The bipartite draft graph and the level-set rounding shared by the LP forms
(:mod:`mdsd_ot.exact._graph`).  Exact checks in Fractions; float sums within 1e-12."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from mdsd_ot import drafts as D
from mdsd_ot.exact import best_level_set, draft_graph, subset_value
from mdsd_ot.exact.subset import subset_selection


def test_draft_graph_edges_are_the_pairs_token_in_tuple():
    law = D.WithoutReplacement(["1/2", "1/4", "1/8", "1/8"], 3)
    g = draft_graph(law)
    assert g.K == 24 and g.tuples.tolist() == sorted(g.tuples.tolist())
    assert abs(g.w.sum() - 1.0) <= 1e-12
    pairs = list(zip(g.edge_i.tolist(), g.edge_k.tolist(), strict=True))
    assert len(pairs) == len(set(pairs)) == 3 * g.K
    assert set(pairs) == {(i, k) for k, t in enumerate(g.tuples.tolist()) for i in t}
    assert g.match_matrix().sum() == 3 * g.K


def test_draft_graph_with_repeated_tokens_has_one_edge_per_token():
    g = draft_graph(D.WithReplacement([0.5, 0.5], 3))
    k = g.tuples.tolist().index([0, 0, 0])
    assert [i for i, kk in zip(g.edge_i, g.edge_k, strict=True) if kk == k] == [0]


def test_subset_value_is_the_subset_objective():
    law = D.ConditionalPoisson([0.4, 0.3, 0.2, 0.1], 2)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    g = draft_graph(law)
    for H in itertools.product([False, True], repeat=4):
        H = np.array(H)
        assert abs(subset_value(p, g, H) - (p[H].sum() + 1.0 - law.Q(H))) <= 1e-12


def test_best_level_set_of_an_optimal_indicator_is_optimal():
    """y = 1_{H*} for an optimal H* is an optimal dual vertex (T2): its best level set attains
    α* (exactly, checked in Fractions)."""
    rng = np.random.default_rng(5)
    for _ in range(5):
        law = D.WithReplacement.random(rng, 5, 2)
        p = D.rational_simplex(rng, 5)
        alpha, Hstar = subset_selection(p, law, exact=True)
        H, _ = best_level_set(np.array([float(x) for x in p]), draft_graph(law), Hstar * 1.0)
        val = sum((p[i] for i in np.flatnonzero(H)), Fraction(0)) + 1 - law.Q(H, exact=True)
        assert val == alpha
