r"""The greedy verifier (Hu et al. §5.1; docs/reference.md T9) and the SpecHub verifier built on it.

Greedy drafts: :math:`T = \mathrm{Top}_{n-1}(q)` and a last draft :math:`\hat x \sim q' = q^{\neg T}`.
The verifier accepts :math:`\hat x` w.p. :math:`\min(1, p(\hat x)/q'(\hat x))`; otherwise it outputs
:math:`y \sim r`, :math:`r(y) \propto p(y) - 1[y \notin T] \min(p(y), q'(y))`, accepted when
:math:`y \in T`.  Its output law is p and its acceptance is (T9)

.. math:: \alpha^*_{greedy} = P(T) + \sum_{x \notin T} \min(p(x), q'(x)).

SpecHub (n = 2): every draft pair contains the hub :math:`a = \mathrm{Top}_1(q)` once; its other
token x has, as a set, probability :math:`q(x) + q(a) q(x)/(1 - q(a)) = q'(x)` with
:math:`q' = q^{\neg a}` (docs/reference.md: the same Q as greedy with n = 2).  The SpecHub verifier
implemented here is the hub-and-spoke coupling on that sparse support: accept x w.p.
:math:`\min(1, p(x)/q'(x))`, otherwise draw y from :math:`r \propto p(a) \delta_a + (p - q')^+`
(off a), accepted when y = a.  It ignores the order of the pair.  It is lossless, and its
acceptance :math:`p(a) + \sum_{x \ne a} \min(p(x), q'(x))` equals α* of the SpecHub law (the LP
over SpecHub's sparse support solved exactly), so it is at least the acceptance of any other
SpecHub verifier, including the paper's own LP-based scheme (which we do not reproduce).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import Greedy, SpecHub, greedy_top
from ._base import Verifier, add, inverse_cdf, zero_of

__all__ = ["GreedyVerifier", "SpecHubVerifier", "greedy_acceptance"]


def greedy_acceptance(p: np.ndarray, q: np.ndarray, n: int) -> float:
    r"""T9: :math:`P(T) + \sum_{x \notin T} \min(p(x), q'(x))`, T = Top_{n-1}(q), q' = q^{¬T}."""
    T = list(greedy_top(q, n - 1))
    mask = np.ones(len(q), dtype=bool)
    mask[T] = False
    if not np.any(q[mask] > 0):  # the mass off T itself, never 1 - q(T) (which rounds to 0)
        raise ValueError(
            f"q: the greedy scheme with n={n} needs positive mass outside its top {n - 1} "
            "token(s); use a smaller n or a q with more support"
        )
    qp = np.where(mask, q, 0.0) / q[mask].sum()
    return float(p[T].sum() + np.minimum(p[mask], qp[mask]).sum())


class _TopThenOne(Verifier):
    """Shared rule: fixed token set T in every tuple, one random token x ~ q' outside T."""

    def _T_and_qprime(self, draft, exact):  # pragma: no cover - abstract
        raise NotImplementedError

    def _other(self, tup: tuple[int, ...], T: tuple[int, ...]) -> int:  # pragma: no cover
        raise NotImplementedError

    def _setup(self, p, draft, exact):
        T, qp = self._T_and_qprime(draft, exact)
        zero = zero_of(exact)
        num = [p[y] if y in T else p[y] - min(p[y], qp[y]) for y in range(len(p))]
        s = sum(num, zero)
        res = [x / s for x in num] if s > 0 else list(p)
        return p, T, qp, res

    def _given(self, ctx, tup):
        p, T, qp, res = ctx
        x = self._other(tup, T)
        with np.errstate(over="ignore"):  # a subnormal q'(x): the ratio is inf, b = 1
            b = min(1, p[x] / qp[x])
        out: dict[int, Any] = {}
        add(out, x, b)
        if b != 1:
            for y, r in enumerate(res):
                add(out, y, (1 - b) * r)
        return out

    def _sample(self, p, draft, t, g):
        T, qp = self._T_and_qprime(draft, False)
        qp = np.asarray(qp, dtype=np.float64)
        x = self._other_batch(t, T)
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.minimum(1.0, p[x] / qp[x])
        acc = g.random(len(x)) < b
        res = p - np.minimum(p, qp)
        res[list(T)] = p[list(T)]
        res = np.maximum(res, 0.0)
        if res.sum() <= 0:
            res = p
        return np.where(acc, x, inverse_cdf(res, g.random(len(x))))


class GreedyVerifier(_TopThenOne):
    r"""The T9 greedy verifier; attains :math:`\alpha^*` of the greedy draft law.

    Examples
    --------
    >>> from mdsd_ot.drafts import Greedy
    >>> v = GreedyVerifier(Greedy(["1/2", "3/10", "1/5"], 2))
    >>> law, acc = v.exact(["1/5", "1/5", "3/5"])
    >>> [str(x) for x in law], acc
    (['1/5', '1/5', '3/5'], Fraction(4, 5))
    >>> round(v.acceptance([0.2, 0.2, 0.6], [0.5, 0.3, 0.2], 2), 12)
    0.8
    """

    name = "greedy"
    laws = ("greedy",)
    law_hint = "Greedy(q, n) (top n-1 tokens of q plus one draw from the rest)"

    def _T_and_qprime(self, draft, exact):
        return tuple(draft.T), list(draft.q_prime(exact))

    def _other(self, tup, T):
        if tuple(tup[:-1]) != tuple(T):
            raise ValueError(f"draft_tuple: greedy drafts start with the top tokens {T}, got {tup}")
        return tup[-1]

    def _other_batch(self, t, T):
        if len(T) and not np.all(t[:, :-1] == np.asarray(T)[None, :]):
            raise ValueError(
                f"draft_tokens: greedy drafts start with the top n-1 tokens {T} of q in every row"
            )
        return t[:, -1]

    def has_closed_form(self, n):
        return True

    def acceptance(self, p, q, n):
        r"""T9: :math:`P(T) + \sum_{x \notin T} \min(p(x), q'(x))`."""
        pv, qv, n = self._pq(p, q, n)
        Greedy(qv, n)  # the law's own support check and message
        return greedy_acceptance(pv, qv, n)


class SpecHubVerifier(_TopThenOne):
    r"""Hub-and-spoke verifier for SpecHub drafts (n = 2); attains α* of the SpecHub law.

    Examples
    --------
    >>> from mdsd_ot.drafts import SpecHub
    >>> v = SpecHubVerifier(SpecHub(["1/2", "3/10", "1/5"]))
    >>> law, acc = v.exact(["1/5", "1/5", "3/5"])
    >>> [str(x) for x in law], acc
    (['1/5', '1/5', '3/5'], Fraction(4, 5))
    """

    name = "spechub"
    laws = ("spechub",)
    law_hint = "SpecHub(q) (n = 2: the hub Top_1(q) plus one other token)"

    def _T_and_qprime(self, draft, exact):
        a = draft.a
        qv = list(draft.qvals(exact))
        rest = sum((v for y, v in enumerate(qv) if y != a), zero_of(exact))  # not 1 - q(a)
        qp = [zero_of(exact) if y == a else qv[y] / rest for y in range(len(qv))]
        return (a,), qp

    def _other(self, tup, T):
        (a,) = T
        if a not in tup or tup[0] == tup[1]:
            raise ValueError(f"draft_tuple: SpecHub pairs contain the hub {a} once, got {tup}")
        return tup[1] if tup[0] == a else tup[0]

    def _other_batch(self, t, T):
        (a,) = T
        if not np.all((t[:, 0] == a) ^ (t[:, 1] == a)):
            raise ValueError(f"draft_tokens: SpecHub pairs contain the hub token {a} exactly once")
        return np.where(t[:, 0] == a, t[:, 1], t[:, 0])

    def has_closed_form(self, n):
        return n == 2

    def acceptance(self, p, q, n=2):
        r""":math:`p(a) + \sum_{x \ne a} \min(p(x), q'(x))`: the T9 formula with n = 2."""
        n = V_.check_n(n)
        if n != 2:
            raise ValueError(f"n: SpecHub is defined for n = 2 drafts only, got n={n}")
        pv, qv, n = self._pq(p, q, n)
        SpecHub(qv)  # the law's own support check and message
        return greedy_acceptance(pv, qv, 2)
