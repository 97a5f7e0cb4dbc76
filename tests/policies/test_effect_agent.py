"""effect-agent against the real code (issue 11): each test names the function of danieljvdm/effect-agent @4629174
whose behaviour it checks and says what that function does.

Sources: ``packages/engine/src/compaction.ts`` (``choosePruneBound``, ``chooseSummarizeCut``,
``buildCompactedView``, ``renderForSummary``, ``estimateMessageTokens``), the run loop in
``packages/engine/src/index.ts`` (``nextContextEstimate``, ``compactContext``, the pre-Turn seam and the overflow
retry) and ``packages/core/src/tool-result.ts`` (``applyToolResultBounds``).
"""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

import sim.replay.compaction as compaction_mod
from policies import _js_json as js
from policies.effect_agent import (
    PLACEHOLDER,
    SUMMARY_INPUT_BUDGET,
    EffectAgent,
    EffectAgentConfig,
    bound_result,
    effect_message,
    message_tokens,
    prompt_spans,
    prompt_tokens,
)
from sim.core.conversation import Message, Part
from sim.core.retention import SummariserConfig
from sim.replay.engine import RunConfig, run
from tests.builders import asst, compaction_records, conv, fact, log_messages, state_of, sys, tool, user

C4 = RunConfig(tokenizer="chars4")


def policy(**kw: object) -> EffectAgent:
    return EffectAgent(EffectAgentConfig(**kw))  # type: ignore[arg-type]


def mixed_chat(n: int, text: int = 600, size: int = 1200):  # type: ignore[no-untyped-def]
    drafts = [sys("You are a research agent."), user("Find where the config is loaded.", id="task")]
    for i in range(n):
        drafts += [
            asst(f"step {i}: " + "w" * text, calls=[f"c{i}"], id=f"a{i}"),
            tool(f"c{i}", f"hit {i} " + "r" * (size - 6), id=f"t{i}"),
        ]
    return conv(*drafts)


# -- item 4: the overflow retry always summarises --------------------------------------------------------------
def test_overflow_retry_summarises_without_pruning_in_every_mode() -> None:
    """``compactContext(..., forceSummarize = true)`` on a classified provider overflow: the prune stage is
    skipped (``if (!forceSummarize && mode !== "summarize")``) and ``mode === "prune"`` does not return early
    (``if (mode === "prune" && !forceSummarize)``): it goes straight to the summary."""
    c = mixed_chat(10)
    for mode in ("prune", "prune-then-summarize", "summarize"):
        p = policy(context_token_limit=1_000, keep_recent_tokens=800, mode=mode)
        st_ = state_of(p, c, context=50_000)
        plan = p.decide(st_, "overflow")
        assert plan is not None and plan.summarize, mode
        assert plan.cleared_through == st_.view.cleared_through == 0, mode  # no prune
        auto = p.decide(st_, "auto")
        assert auto is not None
        if mode != "summarize":
            assert auto.cleared_through is not None and auto.cleared_through > 0  # the threshold path prunes


# -- item 5: the run's instructions and input stay before the summary ---------------------------------------
def test_the_runs_input_is_protected_and_sits_before_the_summary() -> None:
    """``buildCompactedView``: messages of the protected instruction/input block (``protectedStart`` ..
    ``protectedEnd``, set from the initial prompt) below the cut are rendered in place, then the summary message,
    then the tail; ``collectCoveredMessages`` leaves them out of the summariser's input."""
    c = mixed_chat(10)
    p = policy(context_token_limit=1_000, keep_recent_tokens=800, mode="summarize")
    st_ = state_of(p, c, context=50_000)
    plan = p.decide(st_, "auto")
    assert plan is not None and plan.summarize
    task = c.index()["task"]
    assert plan.pinned == (task,) and plan.start > task
    after = plan.view_from(st_.view)
    assert after.shows(task) and after.summary_slot is None  # the summary goes right before the tail


# -- item 6: the trigger is ">" ------------------------------------------------------------------------------
def test_trigger_is_strictly_greater_than_the_limit() -> None:
    """The pre-Turn seam compacts when ``estimate + outputContractTokens > policy.contextTokenLimit``: an estimate
    equal to the limit does not compact."""
    c = mixed_chat(6)
    st_ = state_of(EffectAgent(), c, context=5_000)
    est = EffectAgent.estimate(st_)
    assert est == 5_000
    assert policy(context_token_limit=est, keep_recent_tokens=800).decide(st_, "auto") is None
    assert policy(context_token_limit=est - 1, keep_recent_tokens=800).decide(st_, "auto") is not None
    assert policy(context_token_limit=est).over_trigger(st_) is False
    assert policy(context_token_limit=est - 1).over_trigger(st_) is True


# -- item 7: the estimate -------------------------------------------------------------------------------------
# Printed by effect 4.0.0-rc.110 (the version effect-agent @4629174 pins) under node: JSON.stringify of the messages
# the engine builds (Prompt.makeMessage / makePart for a tool result and a user's text; the golden file of
# tests/conformance/test_conformance_effect_agent.py holds every shape the tests build).
EFFECT_TOOL_JSON = (
    '{"content":[{"id":"c1","name":"grep","result":"abc","isFailure":false,"providerExecuted":false,'
    '"~effect/ai/Prompt/Part":"~effect/ai/Prompt/Part","type":"tool-result","options":{}}],'
    '"~effect/ai/Prompt/Message":"~effect/ai/Prompt/Message","role":"tool","options":{}}'
)
EFFECT_USER_JSON = (
    '{"content":[{"text":"éééééééééé","~effect/ai/Prompt/Part":"~effect/ai/Prompt/Part","type":"text","options":{}}],'
    '"~effect/ai/Prompt/Message":"~effect/ai/Prompt/Message","role":"user","options":{}}'
)


def test_message_estimate_is_effects_own_json_over_four() -> None:
    """``estimateMessageTokens``: ``Math.ceil(utf8Length(JSON.stringify(message)) / 4)`` over the message as
    Effect's ``Prompt`` holds it: each part's fields, its ``~effect/ai/Prompt/Part`` key, ``type`` and ``options``,
    and the message's ``~effect/ai/Prompt/Message`` key (issue 35: the estimate lacked the type-id keys)."""
    m = Message("t", "tool", (Part("tool_result", "abc", call_id="c1", name="grep"),))
    assert js.dumps(effect_message([m])) == EFFECT_TOOL_JSON
    assert message_tokens(m) == math.ceil(len(EFFECT_TOOL_JSON) / 4) == 66
    é = Message("u", "user", (Part("text", "é" * 10),))  # two UTF-8 bytes each
    assert js.dumps(effect_message([é])) == EFFECT_USER_JSON
    assert message_tokens(é) == math.ceil(len(EFFECT_USER_JSON.encode()) / 4)


def test_a_batch_is_one_tool_message() -> None:
    """The engine holds a batch's results as one tool message (``Prompt.makeMessage("tool", {content:
    orderedResults.map(...)})``): sized as one (one message frame, the parts joined), not one a result."""
    batch = [
        Message("t1", "tool", (Part("tool_result", "abc", call_id="c1", name="grep"),)),
        Message("t2", "tool", (Part("tool_result", "abc", call_id="c2", name="grep"),)),
    ]
    assert prompt_spans(batch, 0, 2) == [(0, 2)]
    one = js.dumps(effect_message(batch))
    assert one.count("~effect/ai/Prompt/Message") == 2 and one.count('"type":"tool-result"') == 2
    assert prompt_tokens(batch) == math.ceil(len(one) / 4) < 2 * message_tokens(batch[0])


def test_estimate_is_last_input_plus_last_output_plus_json_of_what_came_since() -> None:
    """``nextContextEstimate``: ``lastInputTokens + lastOutputTokens + estimatePromptTokens(view.slice(
    lastViewLength))``. The view gained the reply and its results since the last call, so the reply is counted
    twice (as output and in the JSON estimate); right after a compaction (``lastViewLength = -1``) it is the JSON
    estimate of the whole view."""
    c = mixed_chat(3)
    seen: list[tuple[int, int | None, int | None]] = []

    class Spy(EffectAgent):
        def decide(self, state, trigger):  # type: ignore[no-untyped-def]
            seen.append((EffectAgent.estimate(state), state.last_input_tokens, state.last_output_tokens))
            return super().decide(state, trigger)

    res = run(Spy(EffectAgentConfig(context_token_limit=10**6)), conv(*c.messages, asst("done")), C4)
    rows = [r for r in res.rows if r["request_kind"] == "agent"]
    msgs = log_messages(res)
    replies = [i for i, m in enumerate(msgs) if m.role == "assistant"]
    # before the first call: the JSON estimate of the whole view (system prompt and task)
    assert seen[0][0] == sum(message_tokens(m) for m in msgs[: replies[0]])
    for k in range(1, len(replies)):
        since = msgs[replies[k - 1] : replies[k]]  # the previous reply and its result
        expected = rows[k - 1]["context_tokens"] + rows[k - 1]["output_tokens"] + sum(map(message_tokens, since))
        assert seen[k][0] == expected
        assert since[0].role == "assistant" and rows[k - 1]["output_tokens"] > 0  # the reply, counted twice


# -- item 9: tool-result bounds --------------------------------------------------------------------------------
def test_original_bytes_counts_the_json_encoded_result() -> None:
    """``applyToolResultBounds(encodedJson, bounds)``: the input is the result's JSON text, so a 600-character
    string is 602 bytes (its quotes), and escapes count: 200 quote characters (200 bytes raw) encode to 402
    bytes and go over a 256-byte bound."""
    part = Part("tool_result", "x" * 600, call_id="c", name="t")
    env = json.loads(bound_result(part, 256).text)
    assert env["originalBytes"] == 602 == bound_result(part, 256).original_bytes
    quotes = Part("tool_result", '"' * 200, call_id="c", name="t")
    assert len(quotes.text.encode()) < 256
    assert (
        bound_result(quotes, 256) is not quotes and json.loads(bound_result(quotes, 256).text)["originalBytes"] == 402
    )
    fits = Part("tool_result", "x" * 254, call_id="c", name="t")  # 256 bytes encoded
    assert bound_result(fits, 256) is fits


# applyToolResultBounds (effect-agent @4629174) on JSON.stringify of an object, run under node with a 256-byte bound:
# the envelope's head and tail are a prefix and a suffix of the object's compact JSON (integer-like keys first, as a
# JavaScript object orders them), and originalBytes is that JSON's length.
OBJECT_VALUE = '{"b": "x", "10": [1.0, 1e21], "a": "' + "y" * 400 + '"}'
OBJECT_ENVELOPE = (
    '{"truncatedToolResult":true,"originalBytes":431,"head":"{\\"10\\":[1,1e+21],\\"b\\":\\"x\\",\\"a\\":\\"'
    + "y" * 60
    + '","tail":"'
    + "y" * 87
    + '\\"}"}'
)


def test_an_object_result_is_bounded_as_its_json_value() -> None:
    """``boundEncodedToolResult``: the bound applies to ``JSON.stringify`` of the result, which for an object is its
    compact JSON, not a quoted string of it; the envelope carries the value's text, ``originalBytes`` its bytes, and
    history keeps the envelope as an object (issue 35: an object result was bounded as a string)."""
    part = Part("tool_result", OBJECT_VALUE, call_id="c", name="t", is_json=True)
    out = bound_result(part, 256)
    assert out.text == OBJECT_ENVELOPE and out.is_json and out.original_bytes == 431
    assert len(out.text.encode()) <= 256
    as_string = bound_result(Part("tool_result", OBJECT_VALUE, call_id="c", name="t"), 256)
    assert json.loads(as_string.text)["originalBytes"] == len(json.dumps(OBJECT_VALUE).encode()) != 431
    # within the bound the value passes as it is, and the estimate counts it as the object
    small = Part("tool_result", '{"a": 1}', call_id="c", name="t", is_json=True)
    assert bound_result(small, 256) is small
    assert '"result":{"a":1}' in js.dumps(effect_message([Message("t", "tool", (small,))]))


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=900),
    max_bytes=st.integers(256, 1_200),
)
def test_the_envelope_never_exceeds_the_bound(text: str, max_bytes: int) -> None:
    """``applyToolResultBounds``: "the returned value never exceeds ``maxBytes``"; ``head`` and ``tail`` are "an
    exact prefix and suffix of the original encoded JSON text", split about 50/50 of the budget left after the
    envelope's own framing. Within the bound, the result passes unchanged."""
    part = Part("tool_result", text, call_id="c", name="t")
    out = bound_result(part, max_bytes)
    encoded = json.dumps(text, ensure_ascii=False)
    if len(encoded.encode()) <= max_bytes:
        assert out is part
        return
    assert len(out.text.encode()) <= max_bytes
    env = json.loads(out.text)
    assert list(env) == ["truncatedToolResult", "originalBytes", "head", "tail"]
    assert env["originalBytes"] == len(encoded.encode()) == out.original_bytes
    assert encoded.startswith(env["head"]) and encoded.endswith(env["tail"])
    assert out.text == json.dumps(env, ensure_ascii=False, separators=(",", ":"))  # compact, as JSON.stringify


# -- item 10: the summariser's input keeps both ends ---------------------------------------------------------
def test_summariser_input_keeps_the_oldest_and_newest_messages_within_80000(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``renderForSummary``: when the covered messages (each clipped at 2,000 characters) do not fit
    ``SUMMARY_INPUT_BUDGET`` (80,000) less the instruction, the previous summary and a 128-character reserve,
    the oldest blocks fill up to half, the newest the rest, and ``[… N messages omitted from summary input …]``
    stands for the middle. The oldest covered result reaches the summariser, a middle one does not."""
    n = 70
    drafts = [sys("You are a research agent."), user("Find where the config is loaded.", id="task")]
    for i in range(n):
        drafts += [asst(f"step {i}", calls=[f"c{i}"], id=f"a{i}"), tool(f"c{i}", f"hit {i} " + "r" * 3000, id=f"t{i}")]
    p = policy(context_token_limit=40_000, keep_recent_tokens=1_000, mode="summarize")
    cfg = RunConfig(tokenizer="chars4", summariser=SummariserConfig(keep_recall=1.0))
    lo, hi = compaction_records(run(p, conv(*drafts, asst("done")), cfg))[0].summarised
    covered = [i for i in range(max(lo, 3), hi) if i % 2 == 1]  # tool messages sit at odd indices from 3
    old, mid, new = covered[0], covered[len(covered) // 2], covered[-1]
    facts = [
        fact(name, "recall", f"hit {(i - 3) // 2} ", f"t{(i - 3) // 2}")
        for name, i in (("old", old), ("mid", mid), ("new", new))
    ]
    c = conv(*drafts, asst("done"), facts=facts)
    seen: list[set[str]] = []
    real = compaction_mod.summarise

    def spy(**kw):  # type: ignore[no-untyped-def]
        seen.append({f.id for f in kw["candidates"]})
        return real(**kw)

    monkeypatch.setattr(compaction_mod, "summarise", spy)
    res = run(p, c, cfg)
    calls = [r for r in res.rows if r["request_kind"] == "summariser"]
    assert calls and seen
    assert {"old", "new"} <= seen[0] and "mid" not in seen[0]
    # chars/4 of at most 80,000 characters, plus request framing and the rounding up of each counted piece
    assert calls[0]["context_tokens"] <= SUMMARY_INPUT_BUDGET / 4 * 1.02


# -- declared differences ------------------------------------------------------------------------------------
def test_a_cut_inside_a_thinking_tool_loop_falls_where_the_real_walk_puts_it() -> None:
    """``chooseSummarizeCut`` walks the cut down only "across any tool messages", so it may cut at an
    assistant message inside a thinking tool loop; ours cuts there too (a step and its results are one unit)."""
    drafts = [sys("s"), user("task", id="task"), asst("a", thinking="plan", calls=["l0"], id="l0a")]
    drafts.append(tool("l0", "x" * 2000, id="l0t"))
    for i in range(1, 6):
        drafts += [asst(f"go on {i}", calls=[f"l{i}"], id=f"l{i}a"), tool(f"l{i}", "y" * 400, id=f"l{i}t")]
    c = conv(*drafts)
    p = policy(context_token_limit=100, keep_recent_tokens=500, mode="summarize")
    st_ = state_of(p, c, context=50_000)
    # The real walk: from the newest, add messages until they reach 500 tokens, then step off tool messages.
    msgs, kept, cut = c.messages, 0, 0
    for i in range(len(msgs) - 1, -1, -1):
        kept += message_tokens(msgs[i])
        if kept >= 500:
            cut = i
            break
    while cut > 0 and msgs[cut].role == "tool":
        cut -= 1
    assert msgs[cut].role == "assistant" and cut > c.index()["l0a"]  # inside the loop
    plan = p.decide(st_, "auto")
    assert plan is not None and plan.start == cut


def test_a_prune_that_frees_nothing_is_skipped() -> None:
    """``choosePruneBound`` moves ``clearedThrough`` past every older tool message that does not fit, and
    ``compactContext`` clears it even when the result is shorter than ``[tool result cleared by compaction]``, so
    the prompt grows. Declared difference: ours skips a prune that frees nothing."""
    drafts = [sys("s"), user("task")]
    for i in range(6):
        drafts += [asst(f"s{i}", calls=[f"c{i}"]), tool(f"c{i}", "ok")]
    c = conv(*drafts)
    p = policy(context_token_limit=10, keep_recent_tokens=0, mode="prune")
    st_ = state_of(p, c, context=50_000)
    assert EffectAgent._prune_bound(st_, 0) > 0  # the real bound moves ...
    assert len("ok") < len(PLACEHOLDER)  # ... over results shorter than the placeholder
    assert p.decide(st_, "auto") is None


def test_a_prune_that_grows_the_prompt_in_tokens_is_skipped() -> None:
    """Results of 48 characters are longer than the 35-character placeholder but tokenise shorter (``aaa...`` is a
    few cl100k tokens, the placeholder more): clearing them frees characters and grows the prompt. The prune is
    judged by the measure ``compaction-shrinks`` uses, so it is skipped (issue 35: in ``prune`` mode it was made,
    and the invariant fired)."""
    drafts = [sys("You are a research agent."), user("Find where the config is loaded.")]
    for i in range(10):
        drafts += [asst(f"step {i}", calls=[f"c{i}"]), tool(f"c{i}", "a" * 48)]
    c = conv(*drafts, asst("done"))
    assert len("a" * 48) > len(PLACEHOLDER)
    res = run(policy(context_token_limit=400, keep_recent_tokens=0, mode="prune"), c, RunConfig())
    assert res.compactions == [] and not res.violations


def test_prune_mode_compacts_every_turn_when_results_cannot_bring_it_under() -> None:
    """Declared ``compaction-loop``: the real engine compacts once per Turn and sends the request over the limit
    ("the Turn proceeds anyway"); when clearing results cannot bring the view under the limit (the assistant's own
    text fills it), ``prune`` mode clears one more result before every call, each time still over the limit. With
    a summary it gets under, and does not loop."""
    drafts = [sys("You are a research agent."), user("Find where the config is loaded.")]
    for i in range(12):
        drafts += [asst(f"thinking aloud {i} " + "w" * 1200, calls=[f"c{i}"]), tool(f"c{i}", f"hit {i} " + "r" * 400)]
    c = conv(*drafts, asst("done"))
    looping = run(policy(context_token_limit=2_000, keep_recent_tokens=300, mode="prune"), c, C4)
    assert "compaction-loop" in {v.invariant for v in looping.violations} <= EffectAgent.known_deviations
    assert [x["mode"] for x in looping.compactions].count("prune") > 3
    summarising = run(policy(context_token_limit=2_000, keep_recent_tokens=300), c, C4)
    assert not summarising.violations and summarising.compactions


def test_summariser_transcript_is_render_for_summary_blocks(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``renderForSummary``: each covered message as ``[role]`` then a newline and its parts (a call ``[tool call NAME
    ARGS]``, a result ``[tool result NAME: JSON]`` with the string result quoted, thinking left out), the text
    clipped at 2,000 characters with ``…`` and no space; the request is the instruction, then the transcript in
    ``<transcript>`` tags (issue 35: the transcript read ``user: `` ... `` …``, the shared default)."""
    drafts = [sys("s"), user("task", id="task"), asst("a plan", thinking="secret plan"), user("go on")]
    for i in range(6):
        drafts += [asst(f"step {i}", calls=[f"c{i}"]), tool(f"c{i}", f"hit {i} " + "r" * 2500)]
    c = conv(*drafts, asst("done"))
    seen: list[str] = []
    real = compaction_mod.summariser_input

    def spy(*a, **kw):  # type: ignore[no-untyped-def]
        given = real(*a, **kw)
        seen.append("".join(given.pieces))
        return given

    monkeypatch.setattr(compaction_mod, "summariser_input", spy)
    run(policy(context_token_limit=1_500, keep_recent_tokens=700, mode="summarize"), c, C4)
    text = seen[0]
    assert text.startswith(
        "\n\n<transcript>\n[assistant]\na plan\n\n[user]\ngo on\n\n[assistant]\nstep 0\n[tool call grep {}]"
    )
    assert '\n\n[tool]\n[tool result grep: "hit 0 rrr' in text
    assert "r…\n\n[assistant]" in text and text.endswith("\n</transcript>")
    assert "secret plan" not in text and "user: " not in text and " …" not in text


# -- declared: the run-status line -------------------------------------------------------------------------------
def test_run_status_line_has_the_real_format() -> None:
    """``formatRunStatus``: ``<run-status>turn T/MAX · tool-calls U/MAX · tokens C/BUDGET · last-context L ·
    elapsed Es/MAXs</run-status>``, an unset token budget reading ``unbounded``, and at 80% of a limit the
    warning " · WARNING: approaching limits — converge and deliver your final result now." inside the tag, the
    elapsed seconds floored (``Math.floor``) and counted among the limits. The seed's example line exactly.
    Declared: an unset turn, tool-call or duration limit reads ``unbounded`` (the real requires them)."""
    from sim.core.budgets import Budgets, BudgetTracker

    warning = " · WARNING: approaching limits — converge and deliver your final result now.</run-status>"
    t = BudgetTracker(Budgets(max_turns=12, max_tool_calls=24, token_budget=200_000, max_duration=300))
    t.turns, t.tool_calls, t.tokens, t.last_context, t.elapsed_seconds = 2, 11, 84_210, 23_480, 74.9
    assert t.status_line() == (
        "<run-status>turn 3/12 · tool-calls 11/24 · tokens 84210/200000 · last-context 23480 · elapsed 74s/300s"
        "</run-status>"
    )
    t.tokens = 160_000  # 80% of the token budget
    assert t.status_line().endswith(warning)
    t.tokens, t.elapsed_seconds = 84_210, 239.9  # floored to 239: under 80% of 300
    assert not t.status_line().endswith(warning)
    t.elapsed_seconds = 240.0  # 240 * 5 >= 300 * 4
    assert t.status_line().endswith(warning)
    assert BudgetTracker(Budgets()).status_line() == (
        "<run-status>turn 1/unbounded · tool-calls 0/unbounded · tokens 0/unbounded · last-context 0</run-status>"
    )
    t = BudgetTracker(Budgets(), elapsed_seconds=5.5)
    assert t.status_line().endswith("last-context 0 · elapsed 5s/unbounded</run-status>")


def test_a_span_too_small_for_its_summary_is_not_summarised() -> None:
    """``compactContext`` summarises whatever ``collectCoveredMessages`` returns, however short, so a summary longer
    than the span grows the prompt. Declared difference: ours skips such a span."""
    c = conv(
        sys("s"),
        user("task", id="task"),
        asst("x", calls=["c1"]),
        tool("c1", "y"),
        asst("z " * 1500, id="big"),
        user("go on"),
    )
    p = policy(context_token_limit=10, keep_recent_tokens=500, mode="summarize")
    st_ = state_of(p, c, context=50_000)
    cut = EffectAgent._summary_cut(st_, 500, 0)
    assert cut == c.index()["big"] and cut > c.index()["task"] + 1  # the real covers [2, cut): two tiny messages
    assert p.decide(st_, "auto") is None


def test_an_empty_summary_is_refused() -> None:
    """``compactContext`` keeps ``"(no summary produced)"`` when the summariser answers nothing. Declared
    difference: ours leaves the view unchanged (the ``failed-summary-unchanged`` invariant every policy is held
    to)."""
    res = run(
        policy(context_token_limit=2_000, keep_recent_tokens=500, mode="summarize"),
        conv(*mixed_chat(12).messages, asst("done")),
        RunConfig(tokenizer="chars4", summariser=SummariserConfig(empty_rate=1.0)),
    )
    assert [r for r in res.rows if r["request_kind"] == "summariser"]
    assert res.compactions == [] and not res.violations
