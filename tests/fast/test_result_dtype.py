"""The result dtype of the fast solver is the documented one on every route.

numpy inputs (float32 or float64) are computed in float64: a Python float for one row, a (B,)
float64 array for a batch.  Tensors keep float32 / float64 (mdsd_ot._validate), whatever the
path (sorting, bucket-and-bound, the sequential series' float64 Q), and H is a bool mask of the
input's library.  Regression: ``alpha_star(p, q, scheme="without", n=3)`` on float32 tensors
returned float64 from 4,096 tokens on (the bucket path) and with ``path="bucket"`` at any V.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import fast
from mdsd_ot.fast.without import prefix_Q_without

LAWS = [
    ("with", 2),
    ("with", 3),
    ("without", 2),
    ("without", 3),
    ("without", 4),
    ("conditional-poisson", 2),
    ("conditional-poisson", 3),
    ("greedy", 3),
    ("spechub", 2),
    ("single", 1),
]
PATHS = ("auto", "sort", "bucket")


def _rows(V: int, B: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lg = rng.standard_normal((B, V)) * 2
    P = np.exp(lg)
    Q = np.exp(lg + rng.standard_normal((B, V)))
    return P / P.sum(1, keepdims=True), Q / Q.sum(1, keepdims=True)


def _inputs(lib: str, dtype: str, V: int, B: int):
    P, Q = _rows(V, B)
    P, Q = P.astype(dtype), Q.astype(dtype)
    if B == 1:
        P, Q = P[0], Q[0]
    if lib == "torch":
        torch = pytest.importorskip("torch", reason="the torch extra is not installed")
        return torch.from_numpy(P), torch.from_numpy(Q)
    return P, Q


def _check(a, H, lib: str, dtype: str, B: int, V: int) -> None:
    if lib == "torch":
        import torch

        want = torch.float32 if dtype == "float32" else torch.float64
        assert isinstance(a, torch.Tensor) and a.dtype == want, a.dtype
        assert a.shape == (() if B == 1 else (B,))
        assert H is None or (isinstance(H, torch.Tensor) and H.dtype == torch.bool)
        assert H is None or H.shape == ((V,) if B == 1 else (B, V))
    else:  # numpy: float64 inside, whatever the input's float dtype
        if B == 1:
            assert isinstance(a, float), type(a)
        else:
            assert isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (B,)
        assert H is None or (isinstance(H, np.ndarray) and H.dtype == np.bool_)
        assert H is None or H.shape == ((V,) if B == 1 else (B, V))


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("scheme,n", LAWS)
def test_alpha_star_dtype_every_route(scheme, n, path, dtype, lib):
    """Every law × path × library × float dtype, one row and a batch, with and without H."""
    V = 40
    for B in (1, 3):
        p, q = _inputs(lib, dtype, V, B)
        a = fast.alpha_star(p, q, n=n, scheme=scheme, path=path)
        _check(a, None, lib, dtype, B, V)
        a, H = fast.alpha_star(p, q, n=n, scheme=scheme, path=path, return_set=True)
        _check(a, H, lib, dtype, B, V)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [2, 3])
def test_without_dtype_across_bucket_min_v(n, dtype, lib):
    """The reported case: the same dtype below and from BUCKET_MIN_V on (path="auto")."""
    from mdsd_ot.fast.solver import BUCKET_MIN_V

    for V in (BUCKET_MIN_V - 1, BUCKET_MIN_V):
        p, q = _inputs(lib, dtype, V, 1)
        a, H = fast.alpha_star(p, q, n=n, scheme="without", return_set=True)
        _check(a, H, lib, dtype, 1, V)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("path", PATHS)
def test_alpha_star_laws_dtype(path, dtype):
    """Several laws at once keep the tensors' dtype too (one bucketing pass, several chains)."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    p, q = _inputs("torch", dtype, 40, 3)
    laws = [("with", 2), ("without", 2), ("without", 3), ("conditional-poisson", 3)]
    out = fast.alpha_star_laws(p, q, laws=laws, path=path)
    want = torch.float32 if dtype == "float32" else torch.float64
    assert {k: v.dtype for k, v in out.items()} == {k: want for k in laws}


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_prefix_Q_without_dtype(dtype, lib):
    """The series' Q and error bound are float64 as documented (float32 is computed in float64)."""
    p, q = _inputs(lib, dtype, 40, 3)
    qs = -np.sort(-np.asarray(q), axis=-1)
    if lib == "torch":
        import torch

        qs = torch.from_numpy(np.ascontiguousarray(qs))
    Q, err = prefix_Q_without(qs, 3)
    if lib == "torch":
        assert Q.dtype == torch.float64 and err.dtype == torch.float64
    else:
        assert Q.dtype == np.float64 and np.asarray(err).dtype == np.float64
    assert tuple(Q.shape) == (3, 41)
