"""A preview of one compaction: what a policy keeps, clears and summarises when it next compacts, and what it loses.

Users asked to see, before they commit to a policy, what its compaction would do to *their* conversation: which
messages stay, which are summarised or dropped, which parts are cleared, the tokens before and after, and which
facts the agent still needs later that the compacted view no longer shows. :func:`preview` answers by replaying
the conversation under the policy exactly as a run does (the :class:`~sim.replay.engine.Engine`, message by
message) until the first compaction at or after agent request ``at`` (the first at all without ``at``), reading
that compaction off the run's log, and stopping there. Nothing is estimated: the view before is the view the run
had, the view after is the one its compaction record holds, and the lost facts are judged with the same
:meth:`~sim.replay.retention.Retention.visible_in` the run's retention uses, so the facts a preview says are lost
are exactly those the run then reports lost at their next needs (``tests/test_preview.py`` checks it). Each fact is
judged whole, before and after; the compactions table's ``facts_lost`` tests only the facts a compaction touched
and a re-attached file's facts by the ids it names, so it can name fewer (a file an earlier compaction re-attached,
which shows a fact by its text, and this one does not re-attach).

Requests are numbered as the results' ``requests`` and ``compactions`` tables number them (``turn``, from 0): a
compaction at request N happens before agent request N is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.base import Policy
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Fact, Message, Part
from sim.core.errors import InvalidConfig
from sim.core.invariants import edited_ranges, minus, ranges
from sim.core.log import CompactionCreated, MessageAppended, RequestSent
from sim.core.tokenizers import CountingTokenizer
from sim.core.view import Injected, Messages, Summary, View, edit_parts, layout, rule_for
from sim.replay import model as wire
from sim.replay.activity import act_kind
from sim.replay.engine import Engine

Span = tuple[int, int]
#: What an edit does to a part, in the preview's words.
EDIT_WORDS = {"placeholder": "cleared", "drop": "dropped", "truncate": "truncated"}


class NoCompaction(InvalidConfig):
    """The replay ended without the compaction asked for; the message says where the context peaked and what to try."""


@dataclass(frozen=True)
class EditedPart:
    """A part of a kept message that the compaction newly clears, drops or truncates."""

    index: int
    message_id: str
    kind: str
    tool: str | None
    action: str  # cleared, dropped or truncated


@dataclass(frozen=True)
class FactFate:
    """A fact established before the compaction and needed after it: whether the view showed it before and after.

    ``needed_at``: the id of its first later need (the message whose next request needs it)."""

    id: str
    kind: str
    source: str
    needed_at: str
    visible_before: bool
    visible_after: bool

    @property
    def lost(self) -> bool:
        return self.visible_before and not self.visible_after


@dataclass(frozen=True)
class Preview:
    """One compaction as a run makes it (see the module docstring).

    Attributes:
        policy, params: the policy's name and its full settings.
        conversation: the conversation's id.
        compaction_id, request, trigger, mode: the compaction's record: its id, the agent request it comes
            before (``turn``), why (``auto``, ``manual``, ``overflow``) and the policy's label for it.
        act: what it did, in ``csim check``'s words: summarised, dropped, cleared or rolled back.
        messages: messages in the log when it compacts (the view's ranges are within ``[0, messages)``).
        tokens_before, tokens_after: the view's tokens before and after (as the compactions table counts them).
        kept: log ranges ``[a, b)`` the view shows after (the system prompt, always sent, apart: ``system``).
        removed: ranges the view showed before and does not after: summarised when ``act`` is summarised, else
            dropped (or, for a rollback, what the restored view lacks).
        edited: parts of kept messages the compaction newly clears, drops or truncates.
        summary: the new summary's text (None when the compaction wrote none), and its tokens.
        injected: the messages the compaction adds that are not in the log (re-attached files, re-injected
            instructions), by label (else their first words).
        facts: every fact established before the compaction whose next need comes after it, with its fate.
        then: ids of further compactions the policy made before the same request (a policy that checks again).
        view_before, view: the views before and after.
        context: the messages the model is sent after the compaction, in order (summary and injected messages
            included, edits applied): the compacted list of turns.
        request_messages: ``context`` in the run's wire format (``provider``), as the mock provider receives it.
        requests_in_script: the agent requests the conversation's script holds.
        message_ids: the ids of the log's first ``messages`` messages, by index (for the ranges above).
    """

    policy: str
    params: Mapping[str, Any]
    conversation: str
    compaction_id: str
    request: int
    trigger: str
    mode: str
    act: str
    messages: int
    tokens_before: int
    tokens_after: int
    system: bool
    kept: tuple[Span, ...]
    removed: tuple[Span, ...]
    edited: tuple[EditedPart, ...]
    summary: str | None
    summary_tokens: int
    injected: tuple[str, ...]
    facts: tuple[FactFate, ...]
    then: tuple[str, ...]
    view_before: View
    view: View
    context: tuple[Message, ...]
    provider: str
    request_messages: tuple[dict[str, Any], ...]
    requests_in_script: int
    message_ids: tuple[str, ...]

    @property
    def lost(self) -> tuple[FactFate, ...]:
        """The facts needed later that the view showed before the compaction and does not after."""
        return tuple(f for f in self.facts if f.lost)

    def lost_by_kind(self) -> dict[str, tuple[str, ...]]:
        """Ids of the lost facts, by fact kind (sorted)."""
        out: dict[str, list[str]] = {}
        for f in self.lost:
            out.setdefault(f.kind, []).append(f.id)
        return {k: tuple(v) for k, v in sorted(out.items())}

    def facts_by_kind(self) -> dict[str, dict[str, int]]:
        """Per fact kind: facts needed later, how many the view showed before, after, and lost."""
        out: dict[str, dict[str, int]] = {}
        for f in self.facts:
            row = out.setdefault(f.kind, {"needed": 0, "before": 0, "after": 0, "lost": 0})
            row["needed"] += 1
            row["before"] += f.visible_before
            row["after"] += f.visible_after
            row["lost"] += f.lost
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (``csim preview --json``): everything but the views and the wire messages."""
        ids = self.message_ids

        def spans(xs: tuple[Span, ...]) -> list[dict[str, Any]]:
            return [{"from": a, "to": b - 1, "first_id": ids[a], "last_id": ids[b - 1]} for a, b in xs]

        return {
            "policy": self.policy,
            "params": {k: v for k, v in self.params.items()},
            "conversation": self.conversation,
            "compaction_id": self.compaction_id,
            "request": self.request,
            "requests_in_script": self.requests_in_script,
            "trigger": self.trigger,
            "mode": self.mode,
            "act": self.act,
            "messages": self.messages,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "system_kept": self.system,
            "kept": spans(self.kept),
            "removed": spans(self.removed),
            "edited": [
                {"index": e.index, "message_id": e.message_id, "kind": e.kind, "tool": e.tool, "action": e.action}
                for e in self.edited
            ],
            "summary": self.summary,
            "summary_tokens": self.summary_tokens,
            "injected": list(self.injected),
            "facts_by_kind": self.facts_by_kind(),
            "lost": [{"id": f.id, "kind": f.kind, "source": f.source, "needed_at": f.needed_at} for f in self.lost],
            "then": list(self.then),
            "context_messages": len(self.context),
        }


def preview(
    policy: Policy[Any],
    conversation: Conversation,
    config: RunConfig | None = None,
    *,
    at: int | None = None,
    manual: bool = False,
    tokenizer: CountingTokenizer | None = None,
) -> Preview:
    """The first compaction at or after agent request ``at`` (the first at all when None) of ``conversation``
    replayed under ``policy`` with ``config``: raises :class:`NoCompaction` when the replay ends without one, and
    :class:`~sim.core.errors.InvalidConfig` when ``at`` is not a request of the script.

    ``manual``: the compaction the policy makes when asked, as if the user typed ``/compact`` at the first turn
    boundary at or after request ``at`` (:func:`with_compact_command`; the run is otherwise the same)."""
    config = config or RunConfig()
    replies = sum(m.role == "assistant" for m in conversation.messages)
    if at is not None and at < 0:
        raise InvalidConfig(f"request {at} is not a request: requests are numbered from 0 (the requests table's turn)")
    if at is not None and at >= replies and not config.agent.reactive:  # a reactive agent adds requests
        have = f"{replies} agent requests (numbered 0 to {replies - 1}" if replies else "no agent request ("
        raise InvalidConfig(
            f"request {at} is past the end: {conversation.id!r} has {have}, as the requests table's turn counts "
            "them); give --at within them"
        )
    if manual:
        if at is None:
            raise InvalidConfig("a manual compaction needs the request it comes before: give --at REQUEST (at=)")
        conversation, at = with_compact_command(conversation, at)
    engine = Engine(policy, conversation, config, tokenizer)
    first = at or 0
    scanned = appended = judged_upto = 0
    view = engine.state.checkpoints[0]
    peak, peak_at, passed_at = 0, -1, None
    found: tuple[CompactionCreated, View, int, int] | None = None
    then: list[str] = []
    going = True
    while going and found is None:
        going = engine.step()
        events = engine.log
        for i in range(scanned, len(events)):
            ev = events[i]
            if isinstance(ev, MessageAppended):
                appended = ev.index + 1
            elif isinstance(ev, RequestSent) and ev.request_kind != "summariser":
                if ev.context_tokens > peak:  # a prompt the provider refused as too long counts too
                    peak, peak_at = ev.context_tokens, ev.turn
                if ev.error:
                    continue
                if found is not None:
                    break  # the request after the compaction: what follows belongs to the next ones
                judged_upto = appended  # the needs of messages before this one were judged at this request
            elif isinstance(ev, CompactionCreated):
                if found is not None:
                    then.append(ev.id)
                elif ev.turn >= first and (not manual or ev.trigger == "manual"):
                    found = (ev, view, appended, judged_upto)
                view = ev.view
        scanned = len(events)
        if passed_at is None and policy.over_trigger(engine.state):
            passed_at = engine.state.turn
        if manual and engine.state.turn > first:
            break  # past the command: the policy declined it
    if found is None and manual:
        name = policy.name or type(policy).__name__
        raise NoCompaction(
            f"{name} makes no compaction when asked (/compact) before request {at} of {conversation.id!r}: it "
            "declines a manual compaction there (nothing it would cut, or it has no manual compaction); try "
            "another --at, or leave out --manual to see its next automatic one"
        )
    if found is None:
        raise NoCompaction(_no_compaction(policy, conversation, config, engine, at, peak, peak_at, passed_at))
    return _read(engine, policy, conversation, *found, tuple(then), replies)


def _read(
    engine: Engine,
    policy: Policy[Any],
    conversation: Conversation,
    ev: CompactionCreated,
    before: View,
    n: int,
    judged_upto: int,
    then: tuple[str, ...],
    replies: int,
) -> Preview:
    """The preview of compaction ``ev`` from the view ``before`` it, with ``n`` messages in the log then, the needs
    of messages before ``judged_upto`` already judged."""
    after = ev.view
    msgs = engine.ledger.messages
    has_system = engine.has_system
    lo = 1 if has_system else 0
    kept = tuple((max(a, lo), b) for a, b in ranges(after, n) if b > max(a, lo))
    removed = tuple((max(a, lo), b) for a, b in minus(ranges(before, n), ranges(after, n)) if b > max(a, lo))
    edited: list[EditedPart] = []
    trunc = engine.tok.truncate
    for a, b in edited_ranges(before, after, n):
        for i in range(max(a, lo), b):
            if not after.shows(i):
                continue
            m = msgs[i]
            old = edit_parts(m, before.rules_at(i), trunc)
            new = edit_parts(m, after.rules_at(i), trunc)
            for raw, x, y in zip(m.parts, old, new, strict=True):
                if x is y or y is raw:
                    continue
                rule = rule_for(raw, after.rules_at(i))
                action = EDIT_WORDS[rule.action] if rule is not None else "edited"
                edited.append(EditedPart(i, m.id, raw.kind, raw.name, action))
    summary = after.summary if after.summary is not None and after.summary != before.summary else None
    context = _context(engine, after, n, ev.id)
    render = wire.render_message_anthropic if engine.model.provider == "anthropic" else None
    wire_messages: list[dict[str, Any]] = []
    for m in context:
        wire_messages.extend([render(m)] if render is not None else wire.render_message_openai(m))
    return Preview(
        policy=policy.name or type(policy).__name__,
        params=policy.params(),
        conversation=conversation.id,
        compaction_id=ev.id,
        request=ev.turn,
        trigger=ev.trigger,
        mode=ev.mode,
        act=act_kind(before, ev),
        messages=n,
        tokens_before=ev.tokens_before,
        tokens_after=ev.tokens_after,
        system=has_system and n > 0,
        kept=kept,
        removed=removed,
        edited=tuple(edited),
        summary=summary.text if summary is not None else None,
        summary_tokens=engine.tok.count(summary.text) if summary is not None else 0,
        injected=tuple(x.label or " ".join(x.text.split()[:6]) for x in after.injected if x not in before.injected),
        facts=_fates(engine, conversation, before, after, n, judged_upto),
        then=then,
        view_before=before,
        view=after,
        context=context,
        provider=engine.model.provider,
        request_messages=tuple(wire_messages),
        requests_in_script=replies,
        message_ids=tuple(m.id for m in msgs[:n]),
    )


def _context(engine: Engine, view: View, n: int, cid: str) -> tuple[Message, ...]:
    """The messages ``view`` sends with ``n`` messages in the log, in :func:`~sim.core.view.layout`'s order."""
    out: list[Message] = []
    injected = 0
    for item in layout(view, n, engine.has_system):
        if isinstance(item, Messages):
            for i in range(item.a, item.b):
                m = engine.requests.message(i, item.rules)
                if m is not None:
                    out.append(m)
        elif isinstance(item, Summary):
            out.append(Message(f"summary-{item.compaction_id or cid}", item.role, (Part("text", item.text),)))
        elif isinstance(item, Injected):
            injected += 1
            label = item.label or str(injected)
            out.append(Message(f"injected-{label}", item.role, (Part("text", item.text),)))
    return tuple(out)


def _fates(
    engine: Engine, conversation: Conversation, before: View, after: View, n: int, judged_upto: int
) -> tuple[FactFate, ...]:
    """Each fact whose source is among the first ``n`` messages and that a later request needs: a need at a message
    not judged yet (appended at or after ``judged_upto``, or not appended) with a reply at or after it."""
    script = engine.script
    position = {m.id: k for k, m in enumerate(script)}
    last_reply = max((k for k, m in enumerate(script) if m.role == "assistant"), default=-1)
    index = engine.ledger.index
    out: list[FactFate] = []
    for f in conversation.facts:
        src = index.get(f.source)
        if src is None or src >= n:
            continue
        need = _next_need(f, index, position, judged_upto, last_reply)
        if need is None:
            continue
        out.append(
            FactFate(f.id, f.kind, f.source, need, engine.fact_visible(f, before), engine.fact_visible(f, after))
        )
    return tuple(out)


def _next_need(
    f: Fact, index: Mapping[str, int], position: Mapping[str, int], judged_upto: int, last_reply: int
) -> str | None:
    """The first of ``f``'s needs that a request after the compaction judges, or None."""
    later = [
        x
        for x in f.needed_at
        if (index.get(x, judged_upto) >= judged_upto) and position.get(x, last_reply + 1) <= last_reply
    ]
    return min(later, key=lambda x: position[x]) if later else None


def with_compact_command(conversation: Conversation, at: int) -> tuple[Conversation, int]:
    """``conversation`` with a ``/compact`` user command where a user could type it: between turns, right before the
    first user message whose reply comes at or after agent request ``at`` (the engine asks the policy for its manual
    compaction there). Also the request the command comes before; raises when no turn starts that late."""
    msgs = conversation.messages
    replies = 0
    for k, m in enumerate(msgs):
        if m.role == "assistant":
            replies += 1
        elif m.role == "user" and m.command is None and replies >= at and any(x.role == "assistant" for x in msgs[k:]):
            ids = {x.id for x in msgs}
            mid = f"preview-compact-{replies}"
            while mid in ids:
                mid += "'"
            command = Message(mid, "user", (Part("command", "", name="compact"),))
            out = (*msgs[:k], command, *msgs[k:])
            return Conversation(
                conversation.id, out, conversation.facts, conversation.tools, conversation.meta
            ), replies
    raise InvalidConfig(
        f"no user turn of {conversation.id!r} starts at or after request {at}, so no /compact can come there: "
        "give an earlier --at"
    )


def trigger_settings(policy: Policy[Any]) -> dict[str, Any]:
    """The policy's parameters that say when it compacts (named ``*trigger*``, ``*threshold*``, ``*limit*``)."""
    words = ("trigger", "threshold", "limit")
    return {k: v for k, v in policy.params().items() if any(w in k for w in words) and v is not None}


def _no_compaction(
    policy: Policy[Any],
    conversation: Conversation,
    config: RunConfig,
    engine: Engine,
    at: int | None,
    peak: int,
    peak_at: int,
    passed_at: int | None,
) -> str:
    """Why there is nothing to preview, where the context peaked against the trigger, and what to try."""
    name = policy.name or type(policy).__name__
    sent = engine.state.turn
    where = f"at or after request {at}" if at is not None else "at any request"
    earlier = [e for e in engine.log if isinstance(e, CompactionCreated)]
    requests = f"{sent} agent request" + ("" if sent == 1 else "s")
    out = [f"{name} makes no compaction {where} of {conversation.id!r} ({requests} replayed"]
    ended = engine.finish().summary["finish_reason"]
    out[0] += ")" if ended == "completed" else f", then the run ended: {ended})"
    window = config.model.context_window
    if peak_at >= 0:
        out.append(
            f"the context peaked at {peak:,} tokens at request {peak_at}, {peak / window:.0%} of the "
            f"{window:,}-token window"
        )
    if type(policy).decide is Policy.decide:
        out.append(f"{name} never compacts by design: preview another policy (csim list policies)")
        return "; ".join(out)
    settings = trigger_settings(policy)
    if settings:
        out.append("its trigger: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    if passed_at is not None:
        out.append(f"the policy says its trigger was passed at request {passed_at}, yet it did not compact")
    if earlier:
        last = earlier[-1]
        out.append(f"its last compaction was {last.id} at request {last.turn} (--at {last.turn} shows it)")
    if ended == "context-overflow" and sent == 0:
        out.append(f"the first request does not fit the window: give a larger --window (more than {peak})")
        return "; ".join(out)
    numeric = [k for k, v in settings.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    hint = f"lower its trigger with -P {numeric[0]}=..." if numeric else "change its parameters with -P"
    if at is not None and earlier:
        hint = f"give an earlier --at, or {hint}"
    smaller = peak * 3 // 4
    if ended == "context-overflow":
        hint += f", or a larger --window (the prompt reached {peak}; it overflowed before the policy compacted)"
    elif smaller >= 1_000:
        reserve = "" if smaller > config.model.output_reserve else f" --output-reserve {smaller // 8}"
        hint += f", or a smaller window (e.g. --window {smaller}{reserve})"
    out.append(f"to see one, {hint}")
    return "; ".join(out)


__all__ = ["EditedPart", "FactFate", "NoCompaction", "Preview", "preview", "trigger_settings", "with_compact_command"]
