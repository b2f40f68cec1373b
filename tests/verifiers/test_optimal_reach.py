"""Where the optimal verifier for sequential drafts ends (found by the verifier fuzzer,
2026-12-07): n = 9 at V = 12 was sent to the set-reduced plan, whose error said "use
method='fast'", which has no plan (its set weights summed 9! orders per set; the subset
dynamic program now serves it); at V = 150 the fast solver's error said "use
method='reduced'", which is far too large there.  One message now names both limits."""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import verifiers
from mdsd_ot.drafts import WithoutReplacement
from mdsd_ot.verifiers.optimal import default_method


@pytest.mark.parametrize("V", [16, 150])
def test_sequential_beyond_the_series_is_refused_naming_both_limits(V):
    rng = np.random.default_rng(0)
    q, p = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
    law = WithoutReplacement(q, 9)
    assert default_method(law) == "chain"  # 11,440 sets at V = 16
    for method in (None, "chain"):
        v = verifiers.get("optimal", law, method=method)
        for call in (v.certificate, lambda pv, v=v: v.sample(pv, [list(range(9))], 0)):
            with pytest.raises(ValueError, match=r"^draft: the optimal verifier for "
                               r"WithoutReplacement\(V=\d+, n=9\) .* supports n <= 8 .* use "
                               r"n <= 8, or a smaller vocabulary"):  # fmt: skip
                call(p)


def test_small_vocabularies_keep_the_exact_plan_beyond_n_8():
    rng = np.random.default_rng(1)
    law = WithoutReplacement(rng.dirichlet(np.ones(12)), 9)
    assert default_method(law) == "reduced"  # 220 sets × 2^9 subsets: within the work limit
    p = rng.dirichlet(np.ones(12))
    cert = verifiers.get("optimal", law).certificate(p)
    assert cert["construction"] == "reduced" and cert["eps"] == 0.0 and cert["law_error"] == 0
    assert cert["acceptance"] == cert["alpha_star"]
    assert 0 < cert["alpha_star"] <= 1  # the weights: tests/drafts/test_without.py (exact DP)
