r"""Exact mode on a family of instances: verdicts per instance and a replayable witness.

:func:`check_exact` runs :func:`~mdsd_ot.lossless.exact.exact_law` on a family of instances
(:mod:`mdsd_ot.lossless.family`) and reports, per instance, :math:`\max_i |\text{law}_i - p_i|`,
the acceptance against α* of the law (``mdsd_ot.solve(p, law, method="subset-exact")``; ``"reduced"``
above V = 16) and a
verdict; the worst instance is a replayable JSON witness (:func:`replay`).

Tolerances: with rational inputs and rational coins everything is exact and a verdict compares
exactly (any nonzero law error fails).  With floats (float inputs, or a verifier that computes its
coins in floats) the law error and the excess of acceptance over α* must be at most ``tol``
(default :data:`FLOAT_TOL`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np

from .. import drafts as _drafts
from ..drafts import DraftLaw
from ._common import EXACT_ALPHA_MAX_V, DraftFactory, alpha_star_of, as_factory, num
from .coins import MAX_DEPTH, MAX_PATHS
from .exact import ExactLaw, Verify, exact_law
from .family import Instance, instance_family

__all__ = ["InstanceCheck", "ExactReport", "check_exact", "replay", "FLOAT_TOL"]

#: Default tolerance on the law error and the acceptance excess when the arithmetic is in floats.
FLOAT_TOL: float = 1e-9


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
    alpha_method: str | None,
    limits: dict[str, int],
) -> InstanceCheck:
    try:
        draft = factory(list(inst.q), inst.n)
    except ValueError as exc:
        return InstanceCheck(inst, "skipped", (f"draft law undefined: {exc}",))
    method = alpha_method or ("subset-exact" if draft.V <= EXACT_ALPHA_MAX_V else "reduced")
    alpha = alpha_star_of(list(inst.p), draft, method)
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
    alpha_method: str | None = None,
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
    alpha_method : str, optional
        The :func:`mdsd_ot.solve` method for α*; default ``"subset-exact"`` up to
        V = :data:`~mdsd_ot.lossless._common.EXACT_ALPHA_MAX_V` (16), ``"reduced"`` above (the
        set-reduced max-flow: exact in Fractions too, where subset selection over 2^V sets
        refuses).

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
            "a statistical witness is replayed with mdsd_ot.lossless.replay_sampler"
        )
    return exact_law(verify, witness["p"], _drafts.from_spec(witness["draft"]), **limits)
