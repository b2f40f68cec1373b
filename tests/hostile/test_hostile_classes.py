"""Issue 10, class by class: every hostile input gets a clean answer or a clean refusal, fast.

Classes 1, 3, 5, 6, 7 and 8 of the issue (and the neighbours found while fixing them) go through
the command line and the API: the answer is right, or the refusal is exit code 2 with one line on
stderr naming the option / a ``ValueError`` naming the argument.  Class 2 (files) is
``test_hostile_files.py``, class 4 (options) and the grammar ``test_hostile_options.py``.
``HANG`` (seconds) only guards against hangs: the issue's examples ran for minutes or grew to
gigabytes; every case here takes well under a second or two on an idle machine.

Failures owned by other modules (the validator, the fast and torch solvers) are
``xfail(strict=True)`` with the reason; the owners fix them and drop the mark.
"""

from __future__ import annotations

import json
import time
import tracemalloc
import warnings

import numpy as np
import pytest
from cli_kit import HANG, cli, finishes, make_files, refused

import mdsd_ot
from mdsd_ot import drafts
from mdsd_ot.cli import crosscheck as cli_crosscheck
from mdsd_ot.exact import METHODS
from mdsd_ot.reports.crosscheck import builtin_instances, crosscheck


@pytest.fixture
def files(tmp_path):
    """The input files of :func:`cli_kit.make_files`."""
    return make_files(tmp_path)


# -- class 1: size guards count the work; product laws answer in milliseconds -----------------
def test_class1_cli_product_many_drafts_answers_fast():
    res, secs = cli("solve", "--p", "0.5,0.5", "--q", "0.2,0.8", "-n", "10", "--scheme", "product",
                    "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    # Q(H) = Π_j q_j(H) = q(H)^10: H = Σ gives P − Q = 0, every other H > 0 -> α* = 1
    assert json.loads(res.stdout)["alpha"] == pytest.approx(1.0, abs=1e-12)
    assert secs < HANG


@pytest.mark.parametrize("method", [m for m, x in METHODS.items() if x.is_installed()])
def test_class1_every_method_answers_or_refuses_product_n10(method):
    law = drafts.Product([["1/5", "4/5"]] * 10)
    t0 = time.perf_counter()
    try:
        a = mdsd_ot.alpha_star(["1/2", "1/2"], law, method)
    except ValueError as exc:
        assert "too large" in str(exc) or "method" in str(exc), exc
    else:
        assert abs(float(a) - 1.0) <= max(METHODS[method].accuracy, 1e-12)
    assert time.perf_counter() - t0 < HANG


def test_class1_api_product_closed_form_any_n():
    law = drafts.Product([[1e-4, 1 - 1e-4]] * 50)
    # Q(H) = q(H)^50; the minimum of P(H) − Q(H) is at H = {1}: α* = 1 + 0.99 − 0.9999^50
    t0 = time.perf_counter()
    assert mdsd_ot.alpha_star([0.01, 0.99], law) == pytest.approx(
        1 + 0.99 - (1 - 1e-4) ** 50, abs=1e-12
    )
    assert time.perf_counter() - t0 < HANG


def test_class1_subset_exact_huge_n_answers_or_refuses_fast():
    # q(H)^n in Fractions at n = 10^20 ran forever: the guard now counts n per Q(H)
    out = finishes(
        "import mdsd_ot; from mdsd_ot.drafts import WithReplacement\n"
        "try:\n"
        "    print(mdsd_ot.alpha_star([0.5, 0.5], WithReplacement([0.5, 0.5], 10**20),"
        " 'subset-exact'))\n"
        "except ValueError as exc:\n"
        "    print('ValueError', exc)\n",
        10.0,
    )
    assert out is not None, "still running after 10 s"
    assert out.returncode == 0 and (out.stdout.startswith("ValueError") or out.stdout == "1\n")


# -- class 3: one validator for 1-D, 2-D, numpy and torch --------------------------------
@pytest.mark.parametrize("row", [[0.5 + 0j, 0.5], [True, False]], ids=["complex", "bool"])
def test_class3_vector_validator_refuses_complex_and_bool(row):
    with pytest.raises(ValueError, match="^p"):
        mdsd_ot.fast.alpha_star(np.array(row), np.array([0.5, 0.5]), n=2, scheme="with")


@pytest.mark.parametrize("row", [[0.5 + 0j, 0.5], [True, False]], ids=["complex", "bool"])
def test_class3_batch_validator_refuses_what_the_vector_validator_refuses(row):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="^p"):
            mdsd_ot.fast.alpha_star(np.array([row]), np.array([[0.5, 0.5]]), n=2, scheme="with")


def test_class3_torch_list_keeps_float64():
    torch = pytest.importorskip("torch")
    p, q = [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]
    try:
        a = mdsd_ot.torch.alpha_star(p, q, n=2, scheme="with")
    except ValueError as exc:  # refusing lists is a clean answer too
        assert "p" in str(exc)
        return
    ref = mdsd_ot.fast.alpha_star(p, q, n=2, scheme="with")  # float64
    assert a.dtype == torch.float64 and abs(float(a) - ref) <= 1e-15


def test_class3_torch_requires_grad():
    torch = pytest.importorskip("torch")
    p = torch.tensor([0.5, 0.5], dtype=torch.float64, requires_grad=True)
    q = torch.tensor([0.2, 0.8], dtype=torch.float64)
    try:
        a = mdsd_ot.torch.alpha_star(p, q, n=2, scheme="with")
    except ValueError as exc:
        assert "p" in str(exc)
    else:
        assert float(a) == pytest.approx(0.86, abs=1e-15)


def test_class3_torch_meta_device_refused():
    torch = pytest.importorskip("torch")
    p = torch.tensor([0.5, 0.5], device="meta")
    with pytest.raises(ValueError, match="meta"):
        mdsd_ot.torch.alpha_star(p, p, n=2, scheme="with")


def test_class3_cli_refuses_complex_bool_and_meta(files):
    refused(cli("alpha", "--p", files / "complex.npy", "--q", files / "q.npy")[0], "complex")
    refused(cli("alpha", "--p", files / "bool.npy", "--q", files / "q.npy")[0], "booleans")
    refused(cli("alpha", "--p", "0.5,0.5", "--q", "0.5,0.5", "--device", "meta")[0], "--device")


def test_class3_cli_pt_tensor_that_requires_grad(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(torch.tensor([0.5, 0.5], dtype=torch.float64, requires_grad=True), tmp_path / "p.pt")
    torch.save(torch.tensor([0.2, 0.8], dtype=torch.float64), tmp_path / "q.pt")
    res, _ = cli("alpha", "--p", tmp_path / "p.pt", "--q", tmp_path / "q.pt", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["mean"] == pytest.approx(0.86, abs=1e-12)  # 1 − 0.5 + 0.36


# -- class 5: messages that mislead --------------------------------------------------------
def test_class5_subset_at_a_million_tokens_says_too_large_fast():
    V = 10**6
    law = drafts.WithReplacement(np.full(V, 1 / V), 2)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="too large") as err:
        mdsd_ot.alpha_star(np.full(V, 1 / V), law, method="subset")
    assert "digits" not in str(err.value) and time.perf_counter() - t0 < HANG


def test_class5_crosscheck_with_one_method_is_no_cross_check():
    args = ["crosscheck", "--vocab", "3000", "--trials", "1", "--scheme", "with"]
    res, _ = cli(*args, "--methods", "fast,subset")  # subset declines V = 3000
    assert res.exit_code == 1, res.output
    assert "no cross-check took place on 1 instance" in res.stdout
    assert "all agree" not in res.stdout and "unchecked" in res.stdout
    res, _ = cli(*args, "--methods", "fast,subset", "--no-certify", "--json")
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["checked"] is False and out["instances"][0]["checked"] is False
    # two methods that both solve it: a real cross-check, exit 0
    res, _ = cli("crosscheck", "--vocab", "4", "--trials", "1", "--methods", "fast,subset")
    assert res.exit_code == 0 and "all agree" in res.stdout


def test_class5_install_hint_has_single_parentheses(capsys):
    report = crosscheck(builtin_instances()[:1], methods=["subset"], certify=False)
    report.excluded["emd"] = "not installed (pip install 'mdsd-ot[test]')"
    cli_crosscheck.render_report(report)
    out = capsys.readouterr().out
    assert "mdsd-ot[test]" in out and "((" not in out and "))" not in out


def test_class5_parse_errors_name_option_and_file(files):
    err = refused(cli("solve", "--p", files / "corrupt.json", "--q", "0.5,0.5")[0])
    assert "--p" in err and "corrupt.json" in err and "line 1" in err
    err = refused(cli("solve", "--p", "0.5,0.5", "--q", "0.5,x")[0])
    assert "--q" in err and "'0.5,x'" in err
    err = refused(cli("solve", "--p", "0.5,0.5", "--q", "1/2,1/0")[0])
    assert "--q" in err and "rational" in err


def test_class5_sum_message_shows_the_difference():
    with pytest.raises(ValueError) as err:
        mdsd_ot.alpha_star([0.5, 0.5 + 2e-9], drafts.WithReplacement([0.5, 0.5], 2))
    assert "sum to 1.000000002, not 1" in str(err.value)
    with pytest.raises(ValueError, match="sum to 1.1, not 1"):
        mdsd_ot.alpha_star([0.6, 0.5], drafts.WithReplacement([0.5, 0.5], 2))


# -- class 6: reproducible hunts ------------------------------------------------------------
def test_class6_hunt_evals_reproducible_and_says_its_bound():
    args = ["hunt", "greedy-vs-without", "--evals", "150", "--seed", "7", "--json"]
    a, b = (json.loads(cli(*args)[0].stdout) for _ in range(2))
    assert a["witness"] == b["witness"] and a["bounded_by"] == "evals" and a["reproducible"]


def test_class6_hunt_list():
    res, _ = cli("hunt", "--list", "--json")
    assert res.exit_code == 0 and {"greedy-vs-without"} <= {
        r["name"] for r in json.loads(res.stdout)["conjectures"]
    }


# -- class 7: tiny but positive masses --------------------------------------------------------
def test_class7_greedy_tiny_mass_is_a_law():
    q = np.array([1 - 0.0017 - 1.9e-32, 1.9e-32, 0.0017])
    law = drafts.Greedy(q, 3)  # the last draft is token 1 whenever it is drawn
    p = np.array([0.2, 0.3, 0.5])
    a = mdsd_ot.alpha_star(p, law)
    assert abs(a - mdsd_ot.alpha_star(p, law, method="subset-exact")) <= 1e-12


@pytest.mark.parametrize(
    "q, n",
    [
        pytest.param([1 - 2e-16, 1e-16, 1e-16], 3, id="1e-16"),
        pytest.param([0.5, 0.5, 5e-301], 3, id="5e-301"),
        pytest.param([2 / 3, 1 / 3, 5e-324], 2, id="5e-324"),
    ],
)
def test_class7_fast_without_tiny_masses_no_warning(q, n):
    q = np.array(q)
    p = q[::-1].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = mdsd_ot.fast.alpha_star(p, q, n=n, scheme="without")
    law = drafts.WithoutReplacement(q, n)
    assert abs(a - mdsd_ot.alpha_star(p, law, method="subset-exact")) <= 1e-12


# -- class 8: sampling scales ----------------------------------------------------------------
@pytest.mark.parametrize("scheme", [s for s in drafts.SCHEMES if s != "explicit"])
def test_class8_sampling_cost_is_m_n_log_V(scheme):
    V, m = 152_064, 40_000
    q = np.random.default_rng(0).dirichlet(np.ones(V))
    law = (
        drafts.make(scheme, None, None, qs=[q, q])
        if scheme == "product"
        else drafts.make(scheme, q, 2)
    )
    tracemalloc.start()
    t0 = time.perf_counter()
    draws = law.sample(np.random.default_rng(1), m)
    secs = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert draws.shape == (m, 2) and draws.min() >= 0 and draws.max() < V
    # a (m, V) array would be 45 GiB; O(V + m·n) memory is a few MiB
    assert peak < 256 * 2**20 and secs < HANG
