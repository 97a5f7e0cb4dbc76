"""How a run measures what it sends: one accounting mode, chosen once when the run starts.

Every size the engine, the ledger and the prompt cache use comes from one :class:`Counted` object (or a subclass),
so the mode is decided in one place (:func:`measure_for`) instead of being re-checked wherever a size is needed:

- :class:`Counted`: every message and every text counted by the run's tokenizer, with the engine's framing
  (:data:`~sim.core.model.MESSAGE_OVERHEAD` and the rest): a synthetic scenario, or ``accounting="counted"``.
- :class:`Calibrated`: counted the same way per message, and each whole request mapped to what the provider
  would count by a fitted calibration (``csim calibrate``; :class:`~sim.core.counting.Calibration`); the ledger
  also counts call ids when the fit frames by them, and the prompt cache's blocks carry the coefficients.
- :class:`Anchored`: a recording with usage under ``accounting="anchored"``: each recorded message at the size the
  provider's reported usage gives it (:mod:`sim.core.anchors`), the request's fixed overhead from the recording,
  and what the simulator writes (summaries, placeholders, truncations, the status line) estimated with the
  calibration's ratio for its kind.

Sizes are memoised per message object in the worker's memo (:attr:`sim.core.tokenizers.CountingTokenizer.derived`;
under anchors, a memo of the anchors' own, since sizes then depend on them), so every configuration a worker runs
over one conversation shares them. A measure reads nothing of a run: copies of an engine share it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from sim.core.anchors import Anchors
from sim.core.conversation import Conversation, Message, Part, Tool
from sim.core.counting import Calibration, Coefficients, opens_with_summary
from sim.core.kinds import kind_of
from sim.core.model import MESSAGE_OVERHEAD, PART_OVERHEAD, REQUEST_OVERHEAD
from sim.core.tokenizers import CountingTokenizer, Memo, memoised
from sim.core.view import Rule, call_id_tokens, rule_for


class MessageSizes(NamedTuple):
    """What the engine needs to know of a message's size, computed once per message per worker."""

    chars: int
    tokens: int
    calls: int  # tool calls it makes
    content_hash: int  # hash(message) when first seen, for the log's digest chain (sim.core.log)


#: (index, rule, characters, tokens) of each part of a message that a view's rules keep, as edited.
PartSizes = list[tuple[int, Rule | None, int, int]]


def tools_tokens(tools: tuple[Tool, ...], count: Callable[[str], int]) -> int:
    """Tokens of the tool definitions a request carries, as the engine counts them."""
    return sum(count(t.name) + count(t.description) + count(t.parameters) + PART_OVERHEAD for t in tools)


class Counted:
    """Every message and text counted by the run's tokenizer, with the engine's framing (see the module docstring).

    ``tools``: the tokens of the conversation's tool definitions (:func:`tools_tokens`), part of every request's
    head but a grace request's."""

    #: Counts a call id for the ledger (a calibration that frames by call ids); None: ids are not counted.
    id_count: Callable[[str], int] | None = None
    #: The coefficients the prompt cache's blocks carry (a calibration's); None: the engine's own counts.
    cache_coefficients: Coefficients | None = None
    anchors: Anchors | None = None

    def __init__(self, tok: CountingTokenizer, tools: int, memo: Memo | None = None) -> None:
        self.tok, self.tools = tok, tools
        self.count = tok.count
        self._memo: Memo = tok.derived if memo is None else memo

    # -- messages ------------------------------------------------------------------------------------
    def part_tokens(self, p: Part, text: str | None = None, args: str | None = None) -> int:
        """Tokens of part ``p``, or of ``p`` with its text or arguments replaced (an edit)."""
        n = self.count(p.text if text is None else text)
        if p.kind in ("tool_call", "tool_result"):
            n += PART_OVERHEAD + self.count(p.name or "") + self.count((p.args if args is None else args) or "")
        elif p.kind in ("change", "revert", "command"):
            n += PART_OVERHEAD
        return n

    def raw_tokens(self, m: Message) -> int:
        """The engine's own count of ``m`` (framing included), whatever the accounting."""
        return MESSAGE_OVERHEAD + sum(self.part_tokens(p) for p in m.parts)

    def sizes(self, m: Message) -> MessageSizes:
        """``m``'s sizes as stored. Memoised per message object (memoised() written out: the hottest lookup)."""
        key = (id(m), "sizes")
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        tokens = self.message_overhead(m) + sum(t for _, _, _, t in self.plain_parts(m))
        sizes = MessageSizes(m.chars, tokens, len(m.calls), hash(m))
        self._memo[key] = (m, sizes)
        return sizes

    def message_overhead(self, m: Message) -> int:
        """A message's framing."""
        return MESSAGE_OVERHEAD

    def plain_parts(self, m: Message) -> PartSizes:
        """:meth:`part_sizes` of ``m`` unedited, memoised per message object: its size, its cache blocks and (under
        anchors) its overhead all start from it."""
        key = (id(m), "parts")
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        parts = self.part_sizes(m, ())
        self._memo[key] = (m, parts)
        return parts

    def edited_sizes(self, m: Message, rules: tuple[Rule, ...]) -> tuple[int, int]:
        """Characters and tokens of ``m`` as ``rules`` edit it ((0, 0): not sent); the ledger's sizer."""
        if not rules:
            sz = self.sizes(m)
            return sz.chars, sz.tokens
        key = (id(m), ("sizes", rules))  # memoised() written out: asked for every message a view edits
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        parts = self.part_sizes(m, rules)
        sizes = (0, 0) if not parts else (sum(s[2] for s in parts), self.message_overhead(m) + sum(s[3] for s in parts))
        self._memo[key] = (m, sizes)
        return sizes

    def part_sizes(self, m: Message, rules: tuple[Rule, ...]) -> PartSizes:
        """(index, rule, characters, tokens) of each part of ``m`` that ``rules`` keep, as edited.

        One pass over the parts, counting as sim.core.view.edit_parts edits and sim.core.view.edited_chars
        counts (a test holds them together), without building the edited parts."""
        out: PartSizes = []
        share = self._share(m)
        for j, p in enumerate(m.parts):
            rule = rule_for(p, rules) if rules else None
            if rule is None:
                out.append((j, None, p.chars, share(self.part_tokens(p))))
            elif rule.action == "placeholder":  # text the simulator writes: estimated under anchors
                text = rule.placeholder_for(p)
                edit = (None, text) if p.kind == "tool_call" else (text, None)
                out.append((j, rule, len(text), self._written(self.part_tokens(p, *edit), None)))
            elif rule.action == "truncate":
                cut = self.tok.truncate(p.text, rule.max_tokens, rule.head_share, rule.text)
                t = self._written(self.part_tokens(p, cut), cut)
                out.append((j, rule, p.chars - len(p.text) + len(cut), t))
        return out

    def _share(self, m: Message) -> Callable[[int], int]:
        """A kept part's tokens as ``m``'s size shares them out (counted: as counted)."""
        return _same

    def _written(self, tokens: int, text: str | None) -> int:
        """Tokens of a part the simulator rewrote, from the engine's count: a truncation to ``text``, or (None) a
        placeholder."""
        return tokens

    def message_blocks(self, m: Message, rules: tuple[Rule, ...]) -> tuple[tuple[object, int], ...]:
        """``m`` as ``rules`` edit it, as prompt-cache blocks (sim.replay.caching): one per part kept, keyed by the
        message's content hash, the part's index and the rule that edited it; the first block also carries the
        message's overhead. They sum to the message's tokens. Memoised per message object."""
        key = (id(m), ("blocks", rules))
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        h = self.sizes(m).content_hash
        sizes = self.part_sizes(m, rules) if rules else self.plain_parts(m)
        frame = self.message_overhead(m)
        blocks: tuple[tuple[object, int], ...]
        if sizes:
            blocks = tuple(((h, j, rule), t + (frame if k == 0 else 0)) for k, (j, rule, _, t) in enumerate(sizes))
        else:  # a message without parts is sent as its overhead; an edited one left empty is not sent
            blocks = (((h, -1, None), frame),) if not rules and not m.parts else ()
        self._memo[key] = (m, blocks)
        return blocks

    def content_tokens(self, m: Message) -> int:
        """``m``'s tokens without the per-message overhead (what a reply's generation took, for the clock)."""
        return self.sizes(m).tokens - MESSAGE_OVERHEAD

    def reply_tokens(self, reply: Message) -> int:
        """Output tokens of a scripted reply: its parts, without the per-message overhead."""
        return self.content_tokens(reply)

    # -- texts the simulator writes -------------------------------------------------------------------
    def text_tokens(self, text: str) -> int:
        """Tokens of a text the view adds as a message of its own (summary, injected), framing excluded: the
        ledger's count."""
        return self.count(text)

    def status_tokens(self, status: str | None) -> int:
        """Tokens of the run-status line, a message of its own at the end of a request."""
        return MESSAGE_OVERHEAD + self.count(status) if status else 0

    def instruction_tokens(self, text: str) -> int:
        """Tokens of a forked summariser request's instruction, a user message of its own (none when empty)."""
        return MESSAGE_OVERHEAD + self.text_tokens(text) if text else 0

    # -- whole requests ---------------------------------------------------------------------------------
    def head_tokens(self, grace: bool) -> int:
        """Prompt tokens outside the messages: framing and tool definitions (a grace request has no tools)."""
        return REQUEST_OVERHEAD + (0 if grace else self.tools)

    def prompt_tokens(self, tokens: int, messages: int, summarised: bool, id_tokens: int) -> int:
        """The provider's count of a request the engine counts as ``tokens`` in ``messages`` messages, whose
        call ids count ``id_tokens`` and that holds a summary when ``summarised``."""
        return tokens

    def summariser_tokens(self, tokens: int, summarised: bool) -> int:
        """The provider's count of a separate summariser request the engine counts as ``tokens`` (its instruction,
        the previous summary when ``summarised``, and the transcript, in three messages)."""
        return tokens


def _same(tokens: int) -> int:
    return tokens


class Calibrated(Counted):
    """Counted per message, whole requests mapped to the provider's count by ``calibration`` (see the module
    docstring). A replayed segment that starts from a recorded summary is "after a compaction" for the fit."""

    def __init__(
        self, tok: CountingTokenizer, tools: int, calibration: Calibration, opens_summarised: bool = False
    ) -> None:
        super().__init__(tok, tools)
        self.calibration, self.opens_summarised = calibration, opens_summarised
        self.cache_coefficients = calibration.coefficients
        self.id_count = tok.count if calibration.coefficients.per_call_id_token else None

    def prompt_tokens(self, tokens: int, messages: int, summarised: bool, id_tokens: int) -> int:
        return self.calibration.apply(tokens, messages, summarised or self.opens_summarised, id_tokens)

    def summariser_tokens(self, tokens: int, summarised: bool) -> int:
        # the summariser call carries the agent's prompt overhead too
        return self.calibration.apply(tokens, 3, summarised)


class Anchored(Counted):
    """A recording's messages at their provider-counted sizes (``anchors``), everything the simulator writes
    estimated with the calibration's ratio of its kind (see the module docstring)."""

    def __init__(
        self, tok: CountingTokenizer, tools: int, anchors: Anchors, recorded: Mapping[str, Message] | None = None
    ) -> None:
        super().__init__(tok, tools, memoised(tok.derived, anchors, "memo", _new_memo))
        self.anchors = self._anchors = anchors
        self._estimates: dict[str, int] = {}  # text -> its estimate: a pure function, shared by copies
        self._recorded: Mapping[str, Message] = recorded or {}  # message id -> the message as recorded

    def _anchor_of(self, m: Message) -> tuple[int, float]:
        """``m``'s provider size and the factor from the engine's count of a part to its share.

        A tool message whose results the policy bounded on entry (``Part.original_bytes``: smolagents' and Codex's
        truncation, CrewAI's deferral to a file) is not what the provider counted: it is sized at the recorded
        message's own ratio of provider tokens to the engine's count, applied to the engine's count of what is now
        sent. Without this the bounded result kept its recorded size, and a bound changed nothing on a recording."""
        key = (id(m), "anchor")
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        raw = self.raw_tokens(m)
        ids = call_id_tokens(m, self.count) if self._anchors.coefficients.per_call_id_token else 0
        total = self._anchors.message_tokens(m, raw, ids)
        was = self._recorded.get(m.id)
        if was is not None and was is not m and m.id in self._anchors.sizes and _bounded(m, was):
            before = self.raw_tokens(was)
            total = math.floor(total * raw / before) if before else total
        value = (total, total / raw if raw else 0.0)
        self._memo[key] = (m, value)
        return value

    def message_overhead(self, m: Message) -> int:
        """What ``m``'s provider size leaves after its parts' shares (parts round down, so never negative)."""
        total, _ = self._anchor_of(m)
        return total - sum(t for _, rule, _, t in self.plain_parts(m) if rule is None)

    def _share(self, m: Message) -> Callable[[int], int]:
        f = self._anchor_of(m)[1]
        return lambda t: math.floor(t * f)

    def _written(self, tokens: int, text: str | None) -> int:
        return self._anchors.scale(tokens, "prose" if text is None else kind_of(text))

    def reply_tokens(self, reply: Message) -> int:
        if reply.usage is not None and reply.usage.output_tokens > 0:
            return reply.usage.output_tokens  # what the provider counted (thinking included)
        return super().reply_tokens(reply)

    def text_tokens(self, text: str) -> int:
        hit = self._estimates.get(text)
        if hit is None:  # the ratio of its kind (sim.core.kinds); asked for on every request that sends it
            hit = self._estimates[text] = (
                self._anchors.estimate_text(self.count(text), kind_of(text)) - MESSAGE_OVERHEAD
            )
        return hit

    def status_tokens(self, status: str | None) -> int:
        return self._anchors.estimate_text(self.count(status), "prose") if status else 0

    def head_tokens(self, grace: bool) -> int:
        """The recording's overhead (which holds its tools: a grace request without tools keeps it)."""
        return self._anchors.overhead

    def summariser_tokens(self, tokens: int, summarised: bool) -> int:
        # the agent's overhead, and the summariser's own text estimated
        return self._anchors.overhead + self._anchors.estimate(tokens)


def measure_for(
    conversation: Conversation, tok: CountingTokenizer, calibration: Calibration | None, anchors: Anchors | None
) -> Counted:
    """The accounting of a run over ``conversation``: anchored when it has ``anchors``, else calibrated when it has
    a ``calibration``, else counted."""
    tools = tools_tokens(conversation.tools, tok.count)
    if anchors is not None:
        return Anchored(tok, tools, anchors, {m.id: m for m in conversation.messages})
    if calibration is not None:
        return Calibrated(tok, tools, calibration, opens_with_summary(conversation))
    return Counted(tok, tools)


def _bounded(m: Message, was: Message) -> bool:
    """Whether ``m`` is recorded message ``was`` with results bounded on entry (and nothing else changed)."""
    return len(m.parts) == len(was.parts) and any(
        p.original_bytes is not None and p.text != q.text for p, q in zip(m.parts, was.parts, strict=True)
    )


def _new_memo(_: object) -> dict[Any, Any]:
    return {}


__all__ = ["Anchored", "Calibrated", "Counted", "MessageSizes", "measure_for", "tools_tokens"]
