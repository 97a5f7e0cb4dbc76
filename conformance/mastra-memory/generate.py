"""Run Mastra's own ``ObservationalMemory`` on every run of ``cases.py`` and on the long conversations, and write the
golden file.

``@mastra/memory`` is JavaScript: ``make conformance`` installs it with npm into ``.venv-conformance/mastra-memory``
(``package.json`` pins it and its peer ``@mastra/core``) and runs this script with any Python 3 (standard library only):

    python3 conformance/mastra-memory/generate.py

which hands the runs to ``observe.mjs`` under node. Before every model call (each assistant message) Mastra's
``getStatus`` is asked on the messages so far and, when it says ``shouldObserve``, ``observe`` runs (a stub model
answers with canned observations; ``observe`` reflects by itself at ``observationTokens``). Writes
``tests/golden/conformance/mastra-memory.json``: per run and model call, Mastra's count of the unobserved messages
(``pending``; ``before_live``, the same without the live turn), its threshold, whether it observed, which messages, and
whether it reflected, with the observations after it. The long conversations (``conformance/long/``) are replayed with
the Observer's threshold at a quarter of each conversation's size as Mastra counts it, the Reflector's at 200 tokens
(the third canned observation reaches it).

The same runs then go through ``turns.mjs``, the path Mastra's agent processor takes (``ObservationStep.prepare`` before
every model call of a turn), twice: with async buffering on (Mastra's default) and off, the Reflector out of reach. The
golden file's ``turns`` section holds, per model call, Mastra's count and threshold, the chunk a buffer made (its
messages and their tokens), the messages activated from chunks and those observed synchronously, and the chunks left.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

ENV = ROOT / ".venv-conformance" / "mastra-memory"
GOLDEN = ROOT / "tests" / "golden" / "conformance" / "mastra-memory.json"
LONG_SETTINGS = {"messageTokens": {"share": 0.25}, "observationTokens": 200, "observation_words": 60}
#: The step-by-step runs (turns.mjs): the Reflector out of reach, so the buffers are compared alone (a reflection
#: makes a new record, and in @mastra/core's InMemoryStore the buffered chunks do not pass to it).
NO_REFLECTION = 1_000_000


def replay(runs: list[dict], script: str = "observe.mjs") -> dict:  # type: ignore[type-arg]
    command = ["node", str(HERE / script), str(ENV)]
    proc = subprocess.run(command, input=json.dumps(runs), capture_output=True, text=True)
    if proc.returncode:
        sys.exit(proc.stderr)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def main() -> None:
    if not (ENV / "node_modules" / "@mastra" / "memory").is_dir():
        sys.exit(f"{ENV}/node_modules/@mastra/memory is missing: run `make conformance` (npm install into {ENV})")
    pinned = json.loads((HERE / "package.json").read_text())["dependencies"]
    ran = replay(CASES)
    if ran["version"] != pinned["@mastra/memory"] or ran["core"] != pinned["@mastra/core"]:
        sys.exit(f"node loaded @mastra/memory {ran['version']} / core {ran['core']}, package.json pins {pinned}")
    cases = []
    for case, res in zip(CASES, ran["results"], strict=True):
        assert res["name"] == case["name"]
        cases.append({**case, "expected": {"decisions": res["decisions"], "model_calls": res["model_calls"]}})
    long_runs = [{"name": c["name"], "messages": c["messages"], "settings": LONG_SETTINGS} for c in load()]
    long = [
        {
            "conversation": r["name"],
            "settings": r["settings"],
            "decisions": r["decisions"],
            "model_calls": r["model_calls"],
        }
        for r in replay(long_runs)["results"]
    ]
    turns: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for mode, buffering in (("buffered", True), ("sync", False)):
        runs = [{"name": c["name"], "messages": c["messages"], "settings": c["settings"]} for c in CASES]
        runs += [{"name": c["name"], "messages": c["messages"], "settings": LONG_SETTINGS} for c in load()]
        for r in runs:
            r["settings"] = {**r["settings"], "buffering": buffering, "observationTokens": NO_REFLECTION}
        turns[mode] = [
            {"name": r["name"], "settings": r["settings"], "decisions": r["decisions"], "model_calls": r["model_calls"]}
            for r in replay(runs, "turns.mjs")["results"]
        ]
    golden = {
        "package": "@mastra/memory",
        "version": ran["version"],
        "core": ran["core"],
        "function": "ObservationalMemory.getStatus / observe",
        "cases": cases,
        "long": long,
        "turns": turns,
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} runs and {len(long)} long conversations to {GOLDEN} (@mastra/memory {ran['version']})")


if __name__ == "__main__":
    main()
