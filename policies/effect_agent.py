"""The effect-agent seed: context management of an Effect-style TypeScript agent framework.

Sources: the seed document ``seeds/effect-agent-context-management.md`` and what
``reference/compaction-systems.md`` section 0(b) records of the real source (danieljvdm/effect-agent
@4629174: ``packages/core/src/policy.ts``, ``tool-result.ts``, ``packages/engine/src/compaction.ts``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Literal

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import first_user_index, floor_index, plan_shrinks, unit_floor
from sim.core.conversation import Message, Part
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Messages, View, edited, layout, standard_rule

PLACEHOLDER = "[tool result cleared by compaction]"  # CLEARED_TOOL_RESULT in compaction.ts
MIN_MAX_BYTES = 256  # ENVELOPE_FLOOR_BYTES in core/src/tool-result.ts
SUMMARY_INPUT_BUDGET = 80_000  # SUMMARY_INPUT_BUDGET in compaction.ts: instruction and previous summary inside it
SUMMARY_ELISION_RESERVE = 128  # SUMMARY_ELISION_RESERVE in compaction.ts: kept free for the omitted-messages marker
SUMMARY_CLIP_CHARS = 2_000  # SUMMARY_MESSAGE_CLIP in compaction.ts: each message's rendered text
# The marker renderForSummary puts where it leaves messages out ({n}: how many).
OMITTED_MARKER = "[… {n} messages omitted from summary input …]"

SUMMARY_PROMPT = (
    "You are compacting an agent conversation to free context. Summarise the transcript for the same agent, "
    "which will see only this summary and the newest messages. Use exactly these headings: Goal, Constraints, "
    "Progress, Decisions, Next steps, Critical context. Be terse; keep exact file paths, identifiers and values "
    "the agent needs. Output only the summary and do not continue the conversation."
)
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


def _utf8_bytes(text: str) -> int:
    """UTF-8 bytes of ``text`` as JavaScript counts them (a lone surrogate as the three bytes of its code point)."""
    return len(text.encode("utf-8", "surrogatepass"))


def _prefix_within(text: str, max_bytes: int) -> str:
    """The longest prefix of whole code points within ``max_bytes`` UTF-8 bytes (``takePrefixWithinBytes``)."""
    used = 0
    for i, ch in enumerate(text):
        used += _utf8_bytes(ch)
        if used > max_bytes:
            return text[:i]
    return text


def _suffix_within(text: str, max_bytes: int) -> str:
    """The longest suffix of whole code points within ``max_bytes`` UTF-8 bytes (``takeSuffixWithinBytes``)."""
    used = 0
    for i in range(len(text) - 1, -1, -1):
        used += _utf8_bytes(text[i])
        if used > max_bytes:
            return text[i + 1 :]
    return text


def encoded_result(part: Part) -> str:
    """A tool result as Effect encodes it before bounding: the JSON text of its value. An envelope (a result
    bounded on entry) is an object whose JSON text is the part's text; any other result is a string, so its
    JSON text is the quoted, escaped string (600 plain characters encode to 602 bytes)."""
    return part.text if _envelope(part) is not None else json.dumps(part.text, ensure_ascii=False)


def _envelope(part: Part) -> object | None:
    """The decoded envelope a result bounded on entry holds, else None (a plain string result)."""
    if part.original_bytes is None or not part.text.startswith("{"):
        return None
    try:
        value: object = json.loads(part.text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@functools.lru_cache(maxsize=4096)
def bound_result(part: Part, max_bytes: int) -> Part:
    """``applyToolResultBounds`` (``core/src/tool-result.ts``): a result whose JSON encoding fits ``max_bytes``
    UTF-8 bytes passes unchanged; a larger one becomes the compact JSON envelope ``{truncatedToolResult,
    originalBytes, head, tail}`` that itself fits ``max_bytes``: ``head`` and ``tail`` are an exact prefix and
    suffix of the encoded text, splitting what the envelope's own framing leaves about half and half, shrunk
    (by half the excess each side) until the envelope fits. ``originalBytes`` counts the encoded text, quotes
    and escapes included.

    Memoised (parts are frozen): every configuration of a sweep bounds the same results."""
    if 6 * len(part.text) + 2 <= max_bytes:  # an escape takes at most six bytes per character
        return part
    encoded = json.dumps(part.text, ensure_ascii=False)
    original = _utf8_bytes(encoded)
    if original <= max_bytes:
        return part

    def render(head: str, tail: str) -> str:
        envelope = {"truncatedToolResult": True, "originalBytes": original, "head": head, "tail": tail}
        return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))

    minimal = render("", "")
    budget = max_bytes - _utf8_bytes(minimal)
    out = minimal
    if budget > 0:
        head_budget = budget // 2
        tail_budget = budget - head_budget
        while True:
            out = render(_prefix_within(encoded, head_budget), _suffix_within(encoded, tail_budget))
            size = _utf8_bytes(out)
            if size <= max_bytes:
                break
            if head_budget == 0 and tail_budget == 0:
                out = minimal
                break
            shrink = max(1, -(-(size - max_bytes) // 2))
            head_budget, tail_budget = max(0, head_budget - shrink), max(0, tail_budget - shrink)
    return replace(part, text=out, original_bytes=original)


def _effect_part(p: Part) -> dict[str, object]:
    """A part as Effect's ``Prompt.makePart`` builds it: its fields, ``type`` and empty ``options``."""
    if p.kind == "tool_call":
        try:
            params: object = json.loads(p.args or "{}")
        except ValueError:
            params = p.args or ""
        return {"id": p.call_id, "name": p.name, "params": params, "providerExecuted": False, "type": "tool-call"}
    if p.kind == "tool_result":
        env = _envelope(p)
        result: object = p.text if env is None else env
        return {
            "id": p.call_id,
            "name": p.name,
            "isFailure": p.is_error,
            "result": result,
            "providerExecuted": False,
            "type": "tool-result",
        }
    if p.kind == "thinking":
        return {"text": p.text, "type": "reasoning"}
    return {"text": p.text, "type": "text"}


@functools.lru_cache(maxsize=65536)
def message_tokens(message: Message) -> int:
    """``estimateMessageTokens`` (``compaction.ts``): ceil(UTF-8 bytes of the message's JSON / 4). The JSON is
    the message as Effect's ``Prompt`` holds it (role, content parts with ``type`` and ``options``, a system
    message's content a string). Memoised: messages are frozen and every later estimate reuses it."""
    if message.role == "system":
        content: object = message.text
    else:
        content = [{**_effect_part(p), "options": {}} for p in message.parts]
    blob = json.dumps(
        {"content": content, "role": message.role, "options": {}}, ensure_ascii=False, separators=(",", ":")
    )
    return -(-_utf8_bytes(blob) // 4)


@functools.lru_cache(maxsize=65536)
def cleared_tokens(message: Message) -> int:
    """``estimateMessageTokens`` of a tool message with its results cleared (``clearedToolMessage``)."""
    shown = edited(message, (standard_rule(PLACEHOLDER),))
    return message_tokens(shown) if shown is not None else 0


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
            for i in range(item.a, item.b):
                shown = edited(msgs[i], item.rules)
                total += message_tokens(shown) if shown is not None else 0
        else:
            total += text_tokens(item.role, item.text)
    return total


@register("effect-agent")
class EffectAgent(Policy[EffectAgentConfig]):
    """Effect-style agent: bound results at 50 KiB, prune old results, then summarise, keeping 20K recent tokens.

    Each step names the function of effect-agent @4629174 it follows (``packages/engine/src/compaction.ts``,
    the run loop in ``packages/engine/src/index.ts``, ``packages/core/src/tool-result.ts``).

    * ``applyToolResultBounds``: a tool result passes once, as it enters history; its JSON encoding within
      ``max_bytes`` UTF-8 bytes passes unchanged, a larger one becomes the envelope, which fits ``max_bytes``
      (:func:`bound_result`).
    * Trigger, before every model call (a Turn): ``nextContextEstimate`` is the last call's provider input plus
      its output plus ``estimatePromptTokens`` (ceil(JSON bytes / 4), :func:`message_tokens`) of the messages
      the view gained since that call (the reply among them, so the reply counts twice); right after a
      compaction, and before the first call, the JSON estimate of the whole view. Compact when it is
      *greater than* ``context_token_limit`` (``estimate + outputContractTokens > limit``; no output contract
      here). Unset: never compacts.
    * ``choosePruneBound``: walk tool messages newest to oldest; the newest is always kept, older ones
      while their JSON estimates fit what is left of ``keep_recent_tokens``; every older result reads
      ``[tool result cleared by compaction]`` (ids and names stay, so pairing holds). The bound never
      decreases. After a prune, stop when the JSON estimate of the whole pruned view is at most the limit
      (``compactContext``), or in ``prune`` mode.
    * ``chooseSummarizeCut`` / ``collectCoveredMessages``: the tail holds the newest messages whose estimates
      reach ``keep_recent_tokens``, the cut moved down off tool messages; the covered span runs from the
      previous cut (incremental: the previous summary is folded in). The run's instructions and input (the
      system prompt and the first user message, ``protectedStart``/``protectedEnd``) are never covered: the view
      is ``[instructions, input] + summary + tail`` (``buildCompactedView``), the summary a user message that
      opens with ``COMPACTION_SUMMARY_PREFIX``.
    * ``renderForSummary``: each covered message's text clipped at 2,000 characters; when they do not fit
      80,000 characters less the instruction, the previous summary and a 128-character reserve, the oldest keep
      up to half, the newest the rest, and one marker stands for the messages between.
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

    * A prune that frees nothing is skipped: results no longer than the placeholder stay as they are. The real
      ``choosePruneBound`` moves the bound whenever an older tool message does not fit, and clearing results
      shorter than the placeholder grows the prompt (``compaction-shrinks``).
    * A span too small for its summary to shrink the view is not summarised (the real summarises it and the
      prompt grows; the stateful test found such a case); the prune, if any, goes alone. An empty summary is
      refused (the real keeps ``"(no summary produced)"``), as every policy here is held to the
      ``failed-summary-unchanged`` invariant.
    * The cut never passes an unresolved pending turn (an approval suspends a Run, so nothing compacts it).
    * The status line reads ``unbounded`` for a turn, tool-call or duration limit the run leaves unset (the
      harness's budgets are optional; the real requires ``maxTurns``, ``maxToolCalls`` and ``maxDuration``).

    Not modelled: the output contract (no output schema).
    """

    Config = EffectAgentConfig
    run_status = True
    placeholder = PLACEHOLDER
    # The kept tail is sized in tokens only, so a long live turn can lose its latest user message to the
    # summary (the run's input is protected; later user messages are not), and the framework has no notion of
    # reverts to keep with their changes.
    known_deviations = frozenset({"live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": (
            "the kept tail is sized in tokens only, so a long live turn can lose its latest user message to the summary"
        ),
        "revert-resolution": "the framework does not keep reverts with their changes",
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
        since = range(state.messages_at_last_request, len(msgs))
        return last_in + (state.last_output_tokens or 0) + sum(message_tokens(msgs[i]) for i in since)

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
            if bound > cleared and state.view_chars(view.start, n, bound) < state.view_chars(view.start, n, cleared):
                prune = Plan(start=view.start, pinned=view.pinned, cleared_through=bound, mode="prune")
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
            summary_request=SummaryRequest(
                prompt=SUMMARY_PROMPT,
                wrapper=SUMMARY_WRAPPER,
                input_max_chars=SUMMARY_INPUT_BUDGET - SUMMARY_ELISION_RESERVE,
                input_keep="ends",
                input_marker=OMITTED_MARKER,
                clip_chars=SUMMARY_CLIP_CHARS,
            ),
        )
        return plan if plan_shrinks(state, plan) else None

    def over_trigger(self, state: RunState) -> bool:
        """The pre-Turn check: the estimate over ``context_token_limit`` (never, when unset)."""
        limit = self.config.context_token_limit
        return limit is not None and self.estimate(state) > limit

    @staticmethod
    def _prune_bound(state: RunState, keep_tokens: int) -> int:
        """``choosePruneBound``: walk the tool messages of the view newest to oldest; the newest is always kept
        (its estimate still counts against the budget), older ones while their estimates fit what is left of
        ``keep_tokens``; the first that does not fit, or is already cleared, and every older one are cleared.
        Never lowers the bound."""
        msgs, cleared = state.messages, state.view.cleared_through
        tools = [i for i in range(len(msgs) - 1, state.view.start - 1, -1) if msgs[i].role == "tool"]
        if len(tools) <= 1:
            return cleared
        budget = keep_tokens - message_tokens(msgs[tools[0]])
        for i in tools[1:]:
            cost = message_tokens(msgs[i])
            if budget - cost >= 0 and i >= cleared:
                budget -= cost
                continue
            return max(cleared, i + 1)
        return cleared

    @staticmethod
    def _summary_cut(state: RunState, keep_tokens: int, cleared_through: int) -> int:
        """``chooseSummarizeCut``: add the newest messages' estimates (each as the view would show it, results
        before ``cleared_through`` cleared) until they reach ``keep_tokens``; the message that reaches it is the
        cut, so the tail is never empty. When the view's messages never reach it, nothing is cut (the floor)."""
        lo, n = floor_index(state), len(state)
        msgs, kept = state.messages, 0
        for i in range(n - 1, lo - 1, -1):
            kept += (
                cleared_tokens(msgs[i]) if i < cleared_through and msgs[i].role == "tool" else message_tokens(msgs[i])
            )
            if kept >= keep_tokens:
                return i
        return lo
