"""Verifiers asked for but defined for none of the asked laws (``mdsd-ot report`` warns)."""

from __future__ import annotations

import pytest

from mdsd_ot.reports.report import unmatched_verifiers


def test_unmatched_verifiers():
    assert unmatched_verifiers([2], ["with"], None, 4) == {}
    assert unmatched_verifiers([2], ["with"], ["spechub", "k-seq", "optimal"], 4) == {
        "spechub": [("spechub", 2)]
    }
    assert unmatched_verifiers([2, 3], None, ["single", "rrs-with"], 4) == {"single": []}
    assert unmatched_verifiers([1], None, ["single"], 4) == {}
    assert unmatched_verifiers([3], ["with"], ["spechub"], 4) == {"spechub": []}
    assert unmatched_verifiers([2], ["with", "spechub"], ["spechub"], 4) == {}


def test_unmatched_verifiers_checks_the_laws():
    with pytest.raises(ValueError, match="--laws"):
        unmatched_verifiers([2], ["nope"], ["k-seq"], 4)
