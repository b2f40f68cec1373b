r"""The coins protocol, and the path-replay enumerator of every random choice (exact mode).

A verifier under test draws all its randomness through a *coins* object:

- ``coins.bernoulli(prob) -> bool``: ``True`` with probability ``prob`` (in [0, 1]);
- ``coins.categorical(weights) -> int``: index ``i`` with probability
  :math:`w_i / \sum_j w_j` (non-negative weights, need not be normalised).

Given the same choices, the verifier must make the same calls: it is a deterministic function of
``(p, q, drafts)`` and of the outcomes of its coins.  Then every run is one *path*, a finite
sequence of outcomes :math:`c_1, c_2, \dots`, of probability

.. math:: \Pr[\text{path}] = \prod_k \Pr[c_k \mid c_1, \dots, c_{k-1}],

and :func:`enumerate_paths` visits every path of positive probability by *replay*, as the
enumerators of probabilistic programming languages do: run the verifier once taking the first
outcome of each coin and remembering the others; rerun it for each remembered prefix, replaying
the prefix and branching after it.  Outcomes of probability 0 are never explored.  A replayed
coin that is not the one recorded (another kind, other probabilities) means hidden randomness or
state, and raises :class:`CoinError`.

Probabilities stay exact (``Fraction``) when the verifier passes rationals (``Fraction`` or
``int``), and become floats as soon as it passes a float.  :class:`RandomCoins` draws the same
coins at random from a numpy Generator (statistical mode).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import Any, Protocol

import numpy as np

__all__ = [
    "Coins",
    "CoinError",
    "CoinPath",
    "RandomCoins",
    "enumerate_paths",
    "FLOAT_SLACK",
    "MAX_PATHS",
    "MAX_DEPTH",
]

#: Float coin probabilities within this of [0, 1], and float weights above ``-FLOAT_SLACK``
#: (rounding noise such as ``p - q`` with ``p == q`` in another order) are clipped, not refused.
FLOAT_SLACK: float = 1e-12
#: Default limit on the number of paths of one draft tuple.
MAX_PATHS: int = 100_000
#: Default limit on the number of coins on one path.
MAX_DEPTH: int = 1_000

Number = Any  # Fraction, int or float


class Coins(Protocol):
    """What a verifier may call: all its randomness goes through these two methods."""

    def bernoulli(self, prob: Number) -> bool:
        """``True`` with probability ``prob``."""
        ...  # pragma: no cover

    def categorical(self, weights: Iterable[Number]) -> int:
        """Index ``i`` with probability ``weights[i] / sum(weights)``."""
        ...  # pragma: no cover


class CoinError(ValueError):
    """A verifier used its coins wrongly (a probability outside [0, 1], negative weights, hidden
    randomness on replay, too many paths)."""


def _number(x: Any, what: str) -> Number:
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, Rational):
        return Fraction(x)
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise CoinError(f"{what}: expected a number, got {x!r}") from None
    if not np.isfinite(v):
        raise CoinError(f"{what}: got {v}; probabilities must be finite")
    return v


def bernoulli_options(prob: Any) -> tuple[tuple[bool, Number], ...]:
    """The outcomes of ``bernoulli(prob)`` with positive probability, as ``(outcome, prob)``.

    Examples
    --------
    >>> bernoulli_options(Fraction(1, 3))
    ((True, Fraction(1, 3)), (False, Fraction(2, 3)))
    >>> bernoulli_options(1)
    ((True, Fraction(1, 1)),)
    """
    b = _number(prob, "coins.bernoulli(prob)")
    if isinstance(b, float):
        if b < -FLOAT_SLACK or b > 1 + FLOAT_SLACK:
            raise CoinError(f"coins.bernoulli(prob): prob must lie in [0, 1], got {b!r}")
        b = min(max(b, 0.0), 1.0)
    elif b < 0 or b > 1:
        raise CoinError(f"coins.bernoulli(prob): prob must lie in [0, 1], got {b}")
    return tuple((o, w) for o, w in ((True, b), (False, 1 - b)) if w > 0)


def categorical_options(weights: Iterable[Any]) -> tuple[tuple[int, Number], ...]:
    """The outcomes of ``categorical(weights)`` with positive probability, as ``(index, prob)``.

    Examples
    --------
    >>> categorical_options([Fraction(1), 0, Fraction(3)])
    ((0, Fraction(1, 4)), (2, Fraction(3, 4)))
    """
    try:
        ws = [_number(w, f"coins.categorical(weights)[{i}]") for i, w in enumerate(weights)]
    except TypeError:
        raise CoinError(
            f"coins.categorical(weights): expected a sequence of weights, got {weights!r}"
        ) from None
    for i, w in enumerate(ws):
        if w < 0:
            if isinstance(w, float) and w >= -FLOAT_SLACK:
                ws[i] = 0.0
            else:
                raise CoinError(
                    f"coins.categorical(weights): weight {i} is negative ({w}); weights must "
                    "be >= 0 (a residual needs its positive part)"
                )
    total = sum(ws, 0)
    if not total > 0:
        raise CoinError("coins.categorical(weights): the weights sum to 0; nothing to draw")
    return tuple((i, w / total) for i, w in enumerate(ws) if w > 0)


@dataclass(frozen=True)
class CoinPath:
    """One run of the verifier: the coin outcomes in order, their probability, what it returned."""

    choices: tuple[Any, ...]
    prob: Number
    value: Any


class _Replay:
    """Coins that replay a recorded prefix, then take the first outcome and remember the rest."""

    def __init__(self, prefix: tuple, pending: list, max_depth: int):
        self.prefix = prefix
        self.pending = pending
        self.max_depth = max_depth
        self.taken: list[tuple[Any, Number, tuple]] = []

    def _coin(self, kind: str, options: tuple) -> Any:
        d = len(self.taken)
        if d >= self.max_depth:
            raise CoinError(
                f"a path used more than {self.max_depth} coins; the verifier may draw an "
                "unbounded number of coins (use statistical mode, check_sampler) or raise max_depth"
            )
        sig = (kind, options)
        if d < len(self.prefix):
            choice, prob, recorded = self.prefix[d]
            if recorded != sig:
                raise CoinError(
                    f"coin {d + 1} changed on replay (recorded {recorded[0]} with outcomes "
                    f"{recorded[1]}, now {kind} with {options}): the verifier must be a "
                    "deterministic function of its inputs and coins (no hidden randomness or state)"
                )
        else:
            choice, prob = options[0]
            for alt, alt_prob in reversed(options[1:]):
                self.pending.append((*self.taken, (alt, alt_prob, sig)))
        self.taken.append((choice, prob, sig))
        return choice

    def bernoulli(self, prob: Number) -> bool:
        return bool(self._coin("bernoulli", bernoulli_options(prob)))

    def categorical(self, weights: Iterable[Number]) -> int:
        return int(self._coin("categorical", categorical_options(weights)))


def enumerate_paths(
    run: Callable[[Coins], Any], *, max_paths: int = MAX_PATHS, max_depth: int = MAX_DEPTH
) -> list[CoinPath]:
    r"""Every path of positive probability of ``run(coins)``, by replay (depth first).

    The path probabilities sum to 1 (exactly, for rational coins).

    Parameters
    ----------
    run : callable
        ``run(coins)`` makes its random choices through ``coins`` and returns a value.
    max_paths, max_depth : int
        Refuse (:class:`CoinError`) more paths than this, or more coins on one path.

    Returns
    -------
    list of CoinPath

    Examples
    --------
    Two fair coins, then a categorical draw on the second outcome:

    >>> def run(coins):
    ...     if coins.bernoulli(Fraction(1, 2)):
    ...         return "heads"
    ...     return ["a", "b"][coins.categorical([1, 3])]
    >>> [(p.choices, p.prob, p.value) for p in enumerate_paths(run)]
    [((True,), Fraction(1, 2), 'heads'), ((False, 0), Fraction(1, 8), 'a'), ((False, 1), Fraction(3, 8), 'b')]
    """
    pending: list[tuple] = [()]
    out: list[CoinPath] = []
    while pending:
        prefix = pending.pop()
        coins = _Replay(prefix, pending, max_depth)
        value = run(coins)
        if len(coins.taken) < len(prefix):
            raise CoinError(
                f"the verifier used {len(coins.taken)} coins on replay of a path recorded with "
                f"{len(prefix)} or more: it must be a deterministic function of its coins"
            )
        prob: Number = 1
        for _, pr, _ in coins.taken:
            prob = prob * pr
        out.append(CoinPath(tuple(c for c, _, _ in coins.taken), prob, value))
        if len(out) > max_paths:
            raise CoinError(
                f"more than {max_paths} coin paths for one draft tuple; use statistical mode "
                "(check_sampler) or raise max_paths"
            )
    return out


class RandomCoins:
    """The coins protocol drawn at random from a numpy Generator (statistical mode).

    Examples
    --------
    >>> coins = RandomCoins(np.random.default_rng(0))
    >>> [coins.categorical([0, 1, 0]), coins.bernoulli(1), coins.bernoulli(0)]
    [1, True, False]
    """

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def bernoulli(self, prob: Number) -> bool:
        b = float(prob)
        if not (-FLOAT_SLACK <= b <= 1 + FLOAT_SLACK):
            raise CoinError(f"coins.bernoulli(prob): prob must lie in [0, 1], got {prob!r}")
        return bool(self.rng.random() < b)

    def categorical(self, weights: Iterable[Number]) -> int:
        w = [float(x) for x in weights]
        if not w or not all(np.isfinite(x) and x >= -FLOAT_SLACK for x in w):
            raise CoinError(f"coins.categorical(weights): weights must be finite and >= 0, got {w}")
        total = sum(x for x in w if x > 0)
        if not total > 0:
            raise CoinError("coins.categorical(weights): the weights sum to 0; nothing to draw")
        # inverse CDF: the first positive weight whose running sum exceeds u * total; u * total
        # may round up to the total, then the last positive weight is drawn
        u, acc, last = self.rng.random() * total, 0.0, -1
        for i, x in enumerate(w):
            if x > 0:
                acc += x
                last = i
                if acc > u:
                    return i
        return last
