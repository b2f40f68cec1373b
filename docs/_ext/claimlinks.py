"""Sphinx extension: claim ids (T1 … T12, T3b, T12b, …) link to the theory reference.

The theory page (``docs/reference.md``) gives every claim an anchor, ``(claim-T7)=`` in MyST,
which Sphinx stores as the label ``claim-t7`` (HTML id ``claim-t7``).  This extension

- turns every claim id written as a whole word in running text (the docstrings of the API pages
  and the prose pages) into a cross-reference to that label; text inside code, math, doctests,
  titles, signatures and existing links is left alone;
- adds a line under the title of each generated API page (``claimlinks_api_prefix``):
  **Claims implemented**, the ids the module's own docstring cites (the module docstring says
  what the module computes), then **also cited on this page**, those only its members cite,
  each in claim order.
  a claim with its own section on the theory page ("T7 — Prefix optimality") is shown with
  that title, "T7 (Prefix optimality)";
- registers the role ``{claim}`T7``` (``:claim:`T7``` in reStructuredText) for explicit links.

A cited id without an anchor is Sphinx's ``undefined label: 'claim-t13'`` warning at the citing
line (an error under ``-W``): a page cannot cite a claim that the reference does not state.

Configuration (``conf.py``):

``claimlinks_api_prefix``
    Docnames starting with it get the claims line (default ``"api/generated/"``).
``claimlinks_exclude``
    Docnames whose text is not auto-linked (the role still works there).
``claimlinks_label_prefix``
    Prefix of the claim labels (default ``"claim-"``).
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

#: A claim id as a whole word: T, a number 1..99 without leading zero, an optional letter.
#: Not preceded by a word character or "/" (file names such as proofs/T05_... stay text).
CLAIM_ID = re.compile(r"(?<![\w/])T[1-9][0-9]?[a-z]?\b")

#: Nodes whose text is never linked.
_SKIP = (
    nodes.FixedTextElement,  # literal and doctest blocks, math blocks, raw, comments
    nodes.literal,
    nodes.math,
    nodes.title,
    nodes.subtitle,
    nodes.caption,
    nodes.reference,
    nodes.target,
    nodes.option_string,
    nodes.system_message,
    addnodes.pending_xref,
    addnodes.desc_signature,
    addnodes.toctree,
)


def _skipped(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, _SKIP):
            return True
        parent = parent.parent
    return False


def _in_member(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, addnodes.desc):
            return True
        parent = parent.parent
    return False


def _order(claim: str) -> tuple[int, str]:
    """Sort key of a claim id: T3 < T3b < T12 < T12b."""
    number = claim[1:].rstrip("abcdefghijklmnopqrstuvwxyz")
    return int(number), claim[1 + len(number) :]


def claim_xref(claim: str, docname: str, prefix: str, *, line: bool = False) -> nodes.Element:
    """A cross-reference to the anchor of ``claim`` (label ``prefix + claim.lower()``)."""
    ref = addnodes.pending_xref(
        "",
        nodes.inline(claim, claim, classes=["xref", "std", "std-ref", "claim"]),
        refdomain="std",
        reftype="ref",
        reftarget=f"{prefix}{claim}".lower(),
        refexplicit=True,
        refwarn=True,
        refdoc=docname,
    )
    if line:
        ref["claimline"] = True  # ClaimTitles puts the claim's section title here
    return ref


class ClaimLinks(SphinxTransform):
    """Link claim ids in running text; add the claims line to API pages."""

    default_priority = 700  # after docutils' own transforms, before reference resolution

    def apply(self, **kwargs: Any) -> None:
        docname = self.env.docname
        prefix = self.config.claimlinks_label_prefix
        module_ids: list[str] = []
        member_ids: list[str] = []
        if docname not in self.config.claimlinks_exclude:
            for text in list(self.document.findall(nodes.Text)):
                if text.parent is None or _skipped(text):
                    continue
                source = str(text)
                matches = list(CLAIM_ID.finditer(source))
                if not matches:
                    continue
                seen = member_ids if _in_member(text) else module_ids
                new: list[nodes.Node] = []
                pos = 0
                for m in matches:
                    if m.start() > pos:
                        new.append(nodes.Text(source[pos : m.start()]))
                    ref = claim_xref(m.group(), docname, prefix)
                    ref.source, ref.line = text.parent.source, text.parent.line
                    new.append(ref)
                    if m.group() not in seen:
                        seen.append(m.group())
                    pos = m.end()
                if pos < len(source):
                    new.append(nodes.Text(source[pos:]))
                text.parent.replace(text, new)
        if docname.startswith(self.config.claimlinks_api_prefix):
            also = [c for c in member_ids if c not in module_ids]
            self._claims_line(
                docname, prefix, sorted(module_ids, key=_order), sorted(also, key=_order)
            )

    def _claims_line(self, docname: str, prefix: str, implemented: list[str], also: list[str]):
        section = next(iter(self.document.findall(nodes.section)), None)
        if section is None or not (implemented or also):
            return
        para = nodes.paragraph(classes=["claims-line"])
        if implemented:
            para += nodes.strong("Claims implemented:", "Claims implemented:")
            self._ids(para, docname, prefix, implemented)
        if also:
            if implemented:
                para += nodes.Text("; also cited on this page:")
            else:
                para += nodes.strong("Claims cited on this page:", "Claims cited on this page:")
            self._ids(para, docname, prefix, also)
        title = section.next_node(nodes.title)
        section.insert(section.index(title) + 1 if title is not None else 0, para)

    @staticmethod
    def _ids(para: nodes.paragraph, docname: str, prefix: str, ids: list[str]) -> None:
        for j, claim in enumerate(ids):
            para += nodes.Text(", " if j else " ")
            para += claim_xref(claim, docname, prefix, line=True)


class ClaimTitles(SphinxPostTransform):
    """In the claims line, show a claim with its section title on the theory page."""

    default_priority = 5  # before the references are resolved (priority 10)

    def run(self, **kwargs: Any) -> None:
        labels = self.env.domains.standard_domain.labels
        for ref in self.document.findall(addnodes.pending_xref):
            if not ref.get("claimline"):
                continue
            _doc, _id, title = labels.get(ref["reftarget"], (None, None, ""))
            claim = ref.astext()
            head, sep, rest = title.partition(" — ")
            if sep and head == claim:  # "T7 — Prefix optimality" → "T7 (Prefix optimality)"
                ref.children[0].children = [nodes.Text(f"{claim} ({rest})")]


def claim_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{claim}`T7``` → a link to the claim's anchor on the theory page."""
    claim = text.strip()
    if not CLAIM_ID.fullmatch(claim):
        msg = inliner.reporter.error(
            f"claim: {claim!r} is not a claim id; write T<number>[letter], e.g. T7 or T12b",
            line=lineno,
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    env = inliner.document.settings.env
    ref = claim_xref(claim, env.docname, env.config.claimlinks_label_prefix)
    ref.source, ref.line = inliner.reporter.get_source_and_line(lineno)
    return [ref], []


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("claimlinks_api_prefix", "api/generated/", "env", types=(str,))
    app.add_config_value("claimlinks_exclude", [], "env", types=(list, tuple))
    app.add_config_value("claimlinks_label_prefix", "claim-", "env", types=(str,))
    app.add_transform(ClaimLinks)
    app.add_post_transform(ClaimTitles)
    app.add_role("claim", claim_role)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
