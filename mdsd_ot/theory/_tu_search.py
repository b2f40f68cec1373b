r"""The search behind :func:`mdsd_ot.theory.tum.is_totally_unimodular`: exact integer
determinants, sound reductions, the exhaustive minor search, sampled minors and CMR.

A :class:`TUCertificate` is a square submatrix whose determinant lies outside {-1, 0, 1}.  The
exhaustive search visits column subsets in increasing order, keeps only rows with two non-zeros
among the chosen columns (a row or column with at most one non-zero gives ± a smaller minor,
already checked), and stops at a work budget (:class:`Budget`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "TUCertificate",
    "Budget",
    "integer_det",
    "as_int_matrix",
    "exhaustive",
    "random_minors",
    "cmr",
    "fix_det",
]


@dataclass(frozen=True)
class TUCertificate:
    """A square submatrix with determinant outside {-1, 0, 1}: rows, columns and determinant."""

    rows: tuple[int, ...]
    cols: tuple[int, ...]
    det: int

    def to_json(self) -> dict[str, Any]:
        return {"rows": list(self.rows), "cols": list(self.cols), "det": self.det}


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


def as_int_matrix(A: Any) -> np.ndarray:
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
    if arr.size:
        with np.errstate(over="ignore"):
            big = np.argwhere(np.abs(arr.astype(np.float64)) >= 2.0**62)
        if big.size:  # int64 would wrap it (2^63 became -2^63, and np.abs of that overflows)
            r, c = (int(v) for v in big[0])
            raise ValueError(
                f"A: entry {int(arr[r, c])} at ({r}, {c}) is beyond ±2^62, which the search's int64 "
                "arithmetic cannot hold; it is itself a 1x1 minor outside {-1, 0, 1}, so A is not "
                "totally unimodular"
            )
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


class Budget(Exception):
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


def exhaustive(A: np.ndarray, budget: int | None) -> tuple[TUCertificate | None, int, str]:
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
                    raise Budget(count)
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
                        raise Budget(count)
                    d = integer_det([[Ml[i][j] for j in cs] for i in rs])
                    if d not in (-1, 0, 1):
                        rr = tuple(br[i] for i in rs) if not transpose else tuple(br[j] for j in cs)
                        cc = tuple(bc[j] for j in cs) if not transpose else tuple(bc[i] for i in rs)
                        return TUCertificate(tuple(sorted(rr)), tuple(sorted(cc)), 0), count, note
    return None, count, note


def fix_det(A: np.ndarray, cert: TUCertificate) -> TUCertificate:
    d = integer_det(A[np.ix_(cert.rows, cert.cols)])
    return TUCertificate(cert.rows, cert.cols, d)


def random_minors(A: np.ndarray, samples: int, seed: int) -> tuple[TUCertificate | None, int]:
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


def cmr(A: np.ndarray, time_limit: float) -> tuple[bool, TUCertificate | None]:
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
    return False, fix_det(A, c)
