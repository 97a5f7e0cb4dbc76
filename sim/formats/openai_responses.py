"""Importer of OpenAI Responses API conversations: request bodies or item lists.

The Responses API sends a conversation as a flat list of *items* rather than messages: ``message``
items (``role`` and ``input_text``/``output_text`` content), and separate ``reasoning``,
``function_call {call_id, name, arguments}`` and ``function_call_output {call_id, output}`` items
(item shapes from OpenAI's Responses API reference, platform.openai.com/docs/api-reference/responses,
and Codex's ``codex-rs/protocol/src/models.rs``, which mirrors them). The simulator's script is made
of messages, so :class:`ItemFolder` folds the items:

- consecutive model-side items (``reasoning``, an assistant ``message``, ``function_call``,
  ``custom_tool_call``, ``local_shell_call``) become one assistant message; in a request body an item
  after a tool output starts a new one (a new model step), while the Codex importer keeps one message
  per model response, closed by that response's usage;
- consecutive outputs (``function_call_output``, ``custom_tool_call_output``) become one ``tool``
  message;
- ``system``/``developer`` messages become the system message when they open the conversation and
  ``user`` messages later; ``instructions`` is the system message;
- server-side items (``web_search_call``, ``file_search_call``, ``mcp_call``, ``code_interpreter_call``,
  ``tool_search_*`` and newer kinds) are model-side text holding their JSON, so their size counts;
- a ``compaction`` item (the encrypted summary a compacted conversation carries) becomes a ``user``
  message marked ``meta["compact_summary"]``;
- a ``reasoning`` item becomes a thinking part holding its summary texts (empty when only
  ``encrypted_content`` was kept);
- usage: ``input_tokens`` includes ``input_tokens_details.cached_tokens``; ours splits them.

Accepted files: a request body, a ``{"request": ..., "response": ...}`` pair (the response's
``output`` items end the conversation and carry its ``usage``), a list of items (one conversation),
a list of request bodies, or JSONL of request bodies (one conversation per line).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation, Part, Tool, Usage
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import MEDIA_PLACEHOLDERS, BadRecord, Draft, Issues, check, dumps_args, get, pair_calls
from sim.formats._json_records import Record, compact_head, json_records
from sim.formats.usage import responses_usage

_EXPECTED = (
    "OpenAI Responses API input: a request body {model, instructions, input, tools}, a "
    '{"request": ..., "response": ...} pair, a list of items, or JSONL of request bodies'
)
_TEXT = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text", "refusal"})
_MEDIA = {f"input_{kind}": MEDIA_PLACEHOLDERS[kind] for kind in ("image", "file", "audio")}
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


# --- folding items into drafts -------------------------------------------------------------------


@dataclass
class ItemFolder:
    """Turns Responses items into drafts, merging a model step's items into one assistant message.

    Attributes:
        merge_after_outputs: keep adding model-side items to the open assistant message after tool
            outputs (Codex: one message per model response, closed by :meth:`close`); otherwise an
            item after an output starts a new assistant message.
    """

    merge_after_outputs: bool = False
    drafts: list[Draft] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    call_names: dict[str, str] = field(default_factory=dict)
    open_assistant: Draft | None = None
    open_tool: Draft | None = None

    def instructions(self, text: str, line: int | None, what: str) -> None:
        self.drafts.append(Draft("system", "system", [Part("text", text)], line, what))

    def add(self, item: Any, key: str, line: int | None, what: str) -> None:
        """Fold one item; it is parsed in full before any state changes, so a bad item leaves no trace."""
        check(item, dict, what)
        kind = item.get("type")
        if kind is None and "role" in item:
            kind = "message"
        kind = check(kind, str, f"{what} type")
        if kind == "message":
            self._message(item, key, line, what)
        elif kind in _CALLS:
            self._model_side([_call(item, kind, what)], key, line, what)
        elif kind in _OUTPUTS:
            self._output(_output(item, self.call_names, what), key, line, what)
        elif kind == "reasoning":
            self._model_side([Part("thinking", _reasoning_text(item, what))], key, line, what)
        elif kind in ("compaction", "compaction_summary"):
            text = get(item, "encrypted_content", str, what, "") or get(item, "summary", str, what, "")
            self._close()
            self.drafts.append(Draft(key, "user", [Part("text", text)], line, what, meta={"compact_summary": True}))
        elif kind == "additional_tools":
            self.tools.extend(function_tools(get(item, "tools", list, what), what))
        else:  # server-side calls and results, item references, newer kinds: their JSON is their size
            self._model_side([Part("text", dumps_args(item))], key, line, what)

    def close(self) -> Draft | None:
        """End the current model response; returns its assistant message (to carry usage), if any."""
        d = self.open_assistant
        self._close()
        return d

    def last_assistant(self) -> Draft | None:
        return next((d for d in reversed(self.drafts) if d.role == "assistant"), None)

    # --- internals ----------------------------------------------------------------------------

    def _close(self) -> None:
        self.open_assistant = None
        self.open_tool = None

    def _message(self, item: dict[str, Any], key: str, line: int | None, what: str) -> None:
        role = get(item, "role", str, what)
        parts = content_parts(item.get("content"), what)
        if role == "assistant":
            self._model_side(parts, key, line, what)
            return
        if role in ("system", "developer"):
            first = not self.drafts
            self._close()
            meta = {} if first else {"source_role": role}
            self.drafts.append(Draft(key, "system" if first else "user", parts, line, what, meta=meta))
            return
        if role != "user":
            raise BadRecord(f"{what} role {role!r} is not one of user, assistant, system, developer")
        self._close()
        self.drafts.append(Draft(key, "user", parts, line, what))

    def _model_side(self, parts: list[Part], key: str, line: int | None, what: str) -> None:
        for p in parts:
            if p.kind == "tool_call":
                self.call_names[p.call_id or ""] = p.name or ""
        d = self.open_assistant
        if d is not None and (self.open_tool is None or self.merge_after_outputs):
            d.parts.extend(parts)
            d.meta["items"] += 1
            return
        d = Draft(key, "assistant", parts, line, what, meta={"items": 1})
        self.drafts.append(d)
        self.open_assistant, self.open_tool = d, None

    def _output(self, part: Part, key: str, line: int | None, what: str) -> None:
        if self.open_tool is not None:
            self.open_tool.parts.append(part)
            return
        d = Draft(key, "tool", [part], line, what)
        self.drafts.append(d)
        self.open_tool = d


def _call(item: dict[str, Any], kind: str, what: str) -> Part:
    if kind == "local_shell_call":
        cid = get(item, "call_id", str, what, None) or get(item, "id", str, what)
        return Part("tool_call", call_id=cid, name="local_shell", args=dumps_args(get(item, "action", dict, what, {})))
    cid = get(item, "call_id", str, what)
    name = get(item, "name", str, what)
    field_name = "input" if kind == "custom_tool_call" else "arguments"
    args = get(item, field_name, (str, dict), what, "")
    return Part("tool_call", call_id=cid, name=name, args=args if isinstance(args, str) else dumps_args(args))


def _output(item: dict[str, Any], names: dict[str, str], what: str) -> Part:
    cid = get(item, "call_id", str, what)
    output = item.get("output")
    if output is None or isinstance(output, str):
        text = output or ""
    elif isinstance(output, dict) and isinstance(output.get("content"), str):  # {content, success}
        text = output["content"]
    elif isinstance(output, list):
        text = "\n".join(p.text for p in content_parts(output, f"{what} output"))
    else:
        raise BadRecord(f"{what} output should be a string or a list of content, got {type(output).__name__}")
    return Part("tool_result", text, call_id=cid, name=names.get(cid))


def _reasoning_text(item: dict[str, Any], what: str) -> str:
    texts = []
    for k, s in enumerate(get(item, "summary", list, what, [])):
        texts.append(get(check(s, dict, f"{what} summary[{k}]"), "text", str, f"{what} summary[{k}]", ""))
    for k, c in enumerate(get(item, "content", list, what, [])):
        texts.append(get(check(c, dict, f"{what} content[{k}]"), "text", str, f"{what} content[{k}]", ""))
    return "\n".join(t for t in texts if t)


def content_parts(content: Any, what: str) -> list[Part]:
    """A message's content as text parts: a string, or one part per content block."""
    if content is None or isinstance(content, str):
        return [Part("text", content or "")]
    parts = []
    for k, block in enumerate(check(content, list, f"{what} content")):
        bwhat = f"{what} content[{k}]"
        check(block, dict, bwhat)
        kind = block.get("type")
        if kind in _TEXT:
            parts.append(Part("text", get(block, "text", str, bwhat, "") or get(block, "refusal", str, bwhat, "")))
        elif kind in _MEDIA:
            parts.append(Part("text", _MEDIA[kind]))
        else:
            parts.append(Part("text", dumps_args(block)))
    return parts or [Part("text", "")]


def function_tools(raw_tools: list[Any], what: str) -> list[Tool]:
    """Tool definitions: ``function`` tools flat (``name``, ``description``, ``parameters``), others kept whole."""
    tools = []
    for k, raw in enumerate(raw_tools):
        twhat = f"{what} tool {k}"
        check(raw, dict, twhat)
        fn = raw.get("function") if isinstance(raw.get("function"), dict) else raw  # chat-style nesting too
        kind = get(fn, "type", str, twhat, "function")
        name = get(fn, "name", str, twhat) if kind == "function" else get(fn, "name", str, twhat, kind)
        description = get(fn, "description", str, twhat, "")
        if kind == "function":
            params = dumps_args(get(fn, "parameters", dict, twhat, {}))
        else:  # a hosted or namespaced tool: its whole definition is what the provider expands
            params = dumps_args({k2: v for k2, v in fn.items() if k2 not in ("name", "description")})
        tools.append(Tool(name, description, params))
    return tools


# --- request bodies ------------------------------------------------------------------------------


def conversation(
    request: dict[str, Any] | list[Any],
    response: dict[str, Any] | None,
    cid: str,
    what: str,
    line: int | None,
    issues: Issues,
    usage: Usage | None = None,
    extra_meta: dict[str, Any] | None = None,
    item_line: Callable[[int], int | None] | None = None,
) -> Conversation | None:
    """A request body (or a bare item list) and its response, if any, as one conversation.

    A malformed item is an error (strict) or skipped (lenient). The response's ``output`` items are
    one assistant message that carries ``usage`` (the response's own unless given). None when the
    conversation was dropped.
    """
    folder = ItemFolder()
    meta: dict[str, Any] = {"source": "openai-responses"}
    if isinstance(request, list):
        items: list[Any] = request
    else:
        check(request, dict, what)
        folder.tools.extend(function_tools(get(request, "tools", list, what, []), what))
        instructions = get(request, "instructions", str, what, "")
        if instructions:
            folder.instructions(instructions, line, f"{what} instructions")
        raw_input = request.get("input")
        if isinstance(raw_input, str):
            items = [{"role": "user", "content": raw_input}]
        else:
            items = get(request, "input", list, what)
        for key in ("model", "previous_response_id"):
            if isinstance(request.get(key), str):
                meta[key] = request[key]
    for k, item in enumerate(items):
        iwhat = f"{what}, input[{k}]"
        at = item_line(k) if item_line else line
        with issues.record(at, iwhat):
            folder.add(item, f"i{k}", at, iwhat)
    if response is not None:
        with issues.record(line, f"{what} response"):
            _response(folder, response, f"{what} response", line, usage)
            if isinstance(response.get("id"), str):
                meta["response_id"] = response["id"]
    elif usage is not None:
        folder.close()
        folder.drafts.append(Draft("response", "assistant", [], line, f"{what} response", usage))
    meta.update(extra_meta or {})
    drafts = pair_calls(folder.drafts, issues, "report")
    try:
        return Conversation(cid, tuple(d.build() for d in drafts), (), tuple(folder.tools), meta)
    except InvalidConfig as exc:
        issues.problem(line, f"{what}: {exc}")
        return None


def _response(folder: ItemFolder, response: dict[str, Any], what: str, line: int | None, usage: Usage | None) -> None:
    """Append the response's output items as one final assistant message carrying the usage."""
    if isinstance(response.get("error"), dict):
        raise BadRecord(f"{what} is an error response: {response['error'].get('message')!r}")
    output = get(response, "output", list, what, [])
    if usage is None:
        usage = responses_usage(response.get("usage"), what)
    sub = ItemFolder(merge_after_outputs=True, call_names=folder.call_names)
    meta: dict[str, Any] = {"items": len(output)}
    for k, item in enumerate(output):
        if isinstance(item, dict) and item.get("type") in ("compaction", "compaction_summary"):
            meta["compaction"] = True  # the server compacted: the summary is part of the model's output
            item = {"type": "compaction_output", "encrypted_content": item.get("encrypted_content")}
        sub.add(item, "response", line, f"{what} output[{k}]")
    parts = [p for d in sub.drafts for p in d.parts if d.role == "assistant"]
    if sub.drafts and any(d.role != "assistant" for d in sub.drafts):
        extra = sorted({d.role for d in sub.drafts if d.role != "assistant"})
        raise BadRecord(f"{what} output holds {extra} items; a response's output is the model's own")
    folder.close()
    folder.drafts.append(Draft("response", "assistant", parts, line, what, usage, meta))


@FORMATS.register("openai-responses", "OpenAI Responses API request bodies or item lists (optionally with response)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read every conversation of a Responses file (see the module docstring for the shapes)."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    records = json_records(path, issues, _EXPECTED)
    if _is_item_list(records):  # a list of items is one conversation, not one per item
        conv = conversation(
            [r.value for r in records],
            None,
            path.stem,
            "the item list",
            1,
            issues,
            item_line=lambda k: records[k].line,
        )
        if conv is not None:
            result.conversations.append(conv)
        return result
    for rec in records:
        conv = None
        with issues.record(rec.line, rec.label):
            conv = _record_conversation(rec, path, issues)
        if conv is not None:
            result.conversations.append(conv)
    return result


def _is_item_list(records: list[Record]) -> bool:
    """Records that are items (``type`` or ``role``, no ``input``/``request``) form one conversation."""
    if len(records) == 1 and isinstance(records[0].value, list):
        return False
    first = next((r.value for r in records if isinstance(r.value, dict)), None)
    return (
        first is not None and "input" not in first and "request" not in first and ("type" in first or "role" in first)
    )


def _record_conversation(rec: Record, path: Path, issues: Issues) -> Conversation | None:
    cid = f"{path.stem}-{rec.key}" if rec.key else path.stem
    value = rec.value
    if isinstance(value, list):  # the whole document is an item list
        return conversation(value, None, cid, rec.label, rec.line, issues)
    check(value, dict, rec.label)
    if "request" in value and "input" not in value:
        request = get(value, "request", dict, rec.label)
        response = get(value, "response", dict, rec.label, None)
        return conversation(request, response, cid, rec.label, rec.line, issues)
    return conversation(value, None, cid, rec.label, rec.line, issues)


@sniffer("openai-responses")
def sniff(path: Path, head: bytes) -> bool:
    """A request body with ``input`` items, or an item list using Responses item types."""
    compact = compact_head(head)
    if compact[:1] not in (b"{", b"["):
        return False
    if b'"payload":' in compact and b'"response_item"' in compact:  # a Codex rollout
        return False
    if b'"sessionId"' in compact or b'"parentUuid"' in compact:  # a Claude Code transcript
        return False
    if b'"input":[' in compact or b'"input":"' in compact:
        return b'"model":' in compact or b'"instructions":' in compact or b'"request":' in compact
    starts = (b'{"type":', b'{"role":', b'{"id":', b'{"content":', b'{"call_id":')
    if not (compact.startswith(starts) or compact[1:].startswith(starts)):  # an item (list) opens the file
        return False
    markers = (
        b'"type":"function_call"',
        b'"type":"function_call_output"',
        b'"type":"message"',
        b'"input_text"',
        b'"output_text"',
        b'"type":"reasoning"',
    )
    return any(m in compact for m in markers) and b'"messages":' not in compact
