"""The greedy and SpecHub verifiers' closed-form acceptance on drafts almost sure of one token.

``greedy_acceptance`` used to judge the mass off T as ``1 - q(T)``, which rounds to 0 for
q = [1] + [1e-16] * 5 (a law the draft classes accept): it refused a valid q.  It now looks at
the mass off T itself.  Tolerance: 1e-12 against the exact acceptance in Fractions.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from mdsd_ot import drafts, verifiers
from mdsd_ot.fast import alpha_star

P = np.array([0.3, 0.2, 0.15, 0.15, 0.1, 0.1])
Q = np.array([1.0] + [1e-16] * 5)  # sums to 1.0 in floats


@pytest.mark.parametrize(
    "kind, law", [("greedy", drafts.Greedy(Q, 2)), ("spechub", drafts.SpecHub(Q))]
)
def test_closed_form_accepts_a_near_point_mass(kind, law):
    v = verifiers.get(kind, law)
    a = v.acceptance(P, Q, 2)
    exact = v.exact([Fr(x) for x in P.tolist()], law)[1]
    assert abs(a - float(exact)) <= 1e-12
    assert abs(a - float(alpha_star(P, law))) <= 1e-12


@pytest.mark.parametrize("kind, scheme", [("greedy", "the greedy scheme"), ("spechub", "SpecHub")])
def test_point_mass_error_names_the_scheme_and_a_fix(kind, scheme):
    law_q = np.array([1.0, 0.0, 0.0])
    v = verifiers.get(kind)
    with pytest.raises(ValueError, match=rf"q: {scheme} .* use .*more support"):
        v.acceptance(np.array([0.5, 0.25, 0.25]), law_q, 2)
