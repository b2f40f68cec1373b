r"""Statistical mode: test a black-box sampler's output law against p, with a power statement.

A sampler is ``sampler(p, q, drafts, rng) -> (token, accepted)`` (or, with ``batch=True``,
``sampler(p, q, drafts_array, rng) -> (tokens, accepted)`` for an ``(N, n)`` array).  The kit draws
N draft tuples from the law, runs the sampler, and tests :math:`H_0`: "the output law is p" with
the tests of :mod:`mdsd_ot.lossless.stats` (pool test, G-test, acceptance above α*), combined by
Bonferroni within an instance and by Holm across instances
(:func:`mdsd_ot.lossless.sampler_family.check_sampler_family`).

Every result carries its power statement: "with N samples this detects a total-variation error
≥ δ with probability 0.9 at this level" (:func:`mdsd_ot.lossless.stats.power`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw, Vector
from . import stats
from ._common import EXACT_ALPHA_MAX_V, accepted_flags, alpha_star_of, q_of

__all__ = [
    "SamplerCheck",
    "SamplerError",
    "SamplerTypeError",
    "Sampler",
    "check_sampler",
    "EXACT_ALPHA_MAX_V",
]


Sampler = Callable[[Any, Any, Any, np.random.Generator], tuple[Any, Any]]


@dataclass(frozen=True)
class SamplerCheck:
    """The outcome of :func:`check_sampler` on one instance.

    Attributes
    ----------
    passed : bool
        No test rejected at ``level`` and no ``accepted`` flag on a non-draft token.
    p_value : float
        The instance's combined p-value (:attr:`mdsd_ot.lossless.stats.Tests.p_value`).
    acceptance : float
        The fraction of outputs the sampler flagged ``accepted``.
    in_drafts : float
        The fraction of outputs that are one of their drafts (tested against α*).
    alpha_star : Fraction or float
        α* of ``(p, draft)``, a number for reporting: a Fraction when ``p`` and the law are both
        rational (and the method exact), else a float (the exact α* of float inputs is a
        Fraction of some hundred digits).
    power : PowerStatement
        What these samples detect at this level.
    tests : Tests
        The separate p-values.
    counts : (V,) int ndarray
        Output counts.
    tv_hat : float
        The plug-in TV :math:`\\frac12 \\sum_i |c_i / N - p_i|` (biased upwards, for reading).
    inconsistent : int
        Outputs flagged ``accepted`` that are not one of their drafts.
    impossible : int
        Outputs of a token with p = 0: a certain counterexample, failed whatever the tests say.
    """

    passed: bool
    p_value: float
    acceptance: float
    in_drafts: float
    alpha_star: Any
    power: stats.PowerStatement
    tests: stats.Tests
    counts: np.ndarray
    samples: int
    level: float
    tv_hat: float
    inconsistent: int
    seed: Any = None
    reasons: tuple[str, ...] = ()
    impossible: int = 0

    def row(self) -> dict[str, Any]:
        t = self.tests
        return {
            "verdict": "pass" if self.passed else "fail",
            "reasons": list(self.reasons),
            "p_value": self.p_value,
            "tv_hat": self.tv_hat,
            "impossible": self.impossible,
            "acceptance": self.acceptance,
            "in_drafts": self.in_drafts,
            "alpha_star": float(self.alpha_star),
            "samples": self.samples,
            "level": self.level,
            "tests": {
                "g": t.g,
                "g_statistic": t.statistic,
                "df": t.df,
                "pool": t.pool,
                "pool_count": t.pool_count,
                "pool_mass": t.pool_mass,
                "acceptance": t.acceptance,
            },
            "power": self.power.to_json(),
        }


class SamplerError(RuntimeError):
    """The sampler under test raised, or returned something other than (token, accepted)."""


class SamplerTypeError(SamplerError, TypeError):
    """The sampler raised TypeError: a :class:`SamplerError` and a TypeError, whose message says
    how the sampler was called (one tuple, or the (N, n) array) and names ``batch``."""


def _batch_hint(batch: bool) -> str:
    """How the sampler was called, and the option that calls it the other way."""
    if batch:
        return (
            "; it was called on the (N, n) array of draft tuples (batch=True): if it takes one "
            "draft tuple, drop batch=True (mdsd-ot lossless --batch)"
        )
    return (
        "; it was called on one draft tuple (a tuple of n ints): if the sampler takes an (N, n) "
        "array of draft tuples, say so with batch=True (mdsd-ot lossless --batch)"
    )


def _host(x: Any) -> Any:
    """``x`` with torch tensors (any device, any ``requires_grad``) moved to numpy: a tensor,
    or a list of them (one per call in single mode)."""
    if isinstance(x, list | tuple):
        return [V_._host(v) if hasattr(v, "detach") else v for v in x]
    return V_._host(x) if hasattr(x, "detach") else x


def _run(sampler: Sampler, p, q, t: np.ndarray, rng, batch: bool, V: int):
    try:
        if batch:
            tok, acc = sampler(p, q, t, rng)
        else:
            out = [sampler(p, q, tuple(row), rng) for row in t.tolist()]
            tok, acc = [o[0] for o in out], [o[1] for o in out]
    except TypeError as exc:  # often a batched sampler called on one tuple, or the reverse
        raise SamplerTypeError(f"the sampler raised TypeError: {exc}{_batch_hint(batch)}") from exc
    except Exception as exc:  # noqa: BLE001 - any exception of the sampler is its failure
        raise SamplerError(f"the sampler raised {type(exc).__name__}: {exc}") from exc
    try:  # torch tensors on any device, with grad or not; ragged output is not pairs
        tok, acc = _host(tok), _host(acc)
        tok = np.asarray(tok)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise SamplerError(
            f"the sampler returned something numpy cannot read as {len(t)} (token, accepted) "
            f"pairs ({type(exc).__name__}: {exc})"
        ) from exc
    flags = accepted_flags(acc)
    acc = np.asarray(acc, dtype=object) if flags is None else flags
    if tok.shape != (len(t),) or acc.shape != (len(t),):
        hint = ""
        if not batch and tok.ndim >= 2 and tok.shape[0] == len(t):
            hint = (
                "; each call on one draft tuple returned an array, as a batched sampler does: if "
                "the sampler takes an (N, n) array of draft tuples, say so with batch=True "
                "(mdsd-ot lossless --batch)"
            )
        elif batch and tok.ndim == 0:
            hint = (
                "; the call on the (N, n) array returned one pair, as a sampler of one draft "
                "tuple does: if it takes one tuple, drop batch=True (mdsd-ot lossless --batch)"
            )
        raise SamplerError(
            f"the sampler returned shapes {tok.shape}, {acc.shape}; expected {len(t)} "
            f"(token, accepted) pairs{hint}"
        )
    if tok.size and (not np.issubdtype(tok.dtype, np.integer) or tok.min() < 0 or tok.max() >= V):
        raise SamplerError(f"the sampler returned tokens outside the integers [0, {V})")
    if flags is None:  # 2, 0.5 or None are not flags: refused rather than cast to True
        raise SamplerError(
            "the sampler returned accepted flags that are not booleans (or the integers 0 and 1)"
        )
    return tok.astype(np.int64), flags


def check_sampler(
    sampler: Sampler,
    p: Any,
    draft: DraftLaw,
    samples: int | None = None,
    level: float = 1e-3,
    *,
    delta: float | None = None,
    seed: Any = 0,
    batch: bool = False,
    tests: int = 1,
    probability: float = stats.POWER,
    min_expected: float = stats.MIN_EXPECTED,
    alpha_method: str | None = None,
) -> SamplerCheck:
    r"""Test ``sampler``'s output law against ``p`` on N draft tuples drawn from ``draft``.

    Parameters
    ----------
    sampler : callable
        ``sampler(p, q, drafts, rng) -> (token, accepted)``; ``p``, ``q`` float64 arrays (``q``
        the law's reference, ``None`` for product / explicit laws), ``drafts`` a tuple of ints.
    p : (V,) array_like
        Target distribution.
    draft : DraftLaw
        The law of the drafts.
    samples : int, optional
        N; default: the N whose power statement detects a TV error ≥ ``delta``.
    level : float
        Family-wise level; the tests run at ``level / tests``.
    delta : float, optional
        The TV error to size N for (when ``samples`` is None).
    seed : int or sequence of int
        Seeds the generator that draws the tuples and is passed to the sampler.
    batch : bool
        The sampler takes an ``(N, n)`` array and returns arrays.
    tests : int
        The number of instances tested together (Bonferroni for the power statement).
    probability, min_expected : float
        The power statement's probability, and the pooling threshold of expected counts.
    alpha_method : str, optional
        :func:`mdsd_ot.solve` method for α* (default ``subset-exact`` up to V = 16, else ``auto``).

    Returns
    -------
    SamplerCheck
        ``.passed``, ``.p_value``, ``.acceptance``, ``.alpha_star``, ``.power`` and the details.

    Raises
    ------
    SamplerError
        The sampler raised, or returned something other than N (token, accepted) pairs of
        tokens in [0, V); a shape that looks batched (or unbatched) names ``batch``.
    SamplerTypeError
        The sampler raised TypeError (its ``__cause__``), as a batched sampler called on one
        tuple does, or the reverse; also a TypeError, its message names ``batch``.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> from mdsd_ot.lossless import controls
    >>> law = WithReplacement([0.5, 0.3, 0.2], 2)
    >>> ok = check_sampler(controls.package_sampler("rrs-with", "with", batch=False),
    ...                    [0.2, 0.3, 0.5], law, samples=2000)
    >>> ok.passed, ok.in_drafts <= ok.alpha_star + 0.05
    (True, True)
    >>> bad = check_sampler(controls.verify_sampler(controls.always_accept),
    ...                     [0.2, 0.3, 0.5], law, samples=2000)
    >>> bad.passed, bad.p_value < 1e-10
    (False, True)
    >>> print(ok.power)  # doctest: +ELLIPSIS
    with 2,000 samples this detects a total-variation error >= 0.0... with probability >= 0.9 at level 0.001
    """
    if not isinstance(draft, DraftLaw):
        raise ValueError(
            f"draft: expected a draft law from mdsd_ot.drafts, got {type(draft).__name__}"
        )
    if not 0 < level < 1:
        raise ValueError(f"level: must lie in (0, 1), got {level}")
    if int(tests) < 1:
        raise ValueError(f"tests: must be >= 1, got {tests}")
    pv = Vector(p, "p")
    V_.check_on_vocabulary(pv.float, draft.V, "p")
    pf = pv.float.copy()
    a = level / int(tests)
    if samples is None:
        if delta is None:
            raise ValueError("samples: give samples=N, or delta=TV error to size N for")
        samples = stats.samples_needed(pf, delta, a, probability, min_expected)
    N = int(samples)
    if N < 1:
        raise ValueError(f"samples: must be >= 1, got {samples}")
    rng = np.random.default_rng(seed)
    t = np.asarray(draft.sample(rng, N), dtype=np.int64)
    tok, acc = _run(sampler, pf, q_of(draft, False), t, rng, batch, draft.V)
    in_d = (t == tok[:, None]).any(axis=1)
    method = alpha_method or ("subset-exact" if draft.V <= EXACT_ALPHA_MAX_V else "auto")
    alpha = alpha_star_of(pf if not pv.rational else list(pv.exact), draft, method)
    if not (pv.rational and draft.rational):
        alpha = float(alpha)  # float inputs: a float, not the Fraction of their binary values
    counts = np.bincount(tok, minlength=draft.V)
    tt = stats.law_tests(
        counts, pf, stats.acceptance_p_value(int(in_d.sum()), N, float(alpha)), min_expected
    )
    inconsistent = int((acc & ~in_d).sum())
    impossible = int(counts[pf == 0].sum())
    reasons = []
    if tt.p_value <= a:
        parts = [
            ("G-test", tt.g),
            ("pool test", tt.pool),
            ("acceptance above alpha*", tt.acceptance),
        ]
        worst = min(parts, key=lambda kv: kv[1])
        reasons.append(f"{worst[0]} rejects (p = {worst[1]:.3g}, combined {tt.p_value:.3g})")
    if inconsistent:
        reasons.append(f"accepted {inconsistent} token(s) that are not drafts")
    if impossible:  # certain: p gives these tokens probability 0
        reasons.append(f"output {impossible} token(s) of probability 0 under p")
    delta_hat = stats.detectable_tv(pf, N, a, probability, min_expected)
    return SamplerCheck(
        passed=not reasons,
        p_value=tt.p_value,
        acceptance=float(acc.mean()),
        in_drafts=float(in_d.mean()),
        alpha_star=alpha,
        power=stats.PowerStatement(N, a, delta_hat, probability),
        tests=tt,
        counts=counts,
        samples=N,
        level=a,
        tv_hat=float(0.5 * np.abs(counts / N - pf).sum()),
        inconsistent=inconsistent,
        seed=seed,
        reasons=tuple(reasons),
        impossible=impossible,
    )
