r"""The ``relabel`` verifier for many positions at once, on numpy or torch (the array API).

Positions are the rows of (B, V) arrays p and q (i.i.d. drafts, ``WithReplacement``, any n);
every step is a whole-array operation through the fast solver's backend layer
(:mod:`mdsd_ot.fast._backend`): no per-row Python loop and, on a GPU, no host synchronisation.
The rule is the one of :mod:`.relabel` and :mod:`.rows` (proofs/optimal_verifier.md, §2 and
§10): sort by p/q, form the optimal sub-law

.. math:: s_k = D_k + E_k - E_{k-1}, \qquad D_k = q_k d_k, \quad
          d_k = \sum_{l<n} c_k^l\, c_{k-1}^{n-1-l},

pair the supply :math:`(D - s)^+` with the demand :math:`(s - D)^+` first-in first-out from the
top of the chain, relabel each draw along its pairs, select the highest slot and thin by s/T.

This module holds :func:`verify_rows` (the input checks, then the plans and the draws of all
rows) and re-exports the rest: the plans (:class:`~.batched_plans.RowPlans`,
:func:`~.batched_plans.relabel_rows`, :func:`~.batched_plans.cp2_rows`,
:func:`~.batched_plans.law_error_bound`) from :mod:`.batched_plans`, the draws
(:func:`~.batched_draws.sample_relabel_rows`, :func:`~.batched_draws.kernel_row`: how a draw
finds its kernel entry without enumerating its partners) from :mod:`.batched_draws`, and
the ``cp-pair`` plans and draws of conditional Poisson with n >= 3 and the ``seq-pair`` ones of
sequential drafts with n >= 3 (:class:`~.batched_pairs.PairRowPlans`,
:func:`~.batched_pairs.pair_rows`, :func:`~.batched_pairs.sample_pair_rows`) from
:mod:`.batched_pairs`.

Examples
--------
>>> import numpy as np
>>> P, Q = np.array([[0.6, 0.4]]), np.array([[0.5, 0.5]])
>>> plans = relabel_rows(P, Q, 2)
>>> round(float(plans.alpha[0]), 12)  # α* = 1: token 0 is selected from {0, 1} w.p. 0.7
1.0
>>> t = np.array([[[0, 1]] * 20000])  # 20,000 tuples (0, 1) at the one position
>>> out, acc = sample_relabel_rows(plans, t, np.random.default_rng(0))
>>> round(float((out == 0).mean()), 1), bool(acc.all())
(0.6, True)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ... import _validate as V_
from ...fast import _backend as bk
from .batched_draws import kernel_row, sample_relabel_rows
from .batched_pairs import PairRowPlans, pair_rows, sample_pair_rows
from .batched_plans import RowPlans, cp2_rows, law_error_bound, relabel_rows

__all__ = [
    "RowPlans",
    "relabel_rows",
    "cp2_rows",
    "PairRowPlans",
    "pair_rows",
    "sample_pair_rows",
    "sample_relabel_rows",
    "verify_rows",
    "CONSTRUCTIONS",
    "law_error_bound",
    "kernel_row",
]


def _check_tokens(t: Any, B: int, V: int, n: int, Q: Any = None) -> Any:
    """Draft tuples as int64 of shape (B, n) or (B, k, n), every id in 0..V-1; with the rows'
    ``Q`` (B, V) also every token drafted (its row's q > 0).  The range and the q = 0 test are
    read in one host synchronisation on the rows' device; only a bad input is copied to the
    host, for the message (:func:`~mdsd_ot.verifiers._base.check_drafted_tokens`)."""
    xp = bk.namespace(t)
    if t.ndim not in (2, 3) or t.shape[0] != B or t.shape[-1] != n:
        raise ValueError(
            f"draft_tokens: expected shape (B, n) = ({B}, {n}) or (B, k, n) with B = {B} rows "
            f"and n = {n} drafts, got {tuple(t.shape)}; give one tuple (or k tuples) per row"
        )
    if not xp.isdtype(t.dtype, "integral"):
        raise ValueError(f"draft_tokens: must hold integer token ids, got dtype {t.dtype}")
    t = xp.astype(t, xp.int64)
    if not (t.size if bk.is_numpy_array(t) else t.numel()):
        return t
    reads = [xp.min(t), xp.max(t)]
    if Q is not None:
        safe = xp.clip(xp.reshape(t, (B, -1)), 0, V - 1)  # in range for the gather; the range
        if bk.is_torch(Q):  # itself is judged below
            import torch

            qt = torch.gather(Q, 1, safe)
        else:
            qt = np.take_along_axis(Q, safe, axis=1)
        reads.append(xp.any(qt <= 0))
    lo, hi, *zero = (int(v) for v in bk.to_host(*reads))  # one host synchronisation
    if lo < 0 or hi >= V:
        bad = lo if lo < 0 else hi
        raise ValueError(
            f"draft_tokens: token id {bad} is outside the vocabulary 0..{V - 1}; give ids "
            "of the rows' vocabulary"
        )
    if zero and zero[0]:
        from ... import _validate as V_
        from .._base import check_drafted_tokens

        check_drafted_tokens(V_._host(t), Q=V_._host(Q), qname="Q")
    return t


#: The constructions of this module and the fast kernel (law) each one verifies.
CONSTRUCTIONS: dict[str, str] = {
    "relabel": "with",
    "cp2": "conditional-poisson",
    "cp-pair": "conditional-poisson",
    "seq-pair": "without",
}


def verify_rows(
    P: Any,
    Q: Any,
    n: int,
    draft_tokens: Any,
    rng: Any = None,
    construction: str = "relabel",
    *,
    return_plans: bool = False,
    names: tuple[str, str] = ("P", "Q"),
) -> tuple[Any, ...]:
    r"""The optimal verifier on (B, V) rows of numpy arrays or tensors: ``relabel`` (i.i.d.
    drafts, any n), ``cp2`` (conditional Poisson, n = 2) or ``cp-pair`` (conditional Poisson,
    n >= 3: :func:`~.batched_pairs.pair_rows`, the rows where its design does not fit drawn by
    the one-position plan on the host, :func:`_host_rows`); conditional-Poisson tuples hold
    distinct tokens.

    Validates p and q once (on their device, one host synchronisation for the flags and one for
    the tokens: their range and that each row's q is positive there), renormalises the rows, computes in float64 (float32 input is cast, so
    the law error stays that of :func:`~.batched_plans.law_error_bound`), builds the plans of
    all rows with one sort each and verifies ``draft_tokens`` ((B, n) or (B, k, n); for
    ``cp2`` and ``cp-pair`` n distinct tokens per tuple, a repeat is refused; a token whose
    row's q is 0 is refused).  Returns the
    output tokens and the accepted flags, on the input's device; with ``return_plans=True`` also
    the :class:`~.batched_plans.RowPlans` (``cp-pair``: the
    :class:`~.batched_pairs.PairRowPlans`) (``alpha``: each row's certified acceptance, α*
    up to rounding, except on a row drawn by the one-position plan near a point mass
    (:func:`_near_point_mass_rows`), where it is that plan's: below α* where the plan gave way
    to ``top``, and, for ``cp-pair``, on a row whose ``fits`` is False, where it is the
    one-position plan's (``cp-swap``'s, α* − ε); ``law_error``: its bound).  Errors name the
    arguments ``names`` (a caller that passes its own arguments through gives their names).

    Examples
    --------
    >>> P, Q = np.array([[0.6, 0.4], [0.2, 0.8]]), np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> out, acc = verify_rows(P, Q, 2, np.array([[1, 1], [0, 1]]), 0)
    >>> out.shape, acc.dtype
    ((2,), dtype('bool'))
    >>> _, _, plans = verify_rows(P, Q, 2, np.array([[1, 1], [0, 1]]), 0, return_plans=True)
    >>> plans.alpha.round(4).tolist()  # α* of each position: the verifier's acceptance
    [1.0, 0.95]
    """
    from ... import _validate as V_
    from ...fast._check import check_array, check_numpy

    n = V_.check_n(n)
    if construction not in CONSTRUCTIONS:
        raise ValueError(
            f"construction: expected one of {', '.join(CONSTRUCTIONS)}, got {construction!r}"
        )
    if construction == "cp2" and n != 2:
        raise ValueError(f"n: cp2 is the conditional-Poisson verifier for n = 2, got n = {n}")
    if construction == "cp-pair" and n < 3:
        raise ValueError(
            f"n: cp-pair is the conditional-Poisson verifier for n >= 3, got n = {n}; use "
            "construction='cp2' for two drafts"
        )
    if construction == "seq-pair" and n < 3:
        raise ValueError(
            f"n: seq-pair is the sequential-drafts verifier for n >= 3, got n = {n}; two "
            "sequential drafts have the one-position seq2 plans (ChainOptimal.sample_rows)"
        )
    kernel = CONSTRUCTIONS[construction]
    P = P if bk.is_array(P) else np.asarray(P)  # lists and other sequences: numpy rows
    Q = Q if bk.is_array(Q) else np.asarray(Q)
    if bk.is_numpy_array(P) != bk.is_numpy_array(Q):
        lib = ("a numpy array", "a tensor")
        raise ValueError(
            f"{names[1]}: is {lib[not bk.is_numpy_array(Q)]} but {names[0]} is "
            f"{lib[not bk.is_numpy_array(P)]}; give both as numpy arrays or both as tensors "
            "(torch.as_tensor / .numpy())"
        )
    if bk.is_numpy_array(P) and type(rng).__module__.startswith("torch"):
        raise ValueError(
            "rng: a torch.Generator draws on a torch device, but the rows are numpy arrays; "
            "pass a numpy Generator or a seed (or give the rows as tensors)"
        )
    if bk.is_numpy_array(P) and bk.is_numpy_array(Q):
        P2, Q2, (sp, sq) = check_numpy(P, Q, n, kernel, names)
        t = np.asarray(draft_tokens)
    else:
        P2, Q2, (sp, sq) = check_array(P, Q, n, kernel, names)
        xp = bk.namespace(P2)
        P2, Q2 = xp.astype(P2, xp.float64), xp.astype(Q2, xp.float64)
        sp, sq = xp.astype(sp, xp.float64), xp.astype(sq, xp.float64)
        t = draft_tokens
        if bk.is_numpy_array(t) or not hasattr(t, "device"):
            t = xp.asarray(np.asarray(t), device=P2.device)
        elif t.device != P2.device:
            raise ValueError(
                f"draft_tokens: is on {t.device} but {names[0]} is on {P2.device}; put both on "
                "one device"
            )
    P2, Q2 = P2 / sp[:, None], Q2 / sq[:, None]
    B, V = Q2.shape
    if B == 0:  # no rows: nothing to verify (the kernels below reshape by B)
        if return_plans:
            raise ValueError(f"{names[0]}: no rows (B = 0): there is no plan to return")
        xp = bk.namespace(P2)
        shape = tuple(np.shape(t))[:-1] if np.ndim(t) >= 2 else (0,)
        dev = getattr(P2, "device", None)
        return xp.zeros(shape, dtype=xp.int64, device=dev), xp.zeros(
            shape, dtype=xp.bool, device=dev
        )
    t = _check_tokens(t, B, V, n, Q2)
    if construction != "relabel":  # distinct drafts: a repeat has probability 0
        from .._base import check_distinct_tokens

        law = "WithoutReplacement" if kernel == "without" else "ConditionalPoisson"
        check_distinct_tokens(t, law)
    if construction in ("cp-pair", "seq-pair"):
        pplans = pair_rows(P2, Q2, n, law=kernel)
        out, accepted = sample_pair_rows(_fitting(pplans), t, rng)
        _host_rows(pplans, P2, Q2, t, rng, out, accepted, construction)
        return (out, accepted, pplans) if return_plans else (out, accepted)
    plans = relabel_rows(P2, Q2, n) if construction == "relabel" else cp2_rows(P2, Q2)
    out, accepted = sample_relabel_rows(plans, t, rng)
    if construction == "cp2":
        _near_point_mass_rows(plans, P2, Q2, t, rng, out, accepted)
    return (out, accepted, plans) if return_plans else (out, accepted)


def numpy_rng(rng: Any) -> np.random.Generator:
    """A numpy Generator for a host route: a numpy Generator itself, one seeded by one draw of
    a ``torch.Generator`` (on its device), else ``np.random.default_rng(rng)`` (a seed, None).

    Examples
    --------
    >>> g = np.random.default_rng(0)
    >>> numpy_rng(g) is g, type(numpy_rng(3)).__name__
    (True, 'Generator')
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if hasattr(rng, "manual_seed") and hasattr(rng, "device"):  # a torch.Generator
        import torch

        seed = int(torch.randint(0, 2**62, (1,), generator=rng, device=rng.device))
        return np.random.default_rng(seed)
    return np.random.default_rng(rng)


def _fitting(plans: PairRowPlans) -> PairRowPlans:
    """The plans with the rows that do not fit made harmless for :func:`sample_pair_rows`
    (no hand-over, nothing accepted: a residual draw from p), so that a design that stopped on
    non-finite values draws nothing undefined; :func:`_host_rows` replaces those rows."""
    xp = bk.namespace(plans.qs)
    ok = plans.fits[:, None]
    zero = xp.zeros_like(plans.qs)
    return replace(
        plans,
        theta=xp.where(ok, plans.theta, zero),
        g=xp.where(ok, plans.g, zero),
        T=xp.where(ok, plans.T, plans.qs),
        acc=xp.where(ok, plans.acc, zero),
    )


def _near_point_mass_rows(plans: RowPlans, P: Any, Q: Any, t: Any, rng: Any, out: Any, acc: Any):
    r"""The ``cp2`` rows whose a-priori law bound exceeds
    :data:`~.cp2.KERNEL_LAW_TOL` (q within about 1e-3 of a point mass, where the bound divides
    by :math:`2e_2`; subnormal masses beside a token of q ≈ 1 made it infinite and the output
    law wrong): drawn again on the host by the one-position plan, which computes the rounded
    kernel's own law, or gives way to ``top`` where that law is lost
    (:func:`~.plan.build_plan`); ``out``, ``acc`` and the plans' ``alpha`` and ``law_error``
    are overwritten there.  One host synchronisation; nothing else when no row is such."""
    from .cp2 import KERNEL_LAW_TOL

    xp = bk.namespace(plans.law_error)
    bad = xp.logical_not(plans.law_error <= KERNEL_LAW_TOL)  # NaN: not certified either
    _host_rows(plans, P, Q, t, rng, out, acc, "cp2", bad)


def _host_rows(plans: Any, P: Any, Q: Any, t: Any, rng: Any, out: Any, acc: Any,
               construction: str, bad: Any = None) -> None:  # fmt: skip
    r"""Draw the rows flagged ``bad`` (default: those whose ``plans.fits`` is False) again on
    the host, each with the one-position plan of ``construction``
    (:func:`~.plan.build_plan`: for ``cp-pair`` the plan that falls back to ``cp-swap``, for
    ``cp2`` the rounded kernel's own law or ``top``); ``out``, ``acc`` and the plans'
    ``alpha`` and ``law_error`` are overwritten there.  One host synchronisation; nothing else
    when no row is flagged."""
    from .plan import build_plan
    from .sample import sample_plan

    xp = bk.namespace(plans.law_error)
    if bad is None:
        bad = xp.logical_not(plans.fits)
    (flags,) = bk.to_host(bad)
    rows = np.flatnonzero(flags)
    if len(rows) == 0:
        return
    sel = xp.asarray(rows, device=getattr(P, "device", None))
    Ph, Qh, th = (V_._host(x) for x in (P[sel], Q[sel], t[sel]))
    if isinstance(rng, int | np.integer):  # a seed: a stream apart from the device draws'
        g = np.random.default_rng(np.random.SeedSequence(int(rng)).spawn(1)[0])
    else:
        g = numpy_rng(rng)
    o = np.empty(th.shape[:-1], dtype=np.int64)  # the bad rows only, in order
    alpha, err = np.empty(len(rows)), np.empty(len(rows))
    n = th.shape[-1]
    for j in range(len(rows)):
        plan = build_plan(Ph[j], Qh[j], n, construction)
        o[j] = sample_plan(plan, th[j].reshape(-1, n), g).reshape(th.shape[1:-1])
        alpha[j], err[j] = plan.acceptance, plan.law_error
    new_acc = (th == o[..., None]).any(axis=-1)
    for dst, values in ((out, o), (acc, new_acc), (plans.alpha, alpha), (plans.law_error, err)):
        dev = getattr(dst, "device", None)
        dst[xp.asarray(rows, device=dev)] = xp.asarray(values, dtype=dst.dtype, device=dev)
