"""The compiled series of one row (mdsd_ot.fast._series_jit) against the array code, bit for bit.

The kernels perform the array code's floating-point operations in its order, so every entry
must be *equal*, not close: the moments J and their depth D_J, every array of the setup dict,
Q and the bound at 1, 2 and many chain points (numpy sums a (1, K+1, C) array over its middle
axis pairwise when C = 1, term after term otherwise), and α* of the bucket path.  Rows:
synthetic at several temperatures, ties among the heavy tokens, zeros, 1e-300 masses, a near
point mass, fewer tokens than the plan's heavy tokens.  Batches and the switches keep the
array code.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import fast
from mdsd_ot.fast import _fused, _moments, _series_jit, chain
from mdsd_ot.fast import series as S
from mdsd_ot.fast._dd import cumsum_blocked
from mdsd_ot.synthetic import synthetic_pair

pytest.importorskip("numba", reason="the jit extra (numba) is not installed")
pytestmark = pytest.mark.skipif(not _fused.enabled(), reason="the kernels are off: MDSD_OT_JIT=0")


def _row(kind: str, V: int = 3000, seed: int = 0) -> np.ndarray:
    """One seeded (1, V) row of q (normalised) of the given kind."""
    rng = np.random.default_rng(seed)
    if kind.startswith("T="):
        _, q = synthetic_pair(V, float(kind[2:]), rng, noise=1.0)
    elif kind == "ties":  # many equal masses among the heavy tokens (and beyond them)
        q = rng.dirichlet(np.full(V, 0.5))
        q[rng.permutation(V)[:80]] = 0.01
        q[:5] = 0.02
    elif kind == "zeros":
        q = rng.dirichlet(np.full(V, 0.3))
        q[rng.random(V) < 0.4] = 0.0
    elif kind == "tiny":  # masses at 1e-300 (the high moments overflow: inf and NaN kept)
        q = rng.dirichlet(np.ones(V))
        q[rng.random(V) < 0.5] = 1e-300
    elif kind == "point":  # one token with almost all the mass: d(D) tiny
        q = rng.dirichlet(np.ones(V)) * 1e-9
        q[rng.integers(V)] = 1.0
    elif kind == "short":  # V below the plan's heavy tokens
        q = rng.dirichlet(np.ones(V))
    else:
        raise ValueError(kind)
    return (q / q.sum())[None, :]


KINDS = ["T=0.5", "T=0.7", "T=1.0", "T=1.5", "ties", "zeros", "tiny", "point"]


def _same(a, b) -> bool:
    """Bitwise equality of two arrays (NaN equal to NaN), shapes and dtypes included."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))
    return bool(np.array_equal(a, b))


def _both(f):
    """f() with the array code of the series, then with the compiled one (other kernels on)."""
    with np.errstate(all="ignore"):
        with _series_jit.disabled():
            ref = f()
        new = f()
    return ref, new


def _plan(n: int, V: int) -> tuple[int, int]:
    m, K = S.PLANS[n]
    return min(m, V), K


def test_route_is_taken(monkeypatch):
    assert _series_jit.available()
    with monkeypatch.context() as mp:
        mp.setenv("MDSD_OT_JIT", "0")
        assert not _series_jit.available()
    with _series_jit.disabled():
        assert not _series_jit.available()
    with _fused.disabled():
        assert not _series_jit.available()
    assert not _series_jit.rows_ok(8, np.zeros((2, 3)))
    assert not _series_jit.rows_ok(8, np.zeros((1, 3), dtype=np.float32))
    assert not _series_jit.rows_ok(128, np.zeros((1, 3)))  # K + 1 > 128: not one pairwise block
    assert _series_jit.rows_ok(8, np.zeros((1, 3)))


@pytest.mark.parametrize("n", [3, 4, 5])
@pytest.mark.parametrize("kind", KINDS)
def test_heavy_moments_bitwise(n, kind):
    q = _row(kind, seed=n)
    V = q.shape[1]
    m, K = _plan(n, V)
    qtop = -np.sort(-q, axis=-1)[:, : m + 1]
    qA = q[:, np.sort(np.argsort(-q[0], kind="stable")[:m])]
    suffix = np.concatenate([np.cumsum(qtop[:, :m][:, ::-1], axis=-1)[:, ::-1], [[0.0]]], axis=-1)
    qL = np.sum(q) - np.sum(qtop[:, :m])
    delta = np.stack([suffix[:, a] + qL for a in range(n)], axis=-1)
    T, theta_d, tau = np.sum(q, axis=-1), np.full(1, 3e-15), qtop[:, m]
    args = (qA, T, delta, qtop[:, : n - 1], theta_d, tau, K, n, np)
    (J0, D0), (J1, D1) = _both(lambda: _moments.heavy_moments(*args))
    assert J1.shape == (1, n, K + 1, m + 1)
    assert _same(J0, J1) and _same(D0, D1)
    J2, D2 = _series_jit.heavy_moments_row(*args[:-1], _moments.colex_tables(m, n))
    assert _same(J0, J2) and _same(D0, D2)


@pytest.mark.parametrize("n", [3, 4, 5])
@pytest.mark.parametrize("kind", [*KINDS, "short"])
def test_setup_dict_bitwise(n, kind):
    q = _row(kind, V=40 if kind == "short" else 3000, seed=10 + n)
    m, K = _plan(n, q.shape[1])
    ref, new = _both(lambda: S.series_setup(q.copy(), n, np, m, K))
    assert set(ref) == set(new)
    for key in ref:
        if isinstance(ref[key], np.ndarray):
            assert _same(ref[key], new[key]), key
        else:
            assert ref[key] == new[key], key


def _points(q: np.ndarray, ctx: dict, n: int) -> tuple:
    """pi, seg, lambda and the positive count on every prefix k = 1..V (as series_rows)."""
    B, V = q.shape
    K = ctx["K"]
    u = ctx["qlight"] / ctx["tau"][:, None]
    pw = [u]
    for _ in range(1, K):
        pw.append(pw[-1] * u)
    pi = np.concatenate([np.zeros((B, 1, V)), cumsum_blocked(np.stack(pw, axis=1), np)], axis=1)
    seg = np.cumsum(ctx["hmask"].astype(np.int64), axis=-1)
    npos = np.cumsum((q > 0).astype(np.int64), axis=-1)
    lam = np.flip(cumsum_blocked(np.flip(q, axis=-1), np), axis=-1)
    lam = np.concatenate([lam[:, 1:], np.zeros((B, 1))], axis=-1)
    return pi, seg, lam, npos


@pytest.mark.parametrize("n", [3, 4, 5])
@pytest.mark.parametrize("kind", [*KINDS, "short"])
def test_series_eval_bitwise(n, kind):
    q = _row(kind, V=40 if kind == "short" else 2000, seed=20 + n)
    V = q.shape[1]
    m, K = _plan(n, V)
    with np.errstate(all="ignore"):
        ctx = S.series_setup(q.copy(), n, np, m, K)
        pi, seg, lam, npos = _points(q, ctx, n)
    rng = np.random.default_rng(n)
    picks = [
        np.array([0]),
        np.array([V - 1]),
        np.array([rng.integers(V)]),  # one point: numpy sums pairwise
        np.array([3, 4]),
        np.sort(rng.choice(V, size=min(V, 37), replace=False)),
        np.arange(V),
    ]
    for cols in picks:
        for layout in (np.ascontiguousarray, np.asfortranarray):  # F: the array code runs
            args = (ctx, layout(pi[:, :, cols]), seg[:, cols], lam[:, cols], npos[:, cols], 200)
            (Q0, B0), (Q1, B1) = _both(lambda args=args: S.series_eval(*args, np))
            assert Q1.shape == (1, cols.size)
            assert _same(Q0, Q1) and _same(B0, B1), cols[:5]


@pytest.mark.parametrize("n", [2, 3, 4, 5])  # n = 2: prefix_Q_without_n2(series=True)
@pytest.mark.parametrize("kind", ["T=0.7", "T=1.5", "ties", "zeros", "point"])
def test_series_bitwise_and_certified(n, kind):
    q = _row(kind, V=3000, seed=30 + n)
    (Q0, e0), (Q1, e1) = _both(lambda: S.series(q, n, np))
    assert _same(Q0, Q1) and _same(e0, e1)
    assert np.all(np.isfinite(e1)) and np.all((Q1 >= 0) & (Q1 <= 1))


def test_series_pairwise_sum_matches_numpy():
    """The rule the kernels follow: numpy sums the middle axis of (1, R, C) pairwise (blocks of
    eight) only when C == 1; the kernel's sum equals numpy's for R = 7 .. 23 both ways."""
    k = _series_jit._kernels()
    rng = np.random.default_rng(5)
    differ = 0
    for R in range(7, 24):
        for _ in range(20):
            x = rng.random(R) * np.exp(rng.normal(0, 8, R))
            one = float(np.sum(x[None, :, None], axis=1)[0, 0])
            many = float(np.sum(np.repeat(x[None, :, None], 3, axis=2), axis=1)[0, 1])
            assert one == k["np_sum"](x, R, True)
            assert many == k["np_sum"](x, R, False)
            differ += one != many
    assert differ > 0  # the two orders do differ: the test can tell them apart


@pytest.mark.parametrize("N", [1, 63, 64, 65, 2016, 4097, 64 * 64 * 2 + 3])
def test_blocked_cumsum_bitwise(N):
    rng = np.random.default_rng(N)
    x = rng.random((N, 3)) * np.exp(rng.normal(0, 6, (N, 3)))
    ref = cumsum_blocked(x.T.copy(), np).T
    assert _same(np.ascontiguousarray(ref), _series_jit._kernels()["cumsum_cols"](x))


@pytest.mark.parametrize("N", [1, 5, 64, 65, 2016, 4960, 64 * 64 + 1, 10626])
def test_blocked_cumsum_at_positions_bitwise(N):
    """The moments read the layers' blocked cumulative sums at a few positions only."""
    rng = np.random.default_rng(N)
    x = rng.random((4, N)) * np.exp(rng.normal(0, 6, (4, N)))
    pos = np.unique(np.concatenate([[0, N - 1], rng.integers(0, N, 40)]))
    out = np.empty((4, pos.size))
    _series_jit._kernels()["cumsum_at"](x, pos, out)
    assert _same(np.ascontiguousarray(cumsum_blocked(x, np)[:, pos]), out)


def test_batches_keep_the_array_code(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the compiled series ran on a batch")

    for name in ("heavy_moments_row", "setup_tail_row", "eval_row"):
        monkeypatch.setattr(_series_jit, name, refuse)
    q = np.concatenate([_row("T=0.7", 500, 1), _row("T=1.0", 500, 2)])
    Q, err = S.series(q, 3, np)
    assert Q.shape == (2, 501) and np.all(err < 1e-10)
    with pytest.raises(AssertionError, match="compiled series"):
        S.series(q[:1], 3, np)  # one row: the compiled route


@pytest.mark.parametrize("n", [3, 4])
@pytest.mark.parametrize("T", [0.5, 0.7, 1.0, 1.5])
def test_alpha_star_unchanged(n, T):
    p, q = synthetic_pair(20_000, T, np.random.default_rng(int(10 * T) + n), noise=1.0)
    a1 = fast.alpha_star(p, q, n=n, scheme="without")
    with _series_jit.disabled():  # only the series' route differs: the same bits
        a0 = fast.alpha_star(p, q, n=n, scheme="without")
    assert a0 == a1
    with _fused.disabled():  # the numpy route throughout (other sums: 1e-12, test_fused.py)
        a2 = fast.alpha_star(p, q, n=n, scheme="without")
    assert abs(a1 - a2) <= 1e-12


@pytest.mark.parametrize("kind", ["ties", "zeros", "tiny", "point"])
def test_alpha_star_unchanged_hostile(kind):
    rng = np.random.default_rng(7)
    q = _row(kind, 5000, 8)[0]
    p = rng.dirichlet(np.full(q.size, 0.5))
    for n in (3, 4):
        a1 = fast.alpha_star(p, q, n=n, scheme="without")
        with _series_jit.disabled():
            a0 = fast.alpha_star(p, q, n=n, scheme="without")
        assert a0 == a1


def test_chain_setup_bitwise():
    """The bucket path's setup (heavy tokens in chain order, q zeroed in place) and Q."""
    p, q = synthetic_pair(5000, 0.7, np.random.default_rng(3), noise=1.0)
    p, q = p[None], q[None]
    law = chain.chain_for("without", 3)
    sq = np.sum(q, axis=-1)
    ref, new = _both(lambda: law.setup(p, q, sq, np))
    for key in ref:
        if isinstance(ref[key], np.ndarray):
            assert _same(ref[key], new[key]), key


@pytest.mark.slow
@pytest.mark.parametrize("n", [6, 7, 8])
def test_large_n_bitwise(n):
    """Larger plans (K = 17 .. 22: K! above 2**53, sums of more than 16 terms)."""
    q = _row("T=0.7", V=400, seed=n)
    (Q0, e0), (Q1, e1) = _both(lambda: S.series(q, n, np))
    assert _same(Q0, Q1) and _same(e0, e1)
