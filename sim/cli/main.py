"""``csim``: the command line. It parses arguments and calls library functions; nothing else.

Errors a user can cause (a misspelt policy, a bad parameter, a malformed recording) print one line
saying what was wrong and what to do, and exit with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sim.cli.options import add_run_options, option_values
from sim.core.errors import CsimError, FormatError, InvalidConfig

EPILOG = """examples:
  csim run --policy cloudflare-os -P trigger_ratio=0.8 --scenario coding-agent --seed 3 --out runs/cf
  csim run --policy effect-agent -P context_token_limit=150000 --conversation session.jsonl \\
           --format claude-code --out runs/cc
  csim preview --scenario coding-agent --policy cloudflare-os
  csim list policies
  csim check --policy sliding-window --examples 200
  csim check --policy mypkg.mypolicies:KeepLastN -P n=8
  csim demo --out reports/demo
"""


#: Modules that each add their subcommands with ``register(subparsers)``; one line per module, so
#: commands that live beside their library code need no edit of this file beyond this tuple.
COMMAND_MODULES: tuple[str, ...] = (
    "sim.cli.datasets",
    "sim.cli.calibration",
    "sim.cli.sweep",
    "sim.cli.importing",
    "sim.cli.report",
    "sim.cli.preview",
    "sim.cli.tune",
)


def cmd_run(args: argparse.Namespace) -> int:
    """One policy with fixed parameters: a one-configuration sweep (the same manifest, parts, run keys and
    loader as ``csim sweep``) that keeps each run's log."""
    from sim import api
    from sim.core.params import parse_kv
    from sim.sweep.driver import run_sweep
    from sim.sweep.parts import (
        SEED_ON_RECORDINGS,
        declared_reasons,
        finished_parts,
        read_columns,
        rows_of,
        violations_text,
    )

    if sum(map(bool, (args.scenario, args.conversation, args.dataset))) != 1:
        raise InvalidConfig("give exactly one of --scenario NAME, --conversation PATH or --dataset NAME")
    options = {k: v for k, v in option_values(args).items() if k != "seed" and v is not None}
    options["summariser"] = parse_kv(options.get("summariser"), "-R")
    if options.get("calibration"):
        options["calibration"] = str(Path(options["calibration"]).expanduser().resolve())
    params = parse_kv(args.param)
    for k, v in params.items():
        if "," in v:
            raise InvalidConfig(f"-P {k}={v}: csim run takes one value per parameter; csim sweep takes lists")
    spec = api.spec(
        {args.policy: params},
        scenarios={args.scenario: parse_kv(args.scenario_param, "-S")} if args.scenario else None,
        conversations=str(Path(args.conversation).expanduser().resolve()) if args.conversation else None,
        format=args.format,
        lenient=args.lenient,
        probes=not args.no_probes,
        datasets=args.dataset,
        seeds=args.seed,
        **options,
    )
    from sim.core.model import DEFAULT_MODEL

    out = Path(args.out)
    try:
        run_sweep(spec, out, workers=1, progress=True, logs=True)
    except FormatError as exc:
        hint = _format_hint(exc.path, args.format)
        if hint is None:
            raise
        raise FormatError(exc.path, exc.line, exc.problem, hint) from None
    # What the lines below print, read back from the parts as load_results reads them (without pandas).
    parts = finished_parts(out)
    runs = sorted((r for d in parts for r in rows_of(read_columns(d, "runs"))), key=lambda r: str(r["run_key"]))
    violations = [v for d in parts for v in rows_of(read_columns(d, "violations"))]
    for r in runs:
        viols = [v for v in violations if v["run_key"] == r["run_key"]]
        recall = "n/a" if _missing(r["retention_recall"]) else f"{r['retention_recall']:.3f}"
        print(
            f"{r['conversation']}: {r['finish_reason']}, {r['agent_requests']} agent requests, "
            f"peak {r['peak_context_tokens']:,} tokens, cumulative input {r['cumulative_input_tokens']:,}, "
            f"cost ${r['total_cost_usd']:.4f}, {r['compaction_count']} compactions, {r['overflows']} overflows, "
            + (f"{r['failed_turns']} failed turns (skipped to the next user message), " if r["failed_turns"] else "")
            + f"retention {recall}, {violations_text(viols)}, "
            + ("no request" if _missing(r["cache_hit_share"]) else f"{r['cache_hit_share']:.1%} of the prompt")
            + " read from cache"
        )
        for line in declared_reasons(viols):
            print(f"  {line}")
        left_out = r.get("recorded_compactions_left_out") or 0
        if left_out:
            ours = r["compaction_count"]
            theirs = "compaction is" if left_out == 1 else f"{left_out} compactions are"
            above = "the compaction above is" if ours == 1 else f"the {ours} compactions above are"
            print(
                f"  note: the recording's own {theirs} left out (the recorded client's result, not sent on top of "
                f"the history it replaced); {above} the policy's"
            )
        if isinstance(r["unpriced_models"], str) and r["unpriced_models"]:
            print(
                f"  note: the price table does not know {r['unpriced_models']} (named by the recording); those "
                f"requests are priced as {DEFAULT_MODEL}: name the model with --model to price them as another"
            )
    if args.seed and not args.scenario:
        print(f"note: seed {args.seed} on a recording: {SEED_ON_RECORDINGS}")
    print(f"wrote {out} (manifest.json and parts/: runs, requests, facts, compactions, violations, logs)")
    return 0


def _missing(value: object) -> bool:
    """A null or NaN cell of a table read back from a part."""
    return value is None or value != value


def _format_hint(path: str, fmt: str | None) -> str | None:
    """What to do about a file that did not read as ``fmt``: the format that recognises it, when one does; None when
    ``fmt`` is auto, or the file is a recording of ``fmt`` that is broken (its own error says what to do)."""
    from sim.formats import recognised_by

    if fmt in (None, "auto") or not Path(path).is_file():
        return None
    try:
        found = recognised_by(path)
    except CsimError:
        return None
    if fmt in found:
        return None
    hits = [h for h in found if h != fmt]
    if len(hits) == 1:
        return f"it reads as {hits[0]}: give --format {hits[0]}, or --format auto (the default) to detect it"
    return "give --format auto (the default) to detect its format, or one of csim list formats"


def cmd_list(args: argparse.Namespace) -> int:
    registry = _registry(args.what)
    width = max((len(e.name) for e in registry), default=0)
    for e in registry:
        line = f"{e.name:<{width}}  {e.summary}"
        if e.defaults:
            line += f"  [{e.defaults}]"
        print(line)
    return 0


def _registry(what: str):  # type: ignore[no-untyped-def]
    if what == "policies":
        from policies import POLICIES

        return POLICIES
    if what == "scenarios":
        from sim.scenarios import SCENARIOS, _load

        _load()
        return SCENARIOS
    if what == "formats":
        from sim.formats import FORMATS
        from sim.formats import _load as load_formats

        load_formats()
        return FORMATS
    from sim.core.tokenizers import TOKENIZERS

    return TOKENIZERS


def cmd_check(args: argparse.Namespace) -> int:
    from sim.core.params import parse_kv
    from sim.replay.checker import check_policy

    params = parse_kv(args.param)
    progress = _check_progress(args.examples) if sys.stderr.isatty() or args.progress else None
    try:
        report = check_policy(
            args.policy,
            params,
            examples=args.examples,
            seed=args.seed,
            window=args.window,
            scenarios=not args.no_scenarios,
            progress=progress,
        )
    finally:
        if progress is not None and sys.stderr.isatty():
            print(file=sys.stderr, flush=True)
    print(report.render())
    return 0 if report.passed else 1


def _check_progress(examples: int):  # type: ignore[no-untyped-def]
    """A line on stderr saying how many examples have run (shrinking replays counted too, hence "at least")."""
    import time

    t0 = time.perf_counter()
    tty = sys.stderr.isatty()
    last = [-1.0, -1]

    def show(done: int) -> None:
        now = time.perf_counter()
        step = done * 10 // max(examples, 1)
        if (now - last[0] < 0.5 if tty else step == last[1]) and done != examples:
            return
        last[0], last[1] = now, step
        text = f"check: {done} of {examples} examples replayed ({now - t0:.0f} s)"
        print(f"\r{text}" if tty else text, end="" if tty else "\n", file=sys.stderr, flush=True)

    return show


def cmd_demo(args: argparse.Namespace) -> int:
    from sim.report.demo import demo
    from sim.sweep.compare import render

    out = Path(args.out)
    table = demo(out, seeds=tuple(range(args.seeds)), report=not args.no_report)
    print(render(table))
    print(f"\nresults in {out} (csim compare {out}); summary in {out / 'summary.csv'}")
    if not args.no_report:
        print(f"report: {out / 'report' / 'index.html'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csim",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        description="Deterministic simulator of LLM-agent context compaction: replay conversations through "
        "policies with a mock model; measure tokens, cost, retention and invariant violations.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "run",
        help="replay one scenario or recording under one policy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        description="Run one policy over a synthetic scenario or a recorded conversation: a sweep of one "
        "configuration, written as csim sweep writes (OUT/manifest.json, OUT/parts/: runs, requests, facts, "
        "compactions, violations) with each run's log (its logs table). Read it with csim compare, csim report "
        "or sim.api.load.",
    )
    p.add_argument("--policy", required=True, help="registered name (csim list policies) or package.module:Class")
    p.add_argument("-P", "--param", action="append", metavar="NAME=VALUE", help="policy parameter, repeatable")
    src = p.add_argument_group("conversation (one of)")
    src.add_argument("--scenario", help="bundled synthetic scenario (csim list scenarios)")
    src.add_argument("-S", "--scenario-param", action="append", metavar="NAME=VALUE", help="scenario parameter")
    src.add_argument("--conversation", help="a recording, or a folder of them (other files skipped)")
    src.add_argument("--format", default="auto", help="its format (csim list formats; default auto)")
    src.add_argument("--lenient", action="store_true", help="skip malformed records and report each one")
    src.add_argument("--dataset", help="a fetched public dataset (csim datasets list; fetch it first)")
    src.add_argument(
        "--no-probes", action="store_true", help="do not mine retention probes from the recording (sim.formats.probes)"
    )
    p.add_argument("--out", required=True, help="output directory")
    add_run_options(p, calibration=True)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="show what is registered, one line each with defaults")
    p.add_argument("what", choices=("policies", "scenarios", "formats", "tokenizers"))
    p.set_defaults(func=cmd_list)

    p = sub.add_parser(
        "check",
        help="fuzz a policy's invariants with Hypothesis",
        description="Generate conversations (parallel calls, huge results, reverts, pending turns, "
        "/compact) and replay them under the policy with every invariant checked on "
        "every request. Prints how many examples the policy acted in (summarised, dropped, cleared) and how "
        "often its trigger was passed, then a pass with the number of examples, or the shrunk "
        "counterexample: the conversation, the request and the broken invariant. A policy that never "
        "compacted automatically although its trigger was passed fails. Then one run on each bundled "
        "scenario at its default length says how often the policy acted there.",
    )
    p.add_argument("--policy", required=True, help="registered name or package.module:Class (your own policy)")
    p.add_argument("-P", "--param", action="append", metavar="NAME=VALUE", help="policy parameter, repeatable")
    p.add_argument("--examples", type=int, default=200, help="generated conversations to try (default 200)")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    p.add_argument("--window", type=int, default=8_000, help="context window of the small test model (default 8000)")
    p.add_argument(
        "--no-scenarios",
        action="store_true",
        help="skip the one run on each bundled scenario at its default length (200K window) after the examples",
    )
    p.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "demo",
        help="every bundled policy on every bundled scenario: a sweep, its comparison and an HTML report",
        description="Sweep every bundled policy over every bundled scenario into OUT (as csim sweep "
        "does), print the csim compare table, and write the HTML report to "
        "OUT/report/index.html.",
    )
    p.add_argument("--out", default="reports/demo", help="output directory (default reports/demo)")
    p.add_argument("--seeds", type=int, default=3, help="seeds per scenario (default 3)")
    p.add_argument("--no-report", action="store_true", help="skip the HTML report")
    p.set_defaults(func=cmd_demo)

    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


#: Errors of the disk rather than of csim: a full disk or quota, a read-only or forbidden folder.
_STORAGE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG})


def storage_error(exc: OSError) -> str:
    """One line for a write the disk refused: which file, why, and what to do (nothing is left half-written:
    parts, manifests and imported files are written beside their place and renamed into it)."""
    where = f"cannot write {exc.filename}" if exc.filename else "cannot write the output"
    advice = {
        errno.ENOSPC: "free some space (or choose another --out) and run the same command again: finished work is kept",
        errno.EDQUOT: "free some of your quota (or choose another --out) and run the same command again",
        errno.EFBIG: "the file system refuses a file this large; choose another --out",
    }.get(exc.errno or 0, "choose an --out folder you can write to")
    return f"{where}: {exc.strerror or exc}; {advice}"


def main(argv: Sequence[str] | None = None) -> int:
    return _main(argv)[0]


#: The commands whose process ends at once when they return (:func:`entry`): they compute and write files, which are
#: closed by then. Those that run notebooks (report, demo) end the usual way, so their kernels' handlers run.
ENDS_AT_ONCE = frozenset(
    {"cmd_run", "cmd_sweep", "cmd_compare", "cmd_calibrate", "cmd_fidelity", "cmd_import", "cmd_list", "cmd_check"}
)


def entry() -> None:
    """The ``csim`` command and ``python -m sim``: :func:`main`, then, for the commands of :data:`ENDS_AT_ONCE`, the
    process ends without tearing the interpreter down.

    Freeing every object of a finished replay one by one costs a short ``csim run`` a tenth of its time (0.05 s
    of 0.58 s on the largest shared session) for a process that is about to end: its files are closed by then,
    and stdout and stderr are flushed here. Only a return ends so; an exception (a bug's traceback) ends the
    usual way, as it does under a profiler or tracer (``python -m cProfile``, coverage: they write at exit) and
    with ``CSIM_FULL_EXIT=1``."""
    rc, command = _main(None)
    watched = sys.getprofile() is not None or sys.gettrace() is not None
    if command not in ENDS_AT_ONCE or watched or os.environ.get("CSIM_FULL_EXIT"):
        sys.exit(rc)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away: nothing more can be said
        pass
    os._exit(rc)


def _main(argv: Sequence[str] | None) -> tuple[int, str]:
    """The exit status and the command's function name."""
    for stream in (sys.stdout, sys.stderr):  # a path with undecodable bytes prints escaped, never raises
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    command = getattr(args.func, "__name__", "")
    return _command(args), command


def _command(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except CsimError as exc:
        print(f"csim: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _reader_gone()
    except OSError as exc:
        if exc.errno not in _STORAGE_ERRORS:
            raise
        print(f"csim: error: {storage_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("csim: interrupted", file=sys.stderr)
        return 130


def _reader_gone() -> int:
    """The program reading csim's output closed it early (``csim compare DIR | head``): nothing went wrong here,
    so stop quietly; what is still buffered goes nowhere, instead of a second error at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    entry()
