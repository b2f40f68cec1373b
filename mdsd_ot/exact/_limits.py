r"""Size guards of the exact methods: count the work first, refuse above a named limit.

Every exact method refuses, *before* doing any work, an instance whose work exceeds its limit,
with a :class:`ValueError` that names the limit and the method to use instead.  The work is
counted in the unit the method spends:

=================================  ==========================================================
method                             work counted
=================================  ==========================================================
primal, primal-cvxpy, emd          LP variables / dense entries :math:`V \cdot K` (K tuples)
bmatching, dual, maxflow(-scipy)   graph edges, n per tuple: :math:`n K`
reduced                            token sets M, and :math:`\max(n M, \text{set-weight terms})`
subset, subset-exact               :math:`2^V` subsets × V tokens
=================================  ==========================================================

The counts K, M and the set-weight terms come from the draft law (``support_size_bound``,
``set_count_bound``, ``set_weight_work``) as exact integers.  On hostile sizes those integers
alone take seconds to compute ((10⁶)^(10⁶) has 2·10⁷ bits), so a law is asked for them only
when a cheap upper bound is at most :math:`2^{\text{COUNT\_BITS}}`: every draft tuple lies in
:math:`\Sigma_+^n` and every token set is a subset of :math:`\Sigma_+` of size ≤ n, where
:math:`\Sigma_+` is the support of the mean draft marginal (``law.reference_q()``, read only
when :math:`V^n` itself is above the bound).  Above it the instance is refused at once: such a
count is far beyond every limit here, unless the law is degenerate (e.g. greedy drafts with
hundreds of deterministic tokens), for which the message points to a method that scales.
"""

from __future__ import annotations

import math

import numpy as np

from ..drafts import DraftLaw

__all__ = [
    "COUNT_BITS",
    "amount",
    "instead",
    "refuse_above",
    "check_tuples",
    "check_sets",
    "check_power",
    "check_subsets",
    "set_weight_work",
]

#: Counts above 2^COUNT_BITS are not evaluated: the instance is refused from a cheap bound.
COUNT_BITS: int = 1024

#: What each method offers, for the hints of the refusals.
_NOTES: dict[str, str] = {
    "fast": "the fast solver",
    "reduced": "the set-reduced flow: token sets instead of tuples",
    "maxflow-scipy": "float max-flow on the 2^-60 grid",
}


def amount(x: int) -> str:
    """A count for a message: ``1,600,000,000``, or ``at least 2^k`` beyond 18 digits.

    (Python refuses to print integers above 4,300 digits; those are never spelled out.)

    Examples
    --------
    >>> amount(1_600_000_000), amount(2**200 + 5)
    ('1,600,000,000', 'at least 2^200')
    """
    x = int(x)
    return f"{x:,}" if x < 10**18 else f"at least 2^{x.bit_length() - 1:,}"


def instead(draft: DraftLaw, *methods: str) -> str:
    """The hint of a refusal: ``use method='fast' (...) or method='reduced' (...)``.

    ``'fast'`` is offered only where the law has a fast route (``law.fast_kernel``).

    Examples
    --------
    >>> from mdsd_ot.drafts import Product, WithReplacement
    >>> print(instead(WithReplacement([0.5, 0.5], 2), "fast", "reduced"))
    use method='fast' (the fast solver) or method='reduced' (the set-reduced flow: token
    sets instead of tuples)
    >>> print(instead(Product([[0.5, 0.5]] * 2), "fast"))
    no method scales further for a Product law with this V and n (it has no fast route);
    use a smaller V or n
    """
    names = [m for m in methods if m != "fast" or draft.fast_kernel is not None]
    if not names:
        return (
            f"no method scales further for a {type(draft).__name__} law with this V and n (it "
            "has no fast route); use a smaller V or n"
        )
    parts = [f"method={m!r}" + (f" ({_NOTES[m]})" if m in _NOTES else "") for m in names]
    return "use " + " or ".join(parts)


def refuse_above(work: int, limit: int, what: str, hint: str, unit: str = "entries") -> None:
    """Raise ``ValueError`` naming ``what``, the work, the limit and ``hint`` when work > limit."""
    if work > limit:
        raise ValueError(
            f"instance too large for {what}: needs {amount(work)} {unit} (limit {limit:,}); {hint}"
        )


def _support(draft: DraftLaw) -> int:
    """Tokens a draft can take: the support of the law's mean draft marginal."""
    return int(np.count_nonzero(np.asarray(draft.reference_q(), dtype=np.float64)))


def _bits(draft: DraftLaw, sets: bool) -> tuple[float, int]:
    """log2 of a cheap upper bound on the draft tuples (or token sets), and the tokens used."""

    def bits(m: int) -> float:
        if m <= 1:
            return 0.0
        b = draft.n * math.log2(m)
        return min(b, float(m)) if sets else b  # sets: also at most 2^m subsets

    m = draft.V
    b = bits(m)
    if b > COUNT_BITS:
        m = _support(draft)
        b = bits(m)
    return b, m


def _refuse_uncounted(draft: DraftLaw, sets: bool, limit: int, what: str, hint: str) -> None:
    b, m = _bits(draft, sets)
    if b > COUNT_BITS:
        kind = "token sets of size <= n" if sets else "draft tuples"
        raise ValueError(
            f"instance too large for {what}: up to 2^{b:,.0f} {kind} ({m:,} tokens, "
            f"n = {draft.n:,} drafts), beyond the 2^{COUNT_BITS} the size guards count and "
            f"the limit {limit:,}; {hint}"
        )


def check_tuples(
    draft: DraftLaw, *, per_tuple: int, limit: int, what: str, hint: str, unit: str = "entries"
) -> int:
    """Refuse unless (draft tuples) × ``per_tuple`` ≤ ``limit``; return the tuple bound K.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> check_tuples(WithReplacement([0.5, 0.5], 3), per_tuple=3, limit=24, what="x", hint="y")
    8
    >>> check_tuples(WithReplacement([0.5, 0.5], 5000), per_tuple=1, limit=10, what="x", hint="y")
    Traceback (most recent call last):
    ...
    ValueError: instance too large for x: up to 2^5,000 draft tuples (2 tokens, n = 5,000
    drafts), beyond the 2^1024 the size guards count and the limit 10; y
    """
    _refuse_uncounted(draft, False, limit, what, hint)
    K = int(draft.support_size_bound())
    refuse_above(K * per_tuple, limit, what, hint, unit)
    return K


def set_weight_work(draft: DraftLaw, exact: bool | None = None) -> int:
    """Terms summed to build the set weights ``law.set_weight_table(exact)``.

    Every law counts its own terms (``law.set_weight_work(exact)``: closed forms, or n per
    draft tuple where the law aggregates its joint law; in Fractions once per word).
    """
    return int(draft.set_weight_work(exact))


def check_sets(
    draft: DraftLaw,
    *,
    max_sets: int,
    max_work: int,
    what: str,
    hint: str,
    exact: bool | None = None,
) -> int:
    """Refuse unless the token sets M ≤ ``max_sets`` and max(n M, set-weight terms) ≤ ``max_work``.

    n M counts the set table (each set stored with n slots) and the flow's edges; the terms
    are those :func:`set_weight_work` reports for the arithmetic ``exact`` (default: the
    law's own).  Returns M.

    Examples
    --------
    >>> from mdsd_ot.drafts import Product
    >>> check_sets(Product([[0.2, 0.8]] * 40), max_sets=10, max_work=10**6, what="x", hint="y")
    3
    """
    _refuse_uncounted(draft, True, max_sets, what, hint)
    M = int(draft.set_count_bound())
    refuse_above(M, max_sets, what, hint, "token sets")
    refuse_above(M * draft.n, max_work, what, hint, "set-table entries (n per set)")
    refuse_above(set_weight_work(draft, exact), max_work, what, hint, "set-weight terms")
    return M


def check_power(base: int, exp: int, limit: int, what: str, hint: str, unit: str) -> int:
    """Refuse unless base**exp ≤ limit, without computing a huge power; return base**exp.

    Examples
    --------
    >>> check_power(10**6, 10**6, 2**20, "a dense plan", "use z", "entries")
    Traceback (most recent call last):
    ...
    ValueError: instance too large for a dense plan: needs 1,000,000^1,000,000 entries
    (limit 1,048,576); use z
    """
    if base > 1 and exp * math.log2(base) > COUNT_BITS:
        raise ValueError(
            f"instance too large for {what}: needs {base:,}^{exp:,} {unit} (limit {limit:,}); "
            f"{hint}"
        )
    size = base**exp
    refuse_above(size, limit, what, hint, unit)
    return size


def check_subsets(V: int, limit: int, what: str, hint: str, per_subset: int | None = None) -> int:
    """Refuse unless 2^V subsets × ``per_subset`` steps ≤ ``limit`` (without computing 2^V).

    ``per_subset`` is the cost of one Q(H) (``law.q_eval_work()``); V when not given.  Returns
    the work.

    Examples
    --------
    >>> check_subsets(10**6, 2**20, "brute force", "use z")
    Traceback (most recent call last):
    ...
    ValueError: instance too large for brute force: needs 2^1,000,000 subsets x 1,000,000
    tokens (limit 1,048,576); use z
    >>> check_subsets(14, 2**22, "brute force", "use z", per_subset=41_188)
    Traceback (most recent call last):
    ...
    ValueError: instance too large for brute force: needs 674,824,192 subset steps (2^14 subsets
    x 41,188 steps per Q(H)) (limit 4,194,304); use z
    """
    if V > limit.bit_length():
        raise ValueError(
            f"instance too large for {what}: needs 2^{V:,} subsets x {V:,} tokens (limit "
            f"{limit:,}); {hint}"
        )
    per = V if per_subset is None else int(per_subset)
    work = 2**V * per
    unit = (
        f"subset-token steps (2^{V} subsets x {V} tokens)"
        if per_subset is None
        else f"subset steps (2^{V} subsets x {per:,} steps per Q(H))"
    )
    refuse_above(work, limit, what, hint, unit)
    return work
