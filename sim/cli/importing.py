"""``csim import PATH... [--format auto] [--lenient] --out DIR``: recordings to native JSONL, with a report."""

from __future__ import annotations

import argparse

from sim.core.errors import FormatError


def cmd_import(args: argparse.Namespace) -> int:
    from sim.formats.importing import describe, import_paths, plural, write_native

    report = import_paths(args.paths, args.format, args.lenient)
    for f in report.files:
        for line in describe(f):
            print(line)
    convs = report.conversations
    if not convs:
        where = ", ".join(str(p) for p in args.paths)
        raise FormatError(
            where,
            None,
            "no conversation could be read",
            "see the skips above; pass --format NAME if detection chose wrongly",
        )
    written = write_native(report, args.out)
    files = report.read_files
    unread = sum(1 for f in files if f.error is not None)
    others = len(report.passed_over)
    print(
        f"total: {plural(len(files), 'file')}"
        + (f" ({unread} not read)" if unread else "")
        + f", {plural(len(convs), 'conversation')}, {plural(report.total('messages'), 'message')}, "
        f"{plural(report.total('tool_calls'), 'tool call')}, usage on {report.total('with_usage')} messages, "
        f"{sum(s.count for s in report.skipped)} skipped; wrote {plural(len(written), 'file')} to {args.out}"
        + (f"; passed over {plural(others, 'other file')} (not recordings)" if others else "")
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "import",
        help="read recordings (any registered format) and save them as native conversation JSONL",
        description="Read recorded conversations (files, or directories walked in sorted order for "
        ".json/.jsonl/.yaml/.yml/.traj files; a folder's other files, and files that are not recordings of "
        "--format, are listed as skipped), print per file the format, conversations, messages, "
        "tool calls, how many messages carry recorded usage and every skipped record, and write one "
        "native JSONL file per input file into --out. Strict by default: a malformed file is an error "
        "(exit 2); --lenient skips bad records and reports them.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="recording files or directories")
    p.add_argument("--format", default="auto", help="format name (csim list formats) or auto (default)")
    p.add_argument("--lenient", action="store_true", help="skip malformed records and unreadable files, reporting each")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the native JSONL files")
    p.set_defaults(func=cmd_import)
