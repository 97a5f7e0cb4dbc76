"""LangChain v1's SummarizationMiddleware and ContextEditingMiddleware (ClearToolUsesEdit) as policies.

Each test names the rule of ``langchain`` 1.5.2 it shows (``summarization.py``, ``context_editing.py``;
catalogue §B7a, §B7b). Decisions are driven on states built with :func:`tests.builders.state_of`; views are
read part by part as the engine renders them; whole runs use the ``chars4`` tokenizer and the OpenAI wire
format (one tool message per result, as LangChain's ToolMessages).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies import make_policy
from policies.base import Plan
from policies.langchain import (
    CLEARED,
    SUMMARY_WRAPPER,
    TRIM_TOKENS_TO_SUMMARIZE,
    LangChainClearToolUses,
    LangChainClearToolUsesConfig,
    LangChainSummarization,
    LangChainSummarizationConfig,
    approx_tokens,
    parse_trigger,
)
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import View, edit_parts
from sim.replay.engine import RunConfig, run
from tests.builders import Draft, asst, call, conv, run_capture, state_of, sys, text_of, tool, user

OPENAI = ModelConfig(provider="openai")
C4 = RunConfig(model=OPENAI, tokenizer="chars4")


def agent(
    steps: int, size: int = 400, *, names: tuple[str, ...] = ("grep",), users_at: tuple[int, ...] = ()
) -> Conversation:
    """A system prompt, the task, ``steps`` rounds of one call and its output of ``size`` characters, an answer."""
    d: list[Draft] = [sys("You are a coding agent."), user("Fix the failing test in app.py.", id="task")]
    for i in range(steps):
        if i in users_at:
            d.append(user(f"Also look at step {i}.", id=f"u{i}"))
        name = names[i % len(names)]
        d.append(asst(f"step {i}", [call(f"c{i}", name, json.dumps({"q": i}))], id=f"a{i}"))
        d.append(tool(f"c{i}", f"out {i} " + "x" * size, name=name, id=f"t{i}"))
    d.append(asst("Done: the fixture was stale.", id="done"))
    return conv(*d)


def shown(state: RunState, view: View) -> dict[str, list[tuple[str, str]]]:
    """Each message the view shows, by id: its parts as (kind, text or arguments) after the view's edits."""
    out = {}
    for i, m in enumerate(state.messages):
        if view.shows(i):
            parts = [p for p in edit_parts(m, view.rules_at(i)) if p is not None]
            out[m.id] = [(p.kind, p.args if p.kind == "tool_call" else p.text) for p in parts]
    return out


def summarizer(**kw: Any) -> LangChainSummarization:
    return LangChainSummarization(LangChainSummarizationConfig(chars_per_token=4.0, **kw))


def clearer(**kw: Any) -> LangChainClearToolUses:
    return LangChainClearToolUses(LangChainClearToolUsesConfig(**kw))


# -- SummarizationMiddleware: defaults and settings ----------------------------------------------------------
def test_summarization_defaults() -> None:
    """``keep=("messages", _DEFAULT_MESSAGES_TO_KEEP)`` = 20, ``trim_tokens_to_summarize`` 4,000; the trigger
    is the docstring's ``("fraction", 0.8)`` (LangChain's own default, None, is ``trigger=none``)."""
    cfg = LangChainSummarizationConfig()
    assert (cfg.keep, cfg.trim_tokens_to_summarize, cfg.trigger) == ("messages:20", 4_000, "fraction:0.8")
    assert parse_trigger(cfg.trigger) == ((("fraction", 0.8),),)
    assert parse_trigger("none") == ()
    assert not summarizer(trigger="none").over_trigger(state_of(summarizer(), agent(40)))


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("trigger", "tokens:0", "greater than 0"),
        ("trigger", "fraction:1.5", "(0, 1]"),
        ("trigger", "words:10", "kind:value"),
        ("trigger", "messages:ten", "whole number"),
        ("keep", "tokens", "kind:value"),
        ("trim_tokens_to_summarize", 0, ">= 1"),
    ],
)
def test_summarization_rejects_what_langchain_rejects(field: str, value: Any, says: str) -> None:
    """``_validate_context_size``: fractions in (0, 1], counts above 0, known kinds only."""
    with pytest.raises(InvalidConfig, match=says.replace("(", r"\(").replace("[", r"\[")):
        LangChainSummarizationConfig(**{field: value})


def test_trigger_clauses_and_or() -> None:
    """A ``TriggerClause`` dict needs all its conditions (``&``), a list any of its items (``|``)."""
    st_ = state_of(summarizer(), agent(12))  # 26 messages after the system prompt
    count = approx_tokens(st_, chars_per_token=4.0)
    assert summarizer(trigger=f"tokens:{count}").over_trigger(st_)
    assert not summarizer(trigger=f"tokens:{count + 1}").over_trigger(st_)
    assert summarizer(trigger="messages:26").over_trigger(st_)
    assert not summarizer(trigger="messages:27").over_trigger(st_)
    assert not summarizer(trigger=f"tokens:{count}&messages:27").over_trigger(st_)
    assert summarizer(trigger=f"tokens:{count + 1}|messages:26").over_trigger(st_)


def test_the_provider_reported_total_triggers_too() -> None:
    """``_should_summarize_based_on_reported_tokens``: the last reply's reported total reaching the threshold
    triggers though the character estimate is lower; and it scales the estimate by at most 1.25."""
    pol = summarizer(trigger="tokens:5000")
    quiet = state_of(pol, agent(6))
    assert approx_tokens(quiet, chars_per_token=4.0) < 5000 and not pol.over_trigger(quiet)
    loud = state_of(pol, agent(6), context=5_000)
    assert pol.over_trigger(loud)


def test_anthropic_models_count_at_3_3_characters_a_token() -> None:
    """``_get_approximate_token_counter``: ``chars_per_token=3.3`` for an Anthropic chat model."""
    pol = LangChainSummarization()
    claude = state_of(pol, agent(10), ModelConfig(provider="anthropic"))
    gpt = state_of(pol, agent(10), OPENAI)
    assert pol.chars_per_token(claude) == 3.3 and pol.chars_per_token(gpt) == 4.0
    assert approx_tokens(claude, chars_per_token=3.3) > approx_tokens(gpt, chars_per_token=4.0) * 1.15


# -- SummarizationMiddleware: the cut and the view --------------------------------------------------------
def test_keeps_the_newest_20_messages_and_puts_the_summary_first() -> None:
    """``_find_safe_cutoff`` keeps the last 20 messages; ``_build_new_messages``: a HumanMessage "Here is a
    summary of the conversation to date:" before them. Our default pins the task, which LangChain summarises
    with the rest, right after the summary."""
    pol = summarizer(trigger="tokens:1000")
    c = agent(15)
    st_ = state_of(pol, conv(*[m for m in c.messages if m.id != "done"]))  # the task and 30 messages
    plan = pol.decide(st_, "auto")
    assert plan is not None and plan.summarize
    kept = [m.id for m in st_.messages[plan.start :]]
    assert len(kept) == 20 and kept[0] == "a5" and kept[-1] == "t14"
    assert plan.pinned == (1,) and plan.summary_slot == 0
    assert (plan.summary_request.role, plan.summary_request.wrapper) == ("user", SUMMARY_WRAPPER)
    assert SUMMARY_WRAPPER.startswith("Here is a summary of the conversation to date:\n\n")
    assert plan.summary_request.input_newest_tokens == TRIM_TOKENS_TO_SUMMARIZE


def test_a_cut_on_a_tool_message_moves_back_to_its_call() -> None:
    """``_find_safe_cutoff_point``: keeping 20 would start on a ToolMessage, so the AIMessage that issued it
    is kept too (21 messages)."""
    pol = summarizer(trigger="tokens:1000", keep_last_user=False)
    st_ = state_of(pol, agent(15))  # the task, 30 messages and the answer: the 20th newest is t5
    assert st_.messages[len(st_) - 20].id == "t5"
    plan = pol.decide(st_, "auto")
    assert plan is not None and st_.messages[plan.start].id == "a5"
    assert len(st_) - plan.start == 21


def test_the_summary_in_a_run_and_the_next_one_folds_it_in() -> None:
    """Before every model call: the view is system, summary (a user message), the pinned task, the kept
    messages; the next summary covers the previous one (it is the oldest message of LangChain's list)."""
    pol = summarizer(trigger="tokens:2000")
    res, captured, _ = run_capture(pol, agent(30), C4)
    assert len(res.compactions) >= 2 and res.violations == []
    last = captured[-1].rendered
    assert [m["role"] for m in last[:3]] == ["system", "user", "user"]
    assert text_of(last[1]["content"]).startswith("Here is a summary of the conversation to date:\n\n")
    assert text_of(last[2]["content"]) == "Fix the failing test in app.py."
    assert captured[-1].view.summary is not None and captured[-1].view.summary.through == captured[-1].view.start


def test_keep_in_tokens_keeps_the_longest_suffix_that_fits() -> None:
    """``_find_token_based_cutoff``: the earliest start whose suffix is within the budget, then made safe."""
    pol = summarizer(trigger="tokens:1000", keep="tokens:1500", keep_last_user=False)
    st_ = state_of(pol, agent(20))
    plan = pol.decide(st_, "auto")
    assert plan is not None
    from policies.langchain import suffix_tokens

    assert suffix_tokens(st_, plan.start, 4.0) <= 1500 < suffix_tokens(st_, plan.start - 2, 4.0)
    assert st_.messages[plan.start].role == "assistant"


def test_no_summary_with_no_more_messages_than_keep() -> None:
    """``_find_safe_cutoff``: ``len(messages) <= messages_to_keep`` -> cutoff 0, nothing happens."""
    pol = summarizer(trigger="tokens:10", keep="messages:30")
    st_ = state_of(pol, agent(14))  # 30 messages after the system prompt
    assert pol.over_trigger(st_) and pol.decide(st_, "auto") is None


def test_nothing_of_a_pending_turn_is_summarised() -> None:
    """An interrupt pauses the graph, so nothing of an unresolved pending turn is summarised: the cut that
    would keep 2 messages stops at the start of the pending turn."""
    c = agent(15, users_at=(10,))
    pend = conv(*[Draft(m.role, m.parts, id=m.id, pending=m.id == "u10") for m in c.messages])
    pol = summarizer(trigger="tokens:10", keep="messages:2")
    st_ = state_of(pol, pend)
    plan = pol.decide(st_, "auto")
    assert st_.protected_from is not None and st_.messages[st_.protected_from].id == "u10"
    assert plan is not None and plan.start == st_.protected_from


def test_manual_compact_does_nothing() -> None:
    """LangChain has no /compact: only the trigger summarises."""
    pol = summarizer(trigger="tokens:10")
    assert pol.decide(state_of(pol, agent(15)), "manual") is None


# -- SummarizationMiddleware: what it breaks ---------------------------------------------------------------
def test_without_the_pin_the_live_turns_user_message_is_summarised() -> None:
    """LangChain's own cut (``keep_last_user=False``): 8 kept messages begin inside the live turn, so the
    last user message is summarised: a ``live-turn`` violation on the next request."""
    pol = summarizer(trigger="tokens:500", keep="messages:8", keep_last_user=False)
    res = run(pol, agent(10), C4)
    assert any(v.invariant == "live-turn" for v in res.violations)
    pinned = run(summarizer(trigger="tokens:500", keep="messages:8"), agent(10), C4)
    assert pinned.compactions and not any(v.invariant == "live-turn" for v in pinned.violations)


def test_deviation_atomic_units_a_cut_inside_a_live_thinking_tool_loop() -> None:
    """``_find_safe_cutoff_point`` knows AI/tool pairs only: inside the live tool loop the cut drops the reply whose
    thinking opened the loop, and the kept replies, without interleaved thinking, carry none: the summary (a user
    message) is followed by a reply that does not start with thinking, which Anthropic rejects. With thinking on
    every step the same cut is accepted."""
    for interleaved in (False, True):
        d: list[Draft] = [sys("s"), user("Do the task.", id="task")]
        for i in range(12):
            thinking = f"think {i} " * 20 if interleaved or i == 0 else None
            d.append(asst(f"step {i}", [call(f"c{i}", "grep", "{}")], thinking=thinking, id=f"a{i}"))
            d.append(tool(f"c{i}", "x" * 300, id=f"t{i}"))
        d.append(asst("done"))
        res = run(summarizer(trigger="tokens:800", keep="messages:6"), conv(*d), RunConfig(tokenizer="chars4"))
        assert res.summary["compaction_count"] >= 1
        rejected = "atomic-units" in {v.invariant for v in res.violations}
        assert rejected is not interleaved
        assert res.summary["finish_reason"] == ("completed" if interleaved else "provider-error")
    assert "atomic-units" in LangChainSummarization.known_deviations


def test_deviation_compaction_loop_when_the_kept_messages_alone_are_over_the_trigger() -> None:
    """With 20 kept messages above the trigger, LangChain summarises again before every model call."""
    res = run(summarizer(trigger="tokens:1500"), agent(30, size=800), C4)
    assert "compaction-loop" in {v.invariant for v in res.violations}
    assert "compaction-loop" in LangChainSummarization.known_deviations


def test_deviation_revert_resolution() -> None:
    """LangChain has no reverts: a kept revert can lose the change it reverts to the summary."""
    from tests.builders import change, revert

    d: list[Draft] = [sys("s"), user("Edit a.py.", change("ch1", "edit a.py"), id="task")]
    for i in range(12):
        d.append(asst(f"step {i}", [call(f"c{i}", "grep", "{}")], id=f"a{i}"))
        d.append(tool(f"c{i}", "x" * 300, id=f"t{i}"))
    d.append(user("Undo that edit.", revert("ch1", "undo"), id="undo"))
    d.append(asst("Reverted."))
    res = run(summarizer(trigger="tokens:500", keep="messages:6"), conv(*d), C4)
    assert "revert-resolution" in {v.invariant for v in res.violations}


# -- ContextEditingMiddleware + ClearToolUsesEdit -------------------------------------------------------
def test_clear_tool_uses_defaults() -> None:
    """``ClearToolUsesEdit(trigger=100_000, clear_at_least=0, keep=3, clear_tool_inputs=False, exclude_tools=(),
    placeholder="[cleared]")``; the trigger is a token count the checker scales to its window."""
    cfg = LangChainClearToolUsesConfig()
    assert (cfg.trigger, cfg.clear_at_least, cfg.keep, cfg.clear_tool_inputs, cfg.exclude_tools) == (
        100_000,
        0,
        3,
        False,
        (),
    )
    assert cfg.placeholder == CLEARED == "[cleared]"
    assert make_policy("langchain-clear-tool-uses", {"exclude_tools": "memory,read"}).config.exclude_tools == (
        "memory",
        "read",
    )
    with pytest.raises(InvalidConfig, match="must be >= 0"):
        LangChainClearToolUsesConfig(keep=-1)


Shown = dict[str, list[tuple[str, str]]]


def _clear(pol: LangChainClearToolUses, c: Conversation) -> tuple[RunState, Plan | None, Shown]:
    st_ = state_of(pol, c)
    plan = pol.decide(st_, "auto")
    return st_, plan, shown(st_, plan.view_from(st_.view) if plan else st_.view)


def test_clears_all_but_the_newest_3_results_past_the_trigger() -> None:
    """``apply``: over ``trigger`` every ToolMessage but the last ``keep`` reads the placeholder; ids, names
    and the calls stay. At or under it nothing happens (``tokens <= self.trigger``)."""
    c = agent(8)
    st_ = state_of(clearer(), c)
    count = approx_tokens(st_, st_.view)
    assert clearer(trigger=count).decide(st_, "auto") is None
    _, plan, view = _clear(clearer(trigger=count - 1), c)
    assert plan is not None
    assert [view[f"t{i}"][0][1] for i in range(8)] == [CLEARED] * 5 + [f"out {i} " + "x" * 400 for i in (5, 6, 7)]
    assert view["a0"] == [("text", "step 0"), ("tool_call", '{"q": 0}')]


def test_excluded_tools_are_never_cleared_but_count_towards_keep() -> None:
    """``exclude_tools``: skipped when clearing, but ``candidates[: -self.keep]`` counts every ToolMessage."""
    names = ("grep",) * 5 + ("memory",) * 3
    _, _, view = _clear(clearer(trigger=100, exclude_tools=("memory",)), agent(8, names=names))
    assert [view[f"t{i}"][0][1] == CLEARED for i in range(8)] == [True] * 5 + [False] * 3
    _, _, mixed = _clear(clearer(trigger=100, exclude_tools=("memory",)), agent(8, names=("grep", "memory")))
    assert [mixed[f"t{i}"][0][1] == CLEARED for i in range(8)] == [True, False, True, False, True, False, False, False]


def test_clear_tool_inputs_sets_the_arguments_to_an_empty_object() -> None:
    """``_build_cleared_tool_input_message``: the cleared result's call gets ``args = {}``."""
    _, _, view = _clear(clearer(trigger=100, clear_tool_inputs=True), agent(8))
    assert [view[f"a{i}"][1] for i in range(8)] == [("tool_call", "{}")] * 5 + [
        ("tool_call", json.dumps({"q": i})) for i in (5, 6, 7)
    ]


def test_clear_at_least_stops_once_enough_is_reclaimed() -> None:
    """``clear_at_least``: recount after each clear and stop once the count fell by that much."""
    _, _, view = _clear(clearer(trigger=100, clear_at_least=150), agent(8))
    assert [view[f"t{i}"][0][1] == CLEARED for i in range(8)] == [True, True] + [False] * 6
    _, _, all_ = _clear(clearer(trigger=100, clear_at_least=10**6), agent(8))
    assert [all_[f"t{i}"][0][1] == CLEARED for i in range(8)] == [True] * 5 + [False] * 3


def test_in_a_run_the_cleared_set_moves_forward_with_every_result() -> None:
    """Recomputed from the whole history before every model call: once over the trigger, every request
    keeps exactly the newest 3 results, and no compaction is flagged a loop."""
    pol = clearer(trigger=600, placeholder="[gone]")
    res, captured, _ = run_capture(pol, agent(12), C4)
    assert res.violations == [] and len(res.compactions) >= 5
    clearing = False
    for cap in captured:
        contents = [text_of(m["content"]) for m in cap.rendered if m["role"] == "tool"]
        clearing = clearing or "[gone]" in contents
        if clearing:
            assert [c == "[gone]" for c in contents] == [True] * (len(contents) - 3) + [False] * 3
    assert clearing


def test_nothing_of_a_pending_turn_is_cleared() -> None:
    """The harness's contract (an interrupt pauses LangChain's graph): a pending turn's results stay."""
    c = agent(8, users_at=(4,))
    msgs = [Draft(m.role, m.parts, id=m.id, pending=m.id == "u4") for m in c.messages]
    st_, plan, view = _clear(clearer(trigger=100, keep=0), conv(*msgs))
    assert plan is not None and st_.protected_from is not None
    assert [view[f"t{i}"][0][1] == CLEARED for i in range(8)] == [True] * 4 + [False] * 4


# -- properties ----------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(steps=st.integers(1, 14), keep=st.integers(0, 6), size=st.integers(1, 600))
def test_property_cleared_results_are_exactly_the_oldest(steps: int, keep: int, size: int) -> None:
    """Past the trigger, the cleared results are the oldest ``max(0, results - keep)`` and nothing else, when
    the edit shrinks the view (a result shorter than the placeholder waits)."""
    pol = clearer(trigger=0, keep=keep)
    st_, plan, view = _clear(pol, agent(steps, size=size))
    flags = [view[f"t{i}"][0][1] == CLEARED for i in range(steps)]
    if plan is None:
        assert not any(flags)
    else:
        assert flags == [True] * max(0, steps - keep) + [False] * min(steps, keep)


@settings(max_examples=40, deadline=None)
@given(steps=st.integers(1, 20), keep=st.integers(1, 25), users=st.sets(st.integers(0, 19), max_size=3))
def test_property_the_kept_messages_start_on_a_call_never_a_result(steps: int, keep: int, users: set[int]) -> None:
    """However many messages are kept, the kept part never starts on a tool message, holds at least ``keep``
    of LangChain's messages, and the last user message stays in view."""
    pol = summarizer(trigger="tokens:1", keep=f"messages:{keep}")
    st_ = state_of(pol, agent(steps, users_at=tuple(users)))
    plan = pol.decide(st_, "auto")
    if plan is None:
        return
    assert st_.messages[plan.start].role != "tool"
    assert len(st_) - plan.start >= min(keep, len(st_) - 1) or st_.protected_from is not None
    assert plan.view_from(st_.view).shows(st_.last_user_index)


def with_ids(steps: int, ids: list[str]) -> Conversation:
    """A tool loop of ``steps`` calls whose ids are ``ids`` (one a step), each call answered by its ToolMessage."""
    d: list[Draft] = [sys("You are a coding agent."), user("Fix the failing test in app.py.", id="task")]
    for i in range(steps):
        d.append(asst(f"step {i}", [call(ids[i], "Read", json.dumps({"file_path": f"src/m{i}.py"}))], id=f"a{i}"))
        d.append(tool(ids[i], f"line {i}\n" * 40, name="Read", id=f"t{i}"))
    return conv(*d)


def test_call_ids_count_twice_at_their_real_length() -> None:
    """``count_tokens_approximately`` counts each call id twice: in ``repr(AIMessage.tool_calls)`` and as the
    ToolMessage's ``tool_call_id``. Claude Code's ids (``toolu_`` and 24 characters: 30) against ids of 2 characters:
    per call 2 x 28 characters more, a quarter of them in tokens (each message rounded up). csim counted ids at a
    fixed 8 characters before, whatever their length, so the two counts were equal."""
    steps = 12
    short = [f"c{i:01d}"[:2] for i in range(steps)]
    claude = [f"toolu_01{i:022d}" for i in range(steps)]
    assert {len(x) for x in claude} == {30} and {len(x) for x in short} == {2}
    pol = LangChainSummarization()
    a = approx_tokens(state_of(pol, with_ids(steps, short)), chars_per_token=4.0)
    b = approx_tokens(state_of(pol, with_ids(steps, claude)), chars_per_token=4.0)
    assert b - a == steps * 2 * 7  # 28 more characters in each of the two messages of a step: 7 tokens each
