"""OpenHands condensers: OpenHands' event view, which all five share, and the V1 SDK's summarizing condenser.

The four V0 application condensers (observation masking, browser output, the conversation window and the
application's default pipeline) are :mod:`policies.openhands_v0`, on the same event view (events per message, the
cut points, the summary at an offset).

Sources (``reference/policy-catalogue.md`` §B6a, §B6b and the two OpenHands rows of §F; the real code was read
for every detail below):

* V1 SDK: ``OpenHands/software-agent-sdk@611629e6`` and the released ``openhands-sdk`` 1.58.2 (the version the
  conformance suite calls), package ``openhands/sdk/``: ``context/condenser/llm_summarizing_condenser.py``
  (reasons, target suffixes, forgetting range, minimum progress, hard context reset, ``default_condenser``),
  ``context/condenser/base.py`` (soft and hard requirements), ``context/condenser/utils.py`` (the token suffix),
  ``context/view/manipulation_indices.py`` and ``context/view/properties/*.py`` (where a view may be cut),
  ``event/condenser.py`` (the summary inserted at ``summary_offset`` as a user message), ``agent/agent.py`` (the
  condenser runs before every LLM call with the agent's LLM; a context-window error appends a
  ``CondensationRequest``), ``utils/truncate.py`` and ``llm/message.py`` (tool text over 50,000 characters is
  middle-truncated).
* V0: ``All-Hands-AI/OpenHands``: ``openhands/core/config/condenser_config.py@068f86b1`` (the config defaults),
  ``openhands/memory/condenser/impl/observation_masking_condenser.py@b781d1b0``,
  ``browser_output_condenser.py@acb8ec0d``, ``conversation_window_condenser.py@075f0b8b``,
  ``llm_summarizing_condenser.py@396b2c9f`` and ``pipeline.py``; the server session's default pipeline
  (``openhands/server/session/session.py``: window, browser output with window 2, summarizing with keep_first 4
  and ``condenser_max_size or 120``); ``openhands/events/serialization/event.py`` ``truncate_content`` with
  ``LLMConfig.max_message_chars`` 30,000 (catalogue §B6a).

**Events, not messages.** OpenHands counts events, and a message of ours is one or more of them: the system
prompt, a user message and an assistant message without tool calls are one event each; an assistant message
with k tool calls is k action events (its text rides on the first as the thought); a tool message with k
results is k observation events; a ``/compact`` command is a ``CondensationRequest``, which is not in the view
(no event). The summary is one event. A view may be cut only where OpenHands' manipulation indices allow:
between units, never inside a batch or between a call and its result (``BatchAtomicity``,
``ToolCallMatching``, the engine's atomic units, ``RunState.can_cut``), and never inside a thinking tool loop
(``ToolLoopAtomicity``: the steps after a reply with thinking, up to the next user message;
:func:`loop_cuts`), which the engine does not require (Anthropic needs only the live turn's opening thinking).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Literal

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import plan_shrinks, unit_floor
from sim.core.conversation import Message, Part
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Messages, Rule, View, layout, spans_of

# -- defaults, each from the real source ---------------------------------------------------------------
#: ``LLMSummarizingCondenser`` field defaults (V1 ``llm_summarizing_condenser.py``; catalogue §B6b).
SDK_MAX_SIZE = 240
SDK_KEEP_FIRST = 2
SDK_MINIMUM_PROGRESS = 0.1
#: ``default_condenser()``, used by the default agent preset and spawned sub-agents (``_DEFAULT_MAX_SIZE``,
#: ``_DEFAULT_KEEP_FIRST``): ``-P max_size=80 -P keep_first=4``.
DEFAULT_AGENT_PRESET = {"max_size": "80", "keep_first": "4"}
#: ``DEFAULT_TEXT_CONTENT_LIMIT`` (V1 ``utils/truncate.py``), applied to tool text in ``llm/message.py``.
SDK_TOOL_TEXT_LIMIT = 50_000
#: Tools of ``openhands-tools`` that clip their own output lower: terminal ``MAX_CMD_OUTPUT_SIZE``, file editor
#: ``MAX_RESPONSE_LEN_CHAR`` (catalogue §B6b).
SDK_TOOL_LIMITS = {"terminal": 30_000, "file_editor": 16_000}
#: ``DEFAULT_TRUNCATE_NOTICE`` (V1 ``utils/truncate.py``): what a middle-truncated tool text shows.
SDK_TRUNCATE_NOTICE = (
    "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>"
)
#: V0: ``ObservationMaskingCondenserConfig.attention_window`` and ``BrowserOutputCondenserConfig.attention_window``.
V0_MASKING_WINDOW = 100
V0_BROWSER_WINDOW = 1
#: V0 application pipeline: ``BrowserOutputCondenserConfig(attention_window=2)``, ``LLMSummarizingCondenserConfig(
#: keep_first=4, max_size=settings.condenser_max_size or 120)``, ``max_event_length`` 10,000 (config default).
V0_APP_BROWSER_WINDOW = 2
V0_APP_KEEP_FIRST = 4
V0_APP_MAX_SIZE = 120
V0_MAX_EVENT_LENGTH = 10_000
#: V0 ``LLMConfig.max_message_chars`` and ``truncate_content``'s marker (head half, marker, tail half).
V0_MAX_MESSAGE_CHARS = 30_000
V0_TRUNCATED = "\n[... Observation truncated due to length ...]\n"
#: V0 placeholders: the masked observation, and a browser observation outside the window (the real text names
#: the page's URL, which the simulator does not have: ``<url>`` stands in for it).
MASKED = "<MASKED>"
BROWSER_OMITTED = "Visited URL <url>\nContent omitted"
#: V0 tools whose observations are ``BrowserOutputObservation``: ``browser`` (interactive) and ``web_read``
#: (``openhands/agenthub/codeact_agent/tools/browser.py``, ``web_read.py``).
V0_BROWSER_TOOLS = "browser,web_read"
#: OpenHands appends a condensation request on every context-window error, without a limit; the simulator's
#: engine needs a number of compact-and-retry rounds (a project choice).
OVERFLOW_RETRIES = 3

# Our own words for the summariser's instructions: the sections the real prompts ask for.
SUMMARY_PROMPT = (
    "You keep a running state summary for an agent whose older events are being forgotten. The events may include "
    "an earlier summary: merge it. Keep the user's goals and constraints (USER_CONTEXT), tasks with their ids and "
    "statuses (TASK_TRACKING), what is done (COMPLETED), what is left (PENDING) and the current state "
    "(CURRENT_STATE); for code also files and signatures (CODE_STATE), tests and errors (TESTS), edits (CHANGES), "
    "dependencies (DEPS) and the repository state (VERSION_CONTROL_STATUS). Be concise."
)

Reason = Literal["request", "tokens", "events"]


# -- the event view ----------------------------------------------------------------------------------------
def events_in(m: Message) -> int:
    """The number of OpenHands events message ``m`` stands for (module docstring)."""
    if m.command is not None:
        return 0
    if m.role == "assistant":
        return max(1, len(m.calls))
    if m.role == "tool":
        return max(1, len(m.results))
    return 1


def events_before(total: int, m: Message) -> int:
    """The events before the message after ``m``, those before ``m`` being ``total`` (``RunState.running``)."""
    return total + events_in(m)


@dataclass(frozen=True, slots=True)
class _Item:
    """One entry of the view in render order: a log message, or (index -1) the summary or an injected message."""

    index: int
    events: int
    cut: bool  # a cut may fall right before it (a manipulation index)
    observation: bool  # an observation (a tool message, or V0's summary observation)


def _loop_step(before: tuple[bool, str], m: Message) -> tuple[bool, str]:
    """Whether the log ends inside a thinking tool loop once ``m`` is appended, and ``m``'s role, from the same of
    the log before it (see :func:`loop_cuts`; folded over the log by ``RunState.running``)."""
    thinking, previous = before
    if m.role == "assistant":
        if not (previous == "tool" and thinking):  # a reply after a result in a thinking loop stays in it
            thinking = any(p.kind == "thinking" for p in m.parts)
    elif m.role != "tool":
        thinking = False
    return thinking, m.role


def _thinking_loop_before(state: RunState, a: int) -> bool:
    """Whether messages ``[..a)`` end inside a thinking tool loop: the newest reply before ``a`` that starts one,
    reached through replies and results alone. From the log's running state, so O(1) a range once the log is read:
    a walk back over the loop cost its length for every range of every view."""
    return state.running(_loop_step, (False, ""))[a][0]


def loop_cuts(state: RunState, a: int, b: int) -> list[bool]:
    """For each message of ``[a, b)``, whether OpenHands' manipulation indices let a cut fall right before it: at
    a unit boundary (``RunState.can_cut``) and not inside a thinking tool loop (``ToolLoopAtomicity``: a reply with
    thinking starts one, and every reply after it that follows a tool result belongs to it, up to the next user
    message). One pass over the range."""
    msgs, out = state.messages, []
    thinking = _thinking_loop_before(state, a)
    for i in range(a, b):
        m = msgs[i]
        inside = False
        if m.role == "assistant":
            inside = bool(i) and msgs[i - 1].role == "tool" and thinking
            if not inside:
                thinking = any(p.kind == "thinking" for p in m.parts)
        elif m.role != "tool":
            thinking = False
        out.append(state.can_cut(i) and not inside)
    return out


class EventView:
    """The current view as OpenHands counts it: items in render order and the events before each.

    Built per decision in O(messages in the view); OpenHands views stay near ``max_size`` events."""

    def __init__(self, state: RunState) -> None:
        items: list[_Item] = []
        for it in layout(state.view, len(state), state.has_system):
            if isinstance(it, Messages):
                for i, cut in zip(range(it.a, it.b), loop_cuts(state, it.a, it.b), strict=True):
                    m = state.messages[i]
                    items.append(_Item(i, events_in(m), cut, m.role == "tool"))
            else:
                items.append(_Item(-1, 1, True, True))
        self.items = items
        self.offsets = list(accumulate((x.events for x in items), initial=0))
        self.system = 1 if state.has_system else 0

    @property
    def total(self) -> int:
        """``len(view)``: the events the view holds."""
        return self.offsets[-1]

    def find_next(self, threshold: int) -> int | None:
        """``ManipulationIndices.find_next``: the first item before which a cut may fall at or after event
        ``threshold`` (``len(items)`` for the end of the view), None when there is none."""
        for k, item in enumerate(self.items):
            if item.cut and self.offsets[k] >= threshold:
                return k
        return len(self.items) if self.total >= threshold else None

    def last_cut_at_or_before(self, threshold: int) -> int:
        """The last item before which a cut may fall at or before event ``threshold`` (0 at least)."""
        best = 0
        for k, item in enumerate(self.items):
            if self.offsets[k] > threshold:
                break
            if item.cut:
                best = k
        return best

    def item_at(self, event: int) -> int:
        """The item holding event ``event`` (``len(items)`` past the end)."""
        for k, item in enumerate(self.items):
            if self.offsets[k] + item.events > event:
                return k
        return len(self.items)

    def messages(self, a: int, b: int | None = None) -> list[int]:
        """Log indices of the messages among items ``[a, b)``, the system prompt left out."""
        return [x.index for x in self.items[a:b] if x.index >= self.system]

    def tail_start(self, k: int, n: int) -> int:
        """The log index where the kept tail starts when items ``[k:]`` are kept (``n`` when none)."""
        return next((x.index for x in self.items[k:] if x.index >= 0), n)


# -- plans shared by the policies --------------------------------------------------------------------------
def harness_start(state: RunState, start: int) -> int:
    """Our addition for the harness's contract: never compact an unresolved pending turn (OpenHands' agent does
    not step while an action waits for confirmation, so nothing condenses it). Reverts are not kept with the
    change they revert: OpenHands has no notion of them (``revert-resolution`` is a known deviation)."""
    pf = state.protected_from
    # A forgetting range that reaches the end of the view inside a thinking tool loop still open is forgotten, as
    # the SDK forgets it; ToolLoopAtomicity's enforcement then drops the loop's later steps from the view as they
    # come, where the simulator keeps them after the summary (a difference).
    return max(state.view.start, unit_floor(state, start if pf is None else min(start, pf)))


def live_user(state: RunState, start: int, kept: tuple[int, ...]) -> tuple[int, ...]:
    """The last user message, when a view starting its tail at ``start`` would forget it: our addition for the
    harness's live-turn invariant. OpenHands forgets it with the span (its forgetting end rounds up, its hard reset
    and its window keep nothing of the live turn); here it stays, pinned before the summary and the tail, and
    everything else goes as OpenHands has it. With it, the pinned messages a pending turn protects."""
    lu = state.last_user_index
    live = (lu,) if 0 <= lu < start and lu not in kept and state.view.shows(lu) else ()
    return live + protected_pins(state, start, (*kept, *live))


def protected_pins(state: RunState, start: int, kept: tuple[int, ...]) -> tuple[int, ...]:
    """Messages the view pins that an unresolved pending turn now protects (pinned before the turn raised it):
    they stay, as the tail from the turn's start does (:func:`harness_start`)."""
    pf = state.protected_from
    if pf is None:
        return ()
    return tuple(i for i in state.view.pinned if pf <= i < start and i not in kept)


def forget_plan(state: RunState, ev: EventView, ks: int, ke: int, **summary: object) -> Plan | None:
    """The view after forgetting items ``[ks, ke)``: items before ``ks`` (the system prompt and the ``keep_first``
    head) kept verbatim, the summary inserted where the forgotten span was (``summary_offset`` = the forgetting
    start), the rest kept as the tail. The previous summary sits at that offset, so it is forgotten with the span
    and folded into the new one (the summariser gets both). None when nothing would be forgotten or the summary
    could outgrow what it replaces (``plan_shrinks``)."""
    n = len(state)
    head = ev.messages(0, ks)
    start = harness_start(state, ev.tail_start(ke, n))
    if head and start <= head[-1]:
        return None
    live = live_user(state, start, tuple(head))
    if not any(i < start and i not in live for i in ev.messages(ks)):
        return None
    plan = Plan(start=start, pinned=(*head, *live), summarize=True, **summary)  # type: ignore[arg-type]
    return plan if plan_shrinks(state, plan) else None


def masking_plan(state: RunState, rule: Rule, bound: int) -> Plan | None:
    """The view with ``rule`` reaching the messages before ``bound`` (never moving back), None when that
    changes nothing or would grow the prompt (a result shorter than its placeholder)."""
    current = next((e.before for e in state.view.edits if e.rule == rule), 0)
    pf = state.protected_from
    bound = min(bound, pf) if pf is not None else bound
    if bound <= current:
        return None
    edits = tuple(e for e in state.view.edits if e.rule != rule) + (Edit(rule, bound),)
    plan = Plan(start=state.view.start, spans=state.view.spans, edits=edits, mode="mask")
    return plan if plan_shrinks(state, plan) else None


def _truncate_middle(text: str, limit: int, notice: str) -> str:
    """``maybe_truncate`` (V1 ``utils/truncate.py``) without a save directory: at most ``limit`` characters,
    the head (its ceiling half of what the notice leaves) and the tail around the notice."""
    if len(text) <= limit:
        return text
    if len(notice) >= limit:
        return notice[:limit]
    room = limit - len(notice)
    head = room // 2 + room % 2
    tail = room - head
    return text[:head] + notice + (text[-tail:] if tail > 0 else "")


@functools.lru_cache(maxsize=4096)
def sdk_bound(part: Part, limit: int) -> Part:
    """A tool result as the V1 SDK sends it: middle-truncated to its tool's limit (memoised: parts are frozen)."""
    cap = min(limit, SDK_TOOL_LIMITS.get(part.name or "", limit))
    text = _truncate_middle(part.text, cap, SDK_TRUNCATE_NOTICE)
    return part if text == part.text else replace(part, text=text, original_bytes=len(part.text.encode()))


@functools.lru_cache(maxsize=4096)
def v0_bound(part: Part, limit: int) -> Part:
    """A tool result as V0 renders it: ``truncate_content``, half the limit from each end around the marker."""
    if len(part.text) <= limit:
        return part
    half = limit // 2
    text = part.text[:half] + V0_TRUNCATED + part.text[-half:]
    return replace(part, text=text, original_bytes=len(part.text.encode()))


# -- V1 SDK: LLMSummarizingCondenser -----------------------------------------------------------------------
@dataclass(frozen=True)
class SummarizingConfig:
    """``LLMSummarizingCondenser`` fields (V1 ``llm_summarizing_condenser.py``; catalogue §B6b).

    Attributes:
        max_size: condense when the view holds more events (default 240; the default agent's
            ``default_condenser()`` uses 80: :data:`DEFAULT_AGENT_PRESET`).
        keep_first: events at the start of the view never forgotten (default 2; the default agent 4).
        max_tokens: token cap; the trigger is ``min(max_tokens, the agent LLM's effective_max_input_tokens)``,
            and the agent always passes its LLM, so unset still means the model's input limit (here
            ``model.input_budget``).
        minimum_progress: a condensation forgetting fewer than this share of the view's events is not made.
        tool_text_limit: the 50,000-character cap on tool text (``DEFAULT_TEXT_CONTENT_LIMIT``).
        overflow_retries: compact-and-retry rounds after a context-window error (:data:`OVERFLOW_RETRIES`).
    """

    max_size: int = SDK_MAX_SIZE
    keep_first: int = SDK_KEEP_FIRST
    max_tokens: int | None = None
    minimum_progress: float = SDK_MINIMUM_PROGRESS
    tool_text_limit: int = SDK_TOOL_TEXT_LIMIT
    overflow_retries: int = OVERFLOW_RETRIES

    def __post_init__(self) -> None:
        if self.max_size <= 0:
            raise InvalidConfig(f"max_size={self.max_size!r} must be positive")
        if self.keep_first < 0:
            raise InvalidConfig(f"keep_first={self.keep_first!r} must be >= 0")
        if self.max_size // 2 - self.keep_first - 1 <= 0:
            raise InvalidConfig(
                f"keep_first={self.keep_first} must be less than max_size // 2 - 1 (max_size={self.max_size}) to "
                "leave room for condensation: raise max_size or lower keep_first"
            )
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise InvalidConfig(f"max_tokens={self.max_tokens!r} must be positive or unset")
        if not 0 < self.minimum_progress < 1:
            raise InvalidConfig(f"minimum_progress={self.minimum_progress!r} must be in (0, 1)")
        if self.tool_text_limit <= len(SDK_TRUNCATE_NOTICE):
            raise InvalidConfig(
                f"tool_text_limit={self.tool_text_limit!r} must exceed the {len(SDK_TRUNCATE_NOTICE)}-character notice"
            )
        if self.overflow_retries < 0:
            raise InvalidConfig(f"overflow_retries={self.overflow_retries!r} must be >= 0")


@register("openhands-summarizing")
class OpenHandsSummarizing(Policy[SummarizingConfig]):
    """OpenHands V1 SDK LLMSummarizingCondenser: events > 240 (soft) or tokens > limit (hard); keep 2 + a tail.

    * Before every LLM call (``agent.py``: ``condense(view, agent_llm=llm)``), the reasons: ``request`` (an
      unhandled ``CondensationRequest``: here a provider overflow or ``/compact``), ``tokens`` (the view's
      tokens over ``min(max_tokens, model.input_budget)``), ``events`` (``len(view) > max_size``). Tokens or a
      request make the condensation hard, events alone soft.
    * Kept suffix, the strictest of the reasons: request ``len(view)//2 - keep_first - 1``, events
      ``max_size//2 - keep_first - 1``, tokens the longest suffix whose removed prefix (after ``keep_first``)
      holds more than ``tokens - limit//2`` (to half the limit).
    * Forgotten: from the first cut point at or after ``keep_first`` (never the system prompt) to the first cut
      point at or after ``len(view) - suffix`` (rounding up). Nothing forgotten, or fewer than
      ``minimum_progress`` of the events, is no condensation: soft goes on uncondensed, hard falls back to a
      **hard context reset** (everything after the system prompt summarised, nothing kept).
    * The summary is a plain user message at the forgetting start, right after the head; the next condensation
      forgets it with its span and re-summarises it (merge).
    * Tool text is middle-truncated as it enters (50,000 characters; terminal 30,000, file editor 16,000).

    Departures: the last user message is kept (pinned before the summary) where the SDK's rounding up or hard
    reset would forget it (:func:`live_user`); the token count has no tool schemas; the hard reset's retries
    with shorter per-event caps are one attempt here (a failed summary leaves the view unchanged); after a hard
    reset the SDK's ``keep_first`` head takes the reset's summary and keeps it verbatim beside later summaries,
    here one summary holds both; a condensation whose summary could outgrow what it replaces is not made; an
    unresolved pending turn is never condensed (the harness's contract).
    """

    TUNABLE = {
        "max_size": "40:240:20",
        "keep_first": "1:8",
    }
    TUNABLE_NATIVE = {
        "max_size": "LLMSummarizingCondenser(max_size={value})",
        "keep_first": "LLMSummarizingCondenser(keep_first={value})",
    }

    Config = SummarizingConfig
    # OpenHands has no notion of reverts: a revert can outlive the change it reverts.
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": "OpenHands has no notion of reverts: a revert can outlive the change it reverts",
    }

    @property
    def retry_on_overflow(self) -> int:
        return self.config.overflow_retries

    def bound_tool_result(self, part: Part) -> Part:
        return sdk_bound(part, self.config.tool_text_limit)

    def bound_key(self) -> Hashable:
        return ("openhands-sdk", self.config.tool_text_limit)

    def token_limit(self, state: RunState) -> int:
        """``_effective_max_tokens``: the condenser's cap and the agent LLM's input limit, the smaller."""
        cap = self.config.max_tokens
        return state.model.input_budget if cap is None else min(cap, state.model.input_budget)

    def reasons(self, state: RunState, ev: EventView, trigger: Trigger) -> set[Reason]:
        """``get_condensation_reasons``."""
        out: set[Reason] = set()
        if trigger in ("overflow", "manual"):
            out.add("request")
        if state.view_size()[0] > self.token_limit(state):
            out.add("tokens")
        if ev.total > self.config.max_size:
            out.add("events")
        return out

    def over_trigger(self, state: RunState) -> bool:
        return bool(self.reasons(state, EventView(state), "auto"))

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        ev = EventView(state)
        reasons = self.reasons(state, ev, trigger)
        if not reasons:
            return None
        plan = self.condensation(state, ev, reasons)
        if plan is None and reasons & {"tokens", "request"}:
            plan = self.hard_context_reset(state)
        return plan

    def condensation(self, state: RunState, ev: EventView, reasons: set[Reason]) -> Plan | None:
        """``_get_forgotten_events`` and ``get_condensation``; None where the SDK raises
        ``NoCondensationAvailableException``."""
        cfg = self.config
        suffixes: list[int] = []
        if "request" in reasons:
            suffixes.append(ev.total // 2 - cfg.keep_first - 1)
        if "events" in reasons:
            suffixes.append(cfg.max_size // 2 - cfg.keep_first - 1)
        if "tokens" in reasons:
            suffixes.append(self.token_suffix(state, ev))
        ks = ev.find_next(max(cfg.keep_first, ev.system))
        ke = ev.find_next(ev.total - min(suffixes))
        if ks is None or ke is None or ke <= ks:
            return None
        forgotten = ev.offsets[ke] - ev.offsets[ks]
        if forgotten < ev.total * cfg.minimum_progress:
            return None
        return forget_plan(state, ev, ks, ke, mode="summarize", summary_request=SummaryRequest(prompt=SUMMARY_PROMPT))

    def token_suffix(self, state: RunState, ev: EventView) -> int:
        """``get_suffix_length_for_token_reduction`` on the events after ``keep_first``: the events kept when the
        shortest prefix holding more than ``tokens - limit//2`` tokens is removed (binary search, whole items)."""
        first = ev.find_next(self.config.keep_first)
        first = len(ev.items) if first is None else first
        rest = len(ev.items) - first
        total = state.view_size()[0]
        reduction = total - self.token_limit(state) // 2
        if reduction <= 0 or rest == 0:
            return ev.total - ev.offsets[first]

        def removed(p: int) -> int:
            return total - state.view_size(_without(state, ev, first, first + p))[0]

        if removed(rest) <= reduction:
            return 0
        lo, hi = 1, rest
        while lo < hi:
            mid = (lo + hi) // 2
            if removed(mid) > reduction:
                hi = mid
            else:
                lo = mid + 1
        return ev.total - ev.offsets[first + lo]

    def hard_context_reset(self, state: RunState) -> Plan | None:
        """``hard_context_reset``: summarise every event after the system prompt; the summary follows it."""
        start = harness_start(state, len(state))
        live = live_user(state, start, ())
        plan = Plan(
            start=start,
            pinned=live,
            summarize=True,
            mode="hard-reset",
            summary_request=SummaryRequest(prompt=SUMMARY_PROMPT),
        )
        if start == state.view.start and not state.view.spans:
            return None
        return plan if plan_shrinks(state, plan) else None


def _without(state: RunState, ev: EventView, a: int, b: int) -> View:
    """The current view with items ``[a, b)`` removed (for counting what removing them saves)."""
    view = state.view
    start = ev.tail_start(b, len(state))
    keeps_summary = any(x.index < 0 for x in ev.items[:a] + ev.items[b:])
    return View(
        start=start,
        spans=spans_of(i for i in ev.messages(0, a) if i < start),
        summary=view.summary if keeps_summary else None,
        summary_slot=view.summary_slot,
        edits=view.edits,
        injected=view.injected,
        placeholder=view.placeholder,
    )
