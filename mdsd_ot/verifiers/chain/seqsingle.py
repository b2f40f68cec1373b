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

from .cutlaw import U
from .pieces import PieceKernel, _csr
from .seqseries import seq_series_cuts

__all__ = ["SINGLE_DRAWS", "SINGLE_MAX", "single_tokens", "seq_single_cuts", "seq_single_law"]

#: A token picks once when its typical number of draws in the stopped stream is at least this.
SINGLE_DRAWS: float = 1.2
#: At most this many tokens pick once (the law costs :math:`2^{|S|}` series).
SINGLE_MAX: int = 3


def single_tokens(draws: np.ndarray) -> np.ndarray:
    r"""The slots that pick once: the :data:`SINGLE_MAX` largest typical draw counts
    (:func:`~.swap.stream_draws`) that reach :data:`SINGLE_DRAWS`, ascending.

    Examples
    --------
    >>> single_tokens(np.array([1.0, 3.5, 1.1, 1.3, 2.0, 1.25])).tolist()
    [1, 3, 4]
    """
    top = np.argsort(-draws, kind="stable")[:SINGLE_MAX]
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
    and a bound on :math:`|\hat\Phi(c) - \Phi(c)|` per cut (module docstring; n >= 3)."""
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
    # the combination: 2^|S| products of |S| + 1 factors each, summed
    bound += (2 ** len(S) + len(S) + 1) * 2 * U
    Phi[0], Phi[-1] = 0.0, 1.0
    bound[0] = bound[-1] = 0.0
    np.clip(Phi, 0.0, 1.0, out=Phi)
    return Phi, bound


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
