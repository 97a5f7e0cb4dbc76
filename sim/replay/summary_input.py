"""What a summariser request sends: the transcript of what leaves the view, as the policy's client builds it, and
the facts the summariser could keep.

The transcript is what the view showed before the compaction and will not show after, each message as the new
view edits it (a result it clears is cleared in the transcript too), the system prompt left out; the previous
summary is folded in. The client's :class:`~policies.base.SummaryRequest` shapes it: a per-message clip, tool
outputs left out, a cap in characters that keeps the newest text or whole messages from both ends, a cap in tokens
on the newest pieces. The candidates are the facts the transcript still holds (not lost as their source entered
the log) plus those the previous summary kept: a fact must survive every summary it goes through.

The transcript is kept in pieces (message texts, tool results, labels, blank lines) and counted piece by piece:
each piece is memoised, and the big ones are texts the agent's requests already counted, so every configuration
and every later compaction that shows the summariser the same messages shares the counts instead of tokenising one
new half-megabyte text per compaction. The difference from counting the joined text is BPE merges across piece
boundaries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from policies.base import SummaryRequest
from sim.core.conversation import Fact, Message
from sim.core.invariants import minus, ranges
from sim.core.model import MESSAGE_OVERHEAD, REQUEST_OVERHEAD
from sim.core.view import View
from sim.replay.request import RequestBuilder, flat_pieces, head_pieces, tail_pieces
from sim.replay.retention import Retention


@dataclass(frozen=True)
class SummariserInput:
    """A summariser request's content: what it covers, the transcript in pieces, and the facts it could keep."""

    span: tuple[int, ...]  # log indices of the messages summarised
    pieces: tuple[str, ...]
    candidates: tuple[Fact, ...]
    previous: str  # the previous summary's text ("" when there is none)

    def tokens(self, request: SummaryRequest, count: Callable[[str], int]) -> int:
        """The engine's count of the request: framing, instruction, previous summary and the transcript."""
        return (
            REQUEST_OVERHEAD
            + 3 * MESSAGE_OVERHEAD
            + count(request.prompt)
            + count(self.previous)
            + sum(count(t) for t in self.pieces)
        )


def summariser_input(
    request: SummaryRequest,
    before: View,
    after: View,
    requests: RequestBuilder,
    retention: Retention,
    count: Callable[[str], int],
) -> SummariserInput:
    """The transcript and candidates of a compaction from ``before`` to ``after`` (see the module docstring)."""
    messages = retention.ledger.messages
    n = len(messages)
    span = tuple(
        i
        for a, b in minus(ranges(before, n), ranges(after, n))
        for i in range(a, b)
        if not (retention.has_system and i == 0)
    )
    kept_before = before.summary.facts if before.summary is not None else frozenset()
    candidates: list[Fact] = [f for f in retention.facts if f.id in kept_before]
    texts: list[str] = []
    blocks: list[list[str]] = []  # each message's pieces, for keeping whole messages (input_keep "ends")
    pieces: list[str] = []
    copy_of = retention.reactions.copy_of
    for i in span:
        parts = _shown_pieces(requests, messages[i], i, after, request)
        if parts is None:
            continue
        t = "".join(parts)
        if texts:
            pieces.append("\n\n")
        pieces.extend(parts)
        texts.append(t)
        blocks.append(parts)
        mid = messages[i].id
        for f in retention.by_source.get(copy_of.get(mid, mid), ()):  # a reactive copy's too
            if f.id not in retention.lost_on_entry and f.text in t and f.id not in kept_before and f not in candidates:
                candidates.append(f)
    previous = before.summary.text if before.summary is not None else ""
    pieces, candidates = _capped(request, texts, blocks, pieces, candidates, before, count)
    return SummariserInput(span, tuple(pieces), tuple(candidates), previous)


def _shown_pieces(
    requests: RequestBuilder, m: Message, i: int, after: View, request: SummaryRequest
) -> list[str] | None:
    """Message ``i`` as the transcript shows it (as ``after`` edits it, clipped), in pieces; None when nothing."""
    shown = requests.message(i, after.rules_at(i))
    if shown is not None and request.drop_tool_outputs and shown.results:
        kept = tuple(p for p in shown.parts if p.kind != "tool_result")
        shown = Message(shown.id, shown.role, kept) if kept else None
    if shown is None:
        return None
    parts = flat_pieces(shown)
    clip = request.clip_chars
    if clip is not None and sum(map(len, parts)) > clip:
        parts = [*head_pieces(parts, clip), " …"]
    return parts


def _capped(
    request: SummaryRequest,
    texts: list[str],
    blocks: list[list[str]],
    pieces: list[str],
    candidates: list[Fact],
    before: View,
    count: Callable[[str], int],
) -> tuple[list[str], list[Fact]]:
    """The transcript's pieces under the request's caps, and the candidates it still holds."""
    kept_before = before.summary.facts if before.summary is not None else frozenset()
    previous = before.summary.text if before.summary is not None else ""
    body = "\n\n".join(texts)
    cut = False
    if request.input_keep == "ends" and request.input_max_chars is not None:
        budget = request.input_max_chars - len(request.prompt) - (len(previous) + 2 if before.summary else 0)
        kept_blocks = ends_within([len(t) for t in texts], budget)
        if kept_blocks is not None:
            head, omitted, tail = kept_blocks
            marker = request.input_marker.replace("{n}", str(omitted))
            chosen = [*blocks[:head], [marker], *blocks[len(blocks) - tail :]] if omitted else blocks
            pieces = [x for j, b in enumerate(chosen) for x in ([*b] if j == 0 else ["\n\n", *b])]
            body, cut = "".join(pieces), True
    elif request.input_max_chars is not None and len(body) > request.input_max_chars:
        body = body[-request.input_max_chars :]
        pieces, cut = tail_pieces(pieces, request.input_max_chars), True
    if request.input_newest_tokens is not None:
        budget, k = request.input_newest_tokens, len(pieces)
        while k > 0 and budget - count(pieces[k - 1]) >= 0:
            k -= 1
            budget -= count(pieces[k])
        if k:
            pieces = pieces[k:]
            body, cut = "".join(pieces), True
    if cut:
        candidates = [f for f in candidates if f.id in kept_before or f.text in body]
    return pieces, candidates


def ends_within(sizes: list[int], budget: int, joiner: int = 2) -> tuple[int, int, int] | None:
    """Which whole blocks of ``sizes`` characters (joined by ``joiner`` characters) a summariser input of
    ``budget`` characters keeps when it keeps both ends: ``(head, omitted, tail)`` block counts, or None when
    everything fits. The head takes the oldest blocks up to half the budget, the tail the newest up to the
    rest; what lies between is omitted (``SummaryRequest.input_keep`` ``"ends"``)."""
    if sum(s + joiner for s in sizes) <= budget:
        return None
    half = budget // 2
    start, end, used = 0, len(sizes) - 1, 0
    while start <= end and used + sizes[start] + joiner <= half:
        used += sizes[start] + joiner
        start += 1
    while end >= start and used + sizes[end] + joiner <= budget:
        used += sizes[end] + joiner
        end -= 1
    return start, end - start + 1, len(sizes) - 1 - end


__all__ = ["SummariserInput", "ends_within", "summariser_input"]
