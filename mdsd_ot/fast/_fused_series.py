r"""The bucket path of one float64 row for the sequential series (without, n >= 3), compiled.

The sequential draft without replacement with n >= 3 has no closed form for Q at a chain point:
the bucket path (:mod:`mdsd_ot.fast.bucket`) evaluates the certified series of
:mod:`mdsd_ot.fast.series` there, from the light power sums :math:`\pi_j`, the heavy count
``seg``, :math:`\lambda = q(H^c)` and the count of positive masses
(:class:`mdsd_ot.fast.chain.WithoutSeries`).  On one row the array code of the two phases
(:func:`~mdsd_ot.fast.bucket._phase1`, :func:`~mdsd_ot.fast.bucket._phase2`) is some sixty
small array operations; :func:`solve_row` does the same work in five calls after the law's
histograms:

1. the statistics at every bucket boundary j (one compiled loop),

   .. math:: P_j = \sum_{b < j} p_b, \quad \pi_{k, j} = \sum_{b < j} \sum_{y \in b \cap L}
             (q_y / \tau)^k, \quad \mathrm{seg}_j, \quad \lambda_j = \sum_{b \ge j} q_b,
             \quad \mathrm{cnt}_j ;

2. the series at the boundaries (:func:`mdsd_ot.fast.series.series_eval`, compiled for one row
   by :mod:`mdsd_ot.fast._series_jit`): :math:`Q_j` and its bound;
3. :math:`UB = \min_j (P_j - Q_j)`, the bounds of every bucket (the loop of
   :func:`mdsd_ot.fast._fused.bucket_bounds`), the surviving run, its tokens collected, sorted
   stably by p/q and their statistics continued from their bucket's boundary (one compiled call);
4. the series at the survivors;
5. :math:`\alpha^* = 1 + \min(UB, \min_{\text{survivors}} (P - Q), 0)` and the largest bound
   (one compiled call).

Each statistic is formed by the array code's floating-point operations in its order (its
cumulative sums term after term, the continued sums as ``boundary - E[first] + E[i + 1]``,
the suffix sums of q from the end), and the series is the same code, so Q, α* and the bound are
those of the array route bit for bit, but for the order of tied ratios among the survivors
(the array code may sort them unstably; this route keeps index order).  It declines (returns
None, and the array code runs) where that code would take another turn: survivors in several
runs of buckets, more survivors than :data:`mdsd_ot.fast.bucket.MAX_FRACTION` of the row (the
sorting path), survivors among infinite ratios, an infinite bound (the series refuses the row),
or a NaN anywhere.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from . import _fused, _series_jit
from . import _histograms as hg
from .series import series_eval

__all__ = ["serves", "solve_row"]


@functools.cache
def _kernels() -> dict[str, Any] | None:
    """The compiled kernels (:mod:`mdsd_ot.fast._fused_series_nb`), or None without numba."""
    if _fused._kernels() is None:
        return None
    from . import _fused_series_nb as nb

    return {"boundary": nb.boundary, "survivors": nb.survivors, "finish": nb.finish}


def serves(law: Any, shared: dict[str, Any], p: Any) -> bool:
    """Whether :func:`solve_row` takes this row: the sequential series (``without``, n >= 3),
    one float64 numpy row on the fused route (window buckets, exact counts), kernels on and the
    compiled series available (:func:`mdsd_ot.fast._series_jit.available`).

    Examples
    --------
    >>> from mdsd_ot.fast import bucket
    >>> from mdsd_ot.synthetic import synthetic_pair
    >>> p, q = synthetic_pair(6000, 1.0, 1)
    >>> law = bucket.chain_for("without", 3)
    >>> shared = bucket._shared(p[None], q[None], law.fused_sub_bits)
    >>> serves(law, shared, p[None]) == _series_jit.available()  # numba installed and on
    True
    >>> serves(bucket.chain_for("without", 2), shared, p[None])  # n = 2: the closed form
    False
    """
    if law.kernel != "without" or law.n < 3 or "lam" not in law.uses:
        return False
    if not (shared.get("window") and shared.get("Hn") is not None and _fused.one_row(p)):
        return False
    return _series_jit.available() and _kernels() is not None


def solve_row(
    p: np.ndarray,
    q: np.ndarray,
    shared: dict[str, Any],
    hists: list[np.ndarray],
    ctx: dict[str, Any],
    sp: float,
    sq: float,
    tol: float,
    max_fraction: float,
    return_set: bool,
) -> tuple[float, np.ndarray | None, float] | None:
    r"""α*, an optimal set and the series' bound of one fused-route row, or None (declined).

    ``p``, ``q`` are the raw (V,) row with sums ``sp``, ``sq``; ``shared`` the bucketing pass
    (:func:`mdsd_ot.fast.bucket._shared`: ``ids``, ``Hp``, ``Hn``, the bucket layout),
    ``hists`` the K power histograms of :math:`u = q_{light} / (\tau \sum q)` and ``ctx`` the
    series' setup (:meth:`mdsd_ot.fast.chain.WithoutSeries.setup`); ``tol`` the pruning slack.
    Returns ``(alpha, H, err)``: :math:`\alpha^* = \mathrm{clip}(1 + \min(UB, m_s, 0), 0, 1)`
    with UB the smallest :math:`f = P - Q` at a bucket boundary and :math:`m_s` over the
    survivors, H (``return_set``) the prefix attaining it (empty when α* = 1), and ``err`` the
    largest certified bound of the series at the points evaluated (the caller reports
    :math:`3\,err + tol`, as the array code does).

    Examples
    --------
    The public call takes this route for one float64 row (with numba); the sorting path
    agrees:

    >>> from mdsd_ot.fast import alpha_star
    >>> from mdsd_ot.synthetic import synthetic_pair
    >>> p, q = synthetic_pair(8000, 1.0, 0)
    >>> a, b = (alpha_star(p, q, n=3, scheme="without", path=x) for x in ("bucket", "sort"))
    >>> bool(abs(a - b) <= 1e-12), bool(0.0 < a < 1.0)
    (True, True)
    """
    k = _kernels()
    if k is None:
        return None
    ids = shared["ids"][0]
    Hn = shared["Hn"][0]
    Hs = np.concatenate(hists, axis=0)  # (K, NB), C-contiguous
    hpos = np.ascontiguousarray(ctx["heavy"][0], dtype=np.int64)
    hbkt = ids[hpos].astype(np.int64)
    hmass = np.ascontiguousarray(ctx["hq"][0], dtype=np.float64)
    tau = float(ctx["tau"][0])
    b0, b1, P, pi, seg, lam, cnt, hpn, qm, depth = k["boundary"](
        shared["Hp"][0], Hs, Hn, hbkt, hmass, sp, tau
    )
    Qb, Bb = series_eval(ctx, pi[None], seg[None], lam[None], cnt[None], depth, np)
    err_b = float(np.max(Bb))
    if not math.isfinite(err_b):  # the array code sorts the row (or meets the NaN)
        return None
    id0 = shared["id0"]
    lo, hi = hg.bucket_edges(p, shared["sub_bits"], shared["half_window"], b0 + id0, b1 + id0, True)
    status, UB, jb, srt, bs, P_s, pi_s, seg_s, lam_s, cnt_s = k["survivors"](
        P, Qb[0], hpn, qm, lo, hi, sq / sp, float(tol), float(max_fraction), ids, Hn, p, q,
        hpos, b0, sp, sq, tau, pi, seg, lam, cnt,
    )  # fmt: skip
    if status:
        return None
    best, err, cs = UB, err_b, -1
    C = srt.shape[0]
    if C:
        Qs, Bs = series_eval(ctx, pi_s[None], seg_s[None], lam_s[None], cnt_s[None], depth + C, np)
        occ = np.flatnonzero((hpn != 0) | (qm != 0))  # no mass after the last one's bucket:
        pin = bool(bs[-1] + 1 > (occ[-1] if occ.size else -1))  # f = 0 there (every token)
        ms, cs, err_s, bad = k["finish"](P_s, Qs[0], Bs[0], pin)
        if bad:
            return None
        if ms < UB:
            best = ms
        else:
            cs = -1
        err = max(err_b, err_s)
    alpha = min(max(1.0 + min(best, 0.0), 0.0), 1.0)
    if not return_set:
        return alpha, None, err
    if best >= 0:
        return alpha, np.zeros(ids.shape[0], dtype=bool), err
    if cs < 0:  # the optimum is a bucket boundary
        return alpha, ids < jb + b0, err
    H = ids < bs[cs] + b0
    H[srt[: cs + 1]] = True
    return alpha, H, err
