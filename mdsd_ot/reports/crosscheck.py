r"""The cross-check: every exact formulation of α* on the same instances (claim T1).

For each instance (a target ``p`` and a draft law) every requested method of
:data:`mdsd_ot.METHODS` computes

.. math::

   \alpha^*(p, p_{draft}) = \max_{C \in \Pi(p, p_{draft})} \sum_i \sum_{\bar i \ni i} C(i, \bar i)
   = 1 + \min_{H \subseteq \Sigma} [P(H) - Q(H)],

and the instance passes when the **spread** (largest minus smallest α* over the methods that
solved it) is at most ``tol`` and no method crashed.  T1 says the true values are equal, so the
spread measures the numerical error of the worst method against the best.

Notes
-----
Which methods run.  By default: every installed method whose stated ``accuracy`` (its
guaranteed absolute error on α*, see :class:`mdsd_ot.exact.Method`) is at most ``tol``.  A method
that cannot promise ``tol`` could legitimately fail the check, so it is left out and listed in
:attr:`CrosscheckReport.excluded` with the reason; name it in ``methods=`` (or loosen ``tol``) to
run it anyway.  A method that declines an instance with a :class:`ValueError` (too large for it,
or a draft law it does not handle) is reported under ``skipped`` for that instance, not as a
failure.  Any other exception is a failure (``errors``).

The instances (:class:`Instance`, the built-in bank :func:`builtin_instances`, seeded
:func:`random_instances`) live in :mod:`mdsd_ot.reports.crosscheck_instances` and are
importable from here as well.

One value cannot disagree with anything: an instance that only one method solved (and that the
exact certificate could not check, e.g. a vocabulary where only ``fast`` runs) passes ``ok`` but
is not ``checked`` (:attr:`InstanceReport.checked`); ``mdsd-ot crosscheck`` says so and exits 1.

Examples
--------
>>> from mdsd_ot.drafts import WithReplacement
>>> rep = crosscheck([(["1/2", "1/2"], WithReplacement(["3/4", "1/4"], 2))],
...                  methods=["subset", "subset-exact"])
>>> rep.ok, rep.instances[0].alpha_exact
(True, Fraction(15, 16))
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._outputs import exact_text
from ..exact import METHODS
from .crosscheck_instances import (
    RANDOM_SCHEMES,
    Instance,
    _as_instance,
    _fmt,
    builtin_instances,
    make_instance,
    random_instances,
)

__all__ = [
    "DEFAULT_TOL",
    "RANDOM_SCHEMES",
    "Instance",
    "InstanceReport",
    "CrosscheckReport",
    "crosscheck",
    "builtin_instances",
    "random_instances",
    "default_methods",
    "make_instance",
]

#: Default tolerance on the spread of α* over methods.
DEFAULT_TOL: float = 1e-9

# -- reports ----------------------------------------------------------------------------


@dataclass
class InstanceReport:
    """The cross-check of one instance.

    Attributes
    ----------
    instance : Instance
        The problem.
    alpha : dict
        α* (float) by method, for the methods that solved it.
    seconds : dict
        Solve time by method (as reported by :func:`mdsd_ot.solve`).
    alpha_exact : Fraction or None
        The exact α* where an exact method solved it.
    skipped : dict
        ``{method: reason}`` for methods that declined the instance (ValueError).
    errors : dict
        ``{method: message}`` for methods that crashed (counts as a failure).
    spread : float
        ``max(alpha.values()) - min(alpha.values())`` (0 when fewer than two methods ran).
    certificate : dict or None
        The exact certificate of optimality (:func:`mdsd_ot.exact.certificate.certify` of the
        plan and set from :func:`~mdsd_ot.exact.plans.optimal_plan`): ``ok``, ``kind``,
        ``exact``, ``alpha`` and ``gap`` (rationals as strings); None when not requested or
        when the instance is too large for it (then ``skipped["certify"]`` says why).
    ok : bool
        No errors, at least one method ran, ``spread <= tol``, and the certificate (if any)
        holds with the exact α* the exact methods found.
    """

    instance: Instance
    alpha: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    alpha_exact: Fraction | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    spread: float = 0.0
    certificate: dict[str, Any] | None = None
    ok: bool = True

    @property
    def checked(self) -> bool:
        """Whether a cross-check took place: at least two independent values of α* (two methods
        that solved the instance, or one method and the exact certificate).  One value cannot
        disagree with anything, so ``ok`` alone says nothing about it."""
        return len(self.alpha) + (self.certificate is not None) >= 2

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this instance (keys of the ``mdsd-ot crosscheck --json`` schema)."""
        out: dict[str, Any] = {"label": self.instance.label}
        out.update(self.instance.spec())
        out["alpha"] = {m: float(a) for m, a in self.alpha.items()}
        out["seconds"] = {m: float(s) for m, s in self.seconds.items()}
        out["spread"] = float(self.spread)
        out["ok"] = bool(self.ok)
        out["checked"] = self.checked
        if self.alpha_exact is not None:
            out["alpha_exact"] = exact_text(self.alpha_exact)
        if self.certificate is not None:
            out["certificate"] = dict(self.certificate)
        if self.skipped:
            out["skipped"] = dict(self.skipped)
        if self.errors:
            out["errors"] = dict(self.errors)
        return out


@dataclass
class CrosscheckReport:
    """The outcome of :func:`crosscheck`.

    Attributes
    ----------
    ok : bool
        Every instance passed.
    tolerance : float
        The tolerance on the spread.
    methods : list of str
        The methods that were run.
    instances : list of InstanceReport
        One report per instance, in input order.
    excluded : dict
        ``{method: reason}`` for installed methods left out of the default set.
    seconds : float
        Total wall time.
    """

    ok: bool
    tolerance: float
    methods: list[str]
    instances: list[InstanceReport]
    excluded: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def max_spread(self) -> float:
        """The largest spread over all instances."""
        return max((r.spread for r in self.instances), default=0.0)

    @property
    def unchecked(self) -> list[InstanceReport]:
        """The instances on which no cross-check took place (fewer than two values of α*)."""
        return [r for r in self.instances if not r.checked]

    @property
    def checked(self) -> bool:
        """Whether every instance was cross-checked (see :attr:`InstanceReport.checked`)."""
        return not self.unchecked

    def to_json(self) -> dict[str, Any]:
        """``{"ok", "checked", "tolerance", "instances": [...], "methods", "excluded", ...}``."""
        return {
            "ok": bool(self.ok),
            "checked": self.checked,
            "tolerance": float(self.tolerance),
            "instances": [r.to_json() for r in self.instances],
            "methods": list(self.methods),
            "excluded": dict(self.excluded),
            "max_spread": float(self.max_spread),
            "seconds": float(self.seconds),
        }


# -- the cross-check --------------------------------------------------------------------


def default_methods(tol: float = DEFAULT_TOL) -> tuple[list[str], dict[str, str]]:
    """The installed methods whose stated accuracy is at most ``tol``, and those left out.

    Returns
    -------
    methods : list of str
        Names in registry order.
    excluded : dict
        ``{name: reason}`` for registered methods not run by default.

    Examples
    --------
    >>> methods, excluded = default_methods()
    >>> "subset-exact" in methods
    True
    """
    methods, excluded = [], {}
    for name, m in METHODS.items():
        if not m.is_installed():
            excluded[name] = f"not installed (pip install 'mdsd-ot[{m.extra}]')"
        elif m.accuracy > tol:
            excluded[name] = f"stated accuracy {m.accuracy:g} > tol {tol:g}"
        else:
            methods.append(name)
    return methods, excluded


def _check_methods(methods: Sequence[str]) -> list[str]:
    names = list(dict.fromkeys(methods))
    if not names:
        raise ValueError("methods: give at least one method name")
    for name in names:
        if name not in METHODS:
            raise ValueError(f"methods: unknown method {name!r}; choose from {', '.join(METHODS)}")
        if not METHODS[name].is_installed():
            m = METHODS[name]
            raise ValueError(
                f"methods: {name!r} is not installed; pip install 'mdsd-ot[{m.extra}]'"
            )
    return names


def _one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0] if msg else ''}"


def _certify(rep: InstanceReport, tol: float) -> None:
    """Build an optimal coupling and set, check them exactly, and compare with the methods."""
    from ..exact import certify, optimal_plan

    inst = rep.instance
    try:
        C, H, a = optimal_plan(inst.p, inst.draft)
        cert = certify(inst.p, inst.draft, C, H)
    except ValueError as exc:  # too large for a dense exact plan
        rep.skipped["certify"] = str(exc).strip().splitlines()[0]
        return
    except Exception as exc:  # a crash is a failure of the cross-check
        rep.errors["certify"] = _one_line(exc)
        return
    rep.certificate = {
        "ok": bool(cert.ok),
        "kind": cert.kind,
        "exact": bool(cert.exact),
        "alpha": _fmt(a) if isinstance(a, Fraction) else float(a),
        "gap": str(cert.gap),
    }
    if not cert.ok:
        rep.errors["certify"] = f"certificate fails: {cert.reason}"
    elif isinstance(a, Fraction) and rep.alpha_exact is not None and a != rep.alpha_exact:
        rep.errors["certify"] = f"certified alpha {a} differs from exact alpha {rep.alpha_exact}"
    elif rep.alpha and any(
        abs(float(a) - v) > tol + (len(inst.p) + 2) * 2.0**-52 for v in rep.alpha.values()
    ):  # tol, plus the float certificate's own rounding (a sum of V entries: (V + 2) u)
        rep.errors["certify"] = f"certified alpha {float(a)!r} is off a method's alpha by > tol"


def check_instance(
    inst: Instance, methods: Sequence[str], tol: float, certify: bool = True
) -> InstanceReport:
    """Run ``methods`` on one instance and compare their α* (see :func:`crosscheck`)."""
    from ..api import solve

    rep = InstanceReport(inst)
    for name in methods:
        try:
            res = solve(inst.p, inst.draft, method=name)
        except ValueError as exc:  # the method declines this instance (size, law)
            rep.skipped[name] = str(exc).strip().splitlines()[0]
            continue
        except Exception as exc:  # a crash is a failure of the cross-check
            rep.errors[name] = _one_line(exc)
            continue
        a = float(res.alpha)
        if not np.isfinite(a):
            rep.errors[name] = f"returned a non-finite alpha ({a})"
            continue
        rep.alpha[name] = a
        rep.seconds[name] = float(res.seconds)
        if res.alpha_exact is not None:
            if rep.alpha_exact is not None and res.alpha_exact != rep.alpha_exact:
                rep.errors[name] = (
                    f"exact alpha {res.alpha_exact} differs from {rep.alpha_exact} "
                    "of another exact method"
                )
            elif rep.alpha_exact is None:
                rep.alpha_exact = Fraction(res.alpha_exact)
    if certify:
        _certify(rep, tol)
    vals = list(rep.alpha.values())
    rep.spread = float(max(vals) - min(vals)) if vals else 0.0
    rep.ok = bool(vals) and not rep.errors and rep.spread <= tol
    if not vals and not rep.errors:
        rep.errors["(all)"] = "no method could solve this instance"
    return rep


def _warm_up(methods: Sequence[str]) -> None:
    from ..api import solve
    from ..drafts import WithReplacement

    law = WithReplacement(["1/2", "1/2"], 2)
    for name in methods:
        try:
            solve(["1/4", "3/4"], law, method=name)
        except Exception:  # noqa: BLE001 - failures show up in the real run
            pass


def crosscheck(
    instances: Iterable[Any] | None = None,
    methods: Sequence[str] | None = None,
    tol: float = DEFAULT_TOL,
    *,
    certify: bool = True,
    warmup: bool = True,
) -> CrosscheckReport:
    r"""Solve every instance with every method and check that their α* agree (T1).

    Parameters
    ----------
    instances : iterable, optional
        :class:`Instance` objects, ``(p, draft)`` pairs, or dicts ``{"scheme", "n", "p", "q"}``
        (``"qs"`` for product, ``"table"`` for explicit) as in the reference alpha bank.
        Default: :func:`builtin_instances`.
    methods : sequence of str, optional
        Method names of :data:`mdsd_ot.METHODS`.  Default: :func:`default_methods` (every
        installed method whose stated accuracy is at most ``tol``).
    tol : float
        The largest allowed spread :math:`\max_m \alpha_m - \min_m \alpha_m` per instance.
    certify : bool
        Also build an optimal coupling and set (:func:`mdsd_ot.exact.plans.optimal_plan`)
        and check them with :func:`mdsd_ot.exact.certificate.certify`, in exact rationals for
        rational instances; the certified α* must equal the exact methods' α* and lie within
        ``tol`` of every method's.
    warmup : bool
        Solve one tiny instance with every method first, so that the reported times do not
        include one-off costs (lazy imports of POT or cvxpy, JIT caches).

    Returns
    -------
    CrosscheckReport
        ``ok`` is True when every instance's spread is at most ``tol``, no method crashed, and
        every certificate holds.

    Raises
    ------
    ValueError
        On bad instances, unknown or uninstalled methods, or a negative / non-finite ``tol``.

    Examples
    --------
    >>> from mdsd_ot.drafts import ConditionalPoisson
    >>> rep = crosscheck([(["1/5", "1/5", "3/5"], ConditionalPoisson(["1/2", "3/10", "1/5"], 2))],
    ...                  methods=["subset-exact", "subset"])
    >>> rep.ok, rep.instances[0].spread <= 1e-9
    (True, True)
    """
    if isinstance(tol, bool) or not isinstance(tol, int | float) or not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol: the tolerance must be a finite number >= 0, got {tol!r}")
    t0 = time.perf_counter()
    insts = builtin_instances() if instances is None else [_as_instance(x) for x in instances]
    if not insts:
        raise ValueError("instances: give at least one instance (or None for the built-in bank)")
    if methods is None:
        names, excluded = default_methods(tol)
    else:
        names, excluded = _check_methods(methods), {}
    if warmup:
        _warm_up(names)
    reports = [check_instance(inst, names, tol, certify) for inst in insts]
    return CrosscheckReport(
        ok=all(r.ok for r in reports),
        tolerance=float(tol),
        methods=names,
        instances=reports,
        excluded=excluded,
        seconds=time.perf_counter() - t0,
    )


class _CallableModule(types.ModuleType):
    """``mdsd_ot.reports.crosscheck`` names both this module and its main function.

    Once the module is imported, Python binds the attribute ``mdsd_ot.reports.crosscheck`` to the
    module (not to the lazily re-exported function), so the module is made callable: calling it
    calls :func:`crosscheck`.  (``mdsd_ot.crosscheck`` is always the function.)
    """

    def __call__(self, *args: Any, **kwargs: Any) -> CrosscheckReport:
        return crosscheck(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
