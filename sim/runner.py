"""The I/O edge: load conversations, run policies over them, write results.

The CLI only parses arguments and calls these functions; notebooks and scripts call them too.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from policies.base import Policy
from sim.conversation import Conversation
from sim.engine import RunConfig, RunResult, run
from sim.errors import InvalidConfig, UnknownName
from sim.log import to_plain, write_jsonl
from sim.metrics import facts_frame, requests_frame, versions, write_json, write_parquet
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


def execute(
    policy: Policy[Any], conversations: Sequence[Conversation], config: RunConfig, progress: bool = False
) -> list[RunResult]:
    """Run ``policy`` over each conversation with one shared memoised tokenizer."""
    tok = get_tokenizer(config.tokenizer)
    items: Iterable[Conversation] = conversations
    if progress and len(conversations) > 1:
        from tqdm import tqdm

        items = tqdm(conversations, desc=f"{policy.name}", unit="conv", disable=not sys.stderr.isatty())
    return [run(policy, c, config, tokenizer=tok) for c in items]


def write_run(
    out: Path,
    results: Sequence[RunResult],
    config: RunConfig,
    policy: Policy[Any],
    conversations: Sequence[Conversation],
    source: dict[str, Any],
) -> None:
    """Write ``requests.parquet``, ``facts.parquet``, ``run.json`` and the run log(s) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    write_parquet(requests_frame(results), out / "requests.parquet")
    write_parquet(facts_frame(results), out / "facts.parquet")
    header = run_header(config, policy, source)
    convs = [
        {"id": c.id, "messages": len(c.messages), "facts": len(c.facts), "checksum": conversation_checksum(c)}
        for c in conversations
    ]
    runs = []
    for r, c in zip(results, conversations, strict=True):
        log_name = "log.jsonl" if len(results) == 1 else f"log-{_safe(c.id)}.jsonl"
        write_jsonl(out / log_name, {**header, "run_id": r.run_id, "conversation": c.id}, r.log)
        runs.append({**r.summary, "log": log_name, "violations": [to_plain(v) for v in r.violations[:200]]})
    doc = {**header, "conversations": convs, "runs": runs}
    if len(runs) == 1:
        doc["summary"] = runs[0]
    write_json(doc, out / "run.json")


def run_header(config: RunConfig, policy: Policy[Any], source: dict[str, Any]) -> dict[str, Any]:
    """What identifies a run: config, policy spec, seed, tokenizer, versions, source of the script."""
    return {
        "config": asdict(config),
        "policy": policy.spec(),
        "seed": config.seed,
        "tokenizer": config.tokenizer,
        "versions": versions(),
        "source": source,
    }


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:80]


#: The demo's grid: every bundled policy at its defaults (effect-agent needs a limit to compact at all:
#: 0.75 of the 200K window, the seed's sizing guidance of 150-170K) on every bundled scenario, with the
#: coding agent lengthened until the window matters.
DEMO_SPEC = {
    "sweep": {"name": "demo"},
    "run": {"window": 200_000},
    "policies": [
        {"policy": "none"},
        {"policy": "sliding-window"},
        {"policy": "cloudflare-os"},
        {"policy": "effect-agent", "params": {"context_token_limit": [150_000]}},
    ],
    "scenarios": [
        {"name": "coding-agent", "params": {"turns": [250]}},
        {"name": "research-agent"},
        {"name": "support-chat"},
    ],
}


def demo(out: Path, *, seeds: Sequence[int] = (0, 1, 2), progress: bool = True, report: bool = True) -> Any:
    """The demo: a sweep of :data:`DEMO_SPEC` into ``out``, its comparison, and a report in ``out/report``.

    Returns the comparison table. A previous demo in ``out`` is replaced (only one whose manifest says
    it is the demo), so ``make demo`` can always be run again after the code changed.
    """
    import shutil

    from sim.compare import compare, write_summary
    from sim.results import load_results
    from sim.sweep import run_sweep, spec_from_dict

    manifest = out / "manifest.json"
    if manifest.exists():
        if json.loads(manifest.read_text(encoding="utf-8")).get("spec", {}).get("name") != "demo":
            raise InvalidConfig(f"{out} holds results that are not the demo's; pass another --out")
        shutil.rmtree(out)
    spec = spec_from_dict({**DEMO_SPEC, "sweep": {"name": "demo", "seeds": list(seeds)}}, Path.cwd(), "the demo")
    run_sweep(spec, out, progress=progress)
    table = compare(load_results(out))
    write_summary(table, out)
    if report:
        from sim.report import write_report

        write_report(out, out / "report")
    return table
