"""The cline-* policies (``policies/cline.py``): Cline's legacy truncation.

Each test paraphrases the ``cline/cline`` source it checks (``ContextManager.ts`` and ``context-window-utils.ts`` at
``6eeee7c4``; ``task/index.ts`` at ``864419d8`` for the callers). Decisions are driven on a state built with
:func:`tests.builders.state_of` (``context=`` sets the previous request's tokens); runs use the engine with the
``chars4`` tokenizer.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.base import Policy
from policies.cline import (
    FIRST_USER_REPLACEMENT,
    TRUNCATION_NOTICE,
    Cline,
    ClineConfig,
    ClineLegacy,
    ClineLegacyConfig,
    cline_messages,
    estimate,
    max_allowed_size,
    messages_to_remove,
)
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Injected, Messages, View, layout
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
LIMIT = 1_000


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are Cline."), user("Fix the parser.", id="task"), *drafts)


def shown(c: Conversation, view: View) -> list[str]:
    """Ids of the messages ``view`` sends after the system prompt; an injected message as its label."""
    out: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Injected):
            out.append(item.label)
        elif isinstance(item, Messages):
            out += [c.messages[i].id for i in range(max(item.a, 1), item.b)]
    return out


def legacy(limit: int | None = LIMIT) -> ClineLegacy:
    return ClineLegacy(ClineLegacyConfig(max_allowed_size=limit))


def decide(policy: Policy, c: Conversation, used: int, trigger: str = "auto", view: View | None = None):  # type: ignore[no-untyped-def,type-arg]
    state = state_of(policy, c, context=used, view=view)
    return state, policy.decide(state, trigger)  # type: ignore[arg-type]


NOTICE = "cline-truncation-notice"


# -- configuration --------------------------------------------------------------------------------------------------
def test_max_allowed_size_by_window() -> None:
    """``getContextWindowInfo``: 64K - 27,000, 128K - 30,000, 200K - 40,000, else max(window - 40,000, 0.8 window)."""
    assert max_allowed_size(64_000) == 37_000
    assert max_allowed_size(128_000) == 98_000
    assert max_allowed_size(200_000) == 160_000
    assert max_allowed_size(1_000_000) == 960_000
    assert max_allowed_size(100_000) == 80_000  # 0.8 * window beats window - 40,000
    assert max_allowed_size(8_000) == 6_400
    assert ClineLegacy().max_allowed(state_of(ClineLegacy(), chat())) == 160_000  # the default model: 200K


def test_bad_config_raises() -> None:
    with pytest.raises(InvalidConfig, match="max_allowed_size=0"):
        make_policy("cline-legacy", {"max_allowed_size": "0"})


def test_removal_counts_are_even() -> None:
    """``half``: ``floor(r / 4) * 2``; ``quarter``: ``floor(r * 3 / 4 / 2) * 2``."""
    assert [messages_to_remove(r, "half") for r in (3, 4, 7, 8, 11)] == [0, 2, 2, 4, 4]
    assert [messages_to_remove(r, "quarter") for r in (2, 3, 6, 11, 16)] == [0, 2, 4, 8, 12]


def test_cline_messages_join_user_and_tool_messages() -> None:
    """Cline's history alternates: the results of a call and what the user adds after them are one user message."""
    c = chat(*tool_steps(1), user("also this", id="u2"), asst("ok", id="a2"))
    groups = cline_messages(state_of(legacy(), c))
    assert [(g.a, g.b, g.role) for g in groups] == [
        (1, 2, "user"),
        (2, 3, "assistant"),
        (3, 5, "user"),
        (5, 6, "assistant"),
    ]


# -- the trigger ------------------------------------------------------------------------------------------------------
def test_trigger_is_the_previous_requests_tokens_at_the_limit() -> None:
    """``totalTokens >= maxAllowedSize``, the previous request's tokensIn + tokensOut + cache reads and writes."""
    c = chat(*tool_steps(6))
    assert decide(legacy(), c, LIMIT - 1)[1] is None
    assert decide(legacy(), c, LIMIT)[1] is not None
    assert decide(legacy(), c, LIMIT + 1)[1] is not None
    state = state_of(legacy(), c)  # no request yet: no previous request to read
    assert legacy().decide(state, "auto") is None


def test_no_manual_compaction() -> None:
    assert decide(legacy(), chat(*tool_steps(6)), 10 * LIMIT, "manual")[1] is None


# -- the truncation ---------------------------------------------------------------------------------------------------
def test_half_keeps_the_first_pair_and_replaces_the_reply_by_the_notice() -> None:
    """13 messages: remove ``floor(11 / 4) * 2 = 4`` from index 2 (t1 a2 t2 a3); the first message after the range,
    t3, loses its tool results (so the tail starts at a4); the first reply's text is the notice."""
    c = chat(*tool_steps(6))
    state, plan = decide(legacy(), c, LIMIT)
    assert plan is not None and plan.mode == "truncate"
    view = plan.view_from(state.view)
    assert shown(c, view) == ["task", NOTICE, "a4", "t4", "a5", "t5", "a6", "t6"]
    assert dict(plan.checkpoint)["deleted_range"] == "2,5"
    notice = next(x for x in view.injected if x.label == NOTICE)
    assert notice.text == TRUNCATION_NOTICE and notice.role == "assistant"
    assert notice.text.startswith("[NOTE] Some previous conversation history with the user has been removed")


def test_quarter_when_half_the_tokens_are_still_over() -> None:
    """``keep = totalTokens / 2 > maxAllowedSize ? "quarter" : "half"``: remove ``floor(11 * 3 / 8) * 2 = 8``."""
    c = chat(*tool_steps(6))
    state, plan = decide(legacy(), c, 2 * LIMIT)  # half of it is the limit: not over, so half
    assert plan is not None and dict(plan.checkpoint)["deleted_range"] == "2,5"
    state, plan = decide(legacy(), c, 2 * LIMIT + 2)
    assert plan is not None and dict(plan.checkpoint)["deleted_range"] == "2,9"
    assert shown(c, plan.view_from(state.view)) == ["task", NOTICE, "a6", "t6"]


def test_the_deleted_range_grows_from_its_end() -> None:
    """``startOfRest = currentDeletedRange[1] + 1``: the next truncation removes half of what is after the range."""
    c1 = chat(*tool_steps(6))
    state, plan = decide(legacy(), c1, LIMIT)
    assert plan is not None
    first = plan.view_from(state.view)
    c2 = chat(*tool_steps(8))  # 17 messages: from 6, remove floor(11 / 4) * 2 = 4 (6..9)
    state, plan = decide(legacy(), c2, LIMIT, view=first)
    assert plan is not None and dict(plan.checkpoint)["deleted_range"] == "2,9"
    assert shown(c2, plan.view_from(state.view)) == ["task", NOTICE, "a6", "t6", "a7", "t7", "a8", "t8"]


def test_the_range_ends_on_an_assistant_message() -> None:
    """``if (apiMessages[rangeEndIndex].role !== "assistant") rangeEndIndex -= 1``: two replies in a row shift the
    parity, so the range moves back one to end on an assistant message."""
    say = "words " * 100
    turns = [asst(say, id="a1"), user(say, id="u2"), asst(say, id="a2"), asst(say, id="a3"), user(say, id="u3")]
    turns += [asst(say, id="a4"), user(say, id="u4"), asst(say, id="a5")]
    c = chat(*turns)
    # task a1 u2 a2 a3 u3 a4 u4 a5: remaining 7, remove 2 (u2 a2), ending on a2: an assistant, no shift
    state, plan = decide(legacy(), c, LIMIT)
    assert plan is not None and dict(plan.checkpoint)["deleted_range"] == "2,3"
    view = plan.view_from(state.view)
    c2 = chat(*turns, user(say, id="u5"), asst(say, id="a6"))
    # from 4 (a3): remaining 7, remove 2 (a3 u3), ending on u3, a user message: moved back to end on a3
    state, plan = decide(legacy(), c2, LIMIT, view=view)
    assert plan is not None and dict(plan.checkpoint)["deleted_range"] == "2,4"
    assert shown(c2, plan.view_from(state.view))[:3] == ["task", NOTICE, "u3"]


def test_too_short_a_history_is_not_truncated() -> None:
    """Three messages after the first pair: ``floor(3 / 4) * 2 = 0`` removed (see Differences: no notice either)."""
    assert decide(legacy(), chat(asst("a", id="a1"), user("b"), asst("c"), user("d")), LIMIT)[1] is None


def test_overflow_truncates_a_quarter_and_replaces_the_task() -> None:
    """``handleContextWindowExceededError``: ``"quarter"`` whatever the count, and
    ``triggerApplyStandardContextTruncationNoticeChange`` also replaces the first user message's first text block
    with "[Continue assisting the user!]"; one automatic retry."""
    c = chat(*tool_steps(6))
    state, plan = decide(legacy(), c, 0, "overflow")
    assert legacy().retry_on_overflow == 1
    assert plan is not None and dict(plan.checkpoint)["deleted_range"] == "2,9"
    view = plan.view_from(state.view)
    assert shown(c, view) == ["cline-first-user-replacement", NOTICE, "a6", "t6"]
    assert view.injected[0].text == FIRST_USER_REPLACEMENT and view.injected[0].role == "user"
    # and it stays replaced at the next truncation
    c2 = chat(*tool_steps(10))
    state, plan = decide(legacy(), c2, LIMIT, view=view)
    assert plan is not None and shown(c2, plan.view_from(state.view))[0] == "cline-first-user-replacement"


def test_nothing_of_a_pending_turn_leaves_the_view() -> None:
    """Difference (the harness's contract): the tail never starts past an unresolved pending turn."""
    ask = [user("Deploy?", id="ask"), asst("Deploying needs approval.", [call("d1")], id="ad", pending=True)]
    c = chat(*tool_steps(2), *ask, tool("d1", "waiting", id="td"), *tool_steps(3, first=5))
    state, plan = decide(legacy(), c, LIMIT)
    assert plan is not None
    assert shown(c, plan.view_from(state.view))[2:4] == ["ask", "ad"]


# -- in a run, and the known deviations -------------------------------------------------------------------------------
def test_in_a_run_the_view_stays_under_the_window() -> None:
    """An 8K window: truncate at 6,400 (0.8 of it); each truncation halves what follows the first pair."""
    res = Engine(ClineLegacy(), chat(*tool_steps(80, size=600), asst("done")), C4).run()
    records = res.summary["compactions"]
    assert res.summary["compaction_count"] >= 2 and res.summary["finish_reason"] == "completed"
    assert all(r["mode"] == "truncate" and r["tokens_before"] >= 6_400 > r["tokens_after"] for r in records)
    assert not res.summary["violations_by_invariant"]


def test_a_long_loop_after_a_user_message_deletes_it() -> None:
    """Known deviation ``live-turn``: the range counts messages, so a user message early in a long tool loop goes."""
    c = chat(*tool_steps(1), user("Use the v2 API.", id="u2"), *tool_steps(8, first=2))
    state, plan = decide(legacy(), c, LIMIT)
    assert plan is not None and "u2" not in shown(c, plan.view_from(state.view))


def test_a_range_can_end_inside_a_live_thinking_loop() -> None:
    """Known deviation ``atomic-units``: the tail may start at a later reply of the live tool loop, after the one
    whose thinking opened it, behind Cline's truncation notice (an assistant message): the two merge into one that
    starts with the notice's text, which Anthropic rejects with thinking on, interleaved or not."""
    for interleaved in (False, True):
        c = chat(*thinking_loop(6, interleaved=interleaved))
        _, plan = decide(legacy(), c, LIMIT)
        assert plan is not None and plan.start > c.index()["a1"]
        assert "merged message starts with text" in (thinking_rejection(legacy(), c, plan) or "")


def test_a_kept_revert_can_lose_its_change() -> None:
    """Known deviation ``revert-resolution``: Cline knows nothing of reverts."""
    c = chat(
        asst("edit", [call("c1")], parts=[change("ch1")], id="a1"),
        tool("c1", "ok", id="t1"),
        *tool_steps(4, first=2),
        asst("undo", [call("c9")], parts=[revert("ch1")], id="a9"),
        tool("c9", "ok", id="t9"),
    )
    state, plan = decide(legacy(), c, LIMIT)
    assert plan is not None
    view = plan.view_from(state.view)
    assert "a9" in shown(c, view) and "a1" not in shown(c, view)


def test_default_limit_is_the_windows() -> None:
    """A 128K model: truncate at 98,000."""
    c = chat(*tool_steps(6))
    model = ModelConfig(context_window=128_000)
    policy = ClineLegacy()
    assert policy.decide(state_of(policy, c, model, context=97_999), "auto") is None
    assert policy.decide(state_of(policy, c, model, context=98_000), "auto") is not None


# -- the Cline SDK compaction (agentic) -------------------------------------------------------------------------------
def sdk(**cfg: object) -> Cline:
    return Cline(ClineConfig(**cfg))  # type: ignore[arg-type]


def sdk_plan(policy: Cline, c: Conversation, trigger: str = "auto", view: View | None = None):  # type: ignore[no-untyped-def]
    state = state_of(policy, c, view=view)
    return state, policy.decide(state, trigger)  # type: ignore[arg-type]


def sdk_summarises_the_task() -> Conversation:
    """One task, then a tool loop long enough to reach the trigger: no typed user message after the first, so the
    cut follows the token walk alone and the task is summarised (``findCutIndex``'s comment says as much)."""
    return chat(*tool_steps(70, size=200), asst("done"))


def test_sdk_defaults() -> None:
    """``compaction-shared.ts``: trigger 0.9 of the usable input (0.9 of the window without a reported input limit),
    a 20,000-token tail, a 4,096-token summary cap."""
    p = Cline()
    assert (p.config.preserve_recent_tokens, p.config.summary_max_tokens) == (20_000, 4_096)
    state = state_of(p, chat())
    assert p.max_input(state) == 180_000 and p.trigger_tokens(state) == 162_000
    with pytest.raises(InvalidConfig, match="preserve_recent_tokens"):
        make_policy("cline", {"preserve_recent_tokens": "0"})


def test_sdk_estimate_is_chars_over_three_with_json_framing() -> None:
    """``estimateTokens(JSON.stringify(...).length)``: a third of the characters, rounded up, at least 1."""
    assert estimate(0, 0) == 1
    assert estimate(300) == 124  # (300 + 72) / 3
    c = chat(*tool_steps(2))
    state = state_of(Cline(), c)
    assert Cline.request_tokens(state) == estimate(state.chars_in_view(), len(c.messages))


def test_sdk_trigger_just_below_and_at() -> None:
    """``shouldCompact = requestInputTokens >= requestTriggerTokens``."""
    c = chat(*tool_steps(30))
    r = Cline.request_tokens(state_of(Cline(), c))
    below = sdk(max_input_tokens=int(r / 0.9) + 2, preserve_recent_tokens=500)
    at = sdk(max_input_tokens=int(r / 0.9), preserve_recent_tokens=500)
    assert below.trigger_tokens(state_of(below, c)) > r and sdk_plan(below, c)[1] is None
    assert at.trigger_tokens(state_of(at, c)) <= r and sdk_plan(at, c)[1] is not None


def later_prompt(before: int = 10, after: int = 2) -> Conversation:
    """The task, ``before`` tool steps, a second prompt ``u2``, ``after`` more steps."""
    return chat(*tool_steps(before), user("Now the tests.", id="u2"), *tool_steps(after, first=before + 1))


def test_sdk_summary_placement_and_prompt() -> None:
    """The result is ``[user "Context summary:\\n\\n...", ...messages[cut:]]``: nothing before the cut is kept (the
    first user message neither); the summariser's output is capped and tool results clipped at 2,000 characters."""
    c = later_prompt()
    state, plan = sdk_plan(sdk(max_input_tokens=1_000, preserve_recent_tokens=500), c)
    assert plan is not None and plan.summarize and plan.spans == () and plan.pinned == ()
    assert c.messages[plan.start].id == "a9"  # the 500-token tail reaches back past u2 to a step's reply
    assert plan.summary_request.role == "user" and plan.summary_request.wrapper == "Context summary:\n\n{summary}"
    assert plan.summary_request.max_tokens == 4_096 and plan.summary_request.clip_chars == 2_000
    assert "## Goal" in plan.summary_request.prompt and "## Next" in plan.summary_request.prompt
    assert plan.summary_request.prompt.startswith("Summarise this coding session")


def test_sdk_cut_keeps_the_latest_typed_prompts_turn_whole() -> None:
    """``findCutIndex``: the cut stays at or before the latest typed user message, so that whole turn survives
    verbatim, however long; a longer tail walks further back, to an assistant message or a typed user message,
    never a tool-result message; a walk that reaches the first message does nothing."""
    c = later_prompt(10, 10)
    u2 = next(i for i, m in enumerate(c.messages) if m.id == "u2")
    state = state_of(Cline(), c)
    assert Cline().cut_index(state, 300) == u2
    turn = sum(estimate(m.chars) for m in c.messages[u2:])
    cut = Cline().cut_index(state, turn + 300)
    assert cut is not None and cut < u2 and c.messages[cut].role == "assistant"
    tail = sum(estimate(m.chars) for m in c.messages[cut:])
    assert tail >= turn + 300 > tail - estimate(c.messages[cut].chars) - estimate(c.messages[cut + 1].chars)
    assert Cline().cut_index(state, 10**6) is None


def test_sdk_target_after_five_pairs_is_half_the_input() -> None:
    """``resolveAutoRequestTargetTokens``: 5 user/assistant pairs and an output cap below the input limit: half the
    usable input; fewer: 0.7 of the trigger (both less the system prompt's share)."""
    p = Cline()
    few = state_of(p, chat(*tool_steps(2)))
    many = state_of(p, chat(*tool_steps(6)))
    assert Cline.pairs(few) == 2 and Cline.pairs(many) == 6
    assert p.message_target(few, False) == int(162_000 * 0.7) - p.overhead(few)
    assert p.message_target(many, False) == 90_000 - p.overhead(many)


def test_sdk_no_overflow_retry_and_manual_compacts_below_the_trigger() -> None:
    """Difference: the overflow recovery's basic strategy is not modelled. ``/compact`` runs whatever the count, with
    a target of half the current message tokens."""
    c = later_prompt()
    assert Cline().retry_on_overflow == 0 and sdk_plan(Cline(), c, "overflow")[1] is None
    assert sdk_plan(Cline(), c)[1] is None
    state, plan = sdk_plan(Cline(), c, "manual")
    assert plan is not None and plan.summarize


def test_sdk_in_a_run_summaries_are_anchored() -> None:
    """Each compaction summarises the new messages with the previous summary passed along ("Previous summary:"):
    the engine folds the previous summary into the next one."""
    turns = user_turns(12, size=300)
    res = Engine(Cline(), chat(*turns, asst("done")), C4).run()
    records = [r for r in res.summary["compactions"] if r["mode"] == "summarize"]
    assert len(records) >= 2
    assert all(r["tokens_after"] < r["tokens_before"] for r in records)


def test_sdk_summarises_the_task_in_one_long_loop() -> None:
    """Known deviation ``live-turn``: without a typed prompt after the first message, the cut passes the task."""
    res = Engine(make_policy("cline", {"preserve_recent_tokens": "800"}), sdk_summarises_the_task(), C4).run()
    assert "live-turn" in res.summary["violations_by_invariant"]
