r"""Exact mode: the output law of a verifier by enumerating every draft tuple and every coin path.

For a verifier ``verify(p, q, drafts, coins) -> (token, accepted)`` and a draft law
:math:`p_{draft}`,

.. math::

   \Pr[\text{out} = i] = \sum_{\bar i} p_{draft}(\bar i) \sum_{\text{paths } \omega}
   \Pr[\omega]\, 1[\text{token}(\bar i, \omega) = i],

and likewise the acceptance :math:`\Pr[\text{accepted}]` and the probability that the output is
one of the drafts, :math:`\Pr[\text{out} \in \bar i]`.  The verifier is lossless on the instance
when the law equals ``p``; then :math:`\Pr[\text{out} \in \bar i] \le \alpha^*(p, p_{draft})`
(docs/reference.md, T11), so an acceptance above α* proves the law is not ``p``.

:func:`check_exact` runs a family of instances (:mod:`mdsd_ot.lossless.family`) and reports, per
instance, :math:`\max_i |\text{law}_i - p_i|`, the acceptance against α* of the law
(``mdsd_ot.solve(p, law, method="subset-exact")``) and a verdict; the worst instance is a
replayable JSON witness (:func:`replay`).

Tolerances: with rational inputs and rational coins everything is exact and a verdict compares
exactly (any nonzero law error fails).  With floats (float inputs, or a verifier that computes its
coins in floats) the law error and the excess of acceptance over α* must be at most ``tol``
(default :data:`FLOAT_TOL`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral
from typing import Any

import numpy as np

from .. import drafts as _drafts
from ..drafts import DraftLaw, Vector
from ._common import DraftFactory, alpha_star_of, as_factory, num, p_of, q_of
from .coins import MAX_DEPTH, MAX_PATHS, enumerate_paths
from .family import Instance, instance_family

__all__ = [
    "Path",
    "ExactLaw",
    "exact_law",
    "InstanceCheck",
    "ExactReport",
    "check_exact",
    "replay",
    "FLOAT_TOL",
]

#: Default tolerance on the law error and the acceptance excess when the arithmetic is in floats.
FLOAT_TOL: float = 1e-9

Verify = Callable[[Any, Any, tuple[int, ...], Any], tuple[int, bool]]


@dataclass(frozen=True)
class Path:
    """One path: the draft tuple (and its probability), the coin outcomes (and theirs), the
    output token and the ``accepted`` flag the verifier returned."""

    drafts: tuple[int, ...]
    draft_prob: Any
    coins: tuple[Any, ...]
    prob: Any
    token: int
    accepted: bool


@dataclass(frozen=True)
class ExactLaw:
    """The output law of a verifier on one instance (:func:`exact_law`).

    Attributes
    ----------
    law : (V,) ndarray
        Output law: an object array of Fractions when exact, else float64.
    acceptance : Fraction or float
        :math:`\\Pr[\\text{accepted}]` as the verifier reports it.
    in_drafts : Fraction or float
        :math:`\\Pr[\\text{out} \\in \\bar i]` (the acceptance of docs/reference.md).
    inconsistent : Fraction or float
        :math:`\\Pr[\\text{accepted and out} \\notin \\bar i]` (should be 0).
    paths : tuple of Path
        Every (draft tuple, coin path) of positive probability.
    p : (V,) ndarray
        The target, in the same arithmetic as ``law``.
    exact : bool
        Whether every probability was a rational (then all the above are exact).
    """

    law: np.ndarray
    acceptance: Any
    in_drafts: Any
    inconsistent: Any
    paths: tuple[Path, ...]
    p: np.ndarray
    exact: bool

    @property
    def error(self) -> Any:
        r""":math:`\max_i |\text{law}_i - p_i|` (exact when ``exact``)."""
        return max(abs(a - b) for a, b in zip(self.law, self.p, strict=True))

    @property
    def tv(self) -> Any:
        r"""Total variation :math:`\frac12 \sum_i |\text{law}_i - p_i|`."""
        return sum((abs(a - b) for a, b in zip(self.law, self.p, strict=True)), 0) / 2


def _token(value: Any, V: int, tup: tuple[int, ...]) -> tuple[int, bool]:
    ok = isinstance(value, tuple | list) and len(value) == 2
    tok, acc = value if ok else (None, None)
    if not ok or isinstance(tok, bool) or not isinstance(tok, Integral):
        raise ValueError(
            f"verify returned {value!r} for drafts {tup}; expected (token, accepted) with an "
            "integer token"
        )
    if not 0 <= int(tok) < V:
        raise ValueError(f"verify returned token {tok} for drafts {tup}; tokens lie in [0, {V})")
    if not isinstance(acc, bool | np.bool_):
        raise ValueError(f"verify returned accepted={acc!r} for drafts {tup}; expected a bool")
    return int(tok), bool(acc)


def exact_law(
    verify: Verify,
    p: Any,
    draft: DraftLaw,
    *,
    max_paths: int = MAX_PATHS,
    max_depth: int = MAX_DEPTH,
) -> ExactLaw:
    r"""Run ``verify`` over every draft tuple of ``draft`` and every branch of its coins.

    Parameters
    ----------
    verify : callable
        ``verify(p, q, drafts, coins) -> (token, accepted)``; ``p`` and ``q`` are lists of
        Fractions when ``p`` and the law are rational, else float64 arrays; ``q`` is the law's
        reference distribution (``None`` for product and explicit laws); ``drafts`` a tuple of
        ints; all randomness goes through ``coins`` (:mod:`mdsd_ot.lossless.coins`).
    p : (V,) array_like
        The target distribution.
    draft : DraftLaw
        The law the drafts are drawn from.
    max_paths, max_depth : int
        Limits per draft tuple (:func:`~mdsd_ot.lossless.coins.enumerate_paths`).

    Returns
    -------
    ExactLaw
        ``.law``, ``.acceptance``, ``.paths`` (and ``.in_drafts``, ``.error``, ``.tv``).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> def speculative(p, q, drafts, coins):
    ...     (x,) = drafts
    ...     if coins.bernoulli(min(1, p[x] / q[x])):
    ...         return x, True
    ...     return coins.categorical([max(a - b, 0) for a, b in zip(p, q)]), False
    >>> r = exact_law(speculative, ["1/2", "1/2"], WithReplacement(["3/4", "1/4"], 1))
    >>> [str(x) for x in r.law], r.acceptance, len(r.paths)
    (['1/2', '1/2'], Fraction(3, 4), 3)
    """
    if not isinstance(draft, DraftLaw):
        raise ValueError(
            f"draft: expected a draft law from mdsd_ot.drafts (e.g. WithReplacement(q, n)), got "
            f"{type(draft).__name__}"
        )
    pv = Vector(p, "p")
    if len(pv) != draft.V:
        raise ValueError(f"p: has length {len(pv)} but the draft law has V = {draft.V} tokens")
    exact = pv.rational and draft.rational
    pl, ql = p_of(pv, exact), q_of(draft, exact)
    zero: Any = Fraction(0) if exact else 0.0
    law = [zero] * draft.V
    acc = ind = bad = zero
    paths: list[Path] = []
    for tup, w in draft.joint_items(exact=exact).items():
        tup = tuple(int(i) for i in tup)
        for cp in enumerate_paths(
            lambda coins, tup=tup: verify(pl, ql, tup, coins),
            max_paths=max_paths,
            max_depth=max_depth,
        ):
            tok, a = _token(cp.value, draft.V, tup)
            m = w * cp.prob
            law[tok] += m
            if a:
                acc += m
            if tok in tup:
                ind += m
            elif a:
                bad += m
            paths.append(Path(tup, w, cp.choices, cp.prob, tok, a))
    is_exact = exact and all(isinstance(x, Fraction) for x in (*law, acc, ind, bad))
    if is_exact:
        arr, parr = np.array(law, dtype=object), np.array(pl, dtype=object)
    else:
        arr = np.array([float(x) for x in law])
        parr = np.array([float(x) for x in pl])
        acc, ind, bad = float(acc), float(ind), float(bad)
    return ExactLaw(arr, acc, ind, bad, tuple(paths), parr, is_exact)


@dataclass(frozen=True)
class InstanceCheck:
    """The verdict on one instance of :func:`check_exact`.

    ``verdict`` is ``"pass"``, ``"fail"`` (law off p, acceptance above α*, or ``accepted`` for a
    token that is not a draft), ``"error"`` (the verifier raised or misused its coins) or
    ``"skipped"`` (the draft factory refused the instance); ``reasons`` says why.
    """

    instance: Instance
    verdict: str
    reasons: tuple[str, ...] = ()
    draft: DraftLaw | None = None
    result: ExactLaw | None = None
    alpha_star: Any = None
    tol: float = 0.0

    @property
    def law_error(self) -> Any:
        """:math:`\\max_i |law_i - p_i|` (None when the verifier did not run)."""
        return None if self.result is None else self.result.error

    @property
    def excess(self) -> Any:
        """:math:`\\Pr[out \\in drafts] - \\alpha^*` (positive: a violation)."""
        if self.result is None or self.alpha_star is None:
            return None
        return self.result.in_drafts - self.alpha_star

    @property
    def failed(self) -> bool:
        return self.verdict in ("fail", "error")

    def row(self) -> dict[str, Any]:
        """A JSON-friendly summary (numbers as ``"a/b"`` strings when exact)."""
        r = self.result
        return {
            "instance": self.instance.index,
            "kind": self.instance.kind,
            "V": self.instance.V,
            "n": self.instance.n,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "law_error": num(self.law_error),
            "tv": None if r is None else num(r.tv),
            "acceptance": None if r is None else num(r.acceptance),
            "in_drafts": None if r is None else num(r.in_drafts),
            "alpha_star": num(
                self.alpha_star
                if r is None or r.exact or self.alpha_star is None
                else float(self.alpha_star)
            ),
            "paths": None if r is None else len(r.paths),
            "exact": None if r is None else r.exact,
        }

    def witness(self, seed: int | None = None) -> dict[str, Any]:
        """The replayable witness: the row plus p, the law's spec and the output law."""
        w = {"kit": "mdsd_ot.lossless", "mode": "exact", "seed": seed, **self.row()}
        w["p"] = [num(x) for x in self.instance.p]
        w["q"] = [num(x) for x in self.instance.q]
        w["draft"] = None if self.draft is None else self.draft.spec()
        w["law"] = None if self.result is None else [num(x) for x in self.result.law]
        w["tolerance"] = self.tol
        w["replay"] = "mdsd_ot.lossless.replay(witness, verify)"
        return w


def _severity(c: InstanceCheck) -> tuple:
    err = c.law_error
    exc = c.excess
    return (
        c.failed,
        c.verdict == "error",
        float(err) if err is not None else -1.0,
        float(exc) if exc is not None else -np.inf,
    )


@dataclass(frozen=True)
class ExactReport:
    """The outcome of :func:`check_exact`: one :class:`InstanceCheck` per instance."""

    checks: tuple[InstanceCheck, ...]
    seed: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when no instance failed (skipped instances do not count)."""
        return not any(c.failed for c in self.checks)

    @property
    def failures(self) -> list[InstanceCheck]:
        return [c for c in self.checks if c.failed]

    @property
    def checked(self) -> int:
        """Instances the verifier ran on (not skipped)."""
        return sum(c.verdict != "skipped" for c in self.checks)

    @property
    def worst(self) -> InstanceCheck | None:
        """The failing instance with the largest law error (else the largest acceptance excess)."""
        run = [c for c in self.checks if c.verdict != "skipped"]
        return max(run, key=_severity) if run else None

    @property
    def max_error(self) -> Any:
        errs = [c.law_error for c in self.checks if c.law_error is not None]
        return max(errs) if errs else None

    @property
    def witness(self) -> dict[str, Any] | None:
        """The worst instance as a replayable JSON-friendly dict (:func:`replay`)."""
        w = self.worst
        return None if w is None else w.witness(self.seed)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": "exact",
            **self.meta,
            "seed": self.seed,
            "passed": self.passed,
            "checked": self.checked,
            "failures": len(self.failures),
            "max_law_error": num(self.max_error),
            "instances": [c.row() for c in self.checks],
            "witness": self.witness,
        }


def _check_one(
    verify: Verify,
    inst: Instance,
    factory: Callable[[Sequence[Any], int], DraftLaw],
    tol: float,
    alpha_method: str,
    limits: dict[str, int],
) -> InstanceCheck:
    try:
        draft = factory(list(inst.q), inst.n)
    except ValueError as exc:
        return InstanceCheck(inst, "skipped", (f"draft law undefined: {exc}",))
    alpha = alpha_star_of(list(inst.p), draft, alpha_method)
    try:
        r = exact_law(verify, list(inst.p), draft, **limits)
    except Exception as exc:  # noqa: BLE001 - any exception of the verifier is its failure
        return InstanceCheck(
            inst, "error", (f"{type(exc).__name__}: {exc}",), draft, None, alpha, tol
        )
    t = 0 if r.exact else tol
    reasons = []
    if r.error > t:
        reasons.append(f"law off p: max |law - p| = {float(r.error):.3g}, TV = {float(r.tv):.3g}")
    if r.in_drafts - alpha > t:
        reasons.append(
            f"acceptance above alpha*: Pr[out in drafts] = {float(r.in_drafts):.6g} > "
            f"alpha* = {float(alpha):.6g}"
        )
    if r.inconsistent > t:
        reasons.append(
            f"accepted a token that is not a draft with probability {float(r.inconsistent):.3g}"
        )
    return InstanceCheck(
        inst,
        "fail" if reasons else "pass",
        tuple(reasons),
        draft,
        r,
        alpha,
        0.0 if r.exact else tol,
    )


def check_exact(
    verify: Verify,
    draft_factory: DraftFactory,
    instances: int | Iterable[Instance] = 200,
    *,
    vocab: Any = 4,
    n: Any = 2,
    seed: int = 0,
    exact: bool = True,
    tol: float = FLOAT_TOL,
    alpha_method: str = "subset-exact",
    max_paths: int = MAX_PATHS,
    max_depth: int = MAX_DEPTH,
) -> ExactReport:
    r"""Run ``verify`` in exact mode on a family of instances; report per instance and a witness.

    Parameters
    ----------
    verify : callable
        ``verify(p, q, drafts, coins) -> (token, accepted)`` (see :func:`exact_law`).
    draft_factory : class, callable or str
        ``draft_factory(q, n) -> DraftLaw``: a law class (``WithReplacement``), a callable, or a
        scheme name of :data:`mdsd_ot.drafts.SCHEMES`.  A ``ValueError`` from it skips the
        instance (the law is not defined for that q and n).
    instances : int or iterable of Instance
        How many instances of the seeded family (:func:`~mdsd_ot.lossless.family.instance_family`),
        or the instances themselves.
    vocab, n : int or sequence of int
        Vocabulary size(s) and number(s) of drafts of the family.
    seed : int
        The family's seed.
    exact : bool
        Rational instances (default) or floats.
    tol : float
        Tolerance on the law error and the acceptance excess when the arithmetic is in floats
        (exact results compare exactly).
    alpha_method : str
        The :func:`mdsd_ot.solve` method for α* (``"subset-exact"``: exact, small V).

    Returns
    -------
    ExactReport
        ``.passed``, ``.checks`` (per instance), ``.worst``, ``.witness`` (JSON-friendly).

    Examples
    --------
    >>> from mdsd_ot.lossless import controls
    >>> rep = check_exact(controls.rrs_with, "with", instances=7, vocab=3, n=2)
    >>> rep.passed, rep.checked
    (True, 7)
    >>> bad = check_exact(controls.rrs_unnormalised, "with", instances=7, vocab=3, n=2)
    >>> bad.passed, bad.witness["verdict"]
    (False, 'fail')
    """
    factory = as_factory(draft_factory)
    insts = (
        instance_family(instances, vocab, n, seed, exact)
        if isinstance(instances, Integral)
        else list(instances)
    )
    limits = {"max_paths": max_paths, "max_depth": max_depth}
    checks = tuple(_check_one(verify, i, factory, tol, alpha_method, limits) for i in insts)
    return ExactReport(checks, seed, {"vocab": vocab, "n": n, "exact": exact})


def replay(witness: dict[str, Any], verify: Verify, **limits: int) -> ExactLaw:
    """Rerun ``verify`` on the instance of an exact-mode witness; returns its :class:`ExactLaw`.

    Examples
    --------
    >>> from mdsd_ot.lossless import controls
    >>> rep = check_exact(controls.rrs_unnormalised, "with", instances=7, vocab=3, n=2)
    >>> r = replay(rep.witness, controls.rrs_unnormalised)
    >>> str(r.error) == rep.witness["law_error"]
    True
    """
    if witness.get("mode") != "exact" or witness.get("draft") is None:
        raise ValueError(
            "witness: expected an exact-mode witness with a draft law (ExactReport.witness); "
            "a statistical witness is replayed with lossless.sampler.replay_sampler"
        )
    return exact_law(verify, witness["p"], _drafts.from_spec(witness["draft"]), **limits)
