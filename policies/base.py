"""What a policy is: a frozen config, a pure decision, and a registry entry.

A policy answers three questions, and nothing else:

* :meth:`Policy.decide`: given the run's state, compact now or not, and how (a :class:`Plan`);
* :meth:`Policy.bound_tool_result`: what a tool result looks like when it enters the log;
* ``retry_on_overflow``: how many times to compact and retry when the provider says "too long".

A plan names positions in the log: where the kept tail starts, which earlier spans stay, which
parts of older messages are edited (tool results cleared, inputs cleared, thinking dropped, long
texts truncated), what is injected, and whether what leaves the view is summarised. The engine
carries the plan out (calling the mock summariser when asked), checks the result against
the invariants, and records it; a policy never edits the log or the view itself.

Write your own by subclassing :class:`Policy` with a nested frozen ``Config`` dataclass; the README
shows a complete one. ``csim check --policy package.module:ClassName`` fuzzes it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar

from sim.core.cache import CachePlacement
from sim.core.conversation import Part
from sim.core.errors import InvalidConfig
from sim.core.identity import spec_hash
from sim.core.registry import Registry
from sim.core.state import RunState
from sim.core.view import DEFAULT_PLACEHOLDER, Edit, Injected, Role, View, spans_of, standard_rule

Trigger = Literal["auto", "manual", "overflow"]
#: When a policy is asked for an automatic compaction: ``request``, before every model call (mid tool loop
#: included); ``user_turn``, before the first model call after a user message only; ``response``, right
#: after each model reply is appended, before the tool results or the user message that follow it (as
#: clients that check the last response's usage do, e.g. the Anthropic SDK's ``compaction_control``).
When = Literal["request", "user_turn", "response"]
#: Where the engine asks: before a model call, or right after a reply.
AskPoint = Literal["request", "response"]
#: How the modelled client sends its summariser request: ``separate``, a prompt of its own (the transcript under
#: the summariser's instruction), which shares no prefix with the agent's requests; ``fork``, the agent's own
#: request (same tools, system prompt and conversation) with the instruction appended as a last user message,
#: which reads the agent's cached prefix.
SummaryCall = Literal["separate", "fork"]
#: When a policy's automatic summary takes effect (:attr:`Policy.timing`).
Timing = Literal["foreground", "background"]
C = TypeVar("C")


@dataclass(frozen=True)
class SummaryRequest:
    """How the modelled client asks for a summary, and how it writes the one it gets into the view.

    A policy that summarises names its client's request once, usually from module constants that cite the
    client's source; the defaults are a plain instruction and the summary as it comes back, in a user message.

    Attributes:
        prompt: the summariser's instructions (counted in its input; a forked request appends them to the
            agent's own request as a last user message).
        wrapper: how the summary text is placed in its message (``{summary}`` marks it).
        role: the role of the message that carries the summary.
        input_max_chars: cap on the summariser's input (keeps the newest text, or both ends: see ``input_keep``).
        input_keep: ``newest``: the newest ``input_max_chars`` characters; ``ends``: whole messages from both ends
            (the oldest up to half the cap, then the newest), the instruction and the previous summary counted
            inside the cap, and ``input_marker`` (``{n}``: messages left out) in place of the middle.
        input_marker: the text that stands for the messages an ``ends`` input leaves out.
        input_newest_tokens: keep only the newest whole pieces of the summariser's input (message texts, tool
            calls and results, labels) that fit in this many tokens (Codex-style trimming).
        overflow_retries: how many times the client sends a summariser request the provider rejects as too long
            again, on less of the conversation: each time the newest pieces kept are cut by what the provider said
            was over (Claude Code's compact call: ``MAX_PTL_RETRIES`` = 3, ``truncateHeadForPTLRetry`` dropping
            the oldest API rounds that cover the token gap; here whole pieces, not rounds). 0: a rejected
            summariser request fails the compaction.
        clip_chars: per-message clip of the summariser's input.
        drop_tool_outputs: leave tool results out of the summariser's input (calls stay).
        max_tokens: the summariser call's output cap as the modelled client sets it (Claude Code's 20,000); the
            run config's summariser cap, when lower, still applies.
        transcript: how the transcript frames each message (:mod:`sim.replay.summary_input`). ``inline`` (the
            default): ``user: `` or ``assistant: `` and the parts inline, each message as the new view shows it,
            clipped with `` …``. ``blocks``: effect-agent's ``renderForSummary``: a ``[role]`` line over each
            message as the log holds it, its parts rendered as that function renders them, clipped with ``…``,
            the previous summary a first ``[Previous summary]`` block counted inside ``input_max_chars``, and the
            whole inside ``<transcript>`` tags after the instruction.
    """

    prompt: str = "Summarise the conversation so far for the agent that continues it."
    wrapper: str = "{summary}"
    role: Role = "user"
    input_max_chars: int | None = None
    input_keep: Literal["newest", "ends"] = "newest"
    input_marker: str = "[… {n} messages omitted from summary input …]"
    input_newest_tokens: int | None = None
    overflow_retries: int = 0
    clip_chars: int | None = None
    drop_tool_outputs: bool = False
    max_tokens: int | None = None
    transcript: Literal["inline", "blocks"] = "inline"


@dataclass(frozen=True)
class Plan:
    """A compaction the policy asks for: the view it wants, as positions in the log.

    Attributes:
        start: first message index of the kept tail; messages before it leave the view unless a span
            keeps them, summarised if ``summarize`` else dropped.
        cleared_through: tool results in messages before this index show the policy's placeholder (the
            standard edit); None leaves the bound where the view has it.
        summarize: summarise what leaves the view (shown before, not after) together with the previous
            summary (so summaries are incremental and the previous one is folded in).
        pinned: earlier messages kept verbatim, e.g. the first user message (each one a span).
        spans: earlier ranges ``(a, b)`` kept verbatim, with ``pinned`` the view's closed spans.
        edits: the view's other edits (:class:`sim.core.view.Edit`: which parts of messages before a bound become
            a placeholder, are dropped or truncated); None keeps the view's. The standard clearing is
            ``cleared_through``'s, always the first edit, whatever this holds.
        injected: messages added that are not in the log (:class:`sim.core.view.Injected`); None keeps the view's.
        summary_slot: where the summary goes: before ``spans[slot]``, the tail counting as the last span;
            None (default) right before the tail.
        summary_request: how the summary is asked for and written (:class:`SummaryRequest`), when ``summarize``.
        mode: a label for reports (``prune``, ``summarize``, ``drop``...).
        checkpoint: extra replay state to record with the compaction (name, value pairs).
        restore: roll back to this earlier view, one of ``state.checkpoints``; every other field is
            then ignored. A rollback is the one way a view may grow again (mode ``rollback``).
    """

    start: int
    cleared_through: int | None = None
    summarize: bool = False
    pinned: tuple[int, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    edits: tuple[Edit, ...] | None = None
    injected: tuple[Injected, ...] | None = None
    summary_slot: int | None = None
    summary_request: SummaryRequest = SummaryRequest()
    mode: str = "summarize"
    checkpoint: tuple[tuple[str, str], ...] = ()
    restore: View | None = None

    def view_from(self, before: View) -> View:
        """The view this plan makes of ``before``, with ``before``'s summary (the engine replaces it when the
        plan summarises). Pure; the engine checks the result (``sim.core.invariants.check_plan``)."""
        if self.restore is not None:
            return self.restore
        std = standard_rule(before.placeholder)
        edits = [e for e in (before.edits if self.edits is None else self.edits) if e.rule != std]
        cleared = before.cleared_through if self.cleared_through is None else self.cleared_through
        if cleared > 0:
            edits.insert(0, Edit(std, cleared))
        kept = [i for a, b in self.spans for i in range(a, b)]
        return View(
            start=self.start,
            spans=spans_of([*self.pinned, *kept]),
            summary=before.summary,
            summary_slot=self.summary_slot,
            edits=tuple(e for e in edits if e.before > 0),
            injected=before.injected if self.injected is None else self.injected,
            placeholder=before.placeholder,
            checkpoint=self.checkpoint,
        )


@dataclass(frozen=True)
class NoConfig:
    """A policy without parameters."""


class Policy(Generic[C]):
    """Base class of every policy. Subclasses set ``Config`` and override :meth:`decide`; subclass
    ``Policy[MyConfig]`` so that ``self.config`` is typed.

    Class attributes:
        Config: the frozen dataclass of parameters; validate in its ``__post_init__``.
        when: the points at which the engine asks for an automatic compaction (:data:`When`); it always
            asks after ``/compact`` (trigger ``manual``) and, ``retry_on_overflow`` times, after the
            provider rejected a prompt as too long (trigger ``overflow``).
        known_deviations: invariants the modelled real system is documented to break; the property
            suite expects them instead of failing on them, and a test shows each one happens.
        deviation_reasons: one line per known deviation, in our words from the docstring, saying why the
            modelled system breaks it; results (the violations table's ``reason``), ``csim compare``, ``csim run``
            and the reports show it beside the count, so a declared deviation does not read as a bug.
        acts_on: what the policy must see before it acts, when ``csim check``'s generated conversations never have
            it (``openhands-browser-output``: browser observations); the check then does not fail it for never
            acting. Empty for a policy that acts on the size or length of the context.
        recheck_after_compaction: whether the engine asks again, at the same point, after an automatic
            compaction (not a rollback), until the policy declines: as Workshop reruns a turn that compacted
            and checks the shorter prompt again (``overseer.ts``, the loop around ``runAgent``).
        overflow_fails_turn: what a request the provider still rejects as too long (after any retries) ends:
            the run (default, ``finish_reason`` ``context-overflow``), or only the current turn, when True: the
            modelled client reports the error and waits for the next user message, so the script's messages up
            to it are skipped (never sent or appended; their needs count as lost, their task as failed) and the
            run goes on (``failed_turns`` in the run's summary).
        run_status: whether the modelled system appends the run-status line to each request.
        placeholder: the text that replaces a cleared tool result.
        cache_placement: where the modelled client puts Anthropic ``cache_control`` breakpoints
            (:class:`~sim.core.cache.CachePlacement`; default: system prompt and last block, 5 minutes).
        summary_call: how the modelled client sends its summariser request (:data:`SummaryCall`):
            ``separate`` (default), a prompt of its own that the prompt cache bills as uncached input; ``fork``, the
            agent's request plus the instruction, billed by the run's cache model like an agent request (with
            ``--cache provider``; with caching off it is priced as ``separate``). A policy that sets it names the
            source that shows its client's request.
        timing: when an automatic summarising compaction takes effect (:data:`Timing`): ``foreground`` (default), at
            once, the request waiting for it; ``background``, the summary is computed from the view as it stands
            (the summariser request made and billed then) and swapped in once it is done on the run's clock, or
            before the first request :meth:`must_wait` says cannot go without it; meanwhile the agent works on
            the whole history and the policy is not asked again (:mod:`sim.replay.background`). What came after
            the start stays verbatim after the summary: the summary is stale by it.
    """

    Config: ClassVar[type[Any]] = NoConfig
    when: ClassVar[frozenset[When]] = frozenset({"request"})
    name: ClassVar[str] = ""
    known_deviations: ClassVar[frozenset[str]] = frozenset()
    deviation_reasons: ClassVar[Mapping[str, str]] = {}
    acts_on: ClassVar[str] = ""
    run_status: ClassVar[bool] = False
    recheck_after_compaction: ClassVar[bool] = False
    overflow_fails_turn: ClassVar[bool] = False
    placeholder: ClassVar[str] = DEFAULT_PLACEHOLDER
    cache_placement: ClassVar[CachePlacement] = CachePlacement()
    #: ``csim tune``'s search space (sim.sweep.space): Config field -> range, as ``--space FIELD=SPEC`` takes it; the
    #: first field is the trigger (``--by window`` reports it per window). Empty: nothing to tune.
    TUNABLE: ClassVar[Mapping[str, str]] = {}
    #: Each tuned field in the real system's own terms (``{value}`` stands for the value), as the Config's docstring
    #: names it: an environment variable, a config key, a constructor argument.
    TUNABLE_NATIVE: ClassVar[Mapping[str, str]] = {}
    summary_call: ClassVar[SummaryCall] = "separate"
    timing: ClassVar[Timing] = "foreground"

    def __init__(self, config: C | None = None) -> None:
        self.config: C = config if config is not None else self.Config()
        if not isinstance(self.config, self.Config):
            raise InvalidConfig(f"{type(self).__name__} needs a {self.Config.__name__}, got {type(config).__name__}")

    @classmethod
    def declared(cls, invariant: str) -> str | None:
        """Why ``invariant`` is a declared deviation of this policy (:attr:`deviation_reasons`), or None when it is
        not one. A deviation declared without a reason is still declared, and says so."""
        if invariant not in cls.known_deviations:
            return None
        return cls.deviation_reasons.get(invariant) or f"declared by {cls.name or cls.__name__} (no reason given)"

    def must_wait(self, state: RunState) -> bool:
        """With a background compaction under way (:attr:`timing`), whether the next request waits for it (Copilot
        blocks at 0.95 of the window); by default it never does and the summary lands when it is done. Pure."""
        return False

    @property
    def retry_on_overflow(self) -> int:
        """Compact-and-retry attempts when the provider rejects a prompt as too long."""
        return 0

    def bound_tool_result(self, part: Part) -> Part:
        """The tool result as it enters the log; unchanged by default."""
        return part

    def bound_key(self) -> Hashable:
        """Policies with equal keys bound every tool result alike (``sim.replay.lockstep.run_many`` replays such
        policies together). None when results are kept as they are; a policy that overrides
        :meth:`bound_tool_result` may return what its bounding depends on; by default its whole spec."""
        if type(self).bound_tool_result is Policy.bound_tool_result:
            return None
        return json.dumps(self.spec(), sort_keys=True, default=str)

    def asked_at(self, state: RunState, point: AskPoint = "request") -> bool:
        """Whether the engine asks for an automatic compaction at ``point`` (:attr:`when`): before the model
        call about to be made, or right after the reply just appended."""
        if point == "response":
            return "response" in self.when
        if "request" in self.when:
            return True
        return "user_turn" in self.when and len(state) > 0 and state.messages[-1].role == "user"

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        """Compact now or not. ``trigger`` is ``auto`` before a request (at the points :attr:`when` names),
        ``manual`` after ``/compact``, ``overflow`` after the provider rejected the prompt as too long.

        Pure: the answer depends on the state and the config only, and asking changes nothing. A sweep
        relies on it (``sim.replay.lockstep.run_many`` asks every configuration at every step and may ask twice);
        a policy that kept its own mutable state would get different results there than alone."""
        return None

    def over_trigger(self, state: RunState) -> bool | None:
        """Whether the view is at or over this policy's automatic trigger; None when the policy does
        not say. Pure, like :meth:`decide`.

        The engine asks right after each automatic compaction, and again once the request after it has
        reported its prompt (before the reply is in): two on consecutive turns that both leave the view over
        the trigger, by both answers, are a ``compaction-loop`` (compacting every turn without progress). A
        policy that does not answer is asked ``decide(state, "auto")`` instead: a plan then means the same.
        """
        return None

    # -- identity ------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return dataclasses.asdict(self.config)  # type: ignore[call-overload, no-any-return]  # Config: a dataclass

    def spec(self) -> dict[str, Any]:
        """A JSON-able recipe that rebuilds this policy: its name and full config."""
        return {"policy": self.name or type(self).__name__, "params": self.params()}

    def params_hash(self) -> str:
        """This policy's settings as an id (:func:`sim.core.identity.spec_hash`)."""
        return spec_hash(self.spec())


POLICIES: Registry[type[Policy[Any]]] = Registry("policy")


def register(name: str) -> Any:
    """Class decorator: register a policy under ``name`` with its config's defaults listed."""

    def deco(cls: type[Policy[Any]]) -> type[Policy[Any]]:
        cls.name = name
        doc = (cls.__doc__ or "").strip().splitlines()
        defaults = ", ".join(f"{f.name}={_fmt(f.default)}" for f in dataclasses.fields(cls.Config))
        POLICIES.add(name, cls, doc[0] if doc else "", defaults)
        return cls

    return deco


def _fmt(v: Any) -> str:
    return "unset" if v is None else str(v)
