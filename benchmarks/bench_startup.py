"""Start-up time of the command line: ``csim --help`` and ``csim list policies``.

Both should answer in well under 0.3 s on the project's 2-core machine: they import no pandas, numpy,
pyarrow or matplotlib (``tests/test_layout.py`` holds them to that), only argparse, the config schema and,
for ``list policies``, the policies. This prints, per command, the median and best wall time of fresh
processes, next to a bare ``python -c pass`` (the interpreter's own start-up, which no change of ours moves).

Measured as a user's install runs: with bytecode caches. ``PYTHONDONTWRITEBYTECODE`` (set on the project's
machines) is left out of the children's environment and one untimed round writes the caches first;
otherwise every run would also compile each imported module from source, a cost no installed copy pays.

    python benchmarks/bench_startup.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CSIM = [sys.executable, "-m", "sim.cli.main"]
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "csim --help": [*CSIM, "--help"],
    "csim list policies": [*CSIM, "list", "policies"],
}


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[1], env=ENV)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for cmd in COMMANDS.values():  # untimed: writes the bytecode caches
        wall(cmd)
    for _ in range(args.repeat):  # interleaved, so a slow spell of the machine hits every command alike
        for name, cmd in COMMANDS.items():
            times[name].append(wall(cmd))
    base = statistics.median(times["python -c pass"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<22} median {med:.3f} s  best {min(ts):.3f} s  ({med - base:+.3f} s over the interpreter)")
    worst = max(statistics.median(times[n]) for n in COMMANDS if n.startswith("csim"))
    print(f"slowest csim command: {worst:.3f} s median (bar: 0.3 s) -> {'ok' if worst < 0.3 else 'OVER'}")


if __name__ == "__main__":
    main()
