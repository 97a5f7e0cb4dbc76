"""The default ``csim compare`` table: ranked, marked, and no wider than a terminal (``WIDTH`` characters).

The full table (every metric with its interval, then every paired difference) is ``csim compare --wide``
(:func:`sim.sweep.compare.render`); it runs past 300 characters, which is why the default picks columns: the
rank and marks, the configuration (its label shortened with ``…`` when long), cost with its interval and its
paired difference from the baseline, retention with its interval, task success, overflows, the completed share
and compactions, plus the objective's and each constraint's column when they are others. When a split by source
leaves a label fewer than ``LABEL_MIN`` characters, the least useful columns go first (compactions, completed,
overflows, ...); a label still too long is cut with ``…``. Numbers are
abbreviated: tokens as 12.3K or 1.24M, dollars to four significant places.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sim.sweep.ranking import Constraint, column_of, frontier_axes, metric_of

WIDTH = 120
#: Labels are cut to no fewer characters than this before a column is dropped to make room.
LABEL_MIN = 32
_MONEY = {"cost_usd", "cost_input", "cost_cache_read", "cost_cache_write", "cost_output", "cost_summariser"}
_MONEY |= {"compaction_cost", "extra_cost"}
_TOKENS = {"input_tokens", "peak_context", "trajectory"}
_SHARE = {"retention", "retention_r0", "retention_r1", "retention_r2plus", "success", "cache_hit", "completed"}
_HEAD = {
    "cost_usd": "cost $",
    "retention": "retention",
    "success": "success",
    "overflows": "overfl",
    "completed": "done",
    "compactions": "compact",
    "input_tokens": "input tok",
    "peak_context": "peak ctx",
    "trajectory": "requests",
}


def money(v: float) -> str:
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 10:
        return f"{v:.2f}"
    if a >= 1:
        return f"{v:.3f}"
    return f"{v:.4f}"


def tokens(v: float) -> str:
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.2f}M"
    if a >= 1e4:
        return f"{v / 1e3:.1f}K"
    return f"{v:,.0f}"


def number(short: str, v: object, signed: bool = False) -> str:
    """One value of metric ``short``, abbreviated; ``n/a`` when missing."""
    if v is None or pd.isna(v):
        return "n/a"
    x = float(v)  # type: ignore[arg-type]
    if short in _MONEY:
        text = money(x)
    elif short in _TOKENS:
        text = tokens(x)
    elif short in _SHARE:
        text = f"{x:.3f}"
    else:
        text = f"{x:.2f}"
    return f"+{text}" if signed and x >= 0 else text


def _interval(table: pd.DataFrame, short: str) -> list[str]:
    return [
        "n/a" if pd.isna(lo) else f"{number(short, lo)}–{number(short, hi)}"
        for lo, hi in zip(table[f"{short}_lo"], table[f"{short}_hi"], strict=True)
    ]


def _label(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _build(ranked: pd.DataFrame, keys: Sequence[str], columns: Sequence[str], label_width: int) -> pd.DataFrame:
    marks = np.where(ranked["recommended"], "R*", np.where(ranked["frontier"], "*", ""))
    out: dict[str, object] = {"#": ranked["rank"].to_numpy(), "": marks}
    for k in keys:
        out[k] = [_label(str(v), 24) for v in ranked[k]]
    labels = [_label(str(v), label_width) for v in ranked["config"]]
    pad = max([len("config"), *map(len, labels)])
    out["config".ljust(pad)] = [v.ljust(pad) for v in labels]  # left-aligned: labels read as text
    for col in columns:
        short = metric_of(col)
        head = _HEAD.get(short, short)
        if col.endswith("_ci"):  # cost_usd_ci, retention_ci: the interval of that metric's mean
            short = col.removesuffix("_ci")
            out[f"{'ret' if short == 'retention' else _HEAD.get(short, short).removesuffix(' $')} CI"] = _interval(
                ranked, short
            )
        elif col.endswith("_diff"):
            out[f"Δ {head.removesuffix(' $')}"] = [number(short, v, signed=True) for v in ranked[col]]
        elif col.endswith("_mean"):
            out[head] = [number(short, v) for v in ranked[col]]
        else:
            out[col] = [number(short, v) for v in ranked[col]]
    return pd.DataFrame(out)


def render_ranked(
    ranked: pd.DataFrame,
    by: Sequence[str] = (),
    objective: str = "cost_usd",
    constraints: Sequence[Constraint] = (),
    width: int = WIDTH,
) -> str:
    """The ranked table of :func:`sim.sweep.ranking.rank`'s frame, every line at most ``width`` characters."""
    obj = column_of(objective)
    columns = ["cost_usd_mean", "cost_usd_ci", "cost_usd_diff", "retention_mean", "retention_ci"]
    columns += ["success_mean", "overflows_mean", "completed_mean", "compactions_mean"]
    extra = [c for c in dict.fromkeys([obj, *(k.column for k in constraints)]) if c not in columns]
    columns = [*columns[:2], *extra, *columns[2:]]
    droppable = ["compactions_mean", "completed_mean", "overflows_mean", "cost_usd_diff", "success_mean"]
    needed = max([len(str(v)) for v in ranked["config"]] or [6])
    while True:  # the columns that fit with labels of at least LABEL_MIN (or whole), dropping the least useful
        probe = _build(ranked, by, columns, 1).to_string(index=False)
        rest = max(len(line) for line in probe.splitlines()) - len("config")
        label_width = max(12, width - rest)
        if label_width >= min(needed, LABEL_MIN) or not droppable:
            break
        gone = droppable.pop(0)
        if gone in columns and gone not in extra:
            columns.remove(gone)
    text = _build(ranked, by, columns, label_width).to_string(index=False)
    x_col, y_col = (_name(c) for c in frontier_axes(objective, constraints))
    direction = "higher" if metric_of(obj) in {"retention", "success", "cache_hit", "completed"} else "lower"
    baseline = ranked["baseline"].iloc[0] if len(ranked) else ""
    need = " and ".join(k.text for k in constraints) if constraints else ""
    head = [
        f"Ranked by {_name(obj)} ({direction} is better){', within each ' + '/'.join(by) if by else ''}. "
        f"* = on the Pareto frontier of {x_col} against {y_col}; R = recommended: the best frontier row "
        + (
            f"that meets {need}."
            if need
            else "(no --require given, so simply the best; add e.g. --require retention>=0.9)."
        ),
        "Means over conversations with 95% bootstrap intervals; "
        f"Δ cost = paired difference from baseline {baseline!r}. csim compare --wide prints every column.",
    ]
    infeasible = bool(constraints) and not ranked["recommended"].any()
    lines = [*_wrap(head, width), text]
    ax, ay = frontier_axes(objective, constraints)
    for _, grp in ranked.groupby(list(by), sort=True) if by else [((), ranked)]:
        rec = grp[grp["recommended"]]
        if rec.empty:
            continue
        same = grp[(grp[ax] == rec[ax].iloc[0]) & (grp[ay] == rec[ay].iloc[0]) & ~grp["recommended"]]
        if len(same):
            ties = ", ".join(map(str, same["config"]))
            lines += _wrap([f"R ties with {ties} on both axes; the label broke the tie."], width)
    if infeasible:
        lines += _wrap([f"No configuration on the frontier meets {need}: nothing is recommended."], width)
    return "\n".join(lines)


def _name(column: str) -> str:
    """``cost_usd_mean`` -> ``cost_usd`` (the table's columns are means unless named otherwise)."""
    return column.removesuffix("_mean")


def _wrap(paragraphs: Sequence[str], width: int) -> list[str]:
    return [line for p in paragraphs for line in textwrap.wrap(p, width, break_on_hyphens=False) or [""]]


def bill_lines(bills: pd.DataFrame, runs: pd.DataFrame, ranked: pd.DataFrame, notes: Sequence[str] = ()) -> list[str]:
    """The recorded bill of each recorded conversation beside its simulated costs, at most ``WIDTH`` wide."""
    out = list(_wrap(list(notes), WIDTH))
    if bills.empty:
        return out
    baseline = str(ranked["baseline"].iloc[0])
    rec = ranked.loc[ranked["recommended"], "config"].astype(str).tolist()
    shown = list(dict.fromkeys([baseline, *rec[:1]]))
    per_conv = runs.groupby(["source", "conversation", "config"])["total_cost_usd"].mean()
    out += _wrap(
        [
            "Recorded bill: each recorded conversation's own recorded usage priced at list prices, what it cost when "
            "it ran; quote it as what the session cost. The costs above are simulated replays of the same "
            "conversations under each configuration; compare them with each other, and with the bill to see how "
            "far the simulation is from the recorded client."
        ],
        WIDTH,
    )
    for source, grp in bills.groupby("source", sort=True):
        total = grp["recorded_cost_usd"].sum()
        out.append(
            _label(
                f"  {source}: {len(grp)} recorded conversation{'s' if len(grp) > 1 else ''}, bill ${money(total)}"
                + (f" in all, ${money(total / len(grp))} per conversation (as cost $ is)" if len(grp) > 1 else ""),
                WIDTH,
            )
        )
        for _, row in grp.head(8).iterrows():
            sims = []
            for cfg in shown:
                key = (source, row["conversation"], cfg)
                if key in per_conv.index:
                    sims.append(f"{_label(cfg, 28)} ${money(float(per_conv[key]))}")
            line = f"    {_label(str(row['conversation']), 36)}: bill ${money(row['recorded_cost_usd'])}"
            n = int(row["recorded_requests"])
            line += f" ({n} request{'s' if n != 1 else ''})" + (f"; simulated: {', '.join(sims)}" if sims else "")
            out.append(_label(line, WIDTH))
        if len(grp) > 8:
            out.append(f"    … and {len(grp) - 8} more (all in bills.csv)")
    return out
