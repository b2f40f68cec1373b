r"""The two entry points: :func:`solve` and :func:`alpha_star`.

.. math::

   \alpha^*(p, p_{draft}) = \max_{C \in \Pi(p, p_{draft})} \sum_i \sum_{\bar i \ni i} C(i, \bar i)
   = 1 + \min_{H \subseteq \Sigma} [P(H) - Q(H)]
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import _validate as V_
from .drafts import DraftLaw, Vector
from .exact import METHODS
from .result import Result

__all__ = ["solve", "alpha_star", "available_methods", "DEFAULT_METHOD"]

#: ``method="auto"`` picks the fast prefix solver where the law is q-convex (T7) and the
#: set-reduced flow otherwise.
DEFAULT_METHOD = "auto"

_FAST_SCHEMES = {"with", "without", "conditional-poisson", "greedy", "spechub"}


def _resolve(method: str, draft: DraftLaw) -> str:
    if method != "auto":
        return method
    if (draft.scheme in _FAST_SCHEMES or draft.n == 1) and "fast" in METHODS:
        return "fast"
    return "reduced" if "reduced" in METHODS else "subset"


def available_methods(installed_only: bool = True) -> list[str]:
    """Names of the registered methods (those whose optional dependencies import)."""
    return [m.name for m in METHODS.values() if m.is_installed() or not installed_only]


def solve(p: Any, draft: DraftLaw, method: str = DEFAULT_METHOD) -> Result:
    r"""Solve the MDSD transport problem for target ``p`` and draft law ``draft``.

    Parameters
    ----------
    p : (V,) array_like
        Target distribution (floats, or exact rationals: Fractions / ``"a/b"`` strings).
    draft : DraftLaw
        The joint law of the drafts (:mod:`mdsd_ot.drafts`).
    method : str
        One of :func:`available_methods` or ``"auto"``.

    Returns
    -------
    Result
        α*, an optimal H, and the plan / duals where the method yields them.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> r = solve(["1/2", "1/2"], WithReplacement(["3/4", "1/4"], 2), method="subset-exact")
    >>> r.alpha_exact
    Fraction(15, 16)
    """
    if not isinstance(draft, DraftLaw):
        raise ValueError(
            f"draft: expected a draft law from mdsd_ot.drafts (e.g. WithReplacement(q, n)), "
            f"got {type(draft).__name__}"
        )
    pv = p if isinstance(p, Vector) else Vector(p, "p")
    V_.check_same_length(pv.float, np.empty(draft.V), "p", "draft (its vocabulary)")
    name = _resolve(method, draft)
    if name not in METHODS:
        raise ValueError(
            f"method: unknown method {method!r}; choose one of "
            f"{', '.join(['auto', *available_methods(False)])}"
        )
    m = METHODS[name]
    if not m.is_installed():
        raise ImportError(
            f"method {name!r} needs {', '.join(m.requires)}; install it with "
            f"pip install 'mdsd-ot[{m.extra}]'"
        )
    t0 = time.perf_counter()
    fields = m.func(pv, draft)
    fields.setdefault("seconds", time.perf_counter() - t0)
    fields.setdefault("accuracy", m.accuracy)
    return Result(method=name, **fields)


def alpha_star(p: Any, draft: DraftLaw, method: str = DEFAULT_METHOD) -> float:
    """The optimal acceptance rate α*(p, p_draft) as a float (see :func:`solve`).

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> alpha_star([0.5, 0.5], WithReplacement([0.75, 0.25], 1), method="subset")
    0.75
    """
    return solve(p, draft, method).alpha


from . import fast as _fast  # noqa: E402,F401  (registers method "fast")
