"""Check a built HTML site for network assets, and typeset its math with the bundled MathJax.

Usage (after ``python -m sphinx -b html docs OUT``)::

    python docs/_ext/check_offline.py OUT

1. Every ``<script src>``, ``<link href>`` (stylesheets, preloads, icons), ``<img src>`` and
   ``<iframe src>`` of every page must be a local file of the site; CSS files must not
   ``@import`` or ``url()`` anything over the network.  Plain hyperlinks (``<a href>``) are
   not assets and are not checked.
2. If ``node`` is on the PATH, every formula of the site (``\\(...\\)`` and ``\\[...\\]`` in
   Sphinx's math nodes) is typeset with the MathJax copy under ``OUT/_static/mathjax`` (the one
   the pages load), with undefined macros and TeX errors reported as failures.

Exit status 0 when both checks pass, 1 otherwise.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ASSET = re.compile(
    r"<(?:script|img|iframe|source)\b[^>]*?\ssrc=\"([^\"]+)\"|<link\b[^>]*?\shref=\"([^\"]+)\""
)
CSS_URL = re.compile(r"(?:@import\s+|url\()\s*['\"]?(https?:)?//", re.I)
MATH = re.compile(r'<(span|div) class="math notranslate nohighlight"[^>]*>(.*?)</\1>', re.S)

NODE_SCRIPT = r"""
const [mathjax, formulasFile] = process.argv.slice(-2);
const formulas = require(formulasFile);
global.MathJax = {
  loader: {paths: {mathjax}, require, load: ['adaptors/liteDOM', 'input/tex', 'output/chtml']},
  tex: {packages: {'[-]': ['noundefined']}, formatError: (jax, err) => { throw err; }},
  startup: {typeset: false},
};
require(mathjax + '/startup.js');
MathJax.startup.promise.then(() => {
  let bad = 0;
  for (const f of formulas) {
    try { MathJax.tex2chtml(f.tex, {display: f.display}); }
    catch (e) { bad++; console.log(`${f.page}: ${JSON.stringify(f.tex)}: ${e.message}`); }
  }
  console.log(`MathJax ${MathJax.version}: ${formulas.length} formulas, ${bad} errors`);
  process.exit(bad ? 1 : 0);
});
"""


def pages(site: Path) -> list[Path]:
    return [p for p in sorted(site.rglob("*.html")) if "_static" not in p.parts]


def network_assets(site: Path) -> list[str]:
    """Assets that are not local files of the site, as 'page: url' lines."""
    bad = []
    for page in pages(site):
        for m in ASSET.finditer(page.read_text(encoding="utf-8")):
            url = html.unescape(m.group(1) or m.group(2))
            if url.startswith(("http:", "https:", "//", "data:")):
                if not url.startswith("data:"):
                    bad.append(f"{page.relative_to(site)}: {url}")
                continue
            local = (page.parent / url.split("?")[0].split("#")[0]).resolve()
            if not local.exists():
                bad.append(f"{page.relative_to(site)}: {url} (missing file)")
    for css in sorted(site.rglob("*.css")):
        if CSS_URL.search(css.read_text(encoding="utf-8", errors="replace")):
            bad.append(f"{css.relative_to(site)}: imports a network URL")
    return bad


def formulas(site: Path) -> list[dict]:
    out = []
    for page in pages(site):
        for m in MATH.finditer(page.read_text(encoding="utf-8")):
            tex = html.unescape(m.group(2)).strip()
            display = tex.startswith("\\[")
            if tex[:2] in ("\\(", "\\["):
                tex = tex[2:-2]
            out.append({"page": str(page.relative_to(site)), "tex": tex, "display": display})
    return out


def typeset(site: Path) -> int | None:
    """Typeset every formula with the bundled MathJax; None when node is not installed."""
    node = shutil.which("node")
    mathjax = site / "_static" / "mathjax"
    if node is None or not (mathjax / "startup.js").exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "formulas.json"
        data.write_text(json.dumps(formulas(site)))
        run = subprocess.run(
            [node, "-e", NODE_SCRIPT, str(mathjax.resolve()), str(data)], text=True, check=False
        )
    return run.returncode


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0], "index.html").exists():
        print("usage: python docs/_ext/check_offline.py BUILT_HTML_DIR", file=sys.stderr)
        return 2
    site = Path(argv[0])
    bad = network_assets(site)
    for line in bad:
        print("network or missing asset:", line)
    print(f"{len(pages(site))} pages: {len(bad)} network or missing assets")
    rc = typeset(site)
    if rc is None:
        print("node not found (or no bundled MathJax): formulas not typeset")
    return 1 if bad or rc else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
