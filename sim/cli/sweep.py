"""``csim sweep`` and ``csim compare``: argument parsing only; the work is in sim.sweep.grid and sim.sweep.compare."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sim.core.errors import InvalidConfig, UnknownName

SWEEP_EPILOG = """examples:
  csim sweep datasets/sweeps/example.toml --out results/example
  csim sweep --policy cloudflare-os -P trigger_ratio=0.7,0.8,0.9 --policy none \\
             --scenario coding-agent --seeds 0-19 --out results/cf
  csim sweep --policy effect-agent -P context_token_limit=100000,150000 \\
             --conversation ../shared/recorded/claude-code/*.jsonl --format auto --out results/cc
  csim sweep SPEC.toml --out results/x --executor dask --scheduler tcp://10.0.0.5:8786
  csim compare results/cf --baseline none
"""


class _Group(argparse.Action):
    """``--policy``/``--scenario`` open a new group; ``-P``/``-S`` add parameter lists to the latest one."""

    def __init__(self, *args: Any, opens: bool, **kwargs: Any) -> None:
        self.opens = opens
        super().__init__(*args, **kwargs)

    def __call__(
        self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, option_string: str | None = None
    ) -> None:
        groups = list(getattr(ns, self.dest) or [])
        if self.opens:
            groups.append((values, []))
        elif not groups:
            opener = "--policy" if self.dest == "grid_policies" else "--scenario"
            raise argparse.ArgumentError(self, f"{option_string} {values} must follow a {opener} NAME it applies to")
        else:
            groups[-1][1].append(values)
        setattr(ns, self.dest, groups)


def register(sub: Any) -> None:
    from sim.cli.options import add_run_options
    from sim.sweep.executors import EXECUTORS

    p = sub.add_parser(
        "sweep",
        help="run a grid of policy settings over many conversations and seeds, resumably",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=SWEEP_EPILOG,
        description="Run every configuration (policy x parameter values) over every conversation (scenarios x "
        "seeds, datasets, recordings) into RESULTS: manifest.json and Parquet parts. Running it again "
        "skips finished runs, also after a crash. Give a spec file (datasets/FORMAT-sweep.md) or the "
        "grid as flags. Then: csim compare RESULTS.",
    )
    p.add_argument("spec", nargs="?", help="sweep spec (TOML); or give the grid with the flags below")
    p.add_argument("--out", required=True, help="results directory (created; reused to resume)")
    g = p.add_argument_group("grid (instead of a spec file)")
    g.add_argument(
        "--policy",
        dest="grid_policies",
        action=_Group,
        opens=True,
        metavar="NAME",
        help="a policy (registered name or package.module:Class); repeat for more",
    )
    g.add_argument(
        "-P",
        "--param",
        dest="grid_policies",
        action=_Group,
        opens=False,
        metavar="NAME=V1,V2",
        help="values to try for a parameter of the preceding --policy; repeat for more parameters",
    )
    g.add_argument(
        "--scenario",
        dest="grid_scenarios",
        action=_Group,
        opens=True,
        metavar="NAME",
        help="a synthetic scenario (one conversation per seed); repeatable",
    )
    g.add_argument(
        "-S",
        "--scenario-param",
        dest="grid_scenarios",
        action=_Group,
        opens=False,
        metavar="NAME=V1,V2",
        help="parameter of the preceding --scenario (a list makes a grid)",
    )
    g.add_argument("--dataset", action="append", default=[], metavar="NAME", help="a dataset by name; repeatable")
    g.add_argument(
        "--conversation",
        action="extend",
        nargs="+",
        default=[],
        metavar="PATH",
        help="recorded conversation file(s) or folder(s); repeatable, globs from the shell welcome",
    )
    g.add_argument("--format", default="auto", help="format of the --conversation files (default auto)")
    g.add_argument("--lenient", action="store_true", help="skip malformed records of the recordings")
    g.add_argument("--no-probes", action="store_true", help="do not mine retention probes from the recordings")
    g.add_argument("--seeds", default=None, help="seeds, e.g. 0-19 or 0,3,5 (default 0)")
    x = p.add_argument_group("where it runs")
    x.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="local processes (default), dask (--scheduler) or dask-local (a LocalCluster)",
    )
    x.add_argument("--workers", type=int, help="worker processes for local and dask-local (default: all cores)")
    x.add_argument("--scheduler", help="Dask scheduler address for --executor dask, e.g. tcp://HOST:8786")
    x.add_argument("--quiet", action="store_true", help="no progress output")
    x.add_argument(
        "--keep-logs",
        action="store_true",
        help="keep each run's event log in its part (its logs table; about as large as the other tables together), "
        "so csim report's run page reads it instead of replaying the run; runs already done are not redone",
    )
    add_run_options(p, calibration=True)
    for action in p._actions:  # a sweep's seeds are --seeds; --seed would silently mean nothing
        if action.dest == "seed":
            action.help = argparse.SUPPRESS
            action.default = None
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser(
        "compare",
        help="rank the configurations of a sweep: cost, retention, intervals, the frontier, a recommendation",
        description="Per configuration: mean and 95%% bootstrap interval over conversations of cost, retention "
        "and the other run metrics; the paired difference against the baseline; ranked by the objective (cost by "
        "default), with the Pareto frontier (*) and the recommended row (R: the best frontier row that meets every "
        "--require). Recorded conversations also get their recorded bill (their own usage priced) beside the "
        "simulated costs. At most 120 characters wide; --wide prints every column. "
        "Writes RESULTS/summary.parquet and summary.csv (and bills.csv for recordings).",
    )
    p.add_argument("results", help="a csim sweep results directory (or a csim run output directory)")
    p.add_argument("--baseline", help="configuration label to pair against (default: none, if swept)")
    p.add_argument(
        "--by",
        action="append",
        default=[],
        metavar="COLUMN",
        help="rank by this metric (cost_usd by default; any summary metric, e.g. retention, input_tokens, "
        "overflows, or a runs column such as total_cost_usd; lower is better except for retention*, success, "
        "cache_hit and completed); --by source or --by source_kind instead splits the table by source",
    )
    p.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="COLUMN>=X",
        help="a constraint the recommended row must meet, e.g. retention>=0.9, retention_lo>=0.85, overflows==0 "
        "(OP one of >= <= > < ==; repeatable; the first one is also the frontier's second axis)",
    )
    p.add_argument("--wide", action="store_true", help="print every column and the paired differences (wide)")
    p.set_defaults(func=cmd_compare)


def spec_from_args(args: argparse.Namespace) -> Any:
    """The SweepSpec from a spec file or from the grid flags (not both)."""
    from sim.cli.options import option_values
    from sim.core.config import run_option_defaults
    from sim.sweep.spec import load_spec, spec_from_flags

    if args.seed is not None:
        raise InvalidConfig("a sweep takes --seeds (e.g. --seeds 0-19), not --seed")
    defaults = {**run_option_defaults(), "summariser": None}
    given_run = {k: v for k, v in option_values(args).items() if k in defaults and v != defaults[k]}
    grid_given = [
        flag
        for flag, v in (
            ("--policy", args.grid_policies),
            ("--scenario", args.grid_scenarios),
            ("--dataset", args.dataset),
            ("--conversation", args.conversation),
            ("--seeds", args.seeds),
        )
        if v
    ]
    if args.spec:
        if grid_given or given_run:
            flags = grid_given + ["--" + d.replace("_", "-") for d in given_run]
            raise InvalidConfig(
                f"give the grid in the spec file or as flags, not both: {', '.join(flags)} "
                "alongside a spec (put them in the spec's tables; see datasets/FORMAT-sweep.md)"
            )
        return load_spec(args.spec)
    return spec_from_flags(
        args.grid_policies or [],
        scenarios=args.grid_scenarios or [],
        datasets=args.dataset,
        conversations=args.conversation,
        format=args.format,
        lenient=args.lenient,
        seeds=args.seeds,
        run=given_run,
        probes=not args.no_probes,
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    from sim.sweep.driver import run_sweep
    from sim.sweep.grid import settings

    spec = spec_from_args(args)
    n_configs = len(settings(spec))
    if not args.quiet:
        print(
            f"sweep: {n_configs} configurations x {len(spec.sources)} sources x {len(spec.seeds)} seeds -> {args.out}",
            file=sys.stderr,
        )
    outcome = run_sweep(
        spec,
        args.out,
        executor=args.executor,
        workers=args.workers,
        scheduler=args.scheduler,
        progress=not args.quiet,
        logs=args.keep_logs,
    )
    print(
        f"{outcome.total_runs} runs in the grid: {outcome.ran} run now, {outcome.skipped} already done; "
        f"{outcome.seconds:.1f} s on {outcome.executor}. Results in {outcome.out}; next: csim compare {outcome.out}"
    )
    if len(spec.seeds) > 1 and any(src.kind != "scenario" for src in spec.sources):
        from sim.sweep.results import load_results, seed_note

        note = seed_note(load_results(outcome.out))
        if note:
            print(f"note: {note}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from sim.sweep.bills import recorded_bills
    from sim.sweep.compare import compare, render, write_summary
    from sim.sweep.ranked_view import bill_lines, render_ranked
    from sim.sweep.ranking import DEFAULT_OBJECTIVE, column_of, parse_constraint, rank, short_names
    from sim.sweep.results import load_results

    splits = ("source", "source_kind")
    by = list(dict.fromkeys(b for b in args.by if b in splits))
    objectives = list(dict.fromkeys(b for b in args.by if b not in splits))
    if len(objectives) > 1:
        raise InvalidConfig(f"rank by one metric at a time, not {', '.join(objectives)} (--by takes one metric)")
    objective = objectives[0] if objectives else DEFAULT_OBJECTIVE
    try:
        column_of(objective)
    except UnknownName:
        raise UnknownName("column for --by", objective, [*short_names(), *splits]) from None
    constraints = [parse_constraint(text) for text in args.require]
    results = load_results(args.results)
    table = compare(results, args.baseline, by)
    ranked = rank(table, objective, constraints, group=by)
    print(render(ranked, by) if args.wide else render_ranked(ranked, by, objective, constraints))
    bills, notes = recorded_bills(results.manifest.get("spec", {}).get("sources", []))
    lines = bill_lines(bills, results.runs, ranked, notes)
    if lines:
        print("\n" + "\n".join(lines))
    parquet, csv = write_summary(ranked.sort_index(), Path(args.results))
    wrote = f"{parquet.name} and {csv.name}"
    if not bills.empty:
        bills.to_csv(Path(args.results) / "bills.csv", index=False)
        wrote = f"{parquet.name}, {csv.name} and bills.csv"
    print(f"\nwrote {wrote} in {args.results}")
    return 0
