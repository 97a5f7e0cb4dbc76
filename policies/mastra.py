"""Mastra Observational Memory (``@mastra/memory``): a background Observer turns unobserved messages into dated
observations that replace them; a Reflector condenses the observations when they grow.

Sources (``reference/field-2026.md`` §3): mastra.ai's reference page ``memory/observational-memory`` (the Observer runs
when unobserved messages reach 30,000 tokens, the Reflector when observations reach 40,000; the default model
``google/gemini-2.5-flash``) and ``pydantic/pydantic-ai-harness`` #68 quoting ``packages/core/src/harness/types.ts``;
the code of ``@mastra/memory`` 1.31.0 from npm (its bundled ``dist/src-*.js``): ``OBSERVATIONAL_MEMORY_DEFAULTS``
(``messageTokens`` 30,000, ``observationTokens`` 40,000, ``bufferTokens`` 0.2, ``bufferActivation`` 0.8; ``blockAfter``
1.2 from ``resolveBlockAfter``), ``ObservationalMemory.getStatus`` / ``getUnobservedMessages`` / ``observe`` (the count
and the observed set are the same unobserved messages, threshold ``>=``), ``SyncObservationStrategy`` (observes them
all, the cursor moves past the newest), ``ObservationStep.prepare`` and ``runThresholdObservation`` (at every step of
the agent loop: activate buffered chunks at the threshold, start a buffer when ``getStatus`` says ``shouldBuffer``,
observe synchronously at the threshold when no chunk can be activated, waiting up to 30 s for a buffer in flight),
``BufferingCoordinator.shouldTriggerAsyncObservation`` and ``ObservationalMemory.buffer`` / ``activate`` (a buffer at
each ``bufferTokens`` interval, halved near the threshold, of the messages no chunk holds yet, at least half a
``bufferTokens`` of them), ``@mastra/core`` 1.71.0's ``InMemoryStore.swapBufferedToActive`` (which chunks an activation
takes: the oldest, up to the count less a retention floor of ``messageTokens`` × (1 − ``bufferActivation``)) and
``ReflectorRunner.maybeReflect`` (reflects at ``observationTokens``).
Conformance: ``conformance/mastra-memory/`` runs that package with an in-memory store and a stub model returning canned
observations, before every model call of scripted runs and the long conversations, through the standalone calls
(``observe.mjs``) and through the agent loop's steps with buffering on and off (``turns.mjs``);
``tests/conformance/test_conformance_mastra_memory.py`` compares decision by decision (``conformance/README.md``: 517 of
528 calls agree without buffering, the rest the declared tokenizer and not-shrinking classes; with buffering the
declared classes of a one-buffer model).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policies._tail import message_tokens
from policies.base import Plan, Policy, SummaryRequest, Timing, Trigger, register
from policies.helpers import floor_index, plan_shrinks, unit_floor
from sim.core.errors import InvalidConfig
from sim.core.state import RunState

MESSAGE_TOKENS = 30_000  # the Observer's threshold: unobserved message tokens
OBSERVATION_TOKENS = 40_000  # the Reflector's threshold: observation tokens
BUFFER_ACTIVATION = 0.8  # observation.bufferActivation: the share of the threshold a buffer's activation observes
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
        buffering: observe in the background (Mastra's default, ``observation.bufferTokens`` 0.2); False is
            ``bufferTokens: false``, every observation made synchronously at the threshold.
        buffer_activation: with buffering, a buffer starts once the unobserved messages reach this share of
            ``message_tokens`` (``observation.bufferActivation``, 0.8) and is swapped in at the threshold.
    """

    message_tokens: int = field(default=MESSAGE_TOKENS, metadata={"tokens": True})
    observation_tokens: int = field(default=OBSERVATION_TOKENS, metadata={"tokens": True})
    buffering: bool = True
    buffer_activation: float = BUFFER_ACTIVATION

    def __post_init__(self) -> None:
        if self.message_tokens < 1 or self.observation_tokens < 1:
            raise InvalidConfig(
                f"message_tokens ({self.message_tokens!r}) and observation_tokens ({self.observation_tokens!r}) "
                "must be >= 1"
            )
        if not 0 < self.buffer_activation <= 1:
            raise InvalidConfig(f"buffer_activation ({self.buffer_activation!r}) must be in (0, 1]")


def _opens_with_thinking(state: RunState, lu: int) -> bool:
    """Whether the live turn's first assistant message opens with a thinking block."""
    msgs = state.messages
    first = next((msgs[i] for i in range(lu + 1, len(state)) if msgs[i].role == "assistant"), None)
    head = next((p for p in first.parts if p.kind != "text" or p.text.strip()), None) if first else None
    return head is not None and head.kind == "thinking"


@register("mastra-observational-memory")
class MastraObservationalMemory(Policy[MastraObservationalMemoryConfig]):
    """Mastra Observational Memory: at 30,000 unobserved tokens, observations replace every message so far, made in the
    background from 0.8 of that (Mastra's default buffering) or at once (``buffering`` off).

    * **Count**, before every model call (``ObservationStep.prepare`` runs at every step of the agent loop): the tokens
      of the unobserved messages, every message after the observations, the live turn included
      (``getUnobservedMessages`` feeds both ``getStatus``'s count and ``observe``), up to the start of an unresolved
      pending turn, which the harness keeps whole and is not counted until it resolves. So after an observation
      nothing counted is left.
    * **Observed**: those same messages (``SyncObservationStrategy`` observes them all, the cursor past the newest),
      summarised with the earlier observations into a user-side block. Mid tool loop that is the whole live turn, the
      user's message and the newest tool results included: the request is the observations alone and the next reply
      opens a turn afresh after them (with Anthropic thinking the engine takes it as the turn's opening). At a turn's
      first step (the user's message is the newest) a synchronous observation keeps the message in the prompt
      (``prepare`` preserves the step's input) and counts it observed. Nothing is observed while the newest message
      has a tool call without its result (``prepare`` defers then), nor when the summary would not shrink the view
      (``plan_shrinks``: Mastra observes anyway).
    * **Buffering off** (``bufferTokens: false``): at ``message_tokens`` the observation is made before the call.
    * **Buffering on** (the default; ``timing`` background, :mod:`sim.replay.background`): once the count reaches
      ``buffer_activation`` × ``message_tokens``, one buffer of every unobserved message starts (its Observer call
      made then); the first call at ``message_tokens`` waits for it and swaps it in (:meth:`must_wait`; the engine
      also swaps it in once done). What came since stays raw after it, about the (1 − ``buffer_activation``) ×
      ``message_tokens`` Mastra's activation keeps (its retention floor). Inside a tool loop whose first reply opens
      with thinking, a buffer stops before that reply: landing later in the loop, a later step would open the request
      without the thinking (the engine's rule on a live tool loop). A buffer whose turn became an unresolved pending
      turn before it landed is dropped by the engine.
    * **Reflection**: the observations are condensed by the same call once they pass ``observation_tokens`` (the
      observer's instruction says so); the threshold is otherwise not separately modelled.

    Differences, buffering: Mastra buffers in chunks, at every ``bufferTokens`` (0.2 × ``messageTokens``, halved past
    ``messageTokens`` − 1.1 × ``bufferTokens``) of messages no chunk holds yet, several under way and held at once,
    each Observer call seeing the earlier chunks; at the threshold it activates the oldest chunks, up to the count
    less the retention floor (more past ``blockAfter``, 1.2 × ``messageTokens``), and can start the next chunk at the
    same call. The engine has one background compaction at a time and asks nothing while it is under way, so here one
    buffer, at ``buffer_activation``, stands for the chunks an activation takes; the next starts a call after it
    lands. Where the count passes the threshold with no buffer under way, Mastra activates earlier chunks or observes
    synchronously before that call; here a buffer starts and lands at the next call. Mastra keeps a finished chunk
    until the threshold and waits at most 30 s for one in flight; the engine swaps a buffer in when done
    (``SUMMARY_SECONDS`` on the run's clock) and waits for it at the threshold however long. Mastra's Reflector
    buffers too (``reflection.bufferActivation`` 0.5), not modelled. Without buffering, after a first step's
    observation Mastra drops the observed user message at the next step (``filterObservedMessages``); the view
    keeps it until the next observation. With buffering on, Mastra's synchronous fallback also keeps the newest
    observed messages raw up to its retention floor; here it observes them all. Mastra knows no pending turns: where
    the harness keeps one whole, it is neither observed nor counted here.

    Known deviations: ``live-turn``, as above: mid tool loop the user's message and the newest results are observed
    and leave the prompt. ``revert-resolution`` (Mastra knows nothing of reverts): the Observer takes every
    unobserved message, a change that a kept revert reverts included, and a change observed away is not brought back
    for a revert that comes later. The observation is not held back at a revert's change, as the shared summary cut
    does: the reference page names no such rule, and holding it back left a large result after the change
    unobserved, so the next turn observed again over the threshold (``csim check``: compaction-loop after 5,736
    examples, issue 32).
    """

    TUNABLE = {
        "message_tokens": "10000:80000:5000",
        "observation_tokens": "20000:80000:10000",
    }
    TUNABLE_NATIVE = {
        "message_tokens": "observationalMemory.observation.messageTokens: {value}",
        "observation_tokens": "observationalMemory.reflection.observationTokens: {value}",
    }

    Config = MastraObservationalMemoryConfig
    known_deviations = frozenset({"revert-resolution", "live-turn"})
    deviation_reasons = {
        "revert-resolution": (
            "Mastra knows nothing of reverts: a change compacted away is not brought back for its revert"
        ),
        "live-turn": (
            "Mastra observes every unobserved message at the step, mid tool loop the user's message and the newest "
            "tool results included, and drops them from the prompt"
        ),
    }

    def observed_end(self, state: RunState) -> int:
        """Where what Mastra observes ends (``getUnobservedMessages``: every message so far, the live turn
        included), cut short at the start of an unresolved pending turn (the harness keeps those whole)."""
        n, pf = len(state), state.protected_from
        return unit_floor(state, n if pf is None else min(n, pf))

    def counted_from(self, state: RunState) -> int:
        """Where the unobserved messages start: the view's tail, past the user message an observation at the turn's
        first step took (Mastra marks it observed and keeps it in that step's prompt only)."""
        start, lu = floor_index(state), state.last_user_index
        if state.view.summary is not None and start == lu and self.observed_end(state) > lu:
            return lu + 1
        return start

    def unobserved_tokens(self, state: RunState) -> int:
        """Tokens of the unobserved messages (:meth:`counted_from` to :meth:`observed_end`): Mastra counts the set it
        observes, so nothing counted is left after an observation."""
        a = self.counted_from(state)
        return message_tokens(state, a, max(self.observed_end(state), a))

    @property
    def timing(self) -> Timing:  # type: ignore[override]  # a class attribute elsewhere; here the config's
        """Background with buffering (Mastra's default), else foreground (``bufferTokens: false``)."""
        return "background" if self.config.buffering else "foreground"

    def over_trigger(self, state: RunState) -> bool:
        """At the threshold (synchronous), or with buffering at ``buffer_activation`` of it: a buffer starts."""
        share = self.config.buffer_activation if self.config.buffering else 1.0
        return self.unobserved_tokens(state) >= share * self.config.message_tokens

    def must_wait(self, state: RunState) -> bool:
        """With a buffer under way, the call at the threshold activates it (``ObservationStep.prepare`` waits for a
        buffer in flight, then swaps the buffered observations in)."""
        return self.unobserved_tokens(state) >= self.config.message_tokens

    def cut(self, state: RunState) -> int:
        """Where the kept tail starts after an observation: :meth:`observed_end`, with two exceptions.

        Synchronously, at a turn's first step (the user's message is the newest) the message is observed and kept
        (``ObservationStep.prepare`` preserves the step's input). With buffering, a buffer lands at a later call, and
        inside a tool loop whose first reply opens with thinking the tail starts at that reply: a later step opening
        the request would leave Anthropic's thinking out (the engine's rule on a live tool loop)."""
        end, lu, n = self.observed_end(state), state.last_user_index, len(state)
        if not self.config.buffering:
            return lu if 0 <= lu == n - 1 and end == n else end
        if end > lu + 1 > 0 and _opens_with_thinking(state, lu):
            return unit_floor(state, lu + 1)
        return end

    def observation(self, state: RunState) -> Plan | None:
        """The observation Mastra would make now, whatever the threshold says: every unobserved message to
        :meth:`observed_end` summarised, the tail kept from :meth:`cut`; None while the newest message has a tool call
        without its result (``ObservationStep.prepare`` defers then) or when nothing would leave the view."""
        if len(state) and state.messages[-1].calls:
            return None
        cut = self.cut(state)
        if cut <= floor_index(state):
            return None
        request = SummaryRequest(prompt=OBSERVER_PROMPT, wrapper=WRAPPER, role="user")
        return Plan(start=cut, summarize=True, summary_request=request, mode="observe")

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        plan = self.observation(state)
        return plan if plan is not None and plan_shrinks(state, plan) else None
