"""Fast at the user's scale: each figure as a ratio to its floor, in one run, written with the commit.

Four figures (issue 31), each two commands timed as whole processes, in turn (A B A B ...) after one warm-up
each, so a shared machine's drifting speed moves both sides of a pair alike; the figure is the median over the
pairs of A/B, in CPU seconds (user + system, the operating system's own accounting of each finished process,
``os.wait4``), wall seconds beside it:

- ``replay``: ``csim run --policy none`` on the largest shared Claude Code recording, against its floor,
  ``benchmarks/floor.py`` (read the recording, count each distinct text once with tiktoken, encoder load
  included). Bar: 1.5.
- ``calibrate``: ``csim calibrate`` on 10, 40 and 150 generated mini-swe-agent trajectories with usage
  (``benchmarks/recordings.py``: the shared recordings hold a handful of sessions), against ``csim import`` of the
  same folder; and the growth of calibrate's time from 40 to 150 conversations (3.75 times as many), with its
  exponent. Bars: 3 at 150; growth at most 4.5.
- ``check``: what ``csim check`` does for one example (its per-example replay with deep checks, the lockstep
  comparison and the purity probe: ``sim.replay.checker._replay``) on generated conversations of about 50 and
  about 200 messages, timed inside one process per length; the figure is the ratio of the times per example
  against the ratio of the lengths (linear: 1.0; the exponent beside it).
- ``sweep``: ``csim sweep`` of the 38 shared token traces (``kv-cache-traces``, format ``kv-trace``) under five
  policies, against the same sweep under one (``none``). Bar: none stated; lockstep keeps it low.

The commands run with this tree first on ``PYTHONPATH`` and with bytecode caching on (as an installed package
has it: ``PYTHONDONTWRITEBYTECODE`` is dropped, the warm-up writes the cache). Results are printed and written to
``benchmarks/results/scale-<commit>.json`` (``--no-write``: printed only). Nothing here is a test: tests do not
time things.

    python benchmarks/bench_scale.py [--runs 5] [--only replay,calibrate,check,sweep] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")
PYTHON = sys.executable
BARS = {"replay": 1.5, "calibrate": 3.0, "calibrate_growth": 4.5}
SWEEP_POLICIES = ("none", "sliding-window", "claude-code", "codex", "openhands-default")

Command = Callable[[], list[str]]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def timed(argv: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system, from the kernel's accounting of the finished process) and wall seconds."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if status != 0:
        raise SystemExit(f"{' '.join(argv)} failed (status {status}):\n{err[-3000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def paired(a: Command, b: Command, runs: int) -> dict[str, Any]:
    """``a`` and ``b`` in turn, ``runs`` counted pairs after one warm-up of each: medians and ratios."""
    timed(a())
    timed(b())
    pairs = [(timed(a()), timed(b())) for _ in range(runs)]
    cpu_a, cpu_b = [p[0][0] for p in pairs], [p[1][0] for p in pairs]
    wall_a, wall_b = [p[0][1] for p in pairs], [p[1][1] for p in pairs]
    return {
        "runs": runs,
        "a_cpu_s": statistics.median(cpu_a),
        "b_cpu_s": statistics.median(cpu_b),
        "a_wall_s": statistics.median(wall_a),
        "b_wall_s": statistics.median(wall_b),
        "ratio_cpu": statistics.median(x / y for x, y in zip(cpu_a, cpu_b, strict=True)),
        "ratio_wall": statistics.median(x / y for x, y in zip(wall_a, wall_b, strict=True)),
        "ratio_cpu_range": [
            min(x / y for x, y in zip(cpu_a, cpu_b, strict=True)),
            max(x / y for x, y in zip(cpu_a, cpu_b, strict=True)),
        ],
    }


def _fresh(tmp: Path, name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp))


def csim(*args: str) -> list[str]:
    return [PYTHON, "-m", "sim", *args]


# -- the figures ------------------------------------------------------------------------------------------
def replay(tmp: Path, runs: int) -> dict[str, Any]:
    folder = RECORDED / "claude-code"
    if not folder.is_dir():
        return {"skipped": f"no shared Claude Code recordings at {folder}"}
    largest = max(folder.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    got = paired(
        lambda: csim(
            "run",
            "--policy",
            "none",
            "--conversation",
            str(largest),
            "--format",
            "claude-code",
            "--out",
            str(_fresh(tmp, "run")),
        ),
        lambda: [PYTHON, str(ROOT / "benchmarks" / "floor.py"), str(largest)],
        runs,
    )
    return {"recording": largest.name, "bytes": largest.stat().st_size, "bar": BARS["replay"], **got}


def calibrate(tmp: Path, runs: int, sizes: Sequence[int] = (10, 40, 150)) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from recordings import write_trajectories

    out: dict[str, Any] = {"bar": BARS["calibrate"], "growth_bar": BARS["calibrate_growth"]}
    for n in sizes:
        folder = tmp / f"trajectories-{n}"
        write_trajectories(folder, n)
        out[str(n)] = paired(
            lambda folder=folder: csim("calibrate", str(folder), "--format", "mini-swe-agent"),
            lambda folder=folder: csim(
                "import", str(folder), "--format", "mini-swe-agent", "--out", str(_fresh(tmp, "import"))
            ),
            runs,
        )
    lo, hi = str(sizes[-2]), str(sizes[-1])
    growth = out[hi]["a_cpu_s"] / out[lo]["a_cpu_s"]
    out["growth"] = {
        "from": int(lo),
        "to": int(hi),
        "calibrate_ratio": growth,
        "calibrate_exponent": math.log(growth) / math.log(int(hi) / int(lo)),
        "import_ratio": out[hi]["b_cpu_s"] / out[lo]["b_cpu_s"],
    }
    return out


def check(tmp: Path, runs: int, lengths: Sequence[int] = (50, 200), examples: int = 12) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in lengths:
        argv = [PYTHON, str(Path(__file__).resolve()), "--check-child", str(n), str(examples)]
        per = []
        for _ in range(runs):
            done = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=ROOT, check=True)
            per.append(json.loads(done.stdout.strip().splitlines()[-1]))
        out[str(n)] = {
            "messages_mean": per[0]["messages_mean"],
            "examples": examples,
            "seconds_per_example": statistics.median(p["seconds_per_example"] for p in per),
            "runs": runs,
        }
    a, b = out[str(lengths[0])], out[str(lengths[-1])]
    length_ratio = b["messages_mean"] / a["messages_mean"]
    time_ratio = b["seconds_per_example"] / a["seconds_per_example"]
    out["growth"] = {
        "length_ratio": length_ratio,
        "time_ratio": time_ratio,
        "ratio_to_linear": time_ratio / length_ratio,
        "exponent": math.log(time_ratio) / math.log(length_ratio),
    }
    return out


def check_child(n: int, examples: int) -> None:
    """One process of ``check``: ``examples`` conversations of about ``n`` messages (the check's own generator,
    fed seeded draws), each taken through the check's per-example work; CPU seconds per example."""
    import numpy as np

    from policies import load_policy_class
    from sim.core.config import RunConfig
    from sim.replay import checker, strategies

    window = 8_000
    cls = load_policy_class("sliding-window")
    params, _ = checker.effective_params(cls, {}, window)
    config = RunConfig(model=strategies.small_model(window), deep_checks=True, seed=0, tokenizer="cl100k_base")
    convs = [_conversation(np.random.default_rng([n, i]), n, window) for i in range(examples + 1)]
    from collections import Counter

    checker._replay(cls, params, convs[0], config, cls.known_deviations, Counter())  # warm-up: imports, encoder
    t0 = time.process_time()
    for conv in convs[1:]:
        checker._replay(cls, params, conv, config, cls.known_deviations, Counter())
    per = (time.process_time() - t0) / examples
    mean = sum(len(c.messages) for c in convs[1:]) / examples
    print(json.dumps({"seconds_per_example": per, "messages_mean": mean}))


def _conversation(rng: Any, n: int, window: int) -> Any:
    """The longest run of generated turns whose conversation has at most ``n`` messages (the check's generator,
    :func:`sim.replay.strategies.build_conversation`, decoding draws in the ranges of its strategy)."""
    from sim.replay import strategies

    def turn() -> Any:
        steps = [
            (int(rng.integers(0, 601 * 24)), [int(x) for x in rng.integers(0, 8 * 1001, size=int(rng.integers(1, 5)))])
            for _ in range(int(rng.integers(0, 5)))
        ]
        return strategies._decode_turn(
            (int(rng.integers(0, 1001 * 192)), steps, int(rng.integers(0, 301 * 5400))), window
        )

    system, turns = int(rng.integers(1, 400)), []
    best = strategies.build_conversation(system, [turn()], window)
    while True:
        turns.append(turn())
        conv = strategies.build_conversation(system, turns, window)
        if len(conv.messages) > n:
            return best
        best = conv


def sweep(tmp: Path, runs: int) -> dict[str, Any]:
    traces = RECORDED / "kv-cache-traces"
    if not traces.is_dir():
        return {"skipped": f"no shared token traces at {traces}"}

    def spec(policies: Sequence[str]) -> Path:
        path = tmp / f"kv-{len(policies)}.toml"
        body = [f'[sweep]\nname = "kv-{len(policies)}"\nseeds = "0"\n']
        body += [f'[[policies]]\npolicy = "{p}"\n' for p in policies]
        body.append(f'[[conversations]]\npath = "{traces}"\nformat = "kv-trace"\n')
        path.write_text("\n".join(body), encoding="utf-8")
        return path

    five, one = spec(SWEEP_POLICIES), spec(SWEEP_POLICIES[:1])
    got = paired(
        lambda: csim("sweep", str(five), "--out", str(_fresh(tmp, "sweep5")), "--workers", "1"),
        lambda: csim("sweep", str(one), "--out", str(_fresh(tmp, "sweep1")), "--workers", "1"),
        runs,
    )
    return {
        "traces": len(list(traces.glob("*.json"))),
        "policies": list(SWEEP_POLICIES),
        "one": SWEEP_POLICIES[0],
        **got,
    }


FIGURES: dict[str, Callable[[Path, int], dict[str, Any]]] = {
    "replay": replay,
    "calibrate": calibrate,
    "check": check,
    "sweep": sweep,
}


def render(results: dict[str, Any]) -> list[str]:
    lines = [f"commit {results['commit']}, {results['machine']}"]
    r = results["figures"]
    if "replay" in r and "skipped" not in r["replay"]:
        x = r["replay"]
        lines.append(
            f"replay: csim run --policy none on {x['recording']} ({x['bytes']:,} bytes) / floor: "
            f"{x['ratio_cpu']:.2f} CPU ({x['a_cpu_s']:.2f} s / {x['b_cpu_s']:.2f} s), {x['ratio_wall']:.2f} wall; "
            f"bar {x['bar']}"
        )
    if "calibrate" in r:
        x = r["calibrate"]
        for n in (k for k in x if k.isdigit()):
            y = x[n]
            lines.append(
                f"calibrate {n:>3} conversations / import: {y['ratio_cpu']:.2f} CPU ({y['a_cpu_s']:.2f} s / "
                f"{y['b_cpu_s']:.2f} s), {y['ratio_wall']:.2f} wall" + (f"; bar {x['bar']}" if n == "150" else "")
            )
        g = x["growth"]
        lines.append(
            f"calibrate growth {g['from']} -> {g['to']} conversations: {g['calibrate_ratio']:.2f} "
            f"(exponent {g['calibrate_exponent']:.2f}; import {g['import_ratio']:.2f}); bar {x['growth_bar']}"
        )
    if "check" in r:
        x = r["check"]
        for n in (k for k in x if k.isdigit()):
            lines.append(
                f"check, {x[n]['messages_mean']:.0f} messages: {x[n]['seconds_per_example'] * 1e3:.1f} ms per example"
            )
        g = x["growth"]
        lines.append(
            f"check growth: {g['time_ratio']:.2f} x the time for {g['length_ratio']:.2f} x the messages: "
            f"{g['ratio_to_linear']:.2f} of linear (exponent {g['exponent']:.2f})"
        )
    if "sweep" in r and "skipped" not in r["sweep"]:
        x = r["sweep"]
        lines.append(
            f"sweep of {x['traces']} token traces, {len(x['policies'])} policies / {x['one']} alone: "
            f"{x['ratio_cpu']:.2f} CPU ({x['a_cpu_s']:.2f} s / {x['b_cpu_s']:.2f} s), {x['ratio_wall']:.2f} wall"
        )
    for name, x in r.items():
        if "skipped" in x:
            lines.append(f"{name}: skipped: {x['skipped']}")
    return lines


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "sim", "policies"], capture_output=True, text=True, cwd=ROOT
        )
        return head.stdout.strip() + ("+edited" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="counted pairs of each figure (default 5)")
    ap.add_argument("--only", default=",".join(FIGURES), help="figures to measure, comma-separated")
    ap.add_argument("--no-write", action="store_true", help="print only; write nothing to benchmarks/results/")
    ap.add_argument("--check-child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.check_child:
        check_child(*args.check_child)
        return 0
    wanted = [f.strip() for f in args.only.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FIGURES]
    if unknown:
        raise SystemExit(f"--only: unknown figures {unknown}; known: {', '.join(FIGURES)}")
    commit = _commit()
    results: dict[str, Any] = {
        "commit": commit,
        "machine": f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
        "figures": {},
    }
    print(render(results)[0], flush=True)
    with tempfile.TemporaryDirectory(prefix="csim-bench-") as tmp:
        for name in wanted:
            results["figures"][name] = FIGURES[name](Path(tmp), args.runs)
            for line in render({**results, "figures": {name: results["figures"][name]}})[1:]:
                print(line, flush=True)
    if not args.no_write:
        out = ROOT / "benchmarks" / "results" / f"scale-{commit[:12]}.json"
        out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
