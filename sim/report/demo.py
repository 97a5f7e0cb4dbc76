"""The demo (``make demo``, ``csim demo``): nine policies over every bundled scenario with the reactive agent, their
comparison, and a report, all from the bundled data."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim.core.errors import InvalidConfig
from sim.report.notebooks import write_report
from sim.sweep.compare import compare, write_summary
from sim.sweep.driver import run_sweep
from sim.sweep.results import load_results
from sim.sweep.spec import spec_from_dict

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
        write_report(out, out / "report")
    return table


__all__ = ["DEMO_SPEC", "demo"]
