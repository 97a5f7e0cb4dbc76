"""Mastra Observational Memory (``@mastra/memory``): a background Observer turns unobserved messages into dated
observations that replace them; a Reflector condenses the observations when they grow.

Sources (``reference/field-2026.md`` §3): mastra.ai's reference page ``memory/observational-memory`` (the Observer runs
when unobserved messages reach 30,000 tokens, the Reflector when observations reach 40,000; the default model
``google/gemini-2.5-flash``) and ``pydantic/pydantic-ai-harness`` #68 quoting ``packages/core/src/harness/types.ts``;
the code of ``@mastra/memory`` 1.31.0 from npm (its bundled ``dist/src-*.js``): ``OBSERVATIONAL_MEMORY_DEFAULTS``
(``messageTokens`` 30,000, ``observationTokens`` 40,000), ``ObservationalMemory.getStatus`` / ``getUnobservedMessages``
/ ``observe`` (the count and the observed set are the same unobserved messages, threshold ``>=``),
``SyncObservationStrategy`` (observes them all, the cursor moves past the newest), ``ObservationStep.prepare`` (checked
at every step of the agent loop) and ``ReflectorRunner.maybeReflect`` (reflects at ``observationTokens``).
Conformance: ``conformance/mastra-memory/`` runs that package (``@mastra/core`` 1.71.0 beside it) with an in-memory
store and a stub model returning canned observations, before every model call of scripted runs and the long
conversations; ``tests/conformance/test_conformance_mastra_memory.py`` compares decision by decision (466 of 528 calls
agree; the others are the declared live-turn and tokenizer classes, ``conformance/README.md``).
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

    * **Trigger**, before every model call: the tokens of the unobserved messages the Observer may take (after the
      observations, before the live turn and before any unresolved pending turn) at or over ``message_tokens``.
      Mastra counts the set it observes (``getUnobservedMessages`` feeds both ``getStatus``'s count and
      ``observe``), so after an observation nothing counted is left; a pending turn the harness keeps whole is not
      counted until it resolves, as Mastra leaves uncounted the observed messages it keeps raw (its retention floor).
    * **Observed**: every unobserved message before the live turn and any pending turn (from the last user message
      on, messages stay); the observations are a user-side block before them, the earlier observations folded in.
    * **Reflection**: the observations are condensed by the same call once they pass ``observation_tokens`` (the
      observer's instruction says so); the threshold is otherwise not separately modelled.

    Differences: the Observer and Reflector run in the background in Mastra (``bufferTokens`` 0.2,
    ``bufferActivation`` 0.8 by default), their result applied when ready; here synchronously, as Mastra does with
    ``bufferTokens: false`` (until the engine has a background timing, issue 32 item 3). Mastra observes the live
    turn too (every unobserved message at the step, deferred while the latest step has a tool call without its
    result); the live turn is ours, and its messages are neither counted nor observed until the next user message.
    Mastra knows no pending turns: where the harness keeps one whole, it is neither observed nor counted here.

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

    def observable_end(self, state: RunState) -> int:
        """Where an observation ends: before the live turn and before any unresolved pending turn (the harness
        keeps those whole), at the start of an atomic unit. Every unobserved message before it, a revert's change
        included: no hold-back for reverts."""
        return unit_floor(state, cut_ceiling(state))

    def unobserved_tokens(self, state: RunState) -> int:
        """Tokens of the unobserved messages an observation would take (from the view's start to
        :meth:`observable_end`): Mastra counts the set it observes, so nothing counted is left after an observation."""
        return message_tokens(state, state.view.start, max(self.observable_end(state), state.view.start))

    def over_trigger(self, state: RunState) -> bool:
        return self.unobserved_tokens(state) >= self.config.message_tokens

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        cut = self.observable_end(state)
        if cut <= floor_index(state):
            return None
        request = SummaryRequest(prompt=OBSERVER_PROMPT, wrapper=WRAPPER, role="user")
        plan = Plan(start=cut, summarize=True, summary_request=request, mode="observe")
        return plan if plan_shrinks(state, plan) else None
