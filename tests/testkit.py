"""Helpers shared by the tests (import as ``from testkit import ...``; ``tests/`` is on the path).

The reference alpha bank (192 rational instances with exact α* computed independently of the
package, kept in ``tests/data/alpha_bank.json`` with its provenance), seeded random vectors, the
array backends of the solver tests with their (scheme, n) cases, a spy on torch's operators, a
probe of the order in which numpy's ``einsum`` sums, and the G-test of a sample against p.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdsd_ot import drafts

#: The reference bank, kept in the repository with its provenance (see the file's "provenance").
BANK_PATH = Path(__file__).resolve().parent / "data" / "alpha_bank.json"


def load_bank() -> list[dict]:
    """The 192 rational instances with independently computed exact alpha*."""
    instances = json.loads(BANK_PATH.read_text())["instances"]
    assert len(instances) == 192, f"{BANK_PATH}: expected 192 instances, found {len(instances)}"
    return instances


def bank_law(inst: dict):
    """The draft law of a bank instance, or None for the 3 greedy instances outside its domain.

    Greedy with n - 1 >= V has no token outside its top n - 1, so the last draft is undefined;
    ``Greedy`` rejects it (tested in test_drafts.py).  Every other instance must build.
    """
    if inst["scheme"] == "greedy" and inst["n"] - 1 >= len(inst["p"]):
        return None
    return drafts.from_spec(inst)


def bank_alpha(inst: dict) -> Fraction:
    return Fraction(inst["alpha"])


def dirichlet(rng: np.random.Generator, V: int, conc: float) -> np.ndarray:
    """A Dirichlet draw with occasional exact zeros and ties (seeded)."""
    x = rng.dirichlet(np.full(V, conc))
    r = rng.random()
    if r < 0.15 and V > 2:
        k = rng.integers(V)
        if x.sum() - x[k] > 0:  # never zero the only token with mass (small concentrations)
            x[k] = 0.0
    elif r < 0.25 and V > 2:
        i, j = rng.choice(V, 2, replace=False)
        x[j] = x[i]
    elif r < 0.3:
        x[rng.integers(V)] = 1e-12
    return x / x.sum()


class Backend:
    """An array backend of the fast solver's tests: numpy, or torch on the CPU in one dtype.

    ``asarray`` turns float64 numpy test data into the backend's arrays, ``to_numpy`` brings
    results back; ``float32`` says the backend computes in float32, where a test's tolerance is
    at least ``mdsd_ot.torch.FLOAT32_BOUND`` (see :meth:`tol`).
    """

    def __init__(self, name: str):
        self.name = name
        self.float32 = name == "torch-float32"
        self.torch = None
        if name.startswith("torch"):
            self.torch = pytest.importorskip("torch", reason="the torch extra is not installed")

    def __repr__(self) -> str:
        return self.name

    def asarray(self, x):
        """A fresh array (a copy) of the float64 data ``x`` in this backend."""
        if self.torch is None:
            return np.array(x, dtype=np.float64)
        dtype = self.torch.float32 if self.float32 else self.torch.float64
        return self.torch.tensor(np.asarray(x, dtype=np.float64), dtype=dtype)

    def to_numpy(self, x):
        """A numpy array (float64, or bool) of a result of this backend."""
        if self.torch is not None and isinstance(x, self.torch.Tensor):
            return x.detach().cpu().double().numpy() if x.dtype != self.torch.bool else x.numpy()
        return np.asarray(x)

    def tol(self, exact: float) -> float:
        """The tolerance of a float64 check on this backend (float32: FLOAT32_BOUND at least)."""
        if self.float32:
            from mdsd_ot.torch import FLOAT32_BOUND

            return max(exact, FLOAT32_BOUND)
        return exact


#: (scheme, n) of the solver tests run on every backend: every scheme of
#: ``drafts.FAST_SCHEMES`` (checked in tests/fast/test_fast_solver.py), n from 1 to 4.
SOLVER_CASES: list[tuple[str, int]] = [
    ("with", 1),
    ("with", 2),
    ("with", 4),
    ("without", 2),
    ("without", 3),
    ("without", 4),
    ("conditional-poisson", 2),
    ("conditional-poisson", 3),
    ("greedy", 2),
    ("greedy", 4),
    ("spechub", 2),
    ("single", 1),
]

#: aten operators that copy data to the host (``.item()``, ``bool(t)``, boolean-mask indexing):
#: on a GPU each is a host-device synchronisation.
SYNC_OPS = frozenset(
    {"aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.item"}
)


def peaked_random_row(seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(p, q, n) of the peaked random rows of the swap-design sweeps: V in [8, 60), n in
    [3, min(V - 1, 26)), log-normal p and q at a scale of 1, 2, 4 or 8 (seeded)."""
    g = np.random.default_rng(seed)
    V = int(g.integers(8, 60))
    n = int(g.integers(3, min(V - 1, 26)))
    sc = float(g.choice([1, 2, 4, 8]))
    z = g.normal(size=V) * sc
    p, q = np.exp(z - z.max()), np.exp(z + g.normal(size=V) * sc)
    return p / p.sum(), q / q.sum(), n


def torch_spy():
    """A TorchDispatchMode recording the aten operators a block of code dispatches (``.ops``).

    ``with torch_spy() as spy: ...``, then ``spy.ops & SYNC_OPS`` lists the host reads; the same
    operator list runs on CUDA, so an empty intersection means no synchronisation there.  Call
    it after ``pytest.importorskip("torch")``.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class Spy(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: set[str] = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.add(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    return Spy()


def einsum_in_order() -> bool:
    """Whether numpy's ``einsum("kc,ck->c", a, b)`` equals the in-order sum
    ``((0 + a_0 b_0) + a_1 b_1) + ...`` bitwise (tolerance 0) on data whose sums depend on the
    order: where it does, the compiled series passes give the numpy route's law bit for bit."""
    g = np.random.default_rng(5)
    for K1, C in ((2, 7), (13, 8192), (41, 300)):
        a = g.standard_normal((K1, C)) * 10.0 ** g.integers(-12, 12, (K1, C))
        b = g.standard_normal((C, K1)) * 10.0 ** g.integers(-12, 12, (C, K1))
        ref = np.zeros(C)
        for k in range(K1):
            ref = ref + a[k] * b[:, k]
        got = np.einsum("kc,ck->c", a, b)
        if got.dtype != ref.dtype or not np.array_equal(got, ref):
            return False
    return True


def g_test_pvalue(out: np.ndarray, p: np.ndarray, min_expected: float = 20.0) -> float:
    """p-value of the G-test of the sample ``out`` (token ids) against p: the tokens whose
    expected count is at least ``min_expected`` one by one, the rest pooled in a tail bucket.
    A token of probability 0 in the sample fails the test outright (an assertion)."""
    from scipy.stats import chi2

    N = len(out)
    order = np.argsort(p)[::-1]
    E = N * p[order]
    k = max(1, int(np.sum(E >= min_expected)))
    O = np.bincount(out, minlength=len(p))[order]
    obs = np.r_[O[:k], O[k:].sum()]
    exp = np.r_[E[:k], E[k:].sum()]
    keep = exp > 0
    assert obs[~keep].sum() == 0, "a token of probability 0 was output"
    obs, exp = obs[keep], exp[keep]
    nz = obs > 0
    G = 2.0 * np.sum(obs[nz] * np.log(obs[nz] / exp[nz]))
    return float(chi2.sf(G, max(len(obs) - 1, 1)))


def array_libs() -> list[tuple[str, Any]]:
    """``[(name, convert)]``: numpy, and torch (CPU tensors) when the torch extra is installed;
    for tests that run one input as an array of each library."""
    libs: list[tuple[str, Any]] = [("numpy", np.asarray)]
    try:
        import torch
    except ImportError:  # pragma: no cover - the torch extra is not installed
        return libs
    return [*libs, ("torch", lambda x: torch.as_tensor(np.asarray(x)))]


def check_exact_pair_plan(plan, p: list, q: list, n: int, law_cls, trial: Any) -> None:
    """A pair plan (``cp-pair`` or ``seq-pair``) of rational rows ``p``, ``q``: every draft
    set hands over with probability at most 1 (floats, with ``seq-pair``'s thinning), the
    exact output law of ``ChainOptimal(law_cls(q, n)).exact`` (Fractions) is p, its exact
    selection law is within the plan's law error of the float one, and the acceptance is
    within 1e-8 of α* (``law_cls``: ``ConditionalPoisson`` or ``WithoutReplacement``)."""
    import itertools

    from mdsd_ot.fast import alpha_star
    from mdsd_ot.verifiers.chain import ChainOptimal

    V = len(p)
    pf, qf = np.array([float(x) for x in p]), np.array([float(x) for x in q])
    slots = np.arange(V)
    sets = np.array(list(itertools.combinations(slots[qf[plan.order] > 0], n)))
    lam = plan.pair.hand_over(sets.max(axis=1)[:, None], sets)
    if plan.pair.thin is not None:
        lam = lam * plan.pair.thin.factor(sets)[:, None]
    assert np.all(lam.sum(axis=1) <= 1.0), trial
    law = law_cls([str(x) for x in q], n)
    v = ChainOptimal(law)
    out, acc = v.exact([str(x) for x in p])
    assert all(out[i] == p[i] for i in range(V)), trial
    ctx = v._setup(p, law, True)
    assert ctx.construction == plan.construction
    T = np.empty(V)
    T[plan.order] = plan.T
    exact_T = np.array([float(x) for x in ctx.selection])
    assert np.abs(T - exact_T).sum() <= plan.law_error + 1e-15, trial
    a = float(alpha_star(pf / pf.sum(), qf / qf.sum(), n=n, scheme=law.scheme))
    assert a - 1e-8 <= float(ctx.acceptance) <= float(acc) <= a + 1e-12, trial
