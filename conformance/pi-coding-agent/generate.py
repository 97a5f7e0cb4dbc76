"""Run pi's own compaction functions on every case of ``cases.py`` and on the long conversations, and write the golden
file.

pi is JavaScript: ``make conformance`` installs ``@earendil-works/pi-coding-agent`` with npm into
``.venv-conformance/pi-coding-agent`` (``package.json`` pins the version) and runs this script with any Python 3
(standard library only):

    python3 conformance/pi-coding-agent/generate.py

which hands the cases and the long conversations (``conformance/long/``) to ``decide.mjs`` under node. For a case,
that script builds pi's session (``SessionManager.inMemory``) from the messages, makes pi's automatic check (the
reply's usage after a run, or the usage plus ``estimateProjectedContextTokens``'s trailing estimate before a further
call; ``shouldCompact``) and, where it fires or the case is ``manual`` or ``overflow``, calls ``prepareCompaction``:
the first kept message, whether the turn is split, what is summarised. For a long conversation it replays every
model call so, appending each compaction with a fake summary, each reply's usage being pi's estimate of the context
it answered. Writes ``tests/golden/conformance/pi-coding-agent.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

PACKAGE = "@earendil-works/pi-coding-agent"
ENV = ROOT / ".venv-conformance" / "pi-coding-agent"
GOLDEN = ROOT / "tests" / "golden" / "conformance" / "pi-coding-agent.json"
RESERVE = 16_384  # pi's default reserveTokens


def size(conv: dict[str, Any]) -> int:
    """About pi's estimate of the whole conversation: its characters over 4."""
    chars = len(conv["system"])
    for m in conv["messages"]:
        chars += len(m.get("text", "")) + sum(len(c["name"]) + len(c["args"]) for c in m.get("calls", ()))
        chars += sum(len(r["text"]) for r in m.get("results", ()))
    return chars // 4


def long_runs() -> list[dict[str, Any]]:
    """Each long conversation twice: compacting past a quarter of its size (the window that much above the default
    reserve), keeping a sixteenth of it, and a fortieth."""
    runs = []
    for conv in load():
        total = size(conv)
        for keep in (total // 16, total // 40):
            settings = {"contextWindow": RESERVE + total // 4, "reserveTokens": RESERVE, "keepRecentTokens": keep}
            runs.append({"conversation": conv, "settings": settings})
    return runs


def main() -> None:
    if not (ENV / "node_modules" / PACKAGE).is_dir():
        sys.exit(f"{ENV}/node_modules/{PACKAGE} is missing: run `make conformance` (npm install into {ENV})")
    runs = long_runs()
    proc = subprocess.run(
        ["node", str(HERE / "decide.mjs"), str(ENV)],
        input=json.dumps({"cases": CASES, "long": runs}),
        capture_output=True,
        text=True,
        check=True,
    )
    ran = json.loads(proc.stdout)
    pinned = json.loads((HERE / "package.json").read_text())["dependencies"][PACKAGE]
    if ran["version"] != pinned:
        sys.exit(f"node loaded {PACKAGE} {ran['version']}, package.json pins {pinned}: reinstall {ENV}")
    out = []
    for case, res in zip(CASES, ran["cases"], strict=True):
        assert res.pop("name") == case["name"]
        out.append({**case, "expected": res})
    golden = {
        "package": PACKAGE,
        "version": ran["version"],
        "functions": [
            "calculateContextTokens",
            "estimateProjectedContextTokens",
            "estimateTokens",
            "prepareCompaction",
            "shouldCompact",
            "SessionManager",
        ],
        "cases": out,
        "long": ran["long"],
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    calls = sum(len(r["decisions"]) for r in ran["long"])
    print(f"wrote {len(out)} cases and {calls} model calls in {len(runs)} long runs to {GOLDEN}")
    print(f"({PACKAGE} {ran['version']})")


if __name__ == "__main__":
    main()
