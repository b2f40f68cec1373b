"""The hunt's conjectures (mdsd_ot/theory/conjectures.py): exact confirmations accept the
documented counterexamples and reject instances where the conjecture holds."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts
from mdsd_ot.theory import conjectures as K

F = Fraction


def test_registry_and_names():
    assert list(K.CONJECTURES) == [
        "greedy-vs-without",
        "en-vs-sequential",
        "prefix-greedy",
        "prefix-product",
        "qconvex-greedy",
        "qconvex-spechub",
        "qconvex-product",
        "rrs-without-vs-with",
    ]
    with pytest.raises(ValueError, match="hunt --list"):
        K.get("qconvex-without")


def test_greedy_vs_without_confirms_the_t9b_instance():
    p = [F(3, 100), F(17, 25), F(9, 50), F(11, 100)]
    q = [F(13, 50), F(21, 100), F(13, 50), F(27, 100)]
    w = K.get("greedy-vs-without").confirm([p, q], 3)
    assert w["kind"] == "greedy_vs_without" and w["alpha_greedy"] < w["alpha_without"]
    assert w["value"] == w["alpha_without"] - w["alpha_greedy"] > 0


def test_greedy_objective_uses_the_closed_form():
    x = K.SearchPoint([np.array([0.2, 0.2, 0.6]), np.array([0.5, 0.3, 0.2])], 2)
    g = drafts.Greedy([0.5, 0.3, 0.2], 2)
    expected = K._level_alpha(x.vecs[0], drafts.WithoutReplacement(x.vecs[1], 2), x.vecs[1])
    expected -= float(g.alpha_closed_form(x.vecs[0], exact=False))
    assert K.get("greedy-vs-without").violation(x) == expected


def test_qconvexity_confirmation_rejects_a_q_convex_law():
    confirm = K.q_convexity_confirmation(lambda v, n: drafts.WithoutReplacement(v[1], n))
    q = [F(2, 5), F(3, 10), F(1, 5), F(1, 10)]
    assert confirm([q, q], 3) is None
    w = K.get("qconvex-greedy").confirm([q, q], 2)
    assert w["kind"] == "qconvex" and w["value"] == F(5, 12)


def test_prefix_confirmation_on_the_t7b_instance():
    p = [F(1, 2), F(2, 5), F(1, 20), F(1, 20)]
    q = [F(3, 10), F(1, 4), F(1, 4), F(1, 5)]
    w = K.get("prefix-greedy").confirm([p, q], 2)
    assert w["gap"] == F(3, 70) and w["alpha"] == F(67, 70)
    assert K.get("prefix-greedy").confirm([q, q], 2) is None  # p = q: α* = 1 at H = Σ


def test_objective_of_an_undefined_law_raises_value_error():
    # greedy with n = 2 needs mass outside its top token; the hunt scores this point -inf
    f = K.q_convexity_objective(lambda x: drafts.Greedy(x.vecs[1], x.n))
    x = K.SearchPoint([np.array([0.5, 0.5]), np.array([1.0, 0.0])], 2)
    with pytest.raises(ValueError, match="positive mass outside"):
        f(x)
