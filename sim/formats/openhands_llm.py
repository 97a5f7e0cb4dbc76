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
the importer keeps both: the schemas become :class:`~sim.core.conversation.Tool` (they are part of the
prompt and are counted), and the file becomes one conversation whose last assistant message is the
response, carrying the recorded usage. What was sent is ``messages``; for a log without native
function calling the reply taken is ``raw_response`` (the text the model wrote and was charged for),
otherwise ``response``.

Messages are parsed by :mod:`sim.formats.openai_chat`, whose functions are reused here; the document
is read with :func:`sim.formats._json_records.read_object_with_list` and the usage with
:func:`sim.formats.usage.any_usage`, as the other JSON-document importers do.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import (
    BadRecord,
    Draft,
    Issues,
    check,
    get,
    pair_calls,
)
from sim.formats._json_records import read_object_with_list
from sim.formats.openai_chat import _assistant, _message, _State, _tools
from sim.formats.usage import any_usage

_EXPECTED = (
    "an OpenHands completion log: a JSON object with 'messages', 'tools' and 'response' "
    "(OpenHands LLM(log_completions=True))"
)
#: OpenHands names each log ``<model>-<time.time()>.json``.
_LOG_NAME = re.compile(r"-\d{9,11}\.\d+\.json$")


# --- helpers shared by the JSON-document importers ---------------------------------------------


# --- the completion log ------------------------------------------------------------------------


@FORMATS.register(
    "openhands-llm", "OpenHands completion log (one request: messages, tool schemas, response with usage)"
)
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read one completion log as one conversation ending in the recorded response."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    doc, lines = read_object_with_list(path, issues, "messages", _EXPECTED)
    state = _State()
    for i, raw in enumerate(doc["messages"]):
        what = f"messages[{i}]"
        with issues.record(lines.of("messages", i), what):
            draft = _message(raw, i, state, what)
            draft.line = lines.of("messages", i)
            state.drafts.append(draft)
    tools: tuple[Any, ...] = ()
    with issues.record(lines.of("tools"), "tools"):
        tools = _tools(doc, "the log")
    meta = _meta(doc)
    with issues.record(lines.of("response"), "response"):
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
    draft.usage = any_usage(usage_raw, key)
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
