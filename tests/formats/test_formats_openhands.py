"""OpenHands importers: event streams and completion logs, on the real samples, goldens and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.core.conversation import validate
from sim.core.errors import FormatError
from sim.formats import read
from sim.formats._common import BadRecord
from sim.formats.usage import any_usage
from tests.formats.test_formats_recorded import _round_trip, need

# --- event streams -----------------------------------------------------------------------------


def test_recorded_event_streams(recorded: Path, tmp_path: Path) -> None:
    files = sorted((recorded / "openhands" / "runtime_trajs").glob("*.json"))
    if not files:
        pytest.skip(f"no OpenHands event streams under {recorded / 'openhands'}")
    convs = []
    for path in files:
        result = read(path, "openhands-events")
        assert result.skipped == [], path.name
        (conv,) = result.conversations
        assert validate(conv) == []
        events = json.loads(path.read_text(encoding="utf-8"))
        called = [e for e in events if "action" in e and e.get("tool_call_metadata")]
        assert sum(len(m.calls) for m in conv.messages) == len(called)
        for m in conv.messages:  # usage exactly where a model response was recorded
            assert (m.usage is not None) == ("response_id" in m.meta)
        convs.append(conv)
    _round_trip(tmp_path, convs)


def test_gui_mode_stream_usage_and_bookkeeping(recorded: Path) -> None:
    path = need(recorded / "openhands" / "runtime_trajs" / "basic_gui_mode.json")
    (conv,) = read(path, "openhands-events").conversations
    assert conv.meta["skipped_events"] == {
        "action:change_agent_state": 1,
        "observation:agent_state_changed": 4,
        "observation:null": 3,
    }
    first = next(m for m in conv.messages if m.usage)
    assert first.usage is not None
    # litellm's prompt_tokens 3439 = 3435 written to the cache + 4 uncached
    assert (first.usage.prompt_tokens, first.usage.cache_write_tokens, first.usage.input_tokens) == (3439, 3435, 4)
    assert [m.role for m in conv.messages].count("tool") == 4


def test_golden_events_group_one_response_into_one_message(golden: Path) -> None:
    (conv,) = read(golden / "openhands_events.json", "openhands-events").conversations
    assert [t.name for t in conv.tools] == ["execute_bash", "finish"]
    roles = ["system", "user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    assert [m.role for m in conv.messages] == roles
    batch = conv.messages[2]
    assert batch.meta["actions"] == ["run", "run"] and [c.call_id for c in batch.calls] == ["toolu_1", "toolu_2"]
    assert batch.usage is not None and batch.usage.cache_write_tokens == 3482
    assert conv.messages[-1].calls[0].name == "finish"  # left open at the very end, as recorded


def _events(*extra: dict[str, object]) -> list[dict[str, object]]:
    return [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
        {"id": 1, "source": "agent", "action": "message", "args": {"content": "hello"}},
        *extra,
        {"id": 99, "source": "user", "action": "message", "args": {"content": "after"}},
    ]


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        ({"source": "user", "action": "message", "args": {"content": "no id"}}, "'id'"),
        (
            {
                "id": 5,
                "source": "agent",
                "observation": "run",
                "content": "x",
                "tool_call_metadata": {"tool_call_id": "ghost", "function_name": "run"},
            },
            "answers no call",
        ),
        ({"id": 5, "source": "agent", "action": "run", "args": "ls"}, "args"),
        ({"id": 5, "source": "agent"}, "neither"),
        ({"id": 1, "source": "user", "action": "message", "args": {"content": "dup"}}, "twice"),
        (
            {
                "id": 5,
                "source": "agent",
                "action": "run",
                "args": {},
                "tool_call_metadata": {
                    "tool_call_id": "c9",
                    "function_name": "run",
                    "model_response": {"id": "r", "choices": [{"message": {"content": "x"}}]},
                },
            },
            "not among the calls",
        ),
    ],
)
def test_bad_event_is_an_error_or_a_skip(tmp_path: Path, event: dict[str, object], problem: str) -> None:
    path = tmp_path / "events.json"
    path.write_text(json.dumps(_events(event)), encoding="utf-8")
    with pytest.raises(FormatError) as info:
        read(path, "openhands-events")
    assert problem in str(info.value)
    result = read(path, "openhands-events", lenient=True)
    (conv,) = result.conversations
    assert len(result.skipped) == 1 and conv.messages[-1].text == "after"


@pytest.mark.parametrize("data", [b"", b"[]", b"{}", b'[{"id": 0, "source": "user"', b"\xff\xfe[]"])
def test_unreadable_event_stream_stops(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "events.json"
    path.write_bytes(data)
    with pytest.raises(FormatError):
        read(path, "openhands-events")


def test_interrupted_call_is_repaired_when_the_user_speaks_again(tmp_path: Path) -> None:
    call = {
        "id": 2,
        "source": "agent",
        "action": "run",
        "args": {"command": "sleep 99", "thought": "wait"},
        "tool_call_metadata": {"tool_call_id": "c1", "function_name": "execute_bash"},
    }
    path = tmp_path / "events.json"
    path.write_text(json.dumps(_events(call)), encoding="utf-8")
    result = read(path, "openhands-events")
    (conv,) = result.conversations
    assert conv.messages[2].calls[0].args == '{"command": "sleep 99"}'  # rebuilt from args, thought as text
    assert conv.messages[3].meta["synthetic"] == "aborted"
    assert [s.reason.split(":")[0] for s in result.skipped] == ["repaired"]


# --- completion logs ---------------------------------------------------------------------------


def _logs(recorded: Path) -> list[Path]:
    files = sorted((recorded / "openhands" / "llm_data").glob("*/*.json"))
    if not files:
        pytest.skip(f"no OpenHands completion logs under {recorded / 'openhands' / 'llm_data'}")
    return files


def test_recorded_completion_logs(recorded: Path, tmp_path: Path) -> None:
    convs = []
    for path in _logs(recorded):
        result = read(path, "openhands-llm")
        assert result.skipped == [], path.name
        (conv,) = result.conversations
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert len(conv.messages) == len(doc["messages"]) + 1
        last = conv.messages[-1]
        assert last.role == "assistant" and last.meta["response"] is True
        assert last.usage is not None and last.usage.prompt_tokens == doc["response"]["usage"]["prompt_tokens"]
        assert last.usage.output_tokens == doc["response"]["usage"]["completion_tokens"]
        assert all(m.usage is None for m in conv.messages[:-1])
        assert [t.name for t in conv.tools] == [t["function"]["name"] for t in doc["tools"]]
        assert conv.meta["mock_function_calling"] == ("raw_response" in doc)
        convs.append(conv)
    _round_trip(tmp_path, convs)


def test_deepseek_log_reads_cache_hits_and_the_text_the_model_wrote(recorded: Path) -> None:
    logs = recorded / "openhands" / "llm_data" / "nonfncall-llm-logs"
    path = need(logs / "litellm_proxy__deepseek__deepseek-chat-1757015062.589.json")
    (conv,) = read(path, "openhands-llm").conversations
    last = conv.messages[-1]
    assert last.usage is not None and (last.usage.cache_read_tokens, last.usage.input_tokens) == (8000, 856)
    assert last.calls == () and "<function=str_replace_editor>" in last.text


def test_golden_completion_log(golden: Path) -> None:
    (conv,) = read(golden / "openhands_llm.json", "openhands-llm").conversations
    last = conv.messages[-1]
    assert last.usage is not None
    assert (last.usage.input_tokens, last.usage.cache_read_tokens, last.usage.cache_write_tokens) == (10, 2600, 340)
    assert conv.meta["recorded_prompt_tokens"] == 2950
    assert json.loads(conv.tools[0].parameters)["required"] == ["command", "path"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.pop("response"), "response"),
        (lambda d: d["response"].update(choices=[]), "no choices"),
        (lambda d: d["response"]["usage"].update(completion_tokens="9"), "completion_tokens"),
        (lambda d: d["messages"][3].update(tool_call_id="ghost"), "answers no call"),
        (lambda d: d["tools"][0].pop("function"), "function"),
    ],
)
def test_bad_completion_log(golden: Path, tmp_path: Path, change, problem: str) -> None:  # noqa: ANN001
    doc = json.loads((golden / "openhands_llm.json").read_text(encoding="utf-8"))
    change(doc)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(FormatError) as info:
        read(path, "openhands-llm")
    assert problem in str(info.value)
    result = read(path, "openhands-llm", lenient=True)
    assert len(result.skipped) >= 1
    assert all(validate(c) == [] for c in result.conversations)


@given(
    uncached=st.integers(0, 10**6),
    read_=st.integers(0, 10**6),
    write=st.integers(0, 10**6),
    out=st.integers(0, 10**5),
    style=st.sampled_from(["anthropic-via-litellm", "openai", "deepseek"]),
)
def test_litellm_usage_keeps_the_prompt_total(uncached: int, read_: int, write: int, out: int, style: str) -> None:
    """Whatever key holds the cache reads, the split adds back up to litellm's prompt_tokens."""
    if style != "anthropic-via-litellm":
        write = 0
    raw: dict[str, object] = {"prompt_tokens": uncached + read_ + write, "completion_tokens": out}
    if style == "anthropic-via-litellm":
        raw.update(
            cache_read_input_tokens=read_,
            cache_creation_input_tokens=write,
            prompt_tokens_details={"cached_tokens": read_},
        )
    elif style == "openai":
        raw["prompt_tokens_details"] = {"cached_tokens": read_}
    else:
        raw.update(prompt_cache_hit_tokens=read_, prompt_cache_miss_tokens=uncached)
    usage = any_usage(raw, "test")
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens) == (
        uncached,
        read_,
        write,
        out,
    )


def test_litellm_usage_other_shapes() -> None:
    assert any_usage(None, "x") is None
    anthropic = any_usage({"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 90}, "x")
    assert anthropic is not None and anthropic.prompt_tokens == 97
    raw = {"input_tokens": 100, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 60}}
    responses = any_usage(raw, "x")
    assert responses is not None and (responses.input_tokens, responses.cache_read_tokens) == (40, 60)
    with pytest.raises(BadRecord):
        any_usage([1], "x")
