r"""Token-set and tuple tables shared by the laws: :class:`SetWeights` and the combinatorics.

The set-reduced flow (docs/reference.md, "Set-reduced flow") merges the draft tuples with the
same set of distinct tokens S into one node of capacity :math:`w_S`; each law computes its
:math:`w_S` (``DraftLaw.set_weight_table``) into the :class:`SetWeights` table defined here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "SetWeights",
    "combinations",
    "compositions",
    "grid",
    "distinct_rows",
    "complement_sums",
    "count_sets",
    "sorted_sets",
    "covering_weights",
    "product_tuples",
    "MAX_SETS",
    "MAX_TUPLES",
    "MAX_SET_WORK",
    "MAX_EXACT_SET_WORK",
]

#: Largest number of token sets a set table may hold (about 0.85 kB of memory each at the peak
#: of the set-reduced flow: 2^23 sets need ~7 GB).
MAX_SETS: int = 2**23
#: Largest number of elementary operations spent building a set table (the size guard counts
#: the terms it will sum, not only the sets).
MAX_SET_WORK: int = 2**28
#: The same in Fractions, counted in word-terms (a term once per 64-bit word of its numbers,
#: :func:`~mdsd_ot.drafts._base.exact_words`); about 2 µs each, so about a minute.
MAX_EXACT_SET_WORK: int = 2**25
#: Largest number of draft tuples a float tuple table may hold.
MAX_TUPLES: int = 2**22
#: What to use instead when a tuple table is too large.
TUPLE_HINT = "use method='reduced' (token sets instead of tuples) or method='fast'"


class SetWeights(Mapping):
    """The set weights w_S as arrays, read as a mapping ``{frozenset S: w_S}``.

    Attributes
    ----------
    members : (M, n) int64 ndarray
        Row m lists the tokens of set m in ascending order, padded with -1.
    weights : (M,) float64 ndarray, or list of Fraction
        w_S for each set (only sets with w_S > 0 are kept).
    exact : bool
        Whether the weights are exact Fractions.
    error : float
        A bound on :math:`\\sum_S |w_S^{float} - w_S|` (0 when exact).

    Examples
    --------
    >>> tab = SetWeights.build(np.array([[0, -1], [0, 1]]), [Fraction(1, 4), Fraction(3, 4)], True, 2)
    >>> tab[{0, 1}], tab.Q(np.array([True, False]))
    (Fraction(3, 4), Fraction(1, 4))
    """

    def __init__(self, members: np.ndarray, weights: Any, exact: bool, V: int, error: float = 0.0):
        self.members = np.asarray(members, dtype=np.int64)
        self.weights = weights
        self.exact = exact
        self.V = V
        self.error = float(error)
        self._dict: dict | None = None

    @classmethod
    def build(cls, members: np.ndarray, weights: Any, exact: bool, V: int, error: float = 0.0):
        """A table keeping only the sets with positive weight."""
        if exact:
            keep = [m for m, x in enumerate(weights) if x != 0]
            return cls(np.asarray(members)[keep], [weights[m] for m in keep], True, V)
        w = np.asarray(weights, dtype=np.float64)
        keep = w > 0
        return cls(np.asarray(members)[keep], w[keep], False, V, error)

    @classmethod
    def from_blocks(
        cls, blocks: list[tuple[np.ndarray, Any]], n: int, exact: bool, V: int, error: float = 0.0
    ):
        """A table from blocks ``(members (K, k), weights (K,))`` of sets of one size k each
        (members are padded with -1 to n columns)."""
        if not blocks:
            return cls.build(np.zeros((0, n), np.int64), [] if exact else np.zeros(0), exact, V)
        members = np.concatenate(
            [np.pad(m, ((0, 0), (0, n - m.shape[1])), constant_values=-1) for m, _ in blocks]
        )
        if exact:
            return cls.build(members, [x for _, w in blocks for x in w], True, V)
        return cls.build(members, np.concatenate([w for _, w in blocks]), False, V, error)

    def _as_dict(self) -> dict[frozenset, Any]:
        if self._dict is None:
            w = self.weights
            self._dict = {
                frozenset(int(v) for v in row if v >= 0): (w[m] if self.exact else float(w[m]))
                for m, row in enumerate(self.members)
            }
        return self._dict

    def __getitem__(self, S):
        return self._as_dict()[frozenset(S)]

    def __iter__(self) -> Iterator[frozenset]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self.members)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(token, set index) for every i ∈ S, sorted by (set, token)."""
        mask = self.members >= 0
        sets = np.repeat(np.arange(len(self.members)), self.members.shape[1])
        return self.members[mask], sets[mask.ravel()]

    def contained(self, H: np.ndarray) -> np.ndarray:
        """Boolean mask of the sets S ⊆ H (H a boolean mask of length V)."""
        Hx = np.append(np.asarray(H, dtype=bool), True)  # index -1 (padding) reads True
        return np.all(Hx[self.members], axis=1)

    def Q(self, H: np.ndarray) -> Any:
        """Q(H) = Σ_{S ⊆ H} w_S."""
        inside = self.contained(H)
        if self.exact:
            return sum((w for w, k in zip(self.weights, inside, strict=True) if k), Fraction(0))
        return float(np.sum(self.weights[inside]))

    def __repr__(self) -> str:
        return f"SetWeights(sets={len(self)}, exact={self.exact})"


def combinations(m: int, k: int) -> np.ndarray:
    """All k-subsets of range(m) as a (C(m, k), k) int64 array, lexicographic, vectorised.

    Examples
    --------
    >>> combinations(4, 2).tolist()
    [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    """
    if k == 0:
        return np.zeros((1, 0), dtype=np.int64)
    if k > m:
        return np.zeros((0, k), dtype=np.int64)
    # only prefixes that can still be completed: the L-th element (0-based) is at most m - k + L,
    # so no level holds more rows than C(m, k) (all levels of C(30, 28) instead of C(30, 10))
    rows = np.arange(m - k + 1, dtype=np.int64)[:, None]
    for L in range(1, k):
        last = rows[:, -1]
        cnt = (m - k + L) - last
        total = int(cnt.sum())
        rep = np.repeat(rows, cnt, axis=0)
        starts = np.repeat(np.cumsum(cnt) - cnt, cnt)
        new = np.repeat(last + 1, cnt) + (np.arange(total) - starts)
        rows = np.hstack([rep, new[:, None]])
    return rows


def compositions(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Compositions of n into k positive parts.

    Examples
    --------
    >>> list(compositions(3, 2))
    [(1, 2), (2, 1)]
    """
    for cuts in itertools.combinations(range(1, n), k - 1):
        b = (0, *cuts, n)
        yield tuple(b[j + 1] - b[j] for j in range(k))


def count_sets(m: int, ks: Any) -> int:
    """Number of subsets of an m-set with a size in ``ks``."""
    return sum(math.comb(m, k) for k in ks)


def sorted_sets(pairs: dict[tuple[int, ...], Any], n: int) -> tuple[np.ndarray, list[Any]]:
    """Members (padded with -1) and weights of ``{sorted tuple: w}``, ordered by (size, tuple)."""
    keys = sorted(pairs, key=lambda s: (len(s), s))
    mem = np.full((len(keys), n), -1, dtype=np.int64)
    for m, s in enumerate(keys):
        mem[m, : len(s)] = s
    return mem, [pairs[s] for s in keys]


def grid(sup: Sequence[int], n: int) -> np.ndarray:
    """All tuples over ``sup`` of length n as an (|sup|^n, n) int64 array (lexicographic).

    Examples
    --------
    >>> grid([0, 2], 2).tolist()
    [[0, 0], [0, 2], [2, 0], [2, 2]]
    """
    s = np.asarray(sup, dtype=np.int64)
    if n == 0 or s.size == 0:
        return np.zeros((0, n), dtype=np.int64)
    idx = np.indices((len(s),) * n).reshape(n, -1).T
    return s[idx]


def distinct_rows(t: np.ndarray) -> np.ndarray:
    """Mask of the rows of t whose entries are pairwise distinct."""
    ok = np.ones(len(t), dtype=bool)
    for a in range(t.shape[1]):
        for b in range(a):
            ok &= t[:, a] != t[:, b]
    return ok


def complement_sums(q: np.ndarray, P: np.ndarray) -> np.ndarray:
    r"""Σ_{x ∉ P_k} q(x) for each row P_k of distinct tokens, accurate to relative 2(V + k)ε.

    Computing 1 − Σ_{x∈P} q(x) cancels catastrophically when P holds almost all the mass (and
    float q sums to 1 only within a few ulps).  Instead, with q sorted ascending and C its
    cumulative sums, the complement is a union of at most |P| + 1 ranges of the sorted order;
    each range sum C[b] − C[a] is accurate to relative 2bε because its largest element is the
    largest of the first b values.

    Examples
    --------
    >>> complement_sums(np.array([0.5, 0.3, 0.2]), np.array([[0], [2]]))
    array([0.5, 0.8])
    """
    q = np.asarray(q, dtype=np.float64)
    V = len(q)
    order = np.argsort(q, kind="stable")
    rank = np.empty(V, dtype=np.int64)
    rank[order] = np.arange(V)
    C = np.concatenate([[0.0], np.cumsum(q[order])])
    r = np.sort(rank[np.asarray(P, dtype=np.int64)], axis=1)
    K, k = r.shape
    lo = np.concatenate([np.zeros((K, 1), np.int64), r + 1], axis=1)  # range starts
    hi = np.concatenate([r, np.full((K, 1), V, np.int64)], axis=1)  # range ends (exclusive)
    return np.sum(np.maximum(C[hi] - C[lo], 0.0), axis=1)


def covering_weights(mem: np.ndarray, draws: list[np.ndarray], exact: bool) -> np.ndarray:
    r"""Pr[the set of tokens drawn by independent draws is exactly S], for each row S of ``mem``.

    Draw j takes token x with probability ``draws[j][x]``.  Dynamic programming over the draws
    on the subsets :math:`C \subseteq S` covered so far (a bitmask of the k members of S):
    :math:`\Pr_j(C)` for every C, and :math:`w_S = \Pr_n(S)`.  All terms are non-negative (no
    cancellation), probabilities stay in [0, 1] (no overflow for any n), and the work is
    :math:`n\,k\,2^k` per set of size k.

    Examples
    --------
    >>> covering_weights(np.array([[0, 1]]), [np.array([0.5, 0.5])] * 2, False).tolist()
    [0.5]
    """
    K, k = mem.shape
    dt = object if exact else np.float64
    state = np.zeros((K, 2**k), dtype=dt)
    state[:, 0] = Fraction(1) if exact else 1.0
    for q in draws:
        new = np.zeros_like(state)
        for c in range(k):
            qc = q[mem[:, c]]
            bit = 1 << c
            for b in range(2**k):
                new[:, b | bit] = new[:, b | bit] + state[:, b] * qc
        state = new
    return state[:, -1]


def product_tuples(
    sup: np.ndarray, cols: list[np.ndarray], *, distinct: bool, what: str
) -> tuple[np.ndarray, np.ndarray]:
    r"""The tuples over ``sup`` (pairwise distinct ones if ``distinct``) and their weights
    :math:`\prod_j \mathrm{cols}_j(\bar i_j)` (positive ones only), after the size guard; object
    columns (Fractions) give exact weights."""
    from .. import _validate as V_

    n = len(cols)
    V_.check_size(len(sup) ** n, MAX_TUPLES, what, TUPLE_HINT)
    t = grid(sup, n)
    if distinct:
        t = t[distinct_rows(t)]
    w = np.ones(len(t), dtype=object if any(c.dtype == object for c in cols) else np.float64)
    for j, c in enumerate(cols):
        w *= c[t[:, j]]
    keep = w > 0
    return t[keep], w[keep]
