"""Figures and tables of the ``run`` report: one run in depth, from its request rows and its log.

The log is the source of truth for what a compaction did: every ``compaction`` event carries the
whole new view, so comparing it with the view before says which messages were dropped, which of
those were summarised, whose tool results were newly cleared, and what stayed. Facts come from the
run's fact rows: the facts needed after a compaction that the model could no longer see.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from sim.report.data import RunLog, run_row
from sim.report.figures import Html
from sim.sweep.parts import declared_reasons, violations_text
from sim.sweep.results import Results, records


def overview(results: Results, run_key: str) -> pd.DataFrame:
    """The run's identity and headline numbers as two columns (what, value)."""
    r = run_row(results, run_key)
    recall = "n/a" if pd.isna(r["retention_recall"]) else f"{100 * r['retention_recall']:.1f}%"
    left_out = r.get("recorded_compactions_left_out")  # null in results an older csim wrote
    left_out = 0 if left_out is None or pd.isna(left_out) else int(left_out)
    rows = [
        ("configuration", r["config"]),
        ("policy parameters", r["params"]),
        ("conversation", f"{r['conversation']} (source {r['source']}, seed {r['seed']})"),
        ("run key", r["run_key"]),
        ("finish", r["finish_reason"]),
        ("agent requests", f"{r['agent_requests']:,}"),
        ("peak context", f"{r['peak_context_tokens']:,} tokens"),
        ("cumulative input", f"{r['cumulative_input_tokens']:,} tokens"),
        ("total cost", f"{r['total_cost_usd']:,.4f} USD"),
        (
            "cost by component",
            f"uncached input {r['cost_input_usd']:,.4f}, cache reads {r['cost_cache_read_usd']:,.4f}, cache writes "
            f"{r['cost_cache_write_usd']:,.4f}, output {r['cost_output_usd']:,.4f}; summariser "
            f"{r['summariser_cost_usd']:,.4f} of it (USD)",
        ),
        ("prompt read from cache", "n/a" if pd.isna(r["cache_hit_share"]) else f"{100 * r['cache_hit_share']:.1f}%"),
        ("compactions' cost", f"{r['compaction_cost_usd']:,.4f} USD (summariser calls and cache rewrites)"),
        (
            "compactions",
            f"{r['compaction_count']}"
            + (f" (the policy's; the recording's own {left_out} left out)" if left_out else ""),
        ),
        ("overflows", f"{r['overflows']}"),
        (
            "retention",
            f"{recall} ({r['facts_visible']} of {r['facts_needed']} needed facts visible; "
            f"{r['facts_unreached']} never reached because the run stopped)",
        ),
        ("tasks done", f"{100 * r['task_success']:.1f}% of the user requests"),
        (
            "the agent's reactions",
            f"{r['reacquisitions']} re-reads, {r['repeated_work']} repeated work, {r['errors']} wrong recalls "
            f"({r['errors_repaired']} repaired), {r['stalls']} failing steps tried again: {r['extra_requests']} "
            f"extra requests, {r['extra_cost_usd']:,.4f} USD (with --agent reactive; none otherwise)",
        ),
        ("invariant violations", _violations(results, run_key)),
    ]
    return pd.DataFrame(rows, columns=["what", "value"])


def _run_violations(results: Results, run_key: str) -> list[dict[str, Any]]:
    return records(results.violations[results.violations["run_key"] == run_key])


def _violations(results: Results, run_key: str) -> str:
    """The run's violations, the declared deviations apart with why (``0 violations (71 declared: live-turn);
    71 live-turn, declared: Claude Code summarises the live turn``)."""
    v = _run_violations(results, run_key)
    return "; ".join([violations_text(v), *declared_reasons(v)])


def headline(results: Results, run_key: str, log: RunLog) -> Html:
    """The report's title: which run, on what, and where its log came from."""
    r = run_row(results, run_key)
    violations = html.escape(violations_text(_run_violations(results, run_key)))
    return Html(
        f"<h1>One run in depth: {html.escape(str(r['config']))}</h1><p>On <b>{html.escape(r['conversation'])}"
        f"</b> (seed {r['seed']}), run key <code>{html.escape(run_key)}</code>: {r['compaction_count']} "
        f"compactions, {violations}, finished: {html.escape(str(r['finish_reason']))}. "
        f"Log: {html.escape(log.source)}.</p>"
    )


def _view(v: Mapping[str, Any] | None) -> dict[str, Any]:
    """A logged view (``sim.core.view.View`` as JSON): its tail, the messages of its spans, the bound below which
    tool results are edited (cleared, dropped or truncated), and its summary."""
    v = v or {}
    edits = v.get("edits", ())
    results_edited = max(
        (
            int(e.get("before", 0))
            for e in edits
            if "tool_result" in (e.get("rule") or {}).get("kinds", ["tool_result"])
        ),
        default=0,
    )
    return {
        "start": int(v.get("start", 0)),
        "cleared_through": results_edited,
        "pinned": {i for a, b in v.get("spans", ()) for i in range(int(a), int(b))},
        "summary": v.get("summary"),
    }


def _shown(view: Mapping[str, Any], n: int, has_system: bool) -> set[int]:
    out = {i for i in range(n) if i >= view["start"] or i in view["pinned"]}
    if has_system and n:
        out.add(0)
    return out


def compaction_costs(results: Results, run_key: str, steps: pd.DataFrame) -> pd.DataFrame:
    """``steps`` (:func:`compaction_steps`) with each compaction's cost (USD: its summariser calls and the cache
    rewrite it caused) and its payback (agent requests until what it saved covered that; empty: not within the
    run), from the results' compactions table; for a policy that compacts in the background, how stale each landed
    (the turn it was started at, the messages and tokens that came since, the seconds waited for it)."""
    comps = results.compactions[results.compactions["run_key"] == run_key]
    cols = ["compaction_id", "cost_usd", "payback_requests"]
    stale = [c for c in STALE_COLUMNS if c in comps.columns]  # results older than the columns have none
    if stale and comps[stale[0]].notna().any():
        cols += stale
    costs = comps[cols].rename(columns={"compaction_id": "compaction"})
    return steps.merge(costs, on="compaction", how="left")


#: The compactions table's columns of a background compaction (``sim.core.log.Staleness``).
STALE_COLUMNS = ("started_turn", "stale_messages", "stale_tokens", "waited_seconds")


def compaction_steps(log: RunLog) -> pd.DataFrame:
    """One row per compaction in the log: what it dropped, summarised, cleared and kept (in messages)."""
    roles: list[str] = []
    has_result: list[bool] = []
    before = _view(None)
    rows = []
    for ev in log.events:
        if ev.get("kind") == "message":
            m = ev["message"]
            roles.append(m.get("role", ""))
            has_result.append(any(p.get("kind") == "tool_result" for p in m.get("parts", ())))
            continue
        if ev.get("kind") != "compaction":
            continue
        after = _view(ev.get("view"))
        n = len(roles)
        system = bool(roles) and roles[0] == "system"
        was, now = _shown(before, n, system), _shown(after, n, system)
        a, b = ev.get("summarised") or (0, 0)
        dropped = was - now
        summarised = {i for i in dropped if a <= i < b}
        cleared = {
            i
            for i in now & was
            if has_result[i] and i < after["cleared_through"] and not (i < before["cleared_through"] and i in was)
        }
        old_facts = set((before["summary"] or {}).get("facts", ()))
        summary = after["summary"] or {}
        rows.append(
            {
                "compaction": ev["id"],
                "turn": ev["turn"],
                "trigger": ev["trigger"],
                "mode": ev["mode"],
                "tokens_before": ev["tokens_before"],
                "tokens_after": ev["tokens_after"],
                "messages_in_log": n,
                "kept": len(now & was),
                "results_cleared": len(cleared),
                "summarised": len(summarised),
                "dropped_unsummarised": len(dropped - summarised),
                "restored": len(now - was),
                "summary_facts": len(summary.get("facts", ())),
                "facts_dropped_from_summary": ", ".join(sorted(old_facts - set(summary.get("facts", ())))),
                "new_summary": summary.get("compaction_id") == ev["id"],
            }
        )
        before = after
    cols = [
        "compaction",
        "turn",
        "trigger",
        "mode",
        "tokens_before",
        "tokens_after",
        "messages_in_log",
        "kept",
        "results_cleared",
        "summarised",
        "dropped_unsummarised",
        "restored",
        "summary_facts",
        "facts_dropped_from_summary",
        "new_summary",
    ]
    return pd.DataFrame(rows, columns=cols)


def failed_compactions(log: RunLog) -> pd.DataFrame:
    """Compactions attempted and abandoned (summariser failed, overflowed or returned nothing)."""
    rows = [
        {"turn": e["turn"], "trigger": e["trigger"], "reason": e["reason"]}
        for e in log.events
        if e.get("kind") == "compaction_failed"
    ]
    return pd.DataFrame(rows, columns=["turn", "trigger", "reason"])


def summary_texts(log: RunLog) -> Html:
    """Each summary a compaction wrote, as the model saw it, in order."""
    parts = []
    for ev in log.events:
        s = (ev.get("view") or {}).get("summary") if ev.get("kind") == "compaction" else None
        if s and s.get("compaction_id") == ev["id"]:
            facts = ", ".join(s.get("facts", ())) or "none"
            parts.append(
                f'<div class="csim-summary" id="summary-{html.escape(ev["id"])}">'
                f"<p><b>{html.escape(ev['id'])}</b>, turn {ev['turn']} ({html.escape(ev['mode'])}, "
                f"{html.escape(ev['trigger'])}): covers messages before {s.get('through', 0)}; "
                f"retains facts {html.escape(facts)}</p>"
                f'<pre style="white-space:pre-wrap;background:#f6f6f6;padding:0.6em;border-left:3px solid '
                f'#999">{html.escape(s.get("text", ""))}</pre></div>'
            )
    if not parts:
        return Html("<p><i>No compaction in this run wrote a summary.</i></p>")
    return Html("\n".join(parts))


def facts_lost(results: Results, run_key: str) -> pd.DataFrame:
    """Per compaction: the facts established so far that the view showed before it and not after it."""
    comps = results.compactions[results.compactions["run_key"] == run_key].sort_values("turn", kind="stable")
    kinds = dict(zip(results.facts["fact"], results.facts["kind"], strict=False))
    rows = []
    for _, c in comps.iterrows():
        lost = [f for f in str(c.get("facts_lost") or "").split(",") if f]
        rows.append(
            {
                "compaction": c["compaction_id"],
                "turn": int(c["turn"]),
                "mode": c["mode"],
                "facts lost": len(lost),
                "which": ", ".join(f"{f} ({kinds[f]})" if f in kinds else f for f in lost) or "none",
            }
        )
    return pd.DataFrame(rows, columns=["compaction", "turn", "mode", "facts lost", "which"])


def facts_missed(results: Results, run_key: str) -> pd.DataFrame:
    """Per compaction: the facts needed after it (before the next) that the model could not see.

    A fact missed before any compaction was lost on entry (a bounded tool result) and is listed
    under "before any compaction".
    """
    facts = results.facts[(results.facts["run_key"] == run_key) & ~results.facts["visible"].astype(bool)]
    comps = results.compactions[results.compactions["run_key"] == run_key].sort_values("turn", kind="stable")
    turns = comps["turn"].to_numpy()
    ids = comps["compaction_id"].tolist()
    rows = []
    for fact, g in facts.groupby("fact", sort=True):
        first = g.sort_values("turn", kind="stable").iloc[0]
        k = int(np.searchsorted(turns, first["turn"], side="right")) - 1
        rows.append(
            {
                "after compaction": ids[k] if k >= 0 else "before any compaction",
                "compaction turn": int(turns[k]) if k >= 0 else None,
                "fact": fact,
                "kind": first["kind"],
                "first missed at turn": int(first["turn"]),
                "age then (messages)": int(first["age_messages"]),
                # compactions its source had been through by then (results older than the column have none)
                "round then": int(first["round"]) if pd.notna(first.get("round")) else None,
                "times missed": len(g),
            }
        )
    out = pd.DataFrame(
        rows,
        columns=[
            "after compaction",
            "compaction turn",
            "fact",
            "kind",
            "first missed at turn",
            "age then (messages)",
            "round then",
            "times missed",
        ],
    )
    return out.sort_values(["first missed at turn", "fact"], kind="stable").reset_index(drop=True)


#: Tallest figure on the run page, in inches (at the report's 100 dpi: 1,800 pixels).
MAX_FIGURE_INCHES = 18.0
#: Most compaction ids labelled along an axis; past it every k-th is, so labels never overlap.
MAX_LABELS = 24
MAX_ROW_LABELS = 40


def label_step(n: int, most: int = MAX_LABELS) -> int:
    """Label every k-th of ``n`` marks so that at most ``most`` are labelled."""
    return max(1, math.ceil(n / most))


def compaction_line(n: int) -> tuple[float, float]:
    """Width and opacity of the dashed line marking each of ``n`` compactions: fainter when there are many, so
    the lines do not hide the data."""
    return (0.9, 1.0) if n <= 40 else (0.5, max(0.15, 40 / n))


def fig_view_size(results: Results, run_key: str, window: int | None, log: RunLog | None = None) -> Figure:
    """Context tokens and messages in view at every request; compactions (and failed ones) marked."""
    req = results.requests[results.requests["run_key"] == run_key]
    agent = req[req["request_kind"] != "summariser"]
    summ = req[req["request_kind"] == "summariser"]
    comps = results.compactions[results.compactions["run_key"] == run_key]
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(13, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
    ax.plot(agent["turn"], agent["context_tokens"], color="tab:blue", lw=1.6, marker=".", label="agent request")
    if len(summ):
        ax.scatter(
            summ["turn"], summ["context_tokens"], marker="s", color="tab:orange", zorder=3, label="summariser request"
        )
    errs = req[req["error"].astype(str) != ""]
    if len(errs):
        ax.scatter(
            errs["turn"],
            errs["context_tokens"],
            marker="x",
            s=70,
            color="crimson",
            zorder=4,
            label="rejected or failed request",
        )
    top = max(float(req["context_tokens"].max() if len(req) else 0), float(window or 0))
    ordered = comps.sort_values("turn", kind="stable")
    every = label_step(len(ordered))
    lw, alpha = compaction_line(len(ordered))
    last = -10.0
    level = 0
    for k, (_, c) in enumerate(ordered.iterrows()):
        for a in (ax, bx):
            a.axvline(c["turn"], color="grey", lw=lw, ls="--", alpha=alpha, zorder=1)
        if k % every:
            continue  # many compactions: every k-th id only, so the labels do not overlap
        level = 1 - level if c["turn"] - last < 3 * every else 0  # stagger labels of compactions close together
        last = c["turn"]
        ax.annotate(
            str(c["compaction_id"]),
            (c["turn"], 1.0),
            xycoords=ax.get_xaxis_transform(),
            xytext=(0, 3 + 11 * level),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=8,
            color="dimgrey",
            annotation_clip=False,
        )
    if log is not None:
        failed = failed_compactions(log)
        if len(failed):
            ax.scatter(
                failed["turn"],
                [top * 0.98] * len(failed),
                marker="X",
                s=60,
                color="black",
                zorder=4,
                label="compaction abandoned",
            )
    if window:
        ax.axhline(window, color="crimson", lw=1.2, ls=":", label=f"context window ({window:,} tokens)")
    ids = "id above the plot" if every == 1 else f"every {every}th id above the plot"
    ax.plot([], [], color="grey", lw=0.9, ls="--", label=f"compaction ({ids})")
    ax.set_ylabel("context sent (tokens)")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k"))
    ax.set_ylim(0, top * 1.08 if top else 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # outside: never over the data
    ax.set_title("The view's size over the run", pad=34)
    bx.plot(agent["turn"], agent["messages_in_view"], color="tab:green", lw=1.4, drawstyle="steps-post")
    bx.set_ylabel("messages in view")
    bx.set_xlabel("turn (agent request number)")
    bx.set_ylim(bottom=0)
    fig.tight_layout()
    return fig


def fig_cache(results: Results, run_key: str) -> Figure | None:
    """Each agent request's prompt by how the prompt cache billed it (read, written, uncached), stacked, with
    compactions marked and the simulated time of the request below; None when the run has no agent request."""
    req = results.requests[results.requests["run_key"] == run_key]
    agent = req[(req["request_kind"] != "summariser") & req["billed"].astype(bool)]
    if agent.empty:
        return None
    comps = results.compactions[results.compactions["run_key"] == run_key]
    read = agent["cache_read_tokens"].to_numpy(dtype="float64")
    w5 = agent["cache_write_5m_tokens"].to_numpy(dtype="float64")
    w1 = agent["cache_write_1h_tokens"].to_numpy(dtype="float64")
    uncached = agent["context_tokens"].to_numpy(dtype="float64") - read - w5 - w1
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(13, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.2]})
    turns = agent["turn"].to_numpy()
    ax.stackplot(
        turns,
        read,
        w5 + w1,
        uncached,
        labels=["read from cache", "written to cache", "uncached input"],
        colors=["tab:green", "tab:orange", "tab:grey"],
        step="post",
        alpha=0.85,
    )
    lw, alpha = compaction_line(len(comps))
    for t in comps["turn"]:
        ax.axvline(t, color="black", lw=lw, ls="--", alpha=alpha, zorder=3)
        bx.axvline(t, color="black", lw=lw, ls="--", alpha=alpha, zorder=3)
    ax.plot([], [], color="black", lw=0.9, ls="--", label="compaction")
    total = read + w5 + w1 + uncached
    share = 100 * read.sum() / total.sum() if total.sum() else 0.0
    ax.set_title(f"Prompt cache per request: {share:.1f}% of prompt tokens read from cache")
    ax.set_ylabel("prompt tokens")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # outside: never over the data
    bx.plot(turns, agent["time_seconds"].to_numpy(dtype="float64") / 60, color="tab:blue", drawstyle="steps-post")
    bx.set_ylabel("request start (min)")
    bx.set_xlabel("turn (agent request number)")
    fig.tight_layout()
    return fig


def fig_compactions(steps: pd.DataFrame) -> Figure | None:
    """Per compaction: tokens before and after, and what happened to the messages in view."""
    if steps.empty:
        return None
    n = len(steps)
    # one row per compaction, at most MAX_FIGURE_INCHES tall in all (a run with 230 compactions stays readable)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, min(1.8 + 0.55 * n, MAX_FIGURE_INCHES)))
    y = np.arange(n)
    every = max(1, math.ceil(n / MAX_ROW_LABELS))
    names = [f"{c} (turn {t}, {m})" for c, t, m in zip(steps["compaction"], steps["turn"], steps["mode"], strict=True)]
    ax.barh(y - 0.2, steps["tokens_before"], 0.4, color="silver", label="before")
    ax.barh(y + 0.2, steps["tokens_after"], 0.4, color="tab:blue", label="after")
    ax.set_yticks(y[::every], names[::every])
    ax.invert_yaxis()
    ax.set_xlabel("view size (tokens)")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k"))
    ax.set_title("Tokens before and after")
    left = np.zeros(len(steps))
    kept_plain = steps["kept"] - steps["results_cleared"]
    segments = [
        (kept_plain, "tab:green", "kept as is"),
        (steps["results_cleared"], "gold", "kept, tool results cleared"),
        (steps["summarised"], "tab:purple", "summarised"),
        (steps["dropped_unsummarised"], "tab:red", "dropped, not summarised"),
    ]
    if steps["restored"].any():
        segments.append((steps["restored"], "tab:cyan", "restored by a rollback"))
    for values, colour, label in segments:
        bx.barh(y, values, 0.6, left=left, color=colour, label=label)
        left = left + values.to_numpy()
    bx.set_yticks(y[::every], [str(c) for c in steps["compaction"]][::every])
    if every > 1:
        ax.set_ylabel(f"compaction (every {every}th labelled)")
    bx.invert_yaxis()
    bx.set_xlabel("messages in view before the compaction (and restored)")
    bx.set_title("What each compaction did to the messages")
    fig.tight_layout()
    # legends under each panel's axis label, a fixed distance below it whatever the figure's height (outside the
    # data; the report saves with a tight bounding box, which takes them in)
    below = 0.55 / fig.get_size_inches()[1]
    for a, ncol in ((ax, 2), (bx, 3 if len(segments) > 4 else 2)):
        box = a.get_position()
        a.legend(
            loc="upper center",
            bbox_to_anchor=(box.x0 + box.width / 2, box.y0 - below),
            bbox_transform=fig.transFigure,
            ncol=ncol,
            frameon=False,
        )
    return fig


__all__ = [
    "compaction_costs",
    "compaction_steps",
    "facts_missed",
    "failed_compactions",
    "fig_cache",
    "fig_compactions",
    "fig_view_size",
    "headline",
    "overview",
    "summary_texts",
]
