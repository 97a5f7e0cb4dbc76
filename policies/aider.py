"""Aider: chat-history summarisation of the finished exchanges (``ChatSummary``).

Read at ``Aider-AI/aider@5dc9490b`` (2026-05-22), the source of the ``aider-chat`` package on PyPI (catalogue
``reference/policy-catalogue.md`` §B12 and its §F row): ``aider/history.py`` (``ChatSummary.too_big``,
``summarize``, ``summarize_real``, ``summarize_all``), ``aider/models.py`` (``Model.max_chat_history_tokens =
min(max(max_input_tokens / 16, 1024), 8192)``; ``token_count`` of a message is its JSON's tokens),
``aider/prompts.py`` (``summarize``, ``summary_prefix``) and ``aider/coders/base_coder.py`` (``summarize_start`` in
``move_back_cur_messages`` after each exchange, the background thread, ``summarize_end`` in ``format_chat_chunks``
before the next request, applied only if ``done_messages`` did not change meanwhile; the summarizer's models
``[weak_model, main_model]``). ``conformance/aider-chat/`` runs the package's own ``ChatSummary.summarize`` with a
stand-in model and ``tests/conformance/test_conformance_aider_chat.py`` compares this policy's split with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from policies.base import Plan, Policy, SummaryRequest, Trigger, register
from policies.helpers import plan_shrinks, smallest_summary_chars
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Injected, Rule, Summary, View, layout

HISTORY_SHARE = 16  # models.py: max_input_tokens / 16 ...
MIN_HISTORY_TOKENS = 1_024  # ... at least 1,024 ...
MAX_HISTORY_TOKENS = 8_192  # ... at most 8,192
MIN_SPLIT = 4  # history.py summarize_real: min_split = 4
MAX_DEPTH = 3  # history.py: ``depth > 3`` summarises everything
INPUT_RESERVE = 512  # history.py: the head is clipped to max_input_tokens - 512 ("reserve buffer for safety")
#: prompts.py ``summary_prefix``, verbatim: the summary is a user message that starts with it.
SUMMARY_PREFIX = "I spoke to you previously about a number of things.\n"
SUMMARY_WRAPPER = SUMMARY_PREFIX + "{summary}"
#: history.py ``summarize``: an assistant "Ok." follows when the result does not end on an assistant message.
OK = "Ok."
#: ``summarize_all`` shows the summariser each message's ``content`` only: no reasoning, no tool calls (Aider has none),
#: and no message but the user's and the assistant's (here: ``summary_drop_tool_outputs``). An edit of the messages
#: that leave the view, which only the summariser reads.
_CONTENT_ONLY = Rule(kinds=frozenset({"thinking", "tool_call"}), action="drop")
# Our wording of prompts.py ``summarize``: brief, more detail for recent parts, names of functions, libraries,
# packages and files kept, no fenced code, written as the user in the first person, starting "I asked you...".
SUMMARY_PROMPT = (
    "Briefly summarise this part of a conversation about programming, with less detail for older parts and more "
    "for the most recent messages, a new paragraph for each new topic, and no concluding remarks (the conversation "
    "goes on). Name every function, library, package and file discussed. Do not include fenced code blocks. Write "
    "as the user, in the first person, speaking to the assistant as 'you', and begin with 'I asked you...'."
)


@dataclass(frozen=True)
class Item:
    """One message of the ``done`` list as ``summarize_real`` sees it: its tokens, its role, and its log index (None
    for the previous summary and its "Ok.", which are not in the log)."""

    tokens: int
    role: str
    index: int | None
    cut: bool = True  # whether a split may fall right before it (never between a call and its results)


def summary_split(items: Sequence[Item], max_tokens: int, summary_tokens: int) -> int | None:
    """``ChatSummary.summarize_real`` on ``items``: how many leading items the summary replaces (``len(items)``:
    everything), or None when the history is not too big.

    Recursion: when the summary and the tail are still not under ``max_tokens``, the summary and the tail are
    summarised again (``depth + 1``), the summary then being a user message of ``summary_tokens`` tokens (the size of
    a summary is not known before it is written: ``summary_tokens`` stands for it)."""
    items = list(items)
    if sum(x.tokens for x in items) <= max_tokens:
        return None
    offset = 0  # original items the summary at the front already stands for (0 at depth 0)
    depth = 0
    current: list[Item] = items
    while True:
        if len(current) <= MIN_SPLIT or depth > MAX_DEPTH:
            return len(items)
        tail_tokens, split = 0, len(current)
        half = max_tokens // 2
        for i in range(len(current) - 1, -1, -1):
            if tail_tokens + current[i].tokens < half:
                tail_tokens += current[i].tokens
                split = i
            else:
                break
        # the head ends on an assistant message (and, here, never between a call and its results)
        while split > 1 and (current[split - 1].role != "assistant" or not _cuts(current, split)):
            split -= 1
        if split <= MIN_SPLIT:
            return len(items)
        tail = current[split:]
        taken = offset + split - (1 if depth > 0 else 0)  # originals the new summary covers
        tail_tokens = sum(x.tokens for x in tail)
        if summary_tokens + tail_tokens < max_tokens:
            return taken
        current = [Item(summary_tokens, "user", None), *tail]
        offset = taken
        depth += 1


def _cuts(items: Sequence[Item], split: int) -> bool:
    return split >= len(items) or items[split].cut


@dataclass(frozen=True)
class AiderConfig:
    """Parameters, named after Aider's.

    Attributes:
        max_chat_history_tokens: ``--max-chat-history-tokens``; unset: ``min(max(max_input_tokens / 16, 1024),
            8192)`` (``Model.__init__``).
        max_input_tokens: the model's ``max_input_tokens`` (litellm's model info); unset: the simulated model's
            context window.
    """

    max_chat_history_tokens: int | None = field(default=None, metadata={"tokens": True})
    max_input_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_chat_history_tokens", "max_input_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise InvalidConfig(f"{name}={value!r} must be >= 1, or unset for Aider's default")


@register("aider")
class Aider(Policy[AiderConfig]):
    """Aider: past clamp(max input / 16, 1k, 8k) tokens of finished exchanges, summarise all but a tail of about half.

    * **Scope**: only ``done_messages``, the finished exchanges (here: everything the view shows before the newest
      user message, the previous summary and its "Ok." included); the system prompt and the current exchange (the
      newest user message and what follows it) are never summarised.
    * **When**: after each exchange ``summarize_start`` checks ``too_big`` (the done messages' tokens over
      ``max_chat_history_tokens``) and summarises in a background thread; ``summarize_end`` applies the result before
      the next request. Here: at the first request after each user message.
    * **Split** (``summarize_real``): the tail is the newest messages whose tokens stay under half the budget; the
      split moves left until the head ends on an assistant message; with 4 messages or fewer (in all, or in the
      head), everything is summarised. When the summary and the tail are still over the budget, the summary and
      the tail are summarised again (up to depth 3).
    * **Placement**: the history is rewritten to ``[user: "I spoke to you previously about a number of things.\\n" +
      summary, *tail]``, and an assistant "Ok." follows when that does not end on an assistant message (when
      everything was summarised). The summariser (``summarize_all``) sees the content of the user and assistant
      messages only: tool results, tool calls and thinking are left out (Aider has no tool messages); the previous
      summary is part of the head (regenerated).

    Differences: the background thread's race (a result thrown away when ``done_messages`` changed meanwhile) is
    not modelled: the summary is always applied at the next request. The summariser is called once, where Aider
    calls it once per level of recursion, and the recursion is decided on a guess of the summary's size (the real
    one is only known once written): the summary it folds in, or the shortest the mock summariser writes when that
    is longer or there is none. Message sizes are the run's token counts (Aider: the tokens of each message's JSON).
    The head is not clipped to ``max_input_tokens - 512`` for the summariser (what the clip drops would be lost in
    Aider). A split never falls between a call and its results (Aider, which has no tool calls, ends the head on an
    assistant message whatever follows it), nor inside an unresolved pending turn. An earlier "Ok." that Aider's
    tail keeps is not kept (the view places its injected messages at the summary and before the tail, not inside the
    kept messages). A summary that would not shrink the view is skipped. ``/compact`` does nothing (Aider has no such
    command).

    Known deviations: ``revert-resolution``. Aider has no notion of reverts: the tail is chosen by tokens, so a kept
    revert may lose the change it reverts to the summary. ``compaction-loop``: ``summarize_start`` summarises after
    every exchange while ``too_big`` holds, with no guard, so when what must stay (the tail, an unresolved pending
    turn the harness keeps whole) keeps the done messages over the budget it summarises again at the next exchange
    (``csim check`` at 10,000 examples).
    """

    TUNABLE = {
        "max_chat_history_tokens": "2048:32768:2048",
    }
    TUNABLE_NATIVE = {
        "max_chat_history_tokens": "--max-chat-history-tokens {value} (command line)",
    }

    Config = AiderConfig
    when = frozenset({"user_turn"})
    known_deviations = frozenset({"revert-resolution", "compaction-loop"})
    deviation_reasons = {
        "revert-resolution": "Aider picks its tail by tokens and knows nothing of reverts",
        "compaction-loop": (
            "summarize_start runs after every exchange while the done messages are too big, with no guard: what must"
            " stay (the tail, a pending turn the harness keeps whole) can keep them over"
        ),
    }

    def max_tokens(self, state: RunState) -> int:
        """``max_chat_history_tokens``."""
        cfg = self.config
        if cfg.max_chat_history_tokens is not None:
            return cfg.max_chat_history_tokens
        max_input = cfg.max_input_tokens if cfg.max_input_tokens is not None else state.model.context_window
        return int(min(max(max_input / HISTORY_SHARE, MIN_HISTORY_TOKENS), MAX_HISTORY_TOKENS))

    def summary_tokens(self, state: RunState) -> int:
        """The size the split assumes for a summary, as one message: the mock summariser's shortest, wrapped, or the
        summary it folds in when that is longer (a summary restates what the previous one kept)."""
        smallest = _text_tokens(state, "x" * smallest_summary_chars(state, SUMMARY_WRAPPER))
        previous = state.view.summary
        return max(smallest, _text_tokens(state, previous.text)) if previous is not None else smallest

    def done_items(self, state: RunState) -> list[Item]:
        """``done_messages``: what the view sends before the newest user message, in the order it sends it (the
        previous summary, the kept tail and the "Ok." after it, then the exchanges since)."""
        lu = state.last_user_index
        items: list[Item] = []
        msgs = state.messages
        for x in layout(state.view, max(lu, 0), state.has_system):
            if isinstance(x, Summary):
                items.append(Item(_text_tokens(state, x.text), "user", None))
            elif isinstance(x, Injected):
                items.append(Item(_text_tokens(state, x.text), x.role, None))
            else:
                lo = max(x.a, 1 if state.has_system else 0)
                items.extend(Item(_tokens(state, i, i + 1), msgs[i].role, i, state.can_cut(i)) for i in range(lo, x.b))
        return items

    def over_trigger(self, state: RunState) -> bool:
        return sum(x.tokens for x in self.done_items(state)) > self.max_tokens(state)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto" or len(state) == 0:
            return None
        lu = state.last_user_index
        if lu < 0 or lu != len(state) - 1:
            return None  # once per exchange: at the first request after the user's message
        items = self.done_items(state)
        taken = summary_split(items, self.max_tokens(state), self.summary_tokens(state))
        if taken is None:
            return None
        tail = [x.index for x in items[taken:] if x.index is not None]
        cut = tail[0] if tail else lu
        pf = state.protected_from
        if pf is not None and pf < cut:
            cut = pf  # an unresolved pending turn is never summarised (the harness's contract)
        view = state.view
        first = max(view.spans[0][0] if view.spans else view.start, 1 if state.has_system else 0)
        if first >= cut and view.summary is None:
            return None  # nothing would be summarised
        kept = [i for i in range(cut, lu) if view.shows(i)]
        last_role = state.messages[kept[-1]].role if kept else "user"
        injected = (Injected(OK, role="assistant", label="ok"),) if last_role != "assistant" else ()
        plan = Plan(
            start=lu,
            pinned=tuple(kept),
            summarize=True,
            summary_slot=0,
            summary_request=SummaryRequest(
                role="user", wrapper=SUMMARY_WRAPPER, prompt=SUMMARY_PROMPT, drop_tool_outputs=True
            ),
            injected=injected,
            edits=(Edit(_CONTENT_ONLY, cut),) if cut > 0 else (),
            mode="summarize",
        )
        return plan if plan_shrinks(state, plan) else None


def _tokens(state: RunState, a: int, b: int) -> int:
    """Exact tokens of log messages ``[a, b)`` as stored (from the state's prefix sums)."""
    return state.view_size(View(start=a))[0] - state.view_size(View(start=b))[0]


def _text_tokens(state: RunState, text: str) -> int:
    """Tokens of ``text`` sent as a message of its own."""
    n = len(state)
    return state.view_size(View(start=n, injected=(Injected(text),)))[0] - state.view_size(View(start=n))[0]
