"""Importer of OpenHands event streams (a JSON list of ``action`` and ``observation`` events).

OpenHands (V0, ``openhands/events``) records a session as events: each has ``id``, ``timestamp``,
``source`` (``user``, ``agent``, ``environment``), ``message``, and either ``action`` with ``args`` or
``observation`` with ``content``, ``extras`` and ``cause`` (the id of the action it answers). An event
that came from a function call carries ``tool_call_metadata``: ``function_name``, ``tool_call_id``,
``model_response`` (the whole LiteLLM response, usage included) and ``total_calls_in_response``.
Facts from ``All-Hands-AI/OpenHands`` (``tests/runtime/trajs/*.json``, and ``ConversationMemory``,
which turns events back into the model's messages the same way).

The mapping follows ``ConversationMemory``:

- a ``system`` action opens the conversation (its ``args.tools`` become the tool schemas);
- a user ``message`` action is a ``user`` message; an agent ``message`` (or ``finish``, ``think``...)
  without ``tool_call_metadata`` is assistant text;
- agent actions with ``tool_call_metadata`` become one assistant message per model response
  (grouped by ``model_response.id``, since one response can yield several actions): its text and
  every tool call of the response, with the response's recorded usage;
- an observation answers its call (by ``tool_call_metadata.tool_call_id``, else by ``cause``) as a
  ``tool`` message whose text is the observation's ``content``; an observation of an action made
  without a call is a ``user`` message;
- bookkeeping (``environment`` events, ``agent_state_changed``, ``change_agent_state``, ``null``
  observations, recall and condensation bookkeeping) is skipped and counted in meta.

A call whose observation never came (OpenHands' ``finish`` call, an interrupted action) is repaired
with an aborted result when a later message follows, and each repair is listed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sim.core.conversation import Conversation, Part, Tool, Usage
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import BadRecord, Draft, Issues, check, dumps_args, get, pair_calls
from sim.formats._json_records import read_json_with_lines
from sim.formats.usage import any_usage

_EXPECTED = "an OpenHands event stream: a JSON list of events with 'id', 'source' and 'action' or 'observation'"
_SKIP_ACTIONS = frozenset({"change_agent_state", "recall", "condensation", "condensation_request", "null"})
_SKIP_OBSERVATIONS = frozenset({"agent_state_changed", "null", "recall", "condense", "user_rejected"})
_TEXT_ARGS = ("content", "final_thought", "thought", "message")


@dataclass
class _Stream:
    """The conversation being rebuilt and what grouping and pairing need to remember."""

    drafts: list[Draft] = field(default_factory=list)
    tools: tuple[Tool, ...] = ()
    by_response: dict[str, Draft] = field(default_factory=dict)
    call_of_event: dict[str, str] = field(default_factory=dict)
    call_names: dict[str, str] = field(default_factory=dict)
    ids: set[str] = field(default_factory=set)
    skipped: Counter[str] = field(default_factory=Counter)
    models: set[str] = field(default_factory=set)

    def push(self, draft: Draft) -> None:
        if draft.id in self.ids:
            raise BadRecord(f"event id {draft.id[1:]!r} appears twice")
        self.ids.add(draft.id)
        self.drafts.append(draft)


@FORMATS.register("openhands-events", "OpenHands event stream JSON (actions/observations, tool_call_metadata)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read one OpenHands event stream as one conversation."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    doc, lines = read_json_with_lines(path, issues, _EXPECTED)
    events, key = doc, ""
    if isinstance(doc, dict) and isinstance(doc.get("events"), list):
        events, key = doc["events"], "events"
    if not isinstance(events, list):
        raise issues.fatal(1, f"the document is {type(doc).__name__}, not a list of events", _EXPECTED)
    if not events:
        raise issues.fatal(1, "the event list is empty: no message to import", _EXPECTED)
    conv = events_conversation(events, path.stem, issues, lambda k: lines.of(key, k))
    if conv is not None:
        result.conversations.append(conv)
    return result


def events_conversation(
    events: list[Any],
    cid: str,
    issues: Issues,
    line_of: Callable[[int], int | None],
    *,
    label: str = "",
    line: int | None = None,
    usage_by_response: Mapping[str, Usage] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Conversation | None:
    """One conversation from a list of OpenHands events, or None when what is left breaks a rule (reported).

    Shared by this importer and :mod:`sim.formats.openhands_eval` (whose instances hold the same events in
    ``history``). ``line_of(k)`` is the line event ``k`` is on; ``label`` prefixes every event's name in
    messages ("instance 'x' "); ``line`` is where a problem of the whole conversation is reported;
    ``usage_by_response`` replaces the usage of the reply whose model response has that id (the evaluation
    output's ``metrics.token_usages``); ``meta`` is added to the conversation's.
    """
    stream = _Stream()
    for k, raw in enumerate(events):
        before = len(stream.drafts)
        with issues.record(line_of(k), f"{label}event [{k}]"):
            _event(stream, raw, label, k)
        for draft in stream.drafts[before:]:
            draft.line = line_of(k)
    matched: set[str] = set()
    for draft in stream.drafts:
        rid = draft.meta.get("response_id")
        if usage_by_response is not None and isinstance(rid, str) and rid in usage_by_response:
            draft.usage = usage_by_response[rid]
            matched.add(rid)
    conv_meta: dict[str, Any] = {
        "source": "openhands-events",
        "events": len(events),
        "skipped_events": dict(sorted(stream.skipped.items())),
        "models": sorted(stream.models),
    }
    if usage_by_response is not None:
        conv_meta["replies_with_token_usages"] = len(matched)
        conv_meta["token_usages_without_reply"] = len(usage_by_response) - len(matched)
    conv_meta.update(meta or {})
    drafts = pair_calls(stream.drafts, issues, "repair")
    try:
        return Conversation(cid, tuple(d.build() for d in drafts), (), stream.tools, conv_meta)
    except InvalidConfig as exc:
        issues.problem(line, f"{label}{exc}".strip())
        return None


def _event(stream: _Stream, raw: Any, label: str, k: int) -> None:
    """Take one event; everything is parsed before the stream changes, so a bad event leaves no trace."""
    what = f"{label}event [{k}]"
    check(raw, dict, what)
    eid = get(raw, "id", (int, str), what)
    what = f"{label}event {eid!r}"
    source = get(raw, "source", str, what, "")
    if "action" in raw:
        _action(stream, raw, str(eid), source, get(raw, "action", str, what), what)
    elif "observation" in raw:
        _observation(stream, raw, str(eid), source, get(raw, "observation", str, what), what)
    else:
        raise BadRecord(f"{what} has neither 'action' nor 'observation'")


def _action(stream: _Stream, raw: dict[str, Any], eid: str, source: str, kind: str, what: str) -> None:
    args = get(raw, "args", dict, what, {})
    if kind == "system":
        if stream.drafts:
            raise BadRecord(f"{what}: a system action must come before every message")
        tools = tuple(_tool(t, f"{what} args.tools[{k}]") for k, t in enumerate(get(args, "tools", list, what, [])))
        stream.push(Draft(f"e{eid}", "system", [Part("text", get(args, "content", str, what, ""))], label=what))
        stream.tools = tools
        return
    if source == "environment" or kind in _SKIP_ACTIONS:
        stream.skipped[f"action:{kind}"] += 1
        return
    tcm = get(raw, "tool_call_metadata", dict, what, None)
    if source == "user":
        stream.push(Draft(f"e{eid}", "user", [Part("text", _action_text(raw, args, what))], label=what))
        return
    if tcm is None:
        draft = Draft(f"e{eid}", "assistant", [Part("text", _action_text(raw, args, what))], label=what)
        draft.meta["action"] = kind
        stream.push(draft)
        return
    _called_action(stream, raw, eid, kind, args, tcm, what)


def _action_text(raw: dict[str, Any], args: dict[str, Any], what: str) -> str:
    for key in _TEXT_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return cast(str, get(raw, "message", str, what, ""))


def _called_action(
    stream: _Stream, raw: dict[str, Any], eid: str, kind: str, args: dict[str, Any], tcm: dict[str, Any], what: str
) -> None:
    """An action taken through a function call: part of the assistant message of its model response."""
    twhat = f"{what} tool_call_metadata"
    cid = get(tcm, "tool_call_id", str, twhat)
    fname = get(tcm, "function_name", str, twhat)
    response = get(tcm, "model_response", dict, twhat, None)
    rid = response.get("id") if response is not None else None
    if isinstance(rid, str) and rid in stream.by_response:
        owner = stream.by_response[rid]
        if not any(p.call_id == cid for p in owner.parts):
            raise BadRecord(f"{what}: call {cid!r} of response {rid!r} is not among that response's calls")
        owner.meta["actions"].append(kind)
        stream.call_of_event[eid] = cid
        return
    if response is not None:
        draft = _response_draft(response, f"e{eid}", f"{twhat} model_response", stream)
    else:  # older events: rebuild the call from the action itself
        thought = args.get("thought") if isinstance(args.get("thought"), str) else ""
        call_args = {k: v for k, v in sorted(args.items()) if k != "thought"}
        parts = [Part("text", thought)] if thought else []
        parts.append(Part("tool_call", call_id=cid, name=fname, args=dumps_args(call_args)))
        draft = Draft(f"e{eid}", "assistant", parts, label=what)
    if not any(p.call_id == cid for p in draft.parts):
        raise BadRecord(f"{what}: tool_call_id {cid!r} is not among the calls of its model_response")
    draft.meta["actions"] = [kind]
    stream.push(draft)
    for p in draft.parts:
        if p.kind == "tool_call":
            stream.call_names[p.call_id or ""] = p.name or ""
    if isinstance(rid, str):
        stream.by_response[rid] = draft
    stream.call_of_event[eid] = cid


def _response_draft(response: dict[str, Any], mid: str, what: str, stream: _Stream) -> Draft:
    choices = get(response, "choices", list, what)
    if not choices:
        raise BadRecord(f"{what} has no choices")
    choice = check(choices[0], dict, f"{what} choices[0]")
    message = get(choice, "message", dict, f"{what} choices[0]")
    parts: list[Part] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(Part("thinking", reasoning))
    content = message.get("content")
    if isinstance(content, str) and content:
        parts.append(Part("text", content))
    elif isinstance(content, list):
        for k, block in enumerate(content):
            bwhat = f"{what} content[{k}]"
            check(block, dict, bwhat)
            is_text = block.get("type") == "text"
            parts.append(Part("text", get(block, "text", str, bwhat, "") if is_text else dumps_args(block)))
    for k, call in enumerate(get(message, "tool_calls", list, what, [])):
        cwhat = f"{what} tool_calls[{k}]"
        check(call, dict, cwhat)
        fn = get(call, "function", dict, cwhat)
        args = get(fn, "arguments", (str, dict), f"{cwhat} function", "")
        parts.append(
            Part(
                "tool_call",
                call_id=get(call, "id", str, cwhat),
                name=get(fn, "name", str, f"{cwhat} function"),
                args=args if isinstance(args, str) else dumps_args(args),
            )
        )
    usage = any_usage(response.get("usage"), what)
    meta: dict[str, Any] = {}
    model = response.get("model")
    if isinstance(model, str):
        meta["model"] = model
        stream.models.add(model)
    if isinstance(response.get("id"), str):
        meta["response_id"] = response["id"]
    return Draft(mid, "assistant", parts, label=what, usage=usage, meta=meta)


def _observation(stream: _Stream, raw: dict[str, Any], eid: str, source: str, kind: str, what: str) -> None:
    if source == "environment" or kind in _SKIP_OBSERVATIONS:
        stream.skipped[f"observation:{kind}"] += 1
        return
    tcm = get(raw, "tool_call_metadata", dict, what, None)
    cause = raw.get("cause")
    cid = None
    if tcm is not None:
        cid = get(tcm, "tool_call_id", str, f"{what} tool_call_metadata")
    elif isinstance(cause, (int, str)) and not isinstance(cause, bool):
        cid = stream.call_of_event.get(str(cause))
    text = get(raw, "content", str, what, "") or get(raw, "message", str, what, "")
    if cid is None:
        draft = Draft(f"e{eid}", "user", [Part("text", text)], label=what, meta={"observation": kind})
    else:
        part = Part("tool_result", text, call_id=cid, name=stream.call_names.get(cid), is_error=kind == "error")
        draft = Draft(f"e{eid}", "tool", [part], label=what, meta={"observation": kind})
    stream.push(draft)


def _tool(raw: Any, what: str) -> Tool:
    check(raw, dict, what)
    fn = get(raw, "function", dict, what)
    return Tool(
        get(fn, "name", str, f"{what} function"),
        get(fn, "description", str, f"{what} function", ""),
        dumps_args(get(fn, "parameters", dict, f"{what} function", {})),
    )


@sniffer("openhands-events")
def sniff(path: Path, head: bytes) -> bool:
    """A JSON list whose first event has ``source`` and an ``action`` or ``observation``."""
    text = head.lstrip()
    if text[:1] != b"[":
        return False
    compact = text.replace(b" ", b"").replace(b"\n", b"")
    if compact.startswith(b'[{"role"'):
        return False
    first = compact.split(b"},{", 1)[0]
    has_source = any(f'"source":"{s}"'.encode() in compact for s in ("user", "agent", "environment"))
    return has_source and (b'"action":"' in first or b'"observation":"' in first or b'"action":"' in compact[:4000])
