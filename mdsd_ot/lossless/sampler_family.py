r"""Statistical mode on a family of instances: Holm across instances, and a replayable witness.

:func:`check_sampler_family` runs :func:`~mdsd_ot.lossless.sampler.check_sampler` on each
instance of the seeded family and decides by Holm's step-down at the family-wise level; the power
statements are made at level / m (Bonferroni), which Holm never rejects less than.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from numbers import Integral
from typing import Any

from .. import drafts as _drafts
from ..drafts import DraftLaw
from . import stats
from ._common import DraftFactory, as_factory, num
from .family import Instance, instance_family
from .sampler import Sampler, SamplerCheck, check_sampler

__all__ = ["SamplerReport", "check_sampler_family", "replay_sampler"]


@dataclass(frozen=True)
class SamplerReport:
    """The outcome of :func:`check_sampler_family`: per instance, the check and Holm's verdict."""

    instances: tuple[Instance, ...]
    checks: tuple[SamplerCheck | None, ...]  # None: the draft factory refused the instance
    drafts: tuple[DraftLaw | None, ...]
    level: float
    seed: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c is None or c.passed for c in self.checks)

    @property
    def failures(self) -> list[int]:
        """Indices (into ``checks``) of the failing instances."""
        return [k for k, c in enumerate(self.checks) if c is not None and not c.passed]

    @property
    def checked(self) -> int:
        return sum(c is not None for c in self.checks)

    @property
    def worst(self) -> int | None:
        """Index of the instance with the smallest p-value (a failing one first)."""
        run = [k for k, c in enumerate(self.checks) if c is not None]
        if not run:
            return None
        return min(run, key=lambda k: (self.checks[k].passed, self.checks[k].p_value))

    def row(self, k: int) -> dict[str, Any]:
        inst, c = self.instances[k], self.checks[k]
        head = {"instance": inst.index, "kind": inst.kind, "V": inst.V, "n": inst.n}
        if c is None:
            why = self.meta.get("undefined", {}).get(k)
            reason = f"draft law undefined: {why}" if why else "draft law undefined"
            return {**head, "verdict": "skipped", "reasons": [reason]}
        return {**head, **c.row()}

    @property
    def witness(self) -> dict[str, Any] | None:
        """The worst instance, replayable with :func:`replay_sampler`."""
        k = self.worst
        if k is None:
            return None
        inst, c, d = self.instances[k], self.checks[k], self.drafts[k]
        return {
            "kit": "mdsd_ot.lossless",
            "mode": "statistical",
            **self.row(k),
            "rng_seed": list(c.seed) if isinstance(c.seed, tuple | list) else c.seed,
            "p": [num(x) for x in inst.p],
            "q": [num(x) for x in inst.q],
            "draft": d.spec(),
            "counts": c.counts.tolist(),
            "batch": bool(self.meta.get("batch", False)),
            "replay": "mdsd_ot.lossless.replay_sampler(witness, sampler)",
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": "statistical",
            **{k: v for k, v in self.meta.items() if k != "undefined"},  # reasons: in the rows
            "seed": self.seed,
            "level": self.level,
            "passed": self.passed,
            "checked": self.checked,
            "failures": len(self.failures),
            "instances": [self.row(k) for k in range(len(self.checks))],
            "witness": self.witness,
        }


def check_sampler_family(
    sampler: Sampler,
    draft_factory: DraftFactory,
    instances: int | Iterable[Instance] = 50,
    samples: int | None = None,
    level: float = 1e-3,
    *,
    delta: float | None = None,
    vocab: Any = 4,
    n: Any = 2,
    seed: int = 0,
    batch: bool = False,
    **options: Any,
) -> SamplerReport:
    """:func:`check_sampler` on each instance of the seeded family, Holm across instances.

    Instance k uses the generator seed ``[seed, k]``; the tests and the power statements run at
    ``level / m`` for m checked instances (Holm's step-down never rejects less than that).

    Examples
    --------
    >>> from mdsd_ot.lossless import controls
    >>> rep = check_sampler_family(controls.package_sampler("k-seq", "with"), "with", 7,
    ...                            samples=5000, vocab=3, n=2, batch=True)
    >>> rep.passed, rep.checked
    (True, 7)
    """
    factory = as_factory(draft_factory)
    insts = (
        instance_family(instances, vocab, n, seed, exact=False)
        if isinstance(instances, Integral)
        else list(instances)
    )
    laws: list[DraftLaw | None] = []
    undefined: dict[int, str] = {}  # instance position -> why its law is undefined
    for k, inst in enumerate(insts):
        try:
            laws.append(factory(list(inst.q), inst.n))
        except ValueError as exc:
            laws.append(None)
            undefined[k] = str(exc)
    m = max(1, sum(d is not None for d in laws))
    checks: list[SamplerCheck | None] = [
        None
        if d is None
        else check_sampler(
            sampler,
            list(inst.p),
            d,
            samples,
            level,
            delta=delta,
            seed=(int(seed), int(inst.index)),
            batch=batch,
            tests=m,
            **options,
        )
        for inst, d in zip(insts, laws, strict=True)
    ]
    ran = [k for k, c in enumerate(checks) if c is not None]
    reject = stats.holm([checks[k].p_value for k in ran], level)
    for k, r in zip(ran, reject, strict=True):
        c = checks[k]
        reasons = [f"rejected by Holm at family level {level:g} (p = {c.p_value:.3g})"] if r else []
        if c.inconsistent:
            reasons.append(f"accepted {c.inconsistent} token(s) that are not drafts")
        if c.impossible:
            reasons.append(f"output {c.impossible} token(s) of probability 0 under p")
        checks[k] = replace(c, passed=not reasons, reasons=tuple(reasons))
    meta = {"vocab": vocab, "n": n, "samples": samples, "delta": delta, "batch": batch,
            "undefined": undefined}  # fmt: skip
    return SamplerReport(tuple(insts), tuple(checks), tuple(laws), level, seed, meta)


def replay_sampler(witness: dict[str, Any], sampler: Sampler, **options: Any) -> SamplerCheck:
    """Rerun ``sampler`` on the instance of a statistical witness (same seed, same N, same level).

    Deterministic when the sampler draws its randomness only from the ``rng`` it is given.

    Examples
    --------
    >>> from mdsd_ot.lossless import controls
    >>> bad = controls.verify_sampler(controls.always_accept)
    >>> rep = check_sampler_family(bad, "with", 3, 2000, vocab=3, n=2)
    >>> replay_sampler(rep.witness, bad).p_value == rep.witness["p_value"]
    True
    """
    if witness.get("mode") != "statistical":
        raise ValueError(
            "witness: expected a statistical-mode witness (SamplerReport.witness); an exact "
            "witness is replayed with mdsd_ot.lossless.replay"
        )
    seed = witness["rng_seed"]
    return check_sampler(
        sampler,
        witness["p"],
        _drafts.from_spec(witness["draft"]),
        witness["samples"],
        witness["level"],
        seed=tuple(seed) if isinstance(seed, Sequence) and not isinstance(seed, str) else seed,
        batch=witness.get("batch", False),
        **options,
    )
