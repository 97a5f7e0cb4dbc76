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

from policies import _js_json as js
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
    if request.transcript == "blocks":
        return _blocks_input(request, before, span, retention)
    kept_before = before.summary.facts if before.summary is not None else frozenset()
    candidates: list[Fact] = [f for f in retention.facts if f.id in kept_before]
    seen = {f.id for f in candidates}  # a set beside the list: a span of thousands of messages has as many facts
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
            if f.id not in seen and f.id not in retention.lost_on_entry and f.text in t:
                candidates.append(f)
                seen.add(f.id)
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
        pieces, cut = tail_pieces(pieces, request.input_max_chars), True  # the newest characters (none at a cap of 0)
        body = "".join(pieces)
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


#: The ``blocks`` transcript (effect-agent @4629174, ``packages/engine/src/compaction.ts``, ``renderForSummary`` and
#: ``partText``; the request in ``packages/engine/src/index.ts``, ``compactContext``): a tool call's arguments are
#: clipped at 500 characters of their JSON, and the instruction is followed by the transcript in these tags.
BLOCK_CALL_CLIP = 500
BLOCK_PREVIOUS = "[Previous summary]\n"
BLOCK_OPEN, BLOCK_CLOSE = "\n\n<transcript>\n", "\n</transcript>"


def _blocks_input(
    request: SummaryRequest, before: View, span: tuple[int, ...], retention: Retention
) -> SummariserInput:
    """The ``blocks`` transcript (:class:`~policies.base.SummaryRequest`): each covered message as the log holds
    it (``collectCoveredMessages`` hands ``renderForSummary`` the source messages, not the view's edited ones), a
    ``[role]`` line over its rendered parts; the previous summary (unwrapped) as a first block; oldest and newest
    blocks kept within ``input_max_chars`` less the instruction and that block. Lengths are JavaScript's (UTF-16
    code units), as the real function measures and slices."""
    messages = retention.ledger.messages
    kept_before = before.summary.facts if before.summary is not None else frozenset()
    candidates: list[Fact] = [f for f in retention.facts if f.id in kept_before]
    seen = {f.id for f in candidates}
    blocks: list[list[str]] = []
    texts: list[str] = []
    copy_of = retention.reactions.copy_of
    clip = request.clip_chars
    for group in _tool_runs(span, messages):
        parts = block_pieces([messages[i] for i in group], clip)
        if parts is None:
            continue
        t = "".join(parts)
        blocks.append(parts)
        texts.append(t)
        for i in group:
            mid = messages[i].id
            for f in retention.by_source.get(copy_of.get(mid, mid), ()):
                if f.id not in seen and f.id not in retention.lost_on_entry and f.text in t:
                    candidates.append(f)
                    seen.add(f.id)
    previous = _unwrapped(before.summary.text, request.wrapper) if before.summary is not None else ""
    fixed = js.utf16_length(request.prompt)
    if before.summary is not None:
        fixed += js.utf16_length(BLOCK_PREVIOUS) + js.utf16_length(previous) + 2
    chosen = blocks
    if request.input_max_chars is not None:
        kept = ends_within([js.utf16_length(t) for t in texts], request.input_max_chars - fixed)
        if kept is not None:
            head, omitted, tail = kept
            marker = request.input_marker.replace("{n}", str(omitted))
            chosen = [*blocks[:head], [marker], *blocks[len(blocks) - tail :]] if omitted else blocks
            body = "\n\n".join("".join(b) for b in chosen)
            candidates = [f for f in candidates if f.id in kept_before or f.text in body]
    # The previous summary's own text is counted as SummariserInput.previous; its label and joiner are pieces.
    entries: list[list[str]] = ([[BLOCK_PREVIOUS]] if before.summary is not None else []) + chosen
    pieces = [BLOCK_OPEN]
    for j, b in enumerate(entries):
        if j:
            pieces.append("\n\n")
        pieces.extend(b)
    pieces.append(BLOCK_CLOSE)
    return SummariserInput(span, tuple(pieces), tuple(candidates), previous)


def _tool_runs(span: tuple[int, ...], messages: list[Message]) -> list[list[int]]:
    """``span`` in the client's messages: one each, but consecutive tool messages (one per result here) are one, as
    effect-agent holds a batch's results in one tool message."""
    out: list[list[int]] = []
    for i in span:
        if out and messages[i].role == "tool" and messages[out[-1][-1]].role == "tool" and out[-1][-1] == i - 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def block_pieces(group: list[Message], clip: int | None) -> list[str] | None:
    """One message of the ``blocks`` transcript (``group``: a message, or a batch's tool messages), in pieces:
    ``[role]``, a newline, then the text of its parts joined by newlines (text as it is; thinking left out; a call
    as ``[tool call NAME ARGS]``, its arguments' JSON clipped at 500 characters; a result as ``[tool result NAME:
    JSON]``, the JSON of its value clipped at ``clip``), the whole text clipped at ``clip`` characters with ``…``;
    None when the message renders empty."""
    m = group[0]
    texts: list[list[str]] = []
    for p in (p for g in group for p in g.parts):
        if p.kind == "thinking":
            continue
        if p.kind == "tool_call":
            piece = [f"[tool call {p.name} ", js.slice16(js.dumps(_args_value(p.args)), BLOCK_CALL_CLIP), "]"]
        elif p.kind == "tool_result":
            result = js.result_json(p)
            piece = [f"[tool result {p.name}: ", js.slice16(result, clip) if clip is not None else result, "]"]
        elif p.text:
            piece = [p.text]
        else:
            continue
        texts.append(piece)
    if not texts:
        return None
    parts = [x for j, t in enumerate(texts) for x in ([*t] if j == 0 else ["\n", *t])]
    if clip is not None and sum(js.utf16_length(x) for x in parts) > clip:
        parts = [*_head16(parts, clip), "…"]
    return [f"[{m.role}]\n", *parts]


def _args_value(args: str | None) -> object:
    """A tool call's ``params`` as the engine holds them: its arguments' JSON value (the text itself when it is
    not JSON)."""
    try:
        return js.parse(args or "{}")
    except ValueError:
        return args or ""


def _head16(pieces: list[str], n: int) -> list[str]:
    """The pieces of the first ``n`` UTF-16 code units of their concatenation."""
    out: list[str] = []
    for p in pieces:
        if n <= 0:
            break
        size = js.utf16_length(p)
        out.append(p if size <= n else js.slice16(p, n))
        n -= size
    return out


def _unwrapped(text: str, wrapper: str) -> str:
    """A summary as the summariser wrote it: ``text`` without what ``wrapper`` put around it."""
    head, _, tail = wrapper.partition("{summary}")
    if text.startswith(head) and text.endswith(tail) and len(text) >= len(head) + len(tail):
        return text[len(head) : len(text) - len(tail)]
    return text


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
