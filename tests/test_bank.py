"""Every registered method against the 192 independently computed instances of alpha_bank.json.

Exact methods must match to the last digit (Fraction equality); float methods within the
accuracy they register (``METHODS[name].accuracy``).  The optimal set H each method returns must
itself attain α* (subset-selection form (8), T1), checked exactly: within the method's accuracy
for the LP forms, and within ten times max(accuracy, 1e-12) for the others.  For the dual LP
also T2 on every instance: LP optimum = 0/1 optimum = α*, at an integral vertex.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import mdsd_ot
from mdsd_ot.exact import METHODS
from testkit import bank_alpha, bank_law, load_bank

BANK = load_bank()
#: The LP forms (T1): their H must attain α* within their registered accuracy itself.
LP_FORMS = ("primal", "primal-cvxpy", "bmatching", "dual", "emd")


def _installed():
    return sorted(m.name for m in METHODS.values() if m.is_installed())


@pytest.mark.parametrize("method", _installed())
def test_method_agrees_with_bank(method):
    m = METHODS[method]
    if method in LP_FORMS:
        assert m.accuracy <= 1e-9, (method, m.accuracy)
    checked = 0
    for k, inst in enumerate(BANK):
        law = bank_law(inst)
        if law is None:
            continue
        try:
            r = mdsd_ot.solve(inst["p"], law, method=method)
        except ValueError as exc:
            # a method may refuse a law outside its domain (e.g. "fast" on product laws)
            assert "method=" in str(exc) or "use" in str(exc), exc
            continue
        exact = bank_alpha(inst)
        if m.exact:
            assert r.alpha_exact == exact, (k, inst, r)
        assert abs(r.alpha - float(exact)) <= m.accuracy + 1e-15, (k, method, r.alpha, exact)
        if r.H is not None:
            pex = [Fraction(x) for x in inst["p"]]
            H = np.flatnonzero(r.H)
            val = sum((pex[i] for i in H), Fraction(0)) + 1 - law.Q(H, exact=True)
            tol = m.accuracy if method in LP_FORMS else max(m.accuracy, 1e-12) * 10
            assert abs(val - exact) <= tol, (k, method, H)
        if method == "dual":  # T2 on the bank: LP = IP = exact alpha, at an integral vertex
            assert r.info["integral"], k
            assert abs(r.info["lp"] - r.info["ip"]) <= 1e-9, k
            assert abs(r.info["lp"] - float(exact)) <= 1e-9, k
        checked += 1
    assert checked >= 40, f"{method} solved only {checked} bank instances"


def test_bank_greedy_outside_domain_is_rejected_and_consistent():
    # The 3 greedy bank instances with n - 1 >= V have no token outside the top n - 1: the last
    # draft is undefined and Greedy refuses them.  Their bank value is 1, which is what any law
    # whose deterministic drafts already cover Σ gets (every output is among the drafts).
    odd = [i for i in BANK if i["scheme"] == "greedy" and i["n"] - 1 >= len(i["p"])]
    assert len(odd) == 3
    for inst in odd:
        with pytest.raises(ValueError, match="needs positive mass outside its top"):
            mdsd_ot.drafts.from_spec(inst)
        assert bank_alpha(inst) == 1
