"""A sweep of ten configurations over the same conversations, as a ratio to one configuration's run.

What keeps the ratio low: a worker counts each distinct text once, whatever the configuration, and
the configurations of a conversation replay in lockstep while their policies agree
(``sim.replay.lockstep.run_many``), so the nine extra configurations cost only what they do differently: their
compactions, the texts only they create (summaries, bounded results, status lines), and their rows.

Each measurement plans the sweep (generating the conversations) and runs every task in this process,
as one worker does, from empty memos, with the garbage collector paused (as ``timeit`` does); process
start-up and the tokenizer's one-off load are left out of both. The time is CPU time of this process.
One configuration and ten are measured in turn, ``--repeat`` times: the CPU speed of a shared virtual
machine drifts by tens of percent within seconds, so the bar is on the median of the ratios of
adjacent pairs, which the drift moves least; the ratio of the best times is printed too. The bar is
a ratio under 2.

With ``--instructions`` (needs Valgrind), the work is also counted in machine instructions, which do not
drift: three processes under ``valgrind --tool=cachegrind`` (start-up only, one configuration, ten),
each sweep's instructions being its process's minus the start-up's. It takes a few minutes.

    python benchmarks/bench_sweep.py [--scenario coding-agent | --conversation FILE ...] [--seeds 0-5]
                                     [--window 200000] [--repeat 9] [--instructions]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import time

from cachegrind import instructions

from sim.core import tokenizers
from sim.core.config import normalise_run
from sim.core.params import parse_seeds
from sim.sweep.grid import plan, run_task
from sim.sweep.spec import PolicyGrid, Source, SweepSpec

TEN = [
    PolicyGrid("none"),
    PolicyGrid("sliding-window", (("trigger_ratio", ("0.6", "0.75", "0.9")),)),
    PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.6", "0.75", "0.9")),)),
    PolicyGrid("effect-agent", (("context_token_limit", ("20000", "30000", "40000")),)),
]
BAR = 2.0


def spec_of(grids: int, args: argparse.Namespace) -> SweepSpec:
    """The benchmark's sweep over the first ``grids`` entries of TEN (1: ``none`` alone; 4: all ten
    configurations)."""
    sources = tuple(Source("conversation", f) for f in args.conversation) or (Source("scenario", args.scenario),)
    return SweepSpec(
        tuple(TEN[:grids]),
        sources,
        parse_seeds(args.seeds),
        normalise_run({"window": args.window, "tokenizer": args.tokenizer}, "bench"),
    )


def sweep_once(spec: SweepSpec, tokenizer: str) -> tuple[float, int, int]:
    """CPU time of planning and running the sweep from empty memos; runs made and texts counted."""
    tokenizers._SHARED.clear()
    gc.collect()
    gc.disable()  # a collection of the previous measurement's garbage is not this one's work
    try:
        t0 = time.process_time()
        tasks, shared, _ = plan(spec)
        runs = sum(len(run_task(shared[t.unit.key], t)["runs"]) for t in tasks)
        return time.process_time() - t0, runs, tokenizers.get_tokenizer(tokenizer).calls
    finally:
        gc.enable()


def count_instructions(args: argparse.Namespace) -> tuple[int, int, int]:
    """Instructions of three processes under cachegrind: start-up only, one configuration, ten."""
    common = (
        *("--scenario", args.scenario, "--seeds", args.seeds, "--window", str(args.window)),
        *("--tokenizer", args.tokenizer),
        *(a for f in args.conversation for a in ("--conversation", f)),
    )
    first, second, third = (instructions(__file__, "--child", str(g), *common) for g in (0, 1, len(TEN)))
    return first, second, third


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="coding-agent")
    ap.add_argument(
        "--conversation",
        action="append",
        default=[],
        metavar="FILE",
        help="a recorded conversation instead of the scenario (repeatable; format detected)",
    )
    ap.add_argument("--seeds", default="0-5")
    ap.add_argument("--window", type=int, default=200_000)
    ap.add_argument("--tokenizer", default="cl100k_base")
    ap.add_argument("--repeat", type=int, default=9, help="pairs of measurements (default 9)")
    ap.add_argument("--instructions", action="store_true", help="also count instructions with Valgrind")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)  # one process of --instructions
    args = ap.parse_args()
    tokenizers.get_tokenizer(args.tokenizer).count("warm up the encoding")  # load tiktoken outside the timing
    if args.child is not None:
        if args.child:
            sweep_once(spec_of(args.child, args), args.tokenizer)
        return 0

    one_spec, ten_spec = spec_of(1, args), spec_of(len(TEN), args)
    sweep_once(ten_spec, args.tokenizer)  # import and first-call costs, out of every measurement
    ones, tens = [], []
    for _ in range(args.repeat):
        t1, n1, c1 = sweep_once(one_spec, args.tokenizer)
        t10, n10, c10 = sweep_once(ten_spec, args.tokenizer)
        ones.append(t1)
        tens.append(t10)
    ratio = statistics.median(b / a for a, b in zip(ones, tens, strict=True))
    source = f"{len(args.conversation)} recorded conversations" if args.conversation else f"scenario {args.scenario}"
    print(
        f"{source}, seeds {args.seeds}, window {args.window:,}, tokenizer {args.tokenizer}, "
        f"one worker, {args.repeat} pairs, CPU time"
    )
    print(
        f"1 configuration:   {n1:3d} runs, {c1:,} texts counted, best {min(ones):.2f} s, "
        f"median {statistics.median(ones):.2f} s"
    )
    print(
        f"10 configurations: {n10:3d} runs, {c10:,} texts counted, best {min(tens):.2f} s, "
        f"median {statistics.median(tens):.2f} s"
    )
    print(
        f"ratio of the best times {min(tens) / min(ones):.2f}; of each pair: "
        + " ".join(f"{b / a:.2f}" for a, b in zip(ones, tens, strict=True))
    )
    if args.instructions:
        if shutil.which("valgrind") is None:
            print("--instructions: valgrind is not installed; skipped")
        else:
            base, one, ten = count_instructions(args)
            print(
                f"instructions: start-up {base:,}; 1 configuration +{one - base:,}; 10 configurations "
                f"+{ten - base:,}; ratio {(ten - base) / (one - base):.2f}"
            )
    print(f"{'PASS' if ratio < BAR else 'FAIL'}: median ratio {ratio:.2f} {'<' if ratio < BAR else '>='} {BAR}")
    return 0 if ratio < BAR else 1


if __name__ == "__main__":
    sys.exit(main())
