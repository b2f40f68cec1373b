r"""The chain verifier as a :class:`~mdsd_ot.verifiers.Verifier` (``optimal`` for q laws; see
:func:`mdsd_ot.verifiers.optimal.default_method`).

Defined for the q-convex laws with a prefix algorithm (proofs/optimal_verifier.md):

=========================  ==============  =================================================
law                        construction    acceptance
=========================  ==============  =================================================
``WithReplacement``        ``relabel``     α* (exact; rounding only)
``ConditionalPoisson``     ``cp2`` (n=2)   α* (exact; rounding only)
``ConditionalPoisson``     ``cp-pair``     :math:`\sum \min(s, T)` = α* − ε (n >= 3), ε certified;
                                           the ``cp-swap`` plan where its design does not fit
``WithoutReplacement``     ``seq2`` (n=2)  α* where its design fits (rounding only; checked per
                                           position), else the ``seq-swap`` plan
``WithoutReplacement``     ``seq-best``    n >= 3: ``stream`` where α* of i.i.d. drafts reaches
                                           α* (to 1e-12), else ``seq-pair`` (the thinned
                                           pair rule) where its design fits, else the best
                                           of ``stream``, ``seq-swap-h`` and ``seq-swap``
                                           (:math:`\sum \min(s, T)` = α* − ε, ε certified)
any of them, n = 1         ``top``         :math:`\sum \min(p, q)` = α* (T4)
=========================  ==============  =================================================

Every construction is exactly lossless given the law it computes (the output law is p up to the
rounding bound ``law_error``); :meth:`ChainOptimal.certificate` reports the acceptance, the law's
α* from the fast solver and their difference ε.

Examples
--------
>>> from mdsd_ot.drafts import WithReplacement
>>> v = ChainOptimal(WithReplacement(["1/2", "1/2"], 2))
>>> law, acc = v.exact(["3/5", "2/5"])
>>> [str(x) for x in law], acc  # α* = 1: token 0 is selected from {0, 1} w.p. 7/10
(['3/5', '2/5'], Fraction(1, 1))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _validate as V_
from ...drafts import ConditionalPoisson, DraftLaw, WithoutReplacement, WithReplacement
from .._base import Verifier
from .batched import CONSTRUCTIONS, numpy_rng
from .exact import exact_plan, exact_seq2_plan, exact_swap_plan, given
from .plan import Plan, build_plan
from .rows import slot_mass_imbalance
from .sample import draw_rows, sample_plan

__all__ = ["ChainOptimal", "construction_for", "check_rows", "device_route"]

#: Constructions that attain α* exactly (up to rounding).
EXACT: tuple[str, ...] = ("relabel", "cp2")
#: Constructions whose acceptance is α* − ε with a certified ε: the swap constructions (measured
#: ~1e-11; see the note) and ``seq2`` (α* up to rounding where its design fits, which is checked
#: per position; where it does not, its plan is the ``seq-swap`` plan).
CERTIFIED: tuple[str, ...] = (
    "cp-pair", "cp-swap", "seq-swap", "seq-swap-h", "seq2", "seq-best", "seq-pair"
)  # fmt: skip

#: The chain construction of each law class (n >= 2; n = 1 is always ``top``).
_CONSTRUCTION: dict[type, Any] = {
    WithReplacement: lambda n: "relabel",
    ConditionalPoisson: lambda n: "cp2" if n == 2 else "cp-pair",
    WithoutReplacement: lambda n: "seq2" if n == 2 else "seq-best",
}


#: ``.exact`` / ``.conditional`` of two sequential drafts with float input run the ``seq2`` list
#: plan in Fractions of the floats up to this many tokens (exact, then rounded: near a point mass
#: the float list plan was 5.5e-4 to 0.056 off p in L1); beyond, in floats (the Fractions cost
#: grows about as V^3: 1.5 s at V = 200, 77 s at V = 800).
SEQ2_FRACTIONS_MAX_V: int = 128


def construction_for(draft: DraftLaw) -> str | None:
    """The chain construction for ``draft`` (``None``: not a chain law).

    Examples
    --------
    >>> construction_for(WithoutReplacement([0.5, 0.3, 0.2], 3))  # stream, seq-swap(-h), per position
    'seq-best'
    >>> construction_for(WithoutReplacement([0.5, 0.3, 0.2], 2))  # seq-swap where seq2 falls short
    'seq2'
    """
    make = _CONSTRUCTION.get(type(draft))
    if make is None:
        return None
    return "top" if draft.n == 1 else make(draft.n)


#: On the CPU, ``relabel`` and ``cp2`` tensor rows take the array route up to this many tokens
#: and the numpy route beyond (:func:`device_route`).
CPU_ARRAY_MAX_V: int = 4096


def device_route(construction: str | None, P: Any) -> bool:
    """Whether tensor rows ``P`` (B, V) of ``construction`` are verified on their own device by
    :func:`~mdsd_ot.verifiers.chain.batched.verify_rows` rather than copied to the host for the
    numpy route (:func:`~mdsd_ot.verifiers.chain.sample.draw_rows`).

    Off the CPU: ``relabel``, ``cp2``, ``cp-pair`` and ``seq-pair`` (sequential drafts with
    n >= 3; its rows that do not fit are planned on the host by ``seq-best``, whose stream
    shortcut the device route does not take).  On the CPU, whichever was faster per
    row (2-core AMD EPYC, CPU torch with 2 threads, numba; 2026-12-07): ``relabel`` and
    ``cp2`` up to V = :data:`CPU_ARRAY_MAX_V` (n = 2: 0.02 ms against 0.28–0.35 at V = 200,
    B = 2,000; 0.24–0.26 against 0.33–0.39 at V = 2,000; 0.6–0.7 against 0.4–0.5 at
    V = 5,000; 35–39 against 8.6–10.7 at V = 152,064), ``cp-pair`` never (n = 4: 0.94 against
    1.13 ms at V = 200, 1.1 against 1.0 at V = 500–1,000, 1.4 against 1.05 at V = 2,000, 65
    against 22 at V = 152,064), ``seq-pair`` never (the numpy route's plan per row is the
    same design).  Every other construction copies the rows to the host.

    Examples
    --------
    >>> class Rows:  # only the device's type and the row length are read
    ...     def __init__(self, kind, V):
    ...         self.device, self.shape = type("D", (), {"type": kind})(), (1, V)
    >>> device_route("cp-pair", Rows("cuda", 152_064)), device_route("seq-best", Rows("cuda", 9))
    (True, False)
    >>> device_route("relabel", Rows("cpu", 1000)), device_route("relabel", Rows("cpu", 152_064))
    (True, False)
    """
    if construction not in CONSTRUCTIONS:  # relabel, cp2, cp-pair, seq-pair
        return False
    dev = getattr(P, "device", None)
    if getattr(dev, "type", "cpu") != "cpu":
        return True
    return construction in ("relabel", "cp2") and int(P.shape[-1]) <= CPU_ARRAY_MAX_V


def _list_plan(p: Any, q: list, draft: DraftLaw, con: str, exact: bool) -> Any:
    """:func:`exact_plan` in Fractions, rounded once to floats when ``exact`` is False.

    Floats are Fractions, so the float plan is the exact plan of the float inputs, rounded: in
    float arithmetic the sub-law's differences of cumulative sums keep one ulp of the heavy
    token's mass on slots of q ~ 1e-17 and the kernel rows divide it by q (rows of 1e31).
    """
    if exact:
        return exact_plan(list(p), q, draft.n, con, lambda H: draft.Q(H, exact=True))
    from fractions import Fraction

    qx = [Fraction(float(v)) for v in q]
    mass = lambda H: draft.Q(H, exact=True)  # noqa: E731 - the law's own rational Q (top, n >= 2)
    plan = exact_plan([Fraction(float(v)) for v in p], qx, draft.n, con, mass)
    return _to_float(plan)


def _to_float(plan: Any) -> Any:
    """The plan with every number rounded to a float (rows, acceptance, residual, law)."""
    import dataclasses

    flt = lambda xs: [float(x) for x in xs]  # noqa: E731
    return dataclasses.replace(
        plan,
        q=flt(plan.q),
        rows=[{k: float(v) for k, v in r.items()} for r in plan.rows],
        rows2=None
        if plan.rows2 is None
        else [{k: float(v) for k, v in r.items()} for r in plan.rows2],
        accept=flt(plan.accept),
        residual=flt(plan.residual),
        acceptance=float(plan.acceptance),
        selection=flt(plan.selection),
    )


def _row_shapes(P: Any, Qd: Any) -> tuple[int, int]:
    """(B, V) of the rows ``P`` and ``Qd`` (numpy, array_like or tensors; metadata only)."""
    sp, sq = tuple(np.shape(P)), tuple(np.shape(Qd))
    if len(sp) not in (1, 2):
        raise ValueError(
            f"P: must have shape (V,) or (B, V) (one target row per position), got {sp}"
        )
    if sq != sp:
        raise ValueError(
            f"Qd: has shape {sq} but P has shape {sp}; give one draft row Qd[b] per target row "
            "P[b], over the same vocabulary"
        )
    return (1, sp[0]) if len(sp) == 1 else (sp[0], sp[1])


def _token_array(draft_tokens: Any, B: int, host: bool = False) -> Any:
    """``draft_tokens`` as an array (numpy, or the tensor itself; ``host``: a tensor copied to
    numpy); one (n,) tuple is one row."""
    if host:
        draft_tokens = V_._host(draft_tokens)
    t = draft_tokens if hasattr(draft_tokens, "ndim") else np.asarray(draft_tokens)
    return t[None] if t.ndim == 1 and B == 1 else t


def host_rows(X: Any, name: str) -> Any:
    """Rows for a numpy route: numpy and lists as they are; a tensor (any device and dtype)
    checked at its own dtype's tolerance where numpy has no such dtype (bfloat16), then copied
    to the host in float64 and renormalised there."""
    if not hasattr(X, "detach"):
        return X
    import torch

    if X.dtype == torch.bfloat16:  # numpy has no bfloat16: checked on the tensor's device
        X = V_.checked_rows(X, name)[0].to(torch.float64)
        X = X / X.sum(-1, keepdim=True)
    return X.detach().cpu().numpy()


def tensor_like(X: Any, ref: Any, name: str) -> Any:
    """``X`` as a tensor on ``ref``'s device in ``ref``'s dtype (float64 unless ``ref`` is
    float32): a tensor as it is; numpy rows (or a list) of a lower precision checked at their
    own dtype's tolerance first (:func:`mdsd_ot._validate.checked_rows`), then cast."""
    if hasattr(X, "detach"):
        return X
    import torch

    dtype = ref.dtype if ref.dtype in (torch.float32, torch.float64) else torch.float64
    a = V_.checked_before_cast(np.asarray(X), name, dtype.itemsize)
    return torch.as_tensor(np.asarray(a, dtype=np.float64), dtype=dtype, device=ref.device)


def check_rng(rng: Any) -> Any:
    """``rng`` of a rows route: a ``torch.Generator`` as it is, else a numpy Generator from a
    Generator, a non-negative int seed or None (a clear error otherwise)."""
    if hasattr(rng, "manual_seed") and hasattr(rng, "device"):  # a torch.Generator
        return rng
    from .._base import _rng

    return _rng(rng)


def check_rows(P: Any, Qd: Any, draft_tokens: Any, draft: DraftLaw):
    """The boundary checks of :meth:`ChainOptimal.sample_rows` on numpy (or array_like) rows.

    Returns ``(P, Qd, t)``: (B, V) float64 rows, each renormalised (:func:`mdsd_ot._validate.
    prob_batch`, errors name ``P`` or ``Qd`` and the row), and the int64 draft tuples of shape
    (B, n) or (B, k, n), every id in 0..V-1 (the messages of :func:`.batched.verify_rows`).
    The distinct-token laws need at least n tokens of positive mass in every ``Qd`` row, and
    their tuples n distinct tokens (:func:`~mdsd_ot.verifiers._base.check_distinct_tokens`: a
    repeat has probability 0 under the law).

    Examples
    --------
    >>> P, Q, t = check_rows([0.6, 0.4], [0.5, 0.5], [0, 1], WithReplacement([0.5, 0.5], 2))
    >>> P.shape, Q.shape, t.tolist()
    ((1, 2), (1, 2), [[0, 1]])
    >>> check_rows([0.6, 0.4], [0.5, 0.5], [[0, 1, 1]], WithReplacement([0.5, 0.5], 2))
    Traceback (most recent call last):
    ...
    ValueError: draft_tokens: expected shape (B, n) = (1, 2) or (B, k, n) with B = 1 rows and n = 2 drafts, got (1, 3); give one tuple (or k tuples) per row
    """
    from .._base import check_distinct_tokens, check_drafted_tokens
    from .batched import _check_tokens

    B, V = _row_shapes(P, Qd)
    Pm = np.atleast_2d(V_.prob_batch(host_rows(P, "P"), "P"))
    Qm = np.atleast_2d(V_.prob_batch(host_rows(Qd, "Qd"), "Qd"))
    n = draft.n
    if draft.distinct and n > 1:
        short = np.flatnonzero(np.count_nonzero(Qm > 0, axis=-1) < n)
        if short.size:
            b = int(short[0])
            V_.check_support(Qm[b], n, draft.scheme, f"Qd[{b}]" if np.ndim(Qd) == 2 else "Qd")
    t = _check_tokens(_token_array(draft_tokens, B, host=True), B, V, n)
    if draft.distinct:
        check_distinct_tokens(t, type(draft).__name__)
    check_drafted_tokens(t, Q=Qm)  # a token of q = 0 in its row is never drafted
    return Pm, Qm, t


def on_host(run: Any, P: Any, Qd: Any, draft_tokens: Any, rng: Any) -> tuple[Any, Any]:
    """``run(P, Qd, t, rng)`` (a numpy route) on tensors copied to the host; the output tokens
    and flags come back as tensors on ``P``'s device (a ``torch.Generator`` seeds the host's)."""
    import torch  # tensors given: torch is installed

    dev = P.device
    t = V_._host(draft_tokens)
    out, acc = run(host_rows(P, "P"), host_rows(Qd, "Qd"), t, numpy_rng(rng))
    return torch.from_numpy(out).to(dev), torch.from_numpy(acc).to(dev)


class ChainOptimal(Verifier):
    """Optimal (or certified near-optimal) verifier along the p/q chain; see the module table."""

    name = "optimal"
    laws = tuple(cls.scheme for cls in _CONSTRUCTION)
    law_hint = "WithReplacement, WithoutReplacement or ConditionalPoisson"

    def __init__(self, draft: DraftLaw | None = None):
        self._cache: dict[Any, tuple[DraftLaw, Plan]] = {}
        super().__init__(draft)

    def defined_for(self, draft: DraftLaw) -> bool:
        return isinstance(draft, DraftLaw) and construction_for(draft) is not None

    # -- plans -------------------------------------------------------------------------------
    def plan(self, p: Any, draft: DraftLaw | None = None) -> Plan:
        """The :class:`~mdsd_ot.verifiers.chain.plan.Plan` of one position (cached for the last p)."""
        draft = self._law(draft)
        pv = V_.prob_vector(p, "p")
        V_.check_on_vocabulary(pv, draft.V, "p")
        return self._plan_of(pv, draft)

    def _plan_of(self, pv: np.ndarray, draft: DraftLaw) -> Plan:
        """:meth:`plan` of a validated p (not normalised again: a second division may move
        an ulp, and the plan of ``certificate(p)`` would then be built again for ``sample(p)``,
        seconds per position for sequential n >= 3 at V = 152,064, with another tie order)."""
        key = (pv.tobytes(), id(draft))
        hit = self._cache.get(key)
        if hit is None or hit[0] is not draft:  # the law itself is held: its id is not reused
            self._cache = {key: (draft, build_plan(pv, draft.q, draft.n, construction_for(draft)))}
        return self._cache[key][1]

    def certificate(self, p: Any, draft: DraftLaw | None = None) -> dict[str, Any]:
        r"""Acceptance, the law's α* (fast solver), ε = α* − acceptance and the law error bound.

        ``exact_optimum`` says whether the construction attains α* in exact arithmetic
        (``relabel``, ``cp2``, n = 1, and ``seq2`` where its design fits); otherwise ε is the
        certified shortfall (up to the fast solver's accuracy ``alpha_accuracy``).  For two
        sequential drafts ``construction`` is ``seq2``, or ``seq-swap`` where seq2 fell short of
        α* by more than :data:`~mdsd_ot.verifiers.chain.seq2.TOL` (``fallback`` then records the
        seq2 attempt: its shortfall, rounds and largest overfull ratio); for n >= 3 it is
        ``stream``, ``seq-pair`` (with ``set_sum``, ``hold_back`` and ``relay`` as below),
        ``seq-swap-h`` or ``seq-swap``, as chosen per position (``seq-best`` records the
        choice, its ``pair`` why ``seq-pair`` did not fit; ``single`` the token ids that pick
        once under ``seq-swap-h``).  For
        conditional Poisson with n >= 3 it is ``cp-pair`` (``set_sum``: the largest hand-over
        probability of a draft set; ``hold_back``: the target path used; ``relay``: where the
        heaviest receiver also hands over, its token id and share) or, where that design does
        not fit, ``cp-swap`` with ``pair`` saying why.

        ``acceptance`` is the certified acceptance: the accepted sub-law :math:`\sum \min(s, T)`,
        a lower bound of the true acceptance (where ε > 0 the residual draw may land in the
        drafts too).
        """
        from ...fast import alpha_star, error_bound

        draft = self._law(draft)
        plan = self.plan(p, draft)
        pv = V_.prob_vector(p, "p")
        a = float(alpha_star(pv, draft.q, n=draft.n, scheme=draft.fast_kernel))
        fits = plan.construction == "seq2" and bool(plan.info.get("fits"))
        exact = plan.construction in EXACT or draft.n == 1 or fits
        n = plan.n
        shift = 2.0 * n * (n - 1) * slot_mass_imbalance(plan) / (plan.two_e2 or 1.0)
        extra: dict[str, Any] = {}
        keys = ("iterations", "shortfall", "pairs", "rounds", "fits", "fallback", "seq-best",
                "single", "retry", "pair", "set_sum", "hold_back", "relay")  # fmt: skip
        if (plan.pieces is not None or plan.seq2 is not None or plan.pair is not None
                or "seq-best" in plan.info):  # fmt: skip
            extra = {k: plan.info[k] for k in keys if k in plan.info}
        return {
            **extra,
            "construction": plan.construction,
            # a sum of floats may pass 1, or fall below 0 (disjoint supports), by an ulp
            "acceptance": min(max(plan.acceptance, 0.0), 1.0),
            "alpha_star": a,
            "eps": max(0.0, a - plan.acceptance) if np.isfinite(plan.acceptance) else a,
            "alpha_accuracy": error_bound(draft.V, draft.n, float(np.finfo(float).eps)),
            "law_error": plan.law_error + shift,
            "exact_optimum": exact,
        }

    # -- Verifier hooks ------------------------------------------------------------------------
    def _sample(self, p, draft, t, g):  # p: validated by Verifier.sample
        return sample_plan(self._plan_of(p, draft), t, g)

    def sample_rows(self, P: Any, Qd: Any, draft_tokens: Any, rng: Any = None) -> tuple[Any, Any]:
        """Batched positions: row b of ``draft_tokens`` (B, n) drawn from the bound law's class
        with q = ``Qd[b]``, verified against ``P[b]``.

        numpy rows: one position's plan in memory at a time
        (:func:`~mdsd_ot.verifiers.chain.sample.draw_rows`).  Tensors (torch, any device) with
        i.i.d. drafts (``relabel``): every row at once on the tensors' device, no per-row loop
        (:func:`~mdsd_ot.verifiers.chain.batched.verify_rows`; ``rng`` may be a
        ``torch.Generator``); so do two conditional-Poisson drafts (``cp2``), n >= 3 of
        them (``cp-pair``, :func:`~mdsd_ot.verifiers.chain.batched_pairs.pair_rows`), and
        sequential drafts with n >= 3 off the CPU (``seq-pair``).  On the
        CPU the faster route per row is taken (:func:`device_route`): that one for ``relabel``
        and ``cp2`` up to V = :data:`CPU_ARRAY_MAX_V`, the numpy route beyond and for
        ``cp-pair``.  The other constructions copy the rows to the host, run the numpy route
        and return tensors on the input's device.  Every route checks its inputs once, at this
        boundary: ``P`` and ``Qd`` of one shape, ``draft_tokens`` of shape (B, n) or (B, k, n)
        with the bound law's n and ids in 0..V-1 (:func:`check_rows`; on the device route,
        the same messages from :func:`~mdsd_ot.verifiers.chain.batched.verify_rows`).

        Parameters
        ----------
        P, Qd : (B, V) array_like or tensors
            The target rows and the drafts' q rows (the same shape; a (V,) row is B = 1).
        draft_tokens : (B, n) or (B, k, n) int array_like or tensor
            One tuple, or k tuples, of the bound law's n drafts per row; ids in 0..V-1.
        rng : Generator, int, torch.Generator or None
            The verifier's randomness.

        Returns
        -------
        tokens, accepted : (B,) or (B, k)
            The output tokens (int64) and whether each is one of its tuple's drafts (bool);
            numpy arrays, or tensors on ``P``'s device.

        Examples
        --------
        >>> P, Q = np.array([[0.6, 0.4], [0.2, 0.8]]), np.array([[0.5, 0.5], [0.5, 0.5]])
        >>> v = ChainOptimal(WithoutReplacement([0.5, 0.5], 2))
        >>> out, acc = v.sample_rows(P, Q, [[0, 1], [1, 0]], rng=0)
        >>> out.shape, bool(acc.all())  # two distinct drafts of two tokens: always accepted
        ((2,), True)
        >>> out, acc = v.sample_rows(P, Q, np.array([[[0, 1]] * 3, [[1, 0]] * 3]), rng=0)
        >>> out.shape, acc.shape  # k = 3 tuples per row
        ((2, 3), (2, 3))
        """
        draft = self._law(None)
        from ...fast import _backend as bk

        rng = check_rng(rng)
        if not (bk.is_numpy_array(P) or isinstance(P, list | tuple)):
            return self._sample_rows_tensor(P, Qd, draft_tokens, rng)
        Pm, Qm, t = check_rows(P, Qd, draft_tokens, draft)
        out = draw_rows(Pm, Qm, draft.n, construction_for(draft), t, numpy_rng(rng))
        return out, (t == out[..., None]).any(axis=-1)

    def _sample_rows_tensor(self, P: Any, Qd: Any, draft_tokens: Any, rng: Any):
        draft = self._law(None)
        con = construction_for(draft)
        from .batched import verify_rows

        B, _ = _row_shapes(P, Qd)  # metadata only: the values are checked on the device
        Qd = tensor_like(Qd, P, "Qd")
        if P.ndim == 1:
            P, Qd = P[None, :], Qd[None, :]
        if B == 0:  # no rows: nothing to verify (the device kernels reshape by B)
            import torch

            t = _token_array(draft_tokens, B)
            shape = tuple(t.shape[:-1]) if hasattr(t, "shape") else (0,)
            return (torch.empty(shape, dtype=torch.int64, device=P.device),
                    torch.empty(shape, dtype=torch.bool, device=P.device))  # fmt: skip
        if con == "seq-best":  # on a device: the pair rule's rows at once (seq-best's second
            con = "seq-pair"  # choice; the rows where it does not fit go to the host's plan)
        if device_route(con, P):  # every row at once on the device
            t = _token_array(draft_tokens, B)
            return verify_rows(P, Qd, draft.n, t, rng, construction=con, names=("P", "Qd"))
        return on_host(self.sample_rows, P, Qd, draft_tokens, rng)

    def _setup_of(self, p, pv, draft, exact):
        """:meth:`_setup` with the float route's plan of ``p`` (:meth:`plan`: the validated
        floats of p and the law's float q), so that :meth:`exact` and :meth:`conditional`
        evaluate the rule :meth:`sample` runs.  Built from the Fractions instead, q moved by
        an ulp (renormalised twice) and ties of p/q could take another chain order: p = q,
        conditional Poisson, n = 4 then checked a plan that accepted 7.3e-12 less (a review
        of 2026-12-07)."""
        fplan = None
        if draft.n > 1 and construction_for(draft) in ("seq-best", "cp-pair", "cp-swap"):
            fplan = self._plan_of(V_.prob_vector(p, "p"), draft)
        return self._setup(list(pv.values(exact)), draft, exact, fplan)

    def _setup(self, p, draft, exact, fplan=None):
        q = list(draft.qvals(exact))
        con = construction_for(draft)
        Q_of = lambda H: draft.Q(H, exact=exact)  # noqa: E731
        if con == "seq2":  # the exact seq2 plan where its design fits, else seq-swap's
            if exact or len(q) > SEQ2_FRACTIONS_MAX_V:  # floats beyond: Fractions cost ~V^3
                plan = exact_seq2_plan(list(p), q)
            else:  # in Fractions of the floats, rounded once (as _list_plan): in floats
                from fractions import Fraction  # 1 - q_a and the windows' prefix differences

                fr = lambda xs: [Fraction(float(x)) for x in xs]  # noqa: E731 - cancel
                plan = exact_seq2_plan(fr(p), fr(q))  # near a point mass (L1 5.5e-4 off p)
                plan = None if plan is None else _to_float(plan)
            if plan is not None:
                return plan
            con = "seq-swap"
        if con in ("seq-best", "cp-pair", "cp-swap"):  # the construction the float plan chose
            if fplan is None:  # called without the caller's p: the floats of these values
                fplan = self._plan_of(V_.prob_vector([float(x) for x in p], "p"), draft)
            con = fplan.construction
            if con in ("stream", "top"):
                return _list_plan(p, q, draft, con, exact)
        else:
            fplan = None  # relabel, cp2, top: the exact plan is designed in Fractions
        if con in CERTIFIED and draft.n > 1:
            items = draft.joint_items(exact=exact)
            return exact_swap_plan(list(p), q, draft.n, con, items, Q_of, fplan=fplan)
        return _list_plan(p, q, draft, con, exact)

    def _given(self, ctx, tup):
        return given(ctx, tup)

    # -- acceptance ----------------------------------------------------------------------------
    def has_closed_form(self, n: int) -> bool:
        """True where :meth:`acceptance` is the exact acceptance (``relabel``, ``cp2``, n = 1);
        for the swap constructions it is a certified lower bound (:meth:`acceptance_kind`)."""
        draft = self.draft
        return draft is not None and (n == 1 or _CONSTRUCTION[type(draft)](n) in EXACT)

    def acceptance_kind(self, n: int) -> str | None:
        r"""``"closed-form"`` (exact acceptance), ``"certified"`` (:meth:`acceptance` is
        :math:`\sum \min(s, T)`, a lower bound within the certified ε of α*) or ``None``."""
        if self.has_closed_form(n):
            return "closed-form"
        draft = self.draft
        if draft is not None and _CONSTRUCTION[type(draft)](n) in CERTIFIED:
            return "certified"
        return None

    def acceptance(self, p: Any, q: Any, n: int) -> float:
        """Acceptance of the chain verifier for the bound law's class with (q, n) (a lower bound
        for ``stream`` and ``top``)."""
        draft = self._law(None)
        return self.plan(p, type(draft)(q, n)).acceptance
