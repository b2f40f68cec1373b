"""The design model's coefficients from the windows between pairs (mdsd_ot.verifiers.chain.windows).

Drafts sure of a few tokens whose other masses fall off geometrically (1e-100, 1e-120, ...):
every tail token outweighs all lighter ones, the prefix formulas of the model cancel, and
before the windows the design asked a tail token for 1e78 times its mass (ε = 0.06–0.07 at
V = 12, n = 4).  Exact comparisons are in Fractions with the stated relative tolerance; the
two routes (compiled and numpy) are compared bitwise.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from mdsd_ot.drafts import ConditionalPoisson, WithoutReplacement
from mdsd_ot.fast import alpha_star
from mdsd_ot.fast._fused import disabled
from mdsd_ot.verifiers.chain import _cutjit, build_plan, pieces
from mdsd_ot.verifiers.chain.windows import (
    block_levels,
    blocks_used,
    window_coefficients,
    window_levels,
)

compiled = pytest.mark.skipif(not _cutjit.enabled(), reason="numba not installed (or disabled)")


def _esp(masses, n):
    """e_0..e_{n-1} of the masses, in Fractions."""
    e = [Fr(1)] + [Fr(0)] * (n - 1)
    for w in masses:
        for m in range(n - 1, 0, -1):
            e[m] += Fr(float(w)) * e[m - 1]
    return e


def _geometric_row(V: int, heavy: int, seed: int):
    """q: ``heavy`` tokens of Dirichlet mass, the rest 1e-100 ... 1e-300 (log-spaced, shuffled);
    p: Dirichlet(0.5)."""
    g = np.random.default_rng(seed)
    q = np.empty(V)
    q[:heavy] = g.dirichlet(np.ones(heavy))
    q[heavy:] = np.logspace(-100, -300, V - heavy)[g.permutation(V - heavy)]
    q /= q.sum()
    return g.dirichlet(np.full(V, 0.5)), q


@pytest.mark.parametrize("width", [1, 3, 256])
def test_window_levels_are_the_exact_symmetric_polynomials(width):
    """e_m of the slots strictly between x and y, to relative 1e-12 (masses spanning 30
    decades; blocks of width 1, 3 and the default)."""
    g = np.random.default_rng(3)
    for _ in range(20):
        V, n = int(g.integers(2, 1400)), int(g.integers(2, 6))
        qs = g.random(V) * 10.0 ** g.integers(-30, 0, V)
        x = g.integers(0, V - 1, 12)
        y = np.minimum(x + 1 + g.integers(0, V, 12), V - 1)
        x, y = x[y > x], y[y > x]
        W = window_levels(qs, n, x, y, width=width)
        for i in range(len(x)):
            want = _esp(qs[x[i] + 1 : y[i]], n)
            for m in range(n):
                if want[m] == 0:
                    assert W[i, m] == 0.0
                else:
                    assert abs(Fr(float(W[i, m])) - want[m]) <= Fr(1, 10**12) * want[m]


def test_block_levels_are_the_blocks_products():
    qs = np.random.default_rng(4).random(1000)
    B = block_levels(qs, 4, 256)
    assert B.shape == (3, 4)  # the last 232 slots are no whole block
    for b in range(3):
        want = _esp(qs[256 * b : 256 * (b + 1)], 4)
        assert all(abs(Fr(float(B[b, m])) - want[m]) <= Fr(1, 10**13) * want[m] for m in range(4))


def test_pair_coefficients_on_geometric_tails_are_exact():
    """(h', I, J) of pairs whose windows weigh nothing beside the pair's lower token: to relative
    1e-12 of their exact values (the prefix formulas gave h' = 0 here, so a = 5.7e78 q_x)."""
    qs = np.array([1.0, 1e-100, 1e-120, 1e-140, 1e-160])
    n = 4
    qs = np.ldexp(qs, 290)  # the design's scale: e_n(2^k q) near 1
    E = pieces.cp_levels(qs, n)
    x, y = np.array([1, 1, 2, 0]), np.array([3, 4, 4, 4])
    h, hp, Iv, Jv = pieces.pair_coefficients(qs, n, E, x, y)
    en = Fr(float(E[n][-1]))
    q = [Fr(float(v)) for v in qs]
    for i in range(len(x)):
        xi, yi = int(x[i]), int(y[i])
        Hx, Hx1 = q[:xi], q[: xi + 1]
        Hyx = [v for k, v in enumerate(q[:yi]) if k != xi]
        hp_w = q[yi] * _esp(Hyx, n)[n - 2] / en
        I_w = (_esp(Hyx, n)[n - 1] - _esp(Hx, n)[n - 1]) / en
        J_w = (_esp(q[:yi], n)[n - 1] - _esp(Hx1, n)[n - 1]) / en
        for got, want in ((hp[i], hp_w), (Iv[i], I_w), (Jv[i], J_w)):
            assert abs(Fr(float(got)) - want) <= Fr(1, 10**12) * want, (i, float(got), float(want))
    # and the pair whose window is empty has I = 0 exactly
    _, _, I0, _ = pieces.pair_coefficients(qs, n, E, np.array([1]), np.array([2]))
    assert I0[0] == 0.0


def test_window_coefficients_match_their_formulas():
    """window_coefficients against the same sums formed from window_levels by hand."""
    g = np.random.default_rng(5)
    qs = g.random(700) * 10.0 ** g.integers(-20, 0, 700)
    n = 4
    E = pieces.cp_levels(qs, n)
    x = np.array([0, 10, 300, 5])
    y = np.array([699, 12, 301, 600])
    hp, Iv, Jv = window_coefficients(qs, n, E, x, y, float(E[n][-1]))
    w = window_levels(qs, n, x, y)
    en = float(E[n][-1])
    for i in range(len(x)):
        Hx = [float(E[j][x[i]]) for j in range(n)]
        assert np.isclose(hp[i], qs[y[i]] * sum(Hx[j] * w[i, n - 2 - j] for j in range(n - 1)) / en)
        assert np.isclose(Iv[i], sum(Hx[j] * w[i, n - 1 - j] for j in range(n - 1)) / en)
    assert Iv[2] == 0.0 and Jv[2] == 0.0  # x, y adjacent: no window


@compiled
@pytest.mark.parametrize("V", [12, 700])
def test_pair_masses_the_same_on_both_routes(V):
    """The compiled pair masses equal numpy's bitwise (tolerance 0) on a row where most pairs
    are recomputed from their windows, some over whole blocks."""
    p, q = _geometric_row(V, 2, 1)
    from mdsd_ot.verifiers.chain.plan import chain_order
    from mdsd_ot.verifiers.chain.swap import _swap_sublaw

    qs, D, s, _ = _swap_sublaw(p, q, 4, chain_order(p, q), "cp-swap")
    qs = np.ldexp(qs, 280)
    sup, dem = np.maximum(D - s, 0.0), np.maximum(s - D, 0.0)
    x, y, tau = pieces.fifo_pairs(sup, dem)
    x, y, tau = (
        np.concatenate([x, [0]]),
        np.concatenate([y, [V - 1]]),
        np.concatenate([tau, [1e-3]]),
    )
    E = pieces.cp_levels(qs, 4)
    with disabled():  # numpy's lockstep windows
        assert not _cutjit.enabled()
        a0, b0 = pieces.pair_masses(qs, 4, E, x, y, tau)
        c0 = window_coefficients(qs, 4, E, x, y, float(E[4][-1]))
    a1, b1 = _cutjit.pair_masses(qs, 4, np.stack(E), x, y, tau)
    assert np.array_equal(a0, a1) and np.array_equal(b0, b1)
    c1 = window_coefficients(qs, 4, E, x, y, float(E[4][-1]))  # the compiled loop
    assert all(np.array_equal(u, v) for u, v in zip(c0, c1, strict=True))
    a2, b2 = pieces.pair_masses(qs, 4, E, x, y, tau)  # numpy formulas, compiled windows
    assert np.array_equal(a0, a2) and np.array_equal(b0, b2)


@pytest.mark.parametrize("V", [12, 50])
@pytest.mark.parametrize("law", [ConditionalPoisson, WithoutReplacement])
def test_geometric_tails_reach_alpha_star(V, law):
    """Drafts sure of 1-3 tokens with tails 1e-100 ... 1e-300 (seeds 0-3), n = 3 and 4: the
    swap constructions reach ε = α* − acceptance ≤ 1e-9 with a law bound ≤ 1e-9 (before: ε up
    to 0.073 at V = 12 and 0.068 at V = 50, where the law's bound was 1.8e81)."""
    for seed in range(4):
        for heavy in (1, 2, 3):
            p, q = _geometric_row(V, heavy, seed)
            for n in (3, 4):
                d = law(q, n)
                con = "cp-swap" if law is ConditionalPoisson else "seq-best"
                plan = build_plan(p, d.q, n, con)
                a = float(alpha_star(p, d.q, n=n, scheme=d.scheme))
                assert a - plan.acceptance <= 1e-9, (seed, heavy, n, a - plan.acceptance)
                assert plan.law_error <= 1e-9


def test_geometric_tails_numpy_route():
    """The same rows without the compiled kernels (V = 12, conditional Poisson, n = 4)."""
    with disabled():
        for seed in range(4):
            p, q = _geometric_row(12, 1, seed)
            plan = build_plan(p, q, 4, "cp-swap")
            a = float(alpha_star(p, q, n=4, scheme="conditional-poisson"))
            assert a - plan.acceptance <= 1e-9 and plan.law_error <= 1e-9


def test_only_the_blocks_in_use_are_formed():
    """window_levels with the blocks of blocks_used equals it with every block (bitwise), and
    a window that holds no whole block uses none."""
    g = np.random.default_rng(6)
    qs = g.random(5000)
    x = g.integers(0, 4000, 40)
    y = np.minimum(x + 1 + g.integers(0, 1500, 40), 4999)
    used = blocks_used(x, y, len(qs))
    assert 0 < used.sum() < len(used)
    a = window_levels(qs, 4, x, y, block_levels(qs, 4))
    b = window_levels(qs, 4, x, y, block_levels(qs, 4, used=used))
    assert np.array_equal(a, b)
    assert not blocks_used(np.array([10, 300]), np.array([200, 700]), 5000).any()
