r"""The pair hand-over rule for sequential drafts without replacement, n >= 3 (``seq-pair``;
proofs/optimal_verifier.md §12).

The rule of ``cp-pair`` (:mod:`.pairs`): given the draft set S with highest slot y, select a
drafted x below y with probability :math:`\lambda(y, x)`, y otherwise.  Under sequential drafts
the kernel :math:`M(y, x) = \Pr[\text{top}(S) = y, x \in S]` is no product, so the hand-overs
on S are *thinned* by

.. math::

   r(S) = \frac{n! \prod_{j \in S} u_j}{\Sigma(S)}, \qquad
   \Sigma(S) = \sum_{\sigma} \prod_{m=1}^{n-1} \frac{1}{1 - w^\sigma_m}, \qquad
   u_j = (1 - q_j)^{-(n-1)/2}

(σ the orderings of S, :math:`w^\sigma_m` the mass of its first m tokens; q normalised).  Since
:math:`\Pr[S] = \Sigma(S) \prod_S q`, the thinned kernel is
:math:`n! \prod_S (q u)`: the conditional-Poisson kernel of the weights :math:`w = q u`, whose
flows are the cumulative sums of :func:`~.pairs.pair_flows`, and :math:`r(S) \le 1` by the
arithmetic–geometric mean inequality (Lemma 16), so a design that is a rule for ``cp-pair``'s
check is one here.  The top law D and the sub-law s come from the certified sequential Q on the
prefixes (:func:`~.swap.prefix_Q_of`).

Examples
--------
>>> import numpy as np
>>> from ...fast import alpha_star
>>> from .plan import chain_order
>>> p, q = np.array([0.05, 0.15, 0.3, 0.5]), np.array([0.4, 0.3, 0.2, 0.1])
>>> plan = seq_pair_plan(p, q, 3, chain_order(p, q))
>>> a = alpha_star(p, q, n=3, scheme="without")
>>> plan.construction, bool(0 <= a - plan.acceptance < 1e-9)
('seq-pair', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import permutations
from typing import Any

import numpy as np

from .cutlaw import total_mass
from .pairs import design_plan
from .pieces import cp_levels

__all__ = ["SetThinning", "seq_pair_plan", "thinning_weights", "exact_factor"]

EPS = float(np.finfo(np.float64).eps)

#: :math:`u_j` is taken this much (relatively) below :math:`(1 - q_j)^{-(n-1)/2}`, plus what
#: the rounding of :math:`1 - q_j` can add, so that :math:`r(S) \le 1` holds in exact
#: arithmetic for the floats stored.
SLACK: float = 1e-12


def thinning_weights(qn: np.ndarray, n: int) -> np.ndarray:
    r""":math:`u_j = (1 - \sigma_j)(1 - q_j)^{-(n-1)/2}`, :math:`\sigma_j` =
    :data:`SLACK` :math:`+ 4n\epsilon/(1 - q_j)` (q normalised, by slot).

    Examples
    --------
    >>> thinning_weights(np.array([0.75, 0.25]), 3).round(9).tolist()  # 1/(1 - q)
    [4.0, 1.333333333]
    """
    rest = 1.0 - qn
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        sigma = SLACK + 4.0 * n * EPS / rest
        return (1.0 - sigma) * rest ** (-(n - 1) / 2.0)


@dataclass
class SetThinning:
    r"""The thinning :math:`r(S)` of ``seq-pair`` by slot: ``qn`` the normalised q, ``u`` the
    weights of :func:`thinning_weights`, ``rel_error`` a bound on the relative error of
    :meth:`factor` (Lemma 16's rounding: :math:`2.02 (n^2/\delta + 2n^2 + 8)\epsilon`, δ the
    mass outside the n - 1 heaviest tokens).

    Examples
    --------
    >>> qn = np.array([0.5, 0.3, 0.2])
    >>> th = SetThinning(qn, thinning_weights(qn, 3), 3, 0.0)
    >>> float(th.factor(np.array([[0, 1, 2]]))[0]) <= 1.0
    True
    """

    qn: np.ndarray
    u: np.ndarray
    n: int
    rel_error: float

    def factor(self, own: np.ndarray) -> np.ndarray:
        r""":math:`r(S)` of every row of ``own`` ((B, n) distinct slots): :math:`\Sigma(S)` by
        the recursion over subsets :math:`f(C) = \sum_{x \in C} f(C \setminus x) / (1 -
        q(C \setminus x))` (:math:`f(\emptyset) = 1`, the empty set's factor 1), then
        :math:`n! \prod u / f(S)`."""
        own = np.asarray(own, dtype=np.int64)
        n = own.shape[1]
        qv = self.qn[own]
        N = 1 << n
        inv = np.ones((N, own.shape[0]))
        mass = np.zeros((N, own.shape[0]))
        for mask in range(1, N - 1):
            low = mask & -mask
            mass[mask] = mass[mask ^ low] + qv[:, low.bit_length() - 1]
            inv[mask] = 1.0 / (1.0 - mass[mask])
        f = np.zeros((N, own.shape[0]))
        f[0] = 1.0
        for mask in range(1, N):
            acc = np.zeros(own.shape[0])
            for i in range(n):
                if mask >> i & 1:
                    c = mask ^ (1 << i)
                    acc += f[c] * inv[c]
            f[mask] = acc
        num = np.full(own.shape[0], float(math.factorial(n)))
        for i in range(n):
            num *= self.u[own[:, i]]
        return num / f[N - 1]


def exact_factor(qn: list, u: list) -> Any:
    r""":math:`r(S)` in the numbers of ``qn`` (the normalised masses of S's tokens, e.g.
    Fractions) with the weights ``u`` (the rule's floats, exact as Fractions): every ordering
    summed.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> str(exact_factor([F(1, 2), F(1, 4), F(1, 4)], [F(1), F(1), F(1)]))  # 6 / Σ(S), Σ = 32
    '3/16'
    """
    n = len(qn)
    zero = qn[0] - qn[0]
    total = zero
    for sigma in permutations(range(n)):
        term, w = zero + 1, zero
        for m in range(n - 1):
            w = w + qn[sigma[m]]
            term = term / (1 - w)
        total = total + term
    num = zero + math.factorial(n)
    for x in u:
        num = num * x
    return num / total


def seq_pair_plan(
    p: np.ndarray, q: np.ndarray, n: int, order: np.ndarray,
    prefix: tuple[np.ndarray, float] | None = None,
):  # fmt: skip
    r"""The ``seq-pair`` :class:`~mdsd_ot.verifiers.chain.plan.Plan` of one position (n >= 3),
    or a string saying why the design does not fit (the caller then keeps ``seq-best``'s other
    plans).  ``prefix``: the sequential Q on the prefixes 0..V of ``order`` and its error
    bound (:func:`~.swap.prefix_Q_of`), when the caller has it.

    The law of the rule is :math:`T = D + n! \sum_{x<y} \theta_y g_x w_y w_x e_{n-2}(w \text{
    on } H_y \setminus x) (e_x - e_y)` (Lemma 15 with the thinned kernel); its a-priori bound
    adds to ``cp-pair``'s the error of D, :math:`2(V + 1)\,\beta_Q + \epsilon \sum D` (β_Q
    the bound of Q on every prefix), the rounding of the weights, and the sampler's relative
    error of r(S) times the handed-over flow.  ``info`` as :func:`~.pairs.pair_plan`'s.
    """
    from .plan import _transfer
    from .swap import prefix_Q_of

    V = len(order)
    if n < 3 or V <= n:
        return "n < 3 or V <= n"
    qs, ps = q[order], p[order]
    Q, q_err = prefix if prefix is not None else prefix_Q_of(qs, n, "seq-swap")
    D = np.diff(Q)
    np.maximum(D, 0.0, out=D)
    E = _transfer(ps, Q[1:])[0].copy()  # the transfer path of the sub-law (Theorem 1)
    s = D + (E[1:] - E[:-1])
    np.minimum(s, ps, out=s)
    np.maximum(s, 0.0, out=s)
    qn = qs / total_mass(qs)[0]  # correctly rounded (math.fsum's algorithm, compiled)
    heavy = np.argpartition(qn, V - (n - 1))[V - (n - 1) :]
    rest = np.ones(V, dtype=bool)
    rest[heavy] = False
    delta = total_mass(qn[rest])[0] * (1.0 - 4.0 * EPS)  # the least mass outside n - 1 drafts
    if not delta > 0.0:
        return "the n - 1 heaviest tokens hold all of q"
    u = thinning_weights(qn, n)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        w = qn * u
        e = cp_levels(w, n)
    if not (np.all(np.isfinite(w)) and all(np.isfinite(x[-1]) for x in e)):
        return "thinned weights out of range"
    rel = 2.02 * (n * n / delta + 2 * n * n + 8) * EPS
    law_extra = 2.0 * (V + 1) * float(q_err) + EPS * float(np.sum(D))
    return design_plan(
        p, q, n, order, "seq-pair", w, e, 1.0 / math.factorial(n), D, s, E, float(q_err),
        law_extra=law_extra, flow_rel=rel, extra_depth=4 * n + 4,
        thin=SetThinning(qn, u, n, rel),
    )  # fmt: skip
