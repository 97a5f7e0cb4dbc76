"""Google ADK event compaction (``EventsCompactionConfig``): the sliding window and the token threshold.

Read: the ``google-adk`` package 2.13.0 on PyPI, files ``google/adk/apps/_configs.py`` (``EventsCompactionConfig``),
``google/adk/apps/compaction.py`` (``_run_compaction_for_sliding_window``,
``_run_compaction_for_token_threshold_config``, ``_events_to_compact_for_token_threshold``,
``_safe_token_compaction_split_index``, ``_longest_self_contained_prefix``, ``_is_range_worth_compacting``,
``_get_compaction_ranges``, ``_latest_prompt_token_count``), ``google/adk/flows/llm_flows/context/_compaction.py``
(``CompactionRequestProcessor``, ``_process_compaction_events``), ``google/adk/apps/llm_event_summarizer.py``
(``LlmEventSummarizer``) and ``google/adk/runners.py`` (``_run_post_invocation_compaction``); the catalogue
``reference/policy-catalogue.md`` §B8 and §F (read at an older ``google/adk-python``, before the summariser showed
tool calls). ``conformance/google-adk/`` runs the package's own selection functions on scripted event lists and
``tests/conformance/test_conformance_google_adk.py`` compares these policies with what they chose.

ADK keeps every event in the session and appends a compaction event (a summary with a ``[start, end]`` timestamp
range); the request is rebuilt each time from the events: every non-subsumed summary at its end timestamp, and the
raw events that no kept range covers. A view over an append-only log, as here. Events map onto the log's messages
one to one (the system prompt is the agent's instruction, not an event); an event's timestamp is its index. An
invocation is what one user message starts: that message and every event up to the next user message.

How the view holds several summaries: ADK keeps every summary that no later range contains, side by side (with
``overlap_size`` > 0 consecutive ranges overlap, so neither contains the other). The engine's view has one summary:
the newest is the view's summary and each older one that survives is an injected assistant message before it,
carrying its text and its facts. The ranges are kept in the view's checkpoint (``adk_ranges``: ``start:end`` pairs,
``end`` exclusive, oldest first, the last one the view's summary's).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Injected, Messages, View, layout

TOKENS = {"tokens": True}
#: The ADK docs' example (``docs/context/compaction.md``: ``compaction_interval=3, overlap_size=1``); the fields
#: themselves have no default (``Optional[int] = None``, and one of the two pairs must be set).
COMPACTION_INTERVAL = 3
OVERLAP_SIZE = 1
#: Ours: ADK has no default for the token pair, and its docs give none we could find. Half of a 200K window, and
#: the newest 5 events kept raw.
TOKEN_THRESHOLD = 100_000
EVENT_RETENTION_SIZE = 5
#: ``LlmEventSummarizer._MAX_TOOL_CONTENT_CHARS``: each tool call's arguments and each response is cut to 2,000
#: characters in the summariser's prompt.
MAX_TOOL_CONTENT_CHARS = 2_000
#: Our wording of ``LlmEventSummarizer._DEFAULT_PROMPT_TEMPLATE`` (restate the user's request, summarise the context
#: with its decisions and findings and what is still open; name the user's language first and the exact tools used).
SUMMARY_PROMPT = (
    "Below is a conversation between a user and an AI agent; it may begin with an earlier summary. Restate what "
    "the user asked for, then summarise the context so far: the decisions taken, what was found out, and the "
    "questions or tasks still open. Start with the language the user writes in, and name every tool the agent "
    "called exactly. Keep the rest short."
)
#: The agent's name when none is given (``LlmAgent(name=...)`` is required; the conformance generator's).
AGENT_NAME = "agent"
#: ``flows/llm_flows/context/_fencing.py``: how another agent's message is relayed as user context, each relayed
#: text between the quote markers (``quote_untrusted``), the whole message after the preamble.
OTHER_AGENT_CONTEXT_PREAMBLE_CHARS = 409  # ``OTHER_AGENT_CONTEXT_PREAMBLE``, 409 characters (2.13.0)
QUOTED_CONTENT_CHARS = len("<<<BEGIN_QUOTED_AGENT_CONTENT>>>\n\n<<<END_QUOTED_AGENT_CONTENT>>>")
#: The checkpoint entry that records the surviving compaction ranges.
RANGES = "adk_ranges"
SUMMARY_LABEL = "adk-summary"
#: The checkpoint entry that records the log's length when the post-invocation compaction ran: asked again at the
#: same point (``recheck_after_compaction``), only the request processor's token check remains.
POST_AT = "adk_post_invocation_at"
POST_MODES = frozenset({"sliding-window", "token-threshold-post-invocation"})

Range = tuple[int, int]


@dataclass(frozen=True)
class ADKConfig:
    """``EventsCompactionConfig``, ADK's names (the summariser is the run's mock summariser).

    Attributes:
        compaction_interval: compact when this many new invocations have completed since the last compaction's end
            (> 0); unset with ``overlap_size`` turns the sliding window off.
        overlap_size: how many invocations before the first new one the window reaches back (>= 0).
        token_threshold: compact when the latest prompt token count reaches this (> 0); unset with
            ``event_retention_size`` turns the token trigger off.
        event_retention_size: the newest raw events kept after a token compaction (>= 0).
        agent_name: the ``LlmAgent``'s ``name`` (required by ADK; ``agent`` here). The post-invocation token check
            estimates with no agent name, so it relays each function response as that agent's quoted transcript,
            name included (:func:`relayed_chars`).
    """

    compaction_interval: int | None = None
    overlap_size: int | None = None
    token_threshold: int | None = field(default=None, metadata=TOKENS)
    event_retention_size: int | None = None
    agent_name: str = AGENT_NAME

    def __post_init__(self) -> None:
        # EventsCompactionConfig's own checks: Field(gt=0) / Field(ge=0) and _validate_trigger_params.
        if self.compaction_interval is not None and self.compaction_interval <= 0:
            raise InvalidConfig(f"compaction_interval={self.compaction_interval!r} must be greater than 0")
        if self.overlap_size is not None and self.overlap_size < 0:
            raise InvalidConfig(f"overlap_size={self.overlap_size!r} must be >= 0")
        if self.token_threshold is not None and self.token_threshold <= 0:
            raise InvalidConfig(f"token_threshold={self.token_threshold!r} must be greater than 0")
        if self.event_retention_size is not None and self.event_retention_size < 0:
            raise InvalidConfig(f"event_retention_size={self.event_retention_size!r} must be >= 0")
        if (self.token_threshold is None) != (self.event_retention_size is None):
            raise InvalidConfig("token_threshold and event_retention_size must be set together (ADK raises too)")
        if (self.compaction_interval is None) != (self.overlap_size is None):
            raise InvalidConfig("compaction_interval and overlap_size must be set together (ADK raises too)")
        if not self.agent_name:
            raise InvalidConfig("agent_name must not be empty (an LlmAgent has a name)")
        if self.token_threshold is None and self.compaction_interval is None:
            raise InvalidConfig(
                "at least one trigger must be set: token_threshold with event_retention_size, or "
                "compaction_interval with overlap_size (ADK raises too)"
            )

    @property
    def sliding(self) -> bool:
        return self.compaction_interval is not None

    @property
    def token(self) -> bool:
        return self.token_threshold is not None


@dataclass(frozen=True)
class ADKSlidingConfig(ADKConfig):
    """``EventsCompactionConfig(compaction_interval=3, overlap_size=1)``, the docs' example; see :class:`ADKConfig`."""

    compaction_interval: int | None = COMPACTION_INTERVAL
    overlap_size: int | None = OVERLAP_SIZE


@dataclass(frozen=True)
class ADKTokenConfig(ADKConfig):
    """``EventsCompactionConfig(token_threshold=100_000, event_retention_size=5)`` (our values: ADK has none); see
    :class:`ADKConfig`."""

    token_threshold: int | None = field(default=TOKEN_THRESHOLD, metadata=TOKENS)
    event_retention_size: int | None = EVENT_RETENTION_SIZE


# -- reading the log as ADK's events ---------------------------------------------------------------------------
def base_index(state: RunState) -> int:
    """The first event: past the system prompt (the agent's instruction, not an event)."""
    return 1 if state.has_system else 0


def is_user_turn(state: RunState, i: int) -> bool:
    """Whether message ``i`` is a user message that starts an invocation (``Runner.run_async(new_message=...)``)."""
    m = state.messages[i]
    return m.role == "user" and m.command is None


def invocation_start(state: RunState, i: int) -> int:
    """The first event of the invocation that holds event ``i``: the user message at or before it (the first
    event when none is)."""
    base = base_index(state)
    while i > base and not is_user_turn(state, i):
        i -= 1
    return max(i, base)


def ranges_of(view: View) -> list[Range]:
    """The surviving compaction ranges recorded in ``view``, oldest first."""
    raw = dict(view.checkpoint).get(RANGES, "")
    out: list[Range] = []
    for item in raw.split(";") if raw else ():
        a, _, b = item.partition(":")
        out.append((int(a), int(b)))
    return out


def self_contained_end(state: RunState, a: int, b: int) -> int:
    """``_longest_self_contained_prefix`` of events ``[a, b)``: the end of the longest prefix at which no call is
    open (every call in it has its response in it). Only the strict pass: ADK's second pass, which ignores calls
    proven dead, needs calls that never get a result, which a replay does not have before its last turn."""
    open_ids: set[str] = set()
    end = a
    for i in range(a, b):
        m = state.messages[i]
        open_ids -= {p.call_id for p in m.results if p.call_id}
        open_ids |= {p.call_id for p in m.calls if p.call_id}
        if not open_ids:
            end = i + 1
    return end


def retention_split(state: RunState, a: int, b: int, keep: int) -> int:
    """``_safe_token_compaction_split_index`` over candidates ``[a, b)``: the latest split at or before
    ``b - keep`` that leaves no kept function response without its call (``a`` when there is none)."""
    initial = b - keep - a
    if initial <= 0:
        return a
    unmatched: set[str] = set()
    for i in range(b - 1, a - 1, -1):
        m = state.messages[i]
        unmatched |= {p.call_id for p in m.results if p.call_id}
        unmatched -= {p.call_id for p in m.calls if p.call_id}
        if not unmatched and i - a <= initial:
            return i
    return a


def contains(outer: Range, inner: Range) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def event_chars(m: Message) -> int:
    """``_count_chars_in_content`` of the event message ``m`` becomes: the text of each text part (thinking
    included: a thought part carries text), and for a function call its name and ``json.dumps`` of its arguments,
    for a function response its name and ``json.dumps`` of its response, ``{"result": output}`` (how ADK wraps a
    tool's return value that is not a dict). JSON escapes every newline, quote and non-ASCII character, so a
    tool-heavy session counts well over its raw characters."""
    total = 0
    for p in m.parts:
        if p.kind == "tool_call":
            total += len(p.name or "") + args_chars(p.args)
        elif p.kind == "tool_result":
            total += len(p.name or "") + len(json.dumps({"result": p.text}))
        else:
            total += len(p.text)
    return total


def args_chars(args: str | None) -> int:
    """``len(json.dumps(function_call.args))``: the arguments as ADK holds them (a dict parsed from the call's JSON)
    serialised again; nothing for no arguments (``if part.function_call.args``)."""
    if not args:
        return 0
    try:
        parsed = json.loads(args)
    except ValueError:
        return len(args)
    return len(json.dumps(parsed)) if parsed else 0


def relayed_chars(m: Message, agent: str) -> int:
    """What the estimate counts of event ``m`` when it is made with no agent name, as the post-invocation token check
    makes it (``_run_compaction_for_token_threshold`` passes ``agent_name=''``): every function response was called by
    an author other than the (empty) current agent, so ``_present_other_agent_message`` relays its event as user
    context (the preamble, then per response ``[agent] `name` tool returned result:`` and ``str()`` of the response
    between quote markers), and the calls, left without responses, are dropped (``drop_orphaned_function_calls``)."""
    if m.role == "tool":
        total = OTHER_AGENT_CONTEXT_PREAMBLE_CHARS
        for p in m.results:
            head = f"[{agent}] `{p.name or ''}` tool returned result:\n"
            total += len(head) + QUOTED_CONTENT_CHARS + len(str({"result": p.text}))
        return total
    return sum(len(p.text) for p in m.parts if p.kind != "tool_call")


def contents_chars(state: RunState, view: View, end: int, relayed_by: str | None = None) -> int:
    """The characters ADK's estimate counts in the contents ``view`` sends, log messages before ``end`` only: every
    summary's text and each raw event's :func:`event_chars` (or, with ``relayed_by``, the estimate made with no agent
    name: :func:`relayed_chars`). A walk over the view: ADK estimates only when no model call reported a count since
    the last compaction, so this runs right after a compaction (or before the first call), not at every request."""
    total = 0
    for item in layout(view, min(end, len(state)), state.has_system):
        if isinstance(item, Messages):
            lo = max(item.a, base_index(state))
            msgs = state.messages
            if relayed_by is None:
                total += sum(event_chars(msgs[i]) for i in range(lo, item.b))
            else:
                total += sum(relayed_chars(msgs[i], relayed_by) for i in range(lo, item.b))
        else:
            total += len(item.text)
    return total


class ADKCompaction(Policy[ADKConfig]):
    """Google ADK event compaction: the sliding window, the token threshold, or both (token first)."""

    Config = ADKConfig
    known_deviations = frozenset({"revert-resolution", "compaction-shrinks"})
    deviation_reasons = {
        "compaction-shrinks": "ADK appends a summary even when it is longer than the events it replaces",
        "revert-resolution": "ADK knows nothing of reverts",
    }
    # After the post-invocation compaction the request processor checks the token threshold again before the same
    # model call (a second compaction there is ADK's); after a request-time compaction ADK asks nothing more, and the
    # policy declines (fewer than the retained events are left after the newest range).
    recheck_after_compaction = True

    # -- the token count ADK compares -------------------------------------------------------------------
    def prompt_token_count(self, state: RunState, end: int | None = None) -> int:
        """``_latest_prompt_token_count``: the prompt token count the provider reported for the newest model call made
        since the last compaction; none since (or none at all): ``_estimate_prompt_token_count``, a quarter of the
        characters of the request's contents (:func:`contents_chars`; the system instruction left out). With ``end``,
        the post-invocation point's estimate: log messages before ``end`` (the new user message is not appended yet),
        counted with no agent name, as the Runner's post-invocation token check counts (:func:`relayed_chars`)."""
        changed = state.view_changed_since_request
        if state.last_input_tokens is not None and not changed:
            return state.last_input_tokens
        if end is None:
            return contents_chars(state, state.view, len(state)) // 4
        return contents_chars(state, state.view, end, relayed_by=self.config.agent_name) // 4

    def over_trigger(self, state: RunState) -> bool | None:
        cfg = self.config
        if cfg.token_threshold is None:
            return None
        return self.prompt_token_count(state) >= cfg.token_threshold

    # -- the decision ------------------------------------------------------------------------------------
    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or len(state) == 0:
            return None  # ADK has no manual compaction and no compact-and-retry on overflow
        cfg = self.config
        n = len(state)
        # The first request of an invocation, unless the post-invocation compaction already ran for it (a second ask
        # after it, ``recheck_after_compaction``, is the request processor's turn only).
        post = is_user_turn(state, n - 1) and dict(state.view.checkpoint).get(POST_AT) != str(n)
        if not post and not (cfg.token and self.over_trigger(state)):
            return None  # neither point has anything to do: answered without reading the ranges
        pf = state.protected_from
        cap = n if pf is None else min(n, pf)
        ranges = ranges_of(state.view)
        if post:
            # The previous invocation has just completed: the Runner's post-invocation compaction, which ran before
            # this user message was appended (token threshold first, then the sliding window), so nothing of that
            # message counts, the estimate included.
            done = min(n - 1, cap)
            plan = self._token(state, ranges, done, "token-threshold-post-invocation") if cfg.token else None
            if plan is None and cfg.sliding:
                plan = self._sliding(state, ranges, done)
            if plan is not None:
                return plan
        if cfg.token:  # CompactionRequestProcessor: before every model call, the new user message included
            return self._token(state, ranges, cap, "token-threshold")
        return None

    def _sliding(self, state: RunState, ranges: list[Range], end: int) -> Plan | None:
        """``_run_compaction_for_sliding_window`` over the completed invocations, events ``[base, end)``."""
        cfg = self.config
        assert cfg.compaction_interval is not None and cfg.overlap_size is not None
        base = base_index(state)
        last_end = ranges[-1][1] if ranges else base
        if last_end >= end:
            return None
        first_new = invocation_start(state, last_end)
        new = 1 + sum(1 for i in range(first_new + 1, end) if is_user_turn(state, i))
        if new < cfg.compaction_interval:
            return None
        start = first_new
        for _ in range(cfg.overlap_size):  # overlap_size invocations before the first new one, clamped at the first
            if start <= base:
                break
            start = invocation_start(state, start - 1)
        stop = self_contained_end(state, start, end)
        return self._plan(state, ranges, (start, stop), "sliding-window")

    def _token(self, state: RunState, ranges: list[Range], end: int, mode: str) -> Plan | None:
        """``_run_compaction_for_token_threshold_config`` over events ``[base, end)``."""
        cfg = self.config
        assert cfg.token_threshold is not None and cfg.event_retention_size is not None
        post = mode == "token-threshold-post-invocation"
        if self.prompt_token_count(state, end if post else None) < cfg.token_threshold:
            return None
        base = base_index(state)
        last_end = ranges[-1][1] if ranges else base
        keep = cfg.event_retention_size
        if end - last_end <= keep:
            return None
        split = end if keep == 0 else retention_split(state, last_end, end, keep)
        stop = self_contained_end(state, last_end, split)
        if stop <= last_end:
            return None
        # The rolling seed: the latest summary goes first, with its start timestamp, so the new range contains it.
        start = ranges[-1][0] if ranges else last_end
        return self._plan(state, ranges, (start, stop), mode)

    def _plan(self, state: RunState, ranges: list[Range], new: Range, mode: str) -> Plan | None:
        """The view after appending a compaction over ``new``: every range it does not contain keeps its summary
        (``_get_compaction_ranges``), raw events up to the covered end leave. None when ADK would not write it:
        nothing new covered, or ``_is_range_worth_compacting`` says the range removes no more characters than the
        latest summary has."""
        view = state.view
        covered = ranges[-1][1] if ranges else base_index(state)
        if new[1] <= covered:
            return None
        summaries = self._summaries(view, ranges)
        pairs = list(zip(ranges[len(ranges) - len(summaries) :], summaries, strict=True))
        kept = [(r, s) for r, s in pairs if not contains(new, r)]
        removable = state.chars(covered, new[1]) + sum(len(s.text) for r, s in pairs if contains(new, r))
        latest = len(summaries[-1].text) if summaries else 0
        if removable <= latest:
            return None
        record = ";".join(f"{a}:{b}" for a, b in [*(r for r, _ in kept), new])
        n = len(state)
        post = mode in POST_MODES or dict(view.checkpoint).get(POST_AT) == str(n)
        marks = ((POST_AT, str(n)),) if post else ()
        return Plan(
            start=new[1],
            injected=tuple(s for _, s in kept),
            summarize=True,
            summary_request=SummaryRequest(role="assistant", prompt=SUMMARY_PROMPT, clip_chars=MAX_TOOL_CONTENT_CHARS),
            checkpoint=((RANGES, record), *marks),
            mode=mode,
        )

    @staticmethod
    def _summaries(view: View, ranges: list[Range]) -> list[Injected]:
        """The summaries of ``ranges`` as injected messages, oldest first: the earlier ones are already injected,
        the newest is the view's summary."""
        if not ranges or view.summary is None:
            return []
        older = [x for x in view.injected if x.label == SUMMARY_LABEL]
        s = view.summary
        newest = Injected(s.text, role="assistant", before_summary=True, facts=s.facts, label=SUMMARY_LABEL)
        return [*older, newest][-len(ranges) :]


@register("adk-sliding")
class ADKSliding(ADKCompaction):
    """Google ADK sliding-window compaction: every 3 new invocations, summarise them and 1 before, post-invocation.

    * When (``Runner._run_post_invocation_compaction``): after an invocation completes, here at the first request of
      the next one, before its user message counts. New invocations are those with an event after the end of the
      latest compaction; with ``compaction_interval`` of them, the window runs from the first event of the
      invocation ``overlap_size`` before the first new one (clamped at the first) to the last event of the last new
      one, cut back to its longest prefix in which every call has its response.
    * Worth it (``_is_range_worth_compacting``): only when the range removes more characters than the latest
      summary has. A summary longer than what it replaced is still appended (ADK only logs "Compaction grew the
      request"): ``compaction-shrinks`` is a known deviation.
    * The summary (``LlmEventSummarizer``) is a ``model``-role message at the range's end; the summariser reads
      ``author: text`` lines with each tool call's arguments and response cut to 2,000 characters. Earlier summaries
      that the new range does not contain stay in the request (with overlap, all but one at the start do).

    Known deviations: ``compaction-shrinks`` (above); ``revert-resolution`` (ADK knows nothing of reverts).

    Differences: the engine folds the previous summary into the new one, where ADK's summariser reads the raw
    events of the overlap invocations (which left the view at the previous compaction); the earlier summary stays
    visible beside the new one as in ADK, so what is visible is the same, the new summary may be longer. The
    2,000-character cut applies to each message as a whole (ADK cuts each call's arguments and each response, not
    text). The worth-it check compares the log's characters, where ADK compares the pydantic JSON of the contents
    (``_serialized_size``) on both sides; the token estimate counts as ADK does (:func:`event_chars`). Nothing of a
    pending turn is compacted (ADK keeps a call that waits for a confirmation open, so its invocation stays out of
    the window).
    """

    TUNABLE = {
        "compaction_interval": "1:10",
        "overlap_size": "0:3",
    }
    TUNABLE_NATIVE = {
        "compaction_interval": "EventsCompactionConfig(compaction_interval={value})",
        "overlap_size": "EventsCompactionConfig(overlap_size={value})",
    }

    Config = ADKSlidingConfig


@register("adk-token")
class ADKToken(ADKCompaction):
    """Google ADK token compaction: at 100,000 prompt tokens, one rolling summary of all but the newest 5 events.

    * When: before every model call (``CompactionRequestProcessor``, mid tool loop included) and after each
      invocation (the Runner tries it before the sliding window). The count is the prompt token count the provider
      reported for the newest model call since the last compaction, else a quarter of the characters of the request's
      contents as ``_count_chars_in_content`` counts them (``json.dumps`` of each call's arguments and each
      response: :func:`event_chars`); at the post-invocation point without the new user message, which ADK has not
      appended yet, and, as the Runner's check passes no agent name, with each function response relayed as the
      agent's quoted transcript and the calls dropped (:func:`relayed_chars`). Compacts when it is at or over
      ``token_threshold``. After a post-invocation compaction the request processor checks again before the same
      model call, on the estimate (no count is reported since), and may compact a second time, as ADK does.
    * What: the events after the latest compaction's end; with more than ``event_retention_size`` of them, all but
      the newest ``event_retention_size`` (the split moved earlier until no kept function response lacks its call,
      then cut back so no compacted call lacks its response). The latest summary is the seed: the summariser reads
      it first, and the new range starts where it started, so it replaces it (a rolling summary).
    * Worth it, placement and the summariser: as in ``adk-sliding``.

    Known deviations: ``live-turn`` (the retained events are counted, not turns: a long tool loop compacts its own
    user message), ``atomic-units`` (the split keeps calls with their responses but may fall inside a thinking tool
    loop), ``compaction-shrinks`` and ``revert-resolution``.

    Differences: as ``adk-sliding``'s; and the events of a pending turn are never compacted.
    """

    TUNABLE = {
        "token_threshold": "50000:180000:10000",
        "event_retention_size": "1:10",
    }
    TUNABLE_NATIVE = {
        "token_threshold": "EventsCompactionConfig(token_threshold={value})",
        "event_retention_size": "EventsCompactionConfig(event_retention_size={value})",
    }

    Config = ADKTokenConfig
    known_deviations = frozenset({"revert-resolution", "compaction-shrinks", "live-turn", "atomic-units"})
    deviation_reasons = {
        "atomic-units": (
            "ADK's split keeps calls with their responses but can fall inside the live tool loop, after the"
            " reply whose thinking opened it"
            " (Anthropic rejects that request without interleaved thinking)"
        ),
        "compaction-shrinks": "ADK appends a summary even when it is longer than the events it replaces",
        "live-turn": "ADK counts retained events, not turns, so a long tool loop compacts its own user message",
        "revert-resolution": "ADK knows nothing of reverts",
    }
