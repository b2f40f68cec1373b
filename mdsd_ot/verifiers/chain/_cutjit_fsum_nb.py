r"""The compiled exact sum of :func:`~.cutlaw.total_mass`, at module level (numba).

CPython's ``math.fsum``: Shewchuk's non-overlapping partials (``_k_msum_add``), the correctly
rounded value with CPython's final half-way correction (``_k_msum_value``), and the two sums of
:func:`~.cutlaw.total_mass` (``_k_fsum2``).

Imported only when numba is installed (:func:`._cutjit._kernels`); module-level functions (not
closures) so that numba's disk cache serves them to every new process.  The wrapper,
:func:`._cutjit.total_mass`, leaves non-finite input and overflows to ``math.fsum``.
"""

from __future__ import annotations

import numpy as np

from ...fast._fused import jit_decorator

jit = jit_decorator()


@jit
def _k_msum_add(p, n, x):  # pragma: no cover - compiled; CPython's math.fsum, one term
    i = 0
    for j in range(n):
        y = p[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            p[i] = lo
            i += 1
        x = hi
    p[i] = x
    return i + 1


@jit
def _k_msum_value(p, n):  # pragma: no cover - compiled; math.fsum's correctly rounded sum
    hi = 0.0
    if n > 0:
        n -= 1
        hi = p[n]
        lo = 0.0
        while n > 0:
            x = hi
            n -= 1
            y = p[n]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


@jit
def _k_fsum2(q):  # pragma: no cover - compiled
    # (fsum(q), fsum(q + [-fsum(q)])) for finite q: Shewchuk's partials, as CPython
    p = np.empty(1100)  # partials are non-overlapping: at most ~ 2100 / 53 + 2 of them
    n = 0
    for k in range(q.shape[0]):
        n = _k_msum_add(p, n, q[k])
    hi = _k_msum_value(p, n)
    n = _k_msum_add(p, n, -hi)
    return hi, _k_msum_value(p, n)
