"""The same sweep gives the same bytes on one worker, several worker processes, a Dask cluster reached by its
scheduler address, and a LocalCluster started by the sweep (all on loopback)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from sim.core.config import normalise_run
from sim.core.errors import InvalidConfig, UnknownName
from sim.sweep.driver import run_sweep
from sim.sweep.executors import ExecutorSpec, run_all
from sim.sweep.parts import TABLES
from sim.sweep.results import load_results
from sim.sweep.spec import PolicyGrid, Source, SweepSpec

SPEC = SweepSpec(
    (PolicyGrid("none"), PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.5", "0.8")),))),
    (
        Source("scenario", "coding-agent", (("turns", "12"), ("huge_prob", "0"))),
        Source("scenario", "support-chat", (("turns", "10"),)),
    ),
    (0, 1),
    normalise_run({"window": 12000}, "test"),
)


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, engine="pyarrow")
    return buf.getvalue()


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    distributed = pytest.importorskip("distributed")
    import logging

    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    ) as c:
        yield c.scheduler_address


def test_every_executor_gives_the_same_bytes(tmp_path: Path, cluster: str) -> None:
    outs = {
        "one worker": run_sweep(SPEC, tmp_path / "one", workers=1, progress=False),
        "two processes": run_sweep(SPEC, tmp_path / "two", workers=2, progress=False),
        "dask scheduler": run_sweep(SPEC, tmp_path / "dask", executor="dask", scheduler=cluster, progress=False),
        "dask-local": run_sweep(SPEC, tmp_path / "dl", executor="dask-local", workers=2, progress=False),
    }
    assert {o.ran for o in outs.values()} == {12}
    frames = {name: load_results(o.out) for name, o in outs.items()}
    reference = frames.pop("one worker")
    assert len(reference.compactions) > 0 and len(reference.violations) > 0  # every table has rows to compare
    for name, res in frames.items():
        for table in TABLES:
            assert parquet_bytes(getattr(res, table)) == parquet_bytes(getattr(reference, table)), (name, table)


def _add(base: int, item: int) -> int:
    return base + item


def test_run_all_calls_fn_with_the_shared_object_for_each_item() -> None:
    items = [("a", 1), ("b", 2), ("a", 3)]
    got = sorted(run_all(_add, items, {"a": 10, "b": 20}, ExecutorSpec("local", 2)))
    assert got == [11, 13, 22]
    assert list(run_all(_add, [], {}, ExecutorSpec())) == []


def test_executor_options_are_checked() -> None:
    with pytest.raises(UnknownName, match="Did you mean 'dask'"):
        ExecutorSpec("dsk")
    with pytest.raises(InvalidConfig, match="--scheduler"):
        ExecutorSpec("dask")
    with pytest.raises(InvalidConfig, match="only for --executor dask"):
        ExecutorSpec("local", scheduler="tcp://127.0.0.1:1")
    with pytest.raises(InvalidConfig, match="at least 1"):
        ExecutorSpec("local", 0)


def test_a_reactive_sweep_gives_the_same_bytes_on_every_executor(tmp_path: Path, cluster: str) -> None:
    """The closed-loop agent (issue 17) adds requests by seeded hash draws: still the same bytes everywhere."""
    spec = SweepSpec(
        (PolicyGrid("swe-agent-masking", (("n", ("1", "3")),)), PolicyGrid("jetbrains-summary", (("n", ("3",)),))),
        (Source("scenario", "coding-agent", (("turns", "30"), ("huge_prob", "0"))),),
        (0, 1),
        normalise_run({"window": 12000, "agent": "reactive"}, "test"),
    )
    outs = {
        "one worker": run_sweep(spec, tmp_path / "one", workers=1, progress=False),
        "two processes": run_sweep(spec, tmp_path / "two", workers=2, progress=False),
        "dask scheduler": run_sweep(spec, tmp_path / "dask", executor="dask", scheduler=cluster, progress=False),
    }
    frames = {name: load_results(o.out) for name, o in outs.items()}
    reference = frames.pop("one worker")
    assert reference.runs["extra_requests"].sum() > 0  # the agent acted
    for name, res in frames.items():
        for table in TABLES:
            assert parquet_bytes(getattr(res, table)) == parquet_bytes(getattr(reference, table)), (name, table)
