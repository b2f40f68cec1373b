"""Statistics continued into the survivors by a difference, ``(A - B) + C``, keep their relative
accuracy (mdsd_ot.fast.bucket._continued, the suffix sums of λ, and the compiled series row).

At survivor i, A is its bucket's boundary value (the run's earlier buckets included), B the sum
of the survivors before its bucket and C the running sum through i.  A - B cancels when little
mass precedes the run, but C extends B's running sum and B's terms lie among A's, so the result
is >= A, B and its error is relative to it (the argument at ``_continued``): the sequential
series' bound, which needs the light power sums π_j and λ to relative accuracy with the rounding
depth ``depth + C``, stands.  Checked here with the cancellation made extreme: every bucket
survives (the run starts at the chain's first bucket, so A - B is exactly 0 but for rounding),
against exact sums of the same float terms, and α* and Q at every survivor against mpmath.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot.fast import _fused, _fused_series, bucket, chain, solver
from mdsd_ot.fast._dd import gamma
from mdsd_ot.fast.order import ratio_order
from mdsd_ot.fast.prefix import sort_key
from mdsd_ot.synthetic import synthetic_pair

U = 2.0**-53


def test_continued_sum_is_relatively_accurate_when_the_difference_cancels():
    """The key inequality: fl((A - B) + C) is within gamma(D_A + m + 4) of the exact sum, m the
    survivors of i's bucket up to i, D_A the boundary's depth; the intermediate A - B alone is
    off by far more (the cancellation is real)."""
    rng = np.random.default_rng(7)
    nb, per = 12, 40
    counts = np.full(nb, per)
    ids = np.repeat(np.arange(nb), counts)
    x = rng.random(ids.size) * 10.0 ** rng.uniform(-3, 3, ids.size)
    x[ids == 0] = 1e-12  # little mass before the run (bucket 0 is pruned)
    x[ids == 1] *= 1e6  # the run's first bucket: A and B both hold it
    boundary = bucket._excl(np.bincount(ids, x, nb)[None, :], np)  # as phase 1 forms it
    surv = np.flatnonzero(ids >= 1)
    surv = surv[np.lexsort((rng.random(surv.size), ids[surv]))]  # by bucket, shuffled inside
    bs = ids[surv][None, :]
    xs = x[surv][None, :]
    first = np.searchsorted(bs[0], bs[0], "left")[None, :]
    out = bucket._continued(boundary, bs, xs, first, np)
    E = np.concatenate([[0.0], np.cumsum(xs[0])])
    mid = boundary[0, bs[0]] - E[first[0]]
    D_A = per + nb - 1
    C = surv.size
    worst_mid = 0.0
    for i in range(C):
        b = int(bs[0, i])
        exact = sum((Fraction(v) for v in x[ids < b]), Fraction(0))
        exact += sum((Fraction(v) for v in xs[0, first[0, i] : i + 1]), Fraction(0))
        before = sum((Fraction(v) for v in x[ids == 0]), Fraction(0)) if b > 1 else Fraction(0)
        if b > 1:
            worst_mid = max(worst_mid, float(abs(Fraction(mid[i]) - before) / before))
        m = i + 1 - int(first[0, i])
        rel = float(abs(Fraction(out[0, i]) - exact) / exact)
        assert rel <= gamma(float(D_A + m + 4)), (i, rel)
        assert rel <= gamma(float(per + nb + 2 + C))  # the depth that phase 2 counts
    assert worst_mid > 1e-3  # the intermediate difference alone has lost its accuracy


def _forced(p, q, n, monkeypatch, fused):
    """Every bucket survives (TOL < 0, no fallback); the survivors' series inputs, captured."""
    calls = []
    for mod in (chain, _fused_series):
        real = mod.series_eval

        def spy(ctx, pi, sg, lm, npos, D_cum, xp, real=real, mod=mod):
            out = real(ctx, pi, sg, lm, npos, D_cum, xp)
            calls.append((pi.copy(), lm.copy(), D_cum, out[0].copy(), out[1].copy(), ctx, mod))
            return out

        monkeypatch.setattr(mod, "series_eval", spy)
    monkeypatch.setattr(bucket, "TOL", -1.0)
    monkeypatch.setattr(bucket, "MAX_FRACTION", 1.0)
    if not fused:
        monkeypatch.setattr(_fused_series, "serves", lambda *a: False)
    a, _, e = solver.solve_rows(p[None], q[None], n, "without", True, path="bucket")
    monkeypatch.undo()
    assert (calls[-1][-1] is _fused_series) == fused  # the route meant
    return float(a[0]), (float(e[0]) + 1.0) / 3.0, calls[-1][:-1]


#: numpy's array route, and the compiled series row where numba is on
ROUTES = [False] + ([True] if _fused.enabled() and _fused_series._kernels() is not None else [])


@pytest.mark.parametrize("fused", ROUTES)
def test_power_sums_and_lambda_of_survivors_to_the_counted_depth(fused, monkeypatch):
    """Every bucket a survivor (A - B exactly 0 but for rounding at every later bucket): π_j
    and λ at each survivor within gamma(depth + C) of the exact sums of their float terms."""
    p, q = synthetic_pair(2000, 1.0, 4)
    _, _, (pi, lm, D_cum, _, _, ctx) = _forced(p, q, 3, monkeypatch, fused)
    V = p.size
    assert pi.shape[-1] == V  # every token scanned, in chain order
    order = np.asarray(ratio_order(sort_key(p[None].copy(), q[None].copy()), stable=True))[0]
    tau = float(ctx["tau"][0])
    heavy = np.zeros(V, dtype=bool)
    heavy[np.asarray(ctx["heavy"][0])] = True
    u = np.where(heavy, 0.0, q) / tau
    u = u[order]
    bound = gamma(float(D_cum))
    w = u.copy()
    for j in range(1, pi.shape[1]):
        if j > 1:
            w = w * u
        acc = Fraction(0)
        for i in range(V):
            acc += Fraction(w[i])
            if acc:
                assert abs(Fraction(pi[0, j, i]) - acc) <= bound * acc, (j, i)
    acc = Fraction(0)
    for i in range(V - 1, -1, -1):
        if acc:
            assert abs(Fraction(lm[0, i]) - acc) <= bound * acc, i
        acc += Fraction(q[order[i]])


def _exact_Q3(qc, mp):
    """Q(H_k), k = 0..V, n = 3, along the chain qc: 1 - Q = λ (1/T + Σ G_x + Σ G_xy)."""
    q = [mp.mpf(float(v)) for v in qc]
    T, V = mp.fsum(q), len(q)
    G = [v / (T * (T - v)) for v in q]
    suf = [mp.mpf(0)] * (V + 1)
    for k in range(V - 1, -1, -1):
        suf[k] = suf[k + 1] + q[k]
    s1 = s2 = mp.mpf(0)
    Q = [mp.mpf(0)]
    for k in range(V):
        s2 += mp.fsum((q[k] * G[y] + q[y] * G[k]) / (T - q[k] - q[y]) for y in range(k))
        s1 += G[k]
        Q.append(1 - suf[k + 1] * (1 / T + s1 + s2) if k >= 2 else mp.mpf(0))
    return Q


@pytest.mark.parametrize("fused", ROUTES)
def test_series_bound_holds_at_every_survivor_against_mpmath(fused, monkeypatch):
    """The same forced run: Q at every survivor within its certified bound of mpmath's value
    (40 digits), and α* within the reported bound."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    p, q = synthetic_pair(400, 0.7, 5)
    a, err, (_, _, _, Qs, Bs, _) = _forced(p, q, 3, monkeypatch, fused)
    order = np.asarray(ratio_order(sort_key(p[None].copy(), q[None].copy()), stable=True))[0]
    Qx = _exact_Q3(q[order], mp)
    for i in range(p.size):
        assert abs(mp.mpf(float(Qs[0, i])) - Qx[i + 1]) <= Bs[0, i], i
    P, best = mp.mpf(0), mp.mpf(0)
    for i in range(p.size):
        P += mp.mpf(float(p[order[i]]))
        best = min(best, P - Qx[i + 1])
    assert abs(mp.mpf(a) - (1 + best)) <= 3 * err + bucket.TOL
