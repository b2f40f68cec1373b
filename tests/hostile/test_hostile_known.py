"""The known failures found by the property-based hostility tests, with their minimal inputs.

Each is owned by another module (drafts, the fast and torch solvers) and marked
``xfail(strict=True)``: the owners fix it, the example then passes, the strict mark fails the
run, and the example and its filter in :func:`hostile_kit.known_failure` are removed together.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdsd_ot
from mdsd_ot import drafts

torch = pytest.importorskip("torch")

from cli_kit import finishes  # noqa: E402
from hostile_kit import known_failure, run_strict  # noqa: E402


# -- the known failures, each with its minimal input (strict: the fix must remove the mark) -
def _product_huge_n():
    return drafts.make("product", [1.0], 10**20)


def _torch_object_array():
    x = np.array([0.5, 0.5], dtype=object)
    return mdsd_ot.torch.alpha_star(x, x, n=1, scheme="with")


def _torch_requires_grad():
    p = torch.tensor([0.5, 0.5], dtype=torch.float64, requires_grad=True)
    return mdsd_ot.torch.alpha_star(p, torch.tensor([0.2, 0.8], dtype=torch.float64), n=2,
                                    scheme="with")  # fmt: skip


def _torch_meta():
    p = torch.tensor([0.5, 0.5], device="meta")
    return mdsd_ot.torch.alpha_star(p, p, n=2, scheme="with")


def _without_tiny_mass():
    q = np.array([0.5, 0.5, 5e-301])
    return mdsd_ot.fast.alpha_star(q[::-1].copy(), q, n=3, scheme="without")


def _cp_tiny_mass():
    q = np.array([1e-200, 1e-200, 1.0])
    return mdsd_ot.fast.alpha_star(q, q, n=3, scheme="conditional-poisson")


def _torch_huge_n():
    x = torch.tensor([0.5, 0.5], dtype=torch.float64)
    return mdsd_ot.torch.alpha_star(x, x, n=10**20, scheme="with")


def _ratio_overflow():
    return mdsd_ot.fast.alpha_star(np.array([0.5, 0.5]), np.array([1.0, 5e-324]), n=2,
                                   scheme="with")  # fmt: skip


def _torch_list():
    a = mdsd_ot.torch.alpha_star([0.1, 0.2, 0.7], [0.3, 0.3, 0.4], n=2, scheme="with")
    assert a.dtype == torch.float64, a.dtype  # H = {0, 1}: α* = 1 + 0.3 − 0.6² = 0.94
    return a


def _cp_underflow():
    return drafts.ConditionalPoisson([5e-324, 1e-16, 1.0], 3).Q([0, 1, 2])


def _drafts_huge_n():
    code = (
        "from mdsd_ot.drafts import WithReplacement\n"
        "law = WithReplacement(['1/2', '1/2'], 10**20)\n"
        "for call in (law.joint_items, lambda: law.Q([0])):\n"
        "    try:\n"
        "        call()\n"
        "    except ValueError:\n"
        "        pass\n"
    )
    out = finishes(code, 10.0)
    if out is None:
        raise TimeoutError("still running after 10 s")
    return ValueError("refused") if out.returncode == 0 else RuntimeError(out.stderr[-300:])


#: (filter name, the call, the right answer or None for "a ValueError", owner: reason).
KNOWN_FAILURES = [
    ("torch-object-array", _torch_object_array, 1.0,
     "torch: numpy object arrays raise TypeError in torch.as_tensor (class 3)"),
    ("torch-requires-grad", _torch_requires_grad, 0.86,
     "torch: tensors that require grad raise RuntimeError in gather (class 3)"),
    ("torch-meta", _torch_meta, None,
     "torch: meta tensors raise RuntimeError (Tensor.item()) instead of ValueError (class 3)"),
    ("without-tiny-mass-warning", _without_tiny_mass, 1.0,
     "fast: the without-replacement kernel warns 'overflow encountered in divide' on masses "
     "below ~1e-300 (class 7; the answer is right)"),
    ("cp-tiny-mass-warning", _cp_tiny_mass, 1.0,
     "fast: the conditional-Poisson kernel warns 'invalid value encountered in divide' when "
     "e_n(q) underflows (masses ~1e-200, n = 3; the answer is right)"),
    ("ratio-overflow-warning", _ratio_overflow, 0.5,
     "fast: the with / without / conditional-Poisson kernels warn 'overflow encountered in "
     "divide' when p(i)/q(i) overflows (q(i) subnormal, e.g. 5e-324; the answer is right)"),
    ("torch-list-float32", _torch_list, 0.94,
     "torch: lists are solved in float32 (class 3)"),
    ("torch-huge-n", _torch_huge_n, 1.0,
     "torch: n >= 2^63 raises OverflowError ('int too big to convert'); the numpy solver "
     "answers (with) or refuses (distinct-draft laws) with a ValueError"),
]  # fmt: skip


@pytest.mark.parametrize(
    "call, answer",
    [(_product_huge_n, None), (_cp_underflow, 1.0), (_drafts_huge_n, None)],
    ids=["product-huge-n", "cp-e_n-underflow", "drafts-huge-n"],
)
def test_fixed_failures_stay_fixed(call, answer):
    """Found by the properties, fixed in mdsd_ot.drafts: a ValueError or the right answer."""
    out = run_strict(call)
    if answer is None:
        assert isinstance(out, ValueError), out
    else:
        assert abs(float(out) - answer) <= 1e-12


@pytest.mark.parametrize(
    "call, answer",
    [pytest.param(c, a, id=name, marks=pytest.mark.xfail(strict=True, reason=why))
     for name, c, a, why in KNOWN_FAILURES],
)  # fmt: skip
def test_known_failure_examples(call, answer):
    out = run_strict(call)
    if answer is None:
        assert isinstance(out, ValueError), out
    elif not isinstance(out, ValueError):
        assert abs(float(out) - answer) <= 1e-12


def test_known_failure_filters_match_their_examples():
    names = {name for name, *_ in KNOWN_FAILURES}
    x = np.array([0.5, 0.5], dtype=object)
    assert known_failure("torch", x, x, 1, "with") in names
    g = torch.tensor([0.5, 0.5], requires_grad=True)
    assert known_failure("torch", g, g.detach(), 2, "with") in names
    m = torch.tensor([0.5, 0.5], device="meta")
    assert known_failure("torch", m, m, 2, "with") in names
    q = np.array([0.5, 0.5, 5e-301])
    assert known_failure("fast", q[::-1], q, 3, "without") in names
    assert known_failure("law", q[::-1], q, 3, "without") in names
    c = np.array([1e-200, 1e-200, 1.0])
    assert known_failure("fast", c, c, 3, "conditional-poisson") in names
    t = torch.tensor([0.5, 0.5])
    assert known_failure("torch", t, t, 10**20, "with") in names
    assert known_failure("fast", [0.5, 0.5], [1.0, 5e-324], 2, "with") in names
    assert known_failure("torch", [0.5, 0.5], t, 2, "with") in names
    assert known_failure("law", [1.0, 0, 0], [1.0, 1e-98, 1e-98], 3, "without") in names
    assert known_failure("fast", [0.5, 0.5], [0.2, 0.8], 2, "with") is None
