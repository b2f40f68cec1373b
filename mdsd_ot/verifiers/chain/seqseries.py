r"""The law of a piece kernel under sequential drafts, n >= 3: a certified series on every cut.

At a cut c the low masses are :math:`w_x(c)` and (:mod:`.cutlaw`)

.. math::

   1 - \Phi(c) = \lambda(c) \sum_{m=0}^{n-1} \int_0^\infty e^{-Tt}\,
   e_m\bigl(\{e^{w_x(c) t} - 1\}_x\bigr)\, dt, \qquad \lambda(c) = T - \sum_x w_x(c),

the exponential-clock form of the sequential Q (docs/reference.md; ``proofs/T05_q_convexity.md``)
with the low parts as tokens and everything else as one outside token.  It is evaluated as the
fast solver evaluates prefixes (:mod:`mdsd_ot.fast.without`), generalised to fractional masses:

- the m heaviest tokens A (by q) are summed exactly: the scaled moments
  :math:`J_{a,k} = \tau^k k!\,[\omega^k] \sum_{D \subseteq A, |D| = a} G_D(\omega)` with
  :math:`G_\emptyset = 1/(T - \omega)`,
  :math:`G_D = (d(D) - \omega)^{-1} \sum_{x \in D} w_x G_{D \setminus x}`,
  :math:`d(D) = T - w(D)` in double-double; one evaluation per heavy configuration (the heavy
  masses change only at the heavy pieces), batched;
- the light tokens (mass at most τ) enter through the power sums
  :math:`\pi_j(c) = \sum_{y \notin A} (w_y(c)/\tau)^j` (cumulative sums of positive increments
  over the pieces) and :math:`\prod_y (1 + z(e^{u_y s} - 1)) = \exp(\sum_j \pi_j \kappa_j(z)
  s^j / j!)`, :math:`\kappa_j` the Bernoulli cumulants, truncated at :math:`z^{n-1}`, :math:`s^K`;
- truncation: :math:`c_{l,k} \le \pi_1^l\, l^k / (l!\,k!)` (the light factor is a product of
  series with non-negative coefficients) and
  :math:`J_{a,k}/k! \le \binom{k+a}{a} (\tau/\delta_a)^{k-K} J_{a,K}/K!`,
  :math:`\delta_a = T - (\text{top } a \text{ masses}) \le d(D)`: a geometric tail of ratio
  :math:`l\tau/\delta_a`; m is chosen per kernel by an estimated cost among the m whose
  ratio is at most 0.35 (:func:`choose_plan`), K from the ratio, then raised while the
  truncation part of the law bound, estimated on every cut, exceeds 1e-7;
- rounding: :math:`\gamma_D\,\lambda S_{abs}` with :math:`S_{abs}` the same sum with
  :math:`|\kappa|`, whose light factor is at most
  :math:`(1 - z(e^s - 1))^{-\pi_1}` coefficientwise.  The depth D counts the summation
  orders the code uses: the power sums blocked per chunk plus a carry
  (:func:`power_sums`, :func:`power_sum_depth`), each heavy token's masses summed in
  double-double over its own pieces (:func:`heavy_configs`), and their relative error carried
  into J
  (:func:`heavy_mass_depth`).

The law is :math:`T_x = \sum_{e \text{ of } x} [\Phi(e^+) - \Phi(e^-)]`; the returned bound is
:math:`2 \sum_c B(c)`, B(c) the bound of the cut.

Compiled passes (numba; :func:`kernels`, off without numba, with ``MDSD_OT_JIT=0`` or inside
:func:`mdsd_ot.fast._fused.disabled`, where the numpy code runs).  Two loops of
:mod:`._seqseries_nb` take the two costly steps, with the numpy route's floating-point
operations on the same operands:

- :func:`heavy_moments`: one pass over the heavy configurations, recomputing only the
  :math:`G_D` whose D holds the token whose mass changed (consecutive configurations differ in
  one heavy token); J sums the subsets in numpy's order.  *Bit-identical* (tested);
- the pass over the pieces (:func:`_pieces` in numpy): the Horner increments, the power sums
  (:func:`power_sums`' order, by a streaming blocked sum per chunk), the cumulant series, the
  sum with the heavy moments, Φ and the cut bound, blocks of ``_BLOCK`` pieces side by side.
  Everything but one sum is *bit-identical*, the reported bound included.  The exception is
  :math:`\sum_k c_{l,k}\,Jh_{l,k}`, formed by ``np.einsum`` in an order numpy does not
  document; the compiled pass adds the K + 1 products in index order from 0 (einsum's order on
  numpy 2.x, x86-64, where Φ and the law are then bit-identical too; tested when so).  Any
  order of K + 1 terms has rounding depth at most K, and the depth ``D_tot`` counts K + n for
  the final sums (these K + 1 products, then the n levels), so the rounding bound holds for
  both routes; elsewhere the two laws agree within that bound (tested to 1e-14 per slot).

The pass takes several *variants* that share the pieces and differ only in their heavy
moments and in λ by a constant (:func:`seq_series_subsets`, the :math:`2^{|S|}` series of
:mod:`.seqsingle`): the light part of a block once, then per variant the sum with its moments,
Φ and the bound; :func:`seq_series_cuts` is the one-variant case (the same bits as before).

Examples
--------
>>> import numpy as np
>>> from .pieces import identity_pieces
>>> from ...drafts import WithoutReplacement
>>> qs = np.array([0.4, 0.1, 0.3, 0.2])
>>> T, err = seq_series_law(qs, 3, identity_pieces(4))
>>> law = WithoutReplacement(qs, 3)
>>> ref = np.diff([float(law.Q(range(k))) for k in range(5)])  # Q(H_k), H_k = first k slots
>>> bool(np.abs(T - ref).max() < 1e-14), bool(err < 1e-12)
(True, True)
"""

from __future__ import annotations

import functools
import itertools
import math
from functools import cache
from typing import Any

import numpy as np

from ...fast import _fused
from ...fast._moments import beta_weights, kappa_table
from .cutlaw import U, before_after, blocked_cumsum, cumsum_depth, gamma, total_mass
from .pieces import PieceKernel

__all__ = [
    "seq_series_law", "seq_series_cuts", "seq_series_subsets", "choose_plan", "kernels",
    "heavy_moments", "heavy_configs", "heavy_mass_depth", "power_sums", "power_sum_depth",
    "rest_masses", "subset_bases",
]  # fmt: skip

_RHO_MAX = 0.35  # largest ratio of the light series' tail that choose_plan takes
_M_MAX = 40
_TAIL = 1e-7  # truncation part of the law bound (2 x its sum over the cuts) accepted as is
_K_CAP = 64  # the largest Taylor order the tail check raises K to
_CHUNK = 8192
_BLOCK = 64  # pieces side by side in the compiled pass (divides _CHUNK)


def kernels() -> dict[str, Any] | None:
    """The compiled passes of the series (:mod:`._seqseries_nb`), or None when they are off
    (no numba, ``MDSD_OT_JIT=0``, or inside :func:`mdsd_ot.fast._fused.disabled`).

    Examples
    --------
    >>> from mdsd_ot.fast._fused import disabled
    >>> with disabled():
    ...     kernels() is None
    True
    """
    if not _fused.enabled():
        return None
    return _compiled()


@functools.cache
def _compiled() -> dict[str, Any] | None:
    """The kernels by key (compiled or loaded from numba's disk cache on first call), or None
    without numba."""
    if _fused.jit_decorator() is None:
        return None
    from . import _seqseries_nb as nb

    return {"heavy": nb._k_heavy, "series": nb._k_series, "power_sums": nb._k_power_sums,
            "configs": nb._k_configs, "cut_counts": nb._k_cut_counts}  # fmt: skip


def choose_plan(
    qs: np.ndarray, n: int, pieces: np.ndarray | None = None, memo: dict | None = None
) -> tuple[np.ndarray, float, int, np.ndarray]:
    r"""Heavy slots, the largest light mass τ, the Taylor order K and δ_a (a = 0..n-1).

    The number m of heavy tokens (the heaviest by q), from :math:`\max(n - 1, 3)` to 40, is
    the one that minimises the estimated cost of the pass (:func:`_cost`: the heavy
    configurations, one per piece of a heavy token, times the subsets times the Taylor terms,
    plus the pieces times the Taylor terms) among those whose light series has the tail ratio
    :math:`\rho = (n - 1)\tau/\delta_{n-1} \le 0.35` (the largest m when none has).  K
    follows from ρ (:func:`_order`); the truncation bound of the series is reported whatever
    ρ is.  ``pieces``: the kernel's pieces per slot (V,); one each when omitted.  ``memo``: the
    :attr:`~.cutlaw.RowSums.memo` of this q, where the heaviest slots and δ are kept.

    The cost, not a fixed ratio, decides: with a flat draft law (every light token about as
    heavy as the next) more heavy tokens do not lower ρ, and making all of them heavy (as a
    fixed target ρ <= 0.12 did) took 168 s and 517 MB for n = 6 at V = 40.

    Examples
    --------
    >>> q = np.full(40, 0.5 / 39); q[0] = 0.5
    >>> heavy, tau, K, delta = choose_plan(q, 6)
    >>> len(heavy), K, bool(5 * tau / delta[5] <= 0.35)
    (5, 23, True)
    """
    V = len(qs)
    live = int(np.count_nonzero(qs))
    top_n = min(V, _M_MAX + 1)
    if memo is not None and ("top", n) in memo:  # q alone decides these: once per design
        idx, delta = memo[("top", n)]
    else:
        idx = np.argpartition(-qs, top_n - 1)[:top_n] if top_n < V else np.arange(V)
        idx = idx[np.lexsort((idx, -qs[idx]))]
        delta = rest_masses(qs, idx, n) * (1.0 - 1e-12)  # lower bounds (each within u)
        if memo is not None:
            memo[("top", n)] = (idx, delta)
    top = qs[idx]
    counts = np.ones(len(idx), np.int64) if pieces is None else np.asarray(pieces)[idx]
    P = len(qs) if pieces is None else int(np.sum(pieces))
    m_lo = min(max(n - 1, 3), live, len(top))
    m_hi = max(m_lo, min(_M_MAX, live, len(top)))  # m = live: every token heavy, tau = 0
    best: tuple[tuple[bool, float], int] | None = None
    for mm in range(m_lo, m_hi + 1):
        tau_m = float(top[mm]) if mm < len(top) and mm < live else 0.0
        rho = (n - 1) * tau_m / delta[n - 1] if tau_m > 0 else 0.0
        far = rho > _RHO_MAX
        key = (far, -mm if far else _cost(mm, n, _order(rho), counts, P))
        if best is None or key < best[0]:
            best = (key, mm)
        if tau_m == 0.0:  # no light token left
            break
    assert best is not None
    m = best[1]
    tau = float(top[m]) if m < len(top) and m < live else 0.0
    rho = (n - 1) * tau / delta[n - 1] if tau > 0 else 0.0
    return np.sort(idx[:m]), tau, _order(rho), delta


def _cost(m: int, n: int, K: int, counts: np.ndarray, P: int) -> float:
    """Estimated cost (ns on a 2-core x86-64 VM, measured) of the series pass with m heavy
    tokens: per heavy configuration (one per piece of a heavy token) the subsets of at most
    n - 1 heavy tokens times the K + 1 Taylor terms (about 12 ns each), and per piece the
    light series (about 5 (1/2 + n/8) ns per Taylor term and level)."""
    subsets = sum(math.comb(m, a) for a in range(min(n - 1, m) + 1))
    configs = 1 + int(counts[:m].sum())
    return 12.0 * configs * subsets * (K + 1) + 5.0 * P * (K + 1) * n * (0.5 + n / 8)


def _order(rho: float) -> int:
    r"""Taylor order K of the light series for the tail ratio ρ: :math:`\rho^K \le 10^{-19}`,
    clipped to 6..40 (1 without light tokens)."""
    if rho == 0:
        return 1
    return int(min(40, max(6, math.ceil(math.log(1e-19) / math.log(rho)))))


def rest_masses(qs: np.ndarray, top: np.ndarray, n: int) -> np.ndarray:
    r""":math:`\delta_a = \sum_{x \notin \text{top}_a} q_x` for a = 0..n-1, ``top`` the slots by
    decreasing q (at least min(V, n - 1) of them), each within u relative.

    The rest is summed, not subtracted from the total: :math:`T - q_{max}` in floating point
    loses every digit when the heaviest mass is within :math:`10^{-16}` of T (a draft that is
    almost a point mass), and may even come out negative.  :math:`\delta_{n-1}` is the
    correctly rounded sum of the masses outside the top n - 1 (:func:`~.cutlaw.total_mass`),
    :math:`\delta_a` the correctly rounded sum of it and the masses of the top slots a..n-2
    (``math.fsum``).

    Examples
    --------
    >>> qs = np.array([1e-20, 1.0, 2e-20])
    >>> rest_masses(qs, np.array([1, 2, 0]), 3).tolist()  # sum(qs) - 1.0 would be 0 here
    [1.0, 3e-20, 1e-20]
    """
    a_max = min(n - 1, len(qs))
    head = [float(x) for x in qs[top[:a_max]]]
    rest = qs.copy()
    rest[top[:a_max]] = 0.0
    last = float(total_mass(rest)[0])
    out = np.empty(n)
    for a in range(n):
        out[a] = math.fsum([last] + head[a:]) if a < a_max else last
    return out


def power_sums(inc: np.ndarray, chunk: int = _CHUNK) -> np.ndarray:
    r"""Inclusive cumulative sums along the last axis in the order of :func:`_pieces` (and of
    the compiled pass): :func:`~.cutlaw.blocked_cumsum` within each chunk of ``chunk`` terms,
    plus the running carry (the previous chunk's last value).  Rounding depth
    :func:`power_sum_depth`.

    Examples
    --------
    >>> x = np.arange(10.0)
    >>> bool(np.array_equal(power_sums(x, 4), np.cumsum(x)))
    True
    """
    out = np.empty(inc.shape)
    carry = np.zeros(inc.shape[:-1])
    for c0 in range(0, inc.shape[-1], chunk):
        out[..., c0 : c0 + chunk] = blocked_cumsum(inc[..., c0 : c0 + chunk]) + carry[..., None]
        carry = out[..., min(c0 + chunk, inc.shape[-1]) - 1].copy()
    return out


def power_sum_depth(P: int, chunk: int = _CHUNK) -> int:
    r"""Rounding depth of :func:`power_sums` on P terms: ``cumsum_depth(min(P, chunk)) +
    ceil(P / chunk)``.

    A term of chunk i reaches the value at a piece of chunk k >= i through at most
    ``cumsum_depth(chunk)`` additions inside its chunk's blocked sum (the depth of
    ``blocked_cumsum`` on at most ``chunk`` terms; it is non-decreasing in the length), then,
    for i < k, the addition of the carry in chunk i (the carry is that chunk's last value) and
    one carry addition in each of the chunks i + 1..k - 1 (the carry of chunk k - 1 is formed
    from chunk k - 1's blocked sum and its own carry), then the carry addition at the piece:
    ``cumsum_depth + (k - i) + 1 <= cumsum_depth + ceil(P / chunk)``.

    Examples
    --------
    >>> power_sum_depth(315_000), cumsum_depth(315_000), power_sum_depth(64)
    (168, 193, 64)
    """
    if P <= 0:
        return 0
    return cumsum_depth(min(P, chunk)) + -(-P // chunk)


def heavy_configs(dh: np.ndarray, th: np.ndarray, m: int) -> tuple[np.ndarray, int]:
    r"""The heavy masses after s heavy pieces (s = 0..H), (H + 1, m), and the most pieces of
    one heavy token: the masses ``dh`` (H,) of the heavy pieces in level order, ``th`` their
    heavy token (0..m-1).  Token t's column is the running sum of its own pieces' masses in
    double-double (Sum2 of Ogita, Rump and Oishi: a TwoSum chain, the result the rounded sum
    of the two parts), held between its pieces: relative error at most
    :math:`u + \gamma_{n_t - 1}^2` (non-negative terms), :math:`n_t` the token's pieces
    (:func:`heavy_mass_depth`).  Compiled when the kernels are on (the same operations).

    Examples
    --------
    >>> W, most = heavy_configs(np.array([0.1, 0.2, 0.3]), np.array([0, 1, 0]), 2)
    >>> W.tolist(), most
    ([[0.0, 0.0], [0.1, 0.0], [0.1, 0.2], [0.4, 0.2]], 2)
    """
    H = len(dh)
    Wc = np.zeros((H + 1, m))
    cnt = np.bincount(th, minlength=m) if H else np.zeros(m, dtype=np.int64)
    most = int(cnt.max(initial=0))
    if H == 0:
        return Wc, most
    ks = kernels()
    if ks is not None:
        ks["configs"](np.ascontiguousarray(dh, dtype=np.float64), th.astype(np.int64), Wc)
        return Wc, most
    # by rank inside the tokens, all tokens at once (rows padded with zeros: exact additions)
    o = np.argsort(th, kind="stable")
    start = np.concatenate([[0], np.cumsum(cnt)])
    rank = np.arange(H) - start[th[o]]
    M = np.zeros((m, most))
    M[th[o], rank] = dh[o]
    out = np.empty((m, most))
    hi, lo = np.zeros(m), np.zeros(m)
    for r in range(most):  # TwoSum(hi, x), lo += its error; out = fl(hi + lo)
        x = M[:, r]
        sm = hi + x
        bb = sm - hi
        lo = lo + ((hi - (sm - bb)) + (x - bb))
        hi = sm
        out[:, r] = hi + lo
    val = np.zeros(H + 1)
    val[o + 1] = out[th[o], rank]
    for t in range(m):  # held between the token's pieces
        at = np.flatnonzero(th == t)
        if len(at):
            Wc[at[0] + 1 :, t] = np.repeat(val[at + 1], np.diff(np.append(at, H)))
    return Wc, most


def heavy_mass_depth(most: int, K: int, n: int, m: int) -> float:
    r"""The heavy masses' relative error carried into the heavy moments J, as a rounding depth
    D (a relative error at most :math:`D u \le \gamma_D`; ``proofs/optimal_verifier.md``
    §4.3), ``most`` the most pieces of one of the m heavy tokens.

    Each computed mass, below the cut (:func:`heavy_configs`) or above it (the same on the
    pieces from the top), is :math:`\hat w_x = w_x(1 + \theta_x)`, :math:`|\theta_x| \le
    \eta = (1 + u)(1 + u + \gamma_{n_t - 1}^2) - 1`: the pieces' masses :math:`q \cdot prob`
    rounded (relative u), summed by a Sum2 chain (Ogita, Rump and Oishi 2005, Prop. 4.5:
    :math:`|\hat s - s| \le u|s| + \gamma_{N-1}^2 \sum |x_i|`, here :math:`\sum |x_i| = s`).
    The denominators are summed, never subtracted: :math:`d(D) = T - w(D) = b(D) + \sum_{x
    \in D} \bar w_x`, with :math:`b(D) = T - q(D)` the masses of the other tokens
    (:func:`subset_bases`, relative error :math:`\epsilon_b \le u + \gamma_{m+1}^2(1 + 2u) +
    u^2`) and :math:`\bar w_x = q_x - w_x` the token's mass above the cut; so
    :math:`\hat d(D) = d(D)(1 + \phi)`, :math:`|\phi| \le \eta_d = (1 + \max(\epsilon_b,
    \eta))(1 + u)^{n-1} - 1`, whatever T - w(D) is (a draft within :math:`10^{-12}` of a point
    mass included: T - w(D) computed by subtraction would carry :math:`\eta\, w(D)/d(D)`).
    Unrolled, :math:`G_D(\omega)` is a sum of non-negative terms :math:`\prod_{i \le a}
    w_{x_i} \prod_{i=0}^{a} (d(D_i) - \omega)^{-1}` over the orderings of D
    (:math:`D_0 = \emptyset`, :math:`d(D_0) = T` exact), and :math:`[\omega^k]` of the product
    is a sum of :math:`\prod_i d(D_i)^{-(k_i + 1)}`, with exponent at most k + a over the
    perturbed :math:`d(D_i)`, i >= 1.  So every term of :math:`J_{a,k}`, and :math:`J_{a,k}`
    itself, is scaled by a factor in :math:`[(1-\eta)^{n-1} (1 + \eta_d)^{-(K+n-1)},
    (1+\eta)^{n-1} (1 - \eta_d)^{-(K+n-1)}]`; the returned D is the larger distance of the
    two from 1, over u (rounded up by one).

    Examples
    --------
    >>> D = heavy_mass_depth(21_000, 20, 4, 12)
    >>> 110 < D < 130
    True
    """
    if most == 0:
        return 0.0
    eta = (2 * U + U * U + gamma(most) ** 2 * (1 + U)) * (1 + 1e-6)
    eps_b = (U + gamma(m + 1) ** 2 * (1 + 2 * U) + U * U) * (1 + 1e-6)
    eta_d = math.expm1(math.log1p(max(eps_b, eta)) + (n - 1) * math.log1p(U)) * (1 + 1e-6)
    e = K + n - 1
    up = math.expm1((n - 1) * math.log1p(eta) - e * math.log1p(-eta_d))
    lo = -math.expm1((n - 1) * math.log1p(-eta) - e * math.log1p(eta_d))
    return max(up, lo) * (1 + 1e-6) / U + 1


def subset_bases(qh: np.ndarray, L_hi: float, L_lo: float, n: int) -> np.ndarray:
    r""":math:`b(D) = T - q(D)` for the subsets D of the m heavy tokens of sizes 0..min(n-1, m),
    in :func:`_flat_layers`' order (0: the empty set, b = T): the light total
    :math:`L = L_{hi} + L_{lo}` (a double-double) plus the masses ``qh`` of the heavy tokens
    outside D, by a Sum2 chain (TwoSum, then fl(hi + lo)): relative error at most
    :math:`u + \gamma_{m+1}^2(1 + 2u)` of the sum, all terms but :math:`L_{lo}` non-negative
    (:func:`heavy_mass_depth`).  Summed, not subtracted: for a draft near a point mass
    :math:`T - q_{max}` has no correct digit.

    Examples
    --------
    >>> b = subset_bases(np.array([1.0, 2.0**-100]), 2.0**-101, 0.0, 3)  # {}, {0}, {1}, {0, 1}
    >>> b.tolist() == [1.0, 3 * 2.0**-101, 1.0, 2.0**-101]  # T - 1.0 would be 0 for {0}
    True
    """
    m = len(qh)
    layers = _layers(m, n)
    member = [np.zeros((1, m), dtype=bool)]
    for sub, _ in layers:
        mb = np.zeros((len(sub), m), dtype=bool)
        np.put_along_axis(mb, sub, True, axis=1)
        member.append(mb)
    inside = np.concatenate(member)
    hi = np.full(len(inside), float(L_hi))
    lo = np.full(len(inside), float(L_lo))
    for t in range(m):  # TwoSum(hi, x), lo += its error (x = 0 for members: exact)
        x = np.where(inside[:, t], 0.0, float(qh[t]))
        sm = hi + x
        bb = sm - hi
        lo = lo + ((hi - (sm - bb)) + (x - bb))
        hi = sm
    return hi + lo


@cache
def _layers(m: int, n: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Subsets of range(m) of sizes 1..min(n-1, m): per size, the members (N_a, a) and, for
    each member position r, the index of the subset less that member in the previous size."""
    out = []
    prev_index = {(): 0}
    for a in range(1, min(n - 1, m) + 1):
        subs = list(itertools.combinations(range(m), a))
        index = {D: i for i, D in enumerate(subs)}
        ranks = np.array([[prev_index[D[:r] + D[r + 1 :]] for r in range(a)] for D in subs])
        out.append((np.array(subs, dtype=np.int64), ranks.T.copy()))
        prev_index = index
    return tuple(out)


@cache
def _flat_layers(m: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_layers` by global index (0: the empty set; size a holds ``lay[a] <= i <
    lay[a + 1]``, in :func:`_layers`' order): the members ``mem`` (N, max(1, A)), the global
    index ``par[i, r]`` of the subset less member r and the members' bit set ``mask`` (N,),
    for the compiled pass (m <= 62)."""
    layers = _layers(m, n)
    lay = np.cumsum([0, 1] + [len(sub) for sub, _ in layers]).astype(np.int64)
    mem = np.zeros((int(lay[-1]), max(1, len(layers))), dtype=np.int64)
    par = np.zeros_like(mem)
    mask = np.zeros(len(mem), dtype=np.int64)
    for a, (sub, ranks) in enumerate(layers, start=1):
        mem[lay[a] : lay[a + 1], :a] = sub
        par[lay[a] : lay[a + 1], :a] = ranks.T + lay[a - 1]
        mask[lay[a] : lay[a + 1]] = np.left_shift(np.int64(1), sub).sum(axis=1)
    return lay, mem, par, mask


def _g0(T_hi: float, T_lo: float, tau: float, K: int) -> tuple[np.ndarray, np.ndarray]:
    """``k tau`` (k = 0..K) and the moments of :math:`G_\\emptyset`."""
    T = T_hi + T_lo
    kt = np.arange(K + 1) * tau
    g0 = np.empty(K + 1)
    g0[0] = 1.0 / T
    for k in range(1, K + 1):
        g0[k] = kt[k] * g0[k - 1] / T
    return kt, g0


def heavy_moments(
    W: np.ndarray,
    above: np.ndarray,
    base: np.ndarray,
    T_hi: float,
    T_lo: float,
    tau: float,
    K: int,
    n: int,
) -> np.ndarray:
    r"""Scaled moments :math:`J_{a,k}` (S, n, K+1) of the heavy configurations ``W`` (S, m):
    compiled when the kernels are on, else :func:`_heavy` in batches; bit-identical.

    ``above`` (S, m) holds the heavy tokens' masses above the cut and ``base`` the
    :func:`subset_bases`: :math:`d(D) = b(D) + \sum_{x \in D} \bar w_x`, summed in member
    order (:func:`heavy_mass_depth`).

    The compiled pass goes through the configurations in order, keeping every
    :math:`G_D`; a :math:`G_D` depends only on the masses of D's members (and T, τ), so only
    the subsets holding a token whose mass differs from the previous configuration's (one token
    between consecutive configurations of :func:`seq_series_law`) are recomputed, by the same
    operations as :func:`_heavy` on the same operands (a recomputation with the same inputs
    gives the same bits).  :math:`J_{a,k}` sums the layer's :math:`G_D` in subset order,
    ``((G_1 + G_2) + G_3) + ...``: the order of numpy's ``g.sum(axis=1)`` on the C-ordered
    (S, N_a, K+1) array, whose reduced axis is not the innermost one, so numpy adds the rows
    one after the other (no pairwise summation; checked in ``tests/verifiers/
    test_seqseries_jit.py``).

    Examples
    --------
    >>> W = np.array([[0.3, 0.2], [0.3, 0.25]])
    >>> qh = np.array([0.3, 0.3])
    >>> base = subset_bases(qh, 0.4, 0.0, 3)
    >>> J = heavy_moments(W, qh - W, base, 1.0, 0.0, 0.1, 3, 3)
    >>> with _fused.disabled():
    ...     J0 = heavy_moments(W, qh - W, base, 1.0, 0.0, 0.1, 3, 3)
    >>> J.shape, bool(np.array_equal(J, J0))
    ((2, 3, 4), True)
    """
    S, m = W.shape
    ks = kernels()
    if ks is None or S == 0 or m > 62:
        step_s = max(1, 2**22 // (max(1, math.comb(m, min(n - 1, m))) * (K + 1)))
        return np.concatenate([_heavy(W[i : i + step_s], above[i : i + step_s], base, T_hi,
                                      T_lo, tau, K, n)
                               for i in range(0, max(S, 1), step_s)])[:S]  # fmt: skip
    kt, g0 = _g0(T_hi, T_lo, tau, K)
    lay, mem, par, mask = _flat_layers(m, n)
    J = np.zeros((S, n, K + 1))
    J[:, 0, :] = g0
    N = int(lay[-1])
    G, dd, todo = np.empty((N, K + 1)), np.empty(N), np.empty(N, dtype=np.int64)
    wv, pv = np.empty(mem.shape), np.empty(mem.shape, dtype=np.int64)
    W = np.ascontiguousarray(W, dtype=np.float64)
    above = np.ascontiguousarray(above, dtype=np.float64)
    base = np.ascontiguousarray(base, dtype=np.float64)
    ks["heavy"](
        W, above, base, kt, g0, mem, par, mask, lay, J, G, dd, todo, np.empty(K + 1), wv, pv,
    )  # fmt: skip
    return J


def _heavy(
    W: np.ndarray,
    above: np.ndarray,
    base: np.ndarray,
    T_hi: float,
    T_lo: float,
    tau: float,
    K: int,
    n: int,
) -> np.ndarray:
    r"""Scaled moments :math:`J_{a,k}` (S, n, K+1) for S heavy configurations ``W`` (S, m),
    their masses ``above`` the cut and the :func:`subset_bases` ``base``."""
    S, m = W.shape
    kt, g0 = _g0(T_hi, T_lo, tau, K)
    J = np.zeros((S, n, K + 1))
    J[:, 0, :] = g0
    prev = np.broadcast_to(g0, (S, 1, K + 1))
    layers = _layers(m, n)
    lay = np.cumsum([0, 1] + [len(sub) for sub, _ in layers])  # _flat_layers' index ranges
    for a, (sub, ranks) in enumerate(layers, start=1):
        w = W[:, sub]  # (S, N_a, a)
        d = np.broadcast_to(base[lay[a] : lay[a + 1]], (S, len(sub)))
        for r in range(a):  # d(D) = b(D) + the members' masses above the cut, in member order
            d = d + above[:, sub[:, r]]
        f = w[:, :, 0:1] * prev[:, ranks[0], :]
        for r in range(1, a):
            f += w[:, :, r : r + 1] * prev[:, ranks[r], :]
        g = np.empty_like(f)
        g[:, :, 0] = f[:, :, 0] / d
        for k in range(1, K + 1):
            g[:, :, k] = (f[:, :, k] + kt[k] * g[:, :, k - 1]) / d
        J[:, a, :] = g.sum(axis=1)
        prev = g
    return J


def seq_series_law(
    qs: np.ndarray, n: int, kern: PieceKernel, total: tuple[float, float] | None = None
) -> tuple[np.ndarray, float]:
    r"""Law by slot of the piece kernel under sequential drafts (n >= 3) and a bound on
    :math:`\sum_x |\hat T_x - T_x|` (module docstring; compiled passes with numba).

    Parameters
    ----------
    qs : numpy.ndarray
        The draft law's q (V,).
    n : int
        Number of drafts, at least 3.
    kern : PieceKernel
        The piece kernel.
    total : tuple of float, optional
        :func:`~.cutlaw.total_mass` of ``qs`` (computed when omitted).

    Returns
    -------
    T : numpy.ndarray
        The law by slot (V,).
    bound : float
        The certified bound on the law's total error.
    """
    Phi, bound = seq_series_cuts(qs, n, kern, total)
    return np.bincount(kern.tok, np.diff(Phi), len(qs)), 2.0 * float(bound.sum())


def seq_series_cuts(
    qs: np.ndarray, n: int, kern: PieceKernel, total: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`\Phi(c)` on the cuts c = 0..P of the piece kernel (P pieces; cut c lies above
    the first c pieces) and a bound on :math:`|\hat\Phi(c) - \Phi(c)|` per cut, for
    :func:`seq_series_law` (the module docstring's series).

    Examples
    --------
    >>> import numpy as np
    >>> from .pieces import identity_pieces
    >>> Phi, bound = seq_series_cuts(np.array([0.4, 0.1, 0.3, 0.2]), 3, identity_pieces(4))
    >>> Phi[0], Phi[-1], bool(bound.max() < 1e-13)
    (np.float64(0.0), np.float64(1.0), True)
    """
    out = _series_cuts(qs, n, kern, total, np.empty(0, np.int64), np.zeros((1, 0), bool))
    assert out is not None
    Phi, bound = out
    return Phi[0], bound[0]


def seq_series_subsets(
    qs: np.ndarray,
    n: int,
    kern: PieceKernel,
    single: np.ndarray,
    low: np.ndarray,
    total: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    r""":func:`seq_series_cuts` of the derived kernels of :mod:`.seqsingle` in one pass over
    the pieces: for each row A of ``low`` (NV, \|S\|) the kernel of the pieces of ``kern`` (none
    of them on the slots ``single`` = S) with the slots of S where A is True as one piece each
    at the bottom and the others as one piece each at the top.  Row u holds Φ and the cut
    bound at the cuts \|A\| + r (r = 0..P) of that kernel, i.e. above r of ``kern``'s pieces;
    the cuts below the bottom pieces and above the top ones are not returned.  None when a slot
    of S is not among :func:`choose_plan`'s heavy slots (the light part then differs between
    the kernels).

    The heavy slots, τ, K and the light pieces (those of ``kern`` on light slots) are the same
    for every derived kernel, so the Horner increments, the power sums (now over ``kern``'s
    pieces, chunks from its first piece) and the cumulant series are formed once; per row
    the heavy configurations are ``kern``'s with the masses of S fixed (:math:`q_h` below,
    0 above: the derived kernels' configurations above the bottom pieces, the same bits), and
    their moments, :math:`\lambda = \lambda_{kern} + \sum_{h \notin A} q_h` (one more rounding
    per addend: depth ``cumsum_depth(P) + |S|`` in place of ``cumsum_depth(P')``), the
    exact-zero rule with \|A\| more tokens below the cut, and the rounding depths of
    :func:`seq_series_cuts` with P pieces (the most pieces of a heavy token at least 1).

    Examples
    --------
    >>> import numpy as np
    >>> from .pieces import PieceKernel, _csr
    >>> qs = np.array([0.1, 0.2, 0.6, 0.1])
    >>> tok = np.array([0, 1, 3])  # one piece per slot, but none for slot 2 = S
    >>> rest = PieceKernel(tok, np.ones(3), *_csr(tok, 4))
    >>> F, B = seq_series_subsets(qs, 3, rest, np.array([2]), np.array([[False], [True]]))
    >>> F.shape, bool(F[1, -1] == 1.0), bool(B.max() < 1e-12)
    ((2, 4), True, True)
    """
    return _series_cuts(qs, n, kern, total, np.asarray(single, np.int64), np.asarray(low, bool))


def _series_cuts(
    qs: np.ndarray,
    n: int,
    kern: PieceKernel,
    total: tuple[float, float] | None,
    single: np.ndarray,
    low: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`seq_series_cuts` (``single`` empty, one row) and :func:`seq_series_subsets`."""
    V = len(qs)
    memo = getattr(total, "memo", None)  # a RowSums: the per-row sums of earlier laws
    heavy, tau, K, delta = choose_plan(qs, n, np.bincount(kern.tok, minlength=V), memo)
    m = len(heavy)
    hpos = np.full(V, -1)
    hpos[heavy] = np.arange(m)
    if np.any(hpos[single] < 0):
        return None
    T_hi, T_lo = total or total_mass(qs)
    d = kern.mass(qs)
    v, after, kmax = before_after(kern, d)
    P = len(d)
    NV = len(low)
    hp = hpos[kern.tok]
    is_h = hp >= 0
    # heavy configurations: after s heavy pieces (s = 0..H), per row the masses of S fixed
    ev = np.flatnonzero(is_h)
    Wc, most = heavy_configs(d[ev], hp[ev], m)
    Wr, _ = heavy_configs(d[ev][::-1], hp[ev][::-1], m)  # the masses above: from the top
    if len(single):
        most = max(most, 1)  # the derived kernels' one piece per slot of S
    Hc = len(Wc)
    W = np.tile(Wc, (NV, 1))
    Wa = np.tile(Wr[::-1], (NV, 1))
    for i, h in enumerate(single.tolist()):
        W[:, hpos[h]] = np.repeat(np.where(low[:, i], qs[h], 0.0), Hc)
        Wa[:, hpos[h]] = np.repeat(np.where(low[:, i], 0.0, qs[h]), Hc)
    key = ("lights", heavy.tobytes())
    if memo is not None and key in memo:
        light_hi, light_lo = memo[key]
    else:
        lights = qs.copy()
        lights[heavy] = 0.0
        light_hi, light_lo = total_mass(lights)
        if memo is not None:
            memo[key] = (light_hi, light_lo)
    base = subset_bases(qs[heavy], light_hi, light_lo, n)  # T - q(D), summed
    ks = kernels()
    if ks is not None:  # the three running counts and sums below, in one compiled pass
        seg, light_sum, first = (
            np.empty(P + 1, np.int64),
            np.empty(P + 1),
            np.empty(P + 1, np.int64),
        )
        ks["cut_counts"](is_h.view(np.uint8), d, v, seg, light_sum, first)
    else:
        seg = np.concatenate([[0], np.cumsum(is_h)])  # configuration of cut c (c = 0..P)
        light_sum = np.concatenate([[0.0], np.cumsum(np.where(~is_h, d, 0.0))])
        first = np.concatenate([[0], np.cumsum((v == 0) & (d > 0))])  # tokens with mass at c
    light = ~is_h
    # lambda: mass above the cut (reverse cumulative sum of the piece masses), per row plus the
    # masses of S above every cut (summed in the order of S)
    lam = np.concatenate([blocked_cumsum(d[::-1])[::-1], [0.0]])
    lam_off = np.zeros(NV)
    for i, h in enumerate(single.tolist()):
        lam_off = lam_off + np.where(low[:, i], 0.0, qs[h])
    # the Taylor order: choose_plan's K, raised while the truncation part of the law bound
    # (2 sum_c lambda sum_l pi_1^l tail_l, estimated on every cut) exceeds _TAIL: its terms
    # c_{l,k} start at k = l, so many light tokens near tau and a large n need more orders
    # than the tail ratio alone says (n = 8, V = 2,000, a flat rest: a law bound of 1e-3)
    pi1 = light_sum / tau if tau > 0 else None
    lam_hi = lam + float(lam_off.max(initial=0.0))
    while True:
        J = heavy_moments(W, Wa, base, T_hi, T_lo, tau, K, n)
        tail = _tail_table(J, tau, delta, K, n)
        if pi1 is None or K >= _K_CAP:
            break
        worst_cfg = tail.reshape(NV, Hc, n).max(axis=0)[seg]  # (P + 1, n)
        est = lam_hi * sum(pi1**l * worst_cfg[:, l] for l in range(1, n))
        if not 2.0 * float(est.sum()) > _TAIL:  # a nan tail is left to the bound
            break
        K = min(_K_CAP, K + max(2, n - 1))
    Jh = np.ascontiguousarray(np.cumsum(J, axis=1)[:, ::-1, :])  # Jh[:, l] = sum_{a<=n-1-l} J_a
    n_low = (low & (qs[single] > 0)[None, :]).sum(axis=1)  # the bottom pieces' tokens
    kap = kappa_table(K, n)
    surj = beta_weights(n, K)
    beta = np.stack(
        [Jh[:, 0, 0]] + [(surj[l] * Jh[:, l]).sum(axis=1) for l in range(1, n)], axis=1
    )  # (NV Hc, n)
    Jh = Jh.reshape(NV, Hc, n, K + 1)
    beta = beta.reshape(NV, Hc, n)
    tail = tail.reshape(NV, Hc, n)
    # rounding depths: heavy moments (d(D) to relative 4u: 8 per Taylor order and level, plus
    # the sum over subsets), the heavy masses' error carried into J (D_W), power sums (Horner
    # 2K, the chunked blocked cumulative sums, :func:`power_sum_depth`), the cumulant
    # recursion (n - 1 levels of K-term convolutions), the final sums and lambda (with the
    # masses of S above the cut: one addition per slot of S)
    n_sub = max((math.comb(m, a) for a in range(min(n - 1, m) + 1)), default=1)
    D_J = (n - 1) * (K + 1) * 8 + n_sub + n + 4
    D_W = heavy_mass_depth(most, K, n, m)
    D_pi = power_sum_depth(P) + 2 * K + kmax + 6
    D_c = (n - 1) * (D_pi + K + 6)
    D_lam = cumsum_depth(P) + len(single)
    D_tot = 1.25 * (D_J + D_W + D_c + K + n + D_lam + 12) + 20
    g_tot = gamma(D_tot)
    Phi = np.empty((NV, P + 1))
    bound = np.zeros((NV, P + 1))
    ks = kernels()
    if ks is not None and P:
        ks["series"](
            d, v, light.view(np.uint8), seg, lam, lam_off, Jh, beta, tail, kap,
            float(tau), n, _CHUNK, g_tot, Phi, bound, _BLOCK,
        )  # fmt: skip
    else:
        _pieces(d, v, light, seg, lam, lam_off, Jh, beta, tail, kap, tau, n, g_tot, Phi, bound)
    n_top = (~low).sum(axis=1)
    for u in range(NV):
        if not low[u].any():  # cut 0 of the derived kernel
            Phi[u, 0] = 0.0
        else:  # just above the bottom pieces: pi = 0, so c_{l,k} = [l = k = 0], configuration 0
            lm = lam[0] + lam_off[u]
            Phi[u, 0] = 1.0 - lm * Jh[u, 0, 0, 0]
            bound[u, 0] = (g_tot * lm * beta[u, 0, 0] + 4 * U) * (1 + 1e-6)
        exact0 = first + n_low[u] < n
        Phi[u, exact0] = 0.0
        bound[u, exact0] = 0.0
        if n_top[u] == 0:  # the last cut of the derived kernel
            Phi[u, -1] = 1.0
            bound[u, -1] = 0.0
    np.clip(Phi, 0.0, 1.0, out=Phi)
    return Phi, bound


def _tail_table(J: np.ndarray, tau: float, delta: np.ndarray, K: int, n: int) -> np.ndarray:
    r"""Tail coefficient per configuration and level l (S, n):
    :math:`\frac{l^K}{l!} \sum_a \frac{J_{a,K}}{K!} \sum_{j \ge 1} \binom{K+j+a}{a} \rho^j`,
    :math:`\rho = l\tau/\delta_a` (inf where the geometric bound diverges); the cut's
    truncation bound is :math:`\lambda \sum_l \pi_1^l` times it."""
    tail = np.zeros((len(J), n))
    for l in range(1, n):
        lk = float(l) ** K / math.factorial(l)
        for a in range(0, n - l):
            rho = l * tau / (delta[a] * (1 - 1e-12)) if tau > 0 else 0.0
            r = rho * (K + 2 + a) / (K + 2)
            tf = math.comb(K + 1 + a, a) * rho / (1 - r) if r < 1 else math.inf
            tail[:, l] += J[:, a, K] / math.factorial(K) * lk * tf
    return tail


def _pieces(
    d: np.ndarray,
    v: np.ndarray,
    light: np.ndarray,
    seg: np.ndarray,
    lam: np.ndarray,
    lam_off: np.ndarray,
    Jh: np.ndarray,
    beta: np.ndarray,
    tail: np.ndarray,
    kap: np.ndarray,
    tau: float,
    n: int,
    g_tot: float,
    Phi: np.ndarray,
    bound: np.ndarray,
) -> None:
    """The numpy route of the pass over the pieces, in chunks: per chunk the light part once
    (:func:`_light_chunk`), then per row u of the heavy moments ``Jh`` (NV, Hc, n, K+1),
    ``beta``, ``tail`` and λ = ``lam + lam_off[u]``, Φ and the cut bound of the cuts 1..P to
    ``Phi[u]`` and ``bound[u]``."""
    P = len(d)
    K = kap.shape[0] - 1
    carry = np.zeros(K + 1)
    for c0 in range(0, P, _CHUNK):
        c1 = min(P, c0 + _CHUNK)
        pi, cser, carry = _light_chunk(d, v, light, kap, tau, n, c0, c1, carry)
        sg = seg[c0 + 1 : c1 + 1]
        for u in range(len(lam_off)):
            S = np.zeros(c1 - c0)
            for l in range(n):
                S += np.einsum("kc,ck->c", cser[l], Jh[u, sg, l, :])
            lm = lam[c0 + 1 : c1 + 1] + lam_off[u]
            Phi[u, c0 + 1 : c1 + 1] = 1.0 - lm * S
            p1 = pi[1]
            s_abs = beta[u, sg, 0].copy()
            tl = np.zeros(c1 - c0)
            B_l = np.ones(c1 - c0)
            p1l = np.ones(c1 - c0)
            for l in range(1, n):
                B_l = B_l * (p1 + l - 1) / l  # binom(pi_1 + l - 1, l): |kappa| majorant
                p1l = p1l * p1  # c_{l,k} <= pi_1^l l^k / (l! k!), l^K / l! is in ``tail``
                s_abs += B_l * beta[u, sg, l]
                tl += p1l * tail[u, sg, l]
            bound[u, c0 + 1 : c1 + 1] = (g_tot * lm * s_abs + lm * tl + 4 * U) * (1 + 1e-6)


def _light_chunk(
    d: np.ndarray,
    v: np.ndarray,
    light: np.ndarray,
    kap: np.ndarray,
    tau: float,
    n: int,
    c0: int,
    c1: int,
    carry: np.ndarray,
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """The light part of :func:`_pieces` on the pieces c0..c1-1: the power sums (K+1, C)
    (:func:`power_sums`' order, from ``carry``), the cumulant series c_l (n arrays (K+1, C))
    and the next carry."""
    K = kap.shape[0] - 1
    sl = slice(c0, c1)
    z = np.where(light[sl], d[sl] / tau if tau > 0 else 0.0, 0.0)
    vv = np.where(light[sl], v[sl] / tau if tau > 0 else 0.0, 0.0)
    up = vv + z
    inc = np.zeros((K + 1, c1 - c0))
    pw_up = np.ones(c1 - c0)
    for j in range(1, K + 1):  # sum_{i<j} up^i vv^(j-1-i), by a Horner step
        pw_up_prev = pw_up
        pw_up = pw_up * up
        inc[j] = (inc[j - 1] * vv if j > 1 else 0.0) + pw_up_prev
    inc[1:] *= z
    pi = blocked_cumsum(inc) + carry[:, None]  # pi_j after each piece (power_sums' order)
    C = c1 - c0
    Lam = [None] + [kap[:, i][:, None] * pi for i in range(1, n)]
    cser = [np.zeros((K + 1, C)) for _ in range(n)]
    cser[0][0] = 1.0
    for l in range(1, n):
        acc = l * Lam[l]
        for i in range(1, l):
            prod = np.zeros((K + 1, C))
            for jj in range(1, K + 1):
                prod[jj:] += Lam[i][jj : jj + 1] * cser[l - i][: K + 1 - jj]
            acc = acc + i * prod
        cser[l] = acc / l
    return pi, cser, pi[:, -1].copy()
