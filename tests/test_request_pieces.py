"""Request pieces: the summariser's transcript is counted in pieces (cutting pieces must give the same text as
cutting the whole), and validation resumed from a saved validator state must judge as from scratch."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.core.conversation import Message, Part
from sim.core.errors import InvalidRequest
from sim.core.model import ModelConfig
from sim.core.state import Ledger
from sim.core.view import Rule, View, edited
from sim.replay import request
from sim.replay.request import RequestBuilder, flat_pieces, head_pieces, tail_pieces
from sim.replay.strategies import conversations, views

pieces_st = st.lists(st.text(alphabet="ab \n…", max_size=12), min_size=1, max_size=8)


@given(pieces_st, st.integers(min_value=1, max_value=120))
def test_head_pieces_are_the_head_of_the_joined_text(pieces: list[str], n: int) -> None:
    assert "".join(head_pieces(pieces, n)) == "".join(pieces)[:n]


@given(pieces_st, st.integers(min_value=1, max_value=120))
def test_tail_pieces_are_the_tail_of_the_joined_text(pieces: list[str], n: int) -> None:
    assert "".join(tail_pieces(pieces, n)) == "".join(pieces)[-n:]


def test_flat_pieces_keep_part_texts_whole_and_join_to_the_flattened_message() -> None:
    m = Message(
        "m1",
        "tool",
        (
            Part("tool_result", "BIG OUTPUT", call_id="c1", name="read_file", is_error=True),
            Part("tool_result", "second", call_id="c2", name="grep"),
        ),
    )
    pieces = flat_pieces(m)
    assert "BIG OUTPUT" in pieces and "second" in pieces
    assert "".join(pieces) == "user: [read_file error BIG OUTPUT]\n[grep result second]"
    cleared = edited(m, (Rule(text="[cleared]"),))
    assert cleared is not None
    assert "".join(flat_pieces(cleared)) == "user: [read_file error [cleared]]\n[grep result [cleared]]"


# -- validation resumed from a saved state agrees with validation from scratch --------------------------------
_RULES = (
    Rule(kinds=frozenset({"thinking"}), action="drop"),
    Rule(kinds=frozenset({"tool_result"}), action="drop"),
    Rule(kinds=frozenset({"tool_result", "tool_call"}), action="drop"),
    Rule(kinds=frozenset({"tool_result"}), text="[cleared]"),
    Rule(action="drop"),
)


def _outcome(builder: RequestBuilder, view: View) -> str:
    try:
        builder.validate(view, None)
    except InvalidRequest as e:
        builder.reset()  # as the engine does after a rejected request
        return str(e)
    return "ok"


@settings(
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), provider=st.sampled_from(("anthropic", "openai")))
def test_validation_resumed_from_a_checkpoint_agrees_with_validation_from_scratch(
    data: st.DataObject, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One builder validating a run of views (messages appended between them) resumes from saved validator
    states; each outcome, accepted or the provider's exact complaint, is that of a new builder."""
    monkeypatch.setattr(request, "CHECKPOINT_EVERY", 2)  # save often, so that resuming is exercised
    c = data.draw(conversations(max_turns=12))
    ledger = Ledger()
    model = ModelConfig(provider=provider)  # type: ignore[arg-type]
    incremental = RequestBuilder(ledger, model, has_system=True)
    for step in range(data.draw(st.integers(1, 6))):
        for m in c.messages[len(ledger.messages) : len(ledger.messages) + data.draw(st.integers(1, 8))]:
            ledger.append(m, m.chars, 0)
        view = data.draw(views(len(ledger.messages), _RULES), label=f"view {step}")
        assert _outcome(incremental, view) == _outcome(RequestBuilder(ledger, model, has_system=True), view)
