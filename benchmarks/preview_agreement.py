"""Every policy's preview against its run, on every bundled scenario in two windows (issue 34, item 5).

For each (scenario, window, policy): ``sim.api.compact`` (the preview of the first compaction), then ``sim.api.run``
of the same configuration, and the check ``tests/test_preview.py`` makes (``_check_against_run``): the preview is
the run's compaction (request, tokens, trigger, mode), its lost facts are exactly those the compactions table names
lost, and every fact row judged between it and the next compaction shows the fact as the preview's view after
does. Prints how many previews agreed, how many configurations never compact (a clean ``NoCompaction``), and the
rows of lost facts checked. A long check, apart from the suite (its tests run a handful of these cases).

``--recordings DIR``: instead, every recording file under DIR (``../shared/recorded``), up to three conversations
each, previewed under three policies that act early (``autogen-buffered`` with a buffer of 2, ``cloudflare-os`` in
a 30K window, ``claude-code`` in a 40K window): previews made, clean "no compaction" answers, files the importer
refuses (its own error), and any other error (a bug).

    python benchmarks/preview_agreement.py [--recordings ../shared/recorded]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from policies import POLICIES  # noqa: E402
from sim import api  # noqa: E402
from sim.core.errors import CsimError  # noqa: E402
from sim.formats.importing import recorded_conversations  # noqa: E402
from sim.replay.preview import NoCompaction  # noqa: E402
from sim.scenarios import scenario_conversation, scenario_names  # noqa: E402

RECORDING_POLICIES = (
    ("autogen-buffered", {"buffer_size": 2}, {}),
    ("cloudflare-os", {}, {"window": 30_000}),
    ("claude-code", {}, {"window": 40_000}),
)


def recordings(folder: Path) -> int:
    outcomes: collections.Counter[str] = collections.Counter()
    bugs: list[str] = []
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".yaml", ".yml", ".traj")
    )
    for path in files:
        try:
            convs, _ = recorded_conversations(path, "auto", lenient=True)
        except CsimError:
            outcomes["refused by the importer"] += 1
            continue
        for conv in convs[:3]:
            for policy, params, options in RECORDING_POLICIES:
                try:
                    api.compact(conv, policy, params, **options).to_dict()
                    outcomes["previews"] += 1
                except NoCompaction:
                    outcomes["no compaction"] += 1
                except CsimError as exc:
                    outcomes[f"error: {type(exc).__name__}"] += 1
                except Exception:
                    outcomes["BUG"] += 1
                    bugs.append(f"{path} {conv.id} {policy}: {traceback.format_exc()[-300:]}")
    print(f"{len(files)} files: {dict(outcomes)}")
    for b in bugs[:8]:
        print(b)
    return 1 if bugs else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recordings", type=Path, help="preview every recording under this folder instead")
    args = ap.parse_args()
    if args.recordings is not None:
        return recordings(args.recordings)
    spec = importlib.util.spec_from_file_location("test_preview", ROOT / "tests" / "test_preview.py")
    assert spec is not None and spec.loader is not None
    checks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checks)
    outcomes: collections.Counter[str] = collections.Counter()
    differ: list[str] = []
    rows, start = 0, time.perf_counter()
    for s in scenario_names():
        params = {"turns": "300"} if s == "support-chat" else {}
        conv = scenario_conversation(s, 0, params)
        for options in ({}, {"window": 30_000}):
            for policy in POLICIES.names():
                try:
                    p = api.compact(conv, policy, **options)
                except NoCompaction:
                    outcomes["never compacts"] += 1
                    continue
                r = api.run(policy, scenario=s, scenario_params=params, **options)
                try:
                    rows += checks._check_against_run(p, conv, r.compactions, r.facts)
                    outcomes["agree"] += 1
                except AssertionError:
                    outcomes["DIFFER"] += 1
                    differ.append(f"{s} {policy} {options}: {traceback.format_exc()[-300:]}")
    print(f"{dict(outcomes)}; lost-fact rows checked: {rows}; {time.perf_counter() - start:.0f} s")
    for d in differ[:8]:
        print(d)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
