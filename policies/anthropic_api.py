"""The Anthropic API's own context management (catalogue §B2): server-side context editing, server compaction,
and the Python SDK's client-side compaction.

One module because the four share the API's vocabulary (turns, tool uses, the ``<summary>`` message, the
rollback and pending-turn rules) and its sources, and the catalogue treats them as one system.

* ``anthropic-clear-tool-uses``: ``clear_tool_uses_20250919`` (beta ``context-management-2025-06-27``), §B2a;
* ``anthropic-clear-thinking``: ``clear_thinking_20251015`` (same beta), §B2b;
* ``anthropic-compaction``: ``compact_20260112`` (beta ``compact-2026-01-12``), §B2c;
* ``anthropic-sdk-compaction``: ``tool_runner(compaction_control=...)`` of the Python SDK, §B2d.

Sources read (for facts; nothing here is copied from them):

* the documentation pages ``platform.claude.com/docs/en/build-with-claude/context-editing`` (the en, zh-CN
  and ja copies) and ``.../build-with-claude/compaction`` (the English page);
* the request types of ``anthropics/anthropic-sdk-python`` at ``887ee67f``:
  ``src/anthropic/types/beta/beta_clear_tool_uses_20250919_edit_param.py``,
  ``beta_clear_thinking_20251015_edit_param.py`` and ``beta_compact_20260112_edit_param.py`` (their field
  docstrings carry the defaults and the one sentence that settles ``clear_at_least``);
* the ``anthropic`` wheel 0.125.0 from PyPI (the last release that ships ``compaction_control``; 1.0 and
  later replaced it by on-demand compaction): ``anthropic/lib/tools/_beta_compaction_control.py`` and
  ``BaseSyncToolRunner._check_and_compact`` / ``__run__`` in ``anthropic/lib/tools/_beta_runner.py``.

The two context edits are views recomputed on every request from the full history, as the API applies them
(the client keeps and resends everything); the two compactions summarise. Invariants the harness holds and the
real systems know nothing of (a pending turn is never edited or summarised; a revert keeps the change it
reverts) are kept here as the harness's contract, the way ``sliding-window`` keeps them: edits stop at a pending
turn, cuts at a pending turn, and a revert of a change already summarised rolls the view back
(:func:`policies.helpers.rollback_target`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from policies.base import AskPoint, Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import floor_index, keep_reverts, plan_shrinks, rollback_target, unit_floor
from sim.core.errors import InvalidConfig
from sim.core.model import MESSAGE_OVERHEAD
from sim.core.state import RunState
from sim.core.view import Edit, Rule, View, standard_rule

# The documentation says cleared results are replaced "with placeholder text so that Claude knows the tool
# result was removed" and never gives the text (catalogue §G1: the server's edited prompt is never returned).
# Our own wording; the length of a short sentence, as the real one is described.
PLACEHOLDER = "[tool result cleared by context management]"
# A cleared tool input: the call keeps its id and name, its input becomes an empty object (LangChain's mirror
# of this edit, catalogue §B7b, sets the arguments to ``{}``; the API's own text is not documented).
INPUT_PLACEHOLDER = "{}"
TOOL_NAME_SEPARATORS = ",+ \t"  # Anthropic tool names are [a-zA-Z0-9_-]{1,64}: none of these occurs in one
#: A config field that is an absolute token count: ``csim check`` scales it to its small window.
TOKENS = {"tokens": True}

# compact_20260112: "Must be at least 50,000 tokens" (compaction page, Parameters).
API_MIN_COMPACTION_TRIGGER = 50_000
# Our wording of the documented default compaction prompt (compaction page, "Custom summarization
# instructions"): a summary for continuity in a new context, with state, next steps and learnings, in tags.
COMPACTION_PROMPT = (
    "You have been working on the task above and this transcript is partial. Summarise it so the work can go "
    "on in a fresh context where the history above is replaced by your summary: record the state of the work, "
    "the next steps and what was learned. Put the whole summary inside <summary></summary> tags."
)
# Our wording of DEFAULT_SUMMARY_PROMPT of _beta_compaction_control.py: a structured continuation summary in
# five parts, in tags.
SDK_SUMMARY_PROMPT = (
    "The task above is not finished. Write a continuation summary from which you, or another instance of "
    "you, can resume in a new context window where this conversation is replaced by the summary. Keep it "
    "structured, short and actionable, in five parts: 1. the task (the user's request, success criteria, "
    "constraints); 2. the current state (what is done; files and outputs with their paths); 3. discoveries "
    "(constraints found, decisions and why, errors and their fixes, approaches that failed); 4. next steps "
    "(in order, with blockers and open questions); 5. context to keep (user preferences, domain details, "
    "promises made). Put the summary inside <summary></summary> tags."
)
# Both prompts ask for the tags and both systems pass the model's text on as it is, so the tags stay in.
SUMMARY_WRAPPER = "<summary>\n{summary}\n</summary>"


def _names(value: object, field: str) -> tuple[str, ...]:
    """Tool names from a tuple or list, or from a string separated by ``,`` (``+`` and spaces also work)."""
    if isinstance(value, (list, tuple, frozenset, set)):
        value = ",".join(str(v) for v in value)
    if not isinstance(value, str):
        raise InvalidConfig(f"{field}={value!r} must be tool names, e.g. {field}=memory,web_search")
    for sep in TOOL_NAME_SEPARATORS[1:]:
        value = value.replace(sep, TOOL_NAME_SEPARATORS[0])
    return tuple(sorted({v for v in value.split(TOOL_NAME_SEPARATORS[0]) if v}))


def _rollback(state: RunState) -> Plan | None:
    """The harness's revert contract: a kept revert whose change was summarised rolls the view back."""
    target = rollback_target(state)
    return None if target is None else Plan(start=target.start, restore=target, mode="rollback")


def _below_pending(state: RunState, bound: int) -> int:
    """``bound`` lowered to the start of an unresolved pending turn, which nothing may edit or summarise."""
    pf = state.protected_from
    return bound if pf is None else min(bound, pf)


def _edit_plan(state: RunState, rules: tuple[Rule, ...], bound: int, mode: str) -> Plan:
    """The current view with ``rules`` applied before ``bound`` (a rule equal to the view's standard clearing
    travels as ``cleared_through``, as :class:`Plan` requires)."""
    std = standard_rule(state.view.placeholder)
    kept = tuple(e for e in state.view.edits if e.rule not in rules and e.rule != std)
    return Plan(
        start=state.view.start,
        spans=state.view.spans,
        cleared_through=bound if std in rules else None,
        edits=(*kept, *(Edit(r, bound) for r in rules if r != std)),
        mode=mode,
    )


def block_cut(state: RunState, preserve: int = 0) -> int | None:
    """Where a compaction block's summary ends: everything, or all but the ``preserve`` newest messages taken whole;
    never into a pending turn; a kept revert keeps its change. None when nothing new would be summarised."""
    n = len(state)
    cut = unit_floor(state, max(0, n - preserve)) if preserve else n
    cut = keep_reverts(state, _below_pending(state, cut))
    return cut if cut > floor_index(state) else None


def block_plan(state: RunState, cut: int, prompt: str) -> Plan | None:
    """Everything before ``cut`` into one compaction block, an assistant message in ``<summary>`` tags that the
    model then answers from; None when it would not shrink the view."""
    request = SummaryRequest(role="assistant", wrapper=SUMMARY_WRAPPER, prompt=prompt)
    plan = Plan(start=cut, summarize=True, summary_request=request, mode="compact")
    return plan if plan_shrinks(state, plan) else None


def block_decision(policy: Policy[Any], state: RunState, trigger: Trigger, preserve: int, prompt: str) -> Plan | None:
    """What a compaction-block policy plans when asked: only at an automatic check (the API compacts only past its
    trigger; a prompt over the window is rejected), the rollback a revert needs first, then, past ``policy``'s
    trigger, one block of everything before :func:`block_cut` (``preserve`` messages kept)."""
    if trigger != "auto":
        return None
    rollback = _rollback(state)
    if rollback is not None:
        return rollback
    if not policy.over_trigger(state):
        return None
    cut = block_cut(state, preserve)
    return None if cut is None else block_plan(state, cut, prompt)


def _current_bound(state: RunState, rule: Rule) -> int:
    return next((e.before for e in state.view.edits if e.rule == rule), 0)


# -- clear_tool_uses_20250919 ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClearToolUsesConfig:
    """Parameters of ``clear_tool_uses_20250919``, the API's names.

    Attributes:
        trigger_unit: what ``trigger`` counts: ``input_tokens`` (the default) or ``tool_uses`` (the API's
            ``{"type": "tool_uses", "value": N}``).
        trigger_tokens: with ``input_tokens``, edit once the prompt exceeds this; default 100,000 input tokens
            (catalogue §B2a, from the context-editing page; the adk-rust Anthropic client's type docs: "defaults
            to 100k input tokens").
        trigger_tool_uses: with ``tool_uses``, edit once the prompt holds more tool uses than this; required
            then (the API documents no default for that unit).
        keep: the newest tool uses left alone, default 3 (§B2a; adk-rust: "defaults to 3").
        clear_at_least: input tokens that must be cleared for the edit to apply; unset by default (§B2a). Its
            reading is ``clear_at_least_mode``.
        clear_at_least_mode: ``gate`` (default): edit only when clearing every eligible use removes at least
            that many tokens, then clear them all (the SDK's field docstring: "Context will only be modified
            if at least this many tokens can be removed"); ``stop-after``: clear oldest first and stop once
            that many are cleared (LangChain's mirror, catalogue §B7b). Catalogue §B2a asks for both.
        exclude_tools: tools whose uses are never cleared; none by default.
        clear_tool_inputs: also clear the inputs of cleared uses: ``True`` for every tool, or tool names (the
            SDK: "Whether to clear all tool inputs (bool) or specific tool inputs to clear (list)"); default
            false (the page: by default only tool results are cleared).
    """

    trigger_unit: Literal["input_tokens", "tool_uses"] = "input_tokens"
    trigger_tokens: int = field(default=100_000, metadata=TOKENS)
    trigger_tool_uses: int | None = None
    keep: int = 3
    clear_at_least: int | None = field(default=None, metadata=TOKENS)
    clear_at_least_mode: Literal["gate", "stop-after"] = "gate"
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool | tuple[str, ...] = False

    def __post_init__(self) -> None:
        if self.trigger_unit not in ("input_tokens", "tool_uses"):
            raise InvalidConfig(f"trigger_unit={self.trigger_unit!r} must be 'input_tokens' or 'tool_uses'")
        if self.trigger_tokens < 1:
            raise InvalidConfig(f"trigger_tokens={self.trigger_tokens!r} must be at least 1")
        if (self.trigger_unit == "tool_uses") != (self.trigger_tool_uses is not None):
            raise InvalidConfig(
                "a tool-use trigger needs both trigger_unit=tool_uses and trigger_tool_uses=N (an input-token "
                f"trigger neither); got trigger_unit={self.trigger_unit!r}, "
                f"trigger_tool_uses={self.trigger_tool_uses!r}"
            )
        if self.trigger_tool_uses is not None and self.trigger_tool_uses < 0:
            raise InvalidConfig(f"trigger_tool_uses={self.trigger_tool_uses!r} must be >= 0")
        if self.keep < 0:
            raise InvalidConfig(f"keep={self.keep!r} must be >= 0 tool uses")
        if self.clear_at_least is not None and self.clear_at_least < 1:
            raise InvalidConfig(f"clear_at_least={self.clear_at_least!r} must be a positive token count or unset")
        if self.clear_at_least_mode not in ("gate", "stop-after"):
            raise InvalidConfig(f"clear_at_least_mode={self.clear_at_least_mode!r} must be 'gate' or 'stop-after'")
        object.__setattr__(self, "exclude_tools", _names(self.exclude_tools, "exclude_tools"))
        inputs: object = self.clear_tool_inputs
        if isinstance(inputs, str) and inputs.strip().lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
            inputs = inputs.strip().lower() in ("true", "1", "yes", "on")
        if not isinstance(inputs, bool):
            inputs = _names(inputs, "clear_tool_inputs") or False
        object.__setattr__(self, "clear_tool_inputs", inputs)

    def rules(self) -> tuple[Rule, ...]:
        """Results to the placeholder; inputs (when asked) to an empty object; excluded tools never."""
        exclude = frozenset(self.exclude_tools)
        out = [Rule(kinds=frozenset({"tool_result"}), exclude_tools=exclude, text=PLACEHOLDER)]
        inputs = self.clear_tool_inputs
        if inputs is True or isinstance(inputs, tuple):
            tools = frozenset(inputs) if isinstance(inputs, tuple) else None
            out.append(Rule(kinds=frozenset({"tool_call"}), tools=tools, exclude_tools=exclude, text=INPUT_PLACEHOLDER))
        return tuple(out)


@register("anthropic-clear-tool-uses")
class AnthropicClearToolUses(Policy[ClearToolUsesConfig]):
    """Anthropic clear_tool_uses_20250919: past 100,000 input tokens, all but the newest 3 tool results cleared.

    What the context-editing page says, and how it is modelled:

    * Applied server-side before the prompt reaches the model, while the client keeps and resends its full,
      unmodified history: a view, recomputed before every request (mid tool loop included) from the whole
      log, never from the previous view. The trigger compares the unedited prompt: its exact tokens (the
      server counts exactly; tool definitions, which it counts too, are not in ``RunState``) or its tool uses.
    * The oldest tool results are cleared in chronological order and replaced by placeholder text: every use
      older than the newest ``keep`` (counted over all tools, excluded ones included, as LangChain's mirror
      counts; the API does not say) has its result replaced by :data:`PLACEHOLDER`, and its input by ``{}``
      with ``clear_tool_inputs``; the call, its id and name stay, so pairing holds. Excluded tools are never
      touched.
    * ``clear_at_least``: see :class:`ClearToolUsesConfig`.

    Granularity: an edit applies to whole messages before a bound, so the bound sits at the message that holds
    the oldest kept call; results of older uses answered in that same parallel batch stay, so a batch can keep
    a few more than ``keep``. The bound may fall inside a thinking tool loop: clearing a result removes no
    message and the loop's thinking stays, as on the server. A move of the bound that would not shrink the
    view (placeholders longer than the results they replace) waits for a request where it does, so every edit
    shrinks the prompt (the server would make it anyway). Prompt caching is not modelled yet; the page's
    caveat (each clearing invalidates the cached prefix at the clear point, hence ``clear_at_least``) shows up
    as compaction events only.
    """

    TUNABLE = {
        "trigger_tokens": "50000:180000:10000",
        "keep": "1:10",
    }
    TUNABLE_NATIVE = {
        "trigger_tokens": 'clear_tool_uses_20250919 edit: trigger {"type": "input_tokens", "value": {value}}',
        "keep": 'clear_tool_uses_20250919 edit: keep {"type": "tool_uses", "value": {value}}',
    }

    Config = ClearToolUsesConfig

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":  # no /compact in the API, and the edit runs before the prompt is counted
            return None
        cfg = self.config
        raw = state.view.with_(edits=())
        if not self.triggered(state, raw):
            return None
        rules = cfg.rules()
        current = _current_bound(state, rules[0])
        bound = self._bound(state, raw, rules, current, self._keep_bound(state, current))
        if bound <= current:
            return None
        plan = _edit_plan(state, rules, bound, "clear-tool-uses")
        return plan if plan_shrinks(state, plan) else None

    def triggered(self, state: RunState, raw: View) -> bool:
        """Whether the unedited prompt exceeds the trigger ("once the prompt exceeds this threshold")."""
        cfg = self.config
        if cfg.trigger_tool_uses is not None:
            return state.tool_uses(raw) > cfg.trigger_tool_uses
        return state.view_size(raw)[0] > cfg.trigger_tokens

    def _keep_bound(self, state: RunState, current: int) -> int:
        """The message holding the ``keep``-th newest tool call: everything before it is eligible. Walks back
        only to the current bound (which never moves back), so a request costs the messages since the last
        edit; lowered to a pending turn's start."""
        keep = self.config.keep
        seen: set[str] = set()
        i = len(state)
        while keep and i > current:
            i -= 1
            seen.update(p.call_id for p in state.messages[i].parts if p.kind == "tool_call" and p.call_id)
            if len(seen) >= keep:
                break
        if len(seen) < keep:
            return current
        return max(current, _below_pending(state, i))

    def _bound(self, state: RunState, raw: View, rules: tuple[Rule, ...], current: int, top: int) -> int:
        """Where clearing stops under ``clear_at_least``: ``top`` (every eligible use), ``current`` (the gate
        is shut), or the first bound whose clearing reaches the amount (stop-after)."""
        cfg = self.config
        if cfg.clear_at_least is None or top <= current:
            return top
        raw_tokens = state.view_size(raw)[0]

        def cleared(bound: int) -> int:
            edited = _edit_plan(state, rules, bound, "").view_from(raw)
            return raw_tokens - state.view_size(edited)[0]

        if cfg.clear_at_least_mode == "gate":
            return top if cleared(top) >= cfg.clear_at_least else current
        # the smallest bound that clears enough; once reached it stays (recomputed from the full history, the
        # oldest uses that reach the amount are the same ones every request)
        return next((b for b in range(current, top) if cleared(b) >= cfg.clear_at_least), top)


# -- clear_thinking_20251015 -----------------------------------------------------------------------------------
THINKING_RULE = Rule(kinds=frozenset({"thinking"}), action="drop")


@dataclass(frozen=True)
class ClearThinkingConfig:
    """Parameters of ``clear_thinking_20251015``.

    Attributes:
        keep_turns: ``keep: {"type": "thinking_turns", "value": N}``: the newest N assistant turns keep their
            thinking, default 1 (the context-editing page, zh-CN and ja copies: with thinking on and no strategy
            the API keeps only the last assistant turn's thinking, the same as ``value: 1``).
        keep_all: ``keep: "all"``: never clear (the page's choice for the most cache hits).
    """

    keep_turns: int = 1
    keep_all: bool = False

    def __post_init__(self) -> None:
        if self.keep_turns < 1:
            raise InvalidConfig(
                f"keep_turns={self.keep_turns!r} must be at least 1: the live turn's thinking must stay with "
                "its tool uses (use keep_all=true to keep every turn's)"
            )


@register("anthropic-clear-thinking")
class AnthropicClearThinking(Policy[ClearThinkingConfig]):
    """Anthropic clear_thinking_20251015: thinking blocks of all but the newest 1 assistant turn dropped.

    The page (zh-CN and ja copies): the strategy clears older thinking blocks of earlier turns, and one
    assistant turn may hold several content blocks (with tools) and several thinking blocks (interleaved
    thinking). So a turn is everything the assistant does between two real user messages (tool results do
    not end it), and ``keep_turns`` counts the newest assistant turns, with thinking or without
    (the SDK's field docstring: "Number of most recent assistant turns to keep thinking blocks for"). It has
    no trigger: applied server-side before every request, a view over the full history like
    ``anthropic-clear-tool-uses``. Thinking of older turns is dropped (removed, no placeholder); a message
    left with nothing is not sent. With ``keep_turns=1`` this is what the API does by default when thinking
    is on, so it is the fair reference for a thinking agent, where ``none`` keeps every turn's thinking.
    Clearing invalidates the cached prefix from the clear point (page); caching is not modelled yet.
    """

    TUNABLE = {"keep_turns": "1:10"}
    TUNABLE_NATIVE = {"keep_turns": 'clear_thinking_20251015 keep: {"type": "thinking_turns", "value": {value}}'}

    Config = ClearThinkingConfig

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or self.config.keep_all:
            return None
        current = _current_bound(state, THINKING_RULE)
        bound = self._turn_bound(state, current)
        if bound <= current:
            return None
        plan = _edit_plan(state, (THINKING_RULE,), bound, "clear-thinking")
        return plan if plan_shrinks(state, plan) else None

    def _turn_bound(self, state: RunState, current: int) -> int:
        """The user message that opens the oldest kept assistant turn (thinking before it goes), or ``current``.

        The live turn counts when the assistant has spoken in it (found from the last user message forward,
        usually one step); older turns are counted walking back from there, only down to ``current``."""
        lu = state.last_user_index
        if lu < 0:
            return current
        msgs = state.messages
        turns = 1 if any(msgs[i].role == "assistant" for i in range(lu + 1, len(state))) else 0
        if turns >= self.config.keep_turns:
            return max(current, _below_pending(state, lu))
        in_turn = False
        for i in range(lu - 1, current - 1, -1):
            m = msgs[i]
            if m.role == "assistant":
                in_turn = True
            elif m.role == "user" and m.command is None and in_turn:
                turns, in_turn = turns + 1, False
                if turns >= self.config.keep_turns:
                    return max(current, _below_pending(state, i))
        return current


# -- compact_20260112 ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CompactionConfig:
    """Parameters of ``compact_20260112``.

    Attributes:
        trigger_tokens: compact when the prompt's input tokens exceed this; default 150,000 (compaction page,
            Parameters; the SDK's field docstring: "Defaults to 150000 input tokens").
        min_trigger_tokens: the API's floor for ``trigger_tokens``, 50,000 ("Must be at least 50,000 tokens").
            Lower it only to scale the policy to a small simulated window (``csim check`` scales both).
        pause_after_compaction: default false (page). True: the API returns the compaction block alone (stop
            reason ``compaction``) and the client continues, after putting back what it wants to keep.
        preserve_messages: with the pause, how many of the newest messages the client puts back after the
            block (moved back to a whole atomic unit); 0, the page's example, continues from the block alone.
        instructions: replaces the summarisation prompt entirely ("Completely replaces the default prompt");
            unset uses our wording of the documented default (:data:`COMPACTION_PROMPT`).
    """

    trigger_tokens: int = field(default=150_000, metadata=TOKENS)
    min_trigger_tokens: int = field(default=API_MIN_COMPACTION_TRIGGER, metadata=TOKENS)
    pause_after_compaction: bool = False
    preserve_messages: int = 0
    instructions: str | None = None

    def __post_init__(self) -> None:
        if self.min_trigger_tokens < 1:
            raise InvalidConfig(f"min_trigger_tokens={self.min_trigger_tokens!r} must be at least 1")
        if self.trigger_tokens < self.min_trigger_tokens:
            raise InvalidConfig(
                f"trigger_tokens={self.trigger_tokens!r} is below the API's minimum of {self.min_trigger_tokens:,} "
                "input tokens (to scale the policy to a small window, lower min_trigger_tokens too)"
            )
        if self.preserve_messages < 0:
            raise InvalidConfig(f"preserve_messages={self.preserve_messages!r} must be >= 0")
        if self.preserve_messages and not self.pause_after_compaction:
            raise InvalidConfig(
                "preserve_messages needs pause_after_compaction=true: without the pause the API continues "
                "straight from the compaction block and the client can put nothing back"
            )
        if self.instructions is not None and not self.instructions.strip():
            raise InvalidConfig("instructions must be a prompt or unset (the API's default prompt)")


@register("anthropic-compaction")
class AnthropicCompaction(Policy[CompactionConfig]):
    """Anthropic server compaction compact_20260112: past 150,000 input tokens the prompt becomes one summary.

    The compaction page, as modelled:

    * "Detects when input tokens exceed your specified trigger threshold": checked server-side on every
      request, mid tool loop included, on the prompt as sent (the exact tokens of the view: after a compaction
      the API ignores everything before the block, so the prompt is the block and what follows it).
    * "Generates a summary of the current conversation" and "creates a compaction block" "at the start of the
      assistant response": everything in the view is summarised, the previous summary included (regenerate),
      and the summary is an ``assistant`` message in ``<summary>`` tags (the default prompt asks for them).
      "The API automatically drops all message blocks prior to the compaction block": nothing of the log is
      kept; the system prompt, which is not a message, stays. The model then answers from the summary alone.
    * ``pause_after_compaction``: the response stops after the block; the client may add content before it
      continues, "such as preserving recent messages": ``preserve_messages`` of them, kept verbatim after the
      block. Both ways the request costs the compaction iteration and the message iteration, as the page's
      ``usage.iterations`` shows; the summariser call is charged here for the first.

    Known deviation ``live-turn``: the block replaces the user's latest message along with the rest (with the
    pause, unless the client puts it back). Compaction mid tool loop is accepted: the model answers afresh after the
    block (its thinking included), which the replay's next scripted reply stands for.
    Summary content is the mock summariser's (catalogue §G3: the server's summaries are opaque).
    """

    TUNABLE = {"trigger_tokens": "50000:190000:10000"}
    TUNABLE_NATIVE = {"trigger_tokens": 'compact_20260112 trigger: {"type": "input_tokens", "value": {value}}'}

    Config = CompactionConfig
    known_deviations = frozenset({"live-turn"})
    deviation_reasons = {
        "live-turn": "the compaction block replaces the user's latest message along with the rest",
    }

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        prompt = self.config.instructions or COMPACTION_PROMPT
        return block_decision(self, state, trigger, self.config.preserve_messages, prompt)

    def over_trigger(self, state: RunState) -> bool:
        return state.view_size()[0] > self.config.trigger_tokens


# -- compaction_control (client SDK) ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SDKCompactionConfig:
    """``CompactionControl`` of the Python SDK's tool runner.

    Attributes:
        context_token_threshold: compact when the last response's ``input + cache_creation + cache_read +
            output`` tokens reach this; default 100,000 (``DEFAULT_THRESHOLD = 100_000``,
            ``_beta_compaction_control.py``).
        summary_prompt: the summary request's prompt; unset uses our wording of ``DEFAULT_SUMMARY_PROMPT``
            (:data:`SDK_SUMMARY_PROMPT`). The ``model`` option (a different summary model) is not modelled: the
            summary is charged at the run's model, the SDK's default ("the same model used for the tool
            runner").
    """

    context_token_threshold: int = field(default=100_000, metadata=TOKENS)
    summary_prompt: str | None = None

    def __post_init__(self) -> None:
        if self.context_token_threshold < 1:
            raise InvalidConfig(f"context_token_threshold={self.context_token_threshold!r} must be at least 1")
        if self.summary_prompt is not None and not self.summary_prompt.strip():
            raise InvalidConfig("summary_prompt must be a prompt or unset (the SDK's default prompt)")


@register("anthropic-sdk-compaction")
class AnthropicSDKCompaction(Policy[SDKCompactionConfig]):
    """Anthropic Python SDK compaction_control: after a response of 100,000 tokens, the history is one summary.

    ``BaseSyncToolRunner`` (anthropic 0.125.0), as modelled:

    * ``__run__`` calls ``_check_and_compact`` right after each response, before any tool runs: asked at
      ``response`` (``when``). ``tokens_used`` is that response's ``input_tokens + cache_creation_input_tokens
      + cache_read_input_tokens + output_tokens``; it compacts unless ``tokens_used < threshold``. Here: the
      provider's total for the request just answered (``last_input_tokens``) plus the reply's output (its
      recorded ``usage.output_tokens`` when it has one, else its tokens).
    * The summary request is the runner's ``messages`` param plus a user message with the summary prompt. In the
      runner's own loop the response has not been appended yet (``append_messages(message, response)`` runs
      only when no compaction happened), so the summary covers the prompt of the request just answered, the
      previous summary included (regenerate); the branch that strips ``tool_use`` blocks from a trailing
      assistant message applies only to messages a caller appended itself. Then ``messages`` becomes one
      ``user`` message holding the summary text as the model wrote it (``<summary>`` tags included): nothing
      verbatim stays, not even the task.
    * The response that triggered it is dropped and its tool calls never run: a compaction skips tool
      execution, and the loop asks the model again from the summary. A replay has one scripted reply per
      request, so the reply stays in the view after the summary, standing in for the model's answer to the
      summary (its calls' scripted results follow it). The real run makes one request more than this one.

    Known deviation ``live-turn``: the user's latest message is summarised with the rest. Mid thinking tool loop
    the reply kept after the summary stands for the re-asked model's answer, which starts afresh (thinking
    included): the engine counts it as opening a turn. A compaction that would not shrink the view is skipped.
    Not modelled: the async runner's variant (its summary request is built from the unstripped params, catalogue
    §B2d) and the double-buffer variant (``_beta_double_buffer_compaction.py``).
    """

    TUNABLE = {"context_token_threshold": "50000:180000:10000"}
    TUNABLE_NATIVE = {"context_token_threshold": 'compaction_control={"context_token_threshold": {value}}'}

    Config = SDKCompactionConfig
    when = frozenset({"response"})
    known_deviations = frozenset({"live-turn"})
    deviation_reasons = {
        "live-turn": "the SDK summarises the user's latest message with the rest",
    }

    def asked_at(self, state: RunState, point: AskPoint = "request") -> bool:
        """After every response; before a request only when a revert needs a rollback (the harness's contract)."""
        if point == "response":
            return True
        return rollback_target(state) is not None

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":  # no /compact and no overflow handling in the runner
            return None
        rollback = _rollback(state)
        if rollback is not None:
            return rollback
        used = self.tokens_used(state)
        if used is None or used < self.config.context_token_threshold:
            return None
        reply = len(state) - 1
        cut = keep_reverts(state, _below_pending(state, reply))
        if cut <= floor_index(state):
            return None
        plan = Plan(
            start=cut,
            summarize=True,
            summary_request=SummaryRequest(
                role="user", wrapper=SUMMARY_WRAPPER, prompt=self.config.summary_prompt or SDK_SUMMARY_PROMPT
            ),
            mode="summarize",
        )
        return plan if plan_shrinks(state, plan) else None

    @staticmethod
    def tokens_used(state: RunState) -> int | None:
        """The last response's prompt plus output, or None when the state is not right after a response to the
        current view (before any request, or once the view changed: the usage describes a view now gone)."""
        if not len(state) or state.messages[-1].role != "assistant" or state.last_input_tokens is None:
            return None
        if state.view_changed_since_request:
            return None
        reply = state.messages[-1]
        if reply.usage is not None:
            output = reply.usage.output_tokens
        else:
            n = len(state)
            output = state.view_size(View(start=n - 1))[0] - state.view_size(View(start=n))[0] - MESSAGE_OVERHEAD
        return state.last_input_tokens + output

    def over_trigger(self, state: RunState) -> bool:
        """Whether the context the next request carries is already at the threshold (no progress)."""
        return state.view_size()[0] >= self.config.context_token_threshold
