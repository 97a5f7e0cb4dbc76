"""mini-swe-agent importer: the two hand-written trajectories (text mode, tool-call mode) and bad input.

There is no mini-swe-agent recording in ``../shared/recorded``; the golden inputs follow the layout
that ``minisweagent/run/utils/save.py`` (1.x) and ``DefaultAgent.serialize`` (2.x) write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.core.errors import FormatError
from sim.formats import read


def test_text_mode_usage_is_per_call_and_never_invented(golden: Path) -> None:
    result = read(golden / "mini_swe_agent.traj.json", "mini-swe-agent")
    assert result.skipped == []
    (conv,) = result.conversations
    assert conv.id == "acme__widget-42"  # instance_id, when the run wrote one
    assistants = [m for m in conv.messages if m.role == "assistant"]
    assert [m.usage.prompt_tokens if m.usage else None for m in assistants] == [1200, 1290, 1320]
    first = assistants[0].usage
    assert first is not None and (first.input_tokens, first.cache_write_tokens, first.output_tokens) == (10, 1190, 40)
    assert all(m.usage is None for m in conv.messages if m.role != "assistant")
    assert conv.meta["recorded_totals"] == {"api_calls": 2, "instance_cost": 0.0123}
    assert conv.meta["model_name"] == "anthropic/claude-sonnet-4-20250514"


def test_tool_call_mode_pairs_by_tool_call_id_and_drops_exit(golden: Path) -> None:
    (conv,) = read(golden / "mini_swe_agent_toolcall.traj.json", "mini-swe-agent").conversations
    assert conv.id == "mini_swe_agent_toolcall"  # no instance_id: the file name without .traj.json
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "tool"]
    call = conv.messages[2]
    assert [p.call_id for p in call.calls] == ["call_a", "call_b"]
    assert call.usage is not None and (call.usage.input_tokens, call.usage.cache_read_tokens) == (180, 1920)
    assert conv.messages[4].meta["returncode"] == 1
    assert conv.meta["exit_messages"] == 1 and conv.meta["trajectory_format"] == "mini-swe-agent-1.1"


def _traj(messages: list[object], fmt: object = "mini-swe-agent-1") -> dict[str, object]:
    return {"info": {"model_stats": {"api_calls": 1}}, "messages": messages, "trajectory_format": fmt}


def _reply(usage: dict[str, object]) -> dict[str, object]:
    return {"role": "assistant", "content": "x", "extra": {"response": {"usage": usage}}}


GOOD = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "task"},
    {"role": "assistant", "content": "```bash\nls\n```", "extra": {"response": {"usage": {"prompt_tokens": 5}}}},
    {"role": "user", "content": "out"},
]


def _write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"role": "tool", "tool_call_id": "nope", "content": "orphan"}, "answers no call"),
        ({"role": "tool", "content": "no id"}, "tool_call_id"),
        (_reply({"prompt_tokens": "many"}), "prompt_tokens"),
        (_reply({"prompt_tokens": -3}), "negative"),
        ({"content": "no role"}, "'role'"),
    ],
)
def test_bad_message_is_an_error_or_a_skip(tmp_path: Path, entry: dict[str, object], problem: str) -> None:
    path = _write(tmp_path, _traj([*GOOD, entry, {"role": "user", "content": "after"}]))
    with pytest.raises(FormatError) as info:
        read(path, "mini-swe-agent")
    assert problem in str(info.value)
    result = read(path, "mini-swe-agent", lenient=True)
    (conv,) = result.conversations
    assert len(result.skipped) == 1 and conv.messages[-1].text == "after"
    assert conv.messages[2].usage is not None and conv.messages[2].usage.input_tokens == 5


@pytest.mark.parametrize(
    "doc",
    [
        _traj(GOOD, fmt="swe-agent"),
        _traj(GOOD, fmt=None),
        _traj([]),
        {"messages": "x", "trajectory_format": "mini-swe-agent-1"},
        [],
    ],
    ids=["other-format", "no-format", "no-messages", "messages-not-list", "list"],
)
def test_not_a_mini_trajectory_stops(tmp_path: Path, doc: object) -> None:
    path = _write(tmp_path, doc)
    for lenient in (False, True):
        with pytest.raises(FormatError):
            read(path, "mini-swe-agent", lenient=lenient)


def test_truncated_and_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    for data in (b"", json.dumps(_traj(GOOD)).encode()[:-20]):
        path.write_bytes(data)
        with pytest.raises(FormatError):
            read(path, "mini-swe-agent", lenient=True)
