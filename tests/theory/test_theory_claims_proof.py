"""Proof status of the claims (mdsd_ot/theory/claims/_base.py): proved / checked / refuted,
declared once per claim, shown in the JSON, and docs/claims.md agrees with the registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mdsd_ot.theory import claims as C
from mdsd_ot.theory.claims import t05_q_convexity

DOCS = Path(__file__).resolve().parents[2] / "docs" / "claims.md"


def _noop(trials, rng):
    return C.Outcome("holds", 1)


def test_every_claim_has_a_consistent_status():
    for c in C.CLAIMS.values():
        assert c.proof in C.PROOF_STATES
        assert (c.proof == "refuted") == (c.expect == "fails"), c.id
        assert (c.proof == "checked") == bool(c.proof_note), c.id


def test_t5_is_checked_not_proved_and_says_what_is_checked():
    t5 = C.get("T5")
    assert t5.proof == t05_q_convexity.PROOF == "checked"  # declared in one place
    note = t5.proof_note
    for words in ("sequential", "n ≥ 3", "not proved", "exact rationals", "V in {4, 5, 6}"):
        assert words in note, words
    others = {c.id for c in C.CLAIMS.values() if c.proof == "checked"}
    assert others == {"T5"}


def test_run_and_json_carry_the_status():
    r = C.run("T5", trials=1)
    assert (r.proof, r.proof_note) == ("checked", t05_q_convexity.PROOF_NOTE)
    js = r.to_json()
    assert js["proof"] == "checked" and js["proof_note"] == t05_q_convexity.PROOF_NOTE
    assert C.row(r)["proof"] == "checked, not proved" and C.row(r)["proof_note"]
    r4 = C.run("T4", trials=1)
    assert r4.to_json()["proof"] == "proved" and C.row(r4)["proof_note"] == ""


def test_flipping_the_status_is_one_change(monkeypatch):
    # the lead flips T5 by editing PROOF (and its note) in t05_q_convexity.py; the claim, the
    # run and the detail line follow
    import dataclasses

    t5 = dataclasses.replace(C.get("T5"), proof="proved", proof_note="")
    monkeypatch.setitem(C.CLAIMS, "T5", t5)
    monkeypatch.setattr(t05_q_convexity, "PROOF", "proved")
    r = C.run("T5", trials=1)
    assert r.proof == "proved" and "not proved" not in r.detail


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"expect": "maybe"}, "expect"),
        ({"expect": "fails", "proof": "proved"}, "exactly the known-false"),
        ({"expect": "holds", "proof": "refuted"}, "exactly the known-false"),
        ({"proof": "believed"}, "proof: one of proved, checked, refuted"),
        ({"proof": "checked"}, "proof_note"),
    ],
)
def test_claim_refuses_inconsistent_status(kwargs, message):
    args = {"expect": "holds", **kwargs}
    with pytest.raises(ValueError, match=message):
        C.Claim("T0", "s", "r", "i", args.pop("expect"), _noop, **args)


def _docs_table() -> dict[str, str]:
    rows = {}
    for line in DOCS.read_text().splitlines():
        m = re.match(r"\| (T\d+[a-z]?) \|.*\| (proved|checked|refuted) \|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_docs_table_agrees_with_the_registry():
    rows = _docs_table()
    assert set(rows) == {f"T{k}" for k in range(1, 13)}
    for cid, status in rows.items():
        assert C.get(cid).proof == status, (cid, status)


def test_docs_say_t5_is_checked_not_proved():
    text = " ".join(DOCS.read_text().split())
    assert "T5 is checked, not proved, for sequential drafts at n ≥ 3" in text
    assert "max(1, trials // 2) further sequential laws with V ∈ {4, 5, 6} and 3 ≤ n < V" in text
    assert "mdsd_ot/theory/claims/t05_q_convexity.py" in text
