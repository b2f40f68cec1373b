"""The claims package (mdsd_ot/theory/claims/): registry, runner, witnesses, one module per
claim mirroring proofs/T01..T12, no scheme-name dispatch (the CLI: tests/cli/test_cli_claims.py)."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from mdsd_ot import drafts
from mdsd_ot.theory import claims as C
from mdsd_ot.theory import witness as W
from mdsd_ot.theory.claims import _base, _registry, t01_equivalence

# default (fast) trial counts; the slow test runs each claim's larger count
FAST = {"T1": 1, "T2": 2, "T3": 3, "T11": 1}
THEOREMS = [c for c in C.CLAIMS.values() if c.expect == "holds"]
FALSE = [c for c in C.CLAIMS.values() if c.expect == "fails"]


def test_registry_covers_every_claim():
    ids = set(C.CLAIMS)
    assert {f"T{k}" for k in range(1, 13)} <= ids
    assert {"T3b", "T5b", "T7b", "T9b", "T12b"} <= ids
    for c in C.CLAIMS.values():
        assert c.statement and c.reference and c.instances and c.expect in ("holds", "fails")
        assert c.statement.startswith("[false]") == (c.expect == "fails")


@pytest.mark.parametrize("claim", THEOREMS, ids=lambda c: c.id)
def test_theorem_holds(claim):
    r = C.run(claim, trials=FAST.get(claim.id, 2), seed=0)
    assert r.status == "holds" and r.ok, (r.detail, r.witness)
    assert r.witness is None


@pytest.mark.parametrize("claim", FALSE, ids=lambda c: c.id)
def test_false_claim_reports_reproducible_counterexample(claim):
    r = C.run(claim, trials=1, seed=0)
    assert r.status == "counterexample" and r.ok
    w = json.loads(json.dumps(W.encode(r.witness)))  # through JSON: rationals as 'a/b'
    assert w["claim"] == claim.id
    rep = C.reproduce(w)
    assert rep.reproduced, rep.detail


def test_t12b_witness_is_exact():
    r = C.run("T12b", trials=1)
    w = W.encode(r.witness)
    assert all("/" in s for s in w["q"]) and "/" in w["Q_sequential"]
    assert w["Q_sequential"] != w["Q_en"]


def test_tampered_witness_is_not_reproduced():
    w = W.encode(C.run("T5b", trials=1).witness)
    w["value"] = "1/1000"  # the recomputed violation differs
    assert not C.reproduce(w).reproduced
    with pytest.raises(ValueError, match="kind"):
        C.reproduce({"claim": "T1", "kind": "nonsense"})


@pytest.mark.slow
@pytest.mark.parametrize("claim", list(C.CLAIMS.values()), ids=lambda c: c.id)
def test_claim_slow(claim):
    r = C.run(claim, trials=claim.slow_trials, seed=1)
    assert r.ok, (r.status, r.detail, r.witness)


@pytest.mark.parametrize(
    "w",
    [
        {"claim": "T4", "kind": "n1", "p": ["1/2", "1/2"], "q": ["1/3", "2/3"]},
        {
            "claim": "T8",
            "kind": "order",
            "p": ["1/2", "1/4", "1/4"],
            "q": ["1/3", "1/3", "1/3"],
            "n": 2,
        },
        {
            "claim": "T9",
            "kind": "greedy",
            "p": ["1/2", "1/4", "1/4"],
            "q": ["1/2", "3/10", "1/5"],
            "n": 2,
        },
        {"claim": "T10", "kind": "interval", "q2": "1/4"},
        {"claim": "T12", "kind": "cp_formula", "q": ["1/2", "3/10", "1/5"], "n": 2, "H": [0, 1]},
        {
            "claim": "T2",
            "kind": "dual",
            "p": ["1/2", "1/2"],
            "draft": {"scheme": "with", "n": 2, "q": ["1/3", "2/3"]},
        },
        {
            "claim": "T1",
            "kind": "method_alpha",
            "p": ["1/2", "1/2"],
            "method": "subset",
            "draft": {"scheme": "with", "n": 2, "q": ["1/3", "2/3"]},
        },
    ],
    ids=lambda w: w["claim"],
)
def test_theorem_witness_kinds_do_not_reproduce_on_valid_instances(w):
    # the reproducers recompute the theorem on the instance; a true theorem yields no violation
    rep = C.reproduce(w)
    assert rep.reproduced is False and rep.values


# -- the package's shape ----------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
THEORY = ROOT / "mdsd_ot" / "theory"


def test_one_module_per_proof_file():
    # proofs/T05_q_convexity.md <-> mdsd_ot/theory/claims/t05_q_convexity.py, holding T5, T5b, ...
    proofs = sorted(p.stem for p in (ROOT / "proofs").glob("T[0-9][0-9]_*.md"))
    assert len(proofs) == 12
    modules = [m.__name__.rsplit(".", 1)[1] for m in _registry.MODULES]
    assert modules == [p.lower() for p in proofs]
    for m in _registry.MODULES:
        k = int(m.__name__.rsplit(".", 1)[1][1:3])
        ids = [c.id for c in m.CLAIMS]
        assert ids and ids[0] == f"T{k}", (m.__name__, ids)
        assert all(i.rstrip("bc") == f"T{k}" for i in ids), ids
        for kind, f in m.KINDS.items():
            assert C.KINDS[kind] is f
    assert list(C.CLAIMS) == [c.id for m in _registry.MODULES for c in m.CLAIMS]


def test_theory_modules_are_small():
    sizes = {
        str(p.relative_to(THEORY)): len(p.read_text().splitlines()) for p in THEORY.rglob("*.py")
    }
    big = {k: v for k, v in sizes.items() if v >= 400}
    assert not big, f"split these modules (aim < 400 lines): {big}"


def test_no_scheme_name_dispatch_in_theory():
    # per-law knowledge comes from the law classes (drafts.SCHEMES[name].distinct, ...)
    pattern = re.compile(r"scheme\s*(==|!=|in|not in)\s*[\(\[\"']")
    hits = [
        f"{p.relative_to(ROOT)}:{k}: {line.strip()}"
        for p in THEORY.rglob("*.py")
        for k, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not hits, hits


def test_small_size_follows_the_law_attributes():
    rng = np.random.default_rng(3)
    for name, cls in drafts.SCHEMES.items():
        for _ in range(20):
            V, n = t01_equivalence.small_size(cls, rng)
            assert V in (2, 3) and n in (1, 2)
            if cls.distinct:
                assert n <= V
            if t01_equivalence.top_token_law(cls):
                assert n == 2 and (V == 3 or cls.fixed_n == 2)
            law = drafts.random_law(rng, name, V, n, zeros=True)
            assert (law.V, law.n) == (V, cls.fixed_n or n)


def test_claim_schemes_come_from_the_registry():
    # T5 runs on the laws declared q-convex, T5b on T9's laws: no list of names in theory
    t5 = C.run("T5", trials=3, seed=0)
    assert "schemes with, without, conditional-poisson" in t5.detail
    convex = [n for n, c in drafts.SCHEMES.items() if c.q_convex]
    assert convex == ["with", "without", "conditional-poisson"]
    top = [n for n, c in drafts.SCHEMES.items() if _base.top_token_law(c)]
    assert top == ["greedy", "spechub"]
    assert [n for n, c in drafts.SCHEMES.items() if _base.joint_table_law(c)] == ["explicit"]


def test_t5_scans_sequential_laws_at_n3_in_every_run():
    # the case T5 only checks (not proved) is exercised by the default run, not only by -m slow
    for seed in range(3):
        r = C.run("T5", seed=seed)
        m = re.search(r"sequential without replacement at n ≥ 3: (\d+) instance", r.detail)
        assert r.ok and m and int(m.group(1)) >= 3, r.detail


def test_t3_covers_explicit_laws():
    r = C.run("T3", trials=7, seed=0)  # the seventh scheme of the registry is explicit
    assert r.ok, r.detail


def test_en_ratio_is_the_laws_e_n():
    q = [Fraction(1, 2), Fraction(3, 10), Fraction(1, 5)]
    assert C.en_ratio(q, 2, (0, 1)) == Fraction(15, 31)
    assert C.en_ratio(q, 2, (0, 1)) == drafts.ConditionalPoisson(q, 2).Q([0, 1], exact=True)
    assert C.en_ratio(q, 2, (0, 1)) != drafts.WithoutReplacement(q, 2).Q([0, 1], exact=True)
    assert C.t10_inside(Fraction(1, 4)) and not C.t10_inside(Fraction(1, 10))


def test_run_all_and_table_rows():
    runs = C.run_all(["t4", "T12B"], trials=1)
    assert [r.id for r in runs] == ["T4", "T12b"]
    rows = C.table(runs)
    assert [r["verdict"] for r in rows] == ["ok", "ok"]
    assert [r["proof"] for r in rows] == ["proved", "refuted"]
    assert [r["status"] for r in rows] == ["holds", "counterexample"]
    with pytest.raises(ValueError, match="unknown claim"):
        C.run_all(["T4", "T13"])
    with pytest.raises(ValueError, match="--trials"):
        C.run("T4", trials=0)
