"""LangChain v1 agent middleware: ``SummarizationMiddleware`` and ``ContextEditingMiddleware`` with
``ClearToolUsesEdit``.

Read: the ``langchain`` package 1.5.2 on PyPI (with ``langchain-core`` 1.8.3), files
``langchain/agents/middleware/summarization.py`` and ``context_editing.py``, and
``langchain_core/messages/utils.py`` (``count_tokens_approximately``, ``trim_messages``); the catalogue
``reference/policy-catalogue.md`` §B7a, §B7b and §F, which read ``langchain-ai/langchain``
``context_editing.py@925aa15f`` and ``summarization.py@d1382304``. ``conformance/langchain/`` runs the
package's own functions on scripted message lists and ``tests/conformance/test_conformance_langchain.py``
compares these policies with what they did.

Both middlewares live in ``create_agent``'s graph, which keeps the system prompt apart from the state's
messages: every count and every message index below is over the messages after the system prompt.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, newest_results_bound, plan_shrinks
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Messages, Rule, View, edited, edited_chars, layout

# count_tokens_approximately: ceil(characters / chars_per_token) per message plus 3 tokens a message.
CHARS_PER_TOKEN = 4.0
# SummarizationMiddleware tunes the counter for Anthropic chat models (``_get_approximate_token_counter``:
# 3.3, "estimated in an offline experiment, comparing with Claude's token-counting API").
ANTHROPIC_CHARS_PER_TOKEN = 3.3
EXTRA_TOKENS_PER_MESSAGE = 3
# Characters count_tokens_approximately adds that our message sizes leave out: the message's OpenAI role name
# (``_get_message_openai_role``: "system" here, the others counted per message by :func:`extra_chars`), and per tool
# call the repr of ``AIMessage.tool_calls`` around each call's name, arguments and id (``[{'name': ..., 'args': ...,
# 'id': ..., 'type': 'tool_call'}]``: 55 characters a call, the list's brackets and separators shared out) plus the
# call id itself, once in that repr and once more as the ToolMessage's ``tool_call_id``: each id counts twice, at its
# real length (Claude Code's ``toolu_`` ids are 30 characters, the scenarios' ``call_0001`` 9).
ROLE_CHARS = len("system")
CALL_FRAMING_CHARS = 55
OPENAI_ROLE = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
# use_usage_metadata_scaling: the estimate is scaled by the provider's last total, by at most 1.25.
USAGE_SCALE_CAP = 1.25

# _build_new_messages: the summary becomes a HumanMessage with this prefix.
SUMMARY_WRAPPER = "Here is a summary of the conversation to date:\n\n{summary}"
# Our wording of DEFAULT_SUMMARY_PROMPT ("Context Extraction Assistant"): its objective and its four
# sections.
SUMMARY_PROMPT = (
    "You extract the context that matters from the conversation below; it will replace that history, so keep "
    "only what the agent needs to carry on without repeating work. Write four sections, each filled in or "
    "'None': SESSION INTENT (the user's goal), SUMMARY (choices, conclusions, reasons, rejected options), "
    "ARTIFACTS (files and resources created, changed or read, with what changed), NEXT STEPS. Answer with the "
    "extracted context only."
)
TRIM_TOKENS_TO_SUMMARIZE = 4_000  # _DEFAULT_TRIM_TOKEN_LIMIT
MESSAGES_TO_KEEP = 20  # _DEFAULT_MESSAGES_TO_KEEP
CLEARED = "[cleared]"  # DEFAULT_TOOL_PLACEHOLDER
CLEARED_INPUT = "{}"  # _build_cleared_tool_input_message sets the call's args to {}

Kind = Literal["tokens", "messages", "fraction"]
KINDS: tuple[Kind, ...] = ("tokens", "messages", "fraction")


# -- LangChain's approximate count, from prefix sums over the log ---------------------------------------------
def approx_tokens(state: RunState, view: View | None = None, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """``count_tokens_approximately`` of the messages ``view`` (default: the current one) shows, the system
    prompt left out: per message, its characters as the view's edits leave them plus its role name, tool-call
    framing and call ids (:func:`message_extra`) over ``chars_per_token``, rounded up, plus 3. O(spans + edits):
    prefix sums of those per-message counts, one per rule set and ratio, extended as the log grows."""
    v = state.view if view is None else view
    total = 0
    for item in layout(v, len(state), state.has_system):
        if isinstance(item, Messages):
            a = max(item.a, 1 if state.has_system else 0)
            if a < item.b:
                prefix = _counts(state, item.rules, chars_per_token)
                total += prefix[item.b] - prefix[a]
        else:  # the summary, an injected message: a message of its role, its text counted
            chars = len(item.text) + len(OPENAI_ROLE[item.role])
            total += math.ceil(chars / chars_per_token) + EXTRA_TOKENS_PER_MESSAGE
    return total


def view_counts(state: RunState, view: View) -> tuple[int, int, int]:
    """Characters, messages and tool calls of what ``view`` shows after the system prompt."""
    system = state.messages[0].chars if state.has_system else 0
    chars = state.chars_in_view(view) - system
    messages = state.view_size(view)[1] - (1 if state.has_system else 0)
    return chars, messages, state.tool_uses(view)


def suffix_tokens(state: RunState, a: int, chars_per_token: float) -> int:
    """The approximate count of log messages ``[a, n)`` as stored (``_partial_token_counter``: no usage
    scaling)."""
    prefix = _counts(state, (), chars_per_token)
    return prefix[len(state)] - prefix[a]


def message_extra(m: Message) -> int:
    """What ``count_tokens_approximately`` counts in ``m`` besides its text, arguments and names: its role name, 55
    characters of repr per tool call, the call id of every call and every result (LangChain's edits keep ids), and
    the difference between each call's arguments as the log holds them (JSON) and as LangChain counts them (the repr
    of the parsed dict: a quote inside a string is one character there, two in JSON)."""
    ids = sum(len(p.call_id or "") for p in m.parts if p.kind in ("tool_call", "tool_result"))
    return (
        len(OPENAI_ROLE[m.role]) + CALL_FRAMING_CHARS * len(m.calls) + ids + sum(_repr_delta(p.args) for p in m.calls)
    )


def _repr_delta(args: str | None) -> int:
    if not args:
        return 0
    try:
        return len(repr(json.loads(args))) - len(args)
    except ValueError:
        return 0


#: Prefix sums of each message's approximate count, keyed by the log's list of messages (held, so its id is not
#: reused while the entry lives), the rules that edit the messages and the ratio. A log only grows, so an entry is
#: extended, never recomputed: O(new messages) per request. A cache, not state: every sum is a function of the
#: messages alone.
_COUNTS: dict[tuple[int, tuple[Rule, ...], float], tuple[Sequence[Message], list[int]]] = {}


def _counts(state: RunState, rules: tuple[Rule, ...], chars_per_token: float) -> list[int]:
    msgs = state.messages
    key = (id(msgs), rules, chars_per_token)
    hit = _COUNTS.get(key)
    if hit is None or hit[0] is not msgs or len(hit[1]) > len(msgs) + 1:
        if len(_COUNTS) >= 256:
            _COUNTS.clear()
        hit = _COUNTS[key] = (msgs, [0])
    prefix = hit[1]
    for m in msgs[len(prefix) - 1 :]:
        if rules and edited(m, rules) is None:  # every part dropped: the message is not sent
            prefix.append(prefix[-1])
            continue
        chars = edited_chars(m, rules) + message_extra(m)
        prefix.append(prefix[-1] + math.ceil(chars / chars_per_token) + EXTRA_TOKENS_PER_MESSAGE)
    return prefix


# -- trigger and keep specifications --------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def parse_trigger(spec: str | None) -> tuple[tuple[tuple[Kind, float], ...], ...]:
    """``trigger`` in LangChain's terms: clauses joined by ``|`` (any may hold: a list), each a ``kind:value``
    or several joined by ``&`` (all must hold: a ``TriggerClause`` dict); kinds ``tokens``, ``messages``,
    ``fraction``. None: never. Raises InvalidConfig as LangChain's ``_validate_context_size`` raises."""
    if spec is None or spec.strip().lower() in ("", "none"):
        return ()
    return tuple(tuple(parse_size(c, "trigger") for c in clause.split("&")) for clause in spec.split("|"))


@functools.lru_cache(maxsize=64)
def parse_size(spec: str, what: str) -> tuple[Kind, float]:
    """One ``kind:value`` (a ``ContextSize``), validated: fraction in (0, 1], tokens and messages whole and > 0."""
    kind, sep, raw = spec.strip().partition(":")
    if not sep or kind not in KINDS:
        raise InvalidConfig(
            f"{what} {spec!r} must be kind:value with kind one of {', '.join(KINDS)} (e.g. 'fraction:0.8', "
            "'tokens:4000'); join alternatives with '|' and conditions that must all hold with '&'"
        )
    try:
        value = float(raw) if kind == "fraction" else int(raw.replace("_", ""))
    except ValueError:
        wanted = "number" if kind == "fraction" else "whole number"
        raise InvalidConfig(f"{what} {spec!r}: {raw!r} is not a {wanted}") from None
    if kind == "fraction" and not 0 < value <= 1:
        raise InvalidConfig(f"{what} {spec!r}: a fraction must be in (0, 1]")
    if value <= 0:
        raise InvalidConfig(f"{what} {spec!r}: {kind} must be greater than 0")
    return kind, value


def fraction_tokens(state: RunState, value: float) -> int:
    """``int(max_input_tokens * value)``, at least 1; the model profile's ``max_input_tokens`` is our input
    budget (the most a prompt may hold)."""
    return max(1, int(state.model.input_budget * value))


# -- SummarizationMiddleware ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LangChainSummarizationConfig:
    """Parameters, LangChain's names.

    Attributes:
        trigger: when to summarise (:func:`parse_trigger`). Default ``fraction:0.8``: the class's own default
            is None (never summarise; give ``none``), and 0.8 of the model's input is the example its
            docstring gives (``trigger=("fraction", 0.8)``; ``[("fraction", 0.8), ("messages", 100)]``).
        keep: what stays verbatim, one ``kind:value``; default ``messages:20`` (``_DEFAULT_MESSAGES_TO_KEEP``).
        trim_tokens_to_summarize: the summariser sees only the newest this many tokens of the span
            (``_DEFAULT_TRIM_TOKEN_LIMIT`` 4,000); None: all of it.
        chars_per_token: the approximate counter's ratio; None picks LangChain's: 3.3 for an Anthropic model,
            else 4.
        keep_last_user: the harness's contract, not LangChain's: a last user message the cut passes stays in
            view, verbatim, after the summary (as langmem #111 anchors it). False summarises it, as LangChain
            does once the live turn holds more than ``keep`` messages (a ``live-turn`` violation, counted in
            results).
    """

    trigger: str | None = "fraction:0.8"
    keep: str = f"messages:{MESSAGES_TO_KEEP}"
    trim_tokens_to_summarize: int | None = TRIM_TOKENS_TO_SUMMARIZE
    chars_per_token: float | None = None
    keep_last_user: bool = True

    def __post_init__(self) -> None:
        parse_trigger(self.trigger)
        parse_size(self.keep, "keep")
        if self.trim_tokens_to_summarize is not None and self.trim_tokens_to_summarize < 1:
            raise InvalidConfig(f"trim_tokens_to_summarize={self.trim_tokens_to_summarize!r} must be >= 1 or unset")
        if self.chars_per_token is not None and self.chars_per_token <= 0:
            raise InvalidConfig(f"chars_per_token={self.chars_per_token!r} must be positive or unset")


@register("langchain-summarization")
class LangChainSummarization(Policy[LangChainSummarizationConfig]):
    """LangChain v1 SummarizationMiddleware: past the trigger, summarise all but the last 20 messages.

    * ``before_model``, so before every model call (mid tool loop too): count the state's messages with
      ``count_tokens_approximately`` (:func:`approx_tokens`) scaled by the provider's last reported total
      (``use_usage_metadata_scaling``: by at most 1.25), and summarise when any clause of ``trigger`` holds:
      ``tokens`` and ``fraction`` when the count, or the provider's last reported total, reaches the threshold;
      ``messages`` when the state holds that many messages.
    * ``_find_safe_cutoff``: the cut leaves the newest ``keep`` messages (the previous summary counts as the
      oldest message); fewer messages than that: nothing happens. A cut that lands on a tool message moves
      back to the AI message whose calls they answer, so a call stays with its results
      (``_find_safe_cutoff_point``). ``tokens``/``fraction`` keep: the longest suffix within the budget
      (binary search), then the same move.
    * What leaves is summarised together with the previous summary (it is the state's first message), the
      summariser seeing only the newest ``trim_tokens_to_summarize`` tokens of it; the summary becomes a
      HumanMessage "Here is a summary of the conversation to date:" before the kept messages (a rewrite of the
      graph state: ``RemoveMessage(REMOVE_ALL_MESSAGES)``, summary, kept messages).

    Known deviations: the cut knows AI/tool pairs but not thinking tool loops (``atomic-units``); LangChain
    has no reverts (``revert-resolution``); and when the kept messages alone are over the trigger, it
    summarises again before every model call (``compaction-loop``).

    Differences, for the harness or the engine: a last user message the cut passes stays in view after the
    summary unless ``keep_last_user`` is off (LangChain's 20 kept messages can begin inside a long live turn,
    and then it summarises the task itself; the checker's generated turns are too short to show that, so it
    cannot be a declared deviation); nothing in an unresolved pending turn is summarised (an interrupt pauses
    the graph, so ``before_model`` does not run while one waits); a summary that would not shrink the view is
    skipped (LangChain writes it); ``/compact`` does nothing (LangChain has no such command). LangChain trims
    the summariser's input with ``trim_messages(strategy="last", start_on="human")``, which starts it on a
    human message and returns nothing when the newest 4,000 tokens hold none; then it writes "Previous
    conversation was too long to summarize." in place of a summary. The engine's summariser is shown the
    newest pieces within 4,000 tokens from wherever they start, and it keeps what the previous summary kept,
    which LangChain's trim usually cuts off.
    """

    TUNABLE = {
        "trigger": "fraction:0.5,fraction:0.6,fraction:0.7,fraction:0.8,fraction:0.9",
        "keep": "messages:5,messages:10,messages:20,messages:40",
    }
    TUNABLE_NATIVE = {
        "trigger": "SummarizationMiddleware(trigger={value})",
        "keep": "SummarizationMiddleware(keep={value})",
    }

    Config = LangChainSummarizationConfig
    known_deviations = frozenset({"atomic-units", "revert-resolution", "compaction-loop"})
    deviation_reasons = {
        "atomic-units": (
            "LangChain's cut knows AI/tool pairs, so it can drop the reply whose thinking opened the live tool loop"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "revert-resolution": "LangChain has no reverts",
        "compaction-loop": (
            "when the kept messages alone are over the trigger, LangChain summarises again before every model call"
        ),
    }

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or not self.over_trigger(state):
            return None
        cut = self._cutoff(state)
        if cut is None:
            return None
        lu = state.last_user_index
        pinned = (lu,) if self.config.keep_last_user and 0 <= lu < cut and state.view.shows(lu) else ()
        plan = Plan(
            start=cut,
            pinned=pinned,
            summary_slot=0,  # first, as LangChain puts it: before the pinned user message, if any
            summarize=True,
            mode="summarize",
            summary_request=SummaryRequest(
                role="user",
                wrapper=SUMMARY_WRAPPER,
                prompt=SUMMARY_PROMPT,
                input_newest_tokens=self.config.trim_tokens_to_summarize,
            ),
        )
        return plan if plan_shrinks(state, plan) else None

    def chars_per_token(self, state: RunState) -> float:
        cpt = self.config.chars_per_token
        if cpt is not None:
            return cpt
        return ANTHROPIC_CHARS_PER_TOKEN if state.model.provider == "anthropic" else CHARS_PER_TOKEN

    def over_trigger(self, state: RunState) -> bool:
        """``_should_summarize``: any clause of ``trigger`` whose conditions all hold."""
        clauses = parse_trigger(self.config.trigger)
        if not clauses:
            return False
        approx = approx_tokens(state, chars_per_token=self.chars_per_token(state))
        count, reported = approx, 0
        unchanged = not state.view_changed_since_request
        if state.last_input_tokens is not None and unchanged:
            # The provider's last total scales the estimate (by at most 1.25) and triggers by itself too.
            reported = state.last_input_tokens
            count = max(approx, min(state.estimated_context_tokens(), math.ceil(USAGE_SCALE_CAP * approx)))
        messages = view_counts(state, state.view)[1]
        for clause in clauses:
            held = True
            for kind, value in clause:
                if kind == "messages":
                    held = messages >= value
                else:
                    threshold = value if kind == "tokens" else fraction_tokens(state, value)
                    held = count >= threshold or reported >= threshold
                if not held:
                    break
            if held:
                return True
        return False

    def _cutoff(self, state: RunState) -> int | None:
        """The log index where the kept messages start, None when nothing would be summarised. Positions in
        LangChain's message list are ``k``: the previous summary (if any) is ``k = 0``."""
        base, n = floor_index(state), len(state)
        offset = 1 if state.view.summary is not None else 0  # list position k is log index base + k - offset
        total = n - base + offset
        kind, value = parse_size(self.config.keep, "keep")
        if kind == "messages":
            k: int | None = total - int(value) if total > value else None
        else:
            k = self._token_cutoff(state, base, offset, kind, value)
        if k is None:
            return None
        cut = safe_cutoff_point(state, base + k - offset, base)
        if state.protected_from is not None:
            cut = min(cut, state.protected_from)
        return cut if cut > base else None

    def _token_cutoff(self, state: RunState, base: int, offset: int, kind: Kind, value: float) -> int | None:
        """``_find_token_based_cutoff``: the first list position whose suffix fits the budget."""
        target = max(1, int(value) if kind == "tokens" else fraction_tokens(state, value))
        cpt = self.chars_per_token(state)
        n = len(state)
        total = n - base + offset
        if approx_tokens(state, chars_per_token=cpt) <= target:
            return None
        # The suffix of list position k >= offset is the log from base + k - offset; its count only falls as k
        # grows, so the first position that fits is found by bisection (LangChain's binary search finds the same).
        first = bisect.bisect_left(
            range(offset, total), True, key=lambda k: suffix_tokens(state, base + k - offset, cpt) <= target
        )
        k = offset + first
        if k >= total:
            k = total - 1
        return k if k > 0 else None


def safe_cutoff_point(state: RunState, cut: int, base: int) -> int:
    """``_find_safe_cutoff_point``: a cut on a tool message moves back to the assistant message whose calls
    the run of tool messages from there answers; without one, forward past that run."""
    msgs, n = state.messages, len(state)
    if cut >= n or msgs[cut].role != "tool":
        return cut
    ids: set[str] = set()
    end = cut
    while end < n and msgs[end].role == "tool":
        ids.update(p.call_id for p in msgs[end].parts if p.call_id)
        end += 1
    for i in range(cut - 1, base - 1, -1):
        m = msgs[i]
        if m.role == "assistant" and any(p.call_id in ids for p in m.calls):
            return i
    return end


# -- ContextEditingMiddleware + ClearToolUsesEdit ---------------------------------------------------------
@dataclass(frozen=True)
class LangChainClearToolUsesConfig:
    """``ClearToolUsesEdit``'s parameters and defaults (``context_editing.py``).

    Attributes:
        trigger: clear once the messages count more than this many tokens (100,000).
        clear_at_least: stop clearing once this many tokens are reclaimed; 0 (the default) clears every
            candidate.
        keep: the newest tool results left alone (3); excluded tools count towards them.
        clear_tool_inputs: also set the cleared results' calls' arguments to ``{}`` (default off).
        exclude_tools: tool names never cleared (default none; ``-P exclude_tools=a,b``).
        placeholder: what a cleared result reads (``DEFAULT_TOOL_PLACEHOLDER``, ``[cleared]``).
    """

    trigger: int = field(default=100_000, metadata={"tokens": True})
    clear_at_least: int = field(default=0, metadata={"tokens": True})
    keep: int = 3
    clear_tool_inputs: bool = False
    exclude_tools: tuple[str, ...] = ()
    placeholder: str = CLEARED

    def __post_init__(self) -> None:
        if self.trigger < 0 or self.clear_at_least < 0 or self.keep < 0:
            raise InvalidConfig(
                f"trigger ({self.trigger!r}), clear_at_least ({self.clear_at_least!r}) and keep ({self.keep!r}) "
                "must be >= 0"
            )
        if not self.placeholder:
            raise InvalidConfig("placeholder must not be empty: a cleared result still needs content")


@register("langchain-clear-tool-uses")
class LangChainClearToolUses(Policy[LangChainClearToolUsesConfig]):
    """LangChain v1 ContextEditingMiddleware + ClearToolUsesEdit: past 100,000 tokens, clear all but 3 newest results.

    * ``wrap_model_call`` edits a deep copy of the request's messages before every model call: the state is
      never changed, so the view is recomputed from the whole history each time.
    * ``ClearToolUsesEdit.apply``: count the messages (``count_tokens_approximately``, the default
      ``token_count_method="approximate"``); at most ``trigger``: nothing. Else every tool result but the
      newest ``keep`` is a candidate (results of excluded tools count among the kept); oldest first, each one
      not of an excluded tool reads ``placeholder`` (ids and names stay), and with ``clear_tool_inputs`` its
      call's arguments become ``{}``; with ``clear_at_least`` it stops once the count has fallen by that many
      tokens.

    As a view: one edit of tool results up to the message holding the ``keep``-th newest result (a message
    holding several results is kept whole; LangChain's ToolMessages hold one each), and with
    ``clear_tool_inputs`` one of tool calls, up to the assistant message that issued that result, so a call
    whose result is kept keeps its arguments. Nothing in an unresolved pending turn is cleared (the harness's
    contract: LangChain's interrupt pauses the graph); an edit that would grow the view (results shorter than
    the placeholder) waits until it shrinks it.

    Known deviation: ``keep`` counts ToolMessages, not calls' batches, so when the newest assistant message made
    more than ``keep`` parallel calls, the oldest results of that very batch read ``placeholder`` in the request
    that answers them (``live-turn``: the newest tool results cleared). ``ClearToolUsesEdit.apply`` does the
    same (``tool_messages[:-keep]``, before every model call).
    """

    TUNABLE = {
        "trigger": "40000:180000:20000",
        "keep": "1:10",
    }
    TUNABLE_NATIVE = {
        "trigger": "ClearToolUsesEdit(trigger={value})",
        "keep": "ClearToolUsesEdit(keep={value})",
    }

    Config = LangChainClearToolUsesConfig
    known_deviations = frozenset({"live-turn"})
    deviation_reasons = {
        "live-turn": (
            "when the last reply made more than keep parallel calls, LangChain clears the oldest of their results in "
            "the request that answers them"
        ),
    }

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cfg = self.config
        if trigger != "auto":
            return None
        view = state.view
        raw = view.with_(edits=())  # the request's messages as the state holds them
        if approx_tokens(state, raw) <= cfg.trigger:
            return None
        bound = newest_results_bound(state, cfg.keep, self._rules()[0])
        if bound is None:
            return None
        edits = self._edits(state, bound)
        if cfg.clear_at_least > 0:
            edits = self._stop_after(state, raw, bound, edits)
        if edits == view.edits:
            return None
        plan = Plan(start=view.start, edits=edits, mode="clear-tool-uses")
        return plan if plan_shrinks(state, plan) else None

    def _rules(self) -> tuple[Rule, Rule]:
        cfg = self.config
        excluded = frozenset(cfg.exclude_tools)
        results = Rule(kinds=frozenset({"tool_result"}), exclude_tools=excluded, text=cfg.placeholder)
        inputs = Rule(kinds=frozenset({"tool_call"}), exclude_tools=excluded, text=CLEARED_INPUT)
        return results, inputs

    def _edits(self, state: RunState, bound: int) -> tuple[Edit, ...]:
        """Results cleared before ``bound``; with ``clear_tool_inputs``, calls before the assistant message that
        issued the result at ``bound`` (the calls of every cleared result but those of a batch split there)."""
        results, inputs = self._rules()
        edits = [Edit(results, bound)]
        if self.config.clear_tool_inputs:
            owner = bound
            if bound < len(state):
                owner = next((i for i in range(bound, -1, -1) if state.messages[i].role == "assistant"), 0)
            edits.append(Edit(inputs, owner))
        return tuple(e for e in edits if e.before > 0)

    def _stop_after(self, state: RunState, raw: View, bound: int, edits: tuple[Edit, ...]) -> tuple[Edit, ...]:
        """``clear_at_least``: the oldest results only, up to the first whose clearing reclaims that many
        tokens counted from the whole history. The same prefix every call (each result reclaims what it
        reclaims), so the walk starts at the current bound and finds it again in O(1)."""
        current = next((e.before for e in state.view.edits if e.rule == self._rules()[0]), 0)
        start = min(max(current, 1), bound)
        before = approx_tokens(state, raw)
        for i in range(start, bound + 1):
            if i < bound and state.messages[i - 1].role != "tool":
                continue
            trial = self._edits(state, i)
            if before - approx_tokens(state, raw.with_(edits=trial)) >= self.config.clear_at_least:
                return trial
        return edits
