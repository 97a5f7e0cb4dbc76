"""The run's state as a policy sees it: the log's messages, the view, counts and limits.

Everything a policy may read is here, and everything is O(1) to query: per-message sizes are kept
as prefix sums, atomic units as the index of each message's unit start, so a policy decision or an
invariant check costs nothing that grows with the conversation, and a turn costs O(new messages).

Sizes come in two currencies, as in real systems. ``chars`` are what a client can measure itself
(the seeds' chars/4 estimates use them). ``tokens`` are exact counts: the provider reports its total
for the last request (``last_input_tokens``), which is what a client that only estimates has, and a
policy modelling such a client decides on :meth:`RunState.estimated_context_tokens`. ``view_size``
gives the exact tokens of any view, as a client that counts with a tokenizer has them, and is the
measure the ``compaction-shrinks`` invariant judges a compaction by.
"""

from __future__ import annotations

import copy
import functools
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from sim.core.conversation import Message
from sim.core.model import MESSAGE_OVERHEAD, ModelConfig
from sim.core.view import ByView, Messages, Rule, View, call_id_tokens, edited_chars, layout, standard_rule

#: ``(message, rules) -> (chars, tokens)`` of the message as ``rules`` edit it; (0, 0) when nothing of it is sent.
Sizer = Callable[[Message, tuple[Rule, ...]], tuple[int, int]]
T = TypeVar("T")


def _chars_only(m: Message, rules: tuple[Rule, ...]) -> tuple[int, int]:
    """A sizer for ledgers built without an engine: characters, and chars/4 as tokens."""
    c = edited_chars(m, rules)
    return c, -(-c // 4)


@functools.cache
def _standard_rules(placeholder: str) -> tuple[Rule, ...]:
    return (standard_rule(placeholder),)


@dataclass
class _Prefix:
    """Prefix sums of one rule set's edited sizes: x[i] = sum over messages[:i]."""

    chars: list[int] = field(default_factory=lambda: [0])
    tokens: list[int] = field(default_factory=lambda: [0])
    sent: list[int] = field(default_factory=lambda: [0])
    ids: list[int] = field(default_factory=lambda: [0])  # tokens of the call ids sent (view.call_id_tokens)

    def copy(self) -> _Prefix:
        return _Prefix(list(self.chars), list(self.tokens), list(self.sent), list(self.ids))


@dataclass
class Ledger:
    """Per-message sizes and structure, appended to as messages enter the log.

    Sizes are prefix sums, so any range costs O(1). Edited sizes are kept per distinct rule set (the
    rules that reach a message, see ``sim.core.view.layout``): built the first time a view uses that set and
    extended lazily after, so a policy that edits pays O(messages) once per kind of edit, and nothing per
    request beyond the messages appended since."""

    messages: list[Message] = field(default_factory=list)
    #: message id -> its index in ``messages``
    index: dict[str, int] = field(default_factory=dict)
    # prefix sums of the messages as stored: x_prefix[i] = sum of x over messages[:i]
    chars_prefix: list[int] = field(default_factory=lambda: [0])
    tokens_prefix: list[int] = field(default_factory=lambda: [0])
    calls_prefix: list[int] = field(default_factory=lambda: [0])  # tool calls
    ids_prefix: list[int] = field(default_factory=lambda: [0])  # tokens of call ids (view.call_id_tokens)
    unit_start: list[int] = field(default_factory=list)
    last_user: int = -1
    reverts: list[tuple[int, int]] = field(default_factory=list)  # (revert index, change index)
    change_at: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)  # unresolved pending message id -> index
    sizer: Sizer = _chars_only
    #: Counts a text the view adds (a summary, an injected message) as the sizer counts messages.
    count: Callable[[str], int] = lambda text: -(-len(text) // 4)
    #: Counts a call id as the engine's tokenizer does, for a calibration that frames by them
    #: (``per_call_id_token``); None: not counted (every other run, which has no use for them).
    id_count: Callable[[str], int] | None = None
    edited: dict[tuple[Rule, ...], _Prefix] = field(default_factory=dict)
    #: The first message's text as it was appended (the system prompt's, when there is one): what every
    #: request must start with, byte for byte, whatever happens to the list of messages afterwards.
    first_text: str | None = None
    #: Assistant messages that opened an assistant turn: the request they answered ended with a user message of
    #: words (no tool results), so the model began a turn afresh (with thinking, where thinking is on).
    openers: set[int] = field(default_factory=set)
    #: Whether an assistant message with thinking was appended: the client runs with thinking on.
    thinking: bool = False

    def append(self, m: Message, chars: int, tokens: int, calls: int | None = None) -> int:
        i = len(self.messages)
        self.messages.append(m)
        self.index[m.id] = i
        if i == 0:
            self.first_text = m.text
        self.chars_prefix.append(self.chars_prefix[-1] + chars)
        self.tokens_prefix.append(self.tokens_prefix[-1] + tokens)
        self.calls_prefix.append(self.calls_prefix[-1] + (len(m.calls) if calls is None else calls))
        self.ids_prefix.append(self.ids_prefix[-1] + (call_id_tokens(m, self.id_count) if self.id_count else 0))
        self.unit_start.append(self._unit_start_for(i, m))
        if m.role == "user" and m.command is None:
            self.last_user = i
        for p in m.parts:
            if p.kind == "change" and p.ref:
                self.change_at.setdefault(p.ref, i)
            elif p.kind == "revert" and p.ref in self.change_at:
                self.reverts.append((i, self.change_at[p.ref]))
        if m.role == "assistant" and not self.thinking:
            self.thinking = any(p.kind == "thinking" for p in m.parts)
        for rid in m.resolves:
            self.pending.pop(rid, None)
        if m.pending:
            self.pending[m.id] = i
        return i

    def prefix(self, rules: tuple[Rule, ...]) -> _Prefix:
        """The prefix sums of the messages as ``rules`` edit them, brought up to the log's length."""
        p = self.edited.get(rules)
        if p is None:
            p = self.edited[rules] = _Prefix()
        for m in self.messages[len(p.chars) - 1 :]:
            c, t = self.sizer(m, rules)
            p.chars.append(p.chars[-1] + c)
            p.tokens.append(p.tokens[-1] + t)
            p.sent.append(p.sent[-1] + (1 if c or t else 0))
            p.ids.append(p.ids[-1] + (call_id_tokens(m, self.id_count, rules) if self.id_count and (c or t) else 0))
        return p

    def sizes(self, a: int, b: int, rules: tuple[Rule, ...]) -> tuple[int, int, int, int]:
        """Characters, tokens, messages sent and call-id tokens sent of ``messages[a:b]`` under ``rules``."""
        if b <= a:
            return 0, 0, 0, 0
        if not rules:
            cp, tp, ip = self.chars_prefix, self.tokens_prefix, self.ids_prefix
            return cp[b] - cp[a], tp[b] - tp[a], b - a, ip[b] - ip[a]
        p = self.prefix(rules)
        return p.chars[b] - p.chars[a], p.tokens[b] - p.tokens[a], p.sent[b] - p.sent[a], p.ids[b] - p.ids[a]

    def copy(self) -> Ledger:
        """An independent copy (the messages themselves are immutable and shared)."""
        return replace(
            self,
            messages=list(self.messages),
            index=dict(self.index),
            chars_prefix=list(self.chars_prefix),
            tokens_prefix=list(self.tokens_prefix),
            calls_prefix=list(self.calls_prefix),
            ids_prefix=list(self.ids_prefix),
            unit_start=list(self.unit_start),
            reverts=list(self.reverts),
            change_at=dict(self.change_at),
            pending=dict(self.pending),
            openers=set(self.openers),
            edited={k: v.copy() for k, v in self.edited.items()},
        )

    def _unit_start_for(self, i: int, m: Message) -> int:
        """Atomic units: a cut may fall only before a unit start.

        An assistant message and the tool messages answering it are one unit (a parallel batch and all its
        results included). Thinking does not join the rounds of a tool loop into one unit: Anthropic requires
        the thinking that opens the *final* assistant turn of a request to be sent, unmodified, while that turn
        is in progress, and lets thinking of earlier turns go (the extended-thinking docs, "Preserving thinking
        blocks"). That rule is the mock provider's to enforce, on the request (:meth:`RunState.turn_opening`).
        """
        if m.role == "tool" and i:
            return self.unit_start[i - 1]
        return i


class RunState:
    """Read-only facade a policy receives. Indices are positions in the log's messages."""

    def __init__(self, ledger: Ledger, model: ModelConfig) -> None:
        self._l = ledger
        self.model = model
        self.view = View()
        self.turn = 0
        self.last_input_tokens: int | None = None
        # The last agent request's reply tokens, and the log's length when it was sent (the reply is the
        # message at that index): what a client that anchors its estimate on the last call knows.
        self.last_output_tokens: int | None = None
        self.messages_at_last_request = 0
        self.view_at_last_request: View | None = None
        self.chars_at_last_request = 0
        self.compactions = 0
        # Summarised compactions that failed since the last one that worked (the summariser call failed,
        # overflowed or came back empty): what a client's circuit breaker counts (Claude Code stops
        # auto-compacting after 3).
        self.failed_in_a_row = 0
        # The view at the start and after each compaction, oldest first: the checkpoints a policy may
        # roll back to (Plan.restore).
        self.checkpoints: list[View] = []
        # Sizes of views already measured (see _totals), by id, holding the view so an id is not reused.
        self._sized: dict[int, tuple[View, int, int, int, int, int]] = {}
        # What stays true of a view once the log has passed it (see remember), by id and name, holding the view.
        self._memo: ByView[Any] = ByView(16)
        # A function folded over the log (see running), by the function.
        self._runs: dict[Callable[[Any, Message], Any], list[Any]] = {}

    def copy(self, ledger: Ledger) -> RunState:
        """This state over ``ledger`` (a copy of this one's), for a run that forks off another."""
        other = copy.copy(self)
        other._l, other.checkpoints, other._sized = ledger, list(self.checkpoints), dict(self._sized)
        other._memo, other._runs = ByView(16), {k: list(v) for k, v in self._runs.items()}
        return other

    def running(self, step: Callable[[T, Message], T], initial: T) -> Sequence[T]:
        """``step`` folded over the log's messages from ``initial``: ``[initial, step(initial, m0), ...]``, one more
        than the log holds. Kept per function (a module-level one: it is the key, with ``initial`` fixed by the
        caller) and extended by the messages appended since, so O(new messages) a call: for what a policy reads of
        the whole log on every request (OpenHands' events before a message, whether it falls in a thinking loop)."""
        values = self._runs.setdefault(step, [initial])
        for m in self._l.messages[len(values) - 1 :]:
            values.append(step(values[-1], m))
        return values

    def remember(self, view: View, what: str, make: Callable[[], T]) -> T:
        """``make()`` for ``view``, made once while the view is among the last few asked about, once the log has
        passed the view's spans (``view.reach``); before that, made at every call. For what a request checks of
        the part of a view before its tail: the log is append-only, so that part's answer does not change after."""
        if len(self) <= view.reach:
            return make()
        return self._memo.get(view, what, make)  # type: ignore[no-any-return]

    # -- messages and structure -------------------------------------------------------------
    @property
    def messages(self) -> Sequence[Message]:
        """Every message in the log, oldest first. Read-only by contract: the log is append-only."""
        return self._l.messages

    def __len__(self) -> int:
        return len(self._l.messages)

    def can_cut(self, i: int) -> bool:
        """Whether a cut may fall right before message ``i`` (it starts an atomic unit)."""
        return i >= len(self._l.messages) or self._l.unit_start[i] == i

    def unit_start(self, i: int) -> int:
        return self._l.unit_start[i]

    @property
    def last_user_index(self) -> int:
        """Index of the newest real user message (commands excluded), -1 if none."""
        return self._l.last_user

    def shown_reverts(self, view: View) -> list[tuple[int, int]]:
        """The reverts (as :attr:`reverts`) whose revert message ``view`` shows, oldest first. A request asks
        this of its view, and the reverts pile up with the log: found by bisection in each of the view's ranges,
        its closed spans' once per view (:meth:`remember`), so O(log reverts + the tail's) a request."""
        rs = self._l.reverts
        if not rs:
            return []

        def within(a: int, b: int) -> list[tuple[int, int]]:
            return rs[bisect_left(rs, (a, -1)) : bisect_left(rs, (b, -1))]

        spans = self.remember(view, "span-reverts", lambda: [x for a, b in view.spans for x in within(a, b)])
        return [*spans, *within(view.start, len(self))]

    @property
    def reverts(self) -> Sequence[tuple[int, int]]:
        """(revert message index, index of the message holding the change it reverts)."""
        return self._l.reverts

    @property
    def changes(self) -> Mapping[str, int]:
        """Change id -> index of the message that first records it, in the order they appeared."""
        return self._l.change_at

    @property
    def protected_from(self) -> int | None:
        """Start of the turn that raised the oldest unresolved pending message; nothing from here on
        may be compacted (the cloudflare-os seed's ``findProtectedFromSequence``).

        With no user message before it, the real function falls back to the chat's first message
        (``messages[0]?.sequence``). Workshop's chat log holds no system prompt, so its first message
        is our first message after the system prompt: index 1 when message 0 is the system prompt.
        (Returning 0 would put the system prompt itself in the protected span, which every view
        moves past by construction.)"""
        if not self._l.pending:
            return None
        first = min(self._l.pending.values())
        for i in range(first, -1, -1):
            m = self._l.messages[i]
            if m.role == "user" and m.command is None:
                return i
        return 1 if self._l.messages[0].role == "system" and first > 0 else 0

    # -- sizes ---------------------------------------------------------------------------------
    def chars(self, a: int, b: int | None = None) -> int:
        """Serialized characters of messages[a:b] as stored (results not cleared)."""
        p = self._l.chars_prefix
        return p[len(p) - 1 if b is None else b] - p[a]

    def chars_as(self, a: int, b: int, rules: tuple[Rule, ...]) -> int:
        """Characters of messages[a:b] as ``rules`` leave them (a drop rule leaves out what it selects): O(1)
        per call from prefix sums kept per distinct rule set, so a policy can total one kind of part (say,
        the tool outputs of all but some tools) over any range without walking it."""
        return self._l.sizes(a, b, rules)[0]

    def view_chars(self, a: int, b: int, cleared_through: int) -> int:
        """Characters of messages[a:b] with tool results before ``cleared_through`` replaced by the view's
        placeholder (the classic clearing bound; :meth:`chars_in_view` measures any view)."""
        c = min(max(cleared_through, a), b)
        return self._l.sizes(a, c, _standard_rules(self.view.placeholder))[0] + self._l.sizes(c, b, ())[0]

    def chars_in_view(self, view: View | None = None) -> int:
        """Characters of everything ``view`` (default: the current one) shows: the system prompt, its
        spans and tail as edited, the summary and injected messages."""
        return self.totals(self.view if view is None else view)[0]

    def view_size(self, view: View | None = None) -> tuple[int, int]:
        """Exact prompt tokens of ``view`` (default: the current one) without tools or a status line, and the
        messages it sends: the measure of the ``compaction-shrinks`` invariant.

        Exact counts are the engine's; a real client that counts with a tokenizer has them, one that
        estimates (the seeds' chars/4) does not, and a policy modelling such a client should decide on
        :meth:`estimated_context_tokens` instead."""
        _, tokens, sent, _ = self.totals(self.view if view is None else view)
        return tokens, sent

    def tool_uses(self, view: View | None = None) -> int:
        """Tool calls in the messages ``view`` (default: the current one) shows, edited or not: the unit of
        triggers that count tool uses (Anthropic's ``clear_tool_uses`` trigger ``tool_uses``). O(spans)."""
        v = self.view if view is None else view
        n, cp = len(self), self._l.calls_prefix
        return sum(cp[min(b, n)] - cp[a] for a, b in (*v.spans, (v.start, n)) if a < min(b, n))

    def totals(self, v: View) -> tuple[int, int, int, int]:
        """(characters, tokens, messages sent, call-id tokens sent) of view ``v``.

        A view's edits reach no message past the log's length when it was made, and its tail is open, so
        once measured at ``n0`` messages it is measured at any later length by adding the prefix sums of
        what came since: O(1) per request, O(spans + edits + injected) once per view."""
        n = len(self)
        hit = self._sized.get(id(v))
        if hit is not None and hit[0] is v and hit[1] <= n:
            _, n0, c, t, k, d = hit
            lp, tp, ip = self._l.chars_prefix, self._l.tokens_prefix, self._l.ids_prefix
            return c + lp[n] - lp[n0], t + tp[n] - tp[n0], k + n - n0, d + ip[n] - ip[n0]
        chars = tokens = sent = ids = 0
        for item in layout(v, n, self.has_system):
            if isinstance(item, Messages):
                c, t, k, d = self._l.sizes(item.a, item.b, item.rules)
                chars, tokens, sent, ids = chars + c, tokens + t, sent + k, ids + d
            else:
                chars += len(item.text)
                tokens, sent = tokens + MESSAGE_OVERHEAD + self._l.count(item.text), sent + 1
        if v.start <= n and (not v.edits or max(e.before for e in v.edits) <= n):
            if len(self._sized) >= 8:
                self._sized.clear()
            self._sized[id(v)] = (v, n, chars, tokens, sent, ids)
        return chars, tokens, sent, ids

    @property
    def has_system(self) -> bool:
        """Whether message 0 is a system prompt (always sent first, never compacted)."""
        return bool(self._l.messages) and self._l.messages[0].role == "system"

    @property
    def chars_since_last_request(self) -> int:
        """Characters appended since the last agent request: what the seeds estimate with chars/4."""
        return self._l.chars_prefix[-1] - self.chars_at_last_request

    @property
    def view_changed_since_request(self) -> bool:
        """Whether the view changed (a compaction, a rollback) after the last agent request, so that request's
        reported usage no longer describes the prompt the next one sends."""
        return self.view_at_last_request is not None and self.view is not self.view_at_last_request

    def estimated_context_tokens(self) -> int:
        """The seeds' estimate: last provider-reported prompt plus chars/4 of what came since.

        Before the first request, and after the view changed since the last report, the whole view's
        characters / 4 stand in.
        """
        if self.last_input_tokens is None or self.view_changed_since_request:
            # No report yet, or the view changed since the report (a compaction or a rollback): the
            # seeds' fallback, chars/4 of everything in the view.
            return -(-self.chars_in_view() // 4)
        return self.last_input_tokens + -(-self.chars_since_last_request // 4)
