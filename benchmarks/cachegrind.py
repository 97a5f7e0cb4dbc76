"""Counting a command's machine instructions with Valgrind's cachegrind, for the benchmarks.

Instructions do not drift with a shared machine's CPU speed as seconds do, so a ratio of two counts is a
steadier figure than a ratio of two times (the benchmarks print both).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

CACHEGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


def instructions(script: str, *args: str) -> int:
    """Instructions executed by ``python script args...`` under cachegrind."""
    # A fixed hash seed: str hashes, and so dict and set layouts, are otherwise drawn per process, which moves
    # the count by a percent or two from one run to the next.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    cmd = [*CACHEGRIND, sys.executable, script, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if not found:
        raise SystemExit(f"no instruction count in cachegrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))
