"""Codex CLI local compaction (``codex-rs``): user messages kept, everything else summarised.

Sources (catalogue ``reference/policy-catalogue.md`` §B3 and §F, "Codex local"; the real source read for the
details below): openai/codex ``codex-rs/core/src/compact.rs`` at e06dd0e5 (``run_compact_task_inner``,
``build_compacted_history_with_limit``, ``insert_initial_context_before_last_real_user_or_summary``,
``InitialContextInjection``), ``codex-rs/core/templates/compact/summary_prefix.md`` at 50a53333 and
``prompt.md`` at 11baefb5, ``run_turn``/``run_pre_sampling_compact`` in ``codex-rs/core/src/codex.rs``
(index copies of 2026), ``codex-rs/utils/output-truncation/src/lib.rs`` and ``codex-rs/utils/string``
(``truncate_middle_chars``) for the entry bound.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from policies.base import Plan, Policy, SummaryCall, SummaryRequest, Trigger, register
from policies.helpers import plan_shrinks
from sim.core.conversation import Message, Part
from sim.core.errors import InvalidConfig
from sim.core.model import MESSAGE_OVERHEAD, REQUEST_OVERHEAD
from sim.core.state import RunState
from sim.core.view import Edit, Injected, Role, Rule, View, edited_chars, spans_of

#: ``summary_prefix.md`` at 50a53333, verbatim (two spaces before "assist" included): the text the model sees
#: before every summary, and the prefix by which Codex recognises an earlier summary among user messages
#: (``is_summary_message``). Quoted because it is part of what the model is sent, as a placeholder would be.
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "You also have access to the state of the tools that were used by that language model. Use this to build "
    "on the work that has already been done and avoid duplicating work. Here is the summary produced by the "
    "other language model, use the information in this summary to  assist with your own analysis:"
)
SUMMARY_WRAPPER = SUMMARY_PREFIX + "\n{summary}"  # ``format!("{SUMMARY_PREFIX}\n{summary_suffix}")``

# Our own wording of ``prompt.md`` (a "context checkpoint": a hand-off for the model that resumes the task,
# covering goal, progress and decisions, constraints and preferences, next steps, critical data).
SUMMARY_PROMPT = (
    "You are writing a checkpoint of this conversation for another model that will take over the task. "
    "State the user's goal, what has been done and decided, the constraints and preferences to respect, "
    "what is left to do next, and any data, paths or references the next model needs. Be brief and structured."
)

#: ``TruncationPolicy::Bytes(10_000)``: the default ``truncation_policy`` of Codex's fallback model info.
TRUNCATION_BYTES = 10_000
#: ``with_serialization_allowance``: "Adds the existing 20% allowance for serialization and headers"; outputs
#: recorded in history are truncated at 1.2 times the policy's budget.
SERIALIZATION_ALLOWANCE = 1.2
#: ``COMPACT_USER_MESSAGE_MAX_TOKENS`` in compact.rs.
USER_MESSAGE_MAX_TOKENS = 20_000
#: ``truncate_middle_with_token_budget``'s marker, for a user message cut to fit the budget.
USER_TRUNCATION_MARKER = "…{n} tokens truncated…"

#: Text prefixes of user-role messages that Codex does not count as real user input (``is_contextual_user_message``
#: and ``is_session_prefix`` in ``event_mapping.rs``/``user_instructions.rs``): they are not kept by compaction,
#: because the initial context is rebuilt fresh instead.
CONTEXTUAL_PREFIXES = (
    "<environment_context>",
    "# agents.md instructions",
    "<user_instructions>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<skill>",
)

#: What stands for ``build_initial_context`` here: the environment-context block Codex records as a user message
#: (the field names of its ``<environment_context>`` serialisation; the values are ours). The conversation's
#: system prompt stands for the base instructions, which Codex sends apart and compaction never touches.
INITIAL_CONTEXT = (
    "<environment_context>\n  <cwd>/workspace</cwd>\n  <approval_policy>on-request</approval_policy>\n"
    "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
    "  <shell>bash</shell>\n</environment_context>"
)

Phase = Literal["pre-turn", "mid-turn", "manual"]


@dataclass(frozen=True)
class CodexConfig:
    """Parameters, named after Codex's settings.

    Attributes:
        auto_compact_ratio: the share of the window at which auto-compaction fires: ``(context_window * 9) / 10``
            (§B3 "Trigger"). Codex's ``context_window`` is the model's input window (272,000 for its fallback model
            info, GPT-5's 400,000 less 128,000 of output), so it is taken here as the model's input budget.
        auto_compact_token_limit: ``model_auto_compact_token_limit``; unset by default. A configured value can only
            lower the limit: ``min(config, 0.9 x window)`` (§B3).
        user_message_max_tokens: ``COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000``: the newest user messages kept, in
            approximate tokens (bytes / 4).
        truncation_bytes: ``truncation_policy`` ``Bytes(10_000)``: tool outputs are cut to 1.2 times this many
            bytes as they are recorded (head and tail halves, ``…N chars truncated…`` between).
        initial_context: re-inject the initial context (:data:`INITIAL_CONTEXT`) after a compaction, as Codex does;
            off leaves it out (to compare the same compaction without the re-injected tokens).
    """

    auto_compact_ratio: float = 0.9
    auto_compact_token_limit: int | None = None
    user_message_max_tokens: int = USER_MESSAGE_MAX_TOKENS
    truncation_bytes: int = TRUNCATION_BYTES
    initial_context: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.auto_compact_ratio <= 1:
            raise InvalidConfig(f"auto_compact_ratio={self.auto_compact_ratio!r} must be in (0, 1]; Codex uses 0.9")
        if self.auto_compact_token_limit is not None and self.auto_compact_token_limit <= 0:
            raise InvalidConfig(
                f"auto_compact_token_limit={self.auto_compact_token_limit!r} must be positive, or unset for 90% of "
                "the window"
            )
        if self.user_message_max_tokens < 0:
            raise InvalidConfig(
                f"user_message_max_tokens={self.user_message_max_tokens!r} must be >= 0 (0 keeps no user message)"
            )
        if self.truncation_bytes < 64:
            raise InvalidConfig(
                f"truncation_bytes={self.truncation_bytes!r} is too small to keep a head and a tail; use 64 or more"
            )


def is_real_user_message(m: Message) -> bool:
    """A user message that Codex keeps through compaction: not a command, not an earlier summary, not contextual
    (environment context, AGENTS.md instructions and their kin)."""
    if m.role != "user" or m.command is not None:
        return False
    head = m.text.lstrip()
    return not head.startswith(SUMMARY_PREFIX) and not head.lower().startswith(CONTEXTUAL_PREFIXES)


@functools.lru_cache(maxsize=4096)
def truncate_output(part: Part, max_bytes: int) -> Part:
    """``truncate_middle_chars``: within ``max_bytes`` bytes unchanged; else the first and last halves of the byte
    budget (cut at character boundaries) with ``…N chars truncated…`` between, N the characters left out.

    Memoised (parts are frozen): every configuration of a sweep bounds the same results."""
    if len(part.text) * 4 <= max_bytes:
        return part
    raw = part.text.encode("utf-8")
    if len(raw) <= max_bytes:
        return part
    left = max_bytes // 2
    head = raw[:left].decode("utf-8", errors="ignore")
    tail = raw[len(raw) - (max_bytes - left) :].decode("utf-8", errors="ignore")
    removed = len(part.text) - len(head) - len(tail)
    return replace(part, text=f"{head}…{removed} chars truncated…{tail}", original_bytes=len(raw))


@register("codex")
class Codex(Policy[CodexConfig]):
    """Codex CLI local compaction: at 90% of the window, keep the newest user messages (20K tokens) and a summary.

    * Trigger: before a sampling request, Codex's estimate (the provider's total for the last request plus
      bytes/4 of what was recorded since; ``estimated_context_tokens``) at or over
      ``min(auto_compact_token_limit, 0.9 x window)``. Checked **pre-turn** (``run_pre_sampling_compact``, the first
      request after a user message) and **mid-turn** (after a sampling request that needs a follow-up, i.e. whose
      tool calls have results: the request after tool messages). A request after anything else (the model has
      finished) is not a compaction point. ``/compact`` compacts whatever the size.
    * New history (``build_compacted_history``): the real user messages, newest first while they fit
      ``user_message_max_tokens`` (bytes/4), the one that overflows the budget middle-truncated to what is left with
      ``…N tokens truncated…`` and the walk stopped; in chronological order; then the summary as a **user** message,
      ``SUMMARY_PREFIX + "\\n" + summary``. Every assistant message, reasoning item, tool call and output is dropped,
      so no pair is ever split. Earlier summaries are not user messages here (the view's summary is folded into the
      next one, as Codex's summariser reads the previous summary in the history it compacts).
    * Initial context (``InitialContextInjection``): pre-turn and manual compaction do not inject it, and the next
      regular turn re-injects it in full before its user message (``reference_context_item`` cleared): here it sits
      after the summary, before the kept tail. Pre-turn compaction runs before the new user message is recorded
      ("Pre-turn compaction runs before context updates and the new user message are recorded"), so that message
      stays verbatim after the summary and counts against no budget. **Mid-turn** it is inserted just before the last
      real user message, "because the model is trained to see the compaction summary as the last item"; the summary
      closes the history and the loop continues after it.
    * The summariser's prompt: on ``ContextWindowExceeded`` Codex drops the oldest history item and retries
      ("Trim from the beginning to preserve cache"): here ``summary_input_newest_tokens``, the newest pieces of the
      summariser's input that fit the window beside its prompt, the previous summary and the output reserve.
    * Entry bound: tool outputs are cut to ``truncation_bytes x 1.2`` bytes as they enter the log.

    Departures: a compaction whose view would not be smaller (plan_shrinks) is skipped, and so is an automatic one
    whose kept messages alone (with room for a summary of the model's output reserve) would still be over the
    trigger: in Codex's own proportions (20K of user messages under a trigger of 245K) neither happens, and in a
    small window they would compact every turn without progress. An empty summary fails the compaction (Codex
    would install "(no summary available)"). Pending turns are kept verbatim as the tail (an approval blocks Codex's
    turn, so nothing compacts it); the initial context then goes before the summary. Mid-turn, the live tool loop
    goes into the summary with the rest, reasoning included, as Codex drops reasoning items (the next reply opens a
    turn afresh after the summary, which Anthropic accepts with thinking on). The summariser
    reads what leaves the view, not the kept user messages too (an engine limit), and calls the model once.
    Not modelled: ghost snapshots, the model-switch item. Remote compaction is ``codex-remote``.

    Summariser request (``summary_call`` ``separate``): Codex appends its prompt to the same history, but
    ``run_compact_task_inner`` (compact.rs at e06dd0e5) builds ``Prompt { input, base_instructions, personality,
    ..Default::default() }``: no tools, where every agent request carries them, so the prompt diverges from the
    cached one before the conversation and is billed uncached. openai/codex#37305 reports exactly that for
    codex-cli 0.146.1 ("Local compaction request omits tool specs, so it never hits the prompt cache (full window
    re-billed uncached on every compaction)"); ``codex-remote`` sends its tools and is a fork.
    """

    TUNABLE = {
        "auto_compact_ratio": "0.5:0.95:0.05",
    }
    TUNABLE_NATIVE = {
        "auto_compact_ratio": "model_auto_compact_token_limit = {value} x context_window (config.toml, in tokens)",
    }

    Config = CodexConfig
    summary_call: ClassVar[SummaryCall] = "separate"
    #: How the summary is placed and asked for (``codex-remote`` places an opaque compaction item instead).
    summary_wrapper: ClassVar[str] = SUMMARY_WRAPPER
    summary_role: ClassVar[Role] = "user"
    summary_prompt: ClassVar[str] = SUMMARY_PROMPT
    # Kept user messages can revert a change whose assistant message was dropped: Codex knows nothing of
    # reverts and keeps user messages only.
    known_deviations = frozenset({"revert-resolution"})
    deviation_reasons = {
        "revert-resolution": "Codex keeps user messages only, so a kept revert can lose the change it reverts",
    }

    def bound_tool_result(self, part: Part) -> Part:
        return truncate_output(part, round(self.config.truncation_bytes * SERIALIZATION_ALLOWANCE))

    def bound_key(self) -> Hashable:
        return ("codex", round(self.config.truncation_bytes * SERIALIZATION_ALLOWANCE))

    def limit(self, state: RunState) -> int:
        """``auto_compact_token_limit``: 90% of the window, lowered (never raised) by the configured limit."""
        cfg = self.config
        own = int(state.model.input_budget * cfg.auto_compact_ratio)
        return own if cfg.auto_compact_token_limit is None else min(cfg.auto_compact_token_limit, own)

    def over_trigger(self, state: RunState) -> bool:
        return state.estimated_context_tokens() >= self.limit(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or len(state) == 0:
            return None
        phase: Phase
        if trigger == "manual":
            phase = "manual"
        else:
            last = state.messages[-1]
            if last.role == "user":
                phase = "pre-turn"
            elif last.role == "tool":
                phase = "mid-turn"  # needs_follow_up: the last sampling request made calls
            else:
                return None  # the model finished: no mid-turn compaction
            if not self.over_trigger(state):
                return None
        plan = self._plan(state, phase)
        if plan is None or not plan_shrinks(state, plan):
            return None
        if phase != "manual" and self._still_over(state, plan):
            return None
        return plan

    # -- the new history ------------------------------------------------------------------------------
    def _plan(self, state: RunState, phase: Phase) -> Plan | None:
        n = len(state)
        last = state.messages[-1]
        tail = n - 1 if phase == "pre-turn" and is_real_user_message(last) else n
        pf = state.protected_from
        if pf is not None:
            tail = min(tail, pf)
        tail = max(tail, state.view.start)
        shown = self._shown_before(state, tail)
        kept, truncated = self._kept_users(state, shown)
        keep = set(kept)
        if all(i in keep or (i == 0 and state.has_system) for i in shown):
            return None  # nothing would leave the view
        edits: tuple[Edit, ...] = ()
        if truncated is not None:
            index, budget = truncated
            rule = Rule(kinds=frozenset({"text"}), action="truncate", max_tokens=budget, text=USER_TRUNCATION_MARKER)
            edits = (Edit(rule, index + 1),)
        return Plan(
            start=tail,
            pinned=tuple(kept),
            edits=edits,
            injected=self._injected(state, phase, kept, tail),
            summarize=True,
            summary_request=SummaryRequest(
                role=self.summary_role,
                wrapper=self.summary_wrapper,
                prompt=self.summary_prompt,
                input_newest_tokens=self._summariser_budget(state, self.summary_prompt),
            ),
            mode=phase,
        )

    @staticmethod
    def _shown_before(state: RunState, tail: int) -> list[int]:
        """The messages before ``tail`` that the view shows, oldest first: Codex's history before the compaction
        (O(spans + the tail), paid only when compacting)."""
        view = state.view
        return [i for a, b in (*view.spans, (view.start, tail)) for i in range(a, min(b, tail))]

    def _kept_users(self, state: RunState, shown: list[int]) -> tuple[list[int], tuple[int, int] | None]:
        """The real user messages of ``shown``, newest first while they fit the budget (as the view shows them: a
        message truncated by an earlier compaction counts at its truncated size). Returns them oldest first, and
        the one cut to fit (index, tokens left) if any."""
        view = state.view
        remaining = self.config.user_message_max_tokens
        kept: list[int] = []
        truncated = None
        for i in reversed(shown):
            m = state.messages[i]
            if not is_real_user_message(m):
                continue
            if remaining == 0:
                break
            tokens = math.ceil(edited_chars(m, view.rules_at(i)) / 4)
            kept.append(i)
            if tokens <= remaining:
                remaining -= tokens
            else:
                truncated = (i, remaining)
                break
        kept.reverse()
        return kept, truncated

    def _injected(self, state: RunState, phase: Phase, kept: list[int], tail: int) -> tuple[Injected, ...]:
        """The initial context: after the summary (pre-turn, manual), or before the last real user message
        (mid-turn; before the summary when that message is not among the kept ones)."""
        if not self.config.initial_context:
            return ()
        text = INITIAL_CONTEXT
        if phase != "mid-turn":
            return (Injected(text, role="user", label="initial context"),)
        spans = spans_of(kept)
        lu = state.last_user_index
        slot = next((k for k, (a, b) in enumerate(spans) if a <= lu < b), None)
        if slot is None:
            return (Injected(text, role="user", before_summary=True, label="initial context"),)
        return (Injected(text, role="user", slot=slot, label="initial context"),)

    def _summariser_budget(self, state: RunState, prompt: str) -> int:
        """Tokens of the summariser's input that fit the window beside its prompt, the previous summary, the framing
        of the call and the model's output reserve: Codex's drop-oldest retry, done once (the newest items that fit
        are what the retries leave)."""
        model = state.model
        fixed = REQUEST_OVERHEAD + 3 * MESSAGE_OVERHEAD + _tokens(state, prompt)
        if state.view.summary is not None:
            fixed += _tokens(state, state.view.summary.text)
        return max(1, model.context_window - model.output_reserve - fixed)

    def _still_over(self, state: RunState, plan: Plan) -> bool:
        """Whether the kept messages, the initial context and a summary as long as the model's output reserve
        would still be at or over the trigger (Codex would compact again at once: no progress)."""
        after = plan.view_from(state.view).with_(summary=None)
        kept = math.ceil(state.chars_in_view(after) / 4) + math.ceil(len(self.summary_wrapper) / 4)
        return kept + state.model.output_reserve >= self.limit(state)


def _tokens(state: RunState, text: str) -> int:
    """Tokens of ``text`` as the run's tokenizer counts it: what one injected message adds to an empty view."""
    n = len(state)
    bare = View(start=n)
    return state.view_size(bare.with_(injected=(Injected(text),)))[0] - state.view_size(bare)[0] - MESSAGE_OVERHEAD


# -- remote compaction -----------------------------------------------------------------------------------------
#: ``RETAINED_MESSAGE_TOKEN_BUDGET`` of ``compact_remote_v2.rs`` (catalogue §B3 "Remote compaction V2", read through
#: code readings and a port that copies it as ``V2_RETAINED_MESSAGE_TOKEN_BUDGET = 64_000``).
RETAINED_MESSAGE_TOKEN_BUDGET = 64_000
#: What we ask the mock summariser for: the server's compaction prompt is not public (the client sends none, only
#: a ``CompactionTrigger`` item).
REMOTE_PROMPT = (
    "Compact the conversation so far into a state the model can continue from: the user's goals and constraints, "
    "what was done and found, the decisions taken and what remains."
)


@dataclass(frozen=True)
class CodexRemoteConfig(CodexConfig):
    """As :class:`CodexConfig`, but ``user_message_max_tokens`` is ``RETAINED_MESSAGE_TOKEN_BUDGET = 64_000``: the
    newest user messages the installed history keeps (approximate tokens, bytes / 4)."""

    user_message_max_tokens: int = RETAINED_MESSAGE_TOKEN_BUDGET


@register("codex-remote")
class CodexRemote(Codex):
    """Codex CLI remote compaction (V2): at 90% of the window, the newest user messages (64K tokens) and an opaque item.

    Codex's dispatch: with an OpenAI or Azure provider (and ``Feature::TokenBudget`` off) every automatic and manual
    compaction is remote (catalogue §B3). Sources [T]: code readings of ``codex-rs/core/src/compact_remote_v2.rs``
    (catalogue §B3 "Remote compaction V2", index ids 55465083079, 54882182598; the repository is too large to
    fetch) and a port that copies its constants and retention (oh-my-pi
    ``packages/agent/src/compaction/compaction-v2-streaming.ts``), with the local path's code (``codex``, this
    module) for what the two share.

    * Trigger, its phases and the entry bound: as ``codex`` (90% of the window, pre-turn and mid-turn, ``/compact``;
      tool outputs cut to 1.2 x 10,000 bytes).
    * No client prompt: the client appends a ``CompactionTrigger`` item to an otherwise normal Responses request and
      takes back exactly one encrypted ``compaction`` output item. Before sending it, the oldest function-call and
      reasoning items are trimmed until the request fits the window (``trim_function_call_history_to_fit_context_
      window``): here, as for ``codex``, the newest pieces of the summariser's input that fit.
    * Installed history: the retained prompt messages, real user messages newest first up to
      ``RETAINED_MESSAGE_TOKEN_BUDGET = 64,000`` tokens (bytes / 4), in chronological order, then the compaction item;
      Codex re-adds its canonical initial context as for local compaction (pre-turn: the next turn re-injects it;
      mid-turn: before the last real user message).
    * The item is opaque: what it carries is modelled with the run's retention model (``sim.replay.summariser``: each
      fact in the compacted history survives with the per-kind keep probability; the previous item is folded into the
      next), placed as an assistant-role message with no prefix, its size the mock summariser's.

    Known deviation: ``revert-resolution``, as ``codex``.

    The user message that overflows the budget is middle-truncated (``…N tokens truncated…``) and older ones go, as
    local compaction does: a code reading says V2 "truncate[s] retained message text to RETAINED_MESSAGE_TOKEN_BUDGET,
    preferring newest messages", and the oh-my-pi port (``compaction-v2-streaming.ts``,
    ``truncateRetainedMessagesForCompactionV2``) does exactly this.

    Differences: as ``codex``'s. Hook prompts and agent-to-agent messages (which V2 also retains) do not occur in the
    simulator's conversations.

    Summariser request (``summary_call`` ``fork``): the compaction request is the agent's own: in
    ``run_remote_compact_attempt`` (``codex-rs/core/src/compact_remote_request.rs`` at cf62e27d) its ``Prompt`` holds
    the history (trimmed as above), the tools (``model_visible_specs()``), ``parallel_tool_calls`` and the same base
    instructions, and the catalogue (§B3, V2) calls it "an otherwise normal Responses request"; openai/codex#37305
    contrasts it with the local path's, which omits the tools. So it reads the cached prefix (OpenAI's automatic
    prefix caching). Its own tail is the ``CompactionTrigger`` item; the instruction the mock summariser is given
    (:data:`REMOTE_PROMPT`) stands for it, a few dozen tokens more.
    """

    Config = CodexRemoteConfig
    summary_call = "fork"
    summary_wrapper = "{summary}"
    summary_role = "assistant"
    summary_prompt = REMOTE_PROMPT
