r"""Plans of the swap constructions for laws of distinct drafts (proofs/optimal_verifier.md, §4).

``cp-swap`` (conditional Poisson, n >= 3) and ``seq-swap`` (sequential without replacement, any
n >= 2): sort by p/q, evaluate Q on every prefix (the fast solver's prefix routines), form the
optimal sub-law s, and design a piece kernel (:func:`~mdsd_ot.verifiers.chain.pieces.design`)
whose exact law T (:mod:`~mdsd_ot.verifiers.chain.cutlaw`) dominates s up to a certified
shortfall :math:`\varepsilon = \sum_k (s_k - T_k)^+`.  The verifier accepts the selected token
with probability :math:`\min(s, T)/T` (Lemma 0): lossless up to the law's error bound, acceptance
:math:`\sum \min(s, T) \ge \alpha^* - \varepsilon`.

Examples
--------
>>> import numpy as np
>>> from ...fast import alpha_star
>>> p, q = np.array([0.05, 0.15, 0.3, 0.5]), np.array([0.4, 0.3, 0.2, 0.1])
>>> plan = swap_plan(p, q, 3, np.array([0, 1, 2, 3]), "cp-swap")
>>> a = alpha_star(p, q, n=3, scheme="conditional-poisson")
>>> plan.construction, bool(0 <= a - plan.acceptance < 1e-9)
('cp-swap', True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...fast.scan import prefix_Q
from .cutlaw import RowSums, cp_law, cp_row, seq_law, total_mass
from .pieces import design_or_retry

__all__ = [
    "SWAP", "STREAM_TOL", "swap_plan", "seq_best_plan", "prefix_Q_of", "stream_draws",
    "sublaw_path",
]  # fmt: skip

#: The swap constructions and the law of their selection rule (its name is also the fast
#: solver's prefix kernel, :data:`mdsd_ot.fast.scan.KERNELS`).
SWAP: dict[str, str] = {
    "cp-swap": "conditional-poisson", "seq-swap": "without", "seq-swap-h": "without",
}  # fmt: skip

#: :func:`seq_best_plan` takes the ``stream`` plan without designing a piece kernel when its
#: acceptance (α* of i.i.d. drafts) is within this much of the sequential α*: below the
#: fixed point's own stopping tolerance (1e-10), so the design could not do better.
STREAM_TOL: float = 1e-12


def prefix_Q_of(
    qs: np.ndarray, n: int, construction: str, per_prefix: bool = False
) -> tuple[np.ndarray, Any]:
    """Q on the prefixes 0..V of the slot order (the fast solver's routines) and its error;
    ``per_prefix`` (sequential drafts, n >= 3): the error of every prefix, (V + 1,), instead of
    the largest (the same Q: :func:`~mdsd_ot.fast.series.series` as the fast kernel runs it)."""
    if per_prefix and SWAP[construction] == "without" and n >= 3:
        from ...fast.series import series

        Q, err = series(qs[None, :].astype(np.float64), n, np, per_prefix=True)
        return np.asarray(Q[0]), np.asarray(err[0])
    Q, err = prefix_Q(qs[None, :].copy(), n, SWAP[construction])  # the law's fast kernel
    out = np.empty(len(qs) + 1)
    out[0] = 0.0
    out[1:] = Q[0]
    return out, float(np.asarray(err).reshape(-1)[0])


def stream_draws(qs: np.ndarray, n: int) -> np.ndarray:
    r"""Typical number of draws of each token in the stopped stream, :math:`\max(1, q_x E\tau)`.

    The n-th new value arrives at :math:`\tau = \sum_{k \le n} \mathrm{Exp}(T - W_{k-1})`
    (exponential clocks; :math:`W_{k-1}` the mass of the first k - 1 drafts); the heaviest
    tokens come first, so :math:`E\tau \approx \sum_{k \le n} 1/(T - \text{top}_{k-1})`.
    A design model only (:func:`~mdsd_ot.verifiers.chain.pieces.build_pieces`).
    """
    from .seqseries import rest_masses

    k = min(n, len(qs) - 1)
    idx = np.argpartition(-qs, k)[: k + 1]
    top = idx[np.lexsort((idx, -qs[idx]))]  # by decreasing q
    rest = rest_masses(qs, top, n)  # summed: T - q_max has no digit left near a point mass
    etau = float(np.sum(1.0 / np.maximum(rest, 1e-300)))
    return np.maximum(1.0, qs * etau)


def sublaw_path(ps: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(D, s, E) from p by slot and Q on the prefixes 0..V: the law of "select the top draft"
    (differences of Q, clipped at 0), the optimal sub-law clipped to [0, p] and its transfer
    path (Theorem 1; Σ s = α*)."""
    from .plan import _transfer

    D = np.diff(Q)
    np.maximum(D, 0.0, out=D)
    E = _transfer(ps, Q[1:])[0].copy()
    s = D + (E[1:] - E[:-1])
    np.minimum(s, ps, out=s)
    np.maximum(s, 0.0, out=s)
    return D, s, E


def _swap_sublaw(p, q, n, order, construction, prefix=None):
    """(qs, D, s, prefix error): q in slot order, the law of the deterministic rule and the
    optimal sub-law of the construction's law (:func:`sublaw_path`); ``prefix``: Q on the
    prefixes and its error, when the caller has them (:func:`prefix_Q_of`)."""
    ps, qs = p[order], q[order]
    Q, q_err = prefix if prefix is not None else prefix_Q_of(qs, n, construction)
    D, s, _ = sublaw_path(ps, Q)
    return qs, D, s, q_err


def swap_plan(
    p: np.ndarray,
    q: np.ndarray,
    n: int,
    order: np.ndarray,
    construction: str,
    sub: Any = None,
    single_max: int | None = None,
) -> Any:
    """The :class:`~mdsd_ot.verifiers.chain.plan.Plan` of a swap construction (``sub``: the
    sub-law of :func:`_swap_sublaw`, when already formed; ``single_max``: for ``seq-swap-h``,
    at most this many tokens pick once, default :data:`~.seqsingle.SINGLE_MAX`)."""
    from .plan import Plan

    qs, D, s, q_err = sub if sub is not None else _swap_sublaw(p, q, n, order, construction)
    draws = single = None
    if SWAP[construction] == "conditional-poisson":
        row = cp_row(qs, n)  # what the law reads of q alone: once for every kernel

        def law(k):
            return cp_law(qs, n, k, row)
    elif construction == "seq-swap-h":  # the heaviest tokens pick once (§4.8)
        from .seqsingle import SINGLE_MAX, seq_single_law, single_tokens

        total = RowSums(total_mass(qs))  # with the memo of the per-row sums of the laws
        draws = stream_draws(qs, n)
        limit = SINGLE_MAX if single_max is None else single_max
        single = single_tokens(draws, limit) if n >= 3 else np.empty(0, np.int64)
        draws[single] = 1.0

        def law(k):
            if len(single) == 0:
                return seq_law(qs, n, k, total)
            return seq_single_law(qs, n, k, single, total)
    else:
        total = RowSums(total_mass(qs))  # with the memo of the per-row sums of the laws
        draws = stream_draws(qs, n)

        def law(k):
            return seq_law(qs, n, k, total)

    kern, T, err, info = design_or_retry(qs, n, D, s, law, draws=draws)
    acc = np.minimum(s, T)
    plan = Plan(
        construction, n, p, q, order, np.cumsum(qs), None, acc, None, None, float(acc.sum()), err
    )
    plan.pieces, plan.T = kern, T
    plan.info.update(info, prefix_error=q_err, pairs=kern.info.get("pairs", 0))
    if single is not None:
        plan.single = order[single].astype(np.int64)  # token ids
        plan.info["single"] = plan.single.tolist()
    return plan


def _score(plan: Any) -> float:
    """Certified acceptance less the law error; -inf for a plan with a non-finite figure (a
    design that met numbers it cannot represent: never chosen)."""
    score = plan.acceptance - plan.law_error
    return score if np.isfinite(score) else -np.inf


def seq_best_plan(p: np.ndarray, q: np.ndarray, n: int, order: np.ndarray) -> Any:
    r"""Sequential drafts, n >= 3: the ``stream`` plan where it attains α*, else the
    ``seq-pair`` plan where its design fits, else the best of ``stream``, ``seq-swap-h`` and
    ``seq-swap``.

    ``stream`` (Lemma 6′ and the i.i.d. optimum, exactly lossless) accepts
    :math:`\alpha^*_{with}(q, n) \le \alpha^*_{without}`; the pair and swap plans accept
    :math:`\alpha^*_{without} - \varepsilon`.  So: form the stream plan (one relabel plan)
    and the sequential sub-law; when the stream's acceptance is within :data:`STREAM_TOL` of
    :math:`\alpha^*_{without} = \sum s`, return it without a design.  Otherwise try
    ``seq-pair`` (:func:`~.seqpair.seq_pair_plan`: one scaling of O(nV) steps on the same
    prefix Q; proofs/optimal_verifier.md §12) and return it where it fits.  On peaked rows (a
    token drawn many times in the stopped stream) ``seq-swap`` stalls with ε up to a few 1e-2,
    and ``seq-swap-h``, where those tokens pick once, converges (§4.6, §4.8): design
    ``seq-swap-h`` when some token picks once (:func:`~.seqsingle.single_tokens`); where it
    stops above its tolerance and more tokens are drawn often, ``seq-swap-h`` again with up to
    :data:`~.seqsingle.SINGLE_WIDE` of them picking once (V up to
    :data:`~.seqsingle.SINGLE_WIDE_MAX_V`); then ``seq-swap`` unless the last design reached
    its stopping tolerance; return the plan whose certified acceptance, less its law error, is
    largest.  ``info["seq-best"]`` records the choice: ``designed`` (False for the stream
    shortcut), ``pair`` (why ``seq-pair`` did not fit, None where it did), ``single`` (the
    token ids that pick once), ``swap_h_acceptance`` and ``swap_acceptance`` (None when not
    designed), and, where the wide design ran, ``single_wide`` and ``swap_wide_acceptance``.

    Examples
    --------
    >>> p = np.array([0.9, 0.04, 0.03, 0.02, 0.01])
    >>> q = np.array([0.7, 0.1, 0.1, 0.05, 0.05])
    >>> from .plan import build_plan
    >>> plan = build_plan(p, q, 3, "seq-best")
    >>> plan.construction, plan.info["seq-best"]["designed"]  # α*_with = α*_without = 1 here
    ('stream', False)
    >>> p = np.array([0.05, 0.15, 0.3, 0.5])
    >>> plan = build_plan(p, np.array([0.4, 0.3, 0.2, 0.1]), 3, "seq-best")
    >>> plan.construction, plan.info["seq-best"]["pair"]  # the pair design fits
    ('seq-pair', None)
    """
    from .pieces import default_tol
    from .plan import _relabel
    from .seqpair import seq_pair_plan
    from .seqsingle import SINGLE_WIDE, SINGLE_WIDE_MAX_V, single_tokens

    stream = _relabel(p, q, n, order, "stream")
    prefix = prefix_Q_of(q[order], n, "seq-swap", per_prefix=True)
    path = sublaw_path(p[order], prefix[0])  # D, s, E: for the pair plan and the swap plans
    sub = (q[order], path[0], path[1], float(np.max(prefix[1])))
    a_seq = float(sub[2].sum())
    choice: dict[str, Any] = {
        "alpha_without": a_seq, "stream_acceptance": stream.acceptance, "designed": False,
    }  # fmt: skip
    if stream.acceptance >= a_seq - STREAM_TOL:
        stream.info["seq-best"] = choice
        return stream
    pair = seq_pair_plan(p, q, n, order, prefix, path)
    choice.update(designed=True, pair=pair if isinstance(pair, str) else None)
    if not isinstance(pair, str):
        pair.info["seq-best"] = choice
        return pair
    draws = stream_draws(sub[0], n)
    single = order[single_tokens(draws)]
    choice.update(single=single.tolist(), swap_h_acceptance=None, swap_acceptance=None)
    plans = [stream]
    tol = default_tol(len(p))
    if single.size:
        swap_h = swap_plan(p, q, n, order, "seq-swap-h", sub)
        choice["swap_h_acceptance"] = swap_h.acceptance
        plans.append(swap_h)
        wide = single_tokens(draws, SINGLE_WIDE)
        if (
            not swap_h.info["shortfall"] <= tol  # nan too
            and wide.size > single.size
            and len(p) <= SINGLE_WIDE_MAX_V
        ):
            swap_w = swap_plan(p, q, n, order, "seq-swap-h", sub, single_max=SINGLE_WIDE)
            choice.update(single_wide=order[wide].tolist(), swap_wide_acceptance=swap_w.acceptance)
            plans.append(swap_w)
    if not single.size or not plans[-1].info["shortfall"] <= tol:  # nan too
        swap = swap_plan(p, q, n, order, "seq-swap", sub)
        choice["swap_acceptance"] = swap.acceptance
        plans.append(swap)
    best = max(plans[::-1], key=_score)  # ties: the last
    best.info["seq-best"] = choice
    return best
