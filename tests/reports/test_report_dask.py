"""Reports on Dask: a two-worker local cluster, and an existing scheduler, give the serial result.

The workers are threads of the test process (``processes=False``) so that the cluster starts
quickly on a small machine; the code path is the real ``distributed.Client`` (``Client.map`` and
``gather``), the same one ``--workers``/``--scheduler`` use with process workers.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from mdsd_ot.io import make_metadata, write_shard
from mdsd_ot.reports import report
from mdsd_ot.synthetic import synthetic_batch

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask")
    for j in range(3):
        P, Q = synthetic_batch(4, 40, 1.0, j)
        meta = make_metadata("t", "d", temperature=1.0, top_k=0, top_p=1.0, vocab_size=40)
        write_shard(d / f"s{j}.npz", P, Q, metadata=meta)
    return d


KW = dict(ns=[2, 3], samples=300, seed=5, chunk_rows=2)  # 6 tasks; rrs-without simulated at n = 3


def test_two_worker_local_cluster_equals_serial(dataset):
    serial = report(dataset, **KW)
    seen = []
    on_dask = report(dataset, workers=2, processes=False, progress=seen.append, **KW)
    assert json.dumps(on_dask) == json.dumps(serial)  # identical, simulated values included
    assert sum(seen) == 12 * 2  # positions × numbers of drafts
    methods = {v["method"] for r in serial["results"] for v in r["verifiers"]}
    assert "simulated" in methods


def test_existing_scheduler_equals_serial(dataset):
    serial = report(dataset, **KW)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as cluster:  # fmt: skip
        remote = report(dataset, scheduler=cluster.scheduler_address, **KW)
    assert json.dumps(remote) == json.dumps(serial)


def test_bad_rows_raise_the_same_error_on_dask(dataset, tmp_path):
    P, Q = synthetic_batch(3, 40, 1.0, 9)
    P[1] *= 2
    meta = make_metadata("t", "d", temperature=1.0, top_k=0, top_p=1.0, vocab_size=40)
    np.savez(tmp_path / "bad.npz", p=P, q=Q, **{k: np.array(v) for k, v in meta.items()})
    with pytest.raises(ValueError, match=r"bad.npz: p\[1\]: entries sum to 2"):
        report(tmp_path, [2], workers=2, processes=False)
