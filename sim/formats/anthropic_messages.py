"""Importer of Anthropic Messages API request bodies, alone or paired with their response.

A request body (``POST /v1/messages``) is the exact prompt a model saw: ``system`` (a string or text
blocks), ``messages`` (``user``/``assistant`` with a string or content blocks) and ``tools``
(``{name, description, input_schema}``). That is the script up to the reply. Saved with its reply
as ``{"request": {...}, "response": {...}}``, the reply becomes the final assistant message and
carries the provider's ``usage``, the ground truth for token estimates. Accepted file shapes: one
JSON object, a JSON list of them, or JSONL with one per line; each is one conversation.

Mapping (block names from Anthropic's Messages API reference, docs.anthropic.com/en/api/messages):

- ``system`` becomes the system message, one text part per block; a ``system`` turn inside
  ``messages`` becomes a ``user`` message with ``meta["source_role"]``; consecutive assistant turns
  are joined into one message, as the API joins them;
- user ``tool_result`` blocks become one ``tool`` message (content strings or text blocks joined by
  newlines, ``is_error`` kept); the user's other blocks a ``user`` message after it, with id suffix
  ``~text``; ``image`` and ``document`` blocks become the placeholders ``[image]`` / ``[document]``;
- assistant ``text``, ``thinking`` (``redacted_thinking`` as empty thinking) and ``tool_use`` become
  text, thinking and tool-call parts; server-side blocks (``server_tool_use``,
  ``web_search_tool_result``, ``mcp_tool_use`` and newer ones) are kept as their JSON text, since
  their results arrive inside the same message and they are not client tool calls;
- a tool without ``input_schema`` (a server tool such as ``web_search_20250305``) keeps its whole
  definition, minus the name, as its parameters, so its size still counts;
- usage: ``input_tokens`` (uncached), ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
  ``output_tokens``.

Message ids are ``m<i>`` (the position in ``messages``), ``system`` and ``response``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sim.core.conversation import Conversation, Part, Tool, Usage
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import MEDIA_PLACEHOLDERS, BadRecord, Draft, Issues, check, dumps_args, get, pair_calls
from sim.formats._json_records import compact_head, json_records
from sim.formats.usage import anthropic_usage

_EXPECTED = (
    "Anthropic Messages request bodies ({model, system, messages, tools, max_tokens}) or "
    '{"request": ..., "response": ...} pairs: one JSON object, a list of them, or JSONL'
)
_PLACEHOLDERS = {kind: MEDIA_PLACEHOLDERS[kind] for kind in ("image", "document")}


@FORMATS.register("anthropic-messages", "Anthropic Messages API request bodies (optionally with their response)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read every request (or request/response pair) in the file, one conversation each."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    for rec in json_records(path, issues, _EXPECTED):
        cid = f"{path.stem}-{rec.key}" if rec.key else path.stem
        conv = None
        with issues.record(rec.line, rec.label):
            request, response = split_pair(rec.value, rec.label)
            conv = conversation(request, response, cid, rec.label, rec.line, issues)
        if conv is not None:
            result.conversations.append(conv)
    return result


def split_pair(value: Any, what: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(request, response)`` of a record: a bare request body, or a ``{request, response}`` pair."""
    check(value, dict, what)
    if "request" in value and "messages" not in value:
        request = get(value, "request", dict, what)
        response = get(value, "response", dict, what, None)
        return request, response
    return value, None


# --- one conversation ----------------------------------------------------------------------------


@dataclass
class _Builder:
    """Drafts of one request, and the call names tool results look up."""

    what: str
    line: int | None
    drafts: list[Draft] = field(default_factory=list)
    call_names: dict[str, str] = field(default_factory=dict)


def conversation(
    request: dict[str, Any],
    response: dict[str, Any] | None,
    cid: str,
    what: str,
    line: int | None,
    issues: Issues,
    usage: Usage | None = None,
    extra_meta: dict[str, Any] | None = None,
) -> Conversation | None:
    """One request body (and its response, if any) as a conversation.

    A malformed message is an error (strict) or skipped (lenient); a malformed ``system`` or ``tools``
    spoils the whole request. ``usage`` overrides the response's own (an SSE response gives it
    separately); the final assistant message carries it. None when the conversation was dropped.
    """
    b = _Builder(what, line)
    tools = tools_of(request, what)
    system = request.get("system")
    if system is not None and system != "" and system != []:
        b.drafts.append(Draft("system", "system", system_parts(system, f"{what} system"), line, f"{what} system"))
    for i, raw in enumerate(get(request, "messages", list, what)):
        mwhat = f"{what}, message {i}"
        with issues.record(line, mwhat):
            drafts = _message(raw, f"m{i}", b, mwhat)
            last = b.drafts[-1] if b.drafts else None
            if last is not None and last.role == "assistant" and drafts[0].role == "assistant":
                last.parts.extend(drafts[0].parts)  # the API joins consecutive same-role turns
                last.meta["joined"] = last.meta.get("joined", 1) + 1
                drafts = drafts[1:]
            b.drafts.extend(drafts)
    meta: dict[str, Any] = {"source": "anthropic-messages"}
    for key in ("model", "max_tokens"):
        if isinstance(request.get(key), (str, int)) and not isinstance(request.get(key), bool):
            meta[key] = request[key]
    if response is not None:
        with issues.record(line, f"{what} response"):
            b.drafts.append(response_draft(response, b, f"{what} response", usage))
            if isinstance(response.get("id"), str):
                meta["response_id"] = response["id"]
            if isinstance(response.get("stop_reason"), str):
                meta["stop_reason"] = response["stop_reason"]
    elif usage is not None:
        b.drafts.append(Draft("response", "assistant", [], line, f"{what} response", usage))
    meta.update(extra_meta or {})
    drafts = pair_calls(b.drafts, issues, "report")
    try:
        return Conversation(cid, tuple(d.build() for d in drafts), (), tools, meta)
    except InvalidConfig as exc:
        issues.problem(line, f"{what}: {exc}")
        return None


def response_draft(response: dict[str, Any], b: _Builder, what: str, usage: Usage | None = None) -> Draft:
    """The reply (an Anthropic ``message`` object) as the final assistant message, with its usage."""
    if response.get("type") == "error":
        err = response.get("error")
        detail = err.get("message") if isinstance(err, dict) else None
        raise BadRecord(f"{what} is an error response: {detail!r}")
    parts = _assistant_parts(response.get("content", []), b, what)
    if usage is None:
        usage = anthropic_usage(response.get("usage"), what)
    meta = {"api_id": response["id"]} if isinstance(response.get("id"), str) else {}
    return Draft("response", "assistant", parts, b.line, what, usage, meta)


def tools_of(request: dict[str, Any], what: str) -> tuple[Tool, ...]:
    """Tool schemas; a server tool without ``input_schema`` keeps its definition as parameters."""
    tools: list[Tool] = []
    for k, raw in enumerate(get(request, "tools", list, what, [])):
        twhat = f"{what} tool {k}"
        check(raw, dict, twhat)
        name = get(raw, "name", str, twhat)
        description = get(raw, "description", str, twhat, "")
        if "input_schema" in raw:
            params = dumps_args(get(raw, "input_schema", dict, twhat, {}))
        else:
            params = dumps_args({k2: v for k2, v in raw.items() if k2 not in ("name", "description")})
        tools.append(Tool(name, description, params))
    return tuple(tools)


def system_parts(system: Any, what: str) -> list[Part]:
    """``system`` as text parts: a string, or one part per text block."""
    if isinstance(system, str):
        return [Part("text", system)]
    blocks = check(system, list, what)
    return [Part("text", block_text(block, f"{what}[{k}]")) for k, block in enumerate(blocks)]


def _message(raw: Any, mid: str, b: _Builder, what: str) -> list[Draft]:
    """One request message as one draft, or two (tool results, then the user's other blocks)."""
    check(raw, dict, what)
    role = get(raw, "role", str, what)
    content = raw.get("content")
    if role == "assistant":
        return [Draft(mid, "assistant", _assistant_parts(content, b, what), b.line, what)]
    if role == "system":  # a system turn inside messages: sent to the model as a later instruction
        return [Draft(mid, "user", system_parts(content, f"{what} content"), b.line, what, meta={"source_role": role})]
    if role != "user":
        raise BadRecord(f"{what} role {role!r} is not 'user', 'assistant' or 'system'")
    if isinstance(content, str):
        return [Draft(mid, "user", [Part("text", content)], b.line, what)]
    results: list[Part] = []
    others: list[Part] = []
    for k, block in enumerate(check(content, list, f"{what} content")):
        bwhat = f"{what} content[{k}]"
        check(block, dict, bwhat)
        if block.get("type") == "tool_result":
            results.append(_result(block, b, bwhat))
        else:
            others.append(Part("text", block_text(block, bwhat)))
    drafts: list[Draft] = []
    if results:
        drafts.append(Draft(mid, "tool", results, b.line, f"{what} tool results"))
    if others or not results:
        drafts.append(Draft(f"{mid}~text" if results else mid, "user", others, b.line, what))
    return drafts


def assistant_parts(content: Any, what: str) -> list[Part]:
    """An assistant message's content blocks as parts, in order (also used for Claude Code transcripts)."""
    if isinstance(content, str):
        return [Part("text", content)]
    parts: list[Part] = []
    for k, block in enumerate(check(content, list, f"{what} content")):
        bwhat = f"{what} content[{k}]"
        check(block, dict, bwhat)
        kind = get(block, "type", str, bwhat)
        if kind == "text":
            parts.append(Part("text", get(block, "text", str, bwhat, "")))
        elif kind == "thinking":
            parts.append(Part("thinking", get(block, "thinking", str, bwhat, "")))
        elif kind == "redacted_thinking":
            parts.append(Part("thinking", ""))
        elif kind == "tool_use":
            cid = get(block, "id", str, bwhat)
            name = get(block, "name", str, bwhat)
            args = dumps_args(get(block, "input", dict, bwhat, {}))
            parts.append(Part("tool_call", call_id=cid, name=name, args=args))
        else:  # server tools and newer block kinds: kept as text so their size still counts
            parts.append(Part("text", dumps_args(block)))
    return parts


def _assistant_parts(content: Any, b: _Builder, what: str) -> list[Part]:
    parts = assistant_parts(content, what)
    for p in parts:
        if p.kind == "tool_call":
            b.call_names[p.call_id or ""] = p.name or ""
    return parts


def _result(block: dict[str, Any], b: _Builder, what: str) -> Part:
    cid = get(block, "tool_use_id", str, what)
    content = block.get("content")
    if content is None or isinstance(content, str):
        text = content or ""
    else:
        text = "\n".join(block_text(x, f"{what} content") for x in check(content, list, f"{what} content"))
    is_error = get(block, "is_error", bool, what, False)
    return Part("tool_result", text, call_id=cid, name=b.call_names.get(cid), is_error=is_error)


def block_text(block: Any, what: str) -> str:
    """A text block's text; media become a placeholder, any other block its JSON."""
    check(block, dict, what)
    kind = block.get("type")
    if kind == "text":
        return cast(str, get(block, "text", str, what, ""))
    if kind in _PLACEHOLDERS:
        return _PLACEHOLDERS[kind]
    return dumps_args(block)


#: Keys that occur in Anthropic bodies and never in OpenAI chat ones (``"system":`` as a key).
ANTHROPIC_MARKERS = (b'"input_schema"', b'"tool_use"', b'"tool_result"', b'"system":', b'"stop_reason"')


@sniffer("anthropic-messages")
def sniff(path: Path, head: bytes) -> bool:
    """A JSON object (list, JSONL) with ``messages`` and ``max_tokens`` and an Anthropic-only key."""
    compact = compact_head(head)
    if compact[:1] not in (b"{", b"[") or b'"messages":[' not in compact:
        return False
    if any(k in compact for k in (b'"choices"', b'"tool_calls"', b'"tool_call_id"', b'"traj"', b'"kwargs"')):
        return False
    if b'"role":"system"' in compact or b'"role":"tool"' in compact or b'"sessionId"' in compact:
        return False
    return b'"max_tokens":' in compact and any(k in compact for k in (*ANTHROPIC_MARKERS, b'"claude'))
