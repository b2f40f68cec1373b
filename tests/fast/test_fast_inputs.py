"""Hostile inputs at the API of the fast and torch solvers (issue 10, classes 3 and 7).

Class 3 (dtype holes): complex and boolean rows are refused with the validator's one message on
every backend and shape; a tensor that requires grad is detached (the result never requires
grad); a tensor on the meta device is refused; lists given to the torch entry point are float64.
Class 7 (tiny but positive masses): no warning leaks from a correct computation, and the
sequential without-replacement series stays finite and exact when the mass outside the top
n - 1 tokens is far below the double-double resolution (it used to return NaN).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mdsd_ot
from mdsd_ot import drafts as D
from mdsd_ot.fast import alpha_star

SCHEMES = [("with", 2), ("without", 2), ("without", 3), ("conditional-poisson", 3), ("greedy", 2)]


@pytest.mark.parametrize("shape", [(4,), (2, 4)])
@pytest.mark.parametrize("kind", ["complex", "bool"])
def test_complex_and_bool_rows_refused_everywhere(shape, kind, nx64):
    """Same message for 1-D and 2-D, numpy and torch, through fast.alpha_star."""
    good = np.full(shape, 0.25)
    if nx64.torch is None:
        bad = good.astype(complex) if kind == "complex" else good > 0.1
    else:
        t = nx64.asarray(good)
        bad = t.to(nx64.torch.complex128) if kind == "complex" else t > 0.1
        good = t
    with pytest.raises(ValueError, match=rf"q: entries must be real numbers, got dtype .*{kind}"):
        alpha_star(good, bad, n=2, scheme="with")


def test_tensor_grad_and_meta():
    torch = pytest.importorskip("torch")
    import mdsd_ot.torch as mt

    p = torch.tensor([0.05, 0.05, 0.9], dtype=torch.float64, requires_grad=True)
    q = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64, requires_grad=True)
    for f in (mt.alpha_star, alpha_star):
        a, H = f(p, q, n=2, scheme="without", return_set=True)
        assert not a.requires_grad and abs(float(a) - 41 / 70) <= 1e-15  # detached (documented)
    meta = torch.empty(3, dtype=torch.float64, device="meta")
    for args in ((meta, q.detach()), (p.detach(), meta)):
        with pytest.raises(ValueError, match=r"'meta' device"):
            mt.alpha_star(*args, n=2, scheme="with")


def _tiny_mass_rows(rng: np.random.Generator, count: int):
    """q with masses spread over 1e-320..1e-14 (many near 1e-16), a dominant token, or all
    tiny but n; p spread or tiny as well (seeded)."""
    for trial in range(count):
        n = int(rng.integers(1, 9))
        V = int(rng.integers(n + 1, 40))
        q = rng.dirichlet(np.ones(V) * rng.choice([0.1, 1.0]))
        m = rng.random(V) < rng.random()
        q[m] = 10.0 ** rng.uniform(-320, -14, m.sum())
        if trial % 4 == 1:
            q[0] = 1.0
        elif trial % 4 == 2:
            q[:] = 1e-16
            q[rng.integers(V, size=n)] = rng.random(n)
        elif trial % 4 == 3:
            q[:] = 10.0 ** rng.uniform(-300, 0, V)
        p = rng.dirichlet(np.ones(V))
        yield n, p / p.sum(), q / q.sum()


def test_no_warning_leaks_from_tiny_masses():
    """Every scheme, n = 1..8, masses down to subnormal: no RuntimeWarning, α* finite."""
    rng = np.random.default_rng(71)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n, p, q in _tiny_mass_rows(rng, 150):
            for scheme in ("with", "without", "conditional-poisson", "greedy"):
                need = n + (scheme == "greedy")
                if scheme != "with" and np.count_nonzero(q) < need:
                    continue
                a = alpha_star(p, q, n=n, scheme=scheme)
                assert 0.0 <= a <= 1.0, (scheme, n, q)


def test_without_series_exact_below_double_double_resolution():
    """The mass outside the top n - 1 tokens at 1e-34: Q used to be NaN (T - q(D) in
    double-double is 0 there); now α* equals the exact brute force (Fractions) to 1e-12."""
    tail = [3.84245243e-16, 1.63454476e-34, 1.80978849e-62]
    q = np.array([0.6, 0.4 - sum(tail), *tail])
    q /= q.sum()
    p = np.array([0.1, 0.2, 0.3, 0.2, 0.2])
    rng = np.random.default_rng(3)
    for n in (3, 4):
        for pp in (p, rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))):
            law = D.WithoutReplacement(q, n)
            ref = mdsd_ot.solve(pp, law, method="subset-exact").alpha
            assert abs(alpha_star(pp, q, n=n, scheme="without") - ref) <= 1e-12, (n, pp)


def test_greedy_tiny_positive_mass_is_a_law():
    """q = (0.998..., 1.9e-32, 0.0017), n = 3: the last draft is token 1 (issue 10, class 7);
    the fast closed form (T9) gives α* = P(T) + min(p(1), 1) for T = {0, 2}."""
    q = np.array([1 - 1.9e-32 - 0.0017, 1.9e-32, 0.0017])
    p = np.array([0.2, 0.3, 0.5])
    assert abs(alpha_star(p, q, n=3, scheme="greedy") - 1.0) <= 1e-15
    # n = 2: T = {0}, q' = (0, ~1.1e-29, ~1): alpha* = p(0) + min(p(1), q'(1)) + min(p(2), q'(2))
    assert abs(alpha_star(p, q, n=2, scheme="greedy") - 0.7) <= 1e-12


def test_a_law_without_fast_route_names_the_routes_from_the_registry():
    """Product and Explicit have no fast route: the message lists the q-convex laws and the
    closed forms as the draft registry declares them, and points to method='reduced'."""
    law = D.Product([np.ones(3) / 3] * 2)
    with pytest.raises(ValueError) as err:
        alpha_star(np.ones(3) / 3, law)
    msg = str(err.value)
    convex = [s for s, c in D.SCHEMES.items() if c.kernel and c.q_convex]
    closed = [s for s, c in D.SCHEMES.items() if c.kernel and not c.q_convex]
    assert f"q-convex: {', '.join(convex)}; closed form: {', '.join(closed)}" in msg
    assert "greedy" in closed and "Product with n=2 has none" in msg and "'reduced'" in msg


@pytest.mark.parametrize(
    "p, q, n",
    [
        ([0.0, 1.0], [5e-324, 1.0], 2),
        ([0.1, 0.1, 0.8], [5e-324, 0.5, 0.5], 2),
        ([0.7, 0.1, 0.1, 0.1], [5e-324, 5e-324, 0.5, 0.5], 2),
        ([0.1, 0.1, 0.1, 0.7], [5e-324, 5e-324, 0.5, 0.5], 3),
        ([0.2, 0.3, 0.5], [1e-200, 1e-200, 1.0], 3),
    ],
)
def test_conditional_poisson_at_the_bottom_of_float64(p, q, n):
    """e_n(q) below the smallest double (subnormal or underflowing level totals): every route
    (sort, bucket; numpy, torch) answers within 1e-12 of subset-exact and warns nothing."""
    p, q = np.array(p), np.array(q)
    ref = float(mdsd_ot.alpha_star(p, D.ConditionalPoisson(q, n), method="subset-exact"))
    try:
        import torch
    except ImportError:  # the numpy routes still run
        torch = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in ("sort", "bucket"):
            a = alpha_star(p, q, n=n, scheme="conditional-poisson", path=path)
            assert abs(a - ref) <= 1e-12, (path, a, ref)
            if torch is not None:
                t = mdsd_ot.torch.alpha_star(
                    torch.tensor(p), torch.tensor(q), n=n, scheme="conditional-poisson", path=path
                )
                assert abs(float(t) - ref) <= 1e-12, ("torch", path, float(t), ref)
