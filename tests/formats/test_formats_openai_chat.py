"""The openai-chat importer: every file shape, roles, legacy functions, and call pairing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sim.core.errors import FormatError
from sim.formats import read
from sim.formats._common import ABORTED_TEXT

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TURN = [
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "done"},
    {"role": "assistant", "content": "ok"},
]


def _write(tmp_path: Path, value: Any, name: str = "c.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(value), encoding="utf-8")
    return p


def test_message_list(tmp_path: Path) -> None:
    (conv,) = read(_write(tmp_path, TURN, "trace.json"), "openai-chat").conversations
    assert conv.id == "trace"
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[2].results[0].name == "f"  # looked up from the call


def test_object_list_and_jsonl(tmp_path: Path) -> None:
    objs = [{"id": "one", "messages": TURN}, {"messages": TURN}]
    convs = read(_write(tmp_path, objs), "openai-chat").conversations
    assert [c.id for c in convs] == ["one", "c-1"]
    p = tmp_path / "many.jsonl"
    p.write_text("\n".join(json.dumps(o) for o in objs) + "\n", encoding="utf-8")
    assert [c.id for c in read(p, "openai-chat").conversations] == ["one", "many-2"]
    p2 = tmp_path / "many.txt"  # JSONL found by content, not by suffix
    p2.write_text(p.read_text(encoding="utf-8"), encoding="utf-8")
    assert len(read(p2, "openai-chat").conversations) == 2


def test_files_and_audio_are_placeholders_not_their_base64(tmp_path: Path) -> None:
    """A PDF or a recording inline (pydantic-ai's cassettes hold both) counts as the provider counts media,
    never as the text of its encoding: one such block was 17,787 characters of base64."""
    blob = "JVBERi0xLjQK" * 1_000
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "read this"},
                {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{blob}"}},
                {"type": "input_audio", "input_audio": {"data": blob, "format": "wav"}},
            ],
        }
    ]
    (conv,) = read(_write(tmp_path, msgs), "openai-chat").conversations
    assert [p.text for p in conv.messages[0].parts] == ["read this", "[file]", "[audio]"]


def test_roles_and_content_blocks(tmp_path: Path) -> None:
    msgs = [
        {"role": "developer", "content": [{"type": "text", "text": "rules"}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}],
        },
        {"role": "developer", "content": "later rule"},
        {"role": "assistant", "content": "", "reasoning_content": "think"},
    ]
    (conv,) = read(_write(tmp_path, msgs), "openai-chat").conversations
    assert [m.role for m in conv.messages] == ["system", "user", "user", "assistant"]
    assert [p.text for p in conv.messages[1].parts] == ["look", "[image]"]
    assert conv.messages[2].meta == {"source_role": "developer"}
    assert [p.kind for p in conv.messages[3].parts] == ["thinking"]


def test_tools_and_legacy_functions(tmp_path: Path) -> None:
    value = {
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": {"z": 0, "y": 1}}}}],
        "functions": [{"name": "g", "description": "legacy"}],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "function_call": {"name": "g", "arguments": {"q": 1}}},
            {"role": "function", "name": "g", "content": "r"},
        ],
    }
    (conv,) = read(_write(tmp_path, value), "openai-chat").conversations
    assert [(t.name, t.parameters) for t in conv.tools] == [
        ("f", '{"a": {"y": 1, "z": 0}, "b": 1}'),
        ("g", "{}"),
    ]
    call = conv.messages[1].calls[0]
    assert (call.call_id, call.args) == ("fc-1", '{"q": 1}')
    assert conv.messages[2].results[0].call_id == "fc-1"


def test_unanswered_call(tmp_path: Path) -> None:
    msgs = [TURN[0], TURN[1], {"role": "user", "content": "never mind"}]
    p = _write(tmp_path, msgs)
    with pytest.raises(FormatError, match=r"have no result before"):
        read(p, "openai-chat")
    result = read(p, "openai-chat", lenient=True)
    conv = result.conversations[0]
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "user"]
    aborted = conv.messages[2].results[0]
    assert (aborted.text, aborted.is_error, aborted.call_id) == (ABORTED_TEXT, True, "c1")
    (skip,) = result.skipped
    assert skip.reason.startswith("repaired:") and "c1" in skip.reason


def test_trailing_unanswered_call_is_kept(tmp_path: Path) -> None:
    (conv,) = read(_write(tmp_path, TURN[:2]), "openai-chat").conversations
    assert conv.messages[-1].calls


def test_result_without_call(tmp_path: Path) -> None:
    msgs = [TURN[0], {"role": "tool", "tool_call_id": "zz", "content": "?"}, TURN[3]]
    p = _write(tmp_path, msgs)
    with pytest.raises(FormatError, match=r"c\.json:1: .*tool result 'zz' answers no call"):
        read(p, "openai-chat")
    result = read(p, "openai-chat", lenient=True)
    assert [m.role for m in result.conversations[0].messages] == ["user", "assistant"]
    assert "zz" in result.skipped[0].reason


def test_bad_message_names_its_line(tmp_path: Path) -> None:
    p = tmp_path / "pretty.json"
    p.write_text(
        '[\n  {"role": "user", "content": "a"},\n  {"role": 5, "content": "b"},\n'
        '  {"role": "assistant", "content": "c"}\n]\n',
        encoding="utf-8",
    )
    with pytest.raises(FormatError, match=r"pretty\.json:3: the message list, message 1: .*'role' should be a string"):
        read(p, "openai-chat")
    result = read(p, "openai-chat", lenient=True)
    assert [m.text for m in result.conversations[0].messages] == ["a", "c"]
    assert [s.line for s in result.skipped] == [3]


def test_unknown_shape(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="has no 'messages'"):
        read(_write(tmp_path, {"conversation": []}), "openai-chat")
    with pytest.raises(FormatError, match="not a list or an object"):
        read(_write(tmp_path, 42), "openai-chat")
