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


def test_t5_is_proved_for_every_law_it_states():
    # proofs/T05_q_convexity.md covers the sequential law at every n (exponential clocks)
    t5 = C.get("T5")
    assert t5.proof == t05_q_convexity.PROOF == "proved"  # declared in one place
    assert t5.proof_note == ""
    assert "proofs/T05_q_convexity.md" in t5.reference
    assert {c.id for c in C.CLAIMS.values() if c.proof == "checked"} == set()


def test_run_and_json_carry_the_status():
    r = C.run("T5", trials=1)
    assert (r.proof, r.proof_note) == ("proved", "")
    js = r.to_json()
    assert js["proof"] == "proved" and js["proof_note"] == ""
    assert C.row(r)["proof_note"] == "" and "not proved" not in r.detail
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


def test_docs_say_t5_is_proved_for_sequential_drafts():
    text = " ".join(DOCS.read_text().split())
    assert "T5 is proved for sequential drafts at every n" in text
    assert "proofs/T05_q_convexity.md" in text
    assert "mdsd_ot/theory/claims/t05_q_convexity.py" in text
