"""``drafts._sets.combinations``: lexicographic k-subsets without intermediate blow-up.

It used to extend every prefix, so C(30, 28) (435 sets) passed through C(30, 10) = 3e7 rows
(4 GiB) and the set-reduced optimal verifier of conditional Poisson with n = 28 of V = 30 died
of memory.  Prefixes that cannot be completed are now never formed.
"""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

from mdsd_ot.drafts._sets import combinations


@pytest.mark.parametrize("m", range(0, 9))
def test_matches_itertools(m):
    for k in range(1, m + 2):
        want = np.array(list(itertools.combinations(range(m), k)), dtype=np.int64).reshape(-1, k)
        got = combinations(m, k)
        assert got.shape == want.shape and np.array_equal(got, want)


def test_k_close_to_m_stays_small():
    tracemalloc.start()
    rows = combinations(30, 28)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert rows.shape == (435, 28)
    assert peak < 2_000_000  # bytes: a few copies of the (435, 28) answer
