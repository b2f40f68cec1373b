"""Throughput of ``mdsd-ot report`` and the cost of α* for every q-convex law of one row, one run.

Run: ``python benchmarks/report.py [--quick]``.

1. **Positions per second** of the shard report (n = 2, every law and verifier, 2,000 simulated
   tuples where needed) at V = 32,000 and 152,064 on synthetic shards (float32, the synthetic
   family of :mod:`mdsd_ot.synthetic` at T = 0.7): serially, and on a two-worker Dask cluster
   (the process workers of ``--workers 2``, started beforehand; the start-up time is printed
   separately), and the speed-up.  Both runs give identical reports (checked).
2. **One sort per row**: α* of the with-replacement, sequential without-replacement and
   conditional-Poisson laws of one row (n = 2, V = 152,064), as called by the report
   (:func:`mdsd_ot.reports.laws.alpha_rows`), divided by one ``np.argsort`` of the row's p/q
   ratios (interleaved rounds, median ratio; the machine may be shared).  The issue's target is
   ≤ 2; ``alpha_rows`` makes one :func:`mdsd_ot.fast.alpha_star_laws` call (one validation and
   one bucketing or sorting pass per row, shared by the three laws).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np

from mdsd_ot.io import make_metadata, write_shard
from mdsd_ot.reports import report
from mdsd_ot.reports.laws import alpha_rows
from mdsd_ot.synthetic import synthetic_batch


def _dataset(d: str, V: int, m: int) -> None:
    P, Q = synthetic_batch(m, V, 0.7, 0)
    meta = make_metadata(
        "synthetic", "synthetic", temperature=0.7, top_k=0, top_p=1.0, vocab_size=V
    )
    write_shard(
        os.path.join(d, "s.safetensors"), P.astype(np.float32), Q.astype(np.float32), metadata=meta
    )


def throughput(V: int, m: int, chunk: int) -> None:
    from mdsd_ot.reports.parallel import dask_client

    with tempfile.TemporaryDirectory() as d:
        _dataset(d, V, m)
        report(d, [2], chunk_rows=chunk)  # warm-up (imports, caches)
        t = time.perf_counter()
        serial = report(d, [2], chunk_rows=chunk)
        ts = time.perf_counter() - t
        t = time.perf_counter()
        with dask_client(workers=2) as client:  # the cluster of ``--workers 2``
            start = time.perf_counter() - t
            address = client.scheduler.address
            report(d, [2], chunk_rows=chunk, scheduler=address)  # warm-up of the workers
            t = time.perf_counter()
            dask = report(d, [2], chunk_rows=chunk, scheduler=address)
            td = time.perf_counter() - t
    same = json.dumps(serial) == json.dumps(dask)
    print(
        f"V = {V:>7,}  m = {m:>3}  serial {m / ts:6.2f} positions/s   2 workers {m / td:6.2f} "
        f"positions/s   speed-up {ts / td:4.2f}x   (cluster start {start:.1f} s; identical: {same})"
    )


def one_sort(V: int = 152_064, rounds: int = 15) -> None:
    P, Q = synthetic_batch(1, V, 0.7, 1)
    laws = ["with", "without", "conditional-poisson"]
    ratios, each = [], {law: [] for law in laws}
    for _ in range(rounds):
        t = time.perf_counter()
        np.argsort(P[0] / Q[0])
        ta = time.perf_counter() - t
        t = time.perf_counter()
        alpha_rows(P, Q, 2, laws)
        ratios.append((time.perf_counter() - t) / ta)
        for law in laws:
            t = time.perf_counter()
            alpha_rows(P, Q, 2, [law])
            each[law].append((time.perf_counter() - t) / ta)
    parts = ", ".join(f"{law} {np.median(v):.2f}" for law, v in each.items())
    print(
        f"one row, V = {V:,}, n = 2: with + without + conditional-poisson α* = "
        f"{np.median(ratios):.2f} x np.argsort (target <= 2; per law: {parts})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer positions")
    args = ap.parse_args()
    k = 1 if args.quick else 2
    print("machine: see the report; numbers are one run")
    throughput(32_000, 24 * k, 4)
    throughput(152_064, 8 * k, 2)
    one_sort()


if __name__ == "__main__":
    main()
