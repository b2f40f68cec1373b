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
