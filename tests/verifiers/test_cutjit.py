"""The compiled passes of the piece-kernel laws (mdsd_ot.verifiers.chain._cutjit).

The compiled route makes the same floating-point operations as the numpy route, in the same
order, so every comparison here is *bitwise* (tolerance 0): the law, its error bound, the
kernel's arrays, the pairs and the model masses.  A bitwise match of the blocked cumulative sums
is what keeps the rounding depth of the error bound (:func:`cutlaw.cumsum_depth`) valid for the
compiled code.  The bound itself is checked against the exact law in Fractions (both routes),
and one test runs the whole construction with the kernels disabled.
"""

from __future__ import annotations

import math
from fractions import Fraction as Fr

import numpy as np
import pytest

from mdsd_ot.drafts.conditional_poisson import elementary_symmetric
from mdsd_ot.fast._fused import disabled
from mdsd_ot.synthetic import synthetic_pair
from mdsd_ot.verifiers.chain import _cutjit, build_plan, cutlaw, pieces, relabel
from mdsd_ot.verifiers.chain.swap import stream_draws

compiled = pytest.mark.skipif(not _cutjit.enabled(), reason="numba not installed (or disabled)")


def _same(a, b) -> bool:
    """Bitwise equality of two arrays (values and dtype; tolerance 0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def _pairs(g: np.random.Generator, q: np.ndarray, P: int, reach: int, order: str):
    """P random pairs x < y among the tokens with q > 0, with lift and drop masses."""
    live = np.flatnonzero(q > 0)
    i = g.integers(0, len(live) - 1, P)
    j = np.minimum(i + 1 + g.integers(0, reach, P), len(live) - 1)
    x, y = live[i], live[j]
    if order == "fifo":  # the design's order: x and y descending
        o = np.lexsort((-y, -x))
        x, y = x[o], y[o]
    elif order == "dup":  # repeated pairs: ties of the sub-levels
        x, y = np.repeat(x[: P // 2], 2), np.repeat(y[: P // 2], 2)
    a = g.random(len(x)) * q[x] * 0.45
    b = g.random(len(x)) * q[y] * 0.45
    a[::5] = 0.0
    return x, y, a, b


def _q(g: np.random.Generator, V: int, kind: str) -> np.ndarray:
    q = g.dirichlet(np.full(V, 0.4))
    if kind == "ties":
        q[: V // 2] = q[0]
    elif kind == "zeros":
        q[-max(1, V // 5) :] = 0.0
    elif kind == "heavy":
        q[g.integers(V)] += 1.5
    return q / q.sum()


CASES = [
    (V, P, kind, order)
    for V, P in ((3, 2), (7, 12), (60, 400), (2000, 3000), (2000, 12000))
    for kind in ("plain", "ties", "zeros", "heavy")
    for order in ("fifo", "random", "dup")
]


@compiled
@pytest.mark.parametrize("N", [1, 2, 3, 64, 65, 66, 129, 4096, 4097, 4098, 4161, 262_146])
def test_exclusive_matches_blocked_cumsum(N):
    x = np.random.default_rng(N).random(N) * 10.0 ** np.random.default_rng(N + 1).integers(-8, 8, N)
    with disabled():
        want = cutlaw._exclusive(x)
    assert _same(_cutjit.exclusive(x), want)  # tolerance 0
    assert _cutjit.levels(N) == (0 if N <= 64 else 1 + _cutjit.levels(-(-N // 64)))


@compiled
def test_kernels_switch_off():
    assert _cutjit.enabled()
    with disabled():
        assert not _cutjit.enabled()
    assert _cutjit.enabled()


@compiled
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_compiled_kernel_and_law_match_numpy(case):
    V, P, kind, order = case
    g = np.random.default_rng([V, P, len(kind), len(order)])
    q = _q(g, V, kind)
    x, y, a, b = _pairs(g, q, P, 50, order)
    for draws in (None, stream_draws(q, 3)):
        with disabled():
            k0 = pieces.build_pieces(q, x, y, a, b, draws)
        k1 = pieces.build_pieces(q, x, y, a, b, draws)
        for f in ("tok", "prob", "start", "order"):
            assert _same(getattr(k1, f), getattr(k0, f)), f  # tolerance 0
        assert k1.info == k0.info
    d = k0.mass(q)
    with disabled():
        ba0 = cutlaw.before_after(k0, d)
    ba1 = cutlaw.before_after(k0, d)
    assert _same(ba1[0], ba0[0]) and _same(ba1[1], ba0[1]) and ba1[2] == ba0[2]
    assert _same(_cutjit.before(k0.tok, d, k0.start), ba0[0])
    for n in [n for n in (2, 3, 4, 5, 6) if n <= (q > 0).sum()]:  # e_n(q) > 0
        with disabled():
            T0, e0 = cutlaw.cp_law(q, n, k0)
        T1, e1 = cutlaw.cp_law(q, n, k0)
        assert _same(T1, T0) and e1 == e0, n  # the law and its bound, tolerance 0
    with disabled():
        S0 = cutlaw.seq_law(q, 2, k0)
    S1 = cutlaw.seq_law(q, 2, k0)
    assert _same(S1[0], S0[0]) and S1[1] == S0[1]


@compiled
def test_cancelling_tokens_take_the_pass_without_them():
    """A token holding most of the mass, split into many pieces: its deflation cancels and the
    law takes e_{n-1} from the pass without it (compiled: stopped after its last piece)."""
    g = np.random.default_rng(3)
    V = 400
    q = g.dirichlet(np.full(V, 0.5))
    q[7] = 40.0
    q /= q.sum()
    x = np.concatenate([np.full(150, 7), g.integers(8, V - 2, 100)])
    y = np.minimum(x + 1 + g.integers(0, 300, len(x)), V - 1)
    k = pieces.build_pieces(q, x, y, g.random(len(x)) * 0.004, g.random(len(x)) * q[y] * 0.4)
    d = k.mass(q)
    v, _, _ = cutlaw.before_after(k, d)
    for n in (3, 4, 6):
        _, _, flag = _cutjit.cp_pass(d, v, n, k.tok, V=V)
        assert flag[7] == 1, n
        with disabled():
            T0, e0 = cutlaw.cp_law(q, n, k)
        T1, e1 = cutlaw.cp_law(q, n, k)
        assert _same(T1, T0) and e1 == e0  # tolerance 0


@compiled
def test_rows_of_two_blocked_levels():
    """before_after on tokens of more than 4096 pieces (two blocked levels per row) and of
    different lengths in one size bucket (the padded rows of the numpy route)."""
    g = np.random.default_rng(9)
    V = 9000
    q = g.dirichlet(np.full(V, 1.0))
    x = np.concatenate([np.full(4500, 0), np.full(5000, 1), np.full(300, 2), np.full(400, 3)])
    y = np.concatenate(
        [np.arange(1, 4501), np.arange(2, 5002), np.arange(3, 303), 4 + g.integers(0, 50, 400)]
    )
    k = pieces.build_pieces(q, x, y, g.random(len(x)) * q[x] / 6000, g.random(len(x)) * q[y] * 0.3)
    assert np.diff(k.start).max() > 4096
    d = k.mass(q)
    with disabled():
        v0, a0, k0 = cutlaw.before_after(k, d)
    v1, a1, k1 = cutlaw.before_after(k, d)
    assert _same(v1, v0) and _same(a1, a0) and k1 == k0  # tolerance 0
    assert _same(_cutjit.before(k.tok, d, k.start), v0)  # one pass in level order


@compiled
@pytest.mark.parametrize("V", [1, 2, 5, 100, 3000])
def test_fifo_pairs_and_pair_masses_match(V):
    g = np.random.default_rng(V)
    for rep in range(12):
        D = g.random(V)
        t = g.random(V) * (1 + rep % 3)
        if rep % 3 == 0:  # integers: ends of supply and demand tie
            D, t = np.floor(4 * D), np.floor(4 * t)
        sup, dem = np.maximum(D - t, 0.0), np.maximum(t - D, 0.0)
        want = relabel.fifo_pairs(sup, dem)
        got = _cutjit.fifo_pairs(sup, dem)
        assert all(_same(u, w) for u, w in zip(got, want, strict=True))  # tolerance 0
        if V < 2 or not len(want[0]):
            continue
        q = _q(g, V, ("plain", "heavy", "ties")[rep % 3])
        for n in (2, 3, 4, 5):
            E = pieces.cp_levels(q, n)
            a0, b0 = pieces.pair_masses(q, n, E, *want)
            a1, b1 = _cutjit.pair_masses(q, n, np.stack(E), *want)
            assert _same(a1, a0) and _same(b1, b0), n  # tolerance 0


# -- the bound against the exact law ------------------------------------------------------------


def _e(vals: list[Fr], m: int) -> Fr:
    return elementary_symmetric(vals, m, Fr(1))[m]


def _exact_cp_law(q: np.ndarray, n: int, kern: pieces.PieceKernel) -> list[Fr]:
    """Lemmas 7-8 in Fractions: T_k = sum over k's pieces of Phi(after) - Phi(before), with
    Phi = e_n(q b) / e_n(q), for the float kernel and float q read exactly."""
    qf = [Fr(float(v)) for v in q]
    V = len(qf)
    en = _e(qf, n)
    b = [Fr(0)] * V
    T = [Fr(0)] * V
    prev = Fr(0)
    for k, pr in zip(kern.tok.tolist(), kern.prob.tolist(), strict=True):
        b[k] += Fr(pr)
        cur = _e([qf[i] * b[i] for i in range(V)], n) / en
        T[k] += cur - prev
        prev = cur
    return T


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
def test_law_within_its_bound_of_the_exact_law(jit):
    if jit and not _cutjit.enabled():
        pytest.skip("numba not installed (or disabled)")
    g = np.random.default_rng(17)
    worst = 0.0
    for trial in range(16):
        V, n = int(g.integers(4, 8)), 3 + trial % 2
        q = _q(g, V, ("plain", "heavy", "ties", "zeros")[trial % 4])
        x, y, a, b = _pairs(g, q, int(g.integers(2, 9)), 3, ("fifo", "random", "dup")[trial % 3])
        if trial % 4 == 1:  # the heavy token split in many pieces (cancelling deflation)
            h = int(np.argmax(q))
            x = np.concatenate([x, np.full(4, h)])
            y = np.concatenate([y, np.full(4, V - 1)])
            a = np.concatenate([a, np.full(4, q[h] / 5)])
            b = np.concatenate([b, np.full(4, q[V - 1] / 9)])
            keep = x < y
            x, y, a, b = x[keep], y[keep], a[keep], b[keep]
        kern = pieces.build_pieces(q, x, y, a, b)
        if (q > 0).sum() < n:
            continue
        if jit:
            T, err = cutlaw.cp_law(q, n, kern)
        else:
            with disabled():
                T, err = cutlaw.cp_law(q, n, kern)
        exact = _exact_cp_law(q, n, kern)
        dev = sum(abs(Fr(float(u)) - w) for u, w in zip(T, exact, strict=True))
        assert dev <= Fr(err), (trial, float(dev), err)  # the reported bound, exactly
        worst = max(worst, float(dev))
    assert worst > 0.0  # rounding happened: the comparison is not vacuous


# -- the construction with and without the kernels ---------------------------------------------


@pytest.mark.parametrize("n", [3, 4])
def test_cp_swap_plan_the_same_without_kernels(n):
    p, q = synthetic_pair(2000, 1.0, np.random.default_rng(1), noise=1.0)
    with disabled():
        assert not _cutjit.enabled()
        ref = build_plan(p, q, n, "cp-swap")
    plan = build_plan(p, q, n, "cp-swap")
    assert plan.construction == ref.construction == "cp-swap"
    assert ref.info["shortfall"] <= 1e-9  # the design converged on the numpy route
    assert _same(plan.T, ref.T) and plan.law_error == ref.law_error  # tolerance 0
    assert plan.acceptance == ref.acceptance
    assert plan.info["iterations"] == ref.info["iterations"]
    assert plan.info["history"] == ref.info["history"]


@compiled
def test_design_steps_match_numpy():
    """The supply and demand, and the model-corrected residual of pieces.design (tolerance 0)."""
    g = np.random.default_rng(23)
    V = 3000
    D, t, s, T = (g.random(V) * 1e-3 for _ in range(4))
    live = g.random(V) > 0.1
    sup, dem = _cutjit.split(D, t, live)
    assert _same(sup, np.where(live, np.maximum(D - t, 0.0), 0.0))
    assert _same(dem, np.where(live, np.maximum(t - D, 0.0), 0.0))
    x, y, tau = _cutjit.fifo_pairs(sup, dem)
    M = D + np.bincount(x, tau, V) - np.bincount(y, tau, V)
    want = np.where(live, (s - T) + (M - t), 0.0)
    assert _same(_cutjit.residual(D, s, T, t, live, x, y, tau), want)


@compiled
def test_total_mass_is_math_fsum():
    """The compiled double-double total is math.fsum's (tolerance 0), cancellations and
    half-way cases included."""
    g = np.random.default_rng(29)
    for trial in range(600):
        N = int(g.integers(0, 200))
        x = g.standard_normal(N) * 10.0 ** g.integers(-30, 30, N)
        if trial % 4 == 1:  # exact cancellation around small terms
            x = np.concatenate([x, -x[::-1], [1e-300, 1.0, 1e-16]])
        elif trial % 4 == 2:  # half-way cases of the final rounding
            x = np.array([1.0, 2.0**-53, 2.0**-106] * (N // 3 + 1))
        elif trial % 4 == 3:
            x = np.abs(x) * 1e-5
        hi = math.fsum(x.tolist())
        assert _cutjit.total_mass(x) == (hi, math.fsum(x.tolist() + [-hi])), trial
    assert _cutjit.total_mass(np.array([1.0, np.inf])) is None  # left to math.fsum
    assert _cutjit.total_mass(np.array([1e308, 1e308])) is None  # overflow: likewise
