"""The anthropic-messages importer: request bodies, request/response pairs, blocks, usage, pairing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sim.core.conversation import Usage
from sim.core.errors import FormatError
from sim.formats import detect, read
from tests.formats._golden import check_golden

FMT = "anthropic-messages"
USE = {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}


def _write(tmp_path: Path, value: Any, name: str = "req.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(value), encoding="utf-8")
    return p


def _body(messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages, **extra}


def test_golden(golden: Path) -> None:
    result = check_golden(golden / "anthropic_messages.jsonl", FMT)
    first, second = result.conversations
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert [p.text for p in first.messages[0].parts] == ["You are a careful coding agent.", "Answer briefly."]
    assert first.messages[3].results[0].name == "read_file"
    assert first.messages[4].parts[-1].text == "[image]"
    assert first.messages[-1].usage == Usage(412, 19, 2048, 1530)
    assert [t.name for t in first.tools] == ["read_file", "web_search"]
    assert json.loads(first.tools[1].parameters) == {"type": "web_search_20250305", "max_uses": 3}
    assert second.messages[-1].usage is None and second.meta["model"] == "claude-haiku-4-5"


def test_single_body_and_list(tmp_path: Path) -> None:
    body = _body([{"role": "user", "content": "hi"}], system="sys")
    (conv,) = read(_write(tmp_path, body), FMT).conversations
    assert conv.id == "req" and [m.role for m in conv.messages] == ["system", "user"]
    convs = read(_write(tmp_path, [body, body], "two.json"), FMT).conversations
    assert [c.id for c in convs] == ["two-0", "two-1"]


def test_response_error_and_thinking(tmp_path: Path) -> None:
    pair = {
        "request": _body([{"role": "user", "content": "q"}]),
        "response": {
            "type": "message",
            "content": [{"type": "redacted_thinking", "data": "x"}, USE],
            "usage": {"input_tokens": 3, "output_tokens": 4},
        },
    }
    (conv,) = read(_write(tmp_path, pair), FMT).conversations
    last = conv.messages[-1]
    assert [p.kind for p in last.parts] == ["thinking", "tool_call"] and last.usage == Usage(3, 4, 0, 0)
    bad = {"request": pair["request"], "response": {"type": "error", "error": {"message": "overloaded"}}}
    with pytest.raises(FormatError, match="error response: 'overloaded'"):
        read(_write(tmp_path, bad, "bad.json"), FMT)


def test_consecutive_assistant_turns_are_joined(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [USE]},
        {"role": "assistant", "content": [{**USE, "id": "t2"}]},
        {"role": "user", "content": [RESULT, {**RESULT, "tool_use_id": "t2"}]},
        {"role": "system", "content": "later rule"},
    ]
    (conv,) = read(_write(tmp_path, _body(msgs)), FMT).conversations
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "user"]
    assert len(conv.messages[1].calls) == 2 and conv.messages[3].meta["source_role"] == "system"


def test_orphan_result_strict_and_lenient(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "a"}, {"role": "user", "content": [RESULT]}, {"role": "user", "content": "b"}]
    p = _write(tmp_path, _body(msgs))
    with pytest.raises(FormatError, match=r"req\.json:1: .*answers no call"):
        read(p, FMT)
    result = read(p, FMT, lenient=True)
    assert [m.text for m in result.conversations[0].messages] == ["a", "b"]
    assert len(result.skipped) == 1


def test_sniffer_tells_anthropic_from_openai_chat(tmp_path: Path) -> None:
    assert detect(_write(tmp_path, _body([{"role": "user", "content": "x"}], system="s"), "a.json")) == FMT
    chat = {"model": "gpt-4o", "max_tokens": 5, "messages": [{"role": "system", "content": "s"}]}
    assert detect(_write(tmp_path, chat, "c.json")) == "openai-chat"
