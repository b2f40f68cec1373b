r"""Total unimodularity (T3): exact tests, certificates, and the matrices of the theory.

A matrix :math:`A` is *totally unimodular* (TU) when every square submatrix has determinant in
:math:`\{-1, 0, 1\}`.  The constraint matrix of the dual (10),

.. math::

   \begin{pmatrix} E_y & E_z \\ I & 0 \\ 0 & I \end{pmatrix},\qquad
   (E_y)_{(i,\bar i), j} = 1[j = i],\quad (E_z)_{(i,\bar i), \bar t} = 1[\bar t = \bar i]
   \quad (i \in \bar i),

is the edge-vertex incidence matrix of the bipartite token/tuple graph stacked on identities,
hence TU (T3).  The token-vs-tuple *biadjacency* matrix :math:`B_{i,\bar i} = 1[i \in \bar i]`
is a different matrix and is not TU once the tuples contain an odd cycle (smallest case
V = 3, n = 2).

Four ways to decide TU are offered by :func:`is_totally_unimodular`:

``exhaustive``
    every square submatrix, exact integer determinants (python-flint when installed, integer
    Bareiss otherwise), after sound reductions (drop zero rows/columns, rows/columns with a single
    non-zero, duplicated rows/columns up to sign; split into connected blocks) and skipping
    submatrices that have a row or column with at most one non-zero (their determinant is
    :math:`\pm` a smaller minor, already checked because orders are visited in increasing order).
``random``
    ``samples`` sampled connected minors with a seeded generator: can refute, never prove.
``cmr``
    the Seymour-decomposition test of CMR (``pip install 'mdsd-ot[cmr]'``).
``auto``
    exhaustive within a budget of determinants, then CMR if installed, else random.

The search itself (determinants, reductions, the three searches) is in
:mod:`mdsd_ot.theory._tu_search`; this module holds the verdict and the matrices of the theory.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..drafts import SCHEMES, DraftLaw, make
from ._tu_search import (
    Budget,
    TUCertificate,
    as_int_matrix,
    cmr,
    exhaustive,
    fix_det,
    integer_det,
    random_minors,
)

__all__ = [
    "TUCertificate",
    "TUResult",
    "StructuralCertificate",
    "is_totally_unimodular",
    "integer_det",
    "dual_matrix",
    "biadjacency_matrix",
    "odd_cycle_incidence",
    "bipartite_incidence_certificate",
    "smallest_non_tu_biadjacency",
    "minor",
    "EXHAUSTIVE_BUDGET",
]

#: Work units (column subsets visited + determinants) the ``auto`` method spends on the
#: exhaustive search before falling back to CMR (or random minors).
EXHAUSTIVE_BUDGET: int = 50_000


@dataclass(frozen=True)
class TUResult:
    """Outcome of a TU test.

    Attributes
    ----------
    is_tu : bool or None
        True (proved TU), False (certificate found) or None (``random`` found no violation: not a
        proof).
    method : str
        The method that decided.
    certificate : TUCertificate or None
        A violating minor when ``is_tu`` is False.
    minors_checked : int
        Determinants evaluated.
    seconds : float
        Wall time.
    note : str
        What was done (reductions, fallbacks, sample count and seed).
    """

    is_tu: bool | None
    method: str
    certificate: TUCertificate | None = None
    minors_checked: int = 0
    seconds: float = 0.0
    note: str = ""

    @property
    def verdict(self) -> str:
        """``"TU"``, ``"not TU"`` or ``"no violation found"`` (random sampling)."""
        return {True: "TU", False: "not TU", None: "no violation found"}[self.is_tu]


@dataclass(frozen=True)
class StructuralCertificate:
    """Result of :func:`bipartite_incidence_certificate`.

    ``holds`` is True when every row is a unit row or a bipartite edge row; otherwise
    ``bad_row`` is the first offending row and ``reason`` says why.
    """

    holds: bool
    edge_rows: int = 0
    unit_rows: int = 0
    bad_row: int | None = None
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def is_totally_unimodular(
    A: Any,
    method: str = "auto",
    *,
    samples: int = 2000,
    seed: int = 0,
    budget: int | None = None,
    time_limit: float = 60.0,
) -> TUResult:
    r"""Decide whether ``A`` is totally unimodular (every square minor in {-1, 0, 1}).

    Parameters
    ----------
    A : (m, k) array_like or scipy sparse matrix of integers
    method : {"auto", "exhaustive", "random", "cmr"}
        See the module docstring.  ``random`` returns ``is_tu=None`` when it finds nothing.
    samples, seed : int
        Number of sampled minors and generator seed for ``random`` (and the ``auto`` fallback).
    budget : int, optional
        Maximum work units (column subsets visited + determinants) for ``exhaustive`` (default
        unlimited; ``auto`` uses :data:`EXHAUSTIVE_BUDGET`).
    time_limit : float
        Seconds allowed to CMR.

    Returns
    -------
    TUResult
        The verdict; for a non-TU matrix a certificate ``(rows, cols, det)`` with
        :math:`|\det A[\text{rows}, \text{cols}]| \ge 2`.

    Examples
    --------
    >>> is_totally_unimodular(odd_cycle_incidence(3), "exhaustive").certificate
    TUCertificate(rows=(0, 1, 2), cols=(0, 1, 2), det=2)
    >>> is_totally_unimodular([[1, 1, 0], [0, 1, 1]], "exhaustive").is_tu
    True
    """
    if method not in ("auto", "exhaustive", "random", "cmr"):
        raise ValueError(
            f"method: unknown TU test {method!r}; choose auto, exhaustive, random or cmr"
        )
    M = as_int_matrix(A)
    t0 = time.perf_counter()

    def done(is_tu, meth, cert=None, count=0, note=""):
        if cert is not None and cert.det == 0:
            cert = fix_det(M, cert)
        return TUResult(is_tu, meth, cert, count, time.perf_counter() - t0, note)

    if method == "cmr":
        ok, cert = cmr(M, time_limit)
        return done(ok, "cmr", cert, note="CMR Seymour decomposition")
    if method == "random":
        cert, count = random_minors(M, samples, seed)
        return done(
            False if cert else None, "random", cert, count, f"{count} sampled minors, seed {seed}"
        )
    lim = budget if method == "exhaustive" else (budget or EXHAUSTIVE_BUDGET)
    try:
        cert, count, note = exhaustive(M, lim)
        return done(cert is None, "exhaustive", cert, count, note)
    except Budget as exc:
        if method == "exhaustive":
            raise ValueError(
                f"budget: the exhaustive TU search exceeded {lim} work units; raise budget= "
                "or use method='cmr' / 'random'"
            ) from None
        spent = int(exc.args[0])
    try:
        ok, cert = cmr(M, time_limit)
        return done(ok, "cmr", cert, spent, f"exhaustive budget {lim} exceeded; CMR decided")
    except ImportError:
        cert, count = random_minors(M, samples, seed)
        return done(
            False if cert else None,
            "random",
            cert,
            spent + count,
            f"exhaustive budget {lim} exceeded; CMR not installed; {count} sampled minors, "
            f"seed {seed}",
        )


# --------------------------------------------------------------------------------------------
# the matrices of the theory


def _tuples(draft: DraftLaw) -> list[tuple[int, ...]]:
    return sorted(draft.joint_items(exact=False))


def dual_matrix(draft: DraftLaw, identity: bool = True) -> tuple[Any, list[tuple[int, ...]]]:
    r"""The constraint matrix of the dual (10) for ``draft``'s support, built from the definition.

    Columns: :math:`y_0, \dots, y_{V-1}`, then :math:`z_{\bar i}` for the support tuples in
    sorted order.  Rows: one per edge :math:`(i, \bar i)` with :math:`i \in \bar i` (ones at
    :math:`y_i` and :math:`z_{\bar i}`), ordered by tuple then token; then the identity rows of
    :math:`y \ge 0, z \ge 0` when ``identity``.

    Returns
    -------
    (scipy.sparse.csr_matrix of int64, list of tuples)

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> A, ts = dual_matrix(WithReplacement([0.5, 0.5], 2))
    >>> A.shape, ts
    ((12, 6), [(0, 0), (0, 1), (1, 0), (1, 1)])
    """
    import scipy.sparse as sp

    ts = _tuples(draft)
    V = draft.V
    rows, cols = [], []
    r = 0
    for k, t in enumerate(ts):
        for i in sorted(set(t)):
            rows += [r, r]
            cols += [i, V + k]
            r += 1
    ncol = V + len(ts)
    if identity:
        for j in range(ncol):
            rows.append(r + j)
            cols.append(j)
        r += ncol
    data = np.ones(len(rows), dtype=np.int64)
    return sp.csr_matrix((data, (rows, cols)), shape=(r, ncol)), ts


def biadjacency_matrix(draft: DraftLaw) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    r"""The token-vs-tuple biadjacency matrix :math:`B_{i, \bar i} = 1[i \in \bar i]`.

    Not the matrix of (10): its columns are tuples with up to n ones, and it is not TU once the
    tuple sets contain an odd cycle (T3b).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> B, ts = biadjacency_matrix(WithReplacement([0.5, 0.5], 2))
    >>> B.tolist()
    [[1, 1, 1, 0], [0, 1, 1, 1]]
    """
    ts = _tuples(draft)
    B = np.zeros((draft.V, len(ts)), dtype=np.int64)
    for k, t in enumerate(ts):
        B[list(set(t)), k] = 1
    return B, ts


def odd_cycle_incidence(k: int) -> np.ndarray:
    """Edge-vertex incidence matrix of the cycle C_k (rows = edges); det = 2 for odd k.

    Examples
    --------
    >>> odd_cycle_incidence(3).tolist()
    [[1, 1, 0], [0, 1, 1], [1, 0, 1]]
    """
    if k < 3:
        raise ValueError(f"k: a cycle needs at least 3 vertices, got {k}")
    M = np.zeros((k, k), dtype=np.int64)
    for e in range(k):
        M[e, e] = M[e, (e + 1) % k] = 1
    return M


def bipartite_incidence_certificate(A: Any, left: int) -> StructuralCertificate:
    r"""Structural certificate of T3: every row is a unit row (one ±1) or an edge row with exactly
    two non-zeros, both +1, one among the first ``left`` columns (tokens) and one among the
    others (tuples).

    Such a matrix is the incidence matrix of a bipartite graph (TU: orient every edge from its
    token to its tuple, negate the tuple columns, and it becomes a network matrix; or apply the
    Ghouila-Houri criterion with the two sides as the colouring) with unit rows appended, and
    appending unit rows keeps TU (expand the determinant along them).

    Examples
    --------
    >>> bipartite_incidence_certificate([[1, 1, 0], [1, 0, 1], [0, 1, 0]], left=1).holds
    True
    >>> bipartite_incidence_certificate(odd_cycle_incidence(3), left=1).holds
    False
    """
    M = as_int_matrix(A)
    edges = units = 0
    for r, row in enumerate(M):
        nz = np.flatnonzero(row)
        vals = row[nz]
        if nz.size == 1 and abs(int(vals[0])) == 1:
            units += 1
            continue
        if nz.size == 2 and np.all(vals == 1) and nz[0] < left <= nz[1]:
            edges += 1
            continue
        why = (
            f"row {r} has non-zeros at columns {nz.tolist()} with values {vals.tolist()}; "
            f"expected one +1 in columns [0, {left}) and one in [{left}, {M.shape[1]})"
        )
        return StructuralCertificate(False, edges, units, r, why)
    return StructuralCertificate(
        True, edges, units, None, f"{edges} bipartite edge rows, {units} unit rows"
    )


def smallest_non_tu_biadjacency(
    max_V: int = 4, max_n: int = 3, scheme: str = "with"
) -> tuple[int, int, TUResult, list[tuple[int, ...]]] | None:
    """The smallest (V, n), in lexicographic order, whose biadjacency matrix is not TU.

    Uses the law ``scheme`` with the uniform q (full support).  Decided exhaustively.

    Examples
    --------
    >>> V, n, res, ts = smallest_non_tu_biadjacency(max_V=3, max_n=2)
    >>> (V, n, abs(res.certificate.det))
    (3, 2, 2)
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    for V in range(1, max_V + 1):
        for n in range(1, max_n + 1):
            if SCHEMES[scheme].distinct and n > V:
                continue
            q = [f"1/{V}"] * V
            try:
                d = make(scheme, q, n)
            except ValueError:
                continue
            B, ts = biadjacency_matrix(d)
            res = is_totally_unimodular(B, "exhaustive")
            if res.is_tu is False:
                return V, n, res, ts
    return None


def minor(A: Any, rows: Sequence[int], cols: Sequence[int]) -> int:
    """Exact determinant of ``A[rows][:, cols]``."""
    M = as_int_matrix(A)
    return integer_det(M[np.ix_(list(rows), list(cols))])
