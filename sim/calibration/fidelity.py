"""Fidelity: does the simulator, calibrated, report the prompt tokens the provider recorded?

Two accountings (``accounting``): ``anchored`` (the default) counts each recorded message as the provider did,
from the recording's own usage (:mod:`sim.core.anchors`), and estimates only what no usage covers (the
first request after a recorded compaction is reported with its overhead estimated: how well what a compaction
leaves is estimated); ``calibrated`` estimates every request from the engine's count with the calibration.

A recorded session (Claude Code transcripts hold per-reply usage and their real compactions) is
replayed through the engine under the ``none`` policy with a :class:`~sim.core.counting.Calibration` in
the run config, so each agent request's ``context_tokens`` is the calibrated count the engine itself
reports. Two comparisons come out:

- the error curve: at every recorded request with usage, the simulated context tokens against the
  recorded prompt tokens (``input + cache_read + cache_write``), with the relative error;
- at every recorded compaction, the simulated tokens just before it (a request holding everything
  before the boundary: one synthetic reply is appended to the segment to make that request) against
  the ``preTokens`` Claude Code logged when it compacted.

Where the recording carries cache usage (Claude Code's ``cache_read_input_tokens`` and
``cache_creation_input_tokens``), the replay also models the prompt cache (:mod:`sim.replay.caching`) on the
recorded timestamps, each request priced as the model the recording names, with the TTL the recorded client
wrote with (the larger share of its writes: 1-hour or 5-minute), and compares per request the simulated cache
reads and writes with the recorded ones. A request is a *miss* when less than half its prompt was read from the
cache (after an idle gap past the TTL, after a compaction, after a background-task notification: see
:mod:`sim.replay.caching`). :meth:`Fidelity.cache_summary` counts the recorded
misses the replay predicts, the others it predicts as misses, the total cache writes, and the session's cost
priced from each side's usage.

``across`` says what happens at a recorded compaction:

- ``continue`` (default): the session is cut at each ``compact_boundary`` into segments (see
  :func:`sim.core.counting.segments`); each later segment starts with the recorded summary message the
  importer keeps (``meta["compact_summary"]``, ``meta["compact_boundary"]``) and is replayed on its
  own, because after a compaction the provider's prompt is the summary and what follows, not the old
  history. The engine's ``none`` policy would otherwise keep the whole history in view. A segment that
  opens with a summary gets the calibration's ``after_compaction`` term.
- ``stop``: only the first segment is replayed; the curve ends at the first recorded compaction.

At each recorded compaction the first request after it is also *predicted* from what the recording shows before it
(``first_after_predicted``, ``first_after_predicted_error``; ``post_compaction`` in the summary), by the bundled
post-compaction model (:mod:`sim.calibration.after_compaction`) fitted without this session: unlike
``first_after_simulated``, it does not read the summary's size from the recording where the recording has no text
(a token-level trace's summary placeholder is the recorded size).

With a ``policy``, each segment is also replayed under it on a real window (:mod:`sim.calibration.where_compacts`),
and each recorded compaction gets the request where that policy compacts (``policy_after_turn``,
``policy_offset``): whether the trigger fires where the client's did.

The replay window is huge (:data:`sim.calibration.fit.REPLAY_WINDOW`) so no recorded request is rejected:
this measures counting, not overflow behaviour. When the calibration was fitted on the same session,
the curve is in-sample; fit on other sessions (``csim calibrate`` on a folder without it) for an
out-of-sample curve.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sim.calibration import after_compaction, where_compacts
from sim.calibration.features import replay_counts
from sim.core.anchors import Anchors
from sim.core.conversation import Conversation, Message
from sim.core.cost import Pricer
from sim.core.counting import Calibration, compaction_cuts, opens_with_summary, segments
from sim.core.errors import InvalidConfig, UnknownName
from sim.core.model import DEFAULT_MODEL, ModelConfig
from sim.replay.anchoring import anchors_for
from sim.replay.billing import price_epoch, price_time

#: The TTL a token-level trace is replayed with: a trace has no cache split to read it from, and the traces are Claude
#: Code sessions, which write for an hour (every write of the shared session 258c7280 is a 1-hour write; the
#: ``claude-code`` policy's ``cache_placement``). With 5 minutes, the replay predicts 172 misses of the sample's 3,086
#: requests where the hashes prove most of the prompt was sent within the hour, with 1 hour 25.
TRACE_TTL = "1h"
Across = Literal["continue", "stop"]
Accounting = Literal["calibrated", "anchored"]
CURVE_COLUMNS = [
    "turn",
    "segment",
    "message_id",
    "recorded",
    "simulated",
    "relative_error",
    "summarised",
    "recorded_cache_read",
    "recorded_cache_write",
    "simulated_cache_read",
    "simulated_cache_write",
    "recorded_miss",
    "simulated_miss",
    "recorded_cost_usd",
    "simulated_cost_usd",
    "estimated_tokens",
    "estimated_share",
    "provable_cache_read",
    "provable_cost_usd",
]


@dataclass
class Fidelity:
    """The error curve of one session and its compactions."""

    conversation: str
    across: str
    accounting: str = "calibrated"
    estimated_messages: int | None = None  # anchored: recorded messages no usage covered
    rows: list[dict[str, Any]] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    #: The recording's hash block, in tokens (token-level traces): a proven prefix is whole blocks, so a read may
    #: pass it by less than a block (the partial block at its end) without contradicting it.
    block_tokens: int = 0
    #: The first requests after the recorded compactions predicted from before them, held out (the bundled model of
    #: :mod:`sim.calibration.after_compaction`): its form and the |relative error| figures over this session.
    post_compaction: dict[str, Any] | None = None
    #: Where ``policy`` compacts against where the session did (:mod:`sim.calibration.where_compacts`): the policy,
    #: its settings and window, and the figures over this session's automatic compactions; None when not asked.
    policy_trigger: dict[str, Any] | None = None

    def errors(self) -> np.ndarray:
        return np.array([abs(r["relative_error"]) for r in self.rows], dtype=float)

    def summary(self) -> dict[str, Any]:
        e = self.errors()
        return {
            "conversation": self.conversation,
            "across": self.across,
            "accounting": self.accounting,
            "estimated_messages": self.estimated_messages,
            "requests": int(e.size),
            "median_abs_relative_error": float(np.median(e)) if e.size else None,
            "median_estimated_share": float(np.median([r["estimated_share"] for r in self.rows])) if e.size else None,
            "p90_abs_relative_error": float(np.percentile(e, 90)) if e.size else None,
            "compactions": self.compactions,
            "cache": self.cache_summary(),
            "provable_cache": self.provable_summary(),
            "post_compaction": self.post_compaction,
            "policy_trigger": self.policy_trigger,
        }

    def provable_summary(self) -> dict[str, Any] | None:
        """The simulated cache reads against what the recording's block hashes prove a cache could have read (the
        longest prefix some earlier request of the session was sent with; token-level traces carry the hashes):
        how much of it they take, the requests whose reads pass it by a block or more (the replay assumed a prompt
        extends one the recording shows it does not), and the session priced both ways (the proven prefix read,
        the rest written). None when the recording has no hashes."""
        rows = [r for r in self.rows if r["provable_cache_read"] is not None]
        if not rows:
            return None
        provable = sum(r["provable_cache_read"] for r in rows)
        read = sum(r["simulated_cache_read"] for r in rows)
        beyond = [r for r in rows if r["simulated_cache_read"] >= r["provable_cache_read"] + max(self.block_tokens, 1)]
        provable_misses = [r for r in rows if r["provable_cache_read"] < r["recorded"] / 2]
        sim_cost = sum(r["simulated_cost_usd"] for r in rows)
        proof_cost = sum(r["provable_cost_usd"] for r in rows)
        return {
            "requests": len(rows),
            "provable_read_tokens": provable,
            "simulated_read_tokens": read,
            "simulated_share_of_provable": read / provable if provable else None,
            "requests_reading_beyond_proof": len(beyond),
            "tokens_read_beyond_proof": sum(r["simulated_cache_read"] - r["provable_cache_read"] for r in beyond),
            "simulated_cost_usd": round(sim_cost, 6),
            "provable_cost_usd": round(proof_cost, 6),
            "cost_relative_to_provable": (sim_cost - proof_cost) / proof_cost if proof_cost else None,
            "provable_misses": len(provable_misses),
            "provable_misses_predicted": sum(1 for r in provable_misses if r["simulated_miss"]),
            "simulated_misses_with_provable_reuse": sum(
                1 for r in rows if r["simulated_miss"] and r["provable_cache_read"] >= r["recorded"] / 2
            ),
        }

    def cache_summary(self) -> dict[str, Any] | None:
        """Simulated against recorded cache usage over the session (None: the recording has none)."""
        rows = [r for r in self.rows if r["recorded_cache_read"] + r["recorded_cache_write"] > 0]
        if not rows:
            return None
        rec_miss = [r for r in rows if r["recorded_miss"]]
        others = [r for r in rows if not r["recorded_miss"]]
        rec_w = sum(r["recorded_cache_write"] for r in rows)
        sim_w = sum(r["simulated_cache_write"] for r in rows)
        rec_cost = sum(r["recorded_cost_usd"] for r in rows)
        sim_cost = sum(r["simulated_cost_usd"] for r in rows)
        return {
            "requests": len(rows),
            "recorded_misses": len(rec_miss),
            "recorded_misses_predicted": sum(1 for r in rec_miss if r["simulated_miss"]),
            "other_requests_predicted_as_misses": sum(1 for r in others if r["simulated_miss"]),
            "false_miss_share": sum(1 for r in others if r["simulated_miss"]) / len(others) if others else None,
            "recorded_cache_write_tokens": rec_w,
            "simulated_cache_write_tokens": sim_w,
            "cache_write_relative_error": (sim_w - rec_w) / rec_w if rec_w else None,
            "recorded_cost_usd": round(rec_cost, 6),
            "simulated_cost_usd": round(sim_cost, 6),
            "cost_relative_error": (sim_cost - rec_cost) / rec_cost if rec_cost else None,
        }


def replay(
    conv: Conversation,
    calibration: Calibration,
    across: Across = "continue",
    accounting: Accounting = "anchored",
    policy: str | None = None,
    params: Mapping[str, Any] | None = None,
    model: ModelConfig | None = None,
) -> Fidelity:
    """The calibrated replay of one recorded session; see the module docstring. ``accounting="anchored"`` counts
    the recorded messages as the provider did (:mod:`sim.core.anchors`), estimating only the rest. ``policy``
    (with ``params``, on ``model``'s window): also where that policy compacts against where the session did
    (:mod:`sim.calibration.where_compacts`), per compaction and in :attr:`Fidelity.policy_trigger`."""
    if across not in ("continue", "stop"):
        raise InvalidConfig(f"across={across!r} must be 'continue' or 'stop'")
    if accounting not in ("calibrated", "anchored"):
        raise InvalidConfig(f"accounting={accounting!r} must be 'calibrated' or 'anchored'")
    anchors = anchors_for(conv, calibration) if accounting == "anchored" else None
    segs = segments(conv)
    if across == "stop":
        segs = segs[:1]
    cuts = compaction_cuts(conv)
    boundaries = [conv.messages[i].meta["compact_boundary"] for i in cuts]
    out = Fidelity(conv.id, across, accounting, anchors.estimated if anchors is not None else None)
    out.block_tokens = int(conv.meta.get("block_size", 0) or 0)
    firsts: dict[int, tuple[int, int]] = {}
    ttl = recorded_ttl(conv.messages)
    if ttl == "policy" and conv.meta.get("source") == "kv-trace":
        ttl = TRACE_TTL
    turn = 0
    for k, seg in enumerate(segs):
        has_next = k < len(boundaries)
        seg_anchors = anchors.for_segment(k) if anchors is not None else None
        rows = replay_counts(
            seg, calibration.tokenizer, calibration, probe_end=has_next, cache_ttl=ttl, anchors=seg_anchors
        )
        first_estimated = anchors.estimated_first(k) if anchors is not None else None
        replies = [m for m in seg.messages if m.role == "assistant"]
        epoch = price_epoch(seg)  # recorded usage is priced at each request's own time, as the replay prices it
        # the estimated part of each request's recorded messages: a running sum over the segment
        guessed = [0]
        for msg in seg.messages:
            size = anchors.estimated_sizes.get(msg.id, 0) if anchors is not None else 0
            guessed.append(guessed[-1] + size)
        position = {id(msg): i for i, msg in enumerate(seg.messages)}
        for m, row in zip(replies, rows, strict=False):
            turn += 1
            if m.usage is None or m.usage.prompt_tokens <= 0 or m.meta.get("api_id_repeated"):
                continue
            u, recorded, simulated = m.usage, m.usage.prompt_tokens, row["context_tokens"]
            sim_write = row["cache_write_5m_tokens"] + row["cache_write_1h_tokens"]
            one_hour = min(int(m.meta.get("cache_write_1h", 0)), u.cache_write_tokens)
            pricer = _pricer(row["model"] or DEFAULT_MODEL)
            rec_cost = pricer.cost(
                recorded,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens - one_hour,
                one_hour,
                price_time(epoch, row["time_seconds"]),
            )
            estimated = guessed[position[id(m)]] if anchors is not None else simulated
            provable = m.meta.get("provable_prefix_tokens")
            if k not in firsts:  # the segment's first recorded request; with anchors, its overhead estimated
                firsts[k] = (recorded, simulated if first_estimated is None else first_estimated)
            out.rows.append(
                {
                    "turn": turn,
                    "segment": k,
                    "message_id": m.id,
                    "recorded": recorded,
                    "simulated": simulated,
                    "relative_error": (simulated - recorded) / recorded,
                    "summarised": opens_with_summary(seg),
                    "recorded_cache_read": u.cache_read_tokens,
                    "recorded_cache_write": u.cache_write_tokens,
                    "simulated_cache_read": row["cache_read_tokens"],
                    "simulated_cache_write": sim_write,
                    "recorded_miss": u.cache_read_tokens < recorded / 2,
                    "simulated_miss": row["cache_read_tokens"] < simulated / 2,
                    "recorded_cost_usd": rec_cost,
                    "simulated_cost_usd": row["cost_usd"],
                    "estimated_tokens": estimated,
                    "estimated_share": estimated / simulated if simulated else 0.0,
                    "provable_cache_read": provable,
                    "provable_cost_usd": None
                    if provable is None
                    else _provable_cost(
                        pricer, recorded, u.output_tokens, provable, ttl, price_time(epoch, row["time_seconds"])
                    ),
                }
            )
        if has_next:
            pre = boundaries[k].get("pre_tokens")
            sim_pre = rows[-1]["context_tokens"]
            out.compactions.append(
                {
                    "compaction": k + 1,
                    "after_turn": turn,
                    "trigger": where_compacts.recorded_trigger(conv, cuts[k]),
                    "pre_tokens": pre,
                    "simulated": sim_pre,
                    "relative_error": (sim_pre - pre) / pre if isinstance(pre, int) and pre > 0 else None,
                }
            )
    for c in out.compactions:  # the first request after each compaction: summary and what came back, estimated
        rec, est = firsts.get(c["compaction"], (None, None))
        c["first_after_recorded"], c["first_after_simulated"] = rec, est
        c["first_after_relative_error"] = (est - rec) / rec if rec and est is not None else None
    _predict_firsts(out, conv, calibration, anchors)
    if policy is not None:
        _check_trigger(out, conv, calibration, anchors, policy, params, model or ModelConfig())
    return out


def _check_trigger(
    out: Fidelity,
    conv: Conversation,
    calibration: Calibration,
    anchors: Anchors | None,
    policy: str,
    params: Mapping[str, Any] | None,
    model: ModelConfig,
) -> None:
    """Each compaction's ``policy_after_turn`` (the replies sent before ``policy`` compacted in the segment it ends;
    None: it did not) and ``policy_offset``, and :attr:`Fidelity.policy_trigger`."""
    checks = where_compacts.check(conv, policy, params, model, calibration, anchors)
    for c in out.compactions:
        k = checks[c["compaction"] - 1]
        c["policy_after_turn"], c["policy_offset"] = k.policy, k.offset
    out.policy_trigger = {
        "policy": policy,
        "params": dict(params or {}),
        "window": model.context_window,
        **where_compacts.figures(checks),
        "unrecorded_after_turns": [k.policy for k in checks if k.recorded is None and k.policy is not None],
    }


def _predict_firsts(out: Fidelity, conv: Conversation, calibration: Calibration, anchors: Anchors | None) -> None:
    """Each compaction's first request after it predicted from what the recording shows before it by the bundled
    post-compaction model (:mod:`sim.calibration.after_compaction`), fitted without this session: held out."""
    if not out.compactions:
        return
    if anchors is None and not after_compaction.sizes_only(conv):
        anchors = anchors_for(conv, calibration)
    model = after_compaction.bundled()
    predicted = {o.compaction: (o, model.predict(o)) for o in after_compaction.observations(conv, anchors)}
    for c in out.compactions:
        obs, p = predicted.get(c["compaction"], (None, None))
        c["first_after_predicted"] = p
        c["first_after_predicted_error"] = None if obs is None or p is None else (p - obs.recorded) / obs.recorded
    errs = np.array(
        [c["first_after_predicted_error"] for c in out.compactions if c["first_after_predicted_error"] is not None]
    )
    out.post_compaction = {"form": model.form, **after_compaction.figures(errs)}


def recorded_ttl(messages: tuple[Message, ...]) -> str:
    """The TTL the recorded client wrote its cache entries with: ``1h`` when most written tokens were (Claude
    Code's ``ephemeral_1h_input_tokens``), else ``5m``; ``policy`` when the recording shows no writes."""
    written = sum(m.usage.cache_write_tokens for m in messages if m.usage is not None)
    if not written:
        return "policy"
    one_hour = sum(int(m.meta.get("cache_write_1h", 0)) for m in messages if m.usage is not None)
    return "1h" if 2 * one_hour > written else "5m"


def _provable_cost(pricer: Pricer, prompt: int, output: int, read: int, ttl: str, when: Any) -> float:
    """A request priced as if the cache read exactly the prefix the hashes prove sent before (``read``) and wrote
    the rest (as a client with a breakpoint on its last block does), at ``ttl``'s write price."""
    read = min(read, prompt)
    write = prompt - read
    return pricer.cost(prompt, output, read, 0 if ttl == "1h" else write, write if ttl == "1h" else 0, when)


def _pricer(model: str) -> Pricer:
    try:
        return Pricer(model, "anthropic")
    except UnknownName:
        return Pricer(DEFAULT_MODEL, "anthropic")


def figure(result: Fidelity) -> Any:
    """The curve as a figure: recorded and simulated prompt tokens per request with the part of the simulated
    prompt that was estimated shaded, recorded compactions marked and, with a trigger check, where the policy
    compacts (top); the relative error (bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result.rows
    turns = [r["turn"] for r in rows]
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    ax.plot(turns, [r["recorded"] for r in rows], color="black", lw=1.4, label="recorded prompt tokens")
    ax.plot(turns, [r["simulated"] for r in rows], color="tab:blue", lw=1.2, ls="--", label="simulated")
    ax.fill_between(
        turns, 0, [r["estimated_tokens"] for r in rows], color="tab:orange", alpha=0.4, step="post", label="estimated"
    )
    for c in result.compactions:
        for a in (ax, bx):
            a.axvline(c["after_turn"] + 0.5, color="grey", ls=":", lw=1)
    ax.plot([], [], color="grey", ls=":", label="recorded compaction")
    if result.policy_trigger is not None:  # where the policy's own trigger fired (csim fidelity --policy)
        turns_fired = [c.get("policy_after_turn") for c in result.compactions]
        for t in [*turns_fired, *result.policy_trigger["unrecorded_after_turns"]]:
            if t is None:
                continue
            ax.axvline(t + 0.5, color="tab:green", ls="-.", lw=1)
        ax.plot([], [], color="tab:green", ls="-.", label=f"{result.policy_trigger['policy']} compacts")
    ax.set_ylabel("prompt tokens")
    ax.set_title(f"{result.conversation}: simulated ({result.accounting}) against recorded prompt tokens")
    ax.legend(loc="upper left", frameon=False)
    bx.plot(turns, [100 * r["relative_error"] for r in rows], color="tab:red", lw=1, marker=".", ms=3)
    bx.axhline(0, color="black", lw=0.8)
    bx.set_ylabel("error (%)")
    bx.set_xlabel("request")
    fig.tight_layout()
    return fig


def write(result: Fidelity, out: str | Path) -> tuple[Path, Path]:
    """``OUT/fidelity.csv`` (the curve), ``OUT/compactions.csv`` (stable bytes) and ``OUT/fidelity.png``."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    if result.rows:
        fig = figure(result)
        fig.savefig(d / "fidelity.png", dpi=90, metadata={"Software": None})
        import matplotlib.pyplot as plt

        plt.close(fig)
    curve, comp = d / "fidelity.csv", d / "compactions.csv"
    _write_csv(curve, CURVE_COLUMNS, result.rows)
    _write_csv(
        comp,
        [
            "compaction",
            "after_turn",
            "trigger",
            "pre_tokens",
            "simulated",
            "relative_error",
            "first_after_recorded",
            "first_after_simulated",
            "first_after_relative_error",
            "first_after_predicted",
            "first_after_predicted_error",
            "policy_after_turn",
            "policy_offset",
        ],
        result.compactions,
    )
    return curve, comp


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, columns, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6f}" if isinstance(v, float) else v) for k, v in r.items()})
