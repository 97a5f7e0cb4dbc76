"""A sweep of ten configurations over the same conversations, as a ratio to one configuration's run.

Counting tokens dominates a run; a sweep counts each distinct text once per worker, so the nine extra
configurations should cost the engine's own work only. Each measurement plans the sweep (generating the
conversations) and runs every task in this process, as one worker does, starting from an empty token
memo; process start-up and the tokenizer's one-off load are left out of both. The bar is a ratio under 2.

    python benchmarks/bench_sweep.py [--scenario coding-agent] [--seeds 0-5] [--tokenizer cl100k_base]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

from sim import tokenizers
from sim.sweep import PolicyGrid, Source, SweepSpec, normalise_run, parse_seeds, plan, run_task

TEN = [PolicyGrid("none"),
       PolicyGrid("sliding-window", (("trigger_ratio", ("0.6", "0.75", "0.9")),)),
       PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.6", "0.75", "0.9")),)),
       PolicyGrid("effect-agent", (("context_token_limit", ("20000", "30000", "40000")),))]
BAR = 2.0


def spec_of(grid: tuple[PolicyGrid, ...], args: argparse.Namespace) -> SweepSpec:
    return SweepSpec(grid, (Source("scenario", args.scenario),), parse_seeds(args.seeds),
                     normalise_run({"window": args.window, "tokenizer": args.tokenizer}, "bench"))


def sweep_once(spec: SweepSpec, tokenizer: str) -> tuple[float, int, int]:
    """CPU time (of this process: the sweep runs in it) of planning and running the sweep from an empty
    memo, so other load on the machine does not enter the ratio; runs and texts counted."""
    tokenizers._SHARED.clear()
    gc.collect()
    gc.disable()  # as timeit does: a collection triggered by the previous measurement's garbage is noise
    try:
        t0 = time.process_time()
        tasks, shared, _ = plan(spec)
        runs = sum(len(run_task(shared[t.unit.key], t)["runs"]) for t in tasks)
        return time.process_time() - t0, runs, tokenizers.get_tokenizer(tokenizer).calls
    finally:
        gc.enable()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="coding-agent")
    ap.add_argument("--seeds", default="0-5")
    ap.add_argument("--window", type=int, default=50_000)
    ap.add_argument("--tokenizer", default="cl100k_base")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    tokenizers.get_tokenizer(args.tokenizer).count("warm up the encoding")  # load tiktoken outside the timing
    # Interleaved, best of each: a slow spell of a shared machine then hits both sides alike.
    specs = spec_of(tuple(TEN[:1]), args), spec_of(tuple(TEN), args)
    one = ten = float("inf")
    for _ in range(args.repeat):
        t1, n1, c1 = sweep_once(specs[0], args.tokenizer)
        t10, n10, c10 = sweep_once(specs[1], args.tokenizer)
        one, ten = min(one, t1), min(ten, t10)
    ratio = ten / one
    print(f"scenario {args.scenario}, seeds {args.seeds}, window {args.window:,}, tokenizer {args.tokenizer}, "
          f"one worker, best of {args.repeat}")
    print(f"1 configuration:  {n1:3d} runs, {c1:,} texts counted, {one:.2f} s")
    print(f"10 configurations: {n10:3d} runs, {c10:,} texts counted, {ten:.2f} s")
    print(f"{'PASS' if ratio < BAR else 'FAIL'}: ratio {ratio:.2f} {'<' if ratio < BAR else '>='} {BAR}")
    return 0 if ratio < BAR else 1


if __name__ == "__main__":
    sys.exit(main())
