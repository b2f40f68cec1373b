r"""Positive and negative controls of the kit, and adapters for the package's verifiers.

Adapters
--------
- :func:`package_verify` turns a verifier of :mod:`mdsd_ot.verifiers` into
  ``verify(p, q, drafts, coins)``: its rule :math:`\pi(\cdot \mid \bar i)` from the *definition*
  (docs/reference.md, "Verifiers"), drawn with one ``coins.categorical``;
- :func:`package_sampler` turns its vectorised numpy *sampler* into
  ``sampler(p, q, drafts, rng)`` (one tuple, or a batch with ``batch=True``);
- :func:`verify_sampler` runs any coins verifier with random coins (statistical mode).

Controls
--------
Coin-level verifiers written here from docs/reference.md: the correct ones (:data:`REFERENCE`)
and deliberately broken ones (:data:`BROKEN`), each broken one with the correct one that fixes
it.  ``p`` and ``q`` are lists of Fractions or float arrays; ``accepted`` is "the output is a
draft".  The bugs (and the draft law each is meant for):

- ``rrs_unnormalised`` (with): wrong residual normalisation, r ← (r − q)⁺ is not renormalised;
- ``rrs_wrong_law`` (without): residual against the wrong draft law, q instead of q_j;
- ``rrs_off_by_one`` (without): off-by-one in the drafts examined, q_j forgets draft j − 1;
- ``kseq_off_by_one`` (with): examines drafts 1..n−1 with a residual built for n rejections;
- ``abs_residual`` (with, n = 1): the residual is the absolute difference of p and q, not
  (p − q)⁺;
- ``greedy_wrong_law`` (greedy): accepts the last draft against q instead of q' (its law);
- ``always_accept`` (with): outputs the first draft, so its acceptance exceeds α*;
- ``inflated_ratio`` (with, n = 1): accepts w.p. min(1, 1.02 p/q), a small law error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import drafts, verifiers
from ..verifiers.kseq import kseq_residual, solve_rho
from .coins import RandomCoins

__all__ = [
    "package_verify",
    "package_sampler",
    "verify_sampler",
    "speculative",
    "rrs_with",
    "rrs_without",
    "kseq",
    "greedy",
    "rrs_unnormalised",
    "rrs_wrong_law",
    "rrs_off_by_one",
    "kseq_off_by_one",
    "abs_residual",
    "greedy_wrong_law",
    "always_accept",
    "inflated_ratio",
    "Control",
    "REFERENCE",
    "BROKEN",
]

#: A rule's probabilities must sum to 1 within this in floats (exactly in Fractions).
RULE_TOL = 1e-12


# -- adapters for mdsd_ot.verifiers ------------------------------------------------------------
def _exact(p: Any) -> bool:
    return all(isinstance(x, Fraction) for x in p)


def package_verify(name: str, scheme: str, **options: Any) -> Callable:
    """``verify(p, q, drafts, coins)`` from the definition of the package's verifier ``name``.

    The draft law is ``mdsd_ot.drafts.make(scheme, q, len(drafts))``.  The rule
    :math:`\\pi(\\cdot \\mid \\bar i)` is computed once per instance and tuple (the verifier's
    ``_setup``/``_given`` hooks, as :meth:`~mdsd_ot.verifiers.Verifier.exact` uses them) and must
    sum to 1.

    Examples
    --------
    >>> from mdsd_ot.lossless import exact_law
    >>> from mdsd_ot.drafts import WithReplacement
    >>> v = package_verify("rrs-with", "with")
    >>> exact_law(v, ["3/4", "1/4"], WithReplacement(["1/2", "1/2"], 2)).acceptance
    Fraction(7, 8)
    """
    verifiers.get(name)  # unknown names fail here, with the list of names
    cache: dict[Any, Any] = {}

    def verify(p, q, drafts_, coins):
        key = (tuple(p), tuple(q), len(drafts_))
        if key not in cache:
            cache.clear()
            law = drafts.make(scheme, list(q), len(drafts_))
            v = verifiers.get(name, law, **options)
            ex = _exact(p) and law.rational
            cache[key] = (v, v._setup(list(p), law, ex), {}, ex)
        v, ctx, rules, ex = cache[key]
        tup = tuple(int(i) for i in drafts_)
        if tup not in rules:
            rule = v._given(ctx, tup)
            s = sum(rule.values(), Fraction(0) if ex else 0.0)
            if (s != 1) if ex else abs(s - 1) > RULE_TOL:
                raise ValueError(f"verifier {name!r}: pi(. | {tup}) sums to {s}, not 1")
            rules[tup] = (list(rule), list(rule.values()))
        tokens, weights = rules[tup]
        y = tokens[coins.categorical(weights)]
        return y, y in tup

    verify.__name__ = verify.__qualname__ = f"package_verify({name!r}, {scheme!r})"
    return verify


def package_sampler(name: str, scheme: str, *, batch: bool = True, **options: Any) -> Callable:
    """``sampler(p, q, drafts, rng)`` from the package's vectorised numpy sampler ``name``.

    With ``batch=True`` ``drafts`` is an ``(N, n)`` array and the sampler returns two arrays
    (tokens, accepted); otherwise one tuple and one ``(token, accepted)``.

    Examples
    --------
    >>> s = package_sampler("rrs-with", "with")
    >>> tokens, accepted = s([0.5, 0.5], [0.5, 0.5], np.array([[0, 1], [1, 1]]), 0)
    >>> tokens.shape, bool(accepted.all())  # p = q: every first draft is accepted
    ((2,), True)
    """
    verifiers.get(name)
    cache: dict[Any, Any] = {}

    def sampler(p, q, drafts_, rng):
        t = np.atleast_2d(np.asarray(drafts_, dtype=np.int64))
        key = (tuple(np.asarray(q, dtype=np.float64)), t.shape[1])
        if key not in cache:
            cache.clear()
            cache[key] = verifiers.get(name, drafts.make(scheme, np.asarray(key[0]), key[1]))
        tokens, accepted = cache[key].sample(np.asarray(p, dtype=np.float64), t, rng)
        return (tokens, accepted) if batch else (int(tokens[0]), bool(accepted[0]))

    sampler.__name__ = sampler.__qualname__ = f"package_sampler({name!r}, {scheme!r})"
    return sampler


def verify_sampler(verify: Callable) -> Callable:
    """``sampler(p, q, drafts, rng)``: ``verify`` run with random coins drawn from ``rng``.

    Examples
    --------
    >>> s = verify_sampler(speculative)
    >>> s(np.array([0.5, 0.5]), np.array([0.5, 0.5]), (1,), np.random.default_rng(0))
    (1, True)
    """

    def sampler(p, q, drafts_, rng):
        if not isinstance(drafts_, tuple):
            drafts_ = tuple(int(i) for i in drafts_)
        return verify(p, q, drafts_, RandomCoins(rng))

    sampler.__name__ = sampler.__qualname__ = f"verify_sampler({getattr(verify, '__name__', '?')})"
    return sampler


# -- small helpers on lists of Fractions or floats ---------------------------------------------
def _pos(r, q):
    return [max(a - b, 0) for a, b in zip(r, q, strict=True)]


def _normalised(d, fallback):
    s = sum(d, 0)
    return list(fallback) if s <= 0 else [x / s for x in d]


def _without(q, used):
    """q with the tokens ``used`` removed and renormalised (the law of the next draft)."""
    s = sum((v for y, v in enumerate(q) if y not in used), 0)
    return [0 if y in used else v / s for y, v in enumerate(q)]


def _done(y, drafts_):
    return y, y in drafts_


# -- correct coin-level verifiers ---------------------------------------------------------------
def speculative(p, q, drafts_, coins):
    r"""Single-draft speculative sampling (n = 1): accept w.p. min(1, p/q), else (p − q)⁺.

    .. math:: \Pr[\text{out} = i] = \min(p_i, q_i) + (1 - \textstyle\sum_j \min(p_j, q_j))
       \frac{(p_i - q_i)^+}{\sum_j (p_j - q_j)^+} = p_i

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> from mdsd_ot.lossless import exact_law
    >>> r = exact_law(speculative, ["1/4", "3/4"], WithReplacement(["1/2", "1/2"], 1))
    >>> [str(x) for x in r.law], r.acceptance
    (['1/4', '3/4'], Fraction(3, 4))
    """
    (x,) = drafts_
    if coins.bernoulli(min(1, p[x] / q[x])):
        return x, True
    return _done(coins.categorical(_pos(p, q)), drafts_)


def _rrs(p, q, drafts_, coins, law_of_draft, renormalise=True):
    r = list(p)
    for j, x in enumerate(drafts_):
        qj = law_of_draft(q, drafts_, j)
        if coins.bernoulli(min(1, r[x] / qj[x])):
            return x, True
        d = _pos(r, qj)
        r = _normalised(d, r) if renormalise else (d if sum(d, 0) > 0 else r)
    return _done(coins.categorical(r), drafts_)


def rrs_with(p, q, drafts_, coins):
    """Recursive rejection sampling for i.i.d. drafts (docs/reference.md, "Verifiers")."""
    return _rrs(p, q, drafts_, coins, lambda q, d, j: q)


def rrs_without(p, q, drafts_, coins):
    """Recursive rejection sampling for drafts sampled without replacement: q_j = q off d[:j]."""
    return _rrs(p, q, drafts_, coins, lambda q, d, j: _without(q, d[:j]))


_KSEQ: dict[Any, Any] = {}


def _kseq_setup(p, q, n):
    key = (tuple(p), tuple(q), n)
    if key not in _KSEQ:
        _KSEQ.clear()
        ex = _exact(p)
        rho = solve_rho(list(p), list(q), n, exact=ex)
        _, num = kseq_residual(list(p), list(q), n, rho, ex)
        res = [max(x, 0) for x in num]  # float rounding only (the exact residual is >= 0)
        _KSEQ[key] = (rho, res if sum(res, 0) > 0 else list(p))  # 0: rejection has mass 0
    return _KSEQ[key]


def _kseq(p, q, drafts_, coins, examined):
    rho, res = _kseq_setup(p, q, len(drafts_))
    for x in drafts_[:examined]:
        if coins.bernoulli(min(1, p[x] / (rho * q[x]))):
            return x, True
    return _done(coins.categorical(res), drafts_)


def kseq(p, q, drafts_, coins):
    """K-SEQ (SpecTr) for i.i.d. drafts, with ρ from :func:`mdsd_ot.verifiers.solve_rho`."""
    return _kseq(p, q, drafts_, coins, len(drafts_))


def _greedy(p, q, drafts_, coins, against_q_prime=True):
    T, x = drafts_[:-1], drafts_[-1]
    qp = _without(q, T)
    if coins.bernoulli(min(1, p[x] / (qp[x] if against_q_prime else q[x]))):
        return x, True
    num = [p[y] if y in T else p[y] - min(p[y], qp[y]) for y in range(len(p))]
    return _done(coins.categorical(_normalised(num, p)), drafts_)


def greedy(p, q, drafts_, coins):
    """The greedy verifier (T9): accept x̂ w.p. min(1, p/q'), else r ∝ p − 1[y ∉ T] min(p, q')."""
    return _greedy(p, q, drafts_, coins)


# -- broken controls ----------------------------------------------------------------------------
def rrs_unnormalised(p, q, drafts_, coins):
    """BROKEN: RRS (i.i.d.) whose residual (r − q)⁺ is not renormalised before the next draft."""
    return _rrs(p, q, drafts_, coins, lambda q, d, j: q, renormalise=False)


def rrs_wrong_law(p, q, drafts_, coins):
    """BROKEN: RRS on without-replacement drafts, every residual taken against q (not q_j)."""
    return _rrs(p, q, drafts_, coins, lambda q, d, j: q)


def rrs_off_by_one(p, q, drafts_, coins):
    """BROKEN: RRS without replacement; the law of draft j removes drafts 1..j−2, not 1..j−1."""
    return _rrs(p, q, drafts_, coins, lambda q, d, j: _without(q, d[: max(j - 1, 0)]))


def kseq_off_by_one(p, q, drafts_, coins):
    """BROKEN: K-SEQ examining only the first n − 1 drafts (its residual assumes n rejections)."""
    return _kseq(p, q, drafts_, coins, len(drafts_) - 1)


def abs_residual(p, q, drafts_, coins):
    """BROKEN: speculative sampling with the residual |p − q| instead of (p − q)⁺ (any n)."""
    x = drafts_[0]
    if coins.bernoulli(min(1, p[x] / q[x])):
        return x, True
    return _done(coins.categorical([abs(a - b) for a, b in zip(p, q, strict=True)]), drafts_)


def greedy_wrong_law(p, q, drafts_, coins):
    """BROKEN: greedy verifier accepting x̂ against q, not q' (the law x̂ is drawn from)."""
    return _greedy(p, q, drafts_, coins, against_q_prime=False)


def always_accept(p, q, drafts_, coins):
    """BROKEN: outputs the first draft, always accepted (its law is the draft's)."""
    return drafts_[0], True


def inflated_ratio(p, q, drafts_, coins):
    """BROKEN: speculative sampling on the first draft accepting w.p. min(1, 1.02 p/q)."""
    x = drafts_[0]
    if coins.bernoulli(min(1, Fraction(51, 50) * p[x] / q[x])):
        return x, True
    return _done(coins.categorical(_pos(p, q)), drafts_)


@dataclass(frozen=True)
class Control:
    """A coin-level verifier with the draft law it is meant for and, if broken, its fix."""

    name: str
    verify: Callable
    scheme: str
    n: tuple[int, ...]
    bug: str = ""
    fix: Callable | None = None


#: The correct coin-level verifiers (positive controls).
REFERENCE: dict[str, Control] = {
    c.name: c
    for c in (
        Control("speculative", speculative, "with", (1,)),
        Control("rrs_with", rrs_with, "with", (1, 2, 3)),
        Control("rrs_without", rrs_without, "without", (1, 2, 3)),
        Control("kseq", kseq, "with", (1, 2, 3)),
        Control("greedy", greedy, "greedy", (1, 2, 3)),
    )
}

#: The deliberately broken verifiers (negative controls), each with its fix.
BROKEN: dict[str, Control] = {
    c.name: c
    for c in (
        Control(
            "rrs_unnormalised",
            rrs_unnormalised,
            "with",
            (2, 3),
            "wrong residual normalisation",
            rrs_with,
        ),
        Control(
            "rrs_wrong_law",
            rrs_wrong_law,
            "without",
            (2, 3),
            "residual against the wrong draft law",
            rrs_without,
        ),
        Control(
            "rrs_off_by_one",
            rrs_off_by_one,
            "without",
            (2, 3),
            "off-by-one in the drafts examined",
            rrs_without,
        ),
        Control(
            "kseq_off_by_one",
            kseq_off_by_one,
            "with",
            (2, 3),
            "off-by-one in the drafts examined",
            kseq,
        ),
        Control("abs_residual", abs_residual, "with", (1,), "residual |p - q|", speculative),
        Control(
            "greedy_wrong_law",
            greedy_wrong_law,
            "greedy",
            (2, 3),
            "acceptance against the wrong draft law",
            greedy,
        ),
        Control("always_accept", always_accept, "with", (1, 2, 3), "no rejection", rrs_with),
        Control("inflated_ratio", inflated_ratio, "with", (1,), "ratio off by 2%", speculative),
    )
}
