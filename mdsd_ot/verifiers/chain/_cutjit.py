r"""Compiled passes of the piece-kernel laws (:mod:`.cutlaw`, :mod:`.pieces`), by numba.

The numpy route of :func:`~.cutlaw.cp_law` makes, per level m < n, an exclusive blocked
cumulative sum over all pieces (and its absolute-value twin) and a deflation of the piece's own
token; :func:`~.cutlaw.before_after` makes running sums per token.  Here one loop over the pieces
does all levels at once, with the *same* summation order: a *streaming* blocked cumulative sum
keeps, per channel and per block level j, the partial sum of the current block and its offset
(the inclusive sum of the blocks before it, from level j + 1).  When a block of 64 closes its
total becomes the next item of level j + 1, and the new offset is level j + 1's inclusive value
after it, exactly as :func:`~.cutlaw.blocked_cumsum` forms ``off`` from the blocked cumulative
sum of the block totals; the top level (at most 64 items) is a plain running sum.  Every
addition of the numpy route is made, on the same operands and in the same order, so the results
are *bit-identical* (tested) and the rounding depth is the same,
:func:`~.cutlaw.cumsum_depth` (N) for N items: the error bounds of :mod:`.cutlaw` hold unchanged.

The same holds for the rest: :func:`before_after` and :func:`before` (per-token sums, a
token of more than 8 pieces by the blocked sum of its padded row), :func:`build_pieces` (the
stable sort by slot and sub-level as a counting sort), :func:`csr` (the permutation of a
stable :func:`numpy.argsort` by token), :func:`bincount2` (the law's two weighted
``np.bincount``), the design's :func:`split`, :func:`fifo_pairs` (one merge of the supply and
demand ends), :func:`pair_masses` and :func:`residual`, and :func:`total_mass` (CPython's
``math.fsum``).  Sums that numpy forms pairwise (``np.sum``, BLAS products) stay in numpy.

This module holds the wrappers; the loops (``_k_*``) are module-level numba functions, by job:
:mod:`._cutjit_law_nb` (the streaming blocked sums and the law's passes),
:mod:`._cutjit_pieces_nb` (the pieces, the pairing, the pair masses, the design's split and
residual) and :mod:`._cutjit_fsum_nb` (``math.fsum``).  :func:`_kernels` imports them on first
use, and numba's disk cache serves every kernel to a new process.

Without numba, with ``MDSD_OT_JIT=0`` or inside :func:`mdsd_ot.fast._fused.disabled`,
:func:`enabled` is False and the numpy code runs.

Examples
--------
>>> import numpy as np
>>> from .cutlaw import _exclusive
>>> x = np.random.default_rng(0).random(5000)
>>> got = exclusive(x) if enabled() else _exclusive(x)
>>> bool(np.array_equal(got, _exclusive(x)))
True
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...fast import _fused

__all__ = [
    "enabled", "levels", "exclusive", "cp_pass", "run_pass", "before_after", "bincount2", "build_pieces",
    "before", "csr", "mass", "split", "residual", "total_mass", "fifo_pairs", "pair_masses",
]  # fmt: skip

_BLOCK = 64


def enabled() -> bool:
    """Whether the compiled passes run (numba importable and the package's kernels on,
    :func:`mdsd_ot.fast._fused.enabled`).

    Examples
    --------
    >>> from mdsd_ot.fast._fused import disabled
    >>> with disabled():
    ...     enabled()
    False
    """
    return _fused.enabled() and _kernels() is not None


def levels(N: int) -> int:
    """Number of blocked levels of :func:`~.cutlaw.blocked_cumsum` on N items (0: one plain
    cumulative sum), :math:`\\min\\{L : \\lceil N / 64^L \\rceil \\le 64\\}`.

    Examples
    --------
    >>> levels(64), levels(65), levels(4096), levels(4097)
    (0, 1, 1, 2)
    """
    L = 0
    while N > _BLOCK:
        N = -(-N // _BLOCK)
        L += 1
    return L


@functools.cache
def _kernels() -> dict[str, Any] | None:
    """The compiled kernels, by key (:mod:`._cutjit_law_nb`, :mod:`._cutjit_pieces_nb`,
    :mod:`._cutjit_fsum_nb`: compiled or loaded from numba's disk cache on first call), or
    None without numba.

    The kernels and the helpers they call are module-level numba functions there, so that
    every kernel is cached on disk (a kernel that calls a closure would be compiled again in
    every process)."""
    if _fused.jit_decorator() is None:
        return None
    from . import _cutjit_fsum_nb as fs
    from . import _cutjit_law_nb as law
    from . import _cutjit_pieces_nb as pc

    return {
        "fsum2": fs._k_fsum2,
        "split": pc._k_split,
        "residual": pc._k_residual,
        "fifo": pc._k_fifo,
        "pairs": pc._k_pairs,
        "window_coeffs": pc._k_window_coeffs,
        "pairs_at": pc._k_pairs_at,
        "build": pc._k_build,
        "excl": law._k_excl,
        "cp_pass": law._k_cp_pass,
        "cp_pass4": law._k_cp_pass4,
        "before_after": law._k_before_after,
        "bincount2": law._k_bincount2,
        "mass": law._k_mass,
        "before": law._k_before,
        "csr": pc._k_csr,
    }


def exclusive(x: np.ndarray) -> np.ndarray:
    r"""Exclusive blocked cumulative sum, :math:`\mathrm{out}_e = \sum_{i<e} x_i`, bit-identical
    to :func:`~.cutlaw._exclusive` (rounding depth :func:`~.cutlaw.cumsum_depth` (N - 1)).

    Examples
    --------
    >>> out = exclusive(np.array([1.0, 2.0, 3.0])) if enabled() else np.array([0.0, 1.0, 3.0])
    >>> out.tolist()
    [0.0, 1.0, 3.0]
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    _kernels()["excl"](x, out)
    return out


def cp_pass(
    d: np.ndarray,
    v: np.ndarray,
    n: int,
    tok: np.ndarray,
    skip: int = -1,
    V: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Level n - 1 of :func:`~.cutlaw._cp_pass`, per piece: :math:`g = e_{n-1}` of the low
    masses before the piece with its own token removed,
    :math:`e_{m}(w \setminus x) = \sum_i (-v)^i e_{m-i}(w)` (clipped at 0 between levels), and
    ``ga`` the same in absolute values.  ``skip`` >= 0: the pass without that token's pieces
    (their mass and v set to 0), written only at those pieces (the rest are left unset).
    The third array (V,) flags the tokens (``V`` of them; none when ``V`` is 0) with a split
    piece where the deflation cancels, :math:`v > 0` and ``ga`` > 1000 ``g`` (main pass).

    Examples
    --------
    >>> if enabled():
    ...     g, ga, _ = cp_pass(np.array([0.5, 0.3, 0.2]), np.zeros(3), 2, np.arange(3))
    ...     print(g.tolist())
    ... else:
    ...     print([0.0, 0.5, 0.8])
    [0.0, 0.5, 0.8]
    """
    g, ga = np.empty(len(d)), np.empty(len(d))
    if skip < 0 and V == 0:
        V = int(tok.max(initial=-1)) + 1
    flag = np.empty(V if skip < 0 else 0, dtype=np.uint8)
    flag[:] = 0
    run_pass(d, v, n, tok, skip, g, ga, None, flag)
    return g, ga, flag


def run_pass(
    d: np.ndarray,
    v: np.ndarray,
    n: int,
    tok: np.ndarray,
    skip: int,
    g: np.ndarray,
    ga: np.ndarray,
    stop: int | None = None,
    flag: np.ndarray | None = None,
) -> None:
    """:func:`cp_pass` into ``g``, ``ga`` (and ``flag``, main pass) over the pieces before
    ``stop`` (default all): the scalar kernel for n <= 5, the general one above."""
    stop = len(d) if stop is None else stop
    flag = np.zeros(0, dtype=np.uint8) if flag is None else flag
    kern = _kernels()["cp_pass4" if 2 <= n <= 5 else "cp_pass"]
    kern(d, v, n, tok, skip, stop, g, ga, flag)


def before_after(
    order: np.ndarray, start: np.ndarray, mass: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per piece (level order) the mass of the same token's earlier and later pieces, the
    additions of :func:`~.cutlaw.before_after` (bit-identical; ``mass`` in level order).

    Examples
    --------
    >>> from .pieces import identity_pieces
    >>> k = identity_pieces(3)
    >>> if enabled():
    ...     v, a = before_after(k.order, k.start, np.ones(3))
    ...     print(v.tolist(), a.tolist())
    ... else:
    ...     print([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    [0.0, 0.0, 0.0] [0.0, 0.0, 0.0]
    """
    v = np.empty_like(mass)
    after = np.empty_like(mass)
    _kernels()["before_after"](order, start, mass, _row_len(start), v, after)
    return v, after


def bincount2(
    tok: np.ndarray,
    d: np.ndarray,
    g: np.ndarray,
    ga: np.ndarray,
    V: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``inc = d * g``, ``inc_abs = d * ga``, ``np.bincount(tok, inc, V)`` and
    ``np.bincount(tok, inc_abs, V)`` in one loop (the same operations, in index order);
    returns the two bincounts, then inc and inc_abs.

    Examples
    --------
    >>> one = np.ones(2)
    >>> if enabled():
    ...     print(bincount2(np.array([1, 1]), one, one, one, 3)[0].tolist())
    ... else:
    ...     print(np.bincount(np.array([1, 1]), one, 3).tolist())
    [0.0, 2.0, 0.0]
    """
    T = np.zeros(V)
    T_abs = np.empty(V)
    T_abs[:] = 0.0
    inc, inc_abs = np.empty(len(d)), np.empty(len(d))
    _kernels()["bincount2"](tok, d, g, ga, V, T, T_abs, inc, inc_abs)
    return T, T_abs, inc, inc_abs


def mass(qs: np.ndarray, tok: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """:meth:`~.pieces.PieceKernel.mass`, ``qs[tok] * prob`` (one loop, no gathered copy).

    Examples
    --------
    >>> tok, prob = np.array([1, 0]), np.array([0.5, 1.0])
    >>> d = mass(np.array([0.25, 0.5]), tok, prob) if enabled() else [0.25, 0.25]
    >>> list(map(float, d))
    [0.25, 0.25]
    """
    d = np.empty(len(tok))
    _kernels()["mass"](qs, tok, prob, d)
    return d


def before(tok: np.ndarray, mass: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The first output of :func:`before_after` (the mass of the same token's earlier pieces)
    in one pass in level order, without the grouping by token (bit-identical).

    Examples
    --------
    >>> tok, mass = np.array([0, 1, 0, 0]), np.array([0.25, 0.5, 0.125, 0.5])
    >>> v = before(tok, mass, np.array([0, 3, 4])) if enabled() else np.array([0, 0, 0.25, 0.375])
    >>> v.tolist()
    [0.0, 0.0, 0.25, 0.375]
    """
    V = len(start) - 1
    v = np.empty(len(mass))
    _kernels()["before"](
        tok, mass, start, _row_len(start), v, np.empty(V), np.empty(V, dtype=np.int64)
    )
    return v


def _row_len(start: np.ndarray) -> np.ndarray:
    r"""Per token of more than 8 pieces, the padded row of :func:`~.cutlaw.before_after`: the
    longest count of its bucket (counts with the same :math:`\lceil \log_2 \rceil`)."""
    cnt = np.diff(start)
    row_len = np.zeros(len(cnt), dtype=np.int64)
    big = np.flatnonzero(cnt > 8)
    if big.size:
        lg = np.ceil(np.log2(cnt[big])).astype(np.int64)
        for b in np.unique(lg):
            ks = big[lg == b]
            row_len[ks] = int(cnt[ks].max())
    return row_len


def build_pieces(
    qs: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    quant: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """:func:`~.pieces.build_pieces` without ``draws``, up to the grouping by token: the
    pieces' ``tok``, ``prob`` in level order, the permutation ``o`` from the concatenation
    (own pieces, lifts, drops) and the largest ratio (pieces' mass) / q; the same operations
    (bit-identical, tested).

    Examples
    --------
    >>> qs = np.array([0.5, 0.3, 0.2])
    >>> x, y, a, b = np.array([0]), np.array([2]), np.array([0.1]), np.array([0.05])
    >>> if enabled():
    ...     tok, prob, o, r = build_pieces(qs, x, y, a, b, 2.0**52)
    ...     print(tok.tolist(), o.tolist())
    ... else:
    ...     print([2, 0, 1, 2, 0], [4, 0, 1, 2, 3])
    [2, 0, 1, 2, 0] [4, 0, 1, 2, 3]
    """
    V, P = len(qs), len(x)
    tok = np.empty(V + 2 * P, dtype=np.int64)
    prob = np.empty(V + 2 * P)
    o = np.empty(V + 2 * P, dtype=np.int64)
    N, rmax = _kernels()["build"](qs, x, y, a, b, float(quant), tok, prob, o)
    return tok[:N], prob[:N], o[:N], float(rmax)


def total_mass(qs: np.ndarray) -> tuple[float, float] | None:
    """:func:`~.cutlaw.total_mass` (``math.fsum`` of q, and of q with the sum subtracted)
    by CPython's algorithm compiled, the same two floats; None when q has a non-finite entry
    (math.fsum's special cases: left to it).

    Examples
    --------
    >>> import math
    >>> q = np.array([0.1] * 10)  # the sum of the ten floats is 1 + 5.55e-17
    >>> hi, lo = total_mass(q) if enabled() else (1.0, math.fsum([0.1] * 10 + [-1.0]))
    >>> hi, lo == math.fsum([0.1] * 10 + [-1.0])
    (1.0, True)
    """
    qs = np.ascontiguousarray(qs, dtype=np.float64)
    if not np.isfinite(qs).all():
        return None
    hi, lo = _kernels()["fsum2"](qs)
    if not (np.isfinite(hi) and np.isfinite(lo)):  # an overflow: math.fsum's own handling
        return None
    return float(hi), float(lo)


def split(D: np.ndarray, t: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The supply :math:`(D - t)^+` and the demand :math:`(t - D)^+` on the live slots (0
    elsewhere), as :func:`~.pieces.design` forms them.

    Examples
    --------
    >>> D, t, live = np.array([0.5, 0.2]), np.array([0.3, 0.4]), np.array([True, True])
    >>> sup, dem = split(D, t, live) if enabled() else (np.array([0.2, 0]), np.array([0, 0.2]))
    >>> sup.round(3).tolist(), dem.round(3).tolist()
    ([0.2, 0.0], [0.0, 0.2])
    """
    sup, dem = np.empty(len(D)), np.empty(len(D))
    _kernels()["split"](D, t, live, sup, dem)
    return sup, dem


def residual(
    D: np.ndarray,
    s: np.ndarray,
    T: np.ndarray,
    t: np.ndarray,
    live: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    tau: np.ndarray,
) -> np.ndarray:
    r"""The model-corrected residual of :func:`~.pieces.design`,
    :math:`f = (s - T) + (M - t)` on the live slots (0 elsewhere), with
    :math:`M = D + \mathrm{bincount}(x, \tau) - \mathrm{bincount}(y, \tau)`.

    Examples
    --------
    >>> one, live = np.ones(2), np.array([True, False])
    >>> args = (one, one, one, one, live, np.array([0]), np.array([1]), np.array([0.5]))
    >>> (residual(*args) if enabled() else np.array([0.5, 0.0])).tolist()
    [0.5, 0.0]
    """
    f, by = np.empty(len(D)), np.empty(len(D))
    _kernels()["residual"](D, s, T, t, live, x, y, tau, f, by)
    return f


def fifo_pairs(sup: np.ndarray, dem: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~.relabel.fifo_pairs` as one merge of the supply and demand ends (the same
    pairs and transfers, bit-identical: the ends are the same cumulative sums).

    Examples
    --------
    >>> sup, dem = np.array([0.0, 0.0, 0.3]), np.array([0.2, 0.1, 0.0])
    >>> x, y, tau = fifo_pairs(sup, dem) if enabled() else ([1, 0], [2, 2], [0.1, 0.2])
    >>> list(map(int, x)), list(map(int, y))
    ([1, 0], [2, 2])
    """
    V = len(sup)
    x, y, tau = np.empty(2 * V, dtype=np.int64), np.empty(2 * V, dtype=np.int64), np.empty(2 * V)
    P = _kernels()["fifo"](
        np.ascontiguousarray(sup, dtype=np.float64), np.ascontiguousarray(dem, dtype=np.float64),
        x, y, tau, np.empty(V, dtype=np.int64), np.empty(V, dtype=np.int64), np.empty(V),
        np.empty(V),
    )  # fmt: skip
    return x[:P], y[:P], tau[:P]


def pair_masses(
    qs: np.ndarray,
    n: int,
    E: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    tau: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~.pieces.pair_masses` without rigid slots (``E``: the levels of
    :func:`~.pieces.cp_levels` stacked, (n + 1, V + 1)); the same operations per pair.

    Examples
    --------
    >>> from .pieces import cp_levels
    >>> qs = np.array([0.5, 0.3, 0.2])
    >>> E = np.stack(cp_levels(qs, 2))
    >>> if enabled():
    ...     a, b = pair_masses(qs, 2, E, np.array([0]), np.array([2]), np.array([0.01]))
    ...     print(a.round(4).tolist(), b.round(4).tolist())
    ... else:
    ...     print([0.0031], [0.0031])
    [0.0031] [0.0031]
    """
    from .windows import CANCEL

    a, b = np.empty(len(x)), np.empty(len(x))
    bad = np.empty(len(x), np.uint8)
    ks = _kernels()
    ks["pairs"](qs, n, E, x, y, tau, CANCEL, a, b, bad)
    if n >= 2 and bad.any():  # prefix differences without digits: from the windows
        idx = np.flatnonzero(bad)
        en = max(float(E[n, -1]), 1e-300)
        hp, Iv, Jv = window_coefficients(qs, n, E, x, y, idx, en)
        ks["pairs_at"](qs, n, E, x, tau, idx, hp, Iv, Jv, a, b)
    return a, b


def window_coefficients(
    qs: np.ndarray,
    n: int,
    E: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    idx: np.ndarray,
    en: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~.windows.window_coefficients` of the pairs ``idx`` (``E`` stacked,
    (n + 1, V + 1)); the same operations in the same order, so the same bits."""
    from .windows import WINDOW_BLOCK, block_levels, blocks_used

    idx = np.asarray(idx, np.int64)
    blocks = block_levels(qs, n, WINDOW_BLOCK, blocks_used(x[idx], y[idx], len(qs)))
    hp, Iv, Jv = np.empty(len(idx)), np.empty(len(idx)), np.empty(len(idx))
    _kernels()["window_coeffs"](qs, n, E, x, y, idx, blocks, WINDOW_BLOCK, en, hp, Iv, Jv)
    return hp, Iv, Jv


def csr(tok: np.ndarray, V: int) -> tuple[np.ndarray, np.ndarray]:
    """``start`` (V + 1,) and ``order`` of the pieces grouped by token, level order kept:
    the counting sort equal to ``np.argsort(tok, kind="stable")``.

    Examples
    --------
    >>> if enabled():
    ...     start, order = csr(np.array([1, 0, 1]), 2)
    ...     print(start.tolist(), order.tolist())
    ... else:
    ...     print([0, 1, 3], [1, 0, 2])
    [0, 1, 3] [1, 0, 2]
    """
    start = np.empty(V + 1, dtype=np.int64)
    order = np.empty(len(tok), dtype=np.int64)
    nxt = np.empty(V, dtype=np.int64)
    _kernels()["csr"](np.ascontiguousarray(tok, dtype=np.int64), V, start, order, nxt)
    return start, order
