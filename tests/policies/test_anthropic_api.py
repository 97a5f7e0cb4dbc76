"""The Anthropic API's context management (``policies/anthropic_api.py``, catalogue §B2) on hand-built
conversations: what each request shows after the policy acted (kept verbatim, cleared and with which text,
dropped, summarised, in which role and wrapper), when it acts and when it does not; then Hypothesis properties
on generated conversations with the triggers scaled to the checker's small window.

Boundary tests drive ``decide`` on a state from :func:`tests.builders.state_of`; the rest run the engine with
the ``chars4`` tokenizer and look at the requests it rendered (Anthropic wire format).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from policies import load_policy_class, make_policy
from policies.anthropic_api import (
    COMPACTION_PROMPT,
    INPUT_PLACEHOLDER,
    PLACEHOLDER,
    SDK_SUMMARY_PROMPT,
    AnthropicClearThinking,
    AnthropicClearToolUses,
    AnthropicCompaction,
    AnthropicSDKCompaction,
    ClearThinkingConfig,
    ClearToolUsesConfig,
    CompactionConfig,
    SDKCompactionConfig,
)
from policies.base import Policy
from sim.core.conversation import Conversation, Message, Usage
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import View
from sim.replay.checker import effective_params
from sim.replay.engine import Engine, RunConfig, RunResult, run
from sim.replay.strategies import conversations, small_model
from tests.builders import (
    Captured,
    Draft,
    asst,
    call,
    change,
    compaction_records,
    conv,
    revert,
    run_capture,
    state_of,
    sys,
    text_of,
    tool,
    tool_contents,
    tools,
    user,
)

MODEL = ModelConfig(context_window=40_000, output_reserve=4_000)
CONFIG = RunConfig(model=MODEL, tokenizer="chars4", deep_checks=True)
RESULT = "r" * 800  # 200 tokens at chars/4


def calls_of(rendered: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    """``{call_id: (tool name, input)}`` of every tool_use block of an Anthropic request."""
    return {
        b["id"]: (b["name"], b["input"])
        for m in rendered
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b["type"] == "tool_use"
    }


def thinking_of(rendered: list[dict[str, Any]]) -> list[str]:
    return [
        b["thinking"]
        for m in rendered
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "thinking"
    ]


def loop(
    uses: int, *, names: dict[int, str] | None = None, result: str = RESULT, task: str = "Fix the bug."
) -> Conversation:
    """One user turn: ``uses`` tool uses one after the other (``c1``...), each read with its result, then an answer."""
    names = names or {}
    drafts: list[Draft | Message] = [sys("You are a coding agent."), user(task, id="u1")]
    for k in range(1, uses + 1):
        name = names.get(k, "grep")
        drafts += [
            asst(f"step {k}", [call(f"c{k}", name, f'{{"q": "{k}"}}')], id=f"a{k}"),
            tool(f"c{k}", f"{k}:" + result, name=name, id=f"t{k}"),
        ]
    drafts.append(asst("done", id="end"))
    return conv(*drafts)


def capture(policy: Policy[Any], c: Conversation, config: RunConfig = CONFIG) -> tuple[RunResult, list[Captured]]:
    res, captured, _ = run_capture(policy, c, config)
    return res, captured


def size_of(c: Conversation, policy: Policy[Any] | None = None) -> int:
    """Exact (chars4) tokens of the whole conversation's unedited view: what the server's trigger counts."""
    p = policy or AnthropicClearToolUses()
    return state_of(p, c, MODEL).view_size(View())[0]


def original(k: int) -> str:
    return f"{k}:" + RESULT


# -- clear_tool_uses_20250919 ----------------------------------------------------------------------------------
def test_clear_tool_uses_defaults_are_the_documented_ones() -> None:
    cfg = ClearToolUsesConfig()
    assert (cfg.trigger_unit, cfg.trigger_tokens, cfg.trigger_tool_uses, cfg.keep) == ("input_tokens", 100_000, None, 3)
    assert (cfg.clear_at_least, cfg.exclude_tools, cfg.clear_tool_inputs) == (None, (), False)
    assert cfg.clear_at_least_mode == "gate"


def test_clear_tool_uses_acts_only_once_the_unedited_prompt_exceeds_the_trigger() -> None:
    c = loop(6)
    c = Conversation(c.id, c.messages[:-1])  # ends with c6's result: a request is about to be made
    tokens = size_of(c)
    at = AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=tokens))
    over = AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=tokens - 1))
    assert at.decide(state_of(at, c, MODEL), "auto") is None  # "exceeds": equal is not over
    plan = over.decide(state_of(over, c, MODEL), "auto")
    assert plan is not None and plan.mode == "clear-tool-uses"
    assert over.decide(state_of(over, c, MODEL), "manual") is None  # the API has no /compact
    assert over.decide(state_of(over, c, MODEL), "overflow") is None


def test_all_but_the_newest_three_results_become_the_placeholder_and_calls_keep_id_name_input() -> None:
    c = loop(6)
    res, captured = capture(AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=1_000)), c)
    assert res.violations == []
    last = captured[-1].rendered  # the request answered by "done", after c6's result
    results = tool_contents(last)
    assert results == {**{f"c{k}": PLACEHOLDER for k in (1, 2, 3)}, **{f"c{k}": original(k) for k in (4, 5, 6)}}
    assert calls_of(last) == {f"c{k}": ("grep", f'{{"q": "{k}"}}') for k in range(1, 7)}
    assert "step 1" in text_of(last[2]["content"])  # the assistant's text is never touched


def test_the_edit_is_recomputed_before_every_request_and_moves_with_the_newest_uses() -> None:
    c = loop(6)
    trigger = 1_000
    res, captured = capture(AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=trigger)), c)
    assert res.violations == [] and len(captured) == 7
    moved = 0
    for cap in captured:
        prefix = Conversation(c.id, c.messages[: len(cap.rendered)])  # nothing is cut: one wire message each
        uses = [p.call_id for m in prefix.messages for p in m.calls]
        want = uses[:-3] if size_of(prefix) > trigger else []
        cleared = [cid for cid, text in tool_contents(cap.rendered).items() if text == PLACEHOLDER]
        assert cleared == want
        moved += bool(want)
    assert moved >= 2 and len(compaction_records(res)) == moved  # one edit per request whose bound moved


def test_excluded_tools_are_never_cleared_and_still_count_towards_keep() -> None:
    c = loop(6, names={2: "memory", 5: "memory"})
    policy = AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=1_000, exclude_tools=("memory",)))
    res, captured = capture(policy, c)
    assert res.violations == []
    results = tool_contents(captured[-1].rendered)
    assert results == {
        "c1": PLACEHOLDER,
        "c2": original(2),  # memory, excluded
        "c3": PLACEHOLDER,
        "c4": original(4),
        "c5": original(5),  # newest three: c4, c5 (memory, counted), c6
        "c6": original(6),
    }


def test_clear_tool_inputs_all_or_by_tool() -> None:
    c = loop(6, names={1: "read_file", 2: "grep", 3: "read_file"})
    every = AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=1_000, clear_tool_inputs=True))
    res, captured = capture(every, c)
    assert res.violations == []
    calls = calls_of(captured[-1].rendered)
    assert calls == {
        "c1": ("read_file", INPUT_PLACEHOLDER),
        "c2": ("grep", INPUT_PLACEHOLDER),
        "c3": ("read_file", INPUT_PLACEHOLDER),
        **{f"c{k}": ("grep", f'{{"q": "{k}"}}') for k in (4, 5, 6)},
    }
    named = make_policy("anthropic-clear-tool-uses", {"trigger_tokens": "1000", "clear_tool_inputs": "read_file"})
    res, captured = capture(named, c)
    calls = calls_of(captured[-1].rendered)
    assert calls["c1"] == calls["c3"] == ("read_file", INPUT_PLACEHOLDER)
    assert calls["c2"] == ("grep", '{"q": "2"}')  # grep's input stays; its result is cleared all the same
    assert tool_contents(captured[-1].rendered)["c2"] == PLACEHOLDER


def test_the_tool_uses_trigger_counts_uses_in_the_prompt() -> None:
    c = loop(5)
    policy = AnthropicClearToolUses(ClearToolUsesConfig(trigger_unit="tool_uses", trigger_tool_uses=4))
    four = Conversation(c.id, c.messages[:10])  # system, task, 4 uses
    five = Conversation(c.id, c.messages[:12])
    assert policy.decide(state_of(policy, four, MODEL), "auto") is None
    plan = policy.decide(state_of(policy, five, MODEL), "auto")
    assert plan is not None
    # uses c1, c2 are older than the newest three: clearing stops at c3's call (message 6)
    assert plan.view_from(View()).cleared_through == 0
    ((edit,),) = [plan.edits or ()]
    assert edit.before == c.index()["a3"] and edit.rule.text == PLACEHOLDER


def test_clear_at_least_as_a_gate_clears_all_or_nothing() -> None:
    c = Conversation("g", loop(6).messages[:-1])
    # what clearing c1..c3 saves: three results replaced by the placeholder
    saved = 3 * ((len(original(1)) + 3) // 4) - 3 * ((len(PLACEHOLDER) + 3) // 4)
    shut = AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=1_000, clear_at_least=saved + 1))
    assert shut.decide(state_of(shut, c, MODEL), "auto") is None
    open_ = AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=1_000, clear_at_least=saved))
    plan = open_.decide(state_of(open_, c, MODEL), "auto")
    assert plan is not None and plan.edits is not None
    assert [e.before for e in plan.edits] == [c.index()["a4"]]  # everything eligible, c1..c3


def test_clear_at_least_stop_after_clears_oldest_first_until_the_amount() -> None:
    c = Conversation("s", loop(6).messages[:-1])
    one = (len(original(1)) + 3) // 4 - (len(PLACEHOLDER) + 3) // 4
    policy = AnthropicClearToolUses(
        ClearToolUsesConfig(trigger_tokens=1_000, clear_at_least=one + 1, clear_at_least_mode="stop-after")
    )
    res, captured = capture(policy, loop(8))
    assert res.violations == []
    for cap in captured:  # once two results are cleared the amount is reached, and the bound stays there
        prefix = Conversation("s", loop(8).messages[: len(cap.rendered)])
        eligible = [p.call_id for m in prefix.messages for p in m.calls][:-3]
        want = eligible[:2] if size_of(prefix) > 1_000 else []
        assert [cid for cid, text in tool_contents(cap.rendered).items() if text == PLACEHOLDER] == want
    assert len(tool_contents(captured[-1].rendered)) == 8
    with_inputs = AnthropicClearToolUses(
        ClearToolUsesConfig(
            trigger_tokens=1_000, clear_at_least=2 * one, clear_at_least_mode="stop-after", clear_tool_inputs=True
        )
    )
    last = capture(with_inputs, loop(8))[1][-1].rendered
    assert [cid for cid, (_, inp) in calls_of(last).items() if inp == INPUT_PLACEHOLDER] == ["c1", "c2"]
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    assert plan is not None and plan.edits is not None and plan.edits[0].before == c.index()["t2"] + 1


def test_a_parallel_batch_answered_in_one_message_is_kept_whole() -> None:
    c = conv(
        sys("agent"),
        user("task"),
        asst("batch", [call("c1"), call("c2"), call("c3")]),
        tools({"c1": "1:" + RESULT, "c2": "2:" + RESULT, "c3": "3:" + RESULT}),
        asst("more", [call("c4")]),
        tool("c4", "4:" + RESULT),
        asst("more", [call("c5")]),
        tool("c5", "5:" + RESULT),
        asst("done"),
    )
    res, captured = capture(AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=500)), c)
    assert res.violations == [] and len(compaction_records(res)) == 0
    # the newest three are c5, c4 and c3; c3 shares its message with c1 and c2, so the whole batch stays
    assert tool_contents(captured[-1].rendered) == {f"c{k}": f"{k}:" + RESULT for k in range(1, 6)}
    keep2 = AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=500, keep=2))
    results = tool_contents(capture(keep2, c)[1][-1].rendered)
    assert [k for k, v in results.items() if v == PLACEHOLDER] == ["c1", "c2", "c3"]


def test_clearing_reaches_inside_a_thinking_tool_loop_without_breaking_it() -> None:
    drafts: list[Draft | Message] = [sys("agent"), user("task")]
    for k in range(1, 7):
        drafts += [asst(calls=[f"c{k}"], thinking="think " * 20 if k == 1 else None), tool(f"c{k}", f"{k}:" + RESULT)]
    drafts.append(asst("done"))
    c = conv(*drafts)
    res, captured = capture(AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=1_000)), c)
    assert res.violations == []
    last = captured[-1].rendered
    assert [k for k, v in tool_contents(last).items() if v == PLACEHOLDER] == ["c1", "c2", "c3"]
    assert thinking_of(last) == ["think " * 20]


def test_a_pending_turn_is_not_edited() -> None:
    policy = AnthropicClearToolUses(ClearToolUsesConfig(trigger_tokens=1_000))
    msgs = loop(6).messages
    ask = asst("May I run grep?").parts
    for pending, cleared in ((False, ["c1", "c2", "c3"]), (True, [])):
        asking = Message("ask", "assistant", ask, pending=pending)  # unanswered: its turn may not be edited
        res, captured = capture(policy, Conversation("p", (*msgs[:2], asking, *msgs[2:])))
        assert res.violations == []
        assert [k for k, v in tool_contents(captured[-1].rendered).items() if v == PLACEHOLDER] == cleared


def test_clear_tool_uses_config_is_validated_and_parsed_from_strings() -> None:
    for bad in (
        {"trigger_tokens": 0},
        {"trigger_unit": "tool_uses"},
        {"trigger_tool_uses": 5},
        {"keep": -1},
        {"clear_at_least": 0},
        {"trigger_unit": "messages"},
        {"clear_at_least_mode": "soon"},
        {"exclude_tools": 3},
    ):
        with pytest.raises(InvalidConfig):
            ClearToolUsesConfig(**bad)  # type: ignore[arg-type]
    p = make_policy(
        "anthropic-clear-tool-uses",
        {"exclude_tools": "web_search,memory", "clear_tool_inputs": "true", "clear_at_least": "5000"},
    )
    assert p.config.exclude_tools == ("memory", "web_search")
    assert p.config.clear_tool_inputs is True and p.config.clear_at_least == 5_000
    assert make_policy("anthropic-clear-tool-uses", {"clear_tool_inputs": "off"}).config.clear_tool_inputs is False
    again = make_policy("anthropic-clear-tool-uses", p.params())  # a spec rebuilds the same policy
    assert again.config == p.config and again.params_hash() == p.params_hash()


# -- clear_thinking_20251015 -----------------------------------------------------------------------------------
def thinking_turns(turns: int, uses: int = 2) -> Conversation:
    """``turns`` user turns, each a thinking tool loop of ``uses`` calls then an answer; thinking ``T<turn>.<k>``."""
    drafts: list[Draft | Message] = [sys("agent")]
    for t in range(1, turns + 1):
        drafts.append(user(f"turn {t}", id=f"u{t}"))
        for k in range(1, uses + 1):
            drafts += [
                asst(calls=[f"c{t}{k}"], thinking=f"T{t}.{k} " + "t" * 200, id=f"a{t}{k}"),
                tool(f"c{t}{k}", "ok " * 20, id=f"r{t}{k}"),
            ]
        drafts.append(asst(f"answer {t}", thinking=f"T{t}.end " + "t" * 200, id=f"e{t}"))
    return conv(*drafts)


def test_clear_thinking_keeps_only_the_newest_assistant_turns_thinking() -> None:
    res, captured = capture(AnthropicClearThinking(), thinking_turns(3))
    assert res.violations == []
    assert len(captured) == 9  # three requests a turn: two tool calls and the answer
    kept = [sorted({t.split()[0].split(".")[0] for t in thinking_of(cap.rendered)}) for cap in captured]
    # the first request of a turn (right after "turn 2") still shows the previous turn's thinking: that is the
    # newest assistant turn; from the turn's first reply on, only its own is left
    assert kept == [[], ["T1"], ["T1"], ["T1"], ["T2"], ["T2"], ["T2"], ["T3"], ["T3"]]
    records = compaction_records(res)
    assert [r.mode for r in records] == ["clear-thinking", "clear-thinking"]


def test_clear_thinking_keep_two_turns_and_keep_all() -> None:
    c = thinking_turns(3)
    res, captured = capture(AnthropicClearThinking(ClearThinkingConfig(keep_turns=2)), c)
    assert res.violations == []
    assert sorted({t.split(".")[0] for t in thinking_of(captured[-1].rendered)}) == ["T2", "T3"]
    res, captured = capture(AnthropicClearThinking(ClearThinkingConfig(keep_all=True)), c)
    assert compaction_records(res) == []
    assert len(thinking_of(captured[-1].rendered)) == 8  # turns 1-2 (3 each) and turn 3's two calls so far


def test_a_reply_left_with_only_thinking_is_not_sent() -> None:
    c = conv(
        sys("agent"),
        user("first"),
        asst(parts=[], thinking="only thinking " * 10),
        user("second"),
        asst("ok"),
        user("third"),
        asst("fine"),
    )
    res, captured = capture(AnthropicClearThinking(), c)
    assert res.violations == []
    last = captured[-1].rendered
    assert [m["role"] for m in last] == ["system", "user", "user", "assistant", "user"]  # the reply is gone
    assert thinking_of(last) == []


def test_clear_thinking_config_is_validated() -> None:
    with pytest.raises(InvalidConfig, match="keep_turns"):
        ClearThinkingConfig(keep_turns=0)
    assert (
        AnthropicClearThinking().decide(state_of(AnthropicClearThinking(), thinking_turns(2), MODEL), "manual") is None
    )


# -- compact_20260112 ------------------------------------------------------------------------------------------
def small(trigger: int, **kw: Any) -> AnthropicCompaction:
    return AnthropicCompaction(CompactionConfig(trigger_tokens=trigger, min_trigger_tokens=1, **kw))


def chat(turns: int, size: int = 400) -> Conversation:
    drafts: list[Draft | Message] = [sys("You are a helpful agent.")]
    for t in range(1, turns + 1):
        drafts += [
            user(f"question {t} " + "q" * size, id=f"u{t}"),
            asst(f"looking {t}", [f"c{t}"], id=f"a{t}"),
            tool(f"c{t}", f"result {t} " + "r" * size, id=f"t{t}"),
            asst(f"answer {t} " + "a" * size, id=f"e{t}"),
        ]
    return conv(*drafts)


def test_compaction_defaults_and_the_api_minimum() -> None:
    cfg = CompactionConfig()
    assert (cfg.trigger_tokens, cfg.min_trigger_tokens, cfg.pause_after_compaction) == (150_000, 50_000, False)
    with pytest.raises(InvalidConfig, match="50,000"):
        CompactionConfig(trigger_tokens=49_999)
    with pytest.raises(InvalidConfig, match="pause_after_compaction"):
        CompactionConfig(preserve_messages=2)
    assert CompactionConfig(trigger_tokens=2_000, min_trigger_tokens=1_000).trigger_tokens == 2_000


def test_compaction_triggers_when_the_prompt_exceeds_the_trigger() -> None:
    c = Conversation("c", chat(3).messages[:-1])
    tokens = state_of(small(1), c, MODEL).view_size()[0]
    assert small(tokens).decide(state_of(small(tokens), c, MODEL), "auto") is None
    plan = small(tokens - 1).decide(state_of(small(tokens - 1), c, MODEL), "auto")
    assert plan is not None and plan.summarize and plan.start == len(c.messages)  # everything is summarised
    assert (plan.summary_request.role, plan.summary_request.prompt) == ("assistant", COMPACTION_PROMPT)
    custom = small(tokens - 1, instructions="Keep code.").decide(state_of(small(1), c, MODEL), "auto")
    assert custom is not None and custom.summary_request.prompt == "Keep code."


def test_compaction_block_replaces_everything_and_the_model_answers_after_it() -> None:
    c = chat(6)
    policy = small(1_000)
    res, captured = capture(policy, c)
    (record,) = compaction_records(res)
    view = record.view
    assert record.mode == "compact" and record.trigger == "auto"
    # at the request for "looking 4" (the prompt first over 1,000 tokens, with "question 4" just appended)
    assert view.start == c.index()["a4"] and record.summarised == (0, view.start)
    assert view.summary is not None and view.summary.role == "assistant"
    assert view.summary.text.startswith("<summary>\n## Goal\nquestion 1") and view.summary.text.endswith("\n</summary>")
    # that request: the system prompt, then the block alone, which the model continues
    after = next(cap for cap in captured if cap.view is view).rendered
    assert [m["role"] for m in after] == ["system", "assistant"]
    assert text_of(after[-1]["content"]) == view.summary.text
    assert record.tokens_after < record.tokens_before
    # "question 4" went into the block: the declared live-turn deviation, until "question 5" arrives
    assert sorted({(v.invariant, v.turn) for v in res.violations}) == [("live-turn", 6), ("live-turn", 7)]
    assert res.summary["finish_reason"] == "completed"


def test_a_second_compaction_summarises_the_block_with_what_followed_it() -> None:
    policy = small(800)
    res = run(policy, chat(6), CONFIG)
    records = compaction_records(res)
    assert len(records) >= 2
    for before, after in zip(records, records[1:], strict=False):
        assert after.summarised == (before.view.start, after.view.start)  # regenerate: previous block folded in
        assert after.view.summary is not None and after.view.summary.compaction_id == after.id


def test_pause_after_compaction_lets_the_client_keep_the_newest_messages() -> None:
    c = Conversation("p", chat(3).messages[:-1])  # ends with result 3: the request for "answer 3" is next
    policy = small(800, pause_after_compaction=True, preserve_messages=2)
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    # the newest two messages are "looking 3" and its result, one atomic unit: kept verbatim after the block
    assert plan is not None and plan.start == c.index()["a3"]
    no_pause = small(800).decide(state_of(policy, c, MODEL), "auto")
    assert no_pause is not None and no_pause.start == len(c.messages)
    res, captured = capture(policy, chat(6))
    first = compaction_records(res)[0]
    shown = next(cap for cap in captured if cap.view is first.view).rendered
    assert [(m["role"], text_of(m["content"])[:9]) for m in shown[2:]] == [
        ("assistant", "looking 3"),
        ("user", "result 3 "),
    ]
    assert shown[1]["role"] == "assistant" and text_of(shown[1]["content"]).startswith("<summary>")


def test_compacting_inside_a_thinking_loop_is_accepted() -> None:
    """The server compacts mid tool loop; the model then answers afresh after the block, thinking included, which
    the next scripted reply stands for: Anthropic accepts the loop's later steps after it."""
    drafts: list[Draft | Message] = [sys("agent"), user("task " + "x" * 400)]
    for k in range(1, 6):
        drafts += [asst(calls=[f"c{k}"], thinking="t " * 100 if k == 1 else None), tool(f"c{k}", "r" * 800)]
    drafts.append(asst("done"))
    policy = small(900)
    res = run(policy, conv(*drafts), CONFIG)
    assert res.summary["compaction_count"] >= 1 and res.summary["finish_reason"] == "completed"
    assert {v.invariant for v in res.violations} <= {"live-turn"}


def test_a_revert_of_a_summarised_change_rolls_the_view_back() -> None:
    c = conv(
        sys("agent"),
        user("edit a.py " + "q" * 400, change("ch1", "edit a.py")),
        asst("ok " + "a" * 400),
        user("more " + "q" * 400),
        asst("sure " + "a" * 400),
        user("undo that", revert("ch1")),
        asst("undone"),
    )
    policy = small(300)
    res = run(policy, c, CONFIG)
    modes = [r.mode for r in compaction_records(res)]
    assert "rollback" in modes
    assert "revert-resolution" not in {v.invariant for v in res.violations}


# -- compaction_control (client SDK) ---------------------------------------------------------------------------
def sdk(threshold: int) -> AnthropicSDKCompaction:
    return AnthropicSDKCompaction(SDKCompactionConfig(context_token_threshold=threshold))


def test_sdk_defaults_and_when_it_is_asked() -> None:
    assert SDKCompactionConfig().context_token_threshold == 100_000
    p = AnthropicSDKCompaction()
    st = state_of(p, chat(1), MODEL)
    assert p.when == frozenset({"response"}) and p.asked_at(st, "response") and not p.asked_at(st, "request")


def test_sdk_threshold_is_the_last_responses_input_plus_output() -> None:
    c = chat(2)
    reply = Message("a2", "assistant", c.messages[6].parts, usage=Usage(input_tokens=10, output_tokens=500))
    msgs = (*c.messages[:6], reply)  # ends with the reply "looking 2": the response point
    convo = Conversation("s", msgs)
    assert AnthropicSDKCompaction.tokens_used(state_of(sdk(1), convo, MODEL, context=9_500)) == 10_000
    assert sdk(10_001).decide(state_of(sdk(1), convo, MODEL, context=9_500), "auto") is None
    plan = sdk(10_000).decide(state_of(sdk(1), convo, MODEL, context=9_500), "auto")  # "< threshold" does not
    assert plan is not None and plan.summarize and plan.start == len(msgs) - 1
    assert (plan.summary_request.role, plan.summary_request.prompt) == ("user", SDK_SUMMARY_PROMPT)
    # not right after a response to the view: no usage to read
    before = Conversation("s", msgs[:-1])
    assert sdk(1).decide(state_of(sdk(1), before, MODEL, context=9_500), "auto") is None
    moved = state_of(sdk(1), convo, MODEL, context=9_500)
    moved.view_at_last_request = View(start=0)
    assert sdk(1).decide(moved, "auto") is None


def test_sdk_replaces_the_history_with_one_user_summary_after_the_response() -> None:
    c = chat(6)
    policy = sdk(1_000)
    res, captured = capture(policy, c)
    first, second = compaction_records(res)
    # right after "answer 3": its request carried about 1,020 tokens, over 1,000 with the answer's output
    assert first.view.start == c.index()["e3"] and first.summarised == (0, first.view.start)
    assert first.mode == "summarize" and first.turn == 6
    view = first.view
    assert view.summary is not None and view.summary.role == "user"
    assert view.summary.text.startswith("<summary>\n## Goal\nquestion 1") and view.summary.text.endswith("</summary>")
    # the next request: the summary, then the reply standing in for the re-asked answer, then what followed
    after = next(cap for cap in captured if cap.view is view).rendered
    assert [(m["role"], text_of(m["content"])[:8]) for m in after] == [
        ("system", "You are "),
        ("user", "<summary"),
        ("assistant", "answer 3"),
        ("user", "question"),
    ]
    # the second compaction regenerates: the first summary and everything since, up to the new reply
    assert second.summarised == (first.view.start, second.view.start)
    assert second.view.start == c.index()["a6"]  # a reply with a call: its result follows it in the view
    assert sorted({(v.invariant, v.turn) for v in res.violations}) == [("live-turn", 11)]


def test_sdk_keeps_a_pending_turn_and_compacts_inside_a_thinking_loop() -> None:
    c = chat(6)
    msgs = list(c.messages)
    msgs[10] = Message("a3", "assistant", msgs[10].parts, pending=True)  # "looking 3" asks for approval, unanswered
    res = run(sdk(1_000), Conversation("p", tuple(msgs)), CONFIG)
    (record,) = compaction_records(res)
    # after "answer 3" the SDK would summarise everything; the pending turn (from "question 3") stays whole
    assert record.view.start == c.index()["u3"] and record.summarised == (0, c.index()["u3"])
    assert res.violations == []
    drafts: list[Draft | Message] = [sys("agent"), user("task " + "x" * 400)]
    for k in range(1, 6):
        drafts += [asst(calls=[f"c{k}"], thinking="t " * 100 if k == 1 else None), tool(f"c{k}", "r" * 800)]
    drafts.append(asst("done"))
    policy = sdk(900)
    inside = run(policy, conv(*drafts), CONFIG)  # the reply kept after the summary stands for the re-asked answer
    assert inside.summary["compaction_count"] >= 1 and inside.summary["finish_reason"] == "completed"
    assert {v.invariant for v in inside.violations} <= policy.known_deviations


def test_sdk_rolls_back_before_a_request_that_carries_a_revert_of_a_summarised_change() -> None:
    c = conv(
        sys("agent"),
        user("edit a.py " + "q" * 400, change("ch1", "edit a.py")),
        asst("ok " + "a" * 400),
        user("more " + "q" * 400),
        asst("sure " + "a" * 400),
        user("undo that", revert("ch1")),
        asst("undone"),
    )
    res = run(sdk(300), c, CONFIG)
    assert "rollback" in [r.mode for r in compaction_records(res)]
    assert "revert-resolution" not in {v.invariant for v in res.violations}


# -- properties on generated conversations ---------------------------------------------------------------------
WINDOW = 8_000
NAMES = ("anthropic-clear-tool-uses", "anthropic-clear-thinking", "anthropic-compaction", "anthropic-sdk-compaction")
# The token defaults scaled to the small window, as csim check and the bundled property tests scale them.
SCALED = {n: effective_params(load_policy_class(n), {}, WINDOW)[0] for n in NAMES}
SMALL = RunConfig(model=small_model(WINDOW), tokenizer="chars4", deep_checks=True)
PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY
@given(c=conversations(window=WINDOW))
def test_only_declared_deviations_with_triggers_scaled_to_a_small_window(name: str, c: Conversation) -> None:
    policy = make_policy(name, SCALED[name])
    res = Engine(policy, c, SMALL).run()
    assert {v.invariant for v in res.violations} <= policy.known_deviations, [str(v) for v in res.violations]


@PROPERTY
@given(c=conversations(window=WINDOW))
def test_clearing_spares_the_newest_three_and_never_restores_a_cleared_result(c: Conversation) -> None:
    policy = make_policy("anthropic-clear-tool-uses", SCALED["anthropic-clear-tool-uses"])
    _, captured, eng = run_capture(policy, c, SMALL)
    cleared_before: set[str] = set()
    for cap in captured:
        results = tool_contents(cap.rendered)
        order = [cid for cid in calls_of(cap.rendered) if cid in results]
        cleared = {cid for cid, text in results.items() if text == PLACEHOLDER}
        assert not cleared & set(order[-3:])
        assert cleared_before <= cleared
        cleared_before = cleared
    assert eng.state.view.start == 0 and eng.state.view.summary is None  # an edit, never a cut


class Shown:
    """A conversation with a short repr (``find`` builds the repr of what it found; past 30 kB it warns)."""

    def __init__(self, c: Conversation) -> None:
        self.c = c

    def __repr__(self) -> str:
        return f"<conversation of {len(self.c.messages)} messages>"


@pytest.mark.parametrize("name", NAMES)
def test_generated_conversations_reach_each_policys_action(name: str) -> None:
    """The properties above prove something: with the scaled triggers each policy does act on generated input."""

    def acts(s: Shown) -> bool:
        return bool(compaction_records(Engine(make_policy(name, SCALED[name]), s.c, SMALL).run()))

    found = find(
        conversations(window=WINDOW).map(Shown),
        acts,
        settings=settings(max_examples=200, deadline=None, database=None, derandomize=True, phases=[Phase.generate]),
    )
    assert acts(found)
