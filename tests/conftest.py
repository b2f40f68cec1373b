"""Shared fixtures (the helpers themselves live in ``tests/testkit.py``)."""

from __future__ import annotations

import pytest

from testkit import Backend, bank_alpha, bank_law, dirichlet, load_bank  # noqa: F401


@pytest.fixture(scope="session")
def bank() -> list[dict]:
    return load_bank()


# --- one backend fixture for numpy and torch (POT's ``nx`` model) ------------------------------


BACKENDS = ("numpy", "torch-float64", "torch-float32")


def _backend(name: str):
    backend = Backend(name)
    if backend.torch is None:
        yield backend
        return
    old = backend.torch.get_num_threads()
    backend.torch.set_num_threads(1)  # a shared 2-core runner: no oversubscription
    yield backend
    backend.torch.set_num_threads(old)


@pytest.fixture(params=BACKENDS)
def nx(request) -> Backend:
    """numpy, torch float64 and torch float32 (CPU): the shared solver tests run on each."""
    yield from _backend(request.param)


@pytest.fixture(params=BACKENDS[:2])
def nx64(request) -> Backend:
    """The float64 backends only (numpy, torch float64): checks exact to 1e-10 or better."""
    yield from _backend(request.param)
