"""Run effect-agent's own compaction code on every case and write ``tests/golden/conformance/effect-agent.json``.

effect-agent is on no registry: its code is TypeScript in danieljvdm/effect-agent. ``package.json`` pins what runs it
(the ``effect`` version that repository's catalog pins, and ``typescript``, used only to strip types), and names the
repository, the commit and the files (``csim``). ``make conformance`` installs the packages with npm into
``.venv-conformance/effect-agent`` and runs this script with any Python 3 (standard library only):

    EFFECT_AGENT_GIT=/path/to/effect-agent/.git python3 conformance/effect-agent/generate.py [--large OUT]

It writes the files at that commit into ``.venv-conformance/effect-agent/src`` (from the git directory
``EFFECT_AGENT_GIT`` names, else a clone: ``conformance/ts_source.py``), builds the cases with the project's Python
(``make_cases.py``: the message shapes, bounds and renders the tests build, and every decision the port makes on
generated conversations), hands them to ``decide.mjs`` under node, and writes the golden file: the cases and what the
real code returned for each. ``--large OUT`` replays many more conversations and writes that file to OUT instead
(for measuring agreement; not committed).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from ts_source import dump_lines, run_cases  # noqa: E402

ENV = ROOT / ".venv-conformance" / "effect-agent"
GOLDEN = ROOT / "tests" / "golden" / "conformance" / "effect-agent.json"


def main() -> None:
    large = sys.argv[1:3] if sys.argv[1:2] == ["--large"] else None
    meta, cases, ran = run_cases(HERE, ROOT, ENV, bool(large))
    pins, src = meta["dependencies"], meta["csim"]
    if ran["effect"] != pins["effect"]:
        sys.exit(f"node loaded effect {ran['effect']}, package.json pins {pins['effect']}: reinstall {ENV}")
    golden = {
        "package": "effect-agent",
        "version": f"{src['repository']}@{src['commit']}",
        "effect": ran["effect"],
        "source": {"repository": src["repository"], "commit": src["commit"], "files": src["files"]},
        "instruction": ran["instruction"],
        "messages": [{**c, "expected": e} for c, e in zip(cases["messages"], ran["messages"], strict=True)],
        "bounds": [{**c, "expected": e} for c, e in zip(cases["bounds"], ran["bounds"], strict=True)],
        "render": [{**c, "expected": e} for c, e in zip(cases["render"], ran["render"], strict=True)],
        "configs": cases["configs"],
        "specs": cases["specs"],
        "conversations": cases["conversations"],
        "summaries": cases["summaries"],
        "decisions": [{**c, "expected": e} for c, e in zip(cases["decisions"], ran["decisions"], strict=True)],
    }
    out = Path(large[1]) if large else GOLDEN
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump_lines(golden))
    print(f"wrote {len(golden['decisions'])} decisions and {len(golden['messages'])} message shapes to {out}")


if __name__ == "__main__":
    main()
