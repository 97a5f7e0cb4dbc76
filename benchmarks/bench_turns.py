"""Turns per second at 250, 500, 1,000 and 2,000 turns, per bundled policy.

Prints, for each policy, the replay rate at each length and the ratio of the per-turn cost at the
longest length to that at the shortest. A ratio near 1 means a turn costs O(new messages); the
project's bar is at most 1.5. Token counts are warmed first (one untimed run), so the numbers measure
the engine and the policy, not tiktoken; each figure is the best of ``--repeat`` runs.

    python benchmarks/bench_turns.py [--scenario research-agent] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from policies import POLICIES, make_policy
from sim.engine import RunConfig, run
from sim.runner import scenario_conversation
from sim.tokenizers import get_tokenizer

LENGTHS = (250, 500, 1000, 2000)


def params_for(name: str, window: int) -> dict[str, str]:
    return {"context_token_limit": str(int(window * 0.75))} if name == "effect-agent" else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="research-agent")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tokenizer", default="cl100k_base")
    ap.add_argument("--policies", nargs="*", default=None)
    args = ap.parse_args()
    config = RunConfig(tokenizer=args.tokenizer)
    tok = get_tokenizer(args.tokenizer)
    convs = {n: scenario_conversation(args.scenario, 0, {"turns": str(n)}) for n in LENGTHS}
    names = args.policies or POLICIES.names()
    print(f"scenario {args.scenario}, tokenizer {args.tokenizer}, best of {args.repeat}")
    print(f"{'policy':<16}" + "".join(f"{n:>12,}" for n in LENGTHS) + f"{'ratio':>9}  finish at {LENGTHS[-1]:,}")
    worst = 0.0
    for name in names:
        per_turn: dict[int, float] = {}
        finish = ""
        for n, conv in convs.items():
            policy = make_policy(name, params_for(name, config.model.context_window))
            run(policy, conv, config, tokenizer=tok)  # warm the token memo
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                result = run(policy, conv, config, tokenizer=tok)
                best = min(best, time.perf_counter() - t0)
            turns = max(result.summary["agent_requests"], 1)
            per_turn[n] = best / turns
            finish = f"{result.summary['finish_reason']} after {turns:,} requests"
        ratio = per_turn[LENGTHS[-1]] / per_turn[LENGTHS[0]]
        worst = max(worst, ratio)
        print(f"{name:<16}" + "".join(f"{1 / per_turn[n]:>10,.0f}/s" for n in LENGTHS) + f"{ratio:>9.2f}  {finish}")
    print(f"worst per-turn cost ratio {LENGTHS[-1]:,} vs {LENGTHS[0]:,} turns: {worst:.2f} (bar: 1.5)")


if __name__ == "__main__":
    main()
