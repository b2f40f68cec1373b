"""The test tree's layout: no test folder may stand in for a third-party module.

``pythonpath = ["tests"]`` puts the test tree on the import path, so a folder named like an
optional dependency (``tests/torch``) becomes a namespace package that ``import torch`` finds
whenever the real torch is not installed, and the tests that should skip fail on
``AttributeError`` instead (the README's quick start installs only the ``[test]`` extra).
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).parent

#: Top-level modules of the package's dependencies and extras (pyproject.toml).
THIRD_PARTY = {
    "numpy", "scipy", "networkx", "highspy", "cvxpy", "ot", "typer", "rich", "array_api_compat",
    "torch", "safetensors", "transformers", "tokenizers", "dask", "distributed", "matplotlib",
    "nbformat", "nbclient", "nbmake", "hypothesis", "pytest", "flint", "sphinx", "numba", "xdist",
}  # fmt: skip


def test_no_test_folder_shadows_a_dependency():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert not folders & THIRD_PARTY, sorted(folders & THIRD_PARTY)


def test_no_test_folder_shadows_the_standard_library_either():
    """``io`` is already imported when tests start, so ``tests/io`` is harmless; any other
    standard-library name would be found after the real module only by luck."""
    std = {p.name for p in TESTS.iterdir() if p.is_dir()} & set(sys.stdlib_module_names)
    assert std <= {"io"}, sorted(std)
