"""OpenHands V0 condensers: observation masking, browser output masking, the conversation window, and the
application's default pipeline made of them and the summarizing condenser.

Sources and the event view they share are :mod:`policies.openhands`'s docstring: ``All-Hands-AI/OpenHands``
``openhands/core/config/condenser_config.py@068f86b1`` (the config defaults),
``openhands/memory/condenser/impl/observation_masking_condenser.py@b781d1b0``, ``browser_output_condenser.py@acb8ec0d``,
``conversation_window_condenser.py@075f0b8b``, ``llm_summarizing_condenser.py@396b2c9f`` and ``pipeline.py``, and the
server session's default pipeline (``openhands/server/session/session.py``).
"""

from __future__ import annotations

import functools
from bisect import bisect_right
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import first_user_index, keep_newest_bound, plan_shrinks
from policies.openhands import (
    BROWSER_OMITTED,
    MASKED,
    OVERFLOW_RETRIES,
    SUMMARY_PROMPT,
    V0_APP_BROWSER_WINDOW,
    V0_APP_KEEP_FIRST,
    V0_APP_MAX_SIZE,
    V0_BROWSER_TOOLS,
    V0_BROWSER_WINDOW,
    V0_MASKING_WINDOW,
    V0_MAX_EVENT_LENGTH,
    V0_MAX_MESSAGE_CHARS,
    EventView,
    events_before,
    forget_plan,
    harness_start,
    live_user,
    masking_plan,
    v0_bound,
)
from sim.core.conversation import Part
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Messages, Rule, layout


# -- V0: observation masking and browser output masking -----------------------------------------------------
class _V0Config(Protocol):
    @property
    def max_message_chars(self) -> int: ...


V0C = TypeVar("V0C", bound=_V0Config)


class _V0Policy(Policy[V0C]):
    """What the V0 condensers share: observations middle-truncated on entry to ``max_message_chars``."""

    def bound_tool_result(self, part: Part) -> Part:
        return v0_bound(part, self.config.max_message_chars)

    def bound_key(self) -> Hashable:
        return ("openhands-v0", self.config.max_message_chars)


@dataclass(frozen=True)
class MaskingConfig:
    """``ObservationMaskingCondenserConfig`` (V0 ``condenser_config.py``).

    Attributes:
        attention_window: observations among the newest this many events keep their content (default 100).
        max_message_chars: V0's ``LLMConfig.max_message_chars``: observations are middle-truncated to it.
    """

    attention_window: int = V0_MASKING_WINDOW
    max_message_chars: int = V0_MAX_MESSAGE_CHARS

    def __post_init__(self) -> None:
        if self.attention_window < 1:
            raise InvalidConfig(f"attention_window={self.attention_window!r} must be >= 1 (the config's ge=1)")
        if self.max_message_chars < 2:
            raise InvalidConfig(f"max_message_chars={self.max_message_chars!r} must be >= 2")


#: Every observation's content replaced by ``<MASKED>``: a rule of its own, not the standard clearing with a
#: ``<MASKED>`` placeholder, because ``sim.core.view.fold`` starts from the default placeholder, so with another
#: one the view folded from the log differs from the engine's before the first compaction (``log-append-only``).
MASK_RULE = Rule(kinds=frozenset({"tool_result"}), text=MASKED)


def masking_bound(state: RunState, window: int) -> int:
    """The first message whose observations are all among the view's newest ``window`` events: V0 masks an
    observation at position ``i < len(view) - window``; a tool message straddling the line stays whole.

    :class:`EventView`'s ``tail_start(item_at(total - window))`` past the summary and injected items, counted from
    the log's running count of events (:func:`events_before`) instead of an item per message: the masking condenser
    keeps every message, so building the whole event view on every step was quadratic in the conversation."""
    events = state.running(events_before, 0)
    items = layout(state.view, len(state), state.has_system)
    sizes = [events[x.b] - events[x.a] if isinstance(x, Messages) else 1 for x in items]
    line, before, found = max(0, sum(sizes) - window), 0, False
    for x, size in zip(items, sizes, strict=True):
        if not isinstance(x, Messages):
            found = found or before + 1 > line  # the line falls on it: the next message starts the kept part
        elif found:
            return x.a
        elif before + size > line:  # the first message of the range whose events pass the line
            return bisect_right(events, line - before + events[x.a], x.a + 1, x.b + 1) - 1
        before += size
    return len(state)


@register("openhands-masking")
class OpenHandsMasking(_V0Policy[MaskingConfig]):
    """OpenHands V0 ObservationMaskingCondenser: observations outside the newest 100 events read ``<MASKED>``.

    * Every step the condenser rebuilds the view: each observation more than ``attention_window`` events from
      the end has its content replaced by ``<MASKED>``; actions (the calls and their ids) stay, so pairing
      holds. No trigger, no summary, no request handling (a context-window error ends the run).
    * Here each step's masking is a compaction that moves the masked bound forward (never back); it is made
      only when the results it masks are longer than the placeholder.
    * Observations are middle-truncated to 30,000 characters (V0 ``max_message_chars``).

    Departures: V0 replaces the whole observation event with an ``AgentCondensationObservation``; here the
    result's text is replaced in place. A tool message holding a parallel batch is masked whole or not at all.
    """

    TUNABLE = {
        "attention_window": "10:200:10",
    }
    TUNABLE_NATIVE = {
        "attention_window": "ObservationMaskingCondenserConfig(attention_window={value})",
    }

    Config = MaskingConfig

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":
            return None
        return masking_plan(state, MASK_RULE, masking_bound(state, self.config.attention_window))


@dataclass(frozen=True)
class BrowserConfig:
    """``BrowserOutputCondenserConfig`` (V0 ``condenser_config.py``).

    Attributes:
        attention_window: the newest this many browser observations keep their content (default 1).
        browser_tools: comma-separated tool names whose results are browser observations (:data:`V0_BROWSER_TOOLS`).
        max_message_chars: V0's ``LLMConfig.max_message_chars``.
    """

    attention_window: int = V0_BROWSER_WINDOW
    browser_tools: str = V0_BROWSER_TOOLS
    max_message_chars: int = V0_MAX_MESSAGE_CHARS

    def __post_init__(self) -> None:
        if self.attention_window < 1:
            raise InvalidConfig(f"attention_window={self.attention_window!r} must be >= 1 (the config's ge=1)")
        if not _tools(self.browser_tools):
            raise InvalidConfig("browser_tools must name at least one tool, comma-separated (e.g. browser,web_read)")
        if self.max_message_chars < 2:
            raise InvalidConfig(f"max_message_chars={self.max_message_chars!r} must be >= 2")


def _tools(names: str) -> frozenset[str]:
    return frozenset(t.strip() for t in names.split(",") if t.strip())


@functools.cache
def browser_rule(tools: str) -> Rule:
    """Browser observations' content replaced by V0's omission notice."""
    return Rule(kinds=frozenset({"tool_result"}), tools=_tools(tools), text=BROWSER_OMITTED)


@register("openhands-browser-output")
class OpenHandsBrowserOutput(_V0Policy[BrowserConfig]):
    """OpenHands V0 BrowserOutputCondenser: browser observations but the newest 1 read "Visited URL ... omitted".

    * Every step, walking back from the newest event, browser observations after the first
      ``attention_window`` are replaced by ``Visited URL {url}\\nContent omitted``; everything else is untouched.
      No trigger, no summary.
    * Here the masked bound moves forward per step (never back), over the newest ``attention_window`` browser
      results (``keep_newest_bound``); made only when it shrinks the prompt.

    Departures: the URL is not known to the simulator (``<url>`` stands in); the whole observation event becomes
    an ``AgentCondensationObservation`` in V0, the result's text here.
    """

    TUNABLE = {
        "attention_window": "1:10",
    }
    TUNABLE_NATIVE = {
        "attention_window": "BrowserOutputCondenserConfig(attention_window={value})",
    }

    Config = BrowserConfig
    acts_on = "browser observations (tool results of its browser_tools), which generated conversations lack"

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":
            return None
        rule = browser_rule(self.config.browser_tools)
        return masking_plan(state, rule, keep_newest_bound(state, rule, self.config.attention_window))


# -- V0: conversation window ---------------------------------------------------------------------------------
def window_plan(state: RunState, ev: EventView) -> Plan | None:
    """``ConversationWindowCondenser.get_condensation``: keep the essential events (system prompt, first user
    message) and the newest half of the others, skipping observations that would open the kept slice."""
    first = first_user_index(state)
    if first is None or not state.view.shows(first):
        return None
    essential = ev.system + 1
    keep = max(1, (ev.total - essential) // 2)
    k = ev.item_at(max(0, ev.total - keep))
    while k < len(ev.items) and (ev.items[k].observation or ev.items[k].events == 0):
        k += 1
    n = len(state)
    start = harness_start(state, ev.tail_start(k, n))
    pinned = (first,) if first < start else ()
    plan = Plan(start=start, pinned=(*pinned, *live_user(state, start, pinned)), mode="window")
    after = plan.view_from(state.view)
    return plan if after != state.view and plan_shrinks(state, plan) else None


@dataclass(frozen=True)
class WindowConfig:
    """``ConversationWindowCondenser`` has no parameters; only the simulator's retry count.

    Attributes:
        overflow_retries: compact-and-retry rounds after a context-window error (:data:`OVERFLOW_RETRIES`).
        max_message_chars: V0's ``LLMConfig.max_message_chars``.
    """

    overflow_retries: int = OVERFLOW_RETRIES
    max_message_chars: int = V0_MAX_MESSAGE_CHARS

    def __post_init__(self) -> None:
        if self.overflow_retries < 0:
            raise InvalidConfig(f"overflow_retries={self.overflow_retries!r} must be >= 0")
        if self.max_message_chars < 2:
            raise InvalidConfig(f"max_message_chars={self.max_message_chars!r} must be >= 2")


@register("openhands-window")
class OpenHandsWindow(_V0Policy[WindowConfig]):
    """OpenHands V0 ConversationWindowCondenser: on a condensation request keep system, first user msg, newest half.

    * Fires only on an unhandled condensation request (a context-window error with history truncation on, or
      ``/compact``): the essential events (system prompt, first user message) stay, then the newest
      ``max(1, non_essential // 2)`` events, minus the observations that would open that slice (their action is
      forgotten); everything else is forgotten, with no summary.

    Departures: the last user message is kept (pinned) where the slice starts after it (:func:`live_user`); the
    recall action and observation of the first user message (microagent knowledge) do not
    exist here; a slice opening inside a parallel batch keeps the whole batch (V0 has no loop atomicity, so a slice
    may open inside a tool loop); an unresolved pending turn is kept.
    """

    Config = WindowConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": "OpenHands has no notion of reverts: a revert can outlive the change it reverts",
    }

    @property
    def retry_on_overflow(self) -> int:
        return self.config.overflow_retries

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "auto":
            return None
        return window_plan(state, EventView(state))


# -- V0: the application's default pipeline ----------------------------------------------------------------------
@dataclass(frozen=True)
class DefaultConfig:
    """The V0 server session's default condenser: window, browser output (2), LLM summarizing (4 / 120).

    Attributes:
        max_size: ``settings.condenser_max_size or 120``.
        keep_first: 4.
        browser_window: the browser output condenser's ``attention_window`` (2).
        browser_tools: comma-separated browser tool names (:data:`V0_BROWSER_TOOLS`).
        max_event_length: characters of each event the summariser sees (``max_event_length`` 10,000).
        max_message_chars: V0's ``LLMConfig.max_message_chars``.
        overflow_retries: compact-and-retry rounds after a context-window error (:data:`OVERFLOW_RETRIES`).
    """

    max_size: int = V0_APP_MAX_SIZE
    keep_first: int = V0_APP_KEEP_FIRST
    browser_window: int = V0_APP_BROWSER_WINDOW
    browser_tools: str = V0_BROWSER_TOOLS
    max_event_length: int = V0_MAX_EVENT_LENGTH
    max_message_chars: int = V0_MAX_MESSAGE_CHARS
    overflow_retries: int = OVERFLOW_RETRIES

    def __post_init__(self) -> None:
        if self.max_size < 2:
            raise InvalidConfig(f"max_size={self.max_size!r} must be >= 2 (the config's ge=2)")
        if not 0 <= self.keep_first < self.max_size // 2 - 1:
            raise InvalidConfig(
                f"keep_first={self.keep_first!r} must be >= 0 and leave a tail: below max_size // 2 - 1 "
                f"({self.max_size // 2 - 1})"
            )
        if self.browser_window < 1:
            raise InvalidConfig(f"browser_window={self.browser_window!r} must be >= 1")
        if not _tools(self.browser_tools):
            raise InvalidConfig("browser_tools must name at least one tool, comma-separated (e.g. browser,web_read)")
        if self.max_event_length < 1 or self.max_message_chars < 2:
            raise InvalidConfig("max_event_length must be >= 1 and max_message_chars >= 2")
        if self.overflow_retries < 0:
            raise InvalidConfig(f"overflow_retries={self.overflow_retries!r} must be >= 0")


@register("openhands-default")
class OpenHandsDefault(_V0Policy[DefaultConfig]):
    """OpenHands V0 app pipeline: window on request, then browser masking (2), then summarizing at 120 events.

    ``CondenserPipeline`` runs its condensers in order and stops at the first that returns a condensation:

    1. ``ConversationWindowCondenser``: on a condensation request (context-window error, ``/compact``), keep the
       system prompt, the first user message and the newest half (:class:`OpenHandsWindow`);
    2. ``BrowserOutputCondenser(attention_window=2)``: browser observations but the newest two omitted
       (:class:`OpenHandsBrowserOutput`), so the summariser sees them omitted too;
    3. V0 ``LLMSummarizingCondenser(keep_first=4, max_size=120)``: when the view holds more than 120 events,
       keep the first 4 events and the newest ``120//2 - 4 - 1 = 55``, summarise the rest with the previous
       summary (each event clipped to 10,000 characters for the summariser), the summary a user message at
       offset ``keep_first``. V0 cuts at raw event positions and then drops calls and results left without their
       pair; here the head ends at the last cut at or before ``keep_first`` and the tail starts at the first cut at
       or after its start, which shows the same messages.

    Departures: the last user message is kept where a condenser would forget it (:func:`live_user`); the window
    condenser cannot remove an earlier summary here (a plan that does not summarise
    keeps the view's summary); the rest as the three policies above.
    """

    TUNABLE = {
        "max_size": "40:240:20",
        "keep_first": "1:8",
    }
    TUNABLE_NATIVE = {
        "max_size": "condenser_max_size = {value} (settings)",
    }

    Config = DefaultConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": "OpenHands has no notion of reverts: a revert can outlive the change it reverts",
    }

    @property
    def retry_on_overflow(self) -> int:
        return self.config.overflow_retries

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        ev = EventView(state)
        if trigger != "auto":
            return window_plan(state, ev)
        cfg = self.config
        rule = browser_rule(cfg.browser_tools)
        bound = keep_newest_bound(state, rule, cfg.browser_window)
        if ev.total > cfg.max_size:
            plan = self.summary_plan(state, ev, rule, bound)
            if plan is not None:
                return plan
        return masking_plan(state, rule, bound)

    def over_trigger(self, state: RunState) -> bool:
        return EventView(state).total > self.config.max_size

    def summary_plan(self, state: RunState, ev: EventView, rule: Rule, bound: int) -> Plan | None:
        """V0 ``LLMSummarizingCondenser.get_condensation`` on the browser-masked view."""
        cfg = self.config
        ks = max(ev.last_cut_at_or_before(cfg.keep_first), ev.system)
        ke = ev.find_next(ev.total - (cfg.max_size // 2 - cfg.keep_first - 1))
        if ke is None or ke <= ks:
            return None
        current = next((e.before for e in state.view.edits if e.rule == rule), 0)
        pf = state.protected_from
        bound = max(current, min(bound, pf) if pf is not None else bound)
        edits = tuple(e for e in state.view.edits if e.rule != rule) + ((Edit(rule, bound),) if bound else ())
        return forget_plan(
            state,
            ev,
            ks,
            ke,
            edits=edits,
            mode="summarize",
            summary_request=SummaryRequest(prompt=SUMMARY_PROMPT, clip_chars=cfg.max_event_length),
        )
