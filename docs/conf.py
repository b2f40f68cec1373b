"""Sphinx configuration of the mdsd-ot documentation.

Build (warnings are errors, as in CI)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The site uses the PyData Sphinx theme (as numpy, scipy and networkx do) and loads nothing from
the network: MathJax 3 is bundled by ``sphinx-mathjax-offline`` (copied to ``_static/mathjax``),
the theme's fonts and icons are its own static files, and no analytics, ads or edit links are
configured.
``docs/_ext/check_offline.py`` checks a built site for network assets and typesets its math.

Claim ids (T1 … T12, T12b, …) written in docstrings and pages link to their anchors on the theory
page ``docs/reference.md``, and every API page gets a "Claims implemented" line under its title
(the local extension ``docs/_ext/claimlinks.py``).

The API pages are generated at build time into ``docs/api/generated/`` (git-ignored): one page
per public module of ``mdsd_ot`` (found by walking the package, so new modules appear without
editing this file), plus the private modules whose objects a package re-exports.  Each object is
documented once, in the module that defines it (``:ignore-module-all:``).  Notebooks are rendered
by myst-nb without being executed (``nb_execution_mode = "off"``); CI executes them separately
with ``pytest --nbmake``.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))  # local extensions (claimlinks)

project = "mdsd-ot"
author = "mdsd-ot contributors"
copyright = "2025, mdsd-ot contributors"

import mdsd_ot  # noqa: E402

release = mdsd_ot.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into _static/: math renders without a network
    "sphinx.ext.viewcode",
    "numpydoc",
    "claimlinks",  # claim ids (T1..T12, T12b, ...) link to docs/reference.md
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]

# -- MyST / myst-nb ---------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # CI runs the notebooks with nbmake; the docs build stays fast

# -- autodoc / numpydoc -----------------------------------------------------------------
autodoc_default_options = {"members": True, "ignore-module-all": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# Optional dependencies are mocked only when they cannot be imported here.
_OPTIONAL = ["torch", "ot", "safetensors", "cmr", "flint"]
autodoc_mock_imports = [m for m in _OPTIONAL if importlib.util.find_spec(m) is None]

# -- HTML: PyData Sphinx theme, configured like numpy's / scipy's, nothing external --------
html_theme = "pydata_sphinx_theme"
html_title = f"mdsd-ot {release}"
html_static_path = ["_static"]
html_css_files = ["mdsd-ot.css"]
html_theme_options = {
    "navbar_start": ["navbar-logo"],
    "navbar_center": ["navbar-nav"],
    "navbar_end": ["theme-switcher"],
    "navbar_persistent": ["search-button"],
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "show_nav_level": 1,
    "navigation_with_keys": False,
    # No "Edit this page" button, no "Show source" link, no ads, no analytics, no icon links.
    "use_edit_page_button": False,
    "secondary_sidebar_items": ["page-toc"],
    "primary_sidebar_end": [],
    "icon_links": [],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_context = {"default_mode": "light"}
html_show_sourcelink = False
html_copy_source = False

# -- claim links (docs/_ext/claimlinks.py) ------------------------------------------------
#: Docnames whose pages get the "Claims implemented" line (the generated API pages).
claimlinks_api_prefix = "api/generated/"

# -- API pages, generated ---------------------------------------------------------------
#: Modules left out of the API reference (the CLI has its own page).
API_SKIP_PREFIXES = ("mdsd_ot.cli",)
#: Private modules documented anyway (public objects defined there).
API_PRIVATE = ("mdsd_ot._validate", "mdsd_ot._outputs")


def _walk_modules() -> list[str]:
    names = ["mdsd_ot"]
    for info in pkgutil.walk_packages(mdsd_ot.__path__, "mdsd_ot.", onerror=lambda name: None):
        names.append(info.name)
    return [n for n in names if not n.startswith(API_SKIP_PREFIXES)]


def _is_private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split("."))


def _api_modules() -> list[str]:
    """Public modules, plus private ones that define objects a public module re-exports."""
    all_names = _walk_modules()
    public = [n for n in all_names if not _is_private(n)]
    chosen = set(public) | set(API_PRIVATE)
    for name in public:
        try:
            mod = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - autodoc reports the import error itself
            continue
        for attr in getattr(mod, "__all__", []):
            try:
                obj = mod.__dict__.get(attr)
            except Exception:  # noqa: BLE001
                continue
            origin = getattr(obj, "__module__", None)
            if origin and origin.startswith("mdsd_ot.") and origin in all_names:
                chosen.add(origin)
    return sorted(chosen)


def _write_api_pages() -> None:
    out = DOCS / "api" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    mods = _api_modules()
    keep = set()
    for name in mods:
        f = out / f"{name}.rst"
        keep.add(f.name)
        text = f"{name}\n{'=' * len(name)}\n\n.. automodule:: {name}\n"
        if not f.exists() or f.read_text() != text:
            f.write_text(text)
    for f in out.glob("*.rst"):
        if f.name not in keep:
            f.unlink()
    toc = "\n".join(f"   generated/{n}" for n in mods)
    index = f".. toctree::\n   :maxdepth: 1\n\n{toc}\n"
    f = out / "toctree.txt"  # included by api/index.rst
    if not f.exists() or f.read_text() != index:
        f.write_text(index)


_write_api_pages()


# -- prose bars in docstrings -------------------------------------------------------------
# Docstrings write |S| (cardinality) and |a − b| (absolute value) in prose; reStructuredText
# would read |...| as a substitution reference and fail the -W build.  Bars outside inline
# literals/roles, math and literal blocks and doctest lines are escaped; math is untouched.
_SPAN = re.compile(r"(:[\w:.-]+:`[^`]*`|``[^`]*``|`[^`]*`_?_?)")


def _escape_bars(lines: list[str]) -> None:
    block_indent: int | None = None
    for k, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if block_indent is not None:
            if not stripped or indent > block_indent:
                continue
            block_indent = None
        if stripped.startswith((">>>", "... ")) or stripped == "...":
            continue
        if stripped.startswith(".. "):  # a directive (math, code, note...): leave its body
            block_indent = indent
            continue
        if "|" in line:
            parts = _SPAN.split(line)
            lines[k] = "".join(
                p if j % 2 else re.sub(r"(?<!\\)\|", r"\\|", p) for j, p in enumerate(parts)
            )
        if line.rstrip().endswith("::"):  # a literal block follows
            block_indent = indent


def _process_docstring(app, what, name, obj, options, lines) -> None:  # noqa: ARG001
    _escape_bars(lines)


def setup(app) -> None:
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)
