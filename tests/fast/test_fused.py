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

from mdsd_ot import fast
from mdsd_ot.fast import _fused, _fused_row, bucket, solver
from mdsd_ot.synthetic import synthetic_pair

pytest.importorskip("numba", reason="the jit extra (numba) is not installed")
if not _fused.enabled():  # MDSD_OT_JIT=0: the compiled route is off, nothing to compare
    pytest.skip("the fused kernels are switched off (MDSD_OT_JIT=0)", allow_module_level=True)

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


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5, 8, 11])
@pytest.mark.parametrize("divisors", [(1.0, 1.0), (0.02, 1.0), (0.01, 3.0)])
def test_power_histograms_of_every_order_equal_numpy_exactly(K, divisors):
    """Every order K, those the kernel unrolls (a constant K) and the others, and the three
    forms of the division: the powers in numpy's order, summed in index order."""
    rng = np.random.default_rng(5)
    V = 4099  # not a multiple of the block
    q = rng.dirichlet(np.full(V, 0.5))
    ids = rng.integers(0, 33, V)
    ids[:64] = 7  # a run of tokens in one bucket
    heavy = np.array([3, 1024, 4098])
    u = q / divisors[0] if divisors[1] == 1.0 else q / divisors[0] / divisors[1]
    u[heavy] = 0.0
    got = _fused.power_histograms(ids, q, divisors, heavy, K, 33)
    assert len(got) == K
    w = u.copy()
    for k, h in enumerate(got):
        if k:
            w = w * u
        assert np.array_equal(h, np.bincount(ids, w, 33)), k


def test_collect_equals_flatnonzero():
    ids = np.random.default_rng(4).integers(0, 50, 10_000).astype(np.int32)
    for lo, hi in ((0, 0), (10, 12), (49, 49), (5, 4)):
        ref = np.flatnonzero((ids >= lo) & (ids <= hi))
        assert np.array_equal(_fused.collect(ids, lo, hi, ref.size), ref)


@pytest.mark.parametrize("V", [1, 63, 64, 65, 129, 4099])
def test_collect_by_blocks_equals_flatnonzero(V):
    """Few survivors (the kernel counts blocks of 64 ids first): rows that are not a multiple
    of the block, hits in the tail and at block edges, a capacity too small (an error)."""
    ids = np.random.default_rng(V).integers(0, 400, V).astype(np.int32)
    ids[-1], ids[0] = 7, 7
    ids[63 : min(65, V)] = 7
    ref = np.flatnonzero(ids == 7)
    assert np.array_equal(_fused.collect(ids, 7, 7, ref.size), ref)
    if ref.size > 1:
        with pytest.raises(ValueError, match="capacity"):
            _fused.collect(ids, 7, 7, ref.size - 1)


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

    import importlib

    from mdsd_ot.fast import _fused_nb

    p, q = synthetic_pair(3000, 1.0, 2)
    want = _fused.bucket_front(p, q, 8, 64)

    def fresh():  # the kernels module decorated again with the current numba.njit
        _fused.jit_decorator.cache_clear()
        _fused._kernels.cache_clear()
        importlib.reload(_fused_nb)

    monkeypatch.setattr(numba, "njit", njit)
    try:
        fresh()
        got = _fused.bucket_front(p, q, 8, 64)
    finally:
        monkeypatch.undo()
        fresh()
    assert refused and all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize("k", [1, 3, 9, 33, 65, 200])
def test_top_k_equals_lexsort_order(k):
    """The compiled top-k equals (value descending, index ascending) on rows with many ties,
    ascending and descending rows (every entry enters the buffer) and a Zipf-like row."""
    rng = np.random.default_rng(k)
    rows = [
        rng.integers(0, 4, 5000).astype(float),
        np.arange(5000.0),
        np.arange(5000.0)[::-1].copy(),
        synthetic_pair(5000, 0.7, k)[1],
        np.zeros(5000),
    ]
    for row in rows:
        vals, idx = _fused.top_k(row, k)
        want = np.lexsort((np.arange(row.size), -row))[:k]
        assert np.array_equal(idx, want) and np.array_equal(vals, row[want])
    assert _fused.top_k(rows[0][:5], 9)[1].size == 5  # fewer entries than k: all of them


def test_front_block_maxima_and_the_top_k_that_reads_them():
    """The bucketing pass's block maxima of q are numpy's (as int64 bits, blocks of BLOCK,
    the last one short), and ``top_k`` guided by them gives (value descending, index
    ascending) as without them, on rows with ties, zeros, and the k largest in one block."""
    rng = np.random.default_rng(11)
    V = 5 * _fused.BLOCK + 77
    late = np.full(V, 1e-6)
    late[-9:] = 0.5  # the largest all in the short last block
    rows = [
        synthetic_pair(V, 0.7, 3)[1],
        rng.integers(1, 4, V).astype(float),  # ties
        np.where(rng.random(V) < 0.5, 0.0, rng.random(V)),  # zeros
        late / late.sum(),
    ]
    for q in rows:
        qmax = np.empty(_fused.block_count(V), dtype=np.int64)
        assert _fused.bucket_front(q, q, 8, 64, qmax=qmax) is not None
        bits = q.view(np.int64)
        want = [bits[s : s + _fused.BLOCK].max() for s in range(0, V, _fused.BLOCK)]
        assert qmax.tolist() == want
        for k in (1, 3, 5, 9, 16):
            order = np.lexsort((np.arange(V), -q))[:k]
            for got in (_fused.top_k(q, k, qmax), _fused.top_k(q, k)):
                assert np.array_equal(got[1], order) and np.array_equal(got[0], q[order])
    with pytest.raises(ValueError, match="qmax: an int64 array of block_count"):
        _fused.bucket_front(rows[0], rows[0], 8, 64, qmax=np.empty(2, dtype=np.int64))


def test_topk_backend_uses_the_compiled_pass_with_the_same_result():
    """``_backend.topk`` of one float64 row gives the same values and indices with and
    without the kernels (k > 8: the partition route)."""
    from mdsd_ot.fast import _backend as bk

    q = synthetic_pair(20_000, 1.0, 3)[1][None, :]
    q[0, 100:140] = q[0, 7]  # ties at a heavy value
    got = bk.topk(q, 65)
    with _fused.disabled():
        want = bk.topk(q, 65)
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_sum_dd_within_its_bound_in_exact_arithmetic():
    """|sum(x) - (hi + lo)| <= eta, checked in Fractions: Dirichlet rows, masses over 1,000
    octaves, lengths around the lane count; and eta is below 1e-22 relative at V = 152,064."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    rows = [rng.dirichlet(np.full(V, 0.3)) for V in (1, 7, 8, 9, 1001)]
    rows += [np.exp2(rng.uniform(-1000, 0, 3000)), np.full(17, 0.1)]
    for x in rows:
        hi, lo, eta = _fused.sum_dd(x[None, :])
        exact = sum((Fraction(v) for v in x), Fraction(0))
        assert abs(Fraction(hi[0]) + Fraction(lo[0]) - exact) <= Fraction(eta[0])
    q = synthetic_pair(152_064, 0.7, 0)[1]
    hi, lo, eta = _fused.sum_dd(q[None, :])
    assert eta[0] <= 1e-22 * hi[0]


def _bad_rows(V: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Rows of length V that the validator refuses, each with one fault."""
    rng = np.random.default_rng(21)
    p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
    out = {}
    for name, fault in {
        "nan in p": ("p", 17, np.nan),
        "inf in q": ("q", 4000, np.inf),
        "negative p": ("p", 3, -1e-3),
        "noise below the tolerance in q": ("q", 9, -1e-12),
    }.items():
        x = {"p": p.copy(), "q": q.copy()}
        x[fault[0]][fault[1]] = fault[2]
        out[name] = (x["p"], x["q"])
    out["p sums to 1.1"] = (p * 1.1, q)
    one = np.zeros(V)
    one[5] = 1.0
    out["q on one token"] = (p, one)
    return out


@pytest.mark.parametrize("scheme", ["with", "without", "conditional-poisson"])
def test_fused_validation_refuses_with_the_validators_messages(scheme):
    """At V = 5,000 (the bucket path) the one-pass validation refuses every bad row with the
    message of the usual validator (run with the kernels off), naming the argument and row."""
    for name, (p, q) in _bad_rows(5000).items():
        if name == "q on one token" and scheme == "with":
            continue  # i.i.d. drafts may repeat one token
        with pytest.raises(ValueError) as fused:
            fast.alpha_star(p, q, n=2, scheme=scheme)
        with _fused.disabled(), pytest.raises(ValueError) as plain:
            fast.alpha_star(p, q, n=2, scheme=scheme)
        assert str(fused.value) == str(plain.value), name


def test_fused_validation_accepts_what_the_validator_accepts():
    """Rounding noise in [-NEG_TOL, 0), -0.0 entries and sums off by 1e-10 are accepted (the
    noise clipped) with the α* of the usual route; a good row never reaches ``check_numpy``."""
    p, q = synthetic_pair(6000, 1.0, 4)
    noisy, negzero = p.copy(), q.copy()
    noisy[np.argmax(p)] += p[10:15].sum()  # the same total, five entries of noise
    noisy[10:15] = -1e-16
    negzero[np.argmax(q)] += q[20:70].sum()
    negzero[20:70] = -0.0
    assert abs(noisy.sum() - 1) < 1e-9 and abs(negzero.sum() - 1) < 1e-9
    for P, Q in ((noisy, q), (p, negzero), (p * (1 + 1e-10), q)):
        for scheme in ("with", "without", "conditional-poisson"):
            a = fast.alpha_star(P, Q, n=3, scheme=scheme)
            with _fused.disabled():
                b = fast.alpha_star(P, Q, n=3, scheme=scheme)
            assert abs(a - b) <= 1e-12, scheme


def test_good_row_is_validated_by_the_bucketing_pass(monkeypatch):
    """One good float64 row on the bucket path is read once: the usual validator is not
    called, and α* and H* equal those of the usual route."""
    from mdsd_ot.fast import _check

    p, q = synthetic_pair(20_000, 0.7, 5)
    with _fused.disabled():
        want = {s: fast.alpha_star(p, q, n=2, scheme=s, return_set=True) for s in _SCHEMES}

    def refuse(*args, **kwargs):
        raise AssertionError("check_numpy called on a row the bucketing pass validated")

    import mdsd_ot.fast as fast_pkg

    monkeypatch.setattr(fast_pkg, "check_numpy", refuse)
    assert _check.check_numpy is not refuse
    for s in _SCHEMES:
        a, H = fast.alpha_star(p, q, n=2, scheme=s, return_set=True)
        assert abs(a - want[s][0]) <= 1e-12 and np.array_equal(H, want[s][1]), s
    laws = fast.alpha_star_laws(p, q, [(s, 2) for s in _SCHEMES])
    assert all(abs(laws[(s, 2)] - want[s][0]) <= 1e-12 for s in _SCHEMES)


_SCHEMES = ("with", "without", "conditional-poisson")


@pytest.mark.parametrize("kernel,n", [("with", 2), ("without", 3), ("conditional-poisson", 2)])
def test_compiled_bounds_equal_the_array_bounds(kernel, n, monkeypatch):
    """The compiled per-bucket bound (``bucket_bounds``) equals the array form (``_bounds``)
    entry by entry, NaN where it is NaN, and the survivors' run is that of the array's
    survivor flags: synthetic rows and the adversarial inputs."""
    seen = []
    real = _fused.bucket_bounds

    def spy(P, Q, Hp, qm, lo, hi, c, cut):
        out = real(P, Q, Hp, qm, lo, hi, c, cut)
        f = (P - Q)[None, :]
        ref = bucket._bounds(P[None], Q[None], f, Hp[None], qm[None], lo, hi, np.array([[c]]), np)
        assert np.array_equal(out[0], ref[0], equal_nan=True)
        keep = ref[0] < cut
        assert np.array_equal(out[1], keep)
        sb = np.flatnonzero(keep)
        run = (0, -1) if not sb.size else (sb[0], sb[-1]) if sb[-1] - sb[0] == sb.size - 1 else None
        assert out[2] == run
        seen.append(1)
        return out

    monkeypatch.setattr(_fused, "bucket_bounds", spy)
    monkeypatch.setattr(_fused_row, "serves", lambda *a: False)  # the array code's turn
    rows = {f"T={T}": synthetic_pair(20_000, T, 8) for T in (0.5, 2.0)}
    rows.update(_adversarial(np.random.default_rng(9), 6000))
    for p, q in rows.values():
        one = np.ones(1)
        bucket.solve_bucketed(p[None], q[None], one, one, n, kernel)
    # the synthetic rows and at least one adversarial row (others are sorted, or settled by
    # ties before any bound, or take numpy's buckets without a count histogram)
    assert len(seen) >= 3


def test_sum_less_within_its_bound_and_declines_cancellation():
    """The total less the heavy terms (TwoSum steps) is within eta' of the exact rest, checked
    in Fractions; when the heavy terms hold all but 1e-25 of the total it declines (None) and
    the series sums the light row itself."""
    from fractions import Fraction

    rng = np.random.default_rng(12)
    for V, m in ((5000, 64), (300, 32), (70, 65)):
        x = rng.dirichlet(np.full(V, 0.2))
        heavy = np.argsort(x)[-m:]
        hi, lo, eta = _fused.sum_dd(x[None, :])
        out = _fused.sum_less(hi, lo, eta, x[heavy][None, :])
        assert out is not None
        rest = sum((Fraction(v) for v in np.delete(x, heavy)), Fraction(0))
        assert abs(Fraction(out[0][0]) + Fraction(out[1][0]) - rest) <= Fraction(out[2][0])
    x = np.r_[np.full(40, 0.025), np.full(10, 1e-27)]
    hi, lo, eta = _fused.sum_dd(x[None, :])
    assert _fused.sum_less(hi, lo, eta, x[:40][None, :]) is None


@pytest.mark.parametrize(
    "scheme,n", [("with", 2), ("with", 8), ("without", 2), ("conditional-poisson", 2),
                 ("conditional-poisson", 4), ("conditional-poisson", 8)],
)  # fmt: skip
def test_compiled_row_equals_the_array_route(scheme, n, monkeypatch):
    """One compiled call per row (``_fused_row.solve_row``) gives the α* of the fused array
    route to 1e-15 and the same optimal set, on the synthetic family (V = 30,000 and 152,064)
    and the adversarial rows it takes; the rows it declines go the array way."""
    rows = {f"T={T}": synthetic_pair(30_000, T, 3) for T in (0.5, 1.0, 2.0)}
    rows["V=152,064"] = synthetic_pair(152_064, 0.7, 1)
    rows.update(_adversarial(np.random.default_rng(5), 6000))
    real = _fused_row.solve_row
    taken = []

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        taken.append(out is not None)
        return out

    for name, (p, q) in rows.items():
        monkeypatch.setattr(_fused_row, "solve_row", spy)
        taken.clear()
        a, H = fast.alpha_star(p, q, n=n, scheme=scheme, return_set=True)
        compiled = any(taken)
        monkeypatch.setattr(_fused_row, "serves", lambda *a: False)
        b, Hb = fast.alpha_star(p, q, n=n, scheme=scheme, return_set=True)
        monkeypatch.undo()
        assert abs(a - b) <= 1e-15 and np.array_equal(H, Hb), (name, scheme, n)
        if name.startswith(("T=", "V=")):
            assert compiled, name


def test_fused_validation_leaves_sums_near_the_tolerance_to_the_validator():
    """A row whose sum is within the margin of the tolerance (here 1 + 1e-9 - 1e-11) is judged
    by the usual validator; the result is that of the kernels-off route."""
    p, q = synthetic_pair(6000, 1.0, 6)
    p = p * (1 + 1e-9 - 1e-11)
    a = fast.alpha_star(p, q, n=2, scheme="with")
    with _fused.disabled():
        b = fast.alpha_star(p, q, n=2, scheme="with")
    assert abs(a - b) <= 1e-12
    from mdsd_ot.fast import _check

    stats = bucket.validated_front(p, q)[1]
    assert not _check.fused_rows_ok(stats, 2, "with")


def test_a_row_the_fused_pass_declines_is_bucketed_by_numpy_without_a_second_pass(monkeypatch):
    """Ratios spread beyond the window: the validator's fused pass declines the row
    (``FUSED_DECLINED``), and the bucket path goes to numpy's route without running the fused
    pass again; α* is the sorting path's (to 1e-12), for one law and for several at once."""
    rng = np.random.default_rng(12)
    q = rng.dirichlet(np.full(8192, 0.5))
    p = q * np.exp2(rng.uniform(-300, 300, q.size))
    p /= p.sum()
    assert bucket.validated_front(p, q) is bucket.FUSED_DECLINED
    calls = []
    front = _fused.bucket_front
    monkeypatch.setattr(_fused, "bucket_front", lambda *a, **k: calls.append(1) or front(*a, **k))
    for s, n in (("with", 2), ("without", 2), ("conditional-poisson", 3), ("without", 3)):
        calls.clear()
        a = fast.alpha_star(p, q, n=n, scheme=s)
        assert len(calls) == 1, (s, n, len(calls))
        assert abs(a - fast.alpha_star(p, q, n=n, scheme=s, path="sort")) <= 1e-12, (s, n)
    calls.clear()
    laws = [("with", 2), ("conditional-poisson", 2)]
    got = fast.alpha_star_laws(p, q, laws)
    assert len(calls) == 1
    for s, n in laws:
        assert abs(got[(s, n)] - fast.alpha_star(p, q, n=n, scheme=s, path="sort")) <= 1e-12
