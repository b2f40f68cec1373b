r"""Summaries of per-position values: mean ± standard error, quantiles, expected tokens.

.. math::

   \bar x = \frac1m \sum_k x_k, \qquad \mathrm{se} = \frac{s}{\sqrt m},\quad
   s^2 = \frac{1}{m-1}\sum_k (x_k - \bar x)^2

(with one position the standard error is the Monte-Carlo one of that position, if any).

Expected tokens per target call (block-efficiency style) for a draft of depth γ whose every
level is accepted independently with probability ``a`` (Leviathan et al., 2023, eq. (1)):

.. math:: \tau_\gamma(a) = \sum_{j=0}^{\gamma} a^j = \frac{1 - a^{\gamma+1}}{1 - a}.

Examples
--------
>>> stat([0.5, 0.7, None])["mean"]
0.6
>>> expected_tokens(np.array([0.5]), 2).tolist()
[1.75]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["QUANTILES", "QUANTILE_KEYS", "stat", "expected_tokens"]

#: The quantiles of every summary.
QUANTILES: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)
#: Their keys in the JSON (``q05`` is the 5 % quantile).
QUANTILE_KEYS: tuple[str, ...] = tuple(f"q{round(100 * x):02d}" for x in QUANTILES)


def stat(values: Sequence[Any] | np.ndarray, se_single: float = 0.0) -> dict[str, float] | None:
    """``{"mean", "se", "q05", "q25", "q50", "q75", "q95"}`` of the defined values (None if none).

    ``None`` and NaN entries (positions where the value is undefined) are left out.
    """
    v = np.asarray([np.nan if x is None else x for x in values], dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float(se_single)
    out = {"mean": float(v.mean()), "se": se}
    for key, val in zip(QUANTILE_KEYS, np.quantile(v, QUANTILES), strict=True):
        out[key] = float(val)
    return out


def expected_tokens(a: np.ndarray, depth: int) -> np.ndarray:
    r""":math:`\tau_\gamma(a) = \sum_{j=0}^{\gamma} a^j` elementwise (NaN stays NaN)."""
    a = np.asarray(a, dtype=np.float64)
    return sum((a**j for j in range(int(depth) + 1)), np.zeros_like(a))
