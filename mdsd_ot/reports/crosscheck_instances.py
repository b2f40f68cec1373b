r"""The instances of the cross-check (claim T1): the built-in bank and seeded random draws.

An :class:`Instance` is a validated target ``p`` and a draft law over the same vocabulary; the
cross-check (:mod:`mdsd_ot.reports.crosscheck`) computes

.. math::

   \alpha^*(p, p_{draft}) = 1 + \min_{H \subseteq \Sigma} [P(H) - Q(H)]

on each with every method.  :func:`builtin_instances` is the fixed table of small rational
instances covering every draft scheme (``mdsd-ot crosscheck`` without instance options);
:func:`random_instances` draws float instances from a symmetric Dirichlet; :func:`make_instance`
wraps a user's ``(p, draft)``.  Every name here is also importable from
:mod:`mdsd_ot.reports.crosscheck`.

Examples
--------
>>> from mdsd_ot.drafts import WithReplacement
>>> inst = make_instance(["1/2", "1/2"], WithReplacement(["3/4", "1/4"], 2))
>>> inst.label, inst.spec()["p"]
('with V=2 n=2', ['1/2', '1/2'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import SCHEMES, DraftLaw, Explicit, QLaw, Vector, make

__all__ = [
    "RANDOM_SCHEMES",
    "Instance",
    "make_instance",
    "builtin_instances",
    "random_instances",
]

#: Schemes drawn by :func:`random_instances` when none is named: every registered law built from
#: draft distributions (one q, or one q per draft), not from a joint table.
RANDOM_SCHEMES: tuple[str, ...] = tuple(
    name for name, cls in SCHEMES.items() if not issubclass(cls, Explicit)
)


def _fmt(v: Any) -> Any:
    return str(v) if isinstance(v, Fraction) else float(v)


@dataclass(frozen=True)
class Instance:
    """One problem of the cross-check: a validated target ``p`` and a draft law.

    Attributes
    ----------
    p : Vector
        The target distribution (float and exact views).
    draft : DraftLaw
        The joint law of the drafts.
    label : str
        A short name shown in tables.
    """

    p: Vector
    draft: DraftLaw
    label: str = ""

    def spec(self) -> dict[str, Any]:
        """JSON description: ``scheme``, ``n``, ``p`` and ``q`` / ``qs`` / ``table``."""
        out = dict(self.draft.spec())
        out["p"] = [_fmt(v) for v in self.p.values(self.p.rational)]
        return out


def make_instance(p: Any, draft: DraftLaw, label: str = "") -> Instance:
    """Validate ``p`` against ``draft`` (same vocabulary) and wrap them as an :class:`Instance`.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> make_instance([0.5, 0.5], WithReplacement([0.5, 0.3, 0.2], 2))
    Traceback (most recent call last):
    ...
    ValueError: p: has length 2 but the draft law is over V = 3 tokens; pass a p of length 3, or build the draft over p's vocabulary
    """
    if not isinstance(draft, DraftLaw):
        raise ValueError(
            "draft: expected a draft law from mdsd_ot.drafts (e.g. WithReplacement(q, n)), "
            f"got {type(draft).__name__}"
        )
    pv = p if isinstance(p, Vector) else Vector(p, "p")
    V_.check_on_vocabulary(pv.float, draft.V, "p")
    return Instance(pv, draft, label or _label(draft))


def _label(draft: DraftLaw) -> str:
    return f"{draft.scheme} V={draft.V} n={draft.n}"


def _as_instance(x: Any) -> Instance:
    if isinstance(x, Instance):
        return x
    if isinstance(x, Mapping):
        if "p" not in x or "scheme" not in x:
            raise ValueError(
                "instances: a dict instance needs 'p' and 'scheme' (and 'q', 'qs' or 'table')"
            )
        law = make(x["scheme"], x.get("q"), x.get("n"), qs=x.get("qs"), table=x.get("table"))
        return make_instance(x["p"], law, str(x.get("label", "")))
    if isinstance(x, tuple) and len(x) in (2, 3):
        return make_instance(*x)
    raise ValueError(
        "instances: each instance must be an Instance, a (p, draft) pair or a dict with "
        f"'p', 'scheme', 'n', 'q'/'qs'/'table'; got {type(x).__name__}"
    )


# -- instance banks ---------------------------------------------------------------------


def builtin_instances() -> list[Instance]:
    r"""The built-in bank: small rational instances covering every draft scheme.

    Every scheme of :data:`mdsd_ot.drafts.SCHEMES` appears (with, without, conditional Poisson,
    product, greedy, SpecHub, explicit), with n = 1, 2, 3, zeros in p and q, masses of
    :math:`10^{-12}` (the HiGHS presolve trap), the T12 pair (the same q sampled sequentially
    and by conditional Poisson) and the T10 instance where α* = 1 although p ≠ q.
    V ≤ 5 keeps the whole default cross-check well under 30 s on 2 cores.

    Examples
    --------
    >>> bank = builtin_instances()
    >>> sorted({inst.draft.scheme for inst in bank}) == sorted(SCHEMES)
    True
    >>> all(inst.p.rational and inst.draft.rational for inst in bank)
    True
    """
    tiny = "1/1000000000000"
    specs: list[tuple[str, dict[str, Any]]] = [
        (
            "with n=1 (T4)",
            dict(scheme="with", n=1, p=["1/2", "1/3", "1/6"], q=["1/6", "1/3", "1/2"]),
        ),
        ("with n=2", dict(scheme="with", n=2, p=["1/2", "1/3", "1/6"], q=["1/6", "1/3", "1/2"])),
        (
            "with n=3",
            dict(
                scheme="with", n=3, p=["2/5", "0", "1/5", "2/5"], q=["1/10", "1/5", "3/10", "2/5"]
            ),
        ),
        (
            "with n=2 (T10: alpha=1, p!=q)",
            dict(scheme="with", n=2, p=["1/3", "1/3", "1/3"], q=["1/3", "1/4", "5/12"]),
        ),
        (
            "with n=2 (masses 1e-12)",
            dict(
                scheme="with",
                n=2,
                p=["1/2", f"{10**12 // 2 - 1}/{10**12}", tiny],
                q=[tiny, f"{10**12 - 2}/{10**12}", tiny],
            ),
        ),
        (
            "without n=2 (T12)",
            dict(scheme="without", n=2, p=["1/5", "1/5", "3/5"], q=["1/2", "3/10", "1/5"]),
        ),
        (
            "without n=3",
            dict(
                scheme="without",
                n=3,
                p=["1/4", "1/4", "0", "1/2"],
                q=["2/5", "3/10", "1/5", "1/10"],
            ),
        ),
        (
            "conditional-poisson n=2 (T12)",
            dict(
                scheme="conditional-poisson", n=2, p=["1/5", "1/5", "3/5"], q=["1/2", "3/10", "1/5"]
            ),
        ),
        (
            "conditional-poisson n=3",
            dict(
                scheme="conditional-poisson",
                n=3,
                p=["1/10", "1/10", "1/20", "3/4"],
                q=["2/5", "3/10", "1/5", "1/10"],
            ),
        ),
        (
            "product n=2",
            dict(
                scheme="product",
                n=2,
                p=["1/10", "1/5", "3/10", "1/4", "3/20"],
                qs=[["1/5", "1/5", "1/5", "1/5", "1/5"], ["1/2", "1/4", "1/8", "1/16", "1/16"]],
            ),
        ),
        (
            "product n=3",
            dict(
                scheme="product",
                n=3,
                p=["0", "1/8", "1/8", "3/4"],
                qs=[["1/4"] * 4, ["0", "1/3", "1/3", "1/3"], ["1/2", "0", "1/2", "0"]],
            ),
        ),
        (
            "greedy n=2",
            dict(
                scheme="greedy",
                n=2,
                p=["1/10", "1/5", "1/2", "1/5"],
                q=["1/2", "1/4", "1/8", "1/8"],
            ),
        ),
        (
            "greedy n=3 (ties)",
            dict(
                scheme="greedy",
                n=3,
                p=["1/10", "1/10", "1/10", "1/2", "1/5"],
                q=["1/4", "1/4", "1/4", "1/8", "1/8"],
            ),
        ),
        (
            "spechub",
            dict(
                scheme="spechub",
                n=2,
                p=["1/10", "2/5", "1/4", "1/4"],
                q=["2/5", "3/10", "1/5", "1/10"],
            ),
        ),
        (
            "explicit n=2",
            dict(
                scheme="explicit",
                p=["1/10", "1/10", "4/5"],
                table=[["1/8", "1/4", "0"], ["0", "1/8", "1/8"], ["1/4", "0", "1/8"]],
            ),
        ),
    ]
    out = []
    for label, s in specs:
        inst = _as_instance(s)
        out.append(Instance(inst.p, inst.draft, label))
    return out


def random_instances(
    scheme: str | None = None,
    V: int = 4,
    n: int = 2,
    trials: int = 5,
    seed: int = 0,
    concentration: float = 1.0,
) -> list[Instance]:
    r"""Seeded random float instances: p and q drawn from a symmetric Dirichlet.

    Parameters
    ----------
    scheme : str, optional
        A scheme of :data:`mdsd_ot.drafts.SCHEMES` except ``"explicit"``; ``None`` cycles
        through :data:`RANDOM_SCHEMES`.
    V : int
        Vocabulary size.
    n : int
        Number of drafts (SpecHub always uses 2).
    trials : int
        Number of instances.
    seed : int
        Seed of :func:`numpy.random.default_rng`.
    concentration : float
        Dirichlet concentration of p and every q.

    Examples
    --------
    >>> [i.label for i in random_instances("with", V=3, n=2, trials=2, seed=1)]
    ['with V=3 n=2 #0', 'with V=3 n=2 #1']
    """
    if scheme is not None and scheme not in RANDOM_SCHEMES:
        why = "unknown scheme" if scheme not in SCHEMES else "no random instances for scheme"
        raise ValueError(f"scheme: {why} {scheme!r}; choose one of {', '.join(RANDOM_SCHEMES)}")
    if isinstance(V, bool) or not isinstance(V, int | np.integer) or V < 1:
        raise ValueError(f"vocab: the vocabulary size must be an integer >= 1, got {V!r}")
    n = V_.check_n(n)
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < 1:
        raise ValueError(f"trials: the number of random instances must be >= 1, got {trials!r}")
    rng = np.random.default_rng(seed)
    out = []
    for t in range(int(trials)):
        s = scheme or RANDOM_SCHEMES[t % len(RANDOM_SCHEMES)]
        cls = SCHEMES[s]
        p = rng.dirichlet(np.full(V, concentration))
        if issubclass(cls, QLaw):  # one q for every draft
            law = make(s, rng.dirichlet(np.full(V, concentration)), cls.fixed_n or n)
        else:  # one q per draft
            law = make(s, qs=[rng.dirichlet(np.full(V, concentration)) for _ in range(n)])
        out.append(make_instance(p, law, f"{s} V={V} n={law.n} #{t}"))
    return out
