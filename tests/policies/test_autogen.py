"""The autogen-* policies (``policies/autogen.py``): AutoGen's model contexts.

Each test names the ``autogen-core`` 0.7.5 file it checks (``autogen_core/model_context/``). Decisions are driven
on a state built with :func:`tests.builders.state_of`; runs use the engine with the ``chars4`` tokenizer. The
conformance suite (``tests/conformance/test_conformance_autogen_core.py``) compares the same behaviour with
AutoGen's own ``get_messages``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import make_policy
from policies.autogen import (
    AutoGenBuffered,
    AutoGenHeadAndTail,
    AutoGenHeadAndTailConfig,
    AutoGenTokenLimited,
    AutoGenTokenLimitedConfig,
    middle_out,
)
from policies.base import Policy
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
from tests.builders import (
    Draft,
    asst,
    call,
    change,
    compaction_records,
    conv,
    revert,
    shown_ids,
    state_of,
    sys,
    thinking_loop,
    thinking_rejection,
    tool,
    tool_steps,
    user,
)

C4 = RunConfig(model=small_model(), tokenizer="chars4")


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are an agent."), user("Fix the parser.", id="task"), *drafts)


def after(policy: Policy, c: Conversation, model: ModelConfig | None = None) -> list[str]:  # type: ignore[type-arg]
    """What the policy sends for the whole of ``c`` (its plan, or the view unchanged)."""
    state = state_of(policy, c, model)
    plan = policy.decide(state, "auto")
    return shown_ids(c, plan.view_from(state.view) if plan is not None else state.view)


# -- configuration -----------------------------------------------------------------------------------------------
def test_defaults() -> None:
    assert AutoGenBuffered().config.buffer_size == 5  # the Core user guide's example
    assert (AutoGenHeadAndTail().config.head_size, AutoGenHeadAndTail().config.tail_size) == (1, 5)
    assert AutoGenTokenLimited().config.token_limit is None  # AutoGen's default: the client's window


@pytest.mark.parametrize(
    ("name", "params", "says"),
    [
        ("autogen-buffered", {"buffer_size": "0"}, "buffer_size=0 must be greater than 0"),
        ("autogen-head-and-tail", {"tail_size": "0"}, "tail_size (0)"),
        ("autogen-token-limited", {"token_limit": "-5"}, "token_limit=-5"),
    ],
)
def test_bad_configs_raise_as_autogen_does(name: str, params: dict[str, str], says: str) -> None:
    with pytest.raises(InvalidConfig, match=rf"{says}".replace("(", r"\(").replace(")", r"\)")):
        make_policy(name, params)


# -- BufferedChatCompletionContext -------------------------------------------------------------------------------
def test_buffered_sends_the_newest_five() -> None:
    """``_buffered_chat_completion_context.py``: ``self._messages[-buffer_size:]``."""
    c = chat(*tool_steps(3), asst("done", id="done"))  # task a1 t1 a2 t2 a3 t3 done
    assert after(AutoGenBuffered(), c) == ["m0", "a2", "t2", "a3", "t3", "done"]


def test_buffered_drops_a_leading_function_result() -> None:
    """The first of the newest ``buffer_size`` is a result: it goes too (4 messages sent, not 5)."""
    c = chat(*tool_steps(3))  # task a1 t1 a2 t2 a3 t3: the newest 5 start at t1
    assert after(AutoGenBuffered(), c) == ["m0", "a2", "t2", "a3", "t3"]


def test_buffered_does_nothing_within_the_buffer() -> None:
    c = chat(*tool_steps(2))  # 5 messages after the system prompt
    state = state_of(AutoGenBuffered(), c)
    assert AutoGenBuffered().decide(state, "auto") is None
    assert AutoGenBuffered().decide(state, "manual") is None  # no /compact in AutoGen


def test_buffered_moves_on_every_request() -> None:
    """A view recomputed before every model call: each request past the buffer drops what fell out of it."""
    res = Engine(AutoGenBuffered(), chat(*tool_steps(8), asst("done")), C4).run()
    starts = [r.view.start for r in compaction_records(res)]
    assert len(starts) >= 6 and starts == sorted(set(starts))
    assert all(r.view.injected == () and r.view.summary is None for r in compaction_records(res))


def test_buffered_drops_the_task_in_a_long_tool_loop() -> None:
    """Known deviation ``live-turn``: the user message of a loop longer than the buffer is not sent."""
    c = chat(*tool_steps(4))
    assert "task" not in after(AutoGenBuffered(), c)
    res = Engine(AutoGenBuffered(), c, C4).run()
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_buffered_cuts_inside_a_live_thinking_tool_loop() -> None:
    """Known deviation ``atomic-units``: AutoGen counts messages, so the buffer starts inside the live tool loop,
    after the reply whose thinking opened it; without interleaved thinking the kept replies carry none, and
    Anthropic rejects the request (with thinking on every step it accepts it)."""
    for interleaved in (False, True):
        c = chat(*thinking_loop(4, interleaved=interleaved))
        plan = AutoGenBuffered().decide(state_of(AutoGenBuffered(), c), "auto")
        assert plan is not None and plan.start > c.index()["a1"]
        assert (thinking_rejection(AutoGenBuffered(), c, plan) is None) is interleaved


def test_buffered_drops_a_change_whose_revert_stays() -> None:
    """Known deviation ``revert-resolution``: AutoGen has no reverts."""
    c = chat(asst("edit", [call("c0")], parts=[change("ch1")], id="edit"), tool("c0", "ok"), *tool_steps(2))
    c = conv(*c.messages, user("undo that", revert("ch1"), id="undo"))
    sent = after(AutoGenBuffered(), c)
    assert "undo" in sent and "edit" not in sent


def test_buffered_keeps_a_pending_turn() -> None:
    """Our addition: what a pending turn shows stays while it is unresolved."""
    c = chat(*tool_steps(1), user("Deploy it.", id="u2"), asst("May I deploy?", id="ask", pending=True))
    c = conv(*c.messages, user("Meanwhile, check the docs.", id="u3"), *tool_steps(3, first=2))
    assert after(AutoGenBuffered(), c)[:3] == ["m0", "u2", "ask"]


# -- HeadAndTailChatCompletionContext ----------------------------------------------------------------------------
def test_head_and_tail_puts_the_skipped_count_between() -> None:
    """``_head_and_tail_chat_completion_context.py``: head, "Skipped n messages." (a user message), tail."""
    c = chat(*tool_steps(4, size=400), asst("done", id="done"))  # task a1 t1 a2 t2 a3 t3 a4 t4 done
    assert after(AutoGenHeadAndTail(), c) == ["m0", "task", "Skipped 4 messages.", "a3", "t3", "a4", "t4", "done"]


def test_head_and_tail_drops_a_leading_result_from_the_tail_but_still_counts_it() -> None:
    """The tail's first message, t2, is a result: it goes, and n = 9 - 1 - 5 still counts it as kept."""
    c = chat(*tool_steps(4, size=400))  # task a1 t1 a2 t2 a3 t3 a4 t4
    assert after(AutoGenHeadAndTail(), c) == ["m0", "task", "Skipped 3 messages.", "a3", "t3", "a4", "t4"]


def test_head_and_tail_drops_a_trailing_call_from_the_head() -> None:
    """A head whose last message holds function calls loses it (its result is not in the head)."""
    c = chat(*tool_steps(5, size=400), asst("done", id="done"))
    sent = after(AutoGenHeadAndTail(AutoGenHeadAndTailConfig(head_size=2, tail_size=3)), c)
    assert sent[:3] == ["m0", "task", "Skipped 7 messages."]
    sent = after(AutoGenHeadAndTail(AutoGenHeadAndTailConfig(head_size=3, tail_size=3)), c)
    assert sent[:5] == ["m0", "task", "a1", "t1", "Skipped 6 messages."]


def test_head_and_tail_sends_everything_up_to_head_plus_tail() -> None:
    c = chat(*tool_steps(3, size=400))  # 7 messages after the system prompt
    state = state_of(AutoGenHeadAndTail(), c)
    assert AutoGenHeadAndTail(AutoGenHeadAndTailConfig(head_size=2, tail_size=5)).decide(state, "auto") is None
    assert AutoGenHeadAndTail(AutoGenHeadAndTailConfig(head_size=1, tail_size=5)).decide(state, "auto") is not None


def test_head_and_tail_waits_while_the_placeholder_is_longer_than_what_it_hides() -> None:
    """Our difference: "Skipped 1 messages." in place of a one-word reply would grow the prompt."""
    c = chat(asst("ok", id="ok"), *tool_steps(2, size=400), asst("done", id="done"))
    state = state_of(AutoGenHeadAndTail(), c)
    assert AutoGenHeadAndTail(AutoGenHeadAndTailConfig(head_size=1, tail_size=5)).decide(state, "auto") is None


# -- TokenLimitedChatCompletionContext ---------------------------------------------------------------------------
def test_token_limited_removes_from_the_middle() -> None:
    """``_token_limited_chat_completion_context.py``: pop ``len // 2`` while over; the task and the newest stay."""
    c = chat(*tool_steps(6), asst("done", id="done"))
    sent = after(AutoGenTokenLimited(AutoGenTokenLimitedConfig(token_limit=400)), c)
    assert sent[:4] == ["m0", "task", "a1", "t1"] and sent[-3:] == ["a6", "t6", "done"]
    assert "a4" not in sent and "t3" not in sent


def test_token_limited_does_nothing_at_the_limit() -> None:
    c = chat(*tool_steps(6))
    state = state_of(AutoGenTokenLimited(), c)
    count = AutoGenTokenLimited().context_tokens(state)
    assert AutoGenTokenLimited(AutoGenTokenLimitedConfig(token_limit=count)).decide(state, "auto") is None
    assert AutoGenTokenLimited(AutoGenTokenLimitedConfig(token_limit=count - 1)).decide(state, "auto") is not None


def test_token_limited_without_a_limit_uses_the_models_window() -> None:
    """``token_limit=None``: the client's ``remaining_tokens`` (its window less the count) must not be negative."""
    c = chat(*tool_steps(14, size=400))
    state = state_of(AutoGenTokenLimited(), c, ModelConfig(context_window=1_500, output_reserve=100))
    count = AutoGenTokenLimited().context_tokens(state)
    assert count > 1_500
    plan = AutoGenTokenLimited().decide(state, "auto")
    assert plan is not None and AutoGenTokenLimited().context_tokens(state, plan.view_from(state.view)) <= 1_500
    big = state_of(AutoGenTokenLimited(), c, ModelConfig(context_window=count, output_reserve=100))
    assert AutoGenTokenLimited().decide(big, "auto") is None


def test_token_limited_leaves_a_result_without_its_call() -> None:
    """Known deviation ``tool-pairing``: a popped call's result is still sent; the provider rejects it."""
    c = chat(*tool_steps(6), asst("done", id="done"))
    state = state_of(AutoGenTokenLimited(), c)
    count = AutoGenTokenLimited().context_tokens(state)
    sent = after(AutoGenTokenLimited(AutoGenTokenLimitedConfig(token_limit=count - 1)), c)
    assert "a4" not in sent and "t4" in sent  # 14 messages: the first pop is a4, at 14 // 2 = 7
    res = Engine(AutoGenTokenLimited(AutoGenTokenLimitedConfig(token_limit=count - 60)), c, C4).run()
    assert "tool-pairing" in res.summary["violations_by_invariant"]


def test_token_limited_never_brings_back_what_it_dropped() -> None:
    """Found by ``csim check --policy autogen-token-limited --examples 10000``: AutoGen recomputes the middle from
    the whole list, which moves right as the list grows, so a later call would send a message an earlier one
    left out; the engine refused that plan (``plan-invalid``) and the run overflowed. The view is now AutoGen's
    cut less what it had already dropped: the recorded case runs clean, and on a view that already left out a
    message AutoGen's cut of the whole log keeps (the oldest), the plan leaves it out still."""
    from pathlib import Path

    from sim.core.view import View
    from sim.formats.native import read as read_native

    path = Path(__file__).parents[1] / "golden" / "counterexamples" / "autogen-token-limited-middle-moves-right.jsonl"
    [c] = read_native(path).conversations
    res = Engine(AutoGenTokenLimited(), c, RunConfig(model=small_model(8_000), deep_checks=True)).run()
    unexpected = {v.invariant for v in res.violations} - AutoGenTokenLimited.known_deviations
    assert not unexpected and res.summary["finish_reason"] != "context-overflow"
    d: list[Draft] = [sys("You are a coding agent.")]
    for k in range(6):
        d += [user(f"question {k} " + "q" * 400, id=f"u{k}"), asst(f"answer {k} " + "a" * 400, id=f"a{k}")]
    c2 = conv(*d)
    pol = AutoGenTokenLimited(AutoGenTokenLimitedConfig(token_limit=1_000))
    hidden = View(start=2)  # an earlier call left out u0 (index 1)
    plan = pol.decide(state_of(pol, c2, view=hidden), "auto")
    assert plan is not None and not plan.view_from(hidden).shows(1)


def token_limited_drops_live_turn() -> Conversation:
    """A second user message in the middle of the exchange, then a result that takes the context past the
    checker's 8,000-token window in one step: the middle-out pops take the user message (``live-turn``; for
    ``test_properties.HAND_BUILT``, as the generated conversations rarely jump past the window in one step)."""
    return chat(
        *tool_steps(5, size=2400),
        user("Now also fix the lexer.", id="u2"),
        *tool_steps(5, first=10, size=2400),
        asst("read", [call("cz")], id="az"),
        tool("cz", "z" * 8_000, id="tz"),
        asst("done"),
    )


def test_token_limited_can_drop_the_last_user_message() -> None:
    c = token_limited_drops_live_turn()
    assert "u2" not in after(AutoGenTokenLimited(AutoGenTokenLimitedConfig(token_limit=2_000)), c)
    res = Engine(AutoGenTokenLimited(), c, C4).run()
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_token_limited_reserves_nothing_for_the_output() -> None:
    """Unset, the limit is the whole window: a prompt between the input budget and the window is sent, and the
    provider rejects it (AutoGen's clients count no output reserve)."""
    res = Engine(AutoGenTokenLimited(), chat(*tool_steps(30, size=1_200)), C4).run()
    assert res.summary["finish_reason"] == "context-overflow"
    assert compaction_records(res) == []


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(st.lists(st.integers(1, 50), max_size=20), st.integers(0, 600))
def test_middle_out_is_autogens_pop_loop(sizes: list[int], limit: int) -> None:
    """The block :func:`middle_out` returns is exactly what popping ``len // 2`` one at a time removes."""
    left = list(range(len(sizes)))
    while sum(sizes[i] for i in left) > limit and left:
        left.pop(len(left) // 2)
    lo, hi = middle_out(sizes, limit)
    assert [i for i in range(len(sizes)) if not lo <= i < hi] == left


def test_a_batch_of_results_counts_as_one_message() -> None:
    """An agent stores a parallel batch's results as one ``FunctionExecutionResultMessage``; a log may hold one tool
    message per result (a recording, the scenarios). The task, a batch of two calls and its two results, a call and
    its result: five AutoGen messages, so ``buffer_size=5`` keeps the task (counted per log message, six, it went);
    head-and-tail skips ``7 - 1 - 5`` AutoGen messages, not ``9 - 1 - 5`` log messages."""
    c = conv(
        sys("You are a coding agent.", id="sys"),
        user("Fix the failing test.", id="task"),
        asst("two reads", [call("r1"), call("r2")], id="a1"),
        tool("r1", "one", id="t1"),
        tool("r2", "two", id="t2"),
        asst("one more", [call("r3")], id="a2"),
        tool("r3", "three", id="t3"),
    )
    pol = AutoGenBuffered()
    plan = pol.decide(state_of(pol, c), "auto")
    assert plan is None  # all five AutoGen messages fit: the view already shows them, the task included
    more = conv(
        *c.messages,
        asst("and two more", [call("r4"), call("r5")], id="a3"),
        tool("r4", "four", id="t4"),
        tool("r5", "five", id="t5"),
    )
    ht = AutoGenHeadAndTail()
    plan = ht.decide(state_of(ht, more), "auto")
    assert plan is not None and plan.injected is not None
    assert plan.injected[0].text == "Skipped 1 messages."  # 7 AutoGen messages: task, a1, R, a2, R, a3, R
