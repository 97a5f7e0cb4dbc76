"""The I/O edge: load conversations, run policies over them, write results.

The CLI only parses arguments and calls these functions; notebooks and scripts call them too.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from policies.base import Policy, make_policy
from sim.conversation import Conversation
from sim.engine import RunConfig, RunResult, run
from sim.errors import InvalidConfig, UnknownName
from sim.log import to_plain, write_jsonl
from sim.metrics import facts_frame, requests_frame, runs_frame, versions, write_json, write_parquet
from sim.scenarios import SCENARIOS, generate
from sim.scenarios import _load as _load_scenarios
from sim.tokenizers import get_tokenizer


def parse_kv(items: Iterable[str] | None, what: str = "-P") -> dict[str, str]:
    """``["a=1", "b=x"]`` to ``{"a": "1", "b": "x"}``; a malformed item names the flag and the fix."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidConfig(f"{what} {item!r} is not name=value (e.g. {what} trigger_ratio=0.8)")
        out[key.strip()] = value.strip()
    return out


def conversation_checksum(conv: Conversation) -> str:
    """SHA-256 of the conversation's canonical JSON: identifies its content, whatever its id."""
    blob = json.dumps(to_plain(conv), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def scenario_conversation(name: str, seed: int, params: dict[str, str]) -> Conversation:
    """Generate a bundled scenario; string parameters are coerced to the generator's default types."""
    _load_scenarios()
    fn = SCENARIOS.get(name)
    defaults = {k: p.default for k, p in inspect.signature(fn).parameters.items() if k != "seed"}
    typed: dict[str, Any] = {}
    for k, v in params.items():
        if k not in defaults:
            raise UnknownName(f"parameter of scenario {name!r}", k, defaults)
        kind = type(defaults[k])
        try:
            typed[k] = kind(v) if kind is not bool else v.lower() in ("1", "true", "yes")
        except ValueError:
            raise InvalidConfig(f"scenario parameter {k}={v!r} is not a valid {kind.__name__}") from None
    return generate(name, seed, **typed)


def recorded_conversations(path: str | Path, fmt: str, lenient: bool = False) -> tuple[list[Conversation], list[str]]:
    """Conversations read from a recording, and the lenient mode's skip report (one line each)."""
    from sim.formats import read

    p = Path(path)
    if not p.exists():
        raise InvalidConfig(f"conversation file {str(p)!r} does not exist")
    result = read(p, fmt, lenient=lenient)
    if not result.conversations:
        raise InvalidConfig(f"{p}: no conversation could be read (format {fmt!r})")
    return result.conversations, [str(s) for s in result.skipped]


def execute(policy: Policy, conversations: Sequence[Conversation], config: RunConfig,
            progress: bool = False) -> list[RunResult]:
    """Run ``policy`` over each conversation with one shared memoised tokenizer."""
    tok = get_tokenizer(config.tokenizer)
    items: Iterable[Conversation] = conversations
    if progress and len(conversations) > 1:
        from tqdm import tqdm

        items = tqdm(conversations, desc=f"{policy.name}", unit="conv", disable=not sys.stderr.isatty())
    return [run(policy, c, config, tokenizer=tok) for c in items]


def write_run(out: Path, results: Sequence[RunResult], config: RunConfig, policy: Policy,
              conversations: Sequence[Conversation], source: dict[str, Any]) -> None:
    """Write ``requests.parquet``, ``facts.parquet``, ``run.json`` and the run log(s) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    write_parquet(requests_frame(results), out / "requests.parquet")
    write_parquet(facts_frame(results), out / "facts.parquet")
    header = run_header(config, policy, source)
    convs = [{"id": c.id, "messages": len(c.messages), "facts": len(c.facts), "checksum": conversation_checksum(c)}
             for c in conversations]
    runs = []
    for r, c in zip(results, conversations, strict=True):
        log_name = "log.jsonl" if len(results) == 1 else f"log-{_safe(c.id)}.jsonl"
        write_jsonl(out / log_name, {**header, "run_id": r.run_id, "conversation": c.id}, r.log)
        runs.append({**r.summary, "log": log_name, "violations": [str(v) for v in r.violations[:200]]})
    doc = {**header, "conversations": convs, "runs": runs}
    if len(runs) == 1:
        doc["summary"] = runs[0]
    write_json(doc, out / "run.json")


def run_header(config: RunConfig, policy: Policy, source: dict[str, Any]) -> dict[str, Any]:
    """What identifies a run: config, policy spec, seed, tokenizer, versions, source of the script."""
    return {"config": asdict(config), "policy": policy.spec(), "seed": config.seed, "tokenizer": config.tokenizer,
            "versions": versions(), "source": source}


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:80]


def demo(out: Path, *, seeds: Sequence[int] = (0, 1, 2), config: RunConfig | None = None,
         progress: bool = True) -> Any:
    """Every bundled policy on every bundled scenario; writes tables under ``out`` and returns the summary.

    effect-agent runs with ``context_token_limit`` = 0.75 x the window (the seed's sizing guidance:
    150-170K for a 200K window); unset, it never compacts.
    """
    from policies import POLICIES

    _load_scenarios()
    config = config or RunConfig()
    jobs = [(p, s, seed) for p in POLICIES.names() for s in SCENARIOS.names() for seed in seeds]
    convs = {(s, seed): scenario_conversation(s, seed, {}) for s in SCENARIOS.names() for seed in seeds}
    results: list[RunResult] = []
    it: Iterable[Any] = jobs
    if progress:
        from tqdm import tqdm

        it = tqdm(jobs, desc="demo runs", unit="run", disable=not sys.stderr.isatty())
    tok = get_tokenizer(config.tokenizer)
    for name, scen, seed in it:
        params = {"context_token_limit": str(int(config.model.context_window * 0.75))} if name == "effect-agent" else {}
        cfg = replace(config, seed=seed)
        results.append(run(make_policy(name, params), convs[(scen, seed)], cfg, tokenizer=tok))
    out.mkdir(parents=True, exist_ok=True)
    runs = runs_frame(results)
    runs["scenario"] = [scen for _, scen, _ in jobs]
    write_parquet(requests_frame(results), out / "requests.parquet")
    write_parquet(runs, out / "runs.parquet")
    runs.to_csv(out / "runs.csv", index=False)
    table = (runs.groupby(["scenario", "policy"], sort=True)
             .agg(runs=("run_id", "count"), peak_context=("peak_context_tokens", "mean"),
                  cumulative_input=("cumulative_input_tokens", "mean"), cost_usd=("total_cost_usd", "mean"),
                  compactions=("compaction_count", "mean"), overflows=("overflows", "sum"),
                  retention=("retention_recall", "mean"), violations=("violation_count", "sum"))
             .reset_index())
    table.to_csv(out / "comparison.csv", index=False)
    write_parquet(table, out / "comparison.parquet")
    return table
