r"""The certified series for sequential sampling without replacement, n >= 2 (Q on every prefix).

For the sequential without-replacement law (docs/reference.md, "Draft constructions"; not the
conditional-Poisson law, T12) and a fixed order of the tokens, :func:`prefix_Q_without` returns

.. math::

   Q(H_k) = \Pr[\text{all } n \text{ sequential draws lie in } H_k], \qquad
   H_k = \{\text{first } k \text{ tokens}\}, \quad k = 0, \dots, V,

together with a rigorous bound on :math:`|\hat Q(H_k) - Q(H_k)|` over all k (truncation *and*
floating-point rounding).  This is the inner loop of the T7 prefix scan for ``scheme="without"``
(the public entry point is :func:`mdsd_ot.fast.without.prefix_Q_without`).
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
(the O(V^(n-1)) oracle of the tests, ``tests/fast/oracles.py``).

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
  :math:`\hat J_{0,0} + \sum_l \pi_1^l \sum_k l!\,S(k,l)/k!\,\hat J_{l,k}`: per token,
  :math:`\sum_j u^j |\kappa_j|(z) s^j/j! = -\log(1 - z(e^{us} - 1))`, so the light factor is
  :math:`\prod_y (1 - z(e^{u_y s} - 1))^{-1}`, whose :math:`z^l` coefficient
  :math:`h_l(\{e^{u_y s} - 1\})` is at most :math:`h_l(u)\,(e^s - 1)^l \le \pi_1^l (e^s - 1)^l`
  coefficientwise (:math:`e^{us} - 1 \le u(e^s - 1)` for :math:`u \le 1`; :math:`h_l` the
  complete homogeneous sum).

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
from typing import Any

import numpy as np
from array_api_compat import device, is_torch_array

from . import _backend as bk
from . import _fused, _series_jit
from ._backend import is_numpy_array
from ._dd import U, accurate_sum, cumsum_blocked, depth_cumsum, gamma
from ._moments import beta_weights, heavy_moments, kappa_table, n_subsets

__all__ = [
    "N_MAX",
    "PLANS",
    "TINY_BITS",
    "series",
    "series_rows",
    "series_setup",
    "series_eval",
    "scaled_rows",
    "tiny_rows",
]

#: Largest number of drafts supported by :func:`mdsd_ot.fast.without.prefix_Q_without`.
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

_HEAVY_ELEMS = 2**24  # rows are grouped so that the heavy part has about this many entries
_CHUNK_ELEMS = {"numpy": 2**13, "cpu": 2**16, "gpu": 2**21}  # B x chunk per light-part array
_CHUNK_MIN = {"numpy": 64, "cpu": 1024, "gpu": 1024}


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


#: A row's masses beyond its n - 1 largest may sum to less than 2^-TINY_BITS of its largest:
#: then :math:`d(D) = T - q(D)` is that small, the heavy moments (about :math:`K!/d(D)`) near
#: overflow and the masses in it may be subnormal (a few bits each).  The sorting path scales
#: such rows (:func:`scaled_rows`); the bucket path sorts them (``ctx["refuse"]``).
TINY_BITS: int = 800
#: ... by the power of two that brings the row's largest mass near 2^SCALE_BITS: every positive
#: mass (at least 2^-1074 times the row's scale) is then above 2^-562, every moment below 2^600.
SCALE_BITS: int = 512


def tiny_rows(q: Any, n: int, xp: Any) -> Any:
    """(B,) True where fewer than n masses of a row lie within 2^-:data:`TINY_BITS` of its
    largest (so the mass outside its n - 1 largest may be below that: a row to scale)."""
    top = xp.max(q, axis=-1, keepdims=True)
    near = xp.sum(xp.astype(q >= top * 2.0**-TINY_BITS, xp.int64), axis=-1)
    return near < n


def scaled_rows(q: Any, n: int, xp: Any) -> Any:
    r"""q with each :func:`tiny_rows` row multiplied by :math:`2^s`, its largest mass brought
    to :math:`[2^{511}, 2^{512})` (:data:`SCALE_BITS`); the other rows as they are.

    The sequential law is that of :math:`q / T`, so an exact power of two changes neither Q
    nor its certified bound, only the range the computation works in: on a row whose masses
    beyond the n - 1 largest are subnormal, :math:`1/d(D)` overflowed (Q was NaN).  numpy
    copies only when a row is scaled; torch multiplies every row (by 1 mostly: no
    data-dependent branch on a device).

    Examples
    --------
    >>> q = np.array([[1.0, 3e-322, 1e-322, 2e-322]])  # 3e-322: 61 units of 2^-1074
    >>> s = scaled_rows(q, 3, np)
    >>> bool(s[0, 0] == 2.0**511), bool(s[0, 1] == 61 * 2.0**-563)  # exact, normal doubles
    (True, True)
    >>> q = np.array([[0.5, 0.5, 1e-322]])
    >>> scaled_rows(q, 2, np) is q  # two masses near the largest: as it is
    True
    """
    tiny = tiny_rows(q, n, xp)
    if is_numpy_array(q) and not bool(np.any(tiny)):
        return q
    top = xp.max(q, axis=-1)
    if is_numpy_array(q):
        _, ex = np.frexp(top)
        scale = np.where(tiny, np.ldexp(1.0, np.clip(SCALE_BITS - ex, -1000, 1000)), 1.0)
    else:
        _, ex = top.frexp()
        k = xp.where(tiny, (SCALE_BITS - ex).clamp_(-1000, 1000), xp.zeros_like(ex))
        scale = xp.ones_like(top).ldexp_(k)
    return q * scale[:, None]


def series(
    q: Any, n: int, xp: Any, plan: tuple[int, int] | None = None, per_prefix: bool = False
) -> tuple[Any, Any]:
    r"""Q on every prefix k = 0..V and the certified bound per row, (B, V) float64 rows, n >= 2.

    ``plan`` = (heavy tokens m, Taylor order K) overrides :data:`PLANS` (the tests force early
    truncation with it).  ``per_prefix``: the bound of every prefix, (B, V + 1) (0 at the empty
    prefix), instead of their largest per row.  A row whose masses beyond its n - 1 largest are tiny (subnormal:
    :func:`tiny_rows`) is computed on :func:`scaled_rows`, the same law in a range where every
    quantity is a normal double.  numpy's overflow, underflow and invalid-value warnings (masses
    near the bottom of the range can still overflow the unused high-order heavy moments, and
    give ``0 * inf`` on prefixes whose value is then set exactly) are silenced here, and a bound
    that could not be formed is reported as ``inf``, never NaN.

    Examples
    --------
    >>> Q, err = series(np.array([[0.4, 0.1, 0.3, 0.2]]), 3, np)
    >>> round(float(Q[0, 3]), 12), bool(err[0] < 1e-12)  # Q({0, 1, 2}) = 76/315
    (0.24126984127, True)
    """
    if is_numpy_array(q):
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            return _series(scaled_rows(q, n, xp), n, xp, plan, per_prefix)
    return _series(scaled_rows(q, n, xp), n, xp, plan, per_prefix)


def _series(
    q: Any, n: int, xp: Any, plan: tuple[int, int] | None, per_prefix: bool = False
) -> tuple[Any, Any]:
    B, V = q.shape
    m_plan, K = plan if plan is not None else PLANS[n]
    m = min(m_plan, V)
    if m < n - 1:
        raise ValueError(f"plan: needs at least n - 1 = {n - 1} heavy tokens, got {m}")
    per_row = n_subsets(m, n) * (K + 1) * (m + 1)
    G = max(1, min(B, _HEAVY_ELEMS // per_row))
    if G >= B:
        return series_rows(q, n, xp, m, K, per_prefix)
    parts = [series_rows(q[g0 : g0 + G], n, xp, m, K, per_prefix) for g0 in range(0, B, G)]
    return xp.concat([Q for Q, _ in parts], axis=0), xp.concat([e for _, e in parts], axis=0)


def series_setup(
    q: Any,
    n: int,
    xp: Any,
    m: int,
    K: int,
    order: Any = None,
    inplace: bool = False,
    qmax: Any = None,
) -> dict[str, Any]:
    r"""The per-row part of the series: heavy tokens, their exact moments, the bound's weights.

    Everything that does not depend on the prefix: the m heaviest tokens A of each row (one
    ``topk``), the light scale :math:`\tau`, the moments :math:`\tilde J` of every heavy prefix set
    (:func:`mdsd_ot.fast._moments.heavy_moments`) and the per-segment coefficients of the error
    bound.  The heavy tokens are taken in *chain order*: ``order(idx)`` sorts the (B, m) heavy
    indices into the order in which the prefixes add them (default: by position, for q already
    in prefix order).  Returns a dict read by :func:`series_eval` (``heavy`` holds the ordered
    heavy indices, ``qlight`` the row with the heavy masses zeroed, ``tau`` the scale; with
    ``inplace=True`` the heavy masses are zeroed in ``q`` itself, which becomes ``qlight``, and
    no heavy mask is formed).  ``qmax``: the block maxima of this one numpy row ``q``
    (:func:`mdsd_ot.fast._fused.bucket_front`'s form, int64 bits), so that the compiled top-k
    reads only the blocks that can hold a heavy token (the same tokens, in the same order).
    """
    B, V = q.shape
    T_hi, T_lo, T_eta = accurate_sum(q, xp, extended=True)  # complements do not use T
    T = T_hi + T_lo
    if m < V:
        qtop, itop = bk.topk(q, m + 1, qmax)
        tau = qtop[:, m]  # the largest light mass
    else:
        qtop, itop = bk.topk(q, V)
        tau = xp.zeros_like(T)
    light = tau > 0.0
    heavy_pos = bk.sort_int(itop[:, :m]) if order is None else order(itop[:, :m])
    row = B == 1 and _series_jit.rows_ok(K, q)  # one numpy float64 row: the compiled route
    if row:
        qA = np.take(q[0], heavy_pos[0])[None, :]
    else:
        qA = q.gather(-1, heavy_pos) if is_torch_array(q) else np.take_along_axis(q, heavy_pos, -1)
    if inplace:
        hmask, qlight = None, bk.put(q, heavy_pos, 0.0)
    else:
        hmask = bk.mark(heavy_pos, q)
        qlight = xp.where(hmask, xp.zeros_like(q), q)

    # delta_a = d(top-a set) = light mass + heavy masses beyond the a largest, summed directly
    # (non-negative terms: relative accuracy theta_d however small, also for every d(D))
    L = _light_total(q, qlight, qA, (T_hi, T_lo, T_eta), xp)
    if row:  # the same operations, compiled
        delta, theta_d, delta_lo, tau = _series_jit.deltas_row(qtop, m, n, L, T, T_eta, tau, light)
    else:
        L_hi, L_lo, L_eta = L
        qL = L_hi + L_lo
        suffix = xp.flip(xp.cumulative_sum(xp.flip(qtop[:, :m], axis=-1), axis=-1), axis=-1)
        suffix = xp.concat([suffix, xp.zeros_like(suffix[:, :1])], axis=-1)  # (B, m + 1)
        delta = xp.stack([suffix[:, a] + qL for a in range(n)], axis=-1)  # (B, n)
        rel_L = xp.where(qL > 0, L_eta / xp.where(qL > 0, qL, xp.ones_like(qL)), xp.zeros_like(qL))
        theta_d = 1.01 * (gamma(float(m + 3 * n + 4)) + rel_L + T_eta / T)
        delta_lo = delta * (1.0 - 2.0 * theta_d)[:, None]
        # no light mass: the scale only enters the unused higher moments; tau <= d(D) for every
        # heavy set D keeps them bounded (a scale of 1 overflowed when d(D) is near 1e-16)
        tau = xp.where(light, tau, delta_lo[:, n - 1])

    J, D_J = heavy_moments(
        qA, T, delta, qtop[:, : n - 1], theta_d, tau, K, n, xp
    )  # (B, n, K+1, m+1)
    common = {
        "n": n,
        "K": K,
        "tau": tau,
        "heavy": heavy_pos,
        "hmask": hmask,
        "qlight": qlight,
        "kap": bk.const(q, ("kappa", K, n), lambda: kappa_table(K, n)),  # (K+1, n)
        # the mass beyond the n - 1 largest below 2^-TINY_BITS of the largest: the moments may
        # have overflowed or lost their subnormal masses (callers that cannot scale the row,
        # as series() does, refuse it)
        "refuse": delta[:, n - 1] < qtop[:, 0] * 2.0**-TINY_BITS,
    }
    if row:  # one row: compiled, the same bits
        wts = beta_weights(n, K)
        return common | _series_jit.setup_tail_row(J, D_J, tau, light, delta_lo, wts, K, n)
    Jc = [J[:, 0]]
    for a in range(1, n):
        Jc.append(Jc[-1] + J[:, a])
    Jh = xp.stack([Jc[n - 1 - l] for l in range(n)], axis=1)  # (B, n, K+1, m+1)
    D_J = D_J + n
    gJ = 1.0 + 2.0 * gamma(D_J)  # (B,)

    # per-segment coefficients of the error bound, (B, n, m+1)
    wts = bk.const(q, ("wts", n, K), lambda: beta_weights(n, K))  # (n, K+1)
    beta = [Jh[:, 0, 0]]
    tcoef = [xp.zeros_like(Jh[:, 0, 0])]
    for l in range(1, n):
        beta.append(xp.sum(wts[l][None, :, None] * Jh[:, l], axis=1))
        tc = xp.zeros_like(Jh[:, 0, 0])
        lk = float(l) ** K / math.factorial(l)
        for a in range(0, n - l):
            rho = xp.where(light, l * tau / delta_lo[:, a], xp.zeros_like(tau))
            tf = _tail_factor(K, a, rho, xp)  # (B,)
            JK = J[:, a, K] / float(math.factorial(K))  # 0 where A_s has no a-subset: no tail there
            # (float: an int K! > 2**63 overflows torch's int64 scalar)
            tc = tc + JK * xp.where(JK > 0, (lk * tf)[:, None], xp.zeros_like(JK))
        tcoef.append(tc)
    scale = (gJ * 1.01)[:, None, None]
    J0 = Jh[:, n - 1, :, 0]  # (B, K+1)
    hank = bk.const(q, ("hankel", K), lambda: np.add.outer(np.arange(K + 1), np.arange(K + 1)))
    J0p = xp.concat([J0, xp.zeros_like(J0)], axis=-1)
    return common | {
        "Jh": Jh,
        "J0": J0,
        "Ht": xp.reshape(xp.take(J0p, xp.reshape(hank, (-1,)), axis=1), (B, K + 1, K + 1)),
        "beta": xp.stack(beta, axis=1) * scale,
        "tcoef": xp.stack(tcoef, axis=1) * scale,
        "D_J": D_J,
    }


def _light_total(q: Any, qlight: Any, qA: Any, total: tuple, xp: Any) -> tuple[Any, Any, Any]:
    """The light mass ``sum(qlight)`` as (hi, lo, eta): with the compiled kernels, the total
    less the heavy masses by TwoSum steps when that keeps its relative accuracy
    (:func:`mdsd_ot.fast._fused.sum_less`: no second pass over the row), else a sum of the
    light row itself (:func:`mdsd_ot.fast._dd.accurate_sum`)."""
    if isinstance(q, np.ndarray) and q.dtype == np.float64 and _fused.enabled():
        out = _fused.sum_less(*total, np.asarray(qA))
        if out is not None:
            return out
    return accurate_sum(qlight, xp, extended=True)


def series_eval(
    ctx: dict[str, Any], pi: Any, sg: Any, lm: Any, npos: Any, D_cum: int, xp: Any
) -> tuple[Any, Any]:
    r"""Q and its certified error at C chain points per row, from additive statistics.

    ``pi`` (B, K+1, C): the light power sums :math:`\pi_j = \sum_{y \in L \cap H} (q_y/\tau)^j`
    of each point's set H (row 0 unused); ``sg`` (B, C): how many heavy tokens H holds (they enter
    in chain order); ``lm`` (B, C): :math:`\lambda = q(H^c)`; ``npos`` (B, C): how many tokens of
    positive mass H holds; ``D_cum``: the rounding depth of the sums that formed ``pi``.
    Returns (Q, bound), both (B, C).
    """
    n, K = ctx["n"], ctx["K"]
    Jh, J0, Ht, kap, beta, tcoef = (ctx[k] for k in ("Jh", "J0", "Ht", "kap", "beta", "tcoef"))
    D_Lam = (2 * K - 1) + D_cum + 2
    D_arith = (n - 1) * (K + n + 4) + 2 * (K + 2) + 3 * n + 10
    # one row: compiled, the same bits (numpy's order of the sums over k follows the layout of
    # pi: the kernels follow a C-contiguous one, as the callers form it)
    if _series_jit.rows_ok(K, pi, lm, Jh) and pi.flags.c_contiguous:
        return _series_jit.eval_row(ctx, pi, sg, lm, npos, D_cum, D_Lam, D_arith)
    gD = gamma(1.25 * (D_cum + 1 + ctx["D_J"] + (n - 1) * D_Lam + D_arith) + 20)[:, None]
    Lam = [None] + [kap[:, i][None, :, None] * pi for i in range(1, n)]
    c = [None] * n
    S = bk.take_seg(Jh[:, 0, 0:1], sg)[:, 0]
    for l in range(1, n - 1):
        acc = l * Lam[l]
        for i in range(1, l):
            acc = acc + i * _mul(Lam[i], c[l - i], i, l - i, K, xp)
        c[l] = acc / l
        S = S + xp.sum(c[l] * bk.take_seg(Jh[:, l], sg), axis=1)
    top = (n - 1) * xp.sum(Lam[n - 1] * J0[:, :, None], axis=1)
    for i in range(1, n - 1):
        top = top + i * xp.sum(Lam[i] * _matmul(Ht, c[n - 1 - i], xp), axis=1)
    S = S + top / (n - 1)
    Qc = 1.0 - lm * S
    p1 = pi[:, 1]
    s_abs = bk.take_seg(beta[:, 0:1], sg)[:, 0]
    tail = xp.zeros_like(p1)
    p1l = xp.ones_like(p1)
    for l in range(1, n):
        p1l = p1l * p1
        s_abs = s_abs + p1l * bk.take_seg(beta[:, l : l + 1], sg)[:, 0]
        tc = bk.take_seg(tcoef[:, l : l + 1], sg)[:, 0]
        tail = tail + xp.where(p1l > 0, p1l * tc, xp.zeros_like(tc))
    Bc = (gD * lm * s_abs + lm * tail + 1.01 * U) * (1.0 + 1e-6) + 1e-290
    exact0 = npos < n
    exact1 = lm == 0
    Qc = bk.clip(Qc, 0.0, 1.0)
    Qc = xp.where(exact0, xp.zeros_like(Qc), xp.where(exact1, xp.ones_like(Qc), Qc))
    Bc = xp.where(exact0 | exact1, xp.zeros_like(Bc), Bc)
    return Qc, Bc


def series_rows(
    q: Any, n: int, xp: Any, m: int, K: int, per_prefix: bool = False
) -> tuple[Any, Any]:
    """:func:`series` for a group of rows with the plan (m, K) fixed (the heavy part's size)."""
    B, V = q.shape
    ctx = series_setup(q, n, xp, m, K)
    seg = xp.cumulative_sum(xp.astype(ctx["hmask"], xp.int64), axis=-1)  # segment of prefix k+1
    npos = xp.cumulative_sum(xp.astype(q > 0, xp.int64), axis=-1)
    lam = xp.flip(cumsum_blocked(xp.flip(q, axis=-1), xp), axis=-1)  # q of tokens k.. (prefix k)
    lam = xp.concat([lam[:, 1:], bk.zeros(xp, (B, 1), q)], axis=-1)  # lambda of prefix k+1
    u = ctx["qlight"] / ctx["tau"][:, None]

    kind = bk.kind(q)
    C = min(V, max(_CHUNK_MIN[kind], _CHUNK_ELEMS[kind] // B))
    n_chunks = -(-V // C)
    D_cum = max(depth_cumsum(V), depth_cumsum(C) + n_chunks)
    carry = xp.zeros((B, K, 1), dtype=q.dtype, device=device(q))
    Q_parts, B_parts, bound = [], [], xp.zeros_like(ctx["tau"])
    for t0 in range(0, V, C):
        t1 = min(V, t0 + C)
        uc = u[:, t0:t1]
        pw = [uc]
        for _ in range(1, K):
            pw.append(pw[-1] * uc)
        Pi = cumsum_blocked(xp.stack(pw, axis=1), xp) + carry  # (B, K, C): prefixes t0+1..t1
        carry = Pi[:, :, -1:]
        pi = xp.concat([bk.zeros(xp, (B, 1, t1 - t0), q), Pi], axis=1)  # (B, K+1, C)
        Qc, Bc = series_eval(ctx, pi, seg[:, t0:t1], lam[:, t0:t1], npos[:, t0:t1], D_cum, xp)
        Q_parts.append(Qc)
        if per_prefix:
            B_parts.append(Bc)
        bound = xp.maximum(bound, xp.max(Bc, axis=-1))
    Q = xp.concat([bk.zeros(xp, (B, 1), q)] + Q_parts, axis=-1)
    if per_prefix:
        bound = xp.concat([bk.zeros(xp, (B, 1), q)] + B_parts, axis=-1)
    return Q, xp.where(xp.isnan(bound), xp.full_like(bound, math.inf), bound)
