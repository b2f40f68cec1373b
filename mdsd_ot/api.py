r"""The two entry points: :func:`solve` and :func:`alpha_star`.

.. math::

   \alpha^*(p, p_{draft}) = \max_{C \in \Pi(p, p_{draft})} \sum_i \sum_{\bar i \ni i} C(i, \bar i)
   = 1 + \min_{H \subseteq \Sigma} [P(H) - Q(H)]

One naming convention across the package: every ``alpha_star`` (this one,
:func:`mdsd_ot.fast.alpha_star`, :func:`mdsd_ot.torch.alpha_star`) takes the target ``p`` and
either a draft law object, or the draft model's ``q`` with ``n=`` and ``scheme=`` (the array
form, which may be batched: ``(B, V)`` rows).  :func:`solve` takes a law and returns the full
:class:`~mdsd_ot.result.Result`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import _validate as V_
from . import exact as _exact  # noqa: F401  (registers the exact methods)
from . import fast
from .drafts import FAST_SCHEMES, DraftLaw, Vector, make
from .methods import METHODS
from .result import Result

__all__ = ["solve", "alpha_star", "available_methods", "DEFAULT_METHOD"]

#: ``method="auto"`` picks the fast solver where the law has a fast route (q-convex laws, T7;
#: greedy and SpecHub, T9; any law with n = 1, T4) and the set-reduced flow otherwise.
DEFAULT_METHOD = "auto"


def _resolve(method: str, draft: DraftLaw) -> str:
    if method != "auto":
        return method
    if draft.fast_kernel is not None:
        return "fast"
    return "reduced"


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
    V_.check_on_vocabulary(pv.float, draft.V, "p")
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


def alpha_star(
    p: Any,
    draft: Any,
    method: str = DEFAULT_METHOD,
    *,
    n: int | None = None,
    scheme: str | None = None,
    return_set: bool = False,
):
    r"""The optimal acceptance rate α*(p, p_draft).

    Parameters
    ----------
    p : (V,) or (B, V) array_like
        Target distribution, or a batch of rows (array form with the fast solver only).
    draft : DraftLaw or (V,) / (B, V) array_like
        A draft law; or the draft model's q, with ``n`` and ``scheme`` (the array form).
    method : str
        As in :func:`solve`; a batch of rows needs ``"auto"`` or ``"fast"``.
    n, scheme : int, str
        The array form's number of drafts and scheme (a name of :data:`mdsd_ot.drafts.SCHEMES`).
    return_set : bool
        Also return an optimal H (boolean mask).

    Returns
    -------
    float or (B,) ndarray
        α*; with ``return_set=True`` the pair ``(alpha, H)``.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> alpha_star([0.5, 0.5], WithReplacement([0.75, 0.25], 1), method="subset")
    0.75
    >>> alpha_star([0.5, 0.5], [0.75, 0.25], n=2, scheme="with")  # the array form
    0.9375
    >>> alpha_star([[0.5, 0.5], [0.1, 0.9]], [[0.75, 0.25], [0.9, 0.1]], n=1, scheme="with")
    array([0.75, 0.2 ])
    """
    if isinstance(draft, DraftLaw):
        if n is not None or scheme is not None:
            raise ValueError(
                "n, scheme: give either a draft law, or q with n= and scheme=, not both"
            )
        r = solve(p, draft, method)
        return (r.alpha, r.H) if return_set else r.alpha
    if n is None or scheme is None:
        raise ValueError(
            "draft: expected a draft law from mdsd_ot.drafts (e.g. WithReplacement(q, n)), or "
            "the draft distribution q with n= and scheme= (e.g. alpha_star(p, q, n=2, "
            f"scheme='with')); got {type(draft).__name__} without n/scheme"
        )
    batched = np.ndim(p) == 2 or np.ndim(draft) == 2
    if batched and method not in ("auto", "fast"):
        raise ValueError(
            f"method: a batch of rows is solved by the fast solver; use method='auto' or "
            f"'fast' (got {method!r}), or solve one row at a time with a draft law"
        )
    if batched or (method in ("auto", "fast") and scheme in FAST_SCHEMES):
        return fast.alpha_star(p, draft, n=n, scheme=scheme, return_set=return_set)
    r = solve(p, make(scheme, draft, n), method)
    return (r.alpha, r.H) if return_set else r.alpha
