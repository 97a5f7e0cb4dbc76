"""Run Workshop's own compaction functions on every case and write ``tests/golden/conformance/cloudflare-os.json``.

Workshop (cloudflare/cloudflare-os) is on no registry: its compaction code is TypeScript in that repository.
``package.json`` pins what runs it (``typescript``, used only to strip types) and names the repository, the commit
and the file (``csim``). ``make conformance`` installs it with npm into ``.venv-conformance/cloudflare-os`` and runs
this script with any Python 3 (standard library only):

    CLOUDFLARE_OS_GIT=/path/to/cloudflare-os/.git python3 conformance/cloudflare-os/generate.py [--large OUT]

It writes ``agent-compaction.ts`` at that commit into ``.venv-conformance/cloudflare-os/src`` (from the git
directory ``CLOUDFLARE_OS_GIT`` names, else a clone: ``conformance/ts_source.py``), builds the cases with the
project's Python (``make_cases.py``), hands them to ``decide.mjs`` under node, and writes the golden file: the cases
and what the real functions returned for each. ``--large OUT`` replays many more conversations into OUT instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from ts_source import dump_lines, run_cases  # noqa: E402

ENV = ROOT / ".venv-conformance" / "cloudflare-os"
GOLDEN = ROOT / "tests" / "golden" / "conformance" / "cloudflare-os.json"


def main() -> None:
    large = sys.argv[1:3] if sys.argv[1:2] == ["--large"] else None
    meta, cases, ran = run_cases(HERE, ROOT, ENV, bool(large))
    src = meta["csim"]
    golden = {
        "package": "cloudflare-os",
        "version": f"{src['repository']}@{src['commit']}",
        "source": {"repository": src["repository"], "commit": src["commit"], "files": src["files"]},
        "timestamp": cases["timestamp"],
        "reserve": cases["reserve"],
        "model": cases["model"],
        "weights": [{**c, "expected": e} for c, e in zip(cases["weights"], ran["weights"], strict=True)],
        "summary_weights": [
            {"text": t, "expected": e} for t, e in zip(cases["summary_texts"], ran["summaries"], strict=True)
        ],
        "specs": cases["specs"],
        "conversations": cases["conversations"],
        "summaries": cases["summaries"],
        "decisions": [{**c, "expected": e} for c, e in zip(cases["decisions"], ran["decisions"], strict=True)],
    }
    out = Path(large[1]) if large else GOLDEN
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump_lines(golden))
    print(f"wrote {len(golden['decisions'])} decisions to {out}")


if __name__ == "__main__":
    main()
