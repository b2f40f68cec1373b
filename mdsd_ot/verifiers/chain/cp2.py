r"""The ``cp2`` plan: conditional Poisson with n = 2 through the i.i.d. kernel (proofs/optimal_verifier.md, §3).

:math:`T^{CP} = (T^{iid} - q^2)/(1 - \sum q^2)` for every symmetric rule (Lemma 4), so the
i.i.d. kernel is built for the target :math:`(1 - \sum q^2)\, s^{CP} + q^2`, in p/q order when
the mass condition of Theorem 2(b) holds on every pair (:func:`fits`) and otherwise in the order
of that target's ratio to q (Theorem 3).

Examples
--------
>>> import numpy as np
>>> plan = cp2_plan(np.array([0.5, 0.5]), np.array([0.75, 0.25]), 2, np.array([1, 0]))
>>> plan.construction, round(plan.acceptance, 12)
('cp2', 1.0)
"""

from __future__ import annotations

import numpy as np

from ._arena import SCRATCH, kept
from ._passes import kernels
from .plan import Plan, _clip, _gather, _iid_err, _sublaw, _supply_demand
from .rows import Pairing, below, cp2_kernel_law

__all__ = ["KERNEL_LAW_TOL", "cp2_plan", "fits"]

#: Where the a-priori law error :math:`2(n^2 + 6n + 8)(V + 1)\varepsilon / 2e_2` exceeds this
#: (:math:`2e_2 = 1 - \sum q^2` small: q almost a point mass), the plan computes the law of the
#: rounded kernel itself (:func:`~.rows.cp2_kernel_law`, one pass over every slot's kernel row)
#: and reports that law's rounding bound instead.
KERNEL_LAW_TOL: float = 1e-6


def fits(pr: Pairing, d, rho: np.ndarray) -> bool:
    r"""The sufficient mass condition of the proof note on every pair (x, y) with a positive
    overlap: :math:`d_y \ge \rho_x` and :math:`d_x \le \rho_y` (d is increasing, so it is
    enough to check the lowest partner of each demand slot and the highest of each supply slot).
    ``d`` maps slots to slot rates."""
    V, ns, nd = pr.V, len(pr.js), len(pr.jd)
    if ns == 0 or nd == 0:
        return True
    first = np.searchsorted(pr.Ls, pr.Ld0, side="right")
    last = np.minimum(np.searchsorted(pr.Ls, pr.Ld, side="left"), ns - 1)
    has = first < ns
    x = V - 1 - pr.jd[has]
    ok_x = d(V - 1 - pr.js[last[has]]) >= rho[x]
    top = np.searchsorted(pr.Ld, pr.Ls0, side="right")
    has = top < nd
    has[has] &= pr.Ld0[top[has]] < pr.Ls[has]
    y = V - 1 - pr.js[has]
    ok_y = d(V - 1 - pr.jd[top[has]]) <= rho[y]
    return bool(ok_x.all() and ok_y.all())


def cp2_plan(p, q, n, order) -> Plan:
    r"""Conditional Poisson, n = 2, through the i.i.d. kernel (no cancellation: see the note).

    With the compiled passes (:mod:`._passes`) the V-size work is three loops (c and the e_2
    increments; D and F; top down E, dE, s, the supply and demand intervals and ρ), the same
    numbers as the numpy route; :math:`e_2 = \sum_k q_k c_{k-1}` stays numpy's pairwise sum."""
    kern = kernels()
    if kern is not None:
        ps, qs, s, c, pr, rho, two_e2 = _cp2_compiled(kern, p, q, order)
    else:
        ps, qs = _gather(p, q, order)
        V = len(qs)
        c = np.cumsum(qs, out=kept("c", V))
        w = SCRATCH.get("w", V)
        w[0] = 0.0
        np.multiply(c[:-1], qs[1:], out=w[1:])  # e_2 increments q_k c_{k-1} >= 0
        e2 = float(w.sum())
        w /= e2  # the conditional-Poisson law D of the deterministic rule
        s, dE = _sublaw(ps, np.cumsum(w, out=SCRATCH.get("W", V)), w)
        s = _clip(s, ps)
        two_e2 = 2.0 * e2
        live = int(np.count_nonzero(q))
        pr = _supply_demand(dE, q, qs, two_e2)
        rho = SCRATCH.get("rho", V)  # two_e2 s / q + q on the live slots, inf after them
        np.divide(s[:live], qs[:live], out=rho[:live])
        rho[:live] *= two_e2
        rho[:live] += qs[:live]
        rho[live:] = np.inf

    def d(k, c=c):  # c_k + c_{k-1}
        return c[k] + np.where(k > 0, c[np.maximum(k - 1, 0)], 0.0)

    resorted = not fits(pr, d, rho)
    if resorted:  # sort by the i.i.d. target's ratio t/q (nearly sorted already)
        o2 = np.argsort(rho, kind="stable")
        order, ps, qs, s = order[o2], ps[o2], qs[o2], s[o2]  # (rare: fresh arrays)
        c = np.cumsum(qs)
        gap = s - 2.0 * qs * below(c) / two_e2  # s - D_CP in the new order
        pr = _supply_demand(gap, q, qs, two_e2)
    plan = Plan(
        "cp2", 2, p, q, order, c, None, s, pr, two_e2, float(s.sum()),
        _iid_err(2, len(p)) / two_e2,
    )  # fmt: skip
    plan.info["resorted"] = resorted
    if plan.law_error > KERNEL_LAW_TOL:  # q almost a point mass: the rounded kernel's own law
        T, err = cp2_kernel_law(plan)
        plan.T = T
        plan.s = np.minimum(plan.s, T, out=plan.s)  # the thinning's sub-law min(s, T)
        plan.acceptance, plan.law_error = float(plan.s.sum()), err
        plan.info["kernel_law"] = True
    return plan


def _cp2_compiled(kern, p, q, order):
    """The V-size passes of :func:`cp2_plan` in compiled loops (same numbers as numpy)."""
    V = len(order)
    ps, qs = SCRATCH.get("ps", V), SCRATCH.get("qs", V)
    kern["gather"](p, q, order, ps, qs)
    c = kept("c", V)
    w = SCRATCH.get("w", V)
    live = kern["cp2_front"](ps, qs, c, w)
    e2 = float(w.sum())
    F = SCRATCH.get("F", V + 1)
    kern["cp2_mid"](ps, w, e2, F)
    two_e2 = 2.0 * e2
    plive = V if qs[-1] > 0 else live  # the pairing's live slots (as _supply_demand)
    s, dE = kept("s", V), SCRATCH.get("S", V + 1)[:V]
    js, jd = kept("js", plive, np.int64), kept("jd", plive, np.int64)
    Ls, Ls0 = kept("Ls", plive), kept("Ls0", plive)
    Ld, Ld0 = kept("Ld", plive), kept("Ld0", plive)
    _, nd, ns = kern["back"](F, w, ps, s, dE, plive, 1, two_e2, jd, Ld, Ld0, js, Ls, Ls0)
    pr = Pairing.compact(V, plive, (js[:ns], Ls[:ns], Ls0[:ns], jd[:nd], Ld[:nd], Ld0[:nd]))
    rho = SCRATCH.get("rho", V)
    kern["rho_of"](s, qs, two_e2, live, rho)
    return ps, qs, s, c, pr, rho, two_e2
