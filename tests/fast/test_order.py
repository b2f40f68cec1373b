"""The chain order by one packed integer sort (mdsd_ot.fast.order): equal to numpy's stable
argsort of |key| on every kind of row, exactly (integer indices, no tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot.fast.order import PACKED_MIN_V, ratio_order
from mdsd_ot.fast.prefix import sort_key
from mdsd_ot.synthetic import synthetic_pair

NAN_PATTERNS = np.array(
    [0x7FF0000000000001, 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000100],
    dtype=np.uint64,
).view(np.float64)


def expected(key: np.ndarray) -> np.ndarray:
    return np.argsort(np.abs(key), axis=-1, kind="stable")


def rows(seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded rows that exercise the packing, the repair of near ties and the NaN tail."""
    g = np.random.default_rng(seed)
    V = 20_000
    out = {}
    p, q = synthetic_pair(V, 1.0, g, noise=1.0)
    out["synthetic"] = sort_key(p, q)
    out["all equal"] = np.ones(V)
    out["all zero, signed zeros"] = np.where(g.random(V) < 0.5, 0.0, -0.0)
    near = 1.0 + np.arange(V) * 2.0**-52  # every key in one run of equal truncated keys
    g.shuffle(near)
    out["one run of near ties"] = near
    x = g.random(V)
    x[g.random(V) < 0.2] = np.nan
    x[g.random(V) < 0.1] = np.inf
    x[g.random(V) < 0.1] = 0.0
    out["nan, inf and zeros"] = x
    x = g.random(V)
    x[g.integers(0, V, 3000)] = g.choice(NAN_PATTERNS, 3000)  # NaN payloads, signed NaN
    out["nan payloads"] = x
    out["subnormal and tiny"] = g.choice([5e-324, 1e-310, 2.2e-308, 0.0, 1e-300], V)
    out["600 octaves"] = np.exp2(g.uniform(-600, 600, V))
    base = g.choice([1.0, 3.5, 1e-300, 7e200], V)
    out["near ties at several scales"] = base * (1 + g.integers(0, 2**20, V) * 2.0**-52)
    out["few near ties"] = g.random(V) + np.where(g.random(V) < 0.01, 2.0**-45, 0.0)
    return out


@pytest.mark.parametrize("name", list(rows()))
def test_equals_stable_argsort(name):
    key = rows()[name]
    np.testing.assert_array_equal(ratio_order(key), expected(key))


def test_batched_rows_are_independent():
    keys = np.stack(list(rows(1).values()))
    np.testing.assert_array_equal(ratio_order(keys), expected(keys))


def test_float32_and_short_rows():
    g = np.random.default_rng(2)
    k = (g.random((3, 5000)) * 1e-3).astype(np.float32)
    k[:, ::3] = k[:, 1::3]  # exact ties
    k[0, 5], k[1, 7] = np.nan, np.inf
    np.testing.assert_array_equal(ratio_order(k), expected(k))
    short = g.random(PACKED_MIN_V - 1)
    np.testing.assert_array_equal(ratio_order(short), expected(short))


def test_many_small_runs_of_random_widths():
    g = np.random.default_rng(3)
    for _ in range(50):
        V = int(g.integers(PACKED_MIN_V, 4000))
        base = g.choice([1.0, 3.5, 1e-300], V)
        k = base * (1 + g.integers(0, 2 ** int(g.integers(1, 30)), V) * 2.0**-52)
        np.testing.assert_array_equal(ratio_order(k), expected(k))


def test_torch_rows_use_the_library_sort():
    torch = pytest.importorskip("torch")
    k = rows(4)["synthetic"]
    t = torch.as_tensor(np.stack([k, -k]))
    out = ratio_order(t).numpy()
    np.testing.assert_array_equal(out, expected(np.stack([k, k])))


def test_property_rows_from_a_small_alphabet():
    """Hypothesis: rows drawn from a few values and their neighbours one ulp to 2**20 ulps away
    (ties, near ties across the truncation, NaN, inf, zeros, subnormals), 1-D and batched."""
    hyp = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    base = [0.0, -0.0, 5e-324, 1e-300, 0.37, 1.0, 3.5, 7e200, np.inf, np.nan]

    @hyp.settings(max_examples=60, deadline=None, derandomize=True)
    @hyp.given(
        st.integers(0, 2**32 - 1),
        st.integers(PACKED_MIN_V, 3000),
        st.integers(1, 3),
        st.integers(0, 20),
    )
    def prop(seed, V, B, spread):
        g = np.random.default_rng(seed)
        k = g.choice(base, size=(B, V))
        steps = g.integers(0, 2**spread + 1, size=(B, V))
        finite = np.isfinite(k) & (k != 0)
        k[finite] = (k[finite].view(np.int64) + steps[finite]).view(np.float64)
        np.testing.assert_array_equal(ratio_order(k), expected(k))

    prop()


def test_many_rows_are_ordered_a_few_at_a_time(monkeypatch):
    from mdsd_ot.fast import order as order_module

    keys = np.stack(list(rows(5).values()))
    monkeypatch.setattr(order_module, "_CHUNK", 3 * keys.shape[1])  # chunks of 3 rows
    np.testing.assert_array_equal(ratio_order(keys), expected(keys))


def test_unstable_short_rows_are_sorted_permutations():
    from mdsd_ot.fast.order import UNSTABLE_MIN_V

    g = np.random.default_rng(6)
    k = g.choice([0.0, 0.5, 1.0, 2.0, np.inf], size=(2, UNSTABLE_MIN_V - 1))
    o = ratio_order(k, stable=False)
    assert all(np.array_equal(np.sort(o[r]), np.arange(k.shape[1])) for r in range(2))
    np.testing.assert_array_equal(np.take_along_axis(k, o, -1), np.sort(k, axis=-1))
