"""The openai-responses importer: items folded into messages, instructions, tools, response usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sim.core.conversation import Usage
from sim.core.errors import FormatError
from sim.formats import detect, read
from tests.formats._golden import check_golden

FMT = "openai-responses"
CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
OUT = {"type": "function_call_output", "call_id": "c1", "output": "done"}


def _write(tmp_path: Path, value: Any, name: str = "r.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(value), encoding="utf-8")
    return p


def test_golden(golden: Path) -> None:
    result = check_golden(golden / "openai_responses.json", FMT)
    (conv,) = result.conversations
    roles = [m.role for m in conv.messages]
    assert roles == ["system", "user", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert conv.messages[1].meta["source_role"] == "developer"
    batch = conv.messages[3]
    assert [p.kind for p in batch.parts] == ["thinking", "tool_call", "tool_call"]
    assert batch.parts[0].text == "Two independent commands."
    assert [p.call_id for p in conv.messages[4].parts] == ["call_b", "call_a"]
    assert conv.messages[4].parts[1].text == "48M\t."
    assert conv.messages[-1].usage == Usage(176, 64, 1024, 0)
    assert [t.name for t in conv.tools] == ["shell", "web_search"]


def test_item_list_is_one_conversation(tmp_path: Path) -> None:
    items = [
        {"role": "user", "content": "go"},
        CALL,
        OUT,
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
    ]
    p = _write(tmp_path, items, "items.json")
    assert detect(p) == FMT
    (conv,) = read(p, FMT).conversations
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    lines = tmp_path / "items.jsonl"
    lines.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    assert read(lines, FMT).conversations[0].messages == conv.messages


def test_call_after_output_starts_a_new_step(tmp_path: Path) -> None:
    items = [{"role": "user", "content": "go"}, CALL, OUT, {**CALL, "call_id": "c2"}, {**OUT, "call_id": "c2"}]
    (conv,) = read(_write(tmp_path, {"model": "m", "input": items}), FMT).conversations
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant", "tool"]


def test_string_input_and_bad_item(tmp_path: Path) -> None:
    (conv,) = read(_write(tmp_path, {"model": "m", "input": "hello"}), FMT).conversations
    assert conv.messages[0].text == "hello"
    p = _write(tmp_path, {"model": "m", "input": [{"role": "user", "content": "a"}, {"type": 5}]}, "bad.json")
    expected = r"bad\.json:1: the document, input\[1\]: type should be a string, got int 5$"
    with pytest.raises(FormatError, match=expected):
        read(p, FMT)
    result = read(p, FMT, lenient=True)
    assert [m.text for m in result.conversations[0].messages] == ["a"] and len(result.skipped) == 1
