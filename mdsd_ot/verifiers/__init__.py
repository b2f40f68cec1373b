r"""Multi-draft verifiers as lossless samplers, with their exact laws and closed-form acceptance.

Names (fixed): ``single``, ``rrs-with``, ``rrs-without``, ``k-seq``, ``spechub``, ``greedy``,
``optimal`` (docs/reference.md, "Verifiers"; claims T9, T10, T11).

>>> from mdsd_ot import verifiers
>>> from mdsd_ot.drafts import WithReplacement
>>> v = verifiers.get("rrs-with", WithReplacement([0.5, 0.5], 2))
>>> tokens, accepted = v.sample([0.75, 0.25], [[0, 1], [1, 1]], rng=0)
>>> tokens.shape, accepted.dtype
((2,), dtype('bool'))

API
---
- :func:`get` ``(name, draft=None)`` returns a verifier, bound to ``draft`` when given (or bind
  later with ``.bind(draft)``); each verifier refuses draft laws it is not defined for with a
  ValueError naming the law to use (:data:`LAWS`).
- ``v.sample(p, draft_tokens, rng)`` → ``(tokens, accepted)`` for a ``(B, n)`` batch of draft
  tuples drawn from the bound law; ``accepted`` means "the output is one of the drafts".
- ``v.exact(p, draft)`` → ``(law, acceptance)`` by enumeration (small V; Fractions for rational
  inputs); ``v.conditional(p, draft_tuple)`` the rule π(·|ī) for one tuple.
- ``v.acceptance(p, q, n)`` closed form where one exists (``v.has_closed_form(n)``): single,
  rrs-with, k-seq, greedy, spechub, and rrs-without for n ≤ 2; vectorised numpy, fast at
  V = 152,064.  ``v.simulate(p, size, rng)`` a Monte-Carlo estimate with its standard error.
"""

from __future__ import annotations

from ..drafts import DraftLaw
from ._base import Verifier
from .greedy import GreedyVerifier, SpecHubVerifier
from .kseq import KSeq, solve_rho
from .optimal import Optimal
from .rrs import RRSWith, RRSWithout
from .single import Single

__all__ = [
    "NAMES",
    "LAWS",
    "Verifier",
    "get",
    "applicable",
    "suggest",
    "solve_rho",
    "Single",
    "RRSWith",
    "RRSWithout",
    "KSeq",
    "SpecHubVerifier",
    "GreedyVerifier",
    "Optimal",
]

_CLASSES: dict[str, type[Verifier]] = {
    "single": Single,
    "rrs-with": RRSWith,
    "rrs-without": RRSWithout,
    "k-seq": KSeq,
    "spechub": SpecHubVerifier,
    "greedy": GreedyVerifier,
    "optimal": Optimal,
}

#: The verifier names, in a fixed order.
NAMES: tuple[str, ...] = tuple(_CLASSES)

#: The draft laws each verifier is defined for (``None``: any law; ``single``: any law, n = 1).
LAWS: dict[str, tuple[str, ...] | None] = {k: c.laws for k, c in _CLASSES.items()}


def get(name: str, draft: DraftLaw | None = None, **options) -> Verifier:
    """The verifier called ``name``, bound to ``draft`` when given.

    Examples
    --------
    >>> from mdsd_ot.drafts import Greedy
    >>> get("greedy", Greedy([0.5, 0.3, 0.2], 2))
    <verifier 'greedy', bound to Greedy(V=3, n=2)>
    >>> get("rrs-with", Greedy([0.5, 0.3, 0.2], 2))
    Traceback (most recent call last):
    ...
    ValueError: draft: the 'rrs-with' verifier is defined for WithReplacement(q, n) (i.i.d. drafts) only, got Greedy; draw the drafts with WithReplacement(q, n) (i.i.d. drafts) (verifiers defined for this law: greedy, optimal)
    """
    if name not in _CLASSES:
        raise ValueError(f"name: unknown verifier {name!r}; choose one of {', '.join(NAMES)}")
    import inspect

    cls = _CLASSES[name]
    params = inspect.signature(cls.__init__).parameters
    takes = [k for k, v in params.items() if v.kind is v.KEYWORD_ONLY]
    if bad := [k for k in options if k not in takes]:
        what = f"its options are {', '.join(takes)}" if takes else "it takes no options"
        raise ValueError(f"{bad[0]}: the {name!r} verifier has no option {bad[0]!r}; {what}")
    return cls(draft, **options)


def applicable(draft: DraftLaw) -> list[str]:
    """Names of the verifiers defined for ``draft``."""
    return [name for name, cls in _CLASSES.items() if cls().defined_for(draft)]


def suggest(draft: DraftLaw) -> str:
    """`` (verifiers defined for this law: ...)`` for error messages."""
    return f" (verifiers defined for this law: {', '.join(applicable(draft))})"
