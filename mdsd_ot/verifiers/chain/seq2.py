r"""The ``seq2`` plan: two sequential drafts without replacement (proofs/optimal_verifier.md, §9).

For ``WithoutReplacement(q, 2)`` the ordered draft pair has
:math:`\Pr[X_1 = a, X_2 = b] = r_a q_b` (:math:`a \ne b`), :math:`r = q / (1 - q)`: the product
law :math:`\hat r \otimes q` (:math:`\hat r = r / R`, :math:`R = \sum r`) conditioned on two
different values, an event of probability 1/R.  For a rule that selects a on a collision
(a, a) the product and sequential selection laws are tied by the affine identity
:math:`T^{prod} = T^{seq} / R + \hat r \circ q`, and in product space the two draws are
independent, so relabelling each draw by its own kernel (A1 for the first draft, A2 for the
second) and selecting the higher *level* (ties: a fair coin) has a law that is linear in the
kernels once the level masses :math:`\nu_1 = r A_1`, :math:`\nu_2 = q A_2` are fixed:

.. math::

   T^{seq}_i = r_i \sum_l A_{1,il} \Bigl(\varphi_2(l) - \frac{q_i}{2}\Bigr)
             + q_i \sum_l A_{2,il} \Bigl(\varphi_1(l) - \frac{r_i}{2}\Bigr),
   \qquad \varphi_t(l) = \nu_t(\text{levels} < l) + \tfrac12 \nu_t(l).

Levels: every slot k (chain order p/q ascending) has two sub-levels, a *region* of width
:math:`B_k` and the *rest*; the region is the bottom of the slot for a demand token and its top
for a supply token.  A pair (x, y, τ) of the first-in first-out pairing (demand x below supply y)
exchanges mass :math:`m_1` of first draws and :math:`m_2` of second draws between the two regions
(x's draws in its region move to y's region w.p. :math:`m_t / \text{mass}`, y's to x's): level
masses are unchanged, tokens between x and y are unchanged, and x gains exactly

.. math::

   \tau = m_1 \Bigl(q[x..y] - \frac{q_x B_x + q_y B_y}{2}\Bigr)
        + m_2 \Bigl(r[x..y] - \frac{r_x B_x + r_y B_y}{2}\Bigr),

which y loses (:math:`q[x..y]` the q mass of the slots x..y).  The masses follow the lighter
token, :math:`(m_1, m_2) \propto (\min(r_x, r_y), \min(q_x, q_y))`, and the region widths come
from a monotone iteration from above (:func:`~.seq2_design.design`): :math:`B = 1` (plain slot
swaps), then :math:`B \leftarrow \max(W_1, W_2)`, the probabilities moved out of each token,
until every token fits (:math:`W \le 1`; in exact arithmetic :math:`W \le B` then holds
everywhere).  Where no fit is reached the pairs of the overfull tokens are scaled down and the
plan falls short of the optimum by the computed :math:`\sum (s - T)^+`; above :data:`TOL`
``build_plan(..., "seq2")`` uses ``seq-swap`` instead (:func:`seq2_or_swap_plan`).  Lemmas
11-13 and Theorem 5 of the note prove that a design that fits attains α*; that it always fits
is measured, not proved.

Kernel probabilities are multiples of :math:`2^{-52}` (the sampler draws integers), and the law
T of the quantised kernels is computed with their actual level masses
(:func:`~.seq2_kernel.kernel_law`), so the thinning :math:`\min(s, T)/T` is lossless up to the
rounding bound ``law_error``.

This module holds the plan (:func:`seq2_plan`, :func:`seq2_or_swap_plan`, :data:`TOL`);
:mod:`.seq2_design` the pairing and the design (:func:`~.seq2_design.fifo`,
:func:`~.seq2_design.design`, :data:`~.seq2_design.MAX_ROUNDS`,
:data:`~.seq2_design.SCALE_TOL`, all four re-exported here; :func:`seq2_or_swap_plan` and
:func:`~.seq2_exact.seq2_lists` read ``seq2.MAX_ROUNDS`` at call time), :mod:`.seq2_kernel`
the two kernels (:class:`~.seq2_kernel.Seq2Kernel`) and their exact law, :mod:`.seq2_exact`
the same construction in Fractions (the reference of the exact plan and of the machine
checks).

Examples
--------
>>> import numpy as np
>>> from mdsd_ot.fast import alpha_star
>>> from mdsd_ot.synthetic import synthetic_pair
>>> p, q = synthetic_pair(2000, 1.0, 0)
>>> plan = seq2_plan(p, q, 2, None)
>>> plan.construction, bool(abs(plan.acceptance - alpha_star(p, q, n=2, scheme="without")) < 1e-9)
('seq2', True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arena import SCRATCH, kept
from ._passes import kernels
from .seq2_design import MAX_ROUNDS, SCALE_TOL, _ceil_q, _fifo_compiled, _quantised, design, fifo
from .seq2_kernel import Seq2Kernel, kernel_law

__all__ = [
    "TOL",
    "MAX_ROUNDS",
    "SCALE_TOL",
    "seq2_plan",
    "seq2_or_swap_plan",
    "fifo",
    "design",
]

#: Largest shortfall :math:`\sum_k (s_k - T_k)^+` of a ``seq2`` plan that
#: :func:`seq2_or_swap_plan` keeps (absolute: acceptances are probabilities); above it the
#: ``seq-swap`` plan is built instead.
TOL: float = 1e-9


def _heavy(qs: np.ndarray, total: float) -> tuple[int, float]:
    r"""The slot h of a token with more than half of :math:`S = \sum q` and :math:`S - q_h`
    summed directly, or (-1, 0.0)."""
    h = int(np.argmax(qs))
    if 2.0 * qs[h] > total:
        return h, float(qs[:h].sum() + qs[h + 1 :].sum())
    return -1, 0.0


def _front_compiled(kern, ps: np.ndarray, qs: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`_masses`, the cumulative masses c0 and R0, D and F in one compiled loop (the same
    numbers as the numpy route of :func:`seq2_plan`)."""
    V = len(qs)
    total = float(qs.sum())
    h, rh = _heavy(qs, total)
    qn = SCRATCH.get("qn", V) if total != 1.0 else qs
    r = SCRATCH.get("r", V)
    z = SCRATCH.get("c0R0", 2 * (V + 1))
    c0, R0 = z[: V + 1], z[V + 1 :]
    D, F = SCRATCH.get("D", V), SCRATCH.get("F", V + 1)
    kern["seq2_front"](ps, qs, qn, r, total, h, rh, c0, R0, D, F)
    return qn, r, c0, R0, D, F


def _masses(qs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Second-draw masses :math:`\bar q = q / S` and first-draw masses :math:`r = q / (S - q)`
    (:math:`S = \sum q`; :math:`\Pr[X_1 = a, X_2 = b] = r_a \bar q_b` for a != b).

    :math:`S - q_k` is the sum of the other masses; for a token with more than half of S it is
    summed as such (no cancellation when it holds almost all of q); otherwise
    :math:`S - q_k \ge S/2`.
    """
    V = len(qs)
    total = float(qs.sum())
    qn = np.divide(qs, total, out=SCRATCH.get("qn", V)) if total != 1.0 else qs
    r = np.subtract(total, qs, out=SCRATCH.get("r", V))
    h, rh = _heavy(qs, total)
    if h >= 0:  # a heavy token: its complement summed directly
        r[h] = rh
    np.divide(qs, r, out=r)  # q = 0 gives 0
    return qn, r


def seq2_plan(
    p: np.ndarray,
    q: np.ndarray,
    n: int,
    order: np.ndarray | None,
    *,
    max_rounds: int = MAX_ROUNDS,
) -> Any:
    r"""The ``seq2`` :class:`~mdsd_ot.verifiers.chain.plan.Plan` of one position (n = 2).

    Sort by p/q (unless ``order`` is given), form the sequential law of "select the draft of
    largest p/q", :math:`D_k = r_k c_{k-1} + q_k r(H_{k-1})`, the optimal sub-law s, pair the
    supply :math:`(D - s)^+` with the demand :math:`(s - D)^+` first-in first-out
    (:func:`~.seq2_design.fifo`), design the regions and pair masses
    (:func:`~.seq2_design.design`), quantise, and compute the exact law T
    of the kernels (:func:`~.seq2_kernel.kernel_law`).  ``plan.info``: ``shortfall``
    :math:`\sum (s - T)^+`, ``rounds``, ``fits``, ``overfull``, ``pairs``.

    Examples
    --------
    >>> p, q = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])
    >>> plan = seq2_plan(p, q, 2, None)
    >>> round(plan.acceptance * 840, 9), plan.info["fits"]  # α* = 701/840
    (701.0, True)
    """
    from .plan import Plan, _gather, chain_order

    if n != 2:
        raise ValueError(f"n: the seq2 construction is for two drafts, got n = {n}")
    if order is None:
        order = chain_order(p, q)
    V = len(order)
    kern = kernels()
    if kern is not None:
        ps, qs = SCRATCH.get("ps", V), SCRATCH.get("qs", V)
        kern["gather"](p, q, order, ps, qs)
    else:
        ps, qs = _gather(p, q, order)
    live = V if qs[-1] > 0 else int(np.count_nonzero(q))
    if kern is not None:
        qn, r, c0, R0, D, F = _front_compiled(kern, ps, qs)
        s = kept("s", V)
        min_F, (tau, kd, js, dslot, sslot) = _fifo_compiled(
            kern, F, D, ps, s, SCRATCH.get("tmp", V), live
        )
        alpha = min(1.0, 1.0 + min_F)
    else:
        qn, r = _masses(qs)
        # cumulative q and r with a leading 0 (c0[k] = c_{k-1}), both in one complex
        # cumulative sum (two independent chains of additions; the same sums as two float
        # cumsums)
        z = SCRATCH.get("cz", V + 1, dtype=np.complex128)
        z[0] = 0.0
        z.real[1:] = qn
        z.imag[1:] = r
        np.cumsum(z, out=z)
        c0, R0 = z.real, z.imag
        D = np.multiply(r, c0[:-1], out=SCRATCH.get("D", V))
        tmp = np.multiply(qn, R0[:-1], out=SCRATCH.get("tmp", V))
        D += tmp
        # F = P - Q on prefixes, E = max(0, F - suffix min), s = D + dE (as plan._transfer)
        np.subtract(ps, D, out=tmp)
        F = SCRATCH.get("F", V + 1)
        F[0] = 0.0
        np.cumsum(tmp, out=F[1:])
        S = SCRATCH.get("S", V + 1)
        np.minimum.accumulate(F[::-1], out=S[::-1])
        alpha = min(1.0, 1.0 + float(S[0]))
        np.subtract(F[:-1], S[1:], out=F[:-1])
        F[-1] = 0.0
        np.maximum(F, 0.0, out=F)
        dE = np.subtract(F[1:], F[:-1], out=tmp)
        s = np.add(D, dE, out=kept("s", V))
        np.clip(s, 0.0, ps, out=s)
        tau, kd, js, dslot, sslot = fifo(dE, live, F)
    nd, ns = len(dslot), len(sslot)
    x, y = dslot[kd], sslot[js]
    rx, qx, ry, qy = r[x], qn[x], r[y], qn[y]
    span2 = c0[y + 1] - c0[x]
    np.maximum(span2, qx + qy, out=span2)
    span1 = R0[y + 1] - R0[x]
    np.maximum(span1, rx + ry, out=span1)
    mass_d, mass_s = (r[dslot], qn[dslot]), (r[sslot], qn[sslot])
    f, w1, w2, Bd, Bs, info = design(
        tau, (span2, span1), (rx, qx), (ry, qy), kd, js, mass_d, mass_s, max_rounds
    )
    prob, Wd, Ws = _quantised(f, w1, w2, rx, qx, ry, qy, kd, js, nd, ns)
    # region widths: dyadic, at least the moved probability, at most 1
    Bd = np.minimum(1.0, np.maximum(_ceil_q(Bd), np.maximum(Wd[0], Wd[1])))
    Bs = np.minimum(1.0, np.maximum(_ceil_q(Bs), np.maximum(Ws[0], Ws[1])))
    kern = Seq2Kernel(dslot, sslot, Bd, Bs, Wd, Ws, kd, js, prob)
    T, law_err = kernel_law(D, qn, r, c0, R0, kern, out=kept("T", V))
    gap = np.subtract(s, T, out=SCRATCH.get("tmp", V))
    np.maximum(gap, 0.0, out=gap)
    short = float(gap.sum())
    plan = Plan("seq2", 2, p, q, order, None, None, s, None, None, float(s.sum()) - short,
                law_err)  # fmt: skip
    plan.T = T
    plan.seq2 = kern
    plan.info.update(info, shortfall=short, pairs=int(len(tau)), alpha=alpha)
    return plan


def seq2_or_swap_plan(
    p: np.ndarray, q: np.ndarray, n: int, order: np.ndarray, *, tol: float = TOL
) -> Any:
    r"""The ``seq2`` plan when its shortfall :math:`\sum (s - T)^+` is at most ``tol``, else the
    ``seq-swap`` plan (n >= 3: always ``seq-swap``).  The fallback plan's ``info["fallback"]``
    records the seq2 attempt (its shortfall, rounds and largest overfull ratio).

    Examples
    --------
    >>> p, q = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])
    >>> seq2_or_swap_plan(p, q, 2, np.arange(4)).construction
    'seq2'
    """
    from .swap import swap_plan

    if n != 2:
        return swap_plan(p, q, n, order, "seq-swap")
    plan = seq2_plan(p, q, n, order, max_rounds=MAX_ROUNDS)
    if plan.info["shortfall"] <= tol:
        return plan
    alt = swap_plan(p, q, n, plan.order, "seq-swap")
    alt.info["fallback"] = {
        "from": "seq2",
        "shortfall": plan.info["shortfall"],
        "rounds": plan.info["rounds"],
        "overfull": plan.info["overfull"],
    }
    return alt
