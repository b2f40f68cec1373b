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
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..drafts import DraftLaw

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
    "EXHAUSTIVE_BUDGET",
]

#: Work units (column subsets visited + determinants) the ``auto`` method spends on the
#: exhaustive search before falling back to CMR (or random minors).
EXHAUSTIVE_BUDGET: int = 50_000


@dataclass(frozen=True)
class TUCertificate:
    """A square submatrix with determinant outside {-1, 0, 1}: rows, columns and determinant."""

    rows: tuple[int, ...]
    cols: tuple[int, ...]
    det: int

    def to_json(self) -> dict[str, Any]:
        return {"rows": list(self.rows), "cols": list(self.cols), "det": self.det}


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


# --------------------------------------------------------------------------------------------
# determinants


def _bareiss(M: list[list[int]]) -> int:
    """Exact integer determinant by fraction-free (Bareiss) elimination."""
    a = [row[:] for row in M]
    k = len(a)
    if k == 0:
        return 1
    sign, prev = 1, 1
    for i in range(k - 1):
        if a[i][i] == 0:
            piv = next((r for r in range(i + 1, k) if a[r][i] != 0), None)
            if piv is None:
                return 0
            a[i], a[piv] = a[piv], a[i]
            sign = -sign
        for r in range(i + 1, k):
            for c in range(i + 1, k):
                a[r][c] = (a[r][c] * a[i][i] - a[r][i] * a[i][c]) // prev
        prev = a[i][i]
    return sign * a[k - 1][k - 1]


def integer_det(M: Any) -> int:
    """Exact determinant of a square integer matrix (python-flint if installed, else Bareiss).

    Examples
    --------
    >>> integer_det([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    2
    """
    rows = [[int(v) for v in r] for r in np.asarray(M, dtype=object).tolist()]
    k = len(rows)
    if k == 1:
        return rows[0][0]
    if k == 2:
        return rows[0][0] * rows[1][1] - rows[0][1] * rows[1][0]
    if k >= 6:
        try:
            import flint  # optional: pip install 'mdsd-ot[flint]'

            return int(flint.fmpz_mat(rows).det())
        except ImportError:
            pass
    return _bareiss(rows)


# --------------------------------------------------------------------------------------------
# input handling and sound reductions


def _as_int_matrix(A: Any) -> np.ndarray:
    try:
        import scipy.sparse as sp

        if sp.issparse(A):
            A = A.toarray()
    except ImportError:  # pragma: no cover - scipy is a core dependency
        pass
    arr = np.asarray(A)
    if arr.ndim != 2:
        raise ValueError(f"A: must be a 2-D matrix, got shape {arr.shape}")
    if arr.size and not np.all(np.equal(np.mod(arr, 1), 0)):
        raise ValueError("A: total unimodularity is defined here for integer matrices only")
    return arr.astype(np.int64)


def _first_bad_entry(A: np.ndarray) -> TUCertificate | None:
    bad = np.argwhere(np.abs(A) > 1)
    if bad.size:
        r, c = (int(v) for v in bad[0])
        return TUCertificate((r,), (c,), int(A[r, c]))
    return None


def _reduce(A: np.ndarray) -> tuple[list[int], list[int]]:
    """Rows and columns kept after TU-preserving deletions (for a 0/±1 matrix).

    A row with one non-zero (±1) can be deleted: a square submatrix through it is singular (the
    column is absent) or equals ± a submatrix without it.  Zero rows and a second copy of a row
    (or of its negative) can be deleted for the same reason.  Likewise for columns.
    """
    rows, cols = list(range(A.shape[0])), list(range(A.shape[1]))
    changed = True
    while changed:
        changed = False
        sub = A[np.ix_(rows, cols)] if rows and cols else np.zeros((len(rows), len(cols)), int)
        nzr = np.count_nonzero(sub, axis=1) if cols else np.zeros(len(rows), int)
        keep_r = [r for r, k in zip(rows, nzr, strict=True) if k >= 2]
        if len(keep_r) != len(rows):
            rows, changed = keep_r, True
            continue
        nzc = np.count_nonzero(sub, axis=0) if rows else np.zeros(len(cols), int)
        keep_c = [c for c, k in zip(cols, nzc, strict=True) if k >= 2]
        if len(keep_c) != len(cols):
            cols, changed = keep_c, True
            continue
        seen: set[bytes] = set()
        keep_r = []
        for r, row in zip(rows, sub, strict=True):
            key = row.tobytes()
            if key in seen or (-row).tobytes() in seen:
                continue
            seen.add(key)
            keep_r.append(r)
        if len(keep_r) != len(rows):
            rows, changed = keep_r, True
            continue
        seen = set()
        keep_c = []
        for c, col in zip(cols, sub.T, strict=True):
            key = col.tobytes()
            if key in seen or (-col).tobytes() in seen:
                continue
            seen.add(key)
            keep_c.append(c)
        if len(keep_c) != len(cols):
            cols, changed = keep_c, True
    return rows, cols


def _blocks(A: np.ndarray, rows: list[int], cols: list[int]) -> list[tuple[list[int], list[int]]]:
    """Connected components of the row/column graph (a submatrix of a block-diagonal matrix has
    determinant 0 or a product of block minors, so TU is decided block by block)."""
    parent = {("r", r): ("r", r) for r in rows} | {("c", c): ("c", c) for c in cols}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in rows:
        for c in cols:
            if A[r, c] != 0:
                parent[find(("r", r))] = find(("c", c))
    comps: dict[Any, tuple[list[int], list[int]]] = {}
    for r in rows:
        comps.setdefault(find(("r", r)), ([], []))[0].append(r)
    for c in cols:
        comps.setdefault(find(("c", c)), ([], []))[1].append(c)
    return [v for v in comps.values() if v[0] and v[1]]


class _Budget(Exception):
    pass


def _row_choices(Ml: list[list[int]], elig: list[int], cs: tuple[int, ...], k: int):
    """k-subsets of ``elig`` covering every column of ``cs`` at least twice (depth-first, pruned
    by the coverage still available in the remaining rows)."""
    L = len(elig)
    cov = [[1 if Ml[i][j] else 0 for j in cs] for i in elig]
    # suffix[pos][c]: rows elig[pos:] with a non-zero in column cs[c]
    suffix = [[0] * k for _ in range(L + 1)]
    for pos in range(L - 1, -1, -1):
        suffix[pos] = [a + b for a, b in zip(suffix[pos + 1], cov[pos], strict=True)]
    cnt = [0] * k
    chosen: list[int] = []

    def rec(pos: int):
        slots = k - len(chosen)
        if slots == 0:
            if min(cnt) >= 2:
                yield tuple(chosen)
            return
        if L - pos < slots:
            return
        for c in range(k):
            need = 2 - cnt[c]
            if need > 0 and (suffix[pos][c] < need or need > slots):
                return
        for p in range(pos, L - slots + 1):
            chosen.append(elig[p])
            for c in range(k):
                cnt[c] += cov[p][c]
            yield from rec(p + 1)
            for c in range(k):
                cnt[c] -= cov[p][c]
            chosen.pop()

    yield from rec(0)


def _exhaustive(A: np.ndarray, budget: int | None) -> tuple[TUCertificate | None, int, str]:
    bad = _first_bad_entry(A)
    if bad is not None:
        return bad, 0, "an entry outside {-1, 0, 1}"
    rows, cols = _reduce(A)
    blocks = _blocks(A, rows, cols)
    note = f"reduced {A.shape[0]}x{A.shape[1]} to {len(rows)}x{len(cols)} in {len(blocks)} block(s)"
    count = work = 0
    for br, bc in blocks:
        transpose = len(bc) > len(br)
        # enumerate column subsets along the smaller side
        M = A[np.ix_(br, bc)]
        if transpose:
            M = M.T
        R, C = M.shape
        rmask = [sum(1 << j for j in range(C) if M[i, j]) for i in range(R)]
        Ml = M.tolist()
        for k in range(2, min(R, C) + 1):
            for cs in itertools.combinations(range(C), k):
                work += 1
                if budget is not None and work > budget:
                    raise _Budget(count)
                cm = sum(1 << j for j in cs)
                elig = [i for i in range(R) if (rmask[i] & cm).bit_count() >= 2]
                if len(elig) < k:
                    continue
                # every chosen column needs two non-zeros among the chosen rows
                if any(sum(1 for i in elig if Ml[i][j]) < 2 for j in cs):
                    continue
                for rs in _row_choices(Ml, elig, cs, k):
                    count += 1
                    work += 1
                    if budget is not None and work > budget:
                        raise _Budget(count)
                    d = integer_det([[Ml[i][j] for j in cs] for i in rs])
                    if d not in (-1, 0, 1):
                        rr = tuple(br[i] for i in rs) if not transpose else tuple(br[j] for j in cs)
                        cc = tuple(bc[j] for j in cs) if not transpose else tuple(bc[i] for i in rs)
                        return TUCertificate(tuple(sorted(rr)), tuple(sorted(cc)), 0), count, note
    return None, count, note


def _fix_det(A: np.ndarray, cert: TUCertificate) -> TUCertificate:
    d = integer_det(A[np.ix_(cert.rows, cert.cols)])
    return TUCertificate(cert.rows, cert.cols, d)


def _random(A: np.ndarray, samples: int, seed: int) -> tuple[TUCertificate | None, int]:
    """Sample connected minors: grow alternately a column from the chosen rows' supports and a
    row from the chosen columns' supports (random dense minors of sparse matrices are singular)."""
    bad = _first_bad_entry(A)
    if bad is not None:
        return bad, 0
    rng = np.random.default_rng(seed)
    m, n = A.shape
    if m == 0 or n == 0:
        return None, 0
    nz_rows = [np.flatnonzero(A[i]) for i in range(m)]
    nz_cols = [np.flatnonzero(A[:, j]) for j in range(n)]
    live = [i for i in range(m) if nz_rows[i].size]
    if not live:
        return None, 0
    for s in range(samples):
        k = int(rng.integers(2, min(m, n) + 1)) if min(m, n) >= 2 else 1
        R = [int(rng.choice(live))]
        C: list[int] = []
        while len(C) < k:
            cand = sorted({int(c) for r in R for c in nz_rows[r]} - set(C))
            if not cand:
                cand = sorted(set(range(n)) - set(C))
            C.append(int(rng.choice(cand)))
            if len(R) < k:
                cand = sorted({int(r) for c in C for r in nz_cols[c]} - set(R))
                if not cand:
                    cand = sorted(set(range(m)) - set(R))
                R.append(int(rng.choice(cand)))
        rs, cs = tuple(sorted(R)), tuple(sorted(C))
        d = integer_det(A[np.ix_(rs, cs)])
        if d not in (-1, 0, 1):
            return TUCertificate(rs, cs, d), s + 1
    return None, samples


def _cmr(A: np.ndarray, time_limit: float) -> tuple[bool, TUCertificate | None]:
    try:
        from sage.all__sagemath_modules import ZZ, MatrixSpace
        from sage.matrix.matrix_cmr_sparse import Matrix_cmr_chr_sparse
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError(
            "method='cmr' needs the CMR library through passagemath-cmr; install it with "
            "pip install 'mdsd-ot[cmr]'"
        ) from exc
    m, n = A.shape
    if m == 0 or n == 0:
        return True, None
    bad = _first_bad_entry(A)
    if bad is not None:
        return False, bad
    entries = {(int(i), int(j)): int(A[i, j]) for i, j in zip(*np.nonzero(A), strict=True)}
    M = Matrix_cmr_chr_sparse(MatrixSpace(ZZ, m, n, sparse=True), entries)
    ok, cert = M.is_totally_unimodular(certificate=True, time_limit=time_limit)
    if ok:
        return True, None
    rs, cs = cert[1]
    c = TUCertificate(tuple(sorted(int(r) for r in rs)), tuple(sorted(int(x) for x in cs)), 0)
    return False, _fix_det(A, c)


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
    M = _as_int_matrix(A)
    t0 = time.perf_counter()

    def done(is_tu, meth, cert=None, count=0, note=""):
        if cert is not None and cert.det == 0:
            cert = _fix_det(M, cert)
        return TUResult(is_tu, meth, cert, count, time.perf_counter() - t0, note)

    if method == "cmr":
        ok, cert = _cmr(M, time_limit)
        return done(ok, "cmr", cert, note="CMR Seymour decomposition")
    if method == "random":
        cert, count = _random(M, samples, seed)
        return done(
            False if cert else None, "random", cert, count, f"{count} sampled minors, seed {seed}"
        )
    lim = budget if method == "exhaustive" else (budget or EXHAUSTIVE_BUDGET)
    try:
        cert, count, note = _exhaustive(M, lim)
        return done(cert is None, "exhaustive", cert, count, note)
    except _Budget as exc:
        if method == "exhaustive":
            raise ValueError(
                f"budget: the exhaustive TU search exceeded {lim} work units; raise budget= "
                "or use method='cmr' / 'random'"
            ) from None
        spent = int(exc.args[0])
    try:
        ok, cert = _cmr(M, time_limit)
        return done(ok, "cmr", cert, spent, f"exhaustive budget {lim} exceeded; CMR decided")
    except ImportError:
        cert, count = _random(M, samples, seed)
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
    M = _as_int_matrix(A)
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
    from ..drafts import make

    for V in range(1, max_V + 1):
        for n in range(1, max_n + 1):
            if scheme in ("without", "conditional-poisson") and n > V:
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
    M = _as_int_matrix(A)
    return integer_det(M[np.ix_(list(rows), list(cols))])
