"""The explicit MDSD transport problem for small V, one module per form of theory.md.

Importing this package registers every method in :data:`METHODS`.
"""

from . import subset  # noqa: F401  (registers "subset", "subset-exact")
from ._common import METHODS, Method, register

__all__ = ["METHODS", "Method", "register"]
