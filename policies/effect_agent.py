"""The effect-agent seed: context management of an Effect-style TypeScript agent framework.

Sources: the seed document ``seeds/effect-agent-context-management.md`` and what
``reference/compaction-systems.md`` section 0(b) records of the real source (danieljvdm/effect-agent
@4629174: ``packages/core/src/policy.ts``, ``tool-result.ts``, ``packages/engine/src/compaction.ts``).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from policies import _js_json as js
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import first_user_index, floor_index, plan_shrinks, unit_floor
from sim.core.conversation import Message, Part
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Messages, View, layout, standard_rule

PLACEHOLDER = "[tool result cleared by compaction]"  # CLEARED_TOOL_RESULT in compaction.ts
_CLEARING = standard_rule(PLACEHOLDER)  # the one edit this policy makes: results before cleared_through cleared
MIN_MAX_BYTES = 256  # ENVELOPE_FLOOR_BYTES in core/src/tool-result.ts
SUMMARY_INPUT_BUDGET = 80_000  # SUMMARY_INPUT_BUDGET in compaction.ts: instruction and previous summary inside it
SUMMARY_ELISION_RESERVE = 128  # SUMMARY_ELISION_RESERVE in compaction.ts: kept free for the omitted-messages marker
SUMMARY_CLIP_CHARS = 2_000  # SUMMARY_MESSAGE_CLIP in compaction.ts: each message's rendered text
# The marker renderForSummary puts where it leaves messages out ({n}: how many).
OMITTED_MARKER = "[… {n} messages omitted from summary input …]"

# Our own instruction, of the length (442 characters) and the line structure of ``COMPACTION_INSTRUCTION`` in
# compaction.ts: four lines of brief (the last one introducing the headings), the six headings the summary must
# use (the real one's, in its order), two closing lines. Its length counts against SUMMARY_INPUT_BUDGET, as the
# real one's does (renderForSummary).
SUMMARY_PROMPT = "\n".join(
    (
        "You are shrinking an agent conversation so that it fits its window.",
        "Summarise the transcript below for the same agent, which carries on",
        "with nothing but this summary and the last few messages.",
        "Lay the summary out under these six heads:",
        "Goal:",
        "Constraints:",
        "Progress:",
        "Decisions:",
        "Next steps:",
        "Critical context:",
        "Be brief. Keep the exact file paths, identifiers and values the work",
        "needs. Output only the summary; do not go on with the conversation.",
    )
)
# The keys Effect's Prompt constructors add to every message and part (effect 4.0.0-rc.110,
# dist/unstable/ai/Prompt.js: MessageTypeId and PartTypeId); JSON.stringify writes them, so the estimate counts them.
MESSAGE_TYPE_ID = "~effect/ai/Prompt/Message"
PART_TYPE_ID = "~effect/ai/Prompt/Part"
# COMPACTION_SUMMARY_PREFIX in compaction.ts: the user message that carries the summary starts with it.
SUMMARY_WRAPPER = "The prior conversation was compacted into this summary:\n\n{summary}"


@dataclass(frozen=True)
class EffectAgentConfig:
    """Parameters, the seed's names in snake_case.

    Attributes:
        context_token_limit: ``contextTokenLimit``; unset means the engine never compacts (the seed:
            "When contextTokenLimit is set, the engine estimates ...").
        keep_recent_tokens: ``keepRecentTokens``, default 20,000 ("the verbatim tail that survives").
        mode: ``prune``, ``summarize`` or ``prune-then-summarize`` (the default).
        max_bytes: ``toolResultBounds.maxBytes``, default 50 KiB, floor 256.
        overflow_retries: framework retries after a provider overflow: "at most one".
    """

    context_token_limit: int | None = None
    keep_recent_tokens: int = 20_000
    mode: Literal["prune", "summarize", "prune-then-summarize"] = "prune-then-summarize"
    max_bytes: int = 50 * 1024
    overflow_retries: int = 1

    def __post_init__(self) -> None:
        if self.context_token_limit is not None and self.context_token_limit <= 0:
            raise InvalidConfig(f"context_token_limit={self.context_token_limit!r} must be positive or unset")
        if self.keep_recent_tokens < 0:
            raise InvalidConfig(f"keep_recent_tokens={self.keep_recent_tokens!r} must be >= 0")
        if self.mode not in ("prune", "summarize", "prune-then-summarize"):
            raise InvalidConfig(f"mode={self.mode!r} must be 'prune', 'summarize' or 'prune-then-summarize'")
        if self.max_bytes < MIN_MAX_BYTES:
            raise InvalidConfig(f"max_bytes={self.max_bytes!r} is below the floor of {MIN_MAX_BYTES}")
        if not 0 <= self.overflow_retries <= 1:
            raise InvalidConfig(f"overflow_retries={self.overflow_retries!r}: the seed allows at most one retry")


def _prefix_within(text: str, max_bytes: int) -> str:
    """The longest prefix of whole code points within ``max_bytes`` UTF-8 bytes (``takePrefixWithinBytes``)."""
    used = 0
    for i, ch in enumerate(text):
        used += js.utf8_length(ch)
        if used > max_bytes:
            return text[:i]
    return text


def _suffix_within(text: str, max_bytes: int) -> str:
    """The longest suffix of whole code points within ``max_bytes`` UTF-8 bytes (``takeSuffixWithinBytes``)."""
    used = 0
    for i in range(len(text) - 1, -1, -1):
        used += js.utf8_length(text[i])
        if used > max_bytes:
            return text[i + 1 :]
    return text


def encoded_result(part: Part) -> str:
    """A tool result as the engine encodes it before bounding (``boundEncodedToolResult``: ``JSON.stringify`` of
    the encoded result): a string result quoted and escaped (600 plain characters encode to 602 bytes); a JSON
    value (``Part.is_json``; an envelope bounded on entry is one) in its compact JSON text, as JavaScript writes
    it (:mod:`policies._js_json`)."""
    return js.result_json(part)


@functools.lru_cache(maxsize=4096)
def bound_result(part: Part, max_bytes: int) -> Part:
    """``applyToolResultBounds`` (``core/src/tool-result.ts``) as ``boundEncodedToolResult`` (``index.ts``) applies it:
    a result whose JSON encoding fits ``max_bytes`` UTF-8 bytes passes unchanged; a larger one becomes the compact
    JSON envelope ``{truncatedToolResult, originalBytes, head, tail}``, itself a JSON value (``is_json``), that fits
    ``max_bytes``: ``head`` and ``tail`` are an exact prefix and suffix of the encoded text, splitting what the
    envelope's own framing leaves about half and half, shrunk (by half the excess each side) until the envelope
    fits. ``originalBytes`` counts the encoded text: a string's quotes and escapes, an object's compact JSON.

    Raises:
        InvalidConfig: a result marked ``is_json`` whose text is not JSON.

    Memoised (parts are frozen): every configuration of a sweep bounds the same results."""
    if not part.is_json and 6 * len(part.text) + 2 <= max_bytes:  # an escape takes at most six bytes per character
        return part
    if part.is_json:
        try:
            value = js.parse(part.text)
        except ValueError as exc:
            raise InvalidConfig(
                f"tool result {part.call_id!r} is marked is_json but its text is not JSON ({exc}): give the value's "
                "JSON text, or leave is_json unset for a string result"
            ) from None
        encoded = js.dumps(value)
    else:
        encoded = js.string(part.text)
    original = js.utf8_length(encoded)
    if original <= max_bytes:
        return part

    def render(head: str, tail: str) -> str:
        return js.dumps({"truncatedToolResult": True, "originalBytes": original, "head": head, "tail": tail})

    minimal = render("", "")
    budget = max_bytes - js.utf8_length(minimal)
    out = minimal
    if budget > 0:
        head_budget = budget // 2
        tail_budget = budget - head_budget
        while True:
            out = render(_prefix_within(encoded, head_budget), _suffix_within(encoded, tail_budget))
            size = js.utf8_length(out)
            if size <= max_bytes:
                break
            if head_budget == 0 and tail_budget == 0:
                out = minimal
                break
            shrink = max(1, -(-(size - max_bytes) // 2))
            head_budget, tail_budget = max(0, head_budget - shrink), max(0, tail_budget - shrink)
    return replace(part, text=out, original_bytes=original, is_json=True)


def _params(args: str | None) -> object:
    """A tool call's ``params``: its arguments' JSON value (the text itself when it is not JSON)."""
    try:
        return js.parse(args or "{}")
    except ValueError:
        return args or ""


def effect_part(p: Part, cleared: bool = False, role: str = "assistant") -> dict[str, object]:
    """A part as the engine's Prompt holds it, keys in the order Effect's constructors give them (``makePart``:
    the fields, then the part type id, ``type`` and ``options``). A user's text is a ``text`` part as
    ``makeInitialPrompt`` and ``Prompt.make`` build it; an assistant's thinking is a ``reasoning`` part and its text
    a ``text`` part, both built by ``Prompt.fromResponseParts`` with the response's (empty) metadata as
    ``options``; a call is a ``tool-call`` part with ``providerExecuted: false``; a result a ``tool-result`` part
    as the engine's tool message builds it (its ``result`` the value :func:`bound_result` left, ``cleared``: the
    placeholder, as ``clearedToolMessage`` rebuilds it). A part with no counterpart in Effect (a change, revert or
    command) is a text part of its text."""
    if p.kind == "tool_result":
        result = PLACEHOLDER if cleared else js.result_value(p)
        return {
            "id": p.call_id,
            "name": p.name,
            "result": result,
            "isFailure": p.is_error,
            "providerExecuted": False,
            PART_TYPE_ID: PART_TYPE_ID,
            "type": "tool-result",
            "options": {},
        }
    if p.kind == "tool_call":
        return {
            "id": p.call_id,
            "name": p.name,
            "params": _params(p.args),
            "providerExecuted": False,
            "options": {},
            PART_TYPE_ID: PART_TYPE_ID,
            "type": "tool-call",
        }
    if p.kind == "thinking":
        return {"text": p.text, "options": {}, PART_TYPE_ID: PART_TYPE_ID, "type": "reasoning"}
    if role == "user":
        return {"text": p.text, PART_TYPE_ID: PART_TYPE_ID, "type": "text", "options": {}}
    return {"text": p.text, "options": {}, PART_TYPE_ID: PART_TYPE_ID, "type": "text"}


def effect_message(messages: Sequence[Message], cleared: bool = False) -> dict[str, object]:
    """One Prompt message (``Prompt.makeMessage``: the params, the message type id, ``role``, ``options``) made of
    ``messages``: one message, or a run of tool messages, which the engine holds as one tool message with every
    result of the batch. A system message's content is its text (the instructions, a string)."""
    first = messages[0]
    content: object
    if first.role == "system":
        content = first.text
    else:
        content = [effect_part(p, cleared, m.role) for m in messages for p in m.parts]
    return {"content": content, MESSAGE_TYPE_ID: MESSAGE_TYPE_ID, "role": first.role, "options": {}}


@functools.cache
def _frame_bytes(role: str) -> int:
    """UTF-8 bytes of a Prompt message's JSON with empty content (``"content":[]``)."""
    return js.utf8_length(js.dumps({"content": [], MESSAGE_TYPE_ID: MESSAGE_TYPE_ID, "role": role, "options": {}}))


@functools.lru_cache(maxsize=65536)
def _content_bytes(message: Message, cleared: bool) -> int:
    """UTF-8 bytes of ``message``'s parts as JSON, with the commas between them. Memoised (messages are frozen)."""
    parts = [js.utf8_length(js.dumps(effect_part(p, cleared, message.role))) for p in message.parts]
    return sum(parts) + len(parts) - 1


def _bytes(messages: Sequence[Message], cleared: bool) -> int:
    first = messages[0]
    if first.role == "system":
        return js.utf8_length(js.dumps(effect_message(messages)))
    return _frame_bytes(first.role) + sum(_content_bytes(m, cleared) for m in messages) + len(messages) - 1


def message_tokens(message: Message) -> int:
    """``estimateMessageTokens`` (``compaction.ts``) of one message: ``Math.ceil(utf8Length(JSON.stringify(message))
    / 4)`` over the message as the engine's Prompt holds it (:func:`effect_message`), Effect's type-id keys
    included (effect 4.0.0-rc.110, the version effect-agent @4629174 pins)."""
    return -(-_bytes((message,), False) // 4)


def cleared_tokens(message: Message) -> int:
    """``estimateMessageTokens`` of a tool message with its results cleared (``clearedToolMessage``)."""
    return -(-_bytes((message,), True) // 4)


def prompt_tokens(messages: Sequence[Message], cleared_through: int = 0) -> int:
    """``estimatePromptTokens`` of ``messages`` as Prompt messages (:func:`prompt_spans`: a run of tool messages is
    one), those before ``cleared_through`` with their results cleared."""
    return sum(-(-_bytes(messages[a:b], a < cleared_through) // 4) for a, b in prompt_spans(messages, 0, len(messages)))


def prompt_spans(messages: Sequence[Message], a: int, b: int) -> list[tuple[int, int]]:
    """``messages[a:b]`` as the engine's Prompt messages, each a range of log indices: a message each, except that
    the tool messages answering one assistant message (a batch, one tool message per result here) are one."""
    out: list[tuple[int, int]] = []
    i = a
    while i < b:
        j = i + 1
        if messages[i].role == "tool":
            while j < b and messages[j].role == "tool":
                j += 1
        out.append((i, j))
        i = j
    return out


def text_tokens(role: str, text: str) -> int:
    """``estimateMessageTokens`` of a message made of one text part (the summary message)."""
    return message_tokens(Message("-", role, (Part("text", text),)))  # type: ignore[arg-type]


def view_tokens(state: RunState, view: View | None = None) -> int:
    """``estimatePromptTokens(buildCompactedView(...))``: the JSON estimate of every message ``view`` (default: the
    current one) sends, as it sends them (cleared results read the placeholder, the summary is its user message)."""
    total = 0
    msgs = state.messages
    for item in layout(state.view if view is None else view, len(state), state.has_system):
        if isinstance(item, Messages):
            cleared = _CLEARING in item.rules
            for a, b in prompt_spans(msgs, item.a, item.b):
                total += -(-_bytes(msgs[a:b], cleared) // 4)
        else:
            total += text_tokens(item.role, item.text)
    return total


@register("effect-agent")
class EffectAgent(Policy[EffectAgentConfig]):
    """Effect-style agent: bound results at 50 KiB, prune old results, then summarise, keeping 20K recent tokens.

    Each step names the function of effect-agent @4629174 it follows (``packages/engine/src/compaction.ts``,
    the run loop in ``packages/engine/src/index.ts``, ``packages/core/src/tool-result.ts``).

    * ``applyToolResultBounds``: a tool result passes once, as it enters history; its JSON encoding (a string
      quoted, a JSON value, ``Part.is_json``, in its compact JSON) within ``max_bytes`` UTF-8 bytes passes unchanged,
      a larger one becomes the envelope, which fits ``max_bytes`` and is itself a JSON value (:func:`bound_result`).
    * Sizes are ``estimateMessageTokens``: ceil(UTF-8 bytes / 4) of the JSON Effect writes of each Prompt message
      (:func:`effect_message`; effect 4.0.0-rc.110, the version effect-agent @4629174 pins: its ``~effect/ai/
      Prompt/Message`` and ``~effect/ai/Prompt/Part`` keys, ``options``, ``providerExecuted``, a result's value).
      The engine holds a batch's results as one tool message (one per result here), so they are sized, pruned and
      rendered as one (:func:`prompt_spans`). The run's input is its first user message's text (the engine holds
      ``JSON.stringify(input)`` there: for an input schema of one string, two quotes more than here).
    * Trigger, before every model call (a Turn): ``nextContextEstimate`` is the last call's provider input plus
      its output plus ``estimatePromptTokens`` of the messages the view gained since that call (the reply among
      them, so the reply counts twice); right after a compaction, and before the first call, the JSON estimate of
      the whole view. Compact when it is *greater than* ``context_token_limit`` (``estimate + outputContractTokens
      > limit``; no output contract here). Unset: never compacts.
    * ``choosePruneBound``: walk every tool message of the source newest to oldest (covered ones too); the newest
      is always kept, older ones while their JSON estimates fit what is left of ``keep_recent_tokens``; every
      older result reads ``[tool result cleared by compaction]`` (ids and names stay, so pairing holds). The bound never
      decreases. After a prune, stop when the JSON estimate of the whole pruned view is at most the limit
      (``compactContext``), or in ``prune`` mode.
    * ``chooseSummarizeCut`` / ``collectCoveredMessages``: the tail holds the newest messages whose estimates
      reach ``keep_recent_tokens``, the cut moved down off tool messages; the covered span runs from the
      previous cut (incremental: the previous summary is folded in). The run's instructions and input (the
      system prompt and the first user message, ``protectedStart``/``protectedEnd``) are never covered: the view
      is ``[instructions, input] + summary + tail`` (``buildCompactedView``), the summary a user message that
      opens with ``COMPACTION_SUMMARY_PREFIX``.
    * ``renderForSummary`` (``SummaryRequest.transcript`` ``blocks``): each covered message as history holds it
      (``collectCoveredMessages`` takes the source, not the pruned view), under a ``[role]`` line, calls as ``[tool
      call NAME ARGS]`` and results as ``[tool result NAME: JSON]``, thinking left out, its text clipped at 2,000
      characters with ``…``; the previous summary a first ``[Previous summary]`` block; when they do not fit 80,000
      characters less the instruction, that block and a 128-character reserve, the oldest keep up to half, the
      newest the rest, and one marker stands for the messages between. The request is the instruction, then the
      transcript in ``<transcript>`` tags. The instruction is ours, of ``COMPACTION_INSTRUCTION``'s length and
      lines (:data:`SUMMARY_PROMPT`), so it takes as much of the budget.
    * Provider overflow (``isContextOverflowMessage``): compact with ``forceSummarize`` (no prune: straight to
      the summary, in every mode) and retry once; a second rejection, or an overflow with no limit configured,
      ends the run with the seed's typed ``ContextOverflowError``: here the finish reason ``context-overflow``
      (a result, not an exception, so a sweep carries on).
    * The run-status line is appended to every request (``runStatus: "appended"``, the default), in
      ``formatRunStatus``'s text (:meth:`sim.core.budgets.BudgetTracker.status_line`); its elapsed seconds are
      the run's simulated clock when the request starts, over the ``max_duration`` budget, and a duration
      breach fails the run as the seed's does.

    Deliberate differences, each shown by a test (``tests/policies/test_effect_agent.py``; the pending turn in
    ``tests/test_properties.py``):

    * A prune that frees nothing is skipped: one whose view is not smaller, by the measure the ``compaction-shrinks``
      invariant judges by (the provider's tokens), leaves the results as they are. The real ``choosePruneBound``
      moves the bound whenever an older tool message does not fit, also past covered messages the view no longer
      shows, and clearing results that tokenise shorter than the placeholder grows the prompt.
    * A span too small for its summary to shrink the view is not summarised (the real summarises it and the
      prompt grows; the stateful test found such a case); the prune, if any, goes alone. An empty summary is
      refused (the real keeps ``"(no summary produced)"``), as every policy here is held to the
      ``failed-summary-unchanged`` invariant.
    * The cut never passes an unresolved pending turn (an approval suspends a Run, so nothing compacts it).
    * The status line reads ``unbounded`` for a turn, tool-call or duration limit the run leaves unset (the
      harness's budgets are optional; the real requires ``maxTurns``, ``maxToolCalls`` and ``maxDuration``).

    Known deviation ``atomic-units``: ``chooseSummarizeCut`` moves the cut off tool messages only, so inside a long
    tool loop the tail can start at a later step, without the reply whose thinking opened the loop: with thinking on
    and no interleaved thinking Anthropic rejects that request (the shared Claude Code sessions at a 60,000-token
    limit, ``benchmarks/results/settings-sensitivity.md``).

    Known deviation ``compaction-loop``: the real engine compacts at most once per Turn and then sends the request
    whatever the estimate (its loop guard: "If the post-compaction estimate still exceeds the limit the Turn proceeds
    anyway"), so where compaction cannot bring the view under the limit it compacts again before the next call, and
    the next: in ``prune`` mode whenever the results alone cannot (``compactContext``: "Pruning may legitimately
    reclaim nothing ... the Turn proceeds anyway"), in any mode when ``keep_recent_tokens`` is above the limit.

    Not modelled: the output contract (no output schema). Run-status: after a summary the real ``last-context``
    reads the summariser call's input (``consumeUsage`` sets ``lastInputTokens`` for it too); the harness's status
    line reads the last agent request's.
    """

    TUNABLE = {
        "context_token_limit": "60000:190000:10000",
        "keep_recent_tokens": "5000:60000:5000",
    }
    TUNABLE_NATIVE = {
        "context_token_limit": "contextTokenLimit: {value}",
        "keep_recent_tokens": "keepRecentTokens: {value}",
    }

    Config = EffectAgentConfig
    run_status = True
    placeholder = PLACEHOLDER
    # The kept tail is sized in tokens only, so a long live turn can lose its latest user message to the
    # summary (the run's input is protected; later user messages are not), the framework has no notion of
    # reverts to keep with their changes, and it compacts once per Turn however little that frees (docstring).
    known_deviations = frozenset({"live-turn", "revert-resolution", "compaction-loop", "atomic-units"})
    deviation_reasons = {
        "atomic-units": (
            "the kept tail is sized in tokens only, so it can start inside the live tool loop, after the reply whose "
            "thinking opened it (Anthropic rejects that request without interleaved thinking)"
        ),
        "live-turn": (
            "the kept tail is sized in tokens only, so a long live turn can lose its latest user message to the summary"
        ),
        "revert-resolution": "the framework does not keep reverts with their changes",
        "compaction-loop": "in prune mode the engine compacts once per Turn, clearing one more result before each call",
    }

    @property
    def retry_on_overflow(self) -> int:
        cfg = self.config
        return cfg.overflow_retries if cfg.context_token_limit is not None else 0

    def bound_tool_result(self, part: Part) -> Part:
        return bound_result(part, self.config.max_bytes)

    def bound_key(self) -> Hashable:
        return ("effect-agent", self.config.max_bytes)

    @staticmethod
    def estimate(state: RunState) -> int:
        """``nextContextEstimate``: anchored on the last call (its input plus its output plus the JSON estimate of
        what the view gained since) while the view has only grown; the whole view's JSON estimate before the
        first call and right after a compaction (``lastViewLength = -1``)."""
        last_in = state.last_input_tokens
        changed = state.view_changed_since_request
        if not last_in or changed:
            return view_tokens(state)
        msgs = state.messages
        since = prompt_tokens(msgs[state.messages_at_last_request :])
        return last_in + (state.last_output_tokens or 0) + since

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cfg = self.config
        limit = cfg.context_token_limit
        if limit is None or trigger == "manual":
            return None
        if trigger == "auto" and self.estimate(state) <= limit:
            return None
        view = state.view
        n = len(state)
        ceiling = n if state.protected_from is None else state.protected_from
        cleared = view.cleared_through
        if trigger != "overflow" and cfg.mode != "summarize":  # forceSummarize skips the prune
            bound = min(self._prune_bound(state, cfg.keep_recent_tokens), ceiling)
            prune = Plan(start=view.start, pinned=view.pinned, cleared_through=bound, mode="prune")
            if bound > cleared and plan_shrinks(state, prune):  # a prune that frees nothing is skipped (declared)
                if cfg.mode == "prune" or view_tokens(state, prune.view_from(view)) <= limit:
                    return prune
                cleared = bound
            elif cfg.mode == "prune":
                return None
        summary = self._summary_plan(state, cleared, ceiling)
        if summary is not None:
            return summary
        # Nothing to summarise, or too little to be worth a summary: the prune alone, if there was one.
        if cleared == view.cleared_through:
            return None
        return Plan(start=view.start, pinned=view.pinned, cleared_through=cleared, mode="prune")

    def _summary_plan(self, state: RunState, cleared: int, ceiling: int) -> Plan | None:
        """The summarising plan: tail from the cut, the run's input kept before the summary."""
        view = state.view
        cut = self._summary_cut(state, self.config.keep_recent_tokens, cleared)
        cut = unit_floor(state, min(cut, ceiling))
        first = first_user_index(state)
        pinned = (first,) if first is not None and first < cut else ()
        floor = max(floor_index(state), first + 1 if first is not None and first >= floor_index(state) else 0)
        if cut <= floor:
            return None  # collectCoveredMessages is empty: no summary
        plan = Plan(
            start=cut,
            pinned=pinned,
            cleared_through=cleared,
            summarize=True,
            mode="summarize" if cleared == view.cleared_through else "prune+summarize",
            summary_request=SUMMARY_REQUEST,
        )
        return plan if plan_shrinks(state, plan) else None

    def over_trigger(self, state: RunState) -> bool:
        """The pre-Turn check: the estimate over ``context_token_limit`` (never, when unset)."""
        limit = self.config.context_token_limit
        return limit is not None and self.estimate(state) > limit

    @staticmethod
    def _prune_bound(state: RunState, keep_tokens: int) -> int:
        """``choosePruneBound``: walk every tool message of the log (a batch's results one tool message) newest to
        oldest, covered ones included as the real walk includes them; the newest is always kept (its estimate
        still counts against the budget), older ones while their estimates fit what is left of ``keep_tokens``;
        the first that does not fit, or is already cleared, and every older one are cleared. Never lowers the
        bound."""
        msgs, cleared = state.messages, state.view.cleared_through
        tools = [(a, b) for a, b in prompt_spans(msgs, 0, len(msgs)) if msgs[a].role == "tool"]
        if len(tools) <= 1:
            return cleared
        budget = keep_tokens - -(-_bytes(msgs[slice(*tools[-1])], False) // 4)
        for a, b in reversed(tools[:-1]):
            cost = -(-_bytes(msgs[a:b], False) // 4)
            if budget - cost >= 0 and a >= cleared:
                budget -= cost
                continue
            return max(cleared, b)
        return cleared

    @staticmethod
    def _summary_cut(state: RunState, keep_tokens: int, cleared_through: int) -> int:
        """``chooseSummarizeCut``: add the newest messages' estimates (each as the view would show it, results
        before ``cleared_through`` cleared) until they reach ``keep_tokens``; the message that reaches it is the
        cut, moved down off tool messages to the assistant message that made the calls, so the tail is never
        empty. When the view's messages never reach it, nothing is cut (the floor)."""
        lo, n = floor_index(state), len(state)
        msgs, kept = state.messages, 0
        for a, b in reversed(prompt_spans(msgs, lo, n)):
            kept += -(-_bytes(msgs[a:b], a < cleared_through) // 4)
            if kept >= keep_tokens:
                return a - 1 if msgs[a].role == "tool" and a > lo else a
        return lo


# The summariser request of compactContext (index.ts) over renderForSummary (compaction.ts): the instruction, then
# the transcript in blocks, oldest and newest kept within the budget less the elision reserve.
SUMMARY_REQUEST = SummaryRequest(
    prompt=SUMMARY_PROMPT,
    wrapper=SUMMARY_WRAPPER,
    input_max_chars=SUMMARY_INPUT_BUDGET - SUMMARY_ELISION_RESERVE,
    input_keep="ends",
    input_marker=OMITTED_MARKER,
    clip_chars=SUMMARY_CLIP_CHARS,
    transcript="blocks",
)
