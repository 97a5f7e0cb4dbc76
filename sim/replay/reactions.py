"""What the reactive agent did in one run (:mod:`sim.replay.reactive` does it): its counts, the copies it made of
facts' sources, and the one source of its random choices."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace


def draw(seed: int, *key: object) -> float:
    """A uniform number in [0, 1) that depends only on the run's seed and ``key``: the same in every process,
    executor and lockstep group, and independent of how many draws came before."""
    text = "|".join(map(str, (seed, *key)))
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") / 2**64


@dataclass
class Reactions:
    """What the reactive agent did in one run: the counts a run's summary reports."""

    reacquisitions: int = 0
    repeated_work: int = 0
    errors: int = 0
    errors_repaired: int = 0
    errors_unrepaired: int = 0
    facts_unused: int = 0
    extra_requests: int = 0
    extra_cost_usd: float = 0.0
    #: Fact source message id -> ids of the messages that carry it again, oldest first; and back.
    copies: dict[str, list[str]] = field(default_factory=dict)
    copy_of: dict[str, str] = field(default_factory=dict)
    stalls: int = 0
    #: Ids of every message the agent added (its requests' replies and the results and restatements after them).
    added: set[str] = field(default_factory=set)
    #: :func:`task_counts` of the script, computed at the first unrepaired error.
    task_counts: list[int] = field(default_factory=list)
    #: Failing tool messages whose signal a summary dropped; the agent tries them again before its next step.
    stalls_pending: list[int] = field(default_factory=list)
    #: Task (sim.replay.reactive.task_of) -> errors left unrepaired in it.
    unrepaired_by_task: dict[int, int] = field(default_factory=dict)
    serial: int = 0

    def add_copy(self, source: str, copy_id: str) -> None:
        self.copies.setdefault(source, []).append(copy_id)
        self.copy_of[copy_id] = source

    def copy(self) -> Reactions:
        return replace(
            self,
            copies={k: list(v) for k, v in self.copies.items()},
            copy_of=dict(self.copy_of),
            unrepaired_by_task=dict(self.unrepaired_by_task),
            stalls_pending=list(self.stalls_pending),
            added=set(self.added),
        )

    def summary(self) -> dict[str, float | int]:
        return {
            "reacquisitions": self.reacquisitions,
            "repeated_work": self.repeated_work,
            "errors": self.errors,
            "errors_repaired": self.errors_repaired,
            "errors_unrepaired": self.errors_unrepaired,
            "facts_unused": self.facts_unused,
            "stalls": self.stalls,
            "extra_requests": self.extra_requests,
            "extra_cost_usd": round(self.extra_cost_usd, 10),
        }


__all__ = ["Reactions", "draw"]
