"""Retention beside cost, by fact kind and by compaction round, for the ``compare`` report.

A fact row's round (the ``facts`` table, :mod:`sim.replay.retention`) is how many compactions came between its source
entering the log and the request that needed it. Rounds are binned (:data:`ROUND_BINS`): a policy that compacts
every turn (sliding-window) puts needs hundreds of rounds deep, one that summarises when full a few. Shares here
are pooled over every judged need of a configuration (all conversations and seeds), beside the compare table's
per-conversation mean; a need a stopped run never reached has no round and counts only in that mean.

Where there is nothing to draw (no fact needed, results older than the round column, no need after any
compaction), :func:`rounds_missing` says why in words, and the figure function returns None: never empty axes.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from sim.report import figures as _style  # noqa: F401 - the report's backend (Agg) and style
from sim.sweep.results import Results

#: Lower edges of the round bins; the last is open.
ROUND_BINS = (0, 1, 2, 3, 4, 8, 32)


def round_names() -> list[str]:
    """The bins' labels: ``0``, ``1``, ``2``, ``3``, ``4–7``, ``8–31``, ``32+``."""
    names = []
    for a, b in zip(ROUND_BINS, (*ROUND_BINS[1:], None), strict=True):
        names.append(f"{a}+" if b is None else (str(a) if b == a + 1 else f"{a}–{b - 1}"))
    return names


def binned(facts: pd.DataFrame) -> pd.DataFrame:
    """The rows that have a round, with ``bin`` (its label, an ordered category)."""
    f = facts[facts["round"].notna()] if "round" in facts.columns else facts.iloc[0:0]
    edges = [*ROUND_BINS, np.inf]
    cut = pd.cut(f["round"].astype("float64"), edges, right=False, labels=round_names())
    return f.assign(bin=cut)


def rounds_missing(results: Results) -> str | None:
    """Why there is no retention-by-round figure, in words; None when there is one to draw."""
    facts = results.facts
    if facts.empty:
        return (
            "No run needed a fact (facts are annotated in the synthetic scenarios), so there is no retention by "
            "compaction round to show."
        )
    if "round" not in facts.columns or facts["round"].isna().all():
        return (
            "These results were written before fact rows had a compaction round: run the sweep again with this "
            "version to see retention by round."
        )
    if (facts["round"].fillna(0) == 0).all():
        share = 100 * float(facts["visible"].mean())
        return (
            f"No fact was needed after a compaction of its source: all {len(facts):,} needs are round 0 "
            f"({share:.1f}% of them visible), so there is no retention by round to compare."
        )
    return None


def fig_retention_rounds(results: Results, cmap: Mapping[str, tuple[float, float, float]]) -> Figure | None:
    """Left: the share of needed facts visible by compaction round, one line per configuration, each point's area
    growing with the needs behind it. Right: how each configuration's needs fall into rounds (a share of its
    needs). None when :func:`rounds_missing` says why."""
    if rounds_missing(results) is not None:
        return None
    f = binned(results.facts)
    names = round_names()
    by = f.groupby(["config", "bin"], observed=False)["visible"].agg(["mean", "size"])
    labels = sorted(f["config"].unique())
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, max(5.0, 0.42 * len(labels) + 2.0)))
    most = max(1, int(by["size"].max()))
    for label in labels:
        g = by.loc[label]
        g = g[g["size"] > 0]
        x, y = [names.index(b) for b in g.index], 100 * g["mean"].astype(float)
        ax.plot(x, y, color=cmap[label], lw=1.4, label=label)
        # marker area grows with the needs behind the point: a round of a few needs says little
        ax.scatter(x, y, s=12 + 220 * np.sqrt(g["size"].to_numpy() / most), color=cmap[label], zorder=3)
    ax.set_xticks(range(len(names)), names)
    ax.set_xlim(-0.4, len(names) - 0.6)
    ax.set_ylim(-3, 103)
    ax.set_xlabel("compaction round: compactions since the fact's source entered the log")
    ax.set_ylabel("needed facts visible (%)")
    ax.set_title("Retention by compaction round (marker area: needs)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)  # off the lines
    shares = by["size"].unstack("bin").reindex(labels).fillna(0).astype(float)
    shares = 100 * shares.div(shares.sum(axis=1).replace(0, 1), axis=0)
    palette = plt.get_cmap("viridis")(np.linspace(0.0, 0.9, len(names)))
    left = np.zeros(len(labels))
    y = np.arange(len(labels))
    for i, name in enumerate(names):
        values = shares[name].to_numpy() if name in shares.columns else np.zeros(len(labels))
        bx.barh(y, values, left=left, color=palette[i], label=f"round {name}")
        left += values
    bx.set_yticks(y, labels)
    for tick, label in zip(bx.get_yticklabels(), labels, strict=True):
        tick.set_color(cmap[label])
    bx.invert_yaxis()
    bx.set_xlim(0, 100)
    bx.set_xlabel("share of the configuration's needed facts (%)")
    bx.set_title("Needs by compaction round")
    bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4, frameon=False)
    fig.tight_layout()
    return fig


def _pooled(g: pd.DataFrame) -> str:
    return f"{100 * float(g['visible'].mean()):.1f} ({len(g):,})" if len(g) else ""


def retention_table(results: Results, table: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (``table`` from :func:`sim.report.figures.summary`): mean cost and retention over
    conversations, the needs its stopped runs never reached (lost, in that retention only), then the share of the
    judged needs visible (%) pooled over its runs (weighted by needs, where the mean weighs conversations alike),
    in all, by fact kind and by round bin, each with its number of needs in parentheses; a blank where the
    configuration had no need of that kind or round."""
    facts = results.facts
    unreached = results.runs.groupby("config")["facts_unreached"].sum()
    f = binned(facts)
    kinds = sorted(facts["kind"].unique()) if len(facts) else []
    rounds = [n for n in round_names() if (f["bin"] == n).any()]
    rows = []
    for _, r in table.sort_values("config").iterrows():
        mine, mine_b = facts[facts["config"] == r["config"]], f[f["config"] == r["config"]]
        ret = r["retention_mean"]
        rows.append(
            {
                "config": r["config"],
                "cost per conversation (USD)": f"{r['cost_usd_mean']:,.3f}",
                "retention (%)": "n/a" if pd.isna(ret) else f"{100 * ret:.1f}",
                "needs never reached": f"{int(unreached.get(r['config'], 0)):,}",
                "all judged (%)": _pooled(mine),
                **{f"{k} (%)": _pooled(mine[mine["kind"] == k]) for k in kinds},
                **{f"round {n} (%)": _pooled(mine_b[mine_b["bin"] == n]) for n in rounds},
            }
        )
    return pd.DataFrame(rows)


__all__ = ["ROUND_BINS", "binned", "fig_retention_rounds", "retention_table", "round_names", "rounds_missing"]
