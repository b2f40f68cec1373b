"""The theory toolkit: total unimodularity (T3), q-convexity / supermodularity / prefix
optimality (T5-T7), the claims registry T1..T12 and the counterexample hunt.

Modules: :mod:`.tum` (with the search in :mod:`._tu_search`), :mod:`.qconvex`, :mod:`.claims`
(a package: one module per claim, mirroring ``proofs/``), :mod:`.oracles` (the independent
re-computations the claims compare against), :mod:`.hunt` and :mod:`.conjectures` (the
counterexample search), :mod:`.witness` (exact witness files), :mod:`.instances` (rounding to
rationals).
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
    "conjectures",
    "oracles",
    "witness",
    "instances",
]


def __getattr__(name: str):
    if name in ("claims", "hunt", "conjectures", "oracles", "witness", "instances"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
