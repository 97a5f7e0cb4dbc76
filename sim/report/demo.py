"""The demo (``make demo``, ``csim demo``): nine policies over every bundled scenario with the reactive agent, their
comparison, and a report, all from the bundled data.

Run again, the demo reuses every finished run, as a sweep does: its run keys hold a digest of the code
(:func:`sim.sweep.grid.package_version`), so a folder made by the same code and the same grid is resumed, and one
made by other code (or with other seeds) is replaced, saying why, since none of its runs could be reused.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim.core.errors import InvalidConfig
from sim.report.notebooks import write_report
from sim.sweep.compare import compare, write_summary
from sim.sweep.driver import run_sweep
from sim.sweep.grid import package_version
from sim.sweep.parts import MANIFEST, read_manifest
from sim.sweep.results import load_results
from sim.sweep.spec import SweepSpec, spec_from_dict

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

    Returns the comparison table. A previous demo in ``out`` made by the same code with the same seeds is resumed:
    its finished runs are reused (and the demo says how many). One made by other code or with other seeds is
    replaced (only one whose manifest says it is the demo), so ``make demo`` can always be run again.
    """
    spec = spec_from_dict({**DEMO_SPEC, "sweep": {"name": "demo", "seeds": list(seeds)}}, Path.cwd(), "the demo")
    stale = _stale(out, spec)
    if stale is not None:
        shutil.rmtree(out)
        _say(progress, f"demo: {out} {stale}: none of its runs can be reused, so it is replaced")
    outcome = run_sweep(spec, out, progress=progress)
    if outcome.skipped:
        _say(
            progress,
            f"demo: reused {outcome.skipped} of {outcome.total_runs} runs finished in {out}, ran {outcome.ran}",
        )
    table = compare(load_results(out))
    write_summary(table, out)
    if report:
        write_report(out, out / "report")
    return table


def _stale(out: Path, spec: SweepSpec) -> str | None:
    """Why the demo in ``out`` cannot be resumed (None: it can, or there is none); an error when ``out`` holds
    results that are not the demo's."""
    if not (out / MANIFEST).exists():
        return None
    old = read_manifest(out)
    if old.get("spec", {}).get("name") != "demo":
        raise InvalidConfig(f"{out} holds results that are not the demo's; pass another --out")
    code = package_version(g.policy for g in spec.policies)
    if old.get("code") != code:
        return f"was made by compaction-sim {old.get('code')}, this is {code} (other code)"
    if old.get("spec") != json.loads(json.dumps(spec.normalised(), default=str)):
        return "holds another grid (other seeds)"
    return None


def _say(progress: bool, line: str) -> None:
    if progress:
        print(line, file=sys.stderr, flush=True)


__all__ = ["DEMO_SPEC", "demo"]
