"""``verifiers.get("optimal", draft).sample_rows(P, Qd, draft_tokens, rng)`` on every route.

- The boundary checks (numpy rows and tensors, every construction): ``P`` and ``Qd`` of one
  shape, ``draft_tokens`` of shape (B, n) or (B, k, n) with the bound law's n, integer ids in
  0..V-1, each refused with a message naming the argument (they were silent outputs, raw
  IndexErrors and broadcasting errors).
- (B, k, n) tuples on every route (numpy, the batched tensor route, the host route for the
  sequential and conditional-Poisson constructions): (B, k) outputs, as the relabel route's.
- The laws whose optimum is the set-reduced plan at small V (sequential, conditional Poisson
  with n >= 3): the rows are verified one at a time with their own law's optimal verifier
  (they were refused as having no batched form); the output law is p (G-test p-value > 1e-4
  per row at a fixed seed) and the acceptance α* within 4 standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import fast, verifiers
from mdsd_ot.drafts import ConditionalPoisson, Greedy, WithoutReplacement, WithReplacement
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import ChainOptimal
from mdsd_ot.verifiers.optimal import ReducedOptimal
from testkit import g_test_pvalue

#: (law class, n): every chain construction (relabel, cp2, cp-swap, seq2, seq-swap) at V = 200,
#: where the default for the distinct-token laws is the chain verifier, not the reduced plan.
CHAIN_LAWS = [
    (WithReplacement, 2),
    (ConditionalPoisson, 2),
    (ConditionalPoisson, 3),
    (WithoutReplacement, 2),
    (WithoutReplacement, 3),
]


def _rows(V: int, B: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(V), size=B), rng.dirichlet(np.ones(V), size=B)


def _tuples(cls, Q: np.ndarray, n: int, k: int, seed: int) -> np.ndarray:
    """(B, k, n) tuples: k drawn from each row's own law."""
    rng = np.random.default_rng(seed)
    return np.stack([sample_drafts(cls(q, n), rng, k) for q in Q])


def _libs():
    libs = [("numpy", lambda x: np.asarray(x))]
    try:
        import torch
    except ImportError:  # pragma: no cover - the torch extra is not installed
        return libs
    return [*libs, ("torch", lambda x: torch.as_tensor(np.asarray(x)))]


@pytest.mark.parametrize("lib,conv", _libs(), ids=[name for name, _ in _libs()])
@pytest.mark.parametrize("V", [200, 6])  # 6: the set-reduced plan for the distinct laws
@pytest.mark.parametrize("cls,n", CHAIN_LAWS)
def test_boundary_checks_name_the_argument(cls, n, V, lib, conv):
    P, Q = _rows(V, 3, 1)
    v = verifiers.get("optimal", cls(Q[0], n))
    t = _tuples(cls, Q, n, 1, 2)[:, 0]  # (3, n)
    good = v.sample_rows(conv(P), conv(Q), conv(t), 0)
    assert tuple(good[0].shape) == (3,) and tuple(good[1].shape) == (3,)

    def refused(match, P_, Q_, t_):
        with pytest.raises(ValueError, match=match):
            v.sample_rows(conv(P_), conv(Q_), conv(t_), 0)

    refused(r"Qd: has shape \(2, \d+\) but P has shape \(3, \d+\)", P, Q[:2], t)
    refused(r"Qd: has shape \(3, \d+\) but P has shape \(2, \d+\)", P[:2], Q, t[:2])
    shape = rf"draft_tokens: expected shape \(B, n\) = \(3, {n}\) or \(B, k, n\)"
    refused(shape + r".*got \(2, ", P, Q, t[:2])  # one tuple too few
    refused(shape + rf".*got \(3, {n + 1}\)", P, Q, np.c_[t, t[:, :1]])  # n + 1 drafts
    refused(shape + r".*got \(3, 1\)", P, Q, t[:, :1])  # one draft (n >= 2 here)
    refused(shape + rf".*got \(3, 2, {n + 1}\)", P, Q, np.zeros((3, 2, n + 1), int))
    for bad in (V, V + 4000, -1):
        tb = t.copy()
        tb[1, 0] = bad
        refused(rf"draft_tokens: token id {bad} is outside the vocabulary 0\.\.{V - 1}", P, Q, tb)
    refused("draft_tokens: must hold integer token ids", P, Q, t.astype(float))
    # row values: the same names on the numpy and the device routes (the device route said
    # p[0] / q[1] before)
    Pb, Qb = P.copy(), Q.copy()
    Pb[0, 0] = -1.0
    Qb[1, 1] = -1.0
    refused(r"P\[0\]: entry 0 is negative", Pb, Q, t)
    refused(r"Qd\[1\]: entry 1 is negative", P, Qb, t)


@pytest.mark.parametrize("lib,conv", _libs(), ids=[name for name, _ in _libs()])
@pytest.mark.parametrize("V", [200, 6])
@pytest.mark.parametrize("cls,n", CHAIN_LAWS)
def test_k_tuples_per_row_on_every_route(cls, n, V, lib, conv):
    """(B, k, n) tuples give (B, k) outputs and flags on every route, in the input's library;
    the flags say whether each output is one of its tuple's drafts."""
    B, k = 3, 5
    P, Q = _rows(V, B, 3)
    v = verifiers.get("optimal", cls(Q[0], n))
    t = _tuples(cls, Q, n, k, 4)
    out, acc = v.sample_rows(conv(P), conv(Q), conv(t), 0)
    assert type(out) is type(conv(t)) and type(acc) is type(conv(t))
    out, acc = np.asarray(out), np.asarray(acc)
    assert out.shape == (B, k) and acc.shape == (B, k)
    assert out.dtype == np.int64 and acc.dtype == np.bool_
    assert np.array_equal(acc, (t == out[..., None]).any(axis=-1))
    assert out.min() >= 0 and out.max() < V


@pytest.mark.parametrize("cls,n", [(ConditionalPoisson, 3), (WithoutReplacement, 2),
                                   (WithoutReplacement, 3)])  # fmt: skip
def test_k_tuples_host_route_is_lossless(cls, n):
    """The chain host route with k tuples per row (one plan per row): each row's output law is
    its p (G-test p-value > 1e-4 at a fixed seed)."""
    V, B, k = 30, 2, 20_000
    P, Q = _rows(V, B, 5)
    v = ChainOptimal(cls(Q[0], n))
    out, _ = v.sample_rows(P, Q, _tuples(cls, Q, n, k, 6), np.random.default_rng(7))
    for b in range(B):
        assert g_test_pvalue(out[b], P[b]) > 1e-4, (cls.__name__, n, b)


@pytest.mark.parametrize("method", [None, "reduced"])
@pytest.mark.parametrize("cls", [WithoutReplacement, ConditionalPoisson])
@pytest.mark.parametrize("n", [2, 3])
def test_reduced_rows_are_optimal(cls, n, method):
    """V = 6, B = 3 rows, each with its own p and q: the batched form where the optimum is the
    set-reduced plan (the default of these laws at small V, except two conditional-Poisson
    drafts, whose default is ``cp2``; ``method="reduced"`` forces the plan).

    Per row, 40,000 tuples of its own law: the G-test of the output against p has p-value
    > 1e-4 (fixed seeds), and the acceptance is within 4 standard errors of the row's α*."""
    V, B, k = 6, 3, 40_000
    P, Q = _rows(V, B, 10 * n + (cls is ConditionalPoisson))
    v = verifiers.get("optimal", cls(Q[0], n), method=method)
    cp2 = cls is ConditionalPoisson and n == 2 and method is None
    assert isinstance(v.engine(), ChainOptimal if cp2 else ReducedOptimal)
    t = _tuples(cls, Q, n, k, 11)
    out, acc = v.sample_rows(P, Q, t, np.random.default_rng(12))
    assert out.shape == (B, k) and np.array_equal(acc, (t == out[..., None]).any(axis=-1))
    for b in range(B):
        assert g_test_pvalue(out[b], P[b]) > 1e-4, b
        a = float(fast.alpha_star(P[b], Q[b], n=n, scheme=cls(Q[b], n).fast_kernel))
        se = np.sqrt(a * (1 - a) / k)
        assert abs(acc[b].mean() - a) <= 4 * se + 1e-12, (b, acc[b].mean(), a)
    one, _ = v.sample_rows(P, Q, t[:, 0], 0)  # (B, n): one output per row
    assert one.shape == (B,)


def test_reduced_rows_on_tensors():
    """Tensors go through the host and come back on their device, as the chain host route."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    P, Q = _rows(6, 3, 2)
    v = verifiers.get("optimal", WithoutReplacement(Q[0], 3))
    t = _tuples(WithoutReplacement, Q, 3, 4, 3)
    Pt, Qt, tt = torch.tensor(P), torch.tensor(Q), torch.tensor(t)
    runs = [v.sample_rows(Pt, Qt, tt, torch.Generator().manual_seed(1)) for _ in range(2)]
    out, acc = runs[0]
    assert isinstance(out, torch.Tensor) and out.shape == (3, 4) and acc.dtype == torch.bool
    assert torch.equal(out, runs[1][0])  # seeded: reproducible


def test_laws_without_a_batched_form_are_refused():
    P, Q = _rows(6, 2, 4)
    with pytest.raises(ValueError, match="has no batched form"):
        verifiers.get("optimal", Greedy(Q[0], 2)).sample_rows(P, Q, [[0, 1], [0, 2]], 0)


@pytest.mark.parametrize(
    "cls, n",
    [
        (WithReplacement, 2),
        (ConditionalPoisson, 2),
        (WithoutReplacement, 2),
        (ConditionalPoisson, 3),
    ],
)
def test_mixed_inputs_empty_batches_bfloat16_and_bad_rng(cls, n):
    """Found by the review of 2026-12-06: numpy rows with tensor tokens (a dtype TypeError), a
    tensor P beside a numpy Qd ("Qd: is on cpu but P is on cpu", or an AttributeError on the
    host routes), B = 0 tensors (a reshape error), bfloat16 tensors on the host routes (numpy
    has no bfloat16) and rng="x" (a SeedSequence TypeError)."""
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(0)
    V = 12
    P, Q = g.dirichlet(np.ones(V), size=3), g.dirichlet(np.ones(V), size=3)
    v = verifiers.get("optimal", cls(Q[0], n))
    t = np.stack([sample_drafts(cls(Q[b], n), g, 1)[0] for b in range(3)])
    out, acc = v.sample_rows(P, Q, torch.from_numpy(t), 1)  # numpy rows, tensor tokens
    assert out.shape == (3,) and np.all((t == out[:, None]).any(axis=1) == acc)
    out, acc = v.sample_rows(torch.from_numpy(P), Q, t, 1)  # tensor P, numpy Qd
    assert torch.is_tensor(out) and out.shape == (3,)
    P32, Q32 = torch.from_numpy(P).float(), Q.astype(np.float32)  # float32 both: float32's rule
    P32, Q32 = P32 / P32.sum(-1, keepdim=True), Q32 / Q32.sum(-1, keepdims=True)
    out, acc = v.sample_rows(P32, Q32, t, 1)
    assert torch.is_tensor(out) and out.shape == (3,)
    out, acc = v.sample_rows(torch.from_numpy(P[0]), Q[0].tolist(), t[0], 1)  # one row, a list
    assert out.shape == (1,)
    out, acc = v.sample_rows(torch.zeros((0, V), dtype=torch.float64),
                             torch.zeros((0, V), dtype=torch.float64),
                             torch.zeros((0, n), dtype=torch.int64), 1)  # fmt: skip
    assert out.shape == (0,) and acc.shape == (0,)
    Pb = torch.from_numpy(P).bfloat16()
    Pb = Pb / Pb.float().sum(-1, keepdim=True).bfloat16()
    Qb = torch.from_numpy(Q).bfloat16()
    Qb = Qb / Qb.float().sum(-1, keepdim=True).bfloat16()
    out, acc = v.sample_rows(Pb, Qb, torch.from_numpy(t), 1)  # checked at bfloat16's tolerance
    assert out.shape == (3,) and bool(((torch.from_numpy(t) == out[:, None]).any(1) == acc).all())
    for bad in ("x", -1, 2.5):
        with pytest.raises(ValueError, match=r"^rng: give a numpy Generator"):
            v.sample_rows(P, Q, t, bad)
        with pytest.raises(ValueError, match=r"^rng: give a numpy Generator"):
            v.sample_rows(torch.from_numpy(P), torch.from_numpy(Q), torch.from_numpy(t), bad)


def test_verify_rows_of_no_rows_is_empty():
    """B = 0 on the array route: empty outputs (a reshape error before), in numpy and torch."""
    from mdsd_ot.verifiers.chain.batched import verify_rows

    for construction in ("relabel", "cp2"):
        out, acc = verify_rows(np.zeros((0, 5)), np.zeros((0, 5)), 2, np.zeros((0, 2), np.int64),
                               0, construction=construction)  # fmt: skip
        assert out.shape == acc.shape == (0,) and out.dtype == np.int64 and acc.dtype == bool
