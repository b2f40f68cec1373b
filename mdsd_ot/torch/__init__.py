r"""The fast solver (T7, T4, T9) on torch tensors: batched (B, V), float32 / float64, any device.

This is *the same algorithm* as :func:`mdsd_ot.fast.alpha_star`: the functions of
:mod:`mdsd_ot.fast` are written against the array-API standard (``array-api-compat``) and run
unchanged on tensors.  This module only adds the torch boundary: the lazy import, the on-device
validation (one host synchronisation to read the "all rows valid" flag; the solver core after it
has none), and results on the input's device and dtype.

.. math::

   \alpha^* = 1 + \min_{k=0..V} \bigl[P(H_k) - Q(H_k)\bigr]

Accuracy: float64 agrees with the numpy solver to 1e-12 (``tests/test_torch.py``).  float32
accumulates prefix sums in float32; the largest deviation from the float64 value measured on
realistic and random rows is recorded in :data:`FLOAT32_BOUND` and checked by the tests.
"""

from __future__ import annotations

from typing import Any

from ..fast import solve_rows
from ..fast._check import check_array, check_scheme_n

__all__ = ["alpha_star", "FLOAT32_BOUND"]

#: Bound on |α*_float32 − α*_float64| checked by the tests: 1e-5.  Measured on CPU (sequential
#: float32 prefix sums, the worst case for rounding) over realistic rows (Zipf-like logits,
#: temperature 0.7, noise 0.5-1.5) and flat Dirichlet rows at V = 32,000 and 152,064, every
#: scheme: at most 9e-7 (not yet measured on a GPU, whose scans sum in another order).
FLOAT32_BOUND: float = 1e-5


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without torch
        raise ImportError(
            "mdsd_ot.torch needs PyTorch; install it with pip install 'mdsd-ot[torch]'"
        ) from exc
    return torch


def alpha_star(p: Any, q: Any, *, n: int, scheme: str, return_set: bool = False):
    r"""Exact α* for q-convex draft laws on torch tensors (see :func:`mdsd_ot.fast.alpha_star`).

    Parameters
    ----------
    p, q : (V,) or (B, V) torch.Tensor
        Target and draft rows, float32 or float64, on the same device (other array-likes are
        converted with ``torch.as_tensor``).  Rows are validated on the device (errors name the
        bad row), clipped at 0 and renormalised.
    n : int
        Number of drafts.
    scheme : str
        ``"with"``, ``"without"``, ``"conditional-poisson"``, ``"greedy"``, ``"spechub"`` or
        ``"single"``.
    return_set : bool
        Also return an optimal H as a boolean mask (original token order).

    Returns
    -------
    alpha : 0-d or (B,) torch.Tensor
        α*, on the input's device and in its dtype (no host synchronisation after validation).
    H : (V,) or (B, V) bool torch.Tensor
        Only with ``return_set=True``.

    Examples
    --------
    >>> import torch
    >>> alpha_star(torch.tensor([0.5, 0.5]), torch.tensor([0.75, 0.25]), n=2, scheme="with")
    tensor(0.9375)
    >>> p = torch.tensor([[0.5, 0.5], [0.1, 0.9]], dtype=torch.float64)
    >>> alpha_star(p, p.flip(-1), n=1, scheme="single")
    tensor([1.0000, 0.2000], dtype=torch.float64)
    """
    torch = _torch()
    scheme, n = check_scheme_n(scheme, n)
    p = p if isinstance(p, torch.Tensor) else torch.as_tensor(p)
    q = q if isinstance(q, torch.Tensor) else torch.as_tensor(q, device=p.device)
    if p.device != q.device:
        raise ValueError(f"q: is on {q.device} but p is on {p.device}; put both on one device")
    P, Q = check_array(p, q, n, scheme)
    alpha, H, _ = solve_rows(P, Q, n, scheme, return_set)
    if p.ndim == 1:
        alpha = alpha[0]
        H = None if H is None else H[0]
    return (alpha, H) if return_set else alpha
