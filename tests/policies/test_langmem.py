"""The langmem policy (``policies/langmem.py``): LangMem's ``summarize_messages`` / ``SummarizationNode``.

Each test names the ``langmem`` code it checks (``src/langmem/short_term/summarization.py``). Decisions are driven
on a state built with :func:`tests.builders.state_of`; runs use the engine with the ``chars4`` tokenizer. The
conformance suite (``tests/conformance/test_conformance_langmem.py``) compares the same behaviour with LangMem's own
``summarize_messages``.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.langmem import (
    EXTEND_PROMPT,
    INITIAL_PROMPT,
    SUMMARY_WRAPPER,
    LangMem,
    LangMemConfig,
    message_tokens,
)
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Messages, Summary, View, layout
from sim.replay.engine import Engine, RunConfig
from tests.builders import (
    Draft,
    asst,
    call,
    change,
    compaction_records,
    conv,
    revert,
    state_of,
    sys,
    thinking_rejection,
    tool,
    tools,
    user,
)

MODEL = ModelConfig(context_window=10_000, output_reserve=1_000)
ANSWER = "It reads the file, checks each key and reports what is missing. " * 8


def turns(n: int, first: int = 0) -> list[Draft]:
    out: list[Draft] = []
    for k in range(first, first + n):
        out += [user(f"Question {k}: what does module {k} do?", id=f"u{k}"), asst(f"Module {k}: {ANSWER}", id=f"a{k}")]
    return out


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are an agent.", id="sys"), *drafts)


def size(c: Conversation, *ids: str) -> int:
    return sum(message_tokens(m) for m in c.messages if m.id in ids)


def lm(**kw: int) -> LangMem:
    return LangMem(LangMemConfig(**kw))  # type: ignore[arg-type]


def after(policy: LangMem, c: Conversation, view: View | None = None) -> list[str]:
    state = state_of(policy, c, MODEL, view=view)
    plan = policy.decide(state, "auto")
    v = plan.view_from(state.view) if plan is not None else state.view
    out = ["SUMMARY"] if plan is not None else ["summary"] if v.summary is not None else []
    for item in layout(v, len(c.messages), True):
        if isinstance(item, Messages):
            out += [c.messages[i].id for i in range(item.a, item.b) if i > 0]
    return out


def test_defaults() -> None:
    """``max_summary_tokens=256``; ``max_tokens_before_summary`` defaults to ``max_tokens``; ``max_tokens`` is
    required by LangMem (unset here: 0.8 of the input budget, ours)."""
    cfg = LangMem().config
    assert (cfg.max_tokens, cfg.max_tokens_before_summary, cfg.max_summary_tokens) == (None, None, 256)
    assert LangMem().max_tokens(state_of(LangMem(), chat(*turns(1)), MODEL)) == 7_200


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"max_tokens": "200", "max_summary_tokens": "200"}, "must be less than max_tokens"),
        ({"chars_per_token": "0"}, "chars_per_token"),
    ],
)
def test_bad_configs_raise(params: dict[str, str], says: str) -> None:
    """``_preprocess_messages``: "`max_summary_tokens` must be less than `max_tokens`"."""
    with pytest.raises(InvalidConfig, match=says):
        make_policy("langmem", params)


def test_message_tokens_are_count_tokens_approximately() -> None:
    """A quarter of the characters, rounded up, plus 3 a message; calls count their name and arguments; a tool
    message counts one ToolMessage per result."""
    calls = [call("c1", "grep", '{"q": 1}'), call("c2", "ls", "{}")]
    c = chat(user("abcde", id="u"), asst("hi", calls, id="a"), tools({"c1": "x" * 9, "c2": "y"}))
    # "hi" + "grep" + '{"q": 1}' + "ls" + "{}": 18 characters
    assert [message_tokens(m) for m in c.messages[1:]] == [2 + 3, 5 + 3, (3 + 3) + (1 + 3)]


def test_below_the_threshold_nothing_happens() -> None:
    c = chat(*turns(4), user("And module 9?", id="next"))
    total = sum(message_tokens(m) for m in c.messages[1:])
    assert (
        lm(max_tokens=2_000, max_tokens_before_summary=total + 1).decide(state_of(LangMem(), c, MODEL), "auto") is None
    )


def test_the_first_prefix_at_the_threshold_whose_rest_fits_is_summarised() -> None:
    """The walk stops at the first message where the walked tokens reach ``max_tokens_before_summary`` and the rest
    is within ``max_tokens - max_summary_tokens - tokens(system)``; everything walked is summarised."""
    c = chat(*turns(4), user("And module 9?", id="next"))
    before = size(c, "u0", "a0")
    assert after(lm(max_tokens=2_000, max_tokens_before_summary=before), c) == [
        "SUMMARY",
        "u1",
        "a1",
        "u2",
        "a2",
        "u3",
        "a3",
        "next",
    ]
    # one token more: the walk takes u1 too, and the rest starts on its answer (LangMem counts messages, not turns)
    assert after(lm(max_tokens=2_000, max_tokens_before_summary=before + 1), c)[:2] == ["SUMMARY", "a1"]


def test_the_rest_must_fit_before_anything_is_summarised() -> None:
    """With a small ``max_tokens`` the threshold is reached early but the rest does not fit: the cut moves on until
    it does."""
    c = chat(*turns(4), user("And module 9?", id="next"))
    rest = size(c, "u3", "a3", "next")
    budget = rest + 100 + message_tokens(c.messages[0])  # max_tokens - max_summary_tokens - system = rest
    assert after(lm(max_tokens=budget, max_tokens_before_summary=10, max_summary_tokens=100), c)[:2] == [
        "SUMMARY",
        "u3",
    ]


def test_the_last_message_always_lets_the_rest_fit() -> None:
    """The walk runs to the newest message, where the rest is empty: past the threshold, something is always
    summarised, the newest message included if need be (here a user message over the whole budget)."""
    c = chat(*turns(2), user("x " * 2_000, id="big"))
    plan = lm(max_tokens=500, max_tokens_before_summary=20).decide(state_of(LangMem(), c, MODEL), "auto")
    assert plan is not None and plan.start == len(c.messages)


def test_the_view_after_a_summary() -> None:
    """``DEFAULT_FINAL_SUMMARY_PROMPT``: the system message, "Summary of the conversation so far: ...", the rest; the
    first summary is created, later ones extend it (``DEFAULT_EXISTING_SUMMARY_PROMPT``)."""
    c = chat(*turns(4), user("And module 9?", id="next"))
    policy = lm(max_tokens=2_000, max_tokens_before_summary=size(c, "u0", "a0"))
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    assert (
        plan is not None
        and plan.summary_request.wrapper == SUMMARY_WRAPPER
        and plan.summary_request.prompt == INITIAL_PROMPT
    )
    assert plan.summary_request.role == "user" and plan.summary_request.input_newest_tokens == 2_000
    earlier = View(start=3, summary=Summary(SUMMARY_WRAPPER.format(summary="s" * 40), through=3))
    plan = policy.decide(state_of(policy, c, MODEL, view=earlier), "auto")
    assert plan is not None and plan.summary_request.prompt == EXTEND_PROMPT
    assert plan.summary_request.input_newest_tokens == 2_000 - (-(-len(earlier.summary.text) // 4) + 3)  # type: ignore[union-attr]


def test_a_running_summary_counts_only_the_unsummarised() -> None:
    """``_preprocess_messages`` starts after ``last_summarized_message_id``: summarised messages are not counted
    again, nor is the summary itself."""
    c = chat(*turns(4), user("And module 9?", id="next"))
    earlier = View(start=5, summary=Summary("S" * 4_000, through=5))  # u0 a0 u1 a1 summarised
    policy = lm(max_tokens=2_000, max_tokens_before_summary=size(c, "u2", "a2"))
    assert after(policy, c, earlier) == ["SUMMARY", "u3", "a3", "next"]
    policy = lm(max_tokens=2_000, max_tokens_before_summary=size(c, "u2", "a2", "u3", "a3", "next") + 1)
    assert after(policy, c, earlier) == ["summary", "u2", "a2", "u3", "a3", "next"]


def test_an_ai_message_with_calls_takes_its_results_along() -> None:
    """ "If the last message is an AI message with tool calls, include subsequent corresponding tool messages"."""
    c = chat(user("Fix it.", id="u0"), asst("", [call("c1")], id="x1"), tool("c1", "r" * 400, id="t1"), *turns(2, 1))
    policy = lm(max_tokens=2_000, max_tokens_before_summary=size(c, "u0", "x1"))
    assert after(policy, c)[:2] == ["SUMMARY", "u1"]


def test_a_cut_among_a_batchs_results_moves_past_them() -> None:
    """Our difference: LangMem cuts after the ToolMessage where the threshold is reached, leaving the batch's other
    results without their call; here they go with it."""
    batch = [asst("", [call("b1"), call("b2"), call("b3")], id="x1")]
    batch += [tool("b1", "r" * 400, id="t1"), tool("b2", "r" * 400, id="t2"), tool("b3", "r" * 400, id="t3")]
    c = chat(user("Fix it.", id="u0"), *batch, *turns(2, 1))
    policy = lm(max_tokens=2_000, max_tokens_before_summary=size(c, "u0", "x1", "t1"))
    assert after(policy, c)[:2] == ["SUMMARY", "u1"]


def test_a_thinking_tool_loop_is_cut_inside() -> None:
    """LangMem keeps calls with results and knows nothing of thinking loops, so its cut may fall inside one: over,
    as here, that is accepted (its thinking may go); inside the live loop, without interleaved thinking, it is a
    request Anthropic rejects (a history reaching the threshold at once; no replay reaches it, see the docstring)."""
    loop = [asst("", [call("k1")], thinking="plan", id="k1"), tool("k1", "r" * 400, id="r1")]
    loop += [asst("", [call("k2")], id="k2"), tool("k2", "r" * 400, id="r2"), asst("done", id="done")]
    c = chat(user("Fix it.", id="u0"), *loop, *turns(2, 1))
    policy = lm(max_tokens=2_000, max_tokens_before_summary=size(c, "u0", "k1", "r1"))
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    assert plan is not None and c.messages[plan.start].id == "k2"
    assert thinking_rejection(policy, c, plan, MODEL) is None
    live = chat(user("Fix it.", id="u0"), *loop[:4])
    policy = lm(max_tokens=2_000, max_tokens_before_summary=size(live, "u0", "k1", "r1"))
    plan = policy.decide(state_of(policy, live, MODEL), "auto")
    assert plan is not None and live.messages[plan.start].id == "k2"
    assert thinking_rejection(policy, live, plan, MODEL) is not None


def test_a_long_live_turn_is_summarised_with_its_user_message() -> None:
    """Known deviation ``live-turn``: with the default threshold (``max_tokens``), everything but the newest
    messages is summarised; in a tool loop that takes the user's message."""
    steps: list[Draft] = []
    for k in range(30):
        steps += [asst("", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "r" * 400, id=f"t{k}")]
    c = chat(user("Fix the parser.", id="task"), *steps, asst("Done.", id="done"))
    res = Engine(lm(max_tokens=2_000), c, RunConfig(model=MODEL, tokenizer="chars4")).run()
    assert compaction_records(res)
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_a_summarised_change_leaves_its_revert_unresolved() -> None:
    """Known deviation ``revert-resolution``: LangMem has no reverts."""
    c = chat(user("Edit a.py.", change("ch1", "edit a.py"), id="u0"), asst(ANSWER, id="a0"), *turns(3, 1))
    c = conv(*c.messages, user("Undo the edit.", revert("ch1"), id="undo"), asst("Undone.", id="ok"))
    res = Engine(
        lm(max_tokens=2_000, max_tokens_before_summary=size(c, "u0", "a0")),
        c,
        RunConfig(model=MODEL, tokenizer="chars4"),
    ).run()
    assert "revert-resolution" in res.summary["violations_by_invariant"]


def test_a_pending_turn_is_not_summarised() -> None:
    """Our addition: nothing of an unresolved pending turn is summarised (the harness's contract)."""
    c = chat(*turns(1), user("Deploy it.", id="u9"), asst("May I deploy?", id="ask", pending=True), *turns(3, 3))
    policy = lm(max_tokens=2_000, max_tokens_before_summary=size(c, "u0", "a0", "u9", "ask", "u3"))
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    assert plan is not None and c.messages[plan.start].id == "u9"
