"""Running a sweep into a results folder: resumably, on any executor, with a progress line.

The plan and the work are :mod:`sim.sweep.grid`; this is the driver around them. A run is finished when its row is
in a part (:mod:`sim.sweep.parts`), and each part is written to a temporary directory and renamed into place, so
a sweep stopped at any point (even by SIGKILL) and started again ends with every run exactly once. Running a
different spec, or other code, into the same folder is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sim.core.errors import InvalidConfig
from sim.core.metrics import versions
from sim.sweep.executors import ExecutorSpec, run_all
from sim.sweep.grid import package_version, plan, run_task
from sim.sweep.parts import (
    MANIFEST,
    PARTS,
    Rows,
    check_part,
    finished_parts,
    part_name,
    read_columns,
    read_manifest,
    results_lock,
    write_part_tables,
)
from sim.sweep.spec import SweepSpec


# -- the driver -----------------------------------------------------------------------------------------------
def done_run_keys(root: Path, notes: list[str] | None = None) -> set[str]:
    """Run keys in the finished parts under ``root``. Each part is checked first (every table readable, as its
    ``part.json`` lists it); a damaged one is removed, so its runs run again, and ``notes`` says so."""
    keys: set[str] = set()
    for d in finished_parts(root):
        reason = check_part(d)
        if reason is not None:
            shutil.rmtree(d, ignore_errors=True)
            if notes is not None:
                notes.append(f"{d}: {reason}; removed, its runs run again")
            continue
        keys.update(read_columns(d, "runs")["run_key"])
    return keys


def write_part(root: Path, rows: Rows) -> Path:
    """Write one part (its tables' rows, as :func:`sim.sweep.grid.run_task` returns them) atomically: into
    ``parts/.tmp-*`` first, then a single rename into place."""
    parts = root / PARTS
    name = part_name(r["run_key"] for r in rows["runs"])
    final = parts / name
    tmp = parts / f".tmp-{name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        write_part_tables(tmp, rows)
    except OSError as exc:  # a full disk: free what was written and name the part
        shutil.rmtree(tmp, ignore_errors=True)
        exc.filename = exc.filename or str(final)
        raise
    if final.exists():  # the same runs already finished (cannot happen when planned from the parts)
        shutil.rmtree(tmp)
        return final
    os.replace(tmp, final)
    return final


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_manifest(root: Path, manifest: Mapping[str, Any]) -> None:
    tmp = root / f".{MANIFEST}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, root / MANIFEST)


@dataclass
class SweepOutcome:
    """What a sweep call did: runs in the grid, already finished before, run now, and where."""

    out: Path
    total_runs: int
    skipped: int
    ran: int
    parts_written: int
    seconds: float
    executor: str
    notes: list[str] = field(default_factory=list)


def run_sweep(
    spec: SweepSpec,
    out: str | Path,
    *,
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    logs: bool = False,
) -> SweepOutcome:
    """Run the grid into ``out``, skipping runs already in its parts; returns counts and wall time. With
    ``logs``, each part keeps its runs' logs too (the ``logs`` table: run key, the log as JSON lines), which the
    report's run page then reads instead of replaying the run (``csim run`` keeps them)."""
    with ExitStack() as held:  # the folder's lock, once there is a folder
        return _sweep(spec, Path(out), held, executor, workers, scheduler, progress, logs)


def _sweep(
    spec: SweepSpec,
    root: Path,
    held: ExitStack,
    executor: str,
    workers: int | None,
    scheduler: str | None,
    progress: bool,
    logs: bool,
) -> SweepOutcome:
    ex = ExecutorSpec(executor, workers, scheduler)
    if root.exists():
        held.enter_context(results_lock(root))  # before anything in it is read, removed or written
    locked = root.exists()
    normalised = spec.normalised()
    version = package_version(g.policy for g in spec.policies)
    started = _now()
    if (root / MANIFEST).exists():
        old = read_manifest(root)
        if old.get("kind") != "sweep":
            raise InvalidConfig(f"{root} holds results of another kind ({old.get('kind')!r}); use a new --out")
        if old.get("spec") != json.loads(json.dumps(normalised, default=str)):
            raise InvalidConfig(
                f"{root} holds a different sweep (its manifest's spec differs); use a new --out "
                "directory, or delete the old one to start afresh"
            )
        if old.get("code") != version:
            raise InvalidConfig(
                f"{root} was made by compaction-sim {old.get('code')}, this is {version} (a "
                "different version or edited code): its runs would not be reused; use a new --out"
            )
        started = str(old.get("started") or started)
    parts = root / PARTS
    for stale in parts.glob(".tmp-*"):  # a part a killed sweep did not finish writing
        shutil.rmtree(stale, ignore_errors=True)
    for stale_file in root.glob(f".{MANIFEST}.tmp-*"):  # a manifest a killed sweep did not finish writing
        stale_file.unlink(missing_ok=True)
    notes: list[str] = []
    done = done_run_keys(root, notes)
    for note in notes:
        print(f"sweep: {note}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    tasks, shared, total = plan(spec, done)  # before anything is written: a mistake in the spec leaves no folder
    if logs:
        tasks = [replace(t, logs=True) for t in tasks]
    parts.mkdir(parents=True, exist_ok=True)
    if not locked:
        held.enter_context(results_lock(root))
    manifest = {
        "kind": "sweep",
        "spec": normalised,
        "versions": versions(),
        "code": version,
        "started": started,
        "finished": None,
        "total_runs": total,
    }
    _write_manifest(root, manifest)
    todo = sum(len(t.runs) for t in tasks)
    bar = Progress(total, total - todo, enabled=progress)
    written = 0
    try:
        for rows in run_all(run_task, [(t.unit.key, t) for t in tasks], shared, ex):
            write_part(root, rows)
            written += 1
            bar.advance(len(rows["runs"]))
    finally:
        bar.close()
    manifest["finished"] = _now()
    _write_manifest(root, manifest)
    return SweepOutcome(root, total, total - todo, todo, written, time.perf_counter() - t0, ex.describe(), notes=notes)


class Progress:
    """Runs done of total, rate and time left: a tqdm bar on a terminal, a plain line every 5% otherwise."""

    def __init__(self, total: int, already: int, enabled: bool = True, stream: Any = None) -> None:
        self.total, self.done, self.start_done = total, already, already
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()
        self.bar: Any = None
        self.last_step = -1
        self.enabled = enabled and total > 0
        if self.enabled and self.stream.isatty():
            from tqdm import tqdm  # only on a terminal: tqdm costs start-up time

            self.bar = tqdm(total=total, initial=already, unit="run", desc="sweep", file=self.stream)
        elif self.enabled and already:
            print(f"sweep: {already}/{total} runs already done", file=self.stream, flush=True)

    def advance(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(n)
            return
        step = self.done * 20 // self.total
        if step != self.last_step:
            self.last_step = step
            elapsed = time.perf_counter() - self.t0
            rate = (self.done - self.start_done) / elapsed if elapsed > 0 else 0.0
            left = (self.total - self.done) / rate if rate > 0 else 0.0
            print(
                f"sweep: {self.done}/{self.total} runs done, {rate:.1f} runs/s, ~{left:.0f} s left",
                file=self.stream,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


__all__ = ["Progress", "SweepOutcome", "done_run_keys", "run_sweep", "write_part"]
