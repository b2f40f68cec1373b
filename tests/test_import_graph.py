"""The import graph of ``mdsd_ot``: no cycles, and imports only go down the layers.

The layers (docs/architecture in the README): validation/results → method registry → draft laws
→ exact and fast solvers → torch → api → verifiers → lossless kit → io → hf → reports → theory
→ cli.  A module may import what sits in a lower layer, or in its own package; never a higher
layer (even lazily, inside a function), and never in a circle.  The package ``mdsd_ot`` itself
(``mdsd_ot/__init__.py``) is the public facade on top: nothing below imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "mdsd_ot"

#: Layer of each top-level part of the package (lower imports nothing higher).
LAYERS: dict[str, int] = {
    "_validate": 0,
    "_outputs": 0,  # output files: path checks and atomic writes
    "_version": 0,
    "result": 0,
    "methods": 1,
    "synthetic": 2,
    "drafts": 2,
    "exact": 3,
    "fast": 3,
    "torch": 4,
    "api": 5,
    "verifiers": 6,
    "lossless": 7,
    "io": 8,
    "hf": 9,  # writes shards with mdsd_ot.io
    "demo": 9,
    "reports": 10,
    "crosscheck": 10,
    "theory": 11,
    "cli": 12,
    "__main__": 13,  # python -m mdsd_ot: the command line (cli), on top like the facade
    "__init__": 13,
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import of an mdsd_ot module."""
    mod = _module_name(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(), str(path))
    top = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            names = [stem] if node.module else [f"{stem}.{a.name}" for a in node.names]
            if node.module:  # "from .x import y" may import the submodule x.y
                names += [f"{stem}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name == "mdsd_ot" or name.startswith("mdsd_ot."):
                found.append((name, node.lineno, id(node) in top))
    return found


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _existing(name: str) -> str | None:
    """The module file a dotted name refers to (a submodule, or the package defining a name)."""
    parts = name.split(".")
    while parts:
        p = ROOT.parent.joinpath(*parts)
        if p.with_suffix(".py").exists() or (p / "__init__.py").exists():
            return ".".join(parts)
        parts = parts[:-1]
    return None


FILES = sorted(ROOT.rglob("*.py"))

#: Edges still being removed by work in progress (must be empty when the reshape is complete).
KNOWN_UPWARD: set[tuple[str, str]] = set()
KNOWN_GUARDED: set[str] = set()


def test_every_part_has_a_layer():
    parts = {_part(_module_name(f)) for f in FILES}
    assert parts <= set(LAYERS), f"give these a layer in LAYERS: {sorted(parts - set(LAYERS))}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_imports_go_down_the_layers(path):
    me = _module_name(path)
    mine = _part(me)
    bad = []
    for name, line, _ in _imports(path):
        target = _existing(name)
        if target is None:
            continue
        theirs = _part(target)
        if theirs == mine:
            continue
        if LAYERS[theirs] >= LAYERS[mine] and (me, target) not in KNOWN_UPWARD:
            bad.append(f"{path.name}:{line} imports {target} (layer {theirs})")
    assert not bad, f"{me} (layer {mine}) imports upward or sideways: {bad}"


def test_no_import_cycle():
    """Module-level imports between mdsd_ot modules form a DAG."""
    graph: dict[str, set[str]] = {}
    for f in FILES:
        me = _module_name(f)
        for name, _, top in _imports(f):
            target = _existing(name)
            if top and target is not None and target != me:
                graph.setdefault(me, set()).add(target)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                cycle = stack[stack.index(v) :] + [v]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            elif state.get(v) is None:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(graph):
        if state.get(u) is None:
            visit(u)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_own_modules_are_never_guarded(path):
    """The package's own modules are imported, never probed as if they could be missing."""
    if str(path.relative_to(ROOT.parent)) in KNOWN_GUARDED:
        pytest.skip("being moved to mdsd_ot/reports (work in progress)")
    text = path.read_text()
    for probe in ('find_spec("mdsd_ot', "find_spec('mdsd_ot", "_optional(", "hasattr(fast"):
        assert probe not in text, f"{path.name}: guards an own module with {probe!r}"
