"""Running claims and reproducing witnesses: :func:`run`, :func:`run_all`, :func:`reproduce`,
and :func:`table` (one row per run: what ``mdsd-ot claims`` prints)."""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ..witness import decode, encode
from . import _registry
from ._base import Claim, ClaimRun, Reproduction

__all__ = ["run", "run_all", "reproduce", "row", "table", "PROOF_TAGS"]

#: How the table shows each proof status.
PROOF_TAGS: dict[str, str] = {
    "proved": "proved",
    "checked": "checked, not proved",
    "refuted": "refuted",
}


def run(claim: Claim | str, trials: int | None = None, seed: int = 0) -> ClaimRun:
    """Run one claim's check on ``trials`` seeded instances (default: the claim's own count).

    Examples
    --------
    >>> r = run("T4", trials=3, seed=1)
    >>> r.status, r.ok, r.proof
    ('holds', True, 'proved')
    """
    c = _registry.get(claim) if isinstance(claim, str) else claim
    if trials is not None and trials < 1:
        raise ValueError(f"--trials: must be >= 1, got {trials}")
    rng = np.random.default_rng([seed, sum(map(ord, c.id))])
    t0 = time.perf_counter()
    out = c.check(c.trials if trials is None else trials, rng)
    return ClaimRun(
        c.id,
        c.statement,
        c.expect,
        out.status,
        out.trials,
        out.witness,
        out.detail,
        time.perf_counter() - t0,
        c.proof,
        c.proof_note,
    )


def run_all(
    ids: list[str] | None = None,
    trials: int | None = None,
    seed: int = 0,
    on_done: Callable[[ClaimRun], None] | None = None,
) -> list[ClaimRun]:
    """Run several claims (all by default) in registry order."""
    chosen = [_registry.get(i) for i in ids] if ids else list(_registry.CLAIMS.values())
    out = []
    for c in chosen:
        r = run(c, trials, seed)
        out.append(r)
        if on_done is not None:
            on_done(r)
    return out


def reproduce(witness: dict[str, Any]) -> Reproduction:
    """Recompute a witness (JSON form, rationals as ``"a/b"``) from its instance.

    It is reproduced when the instance shows the effect again and every exact figure the file
    stores under a name the recomputation reports (an α, an acceptance, a determinant, a
    value) equals the recomputed one.

    Examples
    --------
    >>> w = run("T12b", trials=1).witness
    >>> reproduce(encode(w)).reproduced
    True
    """
    w = decode(witness)
    kind = w.get("kind")
    kinds = _registry.KINDS
    if kind not in kinds:
        raise ValueError(
            f"--witness: unknown witness kind {kind!r}; expected one of {', '.join(kinds)}"
        )
    claim = w.get("claim")
    if claim is not None and not (
        claim in _registry.CLAIMS or (isinstance(claim, str) and claim.startswith("hunt:"))
    ):
        raise ValueError(
            f"--witness: unknown claim {claim!r}; expected a claim id of docs/reference.md "
            f"({', '.join(_registry.CLAIMS)}) or hunt:NAME"
        )
    n = w.get("n")
    if "n" in w and (isinstance(n, bool) or not isinstance(n, int)):
        raise ValueError(f"--witness: n must be an integer number of drafts, got {n!r}")
    try:
        found, vals = kinds[kind](w)
    except KeyError as exc:
        raise ValueError(
            f"--witness: a {kind} witness needs the field {exc.args[0]!r}; write witnesses with "
            "mdsd-ot claims --save or mdsd-ot hunt --out"
        ) from None
    for key, (a, b) in _DERIVED.get(kind, {}).items():  # the headline figures, recomputed too
        if key not in vals and _exact(vals.get(a)) and _exact(vals.get(b)):
            vals[key] = vals[a] - vals[b]
    detail = ", ".join(f"{k}={_short(v)}" for k, v in vals.items())
    # a stored figure the recomputation reports must be the same exact number (a stored "x",
    # 1.5 or null under that name is not the witness's figure either)
    stale = [k for k, v in vals.items() if k in w and _exact(v) and (not _exact(w[k]) or w[k] != v)]
    if stale:  # the instance still shows the effect, but the file's figures are not its own
        detail += (
            "; the file's "
            + ", ".join(f"{k}={_short(w[k])}" for k in stale)
            + (" differ from the recomputed values")
        )
    return Reproduction(str(w.get("claim", "?")), kind, bool(found) and not stale, detail, vals)


#: Figures a hunt witness stores as differences of the figures its recomputation reports
#: (:mod:`mdsd_ot.theory.conjectures`): ``key: (a, b)`` for ``key = a - b``.
_DERIVED: dict[str, dict[str, tuple[str, str]]] = {
    "greedy_vs_without": {"value": ("alpha_without", "alpha_greedy")},
    "en_alpha": {
        "value": ("alpha_en", "alpha_sequential"),
        "excess": ("alpha_en", "alpha_sequential"),
    },
    "rrs_order": {"value": ("acceptance_with", "acceptance_without")},
}


def _exact(v: Any) -> bool:
    """An exact number (int or Fraction, not bool): stored and recomputed ones must agree."""
    return isinstance(v, int | Fraction) and not isinstance(v, bool)


def row(r: ClaimRun) -> dict[str, str]:
    """The columns ``mdsd-ot claims`` prints for one run: verdict, id, trials, seconds,
    status, proof status, statement, detail, and the proof note where the claim is only
    checked."""
    return {
        "verdict": "ok" if r.ok else "FAIL",
        "id": r.id,
        "trials": str(r.trials),
        "seconds": f"{r.seconds:.2f}",
        "status": r.status,
        "proof": PROOF_TAGS[r.proof],
        "statement": r.statement,
        "detail": r.detail,
        "proof_note": r.proof_note if r.proof == "checked" else "",
    }


def table(runs: list[ClaimRun]) -> list[dict[str, str]]:
    """One :func:`row` per run.

    Examples
    --------
    >>> [(r["id"], r["proof"]) for r in table(run_all(["T4", "T12b"], trials=1))]
    [('T4', 'proved'), ('T12b', 'refuted')]
    """
    return [row(r) for r in runs]


def _short(v: Any) -> str:
    if isinstance(v, Fraction):
        return str(v)
    if isinstance(v, list) and len(v) > 6:
        return f"[{len(v)} entries]"
    return str(encode(v))
