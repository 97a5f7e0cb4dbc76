"""The OpenHands condensers (``policies/openhands.py``): what each keeps, masks, forgets and summarises, and when.

Hand-built conversations count OpenHands events: the system prompt, a user message and a text-only assistant
message are one event each, an assistant message with k calls is k events, a tool message with k results is k
events. ``pair(k)`` below is one call and its result: two events.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies import make_policy
from policies.base import Plan
from policies.baselines import NoCompaction
from policies.openhands import (
    BROWSER_OMITTED,
    DEFAULT_AGENT_PRESET,
    MASKED,
    SDK_TRUNCATE_NOTICE,
    V0_TRUNCATED,
    EventView,
    OpenHandsSummarizing,
    events_in,
    loop_cuts,
)
from policies.openhands_v0 import (
    MASK_RULE,
    OpenHandsBrowserOutput,
    OpenHandsDefault,
    OpenHandsMasking,
    OpenHandsWindow,
    masking_bound,
)
from sim.core.conversation import Conversation, Part
from sim.core.errors import InvalidConfig
from sim.core.log import CompactionCreated
from sim.core.state import RunState
from sim.core.view import Injected
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import conversations, small_model, views
from tests.builders import (
    Draft,
    asst,
    call,
    command,
    compaction_records,
    conv,
    run_capture,
    state_of,
    sys,
    text_of,
    tools,
    user,
)
from tests.builders import tool as tool_msg

C4 = RunConfig(tokenizer="chars4")


def pair(k: int, result: str = "ok", name: str = "grep") -> tuple[Draft, Draft]:
    """One call and its result (two events)."""
    return asst(calls=[call(f"c{k}", name)]), tool_msg(f"c{k}", result, name=name)


def pairs(first: int, count: int, result: str = "ok", name: str = "grep") -> list[Draft]:
    return [d for k in range(first, first + count) for d in pair(k, result, name)]


def decide(policy: object, c: Conversation, trigger: str = "auto", **kw: object) -> tuple[RunState, Plan | None]:
    st = state_of(policy, c, **kw)  # type: ignore[arg-type]
    return st, policy.decide(st, trigger)  # type: ignore[attr-defined]


# -- events -----------------------------------------------------------------------------------------------
def test_events_per_message_follow_openhands_event_model() -> None:
    c = conv(
        sys("s"),
        user("task"),
        asst("text only"),
        asst("thought", calls=["a", "b", "c"]),
        tools({"a": "1", "b": "2", "c": "3"}),
        command("compact"),
    )
    assert [events_in(m) for m in c.messages] == [1, 1, 1, 3, 3, 0]
    st = state_of(OpenHandsSummarizing(), c)
    ev = EventView(st)
    assert ev.total == 9
    # No cut inside the batch: between the calls and their results.
    assert [x.cut for x in ev.items] == [True, True, True, True, False, True]


# -- V1 SDK LLMSummarizingCondenser ------------------------------------------------------------------------------
def summarizing(**params: str) -> OpenHandsSummarizing:
    return make_policy("openhands-summarizing", params)  # type: ignore[return-value]


def test_sdk_defaults_are_the_condensers_and_the_default_agent_preset_is_80_4() -> None:
    cfg = OpenHandsSummarizing().config
    assert (cfg.max_size, cfg.keep_first, cfg.max_tokens, cfg.minimum_progress) == (240, 2, None, 0.1)
    preset = summarizing(**DEFAULT_AGENT_PRESET).config
    assert (preset.max_size, preset.keep_first) == (80, 4)


def test_sdk_validation_keeps_room_for_a_tail() -> None:
    with pytest.raises(InvalidConfig, match="keep_first=4 must be less than max_size // 2 - 1"):
        summarizing(max_size="10", keep_first="4")
    with pytest.raises(InvalidConfig, match="minimum_progress"):
        summarizing(minimum_progress="1.5")


def test_events_over_max_size_forget_the_middle_and_place_the_summary_after_the_head() -> None:
    """12 events > max_size 10: keep the first 2 (system, task), a tail of 10//2 - 2 - 1 = 2 events."""
    c = conv(sys("s"), user("task"), *pairs(1, 5, "x" * 400))
    st, plan = decide(summarizing(max_size="10"), c)
    assert plan is not None and plan.summarize
    assert (plan.start, plan.pinned, plan.summary_slot, plan.summary_request.role) == (10, (1,), None, "user")


def test_events_at_max_size_do_not_condense() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 4, "x" * 400))  # 10 events: not more than 10
    assert decide(summarizing(max_size="10"), c)[1] is None


def test_summary_is_a_plain_user_message_right_after_the_kept_head() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 5, "x" * 400), asst("done"))
    result, captured, _ = run_capture(summarizing(max_size="10"), c, C4)
    (rec,) = compaction_records(result)
    assert rec.view.summary is not None and rec.view.summary.role == "user"
    after = captured[-1].rendered  # the request for "done"
    assert [m["role"] for m in after[:4]] == ["system", "user", "user", "assistant"]  # task, summary, kept pair
    assert text_of(after[1]["content"]) == "task"
    assert text_of(after[2]["content"]) == rec.view.summary.text  # no wrapper: CondensationSummaryEvent's text


def test_a_second_condensation_forgets_the_previous_summary_and_merges_it() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 9, "x" * 400), asst("done"))
    result, _, _ = run_capture(summarizing(max_size="10"), c, C4)
    recs = compaction_records(result)
    assert len(recs) >= 2
    first, second = recs[0].view, recs[1].view
    assert first.spans == second.spans == ((1, 2),)  # the head is kept every time
    assert second.summary is not None and first.summary is not None
    assert second.summary.compaction_id != first.summary.compaction_id  # one summary, replaced
    assert second.start > first.start


def test_an_open_thinking_loop_is_forgotten_to_the_end_as_the_sdk_forgets_it() -> None:
    """The whole tail after the head is one thinking tool loop still open: the SDK forgets it to the end of the view
    (ToolLoopAtomicity allows no cut inside it); the summary then ends the request, and the next reply opens a turn
    afresh, which Anthropic accepts."""
    loop = [asst(calls=["t0"], thinking="plan")]
    loop.append(tool_msg("t0", "ok"))
    for k in range(1, 6):
        loop += [asst(calls=[f"t{k}"]), tool_msg(f"t{k}", "ok")]
    c = conv(sys("s"), user("task"), *loop)
    plan = decide(summarizing(max_size="10"), c)[1]
    assert plan is not None and plan.start == len(c.messages) and plan.summarize


def test_no_cut_inside_a_thinking_tool_loop() -> None:
    """ToolLoopAtomicity: the steps after a reply that opened a loop with thinking are no manipulation indices; the
    steps of a loop opened without thinking are."""
    from policies.openhands import loop_cuts

    thinking = [asst(calls=["t0"], thinking="plan"), tool_msg("t0", "ok"), asst(calls=["t1"]), tool_msg("t1", "ok")]
    plain = [asst(calls=["p0"]), tool_msg("p0", "ok"), asst(calls=["p1"]), tool_msg("p1", "ok")]
    c = conv(sys("s"), user("task"), *thinking, user("more"), *plain)
    cuts = loop_cuts(state_of(summarizing(), c), 0, len(c.messages))
    assert cuts == [True, True, True, False, False, False, True, True, False, True, False]
    assert loop_cuts(state_of(summarizing(), c), 4, 6) == [False, False]  # the loop's state found by walking back


def test_hard_trigger_without_a_condensation_resets_the_context() -> None:
    """A request on a view too short for a tail (8 events with the default agent's keep_first 4: the suffix
    ``8//2 - 4 - 1`` is negative, so no forgetting end exists): the hard context reset summarises every event
    after the system prompt and keeps nothing else."""
    c = conv(sys("s"), user("task"), *pairs(1, 3, "x" * 400))
    policy = summarizing(**DEFAULT_AGENT_PRESET)
    st, plan = decide(policy, c, trigger="manual")
    assert plan is not None and plan.mode == "hard-reset" and plan.summarize
    # Everything after the system prompt is summarised; the task, also the last user message, stays (ours).
    assert (plan.start, plan.pinned, plan.spans) == (len(st), (1,), ())
    assert decide(policy, c, trigger="auto")[1] is None  # without the request: nothing


def test_request_keeps_half_the_view() -> None:
    """A request keeps ``len(view)//2 - keep_first - 1`` events: 22 events -> 8."""
    c = conv(sys("s"), user("task"), *pairs(1, 10, "x" * 200))
    st, plan = decide(summarizing(), c, trigger="overflow")
    assert plan is not None
    ev = EventView(st)
    assert ev.total == 22
    kept = ev.total - ev.offsets[[x.index for x in ev.items].index(plan.start)]
    assert kept == 22 // 2 - 2 - 1  # 8: the forgetting end (event 14) is a call, a cut point already


def test_tokens_over_the_limit_condense_to_half_the_limit() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 10, "y" * 800))
    policy = summarizing(max_tokens="1500")
    st, plan = decide(policy, c)
    assert st.view_size()[0] > 1500 and plan is not None
    after = plan.view_from(st.view)
    # The tail left is what fits in half the limit (the summary comes on top).
    assert st.view_size(after)[0] <= 1500 // 2
    one_more = Plan(start=plan.start - 2, pinned=plan.pinned).view_from(st.view)
    assert st.view_size(one_more)[0] > 1500 // 2


def test_tokens_under_the_limit_and_events_under_max_size_do_nothing() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 3, "y" * 80))
    policy = summarizing(max_tokens="100000")
    st, plan = decide(policy, c)
    assert plan is None and not policy.over_trigger(st)


def test_minimum_progress_refuses_a_tiny_condensation() -> None:
    """A request with keep_first so large that only 1 of 14 events (< 10%) would go."""
    c = conv(sys("s"), user("task"), *pairs(1, 6))
    policy = summarizing(max_size="40", keep_first="11", minimum_progress="0.5")
    st, _ = decide(policy, c)
    assert policy.condensation(st, EventView(st), {"events"}) is None


def test_the_last_user_message_is_kept_where_the_sdk_would_forget_it() -> None:
    """Events trigger with a live turn longer than the kept tail: the SDK summarises the last user message with
    the span; here it stays, pinned after the head and before the summary, and the live-turn invariant holds."""
    c = conv(sys("s"), user("task"), user("now fix it"), *pairs(1, 8, "x" * 300), asst("done"))
    st, plan = decide(summarizing(max_size="10"), c)
    assert plan is not None and plan.pinned == (1, 2) and plan.start == 19  # 20 events, a tail of 1 (rounded up)
    result, captured, _ = run_capture(summarizing(max_size="10"), c, C4)
    assert not result.violations and "live-turn" not in OpenHandsSummarizing.known_deviations
    roles = [(m["role"], text_of(m["content"])) for m in captured[-1].rendered[:4]]
    assert roles[1:3] == [("user", "task"), ("user", "now fix it")]


def test_sdk_bounds_tool_text_at_50000_characters_with_the_notice() -> None:
    policy = OpenHandsSummarizing()
    big = Part("tool_result", "a" * 30_000 + "b" * 40_000, call_id="c", name="grep")
    out = policy.bound_tool_result(big)
    assert len(out.text) == 50_000 and SDK_TRUNCATE_NOTICE in out.text
    room = 50_000 - len(SDK_TRUNCATE_NOTICE)
    assert out.text.startswith("a" * (room - room // 2)) and out.text.endswith("b" * (room // 2))
    terminal = policy.bound_tool_result(Part("tool_result", "z" * 40_000, call_id="c", name="terminal"))
    assert len(terminal.text) == 30_000
    small = Part("tool_result", "fine", call_id="c", name="grep")
    assert policy.bound_tool_result(small) is small


# -- V0 ObservationMaskingCondenser ----------------------------------------------------------------------------
def test_masking_masks_observations_outside_the_attention_window() -> None:
    """10 events, window 3: observations at positions below 7 read <MASKED>; calls stay."""
    c = conv(sys("s"), user("task"), *pairs(1, 4, "result text"))
    policy = make_policy("openhands-masking", {"attention_window": "3"})
    st, plan = decide(policy, c)
    assert plan is not None
    after = plan.view_from(st.view)
    _, captured, _ = run_capture(policy, conv(*c.messages, asst("done")), C4)
    contents = [text_of(m["content"]) for m in captured[-1].rendered if m["role"] == "user" and m is not None]
    results = [t for t in contents if t in (MASKED, "result text")]
    assert results == [MASKED, MASKED, "result text", "result text"]
    assert after.start == 0 and after.rules_at(6) and not after.rules_at(7)


def test_masking_defaults_and_no_request_handling() -> None:
    assert OpenHandsMasking().config.attention_window == 100
    c = conv(sys("s"), user("task"), *pairs(1, 4, "result text"))
    assert decide(OpenHandsMasking(), c)[1] is None  # 10 events inside a window of 100
    assert decide(make_policy("openhands-masking", {"attention_window": "3"}), c, "overflow")[1] is None


def test_masking_skips_results_shorter_than_the_placeholder() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 4, "ok"))
    assert decide(make_policy("openhands-masking", {"attention_window": "3"}), c)[1] is None


def test_v0_policies_middle_truncate_observations_at_30000_characters() -> None:
    out = OpenHandsMasking().bound_tool_result(Part("tool_result", "h" * 20_000 + "t" * 20_000, call_id="c"))
    assert out.text == "h" * 15_000 + V0_TRUNCATED + "t" * 15_000


# -- V0 BrowserOutputCondenser ----------------------------------------------------------------------------------
def test_browser_output_omits_all_but_the_newest_browser_observation() -> None:
    page = "<html>" + "p" * 300
    c = conv(
        sys("s"),
        user("task"),
        *pair(1, page, "browser"),
        *pair(2, "grep output " * 20),
        *pair(3, page, "web_read"),
        *pair(4, page, "browser"),
    )
    policy = OpenHandsBrowserOutput()
    st, plan = decide(policy, c)
    assert plan is not None
    after = plan.view_from(st.view)
    shown = {}
    for i in range(len(st)):
        rules = after.rules_at(i)
        for p in st.messages[i].results:
            rule = next((r for r in rules if r.selects(p)), None)
            shown[p.call_id] = rule.text if rule else p.text
    assert shown["c1"] == shown["c3"] == BROWSER_OMITTED
    assert shown["c2"].startswith("grep output") and shown["c4"] == page


def test_browser_output_window_and_tools_are_parameters() -> None:
    page = "p" * 300
    c = conv(sys("s"), user("task"), *pair(1, page, "fetch_page"), *pair(2, page, "fetch_page"))
    assert decide(OpenHandsBrowserOutput(), c)[1] is None  # fetch_page is not a V0 browser tool
    assert decide(make_policy("openhands-browser-output", {"browser_tools": "fetch_page"}), c)[1] is not None
    two = make_policy("openhands-browser-output", {"browser_tools": "fetch_page", "attention_window": "2"})
    assert decide(two, c)[1] is None
    with pytest.raises(InvalidConfig, match="browser_tools"):
        make_policy("openhands-browser-output", {"browser_tools": " , "})


# -- V0 ConversationWindowCondenser ------------------------------------------------------------------------------
def test_window_acts_only_on_a_condensation_request() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 3), user("more"), *pairs(4, 1))
    assert decide(OpenHandsWindow(), c)[1] is None
    st, plan = decide(OpenHandsWindow(), c, "manual")
    assert plan is not None and not plan.summarize
    # 11 events, 2 essential: keep the newest 9 // 2 = 4 (from event 7, a result: skipped as dangling).
    assert (plan.start, plan.pinned) == (8, (1,))


def test_window_skips_dangling_observations_at_the_start_of_the_slice() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 4), asst("thinking aloud"), *pairs(5, 1))
    st, plan = decide(OpenHandsWindow(), c, "overflow")
    # 13 events: keep 11 // 2 = 5 from event 8 (the call of pair 4, m8): kept whole with its result.
    assert plan is not None and (plan.start, plan.pinned) == (8, (1,))
    c2 = conv(sys("s"), user("task"), *pairs(1, 4), asst("thinking aloud"), *pairs(5, 2))
    st2, plan2 = decide(OpenHandsWindow(), c2, "overflow")
    # 15 events: keep 6 from event 9 (the result of pair 4): skipped, the slice opens at m10.
    assert plan2 is not None and plan2.start == 10


def test_window_keeps_the_last_user_message_where_v0_would_forget_it() -> None:
    """The newest half starts after the last user message: V0 forgets it; here it is pinned with the task."""
    c = conv(sys("s"), user("task"), user("the live turn"), *pairs(1, 6, "x" * 50))
    st, plan = decide(OpenHandsWindow(), c, "manual")
    assert plan is not None and plan.pinned == (1, 2) and plan.start > 3
    assert "live-turn" not in OpenHandsWindow.known_deviations


# -- V0 default pipeline --------------------------------------------------------------------------------------
def test_default_pipeline_order_window_first_on_request() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 3), user("more"), *pairs(4, 1))
    _, plan = decide(OpenHandsDefault(), c, "manual")
    assert plan is not None and plan.mode == "window"


def test_default_pipeline_masks_browser_output_under_max_size() -> None:
    page = "p" * 300
    c = conv(sys("s"), user("task"), *pair(1, page, "browser"), *pair(2, page, "browser"), *pair(3, page, "browser"))
    st, plan = decide(OpenHandsDefault(), c)
    assert plan is not None and plan.mode == "mask" and not plan.summarize
    after = plan.view_from(st.view)
    assert after.rules_at(2) and not after.rules_at(4)  # only the oldest of three: the window is 2


def test_default_pipeline_summarises_over_120_events_keeping_4_and_55() -> None:
    c = conv(sys("s"), user("task"), *pairs(1, 60, "z" * 40))  # 122 events
    st, plan = decide(OpenHandsDefault(), c)
    assert plan is not None and plan.summarize and plan.summary_request.clip_chars == 10_000
    ev = EventView(st)
    assert ev.total == 122
    assert plan.pinned == (1, 2, 3)  # system + task + the first pair = the first 4 events
    tail_events = ev.total - ev.offsets[[x.index for x in ev.items].index(plan.start)]
    assert tail_events == 120 // 2 - 4 - 1 - 1  # rounded up so the tail opens on a call, not an orphan result


def test_default_pipeline_summariser_sees_browser_output_masked() -> None:
    page = "p" * 300
    c = conv(sys("s"), user("task"), *pairs(1, 8, "x" * 50), *pair(20, page, "browser"), *pair(21, page, "browser"))
    policy = make_policy("openhands-default", {"max_size": "12", "keep_first": "2", "browser_window": "1"})
    _, plan = decide(policy, c)
    assert plan is not None and plan.summarize
    assert plan.edits is not None and any(e.rule.text == BROWSER_OMITTED for e in plan.edits)


# -- properties ----------------------------------------------------------------------------------------------------
SLOW = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@SLOW
@given(conversations(window=8_000))
def test_summarizing_keeps_the_head_and_one_summary(c: Conversation) -> None:
    """Whatever the conversation, every condensation holds one summary and, until a hard context reset (which
    keeps nothing), the events before ``keep_first`` (here the task); no invariant breaks but the declared
    deviations."""
    policy = summarizing(max_size="16", keep_first="2")
    result = Engine(policy, c, RunConfig(model=small_model(8_000), tokenizer="chars4")).run()
    first = next((i for i, m in enumerate(c.messages) if m.role == "user" and m.command is None), None)
    for rec in (e for e in result.log if isinstance(e, CompactionCreated)):
        if rec.mode == "hard-reset":
            break
        if first is not None and first > 0:
            assert rec.view.shows(first)
        assert rec.view.summary is not None
    assert {v.invariant for v in result.violations} <= OpenHandsSummarizing.known_deviations


@SLOW
@given(conversations(window=8_000))
def test_masking_never_touches_the_newest_window(c: Conversation) -> None:
    """Results among the newest ``attention_window`` events are never masked."""
    policy = make_policy("openhands-masking", {"attention_window": "6"})
    result = Engine(policy, c, RunConfig(model=small_model(8_000), tokenizer="chars4")).run()
    for rec in (e for e in result.log if isinstance(e, CompactionCreated)):
        bound = max(e.before for e in rec.view.edits)
        assert sum(events_in(m) for m in c.messages[bound:]) >= 6 or bound == 0
    assert not result.violations


def _bound_by_event_view(state: RunState, window: int) -> int:
    """The masking bound as the event view defines it: the item holding event ``total - window``, past the summary
    and injected items, as a log index."""
    ev = EventView(state)
    k = ev.item_at(max(0, ev.total - window))
    while k < len(ev.items) and ev.items[k].index < 0:
        k += 1
    return ev.tail_start(k, len(state))


@SLOW
@given(conversations(window=8_000), st.data(), st.integers(1, 40))
def test_the_masking_bound_from_running_sums_is_the_event_views(c: Conversation, data: st.DataObject, w: int) -> None:
    """The masking bound counted from the log's running sum of events is the one the event view gives, whatever
    the view (spans, a summary, injected messages, edits) and the window, at every length of the log as it grows
    (the sums are extended, not rebuilt)."""
    view = data.draw(views(len(c.messages), (MASK_RULE,)))
    slots = st.none() | st.integers(0, 2)
    injected = tuple(Injected(f"note {k}", slot=data.draw(slots)) for k in range(data.draw(st.integers(0, 2))))
    eng = Engine(NoCompaction(), c, C4)
    for m in c.messages:
        eng.append(m)
        eng.state.view = replace(view, injected=injected)
        assert masking_bound(eng.state, w) == _bound_by_event_view(eng.state, w)


def test_a_thinking_loop_is_found_wherever_a_range_starts() -> None:
    """A range that starts at a tool result right after its call (an edit's bound splits the layout there) still
    knows the call opened a thinking loop: its next reply stays inside it, as in the range unsplit."""
    c = conv(
        sys("s"),
        user("task"),
        asst(calls=["c1"], thinking="plan"),
        tool_msg("c1", "out"),
        asst(calls=["c2"]),
        tool_msg("c2", "out"),
        asst("done"),
        user("next"),
    )
    state = state_of(NoCompaction(), c)
    whole = loop_cuts(state, 1, len(state))
    assert whole[3] is False  # message 4, the reply after the first result, is inside the loop: no cut before it
    for k in range(2, len(state)):
        assert loop_cuts(state, 1, k) + loop_cuts(state, k, len(state)) == whole, k


@SLOW
@given(conversations(window=8_000), st.data())
def test_loop_cuts_do_not_depend_on_where_a_range_is_split(c: Conversation, data: st.DataObject) -> None:
    state = state_of(NoCompaction(), c)
    n = len(state)
    k = data.draw(st.integers(0, n))
    assert loop_cuts(state, 0, k) + loop_cuts(state, k, n) == loop_cuts(state, 0, n)
