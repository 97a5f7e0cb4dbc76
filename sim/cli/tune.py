"""``csim tune``: argument parsing only; the search is :mod:`sim.sweep.tune`, the run :mod:`sim.sweep.tunerun`, the
printed answer :mod:`sim.sweep.tuneview`."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from sim.core.errors import InvalidConfig

EPILOG = """examples:
  csim tune --policy codex --policy gemini-cli --scenario coding-agent --seeds 0-5 --out tunes/a
  csim tune --policy all --conversation ../shared/recorded/claude-code/*.jsonl --budget 10m --out tunes/cc
  csim tune --policy cloudflare-os --space trigger_ratio=0.6:0.9 --constraint success>=0.95 --scenario research-agent
            --out tunes/cf
  csim tune --policy codex --by window --windows 200000,1000000 --scenario support-chat --out tunes/win
  csim report tunes/a --out reports/tune-a
"""


class _Scenario(argparse.Action):
    """``--scenario NAME`` opens a scenario; ``-S NAME=VALUE`` adds a parameter to the latest one."""

    def __init__(self, *args: Any, opens: bool, **kwargs: Any) -> None:
        self.opens = opens
        super().__init__(*args, **kwargs)

    def __call__(self, parser: Any, ns: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        groups = list(getattr(ns, self.dest) or [])
        if self.opens:
            groups.append((values, []))
        elif not groups:
            raise argparse.ArgumentError(
                self, f"{option_string} {values} must follow the --scenario NAME it applies to"
            )
        else:
            groups[-1][1].append(values)
        setattr(ns, self.dest, groups)


def register(sub: Any) -> None:
    from sim.cli.options import add_run_options
    from sim.sweep.executors import EXECUTORS

    p = sub.add_parser(
        "tune",
        help="search policy settings for the cheapest that keep retention, checked on held-out conversations",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        description="Per policy, search its declared settings (TUNABLE, beside its Config; --space to override) for "
        "the best objective (cache-aware cost by default) under constraints on bounds of paired bootstrap intervals "
        "(default: retention's lower bound no lower than the default settings', and no overflow), on a tuning split "
        "of the conversations; then check the answer on the held-out split. Runs go into OUT/store as sweep parts: "
        "running it again resumes and never reruns a finished run. Writes OUT/tune.json and OUT/answer.txt; then: "
        "csim report OUT.",
    )
    p.add_argument("--out", required=True, help="tune folder (created; reused to resume)")
    g = p.add_argument_group("what to tune")
    g.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="NAME",
        help="a registered policy, package.module:Class, or 'all' (every policy that declares a space); repeatable",
    )
    g.add_argument(
        "--space",
        action="append",
        default=[],
        metavar="FIELD=SPEC",
        help="a field's range: LOW:HIGH, LOW:HIGH:STEP, LOW:HIGH:log or A,B,C; overrides the declared one for "
        "every tuned policy that has the field",
    )
    g.add_argument("--objective", default="cost", help="run column to optimise (default cost: total_cost_usd)")
    g.add_argument("--direction", choices=("minimize", "maximize"), default="minimize")
    g.add_argument(
        "--constraint",
        action="append",
        default=None,
        metavar="COLUMN>=X",
        help="COLUMN>=X (on the lower bound), COLUMN<=X or COLUMN==0 (on the upper bound); X a number or 'default' "
        "(the default settings' bound), with a margin if wanted (retention>=default-0.01: at most 0.01 below it, a "
        "non-inferiority test); repeatable; default: retention>=default and overflows<=0; 'none' for none",
    )
    g.add_argument("--budget", default="20", help="trials per policy (e.g. 30) or time per policy (600s, 10m)")
    g.add_argument("--sampler", choices=("auto", "grid", "tpe"), default="auto", help="auto: a grid when it fits")
    g.add_argument("--batch", type=int, default=4, help="trials proposed and run together (default 4)")
    g.add_argument("--seed", type=int, default=0, help="seed of the sampler and the held-out split (default 0)")
    g.add_argument("--holdout", type=float, default=0.3, help="share of conversations held out (default 0.3)")
    g.add_argument("--by", choices=("window",), help="window: repeat per --windows and print the trigger per window")
    g.add_argument(
        "--windows",
        default="128000,200000,272000,1000000",
        help="context windows for --by window (default 128000,200000,272000,1000000)",
    )
    c = p.add_argument_group("conversations")
    c.add_argument("--scenario", dest="scenarios", action=_Scenario, opens=True, metavar="NAME", help="repeatable")
    c.add_argument("-S", dest="scenarios", action=_Scenario, opens=False, metavar="NAME=VALUE", help="its parameter")
    c.add_argument("--conversation", action="extend", nargs="+", default=[], metavar="PATH", help="recordings")
    c.add_argument("--format", default="auto", help="format of the --conversation files (default auto)")
    c.add_argument("--lenient", action="store_true", help="skip malformed records of the recordings")
    c.add_argument("--seeds", default="0-4", help="scenario seeds, e.g. 0-9 (default 0-4); recordings use the first")
    x = p.add_argument_group("where it runs")
    x.add_argument("--executor", choices=EXECUTORS, default="local")
    x.add_argument("--workers", type=int, help="worker processes (default: all cores)")
    x.add_argument("--scheduler", help="Dask scheduler address for --executor dask")
    x.add_argument("--quiet", action="store_true", help="no progress output")
    add_run_options(p, seed=False)
    p.set_defaults(func=cmd_tune)


def parse_budget(text: str) -> Any:
    """``30`` trials, or ``600s``/``10m``/``1h`` of wall time per policy."""
    from sim.sweep.tune import Budget

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*", text)
    if not m:
        raise InvalidConfig(f"--budget {text!r}: give trials (e.g. 30) or a time (600s, 10m, 1h)")
    value, unit = float(m.group(1)), m.group(2)
    if unit is None:
        if not value.is_integer() or value < 1:
            raise InvalidConfig(f"--budget {text!r}: a trial count is a whole number of at least 1")
        return Budget(trials=int(value))
    return Budget(trials=None, seconds=value * {"s": 1, "m": 60, "h": 3600}[unit])


def spec_of(args: argparse.Namespace) -> Any:
    from policies import POLICIES
    from sim.cli.options import option_values
    from sim.core.config import run_option_defaults
    from sim.sweep.space import declared_space
    from sim.sweep.spec import spec_from_flags
    from sim.sweep.tune import TuneSpec
    from sim.sweep.tunestats import DEFAULT_CONSTRAINTS

    refs: list[str] = []
    for ref in args.policy:
        if ref == "all":
            refs += [n for n in POLICIES.names() if declared_space(n)]
        else:
            refs.append(ref)
    refs = list(dict.fromkeys(refs))
    defaults = {**run_option_defaults(), "summariser": None}
    given_run = {k: v for k, v in option_values(args).items() if k in defaults and v != defaults[k]}
    if args.by == "window" and "window" in given_run:
        raise InvalidConfig("--by window tunes per --windows; give the windows there, not --window")
    sweep = spec_from_flags(
        [(r, []) for r in refs] or [("none", [])],
        scenarios=args.scenarios or [],
        conversations=args.conversation,
        format=args.format,
        lenient=args.lenient,
        seeds=args.seeds,
        run=given_run,
    )
    constraints = DEFAULT_CONSTRAINTS if args.constraint is None else tuple(c for c in args.constraint if c != "none")
    windows: tuple[int, ...] = ()
    if args.by == "window":
        try:
            windows = tuple(int(w.replace("_", "")) for w in args.windows.split(",") if w.strip())
        except ValueError:
            raise InvalidConfig(f"--windows {args.windows!r}: give token counts, e.g. 200000,1000000") from None
    return TuneSpec(
        tuple(refs),
        sweep.sources,
        sweep.seeds,
        sweep.run,
        objective=args.objective,
        direction=args.direction,
        constraints=tuple(constraints),
        space=tuple(args.space),
        holdout=args.holdout,
        seed=args.seed,
        windows=windows,
        sampler=args.sampler,
        batch=args.batch,
    )


def cmd_tune(args: argparse.Namespace) -> int:
    from sim.sweep.tunerun import run_tune
    from sim.sweep.tuneview import render

    spec = spec_of(args)
    budget = parse_budget(args.budget)
    result = run_tune(
        spec,
        args.out,
        budget,
        executor=args.executor,
        workers=args.workers,
        scheduler=args.scheduler,
        progress=not args.quiet,
    )
    text = render(result)
    (Path(args.out) / "answer.txt").write_text(text + "\n", encoding="utf-8")
    print(text)
    runs = result["runs"]
    print(
        f"\n{runs['ran']} runs run now; {args.out}/store holds {runs['stored']}; "
        f"wrote {args.out}/tune.json and answer.txt; next: csim report {args.out} --out DIR",
        file=sys.stderr,
    )
    return 0
