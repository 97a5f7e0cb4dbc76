"""What the report notebooks read: results (a sweep or one run), a run's log, and the choices they make.

Results come from :func:`sim.sweep.results.load_results`. The run notebook also wants the run log (summary
texts, the view at every compaction). ``csim run`` writes it beside its results; a sweep does not keep
logs, so :func:`run_log` replays the one run from the sweep's manifest. A run is deterministic, so the
replay is that run (the replayed summary is checked against the stored row), and costs one run.

Choices a report makes without being told (which conversation to draw for every policy, which run to
show in depth) live here, so the notebooks, ``csim report`` and the tests agree on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sim.core.errors import InvalidConfig
from sim.sweep.results import Results


@dataclass(frozen=True)
class RunLog:
    """A run's log as the notebooks use it: the header line and the events as plain dicts."""

    header: dict[str, Any]
    events: list[dict[str, Any]]
    source: str  # where it came from: the log file, or "replayed from the sweep manifest"


def context_window(results: Results) -> int | None:
    """The mock model's context window in tokens, from the sweep spec or the run's config."""
    run = results.manifest.get("spec", {}).get("run", {})
    if run.get("window"):
        return int(run["window"])
    model = results.manifest.get("config", {}).get("model", {})
    return int(model["context_window"]) if model.get("context_window") else None


def choose_conversation(results: Results) -> str:
    """The conversation (and seed) whose runs compact most, then with the largest peak context: the most
    telling one to draw for every policy. Returns the conversation id; ties go to the smaller id."""
    g = (
        results.runs.groupby(["conversation", "seed"], sort=True)
        .agg(c=("compaction_count", "sum"), peak=("peak_context_tokens", "max"))
        .reset_index()
    )
    g = g.sort_values(["c", "peak", "conversation", "seed"], ascending=[False, False, True, True], kind="stable")
    return str(g["conversation"].iloc[0])


def choose_run(results: Results) -> str:
    """The run with the most compactions, then most violations, then lowest retention, then smallest key."""
    r = results.runs.assign(_ret=results.runs["retention_recall"].astype("float64").fillna(1.0))
    r = r.sort_values(
        ["compaction_count", "violation_count", "_ret", "run_key"], ascending=[False, False, True, True], kind="stable"
    )
    return str(r["run_key"].iloc[0])


def run_row(results: Results, run_key: str) -> pd.Series:
    """The runs-table row of ``run_key``; an unknown key names a few that exist."""
    rows = results.runs.loc[results.runs["run_key"] == run_key]
    if rows.empty:
        some = ", ".join(results.runs["run_key"].head(5))
        raise InvalidConfig(
            f"run {run_key!r} is not in these results (e.g. {some}); the run_key column of runs lists them all"
        )
    return rows.iloc[0]


def run_log(results: Results, path: str | Path, run_key: str) -> RunLog:
    """The log of one run: the one its part kept (``csim run``, or ``csim sweep`` asked to keep logs), or,
    when the sweep kept none, the run replayed from the sweep's manifest."""
    from sim.sweep.results import stored_log

    row = run_row(results, run_key)
    kept = stored_log(path, run_key)
    if kept is not None:
        header, events = kept
        return RunLog(header, events, f"kept in {header['source']}")
    return _replay(results, row)


def _replay(results: Results, row: pd.Series) -> RunLog:
    """Run ``row`` again from the sweep's spec: the same plan, conversation, policy and run config."""
    from policies.base import make_policy
    from sim.core.log import to_plain
    from sim.replay.engine import run
    from sim.sweep.grid import PolicyGrid, Source, SweepSpec, plan

    s = results.manifest.get("spec")
    if not isinstance(s, dict):
        raise InvalidConfig("the sweep manifest has no spec to replay the run from")
    spec = SweepSpec(
        policies=tuple(
            PolicyGrid(g["policy"], tuple((k, tuple(v)) for k, v in g.get("params", {}).items())) for g in s["policies"]
        ),
        sources=tuple(
            Source(
                src["kind"],
                src["name"],
                tuple(src.get("params", {}).items()),
                src.get("format", "auto"),
                bool(src.get("lenient", False)),
            )
            for src in s["sources"]
        ),
        seeds=tuple(s["seeds"]),
        run=tuple(sorted(s.get("run", {}).items())),
        name=s.get("name", ""),
    )
    tasks, shared, _ = plan(spec)
    for task in tasks:
        for planned in task.runs:
            same = planned.run_key == row["run_key"] or (
                planned.label == row["config"]
                and task.unit.conversation == row["conversation"]
                and task.unit.seed == row["seed"]
                and task.unit.checksum == row["conversation_checksum"]
            )
            if not same:
                continue
            result = run(make_policy(planned.policy, dict(planned.params)), shared[task.unit.key], task.run_config)
            header = {
                "run_id": result.run_id,
                "conversation": result.conversation_id,
                "policy": {"policy": result.policy, "params": result.params},
                "seed": result.seed,
            }
            source = "replayed from the sweep manifest"
            if (result.summary.get("total_cost_usd"), result.summary.get("compaction_count")) != (
                row["total_cost_usd"],
                row["compaction_count"],
            ):
                source += (
                    " (this csim gives another result than the stored run: cost "
                    f"{result.summary.get('total_cost_usd')} vs {row['total_cost_usd']} USD, "
                    f"{result.summary.get('compaction_count')} vs {row['compaction_count']} compactions; "
                    "the log shown is the replay)"
                )
            return RunLog(header, [to_plain(e) for e in result.log], source)
    raise InvalidConfig(
        f"run {row['run_key']!r} ({row['config']} on {row['conversation']} seed {row['seed']}) is "
        "not in the sweep's plan: was the sweep made by another version of csim?"
    )


__all__ = ["RunLog", "choose_conversation", "choose_run", "context_window", "run_log", "run_row"]
