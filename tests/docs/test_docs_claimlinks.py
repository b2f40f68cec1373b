"""The docs extension docs/_ext/claimlinks.py: claim ids in running text link to the theory page.

Each test builds a three-page Sphinx project in a temporary directory (reStructuredText only, so
it needs nothing but Sphinx) and reads the HTML it writes.
"""

from __future__ import annotations

import re
import textwrap
from io import StringIO
from pathlib import Path

import pytest

pytest.importorskip("sphinx")

from sphinx.testing.util import SphinxTestApp  # noqa: E402

EXT = Path(__file__).resolve().parents[2] / "docs" / "_ext"

THEORY = """\
Theory
======

.. _claim-t7:

T7 — The prefix algorithm
-------------------------

An optimal set is a prefix.

.. _claim-t12b:

T12b (false): the e_n formula for sequential drafts.
"""

PAGE = """\
Page
====

Cites T7 and T12b in prose, T7..T12b, and :claim:`T7` by the role. Not linked: ``T7`` in code,
:math:`T7` in math, proofs/T07_prefix.md (a file name) and BT7 (not a whole word).

>>> "T7"  # a doctest line
'T7'
"""

API = """\
mod
===

This module implements T7.

.. py:function:: f(x)

   Uses T12b; T7 is cited by the module already.
"""


def build(tmp_path: Path, pages: dict[str, str]) -> tuple[Path, str]:
    """Build the pages (plus an index) to HTML; return the output folder and the warnings."""
    src = tmp_path / "src"
    (src / "api").mkdir(parents=True)
    (src / "conf.py").write_text(
        textwrap.dedent(f"""\
            import sys
            sys.path.insert(0, {str(EXT)!r})
            extensions = ["claimlinks"]
            claimlinks_api_prefix = "api/"
            """)
    )
    toc = "\n".join(f"   {name}" for name in pages)
    (src / "index.rst").write_text(f"Index\n=====\n\n.. toctree::\n\n{toc}\n")
    for name, text in pages.items():
        (src / f"{name}.rst").write_text(text)
    warning = StringIO()
    app = SphinxTestApp("html", srcdir=src, builddir=tmp_path / "build", warning=warning)
    try:
        app.build()
    finally:
        app.cleanup()
    return Path(app.outdir), re.sub(r"\x1b\[[0-9;]*m", "", warning.getvalue())


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, str]:
    return build(
        tmp_path_factory.mktemp("claimlinks"), {"theory": THEORY, "page": PAGE, "api/mod": API}
    )


def links(html: str) -> list[tuple[str, str]]:
    """(href, text) of every link to a claim anchor."""
    return [
        (href, re.sub(r"<[^>]+>", "", text))
        for href, text in re.findall(r'<a [^>]*href="([^"]*#claim-[^"]*)"[^>]*>(.*?)</a>', html)
    ]


def test_prose_ids_link_to_their_anchor_and_code_math_files_do_not(site):
    out, warnings = site
    assert warnings == ""
    got = links((out / "page.html").read_text())
    assert got == [
        ("theory.html#claim-t7", "T7"),
        ("theory.html#claim-t12b", "T12b"),
        ("theory.html#claim-t7", "T7"),
        ("theory.html#claim-t12b", "T12b"),
        ("theory.html#claim-t7", "T7"),  # the role
    ]
    html = (out / "page.html").read_text()
    assert "T07_prefix.md" in html and "BT7" in html  # left as text


def test_api_page_gets_the_claims_line(site):
    out, warnings = site
    assert warnings == ""
    html = (out / "api" / "mod.html").read_text()
    line = re.search(r'<p class="claims-line">(.*?)</p>', html, re.S)
    assert line is not None
    text = re.sub(r"<[^>]+>", "", line.group(1))
    assert text == "Claims implemented: T7 (The prefix algorithm); also cited on this page: T12b"
    assert ("../theory.html#claim-t12b", "T12b") in links(html)
    assert "claims-line" not in (out / "page.html").read_text()  # API pages only


def test_an_id_without_anchor_is_a_warning_at_the_citing_page(tmp_path):
    _out, warnings = build(tmp_path, {"theory": THEORY, "page": "Page\n====\n\nCites T13.\n"})
    assert "page.rst" in warnings and "undefined label: 'claim-t13'" in warnings


def test_the_role_refuses_a_non_claim(tmp_path):
    _out, warnings = build(tmp_path, {"theory": THEORY, "page": "Page\n====\n\n:claim:`X7`\n"})
    assert "'X7' is not a claim id" in warnings
