"""``cp2`` (two conditional-Poisson drafts) on drafts almost sure of one token.

With :math:`2e_2 = 1 - \\sum q^2` of order 1 - q_max, every absolute rounding of the i.i.d.
kernel is divided by :math:`2e_2` on the way to the conditional-Poisson law.  Two such roundings
made the verifier lossy (found by fuzzing, 2026-12): :math:`c_{k-1}` formed as
:math:`c_k - q_k` (no digit left under the heavy token), and the heavy token's move
probabilities, multiples of :math:`2^{-52}`, which move slot mass of order :math:`2^{-52}`.  At
p = (0.5, 0.25, 0.25), q = (1, 2.3e-16, 0) the output was (0.388, 0.251, 0.361) and the acceptance
0.639 against α* = 0.75.  The plan now reads :math:`c_{k-1}` from the previous prefix sum and,
where the a-priori law error exceeds :data:`~mdsd_ot.verifiers.chain.cp2.KERNEL_LAW_TOL`,
computes the law of the rounded kernel itself (:func:`~mdsd_ot.verifiers.chain.rows.cp2_kernel_law`).

Tolerances: the kernel's law against its exact law in Fractions (relative 1e-12), ε against the
fast α* (1e-12), G-tests at p > 1e-4 and acceptance within 4 standard errors.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from mdsd_ot import drafts, fast
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import ChainOptimal
from mdsd_ot.verifiers.chain.cp2 import KERNEL_LAW_TOL
from mdsd_ot.verifiers.chain.rows import kernel_rows
from testkit import g_test_pvalue


def _exact_kernel_law(plan) -> list[Fr]:
    """Selection law by slot of the rounded kernel, by enumeration of the distinct pairs in
    exact arithmetic: each draw is relabelled by its kernel row, the higher slot wins, ties are
    broken uniformly."""
    V = len(plan.order)
    qs = [Fr(float(x)) for x in plan.qs]
    qi, dest, prob = kernel_rows(plan, np.arange(V))
    A = [[Fr(0)] * V for _ in range(V)]
    for i, j, a in zip(qi.tolist(), dest.tolist(), prob.tolist(), strict=True):
        A[i][j] += Fr(a)
    for i in range(V):
        A[i][i] += 1 - sum(A[i], Fr(0))
    e2 = sum((qs[a] * qs[b] for a in range(V) for b in range(a + 1, V)), Fr(0))
    law = [Fr(0)] * V
    for a in range(V):
        for b in range(a + 1, V):
            w = qs[a] * qs[b] / e2
            for x in range(V):
                for y in range(V):
                    m = w * A[a][x] * A[b][y]
                    if x > y:
                        law[a] += m
                    elif y > x:
                        law[b] += m
                    else:
                        law[a] += m / 2
                        law[b] += m / 2
    return law


@pytest.mark.parametrize("q1", [1e-12, 1e-15, 2.3e-16])
def test_law_is_the_rounded_kernels_own(q1):
    """Every draw is the pair {0, 1}: the plan's T is the rounded kernel's exact law, the
    acceptance is α* = 0.75 and the certified law error is small."""
    p = np.array([0.5, 0.25, 0.25])
    q = np.array([1.0, q1, 0.0])
    q /= q.sum()
    d = drafts.ConditionalPoisson(q, 2)
    v = ChainOptimal(d)
    plan = v.plan(p, d)
    assert plan.construction == "cp2"
    exact = _exact_kernel_law(plan)
    for k in range(3):
        assert abs(Fr(float(plan.T[k])) - exact[k]) <= Fr(1, 10**12) * max(exact[k], Fr(1, 10**30))
    cert = v.certificate(p)
    assert cert["eps"] <= 1e-12 and cert["law_error"] <= 1e-10
    assert plan.info.get("kernel_law") is True  # the a-priori bound exceeds KERNEL_LAW_TOL


@pytest.mark.parametrize("q1", [1e-15, 2.3e-16])
def test_simulation_of_the_three_token_pair(q1):
    """2 x 10^5 verified pairs: output ~ p (G-test) and acceptance ~ α* = 0.75 (4 s.e.)."""
    p = np.array([0.5, 0.25, 0.25])
    q = np.array([1.0, q1, 0.0])
    q /= q.sum()
    d = drafts.ConditionalPoisson(q, 2)
    size = 200_000
    out, acc = ChainOptimal(d).sample(p, np.tile([0, 1], (size, 1)), np.random.default_rng(1))
    assert g_test_pvalue(out, p) > 1e-4
    se = float(np.sqrt(0.75 * 0.25 / size))
    assert abs(float(acc.mean()) - 0.75) <= 4 * se


@pytest.mark.parametrize("rest", [1e-6, 1e-12, 1e-16, 1e-300])
def test_plans_at_v_2000(rest):
    """One token holds all but ``rest`` of q (V = 2,000): ε <= 1e-12 and a small law error;
    10^5 draws at 1e-16 and 1e-300 pass the G-test and the acceptance test."""
    g = np.random.default_rng(3)
    V = 2000
    q = g.random(V)
    q[0] = 0.0
    q *= rest / q.sum()
    q[0] = 1.0 - rest
    p = 0.7 * g.dirichlet(np.full(V, 0.3))
    p[0] += 0.3
    d = drafts.ConditionalPoisson(q, 2)
    v = ChainOptimal(d)
    cert = v.certificate(p)
    assert cert["construction"] == "cp2"
    assert cert["eps"] <= 1e-12 and cert["law_error"] <= 1e-9, cert
    if rest > 1e-16:
        return
    r = np.random.default_rng(7)
    size = 100_000
    out, acc = v.sample(p, sample_drafts(d, r, size), r)
    assert g_test_pvalue(out, p) > 1e-4
    a = cert["alpha_star"]
    se = float(np.sqrt(a * (1 - a) / size))
    assert abs(float(acc.mean()) - a) <= 4 * se


def test_typical_rows_keep_the_fast_law():
    """Away from a point mass the a-priori bound is small and the plan keeps its O(V) law (no
    pass over every kernel row)."""
    g = np.random.default_rng(0)
    p, q = g.dirichlet(np.ones(500)), g.dirichlet(np.ones(500))
    d = drafts.ConditionalPoisson(q, 2)
    plan = ChainOptimal(d).plan(p, d)
    assert plan.law_error <= KERNEL_LAW_TOL and "kernel_law" not in plan.info and plan.T is None
    assert abs(plan.acceptance - float(fast.alpha_star(p, d))) <= 1e-12


@pytest.mark.parametrize(
    "p, q",
    [
        ([0.7, 0.3], [1.0, 1e-310]),  # every tuple is (0, 1): α* = 1
        ([0.197, 0.803], [1.0, 5e-324]),
        ([0.15, 0.766, 0.084], [1.0, 1.4e-314, 1.4e-309]),
    ],
)
def test_subnormal_masses_fall_back_to_top_on_every_route(p, q):
    """Subnormal q beside a token of q ≈ 1: 2e_2 is subnormal, the kernel's law is lost (bound
    inf) and the output was off p (token 0 never output, or (0.49, 0.51) for (0.7, 0.3)).  The
    one-position plan now gives way to ``top`` (lossless, its ε reported), and the batched
    device route draws such rows with that plan.  Tolerance: 4 standard errors per token."""
    torch = pytest.importorskip("torch")
    law = drafts.ConditionalPoisson(q, 2)
    v = ChainOptimal(law)
    cert = v.certificate(np.array(p))
    assert cert["construction"] == "top" and cert["law_error"] <= 1e-12
    assert cert["acceptance"] <= cert["alpha_star"] + 1e-12
    g = np.random.default_rng(11)
    N = 40_000
    t = sample_drafts(law, g, N)
    P, Q, T1 = np.array([p]), np.array([q]), t[None, :, :]  # one row, N tuples: (1, N, 2)
    routes = {
        "sample": v.sample(np.array(p), t, g)[0],
        "rows, numpy": v.sample_rows(P, Q, T1, g)[0],
        "rows, torch": v.sample_rows(torch.tensor(P), torch.tensor(Q), torch.tensor(T1), 5)[0],
    }
    for name, out in routes.items():
        freq = np.bincount(np.asarray(out).ravel(), minlength=len(p)) / N
        se = np.sqrt(np.array(p) * (1 - np.array(p)) / N)
        assert np.all(np.abs(freq - p) <= 4 * se + 1e-12), (name, freq)
    from mdsd_ot.verifiers.chain.batched import verify_rows

    P3, Q3 = np.tile(p, (3, 1)), np.tile(q, (3, 1))
    _, _, plans = verify_rows(torch.tensor(P3), torch.tensor(Q3), 2, torch.tensor(t[:3]), 0,
                              construction="cp2", return_plans=True)  # fmt: skip
    assert float(plans.law_error.max()) <= KERNEL_LAW_TOL
    assert np.allclose(plans.alpha.numpy(), cert["acceptance"], rtol=0, atol=1e-15)


def test_device_route_certifies_rows_near_a_point_mass():
    """The batched route's a-priori bound divides by 2e_2: rows within ~1e-3 of a point mass
    exceed KERNEL_LAW_TOL there, and are now drawn by the one-position plan (its kernel law):
    every row's reported bound is within the tolerance, and its acceptance that plan's."""
    torch = pytest.importorskip("torch")
    from mdsd_ot.verifiers.chain.batched import verify_rows
    from mdsd_ot.verifiers.chain.plan import build_plan

    g = np.random.default_rng(3)
    P = g.dirichlet(np.ones(50), size=4)
    Q = g.dirichlet(np.ones(50), size=4)
    Q[1] = np.full(50, 1e-9 / 49)
    Q[1, 7] = 1.0 - 1e-9  # 2e_2 ≈ 2e-9: the a-priori bound is ≈ 0.6
    Q /= Q.sum(axis=1, keepdims=True)
    t = np.array([[7, 3], [7, 3], [7, 3], [7, 3]])
    _, _, plans = verify_rows(torch.tensor(P), torch.tensor(Q), 2, torch.tensor(t), 0,
                              construction="cp2", return_plans=True)  # fmt: skip
    err = plans.law_error.numpy()
    assert np.all(err <= KERNEL_LAW_TOL), err
    ref = build_plan(P[1], Q[1], 2, "cp2")
    assert ref.info.get("kernel_law")  # rows renormalised on the device: rounding apart
    assert abs(float(plans.alpha[1]) - ref.acceptance) <= 1e-12
