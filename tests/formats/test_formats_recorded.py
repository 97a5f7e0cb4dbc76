"""The importers on the real recordings in ``../shared/recorded`` (skipped, saying why, when absent).

These pin what the recordings are known to hold, so a change in an importer that loses structure
(a compaction, usage, a merged response) fails here and not later in a sweep.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from sim.core.conversation import Conversation, validate
from sim.formats import read
from sim.formats.native import dumps

LONG = {
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46": {"compaction": 167117, "calls": 197},
    "258c7280-ae70-4798-800f-63464d01a85d": {"compaction": 167094, "calls": 186},
}
SMALL = ["short", "subagent", "tool_heavy"]


def need(path: Path) -> Path:
    """``path`` if that recording exists, else skip the test naming the missing file."""
    if not path.exists():
        pytest.skip(f"recording {path} is not present")
    return path


def _round_trip(tmp_path: Path, convs: list[Conversation]) -> None:
    """Every imported conversation survives the native format unchanged, byte for byte too."""
    path = tmp_path / "rt.jsonl"
    text = "".join(dumps(c) for c in convs)
    path.write_text(text, encoding="utf-8")
    back = read(path, "native")
    assert back.skipped == []
    assert back.conversations == convs
    assert "".join(dumps(c) for c in back.conversations) == text


@pytest.mark.parametrize("session", sorted(LONG))
def test_long_claude_code_session(recorded: Path, tmp_path: Path, session: str) -> None:
    result = read(need(recorded / "claude-code" / f"{session}.jsonl"), "claude-code")
    assert result.skipped == []
    (conv,) = result.conversations
    assert conv.id == session
    assert validate(conv) == []
    assistants = [m for m in conv.messages if m.role == "assistant"]
    assert all(m.usage is not None and m.usage.prompt_tokens > 0 for m in assistants)
    api_ids = [m.meta["api_id"] for m in assistants]
    assert len(api_ids) == len(set(api_ids)), "one API response must be one message"
    assert sum(len(m.calls) for m in conv.messages) == LONG[session]["calls"]
    (comp,) = conv.meta["compactions"]
    assert comp["trigger"] == "auto" and comp["pre_tokens"] == LONG[session]["compaction"]
    after = conv.messages[comp["index"]]
    assert after.role == "user" and after.meta["compact_summary"] is True
    assert after.meta["compact_boundary"]["pre_tokens"] == LONG[session]["compaction"]
    assert after.text.startswith("This session is being continued")
    # the reply before the boundary saw a prompt near preTokens; the one after, a much smaller one
    before = [m for m in conv.messages[: comp["index"]] if m.usage][-1]
    first_after = next(m for m in conv.messages[comp["index"] :] if m.usage)
    assert before.usage is not None and first_after.usage is not None
    assert abs(before.usage.prompt_tokens - comp["pre_tokens"]) < 5_000
    assert first_after.usage.prompt_tokens < comp["pre_tokens"] / 3
    assert conv.meta["skipped_records"]["progress"] > 1000
    _round_trip(tmp_path, [conv])


def test_fa812bfe_compaction_is_the_known_one(recorded: Path) -> None:
    path = need(recorded / "claude-code" / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    (conv,) = read(path, "claude-code").conversations
    assert [c["pre_tokens"] for c in conv.meta["compactions"]] == [167117]


@pytest.mark.parametrize("name", SMALL)
def test_small_claude_code_sessions(recorded: Path, tmp_path: Path, name: str) -> None:
    result = read(need(recorded / "claude-code" / f"{name}.jsonl"), "claude-code")
    (conv,) = result.conversations
    assert validate(conv) == []
    assert any(m.role == "assistant" and m.usage for m in conv.messages)
    api_ids = [m.meta["api_id"] for m in conv.messages if m.role == "assistant"]
    assert len(api_ids) == len(set(api_ids))
    _round_trip(tmp_path, [conv])


def test_subagent_transcripts(recorded: Path, tmp_path: Path) -> None:
    files = sorted((recorded / "claude-code").glob("*/subagents/*.jsonl"))
    if not files:
        pytest.skip(f"no subagent transcripts under {recorded / 'claude-code'}")
    for path in files:
        (conv,) = read(path, "claude-code").conversations
        assert conv.meta["subagent"] is True
        assert conv.id.endswith(f"/agent-{conv.meta['agent_id']}")
        assert validate(conv) == []
        _round_trip(tmp_path, [conv])


def test_tau_bench(recorded: Path, tmp_path: Path) -> None:
    result = read(need(recorded / "tau-bench" / "gpt-4o-airline.json"), "openai-chat")
    assert result.skipped == []
    convs = result.conversations
    assert len(convs) == 200
    assert len({c.id for c in convs}) == 200
    assert sum(len(m.calls) for c in convs for m in c.messages) == 1164
    roles = collections.Counter(m.role for c in convs for m in c.messages)
    assert roles == {"assistant": 2454, "user": 1490, "tool": 1164, "system": 200}
    for c in convs:
        assert validate(c) == []
        assert c.messages[0].role == "system"
        assert 6 <= len(c.messages) <= 62
    assert all(r.name for c in convs for m in c.messages for r in m.results)
    _round_trip(tmp_path, convs)
