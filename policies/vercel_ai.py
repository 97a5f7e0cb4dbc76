"""The Vercel AI SDK's ``pruneMessages``: reasoning and tool content removed before the newest messages.

Read: the ``ai`` package 6.0.77 on npm, file ``src/generate-text/prune-messages.ts`` (shipped in the package), and
its reference page ``docs/07-reference/02-ai-sdk-ui/32-prune-messages.mdx``; the catalogue
``reference/policy-catalogue.md`` §B21 and §F. ``conformance/ai/`` runs the package's own ``pruneMessages`` on
scripted message lists (under node) and ``tests/conformance/test_conformance_ai.py`` compares this policy with
what it returned.

``pruneMessages({messages, reasoning, toolCalls, emptyMessages})`` is a pure function of a message list; an
application calls it on the messages it is about to send, typically in ``prepareStep`` (before every step's model
call, mid tool loop included) or in a route handler before ``streamText``. So here it is asked before every
request and recomputes what it removes from the whole list each time: a view over the log, never a rewrite, never
a summary, no trigger and no token count.

What the AI SDK calls a message maps onto the log as follows: the system prompt is the ``system`` option, not a
message (so never counted or pruned); a user or assistant message is one message; the AI SDK puts every result of
a step in one ``tool`` message, so a run of consecutive tool messages of the log counts as one message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from policies.base import Plan, Policy, Trigger, register
from policies.helpers import plan_shrinks
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Rule

# Defaults: the ``pruneMessages`` reference page's first example (``reasoning: 'before-last-message'``,
# ``toolCalls: 'before-last-2-messages'``, ``emptyMessages: 'remove'``). The function's own defaults
# (``reasoning = 'none'``, ``toolCalls = []``) prune nothing at all.
REASONING: Literal["all", "before-last-message", "none"] = "before-last-message"
TOOL_CALLS = "before-last-2-messages"
_COUNTED = re.compile(r"before-last-(\d+)-messages")

#: Reasoning parts (``type: 'reasoning'``) leave assistant messages: the log's thinking parts.
DROP_REASONING = Rule(kinds=frozenset({"thinking"}), action="drop")


@dataclass(frozen=True)
class VercelPruneMessagesConfig:
    """``pruneMessages``'s options, under Python names (``emptyMessages`` is fixed: see the policy).

    Attributes:
        reasoning: ``all`` removes every reasoning part, ``before-last-message`` every one but the last message's,
            ``none`` none (the function's default; the reference example's ``before-last-message`` here).
        tool_calls: ``all``, ``before-last-message``, ``before-last-N-messages`` or ``none`` (the function's default,
            ``[]``); the reference example's ``before-last-2-messages`` here. Tool calls and their results are
            removed together, with no placeholder, in every message before the newest N, except those whose call
            or result is among the newest N.
        tools: only calls and results of these tools (the array form ``[{type: tool_calls, tools}]``); unset (the
            default): every tool.
    """

    reasoning: Literal["all", "before-last-message", "none"] = REASONING
    tool_calls: str = TOOL_CALLS
    tools: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.reasoning not in ("all", "before-last-message", "none"):
            raise InvalidConfig(f"reasoning={self.reasoning!r} must be 'all', 'before-last-message' or 'none'")
        if self.tool_calls not in ("all", "before-last-message", "none") and not _COUNTED.fullmatch(self.tool_calls):
            raise InvalidConfig(
                f"tool_calls={self.tool_calls!r} must be 'all', 'before-last-message', 'before-last-N-messages' "
                "(N a whole number) or 'none'"
            )

    @property
    def keep_last(self) -> int | None:
        """How many newest messages keep their tool content: None for ``all`` (none), 0 for ``none``."""
        if self.tool_calls == "all":
            return None
        if self.tool_calls == "none":
            return 0
        if self.tool_calls == "before-last-message":
            return 1
        m = _COUNTED.fullmatch(self.tool_calls)
        assert m is not None  # validated
        return int(m.group(1))


def window_start(state: RunState, count: int) -> int:
    """The first log index of the newest ``count`` AI SDK messages (a run of tool messages is one; the system
    prompt is none). O(count + the tool runs crossed)."""
    msgs = state.messages
    base = 1 if state.has_system else 0
    i, k = len(state), 0
    while i > base and k < count:
        i -= 1
        while msgs[i].role == "tool" and i > base and msgs[i - 1].role == "tool":
            i -= 1
        k += 1
    return i


def current_bound(state: RunState, rule: Rule) -> int:
    return next((e.before for e in state.view.edits if e.rule == rule), 0)


@register("vercel-prune-messages")
class VercelPruneMessages(Policy[VercelPruneMessagesConfig]):
    """Vercel AI SDK pruneMessages: reasoning dropped before the last message, tool calls before the last 2.

    * Reasoning (``reasoning``): ``all`` removes the reasoning parts of every assistant message,
      ``before-last-message`` of every assistant message but the list's last message.
    * Tool content (``toolCalls``): for ``before-last-N-messages`` (``before-last-message``: N = 1), the ids of
      every tool call and result in the newest N messages are kept; in every older assistant or tool message, each
      tool call and tool result is removed unless its id is kept (or, with a ``tools`` list, unless its tool is not
      listed). Removed means gone: no placeholder, no notice. So a call whose result is among the newest N stays
      with it, and a call and its result always leave together. ``all``: every tool call and result, the newest
      included. ``none``: nothing.
    * ``emptyMessages: 'remove'`` (its default): a message left with no content is not sent (an assistant message
      that only called tools, a tool message). The view never sends a message without parts, so ``'keep'`` is not
      modelled.

    As a view: a drop edit of thinking up to the last message (or all), and a drop edit of tool calls and results up
    to the first of the newest N messages, lowered to the assistant message whose calls the window's first results
    answer. Asked before every request, a request whose bounds change nothing sends the same view.

    Known hazards, the real function's and so ours: ``tool_calls='all'`` removes the calls the model just made and
    their results from the very request that should answer them (``csim check`` reports ``live-turn``); reasoning
    removed from the assistant message of a live tool loop is what Anthropic's extended thinking refuses (the mock
    provider does not check it).

    Differences: nothing of an unresolved pending turn is pruned (the harness's contract; the AI SDK's approval
    requests are kept only while among the newest N); AI SDK approval parts have no counterpart in the log; only
    one ``toolCalls`` entry (the array form's ``tools`` list included); a result recorded without its tool's name
    (never in the AI SDK) is pruned only when no ``tools`` list is set: with one, pruning stops at its call.
    """

    TUNABLE = {
        "tool_calls": "before-last-message,before-last-2-messages,before-last-5-messages,before-last-10-messages,none",
    }
    TUNABLE_NATIVE = {
        "tool_calls": "pruneMessages({ toolCalls: '{value}' })",
    }

    Config = VercelPruneMessagesConfig

    def tool_rule(self) -> Rule:
        tools = self.config.tools
        return Rule(
            kinds=frozenset({"tool_call", "tool_result"}),
            tools=None if tools is None else frozenset(tools),
            action="drop",
        )

    def reasoning_bound(self, state: RunState) -> int:
        n = len(state)
        if self.config.reasoning == "none":
            return 0
        return n if self.config.reasoning == "all" else max(n - 1, 0)

    def tool_bound(self, state: RunState) -> int:
        """Where the SDK stops removing tool content: before the newest N messages, less the messages holding a
        call or result whose id is in them (in a valid log, the assistant message their first results answer)."""
        keep = self.config.keep_last
        n = len(state)
        if keep is None:
            return n
        if keep == 0:  # 'none'; also 'before-last-0-messages', which slices the whole list (-0) and keeps every id
            return 0
        bound = window_start(state, keep)
        kept = {p.call_id for m in state.messages[bound:n] for p in m.parts if p.call_id}
        msgs = state.messages
        while bound > 0 and any(p.call_id in kept for p in msgs[bound - 1].parts if p.call_id):
            bound -= 1
        return bound

    def named_bound(self, state: RunState, lo: int, hi: int) -> int:
        """With a ``tools`` list, ``hi`` lowered to the call of the first result in ``[lo, hi)`` recorded without a
        tool name whose call is of a listed tool (the rule, selecting by name, would drop the call alone)."""
        tools = self.config.tools
        if tools is None:
            return hi
        calls: dict[str, tuple[int, str | None]] = {}
        for i in range(lo, hi):
            for p in state.messages[i].parts:
                if p.kind == "tool_call" and p.call_id:
                    calls[p.call_id] = (i, p.name)
                elif p.kind == "tool_result" and p.name is None and p.call_id in calls:
                    at, name = calls[p.call_id]
                    if name in tools:
                        return at
        return hi

    def edits(self, state: RunState) -> tuple[Edit, ...]:
        """The edits the SDK's pruning makes of the whole log now (never behind the view's, never into a pending
        turn)."""
        pf = state.protected_from
        cap = len(state) if pf is None else pf
        out: list[Edit] = []
        for rule, want in ((DROP_REASONING, self.reasoning_bound(state)), (self.tool_rule(), self.tool_bound(state))):
            current = current_bound(state, rule)
            bound = max(current, min(want, cap))
            if rule is not DROP_REASONING:
                bound = max(current, self.named_bound(state, current, bound))
            if bound > 0:
                out.append(Edit(rule, bound))
        return tuple(out)

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger != "auto":
            return None  # no /compact, no retry on overflow: pruneMessages runs where the application calls it
        edits = self.edits(state)
        if edits == state.view.edits:
            return None
        plan = Plan(start=state.view.start, edits=edits, mode="prune")
        return plan if plan_shrinks(state, plan) else None
