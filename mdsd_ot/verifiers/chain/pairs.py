r"""The pair hand-over rule for conditional-Poisson drafts, n >= 3 (``cp-pair``;
proofs/optimal_verifier.md, §11).

Sort by p/q (slots, §0).  For a draft set S let y be its highest slot.  The rule selects a
drafted x below y with probability :math:`\lambda(y, x)` and y otherwise, so its law is
*linear* in λ and moves selection mass from y to x only:

.. math::

   T = D + \sum_{x<y} \lambda(y, x)\, M(y, x)\, (e_x - e_y), \qquad
   M(y, x) = \Pr[\text{top}(S) = y,\ x \in S] = \frac{q_y q_x e_{n-2}(H_y \setminus x)}{e_n(q)},

with :math:`H_y` the slots below y.  It is a rule when :math:`\sum_{x \in S \setminus y}
\lambda(y, x) \le 1` for every S, i.e. the n - 1 largest :math:`\lambda(y, \cdot)` sum to at
most 1.  The design takes :math:`\lambda(y, x) = \theta_y g_x` inside the blocks of the
transfer path (cuts where :math:`E' = 0`; :math:`E'` is E less the bottom block's surplus
:math:`1 - \alpha^*`, :func:`_targets`: first :math:`E - \min_{c' \le c} E_{c'}`, then, where
that is not a rule, the surplus left with the lowest givers), givers
:math:`\Delta = E'_c - E'_{c+1} > 0` and receivers :math:`\Delta < 0`.  Were M a product
:math:`a_y q_x` the flows :math:`A_c G_c = E'_c` (A the suffix sums of :math:`\theta a` over the
givers, G the prefix sums of :math:`g q` over the receivers) would be met exactly by
:math:`G_{c+1} / G_c = E'_{c+1} / E'_c` at receivers (Theorem 6); with the exact M (rank n - 1)
that is the start of a matrix scaling, :math:`g = \delta / \mathrm{In}(\theta)`,
:math:`\theta = \sigma / \mathrm{Out}(g)`, each a few cumulative sums of non-negative terms
(O(nV), no subtraction).  The plan is used where the scaling reaches its tolerance and the
rule is a rule; otherwise :func:`pair_plan` returns the reason and the caller designs
``cp-swap``.

Examples
--------
>>> import numpy as np
>>> from ...fast import alpha_star
>>> from .plan import chain_order
>>> p, q = np.array([0.05, 0.15, 0.3, 0.5]), np.array([0.4, 0.3, 0.2, 0.1])
>>> plan = pair_plan(p, q, 3, chain_order(p, q))
>>> a = alpha_star(p, q, n=3, scheme="conditional-poisson")
>>> plan.construction, bool(0 <= a - plan.acceptance < 1e-9)
('cp-pair', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...drafts.sampling import scale_exponent
from ...fast import _backend as bk
from ._passes import kernels
from .pieces import cp_levels

__all__ = [
    "PairRule", "pair_plan", "pair_flows", "set_sums", "PAIR_ITERATIONS", "PAIR_TOL",
    "RELAY_SHARES", "PAIR_TRIES", "PAIR_TRIES_HEAVY", "heavy_receiver",
]  # fmt: skip

EPS = float(np.finfo(np.float64).eps)
_TINY = float(np.finfo(np.float64).smallest_subnormal)
#: Increments of E' within this fraction of its largest value are rounding, not transfers: no
#: giver or receiver is made of them (what they leave is counted in the shortfall).
_NOISE: float = 1e-14

#: Below :math:`e_n(q) <` this to the n-th power the levels are formed from :math:`2^k q`
#: (:func:`~mdsd_ot.drafts.sampling.scale_exponent`).
_NORMAL_EN: float = 2.0**-32

#: At most this many scaling steps (each: one pass for the receivers, one for the givers).
PAIR_ITERATIONS: int = 40

#: The scaling stops when the shortfall :math:`\sum (s - T)^+` is at most this plus
#: :math:`10^{-15} V` (its floating-point floor at V = 152,064 is about 1.5e-12); a design that
#: does not get there is not used.
PAIR_TOL: float = 1e-10

#: The shares of the flow across the cut below it that a *relay*, the heaviest receiver, also
#: hands over (proofs/optimal_verifier.md §11, "Relays"), in the order :data:`PAIR_TRIES` uses
#: them.
RELAY_SHARES: tuple[float, ...] = (0.9, 0.97)

#: The n - 1 largest :math:`\lambda(y, \cdot)` of a giver must sum to at most ``1 - SET_MARGIN``
#: (the sampler adds them in floating point).
SET_MARGIN: float = 1e-12


@dataclass
class PairRule:
    r"""The hand-over probabilities :math:`\lambda(y, x) = \theta_y g_x` for slots x < y of the
    same ``block`` (0 across blocks), by slot.  ``thin`` (``seq-pair``,
    :class:`~.seqpair.SetThinning`): the hand-overs on a draft set are further multiplied by
    its factor :math:`r(S) \le 1`, which makes the kernel of sequential drafts a product
    (proofs/optimal_verifier.md §12); ``None`` for ``cp-pair``.

    Examples
    --------
    >>> r = PairRule(np.array([0.0, 0.0, 0.5]), np.array([0.4, 0.2, 0.0]), np.zeros(3, np.int64))
    >>> r.hand_over(np.array([2, 2]), np.array([0, 1])).tolist()
    [0.2, 0.1]
    """

    theta: np.ndarray
    g: np.ndarray
    block: np.ndarray
    thin: Any = None

    def hand_over(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        """:math:`\\lambda(y, x)` for slot arrays of one shape (0 where x >= y or the blocks
        differ); the product :math:`\\theta_y g_x` rounded once, as the law counts it."""
        lam = self.theta[y] * self.g[x]
        return np.where((x < y) & (self.block[x] == self.block[y]), lam, 0.0)


def _excl_suffix(x: np.ndarray) -> np.ndarray:
    """:math:`\\sum_{j > k} x_j` for every k (sequential, from the top)."""
    out = np.empty_like(x)
    out[-1] = 0.0
    np.cumsum(x[:0:-1], out=out[-2::-1])
    return out


def _excl_prefix(x: np.ndarray) -> np.ndarray:
    """:math:`\\sum_{j < k} x_j` for every k (sequential, from the bottom)."""
    out = np.empty_like(x)
    out[0] = 0.0
    np.cumsum(x[:-1], out=out[1:])
    return out


def pair_flows(
    qs: np.ndarray, e: list[np.ndarray], n: int, blocks: list[tuple[int, int]],
    theta: np.ndarray, g: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    r"""In- and out-flow rates of every slot, times :math:`e_n`:

    .. math::

       \mathrm{In}_k = q_k \sum_{j=0}^{n-2} e_j(H_k) R_{n-2-j}(k), \quad
       R_0(k) = \sum_{y>k} \theta_y q_y, \quad R_i(k) = \sum_{j>k} q_j R_{i-1}(j);

       \mathrm{Out}_k = q_k U_{n-2}(k), \quad
       U_m(k) = \sum_{j<k} \bigl(q_j U_{m-1}(j) + g_j q_j e_m(H_j)\bigr), \ U_{-1} = 0,

    the sums over the slots of k's block, so that :math:`\sum_{y>k} \theta_y M(y, k) =
    \mathrm{In}_k / e_n` and :math:`\sum_{x<k} g_x M(k, x) = \mathrm{Out}_k / e_n`
    (:math:`e_{n-2}(H_y \setminus x) = \sum_j e_j(H_x) e_{n-2-j}(\text{slots strictly between})`:
    every term is non-negative).  ``e[m]`` holds :math:`e_m(H_k)`, k = 0..V.

    Examples
    --------
    >>> qs = np.array([0.2, 0.3, 0.5]); e = cp_levels(qs, 3)
    >>> In, Out = pair_flows(qs, e, 3, [(0, 3)], np.array([0, 0, 1.0]), np.array([1.0, 0, 0]))
    >>> round(float(In[0] / e[3][-1]), 12), round(float(Out[2] / e[3][-1]), 12)  # M(2, 0) = 1
    (1.0, 1.0)
    """
    return _inflow(qs, e, n, blocks, theta), _outflow(qs, e, n, blocks, g)


def _compiled(name: str, qs, e, n, blocks, w) -> np.ndarray | None:
    """The flow ``name`` of :mod:`._passes_pairs_nb` with weights ``w``, or None where the
    compiled passes are off (or there is no block)."""
    kern = kernels()
    if kern is None or not blocks:
        return None
    out = np.zeros(len(qs))
    los, his = np.array(blocks, dtype=np.int64).T.copy()
    kern[name](qs, e, n, los, his, w, out)
    return out


def _inflow(qs, e, n, blocks, theta) -> np.ndarray:
    r""":math:`\mathrm{In}` of :func:`pair_flows` (compiled where :func:`._passes.kernels`
    are on; the same bits)."""
    In = _compiled("pair_inflow", qs, e, n, blocks, theta)
    if In is not None:
        return In
    In = np.zeros(len(qs))
    for lo, hi in blocks:
        q = qs[lo:hi]
        R = _excl_suffix(theta[lo:hi] * q)
        acc = e[n - 2][lo:hi] * R
        for i in range(1, n - 1):
            R = _excl_suffix(q * R)
            acc += e[n - 2 - i][lo:hi] * R
        In[lo:hi] = q * acc
    return In


def _outflow(qs, e, n, blocks, g) -> np.ndarray:
    r""":math:`\mathrm{Out}` of :func:`pair_flows` (compiled where :func:`._passes.kernels`
    are on; the same bits)."""
    Out = _compiled("pair_outflow", qs, e, n, blocks, g)
    if Out is not None:
        return Out
    Out = np.zeros(len(qs))
    for lo, hi in blocks:
        q = qs[lo:hi]
        gq = g[lo:hi] * q
        U = _excl_prefix(gq)  # e_0 = 1
        for m in range(1, n - 1):
            U = _excl_prefix(q * U + gq * e[m][lo:hi])
        Out[lo:hi] = q * U
    return Out


def set_sums(
    theta: np.ndarray, g: np.ndarray, qs: np.ndarray, n: int, blocks: list[tuple[int, int]]
) -> float:
    r"""The largest :math:`\theta_y \times` (sum of the n - 1 largest :math:`g_x`, x < y in y's
    block, :math:`q_x > 0`) over the givers: the largest probability of a hand-over on a draft
    set.  Running order statistics by levels: :math:`T_r` the running maximum of :math:`B_r`,
    :math:`B_1 = g`, :math:`B_{r+1}(j) = \min(B_r(j), T_r(j-1))` (the value level r leaves
    behind at j); :math:`T_r(k)` is then the r-th largest of the first k values.

    Examples
    --------
    >>> set_sums(np.array([0, 0, 0, 0.5]), np.array([0.9, 0.4, 0.6, 0]), np.ones(4), 3, [(0, 4)])
    0.75
    """
    worst = 0.0
    for lo, hi in blocks:
        B = np.where(qs[lo:hi] > 0, g[lo:hi], 0.0)
        top = np.zeros(hi - lo)
        for _ in range(n - 1):
            T = np.maximum.accumulate(B)
            before = np.concatenate([[0.0], T[:-1]])  # the r-th largest strictly below
            top += before
            B = np.minimum(B, before)
        worst = max(worst, float(np.max(theta[lo:hi] * top, initial=0.0)))
    return worst


def _blocks(Ep: np.ndarray) -> list[tuple[int, int]]:
    """The blocks of two or more slots: [lo, hi) between consecutive zero cuts of E'."""
    cuts = np.flatnonzero(Ep == 0.0)
    wide = np.flatnonzero(np.diff(cuts) > 1)
    return list(zip(cuts[wide].tolist(), cuts[wide + 1].tolist(), strict=True))


def _rank_one(
    qs: np.ndarray, e: list[np.ndarray], n: int, Ep: np.ndarray, give: np.ndarray | None = None
) -> np.ndarray:
    r"""θ of the product model :math:`M(y, x) \approx a_y q_x`, :math:`a_y = q_y e_{n-2}(H_y)`
    (Theorem 6), on a span of blocks (``Ep`` on its cuts): :math:`\log G_{c+1} = \log G_c +
    \log(E'_{c+1}/E'_c)` at the receivers above a block's bottom slot, :math:`\theta_y =
    \Delta_y / (a_y G_y)` at the givers.  G is one running product over the span: a constant
    factor per block, which the scaling's first step takes out (:math:`\lambda = \theta g` is
    the same for :math:`(\kappa\theta, g/\kappa)` within a block).  ``give`` (by slot, > 0 at
    the relays: receivers that also hand over ``give`` below them, ``give < E'`` on the cut
    below) changes a relay's step to :math:`\log(E'_{c+1}/(E'_c - \gamma))` and gives it
    :math:`\theta = \gamma / (a\, G_c)`, G on the cut below it (Theorem 6′)."""
    d = Ep[:-1] - Ep[1:]
    step = np.zeros(len(d))
    rec = np.flatnonzero((d < 0) & (Ep[:-1] > 0))  # receivers with a cut of E' > 0 below
    gam = np.zeros(len(d)) if give is None else give
    with np.errstate(divide="ignore", invalid="ignore"):
        step[rec] = np.log(Ep[rec + 1] / (Ep[rec] - gam[rec]))
    logG = np.cumsum(step)  # log G at the cut above each slot
    logG -= logG[-1] if len(logG) else 0.0
    giv = np.flatnonzero(d > 0)
    rel = np.flatnonzero(gam > 0)
    theta = np.zeros(len(d))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        G = np.exp(logG[giv])  # a giver leaves G unchanged: the cut below has the same G
        theta[giv] = d[giv] / (qs[giv] * e[n - 2][giv] * G)
        theta[rel] = gam[rel] / (qs[rel] * e[n - 2][rel] * np.exp(logG[rel] - step[rel]))
    return theta  # a non-finite θ (a giver with nothing below it to hand to) is refused


def pair_plan(p: np.ndarray, q: np.ndarray, n: int, order: np.ndarray):
    r"""The ``cp-pair`` :class:`~mdsd_ot.verifiers.chain.plan.Plan` of one position (n >= 3),
    or a string saying why the design does not fit (the caller then designs ``cp-swap``).

    The plan's ``T`` is the rule's law by slot, ``s`` the accepted sub-law :math:`\min(s, T)`,
    ``pair`` the :class:`PairRule`; ``info`` records the scaling (``iterations``,
    ``shortfall``, ``history``), ``set_sum`` (the largest hand-over probability on a draft
    set), ``blocks``, ``prefix_error`` (the rounding bound of Q on the prefixes), the target
    path ``hold_back``, ``relay`` (``{"token", "share"}`` where the design that fits has a
    relay) and ``pair_retry`` (why the earlier tries of :data:`PAIR_TRIES` did not fit).
    """
    from .plan import _transfer, cp_products_underflow

    V = len(order)
    if n < 3 or V < 2:
        return "n < 3 or V < 2"
    qs, ps = q[order], p[order]
    if cp_products_underflow(qs, n):  # every n-set weight subnormal: no relative error bound
        return "products underflow"
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        e = cp_levels(qs, n)
        if not float(e[n][-1]) >= _NORMAL_EN**n:  # tiny e_n: ratios of 2^k q (same law)
            k = scale_exponent(qs, n)
            qs = np.ldexp(qs, k)
            e = cp_levels(qs, n)
        en = float(e[n][-1])
        if not (np.isfinite(en) and en > 0 and all(np.isfinite(x[-1]) for x in e)):
            return "elementary symmetric levels out of range"
        D = qs * e[n - 1][:-1] / en
        Q = e[n][1:] / en
    E = _transfer(ps, Q)[0].copy()  # the transfer path of the sub-law (Theorem 1)
    s = D + (E[1:] - E[:-1])
    np.minimum(s, ps, out=s)
    np.maximum(s, 0.0, out=s)
    q_err = 2.0 * (n * (V + 1) + 4) * EPS / (1.0 - (n * (V + 1) + 4) * EPS)
    return design_plan(p, q, n, order, "cp-pair", qs, e, en, D, s, E, q_err)


def design_plan(
    p: np.ndarray, q: np.ndarray, n: int, order: np.ndarray, construction: str,
    ws: np.ndarray, e: np.ndarray, en: float, D: np.ndarray, s: np.ndarray, E: np.ndarray,
    q_err: float, *, law_extra: float = 0.0, flow_rel: float = 0.0, extra_depth: int = 0,
    thin: Any = None,
):  # fmt: skip
    r"""The pair plan of a law whose hand-over kernel is :math:`M(y, x) = w_y w_x
    e_{n-2}(w 	ext{ on } H_y \setminus x) / e_n` (``ws`` the weights w by slot, ``e`` their
    levels :math:`e_m(H_k)`, ``en`` the normaliser), for the law's top law ``D``, sub-law ``s``
    and transfer path ``E`` (by slot and cut): the tries of :data:`PAIR_TRIES`, the a-priori
    law bound (plus ``law_extra``, the bound on D's own error, and ``flow_rel`` times the
    hand-over flow: a relative error of the sampler's hand-over probabilities), the plan
    ``construction`` with its :class:`PairRule` (``thin``: its :attr:`PairRule.thin`), or a
    string saying why not.  ``q_err`` is recorded as ``info["prefix_error"]``."""
    from .plan import UNCERTIFIED, Plan

    V = len(order)
    if not (np.all(ws >= 0) and np.all(np.isfinite(ws))):  # the bounds assume w >= 0
        return "kernel weights negative or not finite"
    reasons = []
    design = None
    tries = PAIR_TRIES_HEAVY if bool(heavy_receiver(q[order], D, s)) else PAIR_TRIES
    for hold, share in tries:
        if share and not all("not a rule" in r for r in reasons):
            continue  # relays make a rule of hand-overs that ask too much, nothing else
        out = _scaled(ws, e, n, D, s, _targets(E, hold), share, en)
        if not isinstance(out, str):
            design = out
            break
        reasons.append(f"{try_name(hold, share)}: {out}")
    if design is None:
        return "; ".join(reasons)
    theta, g, In, Out, T, Ep, blocks, lo, hi, hist, worst, relay = design
    if np.any(theta < 0) or np.any(g < 0):  # the law and the rule check assume θ, g >= 0
        return "negative hand-over factors"
    # a-priori rounding bound (§11): every level, flow and D is a sequential sum of
    # non-negative terms, n cumulative sums of at most V + 1 terms deep, times e_n; products
    # below the normal range add an absolute error
    handed = float(np.sum(g * In + theta * Out) / en)
    flows = float(np.sum(D)) + handed
    depth = 3 * n * (V + 2) + 6 * n + 16 + extra_depth
    law_error = 2.0 * depth * EPS / (1.0 - depth * EPS) * flows
    law_error += 8.0 * n * (V + 2) * _TINY / en + law_extra + flow_rel * handed
    if not law_error <= UNCERTIFIED:
        return f"law error bound {law_error:.3g} above {UNCERTIFIED:g}"
    Tall = D.copy()
    Tall[lo:hi] = T
    acc = np.minimum(s, Tall)
    np.maximum(acc, 0.0, out=acc)
    plan = Plan(
        construction, n, p, q, order, np.cumsum(q[order]), None, acc, None, None,
        float(acc.sum()), law_error,
    )  # fmt: skip
    plan.T = Tall
    th, gg = np.zeros(V), np.zeros(V)
    th[lo:hi], gg[lo:hi] = theta, g
    plan.pair = PairRule(th, gg, _block_ids(V, Ep, lo, hi), thin)
    plan.info.update(
        iterations=len(hist), shortfall=min(hist), history=hist, set_sum=worst,
        blocks=len(blocks), hold_back=hold, prefix_error=q_err,
    )  # fmt: skip
    if relay is not None:  # the relay's token id and its share of the flow below it
        plan.info["relay"] = {"token": int(order[relay]), "share": share}
    if reasons:
        plan.info["pair_retry"] = reasons
    return plan


def _scaled(qs, e, n, D, s, Ep, share: float = 0.0, en: float | None = None):
    """The scaling of :func:`pair_plan` for the targets ``Ep`` (E' on the cuts; ``en`` the
    kernel's normaliser, :math:`e_n` of ``qs`` by default): (θ, g, In,
    Out, T on the blocks' span, Ep, blocks, lo, hi, shortfalls, largest set sum, the relay's
    slot or None), or why not.  ``share`` > 0: the heaviest receiver with E' > 0 on the cut
    below it relays that share of that cut's flow; its θ stays at the product model's value
    and its g also covers what it hands over (g In = δ' e_n + θ Out at the relay)."""
    V = len(qs)
    en = float(e[n][-1]) if en is None else en
    Ep[0] = Ep[-1] = 0.0
    blocks = _blocks(Ep)
    lo = blocks[0][0] if blocks else 0
    hi = blocks[-1][1] if blocks else 0
    local = [(a - lo, b - lo) for a, b in blocks]  # the span of the blocks, as its own row
    ql, el = qs[lo:hi], e[:, lo : hi + 1]
    delta = Ep[lo:hi] - Ep[lo + 1 : hi + 1]
    noise = _NOISE * float(Ep.max(initial=0.0))  # rounding of E: no hand-over for it
    sig = np.where(delta > noise, delta, 0.0)
    dem = np.where(delta < -noise, -delta, 0.0)
    give = np.zeros(hi - lo)
    relay = None
    if share:
        cand = np.flatnonzero((dem > 0) & (Ep[lo:hi] > 0))
        if not cand.size:
            return "no receiver to relay"
        r = int(cand[np.argmax(ql[cand])])
        relay, give[r] = lo + r, share * float(Ep[lo + r])
    theta = _rank_one(ql, el, n, Ep[lo : hi + 1], give)
    if not np.all(np.isfinite(theta)):
        return "rank-one start out of range"
    th_relay = theta[relay - lo] if relay is not None else 0.0
    outside = float(
        np.sum(np.maximum(s[:lo] - D[:lo], 0.0)) + np.sum(np.maximum(s[hi:] - D[hi:], 0.0))
    )
    sl, Dl = s[lo:hi], D[lo:hi]
    tol = PAIR_TOL + 1e-15 * V
    hist: list[float] = []
    best = None
    g = np.zeros(hi - lo)
    In = Out = T = g
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for it in range(PAIR_ITERATIONS if blocks else 1):
            if blocks:
                In = _inflow(ql, el, n, local, theta)
                if relay is not None and it:  # what the relay hands over with the last g
                    give[relay - lo] = th_relay * Out[relay - lo] / en
                g = np.where(In > 0, (dem + give) * en / In, 0.0)
                Out = _outflow(ql, el, n, local, g)
                T = Dl + (g * In - theta * Out) / en
            short = outside + float(np.sum(np.maximum(sl - T, 0.0)))
            if not np.isfinite(short):
                break
            hist.append(short)
            if best is None or short < best[0]:
                best = (short, theta, g, In, Out, T)
            if short <= tol or (len(hist) > 3 and short > 0.5 * hist[-4]):
                break
            theta = np.where(Out > 0, sig * en / Out, 0.0)
            if relay is not None:
                theta[relay - lo] = th_relay
    if best is None:
        return "scaling out of range"
    short, theta, g, In, Out, T = best
    if short > tol:
        return f"scaling stopped at a shortfall of {short:.3g}"
    worst = set_sums(theta, g, ql, n, local)
    if not worst <= 1.0 - SET_MARGIN:
        return f"not a rule: a draft set would hand over with probability {worst:.6g}"
    return theta, g, In, Out, T, Ep, blocks, lo, hi, hist, worst, relay


#: The ways the bottom block's surplus 1 - α* is left with the givers (:func:`_targets`).
HOLD_BACK: tuple[str, ...] = ("min", "bottom")

#: The designs :func:`pair_plan` tries, in order, until the scaled hand-overs are a rule:
#: (target path, relay share): ``"min"``, ``"min"`` with a relay, ``"bottom"``, ``"bottom"``
#: with a relay, ``"min"`` with the second share.  The first relay comes right after the first
#: path: where a heavy receiver breaks the rule, the second path breaks it the same way
#: (measured), and every try costs a scaling.  A relay is tried only while every earlier try
#: failed the rule check (it is skipped otherwise; the target paths are always tried).
PAIR_TRIES: tuple[tuple[str, float], ...] = (
    (HOLD_BACK[0], 0.0), (HOLD_BACK[0], RELAY_SHARES[0]),
    *((hold, 0.0) for hold in HOLD_BACK[1:]), *((hold, RELAY_SHARES[0]) for hold in HOLD_BACK[1:]),
    *((HOLD_BACK[0], r) for r in RELAY_SHARES[1:]),
)  # fmt: skip


#: The order for rows with a *heavy receiver* (:func:`heavy_receiver`): the first relay first,
#: since the plain design is then almost never a rule (measured) and every try costs a scaling.
PAIR_TRIES_HEAVY: tuple[tuple[str, float], ...] = (
    PAIR_TRIES[1], PAIR_TRIES[0], *PAIR_TRIES[2:],
)  # fmt: skip

#: A receiver with at least this share of the draft's mass is heavy (:func:`heavy_receiver`).
HEAVY_RECEIVER: float = 0.5


def heavy_receiver(qs: Any, D: Any, s: Any) -> Any:
    """Whether some receiver (a slot with s > D) holds at least :data:`HEAVY_RECEIVER` of the
    draft's mass ``qs`` (by slot): it lies in most draft sets, and the plain separable design
    then asks more than 1 of the sets that hold it and another receiver.  (V,) rows give a
    0-d bool, (B, V) rows a (B,) bool array, of the rows' library and device (one predicate
    for :func:`pair_plan` and :func:`~.batched_pairs.pair_rows`).

    Examples
    --------
    >>> qs, D = np.array([0.2, 0.7, 0.1]), np.array([0.1, 0.5, 0.4])
    >>> bool(heavy_receiver(qs, D, s=np.array([0.1, 0.8, 0.1])))  # slot 1: q = 0.7, s > D
    True
    """
    xp = bk.namespace(qs)
    top = xp.max(xp.where(s > D, qs, xp.zeros_like(qs)), axis=-1)
    return top >= HEAVY_RECEIVER * xp.sum(qs, axis=-1)


def try_name(hold: str, share: float) -> str:
    """How a reason names a try of :data:`PAIR_TRIES`: ``"min"``, ``"min, relay 0.9"``."""
    return f"{hold}, relay {share:g}" if share else hold


def _targets(E: np.ndarray, hold: str) -> np.ndarray:
    r"""The transfer path the hand-overs realise, :math:`E'` on the cuts 0..V: E less the
    bottom block's surplus :math:`E_0 = 1 - \alpha^*`.  ``"min"``: the givers nearest the
    top of the surplus region give only what the demand below them needs,
    :math:`E'_c = E_c - \min_{c' \le c} E_{c'}`; ``"bottom"``: the lowest givers keep it,
    :math:`E'_c = E_c - E_0 + \min(E_0, \Sigma_c)`, :math:`\Sigma_c` the supply
    :math:`\sum_{k<c} (E_k - E_{k+1})^+` below the cut.  Either way a receiver's increment is
    its whole demand and a giver's at most its supply; ``"bottom"`` leaves fewer zero cuts in
    the bottom block (fewer blocks that must balance on their own), ``"min"`` shorter
    hand-overs.

    Examples
    --------
    >>> E = np.array([0.2, 0.5, 0.1, 0.4, 0.0])  # a surplus of 0.2 below the bottom slot
    >>> _targets(E, "min").round(12).tolist()  # a zero cut in the middle: two blocks
    [0.0, 0.3, 0.0, 0.3, 0.0]
    >>> _targets(E, "bottom").round(12).tolist()  # the lowest giver keeps 0.2: one block
    [0.0, 0.3, 0.1, 0.4, 0.0]
    """
    if hold == "min":
        return E - np.minimum.accumulate(E)
    sup = np.maximum(E[:-1] - E[1:], 0.0)
    below = np.concatenate([[0.0], np.cumsum(sup)])
    out = E - E[0] + np.minimum(E[0], below)
    np.maximum(out, 0.0, out=out)
    return out


def _block_ids(V: int, Ep: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Block id by slot on the span [lo, hi) of the blocks: the number of zero cuts of E'
    strictly inside the span below the slot, so two slots share an id iff no zero cut lies
    between them; 0 outside the span, where θ = g = 0 (no hand-over either way)."""
    ids = np.zeros(V, dtype=np.int64)
    if hi > lo:
        np.cumsum(Ep[lo:hi] == 0.0, out=ids[lo:hi])
    return ids
