"""Which facts a text holds (``sim.replay.retention``): what an injected message or an old summary carries by its
text, read once per message. The index by first characters must find exactly what searching for every fact's text
finds, short facts, overlapping ones and facts longer than the text included."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from sim.core.conversation import Conversation, Fact, Message, Part
from sim.replay.retention import _facts_in, _text_index

_WORDS = st.text(st.sampled_from("abcé😀 "), max_size=8)


@given(st.lists(_WORDS, max_size=40), st.lists(_WORDS, max_size=30), st.booleans())
@example(["abc", *"qqqqqqqqq"], ["xabc"], False)  # a fact that ends the text, read by the index
@example(["abcd", "ab"], ["abc"], False)  # a fact longer than the text
def test_the_facts_a_text_holds_are_those_found_one_by_one(texts: list[str], pieces: list[str], long: bool) -> None:
    source = Message("u", "user", (Part("text", " ".join(texts) or "x"),))
    facts = tuple(Fact(f"f{k}", "recall", t, "u") for k, t in enumerate(texts))
    conv = Conversation("c", (source,), facts)
    text = "".join(pieces) * (40 if long else 1)  # longer than there are facts: the other branch
    assert _facts_in(_text_index(conv), text) == {f.id for f in facts if f.text and f.text in text}
