r"""Draft laws: the joint law ``p_draft`` of the n drafted tokens (docs/reference.md, "Draft constructions").

Each law exposes

- ``V``, ``n``, ``scheme`` and, where the construction has one, the reference ``q`` (the draft
  model's distribution, used for q-convexity, T5);
- ``Q(H)`` :math:`= p_{draft}(H^n)`, the probability that every draft lies in ``H``, computed
  exactly from the definition (rationals in, rationals out);
- ``joint()`` the dense ``(V,)*n`` table (refused above :data:`JOINT_MAX_ENTRIES` entries);
- ``joint_items(exact=...)`` the sparse support ``{tuple: probability}``;
- ``sample(rng, size)`` an ``(size, n)`` int array of draft tuples.

Inputs given as exact rationals (``Fraction``, ``int`` or ``"a/b"`` strings) are kept exact;
float inputs are validated, renormalised, and converted exactly to rationals on request.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from . import _validate as V_

__all__ = [
    "DraftLaw",
    "Vector",
    "WithReplacement",
    "WithoutReplacement",
    "ConditionalPoisson",
    "Product",
    "Greedy",
    "SpecHub",
    "Explicit",
    "SCHEMES",
    "make",
    "from_spec",
    "JOINT_MAX_ENTRIES",
    "greedy_top",
]

#: ``joint()`` refuses tables with more entries than this (set it higher at your own risk).
JOINT_MAX_ENTRIES: int = 2**24

Number = Any  # float or Fraction


class Vector:
    """A validated distribution kept both as float64 and (lazily) as exact Fractions."""

    def __init__(self, x: Any, name: str):
        self.name = name
        if V_.is_rational_input(x):
            self._exact: tuple[Fraction, ...] | None = V_.exact_vector(x, name)
            self.float = np.array([float(v) for v in self._exact])
            self.rational = True
        else:
            self.float = V_.prob_vector(x, name)
            self._exact = None
            self.rational = False

    @property
    def exact(self) -> tuple[Fraction, ...]:
        if self._exact is None:
            fr = [Fraction(float(v)) for v in self.float]
            s = sum(fr, Fraction(0))
            self._exact = tuple(f / s for f in fr)
        return self._exact

    def values(self, exact: bool) -> Sequence[Number]:
        return self.exact if exact else [float(v) for v in self.float]

    def __len__(self) -> int:
        return len(self.float)


def _mask(H: Any, V: int) -> np.ndarray:
    """Turn H (boolean mask of length V, or an iterable of token indices) into a boolean mask."""
    if isinstance(H, np.ndarray) and H.dtype == bool:
        if H.shape != (V,):
            raise ValueError(f"H: a boolean mask must have shape ({V},), got {H.shape}")
        return H
    idx = np.asarray(list(H) if not isinstance(H, np.ndarray) else H, dtype=np.int64).ravel()
    if idx.size and (idx.min() < 0 or idx.max() >= V):
        raise ValueError(f"H: token indices must lie in [0, {V}), got {idx.tolist()}")
    m = np.zeros(V, dtype=bool)
    m[idx] = True
    return m


def greedy_top(q: np.ndarray, k: int) -> tuple[int, ...]:
    """Top-k tokens of ``q`` with the fixed tie rule: larger q first, then smaller index.

    Examples
    --------
    >>> greedy_top(np.array([0.2, 0.4, 0.4]), 2)
    (1, 2)
    """
    order = np.lexsort((np.arange(len(q)), -np.asarray(q, dtype=np.float64)))
    return tuple(int(i) for i in order[:k])


class DraftLaw:
    """Base class of the draft laws. Subclasses define ``_Q``, ``_items`` and ``sample``."""

    scheme: str = ""
    V: int
    n: int

    # -- the reference q (None where the construction has none) --------------------------
    @property
    def q(self) -> np.ndarray | None:
        """The draft model's distribution q (float64), or ``None`` (product, explicit)."""
        return None

    @property
    def rational(self) -> bool:
        """True when the law was built from exact rational inputs."""
        return False

    # -- Q(H) --------------------------------------------------------------------------
    def Q(self, H: Any, exact: bool | None = None) -> Number:
        r"""Q(H) = p_draft(Hⁿ) = Pr[every draft lies in H].

        Parameters
        ----------
        H : (V,) bool array or iterable of int
            The token set.
        exact : bool, optional
            Compute in Fractions (default: exactly when the law was built from rationals).
        """
        if exact is None:
            exact = self.rational
        return self._Q(_mask(H, self.V), exact)

    def _Q(self, mask: np.ndarray, exact: bool) -> Number:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the joint law -----------------------------------------------------------------
    def joint_items(self, exact: bool | None = None) -> dict[tuple[int, ...], Number]:
        """The support of p_draft as ``{draft tuple: probability}`` (zero entries omitted)."""
        if exact is None:
            exact = self.rational
        V_.check_size(
            self.support_size_bound(),
            JOINT_MAX_ENTRIES,
            f"the joint law of {self!r}",
            "use Q(H) or the set-reduced form (method='reduced'), or the fast solver "
            "(method='fast')",
        )
        return {t: w for t, w in self._items(exact) if w != 0}

    def support_size_bound(self) -> int:
        """An upper bound on the number of draft tuples with positive probability.

        Exact methods use it to refuse an instance before enumerating its support.
        """
        return self.V**self.n

    def _items(self, exact: bool) -> Iterable[tuple[tuple[int, ...], Number]]:
        raise NotImplementedError  # pragma: no cover

    def joint(self, max_entries: int | None = None) -> np.ndarray:
        """Dense float64 table of shape ``(V,)*n``; refuses above ``max_entries`` entries."""
        limit = JOINT_MAX_ENTRIES if max_entries is None else max_entries
        V_.check_size(
            self.V**self.n,
            limit,
            f"a dense joint table of {self!r}",
            "use Q(H), joint_items(), the set-reduced form (method='reduced') or the fast "
            "solver (method='fast')",
        )
        out = np.zeros((self.V,) * self.n)
        for t, w in self._items(False):
            out[t] += float(w)
        return out

    def sample(self, rng: np.random.Generator | int | None, size: int) -> np.ndarray:
        """Draw ``size`` draft tuples: an int64 array of shape ``(size, n)``."""
        raise NotImplementedError  # pragma: no cover

    # -- description -------------------------------------------------------------------
    def spec(self) -> dict[str, Any]:
        """A JSON-friendly description (``from_spec`` rebuilds the law)."""
        raise NotImplementedError  # pragma: no cover

    def __repr__(self) -> str:
        return f"{type(self).__name__}(V={self.V}, n={self.n})"


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def _fmt(v: Number) -> Any:
    return str(v) if isinstance(v, Fraction) else float(v)


class _QLaw(DraftLaw):
    """A law built from one reference distribution q and a number of drafts n."""

    def __init__(self, q: Any, n: int):
        self._qv = Vector(q, "q")
        self.V = len(self._qv)
        self.n = V_.check_n(n)

    @property
    def q(self) -> np.ndarray:
        return self._qv.float

    @property
    def rational(self) -> bool:
        return self._qv.rational

    def qvals(self, exact: bool) -> Sequence[Number]:
        """q as a list of floats, or of Fractions with ``exact=True``."""
        return self._qv.values(exact)

    def spec(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme,
            "n": self.n,
            "q": [_fmt(v) for v in self.qvals(self.rational)],
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(V={self.V}, n={self.n})"


class WithReplacement(_QLaw):
    r"""n i.i.d. drafts from q: :math:`p_{draft}(\bar i) = \prod_j q(\bar i_j)`, :math:`Q(H) = q(H)^n`.

    Examples
    --------
    >>> d = WithReplacement(["1/2", "1/2"], 2)
    >>> d.Q([0])
    Fraction(1, 4)
    """

    scheme = "with"

    def _Q(self, mask, exact):
        qv = self.qvals(exact)
        s = sum((qv[i] for i in np.flatnonzero(mask)), Fraction(0) if exact else 0.0)
        return s**self.n

    def _items(self, exact):
        qv = self.qvals(exact)
        sup = [i for i in range(self.V) if qv[i] > 0]
        for t in itertools.product(sup, repeat=self.n):
            yield t, math.prod((qv[i] for i in t), start=Fraction(1) if exact else 1.0)

    def support_size_bound(self):
        return int(np.count_nonzero(self.q)) ** self.n

    def sample(self, rng, size):
        return _rng(rng).choice(self.V, size=(size, self.n), p=self.q)


def _without_prob(qv: Sequence[Number], t: tuple[int, ...], one: Number) -> Number:
    """Sequential probability of the ordered distinct tuple t."""
    # the mass left after earlier draws is summed directly, not as 1 - q(drawn): the difference
    # cancels catastrophically in floats when q(drawn) is near 1
    pr, zero = one, one - one
    for j, i in enumerate(t):
        left = sum((v for x, v in enumerate(qv) if x not in t[:j]), zero)
        pr = pr * qv[i] / left
    return pr


class WithoutReplacement(_QLaw):
    r"""Sequential sampling without replacement: draw j from q with earlier draws removed.

    :math:`p_{draft}(\bar i) = \prod_j q(\bar i_j) / (1 - \sum_{l<j} q(\bar i_l))` on tuples of
    distinct tokens.  Needs at least n tokens with q > 0.  This is *not* the conditional-Poisson
    law (T12).

    Examples
    --------
    >>> d = WithoutReplacement(["1/2", "3/10", "1/5"], 2)
    >>> d.Q([0, 1])  # the T12 counterexample: 0.514286..., not e_2(q|H)/e_2(q) = 0.483871...
    Fraction(18, 35)
    """

    scheme = "without"

    def __init__(self, q, n):
        super().__init__(q, n)
        V_.check_support(self.q, self.n, "without-replacement")

    def _Q(self, mask, exact):
        qv = self.qvals(exact)
        one = Fraction(1) if exact else 1.0
        H = [int(i) for i in np.flatnonzero(mask) if qv[i] > 0]
        # f(D, k): probability that the next k draws lie in H given the drawn set D (only q(D)
        # matters).  Memoised over subsets of H of size < n.
        memo: dict[frozenset, Number] = {}

        def f(D: frozenset, k: int) -> Number:
            if k == 0:
                return one
            if D in memo:
                return memo[D]
            left = sum((v for x, v in enumerate(qv) if x not in D), one - one)  # not 1 - q(D)
            tot = one - one
            for x in H:
                if x not in D:
                    tot += qv[x] / left * f(D | {x}, k - 1)
            memo[D] = tot
            return tot

        return f(frozenset(), self.n)

    def _items(self, exact):
        qv = self.qvals(exact)
        one = Fraction(1) if exact else 1.0
        sup = [i for i in range(self.V) if qv[i] > 0]
        for t in itertools.permutations(sup, self.n):
            yield t, _without_prob(qv, t, one)

    def support_size_bound(self):
        k = int(np.count_nonzero(self.q))
        return math.perm(k, self.n)

    def sample(self, rng, size):
        # Gumbel-top-k: the order of the n largest log q + Gumbel keys is exactly the
        # sequential without-replacement order (Plackett-Luce).
        g = _rng(rng)
        with np.errstate(divide="ignore"):
            logq = np.log(self.q)
        keys = logq[None, :] + g.gumbel(size=(size, self.V))
        top = np.argpartition(-keys, self.n - 1, axis=1)[:, : self.n]
        order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1)
        return np.take_along_axis(top, order, axis=1).astype(np.int64)


def elementary_symmetric(values: Sequence[Number], m: int, one: Number = 1.0) -> list[Number]:
    """e_0..e_m of ``values`` by the recursion e_k(H ∪ {x}) = e_k(H) + x e_{k-1}(H)."""
    e = [one] + [one - one] * m
    for x in values:
        for k in range(m, 0, -1):
            e[k] = e[k] + x * e[k - 1]
    return e


class ConditionalPoisson(_QLaw):
    r"""n i.i.d. draws from q conditioned on being pairwise distinct.

    A set S of n distinct tokens has probability :math:`\prod_{i\in S} q(i) / e_n(q)`, each of its
    n! orders equally likely; :math:`Q(H) = e_n(q|_H) / e_n(q)`.

    Examples
    --------
    >>> d = ConditionalPoisson(["1/2", "3/10", "1/5"], 2)
    >>> d.Q([0, 1])
    Fraction(15, 31)
    """

    scheme = "conditional-poisson"

    def __init__(self, q, n):
        super().__init__(q, n)
        V_.check_support(self.q, self.n, "conditional-Poisson")

    def _en(self, exact, mask=None):
        qv = self.qvals(exact)
        vals = [qv[i] for i in range(self.V) if mask is None or mask[i]]
        return elementary_symmetric(vals, self.n, Fraction(1) if exact else 1.0)[self.n]

    def _Q(self, mask, exact):
        return self._en(exact, mask) / self._en(exact)

    def _items(self, exact):
        qv = self.qvals(exact)
        en = self._en(exact)
        nf = math.factorial(self.n)
        sup = [i for i in range(self.V) if qv[i] > 0]
        for t in itertools.permutations(sup, self.n):
            yield t, math.prod((qv[i] for i in t), start=Fraction(1) if exact else 1.0) / (en * nf)

    def support_size_bound(self):
        return math.perm(int(np.count_nonzero(self.q)), self.n)

    def sample(self, rng, size):
        g = _rng(rng)
        q, n, V = self.q, self.n, self.V
        # suffix elementary symmetric polynomials: E[k, m] = e_m(q[k:]), scaled per row to
        # avoid underflow is unnecessary at the sizes this exact sampler is meant for.
        E = np.zeros((V + 1, n + 1))
        E[V, 0] = 1.0
        for k in range(V - 1, -1, -1):
            E[k, 0] = 1.0
            E[k, 1:] = E[k + 1, 1:] + q[k] * E[k + 1, :-1]
        need = np.full(size, n)
        chosen = np.zeros((size, n), dtype=np.int64)
        filled = np.zeros(size, dtype=np.int64)
        for k in range(V):
            active = need > 0
            m = need[active]
            pin = q[k] * E[k + 1, m - 1] / E[k, m]
            take = g.random(m.size) < pin
            rows = np.flatnonzero(active)[take]
            chosen[rows, filled[rows]] = k
            filled[rows] += 1
            need[rows] -= 1
        # a uniformly random order of each set
        perm = np.argsort(g.random((size, n)), axis=1)
        return np.take_along_axis(chosen, perm, axis=1)


class Product(DraftLaw):
    r"""Independent drafts from different distributions: :math:`Q(H) = \prod_j q_j(H)`.

    Examples
    --------
    >>> Product([["1/2", "1/2"], ["1/4", "3/4"]]).Q([1])
    Fraction(3, 8)
    """

    scheme = "product"

    def __init__(self, qs: Sequence[Any]):
        if len(qs) < 1:
            raise ValueError("qs: give at least one draft distribution (n >= 1)")
        self._qvs = [Vector(q, f"qs[{j}]") for j, q in enumerate(qs)]
        self.V = len(self._qvs[0])
        for j, qv in enumerate(self._qvs):
            V_.check_same_length(self._qvs[0].float, qv.float, "qs[0]", f"qs[{j}]")
        self.n = len(self._qvs)

    @property
    def rational(self) -> bool:
        return all(v.rational for v in self._qvs)

    @property
    def qs(self) -> list[np.ndarray]:
        """The per-draft distributions (float64)."""
        return [v.float for v in self._qvs]

    def qvals(self, j: int, exact: bool) -> Sequence[Number]:
        return self._qvs[j].values(exact)

    def _Q(self, mask, exact):
        idx = np.flatnonzero(mask)
        out = Fraction(1) if exact else 1.0
        for j in range(self.n):
            qv = self.qvals(j, exact)
            out = out * sum((qv[i] for i in idx), Fraction(0) if exact else 0.0)
        return out

    def _items(self, exact):
        cols = [self.qvals(j, exact) for j in range(self.n)]
        sups = [[i for i in range(self.V) if c[i] > 0] for c in cols]
        for t in itertools.product(*sups):
            yield (
                t,
                math.prod(
                    (cols[j][i] for j, i in enumerate(t)), start=Fraction(1) if exact else 1.0
                ),
            )

    def support_size_bound(self):
        return math.prod(int(np.count_nonzero(q)) for q in self.qs)

    def sample(self, rng, size):
        g = _rng(rng)
        return np.stack([g.choice(self.V, size=size, p=q) for q in self.qs], axis=1)

    def spec(self):
        r = self.rational
        return {
            "scheme": self.scheme,
            "n": self.n,
            "qs": [[_fmt(v) for v in self.qvals(j, r)] for j in range(self.n)],
        }


class Greedy(_QLaw):
    r"""Hu et al. §5.1: drafts 1..n-1 are T = Top_{n-1}(q), the last draft x̂ ~ q' = q^{¬T}.

    Tie rule for T: larger q first, then smaller index.  The tuple is (T in that order, x̂).
    :math:`Q(H) = 1[T \subseteq H]\, q'(H \setminus T)`.  Needs mass outside T.

    Examples
    --------
    >>> Greedy(["1/2", "3/10", "1/5"], 2).Q([0, 2])
    Fraction(2, 5)
    """

    scheme = "greedy"

    def __init__(self, q, n):
        super().__init__(q, n)
        self.T = greedy_top(self.q, self.n - 1)
        rest = 1.0 - float(sum(self.q[list(self.T)]))
        if self.n - 1 >= self.V or not np.any(np.delete(self.q, list(self.T)) > 0) or rest <= 0:
            raise ValueError(
                f"q: the greedy scheme with n={self.n} needs positive mass outside its top "
                f"{self.n - 1} token(s); use a smaller n or a q with more support"
            )

    def q_prime(self, exact: bool | None = None) -> Sequence[Number] | np.ndarray:
        """q' = q with T removed and renormalised (the law of the last draft)."""
        ex = self.rational if exact is None else exact
        qv = self.qvals(ex)
        zero = Fraction(0) if ex else 0.0
        rest = sum((qv[i] for i in range(self.V) if i not in self.T), zero)
        out = [zero if i in self.T else qv[i] / rest for i in range(self.V)]
        return out if ex else np.array(out)

    def _Q(self, mask, exact):
        if not all(mask[t] for t in self.T):
            return Fraction(0) if exact else 0.0
        qp = self.q_prime(exact)
        return sum((qp[i] for i in np.flatnonzero(mask)), Fraction(0) if exact else 0.0)

    def _items(self, exact):
        qp = self.q_prime(exact)
        for x in range(self.V):
            if qp[x] > 0:
                yield (*self.T, x), qp[x]

    def support_size_bound(self):
        return self.V

    def sample(self, rng, size):
        qp = np.asarray(self.q_prime(False), dtype=np.float64)
        last = _rng(rng).choice(self.V, size=size, p=qp / qp.sum())
        out = np.empty((size, self.n), dtype=np.int64)
        out[:, : self.n - 1] = self.T
        out[:, -1] = last
        return out


class SpecHub(_QLaw):
    r"""SpecHub (n = 2): ī_1 ~ q; if ī_1 = a = Top_1(q) then ī_2 ~ q^{¬a}, else ī_2 = a.

    :math:`Q(H) = 1[a \in H]\, q(H \setminus \{a\}) / (1 - q(a))` (the same Q as greedy, n = 2).

    Examples
    --------
    >>> SpecHub(["1/2", "3/10", "1/5"]).Q([0, 1])
    Fraction(3, 5)
    """

    scheme = "spechub"

    def __init__(self, q, n: int = 2):
        if n != 2:
            raise ValueError(f"n: SpecHub is defined for n = 2 drafts only, got n={n}")
        super().__init__(q, 2)
        self.a = greedy_top(self.q, 1)[0]
        if self.q[self.a] >= 1.0:
            raise ValueError(
                "q: SpecHub needs positive mass outside its top token; q is a point mass"
            )

    def spec(self):
        return {"scheme": self.scheme, "n": 2, "q": [_fmt(v) for v in self.qvals(self.rational)]}

    def _Q(self, mask, exact):
        zero = Fraction(0) if exact else 0.0
        if not mask[self.a]:
            return zero
        qv = self.qvals(exact)
        rest = sum((qv[i] for i in np.flatnonzero(mask) if i != self.a), zero)
        return rest / sum((v for x, v in enumerate(qv) if x != self.a), zero)  # not 1 - q(a)

    def _items(self, exact):
        qv, a = self.qvals(exact), self.a
        rest = sum((v for x, v in enumerate(qv) if x != a), Fraction(0) if exact else 0.0)
        for x in range(self.V):
            if x != a and qv[x] > 0:
                yield (a, x), qv[a] * qv[x] / rest  # rest, not 1 - q(a): no cancellation
                yield (x, a), qv[x]

    def support_size_bound(self):
        return 2 * self.V

    def sample(self, rng, size):
        g = _rng(rng)
        q, a = self.q, self.a
        first = g.choice(self.V, size=size, p=q)
        qa = q.copy()
        qa[a] = 0.0
        second_if_a = g.choice(self.V, size=size, p=qa / qa.sum())
        second = np.where(first == a, second_if_a, a)
        return np.stack([first, second], axis=1).astype(np.int64)


class Explicit(DraftLaw):
    """Any joint law: a table of shape ``(V,)*n`` (numbers or rationals) summing to 1.

    Examples
    --------
    >>> Explicit([[0.5, 0.0], [0.25, 0.25]]).Q([0])
    0.5
    """

    scheme = "explicit"

    def __init__(self, table: Any):
        rational = V_.is_rational_input(table)
        arr = np.asarray(table, dtype=object if rational else None)
        if arr.ndim < 1 or len(set(arr.shape)) != 1 or arr.shape[0] == 0:
            raise ValueError(
                f"table: an explicit joint law must have shape (V,)*n, got {arr.shape}"
            )
        self.V, self.n = arr.shape[0], arr.ndim
        flat = Vector(list(arr.ravel()) if rational else arr.ravel(), "table")
        self._flat = flat
        self._table = flat.float.reshape(arr.shape)

    @property
    def rational(self) -> bool:
        return self._flat.rational

    @property
    def table(self) -> np.ndarray:
        return self._table

    def _Q(self, mask, exact):
        if not exact:
            sub = self._table[np.ix_(*[mask] * self.n)]
            return float(sub.sum())
        vals = self._flat.exact
        idx = np.flatnonzero(mask)
        tot = Fraction(0)
        for t in itertools.product(idx, repeat=self.n):
            tot += vals[int(np.ravel_multi_index(t, self._table.shape))]
        return tot

    def _items(self, exact):
        vals = self._flat.values(exact)
        for k in np.flatnonzero(self._flat.float):
            yield tuple(int(i) for i in np.unravel_index(k, self._table.shape)), vals[int(k)]

    def support_size_bound(self):
        return int(np.count_nonzero(self._flat.float))

    def joint(self, max_entries=None):
        return self._table.copy()

    def sample(self, rng, size):
        k = _rng(rng).choice(self._table.size, size=size, p=self._flat.float)
        return np.stack(np.unravel_index(k, self._table.shape), axis=1).astype(np.int64)

    def spec(self):
        r = self.rational
        vals = self._flat.values(r)
        return {
            "scheme": self.scheme,
            "n": self.n,
            "table": np.array([_fmt(v) for v in vals], dtype=object)
            .reshape(self._table.shape)
            .tolist(),
        }


#: The scheme names accepted by :func:`make` (and the CLI's ``--scheme``).
SCHEMES: dict[str, type[DraftLaw]] = {
    "with": WithReplacement,
    "without": WithoutReplacement,
    "conditional-poisson": ConditionalPoisson,
    "product": Product,
    "greedy": Greedy,
    "spechub": SpecHub,
    "explicit": Explicit,
}


def make(
    scheme: str, q: Any = None, n: int | None = None, *, qs: Any = None, table: Any = None
) -> DraftLaw:
    """Build a draft law from its scheme name.

    Examples
    --------
    >>> make("with", [0.5, 0.5], 2)
    WithReplacement(V=2, n=2)
    >>> make("product", qs=[[0.5, 0.5], [1.0, 0.0]])
    Product(V=2, n=2)
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    if scheme == "explicit":
        if table is None:
            raise ValueError("table: the explicit scheme needs a joint table")
        return Explicit(table)
    if scheme == "product":
        if qs is None:
            if q is None or n is None:
                raise ValueError("qs: the product scheme needs one q per draft (qs=[q1, q2, ...])")
            qs = [q] * V_.check_n(n)
        if n is not None and V_.check_n(n) != len(qs):
            raise ValueError(f"n: got n={n} but {len(qs)} draft distributions in qs")
        return Product(qs)
    if q is None:
        raise ValueError(f"q: the {scheme} scheme needs the draft distribution q")
    if scheme == "spechub":
        return SpecHub(q, 2 if n is None else n)
    if n is None:
        raise ValueError(f"n: the {scheme} scheme needs the number of drafts n")
    return SCHEMES[scheme](q, n)


def from_spec(spec: dict[str, Any]) -> DraftLaw:
    """Rebuild a law from :meth:`DraftLaw.spec` output (or an alpha-bank instance)."""
    return make(
        spec["scheme"], spec.get("q"), spec.get("n"), qs=spec.get("qs"), table=spec.get("table")
    )
