r"""HiGHS plumbing shared by the LP forms: a quiet instance, an LP model, a robust solve.

The transport LP (7), the b-matching LP (9) and the w-vertex-cover dual (10) (:mod:`.primal`,
:mod:`.bmatching`, :mod:`.dual`) are passed to HiGHS as a :func:`highs_lp` model (columns ≥ 0,
a column-wise sparse matrix, row bounds) and solved by :func:`solve_highs_lp`, which tightens
the feasibility tolerances to :data:`LP_TOL` and retries with other option sets when an attempt
does not end optimal (HiGHS issue 2511: presolve can call a feasible transport LP infeasible on
tiny masses).  The status of every attempt is returned for ``Result.info["attempts"]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["new_highs", "highs_lp", "solve_highs_lp", "LP_TOL"]

#: Primal and dual feasibility tolerance passed to HiGHS (its default 1e-7 leaves ~1e-7 errors).
LP_TOL: float = 1e-10


def new_highs(tol: float = LP_TOL, **options: Any):
    """A silent HiGHS instance with primal/dual feasibility tolerances ``tol``.

    The core ``_Highs`` class is used where available: the Python wrapper's constructor enables
    callbacks before any option can be set, which prints HiGHS's banner on the C-level stdout
    (it would corrupt ``mdsd-ot crosscheck --json``).
    """
    import highspy

    core = getattr(getattr(highspy, "_core", None), "_Highs", None)
    h = core() if core is not None else highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", tol)
    h.setOptionValue("dual_feasibility_tolerance", tol)
    for k, v in options.items():
        h.setOptionValue(k, v)
    return h


def highs_lp(
    cost: np.ndarray,
    A: sp.spmatrix,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    *,
    maximize: bool,
    col_upper: np.ndarray | None = None,
    integer: bool = False,
):
    """A ``highspy.HighsLp`` with columns ≥ 0, a column-wise sparse matrix and row bounds."""
    import highspy

    A = sp.csc_matrix(A)
    m, ncol = A.shape
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = ncol, m
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_ = np.zeros(ncol)
    lp.col_upper_ = np.full(ncol, inf) if col_upper is None else np.asarray(col_upper, float)
    lp.row_lower_ = np.where(np.isfinite(row_lower), row_lower, -inf).astype(np.float64)
    lp.row_upper_ = np.where(np.isfinite(row_upper), row_upper, inf).astype(np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = ncol, m
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    if integer:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * ncol
    return lp


#: Option sets tried in turn: presolve can call a feasible transport LP infeasible on tiny
#: masses (HiGHS issue 2511), so the later attempts switch it off.
_ATTEMPTS: tuple[dict[str, Any], ...] = (
    {},
    {"presolve": "off"},
    {"presolve": "off", "solver": "ipm", "run_crossover": "on"},
)


#: For the 0/1 program presolve goes first *off*: with masses near 1e-10 HiGHS's MIP presolve
#: returned 0/1 points up to 1.6e-9 above the optimum (seen on seeded random instances).
#: Without presolve, HiGHS's branch and bound never finished on a 3-token instance with a
#: 1e-16 mass (tests/exact/test_exact_dual.py::test_dual_ip_terminates_on_tiny_masses), and a
#: ``time_limit`` there could deadlock HiGHS's task scheduler on the next solve; a node limit
#: ends that attempt cleanly (a 0/1 vertex of (10) is found at the root otherwise, T2).
_MIP_ATTEMPTS: tuple[dict[str, Any], ...] = ({"presolve": "off", "mip_max_nodes": 10_000}, {})


def solve_highs_lp(lp, *, tol: float = LP_TOL, mip: bool = False, attempts=None, basis: Any = None):
    """Solve ``lp`` with HiGHS, retrying without presolve if it does not report optimal.

    Parameters
    ----------
    lp : highspy.HighsLp
        The model (see :func:`highs_lp`).
    tol : float
        Primal and dual feasibility tolerance.
    mip : bool
        Solve as an integer program (zero gap tolerances).
    attempts : sequence of dict, optional
        HiGHS option sets tried in turn (defaults per LP / MIP).
    basis : highspy.HighsBasis, optional
        A starting basis; when given, a first attempt runs the primal simplex from it.

    Returns
    -------
    h : highspy Highs
        The solved instance (read ``getSolution()``, ``getInfo()``).
    tried : list of str
        The status of each attempt (for ``Result.info``).

    Raises
    ------
    RuntimeError
        When no attempt reports optimal (never seen on valid input; tested down to 1e-12).
    """
    import highspy

    if attempts is None:
        attempts = _MIP_ATTEMPTS if mip else _ATTEMPTS
    runs = [(dict(opts), None) for opts in attempts]
    if basis is not None:
        runs.insert(0, ({"simplex_strategy": 4}, basis))
    tried = []
    for opts, start in runs:
        extra = dict(opts)
        if mip:
            extra.pop("solver", None)
            extra.pop("run_crossover", None)
            extra.update(mip_rel_gap=0.0, mip_abs_gap=1e-13, mip_feasibility_tolerance=tol)
        h = new_highs(tol, **extra)
        h.passModel(lp)
        if start is not None:
            h.setBasis(start)
        h.run()
        status = h.getModelStatus()
        label = ("warm " if start is not None else "") + (str(opts) if opts else "default")
        tried.append(f"{label}: {h.modelStatusToString(status)}")
        if status == highspy.HighsModelStatus.kOptimal:
            return h, tried
    raise RuntimeError(f"HiGHS found no optimal solution; attempts: {'; '.join(tried)}")
