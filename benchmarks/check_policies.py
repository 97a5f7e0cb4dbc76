"""Run ``csim check`` for every bundled policy at a chosen number of examples, in parallel.

Not part of ``make test``: a long run for the figures in issue 12 ("fuzzing at the scale we promise").
Each policy is checked in its own process (``csim check --policy NAME --examples N``, the command a user runs),
``--jobs`` at a time; a policy still running after ``--timeout`` seconds is stopped and counted as ``timeout``.
Prints one line per policy as it finishes (outcome, the examples Hypothesis ran, seconds, and the first line of
a failure) and then the counts by outcome: ``pass``, ``fail`` (a counterexample: the policy broke an invariant
it does not declare, or raised), ``error`` (the command itself failed) and ``timeout``.

    python benchmarks/check_policies.py --examples 10000 --jobs 2 [--policy NAME ...] [--window 8000]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CSIM = [sys.executable, "-m", "sim.cli.main"]


def policies() -> list[str]:
    out = subprocess.run([*CSIM, "list", "policies"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def check(name: str, examples: int, window: int, timeout: float) -> tuple[str, str, float, str]:
    """(policy, outcome, seconds, what it printed that matters)."""
    t0 = time.perf_counter()
    cmd = [*CSIM, "check", "--policy", name, "--examples", str(examples), "--window", str(window)]
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return name, "timeout", time.perf_counter() - t0, ""
    took = time.perf_counter() - t0
    text = proc.stdout
    verdict = next((line for line in text.splitlines() if line.startswith(("PASS ", "FAIL "))), None)
    if verdict is None:
        return name, "error", took, (proc.stderr.strip().splitlines() or ["no output"])[-1]
    if verdict.startswith("PASS "):
        return name, "pass", took, verdict
    return name, "fail", took, text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=500)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--window", type=int, default=8000)
    ap.add_argument("--timeout", type=float, default=6 * 3600.0, help="seconds per policy")
    ap.add_argument("--policy", action="append", help="only these (repeatable); default: every bundled policy")
    args = ap.parse_args()
    names = args.policy or policies()
    print(f"csim check --examples {args.examples} --window {args.window}: {len(names)} policies, {args.jobs} at a time")
    t0 = time.perf_counter()
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(check, n, args.examples, args.window, args.timeout) for n in names]
        for fut in as_completed(futures):
            name, outcome, took, text = fut.result()
            outcomes[outcome] += 1
            first = text.splitlines()[0] if text else ""
            ran = re.search(r"(\d+) examples", first)
            print(f"  {outcome:7} {name:28} {took:7.0f} s  {ran.group(1) + ' examples' if ran else ''}", flush=True)
            if outcome != "pass":
                failures.append(f"--- {name} ({outcome})\n{text}")
    print(
        f"{len(names)} policies in {time.perf_counter() - t0:.0f} s: "
        + ", ".join(f"{k} {outcomes.get(k, 0)}" for k in ("pass", "fail", "error", "timeout"))
    )
    for f in failures:
        print(f)


if __name__ == "__main__":
    main()
