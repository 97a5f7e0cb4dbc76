"""SWE-agent's history processors, and the settings of JetBrains' "The Complexity Trap" study.

Read: ``SWE-agent/SWE-agent@3ea751c0`` (2026-07-16): ``sweagent/agent/history_processors.py``
(``LastNObservations``, ``TagToolCallObservations``), ``sweagent/agent/agents.py`` (``TemplateConfig``: the
observation clip; history items of templated messages are ``observation``s, the instance template the
first); and the study's code, ``Recursive-Safeguarding/the-complexity-trap@1b07decf`` (2025-12-18; a fork of
``JetBrains-Research/the-complexity-trap``): ``sweagent/agent/history_processors.py``
(``SummarizeEveryNTurns``), ``sweagent/agent/models.py`` (``query_for_summary``), and the configurations
``config/default_no_demo_N=1_M=10.yaml`` (masking), ``..._checkpoint_same_model_openhands_N=21_M=10.yaml``
(summary) and ``..._N=43_M=10_masking_M=10.yaml`` (hybrid). The catalogue ``reference/policy-catalogue.md``
§B10 and §D1 (the paper, Lindenbauer et al., arXiv 2508.21433) summarise them.

History processors run before every query over the whole history and return what is sent, so each is a
view; the study's summary processor also keeps the summaries it made, which the view holds as injected
messages.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass, replace

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import first_user_index, floor_index, newest_results_bound, plan_shrinks, unit_floor
from sim.core.conversation import Part
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Injected, Rule, View

# LastNObservations: an elided observation's content; ``{lines}`` becomes the line count of the output it
# replaces (sim.core.view.Rule.placeholder_for), as in SWE-agent.
PLACEHOLDER = "Old environment output: ({lines} lines omitted)"
MAX_OBSERVATION_LENGTH = 100_000  # TemplateConfig.max_observation_length, in characters
# next_step_truncated_observation_template after the clipped output (its "Observation: " prefix frames every
# observation in SWE-agent and is not modelled here).
CLIP_NOTE = (
    "<response clipped><NOTE>Observations should not exceeded {max} characters. {elided} characters were elided. "
    "Please try a different command that produces less output or use head/tail/grep/redirect the output to a "
    "file. Do not use interactive pagers.</NOTE>"
)
# SummarizeEveryNTurns._summarize_turns: the summary is an assistant message with this prefix.
CHECKPOINT_WRAPPER = "Checkpoint for the last {turns} turns:\n{{summary}}"
# Our wording of the study's summary_system_template (the OpenHands-style state summary its configurations
# set): the sections it asks the summariser to track.
SUMMARY_PROMPT = (
    "Keep a running state summary for an agent working on a task. You get the agent's latest turns (reasoning, "
    "action, observation) and the previous summary, if any. Track, concisely: USER_CONTEXT (requirements and "
    "goals), COMPLETED (done, with results), PENDING (still to do), CURRENT_STATE; for code also CODE_STATE "
    "(paths, signatures), TESTS (failing cases, errors), CHANGES (edits), DEPS, VERSION_CONTROL_STATUS. Skip "
    "what does not matter for the task."
)


def _observation_rule(keep_output_tools: tuple[str, ...]) -> Rule:
    return Rule(kinds=frozenset({"tool_result"}), exclude_tools=frozenset(keep_output_tools), text=PLACEHOLDER)


@functools.lru_cache(maxsize=4096)
def clip_observation(part: Part, max_length: int) -> Part:
    """``TemplateConfig``'s clip: an output over ``max_length`` characters keeps its first ``max_length`` and
    the note saying how many were elided (head only). Memoised: every configuration clips the same results."""
    if len(part.text) <= max_length:
        return part
    note = CLIP_NOTE.format(max=max_length, elided=len(part.text) - max_length)
    return replace(part, text=part.text[:max_length] + note, original_bytes=len(part.text.encode("utf-8")))


def masking_edit(state: RunState, start: int, n: int, polling: int, rule: Rule) -> Edit | None:
    """``LastNObservations`` over a view whose tail starts at ``start``: the edit that elides every observation
    but the newest, or None when none is elided.

    SWE-agent counts the instance template (the first user message here, always shown) as observation 0 and
    never elides it; the rest are the tool results in the tail. ``last_removed = floor(K / polling) * polling -
    n`` over the K observations, and ``observations[1:last_removed]`` are elided: all but the newest n when
    ``polling`` is 1, between n and n + polling - 1 kept otherwise.

    The results the next reply answers (the trailing tool messages) are never elided, whatever ``n``: SWE-agent
    makes one call a step, so its newest observation is always among the kept, but a recording's parallel batch
    can hold more results, in as many tool messages, than ``n`` (the shared Claude Code sessions at ``n`` 2 and
    5: the model would answer calls whose results it cannot see, the ``live-turn`` invariant)."""
    results = state.tool_uses(View(start=start))  # one result per call
    last_removed = max(0, ((results + 1) // polling) * polling - n)
    elided = last_removed - 1
    if elided <= 0:
        return None
    bound = newest_results_bound(state, results - elided, rule)
    if bound is None:
        return None
    live = len(state)
    while live > 0 and state.messages[live - 1].role == "tool":
        live -= 1
    bound = min(bound, live)
    return None if bound <= start else Edit(rule, bound)


def _validate_masking(n: int, polling: int, max_observation_length: int) -> None:
    if n < 1 or polling < 1:
        raise InvalidConfig(f"n ({n!r}) and polling ({polling!r}) must be positive: SWE-agent's validator says so")
    if max_observation_length < 1:
        raise InvalidConfig(f"max_observation_length={max_observation_length!r} must be >= 1")


# -- SWE-agent: LastNObservations ----------------------------------------------------------------------------
@dataclass(frozen=True)
class SweAgentMaskingConfig:
    """Parameters, SWE-agent's names.

    Attributes:
        n: observations kept: 5, "used in the original paper to elide but the last 5 observations"
            (``LastNObservations``' docstring; the SWE-agent 0.7 config); the Complexity Trap study used 10.
        polling: the kept window moves every ``polling`` steps (``LastNObservations.polling``, default 1).
        keep_output_tools: tools whose outputs are never elided (``TagToolCallObservations`` tags their
            observations ``keep_output``; default none).
        max_observation_length: observations are clipped at this many characters as they enter the history
            (``TemplateConfig.max_observation_length``, 100,000).
    """

    n: int = 5
    polling: int = 1
    keep_output_tools: tuple[str, ...] = ()
    max_observation_length: int = MAX_OBSERVATION_LENGTH

    def __post_init__(self) -> None:
        _validate_masking(self.n, self.polling, self.max_observation_length)


@register("swe-agent-masking")
class SweAgentMasking(Policy[SweAgentMaskingConfig]):
    """SWE-agent LastNObservations: all observations but the newest 5 read "Old environment output: (N lines omitted)".

    * Before every query, over the whole history: the observations are the instance template (the task, the
      first user message, never elided) and the tool outputs; all but the newest ``n`` (with ``polling``, the
      count moves in steps) become "Old environment output: (N lines omitted)". Actions and reasoning stay;
      call ids stay, so pairing holds. Nothing is summarised, and the context never triggers anything: the
      edit is there from the ``n + 1``-th observation on.
    * Outputs of ``keep_output_tools`` are never elided, but count among the observations.
    * Observations longer than 100,000 characters are clipped at entry, head only, with SWE-agent's note.

    Differences: an edit that would grow the view (outputs shorter
    than the placeholder) waits until it shrinks it; nothing in an unresolved pending turn is elided (the
    harness's contract; SWE-agent has no such turns). A message holding several results (a parallel batch;
    SWE-agent allows one call a step) is elided whole or not at all.
    """

    TUNABLE = {
        "n": "1:20",
    }
    TUNABLE_NATIVE = {
        "n": "LastNObservations(n={value}) (history_processors)",
    }

    Config = SweAgentMaskingConfig

    def bound_tool_result(self, part: Part) -> Part:
        return clip_observation(part, self.config.max_observation_length)

    def bound_key(self) -> Hashable:
        return ("swe-agent-clip", self.config.max_observation_length)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        cfg = self.config
        if trigger != "auto":
            return None
        view = state.view
        edit = masking_edit(state, floor_index(state), cfg.n, cfg.polling, _observation_rule(cfg.keep_output_tools))
        if edit is None or edit in view.edits:
            return None
        plan = Plan(start=view.start, spans=view.spans, edits=(edit,), mode="mask")
        return plan if plan_shrinks(state, plan) else None


# -- The Complexity Trap: SummarizeEveryNTurns, alone and followed by LastNObservations ----------------------
@dataclass(frozen=True)
class JetBrainsSummaryConfig:
    """The study's ``summarize_every_n_turns`` settings.

    Attributes:
        n: turns summarised at once: 21 (``..._openhands_N=21_M=10.yaml``; the paper's LLM-Summary).
        keep_last_m_turns: turns kept verbatim after a summary: 10 (same file).
        mask_n: ``last_n_observations`` applied after the summary (the hybrid); None: no masking.
        polling: the masking's ``polling`` (1, SWE-agent's default; the study's files do not set it).
        max_observation_length: the entry clip (``TemplateConfig``, 100,000 characters).
    """

    n: int = 21
    keep_last_m_turns: int = 10
    mask_n: int | None = None
    polling: int = 1
    max_observation_length: int = MAX_OBSERVATION_LENGTH

    def __post_init__(self) -> None:
        _validate_masking(self.n, self.polling, self.max_observation_length)
        if self.keep_last_m_turns < 0:
            raise InvalidConfig(f"keep_last_m_turns={self.keep_last_m_turns!r} must be >= 0")
        if self.mask_n is not None and self.mask_n < 1:
            raise InvalidConfig(f"mask_n={self.mask_n!r} must be >= 1, or unset for no masking")


@register("jetbrains-summary")
class JetBrainsSummary(Policy[JetBrainsSummaryConfig]):
    """The Complexity Trap's LLM-Summary: every 21 turns past 31, the oldest 21 become an assistant "Checkpoint".

    ``SummarizeEveryNTurns`` with ``enable_static_checkpointing``, as the study's configuration sets it:

    * A turn is an assistant message with its tool output; the system prompt and the problem statement (the
      first user message) are never summarised. Before every query, once the turns not yet summarised number
      ``n + keep_last_m_turns``, the oldest ``n`` are summarised by the agent's own model, given the previous
      checkpoint (the problem statement the first time) as context; the newest ``keep_last_m_turns`` stay.
    * The summary is an assistant message "Checkpoint for the last 21 turns:" placed after the problem
      statement. The study's code keeps every checkpoint it made and, on every query but the one that makes a
      new one, sends them all (``_processed_history_cache`` + the turns since): here they all stay from the
      query that makes the next one on (injected assistant messages, before the newest); on that one query
      the study sends only the newest.
    * Context oscillates between 10 and 30 turns (plus the checkpoints); nothing about tokens triggers it.

    Differences: the study's code returns only turns after a summary, so a message that is not part of one
    (a later user message, a reply without a tool call; SWE-agent histories have none) would vanish; here such
    messages stay in order, the cut never passes a later user message, and nothing in an unresolved pending turn
    is summarised (then fewer than ``n`` turns may be summarised, and the checkpoint says how many). A summary that
    would not shrink the view waits a query.
    Not modelled: the placeholder checkpoint after the 250-call cap, the study's extra bookkeeping of actions.

    Known deviation ``atomic-units``: the checkpoint is an assistant message, and the turns kept after it start
    with an assistant step; inside a tool loop still in progress (a Claude Code session's user turn runs for
    a hundred steps) the provider merges the two into the final assistant turn's opening message, which then
    starts with the checkpoint's text, not a thinking block: Anthropic rejects that request with thinking on. The
    study ran SWE-agent, one user message a run, on models without Anthropic's thinking.

    Known deviation ``compaction-loop``: a summary held back inside a long live turn (the cut never passes its
    user message) leaves a backlog of turns; once a later user message releases it, the oldest ``n`` are summarised
    a query at a time, as the study's processor does, and each checkpoint leaves more than ``n + keep_last_m_turns``
    turns unsummarised until the backlog is gone (on the shared session 258c7280, ``n`` = 21: three checkpoints on
    consecutive queries, 99K to 46K tokens). The study's histories never hold one back.
    """

    TUNABLE = {
        "n": "5:50:5",
        "keep_last_m_turns": "2:20:2",
    }

    Config = JetBrainsSummaryConfig
    known_deviations = frozenset({"revert-resolution", "atomic-units", "compaction-loop"})
    deviation_reasons = {
        "revert-resolution": "the study's summary knows nothing of reverts: a kept revert can lose its change",
        "compaction-loop": (
            "a backlog of turns a live turn held back is summarised n at a time on consecutive queries once it is "
            "released, each checkpoint leaving more than n + keep_last_m_turns turns unsummarised until it is gone"
        ),
        "atomic-units": (
            "the checkpoint is an assistant message before the kept turns, so inside a long tool loop it merges with "
            "the first kept step into a message that starts with text (Anthropic rejects that with thinking on)"
        ),
    }

    def bound_tool_result(self, part: Part) -> Part:
        return clip_observation(part, self.config.max_observation_length)

    def bound_key(self) -> Hashable:
        return ("swe-agent-clip", self.config.max_observation_length)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":
            return None
        plan = self._summary(state)
        if plan is None and self.config.mask_n is not None:
            plan = self._mask_only(state)
        return plan if plan is not None and plan_shrinks(state, plan) else None

    def over_trigger(self, state: RunState) -> bool:
        """The study's trigger counts turns, not tokens: ``n + keep_last_m_turns`` turns not yet summarised, of which
        some can be: a summary held back entirely (by a later user message or a pending turn, the harness's
        contract) is not due. Counting those turns alone made every masking step of the hybrid inside a long live
        turn look like a compaction that left the view over its trigger (``compaction-loop`` on the shared Claude
        Code sessions), where the study's histories, one user message each, never hold the summary back."""
        return self._summary(state) is not None

    def _summary(self, state: RunState) -> Plan | None:
        cfg = self.config
        start = floor_index(state)
        due = cfg.n + cfg.keep_last_m_turns
        if state.tool_uses(View(start=start)) < due:  # fewer calls than that: fewer turns (O(1))
            return None
        turns = turn_starts(state, start)
        if len(turns) < due:
            return None
        problem = first_user_index(state)
        cut = self._safe_cut(state, turns[cfg.n] if len(turns) > cfg.n else len(state), problem)
        summarised = sum(1 for t in turns if t < cut)
        if cut <= start or summarised == 0:
            return None
        view = state.view
        injected = view.injected
        if view.summary is not None:  # the previous checkpoint stays in view (the study's code resends them all)
            old = Injected(
                view.summary.text, role="assistant", before_summary=True, facts=view.summary.facts, label="checkpoint"
            )
            injected = (*injected, old)
        edits: tuple[Edit, ...] = ()
        if cfg.mask_n is not None:
            edit = masking_edit(state, cut, cfg.mask_n, cfg.polling, _observation_rule(()))
            edits = () if edit is None else (edit,)
        return Plan(
            start=cut,
            pinned=(problem,) if problem is not None and problem < cut else (),
            edits=edits,
            injected=injected,
            summarize=True,
            mode="summarize",
            summary_request=SummaryRequest(
                role="assistant", wrapper=CHECKPOINT_WRAPPER.format(turns=summarised), prompt=SUMMARY_PROMPT
            ),
        )

    def _mask_only(self, state: RunState) -> Plan | None:
        """The hybrid between summaries: ``last_n_observations`` over the view the summary processor returned."""
        cfg = self.config
        assert cfg.mask_n is not None
        view = state.view
        edit = masking_edit(state, floor_index(state), cfg.mask_n, cfg.polling, _observation_rule(()))
        if edit is None or edit in view.edits:
            return None
        return Plan(start=view.start, spans=view.spans, edits=(edit,), mode="mask")

    @staticmethod
    def _safe_cut(state: RunState, cut: int, problem: int | None) -> int:
        """Below any pending turn and any later user message (the problem statement is pinned, so it does not
        hold the cut back), at the start of an atomic unit."""
        pf = state.protected_from
        if pf is not None:
            cut = min(cut, pf)
        lu = state.last_user_index
        if lu >= 0 and lu != problem:
            cut = min(cut, lu)
        return unit_floor(state, cut)


def turn_starts(state: RunState, start: int) -> list[int]:
    """Indices of the turns from ``start`` on: assistant messages with tool calls (a turn is one with its
    output)."""
    msgs = state.messages
    return [i for i in range(start, len(state)) if msgs[i].role == "assistant" and msgs[i].calls]


@dataclass(frozen=True)
class JetBrainsHybridConfig(JetBrainsSummaryConfig):
    """The hybrid's settings (``..._openhands_N=43_M=10_masking_M=10.yaml``): summarise 43 turns at a time,
    keep 10, then ``last_n_observations`` with n = 10 over the result."""

    n: int = 43
    keep_last_m_turns: int = 10
    mask_n: int | None = 10


@register("jetbrains-hybrid")
class JetBrainsHybrid(JetBrainsSummary):
    """The Complexity Trap's hybrid: a checkpoint every 43 turns past 53, and all but the newest 10 outputs masked.

    ``summarize_every_n_turns`` (n = 43, keep_last_m_turns = 10, static checkpointing) and then
    ``last_n_observations`` (n = 10) over the view it returns: the problem statement is the first observation,
    the outputs of the turns not yet summarised the rest, so between summaries every output but the newest
    10 reads "Old environment output: (N lines omitted)". The summariser sees the turns unmasked, as in the
    study (its processor runs first): with ``keep_last_m_turns`` at least ``mask_n`` the new view masks
    nothing, so no edit reaches the summarised turns; with fewer kept turns than masked outputs the engine
    would show the summariser the masked ones too. See :class:`JetBrainsSummary` for the rest.
    """

    TUNABLE = {
        "n": "5:50:5",
        "mask_n": "2:20:2",
    }

    Config = JetBrainsHybridConfig
