r"""The bucket path of one float64 row after its histograms, in one compiled call (numba).

For the laws whose Q at a chain point is a short closed form of additive statistics
(:mod:`mdsd_ot.fast.chain`: ``with``, :math:`Q = q(H)^n`; ``without`` with n = 2,
:math:`Q = c S - S + c + [a \in H]\, q_a (c/\delta + S)`, c the light mass of H, S its odds
sum, a the heaviest token), the rest of :func:`mdsd_ot.fast.bucket.solve_bucketed` on a fused
route row is a few dozen small array operations: boundary values, bounds, the surviving run,
its tokens sorted and scanned.  :func:`solve_row` does them in one compiled call, in the order
and with the formulas of the array code (:func:`mdsd_ot.fast.bucket._phase1` and ``_phase2``):

.. math::

   f_j = P(H_{<j}) - Q(H_{<j}) \text{ at every bucket boundary}, \quad UB = \min_j f_j,
   \qquad \alpha^* = 1 + \min\bigl(UB, \min_{\text{survivors}} f, 0\bigr) .

It declines (returns None, and the array code runs) where that code would take another turn:
survivors that do not form one run of buckets, more survivors than
:data:`mdsd_ot.fast.bucket.MAX_FRACTION` of the row (the sorting path), survivors in the last
bucket (ratios +inf or NaN), or a NaN anywhere.  The tests compare both on the synthetic family
and the adversarial rows (α* to 1e-15, the same optimal set where it is unique).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import _fused

__all__ = ["LAWS", "serves", "solve_row"]

#: Law codes of the compiled evaluator: the chain kernel names it serves (n = 2 for without).
LAWS: dict[str, int] = {"with": 0, "without": 1, "conditional-poisson": 2}


@functools.cache
def _kernels() -> dict[str, Any] | None:
    """The compiled evaluator (:mod:`mdsd_ot.fast._fused_row_nb`), or None without numba."""
    if _fused._kernels() is None:
        return None
    from . import _fused_row_nb as nb

    return {"solve": nb.solve}


def serves(law: Any, shared: dict[str, Any], p: Any) -> bool:
    """Whether :func:`solve_row` takes this row: one float64 numpy row on the fused route
    (window buckets, exact counts), a law of :data:`LAWS` (without: n = 2), kernels on."""
    if law.kernel not in LAWS or (law.kernel == "without" and law.n != 2):
        return False
    return bool(shared.get("window")) and shared.get("Hn") is not None and _fused.one_row(p)


def solve_row(
    law: str,
    n: int,
    p: np.ndarray,
    q: np.ndarray,
    shared: dict[str, Any],
    hists: list[np.ndarray],
    ctx: dict[str, Any],
    sp: float,
    sq: float,
    edges: tuple[np.ndarray, np.ndarray],
    tol: float,
    max_fraction: float,
    return_set: bool,
    Nt: float = 1.0,
) -> tuple[float, np.ndarray | None] | None:
    r"""α* (and an optimal set) of one fused-route row from its histograms, or None (declined).

    ``law`` is a key of :data:`LAWS`; ``p``, ``q`` the raw (V,) row with sums ``sp``, ``sq``;
    ``shared`` the bucketing pass (:func:`mdsd_ot.fast.bucket._shared`: ``ids``, ``Hp``,
    ``Hn``), ``hists`` the law's histograms and ``ctx`` its setup (:mod:`mdsd_ot.fast.chain`:
    ``heavy``, ``hq``, ``scale``; conditional Poisson also ``EA`` and ``tau``, with ``Nt`` its
    :math:`e_n` of the whole row from :meth:`~mdsd_ot.fast.chain.ConditionalPoisson._totals`);
    ``edges`` the raw ratio edges of every bucket; ``tol`` the pruning slack.

    Examples
    --------
    The public call takes this route for one float64 row (with numba); the sorting path
    agrees:

    >>> from mdsd_ot.fast import alpha_star
    >>> from mdsd_ot.synthetic import synthetic_pair
    >>> p, q = synthetic_pair(8000, 1.0, 0)
    >>> a, b = (alpha_star(p, q, n=2, scheme="with", path=x) for x in ("bucket", "sort"))
    >>> round(a, 12), abs(a - b) <= 1e-12
    (0.835236091717, True)
    """
    k = _kernels()
    if k is None:
        return None
    ids = shared["ids"][0]
    Hs = np.ascontiguousarray(np.concatenate([h for h in hists], axis=0))
    hpos = np.ascontiguousarray(np.asarray(ctx["heavy"][0], dtype=np.int64))
    hbkt = ids[hpos].astype(np.int64)
    hmass = np.ascontiguousarray(np.asarray(ctx["hq"][0], dtype=np.float64))
    EA = ctx["EA"][0] if "EA" in ctx else np.zeros((1, 1))
    tau = float(ctx["tau"][0]) if "tau" in ctx else 1.0
    scale = float(ctx["scale"][0])
    status, best, UB, jb, bstar, cs, srt = k["solve"](
        LAWS[law], n, p, q, ids, shared["Hp"][0], shared["Hn"][0], Hs, hpos, hbkt, hmass,
        float(sp), float(sq), scale, edges[0], edges[1], float(tol), float(max_fraction),
        np.ascontiguousarray(EA, dtype=np.float64), float(Nt), tau,
    )  # fmt: skip
    if status:
        return None
    alpha = min(max(1.0 + min(best, 0.0), 0.0), 1.0)
    if not return_set:
        return alpha, None
    if best >= 0:
        return alpha, np.zeros(ids.shape[0], dtype=bool)
    if cs < 0:  # the optimum is a bucket boundary
        return alpha, ids < jb
    H = ids < bstar
    H[srt[: cs + 1]] = True
    return alpha, H
