"""``csim sweep`` and ``csim compare``: argument parsing only; the work is in sim.sweep.grid and sim.sweep.compare."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sim.core.errors import InvalidConfig

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
        help="keep each run's event log in its part (logs.parquet; about as large as the other tables together), "
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
        help="compare the configurations of a sweep: means, intervals, paired differences, Pareto",
        description="Per configuration: mean and 95%% bootstrap interval over conversations of cumulative input "
        "tokens, cost, peak context, retention recall, compactions, overflows and violations; the "
        "paired difference against the baseline; the Pareto frontier of cost against retention. "
        "Writes RESULTS/summary.parquet and summary.csv.",
    )
    p.add_argument("results", help="a csim sweep results directory (or a csim run output directory)")
    p.add_argument("--baseline", help="configuration label to pair against (default: none, if swept)")
    p.add_argument(
        "--by",
        action="append",
        default=[],
        choices=("source", "source_kind"),
        help="also split by source (scenario, dataset or file)",
    )
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
    from sim.sweep.compare import compare, render, write_summary
    from sim.sweep.results import load_results

    results = load_results(args.results)
    by = list(dict.fromkeys(args.by))
    table = compare(results, args.baseline, by)
    print(render(table, by))
    parquet, csv = write_summary(table, Path(args.results))
    print(f"\nwrote {parquet} and {csv}")
    return 0
