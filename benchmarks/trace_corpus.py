"""The whole token-trace corpus replayed as an ordinary sweep: requests per second and peak memory (issue 30).

Runs ``csim sweep datasets/sweeps/kv-traces.toml`` (every shared trace under five policies) as a whole process,
into a fresh folder each time, ``--runs`` times, and prints per run the wall and CPU seconds (the operating
system's accounting of the finished process, ``os.wait4``), the agent requests replayed (from the results'
``runs`` table), requests per CPU second and the peak resident memory of the process and its workers.

    python benchmarks/trace_corpus.py [--runs 3] [--workers 2]

Nothing here is a test: tests do not time things.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "datasets" / "sweeps" / "kv-traces.toml"


def _one(out: Path, workers: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system, children included) and peak RSS in KiB of one sweep."""
    csim = Path(sys.executable).with_name("csim")
    cmd = [str(csim), "sweep", str(SPEC), "--out", str(out), "--workers", str(workers), "--quiet"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from sim import api

    rows = []
    for k in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "kv"
            wall, cpu, rss = _one(out, args.workers)
            runs = api.load(out).runs
            requests = int(runs["agent_requests"].sum())
            rows.append((wall, cpu, rss, requests, len(runs)))
            print(
                f"run {k + 1}: {len(runs)} runs, {requests:,} agent requests; {wall:.1f} s wall, {cpu:.1f} s CPU, "
                f"{requests / cpu:,.0f} requests per CPU second; peak memory {rss / 1024:,.0f} MiB (largest process)"
            )
    cpu = statistics.median(r[1] for r in rows)
    print(
        f"median over {len(rows)}: {statistics.median(r[0] for r in rows):.1f} s wall, {cpu:.1f} s CPU, "
        f"{rows[0][3] / cpu:,.0f} requests per CPU second, peak {max(r[2] for r in rows) / 1024:,.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
