"""The summariser's transcript under its caps (:mod:`sim.replay.summary_input`): the candidates it keeps are the
facts the capped transcript still holds, whichever cap cut it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from policies.base import SummaryRequest
from sim.core.conversation import Fact
from sim.core.view import View
from sim.replay.summary_input import _capped

# A small alphabet, so that a fact's text often appears in blocks other than its own (a re-read).
_PIECE = st.text(alphabet="abc \n", min_size=0, max_size=12)
_BLOCK = st.lists(_PIECE, min_size=1, max_size=4)


@settings(max_examples=400)  # cheap examples; a cut inside a piece over a fact's text needs a few hundred
@given(
    blocks=st.lists(_BLOCK, min_size=1, max_size=8),
    picks=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 40), st.integers(1, 6)), max_size=12),
    keep=st.sampled_from(["newest", "ends"]),
    max_chars=st.none() | st.integers(0, 120),
    newest=st.none() | st.integers(0, 60),
)
def test_the_candidates_kept_are_those_the_capped_transcript_holds(
    blocks: list[list[str]],
    picks: list[tuple[int, int, int]],
    keep: str,
    max_chars: int | None,
    newest: int | None,
) -> None:
    """A candidate is kept where its text is in what the caps leave of the transcript, the pieces sent (a cap of 0
    characters once kept them against the whole transcript: ``body[-0:]``)."""
    texts = ["".join(b) for b in blocks]
    pieces = [x for j, b in enumerate(blocks) for x in ([*b] if j == 0 else ["\n\n", *b])]
    candidates = []
    for n, (j, at, length) in enumerate(picks):
        text = texts[j % len(blocks)][at : at + length]
        if text:
            candidates.append(Fact(f"f{n}", "artifact", text, f"m{j % len(blocks)}"))
    request = SummaryRequest(input_keep=keep, input_max_chars=max_chars, input_newest_tokens=newest)  # type: ignore[arg-type]
    pieces, kept = _capped(request, texts, blocks, pieces, list(candidates), View(), len)
    body = "".join(pieces)
    assert [f.id for f in kept] == [f.id for f in candidates if f.text in body]
