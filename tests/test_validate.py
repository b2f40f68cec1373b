"""The one boundary validator (mdsd_ot._validate): tolerances, exactness, messages."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mdsd_ot import _validate as V
from mdsd_ot.drafts import WithReplacement


def test_float_vector_within_tolerance_is_renormalised():
    x = np.array([0.5, 0.5 + 5e-10])  # off by 5e-10 < SUM_TOL = 1e-9
    out = V.prob_vector(x)
    assert abs(out.sum() - 1.0) <= 1e-15


def test_float_vector_beyond_tolerance_is_refused():
    with pytest.raises(
        ValueError, match=r"p: entries sum to 1.000000005, not 1 \(tolerance 1e-09\)"
    ):
        V.prob_vector([0.5, 0.5 + 5e-9])


def test_float32_uses_its_own_tolerance():
    x = np.full(1000, 1e-3, dtype=np.float32)
    x[0] += 5e-6  # fine for float32 (SUM_TOL_F32 = 1e-4), too far for float64 rules
    assert V.prob_vector(x).dtype == np.float64
    with pytest.raises(ValueError):
        V.prob_vector(x.astype(np.float64))


def test_tiny_negative_rounding_is_clipped_but_real_negatives_are_not():
    assert V.prob_vector([1.0, -1e-16])[1] == 0.0
    with pytest.raises(ValueError, match="entry 1 is negative"):
        V.prob_vector([1.0 + 1e-6, -1e-6])


def test_exact_vector_keeps_rationals_and_converts_floats_exactly():
    assert V.exact_vector(["1/3", Fraction(2, 3)]) == (Fraction(1, 3), Fraction(2, 3))
    assert V.exact_vector([0.25, 0.75]) == (Fraction(1, 4), Fraction(3, 4))
    with pytest.raises(ValueError, match="cannot read 'x/3'"):
        V.exact_vector(["x/3", "1/3"])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_exact_vector_checks_floats_at_their_dtype_tolerance(dtype):
    """exact_vector checked float32 / float16 rows at float64's 1e-9, which they cannot meet."""
    x = np.full(1000, 1e-3, dtype=dtype)
    x[0] += 5e-6 if dtype == np.float32 else 4e-4  # within sum_tol(dtype), beyond 1e-9
    assert abs(float(x.astype(np.float64).sum()) - 1.0) > V.SUM_TOL
    assert abs(float(x.astype(np.float64).sum()) - 1.0) <= V.sum_tol(x.dtype)
    fr = V.exact_vector(x, "q")
    assert sum(fr) == 1 and len(fr) == 1000
    x64 = x.astype(np.float64)
    assert np.allclose([float(f) for f in fr], x64 / x64.sum(), rtol=1e-15, atol=0)
    with pytest.raises(ValueError, match=r"q: entries sum to .* \(tolerance 1e-09\)"):
        V.exact_vector(x.astype(np.float64), "q")  # float64: its own 1e-9
    with pytest.raises(ValueError, match=r"q: entries sum to .* \(tolerance 1e-09\)"):
        V.exact_vector(x, "q", tol=V.SUM_TOL)  # an explicit tol still decides


@pytest.mark.parametrize(
    "x, match",
    [
        ([], "is empty"),
        ([[0.5, 0.5]], "must be a 1-D vector"),
        ([0.5, np.inf], "entry 1 is inf"),
        (["a", "b"], "cannot read"),
    ],
)
def test_prob_vector_messages(x, match):
    with pytest.raises(ValueError, match=match):
        V.prob_vector(x)


def test_batch_names_the_bad_row():
    good = np.full((4, 3), 1 / 3)
    assert V.prob_batch(good).shape == (4, 3)
    bad = good.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"p\[2\]: entry 1 is nan.*row 2 of 4"):
        V.prob_batch(bad)
    bad = good.copy()
    bad[3] *= 2
    with pytest.raises(ValueError, match=r"p\[3\]: entries sum to 2.*row 3 of 4"):
        V.prob_batch(bad)


def test_solve_checks_p_against_the_draft():
    import mdsd_ot

    with pytest.raises(
        ValueError, match=r"^p: has length 2 but the draft law is over V = 3 tokens"
    ):
        mdsd_ot.solve([0.5, 0.5], WithReplacement([0.2, 0.3, 0.5], 2), method="subset")
    with pytest.raises(ValueError, match="method: unknown method 'nope'"):
        mdsd_ot.solve([0.5, 0.5], WithReplacement([0.2, 0.8], 2), method="nope")
    with pytest.raises(ValueError, match="draft: expected a draft law"):
        mdsd_ot.solve([0.5, 0.5], [0.2, 0.8], method="subset")
    big = WithReplacement(np.full(20, 0.05), 2)
    with pytest.raises(ValueError, match=r"too large for brute-force subset selection.*fast"):
        mdsd_ot.solve(np.full(20, 0.05), big, method="subset")


# --- one rule set for 1-D, 2-D, numpy and tensors (issue 10, class 3) --------------------------


@pytest.mark.parametrize(
    "bad, kind",
    [
        (np.array([0.5 + 0j, 0.5]), "complex128"),
        (np.array([[0.5 + 0j, 0.5], [0.25, 0.75]]), "complex128"),
        (np.array([True, False]), "bool"),
        (np.array([[True, False], [False, True]]), "bool"),
    ],
)
def test_complex_and_bool_refused_in_1d_and_2d(bad, kind):
    """The 2-D validator used to drop imaginary parts and accept booleans: same message now."""
    msg = rf"q: entries must be real numbers, got dtype {kind}; "
    for check in (V.prob_batch, V.prob_rows) + ((V.prob_vector,) if bad.ndim == 1 else ()):
        with pytest.raises(ValueError, match=msg):
            check(bad, "q")


def test_prob_rows_fused_pass_no_copy_and_clipping():
    """Valid float64 rows come back without a copy; rounding negatives are clipped (a copy)."""
    X = np.full((3, 4), 0.25)
    out, sums, single = V.prob_rows(X)
    assert out is X and sums.tolist() == [1.0, 1.0, 1.0] and not single
    assert V.normalise(out, sums) is X
    Y = np.array([[0.5, 0.5 + 1e-16, -1e-16]])
    out, sums, _ = V.prob_rows(Y)
    assert out is not Y and out[0, 2] == 0.0 and Y[0, 2] < 0  # the input is not modified
    with pytest.raises(ValueError, match=r"p\[1\]: entry 0 is nan.*row 1 of 2"):
        V.prob_rows(np.array([[0.5, 0.5], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match=r"p: entries sum to 0.5"):
        V.prob_rows([0.25, 0.25])


def test_tensor_rules():
    """Tensors: complex and bool refused with the same message, meta refused, grad detached,
    half and integer tensors computed in float32 / float64."""
    torch = pytest.importorskip("torch")
    with pytest.raises(
        ValueError, match=r"p: entries must be real numbers, got dtype torch.complex"
    ):
        V.device_rows(torch.tensor([0.5 + 0j, 0.5]), "p")
    with pytest.raises(ValueError, match=r"p: entries must be real numbers, got dtype torch.bool"):
        V.device_rows(torch.tensor([[True, False]]), "p")
    with pytest.raises(ValueError, match=r"p: is a tensor on the 'meta' device"):
        V.device_rows(torch.empty(3, device="meta"), "p")
    g = torch.tensor([0.5, 0.5], dtype=torch.float64, requires_grad=True)
    out = V.device_rows(g, "p")
    assert out.shape == (1, 2) and not out.requires_grad
    assert V.device_rows(torch.tensor([1, 0]), "p").dtype == torch.float64
    assert V.device_rows(torch.tensor([0.5, 0.5]).half(), "p").dtype == torch.float32
    sums, ok, tol = V.device_flags(torch.tensor([[0.5, 0.5], [0.5, float("nan")]]))
    assert ok.tolist() == [True, False] and tol == V.SUM_TOL_F32


def test_low_precision_tolerance_is_twice_the_unit_roundoff():
    """float16 / bfloat16 rows are checked at 2u of their format (a rounded distribution sums to
    1 within u), then computed in float32 and renormalised; the suggested fix works."""
    torch = pytest.importorskip("torch")
    from mdsd_ot import fast

    assert V.sum_tol(torch.bfloat16) == V.SUM_TOL_BF16 == 2 * 2.0**-8
    assert V.sum_tol(torch.float16) == V.sum_tol(np.float16) == V.SUM_TOL_F16 == 2 * 2.0**-11
    assert V.sum_tol(np.dtype(np.float32)) == V.SUM_TOL_F32
    assert V.sum_tol(np.dtype(np.float64)) == V.sum_tol(torch.int64) == V.SUM_TOL
    tiny = torch.tensor([0.2, 0.3, 0.5], dtype=torch.bfloat16)  # sums to 1.00098 in bf16
    X = V.device_rows(tiny, "p")
    assert X.dtype == torch.float32 and abs(float(X.sum()) - 1.0) < 1e-6
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 32000, generator=g) * 3
    for dt in (torch.bfloat16, torch.float16):
        P = torch.softmax(logits.to(dt), -1)
        a = fast.alpha_star(P, P, n=2, scheme="with")
        assert a.dtype == torch.float32 and torch.allclose(a, torch.ones(4))
    bad = torch.tensor([[0.5, 0.5], [0.2, 0.82]], dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"p\[1\]: entries sum to 1.02.*tolerance 0.0078125.*"
                       r"p.float\(\)") as err:  # fmt: skip
        fast.alpha_star(bad, bad, n=2, scheme="with")
    assert "(row 1 of 2)" in str(err.value)
    fixed = bad.float() / bad.float().sum(-1, keepdims=True)  # the suggested fix
    assert fast.alpha_star(fixed, fixed, n=2, scheme="with").tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"p\[1\]: .*tolerance 0.000976562.*astype\(np.float32"):
        V.prob_rows(np.array([[0.5, 0.5], [0.2, 0.82]], dtype=np.float16))


def test_checked_rows_follow_the_given_dtype():
    """``checked_rows`` checks at the tolerance of the dtype given (float32: 1e-4), so a cast to
    float64 afterwards does not turn float32 rounding into an error."""
    torch = pytest.importorskip("torch")
    x = np.array([[0.5, 0.5 + 5e-6]], dtype=np.float32)
    X, single = V.checked_rows(x, "p")
    assert X.dtype == np.float64 and not single and abs(X.sum() - 1) < 1e-15
    T, single = V.checked_rows(torch.tensor([0.5, 0.5 + 5e-6]), "p")
    assert T.dtype == torch.float32 and T.shape == (1, 2) and single
    with pytest.raises(ValueError, match=r"p: entries sum to 1.00001, not 1 \(tolerance 1e-09"):
        V.checked_rows(x.astype(np.float64)[0], "p")
