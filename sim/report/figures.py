"""Figures and tables of the ``compare`` report: frames in, a matplotlib Figure or a small frame out.

Every figure gives each configuration the same colour (:func:`colours`, keyed by sorted config
label), labels its axes with units and has a legend. :func:`show` and :func:`table` wrap a figure or
frame in HTML with a stable id and a caption, which is how the exported report (and its test) finds
each one; the PNG is written without metadata, so the same results give the same bytes.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Mapping

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from sim.sweep.compare import compare
from sim.sweep.results import Results  # noqa: E402

plt.rcParams.update(
    {
        "figure.dpi": 100,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.fontsize": 9,
        "font.size": 10,
    }
)

#: tab10 then the light half of tab20: 20 distinguishable colours before any repeats.
_PALETTE = [*plt.get_cmap("tab10").colors, *plt.get_cmap("tab20").colors[1::2]]  # type: ignore[attr-defined]


def colours(labels: Iterable[str]) -> dict[str, tuple[float, float, float]]:
    """One colour per configuration label, assigned in sorted label order: stable across every figure."""
    return {lab: _PALETTE[i % len(_PALETTE)] for i, lab in enumerate(sorted(set(labels)))}


class Html:
    """An HTML fragment that Jupyter and nbconvert display as HTML (``_repr_html_``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return "<html fragment; open in Jupyter or the exported report>"


#: The tallest a figure is drawn, in inches at the report's 100 dpi: with its labels, under 2,000 pixels.
MAX_HEIGHT_INCHES = 18.0


def show(fig: Figure, ident: str, caption: str) -> Html:
    """The figure as an embedded PNG inside ``<figure id="fig-IDENT">`` with a caption (also the alt text)."""
    buf = io.BytesIO()
    w, h = fig.get_size_inches()
    if h > MAX_HEIGHT_INCHES:  # a figure sized by its rows (configurations, invariants) stays under 2,000 pixels
        fig.set_size_inches(w, MAX_HEIGHT_INCHES)
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    cap = html.escape(caption)
    return Html(
        f'<figure id="fig-{ident}" class="csim-figure" style="margin:0 0 1.5em 0">'
        f'<img alt="{cap}" src="data:image/png;base64,{data}" style="max-width:100%"/>'
        f'<figcaption style="font-size:0.9em;color:#444">{cap}</figcaption></figure>'
    )


_TABLE_CSS = (
    "<style>.csim-table {font-size: 0.85em} .csim-table th, .csim-table td {text-align: left !important; "
    "vertical-align: top; padding: 0.25em 0.6em !important} "
    ".csim-table-wrap {overflow-x: auto; margin-bottom: 1.5em}</style>"
)


def table(frame: pd.DataFrame, ident: str, caption: str) -> Html:
    """A frame as an HTML table inside ``<div id="table-IDENT">`` with a caption; no index column, headings
    with spaces for underscores, text left-aligned."""
    shown = frame.rename(columns=lambda c: str(c).replace("_", " "))
    body = (
        shown.to_html(index=False, escape=True, border=0, classes="dataframe csim-table", na_rep="")
        if len(shown)
        else "<p><i>None.</i></p>"
    )
    return Html(
        f'{_TABLE_CSS}<div id="table-{ident}" class="csim-table-wrap"><p><b>{html.escape(caption)}</b></p>{body}</div>'
    )


def note(text: str) -> Html:
    """A short paragraph (for an empty section: say why there is no figure)."""
    return Html(f"<p><i>{html.escape(text)}</i></p>")


# -- the compare table ------------------------------------------------------------------------------------
def summary(results: Results) -> pd.DataFrame:
    """Per configuration over all runs: :func:`sim.sweep.compare.compare` (bootstrap CIs, Pareto flag)."""
    return compare(results)


_METRICS = {  # short name in the compare table -> (heading with unit, format)
    "cost_usd": ("cost per conversation (USD)", "{:,.3f}"),
    "cache_hit": ("prompt read from cache (%)", "{:.1f}"),
    "retention": ("retention (%)", "{:.1f}"),
    "success": ("task success (%)", "{:.1f}"),
    "trajectory": ("agent requests per run", "{:,.1f}"),
    "input_tokens": ("cumulative input (tokens)", "{:,.0f}"),
    "peak_context": ("peak context (tokens)", "{:,.0f}"),
    "compactions": ("compactions per run", "{:.2f}"),
    "overflows": ("overflows per run", "{:.2f}"),
    "violations": ("undeclared violations per run", "{:.2f}"),
    "declared": ("declared deviations per run", "{:.2f}"),
}


def _cell(row: pd.Series, short: str, suffix: str = "", signed: bool = False) -> str:
    fmt = _METRICS[short][1].replace("{:", "{:+") if signed else _METRICS[short][1]
    scale = 100.0 if short in ("retention", "cache_hit", "success") else 1.0
    names = (
        (f"{short}{suffix}", f"{short}{suffix}_lo", f"{short}{suffix}_hi")
        if suffix
        else (f"{short}_mean", f"{short}_lo", f"{short}_hi")
    )
    m, lo, hi = (row[n] * scale for n in names)
    if pd.isna(m):
        return "n/a"
    return f"{fmt.format(m)} [{fmt.format(lo)},\u00a0{fmt.format(hi)}]"  # wraps before the interval, not in it


def compare_tables(results: Results, computed: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The ``csim compare`` table (the stored one if ``csim compare`` ran, else computed), as two readable
    frames: means with 95% bootstrap CIs, and paired differences against the baseline; and the baseline."""
    t = results.summary if results.summary is not None and len(results.summary) else computed
    t = summary(results) if t is None else t
    keys = [c for c in t.columns if c in ("source", "source_kind", "policy_group")] + ["config"]
    metrics = {s: m for s, m in _METRICS.items() if f"{s}_mean" in t.columns}  # a summary stored by older code
    means = pd.DataFrame(
        {
            **{k: t[k] for k in keys},
            "runs": t["runs"],
            "conversations": t["conversations"],
            **{head: [_cell(r, s) for _, r in t.iterrows()] for s, (head, _) in metrics.items()},
            "Pareto": np.where(t["pareto"], "yes", ""),
        }
    )
    base = t[t["config"] != t["baseline"]]
    diffs = pd.DataFrame(
        {
            **{k: base[k] for k in keys},
            "paired conversations": base["paired_conversations"],
            **{
                f"Δ {head}": [_cell(r, s, "_diff", True) for _, r in base.iterrows()]
                for s, (head, _) in metrics.items()
            },
        }
    )
    return means, diffs, str(t["baseline"].iloc[0])


def declared_table(results: Results, computed: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per configuration, its declared deviations over all runs and why (the ``csim compare`` table's
    ``declared_deviations``): one row per configuration that has any."""
    t = results.summary if results.summary is not None and len(results.summary) else computed
    t = summary(results) if t is None else t
    cols = ["config", "declared deviations (all runs), and why"]
    if "declared_deviations" not in t.columns:
        return pd.DataFrame(columns=cols)
    rows = t[t["declared_deviations"].fillna("") != ""]
    return pd.DataFrame({cols[0]: rows["config"].to_numpy(), cols[1]: rows["declared_deviations"].to_numpy()})


def headline(results: Results, conversation: str) -> Html:
    """The report's title and what it covers: runs, configurations, conversations, seeds, sources."""
    r = results.runs
    sources = ", ".join(sorted(r["source"].unique()))
    return Html(
        f"<h1>Policy comparison</h1><p>{len(r)} runs: {r['config'].nunique()} configurations on "
        f"{r['conversation'].nunique()} conversations ({html.escape(sources)}), seeds "
        f"{', '.join(str(s) for s in sorted(r['seed'].unique()))}. Results: "
        f"<code>{html.escape(str(results.kind))}</code>. Figures that show one conversation show "
        f"<b>{html.escape(conversation)}</b>.</p>"
    )


# -- figures ----------------------------------------------------------------------------------------------
def fig_cost_retention(table: pd.DataFrame, cmap: Mapping[str, tuple[float, float, float]]) -> Figure | None:
    """Mean cost against mean retention per configuration (``table`` from :func:`summary`), 95% bootstrap CIs
    both ways, the Pareto frontier marked; None when no configuration has a retention figure (no run needed a fact:
    a blank pair of axes would say nothing)."""
    f = table
    if f["retention_mean"].isna().all():
        return None
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for _, r in f.iterrows():
        x, y = r["cost_usd_mean"], 100 * r["retention_mean"]
        ax.errorbar(
            x,
            y,
            xerr=[[x - r["cost_usd_lo"]], [r["cost_usd_hi"] - x]],
            yerr=[[y - 100 * r["retention_lo"]], [100 * r["retention_hi"] - y]],
            fmt="o",
            ms=8,
            capsize=4,
            color=cmap[r["config"]],
            zorder=3,
            label=r["config"]
            + (
                f" (overflowed: {r['overflows_mean']:.2f} per run, so it stopped early)"
                if r["overflows_mean"] > 0
                else ""
            ),
        )
    front = f[f["pareto"]].sort_values("cost_usd_mean")
    if len(front):
        ax.plot(front["cost_usd_mean"], 100 * front["retention_mean"], color="black", lw=1.2, ls="--", zorder=2)
        ax.scatter(
            front["cost_usd_mean"],
            100 * front["retention_mean"],
            s=260,
            facecolors="none",
            edgecolors="black",
            linewidths=1.5,
            zorder=4,
            label="Pareto frontier",
        )
    ax.set_xlabel("mean cost per conversation (USD), 95% CI")
    ax.set_ylabel("retention: needed facts visible (%), 95% CI")
    ax.set_title(f"Cost against retention ({int(f['runs'].sum())} runs)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig


#: Cost components of the compare table (short name -> legend label), in the order they are stacked.
COST_PARTS = {
    "cost_input": "uncached input",
    "cost_cache_read": "cache reads",
    "cost_cache_write": "cache writes",
    "cost_output": "output",
}


def fig_cost_components(table: pd.DataFrame) -> Figure:
    """Mean cost per conversation of each configuration (``table`` from :func:`summary`), split into uncached
    input, cache reads, cache writes and output, each bar labelled with its total and the summariser's share of
    it; cheapest on top. Where caching is on, reads are cheap and writes dear, so this is where a compaction's
    rewrite shows."""
    f = table.sort_values("cost_usd_mean", ascending=False)
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(f) + 1.8))
    left = np.zeros(len(f))
    palette = plt.get_cmap("tab10")
    for k, (short, label) in enumerate(COST_PARTS.items()):
        values = f[f"{short}_mean"].to_numpy(dtype="float64")
        ax.barh(f["config"], values, left=left, color=palette(k), label=label)
        left += values
    for y, (total, summ) in enumerate(zip(left, f["cost_summariser_mean"].to_numpy(dtype="float64"), strict=True)):
        note = f"  {total:,.2f}" + (f" (summariser {summ:,.2f})" if summ > 0 else "")  # no "$": matplotlib math
        ax.annotate(note, (total, y), va="center", fontsize=8)
    ax.set_xlim(0, left.max() * 1.35 if len(left) and left.max() > 0 else 1)
    ax.set_xlabel("mean cost per conversation (USD)")
    ax.set_title("Cost by component")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4, frameon=False)
    return fig


def fig_trajectory(table: pd.DataFrame, cmap: Mapping[str, tuple[float, float, float]]) -> Figure:
    """Left: agent requests per run (the trajectory), with the reactive agent's extra requests as the lighter
    end of each bar. Right: the share of tasks done, 95% CIs. A policy that loses context makes the agent read
    again and redo work (longer trajectories); one whose run stops leaves tasks undone."""
    f = table.sort_values("trajectory_mean")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.5 * len(f) + 1.8), sharey=True)
    colours = [cmap.get(c, (0.5, 0.5, 0.5)) for c in f["config"]]
    total = f["trajectory_mean"].to_numpy(dtype="float64")
    extra = np.minimum(f["extra_requests_mean"].to_numpy(dtype="float64"), total) if "extra_requests_mean" in f else 0
    left.barh(f["config"], total - extra, color=colours)
    left.barh(f["config"], extra, left=total - extra, color=colours, alpha=0.4)
    for y, t in enumerate(total):
        left.annotate(f"  {t:,.0f}", (t, y), va="center", fontsize=8)
    left.set_xlim(0, total.max() * 1.2 if len(total) and total.max() > 0 else 1)
    left.set_xlabel("agent requests per run")
    left.set_title("Trajectory (lighter: the agent's extra requests)")  # no legend box over the bars
    m = 100 * f["success_mean"].to_numpy(dtype="float64")
    lo, hi = 100 * f["success_lo"].to_numpy(dtype="float64"), 100 * f["success_hi"].to_numpy(dtype="float64")
    right.barh(f["config"], m, xerr=[m - lo, hi - m], color=colours, capsize=3)
    right.set_xlim(0, 105)
    right.set_xlabel("tasks done (%), 95% CI")
    right.set_title("Task success")
    fig.tight_layout()
    return fig


def _one_conversation(frame: pd.DataFrame, conversation: str) -> pd.DataFrame:
    part = frame[frame["conversation"] == conversation]
    return part[part["seed"] == part["seed"].min()] if len(part) else part


def fig_context(
    results: Results, conversation: str, cmap: Mapping[str, tuple[float, float, float]], window: int | None
) -> Figure:
    """Context tokens of each agent request on one conversation, per configuration; compactions marked."""
    req = _one_conversation(results.requests, conversation)
    comp = _one_conversation(results.compactions, conversation)
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for label in sorted(req["config"].unique()):
        r = req[(req["config"] == label) & (req["request_kind"] == "agent")]
        ax.plot(r["turn"], r["context_tokens"], color=cmap[label], lw=1.6, label=label)
        turns = comp.loc[comp["config"] == label, "turn"].unique()
        hit = r[r["turn"].isin(turns)].drop_duplicates("turn")
        ax.scatter(
            hit["turn"],
            hit["context_tokens"],
            marker="v",
            s=70,
            color=cmap[label],
            edgecolors="black",
            linewidths=0.6,
            zorder=4,
        )
    ax.scatter([], [], marker="v", s=70, color="white", edgecolors="black", label="compaction (before this request)")
    if window:
        ax.axhline(window, color="crimson", lw=1.2, ls=":", label=f"context window ({window:,} tokens)")
    ax.set_xlabel("turn (agent request number)")
    ax.set_ylabel("context sent (tokens)")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k"))
    ax.set_ylim(bottom=0)
    ax.set_title(f"Context per request on {conversation}")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig


def fig_cumulative_cost(
    results: Results, table: pd.DataFrame, conversation: str, cmap: Mapping[str, tuple[float, float, float]]
) -> Figure:
    """Cumulative cost (agent and summariser requests) over turns on one conversation, and the mean total per
    conversation over all of them (``table`` from :func:`summary`)."""
    req = _one_conversation(results.requests, conversation)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    for label in sorted(req["config"].unique()):
        r = req[req["config"] == label]
        ax.plot(r["turn"], r["cost_usd"].cumsum(), color=cmap[label], lw=1.6, label=label)
    ax.set_xlabel("turn (agent request number)")
    ax.set_ylabel("cumulative cost (USD)")
    ax.set_title(f"Cumulative cost on {conversation}")
    f = table
    y = np.arange(len(f))
    err = [f["cost_usd_mean"] - f["cost_usd_lo"], f["cost_usd_hi"] - f["cost_usd_mean"]]
    bx.barh(y, f["cost_usd_mean"], xerr=err, color=[cmap[c] for c in f["config"]], capsize=3)
    bx.set_yticks(y, f["config"])
    bx.invert_yaxis()
    bx.set_xlabel("mean total cost per conversation (USD), 95% CI")
    bx.set_title("Total cost, all conversations")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, frameon=False)  # under the axes, off the data
    fig.tight_layout()
    return fig


AGE_BINS = (0, 5, 10, 20, 50, 100, np.inf)


def fig_retention(results: Results, cmap: Mapping[str, tuple[float, float, float]]) -> Figure | None:
    """Retention (share of needed facts visible) by fact kind, and by the fact's age in messages; None when no
    run needed any fact (e.g. recordings without fact annotations)."""
    facts = results.facts
    if facts.empty:
        return None
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5))
    labels = sorted(facts["config"].unique())
    kinds = sorted(facts["kind"].unique())
    by_kind = facts.groupby(["config", "kind"])["visible"].mean()
    step = 0.6 / max(1, len(labels))
    for i, label in enumerate(labels):
        vals = [100 * by_kind.get((label, k), np.nan) for k in kinds]
        ax.plot(
            np.arange(len(kinds)) + (i - (len(labels) - 1) / 2) * step, vals, "o", ms=8, color=cmap[label], label=label
        )
    ax.set_xticks(np.arange(len(kinds)), kinds)
    ax.set_xlabel("fact kind")
    ax.set_ylabel("needed facts visible (%)")
    ax.set_title("Retention by fact kind")
    names = [
        f"{int(a)}–{int(b) - 1}" if np.isfinite(b) else f"{int(a)}+"
        for a, b in zip(AGE_BINS, AGE_BINS[1:], strict=False)
    ]
    binned = facts.assign(age=pd.cut(facts["age_messages"].astype("float64"), AGE_BINS, right=False, labels=names))
    by_age = binned.groupby(["config", "age"], observed=False)["visible"].agg(["mean", "size"])
    for label in labels:
        g = by_age.loc[label]
        g = g[g["size"] > 0]
        bx.plot(
            [names.index(a) for a in g.index], 100 * g["mean"].astype(float), marker="o", color=cmap[label], label=label
        )
    bx.set_xticks(range(len(names)), names)
    bx.set_xlabel("age of the fact when needed (messages since it appeared)")
    bx.set_ylabel("needed facts visible (%)")
    bx.set_title("Retention by age of the fact")
    low = 100 * float(facts.groupby(["config", "kind"])["visible"].mean().min()) if len(facts) else 0.0
    floor = max(0.0, 10 * np.floor((min(low, 100 * float(by_age["mean"].min())) - 5) / 10))
    for a in (ax, bx):
        a.set_ylim(floor, 101.5)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    handles, legend_labels = bx.get_legend_handles_labels()
    fig.legend(handles, legend_labels, loc="lower center", ncol=min(4, len(legend_labels)), frameon=False)
    return fig


def _declared(v: pd.DataFrame) -> pd.Series:
    """Whether each violation is one its policy declares (older results have no ``declared`` column)."""
    if "declared" not in v.columns:
        return pd.Series(False, index=v.index)
    return v["declared"].fillna(False).astype(bool)


def violation_counts(results: Results) -> pd.DataFrame:
    """Violations per invariant (rows) and configuration (columns), over all runs. A declared deviation (the
    policy's ``known_deviations``: the modelled system breaks it by design) is its own row, ``live-turn
    (declared)``, apart from the undeclared violations of the same invariant."""
    v = results.violations
    if v.empty:
        return pd.DataFrame(columns=["invariant"])
    v = v.assign(invariant=np.where(_declared(v), v["invariant"] + " (declared)", v["invariant"]))
    t = v.pivot_table(index="invariant", columns="config", values="run_key", aggfunc="count", fill_value=0)
    return t.reset_index().rename_axis(columns=None)


def violation_examples(results: Results, results_path: str) -> pd.DataFrame:
    """For each (invariant, configuration): how often, and its first counterexample with a way to open it."""
    v = results.violations
    cols = ["invariant", "config", "violations", "runs", "declared", "counterexample", "detail", "open with"]
    if v.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    v = v.assign(_declared=_declared(v))
    for (inv, label, declared), g in v.groupby(["invariant", "config", "_declared"], sort=True):
        first = g.sort_values(["conversation", "seed", "turn"], kind="stable").iloc[0]
        detail = str(first["detail"])
        rows.append(
            {
                "invariant": inv,
                "config": label,
                "violations": len(g),
                "runs": g["run_key"].nunique(),
                "declared": str(first["reason"]) if declared else "no",
                "counterexample": f"{first['conversation']} seed {first['seed']}, turn {first['turn']} "
                f"({first['request_kind']} request)",
                "detail": detail if len(detail) <= 220 else detail[:217] + "...",
                "open with": f"csim report {results_path} --run {first['run_key']} "
                f"--out report-{str(first['run_key'])[:8]}",
            }
        )
    return pd.DataFrame(rows, columns=cols)


def fig_violations(results: Results, cmap: Mapping[str, tuple[float, float, float]]) -> Figure | None:
    """Violations by invariant, one bar per configuration; None when there are none."""
    counts = violation_counts(results)
    if counts.empty:
        return None
    labels = [c for c in sorted(cmap) if c in counts.columns]
    invs = counts["invariant"].tolist()
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.5 * len(invs) * max(1, len(labels)) ** 0.5))
    height = min(0.35, 0.8 / max(1, len(labels)))
    declared = np.array([inv.endswith(" (declared)") for inv in invs])
    for i, label in enumerate(labels):
        y = np.arange(len(invs)) + (i - (len(labels) - 1) / 2) * height
        values = counts[label].to_numpy()
        ax.barh(y[~declared], values[~declared], height, color=cmap[label])
        # declared deviations, hatched and pale: the modelled system's documented behaviour, not a defect
        ax.barh(y[declared], values[declared], height, color=cmap[label], alpha=0.35, hatch="//", edgecolor="0.4")
    ax.set_yticks(np.arange(len(invs)), invs)
    ax.set_ylim(len(invs) - 0.4, -0.6)
    ax.set_xlabel("violations (checked requests that broke the invariant)")
    ax.set_ylabel("invariant")
    # drawn by hand: a configuration with declared deviations only has no plain bar to take its colour from
    handles = [Patch(color=cmap[label], label=label) for label in labels]
    if declared.any():
        handles.append(Patch(facecolor="white", edgecolor="0.4", hatch="//", label="declared deviation"))
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.set_title("Invariant violations by configuration (hatched: declared deviations of the modelled system)")
    return fig


__all__ = [
    "AGE_BINS",
    "Html",
    "colours",
    "compare_tables",
    "declared_table",
    "fig_context",
    "fig_cost_components",
    "fig_cost_retention",
    "fig_trajectory",
    "fig_cumulative_cost",
    "fig_retention",
    "fig_violations",
    "headline",
    "note",
    "show",
    "summary",
    "table",
    "violation_counts",
    "violation_examples",
]
