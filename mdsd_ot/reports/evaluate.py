r"""Per-position values of a report: α* of each draft law and the acceptance of its verifiers.

For one batch of rows (target ``p`` and draft model ``q`` per position), ``n`` drafts and every
law L of :func:`~mdsd_ot.reports.laws.report_laws` (or those asked for): α* per row
(:func:`~mdsd_ot.reports.laws.alpha_rows`) and, for every verifier v defined for L
(:func:`mdsd_ot.verifiers.applicable`), its acceptance per row, labelled by how it was computed:

- ``closed-form``: :meth:`Verifier.acceptance` where it exists;
- ``exact``: enumeration over the draft tuples (:meth:`Verifier.exact`) when the law has at most
  ``exact_max_tuples`` tuples;
- ``simulated``: ``samples`` draft tuples verified by the sampler, with the Monte-Carlo standard
  error :math:`\sqrt{\hat a(1-\hat a)/N}`;
- ``optimal`` is evaluated for every law and every V: its closed form where the construction
  attains α* exactly (``closed-form``), the certified lower bound :math:`\sum \min(s, T)` of
  the swap constructions (``certified``, within the certified ε of α*), enumeration where the
  law is small, simulation otherwise (the set-reduced reference only for V ≤
  ``optimal_max_v``). Where the certified value falls more than :data:`CERT_GAP` below α* and
  the law has few draft sets, the exact set-reduced plan's acceptance (``exact``).

A verifier's label over several positions is the least exact any position needed
(:data:`METHODS`, :func:`weakest`).

T11: every acceptance is at most α* of its law, so the gap α* − acceptance is ≥ 0.

Examples
--------
>>> rows = evaluate([[0.5, 0.3, 0.2]], [[0.2, 0.3, 0.5]], 2, rng=0, laws=["with"])
>>> r = rows[0]
>>> r.law, r.names, r.method["rrs-with"], bool(r.acceptance["rrs-with"][0] <= r.alpha[0])
('with', ['rrs-with', 'k-seq', 'optimal'], 'closed-form', True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..verifiers import applicable, get
from ..verifiers.chain import ChainOptimal, construction_for
from .laws import alpha_rows, make_law, report_laws

__all__ = ["LawRows", "METHODS", "evaluate", "concat", "select_laws", "weakest"]


@dataclass
class LawRows:
    """Per-position values of one draft law (arrays of length m; NaN where undefined).

    Attributes
    ----------
    law : str
    alpha : ndarray
        α* per position.
    alpha_method : str or None
    names : list of str
        The verifiers evaluated.
    acceptance, se : dict of ndarray
        Acceptance per position and its Monte-Carlo standard error (0 unless simulated).
    method : dict of str
        ``closed-form``, ``exact``, ``certified`` or ``simulated`` per verifier: the least exact
        that any position needed (:func:`weakest`).
    skipped : str or None
        Why some positions (or the whole law) have no value.
    """

    law: str
    alpha: np.ndarray
    alpha_method: str | None
    names: list[str]
    acceptance: dict[str, np.ndarray] = field(default_factory=dict)
    se: dict[str, np.ndarray] = field(default_factory=dict)
    method: dict[str, str | None] = field(default_factory=dict)
    skipped: str | None = None


def _support_bound(law: Any) -> int:
    return int(law.support_size_bound())


def select_laws(n: int, laws: Sequence[str] | None) -> list[str]:
    """The laws to report for ``n`` drafts: ``laws`` (checked) or all of :func:`report_laws`."""
    allowed = report_laws(n)
    if laws is None:
        return list(allowed)
    bad = [x for x in laws if x not in allowed]
    if bad:
        raise ValueError(
            f"--laws: {', '.join(map(repr, bad))} not reportable with n = {n}; choose from "
            f"{', '.join(allowed)}"
        )
    return list(laws)


def _verifier_names(law: str, n: int, V: int, wanted: Sequence[str] | None):
    """Names of the verifiers defined for ``law`` (a uniform q stands in for the row's q; its
    refusal is about the vocabulary, so the message says so, not the stand-in's support)."""
    try:
        names = applicable(make_law(law, np.full(V, 1.0 / V), n))
    except ValueError as exc:
        raise ValueError(
            f"n: the {law} law is undefined with n = {n} drafts over a vocabulary of V = {V} "
            "tokens; use a smaller n"
        ) from exc
    return names if wanted is None else [x for x in names if x in wanted]


#: How an acceptance was computed, from the most to the least exact; a verifier's label over
#: several positions is the last one any position needed (:func:`weakest`).
METHODS: tuple[str, ...] = ("closed-form", "exact", "certified", "simulated")

#: Where the certified chain acceptance of ``optimal`` falls this far below α* and the law has
#: at most :data:`~mdsd_ot.verifiers.optimal.REDUCED_MAX_SETS` draft sets, the report takes the
#: exact set-reduced plan's acceptance instead (``exact``).
CERT_GAP: float = 1e-9


def weakest(a: str | None, b: str | None) -> str | None:
    """The less exact of two labels of :data:`METHODS` (None: no value yet).

    Examples
    --------
    >>> weakest("exact", "simulated"), weakest(None, "closed-form")
    ('simulated', 'closed-form')
    """
    if a is None or b is None:
        return a or b
    return max(a, b, key=METHODS.index)


def _weakest_of(labels: Any) -> str | None:
    out = None
    for x in labels:
        out = weakest(out, x)
    return out


def _set_plan(law: Any, p: np.ndarray) -> float | None:
    """The set-reduced plan's acceptance (α*, exact up to rounding) where the law has few sets."""
    from ..verifiers.optimal import REDUCED_MAX_SETS, ReducedOptimal

    if law.set_count_bound() > REDUCED_MAX_SETS:
        return None
    return ReducedOptimal(law).plan_acceptance(p)


def _refusal(law: str, p: np.ndarray, q: np.ndarray, n: int) -> str:
    """Why the law's draft class or the fast solver refuses one row (their own message)."""
    from ..fast import alpha_star

    try:
        make_law(law, q, n)
        alpha_star(p, q, n=n, scheme=law)
    except ValueError as exc:
        return str(exc)
    return "the fast solver refused the row"


def _optimal(v: Any, law: Any, n: int, V: int, optimal_max_v: int) -> tuple[Any, str | None]:
    """The verifier that gives the optimal verifier's value, and how (None: enumerate/simulate).

    ``optimal`` uses the exact set-reduced plan for small laws (enumerated up to
    ``optimal_max_v``); above that size the report takes the chain construction of the law
    where there is one (its closed form, or its certified lower bound), and simulates
    otherwise."""
    kind = v.acceptance_kind(n)
    if kind is None and V > optimal_max_v:
        if construction_for(law) is not None:
            chain = ChainOptimal(law)
            return chain, chain.acceptance_kind(n) or "simulated"
        return v, "simulated"
    return v, kind


def evaluate(
    P: Any,
    Q: Any,
    n: int,
    *,
    rng: np.random.Generator | int | None,
    laws: Sequence[str] | None = None,
    verifiers: Sequence[str] | None = None,
    samples: int = 2000,
    exact_max_tuples: int = 4096,
    optimal_max_v: int = 8,
    progress: Callable[[int], None] | None = None,
    first_position: int = 0,
) -> list[LawRows]:
    """α* and verifier acceptance per row for every law (rows: validated distributions).

    Parameters
    ----------
    P, Q : (m, V) ndarray
        Target and draft rows (each summing to 1).
    n : int
        Number of drafts.
    rng : Generator or int or None
        Randomness of the simulated acceptances.
    laws, verifiers : sequence of str, optional
        Restrict the laws (default :func:`report_laws`) and the verifiers (default: all
        applicable).
    samples, exact_max_tuples, optimal_max_v : int
        See the module docstring.
    progress : callable, optional
        Called with 1 after each row.
    first_position : int
        The dataset position of row 0: ``skipped`` names positions counted from it (a report
        evaluates its dataset in chunks).
    """
    g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    P = np.atleast_2d(np.asarray(P, dtype=np.float64))
    Q = np.atleast_2d(np.asarray(Q, dtype=np.float64))
    m, V = P.shape
    chosen = select_laws(n, laws)
    out: list[LawRows] = []
    for law in chosen:
        try:
            names = _verifier_names(law, n, V, verifiers)
        except ValueError as exc:  # e.g. fewer tokens than distinct drafts
            out.append(LawRows(law, np.full(m, np.nan), None, [], skipped=str(exc)))
            continue
        out.append(
            LawRows(
                law, np.full(m, np.nan), None, names,
                acceptance={x: np.full(m, np.nan) for x in names},
                se={x: np.zeros(m) for x in names},
                method={x: None for x in names},
            )
        )  # fmt: skip
    live = [r for r in out if r.skipped is None]
    for r, (a, how) in zip(live, alpha_rows(P, Q, n, [r.law for r in live]).values(), strict=True):
        r.alpha, r.alpha_method = a, how
        if np.isnan(a).any():  # say why (e.g. q with fewer than n tokens for distinct drafts)
            k = int(np.flatnonzero(np.isnan(a))[0])
            r.skipped = f"position {first_position + k}: {_refusal(r.law, P[k], Q[k], n)}"
            if np.isnan(a).all():  # refused everywhere (e.g. n beyond the solver): no verifiers
                r.names = []
    for k in range(m):
        for r in live:
            if not r.names:  # α* only (e.g. conditional Poisson): no law object needed
                continue
            try:
                law = make_law(r.law, Q[k], n)
            except ValueError as exc:  # a row outside the law's domain (e.g. q with zeros)
                r.skipped = r.skipped or f"position {first_position + k}: {exc}"
                continue
            small = _support_bound(law) <= exact_max_tuples
            for name in r.names:
                v, kind = get(name, law), None
                if name == "optimal":
                    v, kind = _optimal(v, law, n, V, optimal_max_v)
                if kind in ("closed-form", "certified") or (kind is None and v.has_closed_form(n)):
                    r.acceptance[name][k], how = v.acceptance(P[k], Q[k], n), kind or "closed-form"
                    if kind == "certified" and not r.alpha[k] - r.acceptance[name][k] <= CERT_GAP:
                        exact_plan = _set_plan(law, P[k])  # the chain fell short: the set plan
                        if exact_plan is not None:
                            r.acceptance[name][k], how = exact_plan, "exact"
                elif small and kind is None:
                    r.acceptance[name][k], how = float(v.exact(P[k])[1]), "exact"
                else:
                    r.acceptance[name][k], r.se[name][k] = v.simulate(P[k], samples, g)
                    how = "simulated"
                r.method[name] = weakest(r.method[name], how)
        if progress is not None:
            progress(1)
    return out


def concat(parts: Sequence[Sequence[LawRows]]) -> list[LawRows]:
    """Join the per-law values of consecutive batches (same laws, in the same order).

    The verifiers of a law are those of any batch, in order of first appearance: a batch whose
    rows the law refused everywhere (α* NaN on every row: :func:`evaluate` then runs no
    verifier) contributes NaN acceptances, so the result does not depend on how the rows were
    split into batches, nor on which batch comes first.
    """
    first = parts[0]
    out = []
    for j, r in enumerate(first):
        rows = [p[j] for p in parts]
        names = list(dict.fromkeys(k for x in rows for k in x.names))

        def col(x: LawRows, k: str, field: str) -> np.ndarray:
            got = getattr(x, field).get(k)
            if got is not None:
                return got
            return np.full(len(x.alpha), np.nan if field == "acceptance" else 0.0)

        out.append(
            LawRows(
                r.law,
                np.concatenate([x.alpha for x in rows]),
                next((x.alpha_method for x in rows if x.alpha_method), None),
                names,
                acceptance={
                    k: np.concatenate([col(x, k, "acceptance") for x in rows]) for k in names
                },
                se={k: np.concatenate([col(x, k, "se") for x in rows]) for k in names},
                method={k: _weakest_of(x.method.get(k) for x in rows) for k in names},
                skipped=next((x.skipped for x in rows if x.skipped), None),
            )
        )
    return out
