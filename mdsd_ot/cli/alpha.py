r"""``mdsd-ot alpha``: α* for a batch of positions from files (the fast solver, T7).

.. code-block:: text

   mdsd-ot alpha --p P --q Q [-n N] [--scheme S] [--device cpu|cuda]
                 [--dtype float32|float64] [--out FILE] [--json]

P and Q hold (B, V) (or (V,)) probability rows: a comma list (one row), ``.npy``, ``.npz``,
``.json``, ``.pt`` (a tensor, or a dict with one tensor or a tensor under
"p" / "q") or ``.safetensors`` (one tensor, or one named "p" / "q"); ``--p-file``/``--q-file``
are the same options.  Without ``--device`` numpy inputs run on the numpy solver (float64); with
``--device`` (or a ``.pt`` input, or ``--dtype float32``, which the numpy solver does not have:
then on the CPU) the torch solver runs on that device in ``--dtype``.  Prints
the mean and quantiles of α* and the positions per second (``--json``: one JSON object);
``--out`` saves α* (``.npy``, ``.pt``, ``.json``, ``.csv`` or ``.txt``).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from .. import _validate as V_
from .._validate import checked_rows
from ..drafts import FAST_SCHEMES, SCHEMES, scheme_help
from ._common import (
    DEFAULT_DRAFTS,
    JsonOption,
    check_drafts_option,
    cli_command,
    option_names,
)
from ._files import atomic_write, check_output_file, read_rows

#: The old name of :func:`mdsd_ot.cli._files.read_rows`.
load_rows = read_rows

QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)
QUANTILE_NAMES = ("min", "5%", "25%", "50%", "75%", "95%", "max")
#: File types ``--out`` writes.
OUT_SUFFIXES = (".npy", ".pt", ".json", ".csv", ".txt")
#: ``--scheme`` help: the fast solver's schemes, from the registry.
FAST_SCHEME_HELP = (
    "Draft law (the fast solver's). "
    + scheme_help([s for s in FAST_SCHEMES if s in SCHEMES])
    + "; single: one draft (n = 1)"
)
_DEVICE = re.compile(rf"^(?:{V_.DEVICE_PATTERN})$")


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise ValueError(
            "--device / .pt inputs need PyTorch; install it with pip install 'mdsd-ot[torch]'"
        ) from exc
    return torch


def _save(out: Path, alpha: np.ndarray) -> None:
    suffix = out.suffix.lower()
    if suffix == ".npy":
        atomic_write(out, "--out", lambda fh: np.save(fh, alpha), binary=True)
    elif suffix == ".pt":
        torch = _torch()
        atomic_write(out, "--out", lambda fh: torch.save(torch.from_numpy(alpha), fh), binary=True)
    elif suffix == ".json":
        atomic_write(out, "--out", lambda fh: fh.write(json.dumps(alpha.tolist())), binary=False)
    elif suffix in (".csv", ".txt"):
        atomic_write(out, "--out", lambda fh: np.savetxt(fh, alpha, fmt="%.17g"), binary=True)
    else:
        raise ValueError(f"--out: unsupported file type {suffix!r}; use {', '.join(OUT_SUFFIXES)}")


def run_alpha(
    p: Any,
    q: Any,
    n: int,
    scheme: str,
    device: str | None = None,
    dtype: str = "float64",
) -> tuple[np.ndarray, float, str]:
    """Solve a batch; returns (α* as float64 ndarray of shape (B,), seconds, backend label).

    The numpy solver (float64) for numpy input without ``device``; the torch solver otherwise,
    on ``device`` (default the CPU) in ``dtype``; ``dtype="float32"`` always runs the torch
    solver (the numpy solver has no float32 route)."""
    if dtype not in ("float32", "float64"):
        raise ValueError(f"--dtype: must be float32 or float64, got {dtype!r}")
    if device is not None and not _DEVICE.match(device):
        raise ValueError(f"--device: give cpu, cuda, cuda:N or mps, got {device!r}")
    is_tensor = type(p).__module__.startswith("torch") or type(q).__module__.startswith("torch")
    if device is None and not is_tensor and dtype == "float32":
        device = "cpu"  # float32 is the torch solver's: the numpy solver would run float64
    if device is None and not is_tensor:
        from ..fast import alpha_star

        t0 = time.perf_counter()
        a = alpha_star(p, q, n=n, scheme=scheme)
        secs = time.perf_counter() - t0
        return np.atleast_1d(np.asarray(a, dtype=np.float64)), secs, "numpy float64"
    torch = _torch()
    from ..torch import alpha_star as torch_alpha_star

    dev = V_.check_torch_device(device or "cpu", torch, "--device")
    tdtype = getattr(torch, dtype)
    P = _rows_in(p, "p", torch, dev, tdtype)
    Q = _rows_in(q, "q", torch, dev, tdtype)
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    a = torch_alpha_star(P, Q, n=n, scheme=scheme)
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    return np.atleast_1d(a.double().cpu().numpy()), secs, f"torch {dtype} on {dev}"


def _rows_in(x: Any, name: str, torch: Any, dev: str, tdtype: Any) -> Any:
    """Rows checked at the tolerance of the dtype they are stored in, then cast to ``tdtype`` on
    ``dev`` and renormalised there (a float32 file run in float64 is checked as float32)."""
    X, single = checked_rows(x if torch.is_tensor(x) else np.asarray(x), name)
    X = torch.as_tensor(X).to(dev, tdtype)
    X = X / X.sum(-1, keepdim=True)
    return X[0] if single else X


def stats(alpha: np.ndarray, seconds: float) -> dict[str, Any]:
    """Positions, mean and quantiles of α*, seconds and positions per second."""
    qs = np.quantile(alpha, QUANTILES)
    return {
        "positions": int(alpha.size),
        "mean": float(alpha.mean()),
        "quantiles": {k: float(v) for k, v in zip(QUANTILE_NAMES, qs, strict=True)},
        "seconds": float(seconds),
        "positions_per_second": float(alpha.size / max(seconds, 1e-12)),
    }


def summary(alpha: np.ndarray, seconds: float) -> str:
    """Mean, quantiles of α* and positions per second, as printed lines."""
    st = stats(alpha, seconds)
    lines = [
        f"positions: {st['positions']:,}",
        f"mean alpha*: {st['mean']:.6f}",
        "quantiles: " + ", ".join(f"{k} {v:.6f}" for k, v in st["quantiles"].items()),
        f"time: {seconds:.4f} s ({st['positions_per_second']:,.0f} positions/s)",
    ]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Add the ``alpha`` command to ``app``."""

    @app.command("alpha")
    @cli_command
    def alpha(
        p_file: Annotated[
            str | None,
            typer.Option(
                "--p",
                "--p-file",
                help="Target rows (B, V): a comma list (one row) or a file (.npy, .npz, .json, "
                ".pt, .safetensors).",
            ),
        ] = None,
        q_file: Annotated[
            str | None,
            typer.Option("--q", "--q-file", help="Draft rows (B, V), same forms as --p."),
        ] = None,
        n: Annotated[
            int,
            typer.Option("-n", "--drafts", "--n", help="Number of drafts."),
        ] = DEFAULT_DRAFTS,
        scheme: Annotated[str, typer.Option("--scheme", help=FAST_SCHEME_HELP)] = "with",
        device: Annotated[
            str | None,
            typer.Option("--device", help="cpu, cuda, cuda:N or mps: run the torch solver there."),
        ] = None,
        dtype: Annotated[
            str,
            typer.Option(
                "--dtype",
                help="float32 or float64: the torch solver's dtype (float32 runs it, on the CPU "
                "without --device).",
            ),
        ] = "float64",
        out: Annotated[
            str | None,
            typer.Option(
                "--out",
                help="Also save α* of every row to this file, by suffix: .npy, .pt, .json, .csv "
                "or .txt.",
            ),
        ] = None,
        as_json: JsonOption = False,
    ) -> None:
        """α* of every position (row) of a batch with the fast solver (docs/reference.md T7).

        --out saves α* of every row: .npy, .pt, .json, .csv or .txt.
        """
        check_drafts_option(n)
        if dtype not in ("float32", "float64"):
            raise ValueError(f"--dtype: must be float32 or float64, got {dtype!r}")
        if device is not None and not _DEVICE.match(device):
            raise ValueError(f"--device: give cpu, cuda, cuda:N or mps, got {device!r}")
        if out is not None:
            check_output_file(out, "--out", OUT_SUFFIXES)
            for opt, src in (("--p", p_file), ("--q", q_file)):
                if (
                    src is not None
                    and Path(out).exists()
                    and Path(src).exists()
                    and Path(src).samefile(Path(out))
                ):
                    raise ValueError(f"--out: {out} is the {opt} file; write α* to another file")
        if p_file is None or q_file is None:
            which = "--p" if p_file is None else "--q"
            raise ValueError(f"{which}: give the {'target' if p_file is None else 'draft'} rows")
        p = read_rows(p_file, "--p")
        q = read_rows(q_file, "--q")
        with option_names(p="--p", q="--q", n="-n", scheme="--scheme"):
            a, secs, label = run_alpha(p, q, n, scheme, device, dtype)
        if out is not None:
            _save(Path(out), a)
        if as_json:
            body = {"scheme": scheme, "n": n, "backend": label, **stats(a, secs)}
            if out is not None:
                body["out"] = str(out)
            typer.echo(json.dumps(body))
            return
        typer.echo(f"scheme {scheme}, n={n}, {label}")
        typer.echo(summary(a, secs))
        if out is not None:
            typer.echo(f"saved alpha* to {out}")
