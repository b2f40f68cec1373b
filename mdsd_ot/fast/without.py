r"""Sequential sampling without replacement: Q on every prefix, with a certified error bound.

For the sequential without-replacement law (docs/reference.md, "Draft constructions"; not the
conditional-Poisson law, T12) and a fixed order of the tokens, :func:`prefix_Q_without` returns

.. math::

   Q(H_k) = \Pr[\text{all } n \text{ sequential draws lie in } H_k], \qquad
   H_k = \{\text{first } k \text{ tokens}\}, \quad k = 0, \dots, V,

together with a rigorous bound on :math:`|\hat Q(H_k) - Q(H_k)|` over all k (truncation *and*
floating-point rounding).  This is the inner loop of the T7 prefix scan for ``scheme="without"``.
Rows of a (B, V) batch are processed together, with static shapes and no host-device
synchronisation: numpy arrays and torch tensors (any device) run the same code.

The formula
-----------
With :math:`T = \sum_x q(x)` (the law is that of :math:`q / T`), :math:`\lambda = q(H^c)` and the
exponential-clock identity of docs/reference.md,

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
  level :math:`l = n - 1` only needs a bilinear form with the Hankel matrix of
  :math:`J_{0,\cdot}`, one small batched matrix product).
- **Truncation bound.** :math:`c_{l,k} \le \pi_1^l\, l^k / (l!\,k!)` (scaled) and
  :math:`J_{a,k}/k! \le \binom{k+a}{a} (\tau/\delta_a)^{k-K} J_{a,K}/K!` with
  :math:`\delta_a = T - (\text{top } a \text{ masses}) \le d(D)`, so the tail beyond ``K`` is a
  geometric series of ratio :math:`\rho_{l,a} = l\tau/\delta_a`, summed in closed form from the
  computed :math:`J_{a,K}` (per row and per heavy segment, on the device).  Choosing A with at
  least :math:`3(n-1) - 1` tokens guarantees :math:`\rho \le 1/2` for *every* q (the j-th token
  after the top n - 1 has mass :math:`\le \delta_{n-1}/j`), so the series always converges.
- **Rounding bound.** Every operation is +, × or ÷ on positive quantities except the signed
  cumulant constants, so (Higham, Lemma 3.3) the computed :math:`\lambda S` equals the exact
  truncated value up to :math:`\gamma_D\,\lambda S_{abs}`, where D bounds the number of roundings
  along any path (cumulative sums are blocked so that D stays in the hundreds, not V) and
  :math:`S_{abs}` is the same expression with :math:`|\kappa|`, bounded per prefix by
  :math:`\hat J_{0,0} + \sum_l \pi_1^l \sum_k l!\,S(k,l)/k!\,\hat J_{l,k}`.

The returned bound is, per row, the maximum over k of
:math:`\gamma_D \lambda S_{abs} + \lambda\,\mathrm{tail} + u`.  Prefixes whose value is known
exactly (fewer than n tokens of positive mass: Q = 0; no mass outside: Q = 1) are set exactly.

Static plan: m and K depend on n only
-------------------------------------
``m`` (heavy tokens, :math:`\ge 3n - 4`) and ``K`` (Taylor order) are fixed per n
(:data:`PLANS`), so every shape is known before the data is read: the heavy tokens come from
one ``topk`` per row, and nothing is read back to the host (no ``.item()``, no boolean
indexing, no data-dependent branch), which is what a GPU needs (issue 5).  The plans were
chosen with the a-priori tail estimate on softmax rows of Zipf-like logits at temperatures
0.5 - 1.0 (V = 152,064) so that the tail is below 1e-17 there; on any other input the bound
still holds, it is just larger (it is computed from the data, and infinite only if the
series diverged, which :math:`m \ge 3n - 4` excludes).  On realistic inputs (temperature 0.7,
V = 152,064) the bound is about 1e-13 for n = 3, 4 and below 1e-10 up to n = 8; see
``benchmarks/without.py``.

Why this method and not quadrature of the integral form (docs/reference.md's other route)?  Nodes
shared by all prefixes (needed to vectorise the prefix DP as cumulative sums) must integrate
:math:`\lambda e^{-\lambda t} \Pr[N_H(t) \le n-1]` for every :math:`\lambda = q(H^c)` at once,
with decay rates down to :math:`1 - (\text{top } n-1 \text{ masses})` (1e-2 or less for peaked
LLM distributions); Newton's identities in :math:`e^{q t} - 1` cancel catastrophically on the
heavy tokens; and a rigorous quadrature bound needs estimates of the integrand off the real
axis.  Here the only hard part, the near-singular denominators :math:`d(D)`, involves only the
few heavy tokens and is summed exactly; what remains is a power series in
:math:`q/\delta \ll 1` whose tail is bounded in closed form from computed quantities.

Cost: ``K`` cumulative sums, :math:`O(nK + \binom{n-2}{2} K^2)` elementwise operations per prefix
and a :math:`O(\binom{m}{\le n-1} K)` heavy part per row.  The prefixes are processed in chunks
(running sums carried from chunk to chunk) so that the working memory is a few
``(K+1) x B x chunk`` arrays, not ``K x B x V``; rows are grouped so that the heavy part stays
small.  Measured times: ``benchmarks/without.py`` (numpy) and ``benchmarks/torch_gpu.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
from array_api_compat import array_namespace, device, is_numpy_array, is_torch_array

from .. import _validate as V_
from . import _backend as bk

__all__ = [
    "prefix_Q_without",
    "prefix_Q_without_n2",
    "exact_prefix_Q_without",
    "N_MAX",
    "PLANS",
]

#: Largest number of drafts supported by :func:`prefix_Q_without`.
N_MAX: int = 8

#: The static plan (heavy tokens m, Taylor order K) for each n >= 2 (n = 2 only with
#: ``prefix_Q_without_n2(series=True)``): m >= 3n - 4, so the tail always converges.
PLANS: dict[int, tuple[int, int]] = {
    2: (32, 6),
    3: (64, 8),
    4: (32, 11),
    5: (24, 14),
    6: (20, 17),
    7: (18, 20),
    8: (20, 22),
}

_U = 2.0**-53  # unit roundoff of float64
_BLOCK = 64  # block length of the blocked cumulative sums (rounding depth ~ 3 V^(1/3))
_HEAVY_ELEMS = 2**24  # rows are grouped so that the heavy part has about this many entries
_CHUNK_ELEMS = {"numpy": 2**13, "cpu": 2**16, "gpu": 2**21}  # B x chunk per light-part array
_CHUNK_MIN = {"numpy": 64, "cpu": 1024, "gpu": 1024}


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


def _gamma(D: Any) -> Any:
    r""":math:`\gamma_D = D u / (1 - D u)` (D a float or an array)."""
    return D * _U / (1.0 - D * _U)


def _depth_cumsum(N: int) -> int:
    """Rounding depth of :func:`_cumsum` on N terms (each output is a sum with <= this many
    roundings on any path)."""
    if N <= _BLOCK:
        return max(N - 1, 0)
    nb = -(-N // _BLOCK)
    return (_BLOCK - 1) + _depth_cumsum(nb) + 1


# ----------------------------------------------------------------------------------------------
# array helpers (numpy or torch through the array-API namespace; none reads data on the host)
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


def _accurate_sum(x: Any, xp: Any) -> tuple[Any, Any, Any]:
    """Row sums of a non-negative (B, N) array as ``hi + lo`` (double-double), with a bound.

    A pairwise tree of error-free TwoSum steps; the rounding errors are summed separately.
    Returns (B,) arrays ``(hi, lo, eta)`` with ``|sum(x) - (hi + lo)| <= eta``.
    """
    errs = []
    total_err_terms = 0
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = xp.concat([x, _zeros(xp, (x.shape[0], 1), x)], axis=-1)
        a, b = x[:, 0::2], x[:, 1::2]
        s = a + b
        bb = s - a
        errs.append((a - (s - bb)) + (b - bb))
        total_err_terms += s.shape[-1]
        x = s
    hi = x[:, 0]
    if not errs:
        return hi, xp.zeros_like(hi), xp.zeros_like(hi)
    E = xp.concat(errs, axis=-1)
    lo = xp.sum(E, axis=-1)
    # naive summation of the errors: any order, depth <= count - 1
    eta = _gamma(float(total_err_terms)) * xp.sum(xp.abs(E), axis=-1)
    return hi, lo, eta


def _dd_complement(hi: Any, lo: Any, qs: Any) -> Any:
    """``hi + lo - qs.sum(-1)`` with relative accuracy (TwoSum chain, then one rounding).

    ``hi``, ``lo`` have shape (B,), ``qs`` (B, N, a); returns (B, N).
    """
    h = qs[..., 0] * 0.0 + hi[:, None]
    lo_acc = qs[..., 0] * 0.0 + lo[:, None]
    for r in range(qs.shape[-1]):
        b = -qs[..., r]
        s = h + b
        bb = s - h
        lo_acc = lo_acc + ((h - (s - bb)) + (b - bb))
        h = s
    return h + lo_acc


def _is_array(x: Any) -> bool:
    return is_numpy_array(x) or is_torch_array(x)


def _kind(x: Any) -> str:
    """'numpy', 'cpu' (torch on the CPU) or 'gpu' (torch elsewhere): sets the chunk sizes."""
    if is_numpy_array(x):
        return "numpy"
    return "cpu" if x.device.type == "cpu" else "gpu"


_CONSTS: dict[tuple, Any] = {}


def _const(like: Any, key: tuple, build: Any) -> Any:
    """A constant array (from ``build()``, numpy) on the device of ``like``, cached.

    Copied to the device once, without blocking the host; later calls reuse it (a blocking
    host-to-device copy would be a synchronisation on a GPU).
    """
    if is_numpy_array(like):
        return build()
    full = (key, str(like.device))
    out = _CONSTS.get(full)
    if out is None:
        import torch

        out = torch.from_numpy(np.array(build())).to(like.device, non_blocking=True)
        _CONSTS[full] = out
    return out


def _topk(q: Any, k: int) -> tuple[Any, Any]:
    """Values (descending) and indices of the k largest entries of each row of a (B, V) array.

    Ties are broken towards the smaller index for numpy; torch breaks them its own way (any
    choice of the heavy set among equal masses gives the same Q, up to rounding).
    """
    if is_torch_array(q):
        import torch

        vals, idx = torch.topk(q, k, dim=-1, largest=True, sorted=True)
        return vals, idx
    V = q.shape[-1]
    idx = (
        np.argpartition(-q, k - 1, axis=-1)[:, :k] if k < V else np.tile(np.arange(V), (len(q), 1))
    )
    vals = np.take_along_axis(q, idx, axis=-1)
    order = np.lexsort((idx, -vals), axis=-1)
    return np.take_along_axis(vals, order, -1), np.take_along_axis(idx, order, -1)


def _sort_int(x: Any) -> Any:
    """Rows of an integer array sorted ascending."""
    if is_torch_array(x):
        import torch

        return torch.sort(x, dim=-1).values
    return np.sort(x, axis=-1)


def _mark(idx: Any, like: Any) -> Any:
    """A (B, V) boolean mask, True at ``idx`` (B, m) in each row (shape of ``like``)."""
    if is_torch_array(like):
        import torch

        out = torch.zeros(like.shape, dtype=torch.bool, device=like.device)
        return out.scatter_(-1, idx, True)
    out = np.zeros(like.shape, dtype=bool)
    np.put_along_axis(out, idx, True, axis=-1)
    return out


def _take_seg(A: Any, sg: Any) -> Any:
    """``out[b, r, c] = A[b, r, sg[b, c]]``: (B, R, m+1) values per heavy segment -> (B, R, C)."""
    if is_torch_array(A):
        return A.gather(-1, sg[:, None, :].expand(A.shape[0], A.shape[1], sg.shape[-1]))
    return np.take_along_axis(A, sg[:, None, :], axis=-1)


# ----------------------------------------------------------------------------------------------
# heavy part: the moments J_{a,k} of every heavy prefix set, exactly (positive recursion)
# ----------------------------------------------------------------------------------------------
def _n_subsets(m: int, n: int) -> int:
    return sum(math.comb(m, a) for a in range(0, min(n - 1, m) + 1))


@cache
def _colex(m: int, n: int) -> tuple:
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


def _heavy_moments(
    qA: Any, T_hi: Any, T_lo: Any, theta_d: Any, tau: Any, K: int, n: int, xp: Any
) -> tuple[Any, Any]:
    r"""Scaled moments :math:`\tilde J_{a,k}(s) = \tau^k k!\,[w^k] \sum_{D \subseteq A_s,|D|=a} G_D`.

    ``qA`` (B, m) holds the heavy masses of each row in prefix order; :math:`A_s` is its first s
    entries.  Returns ``J`` of shape (B, n, K+1, m+1) (zero where a > s) and the rounding depth
    D_J (B,): every entry is the exact value times :math:`(1+\theta)`,
    :math:`|\theta| \le \gamma_{D_J}`.  ``theta_d`` (B,) bounds the relative error of every
    computed :math:`d(D)`.
    """
    B, m = qA.shape
    step = theta_d / _U + 4.0  # per Taylor order: k*tau, product, sum, division (+ error of d)
    T = T_hi + T_lo
    kt = [k * tau for k in range(K + 1)]  # (B,) each
    g_cols = [1.0 / T]
    for k in range(1, K + 1):
        g_cols.append(kt[k] * g_cols[-1] / T)
    g = xp.stack(g_cols, axis=-1)[:, None, :]  # (B, 1, K+1): the empty set
    zero_s = xp.zeros((B, K + 1, m + 1), dtype=qA.dtype, device=device(qA))
    J = [g[:, 0, :, None] + zero_s]
    Dg = (K + 1) * step
    D_J = Dg
    for a, layer in enumerate(_colex(m, n), start=1):
        sub = _const(qA, ("sub", m, n, a), lambda layer=layer: layer[0])
        ranks = _const(qA, ("ranks", m, n, a), lambda layer=layer: layer[1])
        cols = _const(qA, ("cols", m, n, a), lambda layer=layer: layer[2])
        N = sub.shape[0]
        qs = xp.reshape(xp.take(qA, xp.reshape(sub, (-1,)), axis=1), (B, N, a))
        d = _dd_complement(T_hi, T_lo, qs)  # (B, N)
        f = qs[:, :, 0:1] * xp.take(g, ranks[0], axis=1)
        for r in range(1, a):
            f = f + qs[:, :, r : r + 1] * xp.take(g, ranks[r], axis=1)
        cols_g = [f[:, :, 0] / d]
        for k in range(1, K + 1):
            cols_g.append((f[:, :, k] + kt[k][:, None] * cols_g[-1]) / d)
        g = xp.stack(cols_g, axis=-1)  # (B, N, K+1)
        Dg = Dg + a + (K + 1) * step
        P = _exclusive(_cumsum(xp.permute_dims(g, (0, 2, 1)), xp), xp)  # (B, K+1, N+1), colex
        J.append(xp.take(P, cols, axis=2))
        D_J = xp.maximum(D_J, Dg + _depth_cumsum(N))
    for _ in range(len(J), n):
        J.append(zero_s)
    return xp.stack(J, axis=1), D_J


# ----------------------------------------------------------------------------------------------
# n >= 2: the certified series, a batch of rows at once
# ----------------------------------------------------------------------------------------------
def _mul(a: Any, b: Any, ia: int, ib: int, K: int, xp: Any) -> Any:
    """Truncated product of two series stored as (B, K+1, C) arrays, zero below degrees ia, ib."""
    out = xp.zeros_like(a)
    for j in range(ia, K + 1 - ib):
        out[:, j + ib :] += a[:, j : j + 1] * b[:, ib : K + 1 - j]
    return out


def _matmul(A: Any, B: Any, xp: Any) -> Any:
    """Batched small-by-wide matrix product; numpy avoids BLAS threads (shared cores)."""
    if is_numpy_array(B):
        return np.einsum("bij,bjk->bik", A, B)
    return xp.matmul(A, B)


def _tail_factor(K: int, a: int, rho: Any, xp: Any) -> Any:
    r""":math:`\sum_{j \ge 1} \binom{K+j+a}{a} \rho^j` per row (an upper bound; inf if it
    diverges)."""
    r = rho * ((K + 2 + a) / (K + 2))
    ok = r < 1.0
    safe = xp.where(ok, 1.0 - r, xp.ones_like(r))
    return xp.where(ok, math.comb(K + 1 + a, a) * rho / safe, xp.full_like(r, math.inf))


def _series(q: Any, n: int, xp: Any, plan: tuple[int, int] | None = None) -> tuple[Any, Any]:
    """Q on every prefix and the error bound for the (B, V) float64 rows ``q``, n >= 2."""
    B, V = q.shape
    m_plan, K = plan if plan is not None else PLANS[n]
    m = min(m_plan, V)
    if m < n - 1:
        raise ValueError(f"plan: needs at least n - 1 = {n - 1} heavy tokens, got {m}")
    per_row = _n_subsets(m, n) * (K + 1) * (m + 1)
    G = max(1, min(B, _HEAVY_ELEMS // per_row))
    if G >= B:
        return _series_rows(q, n, xp, m, K)
    parts = [_series_rows(q[g0 : g0 + G], n, xp, m, K) for g0 in range(0, B, G)]
    return xp.concat([Q for Q, _ in parts], axis=0), xp.concat([e for _, e in parts], axis=0)


def _series_rows(q: Any, n: int, xp: Any, m: int, K: int) -> tuple[Any, Any]:
    B, V = q.shape
    T_hi, T_lo, T_eta = _accurate_sum(q, xp)
    T = T_hi + T_lo
    pos = q > 0
    if m < V:
        qtop, itop = _topk(q, m + 1)
        tau = qtop[:, m]  # the largest light mass
    else:
        qtop, itop = _topk(q, V)
        tau = xp.zeros_like(T)
    light = tau > 0.0
    tau = xp.where(light, tau, xp.ones_like(tau))  # no light mass: any scale will do
    heavy_pos = _sort_int(itop[:, :m])
    qA = q.gather(-1, heavy_pos) if is_torch_array(q) else np.take_along_axis(q, heavy_pos, -1)

    # d(D) and delta_a = d(top-a set), relative accuracy theta_d (double-double complement)
    delta = xp.stack(
        [T] + [_dd_complement(T_hi, T_lo, qtop[:, None, :a])[:, 0] for a in range(1, n)],
        axis=-1,
    )  # (B, n)
    theta_d = xp.full_like(T, 64 * _U)
    for _ in range(2):  # d(D) >= delta_{n-1} (1 - theta_d): a lower bound for the error terms
        dmin = delta[:, n - 1] * (1 - 2 * theta_d)
        theta_d = 2.01 * _U + (T_eta + n * _U * (xp.abs(T_lo) + n * _U * T)) / dmin
    delta_lo = delta * (1.0 - 2.0 * theta_d)[:, None]

    J, D_J = _heavy_moments(qA, T_hi, T_lo, theta_d, tau, K, n, xp)  # (B, n, K+1, m+1)
    Jc = [J[:, 0]]
    for a in range(1, n):
        Jc.append(Jc[-1] + J[:, a])
    Jh = xp.stack([Jc[n - 1 - l] for l in range(n)], axis=1)  # (B, n, K+1, m+1)
    D_J = D_J + n
    gJ = 1.0 + 2.0 * _gamma(D_J)  # (B,)

    # per-segment coefficients of the error bound, (B, n, m+1)
    wts = _const(q, ("wts", n, K), lambda: _beta_weights(n, K))  # (n, K+1)
    beta = [Jh[:, 0, 0]]
    tcoef = [xp.zeros_like(Jh[:, 0, 0])]
    for l in range(1, n):
        beta.append(xp.sum(wts[l][None, :, None] * Jh[:, l], axis=1))
        tc = xp.zeros_like(Jh[:, 0, 0])
        lk = float(l) ** K / math.factorial(l)
        for a in range(0, n - l):
            rho = xp.where(light, l * tau / delta_lo[:, a], xp.zeros_like(tau))
            tf = _tail_factor(K, a, rho, xp)  # (B,)
            JK = J[:, a, K] / math.factorial(K)  # 0 where A_s has no a-subset: no tail there
            tc = tc + JK * xp.where(JK > 0, (lk * tf)[:, None], xp.zeros_like(JK))
        tcoef.append(tc)
    scale = (gJ * 1.01)[:, None, None]
    beta = xp.stack(beta, axis=1) * scale
    tcoef = xp.stack(tcoef, axis=1) * scale

    hmask = _mark(heavy_pos, q)
    seg = xp.cumulative_sum(xp.astype(hmask, xp.int64), axis=-1)  # segment of prefix k+1
    npos = xp.cumulative_sum(xp.astype(pos, xp.int64), axis=-1)
    lam = xp.flip(_cumsum(xp.flip(q, axis=-1), xp), axis=-1)  # q of tokens k.. (prefix k)
    lam = xp.concat([lam[:, 1:], _zeros(xp, (B, 1), q)], axis=-1)  # lambda of prefix k+1
    u = xp.where(hmask, xp.zeros_like(q), q) / tau[:, None]

    kind = _kind(q)
    C = min(V, max(_CHUNK_MIN[kind], _CHUNK_ELEMS[kind] // B))
    n_chunks = -(-V // C)
    D_cum = max(_depth_cumsum(V), _depth_cumsum(C) + n_chunks)
    D_Lam = (2 * K - 1) + D_cum + 2
    D_arith = (n - 1) * (K + n + 4) + 2 * (K + 2) + 3 * n + 10
    gD = _gamma(1.25 * (D_cum + 1 + D_J + (n - 1) * D_Lam + D_arith) + 20)[:, None]  # (B, 1)

    kap = _const(q, ("kappa", K, n), lambda: _kappa_table(K, n))  # (K+1, n)
    J0 = Jh[:, n - 1, :, 0]  # (B, K+1)
    hank = _const(q, ("hankel", K), lambda: np.add.outer(np.arange(K + 1), np.arange(K + 1)))
    J0p = xp.concat([J0, xp.zeros_like(J0)], axis=-1)
    Ht = xp.reshape(xp.take(J0p, xp.reshape(hank, (-1,)), axis=1), (B, K + 1, K + 1))

    carry = xp.zeros((B, K, 1), dtype=q.dtype, device=device(q))
    Q_parts, bound = [], xp.zeros_like(T)
    for t0 in range(0, V, C):
        t1 = min(V, t0 + C)
        uc = u[:, t0:t1]
        pw = [uc]
        for _ in range(1, K):
            pw.append(pw[-1] * uc)
        Pi = _cumsum(xp.stack(pw, axis=1), xp) + carry  # (B, K, C): pi_j of prefixes t0+1..t1
        carry = Pi[:, :, -1:]
        pi = xp.concat([_zeros(xp, (B, 1, t1 - t0), q), Pi], axis=1)  # (B, K+1, C)
        sg = seg[:, t0:t1]
        Lam = [None] + [kap[:, i][None, :, None] * pi for i in range(1, n)]
        c = [None] * n
        S = _take_seg(Jh[:, 0, 0:1], sg)[:, 0]
        for l in range(1, n - 1):
            acc = l * Lam[l]
            for i in range(1, l):
                acc = acc + i * _mul(Lam[i], c[l - i], i, l - i, K, xp)
            c[l] = acc / l
            S = S + xp.sum(c[l] * _take_seg(Jh[:, l], sg), axis=1)
        top = (n - 1) * xp.sum(Lam[n - 1] * J0[:, :, None], axis=1)
        for i in range(1, n - 1):
            top = top + i * xp.sum(Lam[i] * _matmul(Ht, c[n - 1 - i], xp), axis=1)
        S = S + top / (n - 1)
        lm = lam[:, t0:t1]
        Qc = 1.0 - lm * S
        p1 = pi[:, 1]
        s_abs = _take_seg(beta[:, 0:1], sg)[:, 0]
        tail = xp.zeros_like(p1)
        p1l = xp.ones_like(p1)
        for l in range(1, n):
            p1l = p1l * p1
            s_abs = s_abs + p1l * _take_seg(beta[:, l : l + 1], sg)[:, 0]
            tc = _take_seg(tcoef[:, l : l + 1], sg)[:, 0]
            tail = tail + xp.where(p1l > 0, p1l * tc, xp.zeros_like(tc))
        Bc = (gD * lm * s_abs + lm * tail + 1.01 * _U) * (1.0 + 1e-6) + 1e-290
        exact0 = npos[:, t0:t1] < n
        exact1 = lm == 0
        Qc = bk.clip(Qc, 0.0, 1.0)
        Qc = xp.where(exact0, xp.zeros_like(Qc), xp.where(exact1, xp.ones_like(Qc), Qc))
        Bc = xp.where(exact0 | exact1, xp.zeros_like(Bc), Bc)
        Q_parts.append(Qc)
        bound = xp.maximum(bound, xp.max(Bc, axis=-1))
    Q = xp.concat([_zeros(xp, (B, 1), q)] + Q_parts, axis=-1)
    return Q, bound


def _beta_weights(n: int, K: int) -> np.ndarray:
    r""":math:`l!\,S(k, l)/k!` for l = 0..n-1, k = 0..K (row 0 unused), rounded once."""
    w = np.zeros((n, K + 1))
    for l in range(1, n):
        for k in range(K + 1):
            w[l, k] = float(Fraction(math.factorial(l) * _stirling2(k, l), math.factorial(k)))
    return w


# ----------------------------------------------------------------------------------------------
# n = 1 and n = 2: closed forms with the same rounding analysis
# ----------------------------------------------------------------------------------------------
def _n2_rows(q: Any, xp: Any) -> tuple[Any, Any]:
    B, V = q.shape
    T_hi, T_lo, T_eta = _accurate_sum(q, xp)
    T = (T_hi + T_lo)[:, None]
    d = (T_hi[:, None] - q) + T_lo[:, None]  # T_hi - q is exact when q >= T_hi / 2 (Sterbenz)
    dmin = xp.min(d, axis=-1) * (1 - 8 * _U)
    theta_d = 2.01 * _U + (_U * xp.abs(T_lo) + T_eta) / dmin
    F = _exclusive(_cumsum(q / d, xp), xp)
    lam = xp.concat(
        [xp.flip(_cumsum(xp.flip(q, axis=-1), xp), axis=-1), _zeros(xp, (B, 1), q)], axis=-1
    )
    Phi = lam * (1.0 + F) / T
    D_cum = _depth_cumsum(V)
    D_T = 1.01 + T_eta / (_U * T[:, 0])
    D = 1.25 * (D_cum + (D_cum + theta_d / _U + 1 + 1) + 2 + D_T) + 10
    Qv = bk.clip(1.0 - Phi, 0.0, 1.0)
    npos_pref = _exclusive(xp.cumulative_sum(xp.astype(q > 0, xp.int64), axis=-1), xp)
    exact = (npos_pref < 2) | (lam == 0)
    Qv = xp.where(npos_pref < 2, xp.zeros_like(Qv), xp.where(lam == 0, xp.ones_like(Qv), Qv))
    Bd = (_gamma(D)[:, None] * Phi + 1.01 * _U) * (1 + 1e-6)
    Bd = xp.where(exact, xp.zeros_like(Bd), Bd)
    return Qv, xp.max(Bd, axis=-1)


def _n1_rows(q: Any, xp: Any) -> tuple[Any, Any]:
    V = q.shape[-1]
    T_hi, T_lo, T_eta = _accurate_sum(q, xp)
    T = T_hi + T_lo
    Qv = bk.clip(_exclusive(_cumsum(q, xp), xp) / T[:, None], 0.0, 1.0)
    D = _depth_cumsum(V) + 2 + T_eta / (_U * T) + 2
    return Qv, _gamma(D) * (1 + 1e-6)


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------
def _rows(q_sorted: Any, n: Any, name: str = "q_sorted") -> tuple[Any, Any, int, bool]:
    """Rows as (B, V) float64.  numpy rows are checked (errors name the row); torch tensors
    only by shape: checking their values would read them on the host (a GPU synchronisation)."""
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
    if q2.shape[-1] < n:
        raise ValueError(
            f"{name}: sequential sampling without replacement draws n={n} distinct tokens but "
            f"there are only V={q2.shape[-1]}; use n <= {q2.shape[-1]}"
        )
    if is_numpy_array(q2):
        ok_finite = np.all(np.isfinite(q2), axis=1)
        ok_sign = np.all(q2 >= 0, axis=1)
        support = np.count_nonzero(q2 > 0, axis=1)
        for b in range(q2.shape[0]):
            where = "" if single else f" row {b}"
            if not ok_finite[b]:
                raise ValueError(f"{name}{where}: entries must be finite (check for NaN/inf)")
            if not ok_sign[b]:
                raise ValueError(f"{name}{where}: entries must be >= 0")
            if support[b] < n:
                raise ValueError(
                    f"{name}{where}: sequential sampling without replacement draws n={n} "
                    f"distinct tokens but only {support[b]} have positive mass; "
                    f"use n <= {support[b]}"
                )
    return xp, q2, n, single


def _finish(Q: Any, err: Any, single: bool) -> tuple[Any, Any]:
    if single:
        return Q[0], (float(err[0]) if is_numpy_array(err) else err[0])
    return Q, err


def prefix_Q_without(q_sorted: Any, n: int) -> tuple[Any, Any]:
    r"""Q on every prefix for sequential sampling without replacement, with an error bound.

    .. math::

       Q(H_k) = \Pr[\bar\imath_1, \dots, \bar\imath_n \in H_k], \qquad
       1 - Q(H) = q(H^c) \sum_{m=0}^{n-1} \int_0^\infty e^{-t}\,
       e_m\bigl(\{e^{q(x)t} - 1\}_{x \in H}\bigr)\, dt,

    evaluated by exact sums over the heavy tokens and a certified Taylor series over the light
    ones (module docstring).  n = 1 and n = 2 use closed forms.  All rows are processed at once
    with shapes fixed by (B, V, n); nothing is read back to the host, so on a GPU the call does
    not synchronise.

    Parameters
    ----------
    q_sorted : (V,) or (B, V) array_like (numpy or torch)
        The draft distribution q, already permuted into the prefix order.  Rows need not sum
        exactly to 1: the law is that of ``q / q.sum()``.  float32 is computed in float64.
        numpy rows must be finite, >= 0, with at least n positive entries (ValueError naming
        the row otherwise); torch tensors are not value-checked (that would synchronise a GPU):
        :func:`mdsd_ot.torch.alpha_star` validates them on the device first.
    n : int
        Number of drafts, 1 <= n <= :data:`N_MAX`.

    Returns
    -------
    Q_prefix : (..., V+1) array of float64 (same library and device as ``q_sorted``)
        ``Q_prefix[..., k]`` = Q(first k tokens); ``Q_prefix[..., 0] = 0``.
    err_bound : float or (B,) array of float64 (numpy); 0-d or (B,) tensor (torch, same device)
        A rigorous bound on ``|Q_prefix - Q|`` over all k (truncation and rounding), per row.

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
    if n == 1:
        Q, err = _n1_rows(q2, xp)
    elif n == 2:
        Q, err = _n2_rows(q2, xp)
    else:
        Q, err = _series(q2, n, xp)
    return _finish(Q, err, single)


def prefix_Q_without_n2(q_sorted: Any, *, series: bool = False) -> tuple[Any, Any]:
    r"""n = 2 on every prefix: the closed form, or (``series=True``) the general series method.

    .. math::

       Q(H) = \frac{1}{T}\Bigl[q(H) - q(H^c) \sum_{x \in H} \frac{q(x)}{T - q(x)}\Bigr],
       \qquad T = \sum_x q(x)

    (docs/reference.md; O(1) per prefix with running sums).  The two routes share nothing but the
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
    Q, err = _series(q2, 2, xp) if series else _n2_rows(q2, xp)
    return _finish(Q, err, single)


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
