"""Importer of OpenAI chat-completions conversations, including tau-bench trajectories.

OpenAI's message list is the most common way recordings are shared, so this importer accepts the
shapes they come in: one conversation (a list of messages, or an object with ``messages`` and
optional ``tools``/``functions``), a JSON list of such objects, tau-bench task results (objects with
``traj``), or JSONL with one conversation per line.

The mapping keeps what changes prompt size and pairing: ``developer`` becomes ``system`` when it
opens the conversation (a later system or developer message becomes a ``user`` message, since only
the first message may be system); assistant ``tool_calls`` and the legacy ``function_call`` become
``tool_call`` parts (legacy calls get the stable id ``fc-<message index>``); ``tool`` and ``function``
messages become ``tool`` messages, one per result. Tool schemas become :class:`~sim.core.conversation.Tool`
with their parameters as sorted-key JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sim.core.conversation import Conversation, Part, Tool
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import (
    MEDIA_PLACEHOLDERS,
    BadRecord,
    Draft,
    Issues,
    check,
    clip,
    decode_document,
    dumps_args,
    get,
    pair_calls,
    read_bytes,
    read_jsonl,
)
from sim.formats._json_records import element_lines
from sim.formats._surrogates import mend_surrogates

_EXPECTED = (
    "OpenAI chat messages: a JSON message list, an object with 'messages', a list of those, "
    "tau-bench tasks with 'traj', or JSONL with one conversation per line"
)
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
_IMAGE_BLOCKS = frozenset({"image_url", "input_image", "image"})
#: Other media blocks of the chat format (a file's or a recording's bytes, base64 inline): placeholders too, as
#: the provider counts them by its own rules, never as the text of their encoding.
_MEDIA_BLOCKS = {"file": MEDIA_PLACEHOLDERS["file"], "input_audio": MEDIA_PLACEHOLDERS["audio"]}


@dataclass
class _Source:
    """One conversation-shaped value in the file, with where it starts (for error messages)."""

    value: Any
    line: int | None
    label: str
    default_id: str
    message_lines: list[int] = field(default_factory=list)


@dataclass
class _State:
    """What converting one conversation's messages needs to remember from message to message."""

    drafts: list[Draft] = field(default_factory=list)
    call_names: dict[str, str] = field(default_factory=dict)
    legacy_open: list[tuple[str, str]] = field(default_factory=list)


@FORMATS.register("openai-chat", "OpenAI chat messages (JSON or JSONL; tool_calls, legacy functions; tau-bench)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read every conversation in an OpenAI-chat JSON or JSONL file."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    for src in _sources(path, issues):
        conv = _conversation(src, issues)
        if conv is not None:
            result.conversations.append(conv)
    return result


# --- finding the conversations -----------------------------------------------------------------


def _sources(path: Path, issues: Issues) -> list[_Source]:
    """The conversations of the file, from its JSON document or, failing that, its JSONL lines."""
    data = read_bytes(path, _EXPECTED)
    if path.suffix == ".jsonl":
        return _jsonl_sources(path, issues)
    try:
        doc = json.loads(data.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # a first value, then more: JSONL
            return _jsonl_sources(path, issues)
        raise issues.fatal(exc.lineno, f"invalid JSON: {exc.msg} at column {exc.colno}", _EXPECTED) from exc
    except RecursionError as exc:
        raise issues.fatal(None, "JSON nested too deeply to read", _EXPECTED) from exc
    except ValueError as exc:  # an integer past the interpreter's digit limit
        raise issues.fatal(None, f"invalid JSON: {clip(str(exc), 80)}", _EXPECTED) from exc
    text = decode_document(data, issues)  # strict: invalid UTF-8 stops here, naming its line
    return _doc_sources(mend_surrogates(doc, issues, None, text), text, path, issues)


def _jsonl_sources(path: Path, issues: Issues) -> list[_Source]:
    return [
        _Source(value, line, f"line {line}", f"{path.stem}-{line}")
        for line, value in read_jsonl(path, issues, _EXPECTED)
    ]


def _doc_sources(doc: Any, text: str, path: Path, issues: Issues) -> list[_Source]:
    """Split a whole JSON document into conversations: one, or one per element of a list."""
    if isinstance(doc, dict):
        return [_Source(doc, 1, "the conversation", path.stem)]
    if not isinstance(doc, list):
        raise issues.fatal(1, f"the document is {type(doc).__name__}, not a list or an object", _EXPECTED)
    if not doc:
        raise issues.fatal(1, "the document is an empty list: no conversation to import", _EXPECTED)
    lines = element_lines(text)
    if isinstance(doc[0], dict) and "role" in doc[0]:
        return [_Source(doc, 1, "the message list", path.stem, lines)]
    return [
        _Source(value, lines[k] if k < len(lines) else None, f"conversation {k}", f"{path.stem}-{k}")
        for k, value in enumerate(doc)
    ]


def _conversation(src: _Source, issues: Issues) -> Conversation | None:
    """Convert one conversation; a malformed message is an error (strict) or skipped (lenient)."""
    with issues.record(src.line, src.label):
        messages, tools, cid, meta = _unwrap(src)
        state = _State()
        for i, raw in enumerate(messages):
            line = src.message_lines[i] if i < len(src.message_lines) else src.line
            with issues.record(line, f"{src.label}, message {i}"):
                draft = _message(raw, i, state, f"{src.label}, message {i}")
                draft.line = line
                state.drafts.append(draft)
        drafts = pair_calls(state.drafts, issues, "report")
        try:
            return Conversation(cid, tuple(d.build() for d in drafts), (), tools, meta)
        except InvalidConfig as exc:
            issues.problem(src.line, f"{src.label}: {exc}")
    return None


def _unwrap(src: _Source) -> tuple[list[Any], tuple[Tool, ...], str, dict[str, Any]]:
    """Messages, tools, id and meta of one conversation value, whichever shape it has."""
    value = src.value
    meta: dict[str, Any] = {"source": "openai-chat"}
    if isinstance(value, list):
        return value, (), src.default_id, meta
    check(value, dict, src.label)
    if "traj" in value:  # tau-bench: {task_id, trial, reward, info, traj}
        task, trial = value.get("task_id"), value.get("trial")
        meta.update({"task_id": task, "trial": trial, "reward": value.get("reward"), "source": "tau-bench"})
        cid = f"task-{task}-trial-{trial}" if task is not None else src.default_id
        return get(value, "traj", list, src.label), (), cid, meta
    messages = get(value, "messages", list, src.label)
    cid = value["id"] if isinstance(value.get("id"), str) and value["id"] else src.default_id
    return messages, _tools(value, src.label), cid, meta


def _tools(value: dict[str, Any], label: str) -> tuple[Tool, ...]:
    """Tool schemas from ``tools`` (current) or ``functions`` (legacy)."""
    tools: list[Tool] = []
    for k, raw in enumerate(get(value, "tools", list, label, [])):
        check(raw, dict, f"{label} tool {k}")
        fn = get(raw, "function", dict, f"{label} tool {k}")
        tools.append(_tool(fn, f"{label} tool {k}"))
    for k, raw in enumerate(get(value, "functions", list, label, [])):
        tools.append(_tool(check(raw, dict, f"{label} function {k}"), f"{label} function {k}"))
    return tuple(tools)


def _tool(fn: dict[str, Any], what: str) -> Tool:
    params = get(fn, "parameters", dict, what, {})
    return Tool(get(fn, "name", str, what), get(fn, "description", str, what, ""), dumps_args(params))


def _message(raw: Any, i: int, state: _State, what: str) -> Draft:
    """One OpenAI message as a draft of ours."""
    check(raw, dict, what)
    role = get(raw, "role", str, what)
    mid = f"m{i}"
    if role in ("system", "developer"):
        if not state.drafts:
            return Draft(mid, "system", _text_parts(raw.get("content"), what), label=what)
        return Draft(mid, "user", _text_parts(raw.get("content"), what), label=what, meta={"source_role": role})
    if role == "user":
        return Draft(mid, "user", _text_parts(raw.get("content"), what), label=what)
    if role == "assistant":
        return _assistant(raw, i, state, what)
    if role == "tool":
        cid = get(raw, "tool_call_id", str, what)
        name = raw.get("name") if isinstance(raw.get("name"), str) else state.call_names.get(cid)
        return Draft(mid, "tool", [_result(raw, cid, name, what)], label=what)
    if role == "function":
        return _function_result(raw, i, state, what)
    raise BadRecord(f"{what} role {role!r} is not one of system, developer, user, assistant, tool, function")


def _assistant(raw: dict[str, Any], i: int, state: _State, what: str) -> Draft:
    """Reasoning, text, then calls; the legacy function_call gets the id ``fc-<i>``."""
    parts: list[Part] = []
    reasoning = raw.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(Part("thinking", reasoning))
    parts.extend(_text_parts(raw.get("content"), what, allow_empty=True))
    refusal = raw.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append(Part("text", refusal))
    for k, call in enumerate(get(raw, "tool_calls", list, what, [])):
        parts.append(_call(call, f"{what} tool_calls[{k}]", state))
    state.legacy_open = []
    legacy = get(raw, "function_call", dict, what, None)
    if legacy is not None:
        name = get(legacy, "name", str, f"{what} function_call")
        cid = f"fc-{i}"
        parts.append(Part("tool_call", call_id=cid, name=name, args=_arguments(legacy, f"{what} function_call")))
        state.legacy_open.append((cid, name))
        state.call_names[cid] = name
    return Draft(f"m{i}", "assistant", parts, label=what)


def _call(call: Any, what: str, state: _State) -> Part:
    check(call, dict, what)
    cid = get(call, "id", str, what)
    fn = get(call, "function", dict, what)
    name = get(fn, "name", str, f"{what} function")
    state.call_names[cid] = name
    return Part("tool_call", call_id=cid, name=name, args=_arguments(fn, f"{what} function"))


def _arguments(fn: dict[str, Any], what: str) -> str:
    """Arguments as the model wrote them (a string), or sorted-key JSON when given as an object."""
    args = get(fn, "arguments", (str, dict), what, "")
    return args if isinstance(args, str) else dumps_args(args)


def _function_result(raw: dict[str, Any], i: int, state: _State, what: str) -> Draft:
    """A legacy ``function`` message answers the open legacy call of the same name (else the first)."""
    name = get(raw, "name", str, what)
    match = next((c for c in state.legacy_open if c[1] == name), None)
    if match is None and state.legacy_open:
        match = state.legacy_open[0]
    if match is not None:
        state.legacy_open.remove(match)
    cid = match[0] if match else f"fc-orphan-{i}"  # pair_calls reports a result with no call
    return Draft(f"m{i}", "tool", [_result(raw, cid, name, what)], label=what)


def _result(raw: dict[str, Any], cid: str, name: str | None, what: str) -> Part:
    text = "\n".join(p.text for p in _text_parts(raw.get("content"), what, allow_empty=True))
    return Part("tool_result", text, call_id=cid, name=name)


def _text_parts(content: Any, what: str, allow_empty: bool = False) -> list[Part]:
    """Content as text parts: a string, or one part per block of a block list."""
    if content is None or content == "":
        return [] if allow_empty else [Part("text", "")]
    if isinstance(content, str):
        return [Part("text", content)]
    check(content, list, f"{what} content")
    parts = [Part("text", _block_text(block, f"{what} content[{k}]")) for k, block in enumerate(content)]
    return parts or ([] if allow_empty else [Part("text", "")])


def _block_text(block: Any, what: str) -> str:
    """The text of one content block; images, files and audio become a placeholder, unknown blocks their JSON."""
    if isinstance(block, str):
        return block
    check(block, dict, what)
    kind = get(block, "type", str, what)
    if kind in _TEXT_BLOCKS:
        return cast(str, get(block, "text", str, what, ""))
    if kind in _IMAGE_BLOCKS:
        return MEDIA_PLACEHOLDERS["image"]
    if kind in _MEDIA_BLOCKS:
        return _MEDIA_BLOCKS[kind]
    return dumps_args(block)


#: Keys of the formats that also hold a ``messages`` list or role items but are not chat completions:
#: Anthropic Messages bodies (``"system":`` as a key, ``input_schema``, ``tool_use``/``tool_result``
#: blocks), request/response pairs, Responses API items (``call_id``, ``input_text``), and the logs of
#: agents that embed a chat message list (mini-swe-agent trajectories, OpenHands completion logs).
_NOT_CHAT = (
    b'"input_schema"',
    b'"tool_use"',
    b'"tool_result"',
    b'"system":',
    b'"request":',
    b'"call_id"',
    b'"input_text"',
    b'"output_text"',
    b'"type":"function_call',
    b'"type":"message"',
    b'"trajectory_format"',
    b'"kwargs"',
    b'"latency_sec"',  # mini-swe-agent and OpenHands LLM-completion logs
)


@sniffer("openai-chat")
def sniff(path: Path, head: bytes) -> bool:
    """A JSON message list (or object with ``messages``) using chat-completions roles, not tau-bench."""
    text = head.lstrip()
    if text[:1] not in (b"[", b"{") or b'"traj"' in head or b'"interactions"' in head:
        return False
    if path.suffix == ".traj" or path.name.endswith(".traj.json"):  # SWE-agent and mini-swe-agent trajectories
        return False
    compact = text.replace(b" ", b"").replace(b"\n", b"")
    if any(k in compact for k in _NOT_CHAT):
        return False
    # A bare message list: its first object has a chat role, whichever key comes first.
    first_object = compact[: compact.find(b"}") + 1] if compact.startswith(b"[{") else b""
    bare_list = bool(re.search(rb'"role":"(system|developer|user|assistant|tool)"', first_object))
    return (
        compact.startswith(b'[{"role"')
        or compact.startswith(b'{"messages"')
        or bare_list
        or (b'"messages":[' in compact[:2000] and b'"role":' in compact)
    )
