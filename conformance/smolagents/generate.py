"""Run smolagents' own ``truncate_content`` on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/smolagents`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/smolagents/bin/python conformance/smolagents/generate.py

Each case's text (built from its recipe) goes through ``smolagents.utils.truncate_content`` (with the case's
``max_length``, if any), as ``CodeAgent`` passes the output of each code snippet before it becomes the step's
observation. No model and no
network are needed. Writes ``tests/golden/conformance/smolagents.json``: per case the result's length, its SHA-256
(UTF-8) and its first and last 120 characters (the texts themselves run to hundreds of kilobytes).
"""

from __future__ import annotations

import hashlib
import json
import sys
from importlib.metadata import version
from pathlib import Path

from smolagents.utils import MAX_LENGTH_TRUNCATE_CONTENT, truncate_content

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import CASES, build  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "smolagents.json"


def main() -> None:
    out = []
    for case in CASES:
        settings = {"max_length": MAX_LENGTH_TRUNCATE_CONTENT, **case["settings"]}
        source = build(case["input"])
        text = truncate_content(source, **case["settings"])
        expected = {
            "truncated": text != source,
            "length": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "head": text[:120],
            "tail": text[-120:],
        }
        out.append({**case, "settings": settings, "expected": expected})
    golden = {"package": "smolagents", "version": version("smolagents"), "cases": out}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (smolagents {golden['version']})")


if __name__ == "__main__":
    main()
