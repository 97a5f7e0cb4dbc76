"""The mock provider's validation: it rejects what OpenAI and Anthropic reject."""

import pytest

from sim.core.errors import InvalidConfig, InvalidRequest, PromptTooLong
from sim.core.model import ModelConfig
from sim.replay.model import check_window, validate_anthropic, validate_openai


def call(cid: str) -> dict:
    return {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_openai_accepts_parallel_batch() -> None:
    validate_openai(
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
        ]
    )


@pytest.mark.parametrize(
    "msgs, match",
    [
        ([{"role": "user", "content": "u"}, {"role": "tool", "tool_call_id": "x", "content": "r"}], "does not answer"),
        (
            [{"role": "assistant", "content": "", "tool_calls": [call("a")]}, {"role": "user", "content": "u"}],
            "have no tool message",
        ),
        ([{"role": "assistant", "content": "", "tool_calls": [call("a")]}], "ends with tool calls"),
        # AI(tc1), AI(tc2), TM1, TM2: rejected by both providers (langchain-ai/langchain PR #34195)
        (
            [
                {"role": "assistant", "content": "", "tool_calls": [call("a")]},
                {"role": "assistant", "content": "", "tool_calls": [call("b")]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "tool", "tool_call_id": "b", "content": "2"},
            ],
            "have no tool message",
        ),
    ],
)
def test_openai_rejects(msgs: list, match: str) -> None:
    with pytest.raises(InvalidRequest, match=match):
        validate_openai(msgs)


def use(cid: str) -> dict:
    return {"type": "tool_use", "id": cid, "name": "f", "input": "{}"}


def result(cid: str) -> dict:
    return {"type": "tool_result", "tool_use_id": cid, "content": "r", "is_error": False}


def test_anthropic_merges_consecutive_user_messages() -> None:
    validate_anthropic(
        [
            {"role": "user", "content": [{"type": "text", "text": "u"}]},
            {"role": "assistant", "content": [use("a"), use("b")]},
            {"role": "user", "content": [result("a")]},
            {"role": "user", "content": [result("b")]},
        ]
    )


@pytest.mark.parametrize(
    "msgs, match",
    [
        ([{"role": "user", "content": [result("x")]}], "no corresponding tool_use"),
        (
            [
                {"role": "assistant", "content": [use("a")]},
                {"role": "user", "content": [{"type": "text", "text": "u"}]},
            ],
            "without tool_result",
        ),
        ([{"role": "assistant", "content": [use("a")]}], "ends with tool_use"),
    ],
)
def test_anthropic_rejects(msgs: list, match: str) -> None:
    with pytest.raises(InvalidRequest, match=match):
        validate_anthropic(msgs)


def test_window_includes_output_reserve() -> None:
    cfg = ModelConfig(context_window=10_000, output_reserve=1_000)
    check_window(9_000, cfg)
    with pytest.raises(PromptTooLong, match="9001 tokens"):
        check_window(9_001, cfg)


def test_model_config_validates() -> None:
    with pytest.raises(InvalidConfig, match="output_reserve"):
        ModelConfig(context_window=10_000, output_reserve=20_000)
