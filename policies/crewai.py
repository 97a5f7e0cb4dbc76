"""CrewAI ``respect_context_window``: past 85% of the window, everything but the system messages summarised into one.

Read: the ``crewai`` package 1.15.30 on PyPI (the wheel, not installed), files ``crewai/llms/context_window.py``
(``CONTEXT_WINDOW_USAGE_RATIO``, ``summarize_messages``, ``_chunk_messages``), ``crewai/llms/base_llm.py``
(``get_input_tokens_count``'s fallback, ``is_context_window_overflowing_threshold``,
``is_tool_result_overflowing_threshold``, ``TOOL_RESULT_CONTEXT_WINDOW_THRESHOLD``), ``crewai/utilities/
agent_utils.py`` (``_proactively_summarize_context``, ``_summarize_context_before_llm_call``,
``handle_context_length``), ``crewai/agents/agent_executor.py`` (``_prepare_tool_result_for_context``),
``crewai/utilities/tool_result_artifacts.py`` (the preview), ``crewai/agent/core.py`` (``respect_context_window``
and ``use_better_compaction``, both True by default) and ``crewai/translations/en.json`` (``summary``); the catalogue
``reference/policy-catalogue.md`` §B23, which read an older ``agent_utils.py`` where summarising was only reactive
and cut the history into character chunks (CrewAI has since made it proactive and token-based, and keeps the
system messages).

Before every model call of an agent (``get_llm_response``, when ``respect_context_window``): the pending request
is counted (a native counter where the provider has one, else ``(characters + 3) // 4`` of the messages' text), and
when it is over ``get_context_window_size()``, ``int(0.85 * window)``, every message but the system messages is
summarised: the messages are packed greedily into chunks whose summary request fits that size, each chunk is
summarised by the agent's own LLM (up to four at a time), and the summaries, joined by blank lines, become one user
message in the template below. The history is rewritten to the system messages and that message. A provider's
context-length error (``handle_context_length``) summarises the same way and the loop calls the model again.
Separately, a tool result over a quarter of that size is stored as a file (``use_better_compaction``) and the
conversation gets a reference to it with a preview of its first 10 lines (at most 2,000 characters) and a tool to
read it back in sections.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from dataclasses import dataclass, field, replace

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import end_cut, floor_index, plan_shrinks
from sim.core.conversation import Part
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Rule, View

CONTEXT_WINDOW_USAGE_RATIO = 0.85  # context_window.CONTEXT_WINDOW_USAGE_RATIO: get_context_window_size's share
TOOL_RESULT_CONTEXT_WINDOW_THRESHOLD = 0.25  # base_llm: a result over this share of the usable window is deferred
TOOL_RESULT_READ_CONTEXT_WINDOW_RATIO = 0.05  # agent_executor: the read size it recommends, of the usable window
TOOL_RESULT_PREVIEW_LINE_COUNT = 10  # tool_result_artifacts
TOOL_RESULT_PREVIEW_MAX_CHARS = 2_000  # tool_result_artifacts
CHUNK_MARGIN = 64  # tokens left for the summariser request's framing (ours)
# The usable window of the engine's default model (200,000 tokens): what the deferral compares with, as
# bound_tool_result does not see the run's model.
USABLE_WINDOW = int(200_000 * CONTEXT_WINDOW_USAGE_RATIO)
# en.json "summary": the message that replaces the history ({summary}: the chunks' summaries joined).
SUMMARY_TEMPLATE = (
    "<summary>\n{summary}\n</summary>\n\nContinue the task from where the conversation left off. The above is a "
    "structured summary of prior context."
)
# Our wording of en.json's summarizer_system_message and summarize_instruction: a structured summary in five
# sections that lets the agent carry on.
SUMMARY_PROMPT = (
    "You write precise, structured summaries of an agent's conversation that keep everything needed to carry on "
    "the task. Sections: the task, what is done and where the agent stands, important findings (facts, data, tool "
    "results), next steps, and details to keep verbatim (values, names, URLs, code). Put the summary in <summary> "
    "tags."
)
# What CrewAI counts of a message: its text content; tool calls and thinking are not text.
_TEXT_ONLY = (Rule(kinds=frozenset({"tool_call", "thinking"}), action="drop"),)


def deferred_reference(part: Part, usable_window: int) -> str:
    """What the conversation gets in place of a deferred result: our wording of ``_prepare_tool_result_for_context``'s
    reference (the artifact's path, its size in lines and estimated tokens, a preview of its first lines, and how
    many lines to read at a time with the reader tool). The artifact's id is derived from the call id (CrewAI draws a
    random one)."""
    text = part.text
    tokens = (len(text) + 3) // 4
    lines = text.splitlines(keepends=True)
    preview = "".join(lines[:TOOL_RESULT_PREVIEW_LINE_COUNT])
    truncated = len(lines) > TOOL_RESULT_PREVIEW_LINE_COUNT or len(preview) > TOOL_RESULT_PREVIEW_MAX_CHARS
    preview = preview[:TOOL_RESULT_PREVIEW_MAX_CHARS]
    per_line = tokens / len(lines) if lines else 0
    read_tokens = max(1, round(usable_window * TOOL_RESULT_READ_CONTEXT_WINDOW_RATIO))
    read_lines = min(len(lines), max(1, round(read_tokens / per_line))) if per_line else 1
    artifact = "tool-result-" + hashlib.sha256((part.call_id or "").encode()).hexdigest()[:22]
    more = "\n[Preview cut short; read the file for the rest.]" if truncated else ""
    return (
        f"The output of `{part.name or 'tool'}` was saved as temporary artifact `{artifact}` at the relative path "
        f"`{artifact}/result.md`. It holds {len(lines)} lines, about {tokens} tokens ({per_line:.1f} tokens a "
        f"line).\n\nIts first {TOOL_RESULT_PREVIEW_LINE_COUNT} lines:\n---\n{preview}{more}\n---\n\nRead it in "
        f"parts with `read_a_deferred_tool_result`. For a read of about {read_tokens:,} tokens, ask for about "
        f"{read_lines} lines, e.g. `start_line=1` and `line_count={read_lines}`."
    )


@dataclass(frozen=True)
class CrewAIConfig:
    """Parameters, CrewAI's names where it has them.

    Attributes:
        respect_context_window: summarise (CrewAI's default True); False: a context-length error ends the run
            (CrewAI raises ``SystemExit``).
        use_better_compaction: defer tool results over a quarter of the usable window to a file (default True).
        usable_window_tokens: the usable window the deferral compares with (``int(0.85 * 200,000)``: the engine's
            default model; the summarising trigger uses the run's model).
    """

    respect_context_window: bool = True
    use_better_compaction: bool = True
    usable_window_tokens: int = field(default=USABLE_WINDOW, metadata={"tokens": True})

    def __post_init__(self) -> None:
        if self.usable_window_tokens < 1:
            raise InvalidConfig(f"usable_window_tokens={self.usable_window_tokens!r} must be at least 1")


@register("crewai")
class CrewAI(Policy[CrewAIConfig]):
    """CrewAI respect_context_window: a request over 0.85 of the window has all but its system messages summarised.

    * Before every model call (mid tool loop too): ``(characters + 3) // 4`` of the text of every message the
      request sends (:meth:`estimate`) against ``int(0.85 * context_window)``; over it, everything after the system
      prompt, the user's task and the previous summary included, is summarised into one user message ("<summary>
      ... </summary> Continue the task from where the conversation left off..."). Nothing happens when the only
      message besides the system prompt is a user message.
    * A provider context-length error summarises the same way, then the call is made again.
    * A tool result over a quarter of the usable window (its own ``(characters + 3) // 4``) enters the conversation
      as a reference to a file holding it, with a preview of its first 10 lines (:func:`deferred_reference`).

    Known deviations: the summary replaces the user's message too, so the task survives only in the summary
    (``live-turn``); a revert whose change was summarised no longer resolves (``revert-resolution``).

    Differences: the engine makes one summariser call where CrewAI makes one per chunk (the chunks' requests each
    fit 0.85 of the window, so a history over it takes two or more, and their summaries are joined): the one call is
    shown the newest part of the history that one chunk holds (:meth:`chunk_budget`), so what CrewAI's older chunks
    would summarise is left out of the summary here (lost), and their calls are not charged. The previous summary is
    summarised again with the rest, as CrewAI's is (a user message among the others). The count leaves out what the
    provider's native counter would add (tool schemas, framing). Nothing of an unresolved pending turn is
    summarised (the harness's contract); a live tool loop is summarised with the rest, as CrewAI does (the summary
    then ends the request, and the next reply opens a turn afresh); a summary that would not shrink the view is
    skipped. The deferred file's reader tool and the tool's arguments in the reference
    are not modelled (the reference names the tool only).
    """

    TUNABLE = {
        "use_better_compaction": "true,false",
    }

    Config = CrewAIConfig
    known_deviations = frozenset({"live-turn", "revert-resolution"})
    deviation_reasons = {
        "live-turn": "CrewAI's summary replaces the user's message too",
        "revert-resolution": "a revert whose change CrewAI summarised no longer resolves",
    }

    @property
    def retry_on_overflow(self) -> int:
        return 1 if self.config.respect_context_window else 0

    def usable(self, state: RunState) -> int:
        """``get_context_window_size``: ``int(context_window * 0.85)``."""
        return int(state.model.context_window * CONTEXT_WINDOW_USAGE_RATIO)

    def estimate(self, state: RunState, view: View | None = None) -> int:
        """``get_input_tokens_count``'s fallback: ``(characters + 3) // 4`` of the text of the messages ``view``
        sends (the system prompt, the summary, the tail; tool calls and thinking are not text). O(1), from the state's
        sizes, which count a tool result's tool name with its text (a few characters CrewAI does not count)."""
        v = state.view if view is None else view
        n = len(state)
        chars = state.chars_as(0, 1, _TEXT_ONLY) if state.has_system else 0
        chars += len(v.summary.text) if v.summary is not None else 0
        chars += sum(len(x.text) for x in v.injected)
        for a, b in (*v.spans, (v.start, n)):
            a = max(a, 1 if state.has_system else 0)
            if a < min(b, n):
                chars += state.chars_as(a, min(b, n), _TEXT_ONLY)
        return (chars + 3) // 4

    def chunk_budget(self, state: RunState) -> int:
        """The transcript one summariser call is shown: what a CrewAI chunk holds (its request within the usable
        window; here within the input budget too, as the engine's call must fit it), less the instructions, the
        previous summary and a margin for the framing, at four characters a token."""
        previous = len(state.view.summary.text) if state.view.summary is not None else 0
        room = min(self.usable(state), state.model.input_budget) - (len(SUMMARY_PROMPT) + previous + 3) // 4
        return max(1, room - CHUNK_MARGIN)

    def over_trigger(self, state: RunState) -> bool:
        return self.config.respect_context_window and self.estimate(state) > self.usable(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if not self.config.respect_context_window or trigger == "manual":
            return None
        if trigger == "auto" and not self.over_trigger(state):
            return None
        floor, n = floor_index(state), len(state)
        if state.view.summary is None and n - floor == 1 and state.messages[floor].role == "user":
            return None  # _summarize_context_before_llm_call: a lone user message is left as it is
        cut = end_cut(state)
        pf = state.protected_from
        if pf is not None:
            cut = min(cut, pf)
        if cut <= floor:
            return None
        plan = Plan(
            start=cut,
            summarize=True,
            mode="summarize",
            summary_request=SummaryRequest(
                role="user",
                wrapper=SUMMARY_TEMPLATE,
                prompt=SUMMARY_PROMPT,
                input_newest_tokens=self.chunk_budget(state),
            ),
        )
        return plan if plan_shrinks(state, plan) else None

    def bound_tool_result(self, part: Part) -> Part:
        cfg = self.config
        if not cfg.use_better_compaction or part.is_error:
            return part
        threshold = cfg.usable_window_tokens * TOOL_RESULT_CONTEXT_WINDOW_THRESHOLD
        if (len(part.text) + 3) // 4 <= threshold:
            return part
        text = deferred_reference(part, cfg.usable_window_tokens)
        return replace(part, text=text, original_bytes=len(part.text.encode("utf-8")))

    def bound_key(self) -> Hashable:
        cfg = self.config
        return ("crewai", cfg.usable_window_tokens) if cfg.use_better_compaction else None
