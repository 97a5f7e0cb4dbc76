"""Importer of recorded HTTP exchanges with model providers: VCR-style YAML cassettes.

A cassette (written by vcrpy / pytest-recording, as in pydantic-ai's test suite) lists
``interactions``, each ``{request: {method, uri, parsed_body | body}, response: {status,
parsed_body | body}}``. An interaction with a model endpoint is the exact prompt and the provider's
exact token count for it, the best calibration data there is. Each such interaction becomes one
conversation: the request body read by the importer of its wire format, then the response's
message as the final assistant message carrying the response's usage (uncached input, cache read,
cache write, output).

- ``POST .../v1/messages``: :mod:`sim.formats.anthropic_messages`;
- ``POST .../responses``: :mod:`sim.formats.openai_responses`;
- ``POST .../chat/completions`` (OpenAI and compatible providers): the functions of
  :mod:`sim.formats.openai_chat`, with the reply's ``choices[0].message`` appended.

A streamed response is kept as SSE text in ``body``: the Anthropic stream (``message_start``,
``content_block_*``, ``message_delta`` with cumulative usage) is reassembled into the message, the
Responses stream's ``response.completed`` event holds the whole response; a chat-completions stream
is skipped with its reason. Everything else is listed as skipped, with its reason, in both modes:
other endpoints (file uploads, ``count_tokens``, downloads), error responses, websocket frames of
realtime cassettes. Conversation ids are ``<file stem>-<interaction index>``.

A test's agent run is a chain of calls, each re-sending the previous prompt with the reply and the tool results
appended. :class:`~sim.formats._cassette_chains.Chains` finds them, so calibration can fit on what each call added
(the hidden overhead is the same in both and drops out): every conversation carries ``meta["session"]`` (the file
stem), one whose request holds an earlier interaction's whole request (same model, system, tools and options; its
messages a prefix) carries ``meta["continues"]`` (that interaction's id), and ``meta["chain"]`` (the index of the
chain's first interaction) when nothing in its request is counted by the provider otherwise than its text shows: no
image, document, file or audio, no thinking or reasoning (Claude 4 models return a summary of their thinking,
earlier turns' thinking is stripped, OpenAI carries reasoning encrypted), no server-side block or item, and only
client-defined tools (a hosted tool adds definitions and results the body does not hold).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import yaml

from sim.core.conversation import Conversation, Message, Usage
from sim.formats import FORMATS, ImportResult, Skipped, sniffer
from sim.formats import anthropic_messages as anthropic
from sim.formats import openai_responses as responses
from sim.formats._cassette_chains import Chains
from sim.formats._common import BadRecord, Issues, check, decode_document, get, read_bytes
from sim.formats._surrogates import mend_surrogates
from sim.formats.openai_chat import _conversation as chat_conversation
from sim.formats.openai_chat import _Source as ChatSource
from sim.formats.usage import chat_usage

_EXPECTED = "a VCR cassette (YAML with 'interactions: [{request: ..., response: ...}]')"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: How much YAML aliases may add to a cassette once expanded, counting each node as 1 and each scalar as its
#: characters too. A recorder repeats a header block at most; nested aliases (``&a [*b, *b, ...]``, ten levels
#: deep) would expand to billions of nodes from a few hundred bytes, and ten thousand aliases of one long
#: string to gigabytes of text, so beyond this bound the file is refused before anything walks the value.
MAX_ALIAS_EXPANSION = 1_000_000


@FORMATS.register("vcr-cassette", "VCR YAML cassettes of provider HTTP calls (Anthropic, OpenAI chat/responses)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read every model call of a cassette, one conversation each."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    interactions, lines = _load(path, issues)
    chains = Chains(path.stem)
    frames = 0
    for k, it in enumerate(interactions):
        line = lines[k] if k < len(lines) else None
        if isinstance(it, dict) and "request" not in it and "kind" in it and "direction" in it:
            frames += 1  # a websocket frame of a realtime cassette
            continue
        conv = None
        try:
            with issues.record(line, f"interaction {k}"):
                conv = _interaction(it, k, path, line, issues, chains)
        except _NotImported as exc:
            _skip(issues, line, k, str(exc))
        if conv is not None:
            result.conversations.append(conv)
    if frames:
        issues.skipped.append(Skipped(issues.path, None, f"{frames} websocket frames (realtime), not HTTP exchanges"))
    return result


def _load(path: Path, issues: Issues) -> tuple[list[Any], list[int]]:
    """The interactions and the line each starts on; a document that does not parse is fatal."""
    text = decode_document(read_bytes(path, _EXPECTED), issues)
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_aliases(node, issues)
        doc = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = str(getattr(exc, "problem", None) or exc).splitlines()[0]
        raise issues.fatal(line, f"invalid YAML: {problem}", _EXPECTED) from None
    except RecursionError:
        raise issues.fatal(None, "YAML nested too deeply to read", _EXPECTED) from None
    finally:
        loader.dispose()
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        raise issues.fatal(1, f"no 'interactions' list (the document is {type(doc).__name__})", _EXPECTED)
    lines: list[int] = []
    for key, value in getattr(node, "value", ()):
        if getattr(key, "value", None) == "interactions" and isinstance(value, yaml.SequenceNode):
            lines = [n.start_mark.line + 1 for n in value.value]
    return doc["interactions"], lines


def _check_aliases(root: yaml.Node, issues: Issues) -> None:
    """Refuse a document whose aliases add more than :data:`MAX_ALIAS_EXPANSION` once expanded, or refer to
    themselves. The composed graph shares an aliased node, so measuring costs one visit per distinct node."""
    expanded: dict[int, int] = {}  # node id -> its size once aliases are expanded (itself included)
    distinct = 0  # the size of the nodes visited, each once
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    over = False
    while stack and not over:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            expanded[key] = _own_size(node) + sum(expanded[id(c)] for c in _children(node))
            over = expanded[key] - distinct > MAX_ALIAS_EXPANSION
            continue
        if key in expanded:
            continue
        if key in open_nodes:
            problem = "a YAML alias refers to a node that contains it"
            raise issues.fatal(node.start_mark.line + 1, problem, "cassettes hold no recursive data")
        open_nodes.add(key)
        distinct += _own_size(node)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in expanded)
    if over:
        raise issues.fatal(
            None,
            f"YAML aliases expand the document by more than {MAX_ALIAS_EXPANSION:,} nodes and characters "
            "(an alias bomb?)",
            "a recorded cassette repeats little; write the data out instead of aliasing it",
        )


def _own_size(node: yaml.Node) -> int:
    return 1 + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class _NotImported(Exception):
    """An interaction that is well formed but holds no self-contained model call to import."""


def _skip(issues: Issues, line: int | None, k: int, reason: str) -> None:
    """A skip that is no fault of the file (another endpoint, an error response): listed in both modes."""
    issues.skipped.append(Skipped(issues.path, line, f"interaction {k}: {reason}"))


def _endpoint(uri: str) -> str | None:
    path = urlsplit(uri).path.rstrip("/")
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "openai-responses"
    if path.endswith("/chat/completions"):
        return "openai-chat"
    return None


def _interaction(it: Any, k: int, path: Path, line: int | None, issues: Issues, chains: Chains) -> Conversation | None:
    what = f"interaction {k}"
    check(it, dict, what)
    request = get(it, "request", dict, what)
    response = get(it, "response", dict, what)
    method = get(request, "method", str, f"{what} request", "POST")
    uri = get(request, "uri", str, f"{what} request")
    kind = _endpoint(uri)
    if kind is None or method.upper() != "POST":
        raise _NotImported(f"{method} {urlsplit(uri).netloc}{urlsplit(uri).path} is not a model call")
    status = _status(response, what)
    if not 200 <= status < 300:
        raise _NotImported(f"response status {status}: {_error_text(response)}")
    src = _Where(issues, line)
    body = _json_body(request, f"{what} request", src)
    check(body, dict, f"{what} request body")
    for key in ("previous_response_id", "conversation"):
        if body.get(key):
            raise _NotImported(f"the request continues stored state ({key}), so its prompt is not all in the file")
    sse = _sse_text(response)
    if sse is None and response.get("parsed_body") is None and not _looks_json(_raw_body(response)):
        raise _NotImported("the response body is not JSON")
    cid = f"{path.stem}-{k}"
    host = urlsplit(uri).netloc
    meta = {"interaction": k, "endpoint": urlsplit(uri).path, "host": host, "streamed": sse is not None}
    conv = _model_call(kind, body, response, sse, cid, what, line, src, meta)
    return None if conv is None else chains.place(conv, kind, body)


def _model_call(
    kind: str,
    body: dict[str, Any],
    response: dict[str, Any],
    sse: str | None,
    cid: str,
    what: str,
    line: int | None,
    src: _Where,
    meta: dict[str, Any],
) -> Conversation | None:
    """The conversation of one model call: the request read by its wire format's importer, with the reply."""
    issues = src.issues
    if kind == "anthropic":
        reply = _anthropic_sse(sse, what, src) if sse is not None else _json_body(response, f"{what} response", src)
        meta["provider"] = "anthropic"
        return anthropic.conversation(
            body, check(reply, dict, f"{what} response"), cid, what, line, issues, extra_meta=meta
        )
    if kind == "openai-responses":
        reply = _responses_sse(sse, what, src) if sse is not None else _json_body(response, f"{what} response", src)
        meta["provider"] = "openai"
        return responses.conversation(
            body, check(reply, dict, f"{what} response"), cid, what, line, issues, extra_meta=meta
        )
    if sse is not None:
        raise _NotImported("a streamed chat-completions response (SSE chunks) is not reassembled")
    meta["provider"] = "openai"
    return _chat(
        body,
        check(_json_body(response, f"{what} response", src), dict, f"{what} response"),
        cid,
        what,
        line,
        issues,
        meta,
    )


def _status(response: dict[str, Any], what: str) -> int:
    status = response.get("status")
    if isinstance(status, dict):
        status = status.get("code")
    if status is None:
        return 200
    return cast(int, check(status, int, f"{what} response status"))


def _error_text(response: dict[str, Any]) -> str:
    body = response.get("parsed_body")
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message") or body["error"].get("type"))[:120]
    return "error response"


def _raw_body(part: dict[str, Any]) -> Any:
    body = part.get("body")
    if isinstance(body, dict) and "string" in body:
        body = body["string"]
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    return body


def _sse_text(response: dict[str, Any]) -> str | None:
    if "parsed_body" in response:
        return None
    body = _raw_body(response)
    if isinstance(body, str) and body.lstrip().startswith(("event:", "data:")):
        return body
    return None


def _looks_json(body: Any) -> bool:
    return isinstance(body, str) and body.lstrip()[:1] in ("{", "[")


@dataclass(frozen=True)
class _Where:
    """The interaction being read, for the JSON texts inside it: lone surrogates are mended or refused there."""

    issues: Issues
    line: int | None

    def loads(self, text: str) -> Any:
        """``text`` parsed as JSON (json.loads' errors propagate), with no lone surrogate left."""
        return mend_surrogates(json.loads(text), self.issues, self.line, text)


def _json_body(part: dict[str, Any], what: str, src: _Where) -> Any:
    """``parsed_body``, else ``body`` parsed as JSON."""
    if part.get("parsed_body") is not None:
        return part["parsed_body"]
    body = _raw_body(part)
    if not isinstance(body, str) or not body.strip():
        raise BadRecord(f"{what} has neither parsed_body nor a JSON body")
    try:
        return src.loads(body)
    except json.JSONDecodeError as exc:
        raise BadRecord(f"{what} body is not JSON: {exc.msg} at column {exc.colno}") from None


def _sse_events(text: str, what: str, src: _Where) -> list[dict[str, Any]]:
    """The JSON ``data:`` payloads of an SSE stream, in order (``[DONE]`` and blank data skipped)."""
    events = []
    for raw in text.splitlines():
        if not raw.startswith("data:"):
            continue
        data = raw[5:].strip()
        if not data or data == "[DONE]":
            continue
        try:
            event = src.loads(data)
        except json.JSONDecodeError as exc:
            raise BadRecord(f"{what} SSE data is not JSON: {exc.msg}") from None
        events.append(check(event, dict, f"{what} SSE event"))
    return events


def _anthropic_sse(text: str, what: str, src: _Where) -> dict[str, Any]:
    """Reassemble an Anthropic message stream: blocks from their deltas, usage from start and deltas."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    usage: dict[str, Any] = {}
    for ev in _sse_events(text, what, src):
        kind = ev.get("type")
        if kind == "message_start":
            message = dict(get(ev, "message", dict, f"{what} message_start"))
            usage.update(get(message, "usage", dict, f"{what} message_start", {}))
        elif kind == "content_block_start":
            blocks[get(ev, "index", int, f"{what} event")] = dict(get(ev, "content_block", dict, f"{what} event"))
        elif kind == "content_block_delta":
            i = get(ev, "index", int, f"{what} event")
            delta = get(ev, "delta", dict, f"{what} event")
            block = blocks.setdefault(i, {"type": "text", "text": ""})
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + get(delta, "text", str, f"{what} delta", "")
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + get(delta, "thinking", str, f"{what} delta", "")
            elif delta.get("type") == "input_json_delta":
                partial[i] = partial.get(i, "") + get(delta, "partial_json", str, f"{what} delta", "")
        elif kind == "message_delta":
            usage.update(get(ev, "usage", dict, f"{what} message_delta", {}))  # cumulative counts
            stop = get(ev, "delta", dict, f"{what} message_delta", {}).get("stop_reason")
            if stop is not None:
                message["stop_reason"] = stop
        elif kind == "error":
            raise BadRecord(f"{what} stream ended in an error event: {ev.get('error')!r}")
    for i, text_json in partial.items():
        try:
            blocks[i]["input"] = src.loads(text_json) if text_json.strip() else {}
        except json.JSONDecodeError as exc:
            raise BadRecord(f"{what} tool input of block {i} is not JSON: {exc.msg}") from None
    if not message:
        raise BadRecord(f"{what} stream has no message_start event")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    message["usage"] = usage
    return message


def _responses_sse(text: str, what: str, src: _Where) -> dict[str, Any]:
    """The response object of a Responses stream's final ``response.completed`` (or incomplete) event."""
    final = None
    for ev in _sse_events(text, what, src):
        if ev.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            final = get(ev, "response", dict, f"{what} {ev.get('type')} event")
    if final is None:
        raise BadRecord(f"{what} stream has no response.completed event")
    return cast(dict[str, Any], final)


def _chat(
    body: dict[str, Any],
    reply: dict[str, Any],
    cid: str,
    what: str,
    line: int | None,
    issues: Issues,
    meta: dict[str, Any],
) -> Conversation | None:
    """A chat-completions request read by the openai-chat importer, with the reply appended carrying usage."""
    messages = get(body, "messages", list, f"{what} request")
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _NotImported("the response holds no choices (not a chat completion)")
    answer = get(check(choices[0], dict, f"{what} choice 0"), "message", dict, f"{what} choice 0")
    usage = chat_usage(reply.get("usage"), f"{what} response")
    value = {**body, "messages": [*messages, answer]}
    conv = chat_conversation(ChatSource(value, line, what, cid), issues)
    if conv is None:
        return None
    last = conv.messages[-1] if conv.messages else None
    msgs = conv.messages
    if last is not None and last.role == "assistant" and last.id == f"m{len(messages)}" and usage is not None:
        msgs = (*msgs[:-1], _with_usage(last, usage))
    model = body.get("model")
    return Conversation(
        conv.id,
        msgs,
        conv.facts,
        conv.tools,
        {
            **conv.meta,
            **meta,
            **({"model": model} if isinstance(model, str) else {}),
        },
    )


def _with_usage(message: Message, usage: Usage) -> Message:
    return replace(message, usage=usage)


@sniffer("vcr-cassette")
def sniff(path: Path, head: bytes) -> bool:
    """YAML (or JSON) with a top-level ``interactions`` list of request/response pairs."""
    has_list = b"interactions:" in head or b'"interactions"' in head
    return has_list and (b"request" in head or b"direction" in head)
