"""What the report notebooks read: results (a sweep or one run), a run's log, and the choices they make.

Results come from :func:`sim.sweep.results.load_results`. The run notebook also wants the run log (summary
texts, the view at every compaction). ``csim run`` writes it beside its results; a sweep does not keep
logs, so :func:`run_log` replays the one run from the sweep's manifest. A run is deterministic, so the
replay is that run (the replayed summary is checked against the stored row), and costs one run.

Reading results never imports code they name: a replay builds bundled policies only. A run of a user's
policy (``module:Class`` in the manifest) is replayed only when the caller allows that reference
(``csim report --policy module:Class``); otherwise its log must have been kept (``--keep-logs``).

Choices a report makes without being told (which conversation to draw for every policy, which run to
show in depth) live here, so the notebooks, ``csim report`` and the tests agree on them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from policies import make_policy
from sim.core.errors import CsimError, InvalidConfig, UnknownName
from sim.core.log import to_plain
from sim.replay.engine import run
from sim.sweep.grid import plan, settings
from sim.sweep.results import Results, kept_log_keys, stored_log
from sim.sweep.spec import spec_from_normalised


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


def choose_run(results: Results, among: Collection[str] | None = None) -> str:
    """The run with the most compactions, then most violations, then lowest retention, then smallest key;
    only runs whose keys are ``among`` when it is given (and not empty)."""
    runs = results.runs
    if among:
        runs = runs.loc[runs["run_key"].isin(list(among))]
    r = runs.assign(_ret=runs["retention_recall"].astype("float64").fillna(1.0))
    r = r.sort_values(
        ["compaction_count", "violation_count", "_ret", "run_key"], ascending=[False, False, True, True], kind="stable"
    )
    return str(r["run_key"].iloc[0])


def config_order(results: Results) -> list[str]:
    """The configurations in the sweep's order: by the position of their policy in the spec's ``policies``, then
    by label (the labels of one policy's grid sort by their values)."""
    policies = [str(p.get("policy")) for p in results.manifest.get("spec", {}).get("policies", [])]
    labels = sorted(set(results.runs["config"].astype(str)))

    def place(label: str) -> tuple[int, str]:
        name = label.split(" ", 1)[0]
        return (policies.index(name) if name in policies else len(policies), label)

    return sorted(labels, key=place)


def representative_run(results: Results, among: Collection[str] | None = None) -> str:
    """The run the run page shows by default: of the first configuration (in the sweep's order) that compacted at
    all (a page of a run without compactions shows little), else of the first, the median run by compactions, then
    cost (the lower median; ties by conversation and seed). Typical, not extreme: the run with the most
    compactions is the hardest to read. Only runs whose keys are ``among`` when it is given (and not empty)."""
    runs = results.runs
    if among:
        runs = runs.loc[runs["run_key"].isin(list(among))]
    order = [c for c in config_order(results) if c in set(runs["config"])]
    acting = [c for c in order if (runs.loc[runs["config"] == c, "compaction_count"] > 0).any()]
    config = (acting or order)[0]
    return _median(runs.loc[runs["config"] == config])


def _median(runs: pd.DataFrame) -> str:
    r = runs.sort_values(
        ["compaction_count", "total_cost_usd", "conversation", "seed"], kind="stable", na_position="last"
    ).reset_index(drop=True)
    return str(r["run_key"].iloc[(len(r) - 1) // 2])


def resolve_run(results: Results, ref: str) -> str:
    """The run key ``ref`` names: a run key; ``CONFIG`` (that configuration's median run, as
    :func:`representative_run` takes it); or ``CONFIG:CONVERSATION`` (its median run on that conversation, over
    seeds). An unknown configuration or conversation lists what there is."""
    runs = results.runs
    if ref in set(runs["run_key"]):
        return ref
    configs = config_order(results)
    config, conversation = ref, None
    if ref not in configs:
        # the longest configuration label followed by ":" (a label can hold ":": a module:Class policy)
        heads = [c for c in configs if ref.startswith(c + ":")]
        if not heads:
            raise UnknownName("run (CONFIG, CONFIG:CONVERSATION or a run key) for --run", ref, configs)
        config = max(heads, key=len)
        conversation = ref[len(config) + 1 :]
    mine = runs.loc[runs["config"] == config]
    if conversation is not None:
        convs = sorted(set(mine["conversation"].astype(str)))
        if conversation not in convs:
            raise UnknownName(f"conversation of {config!r} for --run", conversation, convs)
        mine = mine.loc[mine["conversation"] == conversation]
    return _median(mine)


def run_row(results: Results, run_key: str) -> pd.Series:
    """The runs-table row of ``run_key``; an unknown key names a few that exist."""
    rows = results.runs.loc[results.runs["run_key"] == run_key]
    if rows.empty:
        some = ", ".join(results.runs["run_key"].head(5))
        raise InvalidConfig(
            f"run {run_key!r} is not in these results (e.g. {some}); the run_key column of runs lists them all"
        )
    return rows.iloc[0]


def run_log(results: Results, path: str | Path, run_key: str, allow: Collection[str] = ()) -> RunLog:
    """The log of one run: the one its part kept (``csim run``, or ``csim sweep`` asked to keep logs), or,
    when the sweep kept none, the run replayed from the sweep's manifest. A replay imports no code the
    results name: only bundled policies, and ``module:Class`` references listed in ``allow``."""

    row = run_row(results, run_key)
    kept = stored_log(path, run_key)
    if kept is not None:
        header, events = kept
        return RunLog(header, events, f"kept in {header['source']}")
    return _replay(results, row, allow)


def user_code(results: Results, allow: Collection[str] = ()) -> list[str]:
    """The policy references of the sweep's spec that are code to import (``module:Class``) and not allowed."""
    s = results.manifest.get("spec")
    grids = s.get("policies", []) if isinstance(s, dict) else []
    refs = [str(g.get("policy")) for g in grids if isinstance(g, dict)]
    return sorted({r for r in refs if ":" in r and r not in allow})


def replayable(results: Results, path: str | Path, allow: Collection[str] = ()) -> list[str]:
    """Keys of the runs whose log can be shown without importing code the results name: runs whose log was
    kept, and runs of the configurations of bundled (or allowed) policies."""

    refused = user_code(results, allow)
    keys: list[str] = results.runs["run_key"].tolist()
    if not refused:
        return keys
    s = results.manifest.get("spec")
    spec = spec_from_normalised(s, refused) if isinstance(s, dict) else None
    try:
        safe = {st.label for st in settings(spec)} if spec is not None else set()
    except CsimError:  # a bundled name this csim lacks: none of those runs can be replayed either
        safe = set()
    kept = kept_log_keys(path)
    return [k for k, c in zip(keys, results.runs["config"].tolist(), strict=True) if c in safe or k in kept]


def _replay(results: Results, row: pd.Series, allow: Collection[str] = ()) -> RunLog:
    """Run ``row`` again from the sweep's spec: the same plan, conversation, policy and run config. Planning
    builds every policy of the spec, so the grids of code not allowed are left out before it."""

    s = results.manifest.get("spec")
    if not isinstance(s, dict):
        raise InvalidConfig("the sweep manifest has no spec to replay the run from")
    refused = user_code(results, allow)
    if str(row["policy"]) in refused:
        raise InvalidConfig(_refusal(row, refused))
    spec = spec_from_normalised(s, refused)
    if spec is None:
        raise InvalidConfig(_refusal(row, refused))
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
    if refused:
        raise InvalidConfig(_refusal(row, refused))
    raise InvalidConfig(
        f"run {row['run_key']!r} ({row['config']} on {row['conversation']} seed {row['seed']}) is "
        "not in the sweep's plan: was the sweep made by another version of csim?"
    )


def _refusal(row: pd.Series, refused: list[str]) -> str:
    flags = " ".join(f"--policy {r}" for r in refused)
    return (
        f"run {row['run_key']!r} ({row['config']}) kept no log, and replaying it could mean importing "
        f"{', '.join(repr(r) for r in refused)}, code the results name: reading results never imports it. "
        f"Run the sweep with --keep-logs, or allow the import explicitly: csim report ... {flags}"
    )


__all__ = [
    "RunLog",
    "choose_conversation",
    "choose_run",
    "config_order",
    "context_window",
    "replayable",
    "representative_run",
    "resolve_run",
    "run_log",
    "run_row",
    "user_code",
]
