r"""Independent drafts from different distributions: :math:`Q(H) = \prod_j q_j(H)`."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _validate as V_
from ._base import _EPS, DraftLaw, Number, Vector, as_rng, exact_words, fmt, one, zero
from ._sets import (
    SetWeights,
    combinations,
    count_sets,
    covering_weights,
    product_tuples,
)
from .sampling import InverseCDF

__all__ = ["Product", "MAX_PRODUCT_DRAFTS", "MAX_PRODUCT_ENTRIES"]

#: A product law stores its n distributions: at most this many drafts.
MAX_PRODUCT_DRAFTS: int = 2**16
#: ... and at most this many entries n·V in all (2 GiB of float64).
MAX_PRODUCT_ENTRIES: int = 2**28


class Product(DraftLaw):
    r"""Independent drafts from different distributions: :math:`Q(H) = \prod_j q_j(H)`.

    Not q-convex in general (T5 fails for products of different drafts; ``mdsd-ot hunt``).

    Examples
    --------
    >>> Product([["1/2", "1/2"], ["1/4", "3/4"]]).Q([1])
    Fraction(3, 8)
    """

    scheme = "product"
    summary = "independent drafts from different distributions q_1..q_n (give q once per draft)"

    def __init__(self, qs: Sequence[Any]):
        if len(qs) < 1:
            raise ValueError("qs: give at least one draft distribution (n >= 1)")
        self._qvs = [
            q if isinstance(q, Vector) else Vector(q, f"qs[{j}]") for j, q in enumerate(qs)
        ]
        self.V = len(self._qvs[0])
        for j, qv in enumerate(self._qvs):
            V_.check_same_length(self._qvs[0].float, qv.float, "qs[0]", f"qs[{j}]")
        self.n = len(self._qvs)

    @classmethod
    def build(cls, q=None, n=None, *, qs=None, table=None):
        """One q per draft (``qs``), or the same ``q`` for each of ``n`` drafts."""
        if qs is None:
            if q is None or n is None:
                raise ValueError("qs: the product scheme needs one q per draft (qs=[q1, q2, ...])")
            n = V_.check_n(n)
            if n > MAX_PRODUCT_DRAFTS:
                raise ValueError(
                    f"n: a product law stores one distribution per draft; n = {n:,} exceeds "
                    f"{MAX_PRODUCT_DRAFTS:,}; for n i.i.d. drafts from one q use "
                    "WithReplacement(q, n)"
                )
            qv = q if isinstance(q, Vector) else Vector(q, "q")
            V_.check_size(
                n * len(qv),
                MAX_PRODUCT_ENTRIES,
                f"a product law of n = {n:,} copies of a q over V = {len(qv):,} tokens",
                "for n i.i.d. drafts from one q use WithReplacement(q, n), which stores q once",
            )
            qs = [qv] * n  # one parsed q, n references
        if n is not None and V_.check_n(n) != len(qs):
            raise ValueError(f"n: got n={n} but {len(qs)} draft distributions in qs")
        return cls(qs)

    @classmethod
    def random(cls, rng, V, n, *, denom=12, zeros=False):
        """n independent random rational distributions."""
        from .random import rational_simplex

        return cls([rational_simplex(rng, V, denom=denom, zeros=zeros) for _ in range(n)])

    @property
    def rational(self) -> bool:
        return all(v.rational for v in self._qvs)

    @property
    def qs(self) -> list[np.ndarray]:
        """The per-draft distributions (float64)."""
        return [v.float for v in self._qvs]

    def qvals(self, j: int, exact: bool) -> Sequence[Number]:
        """q_j as floats, or Fractions with ``exact=True``."""
        return self._qvs[j].values(exact)

    def reference_q(self, exact: bool = False) -> Any:
        """The mean of the per-draft distributions (Fractions with ``exact=True``)."""
        if not exact:
            return np.mean(np.stack(self.qs), axis=0)
        cols = [self.qvals(j, True) for j in range(self.n)]
        return [sum((c[i] for c in cols), zero(True)) / self.n for i in range(self.V)]

    def _Q(self, mask, exact):
        idx = np.flatnonzero(mask)
        out = one(exact)
        for j in range(self.n):
            qv = self.qvals(j, exact)
            out = out * sum((qv[i] for i in idx), zero(exact))
        return out

    def _items(self, exact):
        cols = [self.qvals(j, exact) for j in range(self.n)]
        sups = [np.flatnonzero(qv.positive()).tolist() for qv in self._qvs]  # exact when rational
        for t in itertools.product(*sups):
            yield t, math.prod((cols[j][i] for j, i in enumerate(t)), start=one(exact))

    def support_size_bound(self):
        return math.prod(int(np.count_nonzero(qv.positive())) for qv in self._qvs)

    def _sample(self, rng, size):
        g = as_rng(rng)
        u = g.random((int(size), self.n))
        return np.stack([InverseCDF(q).draw(u[:, j]) for j, q in enumerate(self.qs)], axis=1)

    def spec(self):
        qs = [[fmt(v) for v in self.qvals(j, self.rational)] for j in range(self.n)]
        return self._marked({"scheme": self.scheme, "n": self.n, "qs": qs})

    # -- set and tuple weights ---------------------------------------------------------------
    def _support(self) -> np.ndarray:
        """Tokens some draft can hold (judged on the exact values of rational input)."""
        return np.flatnonzero(np.any(np.stack([qv.positive() for qv in self._qvs]), axis=0))

    def _sizes(self) -> range:
        return range(1, min(self.n, len(self._support())) + 1)

    def set_count_bound(self):
        return count_sets(len(self._support()), self._sizes())

    def _term_words(self) -> int:
        """A term multiplies one entry of each q_j: :func:`~mdsd_ot.drafts._base.exact_words`
        over all of them."""
        return exact_words([x for j in range(self.n) for x in self.qvals(j, True)], self.n)

    def _set_weight_terms(self, exact: bool) -> int:
        """Terms of :meth:`set_weight_table`: C(m, k) sets × n draws × k tokens × 2^k states."""
        m = len(self._support())
        return sum(math.comb(m, k) * self.n * k * 2**k for k in self._sizes())

    def set_weight_table(self, exact=None):
        r""":math:`w_S` by dynamic programming over the draws on the subsets of S covered so far.

        After draft j the state is the set :math:`C \subseteq S` of tokens drawn, with
        probability :math:`\Pr_j(C)`; :math:`w_S = \Pr_n(S)`.  All terms are positive (no
        cancellation), and the work is :math:`n\,k\,2^k` per set of size k, whatever n.
        """
        ex = self.rational if exact is None else exact
        self._guard_set_table("use method='subset'", exact=ex)
        sup, n = self._support(), self.n
        dt = object if ex else np.float64
        qs = [np.array(list(self.qvals(j, ex)), dtype=dt) for j in range(n)]
        blocks = [
            (mem, covering_weights(mem, qs, ex))
            for mem in (sup[combinations(len(sup), k)] for k in self._sizes())
        ]
        # each draw multiplies once and adds at most 2k positive terms into a state: relative
        # error <= n (2k + 1) eps on every w_S, and sum_S w_S <= 1
        kmax = max(self._sizes(), default=0)
        err = n * (2 * kmax + 1) * _EPS + (n + 1) * (self.V + 1) * _EPS
        return SetWeights.from_blocks(blocks, n, ex, self.V, err)

    def tuple_weights(self, *, with_error=False):
        r"""Vectorised :math:`\prod_j q_j(\bar i_j)` over the support tuples."""
        n = self.n
        t, w = product_tuples(
            self._support(), self.qs, distinct=False, what=f"the draft tuples of {self!r}"
        )
        err = (n + 1) * _EPS + (n + 1) * (self.V + 1) * _EPS
        return (t, w, err) if with_error else (t, w)
