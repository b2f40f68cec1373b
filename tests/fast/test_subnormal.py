"""Subnormal draft masses (about 1e-322) against exact α* in Fractions, on every route.

A normal p over a subnormal q overflows p/q to +inf: tokens of different ratios tied with each
other and with the q = 0 tokens, and a law that reads the proportions of those masses (fewer
normal masses than drafts: conditional Poisson, sequential) took an arbitrary order of the tie,
an O(1) error on the sorting and the bucket paths alike.  The sequential series (n >= 3)
returned NaN (1 / d(D) overflowed), conditional Poisson lost its tiny level values (Q(Σ) above 1,
Q off by 2e-6), and the bucket path reported a missing bound as NaN where the sort reports inf.

References are exact: brute-force subset selection in Fractions (``method="subset-exact"``) for
V <= 7, and for V = 6,000 the prefix scan of T7 in exact rationals along the exact ratio order
(masses as integers in units of 2^-1074; the sequential law by the positive recursion of
``oracles.exact_prefix_Q_without``).  Every comparison states its tolerance; rows are seeded.
"""

from __future__ import annotations

import functools
import warnings
from fractions import Fraction

import numpy as np
import pytest
from oracles import exact_prefix_Q_without

import mdsd_ot
from mdsd_ot import drafts as D
from mdsd_ot.fast import _fused, alpha_star, alpha_star_laws, solver
from mdsd_ot.fast.prefix import prefix_Q_conditional_poisson, sort_key
from mdsd_ot.fast.without import prefix_Q_without

UNIT = 5e-324  # 2^-1074, the smallest subnormal
SUBNORMAL = [UNIT, 2 * UNIT, 3e-322, 1e-321, 7.3e-320, 2.2e-315, 1e-310]
LAWS = [
    ("with", 2),
    ("without", 2),
    ("without", 3),
    ("without", 4),
    ("conditional-poisson", 2),
    ("conditional-poisson", 3),
    ("conditional-poisson", 4),
]
TOL = 1e-12  # α* against the exact value (absolute)


def _units(x: float) -> int:
    """A non-negative double as an integer number of 2^-1074 (exact)."""
    f = Fraction(x)
    return f.numerator * (1 << 1074) // f.denominator


def exact_alpha(p: np.ndarray, q: np.ndarray, n: int, scheme: str) -> Fraction:
    """α* of the normalised rows in exact rationals: T7's prefix scan along the exact order.

    Any order of exact ties gives the same minimum (every prefix is a set, and some prefix
    attains the optimum: a level set of p/q, T7).  The masses are integers (units of 2^-1074),
    so the with-replacement and conditional-Poisson laws are integer sums; sequential n = 2 is
    the closed form :math:`Q(H) = \\sum_{i \\in H} q_i (q(H) - q_i) / (S (S - q_i))`, n >= 3 the
    positive recursion of ``oracles.exact_prefix_Q_without`` (a few dozen masses only).
    """
    pk, qk = [_units(x) for x in p.tolist()], [_units(x) for x in q.tolist()]
    SP, SQ = sum(pk), sum(qk)
    tokens = [i for i in range(len(pk)) if pk[i] or qk[i]]  # p = q = 0 changes no P, no Q
    order = sorted(tokens, key=lambda i: (qk[i] == 0, Fraction(pk[i], qk[i]) if qk[i] else 0))
    qs = [qk[i] for i in order]
    if scheme == "with":
        Q = [Fraction(c, SQ) ** n for c in np.cumsum(qs, dtype=object)]
    elif scheme == "conditional-poisson":
        Q = _cp_prefix_units(qs, n)
    elif n == 2:
        c, A, B, Q = 0, Fraction(0), Fraction(0), []
        for x in qs:
            c += x
            if x:
                A += Fraction(x, SQ - x)
                B += Fraction(x * x, SQ - x)
            Q.append((c * A - B) / SQ)
    else:
        Q = list(exact_prefix_Q_without([Fraction(x, SQ) for x in qs], n, exact=True))[1:]
    best, P = Fraction(0), 0
    for i, Qk in zip(order, Q, strict=True):
        P += pk[i]
        best = min(best, Fraction(P, SP) - Qk)
    return 1 + best


def _small_rows() -> list[tuple[np.ndarray, np.ndarray]]:
    """V = 3..7: one or two normal masses in q, the rest mostly subnormal (seeded)."""
    rng = np.random.default_rng(20240611)
    rows = []
    for t in range(18):
        V = int(rng.integers(3, 8))
        q = rng.dirichlet(np.ones(V))
        sub = rng.random(V) < 0.7
        q[sub] = rng.choice(SUBNORMAL, int(sub.sum()))
        q[rng.integers(V)] = 1.0
        p = rng.dirichlet(np.ones(V))
        if t % 3 == 0:
            p[rng.random(V) < 0.3] = 0.0
        rows.append((p / p.sum(), q / q.sum()))
    # the shape of the report (conditional Poisson, n = 2: 0.692 where 0.435 is exact)
    rows.append(
        (np.array([0.1, 0.3, 0.2, 0.25, 0.15]), np.array([1.0, 3e-322, 1e-322, 2e-322, 5e-323]))
    )
    return rows  # fmt: skip


SMALL = _small_rows()


@functools.cache
def _brute(row: int, scheme: str, n: int) -> float | None:
    """Exact α* by brute-force subset selection (Fractions) of small row ``row``, or None when q
    has fewer than n positive masses (the distinct-draft laws refuse it)."""
    p, q = SMALL[row]
    if scheme != "with" and np.count_nonzero(q) < n:
        return None
    P, Q = [Fraction(x) for x in p.tolist()], [Fraction(x) for x in q.tolist()]
    law = D.make(scheme, [x / sum(Q) for x in Q], n)
    return float(mdsd_ot.solve([x / sum(P) for x in P], law, method="subset-exact").alpha)


def _solve(nx, p, q, n, scheme, path):
    """α* (a float) of one row on backend ``nx`` through the public entry point."""
    return float(
        nx.to_numpy(alpha_star(nx.asarray(p), nx.asarray(q), n=n, scheme=scheme, path=path))
    )


@pytest.mark.parametrize("path", ["sort", "bucket"])
def test_small_rows_equal_brute_force(path, nx64):
    """Every law, n up to 4, V <= 7 with subnormal masses in q: α* within 1e-12 of brute force
    in Fractions and no warning, numpy and torch, sorting and bucket paths."""
    for r, (p, q) in enumerate(SMALL):
        for scheme, n in LAWS:
            ref = _brute(r, scheme, n)
            if ref is None:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                a = _solve(nx64, p, q, n, scheme, path)
            assert abs(a - ref) <= TOL, (r, scheme, n, a, ref)


def test_reported_row_exact():
    """The reported shape: one normal mass, four subnormal ones; the exact values in Fractions
    (brute force) and the ratio order (T7 prefix scan) agree, and the solver meets them."""
    p, q = SMALL[-1]
    for scheme, n in [("conditional-poisson", 2), ("without", 2), ("without", 3)]:
        ref = _brute(len(SMALL) - 1, scheme, n)
        assert ref == float(exact_alpha(p, q, n, scheme))  # two exact routes: the same double
        for path in ("sort", "bucket", "auto"):
            assert abs(alpha_star(p, q, n=n, scheme=scheme, path=path) - ref) <= TOL


def _large_row(kind: str, seed: int, positive: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """V = 6,000 with one normal mass in q (q = 1, p = 0.3).

    ``"dense"``: every other q subnormal (100, 200 or 300 units), most with a subnormal p
    (ratios 0.07..15: inside the buckets' window), and 20 tokens with half the subnormal mass and
    a normal p near the margin of the optimum (ratios about 1e321: overflowed, so the optimum
    splits a false tie); ``"sparse"``: ``positive`` positive q (one normal), the rest q = 0
    with p > 0.
    """
    rng = np.random.default_rng(seed)
    V = 6000
    p, q = np.zeros(V), np.zeros(V)
    q[0], p[0] = 1.0, 0.3
    if kind == "dense":
        q[1:] = rng.choice([100, 200, 300], V - 1) * UNIT
        p[1:] = rng.integers(20, 1500, V - 1) * UNIT
        hot = 1 + rng.choice(V - 1, 20, replace=False)
        q[hot] = rng.integers(30000, 90000, 20) * UNIT
        p[hot] = q[hot] / q[1:].sum() * rng.uniform(0.3, 1.7, 20)
    else:
        k = positive - 1
        pos = 1 + rng.choice(V - 1, k, replace=False)
        q[pos] = rng.integers(1, 400, k) * UNIT
        p[pos] = rng.dirichlet(np.ones(k)) * 0.5
        zero = np.setdiff1d(np.arange(1, V), pos)
        p[zero] = rng.dirichlet(np.ones(zero.size)) * 0.2
    return p / p.sum(), q / q.sum()


@functools.cache
def _large(kind: str, scheme: str, n: int) -> tuple[np.ndarray, np.ndarray, float]:
    p, q = _large_row(kind, 1, 12 if n > 3 else 20)  # the exact recursion: O(positives^(n-1))
    return p, q, float(exact_alpha(p, q, n, scheme))


LARGE = {
    "dense": [("with", 2), ("without", 2), ("conditional-poisson", 2)],
    "sparse": [("without", 3), ("without", 4), ("conditional-poisson", 3)],
}


@pytest.mark.parametrize("kind", sorted(LARGE))
def test_large_rows_equal_exact(kind, nx64):
    """V = 6,000 (the bucket path's sizes): sort, bucket and auto within 1e-12 of the exact
    prefix scan and no warning, numpy and torch; numpy also batched (the subnormal row beside
    an ordinary one: numpy's own buckets) and with the compiled kernels off."""
    for scheme, n in LARGE[kind]:
        p, q, ref = _large(kind, scheme, n)
        for path in ("sort", "bucket", "auto"):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                a = _solve(nx64, p, q, n, scheme, path)
            assert abs(a - ref) <= TOL, (scheme, n, path, a, ref)
        if nx64.torch is not None:
            continue
        rng = np.random.default_rng(3)
        P = np.stack([p, rng.dirichlet(np.ones(p.size))])
        Q = np.stack([q, rng.dirichlet(np.ones(p.size))])
        a = alpha_star(P, Q, n=n, scheme=scheme, path="bucket")
        assert abs(a[0] - ref) <= TOL, (scheme, n, "batched", a[0], ref)
        assert abs(a[1] - alpha_star(P[1], Q[1], n=n, scheme=scheme, path="sort")) <= TOL
        with _fused.disabled():
            a = alpha_star(p, q, n=n, scheme=scheme, path="bucket")
        assert abs(a - ref) <= TOL, (scheme, n, "numpy buckets", a, ref)


def test_several_laws_at_once():
    """alpha_star_laws shares one order (the sort) or one bucketing pass: each law exact."""
    p, q, _ = _large("dense", "with", 2)
    laws = [("with", 2), ("without", 2), ("conditional-poisson", 2)]
    for path in ("sort", "bucket"):
        out = alpha_star_laws(p, q, laws, path=path)
        for scheme, n in laws:
            assert abs(out[(scheme, n)] - _large("dense", scheme, n)[2]) <= TOL, (path, scheme)


def test_order_key_orders_overflowed_ratios():
    """The sorting path's key: finite on an overflowing row and ordered like the exact ratios;
    the other rows keep sort_key's bits (numpy); torch keys every row the scaled way."""
    from mdsd_ot.fast.prefix import order_key  # new with the fix

    p = np.array([[0.25, 0.25, 0.5, 0.0, 1e-300], [0.2, 0.3, 0.5, 0.0, 0.0]])
    q = np.array([[1.0, 3e-322, 1e-322, 0.0, 0.0], [0.1, 0.4, 0.5, 0.0, 0.0]])
    key = order_key(p, q)
    assert np.isfinite(key[0, :3]).all() and np.isinf(key[0, 4]) and np.isnan(key[0, 3])
    ratios = [Fraction(a) / Fraction(b) for a, b in zip(p[0, :3], q[0, :3], strict=True)]
    assert np.argsort(key[0, :3]).tolist() == sorted(range(3), key=ratios.__getitem__)
    np.testing.assert_array_equal(key[1], sort_key(p[1:], q[1:])[0])  # bit for bit
    torch = pytest.importorskip("torch")
    tkey = order_key(torch.tensor(p), torch.tensor(q)).numpy()
    assert np.argsort(tkey[0, :3]).tolist() == np.argsort(key[0, :3]).tolist()
    assert np.argsort(tkey[1, :3]).tolist() == np.argsort(key[1, :3]).tolist()


def test_fused_front_declines_an_overflowed_ratio():
    """The compiled bucketing pass leaves a row with an overflowed ratio to numpy's buckets
    (whose +inf bucket has its own q mass); the same row with that p subnormal is taken."""
    if not _fused.enabled():
        pytest.skip("numba is not installed (or MDSD_OT_JIT=0)")
    p, q = _large_row("dense", 1)
    assert _fused.bucket_front(p, q, 6, 64) is None
    tame = p.copy()
    tame[tame > 1e-300] = UNIT  # every ratio finite now (but token 0's)
    tame[0] = 0.3
    assert _fused.bucket_front(tame, q, 6, 64) is not None


def _cp_prefix_units(u: list[int], n: int) -> list[Fraction]:
    """Conditional Poisson Q on every prefix of integer masses u, exactly: e_n(prefix) / e_n(all)."""
    total = [1] + [0] * n
    for x in u:
        for m in range(n, 0, -1):
            total[m] += x * total[m - 1]
    e, out = [1] + [0] * n, []
    for x in u:
        for m in range(n, 0, -1):
            e[m] += x * e[m - 1]
        out.append(Fraction(e[n], total[n]))
    return out


def _exact_cp_prefix(qs: np.ndarray, n: int) -> list[Fraction]:
    return _cp_prefix_units([_units(x) for x in qs.tolist()], n)


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_conditional_poisson_prefix_exact_and_ends_at_one(n, nx64):
    """Q on every prefix of subnormal rows (one to three normal masses), of the V = 6,000 row
    in its ratio order, and of a row of 1e-200 masses whose one normal mass comes late (the
    tiny pairs before it, which underflowed, make most of e_3): within 5e-13 of the exact
    rationals (the recursion in logarithms: ε times the logarithms' magnitude), never above 1,
    and Q(Σ) = 1 exactly (Q(Σ) was 1.0094 and 1 + 2^-52, Q off by up to 0.58)."""
    rng = np.random.default_rng(7 + n)
    rows = [np.array([6.752e-320, 0.5860098641580924, 4.951563561860874e-308, 6.752e-320,
                      0.4139901358419076])]  # fmt: skip
    for _ in range(10):
        V = int(rng.integers(n + 1, 10))
        q = np.array(rng.choice(SUBNORMAL, V))
        big = int(rng.integers(1, min(4, n + 1)))
        q[rng.choice(V, big, replace=False)] = rng.random(big) + 0.1
        rows.append(q / q.sum())
    p, q = _large_row("dense", 1)
    rows.append(q[sorted(range(q.size), key=lambda i: Fraction(p[i]) / Fraction(q[i]))])
    q = np.full(400, 1e-200) * rng.uniform(0.5, 2.0, 400)
    q[300] = 1.0
    rows.append(q / q.sum())
    for q in rows:
        if np.count_nonzero(q) < n:  # no n distinct draws
            continue
        Q = nx64.to_numpy(prefix_Q_conditional_poisson(nx64.asarray(q[None, :]), n))[0]
        exact = _exact_cp_prefix(q, n)
        assert Q[-1] == 1.0 and Q.max() <= 1.0, (q.tolist(), Q[-1])
        worst = max(abs(Fraction(float(a)) - b) for a, b in zip(Q, exact, strict=True))
        assert worst <= 5e-13, (q[:8].tolist(), float(worst))
    # an ordinary row keeps the plain recursion, bit for bit (one normalised cumulative sum
    # per level, formed here by hand)
    q = rng.dirichlet(np.ones(3000))
    e = np.cumsum(q)
    e = e / e[-1]
    for _ in range(2, n + 1):
        e = np.cumsum(np.concatenate([[0.0], q[1:] * e[:-1]]))
        e = e / e[-1]
    np.testing.assert_array_equal(prefix_Q_conditional_poisson(q[None, :].copy(), n)[0], e)


@pytest.mark.parametrize("n", [3, 4])
def test_without_prefix_finite_and_certified(n, nx64):
    """prefix_Q_without on rows whose masses beyond the n - 1 largest are subnormal: Q was NaN
    (1 / d(D) overflowed); now within its certified bound (and 1e-13) of the exact recursion in
    Fractions, the bound finite and below 1e-12."""
    rng = np.random.default_rng(11 * n)
    for _ in range(4):
        V = int(rng.integers(n + 2, 9))
        q = np.array(rng.choice(SUBNORMAL, V))
        q[rng.choice(V, n - 1, replace=False)] = rng.random(n - 1) + 0.1
        q /= q.sum()
        Q, err = prefix_Q_without(nx64.asarray(q), n)
        Q, err = nx64.to_numpy(Q), float(nx64.to_numpy(err))
        exact = exact_prefix_Q_without([Fraction(x) for x in q.tolist()], n, exact=True)
        worst = max(abs(Fraction(float(a)) - b) for a, b in zip(Q, exact, strict=True))
        assert np.isfinite(Q).all() and np.isfinite(err) and err <= 1e-12, (q.tolist(), err)
        assert worst <= max(err, 1e-13), (q.tolist(), float(worst), err)


def test_bucket_bound_is_never_nan(nx64):
    """Sequential n = 3, 4 on subnormal rows: the bucket path's reported bound was NaN (the
    sort's inf); now both report the same finite bound and the same α*."""
    for r, (p, q) in enumerate(SMALL):
        for n in (3, 4):
            if np.count_nonzero(q) < n:
                continue
            P, Q = nx64.asarray(p[None, :]), nx64.asarray(q[None, :])
            ab, _, eb = solver.solve_rows(P, Q, n, "without", path="bucket")
            as_, _, es = solver.solve_rows(P, Q, n, "without", path="sort")
            eb = float(np.asarray(nx64.to_numpy(eb)).reshape(-1)[0])
            es = float(np.asarray(nx64.to_numpy(es)).reshape(-1)[0])
            assert not np.isnan(eb) and eb == es and np.isfinite(es), (r, n, eb, es)
            assert abs(float(nx64.to_numpy(ab)[0]) - float(nx64.to_numpy(as_)[0])) <= TOL
