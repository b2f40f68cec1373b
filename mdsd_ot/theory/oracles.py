r"""Independent re-computations that the claim checks compare the package against.

Everything else in :mod:`mdsd_ot.theory` reads a law's mathematics from the law itself
(``law.Q``, ``ConditionalPoisson.e``, ``Greedy.alpha_closed_form``, ``law.set_weights``, ...).
The functions here deliberately do *not*: each recomputes a quantity from its definition, by
enumeration, so that a check comparing the two can fail when the package is wrong.  Each
docstring says what the oracle is independent of.  They are slow (enumerations over Σⁿ or
small LPs) and meant for V ≤ 6.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..drafts import DraftLaw, Greedy
from . import tum

__all__ = ["conditioned_iid_Q", "greedy_verifier_law", "dual_lp"]


def conditioned_iid_Q(q: list[Fraction], n: int, H: tuple[int, ...]) -> Fraction:
    r"""Pr[all n drafts in H] for n i.i.d. draws from q conditioned on being pairwise distinct.

    .. math::

       Q(H) = \frac{\sum_{\bar i \in H^n \text{ distinct}} \prod_j q(\bar i_j)}
                   {\sum_{\bar i \in \Sigma^n \text{ distinct}} \prod_j q(\bar i_j)}

    by enumerating the ordered distinct tuples.  Independent of the elementary symmetric
    polynomials and of :class:`~mdsd_ot.drafts.ConditionalPoisson` (its ``Q``, ``e`` and joint
    law): T12 compares the three.

    Examples
    --------
    >>> conditioned_iid_Q([Fraction(1, 2), Fraction(3, 10), Fraction(1, 5)], 2, (0, 1))
    Fraction(15, 31)
    """
    Hs = set(H)
    num = den = Fraction(0)
    for t in itertools.permutations(range(len(q)), n):
        w = math.prod((q[i] for i in t), start=Fraction(1))
        den += w
        if Hs.issuperset(t):
            num += w
    return num / den


def greedy_verifier_law(p: list[Fraction], d: Greedy) -> tuple[list[Fraction], Fraction]:
    r"""T9's verifier enumerated exactly from its definition: (output law, acceptance rate).

    The drafts are T (the top n − 1 tokens) and :math:`\hat x \sim q'`.  Accept :math:`\hat x`
    with probability :math:`\min(1, p(\hat x)/q'(\hat x))`; on rejection output
    :math:`y \sim r`, :math:`r(y) \propto p(y) - m(y)` with :math:`m(y) = \min(p(y), q'(y))`
    off T and 0 on T; the output is accepted when it is a draft.  Uses only the law's T and q'
    (:meth:`~mdsd_ot.drafts.Greedy.q_prime`); independent of :mod:`mdsd_ot.verifiers` (whose
    ``greedy`` verifier T9 checks against this) and of the solvers.

    Examples
    --------
    >>> law, acc = greedy_verifier_law(
    ...     [Fraction(1, 5), Fraction(1, 5), Fraction(3, 5)], Greedy(["1/2", "3/10", "1/5"], 2)
    ... )
    >>> law == [Fraction(1, 5), Fraction(1, 5), Fraction(3, 5)], acc
    (True, Fraction(4, 5))
    """
    qp = d.q_prime(True)
    T = set(d.T)
    m = [Fraction(0) if y in T else min(p[y], qp[y]) for y in range(d.V)]
    rest = 1 - sum(m, Fraction(0))
    r = [(p[y] - m[y]) / rest if rest else Fraction(0) for y in range(d.V)]
    law = [Fraction(0)] * d.V
    acc = Fraction(0)
    for x in range(d.V):
        if qp[x] == 0:
            continue
        a = min(Fraction(1), p[x] / qp[x])
        law[x] += qp[x] * a
        acc += qp[x] * a
        for y in range(d.V):
            law[y] += qp[x] * (1 - a) * r[y]
            if y in T:
                acc += qp[x] * (1 - a) * r[y]
    return law, acc


def dual_lp(p: Any, d: DraftLaw) -> tuple[float, np.ndarray]:
    r"""Solve the dual (10) with HiGHS dual simplex on the theory's own matrix: (value, vertex).

    .. math::

       \min_{y, z \ge 0} \sum_i p(i) y_i + \sum_{\bar i} p_{draft}(\bar i) z_{\bar i}
       \quad \text{s.t.}\quad y_i + z_{\bar i} \ge 1 \ \ (i \in \bar i)

    The matrix is :func:`mdsd_ot.theory.tum.dual_matrix` (built from the definition), the
    solver scipy's ``highs-ds``; independent of :mod:`mdsd_ot.exact.dual` (method ``'dual'``),
    which T2 checks against it.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> value, x = dual_lp([0.5, 0.25, 0.25], WithReplacement([0.25, 0.25, 0.5], 2))
    >>> round(value, 9), x[:3].round(9).tolist()  # α* = 15/16; y = 1[i ∈ H*], H* = {1, 2}
    (0.9375, [0.0, 1.0, 1.0])
    """
    from scipy.optimize import linprog

    A, ts = tum.dual_matrix(d, identity=False)
    items = d.joint_items(exact=False)
    c = np.concatenate([np.asarray([float(v) for v in p]), [float(items[t]) for t in ts]])
    res = linprog(c, A_ub=-A, b_ub=-np.ones(A.shape[0]), bounds=(0, None), method="highs-ds")
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"dual LP failed: {res.message}")
    return float(res.fun), res.x
