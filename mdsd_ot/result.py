"""One frozen result type for every solver (like POT's ``OTResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["Result"]


@dataclass(frozen=True)
class Result:
    """The outcome of :func:`mdsd_ot.solve`.

    Attributes
    ----------
    alpha : float
        The optimal acceptance rate α* (float; see ``alpha_exact`` for exact methods).
    H : (V,) bool ndarray or None
        An optimal set of the subset-selection form (8): α* = P(H) + 1 − Q(H).
    method : str
        The method name (see :data:`mdsd_ot.METHODS`).
    status : str
        ``"optimal"`` or the solver's status string.
    seconds : float
        Wall time spent in the solver.
    plan : object or None
        The transport plan where the method yields one: a dense (V,)+(V,)*n array for the full
        forms, or a ``{(i, S): mass}`` mapping for the set-reduced form.
    duals : dict or None
        Dual values where the method yields them (e.g. ``{"y": (V,), "z": ...}``).
    alpha_exact : Fraction or None
        The exact rational α* for exact methods.
    accuracy : float
        The absolute accuracy the method guarantees on ``alpha`` (0 for exact methods).
    info : dict
        Method-specific extras (sizes, iteration counts, bounds).
    """

    alpha: float
    H: np.ndarray | None
    method: str
    status: str = "optimal"
    seconds: float = 0.0
    plan: Any = None
    duals: dict[str, Any] | None = None
    alpha_exact: Fraction | None = None
    accuracy: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        h = None if self.H is None else np.flatnonzero(self.H).tolist()
        return (
            f"Result(alpha={self.alpha!r}, H={h}, method={self.method!r}, "
            f"status={self.status!r}, seconds={self.seconds:.3g})"
        )
