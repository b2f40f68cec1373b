"""The compiled V-size passes of the chain plans (mdsd_ot/verifiers/chain/_passes.py; the loops in
_passes_plan_nb.py and _passes_seq2_nb.py).

Compiled and numpy routes build the same plans: every array of a ``relabel`` (n = 2, 4),
``stream`` (n = 3), ``cp2`` and ``seq2`` plan is equal entry by entry (``np.array_equal``: bit-identical up to the sign of
zeros), acceptances are equal, and ``law_error`` agrees exactly (``relabel``, ``cp2``) or to a
relative 1e-12 (``seq2``: the compiled kernel law sums the bound's terms sequentially, numpy
pairwise).  With the same generator, both routes draw the same output tokens, for one tuple (the
scratch residual) and for 64 (the plan's cached residual).  With the kernels disabled the plans
keep their guarantees (acceptance α*, law of the quantised kernels within ``law_error``).
Instances: the synthetic family at V = 600-152,064 and seeded Dirichlet rows with ties, zeros, a
heavy token, and a ``cp2`` row that re-sorts.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot.fast import alpha_star
from mdsd_ot.fast._fused import disabled
from mdsd_ot.synthetic import synthetic_pair
from mdsd_ot.verifiers.chain import build_plan
from mdsd_ot.verifiers.chain import sample as SP
from mdsd_ot.verifiers.chain._passes import kernels

CONS = ("relabel", "cp2", "seq2")
BUILDS = [("relabel", 2), ("relabel", 4), ("stream", 3), ("cp2", 2), ("seq2", 2)]
needs_jit = pytest.mark.skipif(kernels() is None, reason="numba not installed or MDSD_OT_JIT=0")


def _rows() -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    for V, T, noise, seed in ((152_064, 1.0, 1.0, 1), (2000, 0.5, 2.0, 3), (600, 2.0, 0.5, 4)):
        p, q = synthetic_pair(V, T, np.random.default_rng(seed), noise=noise)
        out.append((f"synthetic V={V}", p, q))
    g = np.random.default_rng(5)
    for kind in ("plain", "ties", "zeros", "heavy"):
        V = 300
        p, q = g.dirichlet(np.full(V, 0.3)), g.dirichlet(np.full(V, 0.3))
        if kind == "ties":
            q[:150] = p[:150]
        elif kind == "zeros":
            p[:5], q[-7:], p[-1] = 0.0, 0.0, 0.0  # token V - 1: p = q = 0 (a NaN key)
        elif kind == "heavy":
            q[3] += 1e6
        out.append((kind, p / p.sum(), q / q.sum()))
    g = np.random.default_rng(34)  # cp2 re-sorts this row (its p/q order does not fit)
    V = int(g.integers(3, 40))
    out.append(("resorted", g.dirichlet(np.full(V, 0.3)), g.dirichlet(np.full(V, 0.3))))
    return out


ROWS = _rows()


def _fields(plan) -> dict:
    out = {k: v for k, v in vars(plan).items() if k not in ("p", "q", "pairs", "seq2")}
    for name in ("pairs", "seq2"):
        if getattr(plan, name) is not None:
            out.update({f"{name}.{k}": v for k, v in vars(getattr(plan, name)).items()})
    return out


def _equal(a, b, key: str) -> None:
    if isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype, key
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), key
    elif isinstance(a, tuple | list):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _equal(x, y, f"{key}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), key
        for k in a:
            _equal(a[k], b[k], f"{key}.{k}")
    else:
        assert a == b or (a != a and b != b), (key, a, b)


@needs_jit
@pytest.mark.parametrize(("con", "n"), BUILDS)
@pytest.mark.parametrize("row", range(len(ROWS)), ids=[r[0] for r in ROWS])
def test_compiled_equals_numpy(con, n, row):
    _, p, q = ROWS[row]
    a = build_plan(p, q, n, con)
    with disabled():
        b = build_plan(p, q, n, con)
    fa, fb = _fields(a), _fields(b)
    assert fa.keys() == fb.keys()
    for k in fa:
        if k == "law_error" and con == "seq2":  # sequential vs pairwise sums of the bound
            assert abs(fa[k] - fb[k]) <= 1e-12 * fb[k], (fa[k], fb[k])
        else:
            _equal(fa[k], fb[k], k)
    if row == len(ROWS) - 1 and con == "cp2":
        assert a.info["resorted"]  # the re-sorted branch is exercised


@needs_jit
@pytest.mark.parametrize("con", CONS)
@pytest.mark.parametrize("B", [1, 64])
def test_compiled_and_numpy_draw_the_same(con, B):
    for _, p, q in ROWS:
        V = len(p)
        g = np.random.default_rng(9)
        t = np.stack([g.permutation(V)[:2] for _ in range(B)])
        a = build_plan(p, q, 2, con)
        out_a = SP.sample_plan(a, t, np.random.default_rng(7))
        with disabled():
            b = build_plan(p, q, 2, con)
            out_b = SP.sample_plan(b, t, np.random.default_rng(7))
        assert np.array_equal(out_a, out_b)


@pytest.mark.parametrize(("con", "n"), BUILDS + [("seq-swap", 2)])
def test_scratch_residual_equals_cached(con, n):
    """The scratch residual of a few tuples is the plan's cached residual, entry by entry, on
    both routes (a failed compiled pass would differ from the numpy cumulative sum)."""
    for _, p, q in ROWS[1:]:
        if con == "seq-swap" and len(p) > 600:
            continue
        for route in ("compiled", "numpy"):
            ctx = disabled() if route == "numpy" else _nothing()
            with ctx:
                plan = build_plan(p, q, n, con)
                once = SP._residual_once(plan).copy()
                assert np.array_equal(once, plan.residual), (con, route)


@needs_jit
def test_seq2_levels_compiled_equals_numpy():
    """Seq2Kernel.pair_levels: the compiled row scan draws the levels of the numpy binary
    search, with the same uniforms, on every paired slot (moves included) and unpaired ones."""
    moves = 0
    for _, p, q in ROWS[1:]:
        plan = build_plan(p, q, 2, "seq2")
        k = plan.seq2
        slots = np.concatenate([k.dslot, k.sslot, np.arange(min(len(p), 50))])
        first = np.tile(slots, 20)
        second = np.random.default_rng(3).permutation(first)
        a1, a2 = k.pair_levels(first, second, np.random.default_rng(4))
        with disabled():
            b1, b2 = k.pair_levels(first, second, np.random.default_rng(4))
            c1 = k.levels(first, 2, np.random.default_rng(5))
        assert np.array_equal(a1, b1) and np.array_equal(a2, b2)
        assert np.array_equal(k.levels(first, 2, np.random.default_rng(5)), c1)
        moves += int(((a1 // 2 != first) | (a2 // 2 != second)).sum())
    assert moves > 100  # the move entries are exercised


@pytest.mark.parametrize("route", ["compiled", "numpy"])
def test_slots_of_few_tokens(route):
    """The slots of a few tokens (keys counted below each) are the inverse permutation's, with
    ties (equal p/q) and a NaN key (p = q = 0)."""
    for _, p, q in ROWS:
        V = len(p)
        g = np.random.default_rng(11)
        with disabled() if route == "numpy" else _nothing():
            plan = build_plan(p, q, 2, "relabel")
            for size in (1, 2, 16):
                tok = g.integers(0, V, size)
                tok[0] = V - 1
                want = np.argsort(plan.order)[tok]
                assert np.array_equal(plan.slots_of(tok), want)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.mark.parametrize("con", CONS)
def test_without_kernels_keeps_the_guarantees(con):
    """Kernels disabled: acceptance α* (up to rounding) and T >= s where the plan keeps T."""
    scheme = {"relabel": "with", "cp2": "conditional-poisson", "seq2": "without"}[con]
    with disabled():
        assert kernels() is None
        for _, p, q in ROWS[:3]:
            plan = build_plan(p, q, 2, con)
            a = float(alpha_star(p, q, n=2, scheme=scheme))
            assert abs(plan.acceptance - a) < 1e-9, (con, plan.acceptance, a)
            assert plan.law_error < 1e-8
            if plan.T is not None:
                assert plan.info["shortfall"] < 1e-9
            out = SP.sample_plan(plan, np.array([[0, 1]] * 4), np.random.default_rng(0))
            assert out.shape == (4,) and ((out >= 0) & (out < len(p))).all()
