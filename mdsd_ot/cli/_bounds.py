"""Bounds of the numeric options: nonsense is refused before any work, with the bound that applies.

Every count, size, seed, temperature and budget of every command passes through one of these
checks, so that ``--samples 0``, ``--budget nan`` or ``--vocab 100000000`` never start a
computation (docs/cli.md, "Bounds").

Examples
--------
>>> check_int(3, "--trials", 1, 10)
3
>>> check_int(0, "--samples", 1, MAX_SAMPLES)
Traceback (most recent call last):
...
ValueError: --samples: must be an integer in [1, 10,000,000], got 0
>>> check_float(float("nan"), "--tol", lo=0.0)
Traceback (most recent call last):
...
ValueError: --tol: must be a finite number >= 0, got nan
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "MAX_DRAFTS",
    "MAX_SAMPLES",
    "MAX_TRIALS",
    "MAX_VOCAB",
    "MAX_ENTRIES",
    "MAX_WORKERS",
    "MAX_DEPTH",
    "MAX_TOKENS",
    "MAX_BATCH",
    "SEED_MAX",
    "check_int",
    "check_float",
    "check_seed",
    "check_drafts",
    "check_entries",
]

#: The most drafts any command accepts (speculative decoding uses tens).
MAX_DRAFTS = 10_000
#: Simulated draft tuples per position.
MAX_SAMPLES = 10_000_000
#: Random instances / claim trials per run.
MAX_TRIALS = 1_000_000
#: Vocabulary of random or synthetic instances (a large LLM vocabulary is ~2^18).
MAX_VOCAB = 2**24
#: Probabilities held at once by a synthetic or random batch (positions x V): 2^25 float64 is
#: 256 MiB per array (a computation holds a few such arrays).
MAX_ENTRIES = 2**25
#: Dask workers of a local cluster.
MAX_WORKERS = 1024
#: Draft depth γ of the tokens-per-call column.
MAX_DEPTH = 10_000
#: Tokens generated per prompt by ``collect``.
MAX_TOKENS = 1_000_000
#: Prompts per batch of ``collect``.
MAX_BATCH = 65_536
#: The largest seed (numpy and torch accept [0, 2^63 - 1]).
SEED_MAX = 2**63 - 1


def _fmt(x: float | int) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def check_int(value: Any, option: str, lo: int, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]`` (``hi=None``: no upper bound), else a ValueError."""
    rule = f"an integer in [{_fmt(lo)}, {_fmt(hi)}]" if hi is not None else f"an integer >= {lo}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{option}: must be {rule}, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        raise ValueError(f"{option}: must be {rule}, got {value}")
    return int(value)


def check_float(
    value: Any,
    option: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """``value`` as a finite float within the bounds (open or closed), else a ValueError."""
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {_fmt(lo)}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {_fmt(hi)}")
    rule = "a finite number" + (" " + " and ".join(parts) if parts else "")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{option}: must be {rule}, got {value!r}") from None
    ok = math.isfinite(x)
    if ok and lo is not None:
        ok = x > lo if lo_open else x >= lo
    if ok and hi is not None:
        ok = x < hi if hi_open else x <= hi
    if not ok:
        raise ValueError(f"{option}: must be {rule}, got {value}")
    return x


def check_seed(seed: Any, option: str = "--seed") -> int:
    """A seed of numpy's and torch's generators: an integer in [0, 2^63 - 1]."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise ValueError(f"{option}: must be an integer in [0, 2^63 - 1], got {seed!r}")
    return int(seed)


def check_drafts(n: Any, option: str = "-n") -> int:
    """A number of drafts in [1, :data:`MAX_DRAFTS`]."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{option}: the number of drafts must be an integer >= 1, got {n!r}")
    if n > MAX_DRAFTS:
        raise ValueError(f"{option}: at most {MAX_DRAFTS:,} drafts, got {n:,}")
    return int(n)


def check_entries(rows: int, V: int, option: str, what: str) -> None:
    """Refuse a batch of ``rows x V`` probabilities above :data:`MAX_ENTRIES` before allocating."""
    if rows * V > MAX_ENTRIES:
        raise ValueError(
            f"{option}: {what} would hold {rows:,} x {V:,} = {rows * V:,} probabilities (limit "
            f"{MAX_ENTRIES:,}); use fewer positions or a smaller vocabulary"
        )
