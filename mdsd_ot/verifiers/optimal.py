r"""The optimal verifier (docs/reference.md, T11; proofs/optimal_verifier.md).

:class:`Optimal` (``verifiers.get("optimal", draft)``) picks the construction for the law
(``method=None``):

- ``"chain"`` (:mod:`mdsd_ot.verifiers.chain`), where it attains α* exactly at any V: i.i.d.
  drafts (``WithReplacement``, any n), ``ConditionalPoisson`` with n = 2, and every q law with
  n = 1;
- ``"greedy"`` / ``"spechub"``: the verifiers of T9, which attain α* of those laws at any V;
- ``"reduced"`` (the set-reduced plan below) for every other law while its set count is at most
  :data:`REDUCED_MAX_SETS` (exact α*, exact in Fractions);
- beyond that, ``"chain"`` for the remaining q laws (sequential ``WithoutReplacement``,
  ``ConditionalPoisson`` with n >= 3): for two sequential drafts ``seq2`` (α* wherever its
  region design fits, which it did on every position measured; ``seq-swap`` otherwise), else
  the swap constructions, lossless up to a reported error bound of the computed selection law,
  with acceptance α* − ε and ε certified by ``Optimal.certificate(p)`` (about 1e-11 on the
  synthetic family at V = 2,000 and 152,064).

``Optimal(draft, method="reduced")`` keeps the set-reduced construction as an independent
reference (any ``mdsd_ot.solve`` method that returns a set-reduced plan).

Batched positions (:meth:`Optimal.sample_rows`): the chain constructions verify (B, V) rows
directly; where the optimum is the set-reduced plan, each row is verified with the optimal
verifier of its own law (the bound law's class and n with that row's q), so the reduced plan's
guarantee (acceptance α*, exactly) holds row by row.

The set-reduced construction (:class:`ReducedOptimal`)
--------------------------------------------------------
The set-reduced flow merges the draft tuples with the same set of distinct tokens S into one node
of capacity :math:`w_S = \Pr[\mathrm{set}(\bar i) = S]`; a flow :math:`f(i, S)` (i ∈ S) with
:math:`\sum_S f(i, S) \le p(i)` and :math:`\sum_{i \in S} f(i, S) \le w_S` of value α* is an optimal
plan.  Given drafts with set S the verifier outputs i ∈ S w.p. :math:`f(i, S) / w_S`; with the
remaining probability :math:`1 - \sum_{i\in S} f(i, S)/w_S` it outputs a draw from the residual

.. math:: r = \frac{p - \sum_S f(\cdot, S)}{1 - \sum_{i, S} f(i, S)} .

Its output law is :math:`\sum_S f(\cdot, S) + (1 - \sum f)\, r = p` and its acceptance is at least
the flow value, α* (T11); it cannot exceed α*.  The plan comes from
``mdsd_ot.solve(p, draft, method="reduced")`` (``Result.plan``, a mapping
``{(i, frozenset S): flow}``, and ``Result.info["weights"]``, ``{S: w_S}``); in exact mode the
weights are recomputed from ``draft.joint_items`` in Fractions.
A float plan is first *repaired* into a feasible sub-flow (negative entries dropped, then each
set and each token scaled down to its capacity), so the verifier is exactly lossless even when the
LP solver's flow is feasible only to its tolerance; its acceptance is then α* to that tolerance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate as V_
from ..drafts import DraftLaw
from ._base import Verifier, add, inverse_cdf, zero_of

__all__ = ["Optimal", "ReducedOptimal", "REDUCED_MAX_SETS", "default_method", "repaired_flow"]

#: The method of :func:`mdsd_ot.solve` that yields the set-reduced plan.
DEFAULT_METHOD = "reduced"


def repaired_flow(
    plan: dict[tuple[int, frozenset], Any], p: list, w: dict[frozenset, Any], exact: bool
) -> dict[frozenset, dict[int, Any]]:
    """A feasible sub-flow ``{S: {i: f(i, S)}}`` from a (possibly slightly infeasible) plan."""
    conv = (lambda x: Fraction(x)) if exact else float
    zero = zero_of(exact)
    f: dict[frozenset, dict[int, Any]] = defaultdict(dict)
    for (i, S), v in plan.items():
        S = frozenset(S)
        v = conv(v)
        if v > 0 and int(i) in S and S in w:
            f[S][int(i)] = f[S].get(int(i), zero) + v
    for S, row in f.items():  # each set within its capacity
        tot = sum(row.values(), zero)
        if tot > w[S]:
            for i in row:
                row[i] = row[i] * w[S] / tot
    out_of: dict[int, Any] = defaultdict(lambda: zero)
    for row in f.values():
        for i, v in row.items():
            out_of[i] += v
    for i, tot in out_of.items():  # each token within its target mass
        if tot > p[i]:
            scale = p[i] / tot
            for row in f.values():
                if i in row:
                    row[i] = row[i] * scale
    return dict(f)


def _check_set_method(method: Any, others: str = "") -> None:
    """Refuse, at construction, a method that is not a registered :func:`mdsd_ot.solve` method
    with a set-reduced plan (:attr:`mdsd_ot.methods.Method.set_plan`); the message lists those
    that have one, after ``others`` (the other values the caller accepts)."""
    from .. import exact as _exact  # the registry, filled by the formulation modules

    plans = sorted(m for m, spec in _exact.METHODS.items() if spec.set_plan)
    use = (
        f"use {others + ', or ' if others else ''}a method with one: {', '.join(map(repr, plans))}"
    )
    if method not in _exact.METHODS:
        raise ValueError(f"method: unknown method {method!r}; {use}")
    if not _exact.METHODS[method].set_plan:
        raise ValueError(
            f"method: {method!r} gives α* without a set-reduced plan {{(i, S): flow}}, which "
            f"the optimal verifier samples from; {use}"
        )


class ReducedOptimal(Verifier):
    r"""The verifier of an optimal set-reduced plan; defined for every draft law, attains α*.

    Parameters
    ----------
    draft : DraftLaw, optional
        The draft law to bind.
    method : str
        The :func:`mdsd_ot.solve` method giving the set-reduced plan (default ``"reduced"``).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> law, acc = ReducedOptimal(WithReplacement(["3/4", "1/4"], 2)).exact(["1/2", "1/2"])
    >>> [str(x) for x in law], acc  # α* = 15/16 (the example of mdsd_ot.solve)
    (['1/2', '1/2'], Fraction(15, 16))
    """

    name = "optimal"
    laws = None
    law_hint = "any draft law from mdsd_ot.drafts"

    def __init__(self, draft: DraftLaw | None = None, *, method: str = DEFAULT_METHOD):
        _check_set_method(method)
        self.method = method
        self._cache: dict[Any, Any] = {}
        super().__init__(draft)

    def bind(self, draft: DraftLaw) -> ReducedOptimal:
        return type(self)(draft, method=self.method)

    def solve(self, p: Any, draft: DraftLaw) -> Any:
        """The :class:`~mdsd_ot.result.Result` of ``mdsd_ot.solve(p, draft, method)``."""
        from .. import exact as _exact
        from ..api import solve

        if self.method not in _exact.METHODS:
            raise ValueError(
                f"method: the optimal verifier needs the set-reduced solver {self.method!r} "
                f"(mdsd_ot.exact.reduced), which is not available; registered: "
                f"{', '.join(sorted(_exact.METHODS))}"
            )
        res = solve(p, draft, method=self.method)
        if not isinstance(res.plan, Mapping):
            raise ValueError(
                f"method: {self.method!r} returned no set-reduced plan {{(i, S): flow}}; use "
                "method='reduced'"
            )
        return res

    def plan(self, p: Any, draft: DraftLaw) -> Mapping:
        """The set-reduced plan ``{(i, S): flow}`` of ``mdsd_ot.solve(p, draft, method)``."""
        return self.solve(p, draft).plan

    def plan_acceptance(self, p: Any, draft: DraftLaw | None = None) -> float:
        r"""The verifier's acceptance, read off its plan: the total flow
        :math:`\sum_{S} \sum_{i \in S} f(i, S)` after the repair that fits it to the law's set
        weights (each flow unit is a drafted token accepted), without enumerating the tuples;
        α* up to the solver's rounding.

        Examples
        --------
        >>> from mdsd_ot.drafts import WithReplacement
        >>> round(ReducedOptimal(WithReplacement([0.75, 0.25], 2)).plan_acceptance([0.5, 0.5]), 12)
        0.9375
        """
        draft = self._law(draft)
        pv = [float(x) for x in V_.prob_vector(p, "p")]
        f, _, _ = self._setup(pv, draft, False)
        return float(sum(v for row in f.values() for v in row.values()))

    def _setup(self, p, draft, exact):
        res = self.solve([str(x) for x in p] if exact else p, draft)
        w = res.info.get("weights") if isinstance(res.info, dict) else None
        if exact or not isinstance(w, Mapping):
            w = draft.set_weights(exact)  # the law's exact weights (small V)
        else:
            w = {frozenset(S): float(x) for S, x in w.items()}
        f = repaired_flow(res.plan, p, w, exact)
        zero = zero_of(exact)
        used = [zero] * len(p)
        for row in f.values():
            for i, v in row.items():
                used[i] += v
        num = [max(pi - ui, zero) for pi, ui in zip(p, used, strict=True)]
        s = sum(num, zero)
        res_law = [x / s for x in num] if s > 0 else list(p)
        return f, w, res_law

    def _given(self, ctx, tup):
        f, w, res = ctx
        S = frozenset(tup)
        row = f.get(S, {})
        out: dict[int, Any] = {}
        kept = 0
        for i, v in row.items():
            add(out, i, v / w[S])
            kept = kept + v / w[S]
        if kept != 1:
            for y, r in enumerate(res):
                add(out, y, (1 - kept) * r)
        return out

    def _sample(self, p, draft, t, g):
        key = (p.tobytes(), id(draft))
        hit = self._cache.get(key)
        if hit is None or hit[0] is not draft:  # the law itself is held: its id is not reused
            self._cache = {key: (draft, self._setup([float(x) for x in p], draft, False))}
        f, w, res = self._cache[key][1]
        resv = np.asarray(res, dtype=np.float64)
        B = t.shape[0]
        u = g.random(B)
        fallback = inverse_cdf(resv, g.random(B))
        out = fallback.copy()
        srt = np.sort(t, axis=1)
        sets, inv = np.unique(srt, axis=0, return_inverse=True)
        inv = np.asarray(inv).ravel()
        for k, row_tokens in enumerate(sets):
            S = frozenset(int(i) for i in row_tokens)
            row = f.get(S)
            if not row:
                continue
            rows = np.flatnonzero(inv == k)
            toks = np.fromiter(row.keys(), dtype=np.int64)
            cum = np.cumsum([row[int(i)] / w[S] for i in toks])
            pick = np.searchsorted(cum, u[rows], side="right")
            hit = pick < len(toks)
            out[rows[hit]] = toks[pick[hit]]
        return out


#: Above this many draft sets the default for laws without an exact chain construction is the
#: certified chain verifier instead of the set-reduced plan (a max-flow over the sets).
REDUCED_MAX_SETS: int = 5000


def default_method(draft: DraftLaw) -> str:
    """The construction ``Optimal(draft)`` uses (see the module docstring).

    Examples
    --------
    >>> from mdsd_ot.drafts import ConditionalPoisson, WithoutReplacement
    >>> default_method(ConditionalPoisson([0.5, 0.3, 0.2], 2))
    'chain'
    >>> default_method(WithoutReplacement([0.5, 0.3, 0.2], 2))  # small: the exact set plan
    'reduced'
    >>> default_method(WithoutReplacement(np.full(1000, 1e-3), 2))  # large: certified chain
    'chain'
    """
    from ..drafts import Greedy, SpecHub
    from .chain import construction_for

    con = construction_for(draft)
    if con in ("relabel", "cp2") or (con is not None and draft.n == 1):
        return "chain"
    if type(draft) is Greedy:
        return "greedy"
    if type(draft) is SpecHub:
        return "spechub"
    if con is not None and not _reduced_fits(draft):
        return "chain"
    return DEFAULT_METHOD


def _reduced_fits(draft: DraftLaw) -> bool:
    """At most :data:`REDUCED_MAX_SETS` sets, and a set table within the float work limit
    (sequential n = 9 serves up to V = 14: 2,002 sets of 2^9 subsets each)."""
    from ..drafts._sets import MAX_SET_WORK

    return draft.set_count_bound() <= REDUCED_MAX_SETS and draft.set_weight_work(False) <= (
        MAX_SET_WORK
    )


def _check_chain_reach(draft: DraftLaw) -> None:
    """Refuse, when the verifier is made, sequential drafts beyond the certified series (n > 8)
    with a message that names both limits (the chain's n and the set plan's size)."""
    from ..drafts import WithoutReplacement
    from ..fast.series import N_MAX

    if type(draft) is WithoutReplacement and draft.n > N_MAX:
        raise ValueError(
            f"draft: the optimal verifier for {draft!r} needs the certified series of the fast "
            f"solver, which supports n <= {N_MAX} sequential drafts, or the set-reduced plan, "
            f"which needs at most {REDUCED_MAX_SETS:,} token sets and a set table within the "
            f"work limit (here {draft.set_count_bound():,} sets, "
            f"{draft.set_weight_work(False):,} terms); use n <= {N_MAX}, or a smaller "
            "vocabulary (the nonzero entries of q)"
        )


def _serves_chain(draft: DraftLaw) -> bool:
    from .chain import construction_for

    return construction_for(draft) is not None


def _serves(name: str):
    def check(draft: DraftLaw) -> bool:
        from .. import drafts

        return type(draft) is getattr(drafts, name)

    return check


#: The engines ``Optimal(method=...)`` names besides the set-reduced solvers, and the laws each
#: serves.
_ENGINES = {"chain": _serves_chain, "greedy": _serves("Greedy"), "spechub": _serves("SpecHub")}


def _chain_class() -> type:
    from .chain import ChainOptimal

    return ChainOptimal


class Optimal(Verifier):
    r"""The optimal verifier of the draft law: the construction of :func:`default_method`.

    Parameters
    ----------
    draft : DraftLaw, optional
        The draft law to bind.
    method : str, optional
        ``"chain"``, ``"greedy"``, ``"spechub"`` or an ``mdsd_ot.solve`` method with a set-reduced
        plan (``"reduced"``); default: :func:`default_method` of the law.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> v = Optimal(WithReplacement(["1/2", "1/2"], 2))
    >>> law, acc = v.exact(["3/5", "2/5"])  # docs/reference.md: select 0 from {0, 1} w.p. 7/10
    >>> [str(x) for x in law], acc
    (['3/5', '2/5'], Fraction(1, 1))
    >>> Optimal(WithReplacement(["1/2", "1/2"], 2), method="reduced").exact(["3/5", "2/5"])[1]
    Fraction(1, 1)
    """

    name = "optimal"
    laws = None
    law_hint = "any draft law from mdsd_ot.drafts"

    def __init__(self, draft: DraftLaw | None = None, *, method: str | None = None):
        if method is not None and method not in _ENGINES:
            _check_set_method(method, f"None (the law's default), {', '.join(map(repr, _ENGINES))}")
        self.method = method
        self._engines: dict[int, tuple[DraftLaw, Verifier]] = {}
        super().__init__(draft)

    def bind(self, draft: DraftLaw) -> Optimal:
        return type(self)(draft, method=self.method)

    def engine(self, draft: DraftLaw | None = None) -> Verifier:
        """The verifier that implements ``optimal`` for ``draft`` (default: the bound law)."""
        from .chain import ChainOptimal
        from .greedy import GreedyVerifier, SpecHubVerifier

        draft = self._law(draft)
        key = id(draft)
        hit = self._engines.get(key)
        if hit is None or hit[0] is not draft:  # the law itself is held: its id is not reused
            method = self.method or default_method(draft)
            if method in _ENGINES and not _ENGINES[method](draft):
                raise ValueError(
                    f"method: {method!r} does not serve {type(draft).__name__} drafts; use "
                    f"method=None (its default: {default_method(draft)!r}) or another method"
                )
            if method == "chain":
                _check_chain_reach(draft)
                eng: Verifier = ChainOptimal(draft)
            elif method == "greedy":
                eng = GreedyVerifier(draft)
            elif method == "spechub":
                eng = SpecHubVerifier(draft)
            else:
                eng = ReducedOptimal(draft, method=method)
            self._engines = {key: (draft, eng)}
        return self._engines[key][1]

    def certificate(self, p: Any, draft: DraftLaw | None = None) -> dict[str, Any]:
        """Acceptance, α* and the certified shortfall ε of the chain construction (see
        :meth:`mdsd_ot.verifiers.chain.ChainOptimal.certificate`).  Every engine reports the
        keys ``construction``, ``acceptance``, ``alpha_star``, ``eps``, ``alpha_accuracy``,
        ``law_error`` and ``exact_optimum``; the exact ones (the set-reduced plan, greedy,
        SpecHub) report ε = 0, law error 0 and acceptance = α* (the solver's value, to its
        accuracy ``alpha_accuracy``).

        ``p`` is validated for every engine (a ValueError names ``p``, e.g. for a NaN entry or a
        length other than the law's vocabulary).
        """
        from ..fast import alpha_star, error_bound

        eng = self.engine(draft)
        if hasattr(eng, "certificate"):
            return eng.certificate(p)
        pv = V_.prob_vector(p, "p")
        law = self._law(draft)
        V_.check_on_vocabulary(pv, law.V, "p")
        if isinstance(eng, ReducedOptimal):  # ε = 0 only for a method that yields the plan
            res = eng.solve(p, law)  # (a ValueError names a method without one, e.g. "fast")
            a, acc = float(res.alpha), float(res.accuracy)
        else:  # greedy, SpecHub: their exact optimal verifiers; α* from the fast solver
            a = float(alpha_star(pv, law))
            acc = error_bound(law.V, law.n, float(np.finfo(float).eps))
        return {
            "construction": self.method or default_method(law),
            "acceptance": a,  # the plan attains α* (exact optimum)
            "alpha_star": a,
            "eps": 0.0,
            "alpha_accuracy": acc,
            "law_error": 0.0,
            "exact_optimum": True,
        }

    def _sample(self, p, draft, t, g):
        return self.engine(draft)._sample(p, draft, t, g)

    def sample_rows(self, P: Any, Qd: Any, draft_tokens: Any, rng: Any = None) -> tuple[Any, Any]:
        """Batched positions (rows of P and of the drafts' q; numpy or tensors): see
        :meth:`mdsd_ot.verifiers.chain.ChainOptimal.sample_rows` (the same arguments, shapes
        and checks).  Defined for the laws with a chain construction (i.i.d., sequential,
        conditional Poisson).

        Where the bound law's optimum is the set-reduced plan (sequential drafts and
        conditional Poisson with n >= 3 at small V: at most :data:`REDUCED_MAX_SETS` sets), the
        rows are verified one at a time, each with the optimal verifier of its own law (the
        bound law's class and n with q = ``Qd[b]``; :func:`default_method` of that law): the
        set-reduced plan, which attains α* exactly, where that row's set count allows it, the
        chain construction beyond.  Tensors are verified on the host and returned on their
        device.  The plan is a max-flow over the sets, solved per row: meant for small V (the
        chain constructions serve large V in one plan per row).

        Examples
        --------
        >>> from mdsd_ot.drafts import WithoutReplacement
        >>> P = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
        >>> Q = np.array([[0.2, 0.3, 0.5], [0.4, 0.4, 0.2]])
        >>> v = Optimal(WithoutReplacement(Q[0], 2))
        >>> type(v.engine()).__name__  # V = 3: the exact set-reduced plan
        'ReducedOptimal'
        >>> out, acc = v.sample_rows(P, Q, [[2, 1], [0, 1]], rng=0)
        >>> out.shape, acc.dtype
        ((2,), dtype('bool'))
        """
        from .chain import construction_for
        from .chain.verifier import check_rng, check_rows, numpy_rng, on_host, tensor_like

        eng = self.engine()
        if hasattr(eng, "sample_rows"):
            return eng.sample_rows(P, Qd, draft_tokens, rng)
        draft = self._law(None)
        if not isinstance(eng, ReducedOptimal) or construction_for(draft) is None:
            raise ValueError(
                f"sample_rows: the optimal verifier of {type(draft).__name__} "
                f"({self.method or default_method(draft)}) has no batched form (it is defined "
                "for WithReplacement, WithoutReplacement and ConditionalPoisson); call "
                ".sample(p, draft_tokens) per position"
            )
        from ..fast import _backend as bk

        rng = check_rng(rng)
        if not (bk.is_numpy_array(P) or isinstance(P, list | tuple)):
            Qd = tensor_like(Qd, P, "Qd")  # a list or numpy Qd beside a tensor P
            if P.ndim == 1:
                P, Qd = P[None, :], Qd[None, :]
            return on_host(self.sample_rows, P, Qd, draft_tokens, rng)
        Pm, Qm, t = check_rows(P, Qd, draft_tokens, draft)
        g = numpy_rng(rng)
        t3 = t if t.ndim == 3 else t[:, None, :]
        out = np.empty(t3.shape[:2], dtype=np.int64)
        for b in range(len(Pm)):  # each row: the optimal verifier of its own law
            law = type(draft)(Qm[b], draft.n)
            row = type(self)(law, method=self.method).engine()
            out[b] = row._sample(Pm[b], law, t3[b], g)
        out = out if t.ndim == 3 else out[:, 0]
        return out, (t == out[..., None]).any(axis=-1)

    def _setup(self, p, draft, exact):
        eng = self.engine(draft)
        return eng, eng._setup(p, draft, exact)

    def _given(self, ctx, tup):
        eng, inner = ctx
        return eng._given(inner, tup)

    def has_closed_form(self, n: int) -> bool:
        return self.draft is not None and self.engine().has_closed_form(n)

    def acceptance_kind(self, n: int) -> str | None:
        """How :meth:`acceptance` relates to the acceptance: ``"closed-form"`` (exact),
        ``"certified"`` (the chain swap constructions: a lower bound within the certified ε of
        α*, see :meth:`certificate`) or ``None`` (enumerate or simulate)."""
        if self.draft is None:
            return None
        eng = self.engine()
        if isinstance(eng, _chain_class()):
            return eng.acceptance_kind(n)
        return "closed-form" if eng.has_closed_form(n) else None

    def acceptance(self, p: Any, q: Any, n: int) -> float:
        """The engine's acceptance (closed form or certified, :meth:`acceptance_kind`); the
        inputs are validated before any NotImplementedError."""
        if self.draft is None:
            self._pq(p, q, n)  # validates, then raises NotImplementedError (no law bound)
        return self.engine().acceptance(p, q, n)
