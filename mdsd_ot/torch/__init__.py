r"""The fast solver (T7, T4, T9) on torch tensors: batched (B, V), float32 / float64, any device.

This is *the same algorithm* as :func:`mdsd_ot.fast.alpha_star`, which runs unchanged on
tensors (array-API standard, :mod:`mdsd_ot.fast._backend`).  This module is only the torch
boundary: the lazy import of torch, the conversion of non-tensor inputs (the dtype rule below),
and the call into :mod:`mdsd_ot.fast`, which validates the rows on their device (one host
synchronisation to read the "all rows valid" flag; the solver core after it has none) and
returns results on the input's device and in its dtype.

.. math::

   \alpha^* = 1 + \min_{k=0..V} \bigl[P(H_k) - Q(H_k)\bigr]

Accuracy: float64 agrees with the numpy solver to 1e-12 (``tests/torch_backend/test_torch_solver.py``).
float32 accumulates prefix sums in float32; the largest deviation from the float64 value
measured on realistic and random rows is recorded in :data:`FLOAT32_BOUND` and checked by the
tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V_
from .. import fast
from ..drafts import DraftLaw

__all__ = ["alpha_star", "FLOAT32_BOUND"]

#: Bound on |α*_float32 − α*_float64| checked by the tests: 1e-5.  Measured on CPU (sequential
#: float32 prefix sums, the worst case for rounding) over realistic rows (Zipf-like logits,
#: temperature 0.7, noise 0.5-1.5) and flat Dirichlet rows at V = 32,000 and 152,064, every
#: scheme: at most 9e-7; on an H200 GPU, whose scans sum in another order, at most 2.0e-6
#: (``benchmarks/torch_gpu.py``, docs/fast.md "On a GPU").  It holds for n up to about 16:
#: the error of the float32 prefix powers grows about linearly in n (i.i.d. drafts, V = 500,
#: flat Dirichlet rows: 7.7e-7 at n = 8, 3.0e-6 at n = 32, 1.4e-5 at n = 100, 1.4e-4 at
#: n = 1,000), and faster beside a near point mass (q₀ = 1 − 10⁻⁴, V = 8,192: 1.3e-5 at
#: n = 32, 2.0e-5 at n = 50); for more drafts use float64.  Conditional Poisson is evaluated
#: in float64 on float32 rows (its Newton identities have no digit left in float32).
FLOAT32_BOUND: float = 1e-5


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without torch
        raise ImportError(
            "mdsd_ot.torch needs PyTorch; install it with pip install 'mdsd-ot[torch]'"
        ) from exc
    return torch


def alpha_star(
    p: Any,
    q: Any,
    *,
    n: int | None = None,
    scheme: str | None = None,
    return_set: bool = False,
    path: str = "auto",
):
    r"""Exact α* for q-convex draft laws on torch tensors (see :func:`mdsd_ot.fast.alpha_star`).

    Parameters
    ----------
    p : (V,) or (B, V) torch.Tensor or array_like
        Target rows.  Tensors must be float32 or float64; p and q on the same device.
    q : (V,) or (B, V) torch.Tensor or array_like, or a draft law
        Draft rows, or a draft law of :mod:`mdsd_ot.drafts` (its q becomes a float64 tensor on
        p's device).
    n : int
        Number of drafts (with an array ``q``).
    scheme : str
        ``"with"``, ``"without"``, ``"conditional-poisson"``, ``"greedy"``, ``"spechub"`` or
        ``"single"`` (with an array ``q``).
    return_set : bool
        Also return an optimal H as a boolean mask (original token order).
    path : str
        ``"auto"``, ``"sort"`` or ``"bucket"``, as in :func:`mdsd_ot.fast.alpha_star`.

    Returns
    -------
    alpha : 0-d or (B,) torch.Tensor
        α*, on the input's device and in its dtype (no host synchronisation after validation).
    H : (V,) or (B, V) bool torch.Tensor
        Only with ``return_set=True``.

    Notes
    -----
    The dtype rule for inputs that are not tensors: they become tensors of the other argument's
    dtype and device when that one is a tensor; otherwise float64 on the CPU (Python lists and
    integer arrays) or the array's own float dtype (numpy float32 / float64).  Lists are never
    silently rounded to torch's default float32.

    Examples
    --------
    >>> import torch
    >>> alpha_star(torch.tensor([0.5, 0.5]), torch.tensor([0.75, 0.25]), n=2, scheme="with")
    tensor(0.9375)
    >>> p = torch.tensor([[0.5, 0.5], [0.1, 0.9]], dtype=torch.float64)
    >>> alpha_star(p, p.flip(-1), n=1, scheme="single")
    tensor([1.0000, 0.2000], dtype=torch.float64)
    >>> alpha_star([0.5, 0.5], [0.75, 0.25], n=2, scheme="with").dtype  # lists: float64
    torch.float64
    """
    torch = _torch()
    if isinstance(q, DraftLaw):
        p = p if isinstance(p, torch.Tensor) else _own_tensor(torch, p, "p")
    else:
        p, q = _as_tensors(torch, p, q)
    return fast.alpha_star(p, q, n=n, scheme=scheme, return_set=return_set, path=path)


def _own_tensor(torch: Any, x: Any, name: str = "p") -> Any:
    """A tensor of a non-tensor input that has no tensor to follow (the dtype rule)."""
    a = V_.real_array(x, name)  # refuses complex, bool and non-numbers; rationals to float64
    if a.dtype in (np.float32, np.float64):
        return torch.from_numpy(np.ascontiguousarray(a))
    if a.dtype.kind in "iu":
        return torch.from_numpy(a.astype(np.float64))
    return torch.as_tensor(a)  # float16: the validator refuses it by its rule


def _as_tensors(torch: Any, p: Any, q: Any) -> tuple[Any, Any]:
    """Both inputs as tensors by the dtype rule of :func:`alpha_star`."""
    ref = p if isinstance(p, torch.Tensor) else q if isinstance(q, torch.Tensor) else None
    out = []
    for x, name in ((p, "p"), (q, "q")):
        if isinstance(x, torch.Tensor):
            out.append(x)
        elif ref is not None and ref.dtype in (torch.float32, torch.float64):
            a = V_.checked_before_cast(V_.real_array(x, name), name, ref.dtype.itemsize)
            out.append(torch.as_tensor(a, dtype=ref.dtype, device=ref.device))
        else:
            out.append(_own_tensor(torch, x, name))
    return out[0], out[1]
