"""The fused route of the bucket path (mdsd_ot.fast._fused, numba) against numpy.

Each kernel against the numpy formula it replaces (ids and counts exactly, the histograms of p
and q to 1e-14 relative: four lanes sum in another order; the power and odds histograms exactly,
being summed in index order as ``np.bincount`` does); the route's α* within 1e-12 of the
sorting path and of the numpy route on the synthetic family and the adversarial inputs, with
the same H* where the optimum is unique; the rows it leaves to numpy; the switch.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot.fast import _fused, bucket, solver
from mdsd_ot.synthetic import synthetic_pair

pytest.importorskip("numba", reason="the jit extra (numba) is not installed")

from test_bucket import KERNELS, _adversarial  # noqa: E402


def _window_ids(p: np.ndarray, q: np.ndarray, sub_bits: int, w: int) -> np.ndarray:
    """The window buckets by numpy (the torch form of ratio_buckets, on float64 bits)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = np.abs(p / q).view(np.int64)
    base = ((1023 - w) << sub_bits) - 1
    return np.clip((bits >> (52 - sub_bits)) - base, 0, (2 * w << sub_bits) + 1)


def _row(rng: np.random.Generator, V: int) -> tuple[np.ndarray, np.ndarray]:
    q = rng.dirichlet(np.full(V, 0.3))
    p = rng.dirichlet(np.full(V, 0.3))
    p[rng.random(V) < 0.1] = 0.0  # ratio 0: the first bucket
    q[rng.random(V) < 0.05] = 0.0  # ratio inf (and NaN where p = 0 too): the last
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize("sub_bits,w", [(4, 32), (8, 64), (2, 4)])
def test_bucket_front_equals_numpy(sub_bits, w):
    p, q = _row(np.random.default_rng(1), 20_011)  # not a multiple of the block
    front = _fused.bucket_front(p, q, sub_bits, w)
    assert front is not None
    ids, id0, Hp, Hq, Hn = front
    ref = _window_ids(p, q, sub_bits, w)
    assert id0 == ref.min() and np.array_equal(ids, ref - id0)
    NB = int(ref.max()) - id0 + 1
    assert np.array_equal(Hn, np.bincount(ids, minlength=NB))
    for H, x in ((Hp, p), (Hq, q)):
        np.testing.assert_allclose(H, np.bincount(ids, x, NB), rtol=1e-14, atol=1e-300)


def test_bucket_front_leaves_wide_or_dense_rows_to_numpy():
    rng = np.random.default_rng(2)
    q = rng.dirichlet(np.ones(4096))
    wide = q * np.exp2(rng.uniform(-300, 300, 4096))  # most ratios beyond 2**±64
    assert _fused.bucket_front(wide / wide.sum(), q, 8, 64, outside=0.1) is None
    assert _fused.bucket_front(wide / wide.sum(), q, 8, 64) is not None  # no limit
    near = q * (1 + 1e-4 * rng.random(4096))  # every ratio in one bucket
    assert _fused.bucket_front(near / near.sum(), q, 8, 64, dense=0.25) is None
    assert _fused.bucket_front(q, q, 8, 64, dense=1.0) is not None


def test_power_histograms_equal_numpy_exactly():
    rng = np.random.default_rng(3)
    V = 5003
    q = rng.dirichlet(np.full(V, 0.5))
    ids = rng.integers(0, 40, V)
    heavy = np.array([7, 4100])
    u = q / 0.01 / 3.0
    u[heavy] = 0.0
    got = _fused.power_histograms(ids, q, (0.01, 3.0), heavy, 4, 40)
    w = u.copy()
    for k, h in enumerate(got):
        if k:
            w = w * u
        assert np.array_equal(h, np.bincount(ids, w, 40)), k
    c = float(q.sum())
    qz = q.copy()
    qz[heavy] = 0.0
    got = _fused.power_histograms(ids, q, (1.0, 1.0), heavy, 2, 40, odds=c)
    assert np.array_equal(got[0], np.bincount(ids, qz, 40))
    assert np.array_equal(got[1], np.bincount(ids, qz / (c - qz), 40))


def test_collect_equals_flatnonzero():
    ids = np.random.default_rng(4).integers(0, 50, 10_000).astype(np.int32)
    for lo, hi in ((0, 0), (10, 12), (49, 49), (5, 4)):
        ref = np.flatnonzero((ids >= lo) & (ids <= hi))
        assert np.array_equal(_fused.collect(ids, lo, hi, ref.size), ref)


def _routes(p, q, n, kernel):
    P, Q = p[None], q[None]
    fused = solver.solve_rows(P, Q, n, kernel, True, path="bucket")
    with _fused.disabled():
        plain = solver.solve_rows(P, Q, n, kernel, True, path="bucket")
    return fused, plain, solver.solve_rows(P, Q, n, kernel, True, path="sort")


@pytest.mark.parametrize("kernel,n", KERNELS)
def test_fused_route_equals_sort_and_numpy(kernel, n):
    """Synthetic rows (T = 0.5, 1, 2) and the adversarial inputs (V = 6,000): α* within 1e-12 of
    the sorting path and of numpy's route; H* identical where the optimum is unique (else the
    returned set attains α*)."""
    rows = {f"T={T}": synthetic_pair(20_000, T, 7) for T in (0.5, 1.0, 2.0)}
    rows.update(_adversarial(np.random.default_rng(5), 6000))
    for name, (p, q) in rows.items():
        (af, Hf, ef), (an, _, _), (as_, Hs, _) = _routes(p, q, n, kernel)
        assert abs(af[0] - as_[0]) <= 1e-12 and abs(af[0] - an[0]) <= 1e-12, (name, kernel, n)
        assert np.isfinite(ef[0]) if np.ndim(ef) else np.isfinite(ef)
        if as_[0] < 1 - 1e-9 and not np.array_equal(Hf, Hs):
            assert name in ("ties", "equal ratios", "one bucket"), (name, kernel, n)


def test_coarsened_buckets_equal_coarse_bucketing():
    """A row spread over 68 octaves (inside the window 2**±64) occupies more than
    FUSED_MAX_BUCKETS: the merged ids and counts are those of bucketing with fewer mantissa bits
    from the start."""
    rng = np.random.default_rng(6)
    q = rng.dirichlet(np.ones(30_000))
    p = q * np.exp2(rng.uniform(-34, 34, 30_000))
    p /= p.sum()
    out = bucket._shared(p[None], q[None])
    assert out["window"] and out["sub_bits"] < bucket.FUSED_SUB_BITS
    assert out["NB"] <= bucket.FUSED_MAX_BUCKETS
    ref = _window_ids(p, q, out["sub_bits"], bucket.FUSED_HALF_WINDOW)
    assert out["id0"] == ref.min() and np.array_equal(out["ids"][0], ref - ref.min())
    assert np.array_equal(out["Hn"][0], np.bincount(ref - ref.min(), minlength=out["NB"]))
    np.testing.assert_allclose(out["Hp"][0], np.bincount(ref - ref.min(), p), rtol=1e-13)
    for n, kernel in ((2, "with"), (3, "without"), (2, "conditional-poisson")):
        (af, _, _), (an, _, _), (as_, _, _) = _routes(p, q, n, kernel)
        assert abs(af[0] - as_[0]) <= 1e-12 and abs(an[0] - as_[0]) <= 1e-12


def test_switch(monkeypatch):
    assert _fused.enabled()
    with _fused.disabled():
        assert not _fused.enabled()
        with _fused.disabled():
            pass
        assert not _fused.enabled()
    assert _fused.enabled()
    monkeypatch.setenv("MDSD_OT_JIT", "0")
    assert not _fused.enabled()
    p, q = synthetic_pair(8000, 1.0, 1)
    assert (
        "window" in bucket._shared(p[None], q[None])
        and not bucket._shared(p[None], q[None])["window"]
    )


def test_kernels_compile_without_a_writable_cache(monkeypatch):
    """numba refuses ``cache=True`` where no cache directory is writable (RuntimeError at
    decoration): the kernels are then compiled in memory, with the same results."""
    import numba

    real = numba.njit
    refused = []

    def njit(*args, cache=False, **kwargs):
        if cache:
            refused.append(1)
            raise RuntimeError("cannot cache function: no locator available")
        return real(*args, **kwargs)

    p, q = synthetic_pair(3000, 1.0, 2)
    want = _fused.bucket_front(p, q, 8, 64)
    monkeypatch.setattr(numba, "njit", njit)
    _fused._kernels.cache_clear()
    try:
        got = _fused.bucket_front(p, q, 8, 64)
    finally:
        monkeypatch.undo()
        _fused._kernels.cache_clear()
    assert refused and all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
