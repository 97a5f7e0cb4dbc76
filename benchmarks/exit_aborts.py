"""How often a short ``csim run`` dies at exit on a busy machine: aborts out of N.

Issue 33 saw two of about 175 runs of ``csim run --policy cloudflare-os --scenario … --seed 7`` end with
``terminate called without an active exception`` and exit status 134 after all their work was written: a
native thread still alive while the interpreter tore itself down. This loop runs the same short command N times,
each into a fresh output folder, beside a CPU hog (a niced ``while True: pass`` per core, unless ``--no-hog``) so
that threads are descheduled at the worst moments, and counts the outcomes: exit 0, abort (exit 134 or SIGABRT, or
``terminate called`` on stderr), or another failure. It stops the hogs itself and deletes its folders.

    nice -n 19 python benchmarks/exit_aborts.py --runs 500 [--hogs N | --no-hog]

Prints one line every 50 runs and a closing line ``aborts: A of N (other failures: F)``; exits 1 when A or F is
not 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = [sys.executable, "-m", "sim", "run", "--policy", "cloudflare-os", "--scenario", "coding-agent"]
HOG = "while True: pass"
#: As a user's install runs: with bytecode caches (``PYTHONDONTWRITEBYTECODE``, set on the project's machines,
#: would make every run compile each module of ours from source first).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def start_hogs(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` busy loops at the lowest priority: they take every idle cycle without starving the runs."""
    return [subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", HOG]) for _ in range(n)]


def one_run(out: Path, seed: int) -> tuple[str, int, str]:
    env = {**ENV, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [*COMMAND, "--seed", str(seed), "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    aborted = proc.returncode in (134, -signal.SIGABRT) or "terminate called" in proc.stderr
    kind = "abort" if aborted else "ok" if proc.returncode == 0 else "failed"
    return kind, proc.returncode, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--hogs", type=int, default=os.cpu_count() or 1, help="busy loops beside the runs (default: cores)")
    ap.add_argument("--no-hog", action="store_true", help="no busy loops: the quiet-machine baseline")
    args = ap.parse_args()
    # stopped with kill (a background job ignores SIGINT): still stop the hogs and remove the folders
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    hogs = [] if args.no_hog else start_hogs(args.hogs)
    counts = {"ok": 0, "abort": 0, "failed": 0}
    tmp = Path(tempfile.mkdtemp(prefix="csim-exit-aborts-"))
    t0 = time.monotonic()
    try:
        for i in range(args.runs):
            out = tmp / f"run{i}"
            kind, code, last = one_run(out, seed=7)
            shutil.rmtree(out, ignore_errors=True)
            counts[kind] += 1
            if kind != "ok":
                print(f"run {i + 1}: {kind}, exit {code}: {last}", flush=True)
            if (i + 1) % 50 == 0:
                print(f"{i + 1}/{args.runs} runs: {counts} ({time.monotonic() - t0:.0f} s)", flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    hog = "no CPU hog" if args.no_hog else f"{len(hogs)} niced CPU hog{'s' if len(hogs) != 1 else ''}"
    print(f"aborts: {counts['abort']} of {args.runs} (other failures: {counts['failed']}; {hog})")
    return 1 if counts["abort"] or counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
