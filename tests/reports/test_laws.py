"""reports.laws: the schemes a report covers and α* of each on a batch (one solver call)."""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import drafts, fast
from mdsd_ot.reports.laws import alpha_rows, report_laws

TOL = 1e-12  # α* of one law: the shared-sort call against the per-law call, both float64


def _rows(seed: int, B: int, V: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(V, 0.3), B), rng.dirichlet(np.full(V, 0.3), B)


@pytest.mark.parametrize("n", [2, 3])
def test_report_laws_are_the_fast_laws_allowed_at_n(n):
    laws = report_laws(n)
    assert set(laws) == {
        s for s, c in drafts.SCHEMES.items() if c.kernel and c.fixed_n in (None, n)
    }
    assert ("spechub" in laws) == (n == 2)


@pytest.mark.parametrize("n", [2, 3])
def test_alpha_rows_match_one_call_per_law(n):
    P, Q = _rows(n, 6, 40)
    laws = report_laws(n)
    got = alpha_rows(P, Q, n, laws)
    assert set(got) == set(laws)
    for law in laws:
        a, how = got[law]
        assert how == "fast" and a.shape == (6,)
        ref = np.asarray(fast.alpha_star(P, Q, n=n, scheme=law))
        np.testing.assert_allclose(a, ref, rtol=0, atol=TOL)


def test_a_refused_row_is_nan_and_the_others_answered():
    P, Q = _rows(7, 4, 5)
    Q[2] = [1.0, 0.0, 0.0, 0.0, 0.0]  # one token: no law of 2 distinct drafts exists
    got = alpha_rows(P, Q, 2, ["with", "without"])
    a, _ = got["without"]
    assert np.isnan(a[2]) and not np.isnan(np.delete(a, 2)).any()
    for k in (0, 1, 3):
        assert abs(a[k] - fast.alpha_star(P[k], Q[k], n=2, scheme="without")) <= TOL
    w, _ = got["with"]  # with replacement is defined on every row
    np.testing.assert_allclose(w, fast.alpha_star(P, Q, n=2, scheme="with"), rtol=0, atol=TOL)
