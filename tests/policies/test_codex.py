"""The ``codex`` policy against what Codex CLI's source says (openai/codex; catalogue §B3).

Each docstring quotes the rule it checks and the file it comes from. Runs use the ``chars4`` tokenizer and a
small model (window 4,000, output reserve 500: input budget 3,500, trigger ``int(0.9 x 3,500) = 3,150``) so
the numbers can be followed by hand; boundary tests drive :meth:`Codex.decide` on a state whose estimate is set
exactly (:func:`tests.builders.state_of`).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

from policies import make_policy
from policies.codex import (
    INITIAL_CONTEXT,
    RETAINED_MESSAGE_TOKEN_BUDGET,
    SUMMARY_PREFIX,
    SUMMARY_WRAPPER,
    Codex,
    CodexConfig,
    CodexRemote,
    CodexRemoteConfig,
    is_real_user_message,
    truncate_output,
)
from sim.core.conversation import Message, Part
from sim.core.errors import InvalidConfig
from sim.core.log import CompactionFailed
from sim.core.model import ModelConfig
from sim.core.view import edited_chars
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import conversations, small_model
from tests.builders import (
    asst,
    change,
    compact_cmd,
    compaction_records,
    conv,
    revert,
    run_capture,
    state_of,
    sys,
    text_of,
    tool,
    user,
)

MODEL = ModelConfig(context_window=4_000, output_reserve=500)
C4 = RunConfig(model=MODEL, tokenizer="chars4")
LIMIT = 3_150  # int(0.9 x (4,000 - 500))


def roles(rendered: list[dict]) -> list[tuple[str, str]]:
    """(role, first 30 characters) of each rendered message."""
    return [(m["role"], text_of(m["content"])[:30]) for m in rendered]


def pre_turn_chat():
    """Two finished turns, then a long user message that takes the estimate over the trigger before its reply."""
    return conv(
        sys("You are Codex, a coding agent.", id="sys"),
        user("Fix the failing test in app.py.", id="u1"),
        asst("Reading the test.", calls=["c1"], id="a1"),
        tool("c1", "r" * 5000, id="t1"),
        asst("Fixed the import in app.py.", id="a2"),
        user("Now add a regression test.", id="u2"),
        asst("Adding it.", calls=["c2"], id="a3"),
        tool("c2", "s" * 5000, id="t2"),
        asst("Added tests/test_app.py.", id="a4"),
        user("Thanks. Now run the linter. " + "l" * 2600, id="u3"),
        asst("Running ruff.", id="a5"),
    )


def mid_turn_chat():
    """A second turn whose tool loop crosses the trigger before its third reply."""
    return conv(
        sys("You are Codex, a coding agent.", id="sys"),
        user("Fix the failing test in app.py.", id="u1"),
        asst("Reading the test.", calls=["c1"], id="a1"),
        tool("c1", "x" * 3600, id="t1"),
        asst("Found it.", calls=["c2"], id="a2"),
        tool("c2", "y" * 3600, id="t2"),
        asst("Fixed.", id="a3"),
        user("Now add a test for it.", id="u2"),
        asst("Sure.", calls=["c3"], id="a4"),
        tool("c3", "z" * 3600, id="t3"),
        asst("Added.", calls=["c4"], id="a5"),
        tool("c4", "w" * 3600, id="t4"),
        asst("Done.", id="a6"),
    )


# -- defaults and their sources ---------------------------------------------------------------------------
def test_defaults_are_codex_constants() -> None:
    """compact.rs: ``COMPACT_USER_MESSAGE_MAX_TOKENS: usize = 20_000``; the fallback model info's
    ``truncation_policy`` is ``Bytes(10_000)``; the auto-compact limit is ``(context_window * 9) / 10``."""
    cfg = CodexConfig()
    assert (cfg.auto_compact_ratio, cfg.user_message_max_tokens, cfg.truncation_bytes) == (0.9, 20_000, 10_000)
    assert cfg.auto_compact_token_limit is None
    assert Codex().retry_on_overflow == 0  # an overflow ends Codex's turn with an error: no compact-and-retry


def test_summary_prefix_is_summary_prefix_md() -> None:
    """``templates/compact/summary_prefix.md`` (50a53333), 400 characters, its double space kept; the summary is
    ``format!("{SUMMARY_PREFIX}\\n{summary_suffix}")``."""
    assert len(SUMMARY_PREFIX) == 400
    assert SUMMARY_PREFIX.startswith("Another language model started to solve this problem")
    assert SUMMARY_PREFIX.endswith("use the information in this summary to  assist with your own analysis:")
    assert SUMMARY_WRAPPER == SUMMARY_PREFIX + "\n{summary}"


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"auto_compact_ratio": "0"}, "auto_compact_ratio"),
        ({"auto_compact_token_limit": "-5"}, "auto_compact_token_limit"),
        ({"user_message_max_tokens": "-1"}, "user_message_max_tokens"),
        ({"truncation_bytes": "10"}, "truncation_bytes"),
    ],
)
def test_bad_config_says_what_is_wrong(params: dict[str, str], needle: str) -> None:
    with pytest.raises(InvalidConfig, match=needle):
        make_policy("codex", params)


# -- when it triggers ---------------------------------------------------------------------------------------
def test_trigger_is_ninety_percent_of_the_window_on_the_estimate() -> None:
    """§B3: ``auto_compact_token_limit = min(config, 0.9 x context_window)``, compared with the server's total plus
    bytes/4 of what was recorded since (here the estimate is set exactly)."""
    p = Codex()
    c = mid_turn_chat()
    cut = conv(*[m for m in c.messages[:12]])  # ends on tool result t4: a mid-turn point
    assert p.limit(state_of(p, cut, MODEL, context=100)) == LIMIT
    assert p.decide(state_of(p, cut, MODEL, context=LIMIT - 1), "auto") is None
    plan = p.decide(state_of(p, cut, MODEL, context=LIMIT), "auto")
    assert plan is not None and plan.mode == "mid-turn"


def test_configured_limit_lowers_but_never_raises() -> None:
    """§B3: "a configured value can only lower it in current code"."""
    st = state_of(Codex(), mid_turn_chat(), MODEL, context=10)
    assert Codex(CodexConfig(auto_compact_token_limit=1_000)).limit(st) == 1_000
    assert Codex(CodexConfig(auto_compact_token_limit=100_000)).limit(st) == LIMIT


def test_no_compaction_when_the_model_has_finished() -> None:
    """codex.rs ``run_turn``: mid-turn compaction needs ``needs_follow_up``; a request after an assistant message
    (no calls waiting for results) is not a compaction point, whatever the size."""
    p = Codex()
    c = pre_turn_chat()
    finished = conv(*c.messages[:9])  # ends on a4, the final answer of turn 2
    assert p.decide(state_of(p, finished, MODEL, context=10 * LIMIT), "auto") is None


# -- the view after a compaction -------------------------------------------------------------------------------
def test_pre_turn_keeps_user_messages_then_summary_then_initial_context_then_the_new_message() -> None:
    """compact.rs: new history = the real user messages, then the summary as a user message; pre-turn compaction
    "clear[s] reference_context_item, so the next regular turn will fully reinject initial context", and runs
    "before context updates and the new user message are recorded" (codex.rs)."""
    res, captured, _ = run_capture(Codex(), pre_turn_chat(), C4)
    assert res.violations == [] and res.summary["finish_reason"] == "completed"
    (rec,) = compaction_records(res)
    assert (rec.trigger, rec.mode) == ("auto", "pre-turn")
    assert rec.view.start == 9 and rec.view.spans == ((1, 2), (5, 6))  # u1, u2 kept; the new u3 opens the tail
    assert rec.view.summary is not None and rec.view.summary.role == "user"
    assert rec.view.summary.text.startswith(SUMMARY_PREFIX + "\n")
    last = captured[-1].rendered
    assert [r for r, _ in roles(last)] == ["system", "user", "user", "user", "user", "user"]
    texts = [text_of(m["content"]) for m in last]
    assert texts[1:3] == ["Fix the failing test in app.py.", "Now add a regression test."]
    assert texts[3].startswith(SUMMARY_PREFIX) and texts[4] == INITIAL_CONTEXT
    assert texts[5].startswith("Thanks. Now run the linter.")
    assert not any(m["role"] == "assistant" for m in last)  # every assistant and tool item dropped


def test_mid_turn_puts_the_initial_context_before_the_last_user_message_and_the_summary_last() -> None:
    """compact.rs ``InitialContextInjection::BeforeLastUserMessage``: "the model is trained to see the compaction
    summary as the last item in history after mid-turn compaction; we therefore inject initial context into the
    replacement history just above the last real user message"."""
    res, captured, _ = run_capture(Codex(), mid_turn_chat(), C4)
    assert res.violations == []
    (rec,) = compaction_records(res)
    assert (rec.trigger, rec.mode) == ("auto", "mid-turn")
    assert rec.view.start == 12 and rec.view.spans == ((1, 2), (7, 8))  # the whole live tool loop is gone
    (ctx,) = rec.view.injected
    assert ctx.text == INITIAL_CONTEXT and ctx.slot == 1 and not ctx.before_summary  # before spans[1], u2
    request = [text_of(m["content"]) for m in captured[5].rendered]  # the request for a5, right after compacting
    assert request[1] == "Fix the failing test in app.py."
    assert request[2:4] == [INITIAL_CONTEXT, "Now add a test for it."]
    assert request[4].startswith(SUMMARY_PREFIX) and len(request) == 5  # the summary is the last item


def test_initial_context_can_be_left_out() -> None:
    """``initial_context=False`` compares the same compaction without the re-injected tokens."""
    c = conv(*mid_turn_chat().messages[:12])
    with_ctx = Codex().decide(state_of(Codex(), c, MODEL, context=LIMIT), "auto")
    p = Codex(CodexConfig(initial_context=False))
    without = p.decide(state_of(p, c, MODEL, context=LIMIT), "auto")
    assert with_ctx is not None and without is not None
    assert with_ctx.injected and without.injected == () and without.pinned == with_ctx.pinned


def test_manual_compact_compacts_whatever_the_size_and_drops_the_command() -> None:
    """``/compact`` runs ``run_compact_task`` with ``InitialContextInjection::DoNotInject``; the command itself is
    not a message of the history."""
    c = conv(
        sys("You are Codex."),
        user("Rename foo to bar in lib.py.", id="u1"),
        asst("Renaming.", calls=["c1"], id="a1"),
        tool("c1", "ok " * 400, id="t1"),
        asst("Renamed foo to bar everywhere in lib.py and its callers.", id="a2"),
        compact_cmd(id="cmd"),
        user("Now update the docs.", id="u2"),
        asst("Updating.", id="a3"),
    )
    res, captured, _ = run_capture(Codex(), c, C4)
    (rec,) = compaction_records(res)
    assert (rec.trigger, rec.mode) == ("manual", "manual") and rec.tokens_after < rec.tokens_before
    assert rec.view.start == 6 and rec.view.spans == ((1, 2),)
    texts = [text_of(m["content"]) for m in captured[-1].rendered]
    assert texts[1] == "Rename foo to bar in lib.py." and texts[2].startswith(SUMMARY_PREFIX)
    assert texts[3:] == [INITIAL_CONTEXT, "Now update the docs."]


def test_user_messages_newest_first_within_the_budget_the_overflowing_one_truncated() -> None:
    """compact.rs ``build_compacted_history_with_limit``: newest first, ``approx_token_count`` (bytes/4) against the
    remaining budget; the one that does not fit is ``truncate_text(message, TruncationPolicy::Tokens(remaining))``
    (marker "…N tokens truncated…") and the walk stops; older ones are dropped."""
    c = conv(
        sys("S"),
        user("oldest " + "o" * 393, id="u0"),  # 100 tokens: not reached
        asst("ok", id="a0"),
        user("older " + "p" * 394, id="u1"),  # 100 tokens: cut to what is left
        asst("ok", id="a1"),
        user("newer " + "q" * 114, id="u2"),  # 30 tokens
        asst("ok", id="a2"),
        user("newest " + "n" * 73, id="u3"),  # 20 tokens
        asst("working", calls=["c1"], id="a3"),
        tool("c1", "t" * 6000, id="t1"),
        asst("Done.", id="a4"),
    )
    p = Codex(CodexConfig(user_message_max_tokens=60, auto_compact_token_limit=1_500))
    st = state_of(p, conv(*c.messages[:-1]), MODEL, context=1_500)
    plan = p.decide(st, "auto")
    assert plan is not None and plan.pinned == (3, 5, 7)  # u0 not kept
    (edit,) = plan.edits or ()
    assert edit.before == 4 and edit.rule.action == "truncate" and edit.rule.max_tokens == 10  # 60 - 20 - 30
    res, captured, _ = run_capture(p, c, RunConfig(model=MODEL, tokenizer="chars4"))
    request = [text_of(m["content"]) for m in captured[-1].rendered]
    assert not [t for t in request if t.startswith("oldest")]  # (the mock summary restates it as the goal)
    (older,) = [t for t in request if t.startswith("older")]
    assert "tokens truncated…" in older and len(older) < 100 and older.endswith("p")
    assert any(t.startswith("newer") and len(t) == 120 for t in request)


def test_contextual_and_summary_messages_are_not_user_input() -> None:
    """event_mapping.rs ``is_contextual_user_message`` (AGENTS.md instructions, ``<environment_context>``) and
    compact.rs ``is_summary_message`` (starts with the prefix): neither is kept, the initial context is rebuilt."""
    c = conv(
        sys("S"),
        user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>", id="env"),
        user("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>", id="agents"),
        user(SUMMARY_PREFIX + "\nolder summary", id="old"),
        user("Real question.", id="real"),
    )
    assert [is_real_user_message(m) for m in c.messages] == [False, False, False, False, True]
    assert not is_real_user_message(Message("cmd", "user", (Part("command", name="compact"),)))


def test_a_live_thinking_loop_goes_into_the_summary() -> None:
    """Mid-turn, the live tool loop, its opening thinking included, goes into the summary with the rest (Codex
    drops reasoning items); the older turn is reduced to its user message, and the new history ends with the
    summary, so the next reply opens a turn afresh."""
    c = conv(
        sys("S"),
        user("First task.", id="u1"),
        asst("Look.", calls=["c1"], id="a1"),
        tool("c1", "x" * 4000, id="t1"),
        asst("Done.", id="a2"),
        user("Second task.", id="u2"),
        asst("Thinking first.", calls=["c2"], thinking="plan the edit", id="a3"),
        tool("c2", "y" * 4000, id="t2"),
        asst("Next.", calls=["c3"], id="a4"),
        tool("c3", "z" * 4000, id="t3"),
    )
    p = Codex()
    plan = p.decide(state_of(p, c, MODEL, context=LIMIT), "auto")
    assert plan is not None and plan.start == len(c.messages) and plan.pinned == (1, 5)


def test_a_pending_turn_is_kept_verbatim() -> None:
    """Our addition for the harness (an approval blocks Codex's turn): an unresolved pending turn is the kept tail;
    the last user message is then in it, so the initial context goes before the summary."""
    c = conv(
        sys("S"),
        user("Read the logs.", id="u1"),
        asst("Reading.", calls=["c1"], id="a1"),
        tool("c1", "log " * 1500, id="t1"),
        asst("Read them.", id="a2"),
        user("Deploy it.", id="u2"),
        asst("May I run the deploy script?", id="a3", pending=True),
        user("Wait, first check the disk.", id="u3"),
        asst("Checking.", calls=["c2"], id="a4"),
        tool("c2", "df " * 500, id="t2"),
    )
    p = Codex()
    st = state_of(p, c, MODEL, context=LIMIT)
    assert st.protected_from == 5
    plan = p.decide(st, "auto")
    assert plan is not None and plan.start == 5 and plan.pinned == (1,)  # u2, a3, u3, a4, t2 stay verbatim
    (ctx,) = plan.injected or ()
    assert ctx.before_summary and ctx.slot is None


# -- the summariser's prompt --------------------------------------------------------------------------------
def test_summariser_input_keeps_the_newest_items_that_fit_the_window() -> None:
    """compact.rs: on ``ContextWindowExceeded`` while compacting, ``history.remove_first_item()`` and retry ("Trim
    from the beginning to preserve cache (prefix-based) and keep recent messages intact"): the summariser's input is
    capped at what fits beside its prompt and the output reserve, so the compaction of an over-full view succeeds."""
    c = conv(
        sys("S"),
        user("Audit the logs.", id="u1"),
        asst("Reading.", calls=["c1"], id="a1"),
        tool("c1", "a" * 6000, id="t1"),
        asst("More.", calls=["c2"], id="a2"),
        tool("c2", "b" * 6000, id="t2"),
        asst("And more.", calls=["c3"], id="a3"),
        tool("c3", "c" * 2400, id="t3"),
        asst("Summing up.", id="a4"),
    )
    # c1 and c2 fit (about 3,050 tokens); with c3 the view is over the input budget before a4 is sent.
    res, _, _ = run_capture(Codex(), c, C4)
    (rec,) = compaction_records(res)
    assert rec.mode == "mid-turn" and not [e for e in res.log if isinstance(e, CompactionFailed)]
    summariser = [r for r in res.rows if r["request_kind"] == "summariser"]
    assert len(summariser) == 1 and not summariser[0]["error"]
    assert summariser[0]["context_tokens"] + MODEL.output_reserve <= MODEL.context_window
    assert res.summary["finish_reason"] == "completed"
    p = Codex()
    st = state_of(p, conv(*c.messages[:-1]), MODEL, context=LIMIT)
    plan = p.decide(st, "auto")
    assert plan is not None and plan.summary_request.input_newest_tokens is not None
    # The whole transcript being summarised is far larger than that cap: the oldest pieces go.
    assert sum(m.chars for m in c.messages[2:8]) // 4 > plan.summary_request.input_newest_tokens


# -- entry bound ------------------------------------------------------------------------------------------------
def test_tool_output_is_cut_to_twelve_kilobytes_head_and_tail() -> None:
    """output-truncation ``with_serialization_allowance`` (x1.2 of ``Bytes(10_000)``) and ``truncate_middle_chars``:
    the first and last halves of the byte budget with ``…N chars truncated…`` between."""
    big = Part("tool_result", "H" * 10_000 + "M" * 10_000 + "T" * 10_000, call_id="c1", name="shell")
    out = Codex().bound_tool_result(big)
    assert out.text == "H" * 6_000 + "…18000 chars truncated…" + "T" * 6_000
    assert out.original_bytes == 30_000
    small = Part("tool_result", "x" * 12_000, call_id="c2", name="shell")
    assert Codex().bound_tool_result(small) is small
    assert truncate_output(big, 12_000) == out  # memoised: a sweep bounds each result once


# -- iteration and deviations ---------------------------------------------------------------------------------
def test_a_second_compaction_folds_the_first_summary_in_and_keeps_one() -> None:
    """§B3 "Iteration: regenerate — the next compaction request contains the previous summary"; old summaries are
    never kept as user messages."""
    turns = []
    for k in range(6):
        turns += [
            user(f"Task {k}.", id=f"u{k}"),
            asst("Working.", calls=[f"c{k}"], id=f"a{k}"),
            tool(f"c{k}", "r" * 6000, id=f"t{k}"),
            asst(f"Done {k}.", id=f"d{k}"),
        ]
    res, captured, _ = run_capture(Codex(), conv(sys("S"), *turns), C4)
    recs = compaction_records(res)
    assert len(recs) >= 2 and res.violations == []
    last = [text_of(m["content"]) for m in captured[-1].rendered]
    assert sum(t.startswith(SUMMARY_PREFIX) for t in last) == 1
    assert [t for t in last if t.startswith("Task")] == [f"Task {k}." for k in range(6)]


def test_known_deviation_revert_resolution_happens() -> None:
    """Codex keeps user messages only: a kept user message that reverts a change made by a dropped assistant
    message breaks ``revert-resolution`` (declared in ``known_deviations``)."""
    c = conv(
        sys("S"),
        user("Edit the config.", id="u1"),
        asst("Editing.", calls=["c1"], parts=[change("ch1", "edit config.toml")], id="a1"),
        tool("c1", "x" * 6000, id="t1"),
        asst("Edited.", id="a2"),
        user("Undo that edit.", revert("ch1", "undo"), id="u2"),
        asst("Reverting.", calls=["c2"], id="a3"),
        tool("c2", "y" * 7000, id="t2"),
        asst("Reverted.", id="a4"),
    )
    assert "revert-resolution" in Codex.known_deviations
    res, _, _ = run_capture(Codex(), c, C4)
    assert compaction_records(res)
    assert {v.invariant for v in res.violations} == {"revert-resolution"}


# -- property --------------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conversations(window=8_000, max_turns=30))
def test_compacted_views_keep_only_user_messages_within_the_budget(c) -> None:  # type: ignore[no-untyped-def]
    """On generated conversations, after every compaction: the closed spans are real user messages only, and their
    sizes as the view shows them (the cut one truncated) stay within ``user_message_max_tokens`` plus the
    truncation marker; every compaction shrinks the view."""
    budget = 150
    p = Codex(CodexConfig(user_message_max_tokens=budget))
    eng = Engine(p, c, RunConfig(model=small_model(8_000), tokenizer="chars4"))
    res = eng.run()
    msgs = eng.ledger.messages
    for rec in compaction_records(res):
        kept = [i for a, b in rec.view.spans for i in range(a, b)]
        assert all(is_real_user_message(msgs[i]) for i in kept)
        tokens = sum(math.ceil(edited_chars(msgs[i], rec.view.rules_at(i)) / 4) for i in kept)
        assert tokens <= budget + 10 * len(kept)  # chars/4 rounding per message and the marker's few tokens
        assert rec.tokens_after < rec.tokens_before
    assert {v.invariant for v in res.violations} <= Codex.known_deviations


# -- codex-remote ----------------------------------------------------------------------------------------------
def remote(**kw: object) -> CodexRemote:
    return CodexRemote(CodexRemoteConfig(**kw))  # type: ignore[arg-type]


def test_remote_defaults() -> None:
    """``RETAINED_MESSAGE_TOKEN_BUDGET = 64_000`` (``compact_remote_v2.rs``, catalogue §B3); the rest as local."""
    cfg = CodexRemoteConfig()
    assert cfg.user_message_max_tokens == RETAINED_MESSAGE_TOKEN_BUDGET == 64_000
    assert (cfg.auto_compact_ratio, cfg.truncation_bytes) == (0.9, 10_000)
    assert make_policy("codex-remote").spec()["params"]["user_message_max_tokens"] == 64_000


@pytest.mark.parametrize(("over", "fires"), [(-1, False), (0, True), (1, True)])
def test_remote_trigger_is_codex_s(over: int, fires: bool) -> None:
    """Remote and local compaction share the trigger: ``auto_compact_token_limit`` = 90% of the window, checked
    pre-turn (here) and mid-turn."""
    pol = remote()
    st = state_of(pol, conv(*pre_turn_chat().messages[:10]), MODEL, context=LIMIT + over)  # ends on u3
    assert (pol.decide(st, "auto") is not None) == fires


def test_remote_installs_user_messages_and_an_opaque_item() -> None:
    """V2 installs "retained prompt messages ... newest first up to 64,000 tokens + the compaction item": every
    assistant message, call and output goes; the item is an encrypted output item with no client prompt or prefix
    (an assistant-role summary here, its content the retention model's)."""
    pol = remote()
    st = state_of(pol, conv(*pre_turn_chat().messages[:10]), MODEL, context=LIMIT)
    plan = pol.decide(st, "auto")
    assert plan is not None
    ids = [st.messages[i].id for i in plan.pinned]
    assert ids == ["u1", "u2"] and st.messages[plan.start].id == "u3"
    assert plan.summarize and plan.summary_request.role == "assistant" and plan.summary_request.wrapper == "{summary}"
    assert SUMMARY_PREFIX not in plan.summary_request.prompt
    res, captured, _ = run_capture(pol, pre_turn_chat(), C4)
    assert res.violations == [] and res.summary["finish_reason"] == "completed"
    (rec,) = compaction_records(res)
    assert rec.view.spans == ((1, 2), (5, 6)) and rec.view.summary is not None
    assert rec.view.summary.role == "assistant" and not rec.view.summary.text.startswith(SUMMARY_PREFIX)


def test_remote_keeps_more_user_text_than_local() -> None:
    """The retained budget is 64,000 tokens where local compaction keeps 20,000: a 30,000-token user history is
    kept whole by the remote path, cut by the local one."""
    big = conv(
        sys("You are Codex, a coding agent.", id="sys"),
        user("Spec: " + "p" * 120_000, id="u1"),  # 30,000 tokens at bytes / 4
        asst("Reading.", calls=["c1"], id="a1"),
        tool("c1", "r" * 4_000, id="t1"),
        asst("Done.", id="a2"),
        user("Go on.", id="u2"),
    )
    model = ModelConfig(context_window=200_000, output_reserve=10_000)
    st_r = state_of(remote(), big, model, context=200_000)
    st_l = state_of(Codex(), big, model, context=200_000)
    plan_r, plan_l = remote().decide(st_r, "auto"), Codex().decide(st_l, "auto")
    assert plan_r is not None and plan_l is not None
    assert plan_r.edits == () and plan_l.edits  # local truncates u1 to what is left of its 20,000
