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
Four sequential drafts from six tokens: the design fits; the hand-overs on the draft set of
the four heaviest draft tokens are thinned to two thirds:

>>> import numpy as np
>>> from mdsd_ot.fast import alpha_star
>>> from mdsd_ot.verifiers.chain.plan import chain_order
>>> p = np.array([0.05, 0.1, 0.15, 0.2, 0.2, 0.3])
>>> q = np.array([0.3, 0.25, 0.15, 0.1, 0.1, 0.1])
>>> plan = seq_pair_plan(p, q, 4, chain_order(p, q))
>>> eps = alpha_star(p, q, n=4, scheme="without") - plan.acceptance
>>> plan.construction, bool(0 <= eps < 1e-9), round(plan.info["set_sum"], 3)
('seq-pair', True, 0.825)
>>> round(float(plan.pair.thin.factor(plan.slots_of(np.array([[0, 1, 2, 3]])))[0]), 3)
0.677
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import permutations
from typing import Any

import numpy as np

from ...fast import _backend as bk
from .cutlaw import total_mass
from .pairs import design_plan
from .pieces import cp_levels

__all__ = [
    "SetThinning", "seq_pair_plan", "thinning", "thinning_weights", "exact_factor", "rest_mass",
    "rest_error", "set_factor",
]  # fmt: skip

EPS = float(np.finfo(np.float64).eps)

#: :math:`u_j` is taken this much (relatively) below :math:`(1 - q_j)^{-(n-1)/2}`, plus what
#: the rounding of :math:`1 - q_j` can add, so that :math:`r(S) \le 1` holds in exact
#: arithmetic for the floats stored.
SLACK: float = 1e-12


def thinning_weights(qn: Any, n: int) -> Any:
    r"""The weights of the thinning, by slot (q normalised; a (V,) row or (B, V) rows, numpy or
    torch): :math:`u_j = \kappa_j (1 - q_j)^{-(n-1)/2}` (Lemma 16), and for the heaviest
    token h of each row the larger of that and :math:`\kappa_h^2 A_h / \max_{j \ne h}
    u_j^{n-1}`, :math:`A_h = \frac1n \sum_{k=0}^{n-1} (1 - q_h)^{-k}` (Lemma 16′: a draft set
    holds h at most once, and the orderings that draw h early are the ones the geometric mean
    undercounts).  :math:`\kappa_j = (1 -` :data:`SLACK` :math:`- 8n\epsilon)(1 +
    \epsilon_j)^{-(n-1)}`, :math:`\epsilon_j = 4\epsilon/(1 - q_j)`, covers the rounding:
    the computed :math:`1 - q_j` may exceed the exact one (of the exact normalised masses) by
    the factor :math:`1 + \epsilon_j` at most, and the powers and sums round :math:`\le 4n`
    times; κ stays positive however close :math:`q_j` is to 1.

    Examples
    --------
    >>> thinning_weights(np.array([0.25, 0.75]), 3).round(9).tolist()  # 1/(1 - q)
    [1.333333333, 4.0]
    >>> thinning_weights(np.array([0.1, 0.1, 0.8]), 3).round(6).tolist()  # h: A_h / u_j^2
    [1.111111, 1.111111, 8.37]
    """
    if bk.is_numpy_array(qn):  # a token of q = 1 gives infinite weights: refused by callers
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return _weights(qn, n)
    return _weights(qn, n)


def _weights(qn: Any, n: int) -> Any:
    """:func:`thinning_weights` without the floating-point state."""
    xp = bk.namespace(qn)
    rows = qn[None, :] if qn.ndim == 1 else qn
    rest = 1.0 - rows
    kappa = (1.0 - SLACK - 8.0 * n * EPS) * (1.0 + 4.0 * EPS / rest) ** -(n - 1)
    u = kappa * rest ** (-(n - 1) / 2.0)
    if rows.shape[-1] > 1:
        zero = xp.zeros_like(rows)
        at_h = bk.arange_like(rows, rows.shape[-1])[None, :] == xp.argmax(rows, axis=-1)[:, None]
        other = xp.max(xp.where(at_h, xp.full_like(u, -math.inf), u), axis=-1)
        c = 1.0 / xp.sum(xp.where(at_h, rest, zero), axis=-1)
        mean = sum(c**k for k in range(n)) / n
        kap_h = xp.sum(xp.where(at_h, kappa, zero), axis=-1)
        u_h = xp.maximum(
            xp.sum(xp.where(at_h, u, zero), axis=-1), kap_h**2 * mean / other ** (n - 1)
        )
        u = xp.where(at_h, u_h[:, None], u)
    return u[0] if qn.ndim == 1 else u


def _sort_desc(x: Any) -> Any:
    """``x`` sorted along its last axis, largest first (numpy or torch)."""
    if bk.is_numpy_array(x):
        return -np.sort(-x, axis=-1)
    return bk.namespace(x).sort(x, axis=-1, descending=True)


def rest_mass(total: tuple[Any, Any], masses: Any) -> Any:
    r"""The mass outside a few tokens, :math:`\sum q - \sum_{j \in C} q_j`, for each row of
    ``masses`` ((..., k), k >= 1, their masses; numpy or torch): ``total`` (hi, lo) the
    double-double sum of all masses (numbers, or arrays that broadcast against
    ``masses[..., 0]``), less the row's masses from the largest down.  Relative error at most
    :math:`(k + 1)\epsilon + k(k - 1)\epsilon\, q_{(2)} / r` (r the result, :math:`q_{(2)}`
    the row's second-largest mass): every step rounds once, relative to its own result, which is
    at most r plus the masses still to come; the first is exact when the largest mass is at
    least half the total.

    Examples
    --------
    >>> rest_mass((1.0, 0.0), np.array([[0.75, 1e-17]])).tolist()  # 1 - 0.75 exact, then 1e-17
    [0.25]
    """
    m = _sort_desc(masses)
    r = total[0] - m[..., 0]
    r = r + total[1]
    for i in range(1, m.shape[-1]):
        r = r - m[..., i]
    return r


def set_factor(qv: Any, uv: Any, total: tuple[Any, Any]) -> Any:
    r""":math:`r(S) = n! \prod_S u / \Sigma(S)` of every draft set, from its masses ``qv`` and
    weights ``uv`` ((..., n), numpy or torch) and the double-double ``total`` of the masses
    (as :func:`rest_mass`): :math:`\Sigma(S)` by the recursion over subsets :math:`f(C) =
    \sum_{x \in C} f(C \setminus x) / (1 - q(C \setminus x))` (:math:`f(\emptyset) = 1`,
    the empty set's factor 1; the masses outside by :func:`rest_mass`).  Sets whose factor is
    not finite (rows that are no plan) get 0: no hand-over.

    Examples
    --------
    >>> q = np.array([[0.5, 0.25, 0.25]])
    >>> float(set_factor(q, np.ones_like(q), (1.0, 0.0))[0])  # 6 / Σ(S), Σ = 32
    0.1875
    """
    xp = bk.namespace(qv)
    n = qv.shape[-1]
    N = 1 << n
    one = xp.ones_like(qv[..., 0])
    inv = [one] * N
    for mask in range(1, N - 1):
        members = [i for i in range(n) if mask >> i & 1]
        inv[mask] = 1.0 / rest_mass(total, xp.stack([qv[..., i] for i in members], axis=-1))
    f = [one] + [None] * (N - 1)
    for mask in range(1, N):
        acc = xp.zeros_like(one)
        for i in range(n):
            if mask >> i & 1:
                c = mask ^ (1 << i)
                acc = acc + f[c] * inv[c]
        f[mask] = acc
    num = one * float(math.factorial(n))
    for i in range(n):
        num = num * uv[..., i]
    r = num / f[N - 1]
    return xp.where(xp.isfinite(r), r, xp.zeros_like(r))


def rest_error(n: int, second: float, delta: float) -> float:
    r"""A bound on the relative error of :meth:`SetThinning.factor`: every mass outside a
    proper subset of a draft set (:func:`rest_mass`, less than n tokens; plus 2ε for q's own
    normalisation) has relative error at most :math:`\epsilon_r = (n + 3)\epsilon + n(n -
    2)\epsilon\, q_{(2)}/\delta` (``second`` the second-largest mass, ``delta`` a lower bound
    of the mass outside the n - 1 heaviest tokens); each of the n! terms of Σ(S) is a product of
    n - 1 reciprocals of them, the recursion sums at most n terms n times, and
    :math:`n! \prod u` and the division round n + 1 times: in all at most
    :math:`1.01\,(3n^2 + 6n + n^3 q_{(2)}/\delta)\,\epsilon`.

    Examples
    --------
    >>> rest_error(4, 0.1, 0.5) < 1e-13
    True
    """
    return 1.01 * (3 * n * n + 6 * n + n**3 * second / delta) * EPS


@dataclass
class SetThinning:
    r"""The thinning :math:`r(S)` of ``seq-pair`` by slot: ``qn`` the normalised q, ``total``
    their sum as a double-double (hi, lo), ``u`` the weights of :func:`thinning_weights`,
    ``rel_error`` a bound on the relative error of :meth:`factor` (:func:`rest_error`).

    Examples
    --------
    >>> qn = np.array([0.5, 0.3, 0.2])
    >>> th = SetThinning(qn, (1.0, 0.0), thinning_weights(qn, 3), 3, 0.0)
    >>> float(th.factor(np.array([[0, 1, 2]]))[0]) <= 1.0
    True
    """

    qn: np.ndarray
    total: tuple[float, float]
    u: np.ndarray
    n: int
    rel_error: float

    def factor(self, own: np.ndarray) -> np.ndarray:
        """:math:`r(S)` of every row of ``own`` ((B, n) distinct slots): :func:`set_factor`."""
        own = np.asarray(own, dtype=np.int64)
        return set_factor(self.qn[own], self.u[own], self.total)


def thinning(qs: np.ndarray, n: int) -> SetThinning | str:
    """The :class:`SetThinning` of the masses ``qs`` (by slot, any positive sum; n >= 2 and at
    least n positive masses), or why not: q normalised by its correctly rounded sum, that sum
    as a double-double, the weights of :func:`thinning_weights` and the error bound of
    :func:`rest_error` with a certified lower bound δ of the mass outside the n - 1 heaviest.

    Examples
    --------
    >>> th = thinning(np.array([2.0, 1.0, 1.0]), 3)
    >>> th.qn.tolist(), th.total, bool(th.rel_error < 1e-13)
    ([0.5, 0.25, 0.25], (1.0, 0.0), True)
    """
    V = len(qs)
    qn = qs / total_mass(qs)[0]  # correctly rounded (math.fsum's algorithm, compiled)
    total = total_mass(qn)  # Σ qn as a double-double: the sampler's masses outside its sets
    heavy = np.argpartition(qn, V - (n - 1))[V - (n - 1) :]
    top = np.sort(qn[heavy])[::-1]
    second = float(top[1]) if n > 2 else 0.0
    est = float(rest_mass(total, top[None, :])[0])  # the mass outside the n - 1 heaviest
    delta = (est - n * (n - 2) * EPS * second) / (1.0 + (n + 3) * EPS) * (1.0 - EPS)
    if not delta > 0.0:
        return "the n - 1 heaviest tokens hold all of q"
    u = thinning_weights(qn, n)
    if not (np.all(u > 0) and np.all(np.isfinite(u))):  # r(S) >= 0 needs u > 0
        return "thinned weights out of range"
    return SetThinning(qn, total, u, n, rest_error(n, second, delta))


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
    prefix: tuple[np.ndarray, Any] | None = None,
    path: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
):  # fmt: skip
    r"""The ``seq-pair`` :class:`~mdsd_ot.verifiers.chain.plan.Plan` of one position (n >= 3),
    or a string saying why the design does not fit (the caller then keeps ``seq-best``'s other
    plans).  ``prefix``: the sequential Q on the prefixes 0..V of ``order`` and its error
    bound (:func:`~.swap.prefix_Q_of`; the bound of every prefix, or their largest), and
    ``path`` its (D, s, E) (:func:`~.swap.sublaw_path`), when the caller has them.

    The law of the rule is :math:`T = D + n! \sum_{x<y} \theta_y g_x w_y w_x e_{n-2}(w \text{
    on } H_y \setminus x) (e_x - e_y)` (:math:`H_y` the slots below y; Lemma 15 with the
    thinned kernel); its a-priori bound
    adds to ``cp-pair``'s the error of D, :math:`\sum_k (\beta_k + \beta_{k-1}) + \epsilon
    \sum D` (β_k the bound of Q on prefix k; :math:`2(V + 1) \max \beta` where only the
    largest is given), the rounding of the weights, and the sampler's relative error of r(S)
    (:func:`rest_error`) times the handed-over flow.  ``info`` as :func:`~.pairs.pair_plan`'s.
    """
    from .swap import prefix_Q_of, sublaw_path

    V = len(order)
    if n < 3 or V <= n:
        return "n < 3 or V <= n"
    qs, ps = q[order], p[order]
    Q, q_err = prefix if prefix is not None else prefix_Q_of(qs, n, "seq-swap", per_prefix=True)
    D, s, E = path if path is not None else sublaw_path(ps, Q)
    thin = thinning(qs, n)
    if isinstance(thin, str):
        return thin
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        w = thin.qn * thin.u
        e = cp_levels(w, n)
    if not (np.all(np.isfinite(w)) and all(np.isfinite(x[-1]) for x in e)):
        return "thinned weights out of range"
    rel = thin.rel_error
    if np.ndim(q_err):  # per prefix: D_k's error is at most err_k + err_{k-1}
        d_err = 2.0 * float(np.sum(q_err)) - float(q_err[0]) - float(q_err[-1])
        q_err = float(np.max(q_err))
    else:
        d_err = 2.0 * (V + 1) * float(q_err)
    law_extra = d_err + EPS * float(np.sum(D))
    return design_plan(
        p, q, n, order, "seq-pair", w, e, 1.0 / math.factorial(n), D, s, E, float(q_err),
        law_extra=law_extra, flow_rel=rel, extra_depth=4 * n + 4,
        thin=thin,
    )  # fmt: skip
