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
from sim.core.errors import InvalidConfig

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
class SummariserConfig:
    """Parameters of the retention model.

    The per-kind keep probabilities are grounded in Factory.ai's probe evaluation of context compression
    ("Evaluating context compression for AI agents", Dec 2025; ``reference/policy-catalogue.md`` §D4 and
    ``reference/evaluation-literature.md`` §2): a judge scored, 0 to 5, what each summarising method (Factory's
    anchored summaries, the Anthropic SDK's, OpenAI's ``/responses/compact``) kept at hundreds of compression
    points. Each default is the mean over the three methods of the dimension closest to the fact kind, divided
    by 5 (a score read as the share kept, a mapping of ours):

    * ``recall`` (a detail looked up; Factory's recall probe, "what was the original error?"): *accuracy*,
      (4.04 + 3.74 + 3.43) / 3 / 5 = 0.75;
    * ``decision`` (what was decided and why): *context*, (4.01 + 3.56 + 3.64) / 3 / 5 = 0.75;
    * ``continuation`` (what to do next): *continuity*, (3.80 + 3.67 + 3.77) / 3 / 5 = 0.75;
    * ``artifact`` (which files changed, and how): *artifact*, (2.45 + 2.33 + 2.19) / 3 / 5 = 0.46, the worst
      for every method, as Factory reports;
    * ``constraint`` (the user's rules): *instruction*, (4.99 + 4.95 + 4.92) / 3 / 5 = 0.99.

    ``failure_rate`` and ``empty_rate`` are 0 (this project's choice: failures are opt-in).
    """

    keep_constraint: float = 0.99
    keep_decision: float = 0.75
    keep_continuation: float = 0.75
    keep_artifact: float = 0.46
    keep_recall: float = 0.75
    max_output_tokens: int | None = None
    failure_rate: float = 0.0
    empty_rate: float = 0.0

    def __post_init__(self) -> None:
        for name in (
            "keep_constraint",
            "keep_decision",
            "keep_continuation",
            "keep_artifact",
            "keep_recall",
            "failure_rate",
            "empty_rate",
        ):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise InvalidConfig(f"summariser {name}={v!r} must be a probability in [0, 1]")
        if self.max_output_tokens is not None and self.max_output_tokens < 64:
            raise InvalidConfig(f"summariser max_output_tokens={self.max_output_tokens!r} must be at least 64")

    def keep(self, kind: str) -> float:
        return float(getattr(self, f"keep_{kind}"))


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
