"""The inspect-* policies (``policies/inspect_ai.py``): inspect_ai's four compaction strategies.

Each test names the inspect_ai source it checks (``UKGovernmentBEIS/inspect_ai@499e6152``,
``src/inspect_ai/model/_compaction/``). Decisions are driven on a state built with
:func:`tests.builders.state_of` where a boundary matters; views are shown end to end with the engine and the
``chars4`` tokenizer. The conformance suite (``tests/conformance/test_conformance_inspect_ai.py``) compares
the same behaviour with inspect_ai's own functions.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings

from policies import make_policy
from policies.inspect_ai import (
    CONTINUE_TEXT,
    SUMMARY_WRAPPER,
    TOOL_RESULT_REMOVED,
    InspectAuto,
    InspectAutoConfig,
    InspectSummary,
    InspectSummaryConfig,
    InspectTrim,
    InspectTrimConfig,
    context_tokens,
    input_indices,
    threshold_tokens,
)
from policies.inspect_ai_edit import InspectEdit, InspectEditConfig
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.log import CompactionCreated, CompactionFailed, MessageAppended
from sim.core.model import ModelConfig
from sim.core.view import Injected, Messages, Summary, View, edit_parts, layout
from sim.replay.engine import Engine, RunConfig, run
from sim.replay.strategies import conversations, small_model
from tests.builders import (
    Draft,
    asst,
    call,
    change,
    compact_cmd,
    compaction_records,
    conv,
    revert,
    run_capture,
    state_of,
    sys,
    tool,
    tool_contents,
    tools,
    user,
)

# A window of 10,000 with 500 reserved for output: inspect's default threshold is int(0.9 * 10,000) = 9,000.
MODEL = ModelConfig(context_window=10_000, output_reserve=500)
C4 = RunConfig(model=MODEL, tokenizer="chars4")
OUT = 1_600  # characters of a tool result: about 400 tokens


def steps(n: int, *, first: int = 1, size: int = OUT, name: str = "bash", thinking: bool = False) -> list[Draft]:
    """``n`` tool steps: an assistant message with one call, then its result (ids ``a<k>``, ``t<k>``)."""
    out: list[Draft] = []
    for k in range(first, first + n):
        out.append(asst(f"step {k}", [call(f"c{k}", name)], thinking=f"think {k}" if thinking else None, id=f"a{k}"))
        out.append(tool(f"c{k}", f"out {k} " + "r" * size, name=name, id=f"t{k}"))
    return out


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are an agent."), user("Fix the parser.", id="task"), *drafts)


def shown(c: Conversation, view: View) -> list[str]:
    """Ids of the messages ``view`` sends, in order; a summary as ``SUMMARY(role)``, an injection as its text."""
    out: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Summary):
            out.append(f"SUMMARY({item.role})")
        elif isinstance(item, Injected):
            out.append(f"{item.text}({item.role})")
        elif isinstance(item, Messages):
            out += [c.messages[i].id for i in range(item.a, item.b)]
    return out


def results(c: Conversation, view: View) -> dict[str, str]:
    """``{call id: result text}`` as ``view`` shows the tool results."""
    out: dict[str, str] = {}
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Messages):
            for i in range(item.a, item.b):
                out.update(
                    {
                        p.call_id or "": p.text
                        for p in edit_parts(c.messages[i], item.rules)
                        if p and p.kind == "tool_result"
                    }
                )
    return out


def forced(policy, c: Conversation, model: ModelConfig = MODEL) -> tuple[View, View]:  # type: ignore[no-untyped-def]
    """The view before and after the policy's forced compaction (react's overflow recovery) of the whole ``c``."""
    st = state_of(policy, c, model)
    plan = policy.decide(st, "overflow")
    assert plan is not None
    return st.view, plan.view_from(st.view)


HIGH = 10**9  # a threshold no view reaches: only forced compactions happen


# -- defaults and configuration --------------------------------------------------------------------------------
def test_defaults_are_inspects() -> None:
    """§B5 / ``types.py``, ``edit.py``, ``trim.py``, ``summary.py``, ``auto.py``: threshold 0.9 everywhere,
    edit keeps 3 tool uses and 1 thinking turn, trim preserves 0.8."""
    assert InspectSummaryConfig().threshold == InspectAutoConfig().threshold == 0.9
    assert InspectEditConfig() == InspectEditConfig(
        threshold=0.9, keep_tool_uses=3, keep_thinking_turns=1, exclude_tools=()
    )
    assert InspectTrimConfig() == InspectTrimConfig(threshold=0.9, preserve=0.8)
    assert InspectAutoConfig().native is True


def test_threshold_is_a_share_of_the_window_or_a_count() -> None:
    """``_resolve_threshold``: a float <= 1 is ``int(threshold * window)``, anything larger a token count."""
    assert threshold_tokens(0.9, 200_000) == 180_000
    assert threshold_tokens(1.0, 8_000) == 8_000
    assert threshold_tokens(150_000, 200_000) == 150_000
    assert threshold_tokens(2.5, 200_000) == 2


@pytest.mark.parametrize(
    ("name", "params", "says"),
    [
        ("inspect-summary", {"threshold": "0"}, "threshold=0.0 must be positive"),
        ("inspect-trim", {"preserve": "1.5"}, "preserve=1.5 must be in [0, 1]"),
        ("inspect-edit", {"keep_tool_uses": "-1"}, "keep_tool_uses=-1 must be >= 0"),
        ("inspect-edit", {"keep_thinking_turns": "-2"}, "keep_thinking_turns=-2 must be >= 0, or unset"),
    ],
)
def test_bad_configs_say_what_to_do(name: str, params: dict[str, str], says: str) -> None:
    with pytest.raises(InvalidConfig, match=re.escape(says)):
        make_policy(name, params)


def test_exclude_tools_from_the_command_line() -> None:
    p = make_policy("inspect-edit", {"exclude_tools": "read_file,web_search", "keep_thinking_turns": "none"})
    assert p.config.exclude_tools == ("read_file", "web_search")
    assert p.config.keep_thinking_turns is None  # inspect's "all"


# -- the handler: trigger, overflow, no /compact ---------------------------------------------------------------
def test_input_is_everything_up_to_the_first_user_message() -> None:
    """``partition_messages``: without ``source="input"`` markers, the input runs to the first user message."""
    c = conv(sys("s"), asst("hello first"), user("the task", id="task"), *steps(1))
    assert list(input_indices(state_of(InspectTrim(), c))) == [1, 2]
    assert list(input_indices(state_of(InspectTrim(), conv(sys("s"), asst("no user yet"))))) == [1]


def test_triggers_only_over_the_threshold() -> None:
    """``compact_fn``: ``if force or total_tokens > threshold`` (strictly over)."""
    c = chat(*steps(6))
    size = state_of(InspectEdit(), c).view_size()[0]
    at = InspectEdit(InspectEditConfig(threshold=size))
    under = InspectEdit(InspectEditConfig(threshold=size - 1))
    assert context_tokens(state_of(at, c)) == size  # no request yet: the view counted
    assert at.decide(state_of(at, c), "auto") is None
    assert under.decide(state_of(under, c), "auto") is not None


def test_count_is_last_usage_plus_new_messages() -> None:
    """``compact_fn``'s baseline: the last call's reported input plus the messages since, counted; so the
    first compaction comes at the first request whose count crosses the threshold, before it is sent."""
    c = chat(*steps(12), asst("done", id="end"))
    reference, *_ = run_capture(make_policy("none"), c, C4)
    sizes = [r["context_tokens"] for r in reference.rows if r["request_kind"] == "agent"]
    threshold = (sizes[7] + sizes[8]) // 2  # request 8 (before a9) is the first one over it
    res, captured, _ = run_capture(InspectEdit(InspectEditConfig(threshold=threshold)), c, C4)
    first = compaction_records(res)[0]
    assert first.turn == 8 and first.trigger == "auto"
    assert captured[7].view == View() and captured[8].view == first.view


def test_overflow_forces_and_compact_command_does_nothing() -> None:
    """react's ``_handle_overflow`` compacts with ``force=True`` whatever the count; inspect has no /compact."""
    c = chat(*steps(5))
    p = InspectEdit(InspectEditConfig(threshold=HIGH))
    st = state_of(p, c)
    assert p.decide(st, "auto") is None and p.decide(st, "manual") is None
    assert p.decide(st, "overflow") is not None
    assert p.retry_on_overflow == 1
    res = run(InspectEdit(InspectEditConfig(threshold=HIGH)), chat(*steps(5), compact_cmd(), asst("ok")), C4)
    assert res.summary["compaction_count"] == 0


def test_overflow_recovery_end_to_end() -> None:
    """The window overflows before the 0.9 threshold is reached (a large output reserve): the forced
    compaction clears old results and the request is retried."""
    model = ModelConfig(context_window=10_000, output_reserve=2_500)  # budget 7,500 < threshold 9,000
    res = run(InspectEdit(), chat(*steps(18), asst("done")), RunConfig(model=model, tokenizer="chars4"))
    triggers = [r.trigger for r in compaction_records(res)]
    assert triggers and set(triggers) == {"overflow"} and res.summary["finish_reason"] == "completed"


# -- edit -----------------------------------------------------------------------------------------------------
def test_edit_clears_all_but_the_newest_three_results_and_old_thinking() -> None:
    """``edit.py``: results of all but the newest ``keep_tool_uses`` uses read ``(Tool result removed)`` (calls
    and ids kept); thinking stays only in the newest ``keep_thinking_turns`` assistant message."""
    c = chat(*steps(5, thinking=True))
    before, after = forced(InspectEdit(InspectEditConfig(threshold=HIGH)), c)
    assert shown(c, after) == shown(c, before)  # nothing leaves the view
    got = results(c, after)
    assert [got[f"c{k}"] == TOOL_RESULT_REMOVED for k in range(1, 6)] == [True, True, False, False, False]
    assert got["c5"].startswith("out 5 ")
    thinking = {
        c.messages[i].id: any(p and p.kind == "thinking" for p in edit_parts(c.messages[i], after.rules_at(i)))
        for i in range(len(c.messages))
        if c.messages[i].role == "assistant"
    }
    assert thinking == {"a1": False, "a2": False, "a3": False, "a4": False, "a5": True}
    rendered = run_capture(make_policy("none"), c, C4)[1]  # calls keep their ids with or without the edit
    assert set(tool_contents(rendered[-1].rendered)) == {f"c{k}" for k in range(1, 5)}


def test_edit_clearing_is_batched_at_threshold_crossings() -> None:
    """§B5: compaction runs only over the threshold and replaces the running view, so results produced after
    a compaction stay whole until the next crossing (unlike a per-request edit)."""
    c = chat(*steps(16), asst("done"))
    res, captured, _ = run_capture(InspectEdit(InspectEditConfig(threshold=3_000)), c, C4)
    turns = [r.turn for r in compaction_records(res)]
    assert len(turns) >= 2 and all(b - a > 1 for a, b in zip(turns, turns[1:], strict=False))
    after_first = captured[turns[0] + 1]  # one request later: one more result, not cleared
    got = tool_contents(after_first.rendered)
    whole = [k for k, v in got.items() if v != TOOL_RESULT_REMOVED]
    assert len(whole) == 4  # the 3 kept at the crossing and the new one


def test_edit_exclude_tools_and_tool_search_are_never_cleared_nor_counted() -> None:
    """``edit.py``: ``exclude_tools`` and ``tool_search`` uses are skipped when collecting tool uses."""
    drafts = steps(2, name="read_file") + steps(2, first=3, name="tool_search") + steps(4, first=5)
    c = chat(*drafts)
    _, after = forced(InspectEdit(InspectEditConfig(threshold=HIGH, exclude_tools=("read_file",))), c)
    cleared = {k for k, v in results(c, after).items() if v == TOOL_RESULT_REMOVED}
    assert cleared == {"c5"}  # of c5..c8 (bash), the newest 3 kept; read_file and tool_search untouched


def test_edit_splits_a_parallel_batch_of_separate_tool_messages() -> None:
    """Tool uses are counted per call: the newest 3 of a batch of 3 plus one later call keep c2, c3, c4."""
    batch = [asst("three reads", [call("c1"), call("c2"), call("c3")]), tool("c1", "A" * OUT), tool("c2", "B" * OUT)]
    c = chat(*batch, tool("c3", "C" * OUT), *steps(1, first=4))
    _, after = forced(InspectEdit(InspectEditConfig(threshold=HIGH)), c)
    assert [k for k, v in results(c, after).items() if v == TOOL_RESULT_REMOVED] == ["c1"]


def test_edit_keeps_a_tool_message_holding_kept_and_older_results_whole() -> None:
    """Departure (class docstring): a bound edits whole messages, so one message with results of c1..c3,
    where only c2, c3 are among the newest 3, keeps c1 too (inspect would clear it)."""
    batch = asst("three reads", [call("c1"), call("c2"), call("c3")])
    c = chat(batch, tools({"c1": "A" * OUT, "c2": "B" * OUT, "c3": "C" * OUT}), *steps(1, first=4))
    st = state_of(InspectEdit(), c)
    assert InspectEdit(InspectEditConfig(threshold=HIGH)).decide(st, "overflow") is None  # nothing to clear
    _, after = forced(InspectEdit(InspectEditConfig(threshold=HIGH, keep_tool_uses=1)), c)
    assert [k for k, v in results(c, after).items() if v == TOOL_RESULT_REMOVED] == ["c1", "c2", "c3"]


def test_edit_drops_trailing_assistant_messages() -> None:
    """``edit.py``: trailing assistant messages are stripped; later messages are shown again."""
    c = chat(*steps(4), asst("checked", id="x1"), asst("summing up", id="x2"))
    before, after = forced(InspectEdit(InspectEditConfig(threshold=HIGH)), c)
    assert shown(c, after) == [i for i in shown(c, before) if i not in ("x1", "x2")]
    longer = conv(*c.messages, user("go on", id="u2"))
    assert shown(longer, after)[-3:] == ["a4", "t4", "u2"]


def test_edit_that_cannot_get_under_the_threshold_makes_no_plan() -> None:
    """``_perform_compaction`` raises "Compaction insufficient" when still over (the sample ends); a policy
    cannot end a run, so it makes no plan and the run goes on to the provider's rejection."""
    c = chat(*steps(3))
    size = state_of(InspectEdit(), c).view_size()[0]
    p = InspectEdit(InspectEditConfig(threshold=size // 2))
    assert p.decide(state_of(p, c), "auto") is None


def test_edit_never_clears_a_pending_turn() -> None:
    """Our addition: an unresolved approval turn is protected; results before it are cleared."""
    c = chat(*steps(4), user("approve?", id="ask", pending=True), *steps(4, first=5))
    _, after = forced(InspectEdit(InspectEditConfig(threshold=HIGH, keep_tool_uses=0)), c)
    cleared = {k for k, v in results(c, after).items() if v == TOOL_RESULT_REMOVED}
    assert cleared == {"c1", "c2", "c3", "c4"}


# -- trim -----------------------------------------------------------------------------------------------------
def test_trim_keeps_system_input_and_the_newest_80_percent() -> None:
    """``_trim.py``: the conversation (10 messages here) loses its first ``int(10 * 0.2)`` = 2."""
    c = chat(*steps(5))
    _, after = forced(InspectTrim(InspectTrimConfig(threshold=HIGH)), c)
    assert shown(c, after) == ["m0", "task", "a2", "t2", "a3", "t3", "a4", "t4", "a5", "t5"]


def test_trim_moves_the_cut_past_orphaned_results() -> None:
    """``_trim.py``: tool messages whose call was dropped are filtered out; 8 messages lose 1, the result t1."""
    c = chat(*steps(4))
    _, after = forced(InspectTrim(InspectTrimConfig(threshold=HIGH)), c)
    assert shown(c, after)[:3] == ["m0", "task", "a2"]


def test_trim_passes_compound_until_under_the_threshold() -> None:
    """``_perform_compaction`` trims the trimmed view again (up to 3 more times) while over and shrinking."""
    c = chat(*steps(10))
    size = state_of(InspectTrim(), c).view_size()[0]
    one = forced(InspectTrim(InspectTrimConfig(threshold=HIGH)), c)[1]
    two = forced(InspectTrim(InspectTrimConfig(threshold=round(size * 0.7))), c)[1]
    assert shown(c, one)[2] == "a3"  # 20 messages lose 4
    assert shown(c, two)[2] == "a5"  # then 16 lose 3 (and the orphaned result after them)


def test_trim_running_view_trims_the_trimmed_view() -> None:
    """The running view: each crossing trims the previous view, not the raw log."""
    res = run(InspectTrim(InspectTrimConfig(threshold=3_000)), chat(*steps(14), asst("done")), C4)
    starts = [r.view.start for r in compaction_records(res)]
    assert len(starts) >= 3 and starts == sorted(set(starts))
    assert all(r.view.spans == ((1, 2),) for r in compaction_records(res))  # the input stays


def test_trim_can_drop_the_live_turn() -> None:
    """Known deviation ``live-turn``: a later user message in the oldest 20% is dropped."""
    c = conv(*trim_drops_live_turn().messages)
    _, after = forced(InspectTrim(InspectTrimConfig(threshold=HIGH)), c)
    assert "u2" not in shown(c, after)
    res = run(InspectTrim(), trim_drops_live_turn(), RunConfig(model=small_model(), tokenizer="chars4"))
    assert "live-turn" in res.summary["violations_by_invariant"]


def trim_drops_live_turn() -> Conversation:
    """A conversation on which inspect-trim drops the live turn's user message in the checker's window
    (``small_model()``: 8,000 tokens): a short first turn, then a second user message and a long tool loop
    that overflows. For ``test_properties.HAND_BUILT`` (its generated search rarely finds this)."""
    return chat(*steps(1, size=40), user("Also check the CLI.", id="u2"), *steps(14, first=2, size=2_400), asst("ok"))


def test_trim_cuts_inside_a_live_thinking_tool_loop() -> None:
    """Known deviation ``atomic-units``: trim counts messages, so inside the live tool loop it drops the reply whose
    thinking opened the loop; the later replies carry none (no interleaved thinking), so the kept ones open the
    request's final turn without thinking, and Anthropic rejects the request (the run ends there)."""
    c = chat(*steps(1, thinking=True), *steps(5, first=2))
    _, after = forced(InspectTrim(InspectTrimConfig(threshold=HIGH)), c)
    assert after.start == 4 and c.messages[after.start].id == "a2"  # a1, whose thinking opened the loop, goes
    long = chat(*steps(1, thinking=True, size=4_000), *steps(5, first=2, size=4_000), asst("done"))
    res = run(InspectTrim(InspectTrimConfig(threshold=0.5)), long, CHECK)
    assert res.summary["finish_reason"] == "provider-error"
    assert {v.invariant for v in res.violations} == {"atomic-units"}
    assert "thinking block" in res.violations[0].detail


def test_trim_drops_a_change_whose_revert_stays() -> None:
    """Known deviation ``revert-resolution``: inspect has no notion of reverts."""
    c = chat(asst("edit", [call("c1")], parts=[change("ch1")]), tool("c1", "ok"), *steps(4, first=2))
    c = conv(*c.messages, user("undo that", revert("ch1"), id="undo"))
    _, after = forced(InspectTrim(InspectTrimConfig(threshold=HIGH)), c)
    assert "m2" not in shown(c, after) and "undo" in shown(c, after)


def test_trim_keeps_a_pending_turn() -> None:
    """Our addition: the cut never passes the start of an unresolved pending turn."""
    c = chat(*steps(1), user("Deploy it.", id="u2"), asst("May I deploy?", id="ask", pending=True))
    c = conv(*c.messages, user("Meanwhile, check the docs.", id="u3"), *steps(6, first=2))
    _, after = forced(InspectTrim(InspectTrimConfig(threshold=HIGH)), c)
    assert shown(c, after)[:3] == ["m0", "task", "u2"]  # 17 messages would lose 3: a1, t1 and u2


# -- summary --------------------------------------------------------------------------------------------------
def test_summary_keeps_system_and_input_and_no_tail() -> None:
    """``summary.py``: the new input is system + input + one user summary message, wrapped."""
    c = chat(*steps(6), asst("done"))
    res, captured, _ = run_capture(InspectSummary(InspectSummaryConfig(threshold=2_000)), c, C4)
    rec = compaction_records(res)[0]
    assert shown(c, rec.view)[:3] == ["m0", "task", "SUMMARY(user)"] and rec.view.start == rec.summarised[1]
    head, tail = SUMMARY_WRAPPER.split("{summary}")
    text = rec.view.summary.text  # type: ignore[union-attr]
    assert text.startswith(head) and text.endswith(tail)
    assert head.startswith("[CONTEXT COMPACTION SUMMARY]") and "<summary>\n" in head
    assert tail.endswith("Please continue working on this task from where you left off.")


def test_summary_running_view_folds_the_previous_summary() -> None:
    """The running view: the next summary covers the previous one and what came after it."""
    res = run(InspectSummary(InspectSummaryConfig(threshold=2_000)), chat(*steps(14), asst("done")), C4)
    recs = compaction_records(res)
    assert len(recs) >= 2
    assert recs[1].summarised[0] == recs[0].view.start  # from the end of the first summary's span
    assert all(r.view.spans == ((1, 2),) for r in recs)


def test_summary_summarises_the_live_turn() -> None:
    """Known deviation ``live-turn``: no tail is kept, so a later user message goes into the summary."""
    c = chat(*steps(1), user("And the CLI?", id="u2"), *steps(3, first=2))
    _, after = forced(InspectSummary(InspectSummaryConfig(threshold=HIGH)), c)
    assert "u2" not in shown(c, after)


def test_a_summary_inside_a_thinking_loop_is_accepted() -> None:
    """inspect compacts before every generate, mid tool loop too: the request then ends with the summary (or, native,
    with "Please continue working."), a user message, and the model's next reply opens a turn afresh; the loop's
    later steps follow it, and Anthropic accepts them (the thinking rule binds the live turn's opening only)."""
    for policy in (InspectSummary(), InspectAuto()):
        res = run(policy, summary_inside_thinking_loop(), RunConfig(model=small_model(), tokenizer="chars4"))
        assert res.summary["compaction_count"] == 1 and res.summary["finish_reason"] == "completed"
        assert res.summary["violations_by_invariant"] == {}


def summary_inside_thinking_loop() -> Conversation:
    """A thinking tool loop that crosses the threshold of ``small_model()`` (8,000 tokens) after its third
    step, and goes on after the summary."""
    loop = [asst("", [call("c1")], thinking="plan the fix", id="a1"), tool("c1", "r" * 12_000)]
    for k, size in ((2, 12_000), (3, 12_000), (4, 400)):
        loop += [asst("", [call(f"c{k}")], id=f"a{k}"), tool(f"c{k}", "s" * size)]
    return chat(*loop, asst("done"))


def test_summariser_input_is_fitted_like_inspects() -> None:
    """``_fit_summarization_input``: when the view is larger than the summariser's room (after an overflow, or
    a threshold above the input budget), the largest tool outputs are shrunk until it fits (here: every message
    clipped at one length); when it fits already nothing is clipped."""
    c = chat(*steps(3, size=12_000))
    small = ModelConfig(context_window=8_000, output_reserve=1_000)
    p = InspectSummary()
    plan = p.decide(state_of(p, c, small), "overflow")
    assert plan is not None and plan.summary_request.clip_chars is not None and plan.summary_request.clip_chars < 12_000
    roomy = p.decide(state_of(p, c, ModelConfig(context_window=40_000, output_reserve=1_000)), "overflow")
    assert roomy is not None and roomy.summary_request.clip_chars is None
    res = run(
        p, chat(*steps(3, size=12_000), *steps(2, first=4), asst("ok")), RunConfig(model=small, tokenizer="chars4")
    )
    assert res.summary["compaction_count"] == 1 and res.summary["finish_reason"] == "completed"
    assert not [e for e in res.log if isinstance(e, CompactionFailed)]  # the clipped prompt fit


# -- auto ------------------------------------------------------------------------------------------------------
def test_auto_is_native_on_anthropic() -> None:
    """``auto.py`` tries native first; Anthropic's (``providers/anthropic.py``) returns the compaction block in
    an assistant message and a user ``Please continue working.``; only the system prompt is prepended."""
    c = chat(*steps(4))
    p = InspectAuto(InspectAutoConfig(threshold=state_of(InspectAuto(), c).view_size()[0] - 1))
    st = state_of(p, c, MODEL)
    plan = p.decide(st, "auto")
    assert plan is not None and plan.summarize and plan.summary_request.role == "assistant" and plan.pinned == ()
    view = plan.view_from(st.view).with_(summary=Summary("s", role="assistant"))
    assert shown(c, view) == ["m0", "SUMMARY(assistant)", f"{CONTINUE_TEXT}(user)"]


def test_auto_after_an_overflow_summarises() -> None:
    """A native request for a view that does not fit is itself too long: an error, and ``auto.py`` falls back."""
    p = InspectAuto()
    plan = p.decide(state_of(p, chat(*steps(4)), MODEL), "overflow")
    assert plan is not None and plan.mode == "summary" and plan.summary_request.role == "user"
    tight = ModelConfig(context_window=2_400, output_reserve=800)  # threshold 2,160 above the budget of 1,600
    st = state_of(p, chat(*steps(6)), tight)
    assert context_tokens(st) > 2_160
    assert p.decide(st, "auto").mode == "summary"  # type: ignore[union-attr]


@pytest.mark.parametrize("model", [ModelConfig(provider="openai"), MODEL])
def test_auto_falls_back_to_the_summary(model: ModelConfig) -> None:
    """``auto.py``: on ``NotImplementedError`` the summary; the OpenAI format here is Chat Completions (inspect's
    native compaction needs the Responses API), and ``native=False`` is a model without it."""
    native = model.provider == "anthropic"
    c = chat(*steps(4))
    p = InspectAuto(InspectAutoConfig(threshold=state_of(InspectAuto(), c).view_size()[0] - 1, native=not native))
    plan = p.decide(state_of(p, c, model), "auto")
    assert plan is not None and plan.summary_request.role == "user" and plan.summary_request.wrapper == SUMMARY_WRAPPER
    assert plan.pinned == (1,)


# -- properties ------------------------------------------------------------------------------------------------
CHECK = RunConfig(model=small_model(), tokenizer="chars4")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(c=conversations())
def test_edit_never_drops_a_message_and_keeps_the_newest_three_results(c: Conversation) -> None:
    """On generated conversations (no consecutive assistant messages), every edit compaction shows every
    message, and the newest 3 tool uses at that moment keep their results."""
    res = Engine(InspectEdit(InspectEditConfig(threshold=0.5)), c, CHECK).run()
    n = 0
    for e in res.log:
        if isinstance(e, MessageAppended):
            n += 1
        elif isinstance(e, CompactionCreated):
            assert e.view.start == 0 and e.view.spans == ()
            ids = [p.call_id for m in c.messages[:n] for p in m.results][-3:]
            for i, m in enumerate(c.messages[:n]):
                kept = [p.call_id for p in edit_parts(m, e.view.rules_at(i)) if p and p.kind == "tool_result"]
                assert set(ids) & {p.call_id for p in m.results} <= set(kept)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(c=conversations())
def test_trim_keeps_the_input_and_only_moves_forward(c: Conversation) -> None:
    """Every trim keeps system + input, and the running view's start never moves back."""
    res = Engine(InspectTrim(InspectTrimConfig(threshold=0.5)), c, CHECK).run()
    last = 0
    for r in compaction_records(res):
        assert r.view.start >= last and all(r.view.shows(i) for i in range(1, 2))
        last = r.view.start


def test_edit_clears_out_of_order_parallel_results_by_call_order() -> None:
    """``edit.py`` lists tool uses in call order: a glob and a read issued together, the read's result arriving first,
    then two more steps. Keeping 3, the glob (the oldest call) is cleared although its result is newer than the
    read's, which stays; a bound alone would have kept both."""
    c = chat(
        asst("list and read", [call("g", "glob"), call("r", "read_file")], id="batch"),
        tool("r", "read " + "r" * OUT, name="read_file", id="tr"),
        tool("g", "glob " + "g" * OUT, name="glob", id="tg"),
        *steps(2),
    )
    _, after = forced(InspectEdit(InspectEditConfig(threshold=HIGH)), c)
    shown_results = results(c, after)
    assert shown_results["g"] == TOOL_RESULT_REMOVED
    assert shown_results["r"].startswith("read ") and shown_results["c1"].startswith("out 1")
