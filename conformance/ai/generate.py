"""Run the Vercel AI SDK's own ``pruneMessages`` on every case of ``cases.py`` and write the golden file.

The ``ai`` package is JavaScript: ``make conformance`` installs it with npm into ``.venv-conformance/ai``
(``package.json`` pins the version) and runs this script with any Python 3 (standard library only):

    python3 conformance/ai/generate.py

which hands the cases to ``prune.mjs`` under node; that script builds the AI SDK ``ModelMessage`` list of each case
and calls ``pruneMessages`` once with the case's options. Writes ``tests/golden/conformance/ai.json``: per case,
the messages returned (role, id, and each part as ``reasoning``, ``text``, ``tool-call:<id>`` or
``tool-result:<id>``; a tool message has no id, since it may join several of the case's tool messages).

``long``: each long conversation of ``conformance/long/`` with three settings (:data:`LONG_SETTINGS`), and
``pruneMessages`` called on the messages before every model call, as ``prepareStep`` calls it; per call a digest of
what it returned (:func:`digest`: messages, parts, and a hash of the whole, written as for a case).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES, DOCS  # noqa: E402
from conversations import load  # noqa: E402

ENV = ROOT / ".venv-conformance" / "ai"
GOLDEN = ROOT / "tests" / "golden" / "conformance" / "ai.json"


def sdk_messages(msgs: list[dict[str, Any]]) -> int:
    """How many AI SDK messages a neutral list makes (a run of tool messages is one)."""
    return sum(1 for k, m in enumerate(msgs) if m["role"] != "tool" or k == 0 or msgs[k - 1]["role"] != "tool")


def long_settings(conv: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The three settings each long conversation runs with: the reference page's example (the newest 2 messages keep
    their tool content); the window scaled to the conversation, a quarter of its AI SDK messages; the array form for
    the conversation's most called tool alone, with the reference page's window."""
    msgs = conv["messages"]
    names = Counter(c["name"] for m in msgs for c in m.get("calls", ()))
    top = min(names, key=lambda n: (-names[n], n))
    return {
        "docs": DOCS,
        "quarter": {**DOCS, "toolCalls": f"before-last-{sdk_messages(msgs) // 4}-messages"},
        "one-tool": {**DOCS, "toolCalls": [{"type": "before-last-2-messages", "tools": [top]}]},
    }


def digest(view: list[dict[str, Any]]) -> dict[str, Any]:
    """A returned list, small: its messages, its parts, and a hash of the whole (both sides write lists alike, so
    equal lists hash alike)."""
    text = json.dumps(view, sort_keys=True)
    return {
        "messages": len(view),
        "parts": sum(len(m["parts"]) for m in view),
        "view": hashlib.sha256(text.encode()).hexdigest()[:16],
    }


def main() -> None:
    if not (ENV / "node_modules" / "ai").is_dir():
        sys.exit(f"{ENV}/node_modules/ai is missing: run `make conformance` (npm install into {ENV})")
    long_runs = [
        {"name": f"{conv['name']}/{key}", "messages": conv["messages"], "settings": settings}
        for conv in load()
        for key, settings in long_settings(conv).items()
    ]
    proc = subprocess.run(
        ["node", str(HERE / "prune.mjs"), str(ENV)],
        input=json.dumps({"cases": CASES, "long": long_runs}),
        capture_output=True,
        text=True,
        check=True,
    )
    ran = json.loads(proc.stdout)
    pinned = json.loads((HERE / "package.json").read_text())["dependencies"]["ai"]
    if ran["version"] != pinned:
        sys.exit(f"node loaded ai {ran['version']}, package.json pins {pinned}: reinstall {ENV}")
    out = []
    for case, res in zip(CASES, ran["results"], strict=True):
        assert res["name"] == case["name"]
        expected = {"view": res["view"], "sdk_messages": res["sdk_messages"]}
        out.append({**case, "expected": expected})
    long = []
    for run, res in zip(long_runs, ran["long"], strict=True):
        assert res["name"] == run["name"]
        conversation, key = run["name"].split("/")
        calls = [{"at": c["at"], "sdk_messages": c["sdk_messages"], **digest(c["view"])} for c in res["calls"]]
        long.append({"conversation": conversation, "run": key, "settings": run["settings"], "calls": calls})
    golden = {"package": "ai", "version": ran["version"], "function": "pruneMessages", "cases": out, "long": long}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (ai {golden['version']})")


if __name__ == "__main__":
    main()
