"""OpenAI's Responses API compaction: the Agents SDK's ``OpenAIResponsesCompactionSession`` (client-side
``responses.compact``) and the API's server-side ``context_management`` compaction.

Read: the Agents SDK, ``openai/openai-agents-python`` at 7f7a44f8 (version 0.22.0):
``src/agents/memory/openai_responses_compaction_session.py`` (``DEFAULT_COMPACTION_THRESHOLD``,
``select_compaction_candidate_items``, ``default_should_trigger_compaction``,
``OpenAIResponsesCompactionSession.run_compaction``, ``_defer_compaction``) and
``src/agents/run_internal/session_persistence.py`` (``save_result_to_session``: when it runs compaction), and the
SDK's sessions docs (the run is not complete until compaction has finished);
the API guide ``developers.openai.com/api/docs/guides/compaction`` (server-side compaction with
``compact_threshold``, the standalone ``/responses/compact``); the catalogue ``reference/policy-catalogue.md`` §B4,
§B3 ("Remote compaction": the window ``/responses/compact`` returns holds the user messages and one encrypted
``compaction`` item) and §F.

The summary is a black box. The compaction item is encrypted ("opaque and not intended to be human-interpretable"),
so what it carries cannot be read: both policies model it with the run's retention model, as every summarising
policy here does (``sim.replay.summariser``: each fact in what is compacted survives with its kind's keep
probability under the run's retention model, ``-R keep_KIND`` to fix one; an earlier item is folded into the next). Its
size is the mock summariser's, its prompt ours (the server's is not public). Factory.ai measured OpenAI's compaction
lowest on accuracy of the methods it compared (catalogue §D4): lower the keep probabilities to study that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, keep_reverts, plan_shrinks
from sim.core.conversation import Message
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

TOKENS = {"tokens": True}
#: ``DEFAULT_COMPACTION_THRESHOLD = 10`` in ``openai_responses_compaction_session.py``: ``default_should_trigger_
#: compaction`` compacts when there are at least 10 candidate items.
COMPACTION_THRESHOLD = 10
#: Ours: the API has no default ``compact_threshold`` and its guide gives no number. 150,000 rendered tokens, the
#: default Anthropic documents for its own server-side compaction (``anthropic-compaction``), so the two compare.
COMPACT_THRESHOLD = 150_000
#: What we ask the mock summariser for (the server's compaction prompt is not public).
OPAQUE_PROMPT = (
    "Compact the conversation so far into a state the model can continue from: the user's goals and constraints, "
    "what was done and found, the decisions taken and what remains."
)


def is_user_message(m: Message) -> bool:
    """``_is_user_message``: a message item with role ``user`` (a command is an artefact of other clients)."""
    return m.role == "user" and m.command is None


def candidate_items(m: Message) -> int:
    """The Responses items a log message stands for that ``select_compaction_candidate_items`` counts (every item but
    user messages and compaction items): an assistant message is a message item if it has text, a reasoning item if
    it has thinking, and one ``function_call`` item per call; a tool message one ``function_call_output`` per
    result."""
    if m.role == "assistant":
        kinds = [p.kind for p in m.parts]
        return ("text" in kinds) + ("thinking" in kinds) + kinds.count("tool_call")
    if m.role == "tool":
        return len(m.results)
    return 0


# -- OpenAIResponsesCompactionSession --------------------------------------------------------------------------
@dataclass(frozen=True)
class AgentsSessionConfig:
    """Parameters of ``OpenAIResponsesCompactionSession`` (``should_trigger_compaction`` is the default hook).

    Attributes:
        compaction_threshold: compact after a turn when the session holds at least this many candidate items
            (``DEFAULT_COMPACTION_THRESHOLD = 10``).
    """

    compaction_threshold: int = COMPACTION_THRESHOLD

    def __post_init__(self) -> None:
        if self.compaction_threshold < 1:
            raise InvalidConfig(f"compaction_threshold={self.compaction_threshold!r} must be at least 1")


@register("openai-agents-session")
class OpenAIAgentsSession(Policy[AgentsSessionConfig]):
    """OpenAI Agents SDK OpenAIResponsesCompactionSession: after a turn with 10 or more non-user items, compact.

    * When (``save_result_to_session``): after each model turn is stored, but a turn that produced local tool
      outputs only defers it (remembering the response when the hook said yes) and the next turn without them (the
      run's final answer) runs it, forced if one was deferred. Candidates only grow inside a run, so this compacts
      after the final answer of a user turn when the count is reached, before the next user message: here at that
      message's first request, the message itself not yet in the session. The trigger counts items, not tokens:
      the session's items that are neither user messages nor compaction items, at least ``compaction_threshold``.
      ``/compact`` stands for calling ``run_compaction({"force": True})`` between turns.
    * What: ``responses.compact`` over the whole session; the stored items are replaced with the window it returns:
      the user messages, verbatim and in order, then one encrypted compaction item (an assistant-role summary here).
      Every assistant message, reasoning item, call and output goes, so no pair is split. The next compaction sends
      the previous item along (folded in), and counts only the items added since.
    * The summary is opaque: modelled with the run's retention model (module docstring).

    Known deviation: ``revert-resolution`` (the user messages stay, the assistant's changes they revert do not).

    Differences: a compaction that would not make the view smaller is skipped (the SDK has no size guard: it
    compacts on the item count alone, and the real item's size is not known); nothing of a pending turn is
    compacted. The ``compaction_mode`` (``previous_response_id`` or ``input``) and the compaction ``model`` change
    what is sent to the endpoint, not the window: not modelled; the call is charged at the run's model.
    """

    TUNABLE = {
        "compaction_threshold": "2:50:4",
    }

    Config = AgentsSessionConfig
    when = frozenset({"user_turn"})
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": "the session keeps user messages, not the assistant changes they revert",
    }

    def candidates(self, state: RunState, end: int) -> int:
        """Candidate items the view shows before ``end``: those recorded since the last compaction (the window it
        left holds only user messages and the compaction item). O(messages since the last compaction)."""
        return sum(candidate_items(state.messages[i]) for i in range(state.view.start, end))

    def over_trigger(self, state: RunState) -> bool:
        return self.candidates(state, len(state)) >= self.config.compaction_threshold

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or len(state) == 0:
            return None
        n = len(state)
        if trigger == "auto":
            if not is_user_message(state.messages[n - 1]):
                return None
            end = n - 1  # the new user message is not in the session yet
            if self.candidates(state, end) < self.config.compaction_threshold:
                return None
        else:
            end = n - 1 if is_user_message(state.messages[n - 1]) else n
        pf = state.protected_from
        if pf is not None:
            end = min(end, pf)
        if end <= floor_index(state) or self.candidates(state, end) == 0:
            return None
        view = state.view
        shown = [i for a, b in (*view.spans, (view.start, end)) for i in range(a, min(b, end))]
        users = tuple(i for i in shown if is_user_message(state.messages[i]))
        plan = Plan(
            start=end,
            pinned=users,
            summarize=True,
            summary_request=SummaryRequest(role="assistant", prompt=OPAQUE_PROMPT),
            mode="responses-compact",
        )
        return plan if plan_shrinks(state, plan) else None


# -- context_management compaction -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ResponsesCompactionConfig:
    """``context_management=[{"type": "compaction", "compact_threshold": N}]`` on ``responses.create``.

    Attributes:
        compact_threshold: the rendered input tokens at which the server compacts (no public default; ours 150,000).
    """

    compact_threshold: int = field(default=COMPACT_THRESHOLD, metadata=TOKENS)

    def __post_init__(self) -> None:
        if self.compact_threshold < 1:
            raise InvalidConfig(f"compact_threshold={self.compact_threshold!r} must be at least 1")


@register("openai-responses-compaction")
class OpenAIResponsesCompaction(Policy[ResponsesCompactionConfig]):
    """OpenAI Responses API server compaction: past compact_threshold rendered tokens, the input is one opaque item.

    * When: on every request, mid tool loop included, server-side: "when the rendered token count crosses the
      configured threshold, the server runs server-side compaction" (here: the exact tokens of the view, at or over
      ``compact_threshold``).
    * What: the server "emits a compaction output item in the same stream, and prunes context before continuing
      inference"; the client appends the item and "can drop items that came before the most recent compaction
      item": everything before the item is represented by it alone, the latest user message included. Here the
      whole view becomes an assistant-role summary (the previous item folded in) and the model answers from it.
    * The summary is opaque: modelled with the run's retention model (module docstring).

    Known deviations: ``live-turn`` (the user's latest message goes into the item with the rest) and
    ``revert-resolution`` (a revert that arrives after the change it undoes went into the item: the server knows
    nothing of reverts). Compaction mid tool loop is accepted: the model answers afresh from the item, which the
    next scripted reply stands for.

    Differences: a compaction that would not make the view smaller is skipped; nothing of a pending turn is
    compacted, and a revert kept after a pending turn keeps its change.
    """

    TUNABLE = {
        "compact_threshold": "50000:190000:10000",
    }
    TUNABLE_NATIVE = {
        "compact_threshold": 'context_management=[{"type": "compaction", "compact_threshold": {value}}]',
    }

    Config = ResponsesCompactionConfig
    known_deviations = frozenset({"live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "the user's latest message goes into the compaction item with the rest",
        "revert-resolution": "the server knows nothing of reverts",
    }

    def over_trigger(self, state: RunState) -> bool:
        return state.view_size()[0] >= self.config.compact_threshold

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or not self.over_trigger(state):
            return None  # the server compacts only past its threshold; a prompt over the window is rejected
        pf = state.protected_from
        cut = keep_reverts(state, len(state) if pf is None else pf)
        if cut <= floor_index(state):
            return None
        plan = Plan(
            start=cut,
            summarize=True,
            summary_request=SummaryRequest(role="assistant", prompt=OPAQUE_PROMPT),
            mode="server-compaction",
        )
        return plan if plan_shrinks(state, plan) else None
