"""Mixed inputs of the torch solver: a numpy row beside a tensor is checked at the tolerance of
its own dtype before the cast (review of 2026-12-06: a float32 numpy q, normalised in float32,
was refused at float64's 1e-9 beside a float64 tensor p)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mdsd_ot import fast  # noqa: E402
from mdsd_ot import torch as mt  # noqa: E402


@pytest.mark.parametrize("solver", [mt.alpha_star, fast.alpha_star])
def test_float32_numpy_row_beside_a_float64_tensor(solver):
    q32 = np.array([1 / 3, 1 / 3, 1 / 3], np.float32)
    q32 /= q32.sum()  # sums to 1 in float32, 1 + 3e-8 in float64
    p = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    a = solver(p, q32, n=2, scheme="with")
    ref = fast.alpha_star(p.numpy(), q32.astype(np.float64) / q32.astype(np.float64).sum(), n=2,
                          scheme="with")  # fmt: skip
    assert abs(float(a) - ref) <= 1e-12
    b = solver(q32, p, n=2, scheme="with")  # the numpy row as p
    assert 0.0 <= float(b) <= 1.0
    bad = np.array([0.5, 0.6, 0.6], np.float32)  # off by far more than float32's tolerance
    with pytest.raises(ValueError, match=r"^q: entries sum to 1.7, not 1 \(tolerance 0.0001\)"):
        solver(p, bad, n=2, scheme="with")


@pytest.mark.parametrize("solver", [mt.alpha_star, fast.alpha_star])
@pytest.mark.parametrize("tdtype", [torch.float32, torch.float64])
def test_float16_numpy_row_beside_a_wider_tensor(solver, tdtype):
    """float16's tolerance (2^-10) applies to a float16 row, whatever the tensor's dtype."""
    q16 = np.array([0.1, 0.2, 0.7], np.float16)  # sums to 1.00012 in float64
    a = solver(torch.tensor([0.5, 0.3, 0.2], dtype=tdtype), q16, n=2, scheme="with")
    assert a.dtype == tdtype and abs(float(a) - 0.69) <= 1e-3  # α* of the rounded rows
