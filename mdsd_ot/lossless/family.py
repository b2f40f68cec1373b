r"""The seeded instance family of the kit: random (p, q) plus the hard cases.

Instance ``i`` of the family with seed ``s`` is a pure function of ``(s, i)`` (its generator is
``numpy.random.default_rng([s, i])``), so the first k instances of a family of 200 are the family
of k, and a witness is replayed from its seed and index alone.  The kinds take turns:

==========  ===================================================================================
kind        p and q
==========  ===================================================================================
random      Dirichlet(1) draws
peaked      Dirichlet(0.3) draws (most mass on few tokens)
ties        weights from {1, 2} and {1, 2, 3}: tied entries, tied ratios p/q, tied top tokens
zeros       zeros in p and in q (q keeps at least n positive entries), a token with p > 0 = q
tiny        one token of p and one of q with mass exactly 1e-12
one-hot     p nearly one-hot: 1e-9 on every token but one
p=q         p equal to q
==========  ===================================================================================

With ``exact=True`` the entries are Fractions (denominators ~1000, and 10^12 / 10^9 for the tiny
masses), summing to exactly 1; otherwise float64 values summing to 1 within rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["Instance", "KINDS", "instance", "instance_family", "TINY", "NEARLY_ZERO"]

#: The kinds of instance, in the order they take turns.
KINDS: tuple[str, ...] = ("random", "peaked", "ties", "zeros", "tiny", "one-hot", "p=q")
#: The tiny mass of the ``tiny`` kind.
TINY = Fraction(1, 10**12)
#: The mass off the top token of the ``one-hot`` kind.
NEARLY_ZERO = Fraction(1, 10**9)
_DENOMINATOR = 1000


@dataclass(frozen=True)
class Instance:
    """One instance: target ``p``, draft model ``q`` (Fractions or floats) and ``n`` drafts."""

    index: int
    kind: str
    p: tuple[Any, ...]
    q: tuple[Any, ...]
    n: int

    @property
    def V(self) -> int:
        """The vocabulary size."""
        return len(self.p)


def _weights(rng: np.random.Generator, V: int, conc: float) -> np.ndarray:
    """Positive integer weights with Dirichlet(conc) proportions."""
    return np.floor(rng.dirichlet(np.full(V, conc)) * _DENOMINATOR).astype(np.int64) + 1


def _normalise(w: Sequence[Any], exact: bool, fixed: dict[int, Fraction] | None = None) -> tuple:
    """``w`` scaled to sum 1, with the entries in ``fixed`` set to the given masses first."""
    fixed = fixed or {}
    rest = 1 - sum(fixed.values(), Fraction(0))
    free = [int(x) if i not in fixed else 0 for i, x in enumerate(w)]
    s = sum(free)
    vals = [fixed[i] if i in fixed else Fraction(free[i], s) * rest for i in range(len(w))]
    if exact:
        return tuple(vals)
    out = np.array([float(v) for v in vals])
    return tuple(float(x) for x in out / out.sum())


def instance(seed: int, index: int, vocab: Any = 4, n: Any = 2, exact: bool = True) -> Instance:
    """Instance ``index`` of the family with seed ``seed`` (see the module docstring).

    Parameters
    ----------
    seed, index : int
        The family's seed and the instance's position in it.
    vocab, n : int or sequence of int
        Vocabulary size(s) and number(s) of drafts; a sequence is sampled per instance.
    exact : bool
        Fractions (default) or floats.

    Examples
    --------
    >>> inst = instance(0, 2, vocab=3, n=2)
    >>> inst.kind, inst.V, sum(inst.p), sum(inst.q)
    ('ties', 3, Fraction(1, 1), Fraction(1, 1))
    """
    rng = np.random.default_rng([int(seed), int(index)])
    kind = KINDS[index % len(KINDS)]
    V = int(rng.choice(np.atleast_1d(vocab)))
    nn = int(rng.choice(np.atleast_1d(n)))
    if V < 1 or nn < 1:
        raise ValueError(f"vocab, n: need a vocabulary of >= 1 token and n >= 1, got {V}, {nn}")
    fp: dict[int, Fraction] = {}
    fq: dict[int, Fraction] = {}
    if kind == "peaked":
        wp, wq = _weights(rng, V, 0.3), _weights(rng, V, 0.3)
    elif kind == "ties":
        wp, wq = rng.integers(1, 4, V), rng.integers(1, 3, V)
    elif kind == "zeros":
        wp, wq = _weights(rng, V, 1.0), _weights(rng, V, 1.0)
        keep_q = min(V, max(nn, 2))  # q keeps at least n (and 2) positive entries
        zq = rng.permutation(V)[: V - keep_q]
        wq[zq] = 0
        zp = rng.permutation(V)[: int(rng.integers(1, V))] if V > 1 else []
        wp[zp] = 0
        if len(zq):
            wp[zq[0]] = max(int(wp[zq[0]]), 1)  # a token with p > 0 and q = 0
        if wp.sum() == 0:
            wp[int(rng.integers(V))] = 1
    elif kind == "tiny" and V > 1:
        wp, wq = _weights(rng, V, 1.0), _weights(rng, V, 1.0)
        fp = {int(rng.integers(V)): TINY}
        fq = {int(rng.integers(V)): TINY}
    elif kind == "one-hot" and V > 1:
        wq = _weights(rng, V, 1.0)
        top = int(rng.integers(V))
        fp = {i: NEARLY_ZERO for i in range(V) if i != top}
        fp[top] = 1 - NEARLY_ZERO * (V - 1)
        wp = np.zeros(V, dtype=np.int64)
    elif kind == "p=q":
        wq = _weights(rng, V, 1.0)
        wp = wq
    else:
        wp, wq = _weights(rng, V, 1.0), _weights(rng, V, 1.0)
    return Instance(index, kind, _normalise(wp, exact, fp), _normalise(wq, exact, fq), nn)


def instance_family(
    count: int, vocab: Any = 4, n: Any = 2, seed: int = 0, exact: bool = True
) -> list[Instance]:
    """The first ``count`` instances of the family with seed ``seed``.

    Examples
    --------
    >>> [i.kind for i in instance_family(8, vocab=4, n=2)]
    ['random', 'peaked', 'ties', 'zeros', 'tiny', 'one-hot', 'p=q', 'random']
    >>> instance_family(3, seed=1) == instance_family(5, seed=1)[:3]
    True
    """
    if int(count) < 0:
        raise ValueError(f"count: the number of instances must be >= 0, got {count}")
    return [instance(seed, i, vocab, n, exact) for i in range(int(count))]
