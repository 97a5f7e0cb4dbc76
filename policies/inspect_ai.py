"""inspect_ai compaction: the four strategies of ``src/inspect_ai/model/_compaction/`` as policies.

The handler the strategies share (trigger, prefix, overflow), the summary, trim and auto are here; the edit
strategy is :mod:`policies.inspect_ai_edit`.

Source read: ``UKGovernmentBEIS/inspect_ai@499e6152`` (2026-08-22; the catalogue's commit, whose
compaction files are byte-identical to the PyPI release 0.3.261 that ``conformance/inspect-ai`` runs):
``_compaction.py`` (the ``compaction()`` handler: trigger, running view, re-application, prefix),
``edit.py``, ``trim.py`` with ``model/_trim.py`` (``trim_messages``, ``partition_messages``),
``summary.py``, ``auto.py``, ``native.py``, ``providers/anthropic.py`` (``compact``) and
``agent/_react.py`` (when the handler runs, overflow recovery). Spec: ``reference/policy-catalogue.md``
§B5 and its §F rows.

What the four share, and how it maps onto a view over the log:

* **The running view.** inspect keeps ``compacted_input`` apart from the agent's full history and
  compacts *that* (the previous compacted input plus the messages appended since), never the raw
  history. Here the view is exactly that running input: every decision reads ``state.view`` (what the
  previous compaction left, with the messages appended since in its open tail) and the plan replaces it.
* **Trigger** (``_compaction.py``): before every ``generate`` of the react loop (mid tool loop
  included), compact when the handler's token count is over ``threshold``: a float <= 1 is a share of
  the model's context window (``_resolve_threshold``: ``int(threshold * window)``), anything larger an
  absolute count; default 0.9 (§B5; every strategy's ``threshold=0.9``). The count is the last call's
  reported input plus the new messages counted with a tokenizer, or, right after a compaction, tool
  definitions plus the whole input counted (:func:`context_tokens`).
* **Prefix** (``_compaction.py``, ``agent/_react.py``): system messages and the sample's input (without
  an input marker, everything up to and including the first user message: ``partition_messages``) are
  re-prepended after every non-native strategy (:func:`input_indices`); native compaction keeps only
  the system prompt.
* **Re-application** (``_perform_compaction``): a strategy runs up to three more times while the result
  is still over the threshold and each pass makes progress; still over raises ``RuntimeError``
  ("Compaction insufficient"), which ends the sample. Here an edit or trim whose result would still be
  over the threshold is not made (the policy returns no plan), so the run goes on uncompacted until the
  provider rejects the prompt and it ends with ``context-overflow``: the nearest outcome a policy can give.
  (A summary's size is known only once written: it is applied.)
* **Overflow** (``agent/_react.py`` ``_handle_overflow``): after a ``model_length`` stop the failed turn
  is dropped and the handler compacts with ``force=True`` whatever the count: ``retry_on_overflow`` 1,
  and ``decide(..., "overflow")`` skips the threshold.
* There is no ``/compact`` command: a manual trigger is ignored.

Our addition, for the harness's contract: nothing from the start of an unresolved pending turn on is
compacted (inspect approves tool calls within the turn, so it has no such turn). inspect has no notion of
reverts either: a strategy that drops messages can drop a change whose revert stays (a known deviation).
Not modelled: the memory tool (the warning injected at 0.9 of the threshold, and ``clear_memory_content``,
which rewrites one argument of a memory call: a view edits whole parts), server-side tool uses
(``ContentToolUse``; the simulator has only client tool calls), citations, and hidden redacted-reasoning
tokens. The window is the simulated model's (inspect reads its model database; 128,000 when unknown).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TypeVar

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import first_user_index, plan_shrinks
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Injected, View

#: ``edit.py`` ``TOOL_RESULT_REMOVED``: what a cleared tool result reads.
TOOL_RESULT_REMOVED = "(Tool result removed)"
#: ``edit.py`` ``TOOL_SEARCH_NAME``: a client tool whose result carries tool definitions; never cleared and
#: not counted (``MCP_LIST_TOOLS_NAME`` is its server-side twin; server tool uses are not modelled).
NEVER_CLEARED = frozenset({"tool_search"})
#: ``summary.py``: the user message that carries the summary (``metadata={"summary": True}``).
SUMMARY_WRAPPER = (
    "[CONTEXT COMPACTION SUMMARY]\n\n"
    "The following is a summary of work completed on this task so far:\n\n"
    "<summary>\n{summary}\n</summary>\n\n"
    "Please continue working on this task from where you left off."
)
#: ``providers/anthropic.py`` ``compact``: the user message after the compaction block.
CONTINUE_TEXT = "Please continue working."
#: Our wording of the instruction ``summary.py``'s ``DEFAULT_SUMMARY_PROMPT`` gives (its five sections).
SUMMARY_PROMPT = (
    "You have not finished the task above. Write a structured, concise summary that lets you resume it in a "
    "new context window where this summary replaces the conversation: the task and its success criteria and "
    "constraints; what is done so far (files and outputs, with paths); what was discovered, decided and why, "
    "errors and their fixes, approaches that failed; the next steps in order and any blockers; and the user's "
    "preferences and promises made. Include whatever prevents repeating work or mistakes."
)
#: Our wording for Anthropic's server compaction (``compact_20260112``): inspect sends no instructions.
NATIVE_PROMPT = "Summarise the conversation so far so that the work can continue from this summary alone."
#: ``_perform_compaction`` ``MAX_ITERATIONS``: passes after the first while still over the threshold.
MAX_ITERATIONS = 3
#: The share of the summariser's room a clipped input aims at: the clip is estimated from each message's
#: tokens per character, so it keeps a margin (inspect re-counts after each pass instead).
FIT_SHARE = 0.9
#: ``_largest_shrinkable``: a text is shrunk only while half of it is longer than the truncation marker
#: (``"\n\n...[tool output truncated for summarization]...\n\n"``, 51 characters).
MIN_CLIP_CHARS = 102

C = TypeVar("C")


def check_threshold(threshold: float) -> None:
    if not threshold > 0:
        raise InvalidConfig(
            f"threshold={threshold!r} must be positive: a share of the window (at most 1) or a token count (above 1)"
        )


@dataclass(frozen=True)
class InspectSummaryConfig:
    """``CompactionSummary(threshold=0.9)``.

    Attributes:
        threshold: compact when the context is over this: a share of the context window when at most 1,
            else tokens (``types.py`` and ``summary.py`` default 0.9).
    """

    threshold: float = 0.9

    def __post_init__(self) -> None:
        check_threshold(self.threshold)


@dataclass(frozen=True)
class InspectAutoConfig:
    """``CompactionAuto(threshold=0.9)``.

    Attributes:
        threshold: as for :class:`InspectSummaryConfig` (``auto.py`` default 0.9).
        native: whether the model supports provider-native compaction. inspect tries native first and
            falls back to the summary on ``NotImplementedError`` (an Anthropic model without
            ``compact_20260112`` answers so); True (the default) models a model that has it.
    """

    threshold: float = 0.9
    native: bool = True

    def __post_init__(self) -> None:
        check_threshold(self.threshold)


@dataclass(frozen=True)
class InspectTrimConfig:
    """``CompactionTrim(threshold=0.9, preserve=0.8)``.

    Attributes:
        threshold: as for :class:`InspectSummaryConfig` (``trim.py`` default 0.9).
        preserve: the share of the conversation's messages kept, newest first (``trim.py`` default 0.8;
            ``trim_messages`` accepts 0 to 1).
    """

    threshold: float = 0.9
    preserve: float = 0.8

    def __post_init__(self) -> None:
        check_threshold(self.threshold)
        if not 0 <= self.preserve <= 1:
            raise InvalidConfig(f"preserve={self.preserve!r} must be in [0, 1]")


# -- what every strategy reads ----------------------------------------------------------------------------
def threshold_tokens(threshold: float, window: int) -> int:
    """``_resolve_threshold``: a share of the window when at most 1, else an absolute count."""
    return int(threshold * window) if threshold <= 1 else int(threshold)


def input_indices(state: RunState) -> range:
    """The sample's input, which every non-native strategy keeps: the messages after the system prompt up to
    and including the first user message (``partition_messages`` without ``source="input"`` markers). With
    no user message yet, everything is input and nothing can be compacted."""
    lo = 1 if state.has_system else 0
    first = first_user_index(state)
    return range(lo, len(state) if first is None else first + 1)


def _raw_tokens(state: RunState, a: int) -> int:
    """Tokens of messages ``[a, n)`` as stored (a view of that tail, less the system prompt alone)."""
    return state.view_size(View(start=a))[0] - state.view_size(View(start=len(state)))[0]


def request_overhead(state: RunState) -> int:
    """What the last request held besides its messages (tool definitions, framing), learned from its reported
    size: ``count_tool_tokens`` in inspect, which the reported usage includes. 0 before the first request."""
    last, then = state.last_input_tokens, state.view_at_last_request
    if last is None or then is None:
        return 0
    k = len(state)  # the last request held the messages before its reply, the newest assistant message
    while k > 0 and state.messages[k - 1].role != "assistant":
        k -= 1
    k = max(k - 1, then.start)
    return max(0, last - (state.view_size(then)[0] - _raw_tokens(state, k)))


def context_tokens(state: RunState, view: View | None = None) -> int:
    """The handler's count for ``view`` (default: the current one): the last call's reported input plus the
    messages since, counted; after a compaction, tool definitions plus the whole view counted. Both are the
    request's overhead plus the view's exact tokens."""
    return request_overhead(state) + state.view_size(view)[0]


def newest_first(state: RunState) -> Iterator[int]:
    """Indices the view shows, newest first (the system prompt left out)."""
    v, lo = state.view, (1 if state.has_system else 0)
    for a, b in reversed((*v.spans, (v.start, len(state)))):
        yield from range(min(b, len(state)) - 1, max(a, lo) - 1, -1)


def turn_ceiling(state: RunState) -> int:
    """Nothing from an unresolved pending turn on is compacted (our addition)."""
    pf = state.protected_from
    return len(state) if pf is None else pf


class InspectPolicy(Policy[C]):
    """The handler's part: trigger, force on overflow, nothing on ``/compact``; subclasses compact."""

    def _threshold(self, state: RunState) -> int:
        return threshold_tokens(self.config.threshold, state.model.context_window)  # type: ignore[attr-defined]

    @property
    def retry_on_overflow(self) -> int:
        """react's ``_handle_overflow``: compact (forced) and generate again."""
        return 1

    def over_trigger(self, state: RunState) -> bool:
        """``total_tokens > threshold``."""
        return context_tokens(state) > self._threshold(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "manual" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        plan = self._compact(state, trigger)
        return plan if plan is not None and plan_shrinks(state, plan) else None

    def _compact(self, state: RunState, trigger: Trigger) -> Plan | None:
        raise NotImplementedError

    def _fits(self, state: RunState, plan: Plan) -> bool:
        """``_perform_compaction``'s final check: the result is at most the threshold."""
        return context_tokens(state, plan.view_from(state.view)) <= self._threshold(state)


def _summary_cut(state: RunState, keep: range) -> int | None:
    """Everything shown after ``keep`` (the input, or nothing for native) leaves the view: no tail is kept,
    but a pending turn stays (our addition). None when nothing would leave."""
    cut = max(turn_ceiling(state), state.view.start)
    return cut if any(i < cut and i not in keep for i in newest_first(state)) else None


def _summary_plan(state: RunState) -> Plan | None:
    """``CompactionSummary.compact``: the view becomes system + input + one user message holding the summary
    (``[CONTEXT COMPACTION SUMMARY]`` wrapper); what leaves is summarised with the previous summary, as
    inspect summarises from the last summary message on."""
    inputs = input_indices(state)
    cut = _summary_cut(state, inputs)
    if cut is None:
        return None
    plan = Plan(
        start=cut,
        pinned=tuple(inputs),
        summarize=True,
        summary_request=SummaryRequest(role="user", wrapper=SUMMARY_WRAPPER, prompt=SUMMARY_PROMPT),
        mode="summary",
    )
    return replace(plan, summary_request=replace(plan.summary_request, clip_chars=_fit_clip(state, plan)))


def _text_tokens(state: RunState, text: str) -> int:
    """Tokens of ``text`` as a message the view adds (counted by the run's tokenizer, with its framing)."""
    n = len(state)
    return state.view_size(View(start=n, injected=(Injected(text),)))[0] - state.view_size(View(start=n))[0]


def _fit_clip(state: RunState, plan: Plan) -> int | None:
    """``_fit_summarization_input``: when the summariser's prompt would not fit (the window less the output
    reserve), inspect middle-truncates the largest tool output to half, again and again (up to 12 times), so
    the largest outputs end up about equally long. Approximated by one clip of every message the summariser
    reads at the length that makes the prompt fit (head kept; inspect keeps head and tail and shrinks only
    tool outputs). None when it fits already, or when no clip would do (the summary then fails, as inspect's
    does after its 12 passes)."""
    after = plan.view_from(state.view)
    span = [i for i in newest_first(state) if not after.shows(i)]
    sizes = [state.view_size(View(start=i))[0] - state.view_size(View(start=i + 1))[0] for i in span]
    fixed = _text_tokens(state, plan.summary_request.prompt)
    if state.view.summary is not None:
        fixed += _text_tokens(state, state.view.summary.text)
    budget = FIT_SHARE * (state.model.input_budget - fixed)
    if sum(sizes) <= budget:
        return None
    chars = [max(1, state.messages[i].chars) for i in span]

    def tokens_at(clip: int) -> float:
        return sum(t * min(1.0, clip / c) for t, c in zip(sizes, chars, strict=True))

    lo, hi = 0, max(chars)  # the largest clip whose estimate fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if tokens_at(mid) <= budget else (lo, mid - 1)
    return lo if lo >= MIN_CLIP_CHARS else None


@register("inspect-summary")
class InspectSummary(InspectPolicy[InspectSummaryConfig]):
    """inspect_ai CompactionSummary: at 0.9 of the window, system + input + a user summary, no tail kept.

    ``summary.py``: the summariser sees system + input + the conversation from the last summary message
    on, with the continuation prompt; the new input is system + input + the summary, a user message
    ``[CONTEXT COMPACTION SUMMARY] ... <summary>...</summary> ... Please continue working on this task from
    where you left off.``; nothing of the conversation stays verbatim. When the summariser's prompt would not
    fit, ``_fit_summarization_input`` shrinks the largest tool outputs (approximated by :func:`_fit_clip`).
    Defaults: ``threshold`` 0.9 (§B5, ``summary.py``).
    """

    TUNABLE = {
        "threshold": "0.5:0.95:0.05",
    }
    TUNABLE_NATIVE = {
        "threshold": "CompactionSummary(threshold={value})",
    }

    Config = InspectSummaryConfig
    # No tail: the live turn's user message is summarised whenever it is not the task itself; a change is
    # summarised while a later revert of it is shown. (A summary made inside a thinking tool loop ends the request
    # with the summary, a user message: the model's next reply opens a turn afresh, which Anthropic accepts.)
    known_deviations = frozenset({"live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "inspect keeps no tail: the live turn's user message is summarised unless it is the task",
        "revert-resolution": "inspect summarises a change while a later revert of it stays in view",
    }

    def _compact(self, state: RunState, trigger: Trigger) -> Plan | None:
        return _summary_plan(state)


@register("inspect-auto")
class InspectAuto(InspectPolicy[InspectAutoConfig]):
    """inspect_ai CompactionAuto: at 0.9 of the window, provider-native compaction, else the summary.

    ``auto.py``: ``CompactionNative`` first; on ``NotImplementedError`` (or any error) ``CompactionSummary``.
    Native on Anthropic (``providers/anthropic.py`` ``compact``, ``compact_20260112`` paused after
    compacting): the new input is the system prompt (``preserve_prefix`` is False: no input kept), the
    assistant message carrying the compaction block, and a user ``Please continue working.``; the server's
    summary covers everything sent. A native request for a view that does not fit (after a provider
    overflow, or with a threshold above the input budget) is itself too long: an error, so inspect falls back
    to the summary. On the simulator's OpenAI format (Chat Completions) inspect's native compaction raises
    ``NotImplementedError`` (it needs the Responses API), so the summary runs, as it does with
    ``native=False``. Defaults: ``threshold`` 0.9 (§B5, ``auto.py``); ``native`` True (a model that supports
    native compaction). Not modelled: the Responses API's opaque ``responses.compact`` window.
    """

    TUNABLE = {
        "threshold": "0.5:0.95:0.05",
    }
    TUNABLE_NATIVE = {
        "threshold": "CompactionAuto(threshold={value})",
    }

    Config = InspectAutoConfig
    # Native keeps no user message at all, the summary only the task; reverts as for the summary (both end the
    # request with a user message, so a compaction inside a thinking tool loop is accepted).
    known_deviations = frozenset({"live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "inspect's native compaction keeps no user message, its summary only the task",
        "revert-resolution": "inspect summarises a change while a later revert of it stays in view",
    }

    def _compact(self, state: RunState, trigger: Trigger) -> Plan | None:
        native = self.config.native and state.model.provider == "anthropic"
        if not native or trigger == "overflow" or context_tokens(state) > state.model.input_budget:
            return _summary_plan(state)
        cut = _summary_cut(state, range(0))
        if cut is None:
            return None
        return Plan(
            start=cut,
            summarize=True,
            summary_request=SummaryRequest(role="assistant", prompt=NATIVE_PROMPT),
            injected=(Injected(CONTINUE_TEXT, role="user", label="inspect-continue"),),
            mode="native",
        )


@register("inspect-trim")
class InspectTrim(InspectPolicy[InspectTrimConfig]):
    """inspect_ai CompactionTrim: at 0.9 of the window, keep system + input + the newest 80% of messages.

    ``trim.py`` / ``model/_trim.py`` ``trim_messages`` on the running view: the conversation (the view after
    the input) loses its first ``int(len * (1 - preserve))`` messages; tool messages whose call was dropped
    go too (so the cut moves past them), and a trailing assistant message is dropped. Counted in inspect's
    messages: one tool message per result. Passes compound (``_perform_compaction`` trims the trimmed view
    again, up to three more times, while over the threshold and shrinking), so one compaction may keep
    0.8^k. Defaults: ``threshold`` 0.9, ``preserve`` 0.8 (§B5, §F, ``trim.py``).
    """

    TUNABLE = {
        "threshold": "0.5:0.95:0.05",
        "preserve": "0.3:0.9:0.1",
    }
    TUNABLE_NATIVE = {
        "threshold": "CompactionTrim(threshold={value})",
        "preserve": "CompactionTrim(preserve={value})",
    }

    Config = InspectTrimConfig
    # A count of messages knows no turns: the cut can take the live turn's user message; inside the live tool loop
    # it can drop the reply whose thinking opened the loop (only orphaned results are filtered), and without
    # interleaved thinking the kept replies carry none, which Anthropic rejects; it drops changes whose reverts stay.
    known_deviations = frozenset({"live-turn", "atomic-units", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "inspect's trim counts messages, not turns, so it can take the live turn's user message",
        "atomic-units": (
            "inspect's trim can drop the reply whose thinking opened the live tool loop"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "revert-resolution": "inspect's trim drops changes whose reverts stay",
    }

    def _compact(self, state: RunState, trigger: Trigger) -> Plan | None:
        inputs = input_indices(state)
        conversation = [i for i in reversed(list(newest_first(state))) if i >= inputs.stop]
        if not conversation:
            return None
        best, total = None, None
        for _ in range(1 + MAX_ITERATIONS):
            conversation = self._trim_once(state, conversation)
            plan = self._plan(state, inputs, conversation)
            tokens = context_tokens(state, plan.view_from(state.view))
            if total is not None and tokens >= total:  # no progress: stop
                break
            best, total = plan, tokens
            if tokens <= self._threshold(state) or not conversation:
                break
        return best if best is not None and self._fits(state, best) else None

    def _trim_once(self, state: RunState, conversation: list[int]) -> list[int]:
        """One ``trim_messages`` pass over the conversation's indices."""
        msgs = state.messages
        units = [max(1, len(msgs[i].results)) if msgs[i].role == "tool" else 1 for i in conversation]
        drop = int(sum(units) * (1 - self.config.preserve))
        k = 0
        while k < len(conversation) and drop >= units[k]:
            drop -= units[k]
            k += 1
        while k < len(conversation) and msgs[conversation[k]].role == "tool":  # results of a dropped call
            k += 1
        kept = conversation[k:]
        if kept and msgs[kept[-1]].role == "assistant":
            kept = kept[:-1]
        return kept

    @staticmethod
    def _plan(state: RunState, inputs: range, kept: list[int]) -> Plan:
        """The view of system + input + ``kept`` (sorted indices): its newest run is the tail, the rest are
        pinned; moved back to keep a pending turn (our addition)."""
        start, j = len(state), len(kept)
        while j > 0 and kept[j - 1] == start - 1:
            j, start = j - 1, start - 1
        # never below the current tail's start: kept messages before it stay pinned (the same view; a start moved
        # back would read as un-compacting)
        start = max(start, state.view.start)
        start = min(start, max(turn_ceiling(state), state.view.start))
        return Plan(start=start, pinned=tuple(i for i in (*inputs, *kept) if i < start), mode="trim")
