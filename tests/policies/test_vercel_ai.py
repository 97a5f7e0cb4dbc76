"""The vercel-prune-messages policy (``policies/vercel_ai.py``): the AI SDK's ``pruneMessages``.

Each test paraphrases the ``ai`` 6.0.77 source it checks (``src/generate-text/prune-messages.ts``). Decisions are
driven on a state built with :func:`tests.builders.state_of`; runs use the engine with the ``chars4`` tokenizer.
The conformance suite (``tests/conformance/test_conformance_ai.py``) compares the same behaviour with the package's
own function.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.base import Policy
from policies.vercel_ai import VercelPruneMessages, VercelPruneMessagesConfig, window_start
from sim.core.conversation import Conversation, Message, Part
from sim.core.errors import InvalidConfig
from sim.core.view import Messages, View, edited, layout
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
from tests.builders import Draft, asst, call, compact_cmd, compaction_records, conv, state_of, sys, tool, tools, user

C4 = RunConfig(model=small_model(), tokenizer="chars4")


def steps(n: int, *, first: int = 1, name: str = "grep", thinking: bool = True) -> list[Draft]:
    """``n`` tool steps: an assistant message (thinking, text, one call) and its result (ids ``a<k>``, ``t<k>``)."""
    out: list[Draft] = []
    for k in range(first, first + n):
        out.append(asst(f"step {k}", [call(f"c{k}", name)], thinking=f"think {k}" if thinking else None, id=f"a{k}"))
        out.append(tool(f"c{k}", f"out {k} " + "r" * 200, name=name, id=f"t{k}"))
    return out


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are an agent."), user("Fix the parser.", id="task"), *drafts)


def sent(c: Conversation, view: View) -> list[tuple[str, list[str]]]:
    """Each message the view sends after the system prompt: its id and its parts' kinds (a call or result with its
    id); a message every part of which was dropped is not sent."""
    out: list[tuple[str, list[str]]] = []
    for item in layout(view, len(c.messages), True):
        assert isinstance(item, Messages)
        for i in range(max(item.a, 1), item.b):
            m = edited(c.messages[i], item.rules)
            if m is not None:
                out.append((m.id, [f"{p.kind}:{p.call_id}" if p.call_id else p.kind for p in m.parts]))
    return out


def after(policy: Policy, c: Conversation) -> list[tuple[str, list[str]]]:  # type: ignore[type-arg]
    state = state_of(policy, c)
    plan = policy.decide(state, "auto")
    return sent(c, plan.view_from(state.view) if plan is not None else state.view)


def prune(**cfg: object) -> VercelPruneMessages:
    return VercelPruneMessages(VercelPruneMessagesConfig(**cfg))  # type: ignore[arg-type]


# -- configuration ------------------------------------------------------------------------------------------------
def test_defaults_are_the_reference_pages_example() -> None:
    """``32-prune-messages.mdx``: ``reasoning: 'before-last-message', toolCalls: 'before-last-2-messages'``."""
    cfg = VercelPruneMessages().config
    assert (cfg.reasoning, cfg.tool_calls, cfg.tools) == ("before-last-message", "before-last-2-messages", None)
    assert cfg.keep_last == 2
    assert prune(tool_calls="before-last-message").config.keep_last == 1
    assert prune(tool_calls="all").config.keep_last is None
    assert prune(tool_calls="none").config.keep_last == 0


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"tool_calls": "before-last-two-messages"}, "tool_calls='before-last-two-messages'"),
        ({"tool_calls": "before-last--1-messages"}, "tool_calls='before-last--1-messages'"),
        ({"reasoning": "some"}, "must be one of"),
    ],
)
def test_bad_options_raise(params: dict[str, str], says: str) -> None:
    with pytest.raises(InvalidConfig, match=says):
        make_policy("vercel-prune-messages", params)


def test_tools_parameter_takes_a_list() -> None:
    assert make_policy("vercel-prune-messages", {"tools": "read,bash"}).config.tools == ("read", "bash")


# -- the reference example, mid tool loop --------------------------------------------------------------------------
def test_docs_example_mid_loop() -> None:
    """``toolCalls: 'before-last-2-messages'``: calls and results of every message before the newest two go, with no
    placeholder; the assistant's text stays, and a tool message left empty is not sent (``emptyMessages:
    'remove'``). ``reasoning: 'before-last-message'``: the last message is a tool message, so every reasoning part
    goes, the live step's too."""
    c = chat(*steps(3))
    assert after(VercelPruneMessages(), c) == [
        ("task", ["text"]),
        ("a1", ["text"]),
        ("a2", ["text"]),
        ("a3", ["text", "tool_call:c3"]),
        ("t3", ["tool_result:c3"]),
    ]


def test_a_message_of_calls_only_is_not_sent() -> None:
    """An assistant message that held only reasoning and a call has no content left: removed."""
    c = chat(asst(calls=[call("c1")], thinking="hm", id="a1"), tool("c1", "out", id="t1"), *steps(1, first=2))
    assert [i for i, _ in after(VercelPruneMessages(), c)] == ["task", "a2", "t2"]


def test_reasoning_before_last_message_keeps_a_final_answers() -> None:
    """``reasoning === 'before-last-message' && messageIndex === messages.length - 1``: the last message keeps its
    reasoning when it is an assistant message."""
    c = chat(*steps(1), asst("done", thinking="finished", id="done"))
    out = dict(after(prune(tool_calls="none"), c))
    assert out["done"] == ["thinking", "text"] and out["a1"] == ["text", "tool_call:c1"]
    assert dict(after(prune(reasoning="all", tool_calls="none"), c))["done"] == ["text"]
    assert dict(after(prune(reasoning="none", tool_calls="none"), c))["a1"][0] == "thinking"


# -- the window of the newest N ------------------------------------------------------------------------------------
def test_a_call_whose_result_is_in_the_window_stays() -> None:
    """The ids of calls and results in the newest N are kept everywhere: a window that starts on a tool message
    keeps the call it answers, in the message before the window."""
    c = chat(*steps(3), asst("done", id="done"))  # ... a2 t2 a3 t3 done: the newest 4 start at t2
    out = dict(after(prune(reasoning="none", tool_calls="before-last-4-messages"), c))
    assert out["a2"] == ["thinking", "text", "tool_call:c2"] and out["t2"] == ["tool_result:c2"]
    assert out["a1"] == ["thinking", "text"] and "t1" not in out


def test_tool_messages_of_one_step_count_as_one() -> None:
    """The AI SDK holds every result of a step in one tool message: a batch's results split over several tool
    messages of the log count as one message of the window."""
    batch = [
        asst("both", [call("b1"), call("b2")], id="ab"),
        tool("b1", "one", id="tb1"),
        tool("b2", "two", id="tb2"),
    ]
    c = chat(*steps(1), *batch)
    state = state_of(VercelPruneMessages(), c)
    assert window_start(state, 1) == 5 and window_start(state, 2) == 4  # tb1 (with tb2), then ab
    assert [i for i, _ in after(prune(tool_calls="before-last-message"), c)] == ["task", "a1", "ab", "tb1", "tb2"]


def test_prunes_only_once_a_step_falls_out_of_the_window() -> None:
    """No threshold: the function prunes whatever lies before the newest N. With exactly N messages after the task
    nothing goes; one more message and the oldest step's call and result go."""
    policy = prune(reasoning="none", tool_calls="before-last-3-messages")
    below = chat(*steps(1))  # task a1 t1: three messages, all in the window
    assert policy.decide(state_of(policy, below), "auto") is None
    at = chat(*steps(1), user("more", id="u2"))  # a1 t1 u2 are the newest 3: the task has no tool content
    assert policy.decide(state_of(policy, at), "auto") is None
    above = chat(*steps(1), user("more", id="u2"), asst("ok", id="a2"))  # t1 u2 a2: a1 keeps c1 (its result is in)
    assert policy.decide(state_of(policy, above), "auto") is None
    past = chat(*steps(1), user("more", id="u2"), asst("ok", id="a2"), user("again", id="u3"))
    plan = policy.decide(state_of(policy, past), "auto")
    assert plan is not None and plan.mode == "prune"
    assert dict(sent(past, plan.view_from(View())))["a1"] == ["thinking", "text"]


def test_none_and_before_last_0_prune_no_tool_content() -> None:
    """``'none'`` prunes nothing; ``'before-last-0-messages'`` neither: ``messages.slice(-0)`` is the whole list, so
    every id is kept (and ``keepLastMessagesCount && ...`` is false for 0)."""
    c = chat(*steps(3))
    for tc in ("none", "before-last-0-messages"):
        assert after(prune(reasoning="none", tool_calls=tc), c) == after(prune(reasoning="none", tool_calls="none"), c)
        assert prune(reasoning="none", tool_calls=tc).decide(state_of(VercelPruneMessages(), c), "auto") is None


def test_listed_tools_only() -> None:
    """The array form ``[{type, tools}]``: only calls and results of the listed tools are removed."""
    c = chat(*steps(1, name="read"), *steps(1, first=2, name="grep"), *steps(1, first=3, name="read"))
    out = dict(after(prune(reasoning="none", tool_calls="before-last-message", tools=("read",)), c))
    assert out["a1"] == ["thinking", "text"] and "t1" not in out
    assert out["a2"] == ["thinking", "text", "tool_call:c2"] and out["t2"] == ["tool_result:c2"]
    assert out["t3"] == ["tool_result:c3"]
    nothing = prune(reasoning="none", tool_calls="all", tools=())  # an empty list: no tool is listed
    assert nothing.decide(state_of(VercelPruneMessages(), c), "auto") is None


def test_a_nameless_result_of_a_listed_tool_stops_the_pruning_at_its_call() -> None:
    """Difference: a result recorded without its tool's name (never in the AI SDK) would leave its call alone
    under a name-selecting edit; the pruning stops at that call instead."""
    nameless = Message("t1", "tool", (Part("tool_result", "out", call_id="c1"),))
    c = chat(asst("s", [call("c0", "read")], id="a0"), tool("c0", "o", name="read", id="t0"))
    c = Conversation("t", (*c.messages, Message("a1", "assistant", (Part("tool_call", call_id="c1", name="read"),))))
    c = Conversation("t", (*c.messages, nameless, *chat(*steps(2, first=2)).messages[2:]))
    out = dict(after(prune(reasoning="none", tool_calls="before-last-message", tools=("read",)), c))
    assert out["a0"] == ["text"] and "t0" not in out  # pruned: before the nameless result's call
    assert out["a1"] == ["tool_call:c1"] and out["t1"] == ["tool_result:c1"]


# -- in a run --------------------------------------------------------------------------------------------------------
def test_recomputed_before_every_request() -> None:
    """Called in ``prepareStep``, before every model call: each step that leaves the window is pruned at the next
    request; the bounds only move forward, the view only loses parts, and nothing breaks an invariant."""
    res = Engine(VercelPruneMessages(), chat(*steps(8), asst("done", thinking="end")), C4).run()
    records = compaction_records(res)
    assert len(records) >= 7
    tool_bounds = [e.before for r in records for e in r.view.edits if "tool_call" in e.rule.kinds]
    assert tool_bounds == sorted(tool_bounds) and len(set(tool_bounds)) >= 6
    assert all(r.view.start == 0 and r.view.summary is None and r.view.injected == () for r in records)
    assert not res.violations


def test_no_compact_command_and_no_overflow_retry() -> None:
    """``pruneMessages`` runs where the application calls it: there is no ``/compact`` and no retry on overflow."""
    c = chat(*steps(3), compact_cmd(id="cmd"))
    state = state_of(VercelPruneMessages(), c)
    assert VercelPruneMessages().decide(state, "manual") is None
    assert VercelPruneMessages().decide(state, "overflow") is None
    assert VercelPruneMessages().retry_on_overflow == 0


def test_tool_calls_all_removes_the_call_being_answered() -> None:
    """``toolCalls: 'all'`` removes every call and result, those of the live step too: the request that should
    answer a call no longer shows it (the engine reports ``live-turn``, as it should: the SDK does this)."""
    c = chat(*steps(2), asst("done"))
    assert [i for i, _ in after(prune(tool_calls="all"), chat(*steps(2)))] == ["task", "a1", "a2"]
    res = Engine(prune(tool_calls="all"), c, C4).run()
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_nothing_of_a_pending_turn_is_pruned() -> None:
    """Difference (the harness's contract): nothing of an unresolved pending turn is pruned."""
    pending = [
        user("Deploy it?", id="ask"),
        asst("Shall I deploy?", [call("d1", "deploy")], thinking="risky", id="ad", pending=True),
        tool("d1", "awaiting approval", name="deploy", id="td"),
        *steps(2, first=5),
    ]
    c = chat(*steps(2), *pending)
    out = dict(after(VercelPruneMessages(), c))
    assert out["ad"] == ["thinking", "text", "tool_call:d1"] and out["td"] == ["tool_result:d1"]
    assert out["a5"][0] == "thinking"  # the pending turn runs to the end of the log
    assert out["a1"] == ["text"] and "t1" not in out  # before it, pruned as usual


def test_parallel_calls_leave_with_all_their_results() -> None:
    """A call and its result are removed together: a batch of calls goes with every result of the batch."""
    batch = [asst("both", [call("b1"), call("b2")], id="ab"), tools({"b1": "one", "b2": "two"}, id="tb")]
    c = chat(*batch, *steps(2))
    out = dict(after(VercelPruneMessages(), c))
    assert out["ab"] == ["text"] and "tb" not in out
