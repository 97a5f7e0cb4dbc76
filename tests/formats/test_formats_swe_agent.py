"""SWE-agent ``.traj`` importer: the real sample trajectories, the golden ones, and malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.core.conversation import validate
from sim.core.errors import FormatError
from sim.formats import read
from tests.formats.test_formats_recorded import _round_trip, need

GPT4_TOTALS = {  # info.model_stats of the three real GPT-4 runs, per FORMATS.md
    "gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95___6e44b9__sweagenttestrepo-1c2844": 7141,
    "gpt4__swe-agent__test-repo__default_from_url__t-0.00__p-0.95__swe-agent__test-repo-i1": 52861,
    "gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__pydicom__pydicom-1458": 122612,
}


def _trajs(recorded: Path) -> list[Path]:
    files = sorted((recorded / "swe-agent").glob("*.traj"))
    if not files:
        pytest.skip(f"no SWE-agent trajectories under {recorded / 'swe-agent'}")
    return files


def test_every_recorded_trajectory_imports_cleanly(recorded: Path, tmp_path: Path) -> None:
    convs = []
    for path in _trajs(recorded):
        result = read(path, "swe-agent")
        assert result.skipped == [], path.name
        (conv,) = result.conversations
        assert validate(conv) == []
        assert conv.messages[0].role == "system"
        assert all(m.usage is None for m in conv.messages), "SWE-agent records no per-request usage"
        history = json.loads(path.read_text(encoding="utf-8"))["history"]
        assert len(conv.messages) == len(history)
        convs.append(conv)
    _round_trip(tmp_path, convs)


@pytest.mark.parametrize("stem", sorted(GPT4_TOTALS))
def test_gpt4_runs_keep_their_recorded_totals(recorded: Path, stem: str) -> None:
    (conv,) = read(need(recorded / "swe-agent" / f"{stem}.traj"), "swe-agent").conversations
    totals = conv.meta["recorded_totals"]
    assert totals["tokens_sent"] == GPT4_TOTALS[stem]
    assert totals["api_calls"] > 0 and totals["tokens_received"] > 0
    assistants = sum(1 for m in conv.messages if m.role == "assistant")
    assert assistants <= totals["api_calls"]  # a retried or failed call is charged but leaves no message


def test_function_calling_trajectory_pairs_calls_and_results(recorded: Path) -> None:
    path = need(recorded / "swe-agent" / "demonstrations__function_calling_simple.traj")
    (conv,) = read(path, "swe-agent").conversations
    assert conv.meta["function_calling"] is True
    calls = [p for m in conv.messages for p in m.calls]
    results = [p for m in conv.messages for p in m.results]
    assert len(calls) == 5 and [r.call_id for r in results] == [c.call_id for c in calls]
    assert [r.name for r in results] == [c.name for c in calls]
    assert calls[0].name == "find_file" and json.loads(calls[0].args or "") == {"file_name": "missing_colon.py"}


def test_text_action_trajectory_has_no_calls(recorded: Path) -> None:
    (conv,) = read(need(recorded / "swe-agent" / "crypto__katy.traj"), "swe-agent").conversations
    assert conv.meta["function_calling"] is False
    assert not any(m.calls for m in conv.messages)
    assert [m.role for m in conv.messages[1:5]] == ["user", "assistant", "user", "assistant"]
    assert all("action" in m.meta for m in conv.messages if m.role == "assistant")


def test_golden_text_trajectory(golden: Path) -> None:
    (conv,) = read(golden / "swe_agent.traj", "swe-agent").conversations
    assert conv.meta["recorded_totals"]["tokens_sent"] == 12345
    assert conv.meta["demo_messages"] == 1
    later_system = conv.messages[5]
    assert later_system.role == "user" and later_system.meta["source_role"] == "system"


def test_golden_function_calling_trajectory(golden: Path) -> None:
    (conv,) = read(golden / "swe_agent_fc.traj", "swe-agent").conversations
    first = conv.messages[2]
    assert [p.kind for p in first.parts] == ["thinking", "text", "tool_call"]
    assert conv.messages[1].parts[1].text == "[image]"
    last = conv.messages[-1]
    assert [p.kind for p in last.parts] == ["tool_call"] and last.calls[0].args == "{}"  # a dict, as JSON


# --- malformed input ---------------------------------------------------------------------------


def _doc(history: list[object]) -> dict[str, object]:
    return {"history": history, "info": {"model_stats": {"tokens_sent": 1}}}


GOOD = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "task"},
    {"role": "assistant", "content": "go", "tool_calls": [{"id": "c1", "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "content": "out", "tool_call_ids": ["c1"]},
    {"role": "assistant", "content": "done"},
]


def _write(tmp_path: Path, doc: object, name: str = "x.traj") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"role": "tool", "content": "orphan", "tool_call_ids": ["nope"]}, "answers no call"),
        ({"role": "tool", "content": "no ids"}, "tool_call_ids"),
        ({"role": "assistant", "content": 5}, "content"),
        ({"role": "robot", "content": "x"}, "role 'robot'"),
        ({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "ls"}}]}, "'id'"),
    ],
)
def test_bad_entry_is_an_error_or_a_skip(tmp_path: Path, entry: dict[str, object], problem: str) -> None:
    path = _write(tmp_path, _doc([*GOOD, entry, {"role": "user", "content": "after"}]))
    with pytest.raises(FormatError) as info:
        read(path, "swe-agent")
    assert problem in str(info.value) and str(path) in str(info.value)
    result = read(path, "swe-agent", lenient=True)
    (conv,) = result.conversations
    assert len(result.skipped) == 1
    assert conv.messages[-1].text == "after" and len(conv.messages) >= len(GOOD)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"  \n",
        b'{"history": [{"role": "system", "content": "a"}',
        b"[1, 2]",
        b'{"trajectory": []}',
        b'{"history": []}',
    ],
    ids=["empty", "blank", "truncated", "list", "no-history", "empty-history"],
)
def test_unreadable_document_stops_in_both_modes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "x.traj"
    path.write_bytes(data)
    for lenient in (False, True):
        with pytest.raises(FormatError):
            read(path, "swe-agent", lenient=lenient)


def test_bad_utf8_is_named_strictly_and_replaced_leniently(tmp_path: Path) -> None:
    path = tmp_path / "x.traj"
    path.write_bytes(json.dumps(_doc(GOOD)).encode().replace(b"task", b"t\xffsk"))
    with pytest.raises(FormatError, match="UTF-8"):
        read(path, "swe-agent")
    result = read(path, "swe-agent", lenient=True)
    assert "\ufffd" in result.conversations[0].messages[1].text
    assert result.skipped[0].reason.startswith("repaired")
