"""The explicit MDSD transport problem for small V, one module per form of docs/reference.md.

Importing this package registers every method in :data:`METHODS`.

=====================  ===============================================================
module                 job
=====================  ===============================================================
:mod:`.primal`         transport LP (7): ``"primal"``, ``"primal-cvxpy"``
:mod:`.emd`            LP (7) by POT's network simplex: ``"emd"``
:mod:`.bmatching`      b-matching LP (9): ``"bmatching"``
:mod:`.dual`           w-vertex-cover dual (10), LP and 0/1 program: ``"dual"``
:mod:`.maxflow`        max-flow over draft tuples: ``"maxflow"``, ``"maxflow-scipy"``
:mod:`.reduced`        set-reduced max-flow over token sets: ``"reduced"``
:mod:`.subset`         brute-force subset selection (8): ``"subset"``, ``"subset-exact"``
:mod:`.plans`          Lemma 1 plan completion, repair of LP flows, optimal couplings
:mod:`.certificate`    exact check of a plan and a set (weak duality)
=====================  ===============================================================

Private siblings hold what several forms share: ``_graph`` (the bipartite draft graph, level
sets), ``_highs`` (HiGHS models and solves), ``_flow`` (the bipartite max-flow engines and
:class:`SparsePlan`) and ``_limits`` (the size guards: every method counts its work and refuses
above its limit before doing any).
"""

from ..methods import METHODS, Method, register
from . import (
    bmatching,
    certificate,
    dual,
    emd,
    maxflow,  # registers "maxflow", "maxflow-scipy"
    plans,
    primal,
    reduced,
    subset,  # registers "subset", "subset-exact"
)
from ._flow import SparsePlan
from ._graph import DraftGraph, best_level_set, draft_graph, subset_value
from .bmatching import b_matching
from .certificate import Certificate, certify
from .dual import dual_constraint_matrix, w_vertex_cover
from .emd import emd_alpha
from .maxflow import tuple_flow
from .plans import (
    OptimalPlan,
    complete_dense,
    complete_plan,
    optimal_plan,
    repair_matching,
)
from .primal import transport_lp, transport_problem
from .reduced import largest_v_within, reduced_problem
from .subset import subset_selection

__all__ = [
    "METHODS",
    "Method",
    "register",
    "bmatching",
    "certificate",
    "dual",
    "emd",
    "maxflow",
    "plans",
    "primal",
    "reduced",
    "subset",
    "SparsePlan",
    "DraftGraph",
    "draft_graph",
    "best_level_set",
    "subset_value",
    "b_matching",
    "Certificate",
    "certify",
    "dual_constraint_matrix",
    "w_vertex_cover",
    "emd_alpha",
    "tuple_flow",
    "OptimalPlan",
    "optimal_plan",
    "complete_plan",
    "complete_dense",
    "repair_matching",
    "transport_lp",
    "transport_problem",
    "largest_v_within",
    "reduced_problem",
    "subset_selection",
]
