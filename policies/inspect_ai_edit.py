"""inspect_ai ``CompactionEdit``: clearing old tool results, tool inputs and thinking in place, at a threshold.

The strategies' shared reading of inspect (the threshold, the input messages, the request overhead, the running
view) is :mod:`policies.inspect_ai`, where the sources are named; this module holds the edit strategy alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.base import Plan, Trigger, register
from policies.inspect_ai import (
    NEVER_CLEARED,
    TOOL_RESULT_REMOVED,
    InspectPolicy,
    check_threshold,
    newest_first,
    turn_ceiling,
)
from sim.core.errors import InvalidConfig
from sim.core.state import RunState
from sim.core.view import Edit, Rule


@dataclass(frozen=True)
class InspectEditConfig:
    """``CompactionEdit(threshold=0.9, keep_thinking_turns=1, keep_tool_uses=3, exclude_tools=None)``.

    Attributes:
        threshold: as for :class:`InspectSummaryConfig` (``edit.py`` default 0.9).
        keep_tool_uses: the newest tool uses (call with its result) kept; older results read
            ``(Tool result removed)`` (``edit.py`` default 3; 0 clears every one).
        keep_thinking_turns: assistant messages, newest first, that keep their thinking; unset keeps all
            (inspect's ``"all"``) (``edit.py`` default 1).
        exclude_tools: tools whose results are never cleared and do not count against ``keep_tool_uses``;
            ``-P exclude_tools=a,b`` (``edit.py`` default none).
    """

    threshold: float = 0.9
    keep_tool_uses: int = 3
    keep_thinking_turns: int | None = 1
    exclude_tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_threshold(self.threshold)
        if isinstance(self.exclude_tools, str):  # built directly from "a,b"
            object.__setattr__(
                self, "exclude_tools", tuple(t.strip() for t in self.exclude_tools.split(",") if t.strip())
            )
        if not all(isinstance(t, str) and t for t in self.exclude_tools):
            raise InvalidConfig(f"exclude_tools={self.exclude_tools!r} must be tool names (give several as 'a,b')")
        if self.keep_tool_uses < 0:
            raise InvalidConfig(f"keep_tool_uses={self.keep_tool_uses!r} must be >= 0 (0 clears every result)")
        if self.keep_thinking_turns is not None and self.keep_thinking_turns < 0:
            raise InvalidConfig(f"keep_thinking_turns={self.keep_thinking_turns!r} must be >= 0, or unset to keep all")


@register("inspect-edit")
class InspectEdit(InspectPolicy[InspectEditConfig]):
    """inspect_ai CompactionEdit: at 0.9 of the window, clear all but the newest 3 tool results and old thinking.

    ``edit.py``, on the running view: (1) thinking is dropped from every assistant message but the newest
    ``keep_thinking_turns``; (2) tool uses (a call with its result in the view; ``tool_search`` and
    ``exclude_tools`` skipped) are listed in call order and all but the newest ``keep_tool_uses`` have their
    result replaced by ``(Tool result removed)``, calls and ids kept; (3) trailing assistant messages are
    dropped. As compaction runs only at threshold crossings and replaces the running view, clearing is
    batched: results that arrive after a compaction stay whole until the next crossing. Edit is idempotent,
    so the re-application loop never helps: a result still over the threshold is "insufficient".
    Defaults: ``threshold`` 0.9, ``keep_tool_uses`` 3, ``keep_thinking_turns`` 1, no ``exclude_tools``
    (§B5, §F, ``edit.py``).

    Each edit is a bound (results, or thinking, before it are edited), so a tool message that holds several
    results (inspect has one tool message per result) is cleared or kept whole: kept, when the newest
    ``keep_tool_uses`` reach into it. Parallel results that arrived out of call order (a read's before the glob's
    it was issued after) are cleared by call order, as ``edit.py`` clears them: a result cleared although a kept
    one came before it gets an edit of its own tools' results, up to it; when a kept result of the same tool sits
    in that range a bound cannot tell the two apart, and it stays. Not modelled: ``keep_tool_inputs=False``
    (inspect deletes the call and its result and puts ``[Tool call: NAME (parameters and results removed from
    history)]`` text in the assistant message; a view cannot turn a call into text), and a thinking-only message
    left empty is not sent (inspect sends it with empty content).

    Known deviation: ``keep_tool_uses`` counts uses, not the batches they came in, so when the newest assistant
    message made more than ``keep_tool_uses`` parallel calls, the oldest results of that very batch read
    ``(Tool result removed)`` in the request that answers them (``live-turn``: the newest tool results
    cleared); ``edit.py`` does the same, and with ``keep_tool_uses`` 0 clears them all.
    """

    TUNABLE = {
        "threshold": "0.5:0.95:0.05",
        "keep_tool_uses": "1:10",
    }
    TUNABLE_NATIVE = {
        "threshold": "CompactionEdit(threshold={value})",
        "keep_tool_uses": "CompactionEdit(keep_tool_uses={value})",
    }

    Config = InspectEditConfig
    known_deviations = frozenset({"live-turn"})
    deviation_reasons = {
        "live-turn": (
            "when the last reply made more than keep_tool_uses parallel calls, inspect clears the oldest of their "
            "results in the request that answers them"
        ),
    }

    def _rules(self) -> tuple[Rule, Rule]:
        excluded = NEVER_CLEARED | frozenset(self.config.exclude_tools)
        return (
            Rule(kinds=frozenset({"tool_result"}), text=TOOL_RESULT_REMOVED, exclude_tools=excluded),
            Rule(kinds=frozenset({"thinking"}), action="drop"),
        )

    def _compact(self, state: RunState, trigger: Trigger) -> Plan | None:
        results, thinking = self._rules()
        current = {e.rule: e.before for e in state.view.edits}
        top = turn_ceiling(state)
        bound, late = self._results_bound(state, results)
        bounds = {
            results: min(bound, top),
            thinking: min(self._thinking_bound(state), top),
        }
        edits = [Edit(r, max(b, current.get(r, 0))) for r, b in bounds.items() if max(b, current.get(r, 0)) > 0]
        main = max(bounds[results], current.get(results, 0))
        # Results cleared by call order that sit after a kept one (parallel results that arrived out of order): one
        # edit per set of their tools, reaching past the newest of them; earlier such edits stay while they reach past
        # the main bound (inspect's running view keeps what it cleared).
        extra = {e.rule: e.before for e in state.view.edits if e.rule not in bounds and e.before > main}
        for rule, before in self._late_edits(state, results, late, main, top):
            extra[rule] = max(before, extra.get(rule, 0))
        edits += [Edit(r, b) for r, b in extra.items()]
        view, n = state.view, len(state)
        start, spans = view.start, view.spans
        trailing = self._trailing_assistants(state)
        if trailing is not None:  # shown messages from ``trailing`` on leave the view; later ones join the tail
            spans = tuple((a, min(b, trailing)) for a, b in (*view.spans, (view.start, n)) if a < trailing)
            start = n
        plan = Plan(start=start, spans=spans, edits=tuple(edits), mode="edit")
        return plan if self._fits(state, plan) else None

    def _results_bound(self, state: RunState, rule: Rule) -> tuple[int, dict[str, int]]:
        """Results before the first index are cleared: the oldest message holding a result of the newest
        ``keep_tool_uses`` uses (calls listed newest first, each counted once its result was seen). Second: the
        results at or after that index that ``edit.py`` clears all the same (call id -> message index), because
        their call came before a kept one although their result arrived after its result."""
        keep = self.config.keep_tool_uses
        if keep == 0:
            return len(state), {}
        seen: dict[str, int] = {}
        kept: set[str] = set()
        bound = len(state)
        for i in newest_first(state):
            m = state.messages[i]
            if m.role == "tool":
                seen.update(
                    (p.call_id, i) for p in m.parts if p.kind == "tool_result" and p.call_id and rule.selects(p)
                )
            elif m.role == "assistant":
                for c in reversed(m.calls):
                    if c.call_id in seen and not (c.name and c.name in rule.exclude_tools):
                        kept.add(c.call_id)
                        bound = min(bound, seen[c.call_id])
                        if len(kept) == keep:
                            late = {cid: j for cid, j in seen.items() if j >= bound and cid not in kept}
                            return bound, late
        return 0, {}  # fewer uses than kept: nothing to clear

    @staticmethod
    def _late_edits(state: RunState, rule: Rule, late: dict[str, int], main: int, top: int) -> list[tuple[Rule, int]]:
        """Edits that clear the ``late`` results (call id -> message index) and nothing kept: a rule of their tools'
        names, up to the message after the newest of them. None when a kept result of one of those tools sits in
        that range (a bound cannot tell them apart: the result stays, as before this was modelled), or when the
        range reaches into a pending turn."""
        late = {cid: j for cid, j in late.items() if j >= main}
        if not late:
            return []
        names = frozenset(p.name for j in set(late.values()) for p in state.messages[j].results if p.call_id in late)
        if None in names:
            return []
        before = max(late.values()) + 1
        if before > top:
            return []
        for j in range(main, before):
            for p in state.messages[j].results:
                if p.call_id not in late and p.name in names and rule.selects(p):
                    return []
        tools = frozenset(n for n in names if n is not None)
        return [(Rule(kinds=rule.kinds, tools=tools, exclude_tools=rule.exclude_tools, text=rule.text), before)]

    def _thinking_bound(self, state: RunState) -> int:
        """Thinking before this index is dropped: the ``keep_thinking_turns``-th newest assistant message."""
        keep = self.config.keep_thinking_turns
        if keep is None:
            return 0
        if keep == 0:
            return len(state)
        seen = 0
        for i in newest_first(state):
            if state.messages[i].role == "assistant":
                seen += 1
                if seen == keep:
                    return i
        return 0

    @staticmethod
    def _trailing_assistants(state: RunState) -> int | None:
        """Where the view's trailing run of assistant messages starts (they are dropped), None if it ends
        otherwise or the run is protected."""
        first = None
        for i in newest_first(state):
            if state.messages[i].role != "assistant":
                break
            first = i
        return first if first is not None and first < turn_ceiling(state) else None
