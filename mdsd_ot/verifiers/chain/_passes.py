r"""The V-size passes of the chain plans, fused into compiled loops when numba is installed.

A plan of ``relabel`` / ``stream`` (any n), ``cp2`` or ``seq2`` reads the vocabulary a dozen
times in numpy: two gathers by the chain order, a few cumulative sums, the suffix minimum of the transfer
path :math:`F = P - Q`, :math:`E_j = \max(0, F_j - \min_{i>j} F_i)`, its increments dE, the
sub-law s and the supply and demand lists of the first-in first-out pairing.  Cumulative sums
and suffix minima are sequential scans (numpy's run at about 3 ns per entry), so a few loops do
the same work:

- a *front* pass (slot order): the gathers, the masses and the cumulative sums, F;
- a *back* pass (top down): the running minimum, E and dE, s, and the supply and demand lists
  (or the full-length cumulative supply and demand of :meth:`.rows.Pairing.full`);
- seq2's kernel law on the pairs (:func:`mdsd_ot.verifiers.chain.seq2_kernel.kernel_law`);
- the residual draw: the cumulative :math:`(p - s)^+` by slot;
- seq2's level draws (:meth:`mdsd_ot.verifiers.chain.seq2_kernel.Seq2Kernel.pair_levels`): each
  draw's kernel row scanned in one loop, with the same uniforms.

Every loop performs the same floating-point operations, in the same order, as the numpy route
(sequential cumulative sums, elementwise products and quotients; the pairwise sums that numpy
computes, such as :math:`\sum q`, stay in numpy), so the two routes agree *bit for bit* up to the
sign of zeros (tested); the one exception is seq2's ``law_error``, whose sums of absolute terms
are sequential here (equal to 1e-12 relative; the bound's rounding depth is unchanged,
proofs/optimal_verifier.md §9.5).  Without numba, with ``MDSD_OT_JIT=0`` or inside
:func:`mdsd_ot.fast._fused.disabled`, :func:`kernels` returns None and the callers run numpy.
The loops compile on first use (a few seconds in all, cached on disk by numba where the package
directory is writable).

This module holds :func:`kernels`; the loops are module-level numba functions, by job:
:mod:`._passes_plan_nb` (the gathers, the front and back passes, the residual's cumulative
sums) and :mod:`._passes_seq2_nb` (seq2's kernel law and level draws).

Examples
--------
>>> import numpy as np
>>> k = kernels()
>>> k is None or callable(k["gather"])
True
"""

from __future__ import annotations

import functools
from typing import Any

from ...fast import _fused

__all__ = ["kernels"]


def kernels() -> dict[str, Any] | None:
    """The compiled passes, or None when they are off (no numba, ``MDSD_OT_JIT=0``, or inside
    :func:`mdsd_ot.fast._fused.disabled`).

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
    """The compiled passes, by key (:mod:`._passes_plan_nb`, :mod:`._passes_seq2_nb`: compiled
    or loaded from numba's disk cache on first call), or None without numba."""
    if _fused.jit_decorator() is None:
        return None
    from . import _passes_pairs_nb as pr
    from . import _passes_plan_nb as pl
    from . import _passes_seq2_nb as sq

    return {
        "pair_inflow": pr.pair_inflow,
        "pair_outflow": pr.pair_outflow,
        "seq2_levels": sq.seq2_levels,
        "seq2_law": sq.seq2_law,
        "gather": pl.gather,
        "back": pl.back,
        "relabel_front": pl.relabel_front,
        "cp2_front": pl.cp2_front,
        "cp2_mid": pl.cp2_mid,
        "rho_of": pl.rho_of,
        "seq2_front": pl.seq2_front,
        "cover_cut": pl.cover_cut,
        "residual_cumsum": pl.residual_cumsum,
        "residual_cumsum_iid2": pl.residual_cumsum_iid2,
        "cumsum_p": pl.cumsum_p,
    }
