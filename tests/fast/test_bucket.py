"""The bucket-and-bound path (mdsd_ot.fast.bucket) against the sorting path and exact values.

Issue 14: the same α* as the sorting path to 1e-12 and the same H* where the optimum is unique,
on the synthetic family at several temperatures and on the adversarial inputs (all ratios
equal, ratios spread over 600 octaves, zeros in p or q, 1e-300 masses, ties, a near point
mass), for with, without (n = 2..5) and conditional Poisson, on numpy and torch (one backend
fixture); exact against Fractions (brute-force subset selection) on small instances with the
bucket path forced; the rows it cannot settle fall back to the sort; torch reads the host once.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_ot
from mdsd_ot import drafts as D
from mdsd_ot.fast import _backend as bk
from mdsd_ot.fast import alpha_star, bucket, chain, scan, solver
from mdsd_ot.synthetic import synthetic_batch, synthetic_pair
from testkit import SYNC_OPS, torch_spy

KERNELS = [
    ("with", 2),
    ("with", 8),
    ("without", 2),
    ("without", 3),
    ("without", 4),
    ("conditional-poisson", 2),
    ("conditional-poisson", 4),
]


def _both(nx, P, Q, n, kernel, return_set=True):
    """(bucket result, sort result) on backend nx, as numpy."""
    Pt, Qt = nx.asarray(P), nx.asarray(Q)
    out = []
    for path in ("bucket", "sort"):
        a, H, err = solver.solve_rows(Pt, Qt, n, kernel, return_set, path=path)
        out.append((nx.to_numpy(a), None if H is None else nx.to_numpy(H), err))
    return out


@pytest.mark.parametrize("kernel,n", KERNELS)
def test_synthetic_family_equals_sort(kernel, n, nx):
    """Softmax rows of Zipf logits at temperatures 0.5, 1 and 2 (V = 20,000): α* within 1e-12
    (float32: FLOAT32_BOUND), H* identical (float64) where α* < 1 (at α* = 1 the empty set ties
    with sets of value 0 up to rounding), every row settled by the buckets."""
    for T in (0.5, 1.0, 2.0):
        P, Q = synthetic_batch(3, 20_000, T, 11, noise=1.0)
        (ab, Hb, eb), (as_, Hs, _) = _both(nx, P, Q, n, kernel)
        assert np.max(np.abs(ab - as_)) <= nx.tol(1e-12), (kernel, n, T, ab - as_)
        if not nx.float32:  # where the optimum is unique: α* = 1 has the empty set and its ties
            unique = as_ < 1 - 1e-9
            assert np.array_equal(Hb[unique], Hs[unique]), (kernel, n, T)
        st = bucket._phase1(
            *(nx.asarray(x) for x in (P, Q)),
            *(nx.asarray(np.ones(3)) for _ in range(2)),
            chain.chain_for(kernel, n),
            bk.namespace(nx.asarray(P)),
        )
        counts, fallback = bk.to_host(st["counts"], st["fallback"])
        assert not fallback.any() and counts.max() <= 0.25 * 20_000, (kernel, n, T, counts)


def _adversarial(rng: np.random.Generator, V: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The issue's adversarial inputs (seeded), as (p, q) float64 rows summing to 1."""
    q = rng.dirichlet(np.full(V, 0.5))
    cases = {"equal ratios": (q.copy(), q.copy())}
    p = q * np.exp2(rng.uniform(-300, 300, V))
    cases["600 octaves"] = (p / p.sum(), q)
    p, qz = rng.dirichlet(np.ones(V)), q.copy()
    p[rng.random(V) < 0.3] = 0.0
    qz[rng.random(V) < 0.3] = 0.0
    cases["zeros in p and q"] = (p / p.sum(), qz / qz.sum())
    p = rng.dirichlet(np.ones(V))
    p[rng.random(V) < 0.2] = 1e-300
    qt = q.copy()
    qt[rng.random(V) < 0.2] = 1e-300
    cases["1e-300 masses"] = (p / p.sum(), qt / qt.sum())
    r = rng.choice([0.25, 1.0, 4.0], V)
    p = q * r
    cases["ties"] = (p / p.sum(), q)
    qa = np.full(V, 1e-12 / V)
    qa[rng.integers(V)] = 1.0
    cases["near point mass"] = (rng.dirichlet(np.ones(V)), qa / qa.sum())
    near = q * (1.0 + 1e-3 * rng.random(V))  # every ratio in one bucket: the sort fallback
    cases["one bucket"] = (near / near.sum(), q)
    return cases


@pytest.mark.parametrize("kernel,n", KERNELS + [("without", 5)])
def test_adversarial_inputs_equal_sort(kernel, n, nx64):
    """Every adversarial case: α* within 1e-12 of the sorting path, H* identical when the
    optimum is unique by a margin (the value of the returned set is checked always)."""
    rng = np.random.default_rng(5)
    for name, (p, q) in _adversarial(rng, 6000).items():
        (ab, Hb, eb), (as_, Hs, _) = _both(nx64, p[None], q[None], n, kernel)
        assert abs(ab[0] - as_[0]) <= 1e-12, (kernel, n, name, ab[0] - as_[0])
        assert np.all(np.isfinite(eb if isinstance(eb, np.ndarray) else nx64.to_numpy(eb)))
        if not np.array_equal(Hb, Hs):  # ties: both sets attain α*
            for H in (Hb[0], Hs[0]):
                assert abs(_value(p, q, H, kernel, n) - ab[0]) <= 1e-12, (kernel, n, name)


def _value(p: np.ndarray, q: np.ndarray, H: np.ndarray, kernel: str, n: int) -> float:
    """P(H) + 1 - Q(H), Q by the law's prefix kernel on an order that puts H first."""
    order = np.concatenate([np.flatnonzero(H), np.flatnonzero(~H)])
    Q, _ = scan.KERNELS[kernel](q[order][None, :].copy(), n)
    k = int(H.sum())
    return float(p[H].sum() + 1 - (Q[0, k - 1] if k else 0.0))


def _dense_bucket_row(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """3,000 of 5,000 tokens in one bucket (ratios near 0.8, q mass 0.02) holding the optimum of
    with replacement, n = 2 (where p/q crosses Q'(s) = 2 q(H) = 0.78..0.82 inside it): 1,000
    tokens of ratio ~0 (q mass 0.39) before it, 1,000 of ratio 1.5..1.85 after it."""
    blocks = [(1000, 0.39, 1e-6, 2e-6), (3000, 0.02, 0.79, 0.81), (1000, 0.59, 1.5, 1.85)]
    qs, ps = [], []
    for size, mass, lo, hi in blocks:
        qb = rng.dirichlet(np.ones(size)) * mass
        qs.append(qb)
        ps.append(qb * rng.uniform(lo, hi, size))
    q, p = np.concatenate(qs), np.concatenate(ps)
    perm = rng.permutation(5000)
    return p[perm] / p.sum(), q[perm] / q.sum()


def test_many_survivors_scanned_or_sorted(monkeypatch):
    """A bucket holding 60% of the tokens and the optimum: sorted at once (its fullest bucket
    exceeds the law's dense_fraction), or, with that check off, scanned (survivors below MAX_FRACTION), or
    sorted after the bounds (survivors above MAX_FRACTION): always the sorting path's α*.
    (numpy's buckets: the fused route's are finer and split this bucket; see test_fused.py)"""
    monkeypatch.setenv("MDSD_OT_JIT", "0")
    p, q = _dense_bucket_row(np.random.default_rng(2))
    one = np.ones(1)
    ref = alpha_star(p, q, n=2, scheme="with", path="sort")
    assert ref < 0.95  # the optimum is a proper prefix, inside the dense bucket
    calls = []
    real = bucket._phase1
    monkeypatch.setattr(bucket, "_phase1", lambda *a: calls.append(1) or real(*a))
    assert abs(alpha_star(p, q, n=2, scheme="with", path="bucket") - ref) <= 1e-14
    assert not calls  # sorted before the law's statistics
    monkeypatch.setattr(chain.With, "dense_fraction", 1.0)
    for fraction, falls_back in ((bucket.MAX_FRACTION, False), (0.1, True)):
        monkeypatch.setattr(bucket, "MAX_FRACTION", fraction)
        st = real(p[None], q[None], one, one, chain.chain_for("with", 2), np)
        assert 3000 <= st["counts"][0] <= 3200 and bool(st["fallback"][0]) == falls_back
        a = alpha_star(p, q, n=2, scheme="with", path="bucket")
        assert abs(a - ref) <= 1e-14, (fraction, a - ref)


@pytest.mark.parametrize("scheme", ["with", "without", "conditional-poisson"])
def test_small_instances_exact_with_buckets_forced(scheme, nx64):
    """V <= 6, the bucket path forced: α* and the value of H equal the exact brute force
    (Fractions) within 1e-10, including ties, zeros, 1e-12 masses and n = support size."""
    rng = np.random.default_rng(17 + len(scheme))
    done = 0
    while done < 80:
        V = int(rng.integers(2, 7))
        p = rng.dirichlet(np.full(V, rng.choice([0.3, 1.0])))
        q = rng.dirichlet(np.full(V, rng.choice([0.3, 1.0])))
        kind = rng.integers(4)
        if kind == 0:
            idx = rng.choice(V, min(V, 3), replace=False)
            p[idx] = q[idx] * rng.choice([0.5, 1.0, 2.0])
        elif kind == 1:
            p[rng.integers(V)] = 0.0
            q[rng.integers(V)] = 0.0
        elif kind == 2:
            q[rng.integers(V)] = 1e-12
        p, q = p / p.sum(), q / q.sum()
        support = int(np.count_nonzero(q))
        if scheme != "with" and support < 2:
            continue
        n = int(rng.integers(1, 5)) if scheme == "with" else int(rng.integers(2, support + 1))
        law = D.make(scheme, q, n)
        ref = mdsd_ot.solve(p, law, method="subset-exact")
        a, H = alpha_star(
            nx64.asarray(p), nx64.asarray(q), n=n, scheme=scheme, return_set=True, path="bucket"
        )
        a, H = float(nx64.to_numpy(a)), nx64.to_numpy(H)
        assert abs(a - ref.alpha) <= 1e-10, (scheme, n, p.tolist(), q.tolist(), a, ref.alpha)
        value = float(sum(p[H]) + 1 - law.Q(H))
        assert abs(value - ref.alpha) <= 1e-10, (scheme, n, p.tolist(), q.tolist())
        done += 1


def test_auto_path_and_bound_reported_per_row():
    """path="auto" takes the buckets from BUCKET_MIN_V tokens on; the certified bound of the
    sequential series comes back per row (and stays small on realistic rows)."""
    P, Q = synthetic_batch(4, solver.BUCKET_MIN_V, 0.7, 3, noise=1.0)
    assert solver.uses_buckets("without", P.shape[1]) and not solver.uses_buckets("greedy", 10**6)
    assert not solver.uses_buckets("with", solver.BUCKET_MIN_V - 1)
    a, _, err = solver.solve_rows(P, Q, 3, "without")
    assert err.shape == (4,) and np.all(err <= 1e-10) and np.all(err > 0)
    b, _, _ = solver.solve_rows(P, Q, 3, "without", path="sort")
    assert np.max(np.abs(a - b)) <= 1e-12


def test_torch_reads_the_host_once(monkeypatch):
    """Batched torch: histograms by scatter_add, no per-row loop, one host read (the survivor
    counts) and no operator that synchronises on its own."""
    torch = pytest.importorskip("torch")

    reads = []
    real = bk.to_host
    monkeypatch.setattr(bk, "to_host", lambda *x: reads.append(len(x)) or real(*x))

    P, Q = (torch.from_numpy(x) for x in synthetic_batch(6, 5000, 0.7, 1))
    for kernel, n in [("with", 2), ("without", 2), ("without", 3), ("conditional-poisson", 3)]:
        reads.clear()
        with torch_spy() as spy:
            solver.solve_rows(P, Q, n, kernel, True, path="bucket")
        assert reads == [2], (kernel, reads)
        assert any("scatter_add" in op for op in spy.ops) and not spy.ops & SYNC_OPS, (
            kernel,
            spy.ops & SYNC_OPS,
        )


def test_batch_with_fallback_rows_and_laws(nx64):
    """A batch mixing rows the buckets settle and rows that fall back (one bucket holding the
    optimum): every row equals its own sort; alpha_star_laws shares one bucketing pass."""
    rng = np.random.default_rng(9)
    P, Q = synthetic_batch(4, 6000, 0.7, 4, noise=1.0)
    q = rng.dirichlet(np.ones(6000))
    low = np.arange(6000) < 3000
    p = q * np.where(low, 0.5 * (1.0 + 1e-4 * rng.random(6000)), 1.5)
    P[1], Q[1] = p / p.sum(), q
    for kernel, n in [("with", 2), ("without", 3), ("conditional-poisson", 2)]:
        (ab, Hb, _), (as_, Hs, _) = _both(nx64, P, Q, n, kernel)
        assert np.max(np.abs(ab - as_)) <= 1e-12 and np.array_equal(Hb, Hs), kernel
    laws = [("with", 2), ("without", 2), ("conditional-poisson", 3), ("greedy", 2)]
    out = mdsd_ot.fast.alpha_star_laws(nx64.asarray(P), nx64.asarray(Q), laws)
    for s, n in laws:
        ref = alpha_star(P, Q, n=n, scheme=s, path="sort")
        assert np.max(np.abs(nx64.to_numpy(out[(s, n)]) - ref)) <= 1e-12, (s, n)


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_conditional_poisson_row_setup_equals_the_batched_setup(n):
    """The one-row set-up in Python scalars gives the batched set-up's heavy tokens, masses,
    scale and heavy polynomial table exactly, ties among the heavy ratios included."""
    law = chain.chain_for("conditional-poisson", n)
    p, q = synthetic_pair(20_000, 0.7, n)
    tied = p.copy()
    top = np.argsort(q)[-n:]
    tied[top] = q[top] * 0.5  # every heavy token at the same ratio
    for P in (p, tied / tied.sum()):
        P1, Q1 = P[None], q[None]
        sq = np.array([q.sum()])
        one = law.setup(P1, Q1, sq, np)
        two = chain.ConditionalPoisson.setup(
            law, np.vstack([P1, P1]), np.vstack([Q1, Q1]), np.r_[sq, sq], np
        )
        for k in ("heavy", "hq", "tau", "scale", "EA"):
            assert np.array_equal(one[k][0], two[k][0]), k
        assert one["heavy_ties"] == two["heavy_ties"]


def test_dense_bucket_of_one_ratio_is_found_on_numpy_route(monkeypatch):
    """numpy's route, one row (V = 5,000): a bucket holding 70% of the tokens, all at the ratio
    0.5 exactly, is recognised as one ratio (its ends bound it; no sort), for the laws whose
    dense-bucket test fires; α* equals the sorting path's."""
    from mdsd_ot.fast import _fused

    rng = np.random.default_rng(31)
    V = 5000
    q = rng.dirichlet(np.ones(V))
    tie = rng.random(V) < 0.7
    p = np.where(tie, 0.5 * q, 0.0)
    rest = (1.0 - p.sum()) / q[~tie].sum()
    p[~tie] = q[~tie] * rest * rng.uniform(0.9, 1.1, (~tie).sum())
    p[~tie] *= (1.0 - p[tie].sum()) / p[~tie].sum()
    found, sorted_ = [], []
    real = bucket._equal_ratio_buckets
    monkeypatch.setattr(
        bucket, "_equal_ratio_buckets", lambda *a: found.append(real(*a)) or found[-1]
    )
    real_sort = bucket.solve_sorted
    monkeypatch.setattr(bucket, "solve_sorted", lambda *a: sorted_.append(1) or real_sort(*a))
    with _fused.disabled():
        for kernel, n in (("conditional-poisson", 2), ("without", 3)):
            found.clear()
            sorted_.clear()
            a = alpha_star(p, q, n=n, scheme=kernel, path="bucket")
            assert found and found[-1] is not None and not sorted_, kernel
            assert abs(found[-1][0][1] - 0.5) == 0.0
            b = alpha_star(p, q, n=n, scheme=kernel, path="sort")
            assert abs(a - b) <= 1e-12, kernel


def test_conditional_poisson_totals_of_one_row_equal_the_array_route():
    """The one-row totals (e_n of the whole row and its Newton condition number kappa, in
    Python floats) are bit for bit those of the array code on the same row in a batch of 2."""
    for n in (2, 3, 4, 8):
        for T, seed in ((0.5, 1), (1.0, 2), (2.0, 3)):
            p, q = synthetic_pair(3000, T, seed)
            law = chain.ConditionalPoisson(n)
            one = np.ones(2)
            ctx2 = law.setup(np.stack([p, p]), np.stack([q, q]), one, np)
            ctx1 = law.setup(p[None], q[None], one[:1], np)
            assert np.array_equal(ctx1["EA"][0], ctx2["EA"][0])
            stats = law.stats(np.stack([q, q]), ctx2)
            ctx2["L_total"] = [x.sum(axis=-1) for x in stats]
            ctx1["L_total"] = [x[:1] for x in ctx2["L_total"]]
            (N2, e2), (N1, e1) = law._totals(ctx2, 100, np), law._totals(ctx1, 100, np)
            assert N1.shape == (1, 1) and e1.shape == (1,)
            assert N1[0, 0] == N2[0, 0] and e1[0] == e2[0], (n, T)
            assert np.isfinite(e1[0])


def test_phase2_capacity_sends_crowded_rows_to_the_sort():
    """C = c_(k+1) with k minimising B c_(k+1) + k V: crowded rows go to the sorting path, rows
    already falling back stay there, ties keep the rows, one row is never sent."""
    cap = bucket.phase2_capacity
    none = np.zeros(4, dtype=bool)
    C, slow = cap(np.array([40, 50, 60_000, 30]), none, 100_000)
    assert C == 50 and slow.tolist() == [False, False, True, False]
    C, slow = cap(np.array([40, 50, 60_000, 30]), np.array([False, True, False, False]), 100_000)
    assert C == 40 and slow.tolist() == [False, True, True, False]  # row 1 stays sorted
    C, slow = cap(np.array([10, 20, 30, 40]), none, 100_000)
    assert C == 40 and not slow.any()  # sending any row costs more than it saves
    # keeping costs B c_(1) = 4 * 250 = 1000, sending the row 4 * 0 + 1 * V = 1000: a tie keeps
    C, slow = cap(np.array([250, 0, 0, 0]), none, 1000)
    assert C == 250 and not slow.any()
    C, slow = cap(np.array([10]), np.zeros(1, dtype=bool), 10)  # one row: C <= V, never sent
    assert C == 10 and not slow.any()
    C, slow = cap(np.array([5, 6]), np.ones(2, dtype=bool), 100)  # every row falls back
    assert C == 0 and slow.all()


def test_a_crowded_row_does_not_widen_phase_2_for_the_batch(monkeypatch, nx64):
    """Five synthetic rows and the dense-bucket row (3,000 of 5,000 tokens survive): the dense
    row is sorted alone, phase 2 stays as narrow as the other rows need, and every row equals
    its own sort (α* to 1e-12, the same H*)."""
    P, Q = synthetic_batch(6, 5000, 0.7, 21, noise=1.0)
    P[3], Q[3] = _dense_bucket_row(np.random.default_rng(2))
    widths, sorted_rows = [], []
    real2, real_sort = bucket._phase2, bucket.solve_sorted
    monkeypatch.setattr(bucket, "_phase2", lambda st, law, C, *a: widths.append(C)
                        or real2(st, law, C, *a))  # fmt: skip
    monkeypatch.setattr(bucket, "solve_sorted", lambda Pn, *a: sorted_rows.append(Pn.shape[0])
                        or real_sort(Pn, *a))  # fmt: skip
    (ab, Hb, _), (as_, Hs, _) = _both(nx64, P, Q, 2, "with")
    assert np.max(np.abs(ab - as_)) <= 1e-12 and np.array_equal(Hb, Hs)
    assert as_[3] < 0.95  # the dense row's optimum lies inside its crowded bucket
    assert len(widths) == 1 and widths[0] < 1000, widths  # without the choice: >= 3,000
    assert sorted_rows[0] == 1  # the bucket path sorted one row (then the reference: all six)


@pytest.mark.parametrize("kernel", ["with", "without", "conditional-poisson"])
def test_a_flat_row_at_large_V_gives_alpha_one_on_both_paths(kernel, nx64):
    """p = q uniform at V = 150,000 (one crowded bucket, α* = 1 exactly): the running sums end a
    few 1e-12 away from 1, so the full prefix is pinned to f = 0 on both paths (the sort gave
    1 - 2.6e-12 before) and every prefix after the last mass on the bucket path."""
    V = 150_000
    p = np.full((1, V), 1.0 / V)
    (ab, _, _), (as_, _, _) = _both(nx64, p, p.copy(), 2, kernel, return_set=False)
    assert ab[0] == 1.0 and as_[0] == 1.0, (ab[0], as_[0])


def test_torch_float32_histograms_accumulate_in_float64():
    """float32 rows: the bucket sums are float64 (numpy's bincount dtype).  Accumulated in
    float32, a bucket of 150,000 equal masses lost 9e-4 of α* (0.99907 for 1); a row of ratios
    over 600 octaves lost 4e-5, over FLOAT32_BOUND (1e-5)."""
    torch = pytest.importorskip("torch")
    import mdsd_ot.torch as mt
    from mdsd_ot.fast import _histograms as hg

    V = 150_000
    ids = torch.zeros((1, V), dtype=torch.int64)
    w = torch.full((1, V), 1.0 / V, dtype=torch.float32)
    h = hg.histogram(ids, w, 3)
    assert h.dtype == torch.float64 and abs(float(h[0, 0]) - float(w.double().sum())) <= 1e-12
    p = torch.full((1, V), 1.0 / V, dtype=torch.float32)
    for scheme in ("with", "without", "conditional-poisson"):
        a = mt.alpha_star(p, p.clone(), n=2, scheme=scheme, path="bucket")
        assert a.dtype == torch.float32 and abs(float(a[0]) - 1.0) <= mt.FLOAT32_BOUND, scheme
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.full(V, 0.5))
    p = q * np.exp2(rng.uniform(-300, 300, V))
    p /= p.sum()
    ref = alpha_star(p, q, n=2, scheme="with", path="sort")
    a = mt.alpha_star(torch.from_numpy(p).float(), torch.from_numpy(q).float(), n=2,
                      scheme="with", path="bucket")  # fmt: skip
    assert abs(float(a) - ref) <= mt.FLOAT32_BOUND, float(a) - ref


def test_torch_series_at_large_n():
    """without, n = 8 on torch: the series' tail term divided a tensor by the int 22!, which
    overflows torch's int64 scalar (OverflowError on every path); now the numpy value."""
    torch = pytest.importorskip("torch")
    p, q = synthetic_pair(6000, 1.0, 2)
    ref = alpha_star(p, q, n=8, scheme="without", path="sort")
    for path in ("bucket", "sort"):
        a = alpha_star(torch.from_numpy(p), torch.from_numpy(q), n=8, scheme="without", path=path)
        assert abs(float(a) - ref) <= 1e-12, (path, float(a) - ref)


def test_auto_route_on_a_cuda_device():
    """path="auto" on a CUDA device sorts the float32 rows of the closed-form laws (measured
    faster there, docs/fast.md "On a GPU") and keeps the buckets for float64 and the series; a
    CPU tensor and numpy keep the buckets from BUCKET_MIN_V on."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    V = solver.BUCKET_MIN_V

    def like(device: str, dtype):
        return SimpleNamespace(device=SimpleNamespace(type=device), dtype=dtype)

    f32, f64 = like("cuda", torch.float32), like("cuda", torch.float64)
    for kernel, n in (("with", 2), ("without", 2), ("conditional-poisson", 4)):
        assert not solver.uses_buckets(kernel, V, "auto", n, f32), kernel
        assert solver.uses_buckets(kernel, V, "auto", n, f64), kernel
        assert solver.uses_buckets(kernel, V, "bucket", n, f32), kernel  # forced
        assert solver.uses_buckets(kernel, V, "auto", n, like("cpu", torch.float32)), kernel
        assert solver.uses_buckets(kernel, V, "auto", n, np.zeros((1, V))), kernel
    assert solver.uses_buckets("without", V, "auto", 3, f32)  # the series: 11.5x against 68x
    assert not solver.uses_buckets("with", V - 1, "auto", 2, f64)
