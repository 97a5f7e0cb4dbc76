"""``csim compare``: per configuration, means with bootstrap intervals, paired differences, a Pareto frontier.

Statistical unit: a *conversation* (its id and content checksum). A conversation replayed under several
seeds is averaged over its seeds first, so a recording run with 20 seeds counts once, not 20 times; a
synthetic scenario makes one conversation per seed, so there each seed is a unit. The 95% interval is the
percentile bootstrap of the mean over units (``RESAMPLES`` resamples, from a generator seeded with the
fixed ``BOOTSTRAP_SEED``, so the same results always give the same interval).

The paired difference against the baseline takes, for every (conversation, seed) that both configurations
ran, the configuration's value minus the baseline's; averages over seeds within the conversation; then
bootstraps the mean over conversations. Pairing removes the between-conversation spread that dominates
the raw intervals.

The Pareto frontier is over mean cost (lower is better) and mean retention recall (higher is better): a
configuration is on it when no other configuration is at least as good on both and better on one.
Configurations without a retention figure (no fact was ever needed) are not placed. ``completed`` is the
share of runs that reached the end of the conversation. A run cut short (an overflow, an exhausted budget)
did not do the rest of its task: its retention counts every need it never reached as lost, so a cheap run
that stopped early does not sit on the frontier with a perfect score. ``success`` is the share of a run's tasks
(user requests) done: not left unfinished by a stop, and with ``--agent reactive`` not failed by unrepaired
errors (sim.core.agent); ``trajectory`` the agent requests a run made (a reactive agent's extra ones included).
``retention_r0``, ``retention_r1`` and ``retention_r2plus`` are the recall of the needs judged after 0, 1, and 2 or
more compactions of their source (sim.replay.retention); a run with no need in a round has no figure for it.

The ``pareto`` column here is the fixed cost-against-retention frontier; ``csim compare`` then ranks the table
(sim.sweep.ranking: an objective, requirements, the frontier on their axes, a recommended row) and prints it
narrow (sim.sweep.ranked_view), or with every column by :func:`render` (``--wide``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sim.core.errors import InvalidConfig, UnknownName
from sim.sweep.parts import declared_reasons
from sim.sweep.results import SUMMARY, Results, records, write_parquet

#: Metric column of the runs table -> short name used in the summary's column names.
METRICS: dict[str, str] = {
    "cumulative_input_tokens": "input_tokens",
    "total_cost_usd": "cost_usd",
    "cost_input_usd": "cost_input",
    "cost_cache_read_usd": "cost_cache_read",
    "cost_cache_write_usd": "cost_cache_write",
    "cost_output_usd": "cost_output",
    "summariser_cost_usd": "cost_summariser",
    "compaction_cost_usd": "compaction_cost",
    "cache_hit_share": "cache_hit",
    "peak_context_tokens": "peak_context",
    "retention_recall": "retention",
    "retention_round0": "retention_r0",
    "retention_round1": "retention_r1",
    "retention_round2plus": "retention_r2plus",
    "task_success": "success",
    "agent_requests": "trajectory",
    "reacquisitions": "reacquisitions",
    "repeated_work": "repeated_work",
    "errors_unrepaired": "errors_unrepaired",
    "extra_requests": "extra_requests",
    "extra_cost_usd": "extra_cost",
    "compaction_count": "compactions",
    "overflows": "overflows",
    "undeclared_violations": "violations",
    "declared_violations": "declared",
    "completed": "completed",
}
RESAMPLES = 2000
BOOTSTRAP_SEED = 20_240_601
UNIT = ["source", "conversation", "conversation_checksum"]


def bootstrap_mean(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% percentile-bootstrap interval of the mean; NaNs dropped; deterministic."""
    v = np.asarray(values, dtype="float64")
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return (float("nan"),) * 3
    mean = float(v.mean())
    if len(v) == 1:
        return mean, mean, mean
    rng = np.random.default_rng(np.random.SeedSequence(BOOTSTRAP_SEED))
    means = v[rng.integers(0, len(v), size=(RESAMPLES, len(v)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return mean, float(lo), float(hi)


def default_baseline(configs: Sequence[str]) -> str:
    """``none`` when the sweep has it, else the first configuration in sorted order."""
    return "none" if "none" in configs else sorted(configs)[0]


def compare(results: Results, baseline: str | None = None, by: Sequence[str] = ()) -> pd.DataFrame:
    """The summary table: one row per configuration (per ``by`` group, e.g. ``source``), sorted by label."""
    # results of older code (or frames built by hand) have no declared_violations: none declared
    declared = results.runs.get("declared_violations", pd.Series(0, index=results.runs.index)).fillna(0)
    declared = declared.astype("int64")
    runs = results.runs.assign(
        completed=(results.runs["finish_reason"] == "completed").astype("float64"),
        declared_violations=declared,
        undeclared_violations=results.runs["violation_count"] - declared,
    )
    if runs.empty:
        raise InvalidConfig("no finished runs to compare (is the sweep still running, or was it empty?)")
    for col in by:
        if col not in runs.columns:
            raise UnknownName("column for --by", col, ["source", "source_kind", "policy"])
    configs = sorted(runs["config"].unique())
    if baseline is None:
        baseline = default_baseline(configs)
    elif baseline not in configs:
        raise UnknownName("configuration for --baseline", baseline, configs)
    group_cols = [*by, "config"]
    rows = []
    for keys, grp in runs.groupby(group_cols, sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        row: dict[str, object] = dict(zip(group_cols, keys, strict=True))
        row.update(
            policy=grp["policy"].iloc[0],
            params=grp["params"].iloc[0],
            runs=len(grp),
            conversations=grp.groupby(UNIT).ngroups,
            baseline=baseline,
        )
        per_unit = grp.groupby(UNIT)[list(METRICS)].mean()
        base = runs[(runs["config"] == baseline)]
        for col in by:
            base = base[base[col] == row[col]]
        paired = grp.merge(base, on=[*UNIT, "seed"], suffixes=("", "_base"))
        for metric, short in METRICS.items():
            row[f"{short}_mean"], row[f"{short}_lo"], row[f"{short}_hi"] = bootstrap_mean(per_unit[metric].to_numpy())
            if paired.empty:
                row[f"{short}_diff"] = row[f"{short}_diff_lo"] = row[f"{short}_diff_hi"] = float("nan")
                continue
            diff = paired[metric].astype("float64") - paired[f"{metric}_base"].astype("float64")
            unit_diff = diff.groupby([paired[c] for c in UNIT]).mean().to_numpy()
            row[f"{short}_diff"], row[f"{short}_diff_lo"], row[f"{short}_diff_hi"] = bootstrap_mean(unit_diff)
        row["paired_conversations"] = 0 if paired.empty else paired.groupby(UNIT).ngroups
        v = results.violations
        row["declared_deviations"] = (
            "; ".join(declared_reasons(records(v[v["run_key"].isin(grp["run_key"])]))) if len(v) else ""
        )
        rows.append(row)
    table = pd.DataFrame(rows)
    table["pareto"] = False
    for _, grp in table.groupby(list(by), sort=False) if by else [((), table)]:
        for i in pareto_front(grp["cost_usd_mean"].to_numpy(), grp["retention_mean"].to_numpy()):
            table.loc[grp.index[i], "pareto"] = True
    return table.astype({"pareto": "bool", "runs": "int64", "conversations": "int64", "paired_conversations": "int64"})


def pareto_front(cost: np.ndarray, retention: np.ndarray) -> list[int]:
    """Indices of points not dominated (cost lower-or-equal and retention higher-or-equal, one strictly)."""
    ok = ~(np.isnan(cost) | np.isnan(retention))
    out = []
    for i in np.flatnonzero(ok):
        better = (cost < cost[i]) | (retention > retention[i])
        dominated = ok & (cost <= cost[i]) & (retention >= retention[i]) & better
        if not dominated.any():
            out.append(int(i))
    return out


def write_summary(table: pd.DataFrame, root: Path) -> tuple[Path, Path]:
    parquet, csv = root / SUMMARY, root / "summary.csv"
    write_parquet(table, parquet)
    table.to_csv(csv, index=False)
    return parquet, csv


# -- the printed table ---------------------------------------------------------------------------------------
_FORMATS = {
    "input_tokens": "{:,.0f}",
    "cost_usd": "{:,.4f}",
    "cache_hit": "{:.1%}",
    "peak_context": "{:,.0f}",
    "retention": "{:.3f}",
    "success": "{:.2f}",
    "trajectory": "{:,.1f}",
    "compactions": "{:.2f}",
    "overflows": "{:.2f}",
    "violations": "{:.2f}",
    "declared": "{:.2f}",
    "completed": "{:.2f}",
}
#: The columns ``csim compare`` prints (all of METRICS are in the summary file and the report).
_HEAD = {
    "input_tokens": "input tokens",
    "cost_usd": "cost $",
    "cache_hit": "cache read",
    "peak_context": "peak context",
    "retention": "retention",
    "success": "success",
    "trajectory": "requests",
    "compactions": "compactions",
    "overflows": "overflows",
    "violations": "violations",
    "declared": "declared",
    "completed": "completed",
}


def _cell(table: pd.DataFrame, i: int, short: str, suffix: str = "", signed: bool = False) -> str:
    fmt = _FORMATS[short]
    if signed:
        fmt = fmt.replace("{:", "{:+")
    m, lo, hi = (
        (table[f"{short}{suffix}{p}"].iloc[i] for p in ("", "_lo", "_hi"))
        if suffix
        else (table[f"{short}_{p}"].iloc[i] for p in ("mean", "lo", "hi"))
    )
    if pd.isna(m):
        return "n/a"
    return f"{fmt.format(m)} [{fmt.format(lo)}, {fmt.format(hi)}]"


def render(table: pd.DataFrame, by: Sequence[str] = ()) -> str:
    """``csim compare --wide``: two tables with every printed metric, means with 95% intervals, then paired
    differences against the baseline; in the frame's row order (a ranked frame: best first, with its rank)."""
    keys = [*by, "config"]
    ranks = {}
    if "rank" in table.columns:  # a frame from sim.sweep.ranking.rank: its order, its rank and marks
        marks = np.where(table["recommended"], "R", "")
        ranks = {"rank": table["rank"], "rec": marks}
    first = pd.DataFrame(
        {
            **ranks,
            **{k: table[k] for k in keys},
            "runs": table["runs"],
            "convs": table["conversations"],
            **{_HEAD[s]: [_cell(table, i, s) for i in range(len(table))] for s in _HEAD},
            "pareto": np.where(table["pareto"], "*", ""),
        }
    )
    baseline = table["baseline"].iloc[0]
    diffs = [
        "input_tokens",
        "cost_usd",
        "peak_context",
        "retention",
        "success",
        "trajectory",
        "compactions",
        "violations",
    ]
    second = pd.DataFrame(
        {
            **{k: table[k] for k in keys},
            "pairs": table["paired_conversations"],
            **{"Δ " + _HEAD[s]: [_cell(table, i, s, "_diff", signed=True) for i in range(len(table))] for s in diffs},
        }
    )
    second = second[table["config"] != baseline]
    lines = [
        "Mean [95% bootstrap CI over conversations]; * = on the Pareto frontier of cost against retention; "
        "violations are undeclared ones, declared = the modelled system's documented deviations"
        + ("; rank and rec (R = recommended) as in the default table" if ranks else ""),
        first.to_string(index=False),
        "",
        f"Paired difference against baseline {baseline!r} (configuration minus baseline, same conversations and seeds)",
        second.to_string(index=False) if len(second) else "(no other configuration)",
    ]
    declared = [
        (" / ".join(str(table[k].iloc[i]) for k in keys), str(table["declared_deviations"].iloc[i]))
        for i in range(len(table))
        if "declared_deviations" in table.columns and table["declared_deviations"].iloc[i]
    ]
    if declared:
        lines += ["", "Declared deviations (violations the modelled system makes by design, counted over all runs):"]
        lines += [f"  {label}: {text}" for label, text in declared]
    return "\n".join(lines)
