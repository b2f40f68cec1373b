"""The torch boundary of the fast solver (mdsd_ot.torch): what only tensors have.

The solver itself is tested once for every backend by the shared ``nx`` fixture
(tests/fast/test_fast_solver.py: exact brute force on numpy and torch float64, realistic rows on
torch float32 within ``mdsd_ot.torch.FLOAT32_BOUND``).  Here: results stay on the input device
and in its dtype, the dtype rule for non-tensor inputs, no host synchronisation in the core,
dtype and device mismatches, CUDA when present.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra is not installed")

import mdsd_ot  # noqa: E402
import mdsd_ot.fast as fast  # noqa: E402
import mdsd_ot.torch as mt  # noqa: E402
from mdsd_ot.drafts import kernel_for  # noqa: E402
from testkit import SOLVER_CASES, SYNC_OPS, torch_spy  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One intra-op thread: on a shared 2-core runner, torch's thread pool oversubscribes."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _edge_batch(seed: int, B: int = 40, V: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Rows with ties in p/q, zeros in p and q, masses near 1e-12; q keeps >= 6 positive entries."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(V, 0.5), size=B)
    q = rng.dirichlet(np.full(V, 0.5), size=B)
    for b in range(B):
        kind = b % 5
        if kind == 0:
            idx = rng.choice(V, 4, replace=False)
            p[b, idx] = q[b, idx] * 0.7
        elif kind == 1:
            p[b, rng.choice(V, 4, replace=False)] = 0.0
        elif kind == 2:
            q[b, rng.choice(V, 4, replace=False)] = 0.0
        elif kind == 3:
            q[b, rng.integers(V)] = 1e-12
            p[b, rng.integers(V)] = 1e-12
        else:
            q[b] = 1e-12 * rng.random(V)
            q[b, rng.integers(V)] = 1.0
    return p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)


def test_device_dtype_and_shapes_preserved():
    p = torch.tensor([0.05, 0.05, 0.9], dtype=torch.float64)
    q = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    a, H = mt.alpha_star(p, q, n=2, scheme="without", return_set=True)
    assert a.shape == () and a.dtype == torch.float64 and a.device == p.device
    assert H.shape == (3,) and H.dtype == torch.bool
    assert abs(float(a) - 41 / 70) <= 1e-15  # exact: subset-selection brute force
    a32 = mt.alpha_star(
        p.float()[None].repeat(3, 1), q.float()[None].repeat(3, 1), n=2, scheme="without"
    )
    assert a32.shape == (3,) and a32.dtype == torch.float32
    # numpy entry point hands tensors to the torch solver
    assert isinstance(fast.alpha_star(p, q, n=2, scheme="with"), torch.Tensor)


@pytest.mark.parametrize("scheme,n", SOLVER_CASES)
def test_core_has_no_host_sync(scheme, n):
    """The solver core dispatches no operator that reads device data on the host (any device).

    A TorchDispatchMode (``testkit.torch_spy``) records every aten operator of ``solve_rows``;
    the same operator list runs on CUDA, so an empty intersection with SYNC_OPS means no
    synchronisation there.
    """
    p, q = _edge_batch(seed=3, B=5)
    P, Q = torch.from_numpy(p), torch.from_numpy(q)
    route = kernel_for(scheme, n)
    with torch_spy() as spy:
        fast.solve_rows(P, Q, n, route, return_set=True)
    assert "aten.sort" in spy.ops or route in ("greedy", "single") or n == 1
    assert not spy.ops & SYNC_OPS, spy.ops & SYNC_OPS


@pytest.fixture
def second_device():
    """A stand-in for a second device on a CPU-only machine: tensors made without ``device=``
    land on ``meta`` while the inputs are on the CPU, so an operation mixing the two raises, as
    CPU/CUDA mixing does on a GPU (the first GPU run met one: the empty heavy masses of the
    with-replacement law were made on the default device)."""
    torch.set_default_device("meta")
    yield
    torch.set_default_device(None)


@pytest.mark.parametrize("path", ["bucket", "sort"])
@pytest.mark.parametrize("scheme,n", [*SOLVER_CASES, ("without", 8), ("conditional-poisson", 4)])
def test_every_tensor_on_the_input_device(scheme, n, path, second_device):
    from mdsd_ot.synthetic import synthetic_batch

    p, q = synthetic_batch(2, 6000, 0.7, 5)  # bucket path: phase 1 and survivors (V >= 4,096)
    P, Q = torch.from_numpy(p), torch.from_numpy(q)
    torch.set_default_device(None)
    ref = mt.alpha_star(P, Q, n=n, scheme=scheme, path=path)
    torch.set_default_device("meta")
    for dtype in (torch.float64, torch.float32):
        a, H = mt.alpha_star(P.to(dtype), Q.to(dtype), n=n, scheme=scheme, path=path,
                             return_set=True)  # fmt: skip
        assert a.device == P.device and H.device == P.device
    assert torch.max(torch.abs(a.double() - ref)) <= mt.FLOAT32_BOUND


@pytest.mark.parametrize("construction,n", [("relabel", 2), ("relabel", 4), ("cp2", 2)])
def test_verify_rows_every_tensor_on_the_input_device(construction, n, second_device):
    from mdsd_ot.drafts import ConditionalPoisson
    from mdsd_ot.synthetic import synthetic_batch
    from mdsd_ot.verifiers.chain.batched import verify_rows

    p, q = synthetic_batch(2, 6000, 1.0, 5)
    t = np.stack([ConditionalPoisson(q[b], n).sample(np.random.default_rng(b), 64) for b in (0, 1)])
    g = torch.Generator().manual_seed(0)
    out, acc, plans = verify_rows(torch.from_numpy(p), torch.from_numpy(q), n, torch.from_numpy(t),
                                  g, construction, return_plans=True)  # fmt: skip
    assert out.device.type == acc.device.type == "cpu" and out.shape == (2, 64)
    a = fast.alpha_star(p, q, n=n, scheme="with" if construction == "relabel" else
                        "conditional-poisson")  # fmt: skip
    assert np.max(np.abs(plans.alpha.cpu().numpy() - a)) <= 1e-12


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():  # pragma: no cover - needs a GPU
    p, q = _edge_batch(seed=9)
    for scheme, n in SOLVER_CASES:
        a_cpu = mt.alpha_star(torch.from_numpy(p), torch.from_numpy(q), n=n, scheme=scheme)
        a_gpu = mt.alpha_star(
            torch.from_numpy(p).cuda(), torch.from_numpy(q).cuda(), n=n, scheme=scheme
        )
        assert a_gpu.device.type == "cuda"
        assert torch.max(torch.abs(a_gpu.cpu() - a_cpu)) <= 1e-12


def test_bad_rows_are_named():
    p, q = _edge_batch(seed=1, B=6)
    P, Q = torch.from_numpy(p), torch.from_numpy(q)
    bad = P.clone()
    bad[4, 2] = float("nan")
    with pytest.raises(ValueError, match=r"p\[4\].*finite"):
        mt.alpha_star(bad, Q, n=2, scheme="with")
    bad = Q.clone()
    bad[1] *= 2
    with pytest.raises(ValueError, match=r"q\[1\].*normalise"):
        mt.alpha_star(P, bad, n=2, scheme="with")
    bad = Q.clone()
    bad[5] = 0.0
    bad[5, 0] = 1.0
    with pytest.raises(ValueError, match=r"q\[5\].*n <= 1"):
        mt.alpha_star(P, bad, n=2, scheme="conditional-poisson")
    half = mt.alpha_star(P.half(), Q.half(), n=2, scheme="with")  # the dtype rule: float32
    assert half.dtype == torch.float32
    with pytest.raises(ValueError, match="dtype"):
        mt.alpha_star(P, Q.float(), n=2, scheme="with")
    # float32 rows use the float32 sum tolerance (1e-4)
    P32 = P.float()
    P32[0] *= 1 + 5e-5
    mt.alpha_star(P32, Q.float(), n=2, scheme="with")


def test_non_tensor_inputs_follow_the_dtype_rule():
    """Lists become float64 (never torch's default float32); a tensor argument sets the dtype
    and device of the other; numpy float32 stays float32."""
    a = mt.alpha_star([0.05, 0.05, 0.9], [0.5, 0.3, 0.2], n=2, scheme="without")
    assert a.dtype == torch.float64 and abs(float(a) - 41 / 70) <= 1e-15
    q32 = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float32)
    assert mt.alpha_star([0.05, 0.05, 0.9], q32, n=2, scheme="without").dtype == torch.float32
    p32 = np.array([0.05, 0.05, 0.9], dtype=np.float32)
    assert mt.alpha_star(p32, p32, n=1, scheme="single").dtype == torch.float32
    law = mdsd_ot.drafts.WithoutReplacement([0.5, 0.3, 0.2], 2)
    a = mt.alpha_star([0.05, 0.05, 0.9], law)
    assert a.dtype == torch.float64 and abs(float(a) - 41 / 70) <= 1e-15


@pytest.mark.parametrize("path", ["auto", "bucket", "sort"])
def test_float32_conditional_poisson_rows_within_the_bound(path):
    """Found by the fast-solver fuzzer (2026-12-07): the bucket route ran the conditional-Poisson
    law in the rows' float32, whose Newton identities lose every digit of the light part beside
    a near point mass, and bounded it with float64 roundings.  V = 4,096, n = 8 gave 0.369 where
    α* = 0.499 (and 0.543 where α* = 0.452, above α*); flat rows at n = 16-24 were off by 2e-2.
    The law now runs in float64 whatever the rows' dtype, as the sequential series does."""
    rows = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        p = rng.dirichlet(np.full(4096, 0.05 if seed % 2 == 0 else 1.0))
        q = rng.dirichlet(np.ones(4096))
        if seed < 2:  # a near point mass, the rest 1e-6 in all
            q = np.full(4096, 1e-6 / 4096)
            q[0] = 1.0
        rows.append((p, q / q.sum()))
    P32 = torch.tensor(np.stack([r[0] for r in rows]), dtype=torch.float32)
    Q32 = torch.tensor(np.stack([r[1] for r in rows]), dtype=torch.float32)
    P64, Q64 = P32.double().numpy(), Q32.double().numpy()  # the law the float32 rows denote
    P64, Q64 = P64 / P64.sum(1, keepdims=True), Q64 / Q64.sum(1, keepdims=True)
    for n in (6, 8, 16, 24):
        ref = torch.from_numpy(fast.alpha_star(P64, Q64, n=n, scheme="conditional-poisson"))
        a = mt.alpha_star(P32, Q32, n=n, scheme="conditional-poisson", path=path)
        assert a.dtype == torch.float32
        assert torch.max(torch.abs(a.double() - ref)) <= mt.FLOAT32_BOUND, (n, a, ref)
        one = mt.alpha_star(P32[0], Q32[0], n=n, scheme="conditional-poisson", path=path)
        assert abs(one.double() - ref[0]) <= mt.FLOAT32_BOUND
