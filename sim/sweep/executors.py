"""Where a sweep's tasks run: in this process, on local worker processes, or on a Dask cluster.

Every executor calls the same top-level function ``fn(shared[key], item)`` for each ``(key, item)`` and
yields the results as they complete; the order of completion never reaches the results, which
:mod:`sim.sweep.results` sorts. The shared objects (conversations) are sent to a worker once per task by a
process pool, and scattered once to the cluster by Dask, so large recordings cross the network once.

* ``local``: ``workers`` processes (default: all cores) from a ``spawn`` pool, so workers start clean
  whatever the parent holds; one worker runs inline, without a pool.
* ``dask``: an existing cluster, ``--scheduler tcp://HOST:PORT``; every worker needs the same
  compaction-sim installed (tasks check the version) and no shared filesystem.
* ``dask-local``: a ``distributed.LocalCluster`` on 127.0.0.1 (diagnostics on a random loopback port), one thread per
  worker process (the engine is pure Python, so threads would only contend for the GIL).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sim.core.errors import InvalidConfig, UnknownName

EXECUTORS = ("local", "dask", "dask-local")
S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class ExecutorSpec:
    """Which executor, how many workers (None: all local cores), and the scheduler for ``dask``."""

    kind: str = "local"
    workers: int | None = None
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise UnknownName("executor", self.kind, EXECUTORS)
        if self.workers is not None and self.workers < 1:
            raise InvalidConfig(f"--workers {self.workers} must be at least 1")
        if self.kind == "dask" and not self.scheduler:
            raise InvalidConfig("--executor dask needs --scheduler tcp://HOST:PORT (or use --executor dask-local)")
        if self.kind != "dask" and self.scheduler:
            raise InvalidConfig(f"--scheduler is only for --executor dask (got --executor {self.kind})")

    @property
    def n_workers(self) -> int:
        return self.workers or os.cpu_count() or 1

    def describe(self) -> str:
        if self.kind == "dask":
            return f"dask ({self.scheduler})"
        return f"{self.kind} ({self.n_workers} worker{'s' if self.n_workers != 1 else ''})"


def run_all(
    fn: Callable[[S, T], R], items: Sequence[tuple[str, T]], shared: Mapping[str, S], spec: ExecutorSpec
) -> Iterator[R]:
    """``fn(shared[key], item)`` for every item, yielded as each completes."""
    if not items:
        return
    if spec.kind == "local":
        yield from _local(fn, items, shared, spec.n_workers)
    else:
        yield from _dask(fn, items, shared, spec)


def _local(
    fn: Callable[[S, T], R], items: Sequence[tuple[str, T]], shared: Mapping[str, S], workers: int
) -> Iterator[R]:
    workers = min(workers, len(items))
    if workers == 1:
        for key, item in items:
            yield fn(shared[key], item)
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=exit_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        # keep a bounded window in flight, so a huge grid does not pickle every task up front
        pending: set[Future[R]] = set()
        queue = iter(items)
        try:
            for key, item in queue:
                pending.add(pool.submit(fn, shared[key], item))
                if len(pending) >= workers * 4:
                    break
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    for key, item in queue:
                        pending.add(pool.submit(fn, shared[key], item))
                        break
                    yield fut.result()
        finally:
            for fut in pending:
                fut.cancel()


#: How often a pool worker checks that the sweep that started it is still there.
PARENT_CHECK_S = 0.5


def exit_with_parent(parent: int) -> None:
    """Pool initializer: a daemon thread that ends this worker once its parent is gone. A sweep killed with
    SIGKILL cannot shut its pool down, and an idle worker waits on a queue whose other end it holds itself,
    so without this the workers (and the resource tracker, which waits for them) would stay forever."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch, name="csim-exit-with-parent", daemon=True).start()


def _dask(
    fn: Callable[[S, T], R], items: Sequence[tuple[str, T]], shared: Mapping[str, S], spec: ExecutorSpec
) -> Iterator[R]:
    try:
        import logging  # with Dask only: a local sweep does without it

        from distributed import Client, LocalCluster, as_completed
    except ImportError:  # pragma: no cover - an install without the extra
        raise InvalidConfig("the dask executors need dask[distributed] (pip install 'dask[distributed]')") from None
    cluster: Any = None
    if spec.kind == "dask-local":
        cluster = LocalCluster(
            n_workers=spec.n_workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    else:
        try:
            client = Client(spec.scheduler, timeout=30)
        except OSError as exc:
            raise InvalidConfig(f"cannot reach the Dask scheduler at {spec.scheduler!r}: {exc}") from None
    try:
        keys = sorted({k for k, _ in items})
        scattered = dict(zip(keys, client.scatter([shared[k] for k in keys], broadcast=False), strict=True))
        futures = [client.submit(fn, scattered[key], item, pure=False) for key, item in items]
        for fut in as_completed(futures):
            result = fut.result()
            fut.release()
            yield result
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
