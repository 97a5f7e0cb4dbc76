"""The codex-rollout importer on a rollout written from the facts of openai/codex's protocol crate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.core.errors import FormatError
from sim.formats import detect, read
from sim.formats._common import ABORTED_TEXT
from tests.formats._golden import check_golden

FMT = "codex-rollout"


def test_golden(golden: Path) -> None:
    sample = golden / "codex_rollout.jsonl"
    assert detect(sample) == FMT
    (conv,) = check_golden(sample, FMT).conversations
    assert conv.id == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert conv.messages[0].role == "system" and "AGENTS.md" in conv.messages[0].text
    assistants = [m for m in conv.messages if m.role == "assistant"]
    # one message per model response, each carrying its last_token_usage (input minus cached)
    assert [(m.usage.input_tokens, m.usage.cache_read_tokens) for m in assistants if m.usage] == [
        (1114, 4096),
        (500, 5120),
        (296, 5504),
        (900, 0),
    ]
    assert [len(m.calls) for m in assistants] == [2, 1, 0, 1]
    assert assistants[1].calls[0].name == "apply_patch" and assistants[3].calls[0].name == "local_shell"
    (comp,) = conv.meta["compactions"]
    assert conv.messages[comp["index"]].meta["compact_summary"] is True
    assert conv.meta["unattached_token_counts"] == 0  # the repeated count was recognised
    assert conv.meta["events"]["ghost_snapshot"] == 1 and conv.meta["models"] == ["gpt-5-codex"]


def _line(kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": "t", "type": kind, "payload": payload})


def test_interrupted_call_is_repaired_and_bad_line_named(tmp_path: Path) -> None:
    lines = [
        _line("session_meta", {"id": "s1", "cwd": "/", "cli_version": "0"}),
        _line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        _line("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        _line("response_item", {"type": "message", "role": "user", "content": "stop"}),
        _line("mystery", {}),
    ]
    p = tmp_path / "rollout-x.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"rollout-x\.jsonl:5: .*'mystery'"):
        read(p, FMT)
    result = read(p, FMT, lenient=True)
    (conv,) = result.conversations
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "user"]
    assert conv.messages[2].results[0].text == ABORTED_TEXT
    assert sorted(s.line for s in result.skipped) == [3, 5]
