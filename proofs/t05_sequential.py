r"""Machine checks for the proof of T5 for sequential without-replacement drafts, every n.

The proof (``proofs/T05_q_convexity.md``) works with the *clock model*: for masses
:math:`h = (h_1, \dots, h_m) \ge 0` inside a set and a total mass :math:`\rho \ge 0` outside it,

.. math::

   Q_k(h; \rho) = \Pr[\text{the first } k \text{ sequential draws from } (h, \rho)
   \text{ all fall in } h]
   = \sum_{i_1, \dots, i_k \text{ distinct}} \prod_{j=1}^{k} \frac{h_{i_j}}{\rho + c_j},
   \qquad c_j = \textstyle\sum_i h_i - h_{i_1} - \dots - h_{i_{j-1}},

the outside merged into one token, :math:`Q_0 = 1`; the law's :math:`Q(H)` is
:math:`Q_n(q|_H;\, 1 - q(H))`.  The proof has three steps, each checked here:

- Lemma A (convexity in :math:`\rho`): every term of the sum is a positive constant times
  :math:`g(\rho) = \prod_j (\rho + c_j)^{-1}`, and
  :math:`g'' = g\,[(\sum_j \frac{1}{\rho + c_j})^2 + \sum_j \frac{1}{(\rho + c_j)^2}] > 0`
  (:func:`logconvex_identity`, symbolic).
- Lemma B (absorption identity), with :math:`R = \rho + u > 0`:
  :math:`Q_n(h \cup \{u\}; \rho) = Q_{n-1}(h; \rho) - \frac{\rho}{R}[Q_{n-1}(h; R) - Q_n(h; R)]`
  (:func:`absorption_symbolic`, symbolic for :math:`|h| \le 2` (3 under ``slow``);
  :func:`sweep`, exact rationals on random instances).
- Lemma C (splitting): :math:`Q_n(h \cup \{a, b\}; \rho) \ge Q_n(h \cup \{a + b\}; \rho)`
  (proved by a coupling; :func:`splitting_certificate` certifies it symbolically for
  :math:`|h| \le 1` (2 under ``slow``) and :func:`sweep` checks it exactly on random instances).

:func:`sweep` also checks the chain :math:`D_1 \le (\varphi(a+b) - \varphi(a))/b \le D_2` and that
:func:`q_inside` agrees with :meth:`mdsd_ot.drafts.WithoutReplacement.Q`.  The random checks are
numerical evidence in exact arithmetic, not part of the proof.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from typing import Any

import sympy as sp

__all__ = [
    "q_inside",
    "absorption_rhs",
    "absorption_symbolic",
    "logconvex_identity",
    "splitting_certificate",
    "chain",
    "adversarial_q",
    "sweep",
]


def q_inside(h: list[Any], rho: Any, k: int) -> Any:
    r""":math:`Q_k(h; \rho)`: the first k sequential draws from masses (h, ρ) all fall in h.

    Works on Fractions and on sympy expressions (masses given as symbols are taken as
    non-zero).  Sums over the drawn sets with the sequential probabilities (a DP over subsets
    of size < k).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> q_inside([F(1, 2), F(3, 10)], F(1, 5), 2)  # docs/reference.md T12b: 18/35
    Fraction(18, 35)
    >>> q_inside([F(1, 2)], F(1, 2), 2), q_inside([], F(1), 0)
    (Fraction(0, 1), Fraction(1, 1))
    """
    zero = 0 * rho
    if k == 0:
        return zero + 1
    m = len(h)
    total = sum(h, zero) + rho
    prob: dict[int, Any] = {0: zero + 1}
    for _ in range(k):
        nxt: dict[int, Any] = {}
        for mask, p in prob.items():
            rem = total - sum((h[i] for i in range(m) if mask >> i & 1), zero)
            for i in range(m):
                if not mask >> i & 1 and h[i] != 0:
                    nxt[mask | 1 << i] = nxt.get(mask | 1 << i, zero) + p * h[i] / rem
        prob = nxt
    return sum(prob.values(), zero)


def absorption_rhs(h: list[Any], u: Any, rho: Any, n: int) -> Any:
    r"""Right side of Lemma B: :math:`Q_{n-1}(h;\rho) - \frac{\rho}{R}[Q_{n-1}(h;R) - Q_n(h;R)]`.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> h, u, rho = [F(1, 5), F(1, 10)], F(3, 10), F(2, 5)
    >>> absorption_rhs(h, u, rho, 2) == q_inside(h + [u], rho, 2)
    True
    """
    R = rho + u
    return q_inside(h, rho, n - 1) - rho / R * (q_inside(h, R, n - 1) - q_inside(h, R, n))


def absorption_symbolic(max_m: int = 2) -> int:
    """Lemma B as an identity of rational functions in symbolic masses, for every
    :math:`|h| \\le` ``max_m`` and every n = 1..|h|+2 (n = |h|+2 is the all-zero edge case).
    Returns the number of identities checked."""
    hs = sp.symbols(f"h0:{max_m}", positive=True)
    u, rho = sp.symbols("u rho", positive=True)
    count = 0
    for m in range(max_m + 1):
        h = list(hs[:m])
        for n in range(1, m + 3):
            diff = q_inside(h + [u], rho, n) - absorption_rhs(h, u, rho, n)
            assert sp.cancel(sp.together(diff)) == 0, (m, n)
            count += 1
    return count


def logconvex_identity(max_k: int = 3) -> int:
    r"""Lemma A: for :math:`g = \prod_{j \le k} (\rho + c_j)^{-1}`,
    :math:`g'' = g\,[(\sum_j (\rho + c_j)^{-1})^2 + \sum_j (\rho + c_j)^{-2}]` for k = 1..max_k,
    so g is convex for ρ ≥ 0 when every :math:`c_j > 0`.  Returns max_k."""
    rho = sp.Symbol("rho", nonnegative=True)
    cs = sp.symbols(f"c1:{max_k + 1}", positive=True)
    for k in range(1, max_k + 1):
        g = sp.Mul(*[1 / (rho + c) for c in cs[:k]])
        inv = [1 / (rho + c) for c in cs[:k]]
        claim = g * (sum(inv) ** 2 + sum(t**2 for t in inv))
        assert sp.cancel(sp.together(sp.diff(g, rho, 2) - claim)) == 0, k
    return max_k


def _clock_paths(items: list[frozenset[int]], n: int, gens: list[Any], one: Any) -> list[Any]:
    """Every ordered draw of n distinct items as (product of the drawn masses, the sets of
    masses still in the urn before each draw); an item is a set of indices into ``gens``."""
    full = frozenset().union(*items)
    out = []
    for path in itertools.permutations(range(len(items)), n):
        left, rems, num = full, [], one
        for i in path:
            rems.append(left)
            num *= sum((gens[j] for j in items[i]), 0 * one)
            left = left - items[i]
        out.append((num, rems))
    return out


def splitting_certificate(max_m: int = 1) -> int:
    r"""Lemma C symbolically: :math:`Q_n(h \cup \{a,b\}; \rho) - Q_n(h \cup \{a+b\}; \rho) = N/D`
    has :math:`D > 0` and every coefficient of N of the sign that makes it ≥ 0, in the free
    positive masses (h, a, b, ρ); every :math:`|h| \le` ``max_m``, n = 1..|h|+3.

    D is the product of every distinct clock denominator :math:`\rho + c` of either side, a sum
    of free masses, so D has positive coefficients.  N is formed exactly in a polynomial ring,
    with no gcd and no factoring (multivariate factoring made the run time erratic): a draw
    :math:`i_1 \dots i_n` contributes :math:`\pm\prod_j h_{i_j}` times the forms of D that
    its own denominators leave out.  N/D is also compared with :func:`q_inside` at a rational
    point.  Returns the number of certified cases."""
    names = [f"h{i}" for i in range(max_m)] + ["a", "b", "rho"]
    ring, *gens = sp.ring(names, sp.QQ)
    ia, ib, ir = max_m, max_m + 1, max_m + 2
    point = [sp.QQ(k + 2, 3 * k + 7) for k in range(len(names))]
    exact = [Fraction(k + 2, 3 * k + 7) for k in range(len(names))]
    count = 0
    for m in range(max_m + 1):
        singles = [frozenset([i]) for i in range(m)]
        split = [*singles, frozenset([ia]), frozenset([ib])]
        merged = [*singles, frozenset([ia, ib])]
        for n in range(1, m + 4):
            sides = [_clock_paths(s, n, gens, ring.one) for s in (split, merged)]
            forms = sorted({r for side in sides for _, rems in side for r in rems}, key=sorted)
            form = {f: sum((gens[j] for j in f), gens[ir]) for f in forms}
            den = ring.one
            for f in forms:
                den *= form[f]
            num = ring.zero
            for sign, side in zip((1, -1), sides, strict=True):
                for term, rems in side:
                    for f in forms:
                        if f not in rems:
                            term *= form[f]
                    num += sign * term
            assert all(c > 0 for c in den.coeffs()), (m, n)
            assert all(c >= 0 for c in num.coeffs()), (m, n)
            at = list(zip(gens, point, strict=True))
            got = Fraction(str(num.evaluate(at) if num else 0)) / Fraction(str(den.evaluate(at)))
            hv = exact[:m]
            want = q_inside([*hv, exact[ia], exact[ib]], exact[ir], n) - q_inside(
                [*hv, exact[ia] + exact[ib]], exact[ir], n
            )
            assert got == want, (m, n, got, want)
            count += 1
    return count


def chain(q: list[Fraction], n: int, H: list[int], x: int, y: int) -> tuple[Fraction, ...]:
    r"""The proof's chain for one triple: returns :math:`(D_1, M, D_2)` with
    :math:`M = (\varphi(a + b) - \varphi(a))/b`, :math:`\varphi(u) = Q_n(q|_H \cup \{u\}; R - u)`;
    the proof says :math:`D_1 \le M` (Lemmas A, B) and :math:`M \le D_2` (Lemma C).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> d1, mid, d2 = chain([F(1, 2), F(3, 10), F(1, 5)], 2, [0], 1, 2)
    >>> d1 <= mid <= d2, d2
    (True, Fraction(17, 7))
    """
    h = [q[i] for i in H]
    a, b = q[x], q[y]
    R = 1 - sum(h, Fraction(0))

    def phi(u):
        return q_inside(h + [u], R - u, n)

    q_hxy = q_inside(h + [a, b], R - a - b, n)
    d1 = (phi(a) - phi(Fraction(0))) / a
    return d1, (phi(a + b) - phi(a)) / b, (q_hxy - phi(a)) / b


def adversarial_q(rng: random.Random, V: int) -> list[Fraction]:
    """Random rational q with a few heavy tokens, many light ones and some zeros."""
    heavy = rng.randint(1, max(1, V // 3))
    w = []
    for i in range(V):
        if i < heavy:
            w.append(rng.randint(200, 2000))
        elif rng.random() < 0.15:
            w.append(0)
        else:
            w.append(rng.randint(1, 40) if rng.random() < 0.7 else rng.randint(1, 400))
    rng.shuffle(w)
    t = sum(w)
    return [Fraction(x, t) for x in w]


def sweep(trials: int, seed: int = 0, max_V: int = 9, max_n: int = 6) -> dict[str, int]:
    """Exact random check of Lemma B, Lemma C, the chain D1 ≤ M ≤ D2 and T5 itself on
    adversarial q (V ≤ ``max_V``, n ≤ ``max_n``), and of :func:`q_inside` against the
    package's :meth:`WithoutReplacement.Q` (one set per instance).  Raises on any failure."""
    from mdsd_ot.drafts import WithoutReplacement

    rng = random.Random(seed)
    done = {"instances": 0, "triples": 0}
    while done["instances"] < trials:
        V = rng.randint(3, max_V)
        q = adversarial_q(rng, V)
        pos = [i for i in range(V) if q[i] > 0]
        n = rng.randint(1, min(max_n, len(pos)))
        H = sorted(i for i in range(V) if rng.random() < 0.5)
        out = [i for i in pos if i not in H]
        if len(out) < 2:
            continue
        h = [q[i] for i in H]
        assert q_inside(h, 1 - sum(h, Fraction(0)), n) == WithoutReplacement(q, n).Q(
            H, exact=True
        ), (q, n, H)
        for x, y in itertools.permutations(out[:4], 2):
            u, R = q[x], 1 - sum(h, Fraction(0))
            assert q_inside(h + [u], R - u, n) == absorption_rhs(h, u, R - u, n), (q, n, H, x)
            d1, mid, d2 = chain(q, n, H, x, y)
            assert d1 <= mid <= d2, (q, n, H, x, y, d1, mid, d2)
            done["triples"] += 1
        done["instances"] += 1
    return done
