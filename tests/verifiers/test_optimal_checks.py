"""proofs/optimal_verifier.md: its machine checks (proofs/optimal_checks.py) pass."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PROOFS = Path(__file__).resolve().parents[2] / "proofs"


def _checks():
    spec = importlib.util.spec_from_file_location("optimal_checks", PROOFS / "optimal_checks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


checks = _checks()


def test_note_names_every_check():
    text = (PROOFS / "optimal_verifier.md").read_text()
    for name in checks.__all__:
        assert name in text, name


@pytest.mark.parametrize("name", checks.__all__)
def test_machine_check(name):
    out = getattr(checks, name)()
    assert isinstance(out, dict) and out
