r"""The verifier interface shared by every MDSD verification algorithm (docs/reference.md, "Verifiers").

A verifier maps a draft tuple :math:`\bar i` (drawn from its draft law) and its own randomness to
an output token; it is *lossless* when the output has law ``p`` whatever ``p`` is (T11).  Its
*acceptance* is the probability that the output is one of the drafts,

.. math:: \Pr[\text{out} \in \{\bar i_1, \dots, \bar i_n\}] = \sum_i \sum_{\bar i \in A_i} C(i, \bar i),

the objective of the transport LP (7), so it is at most α* of the verifier's own draft law (T11).
``sample`` reports ``accepted`` in this sense (output ∈ drafts).

Every verifier offers two independent implementations:

- the *definition* (:meth:`Verifier.conditional`, :meth:`Verifier.exact`), written as in
  docs/reference.md on plain lists of numbers, in exact Fractions when the inputs are rational; it
  enumerates the draft tuples of ``draft.joint_items()`` and sums over the verifier's own coins
  analytically (each coin is a Bernoulli or a draw from a fixed residual law), so it is exact;
- a vectorised numpy *sampler* (:meth:`Verifier.sample`) over a batch of draft tuples, fast at
  V = 152,064.  Tests compare the two by chi-square tests.

Binding the draft law
---------------------
``sample(p, draft_tokens, rng)`` needs the law the drafts were drawn from (its ``q``, its top
tokens, its plan), so a verifier is *bound* to a draft law: ``verifiers.get(name, draft)`` or
``verifiers.get(name).bind(draft)``.  ``exact(p, draft)`` takes the law explicitly (and falls back to
the bound one); ``acceptance(p, q, n)`` needs only ``q`` and ``n``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector

Number = Any  # float or Fraction

__all__ = ["Verifier", "Number", "check_distinct_tokens", "check_drafted_tokens"]


def check_distinct_tokens(t: Any, law: str, name: str = "draft_tokens") -> Any:
    """Refuse draft tuples that repeat a token, for a law whose n drafts are distinct tokens.

    Such a tuple has probability 0 under the law (``draft.distinct``: sequential,
    conditional-Poisson, greedy and SpecHub drafts), so the verifier's claim that the output
    has law p does not apply to it.  One sort along the last axis and a comparison of
    neighbours decide, on the array's device (one host synchronisation for tensors); only a bad
    input is copied to the host, for the message.

    Parameters
    ----------
    t : (B, n) or (B, k, n) int ndarray or tensor
        Draft tuples, already checked for shape, dtype and range.
    law : str
        The draft law's name, quoted in the message (e.g. ``"WithoutReplacement"``).
    name : str
        The argument's name, used in the message.

    Returns
    -------
    t : the same array, unchanged.

    Examples
    --------
    >>> check_distinct_tokens(np.array([[0, 1], [1, 0]]), "WithoutReplacement").tolist()
    [[0, 1], [1, 0]]
    >>> check_distinct_tokens(np.array([[0, 1], [2, 2]]), "WithoutReplacement")
    Traceback (most recent call last):
    ...
    ValueError: draft_tokens: row 1 is (2, 2), which repeats token 2; tuples of a WithoutReplacement law have n = 2 distinct tokens (a repeat has probability 0, so the output law p is not guaranteed); draw them with mdsd_ot.verifiers._draws.sample_drafts(draft, rng, size) or the law's draft.sample(rng, size)
    """
    n = int(t.shape[-1])
    if n < 2 or t.shape[0] == 0 or (t.ndim == 3 and t.shape[1] == 0):
        return t
    if isinstance(t, np.ndarray):
        s = np.sort(t, axis=-1)
        dup = (s[..., 1:] == s[..., :-1]).any(axis=-1)
        if not dup.any():
            return t
        host, dup_host = t, dup
    else:
        from array_api_compat import array_namespace

        xp = array_namespace(t)
        s = xp.sort(t, axis=-1)
        dup = xp.any(s[..., 1:] == s[..., :-1], axis=-1)
        if not bool(xp.any(dup)):  # one host synchronisation
            return t
        host, dup_host = V_._host(t), V_._host(dup)
    first = tuple(int(i) for i in np.argwhere(dup_host)[0])
    tup = tuple(int(x) for x in host[first])
    vals, counts = np.unique(np.asarray(tup), return_counts=True)
    where = f"row {first[0]}" if len(first) == 1 else f"tuple {first[1]} of row {first[0]}"
    raise ValueError(
        f"{name}: {where} is {tup}, which repeats token {int(vals[counts > 1][0])}; "
        f"tuples of a {law} law have n = {n} distinct tokens (a repeat has probability 0, so "
        "the output law p is not guaranteed); draw them with "
        "mdsd_ot.verifiers._draws.sample_drafts(draft, rng, size) or the law's "
        "draft.sample(rng, size)"
    )


def _drafted_mask(draft: DraftLaw) -> np.ndarray | None:
    """(n, V) bool: which tokens each draft position of ``draft`` can hold (q > 0, judged on the
    exact values of a rational law), or ``None`` for a law without per-token marginals."""
    from ..drafts.product import Product

    if hasattr(draft, "support_mask"):  # the laws of one q (QLaw)
        return np.broadcast_to(draft.support_mask(), (draft.n, draft.V))
    if isinstance(draft, Product):
        return np.stack([np.array([v > 0 for v in qv.values(qv.rational)]) for qv in draft._qvs])
    return None


def check_drafted_tokens(
    t: np.ndarray,
    draft: DraftLaw | None = None,
    name: str = "draft_tokens",
    *,
    Q: Any = None,
    qname: str = "Qd",
) -> np.ndarray:
    """Refuse draft tuples holding a token the law never drafts (q = 0 at that token).

    Such a tuple has probability 0 under the draft law, so the verifier's claim that the output
    has law p does not cover it (the same reason as :func:`check_distinct_tokens`).  With ``Q``
    ((B, V) float rows, one per row of ``t``; batched positions) a token is refused where its
    row's q is 0; else the bound law decides (:meth:`~mdsd_ot.drafts.QLaw.support_mask`: the
    exact values of a rational q, so an entry of 1e-400 is a possible draft; for a ``Product``
    law, the q of that draft's position; for an ``Explicit`` law, the tuple's own entry of the
    table, :meth:`~mdsd_ot.drafts.Explicit.tuple_support`).

    Parameters
    ----------
    t : (B, n) or (B, k, n) int64 ndarray
        Draft tuples, already checked for shape, dtype and range.
    draft : DraftLaw, optional
        The bound law (used when ``Q`` is not given).
    name : str
        The argument's name, used in the message.
    Q : (B, V) ndarray, optional
        Each row's q (``sample_rows``).
    qname : str
        The name of ``Q`` in the message.

    Returns
    -------
    t : the same array, unchanged.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> law = WithReplacement([0.5, 0.5, 0.0], 2)
    >>> check_drafted_tokens(np.array([[0, 1], [1, 1]]), law).tolist()
    [[0, 1], [1, 1]]
    >>> check_drafted_tokens(np.array([[0, 1], [2, 1]]), law)
    Traceback (most recent call last):
    ...
    ValueError: draft_tokens: row 1 is (2, 1), whose token 2 has q = 0 under the WithReplacement law: it is never drafted (the tuple has probability 0, so the output law p is not guaranteed); draw the tuples with mdsd_ot.verifiers._draws.sample_drafts(draft, rng, size) or the law's draft.sample(rng, size)
    """
    if t.size == 0:
        return t
    t3 = t if t.ndim == 3 else t[:, None, :]
    if Q is not None:
        bad = ~(np.take_along_axis(Q, t3.reshape(len(t3), -1), axis=1) > 0).reshape(t3.shape)
    elif draft is not None and hasattr(draft, "tuple_support"):  # a joint table (Explicit)
        sup = draft.tuple_support()
        whole = ~sup[tuple(t3[..., j] for j in range(t3.shape[-1]))]  # (B, k)
        bad = np.zeros(t3.shape, dtype=bool)
        bad[..., 0] = whole
    else:
        mask = _drafted_mask(draft) if draft is not None else None
        if mask is None:
            return t
        bad = ~mask[np.arange(t3.shape[-1]), t3]
    if not bad.any():
        return t
    b, k, j = (int(i) for i in np.argwhere(bad)[0])
    tup = tuple(int(x) for x in t3[b, k])
    where = f"row {b}" if t.ndim == 2 else f"tuple {k} of row {b}"
    if Q is None and hasattr(draft, "tuple_support"):
        raise ValueError(
            f"{name}: {where} is {tup}, whose entry of the {type(draft).__name__} law's table "
            "is 0: the tuple is never drafted (the output law p is not guaranteed for it); "
            "draw the tuples with mdsd_ot.verifiers._draws.sample_drafts(draft, rng, size) or "
            "the law's draft.sample(rng, size)"
        )
    if Q is not None:
        what = f"{qname}[{b}][{tup[j]}] = 0 (that row's q)"
    elif draft.n > 1 and not hasattr(draft, "support_mask"):  # per-draft q (Product)
        what = f"qs[{j}][{tup[j]}] = 0 (the q of draft {j}) under the {type(draft).__name__} law"
    else:
        what = f"q = 0 under the {type(draft).__name__} law"
    raise ValueError(
        f"{name}: {where} is {tup}, whose token {tup[j]} has {what}: it is never "
        "drafted (the tuple has probability 0, so the output law p is not guaranteed); draw "
        "the tuples with mdsd_ot.verifiers._draws.sample_drafts(draft, rng, size) or the law's "
        "draft.sample(rng, size)"
    )


def _float_breakdown(draft: DraftLaw) -> ValueError:
    """The error of a float evaluation of a verifier's definition that divided by zero."""
    return ValueError(
        f"draft: the float64 evaluation of the verifier for {type(draft).__name__} divided by "
        "zero (masses of q too far apart for float64 at this step); pass exact=True to compute "
        "in Fractions from the floats' exact values"
    )


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"rng: give a numpy Generator, a non-negative int seed or None, got {rng!r}"
        ) from exc


class Verifier:
    """Base class: subclasses set the class attributes and implement the hooks.

    Attributes
    ----------
    name : str
        The registry name (``verifiers.get(name)``).
    laws : tuple of str or None
        Draft-law schemes the verifier is defined for (``None``: any law).
    law_hint : str
        How to build the right law, quoted in the refusal message.
    n_required : int or None
        A fixed number of drafts (``single``: 1), or ``None``.
    """

    name: str = ""
    laws: tuple[str, ...] | None = None
    law_hint: str = ""
    n_required: int | None = None

    def __init__(self, draft: DraftLaw | None = None):
        self.draft: DraftLaw | None = None if draft is None else self.check(draft)

    # -- the draft law ---------------------------------------------------------------------
    def defined_for(self, draft: DraftLaw) -> bool:
        """Whether the verifier is defined for the draft law ``draft``."""
        return (
            isinstance(draft, DraftLaw)
            and (self.n_required is None or draft.n == self.n_required)
            and (self.laws is None or draft.scheme in self.laws)
        )

    def check(self, draft: DraftLaw) -> DraftLaw:
        """Return ``draft`` if the verifier is defined for it, else raise ValueError naming the law."""
        if self.defined_for(draft):
            return draft
        if not isinstance(draft, DraftLaw):
            raise ValueError(
                f"draft: expected a draft law from mdsd_ot.drafts (e.g. {self.law_hint}), "
                f"got {type(draft).__name__}"
            )
        from . import suggest

        if self.n_required is not None and draft.n != self.n_required:
            raise ValueError(
                f"draft: the {self.name!r} verifier is defined for n = {self.n_required} "
                f"draft(s), got {draft!r}; use {self.law_hint}{suggest(draft)}"
            )
        raise ValueError(
            f"draft: the {self.name!r} verifier is defined for {self.law_hint} only, got "
            f"{type(draft).__name__}; draw the drafts with {self.law_hint}{suggest(draft)}"
        )

    def bind(self, draft: DraftLaw) -> Verifier:
        """A copy of this verifier bound to ``draft`` (checked with :meth:`check`)."""
        return type(self)(draft)

    def _law(self, draft: DraftLaw | None) -> DraftLaw:
        if draft is not None:
            return self.check(draft)
        if self.draft is None:
            raise ValueError(
                f"draft: the {self.name!r} verifier is not bound to a draft law; use "
                f"verifiers.get({self.name!r}, draft) or .bind(draft), e.g. with {self.law_hint}"
            )
        return self.draft

    # -- sampling --------------------------------------------------------------------------
    def sample(
        self, p: Any, draft_tokens: Any, rng: np.random.Generator | int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Verify a batch of draft tuples: one output token per tuple.

        Parameters
        ----------
        p : (V,) array_like
            The target distribution at this position.
        draft_tokens : (B, n) int array_like
            Draft tuples drawn from the bound draft law (a single ``(n,)`` tuple is a batch of 1).
            For a law of distinct drafts (``draft.distinct``) a tuple that repeats a token has
            probability 0 and is refused (:func:`check_distinct_tokens`).
        rng : Generator or int or None
            The verifier's own randomness.

        Returns
        -------
        tokens : (B,) int64 ndarray
            Output tokens; each has law ``p`` when the drafts follow the bound law (T11).
        accepted : (B,) bool ndarray
            Whether the output is one of that row's drafts.
        """
        draft = self._law(None)
        pv = V_.prob_vector(p, "p")
        V_.check_on_vocabulary(pv, draft.V, "p")
        t = self._tokens(draft_tokens, draft)
        out = np.asarray(self._sample(pv, draft, t, _rng(rng)), dtype=np.int64)
        return out, (t == out[:, None]).any(axis=1)

    def simulate(
        self, p: Any, size: int, rng: np.random.Generator | int | None = None
    ) -> tuple[float, float]:
        """Monte-Carlo acceptance: draw ``size`` tuples from the bound law and verify them.

        Returns the empirical acceptance and its standard error
        :math:`\\sqrt{\\hat a (1 - \\hat a) / N}`.
        """
        from ._draws import sample_drafts

        draft = self._law(None)
        size = V_.check_count(size, "size")
        g = _rng(rng)
        t = sample_drafts(draft, g, size)
        _, acc = self.sample(p, t, g)
        a = float(acc.mean())
        return a, float(np.sqrt(max(a * (1 - a), 0.0) / max(len(acc), 1)))

    @staticmethod
    def _tokens(draft_tokens: Any, draft: DraftLaw) -> np.ndarray:
        t = np.asarray(draft_tokens)
        if t.ndim == 1:
            t = t[None, :]
        if t.ndim != 2 or t.shape[1] != draft.n:
            raise ValueError(
                f"draft_tokens: expected shape (B, {draft.n}) (one row of n = {draft.n} drafts "
                f"per sample), got {np.shape(draft_tokens)}"
            )
        if t.size and not np.issubdtype(t.dtype, np.integer):
            raise ValueError(f"draft_tokens: must be integer token ids, got dtype {t.dtype}")
        t = t.astype(np.int64)
        if t.size and (t.min() < 0 or t.max() >= draft.V):
            raise ValueError(f"draft_tokens: token ids must lie in [0, {draft.V})")
        if draft.distinct:
            check_distinct_tokens(t, type(draft).__name__)
        return check_drafted_tokens(t, draft)

    def _sample(
        self, p: np.ndarray, draft: DraftLaw, t: np.ndarray, g: np.random.Generator
    ) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the exact law by enumeration ------------------------------------------------------
    def exact(
        self, p: Any, draft: DraftLaw | None = None, *, exact: bool | None = None
    ) -> tuple[np.ndarray, Number]:
        r"""The output law and the acceptance, by enumeration over the draft tuples.

        .. math::

           \Pr[\text{out} = i] = \sum_{\bar i} p_{draft}(\bar i)\, \pi(i \mid \bar i), \qquad
           \text{acceptance} = \sum_{\bar i} p_{draft}(\bar i) \sum_{i \in \bar i} \pi(i \mid \bar i)

        Parameters
        ----------
        p : (V,) array_like
            Target distribution.
        draft : DraftLaw, optional
            The draft law (default: the bound one).
        exact : bool, optional
            Work in Fractions (default: when both ``p`` and the law are rational).
            ``exact=True`` with float input computes from the floats' exact values (every
            float is a dyadic rational): the exact law of the verifier of those numbers.

        Returns
        -------
        law : (V,) ndarray
            float64, or an object array of Fractions in exact mode.
        acceptance : float or Fraction

        Notes
        -----
        What float input guarantees: the definition is evaluated in float64, with no a-priori
        error bound.  The chain verifier's formulas are written without cancellation (masses
        outside the drafts summed directly, kernel tails summed from the top, rate gaps as sums
        of non-negative terms), so q entries far below the largest (1e-30 beside 1) neither
        divide by zero nor lose their digits: on 300 fuzzed rows per law (with and without
        replacement, conditional Poisson; V <= 5, n <= 4, masses down to 1e-35) the largest L1
        distance of the law from p was 1.7e-15.  A float evaluation
        that still divides by zero raises a ValueError naming ``draft`` and the fix
        (``exact=True``).  Exact input (or ``exact=True``) is exact.
        """
        draft = self._law(draft)
        pv = Vector(p, "p")
        V_.check_on_vocabulary(pv.float, draft.V, "p")
        ex = (pv.rational and draft.rational) if exact is None else bool(exact)
        try:
            ctx = self._setup_of(p, pv, draft, ex)
            zero = Fraction(0) if ex else 0.0
            law = [zero] * draft.V
            acc = zero
            for tup, w in draft.joint_items(exact=ex).items():
                for i, pr in self._given(ctx, tup).items():
                    law[i] += w * pr
                    if i in tup:
                        acc += w * pr
        except ZeroDivisionError as err:
            if ex:
                raise
            raise _float_breakdown(draft) from err
        return np.array(law, dtype=object if ex else np.float64), acc

    def conditional(
        self,
        p: Any,
        draft_tuple: Sequence[int],
        draft: DraftLaw | None = None,
        *,
        exact: bool | None = None,
    ) -> dict[int, Number]:
        r"""The verification rule :math:`\pi(\cdot \mid \bar i)` for one draft tuple (its support)."""
        draft = self._law(draft)
        pv = Vector(p, "p")
        V_.check_on_vocabulary(pv.float, draft.V, "p")
        ex = (pv.rational and draft.rational) if exact is None else bool(exact)
        tup = tuple(int(i) for i in draft_tuple)  # checked before the (costly) plan
        if len(tup) != draft.n:
            raise ValueError(f"draft_tuple: expected {draft.n} tokens, got {len(tup)}")
        if any(not 0 <= i < draft.V for i in tup):
            raise ValueError(f"draft_tuple: token ids must lie in [0, {draft.V}), got {tup}")
        t = np.array([tup], dtype=np.int64)
        if draft.distinct:
            check_distinct_tokens(t, type(draft).__name__, "draft_tuple")
        check_drafted_tokens(t, draft, "draft_tuple")
        try:
            ctx = self._setup_of(p, pv, draft, ex)
        except ZeroDivisionError as err:
            if ex:
                raise
            raise _float_breakdown(draft) from err
        try:
            return self._given(ctx, tup)
        except ZeroDivisionError as err:
            if ex:
                raise
            raise _float_breakdown(draft) from err

    def _setup_of(self, p: Any, pv: Vector, draft: DraftLaw, exact: bool) -> Any:
        """The context of :meth:`exact` and :meth:`conditional` for the caller's ``p`` (as
        given) and its validated :class:`~mdsd_ot.drafts.Vector` ``pv``: :meth:`_setup` of
        ``pv``'s values.  A verifier whose float route designs the rule from the floats of
        ``p`` overrides it, so that the exact law is that of the rule it samples."""
        return self._setup(list(pv.values(exact)), draft, exact)

    def _setup(self, p: list, draft: DraftLaw, exact: bool) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _given(self, ctx: Any, tup: tuple[int, ...]) -> dict[int, Number]:  # pragma: no cover
        raise NotImplementedError

    # -- closed form -----------------------------------------------------------------------
    def has_closed_form(self, n: int) -> bool:
        """Whether :meth:`acceptance` has a closed form for ``n`` drafts."""
        return False

    def acceptance(self, p: Any, q: Any, n: int) -> float:
        """Closed-form acceptance for target ``p``, draft model ``q`` and ``n`` drafts.

        Without a closed form: the inputs are validated first (a ValueError names the bad
        argument), then NotImplementedError says what to use instead.
        """
        self._pq(p, q, n)  # validates, then raises NotImplementedError
        raise self._no_closed_form(n)  # pragma: no cover - a subclass claiming a closed form

    def _pq(self, p: Any, q: Any, n: int) -> tuple[np.ndarray, np.ndarray, int]:
        pv = V_.prob_vector(p, "p")
        qv = V_.prob_vector(q, "q")
        V_.check_same_length(pv, qv)
        n = V_.check_n(n)
        if not self.has_closed_form(n):
            raise self._no_closed_form(n)
        return pv, qv, n

    def _no_closed_form(self, n: int) -> NotImplementedError:
        return NotImplementedError(
            f"the {self.name!r} verifier has no closed-form acceptance for n = {n}; use "
            f"exact(p, draft) (small V) or simulate(p, size)"
        )

    def __repr__(self) -> str:
        bound = "" if self.draft is None else f", bound to {self.draft!r}"
        return f"<verifier {self.name!r}{bound}>"


# -- small helpers shared by the definitions (lists of floats or Fractions) -------------------


def zero_of(exact: bool) -> Number:
    return Fraction(0) if exact else 0.0


def pos_part_normalised(r: Sequence[Number], q: Sequence[Number], exact: bool) -> list[Number]:
    r"""(r − q)⁺ normalised; returns ``r`` unchanged when (r − q)⁺ = 0 (rejection impossible)."""
    z = zero_of(exact)
    d = [max(a - b, z) for a, b in zip(r, q, strict=True)]
    s = sum(d, z)
    if s <= 0:
        return list(r)
    return [x / s for x in d]


def add(out: dict[int, Number], i: int, w: Number) -> None:
    if w:
        out[i] = out.get(i, 0) + w


def inverse_cdf(law: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Tokens drawn from the (unnormalised, non-negative) ``law`` for uniforms ``u`` in [0, 1)."""
    cdf = np.cumsum(law)
    idx = np.searchsorted(cdf, u * cdf[-1], side="right")
    return np.minimum(idx, len(law) - 1)
