"""``seq-swap-h``'s law from one pass over the light pieces (seqseries.seq_series_subsets; §4.8).

:func:`~mdsd_ot.verifiers.chain.seqsingle.seq_single_cuts` forms the power sums and cumulant
series of the pieces outside S once and the 2^|S| series' heavy parts per subset.  Checked:
against the exact law in Fractions (within the reported bound and 1e-14 per slot), against
the per-variant route (one ``seq_series_cuts`` per subset; within the sum of both bounds), the
compiled pass against the numpy route (bound bitwise; law bitwise where numpy's einsum sums in
order, else within the bound), with several chunks of 8,192 pieces and tokens of many pieces,
and the fallback when a slot of S is not heavy.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_seqsingle import _exact_law

from mdsd_ot.fast._fused import disabled
from mdsd_ot.verifiers.chain import seqseries
from mdsd_ot.verifiers.chain.pieces import build_pieces
from mdsd_ot.verifiers.chain.seqsingle import (
    _kernel,
    _seq_single_cuts_per_variant,
    _seq_single_law_per_variant,
    seq_single_cuts,
    seq_single_law,
)
from testkit import einsum_in_order


def _jit_on() -> bool:
    return seqseries.kernels() is not None


def _routes(fn):
    """``fn()`` with the compiled passes (when available) and on the numpy route."""
    out = [fn()]
    if _jit_on():
        with disabled():
            out.append(fn())
    return out


def _shared(qs, n, kern, single) -> bool:
    """Whether :func:`seq_single_cuts` takes the shared pass (S among the heavy slots) and the
    light part is not empty (some piece on a light slot)."""
    heavy, tau, _, _ = seqseries.choose_plan(qs, n, np.bincount(kern.tok, minlength=len(qs)))
    light_pieces = ~np.isin(kern.tok, heavy)
    return bool(np.isin(single, heavy).all() and tau > 0 and light_pieces.any())


def _small_row(rng: np.random.Generator, V: int, n: int, s: int):
    """q with a few small slots (a light part) and a kernel whose pairs reach every slot; S
    the s heaviest slots."""
    qs = rng.dirichlet(np.full(V, 0.8))
    qs[np.argsort(qs)[:3]] *= 0.01
    qs = qs / qs.sum()
    x = np.concatenate([np.arange(V - 1), rng.integers(0, V - 1, 6)])
    y = np.minimum(x + 1 + rng.integers(0, 3, len(x)), V - 1)
    kern = build_pieces(
        qs, x, y, rng.random(len(x)) * qs[x] * 0.3, rng.random(len(x)) * qs[y] * 0.3
    )
    single = np.sort(np.argsort(-qs, kind="stable")[:s])
    return qs, kern, single


# light=True: the heavy tokens capped at n + 1 (monkeypatched
# ``_M_MAX``), so that light slots remain at these small V (the cost model alone makes every
# token heavy there, which is cheapest); light=False: choose_plan's own choice, all heavy at
# V = 7 (no light part; the subsets, λ and the exact-zero rule)
SMALL = [(3, 8, True), (4, 10, True), (5, 7, True), (5, 7, False)]


@pytest.mark.parametrize("s", [1, 2, 3])
@pytest.mark.parametrize(("n", "V", "light"), SMALL)
def test_shared_pass_equals_the_exact_law_within_its_bound(n, V, light, s, monkeypatch):
    if light:
        monkeypatch.setattr(seqseries, "_M_MAX", n + 1)
    _check_exact(n, V, s, light, trials=2 if n == 3 else 1)


def _check_exact(n: int, V: int, s: int, light: bool, trials: int) -> None:
    rng = np.random.default_rng([n, V, s, 31])
    for _ in range(trials):
        qs, kern, single = _small_row(rng, V, n, s)
        heavy = seqseries.choose_plan(qs, n, np.bincount(kern.tok, minlength=V))[0]
        assert heavy.size >= s
        assert np.isin(single, heavy).all()  # the shared pass
        assert _shared(qs, n, kern, single) == light
        ref = np.array([float(x) for x in _exact_law(qs, n, kern, single)])
        for T, err in _routes(lambda: seq_single_law(qs, n, kern, single)):  # noqa: B023
            assert np.abs(T - ref).sum() <= err  # the certified bound holds
            assert np.abs(T - ref).max() <= 1e-14 and err <= 1e-10


def _big_row(g: np.random.Generator, V: int, P: int, on_top: int):
    """A row with a few heavy slots and P random pairs, ``on_top`` more on the four heaviest
    slots (tokens of many pieces)."""
    q = g.dirichlet(np.full(V, 0.4))
    q[np.argsort(-q)[:3]] += np.array([1.2, 0.5, 0.3])
    q /= q.sum()
    i = g.integers(0, V - 1, P)
    j = np.minimum(i + 1 + g.integers(0, 40, P), V - 1)
    top = np.argsort(-q, kind="stable")[:4]
    hx = top[g.integers(0, 4, on_top)]
    hy = np.minimum(hx + 1 + g.integers(0, 40, on_top), V - 1)
    x, y = np.concatenate([i, hx]), np.concatenate([j, hy])
    keep = x < y
    x, y = x[keep], y[keep]
    a = g.random(len(x)) * q[x] * 0.4 / (1 + np.isin(x, top) * on_top**0.5)
    b = g.random(len(x)) * q[y] * 0.4
    a[::7] = 0.0
    return q, build_pieces(q, x, y, a, b)


BIG = [(V, P, n, s) for V, P in ((300, 2000), (3000, 30000)) for n in (3, 4, 5) for s in (1, 2, 3)]


@pytest.mark.parametrize("case", BIG, ids=lambda c: "-".join(map(str, c)))
def test_shared_pass_against_the_per_variant_route_and_numpy(case):
    """Against one series per subset (within both bounds, 1e-14 per slot), and the compiled
    pass against the numpy route: the cut bounds bitwise, Φ bitwise where numpy's einsum sums
    in order, else within the bound.  V = 3,000 crosses chunks of 8,192 pieces (P > 8192
    outside S) and the heaviest slots hold hundreds of pieces each."""
    V, P, n, s = case
    g = np.random.default_rng([V, P, n, s])
    q, kern = _big_row(g, V, P, 600 if V > 1000 else 60)
    single = np.sort(np.argsort(-q, kind="stable")[:s])
    assert _shared(q, n, kern, single)
    outside = int((~np.isin(kern.tok, single)).sum())
    if V > 1000:
        assert outside > 2 * 8192 and np.diff(kern.start)[single].min() >= 100

    def both():
        return seq_single_law(q, n, kern, single), _seq_single_law_per_variant(q, n, kern, single)

    res = _routes(both)
    for (T, err), (T0, err0) in res:
        assert np.abs(T - T0).sum() <= err + err0
        assert np.abs(T - T0).max() <= 1e-14 and err <= 1e-6
        assert abs(T.sum() - 1.0) <= 1e-12
    if len(res) == 2:
        (F1, B1), (F0, B0) = _routes(lambda: seq_single_cuts(q, n, kern, single))
        assert np.array_equal(B1, B0)  # the bound, tolerance 0
        assert np.all(np.abs(F1 - F0) <= B0 + B1)
        (T1, e1), (T0, e0) = res[0][0], res[1][0]
        assert e1 == e0 and np.abs(T1 - T0).sum() <= e0
        if einsum_in_order():
            assert np.array_equal(F1, F0) and np.array_equal(T1, T0)


def test_a_light_slot_in_s_takes_the_per_variant_route():
    """A slot of S outside the heavy set: the light part is not shared, and seq_single_cuts is
    the per-variant route (bitwise)."""
    g = np.random.default_rng(4)
    q, kern = _big_row(g, 300, 2000, 60)
    heavy = seqseries.choose_plan(q, 3)[0]
    light = np.setdiff1d(np.unique(kern.tok), heavy)
    single = np.sort(np.array([np.argmax(q), light[0]]))
    mine = np.isin(kern.tok, single)
    rest = _kernel(kern.tok[~mine], kern.prob[~mine], len(q))
    low = np.array([[False, False], [True, False], [False, True], [True, True]])
    assert seqseries.seq_series_subsets(q, 3, rest, single, low) is None

    def both():
        return seq_single_cuts(q, 3, kern, single), _seq_single_cuts_per_variant(q, 3, kern, single)

    for (F, B), (F0, B0) in _routes(both):
        assert np.array_equal(F, F0) and np.array_equal(B, B0)


def test_one_subset_is_seq_series_cuts():
    """No slot in S: the one row of seq_series_subsets is seq_series_cuts, bitwise."""
    g = np.random.default_rng(8)
    q, kern = _big_row(g, 300, 2000, 60)
    none = np.empty(0, np.int64)

    def both():
        F, B = seqseries.seq_series_subsets(q, 4, kern, none, np.zeros((1, 0), bool))
        return (F, B), seqseries.seq_series_cuts(q, 4, kern)

    for (F, B), (F0, B0) in _routes(both):
        assert np.array_equal(F[0], F0) and np.array_equal(B[0], B0)
