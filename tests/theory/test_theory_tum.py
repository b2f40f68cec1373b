"""Total unimodularity (T3): exact tests, certificates, pruning soundness, CMR cross-check."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mdsd_ot import drafts
from mdsd_ot.exact import dual
from mdsd_ot.theory import tum
from mdsd_ot.theory.tum import (
    biadjacency_matrix,
    bipartite_incidence_certificate,
    dual_matrix,
    integer_det,
    is_totally_unimodular,
    odd_cycle_incidence,
    smallest_non_tu_biadjacency,
)


def naive_is_tu(A: np.ndarray) -> bool:
    """Every square submatrix, no pruning, numpy determinants rounded (tiny matrices only)."""
    m, n = A.shape
    for k in range(1, min(m, n) + 1):
        for rs in itertools.combinations(range(m), k):
            for cs in itertools.combinations(range(n), k):
                if round(abs(np.linalg.det(A[np.ix_(rs, cs)]))) > 1:
                    return False
    return True


def test_integer_det_matches_numpy():
    rng = np.random.default_rng(0)
    for k in range(1, 9):  # k ≥ 6 goes through python-flint when installed
        M = rng.integers(-3, 4, size=(k, k))
        assert integer_det(M) == round(np.linalg.det(M)), M


@pytest.mark.parametrize("k", [3, 5, 7])
def test_odd_cycle_is_not_tu(k):
    # T3 control: a non-bipartite incidence matrix must fail, with det ±2
    res = is_totally_unimodular(odd_cycle_incidence(k), "exhaustive")
    assert res.is_tu is False and res.verdict == "not TU"
    c = res.certificate
    assert abs(c.det) == 2 and len(c.rows) == len(c.cols) == k
    assert tum.minor(odd_cycle_incidence(k), c.rows, c.cols) == c.det


@pytest.mark.parametrize("k", [4, 6])
def test_even_cycle_is_tu(k):
    assert is_totally_unimodular(odd_cycle_incidence(k), "exhaustive").is_tu is True


def test_entry_outside_pm1_gives_1x1_certificate():
    res = is_totally_unimodular([[1, 0], [2, 1]], "exhaustive")
    assert res.is_tu is False and res.certificate.rows == (1,) and res.certificate.det == 2


def test_exhaustive_pruning_agrees_with_naive_enumeration():
    # soundness of the reductions and of the "≥ 2 non-zeros per row/column" pruning
    rng = np.random.default_rng(1)
    verdicts = []
    for _ in range(150):
        m, n = rng.integers(2, 6, size=2)
        A = rng.choice([-1, 0, 0, 1], size=(m, n))
        got = is_totally_unimodular(A, "exhaustive")
        want = naive_is_tu(A)
        assert got.is_tu is want, A
        if not want:
            assert abs(tum.minor(A, got.certificate.rows, got.certificate.cols)) >= 2
        verdicts.append(want)
    assert 10 < sum(verdicts) < 140  # both verdicts were exercised


@pytest.mark.parametrize(
    "scheme,q,n",
    [
        ("with", ["1/3", "1/3", "1/3"], 2),
        ("without", ["1/2", "3/10", "1/5"], 2),
        ("conditional-poisson", ["1/2", "3/10", "1/5"], 2),
        ("greedy", ["2/5", "3/10", "1/5", "1/10"], 3),
        ("spechub", ["2/5", "3/10", "1/5", "1/10"], 2),
        ("with", ["1/2", "1/2"], 3),
    ],
)
def test_dual_matrix_is_tu_exhaustively(scheme, q, n):
    # T3 on every scheme, decided exactly; plus the structural certificate
    d = drafts.make(scheme, q, n)
    A, ts = dual_matrix(d)
    edges = sum(len(set(t)) for t in ts)
    assert A.shape == (edges + d.V + len(ts), d.V + len(ts))
    assert is_totally_unimodular(A, "exhaustive").is_tu is True
    cert = bipartite_incidence_certificate(A, d.V)
    assert cert.holds and cert.edge_rows == edges and cert.unit_rows == d.V + len(ts)


def test_product_dual_matrix_is_tu():
    d = drafts.Product([["1/2", "1/4", "1/4"], ["1/3", "1/3", "1/3"]])
    A, _ = dual_matrix(d)
    assert is_totally_unimodular(A, "exhaustive").is_tu is True


def test_structural_certificate_rejects_same_side_edges():
    A = np.array([[1, 1, 0], [1, 0, 1]])  # row 0 joins two tokens (left = 2)
    cert = bipartite_incidence_certificate(A, left=2)
    assert not cert.holds and cert.bad_row == 0


def test_matches_exact_dual_constraint_matrix():
    d = drafts.WithoutReplacement(["1/2", "3/10", "1/5"], 2)
    A, _ = dual_matrix(d)
    B = dual.dual_constraint_matrix(d)
    assert B.shape == A.shape
    # same multiset of rows (row order may differ)
    rows = lambda M: sorted(map(tuple, np.asarray(M.todense()).astype(int).tolist()))  # noqa: E731
    assert rows(A) == rows(B)
    assert is_totally_unimodular(B, "exhaustive").is_tu is True


def test_biadjacency_smallest_failure_is_V3_n2():
    # T3b: V ≤ 2 and n = 1 are TU; (3, 2) is the first failure (a triangle of pairs)
    V, n, res, ts = smallest_non_tu_biadjacency(max_V=4, max_n=3)
    assert (V, n) == (3, 2)
    assert sorted(len(set(ts[j])) for j in res.certificate.cols) == [2, 2, 2]
    for V_, n_ in [(2, 1), (2, 2), (2, 3), (3, 1)]:
        B, _ = biadjacency_matrix(drafts.make("with", [1 / V_] * V_, n_))
        assert is_totally_unimodular(B, "exhaustive").is_tu is True


def test_biadjacency_of_greedy_is_tu_but_iid_is_not():
    Bg, _ = biadjacency_matrix(drafts.Greedy(["2/5", "3/10", "1/5", "1/10"], 2))  # a star
    assert is_totally_unimodular(Bg, "exhaustive").is_tu is True
    Bw, _ = biadjacency_matrix(drafts.WithReplacement([0.25] * 4, 2))
    assert is_totally_unimodular(Bw, "exhaustive").is_tu is False


def test_random_method_states_count_and_seed():
    res = is_totally_unimodular(odd_cycle_incidence(5), "random", samples=500, seed=3)
    assert res.is_tu is False and abs(res.certificate.det) == 2
    A, _ = dual_matrix(drafts.WithReplacement([0.5, 0.5], 2))
    res = is_totally_unimodular(A, "random", samples=50, seed=0)
    assert res.is_tu is None and res.minors_checked == 50 and "seed 0" in res.note


def test_auto_falls_back_when_budget_exceeded():
    A, _ = dual_matrix(drafts.WithReplacement([1 / 3] * 3, 3))
    res = is_totally_unimodular(A, "auto", budget=200, samples=30)
    assert res.method in ("cmr", "random") and "budget 200 exceeded" in res.note
    assert res.is_tu in (True, None)
    with pytest.raises(ValueError, match="budget"):
        is_totally_unimodular(A, "exhaustive", budget=200)


def test_bad_inputs():
    with pytest.raises(ValueError, match="method"):
        is_totally_unimodular([[1]], "magic")
    with pytest.raises(ValueError, match="integer"):
        is_totally_unimodular([[0.5]], "exhaustive")
    with pytest.raises(ValueError, match="2-D"):
        is_totally_unimodular([1, 0], "exhaustive")


def test_cmr_cross_check():
    pytest.importorskip("sage.matrix.matrix_cmr_sparse")
    rng = np.random.default_rng(2)
    for _ in range(40):
        m, n = rng.integers(2, 6, size=2)
        A = rng.choice([-1, 0, 0, 1], size=(m, n))
        ex, cm = is_totally_unimodular(A, "exhaustive"), is_totally_unimodular(A, "cmr")
        assert ex.is_tu is cm.is_tu, A
        if cm.is_tu is False:
            assert abs(cm.certificate.det) >= 2
    A, _ = dual_matrix(drafts.WithReplacement([1 / 3] * 3, 3))  # 87 x 30: beyond brute force
    assert is_totally_unimodular(A, "cmr").is_tu is True
    assert is_totally_unimodular(odd_cycle_incidence(9), "cmr").is_tu is False


@pytest.mark.slow
def test_dual_matrix_tu_exhaustive_V4():
    for scheme in ["with", "conditional-poisson"]:
        A, _ = dual_matrix(drafts.make(scheme, [0.25] * 4, 2))
        assert is_totally_unimodular(A, "exhaustive").is_tu is True


@pytest.mark.parametrize("A", [[[2**63]], [[1e19]], [[-(2**63)]], [[2**70]], [[-1e19, 1], [1, 1]]])
def test_entries_beyond_int64_are_refused_not_wrapped(A):
    """Review of 2026-12-06: 2^63 wrapped to -2^63 in int64 and np.abs overflowed, so [[2^63]]
    was called totally unimodular."""
    from mdsd_ot.theory import is_totally_unimodular

    with pytest.raises(ValueError, match=r"^A: entry -?\d+ at \(0, 0\) is beyond ±2\^62"):
        is_totally_unimodular(A)
