"""support-chat at its default length reaches compaction in a 200K window.

The scenario asks whether what the customer said at the start survives compaction; at a length that
never crosses a trigger the question is never asked. Checked on the prompt's size (tokenizer counts,
no engine run, so it stays fast): the whole script at the default length is past cloudflare-os's 0.85
trigger of the default model's input budget well before its closing questions.
"""

from __future__ import annotations

import pytest

from sim.core.errors import EncodingUnavailable
from sim.core.model import ModelConfig
from sim.core.tokenizers import get_tokenizer
from sim.scenarios import _load, generate

TRIGGER_RATIO = 0.85  # cloudflare-os and sliding-window's default trigger


@pytest.fixture(scope="module")
def count():  # type: ignore[no-untyped-def]
    _load()
    try:
        return get_tokenizer("cl100k_base").count
    except EncodingUnavailable as exc:
        pytest.skip(str(exc))


def test_default_length_crosses_the_trigger_of_a_200k_window_before_the_closing(count) -> None:  # type: ignore[no-untyped-def]
    conv = generate("support-chat", 0)
    trigger = TRIGGER_RATIO * ModelConfig().input_budget
    assert ModelConfig().context_window == 200_000
    running, crossed = 0, None
    for i, m in enumerate(conv.messages):
        running += sum(count(p.text) for p in m.parts)
        if running >= trigger:
            crossed = i
            break
    assert crossed is not None, f"{running} tokens never reach the trigger at {trigger:.0f}"
    # the closing questions (the last dozen messages) need the opening's facts: they come after the crossing
    assert crossed < len(conv.messages) - 12
    index = conv.index()
    needed_after = [f for f in conv.facts if index[f.source] < 10 and any(index[n] > crossed for n in f.needed_at)]
    assert needed_after, "no fact from the opening is needed after the trigger is crossed"


def test_a_short_chat_is_still_one_parameter_away() -> None:
    _load()
    conv = generate("support-chat", 0, turns=80)
    assert sum(m.role == "user" for m in conv.messages) == 80
