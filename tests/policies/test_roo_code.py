"""The roo-code policy (``policies/roo_code.py``): Roo Code's condensing and sliding-window fallback.

Each test paraphrases the ``RooCodeInc/Roo-Code`` source it checks (at ``9d65772d``: ``context-management/index.ts``,
``condense/index.ts``, ``task/Task.ts``). Decisions are driven on a state built with :func:`tests.builders.state_of`
(``context=`` sets the previous request's tokens, with nothing appended since); runs use the engine with ``chars4``.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.roo_code import CONDENSE_PROMPT, RooCode, RooCodeConfig
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.view import Injected, Messages, Summary, View, layout
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
from tests.builders import (
    Draft,
    asst,
    call,
    change,
    conv,
    revert,
    state_of,
    sys,
    thinking_loop,
    thinking_rejection,
    tool,
    tool_steps,
    user,
    user_turns,
)

C4 = RunConfig(model=small_model(), tokenizer="chars4")
WINDOW = 200_000
ALLOWED = WINDOW * 0.9 - 8_192  # the default model's output reserve: 171,808


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are Roo."), user("Fix the parser.", id="task"), *drafts)


def shown(c: Conversation, view: View) -> list[str]:
    out: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Injected):
            out.append(item.text)
        elif isinstance(item, Summary):
            out.append(f"SUMMARY({item.role})")
        elif isinstance(item, Messages):
            out += [c.messages[i].id for i in range(max(item.a, 1), item.b)]
    return out


def roo(**cfg: object) -> RooCode:
    return RooCode(RooCodeConfig(**cfg))  # type: ignore[arg-type]


def plan_for(policy: RooCode, c: Conversation, used: int, trigger: str = "auto", view: View | None = None):  # type: ignore[no-untyped-def]
    state = state_of(policy, c, context=used, view=view)
    return state, policy.decide(state, trigger)  # type: ignore[arg-type]


def after(policy: RooCode, c: Conversation, used: int, trigger: str = "auto", view: View | None = None) -> list[str]:
    state, plan = plan_for(policy, c, used, trigger, view)
    assert plan is not None
    v = plan.view_from(state.view)
    return shown(c, v.with_(summary=Summary("s", role=plan.summary_request.role)) if plan.summarize else v)


# -- configuration and thresholds -----------------------------------------------------------------------------------
def test_defaults() -> None:
    """``ClineProvider.ts``: ``autoCondenseContext ?? true``, ``autoCondenseContextPercent ?? 100``."""
    cfg = RooCode().config
    assert (cfg.auto_condense_context, cfg.auto_condense_context_percent) == (True, 100)
    assert RooCode.allowed_tokens(state_of(RooCode(), chat())) == ALLOWED
    with pytest.raises(InvalidConfig, match="between 5 and 100"):
        make_policy("roo-code", {"auto_condense_context_percent": "4"})


def test_prev_context_tokens_adds_the_last_message() -> None:
    """``prevContextTokens = totalTokens + lastMessageTokens``: the last request's tokens plus what was added since."""
    c = chat(*tool_steps(3))
    state = state_of(RooCode(), c, context=1_000)
    assert RooCode.prev_context_tokens(state) == 1_000
    state.messages_at_last_request -= 2  # the last reply and its result came after that request
    assert (
        RooCode.prev_context_tokens(state)
        == 1_000
        + state.view_size(View(start=len(c.messages) - 1))[0]
        - (state.view_size(View(start=len(c.messages)))[0])
    )
    assert RooCode.prev_context_tokens(state_of(RooCode(), c)) is None  # no request yet


def test_condense_at_the_percentage() -> None:
    """``contextPercent >= effectiveThreshold``: just below, nothing; at it, condense."""
    c = chat(*tool_steps(6))
    policy = roo(auto_condense_context_percent=50)
    assert plan_for(policy, c, WINDOW // 2 - 1)[1] is None
    state, plan = plan_for(policy, c, WINDOW // 2)
    assert plan is not None and plan.summarize
    assert plan_for(RooCode(), c, int(ALLOWED))[1] is None  # the default 100 %: only past allowedTokens
    assert plan_for(RooCode(), c, int(ALLOWED) + 1)[1] is not None


# -- condensing -----------------------------------------------------------------------------------------------------
def test_keeps_the_first_message_and_the_last_three() -> None:
    """The first message and the last 3 (``N_MESSAGES_TO_KEEP``) stay; the summary, an assistant message, goes before
    them; the 6-section prompt. The last 3 here are a6, t6 and done."""
    c = chat(*tool_steps(6), asst("done", id="done"))
    state, plan = plan_for(roo(auto_condense_context_percent=5), c, WINDOW // 10)
    assert (
        plan is not None and plan.summary_request.role == "assistant" and plan.summary_request.prompt == CONDENSE_PROMPT
    )
    assert "Pending Tasks and Next Steps" in CONDENSE_PROMPT
    v = plan.view_from(state.view).with_(summary=Summary("s", role="assistant"))
    assert shown(c, v) == ["task", "SUMMARY(assistant)", "a6", "t6", "done"]


def test_a_kept_result_keeps_its_call() -> None:
    """``getKeepMessagesWithToolBlocks``: the first kept message holds results whose ``tool_use`` is in the condensed
    region: those blocks go with the summary (here: the assistant message that holds them stays)."""
    c = chat(*tool_steps(6))  # the last 3: t5, a6, t6
    assert after(roo(auto_condense_context_percent=5), c, WINDOW // 10) == [
        "task",
        "SUMMARY(assistant)",
        "a5",
        "t5",
        "a6",
        "t6",
    ]


def test_condensed_recently_refuses() -> None:
    """A summary among the last 3 ("condensed recently"): no condense. The fallback then counts 4 visible messages
    (the first, the summary, a6, t6) and hides ``floor(3 * 0.5) = 1``, rounded down to 0: nothing either."""
    c = chat(*tool_steps(6))
    a6 = next(i for i, m in enumerate(c.messages) if m.id == "a6")
    view = View(start=a6, spans=((1, 2),), summary=Summary("earlier", role="assistant"))
    policy = roo(auto_condense_context_percent=5)
    assert plan_for(policy, c, WINDOW // 10, view=view)[1] is None
    assert plan_for(policy, c, int(ALLOWED) + 1, view=view)[1] is None
    # two steps more: the last 3 (t7 a8 t8) exclude the summary; a7 stays for t7's call
    c2 = chat(*tool_steps(8, size=1_000))
    state, plan = plan_for(policy, c2, WINDOW // 10, view=view)
    assert plan is not None and plan.summarize and c2.messages[plan.start].id == "a7"


def test_nothing_to_condense_in_a_short_conversation() -> None:
    """``messages.length <= N_MESSAGES_TO_KEEP + 1``: "not enough messages"."""
    c = chat(asst("a", id="a1"), user("b", id="u2"), asst("c", id="a2"))
    assert plan_for(roo(auto_condense_context_percent=5), c, WINDOW // 10)[1] is None


def test_manual_condense_ignores_the_threshold() -> None:
    c = chat(*tool_steps(6), asst("done", id="done"))
    state, plan = plan_for(RooCode(), c, 10, "manual")
    assert plan is not None and plan.summarize


# -- the sliding-window fallback -------------------------------------------------------------------------------------
def test_truncation_hides_half_the_visible_messages_after_the_first() -> None:
    """``truncateConversation(messages, 0.5)``: 13 visible, ``floor(12 * 0.5) = 6`` hidden after the first, and the
    marker "[Sliding window truncation: 6 messages hidden to reduce context]" in their place."""
    c = chat(*tool_steps(6))
    out = after(roo(auto_condense_context=False), c, int(ALLOWED) + 1)
    assert out == [
        "task",
        "[Sliding window truncation: 6 messages hidden to reduce context]",
        "a4",
        "t4",
        "a5",
        "t5",
    ] + [
        "a6",
        "t6",
    ]
    assert plan_for(roo(auto_condense_context=False), c, int(ALLOWED))[1] is None  # not over allowedTokens


def test_the_count_is_rounded_down_to_even() -> None:
    """``rawMessagesToRemove - (rawMessagesToRemove % 2)``: 12 visible, 11 after the first, 5 rounded down to 4."""
    c = chat(*tool_steps(5), asst("done", id="done"))
    out = after(roo(auto_condense_context=False), c, int(ALLOWED) + 1)
    assert out[:3] == ["task", "[Sliding window truncation: 4 messages hidden to reduce context]", "a3"]


def test_overflow_condenses_at_75_percent_three_times() -> None:
    """``handleContextWindowExceededError``: ``manageContext`` with the threshold at 75 %, up to 3 retries."""
    c = chat(*tool_steps(6), asst("done", id="done"))
    assert RooCode().retry_on_overflow == 3
    assert plan_for(RooCode(), c, int(WINDOW * 0.75) - 1, "overflow")[1] is None
    state, plan = plan_for(RooCode(), c, int(WINDOW * 0.75), "overflow")
    assert plan is not None and plan.summarize


# -- in a run, and the known deviations -------------------------------------------------------------------------------
def test_in_a_run() -> None:
    turns = user_turns(12, size=600)
    res = Engine(RooCode(), chat(*turns, asst("done")), C4).run()
    records = res.summary["compactions"]
    assert res.summary["compaction_count"] >= 2 and res.summary["finish_reason"] == "completed"
    assert all(r["tokens_after"] < r["tokens_before"] for r in records)


def long_loop_loses_its_prompt() -> Conversation:
    """A user message, then a tool loop of more than 3 messages: the last 3 kept leave the prompt to the summary."""
    return chat(*tool_steps(2), user("Use the v2 API.", id="u2"), *tool_steps(60, first=3, size=600))


def test_a_long_loop_summarises_its_prompt() -> None:
    """Known deviation ``live-turn``: the kept 3 count messages."""
    res = Engine(RooCode(), long_loop_loses_its_prompt(), C4).run()
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_the_tail_can_start_inside_a_live_thinking_loop() -> None:
    """Known deviation ``atomic-units``: the kept tail continues the live loop after the reply whose thinking opened
    it, behind the summary (an assistant message: the two merge, so the request's final turn starts with the
    summary's text), which Anthropic rejects."""
    c = chat(*thinking_loop(6))
    _, plan = plan_for(roo(auto_condense_context_percent=5), c, WINDOW // 10)
    assert plan is not None and plan.start > c.index()["a1"]
    assert thinking_rejection(roo(auto_condense_context_percent=5), c, plan) is not None


def test_a_kept_revert_can_lose_its_change() -> None:
    """Known deviation ``revert-resolution``: Roo knows nothing of reverts."""
    c = chat(
        asst("edit", [call("c1")], parts=[change("ch1")], id="a1"),
        tool("c1", "ok", id="t1"),
        *tool_steps(4, first=2),
        asst("undo", [call("c9")], parts=[revert("ch1")], id="a9"),
        tool("c9", "ok", id="t9"),
    )
    out = after(roo(auto_condense_context_percent=5), c, WINDOW // 10)
    assert "a9" in out and "a1" not in out


def test_nothing_of_a_pending_turn_is_condensed() -> None:
    """Difference (the harness's contract): the cut never passes the start of an unresolved pending turn."""
    ask = [user("Deploy?", id="ask"), asst("Needs approval.", [call("d1")], id="ad", pending=True)]
    c = chat(*tool_steps(3), *ask, tool("d1", "waiting", id="td"), *tool_steps(3, first=5))
    out = after(roo(auto_condense_context_percent=5), c, WINDOW // 10)
    assert out[:4] == ["task", "SUMMARY(assistant)", "ask", "ad"]
