r"""``mdsd-ot alpha``: α* for a batch of positions from files (the fast solver, T7).

.. code-block:: text

   mdsd-ot alpha --p-file P --q-file Q -n N --scheme S [--device cpu|cuda]
                 [--dtype float32|float64] [--out FILE]

P and Q hold (B, V) (or (V,)) probability rows as ``.npy``, ``.pt`` (a tensor, or a dict with
one tensor or a tensor under "p" / "q") or ``.safetensors`` (one tensor, or one named "p" /
"q").  Without ``--device`` numpy inputs run on the numpy solver (float64); with ``--device``
(or a ``.pt`` input) the torch solver runs on that device in ``--dtype``.  Prints the mean and
quantiles of α* and the positions per second; ``--out`` saves α* (``.npy``, ``.pt``, ``.json``,
``.csv`` or ``.txt``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from ._common import bad_input_exits_2

QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)
FORMATS = (".npy", ".pt", ".safetensors")


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise ValueError(
            "--device / .pt inputs need PyTorch; install it with pip install 'mdsd-ot[torch]'"
        ) from exc
    return torch


def _pick(tensors: dict, name: str, path: Path) -> Any:
    if len(tensors) == 1:
        return next(iter(tensors.values()))
    if name in tensors:
        return tensors[name]
    raise ValueError(
        f"--{name}-file: {path} holds tensors {sorted(tensors)}; store one tensor, or one "
        f"named {name!r}"
    )


def load_rows(path: Path, name: str) -> Any:
    """Read one (B, V) or (V,) array from .npy / .pt / .safetensors (numpy or torch)."""
    if not path.exists():
        raise ValueError(f"--{name}-file: file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if suffix == ".pt":
        obj = _torch().load(path, map_location="cpu", weights_only=True)
        return _pick(obj, name, path) if isinstance(obj, dict) else obj
    if suffix == ".safetensors":
        try:
            from safetensors.numpy import load_file
        except ImportError as exc:
            raise ValueError(
                "--p-file/--q-file: .safetensors needs the safetensors package; "
                "pip install 'mdsd-ot[torch]'"
            ) from exc
        return _pick(load_file(str(path)), name, path)
    raise ValueError(
        f"--{name}-file: unsupported file type {suffix or path.name!r}; use one of "
        f"{', '.join(FORMATS)}"
    )


def _save(out: Path, alpha: np.ndarray) -> None:
    suffix = out.suffix.lower()
    if suffix == ".npy":
        np.save(out, alpha)
    elif suffix == ".pt":
        torch = _torch()
        torch.save(torch.from_numpy(alpha), out)
    elif suffix == ".json":
        out.write_text(json.dumps(alpha.tolist()))
    elif suffix in (".csv", ".txt"):
        np.savetxt(out, alpha, fmt="%.17g")
    else:
        raise ValueError(f"--out: unsupported file type {suffix!r}; use .npy, .pt, .json or .csv")


def run_alpha(
    p: Any,
    q: Any,
    n: int,
    scheme: str,
    device: str | None = None,
    dtype: str = "float64",
) -> tuple[np.ndarray, float, str]:
    """Solve a batch; returns (α* as float64 ndarray of shape (B,), seconds, backend label)."""
    if dtype not in ("float32", "float64"):
        raise ValueError(f"--dtype: must be float32 or float64, got {dtype!r}")
    is_tensor = type(p).__module__.startswith("torch") or type(q).__module__.startswith("torch")
    if device is None and not is_tensor:
        from ..fast import alpha_star

        t0 = time.perf_counter()
        a = alpha_star(p, q, n=n, scheme=scheme)
        secs = time.perf_counter() - t0
        return np.atleast_1d(np.asarray(a, dtype=np.float64)), secs, "numpy float64"
    torch = _torch()
    from ..torch import alpha_star as torch_alpha_star

    dev = device or "cpu"
    if dev.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device: cuda requested but torch sees no CUDA device; use --device cpu")
    tdtype = getattr(torch, dtype)
    P = torch.as_tensor(np.asarray(p) if not torch.is_tensor(p) else p).to(dev, tdtype)
    Q = torch.as_tensor(np.asarray(q) if not torch.is_tensor(q) else q).to(dev, tdtype)
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    a = torch_alpha_star(P, Q, n=n, scheme=scheme)
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    return np.atleast_1d(a.double().cpu().numpy()), secs, f"torch {dtype} on {dev}"


def summary(alpha: np.ndarray, seconds: float) -> str:
    """Mean, quantiles of α* and positions per second, as printed lines."""
    qs = np.quantile(alpha, QUANTILES)
    names = ("min", "5%", "25%", "50%", "75%", "95%", "max")
    lines = [
        f"positions: {alpha.size:,}",
        f"mean alpha*: {alpha.mean():.6f}",
        "quantiles: " + ", ".join(f"{k} {v:.6f}" for k, v in zip(names, qs, strict=True)),
        f"time: {seconds:.4f} s ({alpha.size / max(seconds, 1e-12):,.0f} positions/s)",
    ]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Add the ``alpha`` command to ``app``."""

    @app.command("alpha")
    @bad_input_exits_2
    def alpha(
        p_file: Annotated[
            Path, typer.Option("--p-file", help="Target rows (B, V): .npy, .pt or .safetensors.")
        ],
        q_file: Annotated[Path, typer.Option("--q-file", help="Draft rows (B, V), same formats.")],
        n: Annotated[int, typer.Option("-n", "--n", help="Number of drafts.")],
        scheme: Annotated[
            str,
            typer.Option(
                "--scheme", help="with, without, conditional-poisson, greedy, spechub or single."
            ),
        ],
        device: Annotated[
            str | None, typer.Option("--device", help="cpu or cuda: run the torch solver there.")
        ] = None,
        dtype: Annotated[
            str, typer.Option("--dtype", help="float32 or float64 (torch solver).")
        ] = "float64",
        out: Annotated[
            Path | None, typer.Option("--out", help="Save alpha*: .npy, .pt, .json or .csv.")
        ] = None,
    ) -> None:
        """α* of every position (row) of a batch with the fast solver (docs/reference.md T7)."""
        p = load_rows(p_file, "p")
        q = load_rows(q_file, "q")
        a, secs, label = run_alpha(p, q, n, scheme, device, dtype)
        typer.echo(f"scheme {scheme}, n={n}, {label}")
        typer.echo(summary(a, secs))
        if out is not None:
            _save(out, a)
            typer.echo(f"saved alpha* to {out}")
