"""The engine's cost per request on the demo's grid, to compare two commits.

Why: a change to the engine (or the view it replays) can slow every request a little without
changing what ``bench_turns.py`` (cost flat in the conversation's length) or ``bench_sweep.py`` (ten
configurations vs one) check. This measures the absolute cost: the demo's four policies (none,
sliding-window, cloudflare-os, effect-agent at context_token_limit=150000) on its three scenarios
(coding-agent at 250 turns, research-agent, support-chat), one ``run_many`` per conversation and
seed as a sweep worker does. Token counts are warmed by an untimed pass first (the tokenizer's text
memo is shared by the process), so the numbers are the engine's and the policies' work, not
tiktoken's; the per-object memo (message sizes, renderings) is cleared before each conversation, as
``sim.sweep.grid.run_task`` does. Each pass is CPU time with the garbage collector paused, divided by the
requests made (rows of the results); ``--repeat`` passes, median and best printed.

With ``--instructions`` (needs Valgrind) the pass is also counted in machine instructions, which do
not drift with a shared machine's CPU speed: two processes under ``valgrind --tool=cachegrind``
(warm-up only; warm-up and one pass), the pass being the difference.

To compare two commits, run it in each tree (e.g. a ``git worktree`` of the old commit, with
``PYTHONPATH`` pointing at it), alternating old and new a few times; the ratio is new/old (per
request, median of paired ratios; instructions are steadier). It uses only APIs both sides have.

    python benchmarks/bench_requests.py [--seeds 0-1] [--repeat 5] [--instructions]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import shutil
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from cachegrind import instructions

import sim
from policies import make_policy

# The tree under test may predate sim/'s subpackages (sim.engine, then sim.replay.engine) or lockstep's own
# module. Chosen by the files of the tree on PYTHONPATH, not by try/except ImportError: the editable install
# would otherwise find a module of this checkout and mix the two trees.
_NEW = (Path(sim.__file__).parent / "replay").is_dir()
_mod = {
    name: importlib.import_module(f"sim.{where}.{name}" if _NEW else f"sim.{name}")
    for name, where in (("engine", "replay"), ("tokenizers", "core"))
}
get_tokenizer = _mod["tokenizers"].get_tokenizer
RunConfig = _mod["engine"].RunConfig
# The layering moved scenario_conversation from the runner to sim.scenarios.
_runner = Path(sim.__file__).parent / ("replay/runner.py" if _NEW else "runner.py")
scenario_conversation = importlib.import_module(
    ("sim.replay.runner" if _NEW else "sim.runner") if _runner.exists() else "sim.scenarios"
).scenario_conversation
run_many = (
    getattr(_mod["engine"], "run_many", None)
    or importlib.import_module("sim.replay.lockstep" if _NEW else "sim.lockstep").run_many
)

POLICIES = (
    ("none", {}),
    ("sliding-window", {}),
    ("cloudflare-os", {}),
    ("effect-agent", {"context_token_limit": "150000"}),
)
SCENARIOS = (("coding-agent", {"turns": "250"}), ("research-agent", {}), ("support-chat", {}))


def parse_seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def grid(seeds: list[int]):  # type: ignore[no-untyped-def]
    """(seed, conversation) for every demo scenario and seed, generated once."""
    return [(s, scenario_conversation(name, s, params)) for name, params in SCENARIOS for s in seeds]


def one_pass(convs, config: RunConfig, tokenizer: str) -> int:  # type: ignore[no-untyped-def]
    """Replay every conversation under the four policies; the requests made."""
    tok = get_tokenizer(tokenizer)
    requests = 0
    for seed, conv in convs:
        tok.derived.clear()  # as a sweep task does: per-object values are per conversation
        policies = [make_policy(n, p) for n, p in POLICIES]
        requests += sum(len(r.rows) for r in run_many(policies, conv, replace(config, seed=seed), tokenizer=tok))
    return requests


def timed(convs, config: RunConfig, tokenizer: str) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        n = one_pass(convs, config, tokenizer)
        return time.process_time() - t0, n
    finally:
        gc.enable()


def count_instructions(args: argparse.Namespace) -> tuple[int, int]:
    """Instructions of two processes under cachegrind: warm-up only, and warm-up plus one pass."""
    common = ("--seeds", args.seeds, "--tokenizer", args.tokenizer)
    return instructions(__file__, "--child", "0", *common), instructions(__file__, "--child", "1", *common)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0-1", help="scenario seeds, e.g. 0-1 or 0,2 (default 0-1)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tokenizer", default="cl100k_base")
    ap.add_argument("--instructions", action="store_true", help="also count instructions with Valgrind")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)  # one process of --instructions
    args = ap.parse_args()
    config = RunConfig(tokenizer=args.tokenizer)
    convs = grid(parse_seeds(args.seeds))
    n = one_pass(convs, config, args.tokenizer)  # warm-up: token counts, imports, first calls
    if args.child is not None:
        for _ in range(args.child):
            timed(convs, config, args.tokenizer)
        return 0
    times = []
    for _ in range(args.repeat):
        t, n = timed(convs, config, args.tokenizer)
        times.append(t)
    us = [t / n * 1e6 for t in times]
    print(f"tree {Path(sim.__file__).parent.parent}")
    print(
        f"demo grid: {len(POLICIES)} policies x {len(convs)} conversations (seeds {args.seeds}), "
        f"{n:,} requests per pass, {args.repeat} passes, CPU time"
    )
    print(
        f"per request: median {statistics.median(us):.1f} us, best {min(us):.1f} us; "
        f"passes: " + " ".join(f"{u:.1f}" for u in us)
    )
    if args.instructions:
        if shutil.which("valgrind") is None:
            print("--instructions: valgrind is not installed; skipped")
        else:
            base, one = count_instructions(args)
            print(f"instructions: warm-up {base:,}; one pass +{one - base:,}; per request {(one - base) / n:,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
