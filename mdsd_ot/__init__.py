"""mdsd-ot: multi-draft speculative decoding as optimal transport.

The public API (re-exported here): :func:`alpha_star`, :func:`solve`, the draft laws of
:mod:`mdsd_ot.drafts`, the :class:`Result` type, and the method registry :data:`METHODS`.
Subpackages ``fast``, ``torch``, ``verifiers``, ``reports`` and ``theory`` (and the modules ``io``
and ``hf``) are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import drafts
from ._version import __version__
from .api import alpha_star, available_methods, solve
from .drafts import (
    ConditionalPoisson,
    DraftLaw,
    Explicit,
    Greedy,
    Product,
    SpecHub,
    WithoutReplacement,
    WithReplacement,
)
from .methods import METHODS
from .result import Result

__all__ = [
    "alpha_star",
    "solve",
    "available_methods",
    "certify",
    "crosscheck",
    "METHODS",
    "Result",
    "drafts",
    "DraftLaw",
    "WithReplacement",
    "WithoutReplacement",
    "ConditionalPoisson",
    "Product",
    "Greedy",
    "SpecHub",
    "Explicit",
    "fast",
    "torch",
    "verifiers",
    "reports",
    "io",
    "hf",
    "theory",
    "__version__",
]

_LAZY_MODULES = {"fast", "torch", "verifiers", "reports", "theory", "exact", "io", "hf"}
_LAZY_ATTRS = {
    "certify": ("mdsd_ot.exact.certificate", "certify"),
    "crosscheck": ("mdsd_ot.reports.crosscheck", "crosscheck"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_ATTRS:
        mod, attr = _LAZY_ATTRS[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
