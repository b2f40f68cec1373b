"""Running a report's tasks serially or on Dask (``pip install 'mdsd-ot[dask]'``).

``workers=N`` starts a :class:`distributed.LocalCluster` of N single-threaded workers;
``scheduler=ADDRESS`` connects a :class:`distributed.Client` to an existing scheduler (its workers
must see the shard files under the same paths).  Either way the tasks go through the same
``Client.map``/``gather`` code; results come back in task order, and each task seeds its own
randomness from its description, so the outcome does not depend on where or in which order the
tasks ran (identical to the serial run).

One caveat: numpy's ``np.dot`` (used by the closed-form acceptance of ``rrs-without``) sums in
an order that depends on the BLAS thread count.  Dask's nannies set ``OMP_NUM_THREADS=1`` (and
the MKL/OpenBLAS equivalents) for their workers by default; the local cluster started here lets
its workers inherit this process's settings instead, so that they compute bit for bit what the
serial run computes.  (It also turns off the workers' statistical profiler, which halved the
speed of these Python-heavy tasks.)  Workers of an existing cluster (``scheduler=``) agree to the last bit only
when their BLAS thread settings match the client's (otherwise to about 1e-16).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["dask_client", "map_tasks"]

#: Environment variables the local workers inherit from this process instead of Dask's defaults
#: (BLAS threads: module docstring; glibc's trim threshold: Dask's 64 kB sends every temporary
#: of a V = 32,000 row through mmap, measured slower).
_INHERITED = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MALLOC_TRIM_THRESHOLD_",
)

T = TypeVar("T")


@contextmanager
def dask_client(
    workers: int | None = None, scheduler: str | None = None, *, processes: bool = True
) -> Iterator[Any]:
    """A :class:`distributed.Client` to ``scheduler``, or to a new local cluster of ``workers``.

    ``processes=False`` runs the local workers as threads of this process (quicker to start;
    the tests use it); the command line uses processes.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("--workers/--scheduler need Dask; pip install 'mdsd-ot[dask]'") from exc
    if scheduler is not None and workers is not None:
        raise ValueError("--scheduler: give either --workers N or --scheduler ADDRESS, not both")
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address
            raise ValueError(
                f"--scheduler: cannot reach a Dask scheduler at {scheduler} ({exc}); start one "
                "with `dask scheduler` or use --workers N for a local cluster"
            ) from None
        with client:
            yield client
        return
    if workers is None or int(workers) < 1:
        raise ValueError(f"--workers: give a number of workers >= 1, got {workers!r}")
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    for key in _INHERITED:  # as in this process (module docstring)
        environ.pop(key, None)
        if key in os.environ:
            environ[key] = os.environ[key]
    with (
        dask.config.set(
            {
                "distributed.nanny.pre-spawn-environ": environ,
                # the statistical profiler samples the task's stack every 10 ms: measured to
                # halve the speed of these Python-heavy tasks
                "distributed.worker.profile.enabled": False,
            }
        ),
        LocalCluster(
            n_workers=int(workers),
            threads_per_worker=1,
            processes=processes,
            dashboard_address=None,
            # a task's error reaches the caller as its exception (one line from the CLI); the
            # workers' "Compute Failed" log blocks with their tracebacks would repeat it
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def map_tasks(
    fn: Callable[..., T],
    tasks: Sequence[Any],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    processes: bool = True,
    weights: Sequence[int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[T]:
    """``[fn(t) for t in tasks]``, serially or on Dask (module docstring), in task order.

    ``progress(w)`` is called as tasks finish, with the task's weight (default 1); the serial
    run passes ``progress`` to ``fn`` instead (``fn(t, progress)``) for finer steps.
    """
    if workers is None and scheduler is None:
        return [fn(t, progress) for t in tasks]
    from distributed import as_completed

    w = list(weights) if weights is not None else [1] * len(tasks)
    with dask_client(workers, scheduler, processes=processes) as client:
        futures = client.map(fn, list(tasks), pure=False)
        index = {f.key: k for k, f in enumerate(futures)}
        for fut in as_completed(futures):
            if fut.status == "error":
                fut.result()  # raises the task's own exception (e.g. a bad row's ValueError)
            if progress is not None:
                progress(w[index[fut.key]])
        return client.gather(futures)
