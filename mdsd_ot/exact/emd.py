r"""The transport problem (7) through POT's network simplex ``ot.emd``, an independent peer.

Cost :math:`c(i, \bar i) = 1 - 1[i \in \bar i]` over Σ × supp(p_draft); then

.. math::

   \alpha^* = 1 - \min_{C \in \Pi(p,\, p_{draft})} \langle c, C \rangle .

POT is optional (``pip install 'mdsd-ot[test]'``).  The network simplex works in float64 on a
problem with 0/1 costs; the returned α = 1 − cost is accurate to rounding in the summation
(registered accuracy 1e-9, checked against the exact alpha bank).  H is the best level set of
POT's token potentials (:func:`~mdsd_ot.exact._graph.best_level_set`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..drafts import DraftLaw, Vector
from ..methods import register, timed
from . import _limits
from ._graph import best_level_set, draft_graph

__all__ = ["emd_alpha", "MAX_ENTRIES_EMD"]

#: Largest dense cost matrix V·|supp(p_draft)| handed to ``ot.emd``.
MAX_ENTRIES_EMD: int = 2**22


def _import_ot():
    try:
        import ot
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "method 'emd' needs POT; install it with pip install 'mdsd-ot[test]'"
        ) from exc
    return ot


def emd_alpha(p: Any, draft: DraftLaw) -> dict[str, Any]:
    r"""α* = 1 − min ⟨c, C⟩ by ``ot.emd`` with the 0/1 cost c(i, ī) = 1 − 1[i ∈ ī].

    Returns
    -------
    dict
        ``alpha``, ``C`` ((V, K) plan), ``u`` (V,), ``v`` (K,) potentials, ``H`` (best level
        set of u), ``H_value`` (its P(H) + 1 − Q(H)), ``graph`` and POT's ``warning``.

    Examples
    --------
    >>> from mdsd_ot.drafts import WithReplacement
    >>> out = emd_alpha([0.5, 0.5], WithReplacement([0.75, 0.25], 2))
    >>> round(out["alpha"], 12)
    0.9375
    """
    pv = p.float if isinstance(p, Vector) else Vector(p, "p").float
    _limits.check_tuples(  # before importing POT (seconds)
        draft,
        per_tuple=draft.V,
        limit=MAX_ENTRIES_EMD,
        what="ot.emd on the transport LP (7)",
        hint=_limits.instead(draft, "fast", "reduced"),
        unit="cost-matrix entries",
    )
    ot = _import_ot()
    g = draft_graph(draft)
    cost = 1.0 - g.match_matrix()
    b = g.w / g.w.sum()
    itermax = max(100_000, 50 * g.V * g.K)
    C, log = ot.emd(pv, b, cost, numItermax=itermax, log=True)
    C = np.asarray(C, dtype=np.float64)
    if log.get("result_code", 1) != 1:
        raise RuntimeError(f"ot.emd did not reach optimality: {log.get('warning')}")
    alpha = 1.0 - float(np.sum(cost * C))
    u = np.asarray(log["u"], dtype=np.float64)
    v = np.asarray(log["v"], dtype=np.float64)
    H, hv = best_level_set(pv, g, -u)
    return dict(alpha=alpha, C=C, u=u, v=v, H=H, H_value=hv, graph=g, warning=log.get("warning"))


@register("emd", accuracy=1e-9, requires=("ot",), extra="test")
def _solve_emd(p, draft):
    """POT's ot.emd (network simplex) on the 0/1 cost 1 − 1[i ∈ ī]; α = 1 − cost."""
    with timed() as t:
        out = emd_alpha(p, draft)
        g = out["graph"]
        plan = g.dense_plan(out["C"]) if g.wants_dense() else None
    info = {
        "H_value": out["H_value"],
        "tuples": g.tuples,
        "warning": out["warning"],
    }
    if plan is None:
        import scipy.sparse as sp

        info["plan_coo"] = sp.coo_matrix(out["C"])
    return dict(
        alpha=out["alpha"],
        H=out["H"],
        plan=plan,
        duals={"u": out["u"], "v": out["v"]},
        seconds=t.seconds,
        info=info,
    )
