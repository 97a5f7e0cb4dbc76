"""Run ``csim check`` for every bundled policy at a chosen number of examples, in parallel.

Not part of ``make test``: a long run for the figures in issue 12 ("fuzzing at the scale we promise").
Each policy is checked in its own process (``csim check --policy NAME --examples N``, the command a user runs),
``--jobs`` at a time; a policy still running after ``--timeout`` seconds is stopped and counted as ``timeout``.
Prints one line per policy as it finishes (outcome, the examples Hypothesis ran, seconds, and the first line of
a failure) and then the counts by outcome: ``pass``, ``fail`` (a counterexample: the policy broke an invariant
it does not declare, or raised), ``error`` (the command itself failed) and ``timeout``.

    python benchmarks/check_policies.py --examples 10000 --jobs 2 [--policy NAME ...] [--window 8000]

At 10,000 examples a policy takes 20 minutes to hours, so a full pass is longer than one sitting: with
``--record FILE`` each finished policy is appended to FILE as one JSON line (the policy, outcome, examples,
window, seconds, the commit its process imported, ``+`` when ``sim/`` or ``policies/`` differed from it, and what
it printed), a later run with the same FILE skips the policies it
already holds at the same examples and window, and the counts cover them all.
"""

from __future__ import annotations

import argparse
import json
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


def head() -> str:
    """The commit checked out now, with ``+`` when the working tree differs from it (a check imports the tree)."""
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", "sim", "policies"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout
    return rev.strip() + ("+" if dirty.strip() else "")


def check(name: str, examples: int, window: int, timeout: float) -> tuple[str, str, float, str, str]:
    """(policy, outcome, seconds, what it printed that matters, the commit its process imported)."""
    commit = head()
    t0 = time.perf_counter()
    cmd = [*CSIM, "check", "--policy", name, "--examples", str(examples), "--window", str(window)]
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return name, "timeout", time.perf_counter() - t0, "", commit
    took = time.perf_counter() - t0
    text = proc.stdout
    verdict = next((line for line in text.splitlines() if line.startswith(("PASS ", "FAIL "))), None)
    if verdict is None:
        return name, "error", took, (proc.stderr.strip().splitlines() or ["no output"])[-1], commit
    if verdict.startswith("PASS "):
        return name, "pass", took, verdict, commit
    return name, "fail", took, text, commit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=500)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--window", type=int, default=8000)
    ap.add_argument("--timeout", type=float, default=6 * 3600.0, help="seconds per policy")
    ap.add_argument("--policy", action="append", help="only these (repeatable); default: every bundled policy")
    ap.add_argument("--record", type=Path, help="JSONL of finished policies: appended to, and those in it skipped")
    args = ap.parse_args()
    names = args.policy or policies()
    done: dict[str, dict[str, object]] = {}
    if args.record is not None and args.record.exists():
        for line in args.record.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec["examples"] == args.examples and rec["window"] == args.window and rec["policy"] in names:
                done[rec["policy"]] = rec
    todo = [n for n in names if n not in done]
    print(
        f"csim check --examples {args.examples} --window {args.window}: {len(names)} policies "
        f"({len(done)} already in {args.record}), {args.jobs} at a time"
    )
    t0 = time.perf_counter()
    outcomes: Counter[str] = Counter(str(rec["outcome"]) for rec in done.values())
    failures = [f"--- {n} ({rec['outcome']})\n{rec['text']}" for n, rec in done.items() if rec["outcome"] != "pass"]
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(check, n, args.examples, args.window, args.timeout) for n in todo]
        for fut in as_completed(futures):
            name, outcome, took, text, commit = fut.result()
            outcomes[outcome] += 1
            first = text.splitlines()[0] if text else ""
            ran = re.search(r"(\d+) examples", first)
            print(f"  {outcome:7} {name:28} {took:7.0f} s  {ran.group(1) + ' examples' if ran else ''}", flush=True)
            if outcome != "pass":
                failures.append(f"--- {name} ({outcome})\n{text}")
            if args.record is not None:
                rec = {"policy": name, "outcome": outcome, "examples": args.examples, "window": args.window}
                rec |= {"seconds": round(took, 1), "commit": commit, "text": text}
                with args.record.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(rec) + "\n")
    print(
        f"{len(names)} policies ({len(todo)} run now) in {time.perf_counter() - t0:.0f} s: "
        + ", ".join(f"{k} {outcomes.get(k, 0)}" for k in ("pass", "fail", "error", "timeout"))
    )
    for f in failures:
        print(f)


if __name__ == "__main__":
    main()
