"""``csim report`` and ``csim findings``: the command lines of :mod:`sim.report.notebooks` and
:mod:`sim.report.findings`; they parse and call ``write_report`` and ``run_findings``."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_report(args: argparse.Namespace) -> int:
    import sys
    import time

    from sim.report.notebooks import write_report

    if (Path(args.results) / "tune.json").is_file():  # a csim tune folder: its own page (sim.report.tune)
        from sim.report.tune import write_tune_report

        page = write_tune_report(args.results, args.out)
        print(f"wrote {page} (open it in a browser)")
        return 0

    started = time.perf_counter()  # for the progress lines only; nothing written depends on it

    def progress(what: str) -> None:
        print(f"report: {what} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    index = write_report(
        args.results,
        args.out,
        show_code=args.show_code,
        run_key=args.run,
        allow_code=args.policy or (),
        progress=progress,
    )
    out = index.parent
    print(f"wrote {out / 'compare.html'}, {out / 'run.html'} and {index} (open {index} in a browser)")
    return 0


def cmd_findings(args: argparse.Namespace) -> int:
    import sys
    import time

    from sim.report.findings import render, run_findings, to_frame

    started = time.perf_counter()  # for the progress line only; nothing written depends on it

    def progress(key: str) -> None:
        print(f"findings: {key} ({time.perf_counter() - started:.0f} s so far)", file=sys.stderr, flush=True)

    found = run_findings(seeds=tuple(range(args.seeds)), only=args.only or (), progress=progress)
    text = render(found)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "findings.md").write_text(text + "\n", encoding="utf-8")
    to_frame(found).to_csv(args.out / "findings.csv", index=False)
    print(text)
    print(f"\nwrote {args.out / 'findings.md'} and {args.out / 'findings.csv'}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "report",
        help="execute the report notebooks on results and write self-contained HTML",
        description="Execute notebooks/compare.ipynb and notebooks/run.ipynb headlessly on RESULTS (a csim sweep "
        "--out directory or a csim run --out directory) and write OUT/compare.html (every run: cost "
        "against retention, context per request, cumulative cost, retention by fact kind and age, "
        "violations, the compare table), OUT/run.html (one run in depth: by default the median run of the first "
        "configuration that compacts; --run to choose) and OUT/index.html linking them. Figures are embedded; no "
        "network needed.",
    )
    p.add_argument(
        "results",
        type=Path,
        help="results directory (csim sweep --out, or csim run --out), or a csim tune --out folder",
    )
    p.add_argument("--out", required=True, type=Path, help="where to write the HTML and executed notebooks")
    p.add_argument(
        "--run",
        metavar="CONFIG[:CONVERSATION]",
        help="the run to show in depth: a configuration (its median run), a configuration and conversation "
        "(e.g. 'claude-code:coding-agent-seed0'), or a run key (the run_key column); default: the median run of "
        "the first configuration that compacts",
    )
    p.add_argument("--show-code", action="store_true", help="keep the notebooks' code cells in the HTML")
    p.add_argument(
        "--policy",
        action="append",
        metavar="MODULE:CLASS",
        help="allow importing this policy of yours to replay a run whose log the results did not keep "
        "(repeatable); csim report never imports code a results folder names otherwise",
    )
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "findings",
        help="reproduce published compaction results (Complexity Trap, Anthropic, Factory, the 2026 studies of what "
        "compaction loses) on bundled scenarios",
        description="Run the policies each published study compares on a bundled scenario shaped like its "
        "workload, with the reactive agent, and print each published result beside ours with whether its "
        "direction holds: qualitative reproductions of mechanisms, not predictions of those systems "
        "(sim/report/findings.py says how each workload is shaped). Writes OUT/findings.md and OUT/findings.csv.",
    )
    p.add_argument("--out", type=Path, default=Path("reports/findings"), help="default reports/findings")
    p.add_argument("--seeds", type=int, default=3, help="seeds per workload (default 3)")
    p.add_argument(
        "--only",
        action="append",
        metavar="KEY",
        help="run only this finding (repeatable): complexity-trap, masking-window, context-editing, "
        "compaction-control, context-rot, artifact-retention",
    )
    p.set_defaults(func=cmd_findings)
