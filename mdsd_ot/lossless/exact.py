r"""Exact mode: the output law of a verifier by enumerating every draft tuple and every coin path.

For a verifier ``verify(p, q, drafts, coins) -> (token, accepted)`` and a draft law
:math:`p_{draft}`,

.. math::

   \Pr[\text{out} = i] = \sum_{\bar i} p_{draft}(\bar i) \sum_{\text{paths } \omega}
   \Pr[\omega]\, 1[\text{token}(\bar i, \omega) = i],

and likewise the acceptance :math:`\Pr[\text{accepted}]` and the probability that the output is
one of the drafts, :math:`\Pr[\text{out} \in \bar i]`.  The verifier is lossless on the instance
when the law equals ``p``; then :math:`\Pr[\text{out} \in \bar i] \le \alpha^*(p, p_{draft})`
(docs/reference.md, T11), so an acceptance above α* proves the law is not ``p``.
:mod:`mdsd_ot.lossless.exact_check` runs this on a family of instances.

Probabilities are Fractions when ``p``, the law and the verifier's coins are rational, floats
otherwise (:attr:`ExactLaw.exact` says which).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector
from ._common import accepted_flags, p_of, q_of
from .coins import MAX_DEPTH, MAX_PATHS, enumerate_paths

__all__ = ["Path", "ExactLaw", "exact_law", "Verify"]

Verify = Callable[[Any, Any, tuple[int, ...], Any], tuple[int, bool]]


@dataclass(frozen=True)
class Path:
    """One path: the draft tuple (and its probability), the coin outcomes (and theirs), the
    output token and the ``accepted`` flag the verifier returned."""

    drafts: tuple[int, ...]
    draft_prob: Any
    coins: tuple[Any, ...]
    prob: Any
    token: int
    accepted: bool


@dataclass(frozen=True)
class ExactLaw:
    """The output law of a verifier on one instance (:func:`exact_law`).

    Attributes
    ----------
    law : (V,) ndarray
        Output law: an object array of Fractions when exact, else float64.
    acceptance : Fraction or float
        :math:`\\Pr[\\text{accepted}]` as the verifier reports it.
    in_drafts : Fraction or float
        :math:`\\Pr[\\text{out} \\in \\bar i]` (the acceptance of docs/reference.md).
    inconsistent : Fraction or float
        :math:`\\Pr[\\text{accepted and out} \\notin \\bar i]` (should be 0).
    paths : tuple of Path
        Every (draft tuple, coin path) of positive probability.
    p : (V,) ndarray
        The target, in the same arithmetic as ``law``.
    exact : bool
        Whether every probability was a rational (then all the above are exact).
    """

    law: np.ndarray
    acceptance: Any
    in_drafts: Any
    inconsistent: Any
    paths: tuple[Path, ...]
    p: np.ndarray
    exact: bool

    @property
    def error(self) -> Any:
        r""":math:`\max_i |\text{law}_i - p_i|` (exact when ``exact``)."""
        return max(abs(a - b) for a, b in zip(self.law, self.p, strict=True))

    @property
    def tv(self) -> Any:
        r"""Total variation :math:`\frac12 \sum_i |\text{law}_i - p_i|`."""
        return sum((abs(a - b) for a, b in zip(self.law, self.p, strict=True)), 0) / 2


def _token(value: Any, V: int, tup: tuple[int, ...]) -> tuple[int, bool]:
    ok = isinstance(value, tuple | list) and len(value) == 2
    tok, acc = value if ok else (None, None)
    if not ok or isinstance(tok, bool) or not isinstance(tok, Integral):
        raise ValueError(
            f"verify returned {value!r} for drafts {tup}; expected (token, accepted) with an "
            "integer token"
        )
    if not 0 <= int(tok) < V:
        raise ValueError(f"verify returned token {tok} for drafts {tup}; tokens lie in [0, {V})")
    flag = accepted_flags(acc) if isinstance(acc, bool | np.bool_ | Integral) else None
    if flag is None:
        raise ValueError(
            f"verify returned accepted={acc!r} for drafts {tup}; expected a bool (or 0 / 1)"
        )
    return int(tok), bool(flag)


def exact_law(
    verify: Verify,
    p: Any,
    draft: DraftLaw,
    *,
    max_paths: int = MAX_PATHS,
    max_depth: int = MAX_DEPTH,
) -> ExactLaw:
    r"""Run ``verify`` over every draft tuple of ``draft`` and every branch of its coins.

    Parameters
    ----------
    verify : callable
        ``verify(p, q, drafts, coins) -> (token, accepted)``; ``p`` and ``q`` are lists of
        Fractions when ``p`` and the law are rational, else float64 arrays; ``q`` is the law's
        reference distribution (``None`` for product and explicit laws); ``drafts`` a tuple of
        ints; all randomness goes through ``coins`` (:mod:`mdsd_ot.lossless.coins`).
    p : (V,) array_like
        The target distribution.
    draft : DraftLaw
        The law the drafts are drawn from.
    max_paths, max_depth : int
        Limits per draft tuple (:func:`~mdsd_ot.lossless.coins.enumerate_paths`).

    Returns
    -------
    ExactLaw
        ``.law``, ``.acceptance``, ``.paths`` (and ``.in_drafts``, ``.error``, ``.tv``).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> def speculative(p, q, drafts, coins):
    ...     (x,) = drafts
    ...     if coins.bernoulli(min(1, p[x] / q[x])):
    ...         return x, True
    ...     return coins.categorical([max(a - b, 0) for a, b in zip(p, q)]), False
    >>> r = exact_law(speculative, ["1/2", "1/2"], WithReplacement(["3/4", "1/4"], 1))
    >>> [str(x) for x in r.law], r.acceptance, len(r.paths)
    (['1/2', '1/2'], Fraction(3, 4), 3)
    """
    if not isinstance(draft, DraftLaw):
        raise ValueError(
            f"draft: expected a draft law from mdsd_ot.drafts (e.g. WithReplacement(q, n)), got "
            f"{type(draft).__name__}"
        )
    pv = Vector(p, "p")
    V_.check_on_vocabulary(pv.float, draft.V, "p")
    exact = pv.rational and draft.rational
    pl, ql = p_of(pv, exact), q_of(draft, exact)
    zero: Any = Fraction(0) if exact else 0.0
    law = [zero] * draft.V
    acc = ind = bad = zero
    paths: list[Path] = []
    for tup, w in draft.joint_items(exact=exact).items():
        tup = tuple(int(i) for i in tup)
        for cp in enumerate_paths(
            lambda coins, tup=tup: verify(pl, ql, tup, coins),
            max_paths=max_paths,
            max_depth=max_depth,
        ):
            tok, a = _token(cp.value, draft.V, tup)
            m = w * cp.prob
            law[tok] += m
            if a:
                acc += m
            if tok in tup:
                ind += m
            elif a:
                bad += m
            paths.append(Path(tup, w, cp.choices, cp.prob, tok, a))
    is_exact = exact and all(isinstance(x, Fraction) for x in (*law, acc, ind, bad))
    if is_exact:
        arr, parr = np.array(law, dtype=object), np.array(pl, dtype=object)
    else:
        arr = np.array([float(x) for x in law])
        parr = np.array([float(x) for x in pl])
        acc, ind, bad = float(acc), float(ind), float(bad)
    return ExactLaw(arr, acc, ind, bad, tuple(paths), parr, is_exact)
