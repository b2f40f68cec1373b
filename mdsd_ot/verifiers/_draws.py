"""Draft tuples for simulation, fast at large V.

``WithoutReplacement.sample`` draws Gumbel keys for every token (O(size · V) memory and time);
at V = 152,064 that is too slow for simulation.  Here sequential sampling without replacement is
done exactly by rejection: draw j is a draw from q conditioned on not being an earlier draw, i.e.
draw from q (inverse CDF, O(log V)) until the token is new.  Rows still unresolved after a few
rounds (q concentrated on the earlier draws) are finished by an explicit renormalised draw.
"""

from __future__ import annotations

import numpy as np

from ..drafts import DraftLaw, WithoutReplacement

__all__ = ["sample_drafts"]

_ROUNDS = 32


def _without(q: np.ndarray, n: int, g: np.random.Generator, size: int) -> np.ndarray:
    cdf = np.cumsum(q)
    total = cdf[-1]
    V = len(q)
    out = np.empty((size, n), dtype=np.int64)
    for j in range(n):
        todo = np.arange(size)
        for _ in range(_ROUNDS):
            if todo.size == 0:
                break
            x = np.minimum(np.searchsorted(cdf, g.random(todo.size) * total, side="right"), V - 1)
            fresh = np.all(out[todo, :j] != x[:, None], axis=1) if j else np.ones(todo.size, bool)
            out[todo[fresh], j] = x[fresh]
            todo = todo[~fresh]
        for r in todo:  # rare: explicit draw from q without the earlier drafts
            w = q.copy()
            w[out[r, :j]] = 0.0
            out[r, j] = int(
                np.minimum(np.searchsorted(np.cumsum(w), g.random() * w.sum(), "right"), V - 1)
            )
    return out


def sample_drafts(draft: DraftLaw, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` draft tuples from ``draft`` (an ``(size, n)`` int64 array)."""
    if isinstance(draft, WithoutReplacement):
        return _without(draft.q, draft.n, rng, size)
    return draft.sample(rng, size)
