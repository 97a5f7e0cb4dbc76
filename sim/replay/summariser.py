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
2. Each candidate is kept with the probability the run's :class:`~sim.core.retention.RetentionModel` gives its
   kind (by default the bundled fit on real Claude Code summaries; ``-R retention=FILE`` for another): for a
   fitted kind it falls as the span holds more facts of the kind and rises with the summary's length; a published
   kind has one share for a fact's first summary and another for each later one. A custom instruction
   (``-R instruction=...``) that names a kind halves its loss; a pinned kind (``-R pin=constraint``) is restated.
3. The draw is keyed by the run seed, the fact and its round (how many summaries it has been through), not by
   the compaction's number: whether a fact survives its second summary does not depend on which other facts
   happened to be summarised with it, and two settings that summarise a fact the same number of times draw the
   same number for it.
4. The summary's length is the model's typical length, no more than what it summarises and no more than the
   output cap (``max_output_tokens``, by default the model's output reserve, as both seeds call their run's own
   model). Kept facts are written in priority order (pinned kinds, then constraints, decisions, continuations,
   artifacts, recalls; oldest first within a kind); a line that does not fit is lost and the next is tried, so
   the summary never grows past its length by copying an earlier summary's lines.
5. With probability ``failure_rate`` the call fails, and with ``empty_rate`` it returns an empty
   text; either way the compaction is abandoned and the view stays as it was.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
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

#: The words of a custom instruction that name each kind (``-R instruction``).
NAMES = {
    "constraint": re.compile(r"\b(constraints?|rules?|preferences?|requirements?|instructions?)\b", re.I),
    "decision": re.compile(r"\bdecisions?|decided\b", re.I),
    "continuation": re.compile(r"\b(next steps?|todos?|to-dos?|pending tasks?|plans?)\b", re.I),
    "artifact": re.compile(r"\b(files?|paths?|commands?|identifiers?|ids?|names?|numbers?)\b", re.I),
    "recall": re.compile(r"\b(errors?|details?|results?|findings?)\b", re.I),
}

#: Fewest tokens a summary is written in, however little it covers (a header and a few lines).
MIN_SUMMARY_TOKENS = 128


@dataclass(frozen=True)
class SummaryOutcome:
    """The summariser's answer: the text and retained facts (each with its round), or why it failed."""

    text: str
    facts: frozenset[str]
    failed: str | None = None
    rounds: tuple[tuple[str, int], ...] = ()


def named_kinds(instruction: str) -> frozenset[str]:
    """The fact kinds a custom instruction asks to keep."""
    return frozenset(k for k, rx in NAMES.items() if instruction and rx.search(instruction))


def fact_draw(seed: int, fact: str, round: int) -> float:
    """A uniform number in [0, 1) fixed by the run seed, the fact and its round: the same in every process."""
    h = hashlib.blake2b(f"{seed}\x00{fact}\x00{round}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0**64


def keep_probabilities(
    candidates: Sequence[Fact], rounds: Mapping[str, int], config: SummariserConfig, summary_tokens: float
) -> list[float]:
    """Each candidate's chance to be kept by a summary of ``summary_tokens`` (the retention model, item 2)."""
    per_kind = Counter(f.kind for f in candidates)
    named = named_kinds(config.instruction)
    out = []
    for f in candidates:
        if f.kind in config.pin:
            out.append(1.0)
            continue
        p = config.rate(f.kind).keep(summary_tokens, per_kind[f.kind], rounds.get(f.id, 0) + 1)
        out.append(1.0 - (1.0 - p) / 2.0 if f.kind in named else p)
    return out


def summarise(
    *,
    goal: str,
    covered_messages: int,
    covered_calls: Sequence[str],
    candidates: Sequence[Fact],
    rounds: Mapping[str, int],
    config: SummariserConfig,
    max_output_tokens: int,
    input_tokens: int,
    seed: int,
    rng: np.random.Generator,
    count: Callable[[str], int],
) -> SummaryOutcome:
    """Produce the structured summary of a span under the retention model above. ``rounds``: how many summaries
    each candidate has been through before this one (absent: none); ``rng`` draws the call's failures."""
    u = rng.random(2)
    if u[0] < config.failure_rate:
        return SummaryOutcome("", frozenset(), failed="summariser call failed")
    if u[1] < config.empty_rate:
        return SummaryOutcome("", frozenset(), failed="summariser returned an empty summary")
    length = max(MIN_SUMMARY_TOKENS, min(max_output_tokens, config.model.summary_tokens, input_tokens))
    probs = keep_probabilities(candidates, rounds, config, length)
    drawn = [
        f
        for f, p in zip(candidates, probs, strict=True)
        if p >= 1.0 or fact_draw(seed, f.id, rounds.get(f.id, 0) + 1) < p
    ]
    drawn.sort(key=lambda f: (f.kind not in config.pin, PRIORITY.index(f.kind)))  # stable: source order within
    tools = sorted(set(covered_calls))
    header = (
        f"## Goal\n{goal.strip()[:300]}\n"
        f"(covers {covered_messages} earlier messages and {len(covered_calls)} tool calls"
        + (f": {', '.join(tools[:8])}" if tools else "")
        + ")\n"
    )
    skeleton = "".join(f"## {section}\n- (none)\n" for section in SECTIONS.values())
    budget = min(max_output_tokens, length) - count(header) - count(skeleton)
    by_section: dict[str, list[str]] = {s: [] for s in SECTIONS.values()}
    kept: dict[str, int] = {}
    for f in drawn:
        line = f"- {f.text}"
        cost = count(line) + 1
        if cost > budget:
            continue  # this one does not fit; a shorter one may
        budget -= cost
        by_section[SECTIONS[f.kind]].append(line)
        kept[f.id] = rounds.get(f.id, 0) + 1
    body = "".join(
        f"## {section}\n" + ("\n".join(lines) if lines else "- (none)") + "\n" for section, lines in by_section.items()
    )
    return SummaryOutcome(header + body, frozenset(kept), rounds=tuple(sorted(kept.items())))


__all__ = ["SummaryOutcome", "fact_draw", "keep_probabilities", "named_kinds", "summarise"]
