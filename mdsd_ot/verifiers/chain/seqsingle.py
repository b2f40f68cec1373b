r"""The law of a piece kernel under sequential drafts when a few heavy tokens pick only once.

``seq-swap-h`` (proofs/optimal_verifier.md, §4.8) resamples the stopped stream as ``seq-swap``
does, but the tokens of a small set S (the heaviest by their typical number of draws,
:func:`single_tokens`) pick *one* piece each, shared by all their draws, while every other draw
picks its own.  With :math:`b_h(c)` the probability that h's pick lies below the cut c and
:math:`Q_A(c)` the stream law of :mod:`.seqseries` with the low masses of the tokens outside S,
:math:`w_h = q_h` for :math:`h \in A` and :math:`w_h = 0` for :math:`h \in S \setminus A`
(Lemma 14),

.. math::

   \Phi(c) = \sum_{A \subseteq S} Q_A(c) \prod_{h \in A} b_h(c)
             \prod_{h \in S \setminus A} \bigl(1 - b_h(c)\bigr),

a convex combination of :math:`2^{|S|}` series with non-negative weights.  :math:`Q_A` is the
series of a derived kernel: the pieces outside S in their order, the tokens of A one piece at
the bottom and those of :math:`S \setminus A` one piece at the top.  The kernel's probabilities
are multiples of :math:`2^{-52}`, so the :math:`b_h` are exact, and the bound of a cut is the
same convex combination of the series' bounds plus the rounding of the combination.

The tokens of S are among the series' heavy tokens (the heaviest by q), so the derived kernels
share their light part: :func:`seq_single_cuts` forms the power sums and cumulant series of the
pieces outside S once and only the heavy moments, λ and the exact-zero rule per subset
(:func:`~.seqseries.seq_series_subsets`); each series' cut bound is the one
:func:`~.seqseries.seq_series_cuts` would certify for that order of summation.

Examples
--------
>>> import numpy as np
>>> from .pieces import identity_pieces
>>> qs = np.array([0.1, 0.2, 0.6, 0.1])
>>> T, err = seq_single_law(qs, 3, identity_pieces(4), np.array([2]))
>>> from .seqseries import seq_series_law
>>> T0, _ = seq_series_law(qs, 3, identity_pieces(4))  # one piece per token: the same law
>>> bool(np.abs(T - T0).max() < 1e-14), bool(err < 1e-12)
(True, True)
"""

from __future__ import annotations

import itertools

import numpy as np

from .cutlaw import U, total_mass
from .pieces import PieceKernel, _csr
from .seqseries import seq_series_cuts, seq_series_subsets

__all__ = [
    "SINGLE_DRAWS", "SINGLE_MAX", "SINGLE_WIDE", "SINGLE_WIDE_MAX_V", "single_tokens", "seq_single_cuts",
    "seq_single_law",
]  # fmt: skip

#: A token picks once when its typical number of draws in the stopped stream is at least this.
SINGLE_DRAWS: float = 1.2
#: At most this many tokens pick once (the law costs :math:`2^{|S|}` series).
SINGLE_MAX: int = 3
#: ``seq-best``'s second ``seq-swap-h`` design, where the first stops above its tolerance and
#: more tokens are drawn often: at most this many pick once.
SINGLE_WIDE: int = 6
#: ... only up to this many tokens: the wide design's laws cost :math:`2^6` heavy series each.
SINGLE_WIDE_MAX_V: int = 20_000


def single_tokens(draws: np.ndarray, limit: int = SINGLE_MAX) -> np.ndarray:
    r"""The slots that pick once: the ``limit`` (default :data:`SINGLE_MAX`) largest typical
    draw counts (:func:`~.swap.stream_draws`) that reach :data:`SINGLE_DRAWS`, ascending.

    Examples
    --------
    >>> single_tokens(np.array([1.0, 3.5, 1.1, 1.3, 2.0, 1.25])).tolist()
    [1, 3, 4]
    >>> single_tokens(np.array([1.0, 3.5, 1.1, 1.3, 2.0, 1.25]), 6).tolist()
    [1, 3, 4, 5]
    """
    top = np.argsort(-draws, kind="stable")[:limit]
    return np.sort(top[draws[top] >= SINGLE_DRAWS]).astype(np.int64)


def _kernel(tok: np.ndarray, prob: np.ndarray, V: int) -> PieceKernel:
    start, order = _csr(tok, V)
    return PieceKernel(tok, prob, start, order)


def seq_single_cuts(
    qs: np.ndarray,
    n: int,
    kern: PieceKernel,
    single: np.ndarray,
    total: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`\Phi(c)` on the cuts c = 0..P of ``kern`` when the slots ``single`` pick once,
    and a bound on :math:`|\hat\Phi(c) - \Phi(c)|` per cut (module docstring; n >= 3).

    The :math:`2^{|S|}` series come from one pass over the pieces outside S
    (:func:`~.seqseries.seq_series_subsets`): S are among the series' heavy slots (the
    heaviest by q), so the light part is the same in every derived kernel and only the heavy
    moments, λ and the exact-zero rule are formed per subset.  When a slot of S is not among
    the heavy slots (a ``single`` chosen otherwise than by :func:`single_tokens`), the light
    parts differ and each series is its own pass (:func:`_seq_single_cuts_per_variant`)."""
    S = [int(h) for h in single]
    total = total or total_mass(qs)
    mine = np.isin(kern.tok, S)
    rest_tok, rest_prob = kern.tok[~mine], kern.prob[~mine]
    subsets = [A for r in range(len(S) + 1) for A in itertools.combinations(S, r)]
    low = np.array([[h in A for h in S] for A in subsets], dtype=bool).reshape(len(subsets), len(S))
    out = seq_series_subsets(qs, n, _kernel(rest_tok, rest_prob, len(qs)), np.array(S, np.int64),
                             low, total)  # fmt: skip
    if out is None:
        return _seq_single_cuts_per_variant(qs, n, kern, single, total)
    F, B = out  # row u: the derived kernel's cuts |A| + r, r = pieces outside S below the cut
    at = np.concatenate([[0], np.cumsum(~mine)])  # pieces outside S below each cut
    b = {h: np.concatenate([[0.0], np.cumsum(np.where(kern.tok == h, kern.prob, 0.0))]) for h in S}
    nb = {h: 1.0 - b[h] for h in S}  # exact: dyadic b
    Phi = np.zeros(len(kern.tok) + 1)
    bound = np.zeros_like(Phi)
    for u, A in enumerate(subsets):  # the per-variant route's operations, in its order
        wgt = np.ones_like(Phi)
        for h in S:
            wgt = wgt * (b[h] if h in A else nb[h])
        Phi += wgt * F[u, at]
        bound += wgt * B[u, at]
    return _combined(Phi, bound, len(S))


def _combined(Phi: np.ndarray, bound: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The combination's rounding added to the bound (2^s products of s + 1 factors each,
    summed), the end cuts exact, Φ clipped to [0, 1]."""
    bound += (2**s + s + 1) * 2 * U
    Phi[0], Phi[-1] = 0.0, 1.0
    bound[0] = bound[-1] = 0.0
    np.clip(Phi, 0.0, 1.0, out=Phi)
    return Phi, bound


def _seq_single_cuts_per_variant(
    qs: np.ndarray,
    n: int,
    kern: PieceKernel,
    single: np.ndarray,
    total: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`seq_single_cuts` by one :func:`~.seqseries.seq_series_cuts` per subset A of S on
    its derived kernel (kept for the slots of S that are not heavy, and for the tests)."""
    V = len(qs)
    S = [int(h) for h in single]
    mine = np.isin(kern.tok, S)
    rest_tok, rest_prob = kern.tok[~mine], kern.prob[~mine]
    at = np.concatenate([[0], np.cumsum(~mine)])  # pieces outside S below each cut
    b = {h: np.concatenate([[0.0], np.cumsum(np.where(kern.tok == h, kern.prob, 0.0))]) for h in S}
    Phi = np.zeros(len(kern.tok) + 1)
    bound = np.zeros_like(Phi)
    for r in range(len(S) + 1):
        for A in itertools.combinations(S, r):
            top = [h for h in S if h not in A]
            tok = np.concatenate([np.array(A, np.int64), rest_tok, np.array(top, np.int64)])
            prob = np.concatenate([np.ones(len(A)), rest_prob, np.ones(len(top))])
            F, B = seq_series_cuts(qs, n, _kernel(tok, prob, V), total)
            wgt = np.ones_like(Phi)
            for h in S:
                wgt = wgt * (b[h] if h in A else 1.0 - b[h])  # exact: dyadic b
            Phi += wgt * F[len(A) + at]
            bound += wgt * B[len(A) + at]
    return _combined(Phi, bound, len(S))


def seq_single_law(
    qs: np.ndarray,
    n: int,
    kern: PieceKernel,
    single: np.ndarray,
    total: tuple[float, float] | None = None,
) -> tuple[np.ndarray, float]:
    r"""Law by slot of ``kern`` under sequential drafts (n >= 3) when the slots ``single`` pick
    once, and a bound on :math:`\sum_x |\hat T_x - T_x|` (Lemma 7: twice the cut bounds).

    Parameters
    ----------
    qs : numpy.ndarray
        The draft law's q by slot (V,).
    n : int
        Number of drafts, at least 3.
    kern : PieceKernel
        The piece kernel.
    single : numpy.ndarray
        Slots whose draws share one pick (:func:`single_tokens`); empty: the ``seq-swap`` law.
    total : tuple of float, optional
        :func:`~.cutlaw.total_mass` of ``qs``.

    Returns
    -------
    T : numpy.ndarray
        The law by slot (V,).
    bound : float
        The certified bound on the law's total error.
    """
    Phi, bound = seq_single_cuts(qs, n, kern, single, total)
    return np.bincount(kern.tok, np.diff(Phi), len(qs)), 2.0 * float(bound.sum())


def _seq_single_law_per_variant(
    qs: np.ndarray,
    n: int,
    kern: PieceKernel,
    single: np.ndarray,
    total: tuple[float, float] | None = None,
) -> tuple[np.ndarray, float]:
    """:func:`seq_single_law` by :func:`_seq_single_cuts_per_variant` (for the tests)."""
    Phi, bound = _seq_single_cuts_per_variant(qs, n, kern, single, total)
    return np.bincount(kern.tok, np.diff(Phi), len(qs)), 2.0 * float(bound.sum())
