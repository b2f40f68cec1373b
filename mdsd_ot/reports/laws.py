r"""The draft laws a report covers, and α* of each of them on a batch of rows (one place).

A report covers every law of :data:`mdsd_ot.drafts.SCHEMES` that is built from one draft model
``q`` and ``n`` and has a fast-solver route (the class attribute ``kernel``; laws with a fixed
number of drafts, ``fixed_n``, only at that n).  α* per row comes from
:func:`mdsd_ot.fast.alpha_star` (the prefix algorithm, T7; closed form for greedy, T9):

.. math:: \alpha^*(p, L) = 1 + \min_k \bigl[P(H_k) - Q_L(H_k)\bigr].

:func:`alpha_rows` is the single call site of the solver for reports: the laws of a row share
the ordering of p/q, so one call of :func:`mdsd_ot.fast.alpha_star_laws` validates and sorts (or
buckets) each row once for all of them.

Examples
--------
>>> report_laws(2)
('with', 'without', 'conditional-poisson', 'greedy', 'spechub')
>>> a, how = alpha_rows([[0.5, 0.5]], [[0.75, 0.25]], 2, ["with"])["with"]
>>> a.tolist(), how
([0.9375], 'fast')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import drafts as D

__all__ = ["report_laws", "alpha_rows", "make_law"]


def report_laws(n: int) -> tuple[str, ...]:
    """The schemes a report covers for ``n`` drafts (fast route, and ``n`` allowed)."""
    return tuple(
        s
        for s, cls in D.SCHEMES.items()
        if cls.kernel is not None and cls.fixed_n in (None, int(n))
    )


def make_law(scheme: str, q: Any, n: int) -> D.DraftLaw:
    """The law ``scheme`` built from the draft model ``q`` and ``n`` drafts."""
    return D.make(scheme, q, n)


def alpha_rows(P: Any, Q: Any, n: int, laws: Sequence[str]) -> dict[str, tuple[np.ndarray, str]]:
    """α* of every row for each law: ``{law: (values, "fast")}`` (NaN where a row is refused).

    One solver call for every law on the whole batch (one sort per row,
    :func:`mdsd_ot.fast.alpha_star_laws`); when it refuses the batch (e.g. a row whose q has
    fewer than n positive entries, for a law of distinct drafts), each law is solved on its own
    and a row still refused is retried alone and left NaN.
    """
    from ..fast import alpha_star, alpha_star_laws

    P = np.atleast_2d(np.asarray(P, dtype=np.float64))
    Q = np.atleast_2d(np.asarray(Q, dtype=np.float64))
    try:
        both = alpha_star_laws(P, Q, [(law, int(n)) for law in laws])
    except ValueError:
        pass
    else:
        return {law: (np.asarray(both[(law, int(n))], dtype=np.float64), "fast") for law in laws}
    out = {}
    for law in laws:
        try:
            a = np.asarray(alpha_star(P, Q, n=n, scheme=law), dtype=np.float64).reshape(-1)
        except ValueError:
            a = np.full(P.shape[0], np.nan)
            for k in range(P.shape[0]):
                try:
                    a[k] = alpha_star(P[k], Q[k], n=n, scheme=law)
                except ValueError:
                    pass
        out[law] = (a, "fast")
    return out
