"""numba's disk cache serves every compiled kernel to a new process (no recompilation).

A kernel defined as a closure, or one that calls a closure, is compiled again in every process
(seconds on the first call of a row: 4 s for the fused row evaluator, 8-10 s for the series).
Two fresh interpreters run the same calls; in the second, no kernel that ran may miss the cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba", reason="the jit extra is not installed")

SCRIPT = textwrap.dedent(
    """
    import json
    import numpy as np
    from mdsd_ot.fast import _fused, _fused_row, _fused_series, _series_jit, alpha_star
    from mdsd_ot.synthetic import synthetic_pair
    from mdsd_ot.verifiers.chain import _cutjit, _passes, build_plan, seqseries
    from mdsd_ot.verifiers.chain.sample import sample_plan

    p, q = synthetic_pair(6000, 1.0, 1)
    for s, n in (("with", 2), ("without", 2), ("conditional-poisson", 2), ("without", 3)):
        alpha_star(p, q, n=n, scheme=s)
    alpha_star(*synthetic_pair(30_000, 1.0, 1), n=5, scheme="without")  # top_many: 25 of 30 blocks
    g = np.random.default_rng(0)
    for con, n in (("relabel", 2), ("cp2", 2), ("seq2", 2), ("cp-swap", 3)):
        sample_plan(build_plan(p, q, n, con), np.arange(n)[None, :], g)
    ps, qs = synthetic_pair(2000, 1.0, 2)
    build_plan(ps, qs, 3, "seq-swap")  # the sequential series' compiled passes
    out = {}
    for mod, ks in (("fused", _fused._kernels()), ("fused_row", _fused_row._kernels()),
                    ("fused_series", _fused_series._kernels()),
                    ("series", _series_jit._kernels()), ("passes", _passes.kernels()),
                    ("cutjit", _cutjit._kernels()), ("seqseries", seqseries.kernels())):
        for name, f in (ks or {}).items():
            if hasattr(f, "stats") and f.signatures:
                out[mod + "." + name] = [len(f.stats.cache_misses), len(f.stats.cache_hits)]
    print(json.dumps(out))
    """
)


def _run() -> dict:
    env = dict(os.environ, MDSD_OT_JIT="1")
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                         timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_new_process_loads_every_kernel_from_the_cache():
    """After one process has compiled (and cached) the kernels, a second one compiles none."""
    import mdsd_ot

    if not os.access(os.path.dirname(mdsd_ot.__file__), os.W_OK):
        pytest.skip("the package directory is not writable: numba caches elsewhere or not")
    _run()
    second = _run()
    missed = {k: v for k, v in second.items() if v[0] > 0}
    assert len(second) >= 20, second  # the kernels of every route ran
    assert {"fused_series.boundary", "fused_series.survivors", "fused.top_many"} <= set(second)
    assert {"seqseries.heavy", "seqseries.series"} <= set(second)
    assert not missed, f"compiled again in a new process (closures?): {sorted(missed)}"
