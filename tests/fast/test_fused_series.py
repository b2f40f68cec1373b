"""The compiled row of the sequential series (mdsd_ot.fast._fused_series, numba) against the
array code of the bucket path on the same buckets, and against the sorting path.

The route forms the statistics with the array code's operations in its order and evaluates
the same series, so α*, the error bound and the optimal set are the array route's bit for bit
on the synthetic family (checked exactly); on the adversarial rows (ties, zeros, tiny masses)
α* agrees to 1e-15 and H* where the optimum is unique.  Rows it declines (several runs, too
many survivors, infinite ratios) still give the sorting path's answer.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import fast
from mdsd_ot.fast import _fused, _fused_series, bucket, solver
from mdsd_ot.synthetic import synthetic_pair

pytest.importorskip("numba", reason="the jit extra (numba) is not installed")
if not _fused.enabled():  # MDSD_OT_JIT=0: the compiled route is off, nothing to compare
    pytest.skip("the fused kernels are switched off (MDSD_OT_JIT=0)", allow_module_level=True)

from test_bucket import _adversarial, _value  # noqa: E402


def _both(p, q, n, monkeypatch, taken):
    """(alpha, H, err) by the compiled row and by the array phases (the route forced off)."""
    real = _fused_series.solve_row

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(_fused_series, "solve_row", spy)
    P, Q = p[None, :], q[None, :]
    new = solver.solve_rows(P, Q, n, "without", True, path="bucket")
    monkeypatch.undo()
    monkeypatch.setattr(_fused_series, "serves", lambda *a: False)
    old = solver.solve_rows(P, Q, n, "without", True, path="bucket")
    monkeypatch.undo()
    return new, old


@pytest.mark.parametrize("n", [3, 4, 5])
def test_compiled_series_row_equals_the_array_route_bit_for_bit(n, monkeypatch):
    """The synthetic family (V = 30,000 at four temperatures and two seeds; V = 152,064): the
    compiled row takes every row, with α*, the error bound and H* equal to the array route's
    exactly, and α* within 1e-12 plus the bound of the sorting path."""
    rows = {(T, s): synthetic_pair(30_000, T, s) for T in (0.5, 0.7, 1.0, 1.5) for s in (1, 2)}
    rows["V=152,064"] = synthetic_pair(152_064, 1.0, 1)
    for name, (p, q) in rows.items():
        taken: list[bool] = []
        (a, H, e), (b, Hb, eb) = _both(p, q, n, monkeypatch, taken)
        assert taken == [True], name
        assert a[0] == b[0] and e[0] == eb[0] and np.array_equal(H, Hb), (name, n)
        c = fast.alpha_star(p, q, n=n, scheme="without", path="sort")
        assert abs(a[0] - c) <= 1e-12 + e[0], (name, n, a[0] - c)


def _fused_rows(rng: np.random.Generator, V: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Hard rows that stay on the fused route (most of :func:`_adversarial` goes to numpy's
    buckets): zeros in p and q (ratios 0, +inf, NaN), ties in a few ratios, forty equal heavy
    masses of equal ratio, 1e-300 masses, ratios over 40 octaves, a flat row near ratio 1."""
    out = {}
    q, p = rng.dirichlet(np.full(V, 0.3)), rng.dirichlet(np.full(V, 0.3))
    p[rng.random(V) < 0.1] = 0.0
    q[rng.random(V) < 0.05] = 0.0
    out["zeros"] = (p / p.sum(), q / q.sum())
    q = rng.dirichlet(np.full(V, 0.5))
    p = q * rng.choice(np.linspace(0.2, 3.0, 24), V)
    out["ties in 24 ratios"] = (p / p.sum(), q)
    q, p = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
    q[:40], p[:40] = q.max(), p[0]
    out["heavy ties"] = (p / p.sum(), q / q.sum())
    q, p = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
    q[rng.random(V) < 0.05] = 1e-300
    p[rng.random(V) < 0.05] = 1e-300
    out["1e-300 masses"] = (p / p.sum(), q / q.sum())
    q = rng.dirichlet(np.full(V, 0.5))
    p = q * np.exp2(rng.uniform(-20, 20, V))
    out["40 octaves"] = (p / p.sum(), q)
    q = rng.dirichlet(np.full(V, 2.0))
    p = q * (1 + 0.3 * rng.standard_normal(V)).clip(0.01)
    out["flat"] = (p / p.sum(), q)
    return out


@pytest.mark.parametrize("n", [3, 4, 5])
def test_compiled_series_row_on_hard_rows_of_the_fused_route(n, monkeypatch):
    """Zeros, ties, equal heavy masses, 1e-300 masses, wide and flat ratios: the compiled row
    takes each, α* within 1e-15 of the array route (equal here) with a bound no smaller and the
    same H*; α* within 1e-12 of the sorting path."""
    for name, (p, q) in _fused_rows(np.random.default_rng(7), 6000).items():
        taken: list[bool] = []
        (a, H, e), (b, Hb, eb) = _both(p, q, n, monkeypatch, taken)
        assert taken == [True], (name, n)
        assert abs(a[0] - b[0]) <= 1e-15 and e[0] >= eb[0], (name, n)
        assert np.array_equal(H, Hb), (name, n)
        c = fast.alpha_star(p, q, n=n, scheme="without", path="sort")
        assert abs(a[0] - c) <= 1e-12, (name, n, a[0] - c)


@pytest.mark.parametrize("n", [3, 4])
def test_compiled_series_row_on_the_adversarial_rows(n, monkeypatch):
    """The adversarial rows: where the compiled row runs, α* within 1e-15 of the array route
    with a bound no smaller and the same H*; α* within 1e-12 of the sorting path whether it
    runs or declines, and the returned set attains α* (most of these rows take numpy's
    buckets, where the route does not run: the near point mass takes it)."""
    ran = 0
    for name, (p, q) in _adversarial(np.random.default_rng(5), 6000).items():
        taken: list[bool] = []
        (a, H, e), (b, Hb, eb) = _both(p, q, n, monkeypatch, taken)
        if any(taken):
            ran += 1
            assert abs(a[0] - b[0]) <= 1e-15 and e[0] >= eb[0], (name, n)
            assert np.array_equal(H, Hb), (name, n)
        c, Hc = fast.alpha_star(p, q, n=n, scheme="without", path="sort", return_set=True)
        assert abs(a[0] - c) <= 1e-12, (name, n, a[0] - c)
        if not np.array_equal(H[0], Hc):  # ties: both sets attain α*
            assert abs(_value(p, q, H[0], "without", n) - a[0]) <= 1e-12, (name, n)
    assert ran >= 1


def test_declined_rows_give_the_array_answer(monkeypatch):
    """A row the compiled row declines (too many survivors: MAX_FRACTION = 0) goes the array
    way, to the sorting path's α*; a row with half of q zero (ratio +inf) gives the sorting
    path's α* and numpy's (the other declines, several runs and infinite ratios among the
    survivors, are checked on the kernel itself below)."""
    p, q = synthetic_pair(30_000, 0.7, 3)
    declined = []

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        declined.append(out is None)
        return out

    real = _fused_series.solve_row
    # too many survivors: any survivor count exceeds a max fraction of 0
    monkeypatch.setattr(bucket, "MAX_FRACTION", 0.0)
    monkeypatch.setattr(_fused_series, "solve_row", spy)
    a = fast.alpha_star(p, q, n=3, scheme="without")
    monkeypatch.undo()
    assert declined == [True]
    assert abs(a - fast.alpha_star(p, q, n=3, scheme="without", path="sort")) <= 1e-12
    # half of the tokens of ratio +inf (q = 0)
    rng = np.random.default_rng(4)
    q2 = rng.dirichlet(np.full(6000, 0.5))
    p2 = rng.dirichlet(np.full(6000, 0.5))
    q2[:3000] = 0.0
    q2 /= q2.sum()
    declined.clear()
    monkeypatch.setattr(_fused_series, "solve_row", spy)
    a = fast.alpha_star(p2, q2, n=3, scheme="without")
    monkeypatch.undo()
    b = fast.alpha_star(p2, q2, n=3, scheme="without", path="sort")
    assert abs(a - b) <= 1e-12
    with _fused.disabled():
        assert abs(fast.alpha_star(p2, q2, n=3, scheme="without") - a) <= 1e-12


def test_route_is_off_without_the_kernels():
    """With the fused kernels off the route is not taken (the array code runs)."""
    p, q = synthetic_pair(6000, 1.0, 1)
    law = bucket.chain_for("without", 3)
    shared = bucket._shared(p[None], q[None], law.fused_sub_bits)
    assert _fused_series.serves(law, shared, p[None])
    assert not _fused_series.serves(bucket.chain_for("without", 2), shared, p[None])
    with _fused.disabled():
        assert not _fused_series.serves(law, shared, p[None])


def _tiny(q3: float = 0.25, maxfrac: float = 0.75, P=(0.0, 5.0, 5.0, 10.0)):
    """The survivors kernel on three buckets of one ratio each (edges 0): with f = 0 at every
    boundary, bucket b's bound is :math:`P_b - Q_{b+1}`, so P = Q = (0, 5, 5, 10) keeps buckets
    0 and 2 (two runs), P = Q = (0, 5, 5, 5) bucket 0 alone."""
    P = np.array(P)
    nb = P.size - 1
    ids = np.array([0, 1, 2, 0, 1, 2], dtype=np.int32)
    p = np.array([0.1, 0.2, 0.2, 0.1, 0.2, 0.2])
    q = np.array([0.2, 0.1, 0.2, q3, 0.1, 0.2])
    Hn = np.bincount(ids, minlength=nb).astype(np.int64)
    zf, zi = np.zeros(nb + 1), np.zeros(nb + 1, dtype=np.int64)
    k = _fused_series._kernels()["survivors"]
    return k(
        P, P.copy(), np.ones(nb), np.ones(nb), np.zeros(nb), np.zeros(nb), 1.0, 1e-13, maxfrac,
        ids, Hn, p, q, np.zeros(0, dtype=np.int64), 0, 1.0, 1.0, 1.0, np.zeros((3, nb + 1)),
        zi, zf, zi,
    )  # fmt: skip


def test_survivors_kernel_declines_where_the_array_code_turns():
    """The compiled kernel declines (status 1) survivors in two runs, more survivors than the
    maximum fraction, a survivor of infinite ratio and a NaN objective; one run of finite
    ratios is solved (status 0), its tokens sorted by ratio with P continued from 0."""
    assert _tiny()[0] == 1  # buckets 0 and 2 survive: two runs
    one = (0.0, 5.0, 5.0, 5.0)
    out = _tiny(P=one)
    assert out[0] == 0 and out[3].tolist() == [3, 0]  # ratios 0.4, then 0.5
    assert np.allclose(out[5], [0.1, 0.2]) and out[4].tolist() == [0, 0]
    assert _tiny(P=one, maxfrac=0.1)[0] == 1  # 2 survivors > 0.1 * 6 tokens
    assert _tiny(q3=0.0, P=one)[0] == 1  # ratio +inf among the survivors
    assert _tiny(P=(0.0, np.nan, 5.0, 5.0))[0] == 1  # NaN at a boundary


def _block_maxima(q: np.ndarray) -> np.ndarray:
    """The bucketing pass's ``qmax``: each block's largest q as int64 bits."""
    bits = q.view(np.int64)
    return np.array([bits[s : s + _fused.BLOCK].max() for s in range(0, q.size, _fused.BLOCK)])


@pytest.mark.parametrize("k", [17, 25, 33, 65])
def test_top_k_of_many_guided_by_block_maxima(k):
    """``top_k`` with the block maxima for k > 16 (the series' m + 1 heavy tokens) gives
    (value descending, index ascending) as without them: a synthetic row, ties, zeros, the k
    largest in the short last block, a row of one value; k above the block count reads all."""
    rng = np.random.default_rng(k)
    V = 40 * _fused.BLOCK + 77
    late = np.full(V, 1e-6)
    late[-k:] = 0.5
    rows = [
        synthetic_pair(V, 0.7, 3)[1],
        rng.integers(1, 4, V).astype(float),  # ties
        np.where(rng.random(V) < 0.5, 0.0, rng.random(V)),  # zeros
        late / late.sum(),
        np.full(V, 1.0 / V),
    ]
    for q in rows:
        qmax = _block_maxima(q)
        order = np.lexsort((np.arange(V), -q))[:k]
        for got in (_fused.top_k(q, k, qmax), _fused.top_k(q, k)):
            assert np.array_equal(got[1], order) and np.array_equal(got[0], q[order])
    short = rows[0][: 3 * _fused.BLOCK]  # 3 blocks < k: the unguided pass
    order = np.lexsort((np.arange(short.size), -short))[:k]
    assert np.array_equal(_fused.top_k(short, k, _block_maxima(short))[1], order)


def test_series_setup_with_block_maxima_is_the_same():
    """The series' setup with q's block maxima (the compiled route's call) forms the same heavy
    tokens, moments and bound weights as without them, bit for bit."""
    p, q = synthetic_pair(30_000, 0.7, 5)
    sq = np.array([q.sum()])
    for n in (3, 4, 6):
        law = bucket.chain_for("without", n)
        shared = bucket._shared(p[None], q[None], law.fused_sub_bits)
        a = law.setup(p[None], q[None], sq, np, shared["qmax"])
        b = law.setup(p[None], q[None], sq, np)
        for key in ("heavy", "hq", "tau", "Jh", "beta", "tcoef", "Ht", "D_J", "qlight"):
            assert np.array_equal(a[key], b[key]), (n, key)
