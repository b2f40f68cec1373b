"""The method registry, above the solver families (as cvxpy keeps its solver map).

Every way of computing α* — the exact formulations of :mod:`mdsd_ot.exact` and the fast solver
of :mod:`mdsd_ot.fast` — registers its solve function here with :func:`register` (name,
accuracy, exactness, optional requirements).  The function receives the validated target ``p``
(a :class:`mdsd_ot.drafts.Vector`, with ``.float`` and ``.exact``) and the draft law, and returns
the fields of a :class:`mdsd_ot.result.Result` as a dict.  "Every installed method" is a loop
over :data:`METHODS`; :mod:`mdsd_ot.api` imports the solver families, which fills it.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Method", "METHODS", "register", "timed"]


@dataclass(frozen=True)
class Method:
    """One registered way of computing α*.

    Attributes
    ----------
    name : str
        The ``method=`` string.
    func : callable
        ``func(p, draft) -> dict`` of :class:`~mdsd_ot.result.Result` fields.
    accuracy : float
        Absolute accuracy guaranteed on α* (0 for exact rational methods).
    exact : bool
        Whether the method works in exact rational arithmetic.
    requires : tuple of str
        Importable modules the method needs (optional dependencies).
    extra : str or None
        The pip extra that installs them.
    doc : str
        One line on what the method does.
    set_plan : bool
        Whether the method's result carries a set-reduced plan ``{(i, S): flow}`` (what the
        optimal verifier's reference construction samples from:
        ``verifiers.get("optimal", draft, method=...)``).
    """

    name: str
    func: Callable[..., dict[str, Any]]
    accuracy: float
    exact: bool = False
    requires: tuple[str, ...] = field(default_factory=tuple)
    extra: str | None = None
    doc: str = ""
    set_plan: bool = False

    def is_installed(self) -> bool:
        """True when every optional dependency of the method can be imported."""
        return all(importlib.util.find_spec(m) is not None for m in self.requires)


#: Every registered method by name, filled in as the formulation modules are imported.
METHODS: dict[str, Method] = {}


def register(
    name: str,
    *,
    accuracy: float,
    exact: bool = False,
    requires: tuple[str, ...] = (),
    extra: str | None = None,
    set_plan: bool = False,
) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
    """Decorator registering ``func`` under ``name`` in :data:`METHODS` (``set_plan``: its
    results carry a set-reduced plan, :attr:`Method.set_plan`)."""

    def deco(func):
        doc = (func.__doc__ or "").strip().splitlines()
        METHODS[name] = Method(
            name, func, accuracy, exact, tuple(requires), extra, doc[0] if doc else "", set_plan
        )
        return func

    return deco


class timed:
    """Context manager measuring wall time: ``with timed() as t: ...; t.seconds``."""

    def __enter__(self):
        self._t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        return False
