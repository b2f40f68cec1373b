r"""The gap report: α* of each draft law beside the acceptance of each verifier defined for it.

For every position (a target ``p`` and a draft model ``q``), every draft law L built from q with
``n`` drafts (with and without replacement, conditional Poisson, greedy, and SpecHub when n = 2)
and every verifier v defined for L (:func:`mdsd_ot.verifiers.applicable`):

.. math:: \text{gap}(v) = \alpha^*(p, L) - \text{acceptance}(v; p, L) \ \ge 0 \quad (T11),

averaged over the positions, each with the standard error of the mean over positions
(:math:`s / \sqrt m`; with one position, the Monte-Carlo standard error where one applies).

How each number is computed (the ``method`` field):

- α*: :func:`mdsd_ot.fast.alpha_star` (batched prefix algorithm, T7; SpecHub through greedy with
  n = 2, same Q), else :func:`mdsd_ot.solve` with ``method="auto"``; ``None`` where neither
  applies (e.g. a large V before the fast solver supports the law);
- ``closed-form``: :meth:`Verifier.acceptance` where it exists (single, rrs-with, k-seq, greedy,
  spechub, and rrs-without with n ≤ 2);
- ``exact``: otherwise enumeration over the draft tuples (:meth:`Verifier.exact`) when the law's
  support has at most ``exact_max_tuples`` tuples (small V);
- ``simulated``: ``samples`` draft tuples per position verified by the sampler; the per-position
  standard error is :math:`\sqrt{\hat a(1-\hat a)/N}` and the reported standard error over
  positions includes this noise.  Used for rrs-without with n ≥ 3 at large V.
- ``optimal`` is reported only where the set-reduced plan is computable (V ≤ ``optimal_max_v``
  and ``method="reduced"`` registered); its acceptance is then exact (it attains α*, T11).

Temperatures: synthetic positions are tempered logits (:mod:`mdsd_ot.synthetic`); distributions
read from files are tempered as :math:`p_T \propto p^{1/T}` (the same as dividing logits by T).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _validate as V_
from .. import drafts as D
from ..synthetic import softmax
from . import applicable, get

__all__ = ["LAWS", "gap_report", "temper", "laws_for", "plot_gap", "table_rows"]

#: Draft laws in the report (SpecHub is added when n = 2).
LAWS: tuple[str, ...] = ("with", "without", "conditional-poisson", "greedy")


def laws_for(n: int) -> tuple[str, ...]:
    """The draft-law schemes reported for ``n`` drafts."""
    return LAWS + (("spechub",) if n == 2 else ())


def temper(P: np.ndarray, temperature: float | None) -> np.ndarray:
    r"""Rows :math:`p^{1/T} / \sum p^{1/T}` (zeros stay zero); ``None`` returns ``P`` unchanged.

    Examples
    --------
    >>> temper(np.array([0.2, 0.8]), 0.5).round(6)
    array([0.058824, 0.941176])
    """
    if temperature is None:
        return P
    with np.errstate(divide="ignore"):
        logs = np.log(P)
    out = softmax(np.where(np.isfinite(logs), logs, -np.inf), temperature)
    return np.where(P > 0, out, 0.0)


def _stat(values: Sequence[float], se_single: float = 0.0) -> dict[str, float] | None:
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    if v.size == 0:
        return None
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float(se_single)
    return {"mean": float(v.mean()), "se": se}


def _alpha_batch(P: np.ndarray, Q: np.ndarray, n: int, scheme: str) -> tuple[list, str]:
    """α* for every row, and how it was computed."""
    if importlib.util.find_spec("mdsd_ot.fast") is not None:
        try:
            from ..fast import alpha_star as fast_alpha

            fast_scheme = "greedy" if scheme == "spechub" else scheme
            a = fast_alpha(P, Q, n=n, scheme=fast_scheme)
            return [float(x) for x in np.atleast_1d(a)], "fast"
        except (ImportError, ValueError, NotImplementedError):
            pass
    from ..api import solve

    out = []
    for p, q in zip(P, Q, strict=True):
        try:
            out.append(float(solve(p, D.make(scheme, q, n), method="auto").alpha))
        except (ImportError, ValueError, NotImplementedError):
            out.append(None)
    return out, "solve"


def _support_bound(V: int, n: int, scheme: str) -> int:
    if scheme in ("greedy", "spechub"):
        return 2 * V
    return V**n


def _position(
    p: np.ndarray,
    q: np.ndarray,
    n: int,
    scheme: str,
    names: Sequence[str],
    *,
    samples: int,
    rng: np.random.Generator,
    exact_max_tuples: int,
) -> dict[str, tuple[float, float, str]]:
    """``{verifier: (acceptance, standard error, method)}`` at one position for one law."""
    draft = D.make(scheme, q, n)
    small = _support_bound(len(p), n, scheme) <= exact_max_tuples
    out = {}
    for name in names:
        v = get(name, draft)
        if v.has_closed_form(n):
            out[name] = (v.acceptance(p, q, n), 0.0, "closed-form")
        elif small:
            _, acc = v.exact(p)
            out[name] = (float(acc), 0.0, "exact")
        else:
            a, se = v.simulate(p, samples, rng)
            out[name] = (a, se, "simulated")
    return out


def gap_report(
    P: Any,
    Q: Any,
    n: int,
    *,
    temperatures: Sequence[float | None] = (None,),
    logits: bool = False,
    samples: int = 2000,
    seed: int = 0,
    exact_max_tuples: int = 4096,
    optimal_max_v: int = 8,
    progress: Callable[[int], None] | None = None,
    meta: dict[str, Any] | None = None,
    keep_values: bool = False,
) -> dict[str, Any]:
    r"""α*, verifier acceptance and gap per draft law, averaged over positions, per temperature.

    Parameters
    ----------
    P, Q : (m, V) or (V,) array_like
        Target and draft rows: probabilities, or logits with ``logits=True``.
    n : int
        Number of drafts.
    temperatures : sequence of float or None
        ``None`` keeps the rows as given (probabilities only).  Logits are divided by T;
        probabilities are tempered as :math:`p^{1/T}` (:func:`temper`).
    samples : int
        Draft tuples per position for simulated acceptance.
    seed : int
        Seed of the simulation randomness.
    exact_max_tuples, optimal_max_v : int
        Size limits for enumeration and for the optimal verifier (module docstring).
    progress : callable, optional
        Called with 1 after each (temperature, position).
    meta : dict, optional
        Extra fields copied into the report (e.g. the synthetic family's parameters).
    keep_values : bool
        Also keep the per-position values (``alpha_values`` per law, ``values`` per verifier),
        e.g. for paired comparisons between verifiers.

    Returns
    -------
    dict
        ``{"n", "V", "positions", "samples", "results": [...], ...meta}``; each result has
        ``temperature``, ``law``, ``alpha_star`` ``{"mean", "se"}`` (or None), ``alpha_method`` and
        ``verifiers``: a list of ``{"name", "method", "acceptance", "gap"}``.

    Examples
    --------
    >>> rep = gap_report([[0.5, 0.3, 0.2]], [[0.2, 0.3, 0.5]], 2)
    >>> [(r["law"], [v["name"] for v in r["verifiers"]]) for r in rep["results"]][:2]
    [('with', ['rrs-with', 'k-seq', 'optimal']), ('without', ['rrs-without', 'optimal'])]
    """
    n = V_.check_n(n)
    A = np.asarray(P, dtype=np.float64)
    B = np.asarray(Q, dtype=np.float64)
    if A.ndim == 1:
        A, B = A[None, :], B[None, :]
    if A.shape != B.shape or A.ndim != 2:
        raise ValueError(
            f"q: target and draft rows must have the same shape (m, V), got {A.shape} and {B.shape}"
        )
    if not logits:
        A, B = V_.prob_batch(A, "p"), V_.prob_batch(B, "q")
        if A.ndim == 1:
            A, B = A[None, :], B[None, :]
    m, V = A.shape
    g = np.random.default_rng(seed)
    from .. import exact as _exact

    use_optimal = V <= optimal_max_v and "reduced" in _exact.METHODS
    results = []
    for T in temperatures:
        if logits:
            if T is None:
                raise ValueError("temperatures: logits need a temperature (e.g. 1.0)")
            Pt, Qt = softmax(A, T), softmax(B, T)
        else:
            Pt, Qt = temper(A, T), temper(B, T)
        per_law: dict[str, dict[str, list]] = {}
        skipped: dict[str, str] = {}
        alphas: dict[str, tuple[list, str]] = {}
        names_of: dict[str, list[str]] = {}
        for scheme in laws_for(n):
            try:
                draft0 = D.make(scheme, Qt[0], n)
            except ValueError as exc:
                skipped[scheme] = str(exc)
                continue
            names = [x for x in applicable(draft0) if x != "optimal" or use_optimal]
            names_of[scheme] = names
            alphas[scheme] = _alpha_batch(Pt, Qt, n, scheme)
            per_law[scheme] = {x: [] for x in names}
        for k in range(m):
            for scheme, names in names_of.items():
                try:
                    vals = _position(
                        Pt[k], Qt[k], n, scheme, names,
                        samples=samples, rng=g, exact_max_tuples=exact_max_tuples,
                    )  # fmt: skip
                except ValueError as exc:  # a row outside the law's domain (e.g. q with zeros)
                    skipped[scheme] = f"position {k}: {exc}"
                    vals = {}
                for x in names:
                    per_law[scheme][x].append(vals.get(x))
            if progress is not None:
                progress(1)
        for scheme, names in names_of.items():
            alist, amethod = alphas[scheme]
            rows = []
            for x in names:
                got = per_law[scheme][x]
                accs = [r[0] if r else None for r in got]
                se1 = got[0][1] if m == 1 and got and got[0] else 0.0
                method = next((r[2] for r in got if r), None)
                gaps = [
                    None if a is None or c is None else a - c
                    for a, c in zip(alist, accs, strict=True)
                ]
                row = {
                    "name": x,
                    "method": method,
                    "acceptance": _stat(accs, se1),
                    "gap": _stat(gaps, se1),
                }
                if keep_values:
                    row["values"] = accs
                rows.append(row)
            results.append(
                {
                    "temperature": T,
                    "law": scheme,
                    "alpha_star": _stat(alist),
                    "alpha_method": amethod,
                    "verifiers": rows,
                    **({"alpha_values": alist} if keep_values else {}),
                    **({"skipped": skipped[scheme]} if scheme in skipped else {}),
                }
            )
        for scheme, why in skipped.items():
            if scheme not in names_of:
                results.append(
                    {"temperature": T, "law": scheme, "alpha_star": None, "alpha_method": None,
                     "verifiers": [], "skipped": why}
                )  # fmt: skip
    return {
        "n": n,
        "V": V,
        "positions": m,
        "samples": samples,
        "seed": seed,
        **(meta or {}),
        "results": results,
    }


def table_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Flatten a report: one dict per (temperature, law, verifier) with α*, acceptance and gap.

    A law with no verifier (conditional Poisson, unless ``optimal`` is reported) gives one row
    with ``verifier = None``.
    """
    rows = []
    for r in report["results"]:
        base = {"temperature": r["temperature"], "law": r["law"], "alpha_star": r["alpha_star"]}
        if not r["verifiers"]:
            rows.append({**base, "verifier": None, "method": None, "acceptance": None, "gap": None})
        for v in r["verifiers"]:
            rows.append(
                {
                    **base,
                    "verifier": v["name"],
                    "method": v["method"],
                    "acceptance": v["acceptance"],
                    "gap": v["gap"],
                }
            )
    return rows


def plot_gap(report: dict[str, Any], path: str | None = None, ax: Any = None) -> Any:
    """Acceptance against temperature: one line per verifier, dashed lines for the α* bounds.

    Needs matplotlib (``pip install 'mdsd-ot[plot]'``).  Writes a PNG to ``path`` when given and
    returns the matplotlib figure.
    """
    try:
        import matplotlib

        if ax is None and path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plotting the gap report needs matplotlib; pip install 'mdsd-ot[plot]'"
        ) from exc
    res = [r for r in report["results"] if r["temperature"] is not None]
    if not res:
        raise ValueError("temperatures: the plot needs at least one numeric temperature")
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    laws = list(dict.fromkeys(r["law"] for r in res))
    colours = {law: f"C{i}" for i, law in enumerate(laws)}
    markers = "osv^Dpx*"
    for law in laws:
        rows = sorted((r for r in res if r["law"] == law), key=lambda r: r["temperature"])
        Ts = [r["temperature"] for r in rows]
        al = [r["alpha_star"]["mean"] if r["alpha_star"] else np.nan for r in rows]
        if not all(np.isnan(al)):
            ax.plot(Ts, al, "--", color=colours[law], lw=1.2, label=f"α* ({law})")
        names = list(dict.fromkeys(v["name"] for r in rows for v in r["verifiers"]))
        for j, name in enumerate(names):
            ys, es = [], []
            for r in rows:
                v = next((v for v in r["verifiers"] if v["name"] == name), None)
                acc = v["acceptance"] if v else None
                ys.append(acc["mean"] if acc else np.nan)
                es.append(acc["se"] if acc else np.nan)
            ax.errorbar(
                Ts, ys, yerr=es, color=colours[law], marker=markers[j % len(markers)],
                lw=1.5, ms=4, capsize=2, label=f"{name} ({law})",
            )  # fmt: skip
    ax.set_xlabel("temperature")
    ax.set_ylabel("acceptance probability")
    ax.set_title(f"verifier acceptance vs α* (n = {report['n']}, V = {report['V']})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig
