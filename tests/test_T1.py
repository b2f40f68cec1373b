"""T1 (equivalence): every registered method against every other on seeded random instances.

Each installed method of :data:`mdsd_ot.exact.METHODS` solves the same instances; each is compared
with exact brute-force subset selection (``subset-exact``, Fractions), so any two methods agree
within the sum of their registered accuracies.  Exact methods must match to the last digit.
Instances: every scheme (explicit joint laws included), Dirichlet concentrations 0.05, 0.5 and 5,
zeros in p and in q, ties, masses near 1e-12, V from 2 to 6, n from 1 to 3.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import drafts, solve
from mdsd_ot.drafts import Vector
from mdsd_ot.exact import METHODS
from testkit import dirichlet

SCHEMES = list(drafts.SCHEMES)  # the registry order (the seeds depend on the position)
CONCENTRATIONS = (0.05, 0.5, 5.0)


def random_instances(scheme: str, count: int, seed: int):
    """``count`` valid seeded instances of ``scheme`` (draws outside the law's domain redrawn)."""
    rng = np.random.default_rng([seed, SCHEMES.index(scheme)])
    out = []
    while len(out) < count:
        conc = CONCENTRATIONS[len(out) % 3]
        V = int(rng.integers(2, 7))
        n = 2 if scheme == "spechub" else int(rng.integers(1, 4))
        if V**n > 216:  # keep brute force and the dense forms quick: V up to 6, n up to 3
            continue
        p = dirichlet(rng, V, conc)
        try:
            if scheme == "product":
                law = drafts.Product([dirichlet(rng, V, conc) for _ in range(n)])
            elif scheme == "explicit":
                law = drafts.Explicit(dirichlet(rng, V**n, conc).reshape((V,) * n))
            else:
                law = drafts.make(scheme, dirichlet(rng, V, conc), n)
        except ValueError:  # e.g. n above the support of q: outside the law's domain
            continue
        out.append((p, law))
    return out


def _methods():
    return [m for m in sorted(METHODS) if METHODS[m].is_installed()]


def check_all_methods(p, law) -> int:
    pv = Vector(p, "p")
    ref = solve(pv, law, method="subset-exact").alpha_exact
    ran = 0
    for name in _methods():
        try:
            r = solve(pv, law, method=name)
        except ValueError as exc:  # a law outside the method's domain (fast: product/explicit)
            assert name == "fast" and law.scheme in ("product", "explicit"), (name, exc)
            continue
        m = METHODS[name]
        if m.exact and m.accuracy == 0:
            assert r.alpha_exact is not None, name
        if r.alpha_exact is not None:  # exact routes match to the last digit
            assert r.alpha_exact == ref, (name, law.spec(), r.alpha_exact, ref)
        err = abs(Fraction(r.alpha) - ref)
        assert err <= Fraction(m.accuracy) + Fraction(1, 10**15), (name, law.spec(), float(err))
        ran += 1
    return ran


@pytest.mark.parametrize("scheme", SCHEMES)
def test_T1_every_method_agrees(scheme):
    """12 instances per scheme in the default run (every concentration, several V and n)."""
    for p, law in random_instances(scheme, 12, seed=7):
        assert check_all_methods(p, law) >= 9


@pytest.mark.slow
@pytest.mark.parametrize("scheme", SCHEMES)
def test_T1_every_method_agrees_sweep(scheme):
    """The full sweep: 500 seeded instances per scheme, every method against every other."""
    for p, law in random_instances(scheme, 500, seed=2026):
        check_all_methods(p, law)
