"""Mastra Observational Memory (``@mastra/memory``): a background Observer turns unobserved messages into dated
observations that replace them; a Reflector condenses the observations when they grow.

Sources (``reference/field-2026.md`` §3): mastra.ai's reference page ``memory/observational-memory`` (the Observer runs
when unobserved messages reach 30,000 tokens, the Reflector when observations reach 40,000; the default model
``google/gemini-2.5-flash``) and ``pydantic/pydantic-ai-harness`` #68 quoting ``packages/core/src/harness/types.ts``.
Mastra ships on npm (``@mastra/memory``); its observer needs a model and Mastra's storage: no conformance suite yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies._tail import message_tokens
from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import cut_ceiling, floor_index, plan_shrinks, unit_floor
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

MESSAGE_TOKENS = 30_000  # the Observer's threshold: unobserved message tokens
OBSERVATION_TOKENS = 40_000  # the Reflector's threshold: observation tokens
#: Our wording of the Observer's task: dated, prioritised observations that stand in for the messages.
OBSERVER_PROMPT = (
    "You are the observer of this conversation. Turn the messages below into dated observations, most important "
    "first: what the user wants and has said, facts and numbers found, decisions, work done and what is pending. "
    "They replace the messages: keep every detail the assistant will need. If earlier observations are given, add "
    "to them, and condense them when they have grown long (the reflector's job)."
)
WRAPPER = "<observations>\n{summary}\n</observations>"


@dataclass(frozen=True)
class MastraObservationalMemoryConfig:
    """The observational memory's thresholds, Mastra's meaning.

    Attributes:
        message_tokens: observe once the unobserved messages reach this many tokens (30,000).
        observation_tokens: reflect (condense the observations) once they reach this many tokens (40,000).
    """

    message_tokens: int = field(default=MESSAGE_TOKENS, metadata={"tokens": True})
    observation_tokens: int = field(default=OBSERVATION_TOKENS, metadata={"tokens": True})

    def __post_init__(self) -> None:
        if self.message_tokens < 1 or self.observation_tokens < 1:
            raise InvalidConfig(
                f"message_tokens ({self.message_tokens!r}) and observation_tokens ({self.observation_tokens!r}) "
                "must be >= 1"
            )


@register("mastra-observational-memory")
class MastraObservationalMemory(Policy[MastraObservationalMemoryConfig]):
    """Mastra Observational Memory: at 30,000 unobserved tokens, observations replace the messages before the live turn.

    * **Trigger**, before every model call: the tokens of the messages after the observations (the unobserved ones)
      before the live turn at or over ``message_tokens``.
    * **Observed**: every unobserved message before the live turn (from the last user message on, messages stay);
      the observations are a user-side block before them, the earlier observations folded in.
    * **Reflection**: the observations are condensed by the same call once they pass ``observation_tokens`` (the
      observer's instruction says so); the threshold is otherwise not separately modelled.

    Differences: the Observer and Reflector run in the background in Mastra, their result applied when ready;
    here at once (until the engine has a background timing, issue 32 item 3). Which recent unobserved messages
    Mastra keeps raw besides the live turn is not documented; the live turn is ours, and its messages are neither
    counted nor observed until the next user message (Mastra observes them mid-turn).

    Known deviation: ``revert-resolution`` (Mastra knows nothing of reverts): the Observer takes every unobserved
    message before the live turn, a change that a kept revert reverts included, and a change observed away is not
    brought back for a revert that comes later. The observation is not held back at a revert's change, as the shared
    summary cut does: the reference page names no such rule, and holding it back left a large result after the
    change unobserved, so the next turn observed again over the threshold (``csim check``: compaction-loop after
    5,736 examples, issue 32).
    """

    Config = MastraObservationalMemoryConfig
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": (
            "Mastra knows nothing of reverts: a change compacted away is not brought back for its revert"
        )
    }

    def unobserved_tokens(self, state: RunState) -> int:
        """Tokens of the unobserved messages before the live turn (the ones an observation would take)."""
        end = state.last_user_index if state.last_user_index >= 0 else len(state)
        return message_tokens(state, state.view.start, max(end, state.view.start))

    def over_trigger(self, state: RunState) -> bool:
        return self.unobserved_tokens(state) >= self.config.message_tokens

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        start = state.last_user_index if state.last_user_index >= 0 else len(state)
        # Every unobserved message before the live turn, a revert's change included: no hold-back for reverts.
        cut = unit_floor(state, min(start, cut_ceiling(state)))
        if cut <= floor_index(state):
            return None
        request = SummaryRequest(prompt=OBSERVER_PROMPT, wrapper=WRAPPER, role="user")
        plan = Plan(start=cut, summarize=True, summary_request=request, mode="observe")
        return plan if plan_shrinks(state, plan) else None
