"""``csim report``: the command line of :mod:`sim.report.notebooks`; it parses and calls ``write_report``."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_report(args: argparse.Namespace) -> int:
    from sim.report.notebooks import write_report

    index = write_report(
        args.results, args.out, show_code=args.show_code, run_key=args.run, allow_code=args.policy or ()
    )
    out = index.parent
    print(f"wrote {out / 'compare.html'}, {out / 'run.html'} and {index} (open {index} in a browser)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "report",
        help="execute the report notebooks on results and write self-contained HTML",
        description="Execute notebooks/compare.ipynb and notebooks/run.ipynb headlessly on RESULTS (a csim sweep "
        "--out directory or a csim run --out directory) and write OUT/compare.html (every run: cost "
        "against retention, context per request, cumulative cost, retention by fact kind and age, "
        "violations, the compare table), OUT/run.html (one run in depth: default the run with the "
        "most compactions) and OUT/index.html linking them. Figures are embedded; no network needed.",
    )
    p.add_argument("results", type=Path, help="results directory (csim sweep --out, or csim run --out)")
    p.add_argument("--out", required=True, type=Path, help="where to write the HTML and executed notebooks")
    p.add_argument("--run", metavar="RUN_KEY", help="the run to show in depth (the run_key column of the results)")
    p.add_argument("--show-code", action="store_true", help="keep the notebooks' code cells in the HTML")
    p.add_argument(
        "--policy",
        action="append",
        metavar="MODULE:CLASS",
        help="allow importing this policy of yours to replay a run whose log the results did not keep "
        "(repeatable); csim report never imports code a results folder names otherwise",
    )
    p.set_defaults(func=cmd_report)
