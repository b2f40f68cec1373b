r"""The heavy part of the certified series: exact moments over the heaviest tokens, and tables.

For the m heaviest tokens A of a row (in prefix order) and every heavy prefix set
:math:`A_s` (its first s tokens), :func:`heavy_moments` returns the scaled moments

.. math::

   \tilde J_{a,k}(s) = \tau^k k!\,[w^k] \sum_{D \subseteq A_s,\ |D| = a} G_D(w), \qquad
   G_\emptyset(w) = \frac{1}{T - w}, \quad
   G_D(w) = \frac{1}{d(D) - w} \sum_{x \in D} q(x)\, G_{D \setminus x}(w),

by the positive recursion of :mod:`mdsd_ot.fast.series` (every term positive, :math:`d(D) = T -
q(D)` as a sum of non-negative terms, :func:`complement`), over the subsets of A of size at most n - 1 enumerated once in colex
order (:func:`colex`).  The small exact tables of the series (Stirling numbers, cumulant
coefficients, the weights of the rounding bound) are here too.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
from array_api_compat import device

from . import _backend as bk
from . import _series_jit
from ._dd import U, cumsum_blocked, depth_cumsum

__all__ = [
    "stirling2",
    "kappa_table",
    "beta_weights",
    "n_subsets",
    "colex",
    "colex_tables",
    "complement",
    "heavy_moments",
]


@cache
def stirling2(k: int, i: int) -> int:
    """Stirling number of the second kind S(k, i) (exact integer)."""
    if k == i:
        return 1
    if i == 0 or i > k:
        return 0
    return i * stirling2(k - 1, i) + stirling2(k - 1, i - 1)


@cache
def kappa_table(K: int, n: int) -> np.ndarray:
    r""":math:`\kappa_{j,i}/j!` for j = 0..K, i = 0..n-1 (rounded once from exact rationals)."""
    tab = np.zeros((K + 1, n))
    for j in range(1, K + 1):
        for i in range(1, min(j, n - 1) + 1):
            exact = Fraction((-1) ** (i - 1) * math.factorial(i - 1) * stirling2(j, i))
            tab[j, i] = float(exact / math.factorial(j))
    tab.setflags(write=False)
    return tab


@cache
def beta_weights(n: int, K: int) -> np.ndarray:
    r""":math:`l!\,S(k, l)/k!` for l = 0..n-1, k = 0..K (row 0 unused), rounded once (read-only)."""
    w = np.zeros((n, K + 1))
    for l in range(1, n):
        for k in range(K + 1):
            w[l, k] = float(Fraction(math.factorial(l) * stirling2(k, l), math.factorial(k)))
    w.setflags(write=False)
    return w


def n_subsets(m: int, n: int) -> int:
    """Number of subsets of m tokens with at most n - 1 elements."""
    return sum(math.comb(m, a) for a in range(0, min(n - 1, m) + 1))


@cache
def colex(m: int, n: int) -> tuple:
    """Subsets of range(m) of sizes 1..min(n-1, m) in colex order, with gather tables.

    In colex order the subsets of the first s elements come first (there are C(s, a) of
    them), and the rank of a sorted subset (c_1 < ... < c_a) is sum_i C(c_i, i).  Returns, per
    size a: the subsets (N_a, a), for each r the colex rank of the subset less its r-th element
    (N_a,), and the number of subsets inside the first s elements, s = 0..m (m+1,).
    """
    Bin = np.array([[math.comb(c, i) for i in range(n + 1)] for c in range(m + 1)], dtype=np.int64)
    layers = [np.zeros((1, 0), dtype=np.int64)]
    for a in range(1, min(n - 1, m) + 1):
        prev = layers[-1]
        parts = [
            np.hstack([prev[: Bin[c, a - 1]], np.full((Bin[c, a - 1], 1), c, dtype=np.int64)])
            for c in range(a - 1, m)
        ]
        layers.append(np.concatenate(parts))
    out = []
    s_all = np.arange(m + 1)
    for a in range(1, len(layers)):
        sub = layers[a]
        ranks = []
        for r in range(a):
            rank = np.zeros(sub.shape[0], dtype=np.int64)
            for i in range(a):
                if i < r:
                    rank += Bin[sub[:, i], i + 1]
                elif i > r:
                    rank += Bin[sub[:, i], i]
            ranks.append(rank)
        out.append((sub, np.stack(ranks), Bin[s_all, a].copy()))
    return tuple(out)


@cache
def colex_tables(m: int, n: int) -> tuple[np.ndarray, ...]:
    """The layers of :func:`colex` flattened for the compiled moments of one row
    (:func:`mdsd_ot.fast._series_jit.heavy_moments_row`).

    Returns (Ns, offs, sub, ranks, cols, depths): per layer a = 1..L its number of subsets N_a
    and its offset into the next two; the subsets (row-major, N_a x a) and the ranks (a x N_a)
    of every layer one after the other; the counts per heavy prefix (L, m + 1); the rounding
    depths :func:`mdsd_ot.fast._dd.depth_cumsum` (N_a) of the layers' cumulative sums.

    Examples
    --------
    >>> Ns, offs, sub, ranks, cols, depths = colex_tables(3, 3)
    >>> Ns.tolist(), offs.tolist(), sub.tolist(), cols.tolist(), depths.tolist()
    ([3, 3], [0, 3], [0, 1, 2, 0, 1, 0, 2, 1, 2], [[0, 1, 2, 3], [0, 0, 1, 3]], [2, 2])
    """
    layers = colex(m, n)
    Ns = np.array([lay[0].shape[0] for lay in layers], dtype=np.int64)
    sizes = np.array([lay[0].size for lay in layers], dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    sub = np.concatenate([lay[0].reshape(-1) for lay in layers] or [np.zeros(0, np.int64)])
    ranks = np.concatenate([lay[1].reshape(-1) for lay in layers] or [np.zeros(0, np.int64)])
    cols = np.stack([lay[2] for lay in layers]) if layers else np.zeros((0, m + 1), np.int64)
    depths = np.array([depth_cumsum(int(N)) for N in Ns], dtype=np.int64)
    out = (Ns, offs, sub.astype(np.int64), ranks.astype(np.int64), cols.astype(np.int64), depths)
    for x in out:
        x.setflags(write=False)
    return out


def complement(delta_a: Any, top_a: Any, qs: Any, xp: Any) -> Any:
    r""":math:`d(D) = T - q(D)` for subsets D of size a, as a sum of non-negative terms.

    With :math:`t_1 \ge \dots \ge t_a` the a largest masses of the row (``top_a``, (B, a)),
    :math:`\delta_a = T - \sum_i t_i` (the mass outside them, summed directly, (B,)) and
    :math:`s_1 \ge \dots \ge s_a` the masses of D sorted (``qs``, (B, N, a), any order),

    .. math:: d(D) = \delta_a + \sum_{i=1}^{a} (t_i - s_i), \qquad t_i \ge s_i,

    every term non-negative and every difference correctly rounded, so d(D) keeps its relative
    accuracy however small it is (a double-double ``T - q(D)`` loses it below about 1e-32 T).
    """
    s = qs if qs.shape[-1] == 1 else -xp.sort(-qs, axis=-1)  # descending
    return delta_a[:, None] + xp.sum(top_a[:, None, :] - s, axis=-1)


def heavy_moments(
    qA: Any, T: Any, delta: Any, top: Any, theta_d: Any, tau: Any, K: int, n: int, xp: Any
) -> tuple[Any, Any]:
    r"""Scaled moments :math:`\tilde J_{a,k}(s) = \tau^k k!\,[w^k] \sum_{D \subseteq A_s,|D|=a} G_D`.

    ``qA`` (B, m) holds the heavy masses of each row in prefix order; :math:`A_s` is its first s
    entries.  Returns ``J`` of shape (B, n, K+1, m+1) (zero where a > s) and the rounding depth
    D_J (B,): every entry is the exact value times :math:`(1+\theta)`,
    :math:`|\theta| \le \gamma_{D_J}`.  ``theta_d`` (B,) bounds the relative error of every
    computed :math:`d(D)` (:func:`complement`, from the masses ``delta`` (B, n) outside the
    ``top`` (B, n - 1) largest masses).

    One float64 numpy row with the compiled kernels on (extra ``[jit]``) runs
    :func:`mdsd_ot.fast._series_jit.heavy_moments_row`: the same operations in the same order,
    the same result bit for bit.

    Examples
    --------
    >>> qA, T = np.array([[0.5, 0.3]]), np.ones(1)
    >>> delta, top = np.array([[1.0, 0.5, 0.2]]), np.array([[0.5, 0.3]])
    >>> J, D_J = heavy_moments(qA, T, delta, top, np.zeros(1), np.full(1, 0.1), 2, 3, np)
    >>> J.shape, float(J[0, 0, 0, 0])  # (B, n, K+1, m+1); J_0,0 = 1/T
    ((1, 3, 3, 3), 1.0)
    """
    B, m = qA.shape
    if B == 1 and _series_jit.rows_ok(K, qA, T, delta, top, theta_d, tau):
        return _series_jit.heavy_moments_row(
            qA, T, delta, top, theta_d, tau, K, n, colex_tables(m, n)
        )
    step = theta_d / U + 4.0  # per Taylor order: k*tau, product, sum, division (+ error of d)
    kt = [k * tau for k in range(K + 1)]  # (B,) each
    g_cols = [1.0 / T]
    for k in range(1, K + 1):
        g_cols.append(kt[k] * g_cols[-1] / T)
    g = xp.stack(g_cols, axis=-1)[:, None, :]  # (B, 1, K+1): the empty set
    zero_s = xp.zeros((B, K + 1, m + 1), dtype=qA.dtype, device=device(qA))
    J = [g[:, 0, :, None] + zero_s]
    Dg = (K + 1) * step
    D_J = Dg
    for a, layer in enumerate(colex(m, n), start=1):
        sub = bk.const(qA, ("sub", m, n, a), lambda layer=layer: layer[0])
        ranks = bk.const(qA, ("ranks", m, n, a), lambda layer=layer: layer[1])
        cols = bk.const(qA, ("cols", m, n, a), lambda layer=layer: layer[2])
        N = sub.shape[0]
        qs = xp.reshape(xp.take(qA, xp.reshape(sub, (-1,)), axis=1), (B, N, a))
        d = complement(delta[:, a], top[:, :a], qs, xp)  # (B, N)
        f = qs[:, :, 0:1] * xp.take(g, ranks[0], axis=1)
        for r in range(1, a):
            f = f + qs[:, :, r : r + 1] * xp.take(g, ranks[r], axis=1)
        cols_g = [f[:, :, 0] / d]
        for k in range(1, K + 1):
            cols_g.append((f[:, :, k] + kt[k][:, None] * cols_g[-1]) / d)
        g = xp.stack(cols_g, axis=-1)  # (B, N, K+1)
        Dg = Dg + a + (K + 1) * step
        P = bk.exclusive(
            cumsum_blocked(xp.permute_dims(g, (0, 2, 1)), xp), xp
        )  # (B, K+1, N+1), colex
        J.append(xp.take(P, cols, axis=2))
        D_J = xp.maximum(D_J, Dg + depth_cumsum(N))
    for _ in range(len(J), n):
        J.append(zero_s)
    return xp.stack(J, axis=1), D_J
