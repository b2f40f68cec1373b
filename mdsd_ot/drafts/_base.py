r"""The base of every draft law: validated vectors, the :class:`DraftLaw` interface, q-based laws.

A draft law is the joint law :math:`p_{draft}` of the n drafted tokens (docs/reference.md, "Draft
constructions").  Each law class owns its mathematics: the joint law, :math:`Q(H)`, the set
weights :math:`w_S` and tuple weights of the exact solvers, whether it is q-convex (T5), which
kernel the fast solver uses, its closed forms and its sampler.  Class attributes declare what
other modules need to know about a law, so that no module outside :mod:`mdsd_ot.drafts`
dispatches on a scheme name:

``scheme``
    The registry name (``drafts.SCHEMES[scheme]`` is the class).
``kernel``
    The fast solver's route for n ≥ 2: ``"with"``, ``"without"``, ``"conditional-poisson"``
    (prefix kernels, T7), ``"greedy"`` (closed form, T9) or ``None`` (no fast route).  Every law
    with n = 1 uses the single-draft closed form ``"single"`` (T4).
``q_convex``
    Whether Q is q-convex for every q and n (T5), so that an optimal H is a level set of p/q.
``distinct``
    Whether the n drafts are pairwise distinct tokens (q needs n tokens of positive mass).
``fixed_n``
    A fixed number of drafts (SpecHub: 2), or ``None``.
``summary``
    One line for help texts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .. import _validate as V_

__all__ = [
    "DraftLaw",
    "QLaw",
    "Vector",
    "JOINT_MAX_ENTRIES",
    "SAMPLE_MAX_ENTRIES",
    "Number",
    "as_rng",
]

#: ``joint()`` refuses tables with more entries than this (set it higher at your own risk).
JOINT_MAX_ENTRIES: int = 2**24

#: :meth:`DraftLaw.sample` refuses more than this many drawn tokens (size × n) in one call:
#: 8 GB of int64.
SAMPLE_MAX_ENTRIES: int = 10**9

Number = Any  # float or Fraction

_EPS = 2.0**-53


def exact_words(values: Sequence[Number], n: int) -> int:
    r"""64-bit words of the largest number a product of n of ``values`` (Fractions) forms, with
    a multinomial coefficient: :math:`\lceil n\,(B + \log_2(n + 1)) / 64 \rceil`, B the
    largest bit length of a numerator or denominator; at least 1.

    The exact size guards count a Fraction term once per word, since big-integer arithmetic
    costs at least that (n = 10,000 i.i.d. drafts over thirds: 2,389 words a term).

    Examples
    --------
    >>> from fractions import Fraction
    >>> exact_words([Fraction(1, 3), Fraction(2, 3)], 2), exact_words([Fraction(1, 3)], 10_000)
    (1, 2389)
    """
    B = max((max(abs(v.numerator), v.denominator).bit_length() for v in values), default=1)
    return max(1, math.ceil(n * (B + math.log2(n + 1)) / 64))


class Vector:
    """A validated distribution kept both as float64 and (lazily) as exact Fractions.

    Examples
    --------
    >>> v = Vector(["1/4", "3/4"], "q")
    >>> v.float.tolist(), v.exact, v.rational
    ([0.25, 0.75], (Fraction(1, 4), Fraction(3, 4)), True)
    """

    def __init__(self, x: Any, name: str, *, normalised: bool = False):
        """``normalised=True`` (floats a law normalised before, e.g. from a spec): after the
        usual validation, the floats are kept as given, not divided by their sum again, when
        they are >= 0 and sum to 1 within 4V units of roundoff."""
        self.name = name
        if V_.is_rational_input(x):
            self._exact: tuple[Fraction, ...] | None = V_.exact_vector(x, name)
            self.float = np.array([float(v) for v in self._exact])
            self.rational = True
        else:
            self.float = V_.prob_vector(x, name)
            if normalised:  # floats normalised before (a spec): kept bit for bit, once valid
                raw = np.asarray(x, dtype=np.float64)
                if np.all(raw >= 0) and abs(float(np.sum(raw)) - 1.0) <= 4 * len(raw) * 2.0**-53:
                    self.float = raw.copy()
            self._exact = None
            self.rational = False

    @property
    def exact(self) -> tuple[Fraction, ...]:
        """The entries as Fractions summing to exactly 1 (floats converted exactly, renormalised)."""
        if self._exact is None:
            fr = [Fraction(float(v)) for v in self.float]
            s = sum(fr, Fraction(0))
            self._exact = tuple(f / s for f in fr)
        return self._exact

    def values(self, exact: bool) -> Sequence[Number]:
        """The entries as Fractions (``exact=True``) or floats."""
        return self.exact if exact else [float(v) for v in self.float]

    def positive(self) -> np.ndarray:
        """Which entries are above 0: judged on the exact values of rational input (an entry of
        1/10^400 is positive, though its float copy is 0), on the floats otherwise.

        Examples
        --------
        >>> v = Vector([Fraction(1, 10**400), 1 - Fraction(1, 10**400)], "q")
        >>> v.float.tolist(), v.positive().tolist()
        ([0.0, 1.0], [True, True])
        """
        if self.rational:
            return np.array([v > 0 for v in self.exact], dtype=bool)
        return self.float > 0

    def __len__(self) -> int:
        return len(self.float)


def as_mask(H: Any, V: int) -> np.ndarray:
    """Turn H (boolean mask of length V, or an iterable of token indices) into a boolean mask.

    Examples
    --------
    >>> as_mask([0, 2], 3).tolist()
    [True, False, True]
    >>> as_mask([False, False, True], 3).tolist()  # a list of bools is a mask too
    [False, False, True]
    """
    if isinstance(H, str | bytes):
        raise ValueError(f"H: give a boolean mask of length {V} or token indices, got {H!r}")
    arr = H if isinstance(H, np.ndarray) else np.asarray(list(H))
    if arr.dtype == bool:  # a mask, as an array or a list of bools
        if arr.shape != (V,):
            raise ValueError(f"H: a boolean mask must have shape ({V},), got {arr.shape}")
        return arr
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"H: token indices must be integers, got {arr.ravel()[:5].tolist()}")
    idx = np.asarray(arr, dtype=np.int64).ravel()
    if idx.size and (idx.min() < 0 or idx.max() >= V):
        raise ValueError(f"H: token indices must lie in [0, {V}), got {idx.tolist()}")
    m = np.zeros(V, dtype=bool)
    m[idx] = True
    return m


def as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A numpy Generator from a Generator, a seed or None."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def fmt(v: Number) -> Any:
    """A JSON-friendly number: ``"a/b"`` for a Fraction, a float otherwise."""
    return str(v) if isinstance(v, Fraction) else float(v)


def zero(exact: bool) -> Number:
    """0 as a Fraction or a float."""
    return Fraction(0) if exact else 0.0


def one(exact: bool) -> Number:
    """1 as a Fraction or a float."""
    return Fraction(1) if exact else 1.0


class DraftLaw:
    """Base class of the draft laws: the interface every law offers (see the module docstring).

    Subclasses implement ``_Q``, ``_items``, ``sample`` and ``spec``, and may override the set
    weights (:meth:`set_weight_table`), tuple weights (:meth:`tuple_weights`) and size bounds with
    closed forms; the defaults here work from the joint law.
    """

    scheme: ClassVar[str] = ""
    kernel: ClassVar[str | None] = None
    q_convex: ClassVar[bool] = False
    distinct: ClassVar[bool] = False
    fixed_n: ClassVar[int | None] = None
    summary: ClassVar[str] = ""
    V: int
    n: int

    # -- what other modules ask of a law ---------------------------------------------------
    @property
    def q(self) -> np.ndarray | None:
        """The draft model's distribution q (float64), or ``None`` (product, explicit)."""
        return None

    @property
    def rational(self) -> bool:
        """True when the law was built from exact rational inputs."""
        return False

    @property
    def fast_kernel(self) -> str | None:
        """The fast solver's route for this law: ``"single"`` when n = 1, else :attr:`kernel`."""
        return "single" if self.n == 1 else self.kernel

    @property
    def is_q_convex(self) -> bool:
        """Whether this law's Q is q-convex (T5): every law with n = 1, else :attr:`q_convex`."""
        return self.n == 1 or self.q_convex

    def reference_q(self, exact: bool = False) -> Any:
        r"""The q of T5 and T7: the law's own q, else the mean draft marginal.

        :math:`\bar q(i) = \frac1n \sum_j \Pr[\bar i_j = i]` for laws without a q; a float64
        array, or a list of Fractions with ``exact=True``.
        """
        marg = [zero(exact)] * self.V
        for t, w in self.joint_items(exact=exact).items():
            for i in t:
                marg[i] += w
        out = [m / self.n for m in marg]
        return out if exact else np.array(out, dtype=np.float64)

    # -- Q(H) ------------------------------------------------------------------------------
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
        mask = as_mask(H, self.V)
        if exact:
            return self._Q(mask, True)
        self._check_float_route("Q")
        return min(1.0, max(0.0, float(self._Q(mask, False))))  # rounding: within [0, 1]

    def _Q(self, mask: np.ndarray, exact: bool) -> Number:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the joint law ---------------------------------------------------------------------
    def joint_items(self, exact: bool | None = None) -> dict[tuple[int, ...], Number]:
        """The support of p_draft as ``{draft tuple: probability}`` (zero entries omitted)."""
        if exact is None:
            exact = self.rational
        if not exact:
            self._check_float_route("joint_items")
        what = f"the joint law of {self!r}"
        hint = (
            "use Q(H) or the set-reduced form (method='reduced'), or the fast solver "
            "(method='fast')"
        )
        self._refuse_above_bits(self.support_size_bits(), JOINT_MAX_ENTRIES, what, hint)
        V_.check_size(self.support_size_bound(), JOINT_MAX_ENTRIES, what, hint)
        # one tuple of n positions is itself too large when n is (V = 1 has a single tuple)
        V_.check_size(self.n, JOINT_MAX_ENTRIES, f"one draft tuple of {self!r}", hint)
        return {t: w for t, w in self._items(exact) if w != 0}

    def support_size_bits(self) -> float:
        """log2 of :meth:`support_size_bound`, computed without forming the count (a cheap guard
        for huge n: V**n with n = 10**20 is never evaluated)."""
        return self.n * math.log2(self.V)

    @staticmethod
    def _refuse_above_bits(bits: float, limit: int, what: str, hint: str) -> None:
        """Refuse counts above 2^1024 from their log2 alone (the exact count is never formed)."""
        if bits > 1024:
            raise ValueError(
                f"instance too large for {what}: needs about 2^{bits:,.0f} entries (limit "
                f"{limit:,}); {hint}"
            )

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
        what = f"a dense joint table of {self!r}"
        hint = (
            "use Q(H), joint_items(), the set-reduced form (method='reduced') or the fast "
            "solver (method='fast')"
        )
        self._refuse_above_bits(self.n * math.log2(max(self.V, 2)), limit, what, hint)
        V_.check_size(self.V**self.n, limit, what, hint)
        out = np.zeros((self.V,) * self.n)
        for t, w in self._items(False):
            out[t] += float(w)
        return out

    def sample(self, rng: np.random.Generator | int | None, size: int) -> np.ndarray:
        """Draw ``size`` draft tuples: an int64 array of shape ``(size, n)``.

        ``size`` is an integer >= 0 (0 gives shape (0, n)), and size × n at most
        :data:`SAMPLE_MAX_ENTRIES`.  A law whose float copy cannot carry it (rational q with
        positive entries below the float range, where the law conditions on them) is refused
        (:meth:`_check_float_route`).

        Examples
        --------
        >>> from mdsd_ot.drafts import WithReplacement
        >>> WithReplacement([0.5, 0.5], 2).sample(0, 0).shape
        (0, 2)
        """
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
            raise ValueError(
                f"size: the number of draft tuples must be an integer >= 0, got {size!r}"
            )
        size = int(size)
        if size * self.n > SAMPLE_MAX_ENTRIES:
            raise ValueError(
                f"size: {size:,} tuples of n = {self.n:,} drafts are {size * self.n:,} entries, "
                f"above {SAMPLE_MAX_ENTRIES:,}; draw fewer tuples at a time"
            )
        self._check_float_route("sample")
        if size == 0:
            return np.empty((0, self.n), dtype=np.int64)
        return self._sample(as_rng(rng), size)

    def _sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _float_lossy(self, what: str) -> bool:
        """Whether the float route ``what`` (``"sample"``, ``"Q"``, ``"joint_items"``,
        ``"set_weight_table"``) would compute another law: the float copy of a rational q loses
        positive entries the law conditions on; False by default."""
        return False

    def _check_float_route(self, what: str) -> None:
        """Refuse a float route (sampling, ``exact=False``) that :meth:`_float_lossy` says would
        compute another law."""
        if self._float_lossy(what):
            raise ValueError(
                f"{what}: q is rational with positive entries below the float range (such as "
                "1/10^400, 0.0 as a float) that this law conditions on, so its float copy is "
                "another law; use the exact routes (exact=True: Q, joint_items, set_weights), or "
                "a q whose positive entries are floats above 0"
            )

    # -- work estimates (what the exact methods' size guards count) ------------------------
    def q_eval_work(self) -> int:
        """Elementary steps of one evaluation of ``Q(H)`` at |H| = V (the default enumerates the
        support of the joint law)."""
        return self.support_size_bound() * self.n

    def set_weight_work(self, exact: bool | None = None) -> int:
        """Steps of :meth:`set_weight_table` in the given arithmetic (default: the law's own):
        the terms it sums (:meth:`_set_weight_terms`), each counted once per 64-bit word of
        the numbers it forms in Fractions (:meth:`_term_words`; 1 in floats)."""
        ex = self.rational if exact is None else bool(exact)
        return self._set_weight_terms(ex) * (self._term_words() if ex else 1)

    def _set_weight_terms(self, exact: bool) -> int:
        """Terms summed by :meth:`set_weight_table` (the default aggregates the joint law: n per
        draft tuple)."""
        return self.support_size_bound() * self.n

    def _term_words(self) -> int:
        """64-bit words of the largest Fraction one term forms (the default sums the joint law's
        entries: 1)."""
        return 1

    # -- set and tuple weights (the exact solvers' capacities) -----------------------------
    def set_count_bound(self) -> int:
        """An upper bound on the number of token sets S with :math:`w_S > 0`, without building them."""
        return self.support_size_bound()

    def _guard_set_table(self, hint: str = "use method='fast'", exact: bool | None = None) -> None:
        """Refuse a set table above MAX_SETS sets or MAX_SET_WORK terms, before building it
        (``exact``: the arithmetic it will be built in, for laws that count it)."""
        from ._sets import MAX_EXACT_SET_WORK, MAX_SET_WORK, MAX_SETS

        what = f"the token sets of {self!r}"
        V_.check_size(self.set_count_bound(), MAX_SETS, what, hint)
        exact = self.rational if exact is None else bool(exact)
        limit = MAX_EXACT_SET_WORK if exact else MAX_SET_WORK
        if exact:
            what += " in Fractions"
            hint += ", or exact=False (floats)"
        V_.check_size(self.set_weight_work(exact), limit, what, hint)

    def set_weight_table(self, exact: bool | None = None):
        r"""The set weights :math:`w_S = \Pr[\{\bar i_1, \dots, \bar i_n\} = S]` as a table.

        .. math::

           w_S = \sum_{\bar i:\ \mathrm{set}(\bar i) = S} p_{draft}(\bar i), \qquad
           Q(H) = \sum_{S \subseteq H} w_S .

        Laws with a closed form override this; the default aggregates :meth:`joint_items`.

        Parameters
        ----------
        exact : bool, optional
            Fractions (default: when the law is rational); float inputs are converted exactly.

        Returns
        -------
        SetWeights
            Members (padded with -1), weights, exactness and a bound on the float error.
        """
        from ._sets import SetWeights, sorted_sets

        if exact is None:
            exact = self.rational
        items = self.joint_items(exact=exact)
        agg: dict[tuple[int, ...], Any] = defaultdict(lambda: zero(exact))
        for t, w in items.items():
            agg[tuple(sorted(set(t)))] += w
        mem, w = sorted_sets(agg, self.n)
        if exact:
            return SetWeights.build(mem, w, True, self.V)
        # Python sums of <= n^n tuples per set; a table renormalised by numpy's pairwise sum
        err = (self.n + 4 + self.n**self.n + 128 + math.log2(len(items) + 1)) * _EPS
        err += (self.n + 1) * (self.V + 1) * _EPS  # floats vs the rationals they denote
        return SetWeights.build(mem, np.array(w, dtype=np.float64), False, self.V, err)

    def set_weights(self, exact: bool | None = None) -> dict[frozenset, Number]:
        r"""``{frozenset S: w_S}`` for every S with :math:`w_S > 0` (see :meth:`set_weight_table`).

        Examples
        --------
        >>> from mdsd_ot.drafts import WithoutReplacement
        >>> w = WithoutReplacement(["1/2", "3/10", "1/5"], 2).set_weights()
        >>> w[frozenset({0, 1})]  # 1/2 * 3/10 / (1/2) + 3/10 * 1/2 / (7/10)
        Fraction(18, 35)
        """
        return dict(self.set_weight_table(exact).items())

    def tuple_weights(self, *, with_error: bool = False):
        r"""The support of :math:`p_{draft}` in floats: tuples ``(T, n)`` int64, weights ``(T,)``.

        With ``with_error=True`` a third value bounds :math:`\sum_{\bar i} |w_{float}(\bar i) -
        w(\bar i)|` against the exact rationals the law denotes.  The default reads
        :meth:`joint_items`; q-based laws override it with vectorised closed forms.
        """
        from ._sets import MAX_TUPLES, TUPLE_HINT

        V_.check_size(
            self.support_size_bound(), MAX_TUPLES, f"the draft tuples of {self!r}", TUPLE_HINT
        )
        items = self.joint_items(exact=False)
        t = np.array(list(items.keys()), dtype=np.int64).reshape(len(items), self.n)
        w = np.array([float(x) for x in items.values()])
        # a few float operations per entry; an explicit table was renormalised by its float sum
        # (numpy's pairwise summation: error <= (128 + log2 K) eps)
        err = (self.n + 4 + 128 + math.log2(len(items) + 1)) * _EPS
        err += (self.n + 1) * (self.V + 1) * _EPS
        return (t, w, err) if with_error else (t, w)

    # -- description -----------------------------------------------------------------------
    def spec(self) -> dict[str, Any]:
        """A JSON-friendly description (``from_spec`` rebuilds the law)."""
        raise NotImplementedError  # pragma: no cover

    def _marked(self, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` with ``"normalised": true`` for a float law: from_spec then keeps its floats
        bit for bit (no second division by their sum)."""
        if not self.rational:
            out["normalised"] = True
        return out

    @classmethod
    def build(
        cls, q: Any = None, n: int | None = None, *, qs: Any = None, table: Any = None
    ) -> DraftLaw:
        """Build the law from the arguments of :func:`mdsd_ot.drafts.make` (q-based laws)."""
        if q is None:
            raise ValueError(f"q: the {cls.scheme} scheme needs the draft distribution q")
        if cls.fixed_n is not None:
            return cls(q, cls.fixed_n if n is None else n)
        if n is None:
            raise ValueError(f"n: the {cls.scheme} scheme needs the number of drafts n")
        return cls(q, n)

    @classmethod
    def random(
        cls, rng: np.random.Generator, V: int, n: int, *, denom: int = 12, zeros: bool = False
    ) -> DraftLaw:
        """A random rational law of this class (``zeros``: q may have a zero entry)."""
        raise NotImplementedError  # pragma: no cover

    def __repr__(self) -> str:
        return f"{type(self).__name__}(V={self.V}, n={self.n})"


class QLaw(DraftLaw):
    """A law built from one reference distribution q and a number of drafts n."""

    #: Random instances get q with full support (distinct-token laws, greedy, SpecHub).
    random_full_support: ClassVar[bool] = False

    def __init__(self, q: Any, n: int):
        self._qv = q if isinstance(q, Vector) else Vector(q, "q")
        self.V = len(self._qv)
        # positivity of the law's own numbers: a rational entry below the float range (1e-400)
        # is positive although its float copy is 0.0
        if self._qv.rational:
            self._positive = np.array([v > 0 for v in self._qv.exact], dtype=bool).reshape(-1)
        else:
            self._positive = self._qv.float > 0
        self.n = V_.check_n(n)
        if self.fixed_n is not None and self.n != self.fixed_n:
            raise ValueError(
                f"n: {type(self).__name__} is defined for n = {self.fixed_n} drafts only, "
                f"got n={self.n}"
            )
        self._check_support()

    def _check_support(self) -> None:
        """Refuse a q the law is undefined for (distinct-token laws need n positive tokens,
        counted on the exact values of a rational q)."""
        if self.distinct:
            V_.check_support(self._positive.astype(np.float64), self.n, self.scheme)

    @property
    def q(self) -> np.ndarray:
        return self._qv.float

    @property
    def rational(self) -> bool:
        return self._qv.rational

    def qvals(self, exact: bool) -> Sequence[Number]:
        """q as a list of floats, or of Fractions with ``exact=True``."""
        return self._qv.values(exact)

    def reference_q(self, exact: bool = False) -> Any:
        """The law's own q (Fractions with ``exact=True``)."""
        return list(self.qvals(True)) if exact else self.q

    def _term_words(self) -> int:
        """A term multiplies up to n entries of q (and a multinomial): :func:`exact_words`."""
        return exact_words(self.qvals(True), self.n)

    def q_eval_work(self) -> int:
        """One Q(H) of a law with a product or closed form: about n passes over the vocabulary."""
        return self.n * self.V

    def support(self) -> np.ndarray:
        """The tokens with q > 0 (int64, ascending); for a law built from rationals judged on
        the exact values (an entry of 1e-400, 0.0 as a float, is in the support)."""
        return np.flatnonzero(self._positive)

    def support_mask(self) -> np.ndarray:
        """(V,) bool: which tokens a draft of this law can be (q > 0, judged as
        :meth:`support`); a copy.

        Examples
        --------
        >>> from mdsd_ot.drafts import WithReplacement
        >>> WithReplacement(["1/2", "1/2", "0"], 2).support_mask().tolist()
        [True, True, False]
        """
        return self._positive.copy()

    def support_count(self) -> int:
        """The number of tokens with q > 0 (judged as :meth:`support`)."""
        return int(np.count_nonzero(self._positive))

    @classmethod
    def random(cls, rng, V, n, *, denom=12, zeros=False):
        """A law of this class with a random rational q (full support where the law needs it)."""
        from .random import rational_simplex

        full = cls.distinct or cls.random_full_support
        q = rational_simplex(rng, V, denom=denom, zeros=zeros and not full)
        return cls(q, cls.fixed_n or n)

    def spec(self) -> dict[str, Any]:
        q = [fmt(v) for v in self.qvals(self.rational)]
        return self._marked({"scheme": self.scheme, "n": self.n, "q": q})
