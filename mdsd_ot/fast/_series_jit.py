r"""The certified series of one numpy float64 row, compiled: heavy moments, setup, evaluation.

:mod:`mdsd_ot.fast.series` and :mod:`mdsd_ot.fast._moments` form the series with arrays,
whatever the batch.  For one row (B = 1) of a few heavy tokens, most of that time is numpy's
per-call overhead (about a hundred small array operations per row, each on a few hundred
entries).  With numba (``pip install 'mdsd-ot[jit]'``) the functions here do the same work in
a few compiled loops:

- :func:`deltas_row` — the complements :math:`\delta_a` of the top sets, their accuracy
  :math:`\theta_d` and the scale :math:`\tau` of :func:`mdsd_ot.fast.series.series_setup`;
- :func:`heavy_moments_row` — :func:`mdsd_ot.fast._moments.heavy_moments`, with
  :func:`mdsd_ot.fast._moments.complement` and the blocked cumulative sums of
  :func:`mdsd_ot.fast._dd.cumsum_blocked` (the same blocks, read at the heavy prefixes only);
- :func:`setup_tail_row` — the rest of :func:`mdsd_ot.fast.series.series_setup` from the
  moments: the cumulated moments :math:`\hat J`, the bound's weights and the Hankel matrix;
- :func:`eval_row` — :func:`mdsd_ot.fast.series.series_eval` at C points, in two loops around
  the array code's own ``np.einsum`` (the products :math:`H c`: numpy's summation order there
  depends on its SIMD build, fused multiply-adds or not, so it is not re-implemented).

Every quantity is formed by the same floating-point operations, in the same order, as the
array code: elementwise formulas term by term; numpy's sums along an axis as numpy performs
them (from 0, term after term, or, when the summed axis is the inner loop of numpy's reduction,
numpy's pairwise blocks of eight: the last axis, or the middle one of a (1, K+1, C) array with
C = 1; ``pi`` must then be C-contiguous, as its callers form it, and the array code runs
otherwise); the blocked cumulative sums block by block.  Only the order *across* independent
entries changes (the loops over subsets and points are the inner ones, so that they vectorise),
which changes no value.  The results are therefore *bit-identical* (tested,
``tests/fast/test_series_jit.py``), and the rounding depths counted by the bound hold unchanged.
numba runs without ``fastmath``, so LLVM neither reassociates sums nor contracts products and
sums into fused multiply-adds.

The callers use these functions only for one float64 numpy row with the kernels on
(:func:`mdsd_ot.fast._fused.enabled`, not inside :func:`disabled`); batches, torch, rows
without numba and ``MDSD_OT_JIT=0`` keep the array code.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any

import numpy as np

from . import _fused

__all__ = [
    "available",
    "disabled",
    "rows_ok",
    "deltas_row",
    "heavy_moments_row",
    "setup_tail_row",
    "eval_row",
]

_U = 2.0**-53
_OFF = {"force": False}


def available() -> bool:
    """Whether the compiled series runs: the fused kernels are on
    (:func:`mdsd_ot.fast._fused.enabled`) and not inside :func:`disabled`.

    Examples
    --------
    >>> with disabled():
    ...     available()
    False
    """
    return not _OFF["force"] and _fused.enabled() and _kernels() is not None


def disabled() -> contextlib.AbstractContextManager[None]:
    """Run the block with the series' array code, the other fused kernels still on (the tests
    compare the two routes of the series on the same inputs, bit for bit)."""
    return _fused.forced_off(_OFF)


def rows_ok(K: int, *xs: Any) -> bool:
    """Whether every ``x`` is a float64 numpy array of one row (shape (1, ...)), the Taylor
    order is at most 127 (numpy sums the K + 1 terms of a moment in one pairwise block) and the
    compiled series runs: the inputs this module takes.

    Examples
    --------
    >>> rows_ok(8, np.zeros((2, 3))), rows_ok(8, np.zeros((1, 3), dtype=np.float32))
    (False, False)
    """
    if K + 1 > 128:
        return False
    for x in xs:
        if not (
            isinstance(x, np.ndarray) and x.ndim >= 1 and x.shape[0] == 1 and x.dtype == np.float64
        ):
            return False
    return available()


@functools.cache
def _kernels() -> dict[str, Any] | None:
    """The compiled kernels (:mod:`mdsd_ot.fast._series_nb`, compiled or loaded from numba's
    disk cache on first call), or None when numba is not installed."""
    if _fused.jit_decorator() is None:
        return None
    from . import _series_nb as nb

    return {
        "pre": nb.pre,
        "moments": nb.moments,
        "tail": nb.tail,
        "eval_a": nb.eval_a,
        "eval_b": nb.eval_b,
        "cumsum_cols": nb.cumsum_cols,
        "cumsum_at": nb.cumsum_at,
        "sum_k": nb.sum_k,
        "np_sum": nb.np_sum,
    }


def heavy_moments_row(
    qA: np.ndarray,
    T: np.ndarray,
    delta: np.ndarray,
    top: np.ndarray,
    theta_d: np.ndarray,
    tau: np.ndarray,
    K: int,
    n: int,
    tables: tuple[np.ndarray, ...],
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`mdsd_ot.fast._moments.heavy_moments` of one row, compiled: ``(J, D_J)``.

    The same recursion over the colex subsets of the m heavy tokens,

    .. math:: \tilde G_D(k) = \frac{\sum_{x \in D} q(x)\, \tilde G_{D \setminus x}(k)
              + k\tau\, \tilde G_D(k - 1)}{d(D)}, \qquad
              d(D) = \delta_a + \sum_{i=1}^{a} (t_i - s_i),

    with the same operations in the same order (bit-identical ``J`` (1, n, K+1, m+1) and
    ``D_J`` (1,)).  ``tables`` = (Ns, offs, sub, ranks, cols, depths): the colex layers of
    :func:`mdsd_ot.fast._moments.colex` flattened (sizes, offsets, the subsets and the ranks of
    each layer one after the other, the per-prefix counts (L, m+1) and the depths of the
    layers' cumulative sums).

    Examples
    --------
    >>> from mdsd_ot.fast._moments import colex_tables, heavy_moments
    >>> qA, T = np.array([[0.5, 0.3]]), np.ones(1)
    >>> delta, top = np.array([[1.0, 0.5, 0.2]]), np.array([[0.5, 0.3]])
    >>> th, tau = np.full(1, 1e-15), np.full(1, 0.1)
    >>> J, D = heavy_moments(qA, T, delta, top, th, tau, 2, 3, np)
    >>> if available():
    ...     J2, D2 = heavy_moments_row(qA, T, delta, top, th, tau, 2, 3, colex_tables(2, 3))
    ... else:
    ...     J2, D2 = J, D
    >>> bool(np.array_equal(J, J2)), bool(np.array_equal(D, D2))
    (True, True)
    """
    Ns, offs, sub, ranks, cols, depths = tables
    J, D_J = _kernels()["moments"](
        np.ascontiguousarray(qA[0]),
        float(T[0]),
        np.ascontiguousarray(delta[0]),
        np.ascontiguousarray(top[0]),
        float(theta_d[0]),
        float(tau[0]),
        int(K),
        int(n),
        Ns,
        offs,
        sub,
        ranks,
        cols,
        depths,
    )
    return J[None], np.array([D_J])


def deltas_row(
    qtop: np.ndarray,
    m: int,
    n: int,
    L: tuple[np.ndarray, np.ndarray, np.ndarray],
    T: np.ndarray,
    T_eta: np.ndarray,
    tau: np.ndarray,
    light: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""The complements of the top sets and their accuracy, one row, compiled (as
    :func:`mdsd_ot.fast.series.series_setup` forms them):

    .. math:: \delta_a = \sum_{j > a} t_j + q(L), \qquad
              \theta_d = 1.01\,(\gamma_{m + 3n + 4} + \eta_L / q(L) + \eta_T / T), \qquad
              \delta^{lo}_a = \delta_a (1 - 2\theta_d),

    with :math:`t_1 \ge \dots \ge t_m` the heavy masses (``qtop`` (1, >= m)) summed from the
    smallest, ``L`` = (hi, lo, eta) the light total; the scale ``tau`` becomes
    :math:`\delta^{lo}_{n-1}` on a row without light mass (``light`` False).  Returns
    ``(delta, theta_d, delta_lo, tau)`` as (1, n), (1,), (1, n), (1,) arrays, bit-identical to
    the array code's.

    Examples
    --------
    >>> L = (np.full(1, 0.25), np.zeros(1), np.zeros(1))
    >>> one = np.ones(1)
    >>> if available():
    ...     d, th, dlo, tau = deltas_row(np.array([[0.5, 0.25]]), 2, 3, L, one, 0 * one,
    ...                                  np.full(1, 0.1), np.ones(1, dtype=bool))
    ...     print(d.tolist())
    ... else:
    ...     print([[1.0, 0.5, 0.25]])
    [[1.0, 0.5, 0.25]]
    """
    qL = float(L[0][0] + L[1][0])
    g0 = float(m + 3 * n + 4) * _U / (1.0 - float(m + 3 * n + 4) * _U)
    delta, theta_d, delta_lo, tau2 = _kernels()["pre"](
        np.ascontiguousarray(qtop[0]),
        int(m),
        int(n),
        qL,
        float(L[2][0]),
        float(T[0]),
        float(T_eta[0]),
        float(tau[0]),
        bool(light[0]),
        g0,
    )
    return delta[None], np.array([theta_d]), delta_lo[None], np.array([tau2])


@functools.cache
def _tail_consts(n: int, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The Python constants of the bound's tail, rounded as the array code rounds them:
    :math:`l^K / l!`, :math:`\\binom{K+1+a}{a}`, :math:`(K+2+a)/(K+2)` and :math:`K!`."""
    lk = np.array([float(l) ** K / math.factorial(l) for l in range(n)])
    comb_a = np.array([float(math.comb(K + 1 + a, a)) for a in range(n)])
    rfac = np.array([(K + 2 + a) / (K + 2) for a in range(n)])
    return lk, comb_a, rfac, float(math.factorial(K))


def setup_tail_row(
    J: np.ndarray,
    D_J: np.ndarray,
    tau: np.ndarray,
    light: np.ndarray,
    delta_lo: np.ndarray,
    wts: np.ndarray,
    K: int,
    n: int,
) -> dict[str, np.ndarray]:
    r"""The part of :func:`mdsd_ot.fast.series.series_setup` after the moments, one row, compiled.

    From ``J`` (1, n, K+1, m+1) and ``D_J`` (1,): the cumulated moments
    :math:`\hat J_{l} = \sum_{a \le n-1-l} \tilde J_a` (``Jh``), the depth ``D_J + n``, the
    bound's weights :math:`\beta_l = (1 + 2\gamma_{D_J})\,1.01 \sum_k w_{l,k} \hat J_{l,k}` and
    the tail coefficients ``tcoef``, ``J0`` and the Hankel matrix ``Ht`` of :math:`\hat J_{n-1}`
    at the empty heavy set (``wts`` = :func:`mdsd_ot.fast._moments.beta_weights`).  The entries
    are bit-identical to the array code's.

    Examples
    --------
    >>> from mdsd_ot.fast.series import series_setup
    >>> q = np.array([[0.4, 0.1, 0.3, 0.2]])
    >>> ctx = series_setup(q, 3, np, 4, 4)
    >>> ctx["Jh"].shape, ctx["beta"].shape, ctx["Ht"].shape
    ((1, 3, 5, 5), (1, 3, 5), (1, 5, 5))
    """
    lk, comb_a, rfac, factK = _tail_consts(n, K)
    Jh, D, beta, tcoef, Ht = _kernels()["tail"](
        np.ascontiguousarray(J[0]),
        float(D_J[0]),
        float(tau[0]),
        bool(light[0]),
        np.ascontiguousarray(delta_lo[0]),
        int(K),
        int(n),
        np.ascontiguousarray(wts, dtype=np.float64),
        lk,
        comb_a,
        rfac,
        factK,
    )
    Jh = Jh[None]
    return {
        "Jh": Jh,
        "J0": Jh[:, n - 1, :, 0],
        "Ht": Ht[None],
        "beta": beta[None],
        "tcoef": tcoef[None],
        "D_J": np.array([D]),
    }


def eval_row(
    ctx: dict[str, Any],
    pi: np.ndarray,
    sg: np.ndarray,
    lm: np.ndarray,
    npos: np.ndarray,
    D_cum: int,
    D_Lam: int,
    D_arith: int,
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`mdsd_ot.fast.series.series_eval` of one row, compiled: (Q, bound), both (1, C).

    Per point, the light cumulants :math:`\Lambda_i = \kappa_{\cdot, i}\,\pi`, the recursion
    :math:`l\,c_l = \sum_i i\,\Lambda_i c_{l-i}`, the sum
    :math:`S = \hat J_{0,0} + \sum_l \langle c_l, \hat J_l \rangle + \text{top}/(n-1)` and the
    bound :math:`\gamma_D \lambda S_{abs} + \lambda\,\mathrm{tail} + u`, by the array code's
    operations in its order; the products of the Hankel matrix with :math:`c_{n-1-i}` are the
    array code's own ``np.einsum`` calls, between the two compiled loops.  ``D_Lam`` and
    ``D_arith`` are the depths that :func:`mdsd_ot.fast.series.series_eval` counts.

    Examples
    --------
    >>> from mdsd_ot.fast.series import series
    >>> q = np.array([[0.4, 0.1, 0.3, 0.2]])
    >>> with disabled():  # the array code of the series
    ...     Q0, e0 = series(q, 3, np)
    >>> Q1, e1 = series(q, 3, np)  # compiled where numba is installed
    >>> bool(np.array_equal(Q0, Q1)), bool(np.array_equal(e0, e1))
    (True, True)
    """
    n, K = ctx["n"], ctx["K"]
    k = _kernels()
    pi2 = np.ascontiguousarray(pi[0])
    sg1 = np.ascontiguousarray(sg[0], dtype=np.int64)
    cc, S = k["eval_a"](pi2, sg1, ctx["Jh"][0], ctx["kap"], n, K)
    M = np.empty_like(cc)  # M[i] = Ht @ c[n - 1 - i], i = 1..n-2 (M[0] unused)
    Ht = ctx["Ht"]
    for i in range(1, n - 1):  # the array code's products, by numpy itself
        M[i] = np.einsum("bij,bjk->bik", Ht, cc[n - 1 - i][None])[0]
    D_J = float(ctx["D_J"][0])
    x = float(D_cum + 1) + D_J
    x = x + float((n - 1) * D_Lam)
    x = x + float(D_arith)
    D = 1.25 * x + 20.0
    gD = D * _U / (1.0 - D * _U)
    return k["eval_b"](
        pi2,
        sg1,
        np.ascontiguousarray(lm[0]),
        np.ascontiguousarray(npos[0], dtype=np.int64),
        np.ascontiguousarray(ctx["kap"], dtype=np.float64),
        S,
        M,
        np.ascontiguousarray(ctx["J0"][0]),
        np.ascontiguousarray(ctx["beta"][0]),
        np.ascontiguousarray(ctx["tcoef"][0]),
        n,
        K,
        gD,
    )
