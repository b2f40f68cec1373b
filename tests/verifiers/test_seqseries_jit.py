"""The compiled passes of the sequential series (mdsd_ot.verifiers.chain.seqseries, numba).

What is compared bitwise (tolerance 0): the heavy moments J (the incremental compiled pass
against numpy's batched one), and the law's error bound (it does not depend on the one sum whose
order numpy does not fix).  The law itself is compared within 1e-14 per slot and within the
reported bound in total; bitwise as well where numpy's ``einsum("kc,ck->c")`` is observed to
sum in order (:func:`testkit.einsum_in_order`; it is on numpy 2.x on x86-64).  The compiled law is
checked against the exact law in Fractions (Lemma 9), and the ``seq-swap`` plan against the
numpy route's.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from testkit import einsum_in_order

pytest.importorskip("numba", reason="the jit extra is not installed")

from mdsd_ot import drafts  # noqa: E402
from mdsd_ot.fast._fused import disabled  # noqa: E402
from mdsd_ot.synthetic import synthetic_pair  # noqa: E402
from mdsd_ot.verifiers.chain import _cutjit, build_plan, pieces, seqseries  # noqa: E402
from mdsd_ot.verifiers.chain.cutlaw import blocked_cumsum, cumsum_depth, total_mass  # noqa: E402
from mdsd_ot.verifiers.chain.exact import ExactPlan, select_law  # noqa: E402

pytestmark = pytest.mark.skipif(
    not _cutjit.enabled() or seqseries.kernels() is None, reason="compiled passes disabled"
)


def _same(a, b) -> bool:
    """Bitwise equality of two arrays (values, dtype and shape; tolerance 0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def _q(g: np.random.Generator, V: int, kind: str) -> np.ndarray:
    q = g.dirichlet(np.full(V, 0.4))
    if kind == "ties":
        q[: V // 2] = q[0]
    elif kind == "zeros":
        q[-max(1, V // 5) :] = 0.0
    elif kind == "heavy":
        q[g.integers(V)] += 1.5
    return q / q.sum()


def _kernel(g: np.random.Generator, q: np.ndarray, P: int, reach: int, on_top: int):
    """A random piece kernel: P pairs x < y among the live tokens, and ``on_top`` more whose
    lower end is one of the four heaviest tokens (heavy tokens split in many pieces)."""
    live = np.flatnonzero(q > 0)
    i = g.integers(0, len(live) - 1, P)
    j = np.minimum(i + 1 + g.integers(0, reach, P), len(live) - 1)
    x, y = live[i], live[j]
    top = np.argsort(-q, kind="stable")[:4]
    hx = top[g.integers(0, len(top), on_top)]
    hy = np.minimum(hx + 1 + g.integers(0, reach, on_top), len(q) - 1)
    x, y = np.concatenate([x, hx]), np.concatenate([y, hy])
    keep = (x < y) & (q[y] > 0)
    x, y = x[keep], y[keep]
    a = g.random(len(x)) * q[x] * 0.4 / (1 + (np.isin(x, top) * on_top) ** 0.5)
    b = g.random(len(x)) * q[y] * 0.4
    a[::5] = 0.0  # zero masses
    return pieces.build_pieces(q, x, y, a, b)


# -- the summation orders the bound counts ----------------------------------------------------


def _run_depth(d: np.ndarray) -> np.ndarray:
    """Rounding depths of a plain running sum whose items have depths ``d`` (last axis):
    ``s_0 = x_0``, ``s_i = s_{i-1} + x_i`` has depth ``max(depth(s_{i-1}), d_i) + 1``."""
    i = np.arange(d.shape[-1])
    e = d - i + 1
    e[..., 0] = d[..., 0]
    return np.maximum.accumulate(e, axis=-1) + i


def _blocked_depth(d: np.ndarray) -> np.ndarray:
    """Depths of ``blocked_cumsum``'s outputs (1-d), its tree followed step by step: running
    sums in blocks of 64 (the padding included), the offsets from the blocked sum of the block
    totals, one addition of the offset (counted also where it is 0)."""
    N = len(d)
    if N <= 64:
        return _run_depth(d)
    nb = -(-N // 64)
    pad = np.zeros(nb * 64, dtype=np.int64)
    pad[:N] = d
    loc = _run_depth(pad.reshape(nb, 64))
    off = np.zeros(nb, dtype=np.int64)
    off[1:] = _blocked_depth(loc[:, -1])[:-1]
    return (np.maximum(loc, off[:, None]) + 1).reshape(-1)[:N]


def _power_sum_tree_depth(P: int, chunk: int) -> int:
    """The largest depth of :func:`seqseries.power_sums`' outputs: blocked sums per chunk, plus
    the carry (the previous chunk's last output; 0, exact but counted, in the first chunk)."""
    worst, carry = 0, 0
    for c0 in range(0, P, chunk):
        loc = _blocked_depth(np.zeros(min(chunk, P - c0), dtype=np.int64))
        out = np.maximum(loc, carry) + 1
        worst, carry = max(worst, int(out.max())), int(out[-1])
    return worst


SIZES = [1, 2, 63, 64, 65, 127, 128, 129, 4095, 4096, 4097, 4161, 8191, 8192, 8193, 8257,
         16384, 16385, 3 * 8192 + 1, 100_000, 315_000]  # fmt: skip


def test_cumsum_depth_is_the_blocked_tree_depth():
    """``cumsum_depth`` bounds ``blocked_cumsum``'s tree, step by step (the base of the bound's
    depths; sizes about multiples of 64 and of 64**2)."""
    for N in SIZES:
        assert cumsum_depth(N) >= int(_blocked_depth(np.zeros(N, dtype=np.int64)).max()), N


@pytest.mark.parametrize("chunk", [64, 128, 8192])
def test_power_sum_depth_bounds_its_tree(chunk):
    """The depth the bound counts for the power sums is at least that of their summation tree,
    for P about multiples of 64 and of the chunk (and 8191 + P / 8192, the plain running sum's,
    is far larger: what the bound undercounted before)."""
    sizes = sorted(set(SIZES + [k * chunk + r for k in (1, 2, 5) for r in (-1, 0, 1, 65)]))
    for P in sizes:
        assert seqseries.power_sum_depth(P, chunk) >= _power_sum_tree_depth(P, chunk), P
    assert seqseries.power_sum_depth(315_000) < 200 < 8191 + 315_000 // 8192


@pytest.mark.parametrize("N, chunk", [(5, 8192), (65, 8192), (8192, 8192), (8193, 8192),
                                      (3 * 8192 + 700, 8192), (1000, 128), (4161, 4096)])  # fmt: skip
def test_power_sums_are_blocked_per_chunk(N, chunk):
    """The power sums' order: ``blocked_cumsum`` within each chunk plus the carry, bitwise
    (tolerance 0) on data longer than one chunk, numpy's and the compiled streaming sums."""
    g = np.random.default_rng([N, chunk])
    x = g.random((7, N)) * 10.0 ** g.integers(-8, 8, (7, N))
    ref = np.empty_like(x)
    carry = np.zeros(7)
    for c0 in range(0, N, chunk):
        ref[:, c0 : c0 + chunk] = blocked_cumsum(x[:, c0 : c0 + chunk]) + carry[:, None]
        carry = ref[:, min(N, c0 + chunk) - 1].copy()
    out = seqseries.power_sums(x, chunk)
    assert _same(out, ref)
    assert _same(out[:, :chunk], blocked_cumsum(x[:, :chunk]))  # the first chunk: no carry
    comp = np.empty_like(x)
    seqseries.kernels()["power_sums"](x, chunk, comp)
    assert _same(comp, ref)  # the compiled pass's streaming blocked sum


def test_heavy_configs_in_double_double():
    """W: each heavy token's column the double-double (Sum2) running sum of its own pieces'
    masses, held between its pieces; numpy's and the compiled pass's bitwise, and within
    u + γ_{n_t-1}^2 relative of the exact sums (a plain running sum over 9,000 pieces is not)."""
    g = np.random.default_rng(3)
    H, m = 20_000, 6
    th = np.minimum(g.integers(0, 2 * m, H), m - 1)  # token m - 1: about half the pieces
    dh = g.random(H) * 10.0 ** g.integers(-9, -3, H)
    W1, most = seqseries.heavy_configs(dh, th, m)
    with disabled():
        W0, most0 = seqseries.heavy_configs(dh, th, m)
    assert _same(W1, W0) and most == most0 == max(np.count_nonzero(th == t) for t in range(m))
    assert W1.shape == (H + 1, m) and np.all(W1[0] == 0)
    tol = Fr(2.0**-53) + Fr(seqseries.gamma(most)) ** 2
    for t in (0, m - 1):
        at = np.flatnonzero(th == t)
        exact = np.cumsum([Fr(float(x)) for x in dh[at]])
        dev = [abs(Fr(float(w)) - e) / e for w, e in zip(W1[at + 1, t], exact, strict=True)]
        assert max(dev) <= tol
        last = np.maximum.accumulate(np.where(th == t, np.arange(H), -1))  # held between
        assert _same(W1[1:, t], np.where(last >= 0, W1[last + 1, t], 0.0))
    plain = np.cumsum(dh[th == m - 1])
    assert not _same(W1[np.flatnonzero(th == m - 1) + 1, m - 1], plain)


def test_heavy_mass_depth():
    """The heavy masses' error in J: about 2(n - 1) + (K + n - 1)(n + 1) over u, whatever the
    mass outside the heavy tokens (the denominators are summed, never subtracted); none
    without heavy pieces."""
    for K, n, m in ((20, 4, 12), (12, 3, 40), (30, 5, 8)):
        c = 2 * (n - 1) + (K + n - 1) * (n + 1)
        D = seqseries.heavy_mass_depth(21_000, K, n, m)
        assert c <= D <= 1.01 * c + 2
    assert seqseries.heavy_mass_depth(0, 10, 3, 5) == 0.0


def test_rest_masses_and_subset_bases_are_sums_not_differences():
    """delta_a and b(D) = T - q(D) within u of the exact values (Fractions) on a draft within
    1e-20 of a point mass, where T - q_max in floating point is 0."""
    qs = np.array([3e-21, 1.0, 5e-21, 2e-21])
    assert float(np.sum(qs)) - 1.0 == 0.0  # the subtraction has no digit left
    exact = [Fr(float(x)) for x in qs]
    top = np.array([1, 2, 0, 3])
    delta = seqseries.rest_masses(qs, top, 3)
    for a in range(3):
        want = sum(exact) - sum(exact[int(i)] for i in top[:a])
        assert abs(Fr(float(delta[a])) - want) <= Fr(2.0**-53) * want
    heavy = np.array([1, 2])  # slots 0 and 3 light
    L_hi, L_lo = total_mass(np.where(np.isin(np.arange(4), heavy), 0.0, qs))
    b = seqseries.subset_bases(qs[heavy], L_hi, L_lo, 3)
    sets = [(), (0,), (1,), (0, 1)]  # seqseries._flat_layers(2, 3) order
    assert len(b) == len(sets)
    for val, D in zip(b, sets, strict=True):
        want = sum(exact) - sum(exact[int(heavy[i])] for i in D)
        assert abs(Fr(float(val)) - want) <= Fr(2.0**-52) * want


def test_series_bound_near_a_point_mass():
    """The sequential law of one piece per token, 1 - q_max from 1e-8 to 1e-300: within 1e-15 of
    the law from WithoutReplacement.Q, with a bound below 1e-11 (it was 0.06 at 1e-12, and
    choose_plan raised a math domain error from 1e-16 on)."""
    g = np.random.default_rng(4)
    for rest, n in ((1e-8, 3), (1e-12, 3), (1e-16, 4), (1e-20, 3), (1e-300, 3)):
        qs = g.random(8)
        qs[-1] = 0.0
        qs = qs / qs.sum() * rest
        qs[-1] = 1.0 - qs.sum()
        T, err = seqseries.seq_series_law(qs, n, pieces.identity_pieces(8))
        law = drafts.WithoutReplacement(qs, n)
        ref = np.diff([float(law.Q(range(k))) for k in range(9)])
        assert np.abs(T - ref).max() <= 1e-15, rest
        assert err <= 1e-11, (rest, err)


# -- the heavy moments -------------------------------------------------------------------------


def test_numpy_sums_the_subsets_in_order():
    """``g.sum(axis=1)`` on a C-ordered (S, N, K+1) array adds the rows one after the other:
    the order the compiled J_a reproduces."""
    g = np.random.default_rng(1)
    for S, N, K1 in ((1, 1, 2), (3, 9, 2), (40, 56, 13), (7, 120, 41), (1, 84, 7)):
        x = g.random((S, N, K1)) * 10.0 ** g.integers(-10, 10, (S, N, K1))
        ref = x[:, 0, :].copy()
        for i in range(1, N):
            ref = ref + x[:, i, :]
        assert _same(x.sum(axis=1), ref)  # tolerance 0


@pytest.mark.parametrize(
    "m, n, K", [(8, 4, 12), (3, 5, 7), (1, 3, 6), (10, 3, 20), (2, 5, 1), (7, 5, 9), (4, 6, 5)]
)
def test_heavy_moments_match_numpy(m, n, K):
    """Configurations one heavy token apart (as seq_series_law makes them), repeated ones (a
    zero step), and rows where every token changes: the same bits as the batched numpy pass."""
    g = np.random.default_rng([m, n, K])
    S = 700
    steps = np.zeros((S - 1, m))
    steps[np.arange(S - 1), g.integers(0, m, S - 1)] = g.random(S - 1) * 1e-3
    steps[::7] = 0.0
    W = np.vstack([np.zeros(m), np.cumsum(steps, axis=0)])
    W[5:9] = g.random((4, m)) * 0.1
    W[20:23] = W[19]
    qh = W.max(axis=0) + 0.01
    above = qh - W
    above[30:40] = g.random((10, m)) * 0.1  # a change above the cut alone: recomputed too
    base = seqseries.subset_bases(qh, 0.3, -(2.0**-95), n)
    T_hi, T_lo = float(base[0]), 0.0
    J1 = seqseries.heavy_moments(W, above, base, T_hi, T_lo, 0.01, K, n)
    with disabled():
        assert seqseries.kernels() is None
        J0 = seqseries.heavy_moments(W, above, base, T_hi, T_lo, 0.01, K, n)
    assert _same(J1, J0)  # tolerance 0
    assert J1[:, 1].max() > 0 and np.all(J1[:, m + 1 :] == 0)  # sizes above m: none


# -- the law -----------------------------------------------------------------------------------


CASES = [
    (V, P, kind, n)
    for V, P in ((3, 2), (7, 12), (60, 400), (2000, 3000), (3000, 14000))
    for kind in ("plain", "ties", "zeros", "heavy")
    for n in (3, 4, 5)
    if n <= V and (V <= 60 or kind != "ties" or n != 5)
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_law_matches_numpy(case):
    """The law and its bound on both routes: the bound bitwise, the law within 1e-14 per slot
    and within the bound in total (bitwise where numpy's einsum sums in order).  The larger
    kernels cross the chunks of 8192 pieces and end on a partial block."""
    V, P, kind, n = case
    g = np.random.default_rng([V, P, len(kind), n])
    q = _q(g, V, kind)
    if (q > 0).sum() < n + 1:
        q[:] = 1.0 / V
    kern = _kernel(g, q, P, 40, min(P, 300))
    T1, e1 = seqseries.seq_series_law(q, n, kern)
    with disabled():
        T0, e0 = seqseries.seq_series_law(q, n, kern)
    assert e1 == e0  # the bound, tolerance 0
    assert np.abs(T1 - T0).max() <= 1e-14 and np.abs(T1 - T0).sum() <= e0
    if einsum_in_order():
        assert _same(T1, T0)
    assert abs(T1.sum() - 1.0) <= 1e-12


def _exact_seq_law(q: np.ndarray, n: int, kern: pieces.PieceKernel) -> list[Fr]:
    """The kernel's law under sequential drafts from q / sum(q) read exactly (Lemma 9, by
    enumeration of the draft tuples; as ``proofs/optimal_checks.check_series_bound``)."""
    V = len(q)
    qq = [Fr(float(v)) for v in q]
    qq = [v / sum(qq, Fr(0)) for v in qq]
    rows: list[dict[int, Fr]] = [{} for _ in range(V)]
    for lev, (k, pr) in enumerate(zip(kern.tok.tolist(), kern.prob.tolist(), strict=True)):
        rows[k][lev] = Fr(pr)
    plan = ExactPlan("seq-swap", n, qq, list(range(V)), rows, [], [], Fr(0), [])
    law = drafts.WithoutReplacement([str(v) for v in qq], n)
    exact = [Fr(0)] * V
    for tup, w in law.joint_items(exact=True).items():
        for k, pr in select_law(plan, tuple(tup)).items():
            exact[k] += w * pr
    return exact


def test_compiled_law_within_its_bound_of_the_exact_law():
    g = np.random.default_rng(23)
    worst = 0.0
    for trial in range(10):
        V, n = int(g.integers(4, 7)), 3 + trial % 2
        q = _q(g, V, ("plain", "heavy", "ties", "zeros")[trial % 4])
        if (q > 0).sum() < n + 1:
            q = g.dirichlet(np.full(V, 0.6))
        kern = _kernel(g, q, int(g.integers(1, 6)), 3, 3 * (trial % 2))
        T, err = seqseries.seq_series_law(q, n, kern)
        dev = sum(abs(Fr(float(u)) - w) for u, w in zip(T, _exact_seq_law(q, n, kern), strict=True))
        assert dev <= Fr(err), (trial, float(dev), err)  # the reported bound, exactly
        worst = max(worst, float(dev))
    assert worst > 0.0  # rounding happened: the comparison is not vacuous


# -- the construction --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 4])
def test_seq_swap_plan_the_same_without_kernels(n):
    p, q = synthetic_pair(2000, 1.0, np.random.default_rng(1), noise=1.0)
    qs = drafts.WithoutReplacement(q, n).q
    with disabled():
        ref = build_plan(p, qs, n, "seq-swap")
    plan = build_plan(p, qs, n, "seq-swap")
    assert plan.construction == ref.construction == "seq-swap"
    assert abs(plan.acceptance - ref.acceptance) <= 1e-12
    assert abs(plan.law_error - ref.law_error) <= 1e-12 * ref.law_error
    assert np.abs(plan.T - ref.T).max() <= 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 4])
def test_seq_swap_plan_at_full_vocabulary(n):
    """V = 152,064 (the synthetic family): the certified law_error stays at most 1e-6 and the
    acceptance within 1e-6 of alpha_star's (by hand: ``-m slow``)."""
    from mdsd_ot.fast import alpha_star

    p, q = synthetic_pair(152064, 1.0, np.random.default_rng(1), noise=1.0)
    plan = build_plan(p, drafts.WithoutReplacement(q, n).q, n, "seq-swap")
    assert plan.law_error <= 1e-6
    assert abs(plan.acceptance - float(alpha_star(p, q, n=n, scheme="without"))) <= 1e-6


@pytest.mark.parametrize("seed", [0, 1])
def test_cut_counts_are_numpys_running_sums(seed):
    """The one compiled pass of the cut counts equals numpy's three cumulative sums bitwise: the
    heavy pieces below each cut, the light masses' running sum (the same additions in order)
    and the tokens' first pieces with mass."""
    g = np.random.default_rng(seed)
    P = 5000
    d = g.random(P) * np.where(g.random(P) < 0.1, 0.0, 1.0)  # some pieces without mass
    v = np.where(g.random(P) < 0.3, 0.0, g.random(P))
    is_h = g.random(P) < 0.05
    seg, light_sum, first = np.empty(P + 1, np.int64), np.empty(P + 1), np.empty(P + 1, np.int64)
    seqseries.kernels()["cut_counts"](is_h.view(np.uint8), d, v, seg, light_sum, first)
    assert _same(seg, np.concatenate([[0], np.cumsum(is_h)]))
    assert _same(light_sum, np.concatenate([[0.0], np.cumsum(np.where(~is_h, d, 0.0))]))
    assert _same(first, np.concatenate([[0], np.cumsum((v == 0) & (d > 0))]))
