"""proofs/: one file per claim T1..T12, and their machine checks (proofs/checks.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PROOFS = Path(__file__).resolve().parents[1] / "proofs"


def _checks():
    spec = importlib.util.spec_from_file_location("proof_checks", PROOFS / "checks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


checks = _checks()


@pytest.mark.parametrize("k", range(1, 13))
def test_proof_file_exists_with_sections(k):
    files = list(PROOFS.glob(f"T{k:02d}_*.md"))
    assert len(files) == 1, files
    text = files[0].read_text()
    for section in ("**Statement.**", "**Machine check.**"):
        assert section in text, (files[0].name, section)
    assert "**Proof" in text
    assert f"check_T{k:02d}" in text or f"T{k}" in text


@pytest.mark.parametrize("k", range(1, 13))
def test_machine_check(k):
    out = getattr(checks, f"check_T{k:02d}")()
    assert isinstance(out, dict) and out


def test_nonneg_certificate_can_fail():
    import sympy as sp

    a, b = sp.symbols("a b", nonnegative=True)
    assert checks.nonneg_on_simplex(a * b + a, [a, b])
    assert not checks.nonneg_on_simplex(a - b, [a, b])
    assert checks.nonneg_on_simplex(1 - a - b, [a, b])  # = slack w after homogenising


def test_t10_interval_closed_form():
    import sympy as sp

    lo, hi = checks.t10_interval()
    assert abs(float(lo) - 0.18350341907227397) < 1e-12
    assert abs(float(hi) - (float(sp.sqrt(6)) / 3 - 1 / 3)) < 1e-12


def test_t05_sequential_helper_doctests():
    import doctest

    res = doctest.testmod(checks.t05_sequential, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 5 and res.failed == 0, res


def test_t05_sequential_checks_can_fail():
    from fractions import Fraction as F

    seq = checks.t05_sequential
    h, u, rho = [F(1, 5), F(1, 10)], F(3, 10), F(2, 5)
    # Lemma B with the wrong factor (ρ/R replaced by 1) is off, so the identity test has teeth
    wrong = seq.q_inside(h, rho, 1) - (seq.q_inside(h, rho + u, 1) - seq.q_inside(h, rho + u, 2))
    assert wrong != seq.q_inside(h + [u], rho, 2) == seq.absorption_rhs(h, u, rho, 2)
    # merging two tokens strictly lowers Q (Lemma C is not an equality)
    a, b = F(1, 5), F(1, 10)
    assert seq.q_inside(h + [a, b], F(1, 10), 3) > seq.q_inside(h + [a + b], F(1, 10), 3)


def test_t05_sequential_chain_regression():
    """T5 for sequential drafts, n = 4, V = 7: D1 ≤ M ≤ D2 exactly on a fixed instance."""
    from fractions import Fraction as F

    from mdsd_ot.drafts import WithoutReplacement
    from mdsd_ot.theory.qconvex import q_convexity_violation

    q = [F(w, 100) for w in (40, 25, 1, 2, 30, 1, 1)]
    d1, mid, d2 = checks.t05_sequential.chain(q, 4, [1, 2, 3, 5], 0, 4)
    assert d1 < mid < d2, (d1, mid, d2)
    v = q_convexity_violation(WithoutReplacement(q, 4))
    assert v.holds and v.value == 0 and v.exact, v


@pytest.mark.slow
def test_t05_sequential_slow():
    seq = checks.t05_sequential
    assert seq.absorption_symbolic(3) == 14
    assert seq.splitting_certificate(2) == 12
    assert seq.logconvex_identity(5) == 5
    out = seq.sweep(150, seed=1, max_V=12, max_n=6)
    assert out["instances"] == 150 and out["triples"] > 800, out
