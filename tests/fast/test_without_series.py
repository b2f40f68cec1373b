"""Q on every prefix for sequential sampling without replacement (mdsd_ot.fast.without, .series).

The certified bound of :func:`prefix_Q_without` must hold against exact values (enumeration of
the draft law in Fractions, the exact O(V^(n-1)) recursion), including when the Taylor series
is deliberately truncated early, and it must be small (<= 1e-10) on realistic inputs, so that
the T7 prefix scan gives alpha* within 1e-10.  T12: the sequential law, not e_n / e_n.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from oracles import exact_prefix_Q_without

from mdsd_ot.drafts import WithoutReplacement
from mdsd_ot.fast import series as W
from mdsd_ot.fast.without import N_MAX, prefix_Q_without, prefix_Q_without_n2
from mdsd_ot.synthetic import synthetic_batch, synthetic_pair
from testkit import SYNC_OPS, torch_spy


def _q(rng: np.random.Generator, V: int, kind: int) -> np.ndarray:
    """Seeded test distributions: spread, flat, peaked, ties, zeros, masses near 1e-12."""
    if kind == 0:
        q = rng.dirichlet(np.full(V, 0.3))
    elif kind == 1:
        q = rng.dirichlet(np.full(V, 5.0))
    elif kind == 2:  # one token with almost all the mass: d(D) = T - q(D) tiny
        q = rng.dirichlet(np.ones(V)) * 1e-7
        q[rng.integers(V)] = 1.0
    elif kind == 3:  # ties and zeros
        q = np.ones(V)
        q[rng.random(V) < 0.3] = 0.0
        q[:4] = 1.0
    elif kind == 4:  # Zipf-like
        q = np.exp(-rng.uniform(1, 3) * np.log1p(rng.permutation(V)))
    else:  # a 1e-12 mass and a zero
        q = rng.dirichlet(np.full(V, 0.7))
        q[0], q[-1] = 1e-12, 0.0
    return q / q.sum()


def _fr(Q) -> list[Fraction]:
    return [Fraction(float(v)) for v in Q]


# ------------------------------------------------------------------------------------------------
# exactness against independent references
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_matches_enumeration_in_fractions(n):
    """vs drafts.WithoutReplacement(q, n).Q(prefix, exact=True): |error| <= err_bound."""
    rng = np.random.default_rng(100 + n)
    for trial in range(12):
        V = int(rng.integers(n, 8))
        q = _q(rng, V, trial % 6)
        if np.count_nonzero(q) < n:
            continue
        law = WithoutReplacement(q, n)
        Q, err = prefix_Q_without(law.q, n)  # the float vector the law itself uses
        exact = [law.Q(list(range(k)), exact=True) for k in range(V + 1)]
        actual = max(abs(a - b) for a, b in zip(_fr(Q), exact, strict=True))
        assert actual <= err, (n, V, float(actual), err)
        assert err <= 1e-12


@pytest.mark.parametrize("n", [3, 4])
def test_matches_exact_recursion_fractions(n):
    """vs the positive subset recursion in Fractions (V = 14): |error| <= err_bound."""
    rng = np.random.default_rng(7 + n)
    for kind in range(6):
        q = _q(rng, 14, kind)
        exact = exact_prefix_Q_without(q, n, exact=True)
        Q, err = prefix_Q_without(q, n)
        actual = max(abs(a - b) for a, b in zip(_fr(Q), exact, strict=True))
        assert actual <= err, (kind, float(actual), err)


def test_exact_reference_equals_enumeration():
    """The reference itself (Fractions) equals enumeration exactly, n = 2..4 (and T12)."""
    rng = np.random.default_rng(3)
    for n in (2, 3, 4):
        q = [Fraction(int(x), 60) for x in rng.multinomial(60 - 6, np.ones(6) / 6) + 1]
        law = WithoutReplacement(q, n)
        ref = exact_prefix_Q_without(q, n)
        assert list(ref) == [law.Q(list(range(k)), exact=True) for k in range(7)]
    assert exact_prefix_Q_without(["1/2", "3/10", "1/5"], 2)[2] == Fraction(18, 35)


def test_float_reference_matches_fractions():
    """The vectorised float reference (n = 3, 4) agrees with Fractions to 1e-15."""
    rng = np.random.default_rng(5)
    for n in (3, 4):
        for kind in (0, 2, 4):
            q = _q(rng, 14, kind)
            ex = exact_prefix_Q_without(q, n, exact=True)
            fl = exact_prefix_Q_without(q, n)
            assert max(abs(float(a - Fraction(b))) for a, b in zip(ex, fl, strict=True)) < 1e-15


def _vs_reference(V: int, n: int, seed: int) -> tuple[float, float]:
    p, q = synthetic_pair(V, 0.7, seed, noise=1.0)
    qs = q[np.argsort(p / q)]
    ref = exact_prefix_Q_without(qs, n)  # float reference: error ~1e-16 (positive terms)
    Q, err = prefix_Q_without(qs, n)
    return float(np.abs(Q - ref).max()), err


@pytest.mark.parametrize(("V", "n"), [(400, 3), (150, 4)])
def test_matches_reference_realistic(V, n):
    """vs the O(V^(n-1)) reference on realistic inputs; 1e-14 allows the reference's rounding."""
    actual, err = _vs_reference(V, n, seed=V + n)
    assert actual <= err + 1e-14
    assert err <= 1e-12


@pytest.mark.slow
@pytest.mark.parametrize(("V", "n"), [(2000, 3), (2000, 4)])
def test_matches_reference_V2000(V, n):
    """The issue's V = 2,000 check (the n = 4 reference is O(V^3): about a minute)."""
    actual, err = _vs_reference(V, n, seed=11)
    assert actual <= err + 1e-14
    assert err <= 1e-12


def test_n2_closed_form_vs_series():
    """n = 2: closed form (docs/reference.md) and the general series method agree within both bounds."""
    rng = np.random.default_rng(2)
    for kind in range(6):
        q = _q(rng, 300, kind)
        Qc, ec = prefix_Q_without_n2(q)
        Qs, es = prefix_Q_without_n2(q, series=True)
        assert float(np.abs(Qc - Qs).max()) <= ec + es
        assert np.array_equal(prefix_Q_without(q, 2)[0], Qc)


@pytest.mark.parametrize("n", [5, 6, 7, 8])
def test_large_n_vs_reference(n):
    """n up to 8 (N_MAX): vs the generic recursion (floats, V = 11; Fractions for n = 5)."""
    assert N_MAX == 8
    rng = np.random.default_rng(n)
    for kind in (0, 2, 4):
        q = _q(rng, 11, kind)
        ref = exact_prefix_Q_without(q, n, exact=(n == 5))
        Q, err = prefix_Q_without(q, n)
        actual = max(abs(a - Fraction(b)) for a, b in zip(_fr(Q), ref, strict=True))
        slack = 0 if n == 5 else 1e-15  # the float recursion's own rounding
        assert float(actual) <= err + slack
        assert err <= 1e-11


# ------------------------------------------------------------------------------------------------
# the bound is rigorous: force early truncation, the bound must still cover the error
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4])
def test_truncation_bound_covers_forced_small_K(n):
    """With K and the heavy count forced small, the error is large and the bound covers it
    (and is not vacuous: within 1e4 x the error when the error is visible; the light-token
    coefficients are bounded crudely, c_{l,k} <= pi_1^l l^k / (l! k!), which costs a factor up
    to ~1e3 here, i.e. one or two extra Taylor terms in the automatic choice of K)."""
    rng = np.random.default_rng(40 + n)
    seen_large = 0
    for trial in range(10):
        V = int(rng.integers(12, 30))
        q = _q(rng, V, trial % 6)
        if np.count_nonzero(q) < n:
            continue
        ref = exact_prefix_Q_without(q, n, exact=True) if n == 2 else exact_prefix_Q_without(q, n)
        ref = np.array([float(v) for v in ref])
        for m in (n - 1, n + 1):
            for K in (n - 1, n + 1, n + 3):
                Q, err = W.series(q[None, :], n, np, plan=(min(m, V), K))
                Q, err = Q[0], float(err[0])
                actual = float(np.abs(Q - ref).max())
                assert actual <= err + 1e-15, (trial, m, K, actual, err)
                if actual > 1e-8:
                    seen_large += 1
                    assert err <= 1e4 * actual
    assert seen_large > 0  # the forced truncations did produce visible errors


# ------------------------------------------------------------------------------------------------
# realistic inputs: small bound, fast path sane
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [3, 4])
def test_bound_small_on_realistic(n):
    """Softmax of Zipf-like logits at temperature 0.7, V = 32,000: bound <= 1e-10 (in fact
    ~1e-13), Q non-decreasing along the prefixes within the bound."""
    P, Qd = synthetic_batch(2, 32_000, 0.7, 9, noise=1.0)
    qs = np.take_along_axis(Qd, np.argsort(P / Qd, axis=1), axis=1)
    Q, err = prefix_Q_without(qs, n)
    assert Q.shape == (2, 32_001) and err.shape == (2,)
    assert np.all(err <= 1e-10)
    assert np.all(np.diff(Q, axis=1) >= -2 * err[:, None])
    assert np.all(Q[:, 0] == 0) and np.allclose(Q[:, -1], 1.0, atol=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_bound_small_at_152k(n):
    """V = 152,064 (the largest vocabulary of the issue), n = 3..8: bound <= 1e-10."""
    p, q = synthetic_pair(152_064, 0.7, 0, noise=1.0)
    Q, err = prefix_Q_without(q[np.argsort(p / q)], n)
    assert err <= 1e-10
    assert float(Q[-1]) == 1.0


# ------------------------------------------------------------------------------------------------
# special inputs
# ------------------------------------------------------------------------------------------------
def test_zeros_and_support_equal_to_n():
    """Zero masses leave Q unchanged; with n = support size, Q is 0 until the whole support is
    in the prefix, then exactly 1."""
    q = np.array([0.0, 0.3, 0.0, 0.5, 0.0, 0.2, 0.0])
    for n in (2, 3):
        Q, err = prefix_Q_without(q, n)
        ref = exact_prefix_Q_without(q, n, exact=True)
        assert max(abs(a - b) for a, b in zip(_fr(Q), ref, strict=True)) <= err
        assert Q[1] == Q[0] and Q[3] == Q[2] and Q[5] == Q[4] and Q[-1] == Q[-2]
    Q3, err3 = prefix_Q_without(q, 3)
    assert Q3.tolist() == [0.0] * 6 + [1.0, 1.0] and err3 == 0.0


def test_unnormalised_and_float32_and_batch():
    """The law is that of q / q.sum(); float32 is computed in float64; rows are independent."""
    rng = np.random.default_rng(8)
    q = _q(rng, 40, 0)
    Q, err = prefix_Q_without(q, 3)
    Q7, err7 = prefix_Q_without(7.0 * q, 3)
    assert float(np.abs(Q - Q7).max()) <= err + err7
    q32 = q.astype(np.float32)
    Q32, err32 = prefix_Q_without(q32, 3)
    ref = exact_prefix_Q_without(q32.astype(np.float64), 3)
    assert Q32.dtype == np.float64 and float(np.abs(Q32 - ref).max()) <= err32 + 1e-15
    qb = np.stack([q, _q(rng, 40, 4)])
    Qb, eb = prefix_Q_without(qb, 4)
    for b in range(2):
        Qr, er = prefix_Q_without(qb[b], 4)
        assert np.array_equal(Qb[b], Qr) and eb[b] == er


def test_T12_counterexample_sequential():
    """T12: sequentially Q({0,1}) = 18/35 for q = (0.5, 0.3, 0.2), n = 2, not 15/31."""
    for n2 in (prefix_Q_without, lambda q, n: prefix_Q_without_n2(q, series=True)):
        Q, err = n2([0.5, 0.3, 0.2], 2)
        assert abs(Fraction(float(Q[2])) - Fraction(18, 35)) <= err
        assert abs(float(Q[2]) - 15 / 31) > 0.03


def test_torch_equals_numpy():
    """torch float64 gives the numpy values within 1e-12 (and the same bound)."""
    torch = pytest.importorskip("torch")
    P, Qd = synthetic_batch(2, 3000, 0.7, 4)
    qs = np.take_along_axis(Qd, np.argsort(P / Qd, axis=1), axis=1)
    for n in (2, 3, 4):
        Qn, en = prefix_Q_without(qs, n)
        Qt, et = prefix_Q_without(torch.from_numpy(qs), n)
        assert isinstance(Qt, torch.Tensor) and Qt.dtype == torch.float64
        assert float(np.abs(Qt.numpy() - Qn).max()) <= 1e-12
        assert np.allclose(et, en, rtol=0.05)  # totals: extended precision vs double-double


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_torch_batched_no_host_sync(n):
    """Issue 5: on tensors the whole (B, V) batch runs without reading data on the host; Q and
    the per-row bound stay on the input's device (float64), and equal the numpy values."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(20 + n)
    qs = np.stack([_q(rng, 300, kind) for kind in range(6)])  # spread, flat, peaked, zeros, ...
    Qn, en = prefix_Q_without(qs, n)
    qt = torch.from_numpy(qs)
    prefix_Q_without(qt, n)  # first call: device constants are built and cached
    with torch_spy() as spy:
        Qt, et = prefix_Q_without(qt, n)
    assert not spy.ops & SYNC_OPS, spy.ops & SYNC_OPS
    assert n < 3 or "aten.topk" in spy.ops  # the heavy tokens are found on the device
    assert isinstance(et, torch.Tensor) and et.shape == (6,) and et.device == qt.device
    assert Qt.dtype == torch.float64 and Qt.shape == (6, 301)
    assert float(np.abs(Qt.numpy() - Qn).max()) <= 1e-12  # issue 5: float64 within 1e-12
    # row 3 has ties: torch.topk may put other tokens of equal mass in the heavy set (same Q,
    # another rounding path), so only its bound may differ (here by ~10%); numpy sums the
    # totals in extended precision, torch in double-double: bounds within 5% otherwise
    other = [0, 1, 2, 4, 5]
    assert np.allclose(et.numpy()[other], en[other], rtol=0.05, atol=0)
    assert 0.5 <= float(et[3]) / en[3] <= 2.0


@pytest.mark.parametrize(("V", "n"), [(300, 3), (120, 4)])
def test_torch_bound_covers_reference(V, n):
    """The on-device bound (per row) covers the error against the O(V^(n-1)) reference, for
    float64 and float32 tensors (float32 rows are computed in float64: the law of the rounded
    q).  1e-14 allows the reference's own rounding."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(V + n)
    rows = [_q(rng, V, kind) for kind in (0, 2, 4, 5)]
    rows.append(synthetic_pair(V, 0.7, 3, noise=1.0)[1])
    for dtype in (torch.float64, torch.float32):
        qt = torch.tensor(np.stack(rows), dtype=dtype)
        Q, err = prefix_Q_without(qt, n)
        assert err.shape == (len(rows),) and err.dtype == torch.float64
        for b in range(len(rows)):
            ref = exact_prefix_Q_without(qt[b].double().numpy(), n)
            actual = float(np.abs(Q[b].numpy() - ref).max())
            assert actual <= float(err[b]) + 1e-14, (dtype, b, actual, float(err[b]))
            assert float(err[b]) <= 1e-11


def test_static_plans_converge_for_every_q():
    """The plan depends on n only and keeps m >= 3n - 4 heavy tokens, so the tail ratio is
    <= 1/2 for every q (module docstring); a slowly decaying q (q_j ~ 1/j, the light tokens as
    heavy as possible relative to delta) still gets a finite bound that covers the error."""
    assert set(W.PLANS) >= set(range(3, N_MAX + 1))
    for n, (m, K) in W.PLANS.items():
        assert m >= 3 * n - 4 and K >= n - 1
    for n, V in ((3, 400), (4, 150)):
        q = 1.0 / np.arange(1, V + 1)
        q /= q.sum()
        Q, err = prefix_Q_without(q, n)
        ref = exact_prefix_Q_without(q, n)
        assert np.isfinite(err) and float(np.abs(Q - ref).max()) <= err + 1e-14


def test_bad_input():
    """ValueError naming the argument (and the row) and the fix."""
    with pytest.raises(ValueError, match="row 1.*only 2 have positive mass"):
        prefix_Q_without(np.array([[0.5, 0.3, 0.2], [0.5, 0.5, 0.0]]), 3)
    with pytest.raises(ValueError, match="q_sorted: entries must be >= 0"):
        prefix_Q_without([0.5, -0.1, 0.6], 2)
    with pytest.raises(ValueError, match="finite"):
        prefix_Q_without([0.5, np.nan, 0.5], 2)
    with pytest.raises(ValueError, match="n <= 8"):
        prefix_Q_without(np.full(10, 0.1), 9)
    with pytest.raises(ValueError, match="n: the number of drafts"):
        prefix_Q_without([0.5, 0.5], 0)
    with pytest.raises(ValueError, match="shape"):
        prefix_Q_without(np.full((1, 2, 2), 0.25), 2)
    with pytest.raises(ValueError, match="only 1 have positive mass"):
        exact_prefix_Q_without([1.0, 0.0], 2)


def _abs_light_series(u: list[Fraction], n: int, K: int) -> list[list[Fraction]]:
    """Coefficients [l][k] (l < n, k <= K) of exp(sum_j pi_j |kappa_j|(z) s^j / j!), exactly."""
    from mdsd_ot.fast._moments import stirling2

    pis = [sum((x**j for x in u), Fraction(0)) for j in range(K + 1)]
    # F_j(z) = pi_j |kappa_j|(z) / j!, a polynomial in z truncated at degree n - 1
    F = [[Fraction(0)] * n for _ in range(K + 1)]
    for j in range(1, K + 1):
        for i in range(1, min(j, n - 1) + 1):
            F[j][i] = pis[j] * math.factorial(i - 1) * stirling2(j, i) / math.factorial(j)
    E = [[Fraction(0)] * n for _ in range(K + 1)]
    E[0][0] = Fraction(1)
    for k in range(1, K + 1):  # k E_k = sum_j j F_j E_{k-j}
        for j in range(1, k + 1):
            for a in range(n):
                for b in range(n - a):
                    E[k][a + b] += j * F[j][a] * E[k - j][b] / k
    return [[E[k][l] for k in range(K + 1)] for l in range(n)]


def test_rounding_majorants_of_the_abs_series():
    """The |kappa| series behind the rounding bound (light factor prod_y (1 - z(e^{u_y s} - 1))^-1)
    is at most pi_1^l l! S(k,l)/k! coefficientwise (the factor ``series_eval`` uses; h_l(u) <=
    pi_1^l) and at most binom(pi_1 + l - 1, l) l! S(k,l)/k! (the chain verifier's), for light
    masses u <= 1 with pi_1 below and above 1; exact arithmetic."""
    from mdsd_ot.fast._moments import stirling2

    n, K = 4, 8
    rng = np.random.default_rng(3)
    for u in ([Fraction(1, 50)], [Fraction(1, 3), Fraction(1, 7)],
              [Fraction(1), Fraction(1, 2), Fraction(1, 3), Fraction(3, 4)],
              [Fraction(int(x * 1000) + 1, 1001) for x in rng.random(6)]):  # fmt: skip
        pi1 = sum(u, Fraction(0))
        coef = _abs_light_series(u, n, K)
        for l in range(1, n):
            binom = Fraction(1)
            for i in range(l):
                binom = binom * (pi1 + i) / (i + 1)
            for k in range(l, K + 1):
                w = Fraction(math.factorial(l) * stirling2(k, l), math.factorial(k))
                assert 0 <= coef[l][k] <= min(pi1**l, binom) * w, (u, l, k)
