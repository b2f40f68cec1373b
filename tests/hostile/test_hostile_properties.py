"""Property-based hostility (issue 10): random shapes, dtypes, NaN/inf/negative/tiny values.

Thrown at :func:`mdsd_ot.alpha_star` (law and array forms), :func:`mdsd_ot.fast.alpha_star`,
:func:`mdsd_ot.torch.alpha_star` and every draft constructor of :data:`mdsd_ot.drafts.SCHEMES`.
The only acceptable outcomes are a :class:`ValueError` or a correct answer: α* in [0, 1] equal
to the exact α* of the same (renormalised) instance by ``method="subset-exact"`` (all instances
here have V <= 6), within 1e-9 in float64 and 1e-5 in float32 — never another exception, a
warning (warnings are errors here) or a hang (hypothesis deadline).

Known failures inside the solvers, the validator or the draft laws are not fixed here: each is
an ``xfail(strict=True)`` example in ``test_hostile_known.py`` with its minimal input, filtered
out here by :func:`hostile_kit.known_failure` (the owners fix it, and the strict xfail then tells
them to drop the example and its filter).

The default run draws a moderate number of examples (derandomised: the same examples every
run); ``-m slow`` draws many more.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings

import mdsd_ot

pytest.importorskip("torch")

from hostile_kit import (  # noqa: E402
    ALL_SCHEMES,
    COMMON,
    FAST_SCHEMES,
    FEW,
    MANY,
    TOL64,
    check_answer,
    constructions,
    instances,
    prop_alpha_array,
    prop_construct,
    prop_fast,
    prop_law,
    prop_torch,
    run_strict,
    tensors,
)


# -- the harness can fail ------------------------------------------------------------------
def test_harness_catches_wrong_answers_and_stray_exceptions():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    good = mdsd_ot.fast.alpha_star(p, q, n=2, scheme="with")
    check_answer(good, p, q, 2, "with", TOL64)
    with pytest.raises(AssertionError):
        check_answer(good + 1e-6, p, q, 2, "with", TOL64)
    with pytest.raises(AssertionError):
        check_answer(np.array([good, good]), p, q, 2, "with", TOL64)  # one row, two answers
    with pytest.raises(TypeError):
        run_strict(lambda: (_ for _ in ()).throw(TypeError("not a ValueError")))
    with pytest.raises(RuntimeWarning):
        run_strict(lambda: warnings.warn("leak", RuntimeWarning, stacklevel=1))
    assert isinstance(run_strict(lambda: mdsd_ot.fast.alpha_star(p, q, n=0, scheme="with")),
                      ValueError)  # fmt: skip


# -- the properties --------------------------------------------------------------------------
@settings(max_examples=FEW, **COMMON)
@given(instances(ALL_SCHEMES))
def test_alpha_star_array_form(inst):
    prop_alpha_array(inst)


@settings(max_examples=FEW, **COMMON)
@given(instances(ALL_SCHEMES))
def test_alpha_star_law_form(inst):
    prop_law(inst)


@settings(max_examples=FEW, **COMMON)
@given(instances(FAST_SCHEMES + ["bogus", "product"]))
def test_fast_alpha_star(inst):
    prop_fast(inst)


@settings(max_examples=FEW, **COMMON)
@given(tensors())
def test_torch_alpha_star(inst):
    prop_torch(inst)


@settings(max_examples=FEW, **COMMON)
@given(constructions())
def test_draft_constructors(c):
    prop_construct(c)


@pytest.mark.slow
@settings(max_examples=MANY, **COMMON)
@given(instances(ALL_SCHEMES), tensors(), constructions())
def test_everything_many_examples(inst, tinst, c):
    prop_alpha_array(inst)
    prop_law(inst)
    prop_fast(inst)
    prop_torch(tinst)
    prop_construct(c)
