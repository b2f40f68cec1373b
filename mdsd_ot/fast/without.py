r"""Sequential sampling without replacement: Q on every prefix, with a certified error bound.

For the sequential without-replacement law (theory.md, "Draft constructions"; not the
conditional-Poisson law, T12) and a fixed order of the tokens, :func:`prefix_Q_without` returns

.. math::

   Q(H_k) = \Pr[\text{all } n \text{ sequential draws lie in } H_k], \qquad
   H_k = \{\text{first } k \text{ tokens}\}, \quad k = 0, \dots, V,

together with a rigorous bound on :math:`|\hat Q(H_k) - Q(H_k)|` over all k (truncation *and*
floating-point rounding).  This is the inner loop of the T7 prefix scan for ``scheme="without"``.

The formula
-----------
With :math:`T = \sum_x q(x)` (the law is that of :math:`q / T`), :math:`\lambda = q(H^c)` and the
exponential-clock identity of theory.md,

.. math::

   1 - Q(H) = \lambda \sum_{m=0}^{n-1} R_m(H), \qquad
   R_m(H) = \int_0^\infty e^{-Tt}\, e_m\bigl(\{e^{q(x) t} - 1\}_{x \in H}\bigr)\, dt .

Every term is positive.  :math:`R_m(H) = \sum_{D \subseteq H, |D| = m} G_D(0)` with the positive
recursion (integrate :math:`e^{-(T-w)t}\prod_{x\in D}(e^{q(x)t}-1)` by parts)

.. math::

   G_\emptyset(w) = \frac{1}{T - w}, \qquad
   G_D(w) = \frac{1}{d(D) - w} \sum_{x \in D} q(x)\, G_{D \setminus x}(w), \qquad
   d(D) = T - q(D) = q(D^c),

whose Taylor coefficients :math:`J_{a,k} = k!\,[w^k] \sum_{|D| = a} G_D` are the moments
:math:`\int t^k e^{-Tt} e_a dt`.  A direct evaluation costs :math:`O(V^{n-1})`
(:func:`exact_prefix_Q_without`, the reference).

The method: exact heavy tokens, certified Taylor series over the light ones
---------------------------------------------------------------------------
Split the vocabulary into the ``m`` heaviest tokens A (:math:`m \ge n - 1`) and the light ones
L, all with :math:`q \le \tau` (:math:`\tau` = the largest light mass).  Since
:math:`e_m(H) = \sum_{a + l = m} e_a(A \cap H)\, e_l(L \cap H)` and
:math:`e_l(\{e^{q(y)t} - 1\}_{y \in L}) = \sum_k c_{l,k} t^k` with :math:`c_{l,k} \ge 0`,

.. math::

   1 - Q(H) = \lambda \sum_{l=0}^{n-1} \sum_{k \ge l} c_{l,k}(L \cap H)\,
   \hat J_{l,k}(A \cap H), \qquad \hat J_{l,k} = \sum_{a=0}^{n-1-l} J_{a,k}.

- **Heavy part** (exact, no cancellation): :math:`J_{a,k}(A \cap H)` by the positive recursion
  above over the subsets of A of size :math:`\le n-1` (enumerated once, in colex order so that the
  subsets inside the first s heavy tokens are a prefix), :math:`d(D)` in double-double so that it
  has full relative accuracy even when :math:`T - q(D)` is tiny.  Along the prefixes the heavy
  set changes only ``m`` times, so this costs :math:`O(\binom{m}{\le n-1} K)`, independent of V.
- **Light part** (vectorised over the V prefixes): with :math:`u = q/\tau \le 1` and the prefix
  power sums :math:`\pi_j(L \cap H_k) = \sum u^j` (``K`` cumulative sums, the only O(V) work
  besides elementwise products),

  .. math::

     \sum_{l, k} \tilde c_{l,k} z^l s^k = \prod_y \bigl(1 + z(e^{u_y s} - 1)\bigr)
     = \exp\Bigl(\sum_{j \ge 1} \pi_j \kappa_j(z) \frac{s^j}{j!}\Bigr),
     \qquad \kappa_j(z) = \sum_{i=1}^{j} (-1)^{i-1} (i-1)!\, S(j, i)\, z^i

  (:math:`\kappa_j` the Bernoulli(z) cumulants, S Stirling numbers of the second kind), truncated
  at :math:`z^{n-1}` and :math:`s^K`, via :math:`l\,c_l = \sum_i i\,\Lambda_i c_{l-i}` (the top
  level :math:`l = n - 1` only needs a bilinear form with the fixed Hankel matrix of
  :math:`J_{0,\cdot}`, one small matrix product).
- **Truncation bound.** :math:`c_{l,k} \le \pi_1^l\, l^k / (l!\,k!)` (scaled) and
  :math:`J_{a,k}/k! \le \binom{k+a}{a} (\tau/\delta_a)^{k-K} J_{a,K}/K!` with
  :math:`\delta_a = T - (\text{top } a \text{ masses}) \le d(D)`, so the tail beyond ``K`` is a
  geometric series of ratio :math:`\rho_{l,a} = l\tau/\delta_a`, summed in closed form from the
  computed :math:`J_{a,K}`.  Choosing A with at least :math:`3(n-1) - 1` tokens guarantees
  :math:`\rho \le 1/2` for *every* q (the j-th token after the top n - 1 has mass
  :math:`\le \delta_{n-1}/j`); ``m`` and ``K`` are chosen per row by a cost model.
- **Rounding bound.** Every operation is +, × or ÷ on positive quantities except the signed
  cumulant constants, so (Higham, Lemma 3.3) the computed :math:`\lambda S` equals the exact
  truncated value up to :math:`\gamma_D\,\lambda S_{abs}`, where D bounds the number of roundings
  along any path (cumulative sums are blocked so that D stays in the hundreds, not V) and
  :math:`S_{abs}` is the same expression with :math:`|\kappa|`, bounded per prefix by
  :math:`\hat J_{0,0} + \sum_l \pi_1^l \sum_k l!\,S(k,l)/k!\,\hat J_{l,k}`.

The returned bound is the maximum over k of
:math:`\gamma_D \lambda S_{abs} + \lambda\,\mathrm{tail} + u`.  Prefixes whose value is known
exactly (fewer than n tokens of positive mass: Q = 0; no mass outside: Q = 1) are set exactly.
On realistic inputs (softmax of Zipf-like logits at temperature 0.7, V = 152,064) the bound is
about 1e-13 for n = 3, 4 and stays below 1e-10 up to n = 8; see ``benchmarks/without.py``.

Why this method and not quadrature of the integral form (theory.md's other route)?  Nodes
shared by all prefixes (needed to vectorise the prefix DP as cumulative sums) must integrate
:math:`\lambda e^{-\lambda t} \Pr[N_H(t) \le n-1]` for every :math:`\lambda = q(H^c)` at once,
with decay rates down to :math:`1 - (\text{top } n-1 \text{ masses})` (1e-2 or less for peaked
LLM distributions); Newton's identities in :math:`e^{q t} - 1` cancel catastrophically on the
heavy tokens; and a rigorous quadrature bound needs estimates of the integrand off the real
axis.  Here the only hard part, the near-singular denominators :math:`d(D)`, involves only the
few heavy tokens and is summed exactly; what remains is a power series in
:math:`q/\delta \ll 1` whose tail is bounded in closed form from computed quantities.

Cost: ``K`` cumulative sums, :math:`O(nK + \binom{n-2}{2} K^2)` elementwise operations per prefix
and a :math:`O(\binom{m}{\le n-1} K)` heavy part.  Measured at V = 152,064 (realistic q;
``benchmarks/without.py``): n = 3 (m = 56, K = 6) about 3x one ``np.argsort`` of V
float64, n = 4 (m = 30, K = 9) about 7x, n = 8 (m = 20, K = 18) about 75x.  n = 1, 2 use
closed forms (about 0.5x).  The routine synchronises with the host once per row (heavy tokens,
choice of m and K); rows of a batch are processed one after the other (memory O(K V)).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
from array_api_compat import array_namespace, device, is_numpy_array, is_torch_array

from .. import _validate as V_

__all__ = [
    "prefix_Q_without",
    "prefix_Q_without_n2",
    "exact_prefix_Q_without",
    "N_MAX",
]

#: Largest number of drafts supported by :func:`prefix_Q_without`.
N_MAX: int = 8

_U = 2.0**-53  # unit roundoff of float64
_BLOCK = 64  # block length of the blocked cumulative sums (rounding depth ~ 3 V^(1/3))
_CHUNK = 8192  # prefixes processed together in the light part
_NS_MAX = 400_000  # most heavy subsets (of size <= n - 1) enumerated
_CAND = 1024  # heavy candidates examined
_K_MAX = 120
_TAIL_TARGET = 1e-17


# ----------------------------------------------------------------------------------------------
# small exact tables
# ----------------------------------------------------------------------------------------------
@cache
def _stirling2(k: int, i: int) -> int:
    """Stirling number of the second kind S(k, i) (exact integer)."""
    if k == i:
        return 1
    if i == 0 or i > k:
        return 0
    return i * _stirling2(k - 1, i) + _stirling2(k - 1, i - 1)


@cache
def _kappa_table(K: int, n: int) -> np.ndarray:
    r""":math:`\kappa_{j,i}/j!` for j = 0..K, i = 0..n-1 (rounded once from exact rationals)."""
    tab = np.zeros((K + 1, n))
    for j in range(1, K + 1):
        for i in range(1, min(j, n - 1) + 1):
            exact = Fraction((-1) ** (i - 1) * math.factorial(i - 1) * _stirling2(j, i))
            tab[j, i] = float(exact / math.factorial(j))
    tab.setflags(write=False)
    return tab


def _gamma(D: float) -> float:
    r""":math:`\gamma_D = D u / (1 - D u)`."""
    return D * _U / (1.0 - D * _U)


def _depth_cumsum(N: int) -> int:
    """Rounding depth of :func:`_cumsum` on N terms (each output is a sum with <= this many
    roundings on any path)."""
    if N <= _BLOCK:
        return max(N - 1, 0)
    nb = -(-N // _BLOCK)
    return (_BLOCK - 1) + _depth_cumsum(nb) + 1


# ----------------------------------------------------------------------------------------------
# array helpers (numpy or torch through the array-API namespace)
# ----------------------------------------------------------------------------------------------
def _zeros(xp: Any, shape: tuple[int, ...], like: Any) -> Any:
    return xp.zeros(shape, dtype=like.dtype, device=device(like))


def _cumsum(x: Any, xp: Any) -> Any:
    """Inclusive cumulative sum along the last axis, blocked (depth :func:`_depth_cumsum`)."""
    N = x.shape[-1]
    if N <= _BLOCK:
        return xp.cumulative_sum(x, axis=-1)
    nb = -(-N // _BLOCK)
    pad = nb * _BLOCK - N
    lead = tuple(x.shape[:-1])
    if pad:
        x = xp.concat([x, _zeros(xp, lead + (pad,), x)], axis=-1)
    loc = xp.cumulative_sum(xp.reshape(x, lead + (nb, _BLOCK)), axis=-1)
    tot = _cumsum(loc[..., -1], xp)
    off = xp.concat([_zeros(xp, lead + (1,), x), tot[..., :-1]], axis=-1)
    y = xp.reshape(loc + off[..., None], lead + (nb * _BLOCK,))
    return y[..., :N]


def _exclusive(y: Any, xp: Any) -> Any:
    """Prepend a zero column: prefix k holds the sum of the first k terms."""
    return xp.concat([_zeros(xp, tuple(y.shape[:-1]) + (1,), y), y], axis=-1)


def _accurate_sum(x: Any, xp: Any) -> tuple[float, float, float]:
    """Sum of a non-negative 1-D array as ``hi + lo`` (double-double) with an error bound.

    A pairwise tree of error-free TwoSum steps; the rounding errors are summed separately.
    Returns ``(hi, lo, eta)`` with ``|sum(x) - (hi + lo)| <= eta``.
    """
    errs = []
    levels = 0
    total_err_terms = 0
    while x.shape[0] > 1:
        if x.shape[0] % 2:
            x = xp.concat([x, _zeros(xp, (1,), x)])
        a, b = x[0::2], x[1::2]
        s = a + b
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
        errs.append(e)
        total_err_terms += e.shape[0]
        x = s
        levels += 1
    hi = float(x[0])
    if not errs:
        return hi, 0.0, 0.0
    E = xp.concat(errs)
    lo = float(xp.sum(E))
    abs_e = float(xp.sum(xp.abs(E)))
    # naive summation of the errors: any order, depth <= count - 1
    eta = _gamma(total_err_terms) * abs_e
    return hi, lo, eta


def _dd_complement(hi: float, lo: float, qs: np.ndarray) -> np.ndarray:
    """``hi + lo - sum(qs, axis=1)`` with relative accuracy (TwoSum chain, then one rounding).

    ``qs`` has shape (N, a); returns (N,) float64.
    """
    h = np.full(qs.shape[0], hi)
    lo_acc = np.full(qs.shape[0], lo)
    for r in range(qs.shape[1]):
        b = -qs[:, r]
        s = h + b
        bb = s - h
        e = (h - (s - bb)) + (b - bb)
        h = s
        lo_acc = lo_acc + e
    return h + lo_acc


def _is_array(x: Any) -> bool:
    return is_numpy_array(x) or is_torch_array(x)


def _top_candidates(q: Any, xp: Any, M: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values (host numpy, descending) of the M largest entries of a 1-D row."""
    V = q.shape[0]
    if is_numpy_array(q):
        idx = np.argpartition(q, V - M)[V - M :] if M < V else np.arange(V)
        vals = q[idx]
        order = np.lexsort((idx, -vals))
        return idx[order].astype(np.int64), vals[order].astype(np.float64)
    if is_torch_array(q):
        import torch

        vals, idx = torch.topk(q, M)
        return idx.cpu().numpy().astype(np.int64), vals.cpu().numpy().astype(np.float64)
    order = xp.argsort(-q, stable=True)[:M]  # pragma: no cover - other array libraries
    return np.asarray(order, dtype=np.int64), np.asarray(q[order], dtype=np.float64)


# ----------------------------------------------------------------------------------------------
# planning: how many heavy tokens, how many Taylor terms
# ----------------------------------------------------------------------------------------------
def _n_subsets(m: int, n: int) -> int:
    return sum(math.comb(m, a) for a in range(1, n))


def _tail_factor(K: int, a: int, rho: float) -> float:
    r""":math:`\sum_{j \ge 1} \binom{K+j+a}{a} \rho^j` (an upper bound; inf if it diverges)."""
    r = rho * (K + 2 + a) / (K + 2)
    if r >= 1.0:
        return math.inf
    return math.comb(K + 1 + a, a) * rho / (1.0 - r)


def _plan(qtop: np.ndarray, T: float, n: int, V: int, n_pos: int) -> tuple[int, int]:
    r"""Choose the number m of heavy tokens and the truncation order K (a cost model).

    Planning only: the estimates use the a-priori bounds of the module docstring with
    :math:`\lambda R_a \le 1`; the bound returned to the caller is recomputed from the data.
    """
    ctop = np.concatenate([[0.0], np.cumsum(qtop)])
    delta = [max(T - ctop[a], float(qtop[n - 1])) for a in range(n)]
    m_hi = V if len(qtop) == V else len(qtop) - 1
    grid = {n - 1 + int(1.25**i) - 1 for i in range(60)} | {3 * n - 4, n_pos, m_hi}
    best: tuple[float, int, int] | None = None
    for m in sorted(min(max(g, n - 1), m_hi) for g in grid):
        if _n_subsets(m, n) > _NS_MAX:
            continue
        tau = float(qtop[m]) if m < len(qtop) else 0.0
        K = 1 if tau <= 0.0 else _plan_K(tau, max(T - ctop[m], tau), delta, n)
        if K is None:
            continue
        P = (n - 3) * (n - 2) // 2 if n >= 3 else 0
        cost = V * (4.0 * K + 1.0 * n * K + 0.6 * P * K * K + 0.15 * max(n - 2, 0) * K * K)
        cost += 40.0 * _n_subsets(m, n) * (K + 1) + 2e4 * m
        if best is None or cost < best[0]:
            best = (cost, m, K)
    if best is None:  # pragma: no cover - m = 3n - 4 converges for every q (module docstring)
        return min(3 * n - 4, m_hi), _K_MAX  # the computed bound reports what this achieves
    return best[1], best[2]


def _plan_K(tau: float, qL: float, delta: list[float], n: int) -> int | None:
    """Smallest K whose estimated tail is below the target (None if none up to the cap)."""
    for K in range(n - 1, _K_MAX + 1):
        est = 0.0
        for l in range(1, n):
            for a in range(0, n - l):
                rho = l * tau / delta[a]
                if rho >= 1.0:
                    return None
                tf = _tail_factor(K, a, rho)
                est += (qL / tau) ** l * math.comb(K + a, a) * rho**K * tf / math.factorial(l)
        if est <= _TAIL_TARGET:
            return K
    return None


# ----------------------------------------------------------------------------------------------
# heavy part: the moments J_{a,k} of every heavy prefix set, exactly (positive recursion)
# ----------------------------------------------------------------------------------------------
def _colex_layers(m: int, n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Subsets of range(m) of sizes 0..min(n-1, m) in colex order, and the binomial table.

    In colex order the subsets of the first s elements come first (there are C(s, a) of
    them), and the rank of a sorted subset (c_1 < ... < c_a) is sum_i C(c_i, i).
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
    return layers, Bin


def _heavy_moments(
    qA: np.ndarray, T_hi: float, T_lo: float, theta_d: float, tau: float, K: int, n: int
) -> tuple[np.ndarray, float]:
    r"""Scaled moments :math:`\tilde J_{a,k}(s) = \tau^k k!\,[w^k] \sum_{D \subseteq A_s,|D|=a} G_D`.

    ``qA`` holds the heavy masses in prefix order; :math:`A_s` is its first s entries.  Returns
    ``J`` of shape (n, K+1, m+1) (zero where a > s) and the rounding depth D_J: every entry is
    the exact value times :math:`(1+\theta)`, :math:`|\theta| \le \gamma_{D_J}`.
    ``theta_d`` bounds the relative error of every computed :math:`d(D)`.
    """
    m = qA.shape[0]
    layers, Bin = _colex_layers(m, n)
    D_d = theta_d / _U
    step = D_d + 4.0  # per Taylor order: k*tau, product, sum, division (+ the error of d)
    kt = np.arange(K + 1) * tau
    T = T_hi + T_lo
    J = np.zeros((n, K + 1, m + 1))
    g = np.empty((1, K + 1))
    g[0, 0] = 1.0 / T
    for k in range(1, K + 1):
        g[0, k] = kt[k] * g[0, k - 1] / T
    J[0] = g[0][:, None]
    Dg = (K + 1) * step
    D_J = Dg
    s_all = np.arange(m + 1)
    for a in range(1, len(layers)):
        sub = layers[a]
        qs = qA[sub]
        d = _dd_complement(T_hi, T_lo, qs)
        f = np.zeros((sub.shape[0], K + 1))
        for r in range(a):
            rank = np.zeros(sub.shape[0], dtype=np.int64)
            for i in range(a):
                if i < r:
                    rank += Bin[sub[:, i], i + 1]
                elif i > r:
                    rank += Bin[sub[:, i], i]
            f += qs[:, r : r + 1] * g[rank]
        gn = np.empty_like(f)
        gn[:, 0] = f[:, 0] / d
        for k in range(1, K + 1):
            gn[:, k] = (f[:, k] + kt[k] * gn[:, k - 1]) / d
        g = gn
        Dg = Dg + a + (K + 1) * step
        P = _exclusive(_cumsum(np.ascontiguousarray(g.T), np), np)  # (K+1, N+1), colex order
        J[a] = P[:, Bin[s_all, a]]
        D_J = max(D_J, Dg + _depth_cumsum(g.shape[0]))
    return J, D_J


# ----------------------------------------------------------------------------------------------
# one row, n >= 2, the certified series
# ----------------------------------------------------------------------------------------------
def _mul(a: Any, b: Any, ia: int, ib: int, K: int, xp: Any) -> Any:
    """Truncated product of two series stored as (K+1, C) arrays, zero below degrees ia, ib."""
    out = xp.zeros_like(a)
    for j in range(ia, K + 1 - ib):
        out[j + ib :] += a[j][None, :] * b[ib : K + 1 - j]
    return out


def _matmul(A: Any, B: Any, xp: Any) -> Any:
    """Small-by-wide matrix product; numpy avoids BLAS threads (slow when cores are shared)."""
    if is_numpy_array(B):
        return np.einsum("ij,jk->ik", A, B)
    return xp.matmul(A, B)


def _series_row(q: Any, n: int, xp: Any, plan: tuple[int, int] | None = None) -> tuple[Any, float]:
    V = q.shape[0]
    T_hi, T_lo, T_eta = _accurate_sum(q, xp)
    T = T_hi + T_lo
    pos = q > 0
    n_pos = int(xp.sum(xp.astype(pos, xp.int64)))
    idx, qtop = _top_candidates(q, xp, min(V, max(_CAND, 4 * n)))
    m, K = plan if plan is not None else _plan(qtop, T, n, V, n_pos)
    tau = float(qtop[m]) if m < len(qtop) else 0.0
    light = tau > 0.0
    if not light:
        tau = 1.0  # no light mass: any scale will do (all u are 0, and so is the tail)
    order = np.argsort(idx[:m])
    heavy_pos = idx[:m][order]
    qA = qtop[:m][order]

    # d(D) and delta_a = d(top-a set), relative accuracy theta_d (double-double complement)
    delta = np.array([_dd_complement(T_hi, T_lo, qtop[None, :a])[0] for a in range(n)])
    theta_d = 64 * _U
    for _ in range(2):  # d(D) >= delta_{n-1} (1 - theta_d): a lower bound for the error terms
        dmin = float(delta[n - 1]) * (1 - 2 * theta_d)
        theta_d = 2.01 * _U + (T_eta + n * _U * (abs(T_lo) + n * _U * T)) / dmin
    delta_lo = delta * (1.0 - 2.0 * theta_d)

    J, D_J = _heavy_moments(qA, T_hi, T_lo, theta_d, tau, K, n)
    Jh = np.stack([J[: n - l].sum(axis=0) for l in range(n)])  # (n, K+1, m+1)
    D_J += n
    gJ = 1.0 + 2.0 * _gamma(D_J)

    # per-segment coefficients of the error bound
    beta = np.zeros((n, m + 1))
    tcoef = np.zeros((n, m + 1))
    beta[0] = Jh[0, 0]
    for l in range(1, n):
        w = [
            Fraction(math.factorial(l) * _stirling2(k, l), math.factorial(k)) for k in range(K + 1)
        ]
        beta[l] = (np.array([float(v) for v in w])[:, None] * Jh[l]).sum(axis=0)
        for a in range(0, n - l) if light else ():
            tf = _tail_factor(K, a, l * tau / float(delta_lo[a]))
            lk = float(l) ** K / math.factorial(l)
            with np.errstate(over="ignore", invalid="ignore"):
                tcoef[l] += (J[a, K] / math.factorial(K)) * (
                    lk * tf if math.isfinite(tf) else np.inf
                )
    beta *= gJ * 1.01
    tcoef = np.where(np.isnan(tcoef), np.inf, tcoef * (gJ * 1.01))

    dev = device(q)
    hmask = xp.zeros((V,), dtype=xp.bool, device=dev)
    if m:
        hmask[xp.asarray(heavy_pos, device=dev)] = True
    seg = _exclusive(xp.cumulative_sum(xp.astype(hmask, xp.int64)), xp)
    npos_pref = _exclusive(xp.cumulative_sum(xp.astype(pos, xp.int64)), xp)
    rev = _cumsum(xp.flip(q), xp)
    lam = xp.concat([xp.flip(rev), _zeros(xp, (1,), q)])
    u = xp.where(hmask, xp.zeros_like(q), q) / tau
    pw = [u]
    for _ in range(1, K):
        pw.append(pw[-1] * u)
    Pi = _exclusive(_cumsum(xp.stack(pw), xp), xp)  # (K, V+1)

    D_cum = _depth_cumsum(V)
    D_Lam = (2 * K - 1) + D_cum + 2
    D_arith = (n - 1) * (K + n + 4) + 2 * (K + 2) + 3 * n + 10
    D = 1.25 * (D_cum + 1 + D_J + (n - 1) * D_Lam + D_arith) + 20
    gD = _gamma(D)

    kap = xp.asarray(_kappa_table(K, n).copy(), device=dev)
    J0 = Jh[n - 1, :, 0]
    Ht = np.zeros((K + 1, K + 1))
    for j in range(K + 1):
        Ht[j, : K + 1 - j] = J0[j:]
    Ht_x = xp.asarray(Ht, device=dev)
    J0_x = xp.asarray(J0, device=dev)
    Jh_x = xp.asarray(Jh, device=dev)
    beta_x = xp.asarray(beta, device=dev)
    tcoef_x = xp.asarray(tcoef, device=dev)

    Q_parts, B_parts = [], []
    for c0 in range(0, V + 1, _CHUNK):
        c1 = min(V + 1, c0 + _CHUNK)
        C = c1 - c0
        pi = xp.concat([_zeros(xp, (1, C), q), Pi[:, c0:c1]], axis=0)  # (K+1, C), row j = pi_j
        sg = seg[c0:c1]
        Lam = [None] + [kap[:, i][:, None] * pi for i in range(1, n)]
        c = [None] * n
        S = xp.take(Jh_x[0, 0], sg, axis=0)
        for l in range(1, n - 1):
            acc = l * Lam[l]
            for i in range(1, l):
                acc = acc + i * _mul(Lam[i], c[l - i], i, l - i, K, xp)
            c[l] = acc / l
            S = S + xp.sum(c[l] * xp.take(Jh_x[l], sg, axis=1), axis=0)
        top = (n - 1) * xp.sum(Lam[n - 1] * J0_x[:, None], axis=0)
        for i in range(1, n - 1):
            top = top + i * xp.sum(Lam[i] * _matmul(Ht_x, c[n - 1 - i], xp), axis=0)
        S = S + top / (n - 1)
        lm = lam[c0:c1]
        Qc = 1.0 - lm * S
        p1 = pi[1]
        s_abs = xp.take(beta_x[0], sg, axis=0)
        tail = _zeros(xp, (C,), q)
        p1l = xp.ones_like(p1)
        for l in range(1, n):
            p1l = p1l * p1
            s_abs = s_abs + p1l * xp.take(beta_x[l], sg, axis=0)
            tc = xp.take(tcoef_x[l], sg, axis=0)
            tail = tail + xp.where(p1l > 0, p1l * xp.where(tc > 0, tc, xp.zeros_like(tc)), 0.0)
        Bc = (gD * lm * s_abs + lm * tail + 1.01 * _U) * (1.0 + 1e-6) + 1e-290
        exact0 = npos_pref[c0:c1] < n
        exact1 = lm == 0
        Qc = xp.clip(Qc, 0.0, 1.0)
        Qc = xp.where(exact0, xp.zeros_like(Qc), xp.where(exact1, xp.ones_like(Qc), Qc))
        Bc = xp.where(exact0 | exact1, xp.zeros_like(Bc), Bc)
        Q_parts.append(Qc)
        B_parts.append(Bc)
    Qrow = xp.concat(Q_parts)
    err = float(xp.max(xp.concat(B_parts)))
    return Qrow, err


# ----------------------------------------------------------------------------------------------
# n = 1 and n = 2: closed forms with the same rounding analysis
# ----------------------------------------------------------------------------------------------
def _n2_row(q: Any, xp: Any) -> tuple[Any, float]:
    V = q.shape[0]
    T_hi, T_lo, T_eta = _accurate_sum(q, xp)
    T = T_hi + T_lo
    d = (T_hi - q) + T_lo  # T_hi - q is exact when q >= T_hi / 2 (Sterbenz)
    dmin = float(xp.min(d)) * (1 - 8 * _U)
    theta_d = 2.01 * _U + (_U * abs(T_lo) + T_eta) / dmin
    F = _exclusive(_cumsum(q / d, xp), xp)
    rev = _cumsum(xp.flip(q), xp)
    lam = xp.concat([xp.flip(rev), _zeros(xp, (1,), q)])
    Phi = lam * (1.0 + F) / T
    D_cum = _depth_cumsum(V)
    D_T = 1.01 + T_eta / (_U * T)
    D = 1.25 * (D_cum + (D_cum + theta_d / _U + 1 + 1) + 2 + D_T) + 10
    Qv = xp.clip(1.0 - Phi, 0.0, 1.0)
    npos_pref = _exclusive(xp.cumulative_sum(xp.astype(q > 0, xp.int64)), xp)
    exact = (npos_pref < 2) | (lam == 0)
    Qv = xp.where(npos_pref < 2, xp.zeros_like(Qv), xp.where(lam == 0, xp.ones_like(Qv), Qv))
    B = (_gamma(D) * Phi + 1.01 * _U) * (1 + 1e-6)
    B = xp.where(exact, xp.zeros_like(B), B)
    return Qv, float(xp.max(B))


def _n1_row(q: Any, xp: Any) -> tuple[Any, float]:
    V = q.shape[0]
    T_hi, T_lo, T_eta = _accurate_sum(q, xp)
    P = _exclusive(_cumsum(q, xp), xp)
    Qv = xp.clip(P / (T_hi + T_lo), 0.0, 1.0)
    D = _depth_cumsum(V) + 2 + T_eta / (_U * (T_hi + T_lo)) + 2
    return Qv, float(_gamma(D) * (1 + 1e-6))


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------
def _rows(q_sorted: Any, n: Any, name: str = "q_sorted") -> tuple[Any, Any, int, bool]:
    n = V_.check_n(n)
    if n > N_MAX:
        raise ValueError(f"n: prefix_Q_without supports n <= {N_MAX}, got {n}")
    if not _is_array(q_sorted):
        q_sorted = np.asarray(q_sorted, dtype=np.float64)
    xp = array_namespace(q_sorted)
    q = xp.astype(q_sorted, xp.float64)
    if q.ndim not in (1, 2) or q.shape[-1] == 0:
        raise ValueError(
            f"{name}: must have shape (V,) or (B, V) with V >= 1, got {tuple(q.shape)}"
        )
    single = q.ndim == 1
    q2 = q[None, :] if single else q
    ok_finite = xp.all(xp.isfinite(q2), axis=1)
    ok_sign = xp.all(q2 >= 0, axis=1)
    support = xp.sum(xp.astype(q2 > 0, xp.int64), axis=1)
    for b in range(q2.shape[0]):
        where = "" if single else f" row {b}"
        if not bool(ok_finite[b]):
            raise ValueError(f"{name}{where}: entries must be finite (check for NaN/inf)")
        if not bool(ok_sign[b]):
            raise ValueError(f"{name}{where}: entries must be >= 0")
        if int(support[b]) < n:
            raise ValueError(
                f"{name}{where}: sequential sampling without replacement draws n={n} distinct "
                f"tokens but only {int(support[b])} have positive mass; use n <= {int(support[b])}"
            )
    return xp, q2, n, single


def prefix_Q_without(q_sorted: Any, n: int) -> tuple[Any, Any]:
    r"""Q on every prefix for sequential sampling without replacement, with an error bound.

    .. math::

       Q(H_k) = \Pr[\bar\imath_1, \dots, \bar\imath_n \in H_k], \qquad
       1 - Q(H) = q(H^c) \sum_{m=0}^{n-1} \int_0^\infty e^{-t}\,
       e_m\bigl(\{e^{q(x)t} - 1\}_{x \in H}\bigr)\, dt,

    evaluated by exact sums over the heavy tokens and a certified Taylor series over the light
    ones (module docstring).  n = 1 and n = 2 use closed forms.

    Parameters
    ----------
    q_sorted : (V,) or (B, V) array_like (numpy or torch)
        The draft distribution q, already permuted into the prefix order.  Rows need not sum
        exactly to 1: the law is that of ``q / q.sum()``.  float32 is computed in float64.
    n : int
        Number of drafts, 1 <= n <= :data:`N_MAX`; each row needs at least n positive entries.

    Returns
    -------
    Q_prefix : (..., V+1) array of float64 (same library and device as ``q_sorted``)
        ``Q_prefix[..., k]`` = Q(first k tokens); ``Q_prefix[..., 0] = 0``.
    err_bound : float or (B,) array of float64 (numpy)
        A rigorous bound on ``|Q_prefix - Q|`` over all k (truncation and rounding).

    Examples
    --------
    >>> Q, err = prefix_Q_without([0.5, 0.3, 0.2], 2)
    >>> Q.round(6).tolist(), bool(err < 1e-14)   # T12: Q({0, 1}) = 18/35 sequentially
    ([0.0, 0.0, 0.514286, 1.0], True)
    >>> Q3, err3 = prefix_Q_without([0.4, 0.1, 0.3, 0.2], 3)
    >>> round(float(Q3[3]), 12), bool(err3 < 1e-12)  # Q({0, 1, 2}) = 76/315
    (0.24126984127, True)
    """
    xp, q2, n, single = _rows(q_sorted, n)
    rows, errs = [], []
    for b in range(q2.shape[0]):
        r = q2[b]
        if n == 1:
            Qr, e = _n1_row(r, xp)
        elif n == 2:
            Qr, e = _n2_row(r, xp)
        else:
            Qr, e = _series_row(r, n, xp)
        rows.append(Qr)
        errs.append(e)
    if single:
        return rows[0], errs[0]
    return xp.stack(rows), np.array(errs)


def prefix_Q_without_n2(q_sorted: Any, *, series: bool = False) -> tuple[Any, Any]:
    r"""n = 2 on every prefix: the closed form, or (``series=True``) the general series method.

    .. math::

       Q(H) = \frac{1}{T}\Bigl[q(H) - q(H^c) \sum_{x \in H} \frac{q(x)}{T - q(x)}\Bigr],
       \qquad T = \sum_x q(x)

    (theory.md; O(1) per prefix with running sums).  The two routes share nothing but the
    input, so they cross-check each other (tests/test_fast_without.py).

    Examples
    --------
    >>> Q, err = prefix_Q_without_n2([0.5, 0.3, 0.2])
    >>> Q.round(6).tolist()
    [0.0, 0.0, 0.514286, 1.0]
    >>> Qs, err_s = prefix_Q_without_n2([0.5, 0.3, 0.2], series=True)
    >>> bool(abs(Qs - Q).max() <= err + err_s)
    True
    """
    xp, q2, n, single = _rows(q_sorted, 2)
    rows, errs = [], []
    for b in range(q2.shape[0]):
        Qr, e = _series_row(q2[b], 2, xp) if series else _n2_row(q2[b], xp)
        rows.append(Qr)
        errs.append(e)
    if single:
        return rows[0], errs[0]
    return xp.stack(rows), np.array(errs)


# ----------------------------------------------------------------------------------------------
# the exact O(V^(n-1)) reference
# ----------------------------------------------------------------------------------------------
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

    (each term positive; :math:`\sum_{|D| = m} G_D(0) = I_m(H)` of theory.md).  Summed along the
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
    n = V_.check_n(n)
    if exact is None:
        exact = V_.is_rational_input(q_sorted)
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
