"""The theory toolkit: total unimodularity (T3), q-convexity / supermodularity / prefix
optimality (T5-T7), the claims registry T1..T12 and the counterexample hunt.

Modules: :mod:`.tum`, :mod:`.qconvex`, :mod:`.claims`, :mod:`.hunt`, :mod:`.witness`,
:mod:`.instances`.
"""

from __future__ import annotations

from .qconvex import (
    PrefixGap,
    Violation,
    level_sets,
    mobius_weights,
    prefix_optimality_gap,
    q_convexity_violation,
    set_weights,
    supermodularity_violation,
)
from .tum import (
    TUCertificate,
    TUResult,
    biadjacency_matrix,
    bipartite_incidence_certificate,
    dual_matrix,
    integer_det,
    is_totally_unimodular,
    odd_cycle_incidence,
    smallest_non_tu_biadjacency,
)

__all__ = [
    "PrefixGap",
    "Violation",
    "TUCertificate",
    "TUResult",
    "biadjacency_matrix",
    "bipartite_incidence_certificate",
    "dual_matrix",
    "integer_det",
    "is_totally_unimodular",
    "level_sets",
    "mobius_weights",
    "odd_cycle_incidence",
    "prefix_optimality_gap",
    "q_convexity_violation",
    "set_weights",
    "smallest_non_tu_biadjacency",
    "supermodularity_violation",
    "claims",
    "hunt",
]


def __getattr__(name: str):
    if name in ("claims", "hunt", "witness", "instances"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
