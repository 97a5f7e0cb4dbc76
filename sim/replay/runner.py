"""The I/O edge: load conversations, run policies over them, write results.

The CLI only parses arguments and calls these functions; notebooks and scripts call them too.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig, UnknownName
from sim.core.log import to_plain
from sim.scenarios import SCENARIOS, generate
from sim.scenarios import _load as _load_scenarios


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
    """Conversations read from a recording (a file, or a folder read as ``csim import`` reads one), and the
    report of what was skipped (one line each: records, and a folder's files that are not recordings)."""
    from sim.formats import read
    from sim.formats.importing import import_paths

    p = Path(path)
    if not p.exists():
        raise InvalidConfig(f"conversation file {str(p)!r} does not exist")
    if p.is_dir():
        report = import_paths([p], fmt, lenient)
        convs, notes = report.conversations, report.notes()
    else:
        result = read(p, fmt, lenient=lenient)
        convs, notes = result.conversations, [str(s) for s in result.skipped]
    if not convs:
        detail = "".join(f"\n  {line}" for line in notes[:20])
        raise InvalidConfig(f"{p}: no conversation could be read (format {fmt!r}){detail}")
    return convs, notes


#: The demo's grid: the baselines, both seeds and one policy of each major agent family at its defaults
#: (effect-agent needs a limit to compact at all: 0.75 of the 200K window, the seed's sizing guidance of
#: 150-170K) on every bundled scenario, with the coding agent lengthened until the window matters.
DEMO_SPEC = {
    "sweep": {"name": "demo"},
    # The closed-loop agent: lost context changes the trajectory (sim.core.agent), as in real agents.
    "run": {"window": 200_000, "agent": "reactive"},
    "policies": [
        {"policy": "none"},
        {"policy": "sliding-window"},
        {"policy": "cloudflare-os"},
        {"policy": "effect-agent", "params": {"context_token_limit": [150_000]}},
        {"policy": "claude-code"},
        {"policy": "codex"},
        {"policy": "anthropic-clear-tool-uses"},
        {"policy": "openhands-default"},
        {"policy": "inspect-auto"},
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

    from sim.sweep.compare import compare, write_summary
    from sim.sweep.grid import run_sweep, spec_from_dict
    from sim.sweep.results import load_results

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
        from sim.report.notebooks import write_report

        write_report(out, out / "report")
    return table
