"""The explicit MDSD transport problem for small V, one module per form of docs/reference.md.

Importing this package registers every method in :data:`METHODS`.
"""

from ..methods import METHODS, Method, register
from . import (
    bmatching,  # noqa: F401
    certificate,  # noqa: F401  (certify, optimal_plan)
    dual,  # noqa: F401
    emd,  # noqa: F401
    maxflow,  # noqa: F401  (registers "maxflow", "maxflow-scipy")
    primal,  # noqa: F401
    reduced,  # noqa: F401  (registers "reduced")
    subset,  # noqa: F401  (registers "subset", "subset-exact")
)

__all__ = ["METHODS", "Method", "register"]
