"""Shared fixtures (the helpers themselves live in ``tests/testkit.py``)."""

from __future__ import annotations

import pytest

from testkit import bank_alpha, bank_law, dirichlet, load_bank  # noqa: F401  (re-exported)


@pytest.fixture(scope="session")
def bank() -> list[dict]:
    return load_bank()
