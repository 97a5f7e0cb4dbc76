"""What the model sees at one request: a fold over the log, never a rewrite of it.

A :class:`View` is small and immutable: where the kept tail starts, up to where tool results are
cleared, which earlier messages stay pinned, and the current summary. Every compaction record in
the log carries the whole view it produces, so the view at any point is the view of the newest
compaction before it (:func:`fold`), and a run can resume from any compaction record alone: that
record is the checkpoint.

Rendered order: the system prompt (message 0 when it has role ``system``), pinned messages, the
summary as a user message, then the tail ``messages[start:]`` with tool results before
``cleared_through`` replaced by the placeholder.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

DEFAULT_PLACEHOLDER = "[tool result cleared by compaction]"


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary standing in for the messages before the tail.

    Attributes:
        text: the summary as the model sees it (already wrapped by the policy's wrapper).
        facts: ids of facts the summary retains.
        through: messages before this index are covered (summarised or earlier summaries).
        compaction_id: the compaction that produced it.
    """

    text: str
    facts: frozenset[str] = frozenset()
    through: int = 0
    compaction_id: str = ""


@dataclass(frozen=True, slots=True)
class View:
    """The model-visible state, as positions into the log's messages."""

    start: int = 0
    cleared_through: int = 0
    pinned: tuple[int, ...] = ()
    summary: Summary | None = None
    placeholder: str = DEFAULT_PLACEHOLDER
    checkpoint: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def shows(self, index: int) -> bool:
        """Whether message ``index`` is in the view (possibly with cleared results).

        The system prompt is shown whatever the view says; the engine adds it separately.
        """
        return index >= self.start or index in self.pinned

    def is_cleared(self, index: int) -> bool:
        """Whether message ``index``'s tool results are replaced by the placeholder."""
        return index < self.cleared_through

    def with_(self, **changes: object) -> View:
        return replace(self, **changes)  # type: ignore[arg-type]


def fold(events: Iterable[object]) -> View:
    """The view after ``events``: the view of the newest compaction record, or the empty view."""
    view = View()
    for ev in events:
        v = getattr(ev, "view", None)
        if getattr(ev, "kind", None) == "compaction" and isinstance(v, View):
            view = v
    return view
