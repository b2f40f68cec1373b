"""Per-thread buffers of the chain verifier: scratch temporaries and pooled plan arrays.

At V = 152,064 a fresh V-size array costs about 300 page faults when the process's allocator
returns freed blocks to the kernel (glibc does until a large block has been freed once), which
is more than the arithmetic on it.  Two per-thread stores avoid them:

- :data:`SCRATCH`: temporaries of one plan construction (never stored in a plan);
- :data:`POOL`: the arrays a plan keeps, for *pooled* plans only
  (:func:`~mdsd_ot.verifiers.chain.plan.build_plan` with ``pooled=True``, used by
  :func:`~mdsd_ot.verifiers.chain.sample.draw_rows`): each pooled plan of a thread reuses the
  previous one's buffers, so a pooled plan is valid until the thread builds the next one.

Examples
--------
>>> a = SCRATCH.get("x", 4)
>>> b = SCRATCH.get("x", 3)
>>> bool(np.shares_memory(a, b)), b.shape
(True, (3,))
>>> kept("c", 3).shape  # no pooled build in progress: a fresh array
(3,)
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["SCRATCH", "POOL", "kept"]


class Buffers(threading.local):
    """Named per-thread arrays, grown on demand; ``active`` marks a pooled build (POOL)."""

    def __init__(self) -> None:
        self.bufs: dict[str, np.ndarray] = {}
        self.active = False

    def get(self, name: str, size: int, width: int = 0, dtype: Any = np.float64) -> np.ndarray:
        """An array of ``size`` entries (``(size, width)`` when width > 0) of ``dtype``."""
        shape = (size, width) if width else (size,)
        b = self.bufs.get(name)
        if b is None or len(b) < size or b.shape[1:] != shape[1:] or b.dtype != dtype:
            b = self.bufs[name] = np.empty(shape, dtype=dtype)
        return b[:size]


#: Temporaries of one plan construction.
SCRATCH = Buffers()
#: The arrays of the thread's current pooled plan.
POOL = Buffers()


def kept(name: str, size: int, dtype: Any = np.float64) -> np.ndarray:
    """A V-size array that a plan keeps: from :data:`POOL` during a pooled build, else fresh."""
    if POOL.active:
        return POOL.get(name, size, dtype=dtype)
    return np.empty(size, dtype=dtype)
