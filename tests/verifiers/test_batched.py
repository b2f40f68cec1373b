"""The batched ``relabel`` verifier on the array API (mdsd_ot.verifiers.chain.batched; its plans
in batched_plans, its draws in batched_draws).

Checked against the one-position plan of :mod:`mdsd_ot.verifiers.chain.plan` (the same α*,
order and sub-law; every realised kernel row equal to :func:`rows.kernel_rows` to 1e-12; the
selection law at every slot to 1e-13), by the exact law of the realised kernel (output law p
within the a-priori bound), by simulation (G-test of the output against p, acceptance within 4
standard errors of α*) at V = 2,000 and 152,064, and numpy against CPU torch.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import verifiers
from mdsd_ot.drafts import ConditionalPoisson, WithoutReplacement, WithReplacement
from mdsd_ot.fast import alpha_star
from mdsd_ot.synthetic import synthetic_pair
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import ChainOptimal
from mdsd_ot.verifiers.chain.batched import (
    cp2_rows,
    kernel_row,
    law_error_bound,
    relabel_rows,
    sample_relabel_rows,
    verify_rows,
)
from mdsd_ot.verifiers.chain.batched_draws import _selection_law
from mdsd_ot.verifiers.chain.plan import build_plan
from mdsd_ot.verifiers.chain.relabel import Kernel, kernel_law
from mdsd_ot.verifiers.chain.rows import kernel_rows, selection_law_at
from testkit import g_test_pvalue


def _rows(rng, B, V, conc, zeros_q=False, zeros_p=False, ties=False, heavy=False, tiny=False):
    P = rng.dirichlet(np.full(V, conc), size=B)
    Q = rng.dirichlet(np.full(V, conc), size=B)
    if heavy:  # one token holds all of q but about 1e-12
        Q *= 1e-12
        Q[:, V // 3] = 1.0
    if tiny:  # every third mass 1e-300, in q and (shifted) in p
        Q[:, ::3] = 1e-300
        P[:, 1::3] = 1e-300
    if zeros_q:
        Q[:, : V // 4] = 0.0
    if zeros_p:
        P[:, V // 2 :] = 0.0
    if ties:  # p/q takes three values
        P = Q * rng.choice([0.5, 1.0, 2.0], size=(B, V))
    P[:, 0] += 1e-12  # a 1e-12 mass
    return P / P.sum(1, keepdims=True), Q / Q.sum(1, keepdims=True)


CASES = [
    dict(conc=0.05),
    dict(conc=0.3, zeros_q=True),
    dict(conc=1.0, zeros_p=True),
    dict(conc=5.0),
    dict(conc=0.5, ties=True),
    dict(conc=1.0, heavy=True),
    dict(conc=1.0, tiny=True),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("n", [2, 3, 4])
def test_plans_equal_the_one_position_plan(case, n):
    """α*, order and s of every row equal those of build_plan (1e-14 / 1e-15 absolute); every
    realised kernel row equals kernel_rows (1e-12), and T at every live slot selection_law_at
    (1e-13)."""
    rng = np.random.default_rng([case, n])
    for V in (2, 7, 60):
        P, Q = _rows(rng, 3, V, **CASES[case])
        plans = relabel_rows(P, Q, n)
        T = _selection_law(plans, np.tile(np.arange(V), (3, 1)))
        for b in range(3):
            ref = build_plan(P[b], Q[b], n, "relabel")
            assert abs(plans.alpha[b] - ref.acceptance) <= 1e-14
            assert np.array_equal(plans.order[b], ref.order)
            assert np.max(np.abs(plans.s[b] - ref.s_full)) <= 1e-15
            live = int(np.count_nonzero(Q[b]))
            for x in range(live):
                _, dest, prob = kernel_rows(ref, np.array([x]))
                d2, p2 = kernel_row(plans, b, x)
                want, got = (
                    dict(zip(dest.tolist(), prob, strict=True)),
                    dict(zip(d2.tolist(), p2, strict=True)),
                )
                for k in set(want) | set(got):
                    assert abs(want.get(k, 0.0) - got.get(k, 0.0)) <= 1e-12, (V, b, x, k)
            assert np.max(np.abs(T[b, :live] - selection_law_at(ref, np.arange(live)))) <= 1e-13


@pytest.mark.parametrize("n", [2, 3, 4])
def test_realised_kernel_is_lossless_and_optimal(n):
    """The law of the realised kernel (every row by :func:`kernel_row`, its law by
    :func:`relabel.kernel_law`, which recomputes the slot masses): T >= s - 1e-12, the
    thinning's T within 1e-12 of it, Σ min(s, T) = α* (1e-12) and the output law
    min(s, T) + (1 - Σ min(s, T)) · residual equal to p within law_error."""
    rng = np.random.default_rng(n)
    for case in CASES:
        P, Q = _rows(rng, 2, 40, **case)
        plans = relabel_rows(P, Q, n)
        Tsel = _selection_law(plans, np.tile(np.arange(40), (2, 1)))
        for b in range(2):
            qs = plans.qs[b]
            live = int(np.count_nonzero(qs))
            owner, dest, prob = [], [], []
            for x in range(live):
                d2, p2 = kernel_row(plans, b, x)
                owner += [x] * len(d2)
                dest += d2.tolist()
                prob += p2.tolist()
            k = Kernel(np.array(owner, dtype=np.int64), np.array(dest, dtype=np.int64),
                       np.array(prob))  # fmt: skip
            T = kernel_law(qs[:live], n, k) if live == 40 else None
            if T is None:  # q = 0 slots sort last and never move: the law of the live part
                T = np.zeros(40)
                T[:live] = kernel_law(qs[:live], n, k)
            s = plans.s[b]
            assert np.all(T >= s - 1e-12)
            assert np.max(np.abs(T[:live] - Tsel[b, :live])) <= 1e-12
            acc = np.minimum(s, T)
            assert abs(acc.sum() - alpha_star(P[b], Q[b], n=n, scheme="with")) <= 1e-12
            res = np.maximum(plans.ps[b] - s, 0.0)
            out = acc + (1.0 - acc.sum()) * (res / res.sum() if res.sum() > 0 else 0.0)
            assert np.abs(out - plans.ps[b]).sum() <= plans.law_error[b] + 1e-12


@pytest.mark.parametrize("V", [2000, 152_064])
@pytest.mark.parametrize("n", [2, 4])
def test_simulation(V, n):
    """10^5 tuples at one position: the output passes a G-test against p (top tokens plus a
    tail bucket, p-value > 1e-4) and the acceptance is within 4 standard errors of α*."""
    p, q = synthetic_pair(V, 1.0, np.random.default_rng([V, n]), noise=1.0)
    g = np.random.default_rng([n, 7])
    N = 100_000
    t = g.choice(V, size=(1, N, n), p=q)
    out, acc, plans = verify_rows(p[None], q[None], n, t, g, return_plans=True)
    assert out.shape == (1, N) and acc.shape == (1, N)
    assert g_test_pvalue(out[0], p) > 1e-4
    a = alpha_star(p, q, n=n, scheme="with")
    assert abs(float(plans.alpha[0]) - a) <= 1e-12 and plans.law_error[0] <= 1e-8
    a_hat = float(acc.mean())
    assert abs(a_hat - a) <= 4 * np.sqrt(a * (1 - a) / N)


def test_repeated_drafts_and_ties():
    """All drafts equal: the output is that token when accepted; the tie-break is fair (two
    drafts of tokens sharing a slot never occur, but equal relabelled slots do)."""
    P, Q = np.array([[0.5, 0.5]]), np.array([[0.5, 0.5]])
    out, acc = sample_relabel_rows(relabel_rows(P, Q, 2), np.array([[[1, 1]] * 1000]), 3)
    assert np.all(acc == (out == 1))
    assert np.all(out[acc] == 1)


def test_torch_cpu_equals_numpy():
    """The same plans (1e-13 relative, 1e-15 absolute: torch sums in another order) and, with
    the same numpy generator, the same draws."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    rng = np.random.default_rng(11)
    P, Q = _rows(rng, 4, 300, 0.3, zeros_q=True)
    a, b = relabel_rows(P, Q, 3), relabel_rows(torch.tensor(P), torch.tensor(Q), 3)
    for f in ("order", "rank", "ps", "qs", "d", "s", "cum", "alpha"):
        np.testing.assert_allclose(getattr(a, f), getattr(b, f).numpy(), rtol=1e-13, atol=1e-15)
    t = rng.integers(0, 300, size=(4, 2000, 3))
    o1, c1 = sample_relabel_rows(a, t, np.random.default_rng(5))
    o2, c2 = sample_relabel_rows(b, torch.tensor(t), np.random.default_rng(5))
    assert np.array_equal(o1, o2.numpy()) and np.array_equal(c1, c2.numpy())


def test_torch_generator_and_sample_rows():
    """ChainOptimal.sample_rows on tensors: the batched route for i.i.d. drafts
    (a torch.Generator, results as tensors, seeded: reproducible), the host route for the
    other laws (one tuple per row); every output law passes the G-test against p."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    rng = np.random.default_rng(2)
    V = 30
    P, Q = _rows(rng, 1, V, 0.5)
    for cls, N in (
        (WithReplacement, 20_000),
        (WithoutReplacement, 2000),
        (ConditionalPoisson, 2000),
    ):
        law = cls(Q[0], 2)
        v = ChainOptimal(law)  # at V = 30 the default for distinct drafts is the reduced plan
        t = torch.tensor(sample_drafts(law, rng, N))
        Pt, Qt = torch.tensor(P).expand(N, V), torch.tensor(Q).expand(N, V)
        runs = [v.sample_rows(Pt, Qt, t, torch.Generator().manual_seed(4)) for _ in range(2)]
        out, acc = runs[0]
        assert isinstance(out, torch.Tensor) and out.dtype == torch.int64 and out.shape == (N,)
        assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])
        assert torch.equal(acc, (t == out[:, None]).any(dim=1))
        assert g_test_pvalue(out.numpy(), P[0]) > 1e-4, cls
    v = verifiers.get("optimal", WithReplacement(Q[0], 2))  # the public entry delegates
    out, _ = v.sample_rows(torch.tensor(P), torch.tensor(Q), torch.tensor([[0, 1]]), 0)
    assert out.shape == (1,)
    # at V = 30 the optimum of sequential drafts is the set-reduced plan, verified row by row
    # (tests/verifiers/test_sample_rows.py)
    out, _ = verifiers.get("optimal", WithoutReplacement(Q[0], 2)).sample_rows(P, Q, [[0, 1]], 0)
    assert out.shape == (1,)


def test_errors_name_the_argument():
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    P = torch.tensor([[0.2, 0.3, 0.5]] * 2, dtype=torch.float64)
    Q = torch.tensor([[0.5, 0.3, 0.2]] * 2, dtype=torch.float64)
    good = torch.tensor([[0, 1], [2, 2]])
    with pytest.raises(ValueError, match="draft_tokens: token id 5 is outside"):
        verify_rows(P, Q, 2, torch.tensor([[0, 5], [2, 2]]), 0)
    with pytest.raises(ValueError, match=r"draft_tokens: expected shape \(B, n\)"):
        verify_rows(P, Q, 2, torch.tensor([[0, 1, 1], [2, 2, 1]]), 0)
    with pytest.raises(ValueError, match="draft_tokens: must hold integer"):
        verify_rows(P, Q, 2, good.double(), 0)
    with pytest.raises(ValueError, match=r"Q\[0\]: entries sum to 1.1"):  # its argument Q
        verify_rows(P, Q * 1.1, 2, good, 0)
    with pytest.raises(ValueError, match="give both in one dtype"):
        verify_rows(P, Q.float(), 2, good, 0)
    with pytest.raises(ValueError, match="n: "):
        verify_rows(P, Q, 0, good, 0)
    out, _ = verify_rows(P.float(), Q.float(), 2, good, 0)  # float32 rows: computed in float64
    assert out.dtype == torch.int64
    # one library for both rows, a generator that fits them, and lists taken as numpy rows
    with pytest.raises(ValueError, match="Q: is a tensor but P is a numpy array"):
        verify_rows(P.numpy(), Q, 2, good, 0)
    with pytest.raises(ValueError, match="rng: a torch.Generator draws on a torch device"):
        verify_rows(P.numpy(), Q.numpy(), 2, good.numpy(), torch.Generator())
    out, acc = verify_rows(P.tolist(), Q.tolist(), 2, good.tolist(), 0)
    assert isinstance(out, np.ndarray) and out.shape == acc.shape == (2,)


def test_law_error_bound_grows_linearly():
    """The a-priori bound is linear in V and below 1e-8 at V = 152,064, n <= 4."""
    assert (
        law_error_bound(2, 2000) * 70 < law_error_bound(2, 152_064) < law_error_bound(2, 2000) * 80
    )
    assert law_error_bound(4, 152_064) < 1e-8


def _exact_output_law(plans, b):
    """In Fractions, from the realised kernel rows (kernel_row): the selection law T of the
    rule (i.i.d. law with the slot masses of the kernel; cp2: (T - q^2) / (1 - sum q^2) on
    distinct pairs, Lemma 4), and the output law of the whole verifier, by slot."""
    qs = [Fraction(float(x)) for x in plans.qs[b]]
    V, n = len(qs), plans.n
    live = sum(1 for x in qs if x > 0)
    A = []
    for x in range(V):
        row = {}
        if x < live:
            dest, prob = kernel_row(plans, b, x)
            row = {int(k): Fraction(float(v)) for k, v in zip(dest, prob, strict=True)}
        row[x] = row.get(x, Fraction(0)) + 1 - sum(row.values(), Fraction(0))
        A.append(row)
    nu = [Fraction(0)] * V
    for i in range(V):
        for j, a in A[i].items():
            nu[j] += qs[i] * a
    d, c = [], Fraction(0)
    for j in range(V):
        cm, c = c, c + nu[j]
        d.append(sum((c**k * cm ** (n - 1 - k) for k in range(n)), Fraction(0)))
    T = [qs[i] * sum((a * d[j] for j, a in A[i].items()), Fraction(0)) for i in range(V)]
    if plans.two_e2 is not None:
        tw = 1 - sum(x * x for x in qs)
        T = [(t - x * x) / tw for t, x in zip(T, qs, strict=True)]
    Tu = _selection_law(plans, np.tile(np.arange(V), (plans.qs.shape[0], 1)))[b]
    s = plans.s[b]
    acc = [
        Fraction(float(min(s[i], Tu[i]) / Tu[i])) if Tu[i] > 0 else Fraction(0) for i in range(V)
    ]
    res = np.maximum(plans.ps[b] - s, 0.0)
    res = res if res.sum() > 0 else plans.ps[b]
    r = [Fraction(float(x)) for x in res]
    tot = sum(r, Fraction(0))
    kept = [T[i] * acc[i] for i in range(V)]
    rest = 1 - sum(kept, Fraction(0))
    return T, [kept[i] + rest * r[i] / tot for i in range(V)]


@pytest.mark.parametrize("construction", ["relabel-2", "relabel-3", "cp2"])
def test_exact_law_of_the_realised_kernel(construction):
    """Fractions: the law T of the kernel the sampler realises dominates s within law_error,
    the acceptance Σ T min(s, T̂)/T̂ is α* within law_error, and the output law is p within
    law_error in total variation (T̂: the law the thinning divides by)."""
    rng = np.random.default_rng(list(map(ord, construction)))
    for case in CASES:
        P, Q = _rows(rng, 2, 9, **case)
        if construction == "cp2":
            plans = cp2_rows(P, Q)
        else:
            plans = relabel_rows(P, Q, int(construction[-1]))
        for b in range(2):
            T, out = _exact_output_law(plans, b)
            tol = Fraction(float(plans.law_error[b]))
            ps = [Fraction(float(x)) for x in plans.ps[b]]
            assert sum(abs(o - x) for o, x in zip(out, ps, strict=True)) <= tol
            s = plans.s[b]
            assert all(T[i] >= Fraction(float(s[i])) - tol for i in range(len(T)))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_cp2_plans(case):
    """cp2: α* and s equal those of the one-position cp2 plan (1e-13); where that plan also
    sorted by ρ* the order is the same; T at every live slot >= s - 1e-12."""
    rng = np.random.default_rng([case, 2])
    for V in (3, 12, 40):
        P, Q = _rows(rng, 3, V, **CASES[case])
        plans = cp2_rows(P, Q)
        T = _selection_law(plans, np.tile(np.arange(V), (3, 1)))
        for b in range(3):
            ref = build_plan(P[b], Q[b], 2, "cp2")
            assert abs(plans.alpha[b] - ref.acceptance) <= 1e-13
            if ref.info["resorted"]:
                assert np.array_equal(plans.order[b], ref.order)
                assert np.max(np.abs(plans.s[b] - ref.s)) <= 1e-15
            live = int(np.count_nonzero(Q[b]))
            assert np.all(T[b, :live] >= plans.s[b, :live] - 1e-12)


@pytest.mark.parametrize("V", [2000, 152_064])
def test_cp2_simulation(V):
    """10^5 conditional-Poisson pairs at one position: G-test of the output against p and the
    acceptance within 4 standard errors of α*."""
    p, q = synthetic_pair(V, 1.0, np.random.default_rng([V, 5]), noise=1.0)
    g = np.random.default_rng([V, 6])
    N = 100_000
    t = sample_drafts(ConditionalPoisson(q, 2), g, N)[None]
    out, acc = verify_rows(p[None], q[None], 2, t, g, construction="cp2")
    assert g_test_pvalue(out[0], p) > 1e-4
    a = alpha_star(p, q, n=2, scheme="conditional-poisson")
    assert abs(float(acc.mean()) - a) <= 4 * np.sqrt(a * (1 - a) / N)


@pytest.mark.parametrize("construction", ["relabel", "cp2"])
def test_sampler_realises_kernel_row(construction):
    """The sampler's relabelling of 2 x 10^5 draws at each of a row's slots follows the row
    that kernel_row enumerates (G-test of the destination counts, p-value > 1e-4)."""
    from scipy.stats import chi2

    from mdsd_ot.verifiers.chain.batched_draws import _relabel_draws

    p, q = synthetic_pair(200, 2.0, np.random.default_rng(3), noise=1.0)
    P, Q = p[None], q[None]
    plans = cp2_rows(P, Q) if construction == "cp2" else relabel_rows(P, Q, 2)
    N = 200_000
    moving = [(kernel_row(plans, 0, x)[1].sum(), x) for x in range(200)]
    tested = 0
    for _, x in sorted(moving)[-6:]:  # the six slots that move the most
        dest, prob = kernel_row(plans, 0, x)
        z = _relabel_draws(plans, np.full((1, N), x), np.random.default_rng(x))[0]
        probs = np.r_[prob, 1.0 - prob.sum()]
        obs = np.r_[[np.count_nonzero(z == k) for k in dest], np.count_nonzero(z == x)]
        assert obs.sum() == N  # no draw goes anywhere else
        exp = N * probs
        keep = exp > 0
        nz = obs[keep] > 0
        G = 2.0 * np.sum(obs[keep][nz] * np.log(obs[keep][nz] / exp[keep][nz]))
        assert chi2.sf(G, max(int(keep.sum()) - 1, 1)) > 1e-4, (x, obs, exp)
        tested += 1
    assert tested == 6 and sorted(moving)[-6][0] > 0.01


def test_verify_rows_seed_is_one_stream():
    """An int seed makes one generator for the whole call: reseeding it for every draw made the
    keep coin and the residual draw share their uniforms, a biased output (G-test p = 0)."""
    from mdsd_ot.verifiers.chain.batched import verify_rows

    r = np.random.default_rng(0)
    P, Q = r.dirichlet([0.7] * 200, 1), r.dirichlet([0.7] * 200, 1)
    T = r.choice(200, size=(1, 100_000, 2), p=Q[0])
    out, _ = verify_rows(P, Q, 2, T, 123)
    assert g_test_pvalue(np.asarray(out).ravel(), P[0]) > 1e-4
    # the seed is the generator it names: the same numbers as default_rng(123) passed in
    out2, _ = verify_rows(P, Q, 2, T, np.random.default_rng(123))
    assert np.array_equal(np.asarray(out), np.asarray(out2))


def test_cpu_tensors_take_the_faster_route(monkeypatch):
    """On the CPU, ``relabel`` tensor rows are verified by the array route up to
    ``CPU_ARRAY_MAX_V`` tokens and copied to the host for the numpy route beyond (the faster
    one per row there; ``device_route``); both routes give valid outputs."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    from mdsd_ot.verifiers.chain import verifier as chain_verifier

    rng = np.random.default_rng(9)
    P, Q = _rows(rng, 3, 40, 1.0)
    v = ChainOptimal(WithReplacement(Q[0], 2))
    t = torch.tensor(np.stack([WithReplacement(Q[b], 2).sample(rng, 1)[0] for b in range(3)]))
    calls = []
    real = chain_verifier.on_host
    monkeypatch.setattr(chain_verifier, "on_host", lambda *a: calls.append(1) or real(*a))
    for limit, host in ((40, False), (39, True)):
        monkeypatch.setattr(chain_verifier, "CPU_ARRAY_MAX_V", limit)
        calls.clear()
        out, acc = v.sample_rows(torch.tensor(P), torch.tensor(Q), t, 0)
        assert bool(calls) == host, limit
        assert isinstance(out, torch.Tensor) and torch.equal(acc, (t == out[:, None]).any(dim=1))
