"""Draft tuples that repeat a token are refused for the laws of distinct drafts.

``draft.distinct`` laws (WithoutReplacement, ConditionalPoisson, Greedy, SpecHub) give a tuple
with a repeated token probability 0, so no verifier's output-law claim covers it; it was
verified silently.  ``Verifier.sample`` and ``sample_rows`` (numpy and tensors, (B, n) and
(B, k, n), every route: relabel's device route excepted, which has i.i.d. drafts) now refuse it
with a message naming ``draft_tokens``, the first bad row (and tuple) and the fix; the laws of
i.i.d. drafts still take repeats.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdsd_ot import verifiers
from mdsd_ot.drafts import (
    SCHEMES,
    ConditionalPoisson,
    Greedy,
    SpecHub,
    WithoutReplacement,
    WithReplacement,
)
from mdsd_ot.verifiers._draws import sample_drafts
from mdsd_ot.verifiers.chain import ChainOptimal
from mdsd_ot.verifiers.chain.batched import verify_rows
from testkit import array_libs

DISTINCT = [(Greedy, 2), (Greedy, 3), (SpecHub, 2), (WithoutReplacement, 2)]
DISTINCT += [(WithoutReplacement, 3), (ConditionalPoisson, 2), (ConditionalPoisson, 3)]
CHAIN = [(WithoutReplacement, 2), (WithoutReplacement, 3)]
CHAIN += [(ConditionalPoisson, 2), (ConditionalPoisson, 3)]
FIX = r"distinct tokens .*draw them with mdsd_ot\.verifiers\._draws\.sample_drafts"


def _law(cls, n, V, seed):
    q = np.random.default_rng(seed).dirichlet(np.ones(V))
    return cls(q) if cls is SpecHub else cls(q, n)


def _repeat(t: np.ndarray, where: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    """A copy of ``t`` whose tuple at ``where`` repeats its first token in its last slot."""
    t = t.copy()
    t[where + (-1,)] = t[where + (0,)]
    return t, tuple(int(x) for x in t[where])


def test_the_distinct_laws_are_the_ones_covered():
    assert {cls for cls in SCHEMES.values() if cls.distinct} == {c for c, _ in DISTINCT}


@pytest.mark.parametrize("cls,n", DISTINCT, ids=[f"{c.__name__}-{n}" for c, n in DISTINCT])
def test_sample_refuses_a_repeated_token(cls, n):
    draft = _law(cls, n, 8, 0)
    p = np.random.default_rng(1).dirichlet(np.ones(8))
    t = sample_drafts(draft, np.random.default_rng(2), 6)
    bad, tup = _repeat(t, (4,))
    names = verifiers.applicable(draft)
    assert names
    for name in names:
        v = verifiers.get(name, draft)
        out, _ = v.sample(p, t, 3)  # drawn tuples: fine
        assert out.shape == (6,)
        msg = rf"draft_tokens: row 4 is \({', '.join(map(str, tup))}\), which repeats token"
        with pytest.raises(ValueError, match=msg + rf".*{cls.__name__} law.*{FIX}"):
            v.sample(p, bad, 3)
        with pytest.raises(ValueError, match=r"draft_tokens: row 0 is "):
            v.sample(p, bad[4], 3)  # one (n,) tuple: row 0 of a batch of 1


@pytest.mark.parametrize("lib,conv", array_libs(), ids=[name for name, _ in array_libs()])
@pytest.mark.parametrize("V", [200, 6])  # 6: the set-reduced plan (Optimal) on the host
@pytest.mark.parametrize("cls,n", CHAIN, ids=[f"{c.__name__}-{n}" for c, n in CHAIN])
def test_sample_rows_refuses_a_repeated_token(cls, n, V, lib, conv):
    rng = np.random.default_rng(5)
    P, Q = rng.dirichlet(np.ones(V), size=4), rng.dirichlet(np.ones(V), size=4)
    t3 = np.stack([sample_drafts(cls(q, n), rng, 3) for q in Q])  # (4, 3, n)
    t2 = t3[:, 0]
    engines = [ChainOptimal(cls(Q[0], n)), verifiers.get("optimal", cls(Q[0], n))]
    for v in engines:
        for t in (t2, t3):
            out, _ = v.sample_rows(conv(P), conv(Q), conv(t), 0)
            assert tuple(out.shape) == t.shape[:-1]
        bad2, tup2 = _repeat(t2, (2,))
        bad3, tup3 = _repeat(t3, (1, 2))
        with pytest.raises(ValueError, match=rf"draft_tokens: row 2 is \({tup2[0]}, .*{FIX}"):
            v.sample_rows(conv(P), conv(Q), conv(bad2), 0)
        with pytest.raises(ValueError, match=rf"draft_tokens: tuple 2 of row 1 is \({tup3[0]}, "):
            v.sample_rows(conv(P), conv(Q), conv(bad3), 0)


@pytest.mark.parametrize("lib,conv", array_libs(), ids=[name for name, _ in array_libs()])
def test_verify_rows_cp2_refuses_a_repeated_token(lib, conv):
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    Q = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    out, _ = verify_rows(conv(P), conv(Q), 2, conv([[0, 1], [2, 1]]), 0, construction="cp2")
    assert tuple(out.shape) == (2,)
    with pytest.raises(ValueError, match=r"draft_tokens: row 1 is \(2, 2\).*ConditionalPoisson"):
        verify_rows(conv(P), conv(Q), 2, conv([[0, 1], [2, 2]]), 0, construction="cp2")
    verify_rows(conv(P), conv(Q), 2, conv([[0, 0], [2, 2]]), 0)  # relabel: i.i.d. drafts


@pytest.mark.parametrize("lib,conv", array_libs(), ids=[name for name, _ in array_libs()])
def test_iid_drafts_may_repeat(lib, conv):
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    Q = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    t = [[0, 0], [2, 2]]
    for name in verifiers.applicable(WithReplacement(Q[0], 2)):
        out, acc = verifiers.get(name, WithReplacement(Q[0], 2)).sample(P[0], t, 0)
        assert out.shape == (2,)
    out, acc = ChainOptimal(WithReplacement(Q[0], 2)).sample_rows(conv(P), conv(Q), conv(t), 0)
    assert tuple(out.shape) == (2,)
