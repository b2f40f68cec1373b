r"""Exact selection laws of piece kernels (proofs/optimal_verifier.md, §4), with error bounds.

For a :class:`~mdsd_ot.verifiers.chain.pieces.PieceKernel` let :math:`w_x(c)` be the mass of
token x's pieces at or below the cut c.  The rule selects the draft whose piece is highest, so
the selected piece is e iff every piece is at or below e and one of them is e:

.. math:: T_x = \sum_{e \text{ of } x} \bigl[\Phi(w(e^+)) - \Phi(w(e^-))\bigr].

**Conditional Poisson** (each drafted token picks one piece): :math:`\Phi(w) = e_n(w)/e_n(q)`,
multilinear, so a piece of mass δ of token x (whose earlier pieces hold v) adds
:math:`\delta\, e_{n-1}(w \setminus x)` with
:math:`e_{m}(w \setminus x) = \sum_i (-v)^i e_{m-i}(w)` (one term unless x is split).  Each level
m is a cumulative sum over the pieces of the level below (:func:`cp_law`).

**Sequential** (every draw of the stopped stream picks a piece, independently): by Poisson
thinning the low and high draws of x are independent streams of rates :math:`w_x` and
:math:`q_x - w_x`, so :math:`\Phi(w)` is the sequential :math:`Q` of the low parts against one
outside token of mass :math:`T - W` (:math:`T = \sum q`, :math:`W = \sum w`).  For n = 1,
:math:`\Phi = W/T`; for n = 2,

.. math::

   \Phi(w) = \frac1T \sum_a \frac{w_a (W - w_a)}{T - w_a}, \qquad
   \Delta\Phi = \delta\Bigl[\frac{W_{-x}}{(T - v)(T - v - \delta)} + \frac{S_{-x}}{T}\Bigr],

:math:`S_{-x} = \sum_{a \ne x} w_a / (T - w_a)`, every term positive (:func:`seq_law`); n >= 3
uses the certified series of :mod:`.seqseries`.

Error bounds: every quantity is a sum of products of non-negative inputs except the deflation
terms of split tokens, so the computed law differs from the law of the (rounded) kernel by at
most :math:`\gamma_D` times the same computation in absolute values (Higham, Lemma 3.3), D the
rounding depth (blocked cumulative sums keep it in the hundreds).

Examples
--------
>>> import numpy as np
>>> from .pieces import identity_pieces
>>> qs = np.array([0.5, 0.3, 0.2])
>>> T, err = cp_law(qs, 2, identity_pieces(3))  # e_2 increments: 0, .15, .16 over .31
>>> T.round(6).tolist(), bool(err < 1e-13)
([0.0, 0.483871, 0.516129], True)
>>> T, err = seq_law(qs, 2, identity_pieces(3))  # Q(H_2) = 18/35 sequentially (T12)
>>> T.round(6).tolist()
[0.0, 0.514286, 0.485714]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...drafts.sampling import scale_exponent
from . import _cutjit
from .pieces import PieceKernel, dominant_slots

__all__ = [
    "U", "gamma", "blocked_cumsum", "cumsum_depth", "before_after", "total_mass", "cp_law",
    "seq_law",
]  # fmt: skip

#: Unit roundoff of float64.
U: float = 2.0**-53
_BLOCK = 64


def gamma(D: float) -> float:
    r""":math:`\gamma_D = D u / (1 - D u)`."""
    return D * U / (1.0 - D * U)


def cumsum_depth(N: int) -> int:
    """Rounding depth of :func:`blocked_cumsum` on N terms."""
    if N <= _BLOCK:
        return max(N - 1, 0)
    return (_BLOCK - 1) + cumsum_depth(-(-N // _BLOCK)) + 1


def blocked_cumsum(x: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sum along the last axis with rounding depth :func:`cumsum_depth`
    (not the length); 1-d or 2-d input."""
    N = x.shape[-1]
    if N <= _BLOCK:
        return np.cumsum(x, axis=-1)
    nb = -(-N // _BLOCK)
    lead = x.shape[:-1]
    pad = np.zeros(lead + (nb * _BLOCK,))
    pad[..., :N] = x
    loc = np.cumsum(pad.reshape(lead + (nb, _BLOCK)), axis=-1)
    off = np.zeros(lead + (nb,))
    off[..., 1:] = blocked_cumsum(loc[..., -1])[..., :-1]
    loc += off[..., None]
    return loc.reshape(lead + (nb * _BLOCK,))[..., :N]


def before_after(kern: PieceKernel, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Per piece (level order): mass of the same token's earlier pieces, of its later pieces,
    and the rounding depth of those sums (sums of non-negative terms, blocked; compiled by
    :mod:`._cutjit` when numba is installed, the same additions)."""
    cnt = np.diff(kern.start)
    kmax = int(cnt.max(initial=1))
    if _cutjit.enabled():
        v, after = _cutjit.before_after(kern.order, kern.start, mass)
        return v, after, min(kmax, 8) + cumsum_depth(kmax) + 1
    o = kern.order
    m = mass[o]  # grouped by token, level order within a token
    first = kern.start[:-1]
    vg = np.zeros_like(m)
    ag = np.zeros_like(m)
    for r in range(1, min(kmax, 8)):  # running sums by rank inside the tokens of <= 8 pieces
        g = first[(cnt > r) & (cnt <= 8)]
        vg[g + r] = vg[g + r - 1] + m[g + r - 1]
        last = g + cnt[(cnt > r) & (cnt <= 8)] - 1
        ag[last - r] = ag[last - r + 1] + m[last - r + 1]
    big = np.flatnonzero(cnt > 8)
    if big.size:  # bucket the larger tokens by size, pad, blocked cumulative sums per row
        lg = np.ceil(np.log2(cnt[big])).astype(np.int64)
        for b in np.unique(lg):
            ks = big[lg == b]
            L = int(cnt[ks].max())
            idx = first[ks][:, None] + np.arange(L)[None, :]
            ok = np.arange(L)[None, :] < cnt[ks][:, None]
            M = np.where(ok, m[np.where(ok, idx, 0)], 0.0)
            c = blocked_cumsum(M) - M
            vg[idx[ok]] = c[ok]
            Mr = np.where(ok, M, 0.0)[:, ::-1]
            cr = (blocked_cumsum(Mr) - Mr)[:, ::-1]
            ag[idx[ok]] = cr[ok]
    v = np.empty_like(m)
    after = np.empty_like(m)
    v[o] = vg
    after[o] = ag
    return v, after, min(kmax, 8) + cumsum_depth(kmax) + 1


def _exclusive(x: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum (no subtraction: the sum of the earlier terms only)."""
    if len(x) > 1 and _cutjit.enabled():
        return _cutjit.exclusive(x)
    out = np.zeros_like(x)
    if len(x) > 1:
        out[1:] = blocked_cumsum(x[:-1])
    return out


def _cp_pass(d: np.ndarray, v: np.ndarray, n: int) -> tuple[list, list]:
    """Per level m = 0..n-1: :math:`e_m` of the low masses before each piece with the piece's
    own token removed (g), and the same computation in absolute values (ga)."""
    split = v > 0
    ebs, eas = [np.ones(len(d))], [np.ones(len(d))]  # e_m before each piece (and |.| version)
    gs, gas = [ebs[0]], [eas[0]]
    for m in range(1, n):
        ebs.append(_exclusive(d * gs[m - 1]))
        eas.append(_exclusive(d * gas[m - 1]))
        g, ga = ebs[m].copy(), eas[m].copy()
        if split.any():  # deflate the piece's own token: sum_i (-v)^i e_{m-i}
            pw = np.where(split, -v, 0.0)
            for i in range(1, m + 1):
                g += pw * ebs[m - i]
                ga += np.abs(pw) * eas[m - i]
                pw = pw * -v
        gs.append(np.maximum(g, 0.0))
        gas.append(ga)
    return gs, gas


#: Tokens whose sums cancel are recomputed without their own pieces, the heaviest first: at
#: least 16, and more while the pieces the recomputations run over (each up to the token's last
#: piece) add up to at most this many (a draft whose tail masses fall off geometrically, each
#: token outweighing all lighter ones, has a cancelling token at every split slot).
RECOMPUTE_PIECES: int = 1 << 22


def _recompute(bad: np.ndarray, qs: np.ndarray, kern: PieceKernel) -> np.ndarray:
    """The tokens of ``bad`` recomputed without their pieces, in order (:data:`RECOMPUTE_PIECES`)."""
    bad = bad[np.argsort(-qs[bad])]
    reach = kern.order[kern.start[bad + 1] - 1].astype(np.int64) + 1  # up to the last piece
    keep = int(np.searchsorted(np.cumsum(reach), RECOMPUTE_PIECES, side="right"))
    return bad[: max(16, keep)]


@dataclass(frozen=True)
class CPRow:
    """What :func:`cp_law` reads of q alone, formed once per row by :func:`cp_row` (a design
    evaluates the law of many kernels on one q; each of these costs a pass over V).

    Attributes
    ----------
    qs : (V,) ndarray
        q by slot, or :math:`2^k q` where :math:`e_n(q)` is tiny
        (:func:`~mdsd_ot.drafts.sampling.scale_exponent`).
    n : int
        The number of drafts.
    dominant : tuple of int
        :func:`~.pieces.dominant_slots` of ``qs``.
    kth : float
        The (n - 1)-th largest mass of ``qs``, the bar of :func:`_heavy_split` (-inf when
        V <= n - 1: every token qualifies).
    """

    qs: np.ndarray
    n: int
    dominant: tuple[int, ...]
    kth: float


def cp_row(qs: np.ndarray, n: int) -> CPRow:
    """The :class:`CPRow` of q (by slot) and n.

    Examples
    --------
    >>> r = cp_row(np.array([0.1, 0.2, 0.3, 0.4]), 3)
    >>> r.dominant, r.kth
    ((3, 2), 0.3)
    """
    if k := scale_exponent(qs, n):  # ratios to e_n only: the same law, without underflow
        qs = np.ldexp(qs, k)
    m = max(1, n - 1)
    kth = float(np.partition(qs, len(qs) - m)[len(qs) - m]) if len(qs) > m else -math.inf
    return CPRow(qs, n, tuple(dominant_slots(qs, n)), kth)


def _dominant_split(row: CPRow, kern: PieceKernel) -> list[int]:
    """The dominant slots (:func:`~.pieces.dominant_slots`) that have more than one piece:
    :func:`cp_law` sums the other tokens' levels without them."""
    return [x for x in row.dominant if kern.start[x + 1] - kern.start[x] > 1]


def _heavy_split(row: CPRow, kern: PieceKernel, tokens: np.ndarray) -> list[int]:
    """The tokens of ``tokens`` with more than one piece that are among the n - 1 heaviest
    (by decreasing mass, ties: the lower slot first), in that order."""
    qs, k = row.qs, max(1, row.n - 1)
    if len(tokens) == 0:
        return []
    tokens = tokens[qs[tokens] >= row.kth]  # only tokens as heavy as the k-th heaviest qualify
    out = []
    for x in tokens.tolist():
        if kern.start[x + 1] - kern.start[x] > 1:
            rank = np.count_nonzero(qs > qs[x]) + np.count_nonzero(qs[:x] == qs[x])
            if rank < k:
                out.append((rank, x))
    return [x for _, x in sorted(out)]


def _passes(
    d: np.ndarray, v: np.ndarray, n: int, kern: PieceKernel, K: list[int], jit: bool
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], np.ndarray, int, np.ndarray, np.ndarray]:
    """The passes of :func:`cp_law` without the pieces of the tokens K: the levels lo..n-1
    (value and absolute-value sums) before every piece, the tokens whose deflation cancels
    (the absolute-value sum of level n - 1 above 1000 times the value), lo, and the piece
    masses and masses before them with K's pieces at 0."""
    V = len(kern.start) - 1
    if K:  # the passes without the dominant tokens' pieces (combined in cp_law)
        mine = np.isin(kern.tok, K)
        d_p, v_p = np.where(mine, 0.0, d), np.where(mine, 0.0, v)
    else:
        d_p, v_p = d, v
    lo = max(0, n - 1 - len(K))  # the levels lo..n-1 are needed
    if jit:
        g, ga, flag = _cutjit.cp_pass(d_p, v_p, n, kern.tok, V=V)
        bad = np.flatnonzero(flag)
        lev = {n - 1: (g, ga)}
        for m in range(lo, n - 1):
            lev[m] = (
                (np.ones(len(d)), np.ones(len(d)))
                if m == 0
                else _cutjit.cp_pass(d_p, v_p, m + 1, kern.tok, V=V)[:2]
            )
    else:
        gs, gas = _cp_pass(d_p, v_p, n)
        lev = {m: (gs[m], gas[m]) for m in range(lo, n)}
        bad = np.unique(kern.tok[(v_p > 0) & (lev[n - 1][1] > 1e3 * lev[n - 1][0])])
    return lev, bad, lo, d_p, v_p


def cp_law(
    qs: np.ndarray, n: int, kern: PieceKernel, row: CPRow | None = None
) -> tuple[np.ndarray, float]:
    r"""Law by slot of the piece kernel under conditional Poisson, and a bound on
    :math:`\sum_x |\hat T_x - T_x|`.

    The deflation of a split token cancels when the token holds most of the low mass; for the
    tokens where the absolute-value sum exceeds the value 1000-fold, :math:`e_{n-1}` of the
    other tokens is recomputed by a pass without that token's pieces (the heaviest first, at
    least 16, more while their passes cover at most :data:`RECOMPUTE_PIECES` pieces).  A split
    *dominant* token (:func:`~.pieces.dominant_slots`: among the n - 1 heaviest, above a tenth
    of the mass; a draft almost sure of one or a few tokens), and a split token among the
    n - 1 heaviest whose deflation cancels whatever its share (:func:`_heavy_split`; the passes
    are then run again), is never deflated: the passes run without these tokens K, and every
    piece of a token y takes
    :math:`\sum_j e_j(w_K \setminus y)\, e_{n-1-j}(w' \setminus y)`, w' the low masses
    without K and :math:`w_K` theirs; the cancellation would otherwise spread through the
    cumulative sums to every later piece (a bound of 0.3 at :math:`1 - q_x = 10^{-16}`,
    V = 2,000, n = 3).  When :math:`e_n` underflows (masses :math:`10^{300}` apart) no law is
    returned (zeros, bound inf).  Where :math:`e_n(q)` is tiny (a draft almost sure of one token
    with tails of :math:`10^{-150}`) the law is computed from :math:`2^k q`
    (:func:`~mdsd_ot.drafts.sampling.scale_exponent`), the same law without the underflow.

    With numba the passes are compiled (:mod:`._cutjit`: the same operations in the same
    order, bit-identical, so the bound holds as it is).  ``row``: :func:`cp_row` of (qs, n),
    formed once where many kernels of one q are evaluated (the design); default: formed here.
    """
    row = cp_row(qs, n) if row is None else row
    qs = row.qs
    V = len(qs)
    jit = _cutjit.enabled()
    if jit:  # the first output of before_after only, and its depth
        d = _cutjit.mass(qs, kern.tok, kern.prob)
        v = _cutjit.before(kern.tok, d, kern.start)
        kmax = int(np.diff(kern.start).max(initial=1))
        kmax = min(kmax, 8) + cumsum_depth(kmax) + 1
    else:
        d = kern.mass(qs)
        v, _, kmax = before_after(kern, d)
    K = _dominant_split(row, kern)
    lev, bad, lo, d_p, v_p = _passes(d, v, n, kern, K, jit)
    if extra := [x for x in _heavy_split(row, kern, bad) if x not in K]:
        K = K + extra  # a heavy split token whose deflation cancels: left out of the passes too
        lev, bad, lo, d_p, v_p = _passes(d, v, n, kern, K, jit)
    bad = bad[~np.isin(bad, K)]
    for x in _recompute(bad, qs, kern):
        if jit:  # written at x's pieces only, the pass stops after x's last piece
            stop = int(kern.order[kern.start[x + 1] - 1]) + 1
            for m in range(max(lo, 1), n):
                _cutjit.run_pass(d_p, v_p, m + 1, kern.tok, int(x), *lev[m], stop)
            continue
        mine_x = kern.tok == x
        dx = np.where(mine_x, 0.0, d_p)
        vx = np.where(mine_x, 0.0, v_p)
        hx, hax = _cp_pass(dx, vx, n)
        for m in range(max(lo, 1), n):
            lev[m] = (np.where(mine_x, hx[m], lev[m][0]), np.where(mine_x, hax[m], lev[m][1]))
    g, ga = lev[n - 1]
    if K:
        # e_{n-1}(w minus y) = sum_j e_j(w_K minus y) e_{n-1-j}(w' minus y), w' the low masses
        # without the dominant tokens K, w_K their low masses before the piece (y's own left
        # out): every term non-negative, where the deflation of a dominant token (most of the
        # low mass) would cancel to an absolute error of about u.
        ek = [np.ones(len(d))] + [np.zeros(len(d)) for _ in K]
        for x in K:  # e_j of the dominant low masses, positive recursion
            wx = np.where(kern.tok == x, 0.0, _exclusive(np.where(kern.tok == x, d, 0.0)))
            for j in range(len(K), 0, -1):
                ek[j] = ek[j] + wx * ek[j - 1]
        g, ga = g.copy(), ga.copy()
        for j in range(1, n - lo):
            g = g + ek[j] * lev[n - 1 - j][0]
            ga = ga + ek[j] * lev[n - 1 - j][1]
    if not 0.0 < float(np.sum(d * g)) < math.inf:  # e_n underflows (masses 1e-300 apart)
        return np.zeros(V), math.inf  # no law: the design keeps nothing of this kernel
    if jit:
        T, T_abs, inc, inc_abs = _cutjit.bincount2(kern.tok, d, g, ga, V)
        total = float(np.sum(inc))
        T /= total
        T_abs /= total
    else:
        inc, inc_abs = d * g, d * ga
        total = float(np.sum(inc))
        T = np.bincount(kern.tok, inc, V) / total
        T_abs = np.bincount(kern.tok, inc_abs, V) / total
    depth = n * (cumsum_depth(len(d)) + 2 * n + 6) + kmax + 4 + 4 * len(K)
    g_ = gamma(depth)
    rel_total = g_ * float(np.sum(inc_abs)) / total
    err = g_ * float(T_abs.sum()) + rel_total * float(T.sum())
    return T, 2.0 * err + 4 * U


def total_mass(qs: np.ndarray) -> tuple[float, float]:
    r""":math:`\sum q` as a double-double (hi, lo): hi correctly rounded, hi + lo exact to u^2
    (``math.fsum``; compiled, the same algorithm and floats, by :mod:`._cutjit`)."""
    if _cutjit.enabled() and (out := _cutjit.total_mass(qs)) is not None:
        return out
    hi = math.fsum(qs.tolist())
    return hi, math.fsum(qs.tolist() + [-hi])


class RowSums(tuple):
    """:func:`total_mass` of a row's q, (hi, lo) like the tuple, with a ``memo`` of the other
    per-row sums the sequential law asks for on every kernel of a design (the masses outside
    the heaviest tokens, :func:`~.seqseries.choose_plan`; the light total,
    :mod:`.seqseries`): each an O(V) compensated sum over q alone.  Only for one q: a design
    makes one (:func:`~.swap.swap_plan`) and every law of it reads the same q.

    Examples
    --------
    >>> t = RowSums(total_mass(np.array([0.25, 0.75])))
    >>> tuple(t), t.memo
    ((1.0, 0.0), {})
    """

    memo: dict

    def __new__(cls, hi_lo: tuple[float, float]) -> RowSums:
        obj = super().__new__(cls, hi_lo)
        obj.memo = {}
        return obj


def _seq_n2(
    qs: np.ndarray, kern: PieceKernel, total: tuple[float, float]
) -> tuple[np.ndarray, float]:
    V = len(qs)
    Ttot = total[0]
    d = kern.mass(qs)
    v, after, kmax = before_after(kern, d)
    rest = Ttot - qs[kern.tok]  # exact (Sterbenz) or relative error <= u
    den1 = rest + (d + after)  # T - v
    den2 = rest + after  # T - v - delta
    f_inc = d * Ttot / (den1 * np.where(den2 > 0, den2, np.inf))  # f(v+d) - f(v), f = w/(T-w)
    f_inc = np.where(den2 > 0, f_inc, 0.0)
    W = _exclusive(d)  # low mass before the piece
    S = _exclusive(f_inc)
    f_v = np.where(v > 0, v / (rest + d + after), 0.0)  # the token's own f(v) before the piece
    W_o = np.maximum(W - v, 0.0)
    S_o = np.maximum(S - f_v, 0.0)
    bad = np.unique(kern.tok[(v > 0) & ((W_o < 1e-3 * W) | (S_o < 1e-3 * S))])
    for x in _recompute(bad, qs, kern):  # cancellation: sums without the token's pieces
        mine = kern.tok == x
        W_o = np.where(mine, _exclusive(np.where(mine, 0.0, d)), W_o)
        S_o = np.where(mine, _exclusive(np.where(mine, 0.0, f_inc)), S_o)
    with np.errstate(divide="ignore", invalid="ignore"):
        inc = d * (W_o / (den1 * den2) + S_o / Ttot)
    inc = np.where(den2 > 0, inc, d * (W_o / np.maximum(den1, 1e-300) ** 2 + S_o / Ttot))
    T = np.bincount(kern.tok, inc, V)
    depth = cumsum_depth(len(d)) + kmax + 16
    # W_o and S_o come from subtractions: bound their errors by gamma * (W, S) (not W_o, S_o)
    with np.errstate(divide="ignore", invalid="ignore"):
        ab = d * ((W + v) / (den1 * den2) + (S + f_v) / Ttot)
    ab = np.where(np.isfinite(ab), ab, 0.0)
    err = gamma(depth) * float(ab.sum())
    return T, 2.0 * err + 4 * U


def seq_law(
    qs: np.ndarray, n: int, kern: PieceKernel, total: tuple[float, float] | None = None
) -> tuple[np.ndarray, float]:
    r"""Law by slot of the piece kernel under sequential drafts (every draw of the stopped
    stream relabelled), and a bound on :math:`\sum_x |\hat T_x - T_x|`; ``total`` is
    :func:`total_mass` of q (computed when omitted)."""
    total = total or total_mass(qs)
    if n == 1:
        d = kern.mass(qs)
        return np.bincount(kern.tok, d, len(qs)) / total[0], 8 * U
    if n == 2:
        return _seq_n2(qs, kern, total)
    from .seqseries import seq_series_law

    return seq_series_law(qs, n, kern, total)
