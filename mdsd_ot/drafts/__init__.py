r"""Draft laws: the joint law ``p_draft`` of the n drafted tokens (docs/reference.md, "Draft
constructions").

Every law class owns its mathematics (:mod:`mdsd_ot.drafts._base`): Q(H), the joint law, the
set and tuple weights of the exact solvers, q-convexity (T5), the fast solver's kernel, closed
forms and an exact sampler that scales to V = 152,064.  :data:`SCHEMES` is the one registry of
scheme names; every other module (solvers, reports, the CLI's help) reads it.

=======================  ====================================================================
scheme                   law
=======================  ====================================================================
``with``                 :class:`WithReplacement` — n i.i.d. drafts, :math:`Q = q(H)^n`
``without``              :class:`WithoutReplacement` — sequential, *not* conditional Poisson
``conditional-poisson``  :class:`ConditionalPoisson` — :math:`Q = e_n(q|_H)/e_n(q)`
``product``              :class:`Product` — :math:`Q = \prod_j q_j(H)`
``greedy``               :class:`Greedy` — top n−1 tokens, then one draw (T9)
``spechub``              :class:`SpecHub` — n = 2, same Q as greedy
``explicit``             :class:`Explicit` — any table over Σⁿ
=======================  ====================================================================

Inputs given as exact rationals (``Fraction``, ``int`` or ``"a/b"`` strings) are kept exact;
float inputs are validated, renormalised, and converted exactly to rationals on request.

Examples
--------
>>> from mdsd_ot import drafts
>>> law = drafts.make("without", ["1/2", "3/10", "1/5"], 2)
>>> law.Q([0, 1]), law.kernel, law.is_q_convex
(Fraction(18, 35), 'without', True)
>>> drafts.kernel_for("spechub", 2), drafts.kernel_for("with", 1)
('greedy', 'single')
"""

from __future__ import annotations

from typing import Any

from .. import _validate as V_
from ._base import JOINT_MAX_ENTRIES, DraftLaw, QLaw, Vector, as_mask
from ._sets import SetWeights
from .conditional_poisson import ConditionalPoisson, elementary_symmetric
from .explicit import Explicit
from .greedy import Greedy, SpecHub, greedy_top
from .product import Product
from .random import rational_simplex
from .with_replacement import WithReplacement
from .without import WithoutReplacement, sequence_probabilities

__all__ = [
    "DraftLaw",
    "QLaw",
    "Vector",
    "SetWeights",
    "WithReplacement",
    "WithoutReplacement",
    "ConditionalPoisson",
    "Product",
    "Greedy",
    "SpecHub",
    "Explicit",
    "SCHEMES",
    "FAST_SCHEMES",
    "make",
    "from_spec",
    "random_law",
    "kernel_for",
    "scheme_help",
    "JOINT_MAX_ENTRIES",
    "greedy_top",
    "elementary_symmetric",
    "sequence_probabilities",
    "rational_simplex",
    "as_mask",
]

#: The one registry of draft schemes: name → law class (the order is the order of the docs).
SCHEMES: dict[str, type[DraftLaw]] = {
    cls.scheme: cls
    for cls in (
        WithReplacement,
        WithoutReplacement,
        ConditionalPoisson,
        Product,
        Greedy,
        SpecHub,
        Explicit,
    )
}

#: The scheme names the fast solver accepts: laws with a kernel, plus ``"single"`` (n = 1).
FAST_SCHEMES: tuple[str, ...] = (
    *(name for name, cls in SCHEMES.items() if cls.kernel is not None),
    "single",
)


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
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise ValueError(f"scheme: unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    given = [k for k, v in (("q", q), ("qs", qs), ("table", table)) if v is not None]
    if len(given) > 1:
        raise ValueError(
            f"{given[1]}: give one of q, qs and table (the {scheme} scheme reads "
            f"{'table' if scheme == 'explicit' else 'qs, or q and n' if scheme == 'product' else 'q'}), "
            f"got {' and '.join(given)}"
        )
    law = SCHEMES[scheme].build(q, n, qs=qs, table=table)
    if n is not None and V_.check_n(n) != law.n:  # e.g. a table of n = 2 given with n = 3
        raise ValueError(f"n: got n={n} but the {scheme} law given has n = {law.n} drafts")
    return law


def from_spec(spec: dict[str, Any]) -> DraftLaw:
    """Rebuild a law from :meth:`DraftLaw.spec` output (or an alpha-bank instance).

    Examples
    --------
    >>> from_spec({"scheme": "with", "n": 2, "q": ["1/2", "1/2"]})
    WithReplacement(V=2, n=2)
    >>> from_spec({})
    Traceback (most recent call last):
    ...
    ValueError: spec: expected a mapping with a "scheme" key (DraftLaw.spec() output), got {}
    """
    if not isinstance(spec, dict) or "scheme" not in spec:
        raise ValueError(
            f'spec: expected a mapping with a "scheme" key (DraftLaw.spec() output), got {spec!r}'
        )
    q, qs = spec.get("q"), spec.get("qs")
    if spec.get("normalised") is True:  # floats a law normalised: kept bit for bit

        def kept(x: Any, name: str) -> Any:
            return x if V_.is_rational_input(x) else Vector(x, name, normalised=True)

        q = None if q is None else kept(q, "q")
        if isinstance(qs, list | tuple):
            qs = [kept(x, f"qs[{j}]") for j, x in enumerate(qs)]
    return make(spec["scheme"], q, spec.get("n"), qs=qs, table=spec.get("table"))


def random_law(
    rng: Any, scheme: str, V: int, n: int, *, denom: int = 12, zeros: bool = False
) -> DraftLaw:
    """A random rational law of ``scheme`` (see each class's ``random``).

    Examples
    --------
    >>> import numpy as np
    >>> random_law(np.random.default_rng(0), "spechub", 3, 5)
    SpecHub(V=3, n=2)
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    return SCHEMES[scheme].random(rng, V, n, denom=denom, zeros=zeros)


def kernel_for(scheme: Any, n: Any) -> str:
    """The fast solver's kernel for ``scheme`` with ``n`` drafts (validated).

    ``"single"`` (one draft, T4) for n = 1 or scheme ``"single"``; the law's kernel otherwise.
    Raises ValueError naming the fix for unknown schemes, laws without a fast route, and an ``n``
    the law does not allow.
    """
    if scheme == "single":
        if V_.check_n(n) != 1:
            raise ValueError(f"n: scheme 'single' is one draft, give n=1 (got n={n})")
        return "single"
    if scheme not in SCHEMES or SCHEMES[scheme].kernel is None:
        raise ValueError(
            f"scheme: unknown scheme {scheme!r} for the fast solver; choose one of "
            f"{', '.join(FAST_SCHEMES)} (product and explicit laws: mdsd_ot.solve(..., "
            "method='reduced'))"
        )
    cls = SCHEMES[scheme]
    n = V_.check_n(n)
    if cls.fixed_n is not None and n != cls.fixed_n:
        raise ValueError(
            f"n: {cls.__name__} is defined for n = {cls.fixed_n} drafts only, got n={n}"
        )
    return "single" if n == 1 else str(cls.kernel)


def scheme_help(schemes: Any = None) -> str:
    """One line per scheme (``name: summary``) for help texts, from the registry."""
    names = SCHEMES if schemes is None else schemes
    return "; ".join(f"{name}: {SCHEMES[name].summary}" for name in names)
