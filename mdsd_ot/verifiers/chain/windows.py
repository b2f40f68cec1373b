r"""The design model's coefficients from the slots between a pair, without cancellation.

The first-order model of :mod:`.pieces` reads, for a pair of slots x < y, the elementary
symmetric polynomials of the prefix :math:`H_y` with x removed and the difference of two
prefixes.  Written through the prefix levels :math:`e_m(H_j)` they are differences:

.. math::

   e_m(H_y \setminus x) = \sum_{k \le m} (-q_x)^k e_{m-k}(H_y), \qquad
   e_{n-1}(H_y) - e_{n-1}(H_{x+1}),

which keep no digit when the slots strictly between x and y (the *window*
:math:`W = \{x+1, \dots, y-1\}`) weigh next to nothing beside :math:`q_x` or beside the prefix: a
draft sure of a few tokens whose other masses fall off geometrically (1e-100, 1e-120, …), where
each tail token outweighs all lighter ones together.  The model then asked a tail token for
1e78 times its mass and the design stalled at that token's whole demand (ε = 0.06 at V = 12,
n = 4).  With :math:`w_m = e_m(W)` the same quantities are sums of non-negative terms,

.. math::

   e_m(H_y \setminus x) = \sum_{j \le m} e_j(H_x)\, w_{m-j}, \quad
   e_{n-1}(H_y \setminus x) - e_{n-1}(H_x) = \sum_{j \le n-2} e_j(H_x)\, w_{n-1-j}, \quad
   e_{n-1}(H_y) - e_{n-1}(H_{x+1}) = \sum_{j \le n-2} e_j(H_{x+1})\, w_{n-1-j},

because :math:`H_y \setminus x = H_x \cup W` and :math:`H_y = H_{x+1} \cup W` (disjoint unions;
the j = m term of the first sum is the subtracted prefix).  :func:`~.pieces.pair_coefficients`
uses the prefix formulas and recomputes a pair from its window where one of them is at most
:data:`CANCEL` of the sum of its terms' magnitudes (fewer than about 26 bits left); on the
synthetic family that is 0–2 pairs of 50,000–80,000.

The window polynomial is formed in one canonical order, whatever other pairs are computed with
it (the compiled route of :mod:`._cutjit` and this numpy route give the same bits): slot by slot
from the bottom of the window, :math:`w \leftarrow w\,(1 + q_k z)` truncated at degree n − 1,
except that an aligned block of :data:`WINDOW_BLOCK` slots lying wholly in the window is
multiplied in at once as its own product (:func:`block_levels`), so a window costs at most
:math:`2 \cdot` :data:`WINDOW_BLOCK` slot steps plus one product per block.

Examples
--------
>>> import numpy as np
>>> qs = np.array([1.0, 1e-100, 1e-120, 1e-140])
>>> w = window_levels(qs, 3, np.array([1]), np.array([3]))  # the slots 1 and 2
>>> w[0].tolist()  # e_0, e_1, e_2 of {1e-100, 1e-120}
[1.0, 1e-100, 1e-220]
"""

from __future__ import annotations

import numpy as np

from . import _cutjit

__all__ = [
    "CANCEL",
    "WINDOW_BLOCK",
    "block_levels",
    "blocks_used",
    "window_levels",
    "window_coefficients",
]

#: A prefix formula whose value is at most this fraction of the sum of its terms' magnitudes
#: (fewer than about 26 bits left) sends the pair to :func:`window_coefficients`.
CANCEL: float = 2.0**-26

#: Width of the aligned blocks whose products :func:`block_levels` forms once.
WINDOW_BLOCK: int = 256


def block_levels(
    qs: np.ndarray, n: int, width: int = WINDOW_BLOCK, used: np.ndarray | None = None
) -> np.ndarray:
    r""":math:`e_m` (m = 0..n − 1) of every full aligned block of ``width`` slots,
    (V // width, n): the recursion :math:`w \leftarrow w(1 + q_k z)` slot by slot from the
    block's first slot, as cumulative sums along each block.  With ``used`` (bool, one per
    block) only those blocks are formed, the others left at 0.

    Examples
    --------
    >>> block_levels(np.array([0.5, 0.25, 0.125, 0.125, 1.0]), 3, 2).tolist()
    [[1.0, 0.75, 0.125], [1.0, 0.25, 0.015625]]
    """
    nb = len(qs) // width
    rows = np.arange(nb) if used is None else np.flatnonzero(used)
    Q = np.ascontiguousarray(qs[: nb * width].reshape(nb, width)[rows])
    sub = np.zeros((len(rows), n))
    sub[:, 0] = 1.0
    prev = np.ones((len(rows), width))  # e_{m-1} before each slot of the block
    for m in range(1, n):
        run = np.cumsum(Q * prev, axis=1)  # e_m after each slot (rows independent)
        sub[:, m] = run[:, -1]
        prev = np.concatenate([np.zeros((len(rows), 1)), run[:, :-1]], axis=1)
    out = np.zeros((nb, n))
    out[rows] = sub
    return out


def blocks_used(x: np.ndarray, y: np.ndarray, V: int, width: int = WINDOW_BLOCK) -> np.ndarray:
    """Which aligned blocks lie wholly in some window of the pairs (x, y), one bool per block
    of :func:`block_levels`: the only ones :func:`window_levels` multiplies in."""
    nb = V // width
    first = -(-(np.asarray(x, np.int64) + 1) // width) * width
    nblk = np.maximum((np.asarray(y, np.int64) - first) // width, 0)
    diff = np.zeros(nb + 1, np.int64)
    np.add.at(diff, np.minimum(first // width, nb), nblk > 0)
    np.add.at(diff, np.minimum(first // width + nblk, nb), -(nblk > 0).astype(np.int64))
    return np.cumsum(diff[:nb]) > 0


def _step(W: np.ndarray, q: np.ndarray) -> None:
    r"""``W`` (rows) times :math:`(1 + q z)`, truncated: :math:`w_m \leftarrow w_m + q w_{m-1}`
    for m from the top down, in place."""
    for m in range(W.shape[1] - 1, 0, -1):
        W[:, m] = W[:, m] + q * W[:, m - 1]


def _mul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Truncated products of coefficient rows, each coefficient summed in ascending j."""
    C = np.zeros_like(A)
    for m in range(A.shape[1]):
        acc = np.zeros(len(A))
        for j in range(m + 1):
            acc = acc + A[:, j] * B[:, m - j]
        C[:, m] = acc
    return C


def _lockstep(W: np.ndarray, qs: np.ndarray, start: np.ndarray, count: np.ndarray) -> None:
    """Slot steps ``start .. start + count - 1`` of every row, in order, in place."""
    for k in range(int(count.max(initial=0))):
        on = np.flatnonzero(count > k)
        sub = W[on]
        _step(sub, qs[start[on] + k])
        W[on] = sub


def window_levels(
    qs: np.ndarray,
    n: int,
    x: np.ndarray,
    y: np.ndarray,
    blocks: np.ndarray | None = None,
    width: int = WINDOW_BLOCK,
) -> np.ndarray:
    r""":math:`e_m(\{x+1, \dots, y-1\})`, m = 0..n − 1, per pair, (len(x), n), in the canonical
    order of the module docstring (``blocks``: :func:`block_levels`, formed if None): slot
    steps up to the first aligned block that fits in the window, then the blocks that fit, then
    slot steps to the end (all slot steps where no block fits).

    Examples
    --------
    >>> qs = np.full(600, 1e-3)
    >>> w = window_levels(qs, 3, np.array([10]), np.array([590]))  # 579 slots, one whole block
    >>> bool(np.allclose(w[0], [1.0, 0.579, 579 * 578 / 2 * 1e-6]))
    True
    """
    x = np.asarray(x, np.int64)
    y = np.asarray(y, np.int64)
    if blocks is None:
        blocks = block_levels(qs, n, width, blocks_used(x, y, len(qs), width))
    lo = x + 1
    first = -(-lo // width) * width  # the first aligned slot at or above the window's bottom
    nblk = np.maximum((y - first) // width, 0)  # whole blocks from there that fit
    head = np.where(nblk > 0, first, np.maximum(y, lo)) - lo
    W = np.zeros((len(x), n))
    W[:, 0] = 1.0
    _lockstep(W, qs, lo, head)
    for b in range(int(nblk.max(initial=0))):
        on = np.flatnonzero(nblk > b)
        W[on] = _mul(W[on], blocks[first[on] // width + b])
    tail0 = first + nblk * width
    _lockstep(W, qs, tail0, np.where(nblk > 0, y - tail0, 0))
    return W


def window_coefficients(
    qs: np.ndarray,
    n: int,
    E: list[np.ndarray],
    x: np.ndarray,
    y: np.ndarray,
    en: float,
    blocks: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r""":math:`(h', I, J)` of :func:`~.pieces.pair_coefficients` for the pairs (x, y), n ≥ 2,
    from their windows (module docstring; ``E``: :func:`~.pieces.cp_levels`, ``en``: the
    :math:`e_n` they are divided by; ``blocks``: :func:`block_levels`, numpy route only).
    With numba, one compiled loop (:func:`._cutjit.window_coefficients`, the same bits).

    Examples
    --------
    >>> from .pieces import cp_levels
    >>> qs = np.array([1.0, 1e-10, 1e-20, 1e-30])
    >>> E = cp_levels(qs, 3)
    >>> hp, I, J = window_coefficients(qs, 3, E, np.array([1]), np.array([3]), E[3][-1])
    >>> [round(float(v), 6) for v in (hp[0], I[0] / 1e10, J[0] / 1e10)]  # about 1, 1e10, 1e10
    [1.0, 1.0, 1.0]
    """
    x = np.asarray(x, np.int64)
    y = np.asarray(y, np.int64)
    if _cutjit.enabled():  # compiled: the same operations per pair
        return _cutjit.window_coefficients(qs, n, np.stack(E), x, y, np.arange(len(x)), en)
    w = window_levels(qs, n, x, y, blocks)
    wo2 = np.zeros(len(x))
    i_sum = np.zeros(len(x))
    j_sum = np.zeros(len(x))
    for j in range(n - 1):  # ascending j, as the compiled route
        wo2 = wo2 + E[j][x] * w[:, n - 2 - j]
        i_sum = i_sum + E[j][x] * w[:, n - 1 - j]
        j_sum = j_sum + E[j][x + 1] * w[:, n - 1 - j]
    return qs[y] * wo2 / en, i_sum / en, j_sum / en
