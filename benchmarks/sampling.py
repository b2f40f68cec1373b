"""Drawing m = 10^5 draft tuples at V = 152,064: seconds and peak extra memory, per law.

Every law samples by inverse CDF on cumulative sums (``mdsd_ot.drafts.sampling``): O(V log V)
setup, then O(m·n·log V) time and O(m·n) memory.  The previous Gumbel-top-k sampler of the
without-replacement law built an (m, V) array: 45 GiB for 40,000 tuples.  Figures are from one
run on this machine; ``np.argsort`` of V float64 values is printed as the unit.

Run: ``python benchmarks/sampling.py [--m 100000] [--n 4]``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from mdsd_ot.drafts import (
    ConditionalPoisson,
    Greedy,
    Product,
    SpecHub,
    WithoutReplacement,
    WithReplacement,
)
from mdsd_ot.synthetic import synthetic_pair

V = 152_064


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--m", type=int, default=100_000)
    ap.add_argument("--n", type=int, default=4)
    args = ap.parse_args()
    _, q = synthetic_pair(V, 1.0, np.random.default_rng(0), noise=1.0)
    x = np.random.default_rng(1).random(V)
    t0 = time.perf_counter()
    for _ in range(5):
        np.argsort(x)
    sort_s = (time.perf_counter() - t0) / 5
    laws = [
        WithReplacement(q, args.n),
        WithoutReplacement(q, args.n),
        ConditionalPoisson(q, args.n),
        Greedy(q, args.n),
        SpecHub(q),
        Product([q, q[::-1].copy()]),
    ]
    print(f"V = {V:,}, m = {args.m:,}; one np.argsort of V floats: {sort_s * 1e3:.2f} ms")
    print(f"{'law':22s} {'n':>2s} {'seconds':>8s} {'per tuple':>10s} {'peak MiB':>9s}")
    for law in laws:
        tracemalloc.start()
        t0 = time.perf_counter()
        s = law.sample(np.random.default_rng(2), args.m)
        dt = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        assert s.shape == (args.m, law.n)
        print(
            f"{type(law).__name__:22s} {law.n:2d} {dt:8.3f} {dt / args.m * 1e6:8.2f} µs {peak:9.1f}"
        )


if __name__ == "__main__":
    main()
