"""The canonical, append-only record of one run, and its JSONL form.

Events are frozen dataclasses, one per kind, each with a ``kind`` tag and a past-tense name. The
log is only ever appended to; :class:`RunLog` keeps a running digest of every event so that a
rewrite of an earlier event (by a misbehaving policy holding a reference) is detected by
:meth:`RunLog.verify`.

On disk a log is JSONL: a header line ``{"format": "csim-log", "schema_version": 1, ...}`` with the
run's config, seed, versions and tokenizer, then one line per event.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Literal

from sim.core.conversation import Message
from sim.core.errors import FormatError
from sim.core.view import View, fold

SCHEMA_VERSION = 2  # 2: views hold spans, edits and injected messages


@dataclass(frozen=True, slots=True)
class MessageAppended:
    """A message entered the log (tool results already bounded, as the model will see them)."""

    index: int
    message: Message
    synthetic: bool = False
    kind: Literal["message"] = "message"


@dataclass(frozen=True, slots=True)
class Staleness:
    """How a background compaction (``Policy.timing``) landed: its summary was made from the view at ``started_turn``,
    and ``messages`` more messages (``tokens`` tokens of them) came in before it was swapped in, kept verbatim after
    it; ``waited_seconds`` the agent waited for it (the run's clock is not moved: the script's times stand)."""

    started_turn: int
    messages: int
    tokens: int
    waited_seconds: float


@dataclass(frozen=True, slots=True)
class CompactionCreated:
    """A compaction changed the view; ``view`` is the whole new view, so this record is a checkpoint."""

    id: str
    turn: int
    trigger: str
    mode: str
    view: View
    tokens_before: int
    tokens_after: int
    summarised: tuple[int, int] = (0, 0)
    #: Ids of the facts established so far that the view showed before and not after (comma-joined).
    facts_lost: str = ""
    #: Set on a background compaction's swap; None for one made at once.
    staleness: Staleness | None = None
    kind: Literal["compaction"] = "compaction"

    def row(self) -> dict[str, Any]:
        """The compaction's row of the results' ``compactions`` table."""
        summary = self.view.summary
        return {
            "compaction_id": self.id,
            "turn": self.turn,
            "trigger": self.trigger,
            "mode": self.mode,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "start": self.view.start,
            "cleared_through": self.view.cleared_through,
            "summary_facts": len(summary.facts) if summary else 0,
            "facts_lost": self.facts_lost,
            **stale_columns(self.staleness),
        }


def stale_columns(s: Staleness | None) -> dict[str, Any]:
    """The compactions table's columns of a background compaction's :class:`Staleness` (None for one made at once)."""
    return {
        "started_turn": None if s is None else s.started_turn,
        "stale_messages": None if s is None else s.messages,
        "stale_tokens": None if s is None else s.tokens,
        "waited_seconds": None if s is None else s.waited_seconds,
    }


@dataclass(frozen=True, slots=True)
class CompactionFailed:
    """A compaction was attempted and abandoned (summariser failed, overflowed or returned nothing)."""

    turn: int
    trigger: str
    reason: str
    kind: Literal["compaction_failed"] = "compaction_failed"


@dataclass(frozen=True, slots=True)
class RequestSent:
    """One model request, agent or summariser, how the provider answered, and what it cost: everything the
    results' ``requests`` table holds of it (:meth:`row`)."""

    turn: int
    request_kind: str
    context_tokens: int
    output_tokens: int
    messages_in_view: int
    error: str | None = None
    cost_usd: float = 0.0
    billed: bool = False  # a rejected request (400) is not billed; a call that answered, even with nothing, is
    compaction_id: str = ""  # the compaction whose summary the prompt held, or that made this summariser call
    compactions_so_far: int = 0
    facts_needed: int = 0
    facts_visible: int = 0
    violations: str = ""  # the invariants this request broke, "; "-joined
    #: Of ``context_tokens``, what the prompt cache read and wrote (by TTL); the rest was uncached input.
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    time_seconds: float = 0.0  # when the request started (sim.core.clock), seconds since the conversation began
    model: str = ""  # the model that served it (the run's, or the one the recording names for the reply)
    kind: Literal["request"] = "request"

    def row(self) -> dict[str, Any]:
        """The request's row of the results' ``requests`` table."""
        return {
            "turn": self.turn,
            "request_kind": self.request_kind,
            "context_tokens": self.context_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "compaction_id": self.compaction_id,
            "compactions_so_far": self.compactions_so_far,
            "messages_in_view": self.messages_in_view,
            "facts_needed": self.facts_needed,
            "facts_visible": self.facts_visible,
            "violations": self.violations,
            "error": self.error or "",
            "billed": self.billed,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_5m_tokens": self.cache_write_5m_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
            "time_seconds": self.time_seconds,
            "model": self.model,
        }


@dataclass(frozen=True, slots=True)
class BudgetWarned:
    """A budget dimension crossed 80% of its limit (emitted once per dimension)."""

    turn: int
    dimension: str
    used: float
    limit: float
    kind: Literal["budget_warning"] = "budget_warning"


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended: why, and which budget dimension was exhausted, if any."""

    finish_reason: str
    exhausted: str | None = None
    kind: Literal["finished"] = "finished"


Event = MessageAppended | CompactionCreated | CompactionFailed | RequestSent | BudgetWarned | RunFinished


def _digest(prev: int, event: Event, message_hash: int | None = None) -> int:
    # Events are frozen dataclasses down to their strings, so hash() covers every field; str hashes
    # are cached by Python, which makes this cheap. The chain is only compared within one process,
    # where hash() is stable, so its per-process salt does not matter. A message's own hash may be
    # passed in (the engine memoises it per worker); ``verify`` always recomputes it, so a message
    # edited in place after it was first seen still breaks the chain.
    if isinstance(event, MessageAppended):
        h = hash(event.message) if message_hash is None else message_hash
        return hash((prev, event.index, h, event.synthetic))
    return hash((prev, event))


class RunLog:
    """An append-only list of events with a digest chain over them, and the table rows they make (a row is
    derived from its event once, when the event is appended: forks of a lockstep replay share them)."""

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._chain: list[int] = []
        self._rows: dict[str, list[dict[str, Any]]] = {"request": [], "compaction": []}
        #: Events verified so far by ``verify(incremental=True)``; messages appended (MessageAppended events).
        self.verified = 0
        self.messages_appended = 0
        self._folded: tuple[int, View, View] | None = None  # (events folded, the view then, from which view)

    def append(self, event: Event, message_hash: int | None = None) -> None:
        """Add ``event``; ``message_hash`` is ``hash(event.message)`` when the caller already has it."""
        prev = self._chain[-1] if self._chain else 0
        self._events.append(event)
        self._chain.append(_digest(prev, event, message_hash))
        if isinstance(event, MessageAppended):
            self.messages_appended += 1
        if isinstance(event, (RequestSent, CompactionCreated)):
            self._rows[event.kind].append(event.row())

    def copy(self) -> RunLog:
        """An independent log with the same events and chain so far."""
        other = RunLog()
        other._events, other._chain = list(self._events), list(self._chain)
        other._rows = {k: list(v) for k, v in self._rows.items()}
        other.verified, other.messages_appended, other._folded = self.verified, self.messages_appended, self._folded
        return other

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __getitem__(self, i: int) -> Event:
        return self._events[i]

    def verify(self, incremental: bool = False) -> str | None:
        """Recompute the digest chain; a description of the first rewritten event, or None.

        ``incremental``: only the events appended since the last incremental verification that passed, chained
        on to the digest stored before them, so checking at every request costs what was appended, not the
        whole log; an event rewritten before that point is caught by the full verification a run ends with."""
        if len(self._events) != len(self._chain):
            return f"log has {len(self._events)} events but {len(self._chain)} were appended"
        start = min(self.verified, len(self._events)) if incremental else 0
        prev = self._chain[start - 1] if start else 0
        for i in range(start, len(self._events)):
            ev = self._events[i]
            d = _digest(prev, ev)
            if d != self._chain[i]:
                return f"event {i} ({ev.kind}) changed after it was appended"
            prev = d
        if incremental:
            self.verified = len(self._events)
        return None

    def newest_view(self, initial: View) -> View:
        """:func:`~sim.core.view.fold` of this log from ``initial``: the view of its newest compaction record, or
        ``initial``. Each call reads only the events appended since the last one, as incremental verification
        does (what was folded before stays folded: the log is append-only, and an earlier record rewritten is for
        the digest chain to catch, in the verification a run ends with), so asking at every request costs what was
        appended, not the whole log."""
        start, view = 0, initial
        if self._folded is not None and self._folded[2] is initial and self._folded[0] <= len(self._events):
            start, view = self._folded[0], self._folded[1]
        view = fold(self._events[start:], view)
        self._folded = (len(self._events), view, initial)
        return view


def request_rows(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The ``requests`` table's rows of one run, from its log (every model request, in order)."""
    if isinstance(events, RunLog):
        return list(events._rows["request"])
    return [e.row() for e in events if isinstance(e, RequestSent)]


def compaction_rows(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The ``compactions`` table's rows of one run, from its log (rollbacks included)."""
    if isinstance(events, RunLog):
        return list(events._rows["compaction"])
    return [e.row() for e in events if isinstance(e, CompactionCreated)]


@functools.cache
def _plain_fields(cls: type) -> tuple[str, ...]:
    """The fields of a dataclass that :func:`to_plain` writes: ``meta`` (source details) and private ones (values
    derived from the others) left out."""
    return tuple(f.name for f in fields(cls) if f.name != "meta" and not f.name.startswith("_"))


def to_plain(obj: Any) -> Any:
    """Dataclasses, sets and tuples as plain JSON values; defaults and ``meta`` left out."""
    if obj is None or type(obj) in _SCALARS:  # most values: nothing to convert
        return obj
    if is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for name in _plain_fields(type(obj)):
            v = getattr(obj, name)
            if v is None or v == () or v is False or (name == "text" and v == ""):
                continue
            out[name] = to_plain(v)
        return out
    if isinstance(obj, (frozenset, set)):
        return sorted(to_plain(v) for v in obj)
    if isinstance(obj, (tuple, list)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    return obj


_SCALARS = frozenset({str, int, float, bool})


def encode_event(event: Event) -> str:
    """One event as a canonical JSON line (sorted keys, no spaces), the same bytes in every process."""
    return json.dumps(to_plain(event), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def encode_log(log: Iterable[Event], header: Mapping[str, Any] | None = None) -> str:
    """A run log as text: a versioned header line, then one :func:`encode_event` line per event. What a sweep
    keeps of a run (the ``logs`` table of a part); :func:`decode_log` reads it back."""
    head = {"format": "csim-log", "schema_version": SCHEMA_VERSION, **(header or {})}
    lines = [json.dumps(head, sort_keys=True, separators=(",", ":"), ensure_ascii=False)]
    lines.extend(encode_event(e) for e in log)
    return "\n".join(lines) + "\n"


def decode_log(text: str, where: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the events (JSON objects, each with its ``kind``) of a log :func:`encode_log` wrote.
    A header of another format or schema version, or a line that is no event, is a
    :class:`~sim.core.errors.FormatError` naming ``where`` and the line."""
    lines = text.splitlines()
    try:
        head = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError as exc:
        raise FormatError(where, 1, f"not a JSON header line: {exc.msg}", "expected a csim run log") from None
    if not isinstance(head, dict) or head.get("format") != "csim-log":
        raise FormatError(where, 1, "not a csim run log (header has no format: csim-log)")
    if head.get("schema_version") != SCHEMA_VERSION:
        raise FormatError(
            where,
            1,
            f"schema_version {head.get('schema_version')!r} is not supported",
            f"this csim reads version {SCHEMA_VERSION}; run it again",
        )
    events: list[dict[str, Any]] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(where, number, f"not a JSON event: {exc.msg}", "the log is damaged") from None
        if not isinstance(event, dict) or "kind" not in event:
            raise FormatError(where, number, "not an event (no 'kind')", "the log is damaged")
        events.append(event)
    return head, events


__all__ = [
    "BudgetWarned",
    "CompactionCreated",
    "CompactionFailed",
    "Event",
    "MessageAppended",
    "RequestSent",
    "RunFinished",
    "RunLog",
    "Staleness",
    "encode_event",
    "compaction_rows",
    "decode_log",
    "encode_log",
    "request_rows",
    "stale_columns",
    "to_plain",
]
