"""Run the Vercel AI SDK's own ``pruneMessages`` on every case of ``cases.py`` and write the golden file.

The ``ai`` package is JavaScript: ``make conformance`` installs it with npm into ``.venv-conformance/ai``
(``package.json`` pins the version) and runs this script with any Python 3 (standard library only):

    python3 conformance/ai/generate.py

which hands the cases to ``prune.mjs`` under node; that script builds the AI SDK ``ModelMessage`` list of each case
and calls ``pruneMessages`` once with the case's options. Writes ``tests/golden/conformance/ai.json``: per case,
the messages returned (role, id, and each part as ``reasoning``, ``text``, ``tool-call:<id>`` or
``tool-result:<id>``; a tool message has no id, since it may join several of the case's tool messages).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from cases import CASES  # noqa: E402

ENV = ROOT / ".venv-conformance" / "ai"
GOLDEN = ROOT / "tests" / "golden" / "conformance" / "ai.json"


def main() -> None:
    if not (ENV / "node_modules" / "ai").is_dir():
        sys.exit(f"{ENV}/node_modules/ai is missing: run `make conformance` (npm install into {ENV})")
    proc = subprocess.run(
        ["node", str(HERE / "prune.mjs"), str(ENV)],
        input=json.dumps(CASES),
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
    golden = {"package": "ai", "version": ran["version"], "function": "pruneMessages", "cases": out}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (ai {golden['version']})")


if __name__ == "__main__":
    main()
