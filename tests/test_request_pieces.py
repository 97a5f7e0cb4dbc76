"""The summariser's transcript is counted in pieces; cutting pieces must give the same text as cutting the whole."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sim.core.conversation import Message, Part
from sim.core.view import Rule, edited
from sim.replay.request import flat_pieces, head_pieces, tail_pieces

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
