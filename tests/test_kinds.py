"""Content kinds (sim.core.kinds): what a text is taken for, and a message's tokens split by kind adding up
to the engine's own count of it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from policies import make_policy
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Message, Part
from sim.core.kinds import kind_of, message_kinds
from sim.replay.engine import Engine
from sim.replay.strategies import conversations

READ_OUTPUT = "\n".join(f"{n:>6}→    value = compute({n})" for n in range(1, 40))
PYTHON = "def parse(x):\n    if not x:\n        return None\n    return int(x)\n"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"path": "a.py", "limit": 20}', "json"),
        (json.dumps([{"id": i} for i in range(5)], indent=2), "json"),
        ("{not json at all, only braces}", "prose"),
        (READ_OUTPUT, "code"),
        (PYTHON, "code"),
        ("The tests pass now. I changed the parser so that an empty string gives None.", "prose"),
        ("Summary:\n1. The user asked for a fix.\n2. I fixed the parser.\n3. Tests pass.", "prose"),
        ("x = 1", "prose"),  # one line is too little to call code
        ("", "prose"),
    ],
)
def test_kind_of(text: str, kind: str) -> None:
    assert kind_of(text) == kind


@settings(max_examples=40, deadline=None)
@given(conversations())
def test_kinds_add_up_to_the_engines_count_of_each_message(conv: Conversation) -> None:
    engine = Engine(make_policy("none"), conv, RunConfig(accounting="counted"))
    for m in conv.messages:
        assert sum(message_kinds(m, engine.tok.count)) == engine.measure.raw_tokens(m)


def test_a_tool_calls_arguments_are_json_and_its_framing_prose() -> None:
    engine = Engine(make_policy("none"), Conversation("k", (Message("u", "user", (Part("text", "hi"),)),)), RunConfig())
    count = engine.tok.count
    call = Message("a", "assistant", (Part("tool_call", call_id="c", name="Read", args='{"file_path": "x.py"}'),))
    prose, code, js = message_kinds(call, count)
    assert code == 0 and js == count('{"file_path": "x.py"}') and prose == engine.measure.raw_tokens(call) - js
