r"""Independent oracles for the fast solver's tests: exact Q on every prefix, by other means.

:func:`exact_prefix_Q_without` computes Q(H_k) of the sequential without-replacement law on every
prefix by the exact positive subset recursion (docs/reference.md, the integral form's terms)

.. math::

   1 - Q(H_k) = q(H_k^c) \sum_{D \subseteq H_k,\ |D| \le n-1} G_D(0), \qquad
   G_D(0) = \frac{\sum_{x \in D} q(x)\, G_{D \setminus x}(0)}{T - q(D)},

in :math:`O(V^{n-1})`, in Fractions (exact) or in floats with every term positive.  It is a
*deliberately independent* re-computation: it shares no code with :mod:`mdsd_ot.fast` (neither
its backend layer, its double-double arithmetic, its heavy/light split nor its Taylor series)
and none with :mod:`mdsd_ot.drafts` (whose ``WithoutReplacement.Q`` enumerates ordered tuples, a
third route the tests also compare with).  It lives with the tests because only the tests use it.

Examples
--------
>>> exact_prefix_Q_without(["1/2", "3/10", "1/5"], 2)[2]
Fraction(18, 35)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from mdsd_ot._validate import is_rational_input

__all__ = ["exact_prefix_Q_without"]


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n: the number of drafts must be an integer >= 1, got {n!r}")
    return int(n)


def _dd_step(h: np.ndarray, lo: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(h, lo) <- (h, lo) - b with TwoSum (error-free on h, the error kept in lo)."""
    b = -b
    s = h + b
    bb = s - h
    e = (h - (s - bb)) + (b - bb)
    return s, lo + e


def _exact_generic(qv: list, n: int, one: Any) -> list:
    """R(H_k) = sum over D within H_k, |D| <= n-1, of G_D(0), by the positive recursion.

    Works for Fractions (exact) and floats; costs sum_a C(V, a) states.
    """
    if isinstance(one, Fraction):
        T = sum(qv, one - one)
        parts = [T]
    else:  # T as a double-double, so that T - q(D) keeps its relative accuracy
        T = math.fsum(qv)
        parts = [T, math.fsum(qv + [-T])]
    G: dict[tuple[int, ...], Any] = {(): one / T}
    by_size: list[list[tuple[int, ...]]] = [[()]] + [[] for _ in range(n - 1)]
    R = [one / T]
    acc = one / T
    for x, qx in enumerate(qv):
        if qx > 0:
            new: list[list[tuple[int, ...]]] = [[] for _ in range(n)]
            for a in range(1, n):
                for Dp in by_size[a - 1]:
                    D = Dp + (x,)
                    num = sum((qv[y] * G[D[:i] + D[i + 1 :]] for i, y in enumerate(D)), one - one)
                    rest = parts + [-qv[y] for y in D]
                    g = num / (
                        sum(rest, one - one) if isinstance(one, Fraction) else math.fsum(rest)
                    )
                    G[D] = g
                    new[a].append(D)
                    acc = acc + g
            for a in range(1, n):
                by_size[a].extend(new[a])
        R.append(acc)
    return R


def _exact_float34(q: np.ndarray, n: int) -> list[Fraction]:
    """R(H_k) for n = 3, 4 in vectorised float64 (positive terms only, exact prefix sums)."""
    V = q.shape[0]
    T_hi = math.fsum(q.tolist())
    T_lo = math.fsum(q.tolist() + [-T_hi])
    T = T_hi + T_lo
    h1, l1 = _dd_step(np.full(V, T_hi), np.full(V, T_lo), q)
    G1 = q / (T * (h1 + l1))
    h2, l2 = _dd_step(h1[:, None] + 0 * q[None, :], l1[:, None] + 0 * q[None, :], q[None, :])
    G2 = (q[:, None] * G1[None, :] + q[None, :] * G1[:, None]) / (h2 + l2)
    np.fill_diagonal(G2, 0.0)
    # new terms at prefix k+1: sets containing token k and earlier tokens only
    part = [Fraction(float(G1[k])) + Fraction(float(G2[k, :k].sum())) for k in range(V)]
    if n == 4:
        # triples y < z < k, grouped by their middle element z; (hi, lo) accumulation per k
        s_hi = np.zeros(V)
        s_lo = np.zeros(V)
        for z in range(1, V - 1):
            qk = q[z + 1 :]
            h, lo = _dd_step(h2[:z, z : z + 1], l2[:z, z : z + 1], qk[None, :])
            num = np.outer(G2[:z, z], qk)
            num += np.outer(q[:z], G2[z + 1 :, z])
            num += q[z] * G2[:z, z + 1 :]
            num /= h + lo
            col = num.sum(axis=0)
            a, b = s_hi[z + 1 :], col
            t = a + b
            bb = t - a
            s_lo[z + 1 :] += (a - (t - bb)) + (b - bb)
            s_hi[z + 1 :] = t
        part = [part[k] + Fraction(float(s_hi[k])) + Fraction(float(s_lo[k])) for k in range(V)]
    acc = Fraction(1) / Fraction(T)
    R = [acc]
    for k in range(V):
        acc = acc + part[k]
        R.append(acc)
    return R


def exact_prefix_Q_without(q_sorted: Any, n: int, *, exact: bool | None = None) -> Any:
    r"""Reference Q on every prefix by the exact positive recursion, :math:`O(V^{n-1})`.

    .. math::

       1 - Q(H_k) = q(H_k^c) \sum_{D \subseteq H_k,\ |D| \le n-1} G_D(0), \qquad
       G_D(0) = \frac{\sum_{x \in D} q(x)\, G_{D \setminus x}(0)}{T - q(D)}, \quad
       G_\emptyset(0) = \frac1T,

    (each term positive; :math:`\sum_{|D| = m} G_D(0) = I_m(H)` of docs/reference.md).  Summed along the
    prefixes incrementally: the terms new at prefix k are the sets containing token k.

    Parameters
    ----------
    q_sorted : (V,) array_like
        q in prefix order (floats; or Fractions / ``"a/b"`` strings for exact arithmetic).
    n : int
        Number of drafts (>= 1); q needs at least n positive entries.
    exact : bool, optional
        Compute in Fractions (default: when the input is rational).  Exact mode enumerates all
        :math:`\sum_{a<n}\binom{V}{a}` subsets in Python: small V only.  The float mode is
        vectorised for n = 3, 4 (V up to a few thousand for n = 3, several hundred for n = 4;
        positive terms, d(D) in double-double, prefix sums accumulated exactly, so the relative
        error of each term is a few ulps) and generic for other n.

    Returns
    -------
    (V+1,) ndarray of float64, or tuple of Fractions when ``exact``.

    Examples
    --------
    >>> exact_prefix_Q_without(["1/2", "3/10", "1/5"], 2)[2]
    Fraction(18, 35)
    >>> round(float(exact_prefix_Q_without([0.4, 0.1, 0.3, 0.2], 3)[3]), 12)  # 76/315
    0.24126984127
    """
    n = _check_n(n)
    if exact is None:
        exact = is_rational_input(q_sorted)
    if exact:
        qe = [
            Fraction(v)
            for v in (q_sorted if not isinstance(q_sorted, np.ndarray) else q_sorted.tolist())
        ]
        if any(v < 0 for v in qe):
            raise ValueError("q_sorted: entries must be >= 0")
    else:
        qf = np.asarray(q_sorted, dtype=np.float64)
        if qf.ndim != 1 or not np.all(np.isfinite(qf)) or np.any(qf < 0):
            raise ValueError("q_sorted: must be a 1-D vector of finite entries >= 0")
        qe = [Fraction(float(v)) for v in qf]
    support = sum(1 for v in qe if v > 0)
    if support < n:
        raise ValueError(
            f"q_sorted: sequential sampling without replacement draws n={n} distinct tokens but "
            f"only {support} have positive mass; use n <= {support}"
        )
    V = len(qe)
    lam = [Fraction(0)] * (V + 1)
    for k in range(V - 1, -1, -1):
        lam[k] = lam[k + 1] + qe[k]
    if exact:
        R = _exact_generic(qe, n, Fraction(1))
    elif n in (3, 4):
        R = _exact_float34(qf, n)
    else:
        R = [Fraction(float(r)) for r in _exact_generic([float(v) for v in qf], n, 1.0)]
    npos = 0
    out = []
    for k in range(V + 1):
        if k:
            npos += qe[k - 1] > 0
        out.append(Fraction(0) if npos < n else 1 - lam[k] * Fraction(R[k]))
    if exact:
        return tuple(out)
    return np.array([float(v) for v in out])
