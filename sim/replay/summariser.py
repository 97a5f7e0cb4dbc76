"""The mock summariser: a deterministic stand-in for the summarisation model call.

It is a model call like any other: the engine charges its prompt and output, and its prompt can
overflow the window, which fails the compaction. What it returns is a structured hand-off with the
six sections both seed systems ask for (Goal, Constraints & Preferences, Progress, Key Decisions,
Next Steps, Critical Context).

Retention model (which facts survive), stated so results can be argued with:

1. The candidates are the facts visible in the span being summarised (not cleared, not lost to
   bounding) plus the facts the previous summary kept: an earlier summary is re-summarised, so a
   fact must survive every compaction it goes through (summaries degrade as they iterate, which
   Codex warns about and failure reports show).
2. Each candidate is kept with a probability set per kind (``keep_constraint`` ... ``keep_recall``),
   drawn from a generator seeded by the run seed and the compaction's number, so the same run keeps
   the same facts.
3. Kept facts are written in priority order (constraints, decisions, continuations, artifacts,
   recalls; oldest first within a kind) until the output budget is full (``max_output_tokens``,
   by default the model's output reserve, as both seeds call their run's own model); the rest are lost.
4. With probability ``failure_rate`` the call fails, and with ``empty_rate`` it returns an empty
   text; either way the compaction is abandoned and the view stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim.core.conversation import Fact
from sim.core.retention import SummariserConfig

if TYPE_CHECKING:
    import numpy as np

SECTIONS = {
    "constraint": "Constraints & Preferences",
    "recall": "Progress",
    "decision": "Key Decisions",
    "continuation": "Next Steps",
    "artifact": "Critical Context",
}
PRIORITY = ("constraint", "decision", "continuation", "artifact", "recall")


@dataclass(frozen=True)
class SummaryOutcome:
    """The summariser's answer: the text and retained facts, or why it failed."""

    text: str
    facts: frozenset[str]
    failed: str | None = None


def summarise(
    *,
    goal: str,
    covered_messages: int,
    covered_calls: Sequence[str],
    candidates: Sequence[Fact],
    config: SummariserConfig,
    max_output_tokens: int,
    rng: np.random.Generator,
    count: Callable[[str], int],
) -> SummaryOutcome:
    """Produce the structured summary of a span under the retention model above."""
    u = rng.random(2 + len(candidates))
    if u[0] < config.failure_rate:
        return SummaryOutcome("", frozenset(), failed="summariser call failed")
    if u[1] < config.empty_rate:
        return SummaryOutcome("", frozenset(), failed="summariser returned an empty summary")
    drawn = [f for f, x in zip(candidates, u[2:], strict=True) if x < config.keep(f.kind)]
    drawn.sort(key=lambda f: PRIORITY.index(f.kind))  # stable: source order within a kind
    tools = sorted(set(covered_calls))
    header = (
        f"## Goal\n{goal.strip()[:300]}\n"
        f"(covers {covered_messages} earlier messages and {len(covered_calls)} tool calls"
        + (f": {', '.join(tools[:8])}" if tools else "")
        + ")\n"
    )
    budget = max_output_tokens - count(header)
    by_section: dict[str, list[str]] = {s: [] for s in SECTIONS.values()}
    kept: set[str] = set()
    for f in drawn:
        line = f"- {f.text}"
        cost = count(line) + 1
        if cost > budget:
            break
        budget -= cost
        by_section[SECTIONS[f.kind]].append(line)
        kept.add(f.id)
    body = "".join(
        f"## {section}\n" + ("\n".join(lines) if lines else "- (none)") + "\n"
        for section, lines in by_section.items()
        if section != "Goal"
    )
    return SummaryOutcome(header + body, frozenset(kept))
