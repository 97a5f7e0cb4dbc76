"""The claude-code importer on small transcripts written here, one trap at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sim.core.errors import FormatError
from sim.formats import read

SESSION = "sess-1"


def _rec(kind: str, uuid: str, content: Any = None, **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": kind, "uuid": uuid, "sessionId": SESSION, "isSidechain": False, **extra}
    if content is not None:
        rec["message"] = {"role": kind, "content": content}
    return rec


def _asst(uuid: str, api_id: str, block: dict[str, Any], out: int = 1, **extra: Any) -> dict[str, Any]:
    rec = _rec("assistant", uuid, [block], **extra)
    rec["message"].update(
        id=api_id,
        model="claude-x",
        usage={
            "input_tokens": 2,
            "output_tokens": out,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 7,
        },
    )
    return rec


def _use(cid: str, name: str = "Bash") -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": {"b": 2, "a": 1}}


def _result(cid: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": content, **extra}


def _write(tmp_path: Path, records: list[Any], name: str = "s.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return p


def test_split_response_merged_with_last_usage(tmp_path: Path) -> None:
    recs = [
        _rec("user", "u1", "hi"),
        _asst("a1", "m1", {"type": "thinking", "thinking": "t", "signature": "s"}),
        _asst("a2", "m1", _use("c1")),
        _rec("user", "r1", [_result("c1", [{"type": "text", "text": "x"}, {"type": "image", "source": {}}])]),
        _asst("a3", "m1", _use("c2", "Read"), out=50),
        _rec("user", "r2", [_result("c2", None, is_error=True)]),
    ]
    (conv,) = read(_write(tmp_path, recs), "claude-code").conversations
    assert [m.id for m in conv.messages] == ["u1", "a1", "r1", "r2"]
    merged = conv.messages[1]
    assert [p.kind for p in merged.parts] == ["thinking", "tool_call", "tool_call"]
    assert merged.parts[1].args == '{"a": 1, "b": 2}'
    assert merged.usage is not None
    assert (merged.usage.input_tokens, merged.usage.output_tokens) == (2, 50)
    assert (merged.usage.cache_read_tokens, merged.usage.cache_write_tokens) == (100, 7)
    assert conv.messages[2].results[0].text == "x\n[image]"
    assert conv.messages[2].results[0].name == "Bash"
    assert conv.messages[3].results[0].is_error


def test_same_api_id_after_user_text_stays_apart(tmp_path: Path) -> None:
    recs = [
        _rec("user", "u1", "hi"),
        _asst("a1", "m1", {"type": "text", "text": "x"}),
        _rec("user", "u2", "more"),
        _asst("a2", "m1", {"type": "text", "text": "y"}),
    ]
    (conv,) = read(_write(tmp_path, recs), "claude-code").conversations
    assert [m.id for m in conv.messages] == ["u1", "a1", "u2", "a2"]
    assert conv.messages[3].meta["api_id_repeated"] is True


def test_mixed_user_blocks_and_commands(tmp_path: Path) -> None:
    recs = [
        _rec("user", "u0", "<command-message>init</command-message>\n<command-name>/init</command-name>"),
        _asst("a1", "m1", _use("c1")),
        _rec("user", "u1", [_result("c1"), {"type": "text", "text": "and also"}]),
    ]
    (conv,) = read(_write(tmp_path, recs), "claude-code").conversations
    assert conv.messages[0].command == "init" and conv.messages[0].parts[0].text == ""
    assert [(m.id, m.role) for m in conv.messages[2:]] == [("u1", "tool"), ("u1~text", "user")]


def test_sidechains_skipped_in_main_file_kept_in_subagent_file(tmp_path: Path) -> None:
    side = _rec("user", "s1", "sub task", isSidechain=True, agentId="abc")
    main = [_rec("user", "u1", "hi"), side, _asst("a1", "m1", {"type": "text", "text": "x"})]
    (conv,) = read(_write(tmp_path, main), "claude-code").conversations
    assert [m.id for m in conv.messages] == ["u1", "a1"]
    assert conv.meta["sidechain_records"] == 1
    sub = [side, {**_asst("a2", "m2", {"type": "text", "text": "y"}), "isSidechain": True, "agentId": "abc"}]
    (conv,) = read(_write(tmp_path, sub, "agent-abc.jsonl"), "claude-code").conversations
    assert conv.id == f"{SESSION}/agent-abc"
    assert conv.meta["subagent"] is True and len(conv.messages) == 2


def test_compaction_marks_next_message(tmp_path: Path) -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "compactMetadata": {"trigger": "auto", "preTokens": 1234},
    }
    recs = [
        _rec("user", "u1", "hi"),
        _asst("a1", "m1", {"type": "text", "text": "x"}),
        boundary,
        {"type": "progress", "uuid": "p1"},
        _rec("user", "u2", "summary", isCompactSummary=True),
        _asst("a2", "m2", {"type": "text", "text": "y"}),
        boundary,
    ]
    (conv,) = read(_write(tmp_path, recs), "claude-code").conversations
    assert conv.messages[2].meta["compact_boundary"] == {"trigger": "auto", "pre_tokens": 1234}
    assert conv.messages[2].meta["compact_summary"] is True
    assert conv.meta["compactions"] == [
        {"index": 2, "trigger": "auto", "pre_tokens": 1234},
        {"index": 4, "trigger": "auto", "pre_tokens": 1234},
    ]


def test_interrupted_call_always_repaired_and_listed(tmp_path: Path) -> None:
    recs = [
        _rec("user", "u1", "hi"),
        _asst("a1", "m1", _use("c1")),
        _asst("a2", "m1", _use("c2")),
        _rec("user", "r1", [_result("c2")]),
        _rec("user", "u2", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
    ]
    for lenient in (False, True):
        result = read(_write(tmp_path, recs), "claude-code", lenient=lenient)
        (conv,) = result.conversations
        assert [m.id for m in conv.messages] == ["u1", "a1", "r1", "a1~aborted", "u2"]
        assert conv.messages[3].results[0].call_id == "c1"
        (skip,) = result.skipped
        assert skip.reason.startswith("repaired:") and skip.line == 2


def test_orphan_result(tmp_path: Path) -> None:
    recs = [_rec("user", "u1", "hi"), _rec("user", "r1", [_result("nope")])]
    p = _write(tmp_path, recs)
    with pytest.raises(FormatError, match=r"s\.jsonl:2: .*'nope' answers no call"):
        read(p, "claude-code")
    result = read(p, "claude-code", lenient=True)
    assert [m.id for m in result.conversations[0].messages] == ["u1"]


def test_bad_block_names_line_and_lenient_keeps_rest(tmp_path: Path) -> None:
    recs = [
        _rec("user", "u1", "hi"),
        _asst("a1", "m1", {"type": "tool_use", "id": 7, "name": "x"}),
        _asst("a2", "m2", {"type": "text", "text": "fine"}),
    ]
    p = _write(tmp_path, recs)
    with pytest.raises(FormatError, match=r"s\.jsonl:2: record: .*'id' should be a string"):
        read(p, "claude-code")
    result = read(p, "claude-code", lenient=True)
    assert [m.id for m in result.conversations[0].messages] == ["u1", "a2"]
    assert [s.line for s in result.skipped] == [2]


def test_unknown_record_types_are_named_not_fatal(tmp_path: Path) -> None:
    recs = [
        _rec("user", "u1", "hi"),
        {"type": "attachment", "uuid": "x"},
        {"type": "summary", "summary": "t"},
    ]
    (conv,) = read(_write(tmp_path, recs), "claude-code").conversations
    assert conv.meta["unknown_record_types"] == ["attachment"]
    assert conv.meta["skipped_records"] == {"attachment": 1, "summary": 1}


def test_background_task_notifications_are_marked(tmp_path: Path) -> None:
    """A user record that reports a finished background task, as a string or a text block, is marked
    ``task_notification`` (the prompt cache model rewrites the conversation there); other user text is not."""
    note = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
    recs = [
        _rec("user", "u1", "Run the tests in the background"),
        _asst("a1", "m1", {"type": "text", "text": "started"}),
        _rec("user", "u2", note),
        _asst("a2", "m2", {"type": "text", "text": "they pass"}),
        _rec("user", "u3", [{"type": "text", "text": "  " + note}]),
        _asst("a3", "m3", {"type": "text", "text": "again"}),
        _rec("user", "u4", "what does <task-notification> mean?"),
    ]
    conv = read(_write(tmp_path, recs), "claude-code").conversations[0]
    marked = {m.id for m in conv.messages if m.meta.get("task_notification")}
    assert marked == {"u2", "u3"}
