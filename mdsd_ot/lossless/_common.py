"""Helpers shared by the kit's modules: draft factories, exact q, JSON numbers, α*."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .. import drafts
from ..api import solve
from ..drafts import DraftLaw, Vector

__all__ = [
    "DraftFactory",
    "as_factory",
    "q_of",
    "p_of",
    "num",
    "alpha_star_of",
    "accepted_flags",
    "EXACT_ALPHA_MAX_V",
]

#: α* is computed with ``subset-exact`` up to this vocabulary size; above it with ``auto``
#: (statistical mode) or ``reduced`` (exact mode: exact in Fractions at any V it can hold).
EXACT_ALPHA_MAX_V = 16


def accepted_flags(acc: Any) -> np.ndarray | None:
    """``accepted`` as a bool array, or None when it is not flags: booleans (Python or numpy) or
    the integers 0 and 1, the same rule for one pair and for a batch.

    Examples
    --------
    >>> accepted_flags([True, np.True_, 0, 1]).tolist()
    [True, True, False, True]
    >>> accepted_flags([1, 2]) is None, accepted_flags([0.5]) is None, accepted_flags(None) is None
    (True, True, True)
    """
    try:
        a = np.asarray(acc)
    except (ValueError, TypeError, OverflowError):  # ragged: not flags
        return None
    if a.dtype == object:  # mixed Python values: each one a bool or an int 0 / 1
        items = a.ravel().tolist()
        if not all(isinstance(v, bool | np.bool_ | int | np.integer) for v in items):
            return None
        if not all(int(v) in (0, 1) for v in items):  # 2**70 would overflow int64
            return None
        a = np.asarray([int(v) for v in items], dtype=np.int64).reshape(a.shape)
    if a.dtype == np.bool_:
        return a
    if np.issubdtype(a.dtype, np.integer) and np.all((a == 0) | (a == 1)):
        return a.astype(bool)
    return None


#: ``draft_factory(q, n) -> DraftLaw``: a law class such as ``WithReplacement``, any callable, or
#: a scheme name of :data:`mdsd_ot.drafts.SCHEMES`.
DraftFactory = Callable[[Sequence[Any], int], DraftLaw] | str | type


def as_factory(draft_factory: DraftFactory) -> Callable[[Sequence[Any], int], DraftLaw]:
    """A callable ``(q, n) -> DraftLaw`` from a class, a callable or a scheme name."""
    if isinstance(draft_factory, str):
        scheme = draft_factory
        if scheme not in drafts.SCHEMES:
            raise ValueError(
                f"draft_factory: unknown scheme {scheme!r}; choose one of "
                f"{', '.join(drafts.SCHEMES)}, or pass a law class such as WithReplacement"
            )
        return lambda q, n: drafts.make(scheme, list(q), n)
    if not callable(draft_factory):
        raise ValueError(
            "draft_factory: expected a draft law class (e.g. WithReplacement), a callable "
            f"(q, n) -> DraftLaw or a scheme name, got {draft_factory!r}"
        )
    return draft_factory


def p_of(p: Any, exact: bool) -> Any:
    """``p`` as a list of Fractions (exact) or a float64 array, validated."""
    v = p if isinstance(p, Vector) else Vector(p, "p")
    return list(v.exact) if exact else v.float.copy()


def q_of(draft: DraftLaw, exact: bool) -> Any:
    """The law's reference ``q`` (list of Fractions, or float64 array), or ``None``.

    Product and explicit laws have no single ``q``; their verifiers receive ``None``.
    """
    if draft.q is None:
        return None
    if exact:
        return [Fraction(x) for x in draft.spec()["q"]]
    return np.asarray(draft.q, dtype=np.float64).copy()


def num(x: Any) -> Any:
    """A JSON-friendly number: ``"a/b"`` for a Fraction, a float otherwise (None stays None)."""
    if x is None:
        return None
    if isinstance(x, Fraction):
        return str(x)
    if isinstance(x, int | np.integer) and not isinstance(x, bool):
        return str(int(x))
    return float(x)


def alpha_star_of(p: Any, draft: DraftLaw, method: str = "subset-exact") -> Any:
    """α* of ``(p, draft)`` from :func:`mdsd_ot.solve`: a Fraction for exact methods, else float."""
    r = solve(p, draft, method=method)
    return r.alpha_exact if r.alpha_exact is not None else float(r.alpha)
