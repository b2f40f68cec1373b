"""HiGHS plumbing (:mod:`mdsd_ot.exact._highs`): tightened tolerances, the retry ladder and
its record of attempts, the 0/1 program.  LP values within 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mdsd_ot.exact._highs import LP_TOL, highs_lp, new_highs, solve_highs_lp


def test_new_highs_is_quiet_with_tightened_tolerances():
    h = new_highs()

    def option(name):  # the core class returns (status, value), the wrapper the value
        v = h.getOptionValue(name)
        return v[1] if isinstance(v, tuple) else v

    assert option("output_flag") is False
    assert option("primal_feasibility_tolerance") == LP_TOL == 1e-10
    assert option("dual_feasibility_tolerance") == LP_TOL


def test_lp_solved_and_attempt_recorded():
    """max x + y s.t. x + 2y <= 1, x <= 1/2 (x, y >= 0): optimum 3/4 at (1/2, 1/4)."""
    A = sp.csc_matrix(np.array([[1.0, 2.0], [1.0, 0.0]]))
    lp = highs_lp(np.ones(2), A, np.full(2, -np.inf), np.array([1.0, 0.5]), maximize=True)
    h, tried = solve_highs_lp(lp)
    assert abs(h.getInfo().objective_function_value - 0.75) <= 1e-9
    assert np.allclose(h.getSolution().col_value, [0.5, 0.25], atol=1e-9)
    assert tried == ["default: Optimal"]


def test_integer_program():
    """max x s.t. 2x <= 3, x integer: 1 (the LP relaxation would give 1.5)."""
    A = sp.csc_matrix(np.array([[2.0]]))
    lp = highs_lp(np.ones(1), A, np.array([-np.inf]), np.array([3.0]), maximize=True, integer=True)
    h, _ = solve_highs_lp(lp, mip=True)
    assert abs(h.getInfo().objective_function_value - 1.0) <= 1e-9


def test_infeasible_lp_raises_after_every_attempt():
    """x >= 0 and x <= -1: no attempt ends optimal; the error lists all three option sets."""
    A = sp.csc_matrix(np.array([[1.0]]))
    lp = highs_lp(np.ones(1), A, np.array([-np.inf]), np.array([-1.0]), maximize=True)
    with pytest.raises(RuntimeError, match="no optimal solution") as info:
        solve_highs_lp(lp)
    msg = str(info.value)
    assert msg.count(":") >= 4 and "presolve" in msg and "ipm" in msg
