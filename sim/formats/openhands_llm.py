"""Importer of OpenHands completion logs: one LLM request and its response per JSON file.

OpenHands (``openhands-sdk``, ``LLM(log_completions=True)``) writes one file per model call, named
``<model with / as __>-<unix time>.json``, holding ``messages`` (the request, OpenAI chat format with
content as block lists), ``tools`` (the function schemas offered), ``kwargs``, ``context_window``,
``response`` (the LiteLLM ``ModelResponse``), ``cost``, ``timestamp`` and ``latency_sec``. Logs of a model
run without native function calling also hold ``raw_messages`` (the conversation before OpenHands
rewrote the tool calls into text) and ``raw_response`` (what the provider returned, before the text
was parsed back into tool calls). Facts read from the sample files of ``OpenHands/software-agent-sdk``
(``tests/fixtures/llm_data``).

A log is the one place where the tool schemas and the provider's prompt count sit side by side, so
the importer keeps both: the schemas become :class:`~sim.conversation.Tool` (they are part of the
prompt and are counted), and the file becomes one conversation whose last assistant message is the
response, carrying the recorded usage. What was sent is ``messages``; for a log without native
function calling the reply taken is ``raw_response`` (the text the model wrote and was charged for),
otherwise ``response``.

Messages are parsed by :mod:`sim.formats.openai_chat`, whose functions are reused here.

This module also holds two helpers the other JSON-document importers share:
:func:`read_json_document` and :func:`litellm_usage`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sim.conversation import Conversation, Usage
from sim.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import BadRecord, Draft, Issues, check, decode_document, get, pair_calls, read_bytes
from sim.formats.openai_chat import _assistant, _message, _State, _tools

_EXPECTED = (
    "an OpenHands completion log: a JSON object with 'messages', 'tools' and 'response' "
    "(OpenHands LLM(log_completions=True))"
)
#: OpenHands names each log ``<model>-<time.time()>.json``.
_LOG_NAME = re.compile(r"-\d{9,11}\.\d+\.json$")


# --- helpers shared by the JSON-document importers ---------------------------------------------


def read_json_document(path: Path, issues: Issues, expected: str) -> Any:
    """The whole file parsed as one JSON value.

    An empty, truncated or unparsable file stops the import in both modes (nothing in it can be
    trusted); invalid UTF-8 is an error in strict mode and is replaced in lenient mode.
    """
    data = read_bytes(path, expected)
    text = decode_document(data, issues)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise issues.fatal(exc.lineno, f"invalid JSON: {exc.msg} at column {exc.colno}", expected) from exc
    except RecursionError as exc:
        raise issues.fatal(None, "JSON nested too deeply to read", expected) from exc


def _count(raw: dict[str, Any], key: str, what: str) -> int:
    value = get(raw, key, int, what, 0)
    if value < 0:
        raise BadRecord(f"{what} {key!r} is negative ({value})")
    return value


def litellm_usage(raw: Any, what: str) -> Usage | None:
    """A LiteLLM (OpenAI-shaped) or Anthropic usage object as ours; None when there is none.

    LiteLLM's ``prompt_tokens`` is the whole prompt, cached or not: in the OpenHands event sample an
    Anthropic reply shows ``prompt_tokens`` 4646 = 3482 cache read + 1158 cache write + 6. So the
    uncached input is ``prompt_tokens - cache read - cache write``. Cache reads come from
    ``cache_read_input_tokens`` (Anthropic through LiteLLM), else ``prompt_tokens_details.cached_tokens``
    (OpenAI), else ``prompt_cache_hit_tokens`` (DeepSeek); cache writes from
    ``cache_creation_input_tokens``. Should a recording count less prompt than its cache parts (an
    older LiteLLM left cache writes out of ``prompt_tokens``), the writes are taken as extra.
    Anthropic's own usage (``input_tokens``, already uncached) and OpenAI Responses usage
    (``input_tokens`` with ``input_tokens_details.cached_tokens`` inside it) are read too.
    """
    if raw is None:
        return None
    what = f"{what} usage"
    check(raw, dict, what)
    if "prompt_tokens" not in raw and "input_tokens" in raw:
        return _input_output_usage(raw, what)
    prompt = _count(raw, "prompt_tokens", what)
    output = _count(raw, "completion_tokens", what)
    details = get(raw, "prompt_tokens_details", dict, what, {})
    if raw.get("cache_read_input_tokens") is not None:
        read = _count(raw, "cache_read_input_tokens", what)
    elif details.get("cached_tokens") is not None:
        read = _count(details, "cached_tokens", f"{what} prompt_tokens_details")
    else:
        read = _count(raw, "prompt_cache_hit_tokens", what)
    write = _count(raw, "cache_creation_input_tokens", what)
    uncached = prompt - read - write
    if uncached < 0:
        uncached = max(prompt - read, 0)
    return Usage(input_tokens=uncached, output_tokens=output, cache_read_tokens=read, cache_write_tokens=write)


def _input_output_usage(raw: dict[str, Any], what: str) -> Usage:
    """Anthropic Messages usage, or OpenAI Responses usage (whose ``input_tokens`` include the cached)."""
    inp = _count(raw, "input_tokens", what)
    out = _count(raw, "output_tokens", what)
    details = get(raw, "input_tokens_details", dict, what, None)
    if details is not None:  # OpenAI Responses API
        read = min(_count(details, "cached_tokens", f"{what} input_tokens_details"), inp)
        return Usage(input_tokens=inp - read, output_tokens=out, cache_read_tokens=read)
    return Usage(
        input_tokens=inp,
        output_tokens=out,
        cache_read_tokens=_count(raw, "cache_read_input_tokens", what),
        cache_write_tokens=_count(raw, "cache_creation_input_tokens", what),
    )


# --- the completion log ------------------------------------------------------------------------


@FORMATS.register(
    "openhands-llm", "OpenHands completion log (one request: messages, tool schemas, response with usage)"
)
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read one completion log as one conversation ending in the recorded response."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    doc = read_json_document(path, issues, _EXPECTED)
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        shape = type(doc).__name__ if not isinstance(doc, dict) else "an object without a 'messages' list"
        raise issues.fatal(1, f"the document is {shape}", _EXPECTED)
    state = _State()
    for i, raw in enumerate(doc["messages"]):
        what = f"messages[{i}]"
        with issues.record(None, what):
            draft = _message(raw, i, state, what)
            state.drafts.append(draft)
    tools: tuple[Any, ...] = ()
    with issues.record(None, "tools"):
        tools = _tools(doc, "the log")
    meta = _meta(doc)
    with issues.record(None, "response"):
        state.drafts.append(_response(doc, len(doc["messages"]), state, meta))
    drafts = pair_calls(state.drafts, issues, "report")
    try:
        conv = Conversation(path.stem, tuple(d.build() for d in drafts), (), tools, meta)
    except InvalidConfig as exc:
        issues.problem(None, str(exc))
        return result
    result.conversations.append(conv)
    return result


def _meta(doc: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"source": "openhands-llm", "mock_function_calling": "raw_response" in doc}
    for key in ("context_window", "cost", "latency_sec", "timestamp"):
        value = doc.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            meta[key] = value
    return meta


def _response(doc: dict[str, Any], index: int, state: _State, meta: dict[str, Any]) -> Draft:
    """The reply: the provider's own (``raw_response``) when OpenHands rewrote it, else ``response``."""
    key = "raw_response" if isinstance(doc.get("raw_response"), dict) else "response"
    response = get(doc, key, dict, "the log")
    choices = get(response, "choices", list, key)
    if not choices:
        raise BadRecord(f"{key} has no choices")
    choice = check(choices[0], dict, f"{key} choices[0]")
    message = get(choice, "message", dict, f"{key} choices[0]")
    if key == "raw_response":  # the provider wrote text; OpenHands parsed calls out of it afterwards
        message = {k: v for k, v in message.items() if k not in ("tool_calls", "function_call")}
    draft = _assistant(message, index, state, f"{key} message")
    draft.label = f"{key} message"
    # the usage of the call is on the parsed response; raw_response may lack it
    usage_raw = response.get("usage")
    if usage_raw is None and isinstance(doc.get("response"), dict):
        usage_raw = doc["response"].get("usage")
    draft.usage = litellm_usage(usage_raw, key)
    if draft.usage is not None:
        meta["recorded_prompt_tokens"] = draft.usage.prompt_tokens
    draft.meta = {"response": True}
    for source, target in (("model", "model"), ("id", "response_id")):
        if isinstance(response.get(source), str):
            draft.meta[target] = response[source]
    if isinstance(choice.get("finish_reason"), str):
        draft.meta["finish_reason"] = choice["finish_reason"]
    return draft


@sniffer("openhands-llm")
def sniff(path: Path, head: bytes) -> bool:
    """A JSON object opening with ``messages`` that carries the log's own keys (or its file name)."""
    compact = head.lstrip().replace(b" ", b"").replace(b"\n", b"")
    if not compact.startswith(b'{"messages":'):
        return False
    own_keys = (b'"context_window":', b'"latency_sec":', b'"raw_messages":')
    return any(k in compact for k in own_keys) or bool(_LOG_NAME.search(path.name))
