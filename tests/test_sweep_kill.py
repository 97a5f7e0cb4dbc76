"""A sweep killed with SIGKILL at several points, then run again, ends complete: every run exactly once,
and the same results as a sweep that was never interrupted."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from sim.sweep.driver import run_sweep
from sim.sweep.grid import plan
from sim.sweep.parts import TABLES, finished_parts
from sim.sweep.results import load_results
from sim.sweep.spec import load_spec

SPEC = """
[sweep]
seeds = "0-5"
[run]
window = 12000
[[policies]]
policy = "none"
[[policies]]
policy = "cloudflare-os"
params = { trigger_ratio = 0.5 }
[[scenarios]]
name = "coding-agent"
params = { turns = 14, huge_prob = 0 }
"""
TASKS = 6  # one per seed; two runs each


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, engine="pyarrow")
    return buf.getvalue()


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    f = tmp_path_factory.mktemp("spec") / "kill.toml"
    f.write_text(SPEC)
    return f


@pytest.fixture(scope="module")
def reference(spec_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "r"
    run_sweep(load_spec(spec_file), out, workers=1, progress=False)
    return out


def kill_after(spec_file: Path, out: Path, parts: int, workers: int) -> bool:
    """Start ``csim sweep`` and SIGKILL it (and its workers) once ``parts`` parts exist; True if it was
    killed before it finished by itself."""
    csim = Path(sys.executable).with_name("csim")
    proc = subprocess.Popen(
        [str(csim), "sweep", str(spec_file), "--out", str(out), "--workers", str(workers), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while proc.poll() is None:
            started = (out / "manifest.json").exists()
            if started and len(finished_parts(out)) >= parts:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
        return proc.wait(timeout=120) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize(("parts", "workers"), [(0, 1), (2, 1), (4, 2)])
def test_killed_sweep_resumes_to_the_same_results(
    spec_file: Path, reference: Path, tmp_path: Path, parts: int, workers: int
) -> None:
    out = tmp_path / "r"
    killed = kill_after(spec_file, out, parts, workers)
    assert killed, "the sweep finished before it could be killed; make the grid larger"
    before = len(finished_parts(out))
    assert parts <= before < TASKS
    resumed = run_sweep(load_spec(spec_file), out, workers=1, progress=False)
    assert resumed.skipped == 2 * before and resumed.ran == 2 * (TASKS - before)
    expected_keys = {r.run_key for t in plan(load_spec(spec_file))[0] for r in t.runs}
    got, want = load_results(out), load_results(reference)
    assert got.runs["run_key"].is_unique and set(got.runs["run_key"]) == expected_keys
    assert not list((out / "parts").glob(".tmp-*"))
    for name in TABLES:
        assert parquet_bytes(getattr(got, name)) == parquet_bytes(getattr(want, name)), name


def test_a_half_written_part_is_discarded(spec_file: Path, reference: Path, tmp_path: Path) -> None:
    """What a kill during a part's write leaves (a temporary directory) is removed and its runs redone."""
    out = tmp_path / "r"
    run_sweep(load_spec(spec_file), out, workers=1, progress=False)
    victim = finished_parts(out)[0]
    victim.rename(victim.with_name(f".tmp-{victim.name}-12345"))
    (victim.with_name(f".tmp-{victim.name}-12345") / "runs.json.gz").write_bytes(b"truncated")
    resumed = run_sweep(load_spec(spec_file), out, workers=1, progress=False)
    assert resumed.ran == 2 and resumed.parts_written == 1
    assert parquet_bytes(load_results(out).requests) == parquet_bytes(load_results(reference).requests)


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(x) for x in (task / "children").read_text().split())
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc to find the workers")
def test_pool_workers_end_when_the_sweep_is_killed(tmp_path: Path) -> None:
    """kill -9 of the sweep alone (not its process group): its workers and resource tracker follow it."""
    spec = tmp_path / "long.toml"
    spec.write_text(SPEC.replace('seeds = "0-5"', 'seeds = "0-11"').replace("turns = 14", "turns = 40"))
    csim = Path(sys.executable).with_name("csim")
    proc = subprocess.Popen(
        [str(csim), "sweep", str(spec), "--out", str(tmp_path / "r"), "--workers", "2", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    kids: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and len(kids) < 3 and time.monotonic() < deadline:  # two workers and the tracker
            kids = _children(proc.pid)
            time.sleep(0.02)
        assert len(kids) >= 3, "the pool did not start"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_running(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [k for k in kids if _running(k)], "processes left behind by the killed sweep"
    finally:
        for k in kids:
            if _running(k):
                os.kill(k, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
