"""The explicit MDSD transport problem for small V, one module per form of theory.md.

Importing this package registers every method in :data:`METHODS`.
"""

from . import subset  # noqa: F401  (registers "subset", "subset-exact")
from . import maxflow  # noqa: F401  (registers "maxflow", "maxflow-scipy")
from . import reduced  # noqa: F401  (registers "reduced")
from . import certificate  # noqa: F401  (certify, optimal_plan)
from . import primal  # noqa: F401
from . import bmatching  # noqa: F401
from . import dual  # noqa: F401
from . import emd  # noqa: F401
from ._common import METHODS, Method, register

__all__ = ["METHODS", "Method", "register"]
