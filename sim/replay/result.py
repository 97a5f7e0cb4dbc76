"""What one run produced: its tables (built from the log, which is the record) and its one-row summary."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sim.core.invariants import Violation
from sim.core.log import RunLog, compaction_rows, request_rows
from sim.replay.billing import Billing
from sim.replay.reactions import Reactions
from sim.replay.retention import Retention


@dataclass
class RunResult:
    """What one run produced: request rows, compactions, violations, the log, and the summary."""

    run_id: str
    policy: str
    params: dict[str, Any]
    params_hash: str
    conversation_id: str
    seed: int
    rows: list[dict[str, Any]]
    compactions: list[dict[str, Any]]
    violations: list[Violation]
    log: RunLog
    summary: dict[str, Any]
    #: One row per (fact, request that needed it): kind, age in messages since its source, compaction round
    #: (:mod:`sim.replay.retention`), visible or not.
    fact_rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RunIdentity:
    """Who ran what: the run id, the policy's name, settings and their hash, the conversation and the seed."""

    run_id: str
    policy: str
    params: dict[str, Any]
    params_hash: str
    conversation: str
    seed: int


def run_result(
    ident: RunIdentity,
    log: RunLog,
    *,
    reason: str,
    exhausted: str | None,
    billing: Billing,
    cached: bool,
    retention: Retention,
    unreached: dict[str, int],
    reactions: Reactions,
    task_success: float,
    overflows: int,
    failed_turns: int,
    violations: list[Violation],
    messages: int,
    left_out: int = 0,
) -> RunResult:
    """The result of a finished run: its rows from the log, the compactions with their costs, and the summary
    (``unreached``: needs a stopped run never judged, counted as lost; see :meth:`Retention.unreached`;
    ``left_out``: the recorded compactions whose results the replay did not send,
    :func:`sim.core.counting.stand_ins`)."""
    rows, compactions = request_rows(log), compaction_rows(log)  # the log is the record
    parts = billing.cost_parts(rows)  # uncached input, cache reads, cache writes, output (USD)
    compactions = billing.compaction_costs(log, compactions, cached)
    agent = [r for r in rows if r["request_kind"] != "summariser" and not r["error"]]
    needed = retention.needed + sum(unreached.values())
    by_kind = {k: [v[0], v[1]] for k, v in retention.by_kind.items()}
    for kind, n in unreached.items():
        by_kind.setdefault(kind, [0, 0])[0] += n
    billed_input = sum(r["context_tokens"] for r in rows if r["billed"])
    summary = {
        "run_id": ident.run_id,
        "policy": ident.policy,
        "params": ident.params,
        "params_hash": ident.params_hash,
        "conversation": ident.conversation,
        "seed": ident.seed,
        "requests": len(rows),
        "agent_requests": len(agent),
        "peak_context_tokens": max((r["context_tokens"] for r in agent), default=0),
        "cumulative_input_tokens": billed_input,
        "cumulative_output_tokens": sum(r["output_tokens"] for r in rows),
        "total_cost_usd": round(sum(r["cost_usd"] for r in rows), 10),
        "cache_read_tokens": sum(r["cache_read_tokens"] for r in rows),
        "cache_write_tokens": sum(r["cache_write_5m_tokens"] + r["cache_write_1h_tokens"] for r in rows),
        "cache_hit_share": _share(sum(r["cache_read_tokens"] for r in rows), billed_input),
        "summariser_cost_usd": round(sum(r["cost_usd"] for r in rows if r["request_kind"] == "summariser"), 10),
        "unpriced_models": ", ".join(sorted(billing.unpriced)),
        "cost_input_usd": round(parts[0], 10),
        "cost_cache_read_usd": round(parts[1], 10),
        "cost_cache_write_usd": round(parts[2], 10),
        "cost_output_usd": round(parts[3], 10),
        "compaction_cost_usd": round(sum(c["cost_usd"] for c in compactions), 10),
        "compactions": compactions,
        "compaction_count": len(compactions),
        "recorded_compactions_left_out": left_out,
        "overflows": overflows,
        "failed_turns": failed_turns,
        "facts_needed": needed,
        "facts_visible": retention.visible,
        "facts_unreached": sum(unreached.values()),
        "retention_recall": retention.visible / needed if needed else None,
        "retention_by_kind": {
            k: {"needed": v[0], "visible": v[1], "recall": v[1] / v[0] if v[0] else None}
            for k, v in sorted(by_kind.items())
        },
        **retention_by_round(retention.rows),
        "task_success": task_success,
        **reactions.summary(),
        "finish_reason": reason,
        "exhausted": exhausted,
        "violation_count": len(violations),
        "violations_by_invariant": count(v.invariant for v in violations),
        "messages_in_log": messages,
    }
    return RunResult(
        ident.run_id,
        ident.policy,
        ident.params,
        ident.params_hash,
        ident.conversation,
        ident.seed,
        rows,
        compactions,
        violations,
        log,
        summary,
        retention.rows,
    )


#: The rounds the ``runs`` table holds a recall for: ``retention_round0``, ``retention_round1`` and the rest pooled.
ROUND_COLUMNS = ("retention_round0", "retention_round1", "retention_round2plus")


def retention_by_round(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Recall by compaction round over a run's judged needs: ``retention_by_round`` (round -> needed, visible,
    recall) and the :data:`ROUND_COLUMNS` (None where no need fell in the round). A need a stopped run never
    reached was never judged, so it has no round: it counts against ``retention_recall`` only."""
    by: dict[int, list[int]] = {}
    for r in rows:
        v = by.setdefault(r["round"], [0, 0])
        v[0] += 1
        v[1] += r["visible"]
    later = [v for k, v in by.items() if k >= 2]
    pooled = [by.get(0, [0, 0]), by.get(1, [0, 0]), [sum(v[0] for v in later), sum(v[1] for v in later)]]
    return {
        "retention_by_round": {
            k: {"needed": v[0], "visible": v[1], "recall": v[1] / v[0]} for k, v in sorted(by.items())
        },
        **{c: (v[1] / v[0] if v[0] else None) for c, v in zip(ROUND_COLUMNS, pooled, strict=True)},
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def count(items: Iterable[str]) -> dict[str, int]:
    """How often each item occurs, by item in sorted order."""
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items()))


__all__ = ["ROUND_COLUMNS", "RunIdentity", "RunResult", "count", "retention_by_round", "run_result"]
