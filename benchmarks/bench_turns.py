"""Turns per second at 250, 500, 1,000 and 2,000 turns, per bundled policy.

Prints, for each policy, the replay rate at each length (the best of ``--repeat`` runs) and the ratio
of the per-turn cost at the longest length to that at the shortest. A ratio near 1 means a turn costs
O(new messages); the project's bar is at most 1.5. Token counts are warmed first (one untimed run), so
the numbers measure the engine and the policy, not tiktoken. Times are CPU time with the garbage
collector paused; each repeat runs every length in turn, and the ratio is the median over repeats of
that repeat's own ratio, because a shared machine's CPU speed drifts by tens of percent within seconds.

    python benchmarks/bench_turns.py [--scenario research-agent] [--repeat 5] [--model gpt-4o --provider openai]

``--model`` (with ``--provider``, the price table's) replays as that model, so its provider's prompt cache bills
each request: OpenAI's automatic prefix cache before GPT-5.6, Anthropic's breakpoints by default.
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import time
from collections.abc import Callable

from policies import POLICIES, make_policy
from sim.core.model import ModelConfig
from sim.core.tokenizers import get_tokenizer
from sim.replay.engine import RunConfig, run
from sim.scenarios import scenario_conversation

LENGTHS = (250, 500, 1000, 2000)


def params_for(name: str, window: int) -> dict[str, str]:
    return {"context_token_limit": str(int(window * 0.75))} if name == "effect-agent" else {}


def cpu_seconds(work: Callable[[], object]) -> float:
    """CPU time of ``work()`` with the garbage collector paused (as timeit does)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        work()
        return time.process_time() - t0
    finally:
        gc.enable()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="research-agent")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tokenizer", default="cl100k_base")
    ap.add_argument("--policies", nargs="*", default=None)
    ap.add_argument("--model", default=None, help="a model of the price table (default: the engine's)")
    ap.add_argument("--provider", default="anthropic", help="its provider in the price table")
    args = ap.parse_args()
    model = ModelConfig(name=args.model, price_provider=args.provider) if args.model else ModelConfig()
    config = RunConfig(tokenizer=args.tokenizer, model=model)
    tok = get_tokenizer(args.tokenizer)
    convs = {n: scenario_conversation(args.scenario, 0, {"turns": str(n)}) for n in LENGTHS}
    names = args.policies or POLICIES.names()
    model_name = args.model or "default"
    print(f"scenario {args.scenario}, tokenizer {args.tokenizer}, model {model_name}, {args.repeat} repeats")
    print(f"{'policy':<16}" + "".join(f"{n:>12,}" for n in LENGTHS) + f"{'ratio':>9}  finish at {LENGTHS[-1]:,}")
    worst = 0.0
    for name in names:
        policy = make_policy(name, params_for(name, config.model.context_window))
        requests: dict[int, int] = {}
        finish = ""
        for n, conv in convs.items():  # warm the token memo
            result = run(policy, conv, config, tokenizer=tok)
            requests[n] = max(result.summary["agent_requests"], 1)
            finish = f"{result.summary['finish_reason']} after {requests[n]:,} requests"
        per_turn: dict[int, list[float]] = {n: [] for n in LENGTHS}
        for _ in range(args.repeat):
            for n, conv in convs.items():
                replay = functools.partial(run, policy, conv, config, tokenizer=tok)
                per_turn[n].append(cpu_seconds(replay) / requests[n])
        ratio = statistics.median(b / a for a, b in zip(per_turn[LENGTHS[0]], per_turn[LENGTHS[-1]], strict=True))
        worst = max(worst, ratio)
        print(
            f"{name:<16}" + "".join(f"{1 / min(per_turn[n]):>10,.0f}/s" for n in LENGTHS) + f"{ratio:>9.2f}  {finish}"
        )
    print(f"worst median per-turn cost ratio {LENGTHS[-1]:,} vs {LENGTHS[0]:,} turns: {worst:.2f} (bar: 1.5)")


if __name__ == "__main__":
    main()
