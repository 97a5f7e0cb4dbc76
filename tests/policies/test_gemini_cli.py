"""The ``gemini-cli`` policy against what Gemini CLI's source says (google-gemini/gemini-cli 5411f113; catalogue §B9).

Each docstring quotes the rule it checks and the file it comes from. Runs use the ``chars4`` tokenizer and a
small model (window 4,000, output reserve 500: input budget 3,500, compression at ``0.5 x 3,500 = 1,750`` prompt
tokens) so the numbers can be followed by hand; boundary tests drive :meth:`GeminiCli.decide` on a state whose
last prompt count is set exactly (:func:`tests.builders.state_of`). Masking tests scale its thresholds down
(protect 1,000 tokens, mask from 600) on a large window, where compression stays out of the way.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from policies import make_policy
from policies.gemini_cli import (
    ACKNOWLEDGEMENT,
    MASK_MARKER,
    SNAPSHOT_WRAPPER,
    GeminiCli,
    GeminiCliConfig,
    mask_rule,
)
from sim.core.conversation import Part
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig, run
from sim.replay.strategies import conversations, small_model
from tests.builders import (
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
    text_of,
    tool,
    tool_contents,
    tools,
    user,
)

MODEL = ModelConfig(context_window=4_000, output_reserve=500)
C4 = RunConfig(model=MODEL, tokenizer="chars4")
THRESHOLD = 1_750  # 0.5 x (4,000 - 500)
BIG = ModelConfig(context_window=100_000, output_reserve=1_000)
BIG_C4 = RunConfig(model=BIG, tokenizer="chars4")
MASKING = GeminiCliConfig(protection_tokens=1_000, min_prunable_tokens=600)


def chat():
    """Two finished turns; the third user message arrives once the last prompt passed half the window."""
    return conv(
        sys("You are Gemini CLI.", id="sys"),
        user("Find where the config is loaded.", id="u1"),
        asst("Searching.", calls=["c1"], id="a1"),
        tool("c1", "hit " * 900, id="t1"),
        asst("It is loaded in src/app.py.", id="a2"),
        user("Add a --verbose flag.", id="u2"),
        asst("Editing.", calls=["c2"], id="a3"),
        tool("c2", "ok " * 1200, id="t2"),
        asst("Added the flag.", id="a4"),
        user("Document it in the README.", id="u3"),
        asst("Documented.", id="a5"),
    )


# -- defaults and their sources -------------------------------------------------------------------------------
def test_defaults_are_gemini_cli_constants() -> None:
    """chatCompressionService.ts ``DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 0.5``, ``COMPRESSION_PRESERVE_THRESHOLD =
    0.3``; toolOutputMaskingService.ts ``DEFAULT_TOOL_PROTECTION_THRESHOLD = 50000``,
    ``DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD = 30000``; config.ts ``DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD = 40_000``."""
    cfg = GeminiCliConfig()
    assert (cfg.compression_threshold, cfg.preserve_fraction) == (0.5, 0.3)
    assert (cfg.protection_tokens, cfg.min_prunable_tokens, cfg.truncate_threshold) == (50_000, 30_000, 40_000)
    assert cfg.token_limit is None  # the simulated model's input budget stands for tokenLimit(model)


def test_acknowledgement_is_the_real_text() -> None:
    """chatCompressionService.ts, the model content after the snapshot:
    ``parts: [{ text: 'Got it. Thanks for the additional context!' }]``."""
    assert ACKNOWLEDGEMENT == "Got it. Thanks for the additional context!"


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"compression_threshold": "0"}, "compression_threshold"),
        ({"preserve_fraction": "1"}, "preserve_fraction"),
        ({"token_limit": "0"}, "token_limit"),
        ({"protection_tokens": "-1"}, "protection_tokens"),
        ({"truncate_threshold": "-1"}, "truncate_threshold"),
    ],
)
def test_bad_config_says_what_is_wrong(params: dict[str, str], needle: str) -> None:
    with pytest.raises(InvalidConfig, match=needle):
        make_policy("gemini-cli", params)


# -- when it compresses ------------------------------------------------------------------------------------------
def test_compresses_at_half_the_limit_on_the_last_prompt_count() -> None:
    """chatCompressionService.ts: "Don't compress if not forced and we are under the limit":
    ``originalTokenCount < threshold * tokenLimit(model)``, ``originalTokenCount = chat.getLastPromptTokenCount()``."""
    p = GeminiCli()
    c = conv(*chat().messages[:10])  # u3 waits for its reply
    assert p.decide(state_of(p, c, MODEL, context=THRESHOLD - 1), "auto") is None
    plan = p.decide(state_of(p, c, MODEL, context=THRESHOLD), "auto")
    assert plan is not None and plan.mode == "compress"


def test_what_was_appended_since_the_last_request_does_not_count() -> None:
    """The trigger reads the last request's prompt count only (``lastPromptTokenCount``), not an estimate of what
    came since: a large message appended after a prompt just under the threshold does not trigger."""
    p = GeminiCli()
    c = conv(*chat().messages[:9], user("Document it. " + "d" * 4000, id="u3"))
    st = state_of(p, c, MODEL, context=THRESHOLD - 1)
    st.chars_at_last_request = st.chars(0, len(st) - 1)  # the long u3 came after the last request
    assert st.estimated_context_tokens() > THRESHOLD  # an estimating client would compress here
    assert p.decide(st, "auto") is None


def test_manual_compress_forces_it() -> None:
    """``/compress`` calls ``tryCompressChat(prompt_id, force=true)``: no threshold."""
    c = conv(*chat().messages[:9], compact_cmd(id="cmd"), user("Carry on.", id="u3"), asst("Carrying on.", id="a5"))
    res, _, _ = run_capture(GeminiCli(), c, C4)
    recs = compaction_records(res)
    assert [r.trigger for r in recs] == ["manual"] and recs[0].view.summary is not None
    assert recs[0].view.start == 5  # the live-turn invariant keeps the last user message's turn (our departure)


# -- the view after compression -----------------------------------------------------------------------------------
def test_new_history_is_snapshot_acknowledgement_and_kept_tail() -> None:
    """chatCompressionService.ts: ``extraHistory = [{role: 'user', parts: [{text: finalSummary}]}, {role: 'model',
    parts: [{text: 'Got it. Thanks for the additional context!'}]}, ...historyToKeepTruncated]``; the history ends on
    a model message without calls, so ``findCompressSplitPoint`` compresses everything before the new request."""
    res, captured, _ = run_capture(GeminiCli(), chat(), C4)
    assert res.violations == [] and res.summary["finish_reason"] == "completed"
    (rec,) = compaction_records(res)
    assert (rec.trigger, rec.mode, rec.view.start) == ("auto", "compress", 9)
    assert rec.view.summary is not None and rec.view.summary.role == "user"
    assert rec.view.summary.text.startswith("<state_snapshot>\n") and rec.view.summary.text.endswith(
        "</state_snapshot>"
    )
    (ack,) = rec.view.injected
    assert (ack.text, ack.role, ack.slot, ack.before_summary) == (ACKNOWLEDGEMENT, "assistant", None, False)
    last = captured[-1].rendered
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user"]
    assert text_of(last[1]["content"]).startswith("<state_snapshot>")
    assert text_of(last[2]["content"]) == ACKNOWLEDGEMENT
    assert text_of(last[3]["content"]) == "Document it in the README."
    assert SNAPSHOT_WRAPPER == "<state_snapshot>\n{summary}\n</state_snapshot>"


def test_split_at_the_first_user_message_past_seventy_percent() -> None:
    """chatCompressionService.ts ``findCompressSplitPoint``: by JSON character count, the first user content without
    a function response once the running total reached ``fraction`` (``1 - COMPRESSION_PRESERVE_THRESHOLD`` = 0.7) of
    the whole; later ones are not considered."""
    c = conv(
        sys("S"),
        user("q" * 100, id="u1"),  # 1
        asst("a" * 100, id="a1"),
        user("q" * 100, id="u2"),  # 3
        asst("b" * 5000, id="a2"),  # the bulk: past it, more than 70% of the characters are behind
        user("q" * 100, id="u3"),  # 5: the first split point at or past 70%
        asst("c" * 100, id="a3"),
        user("q" * 100, id="u4"),  # 7: also past 70%, and the last split point
        asst("d" * 100, calls=["c1"], id="a4"),
        tool("c1", "r" * 100, id="t1"),  # the request being sent: tool results
    )
    p = GeminiCli()
    plan = p.decide(state_of(p, c, MODEL, context=THRESHOLD), "auto")
    assert plan is not None and plan.start == 5


def test_without_a_split_past_seventy_percent_the_last_one() -> None:
    """``findCompressSplitPoint``: "Can't compress everything so just compress at last splitpoint" when the history
    ends on a model message with a function call and no user message lies past the 70% mark."""
    c = conv(
        sys("S"),
        user("Investigate the crash.", id="u1"),
        asst("Reading.", calls=["c1"], id="a1"),
        tool("c1", "x" * 3000, id="t1"),
        asst("Found something.", id="a2"),
        user("Go on.", id="u2"),  # 5: the last split point, before 70% of the characters
        asst("Reading more.", calls=["c2"], id="a3"),
        tool("c2", "y" * 3000, id="t2"),
        asst("And more.", calls=["c3"], id="a4"),
        tool("c3", "z" * 100, id="t3"),
    )
    p = GeminiCli()
    plan = p.decide(state_of(p, c, MODEL, context=THRESHOLD), "auto")
    assert plan is not None and plan.start == 5


def test_a_compression_that_would_not_shrink_is_not_made() -> None:
    """chatCompressionService.ts: ``if (newTokenCount > originalTokenCount)`` the compression fails
    (``COMPRESSION_FAILED_INFLATED_TOKEN_COUNT``) and the history stays: here it is not attempted."""
    c = conv(sys("S"), user("hi", id="u1"), asst("hello", id="a1"), user("again", id="u2"))
    p = GeminiCli()
    assert p.decide(state_of(p, c, MODEL, context=THRESHOLD), "auto") is None


# -- masking ------------------------------------------------------------------------------------------------------
def masking_chat(exempt: str | None = None):
    """Six tool rounds of 500 tokens each ((4 + 1,996) / 4 for tool "grep"); the sixth results are the request."""
    drafts = [sys("S"), user("Survey the repository.", id="u1")]
    for k in range(1, 7):
        name = exempt if exempt is not None and k == 2 else "grep"
        drafts += [
            asst(f"step {k}", calls=[f"c{k}"], id=f"a{k}"),
            tool(f"c{k}", f"HEAD{k} " + "g" * (1996 - len(name) + 4 - 12) + f" TAIL{k}", name=name, id=f"t{k}"),
        ]
    return conv(*drafts)


def test_masking_protects_the_newest_outputs_and_masks_the_rest_in_one_batch() -> None:
    """toolOutputMaskingService.ts: scanning back past the latest content, the newest ``protectionThresholdTokens`` of
    tool output are protected; "The part that crossed the boundary is prunable", and so is every older one; they are
    masked together once ``totalPrunableTokens >= minPrunableThresholdTokens``. A masked output keeps
    ``content.slice(0, 250)`` and ``content.slice(-250)``."""
    p = GeminiCli(MASKING)
    c = masking_chat()
    st = state_of(p, c, BIG)
    plan = p.decide(st, "auto")
    assert plan is not None and plan.mode == "mask" and not plan.summarize
    (edit,) = plan.edits or ()
    # t5 (500) and t4 (1,000) are protected, t3 crosses: t1..t3 masked, bound after t3 (index 7)
    assert edit.rule == mask_rule() and edit.before == 8
    res, captured, _ = run_capture(
        p, conv(*c.messages, asst("Done.", id="end")), RunConfig(model=BIG, tokenizer="chars4")
    )
    # Replayed request by request, masking already ran before a6 (t5 was the request then): t4 and t3 protected,
    # t2 crossed, t1 and t2 masked. Before "end", t3 is prunable again but alone (500 < 600): it stays.
    (rec,) = compaction_records(res)
    assert rec.mode == "mask" and rec.view.edits[0].before == 6
    contents = tool_contents(captured[-1].rendered)
    for k in (1, 2):
        masked = contents[f"c{k}"]
        assert masked.startswith(f"HEAD{k} ") and masked.endswith(f" TAIL{k}") and MASK_MARKER in masked
        assert len(masked) == 500 + len(MASK_MARKER)
    for k in (3, 4, 5, 6):
        assert len(contents[f"c{k}"]) == 2000 - 4 and MASK_MARKER not in contents[f"c{k}"]
    assert res.violations == []


def test_masking_waits_for_a_large_enough_batch() -> None:
    """toolOutputMaskingService.ts: "Trigger pruning only if we have accumulated enough savings": 1,500 prunable
    tokens are under a 2,000 minimum."""
    p = GeminiCli(GeminiCliConfig(protection_tokens=1_000, min_prunable_tokens=2_000))
    assert p.decide(state_of(p, masking_chat(), BIG), "auto") is None


def test_exempt_tools_are_neither_counted_nor_masked() -> None:
    """toolOutputMaskingService.ts ``EXEMPT_TOOLS`` (activate_skill, ask_user, enter/exit plan mode): skipped by the
    scan, and never masked."""
    p = GeminiCli(MASKING)
    c = masking_chat(exempt="ask_user")
    plan = p.decide(state_of(p, c, BIG), "auto")
    assert plan is not None
    (edit,) = plan.edits or ()
    # without t2 in the count, t5 + t4 are protected and t3 crosses again; t1 and t3 give 1,000 >= 600
    assert edit.before == 8 and "ask_user" in edit.rule.exclude_tools
    res, captured, _ = run_capture(
        p, conv(*c.messages, asst("Done.", id="end")), RunConfig(model=BIG, tokenizer="chars4")
    )
    contents = tool_contents(captured[-1].rendered)
    assert MASK_MARKER not in contents["c2"] and MASK_MARKER in contents["c1"] and MASK_MARKER in contents["c3"]


def test_masked_outputs_are_not_masked_again_and_the_bound_only_grows() -> None:
    """toolOutputMaskingService.ts ``isAlreadyMasked``: masked outputs are skipped, so right after a masking pass
    there is nothing more to mask."""
    p = GeminiCli(MASKING)
    c = masking_chat()
    st = state_of(p, c, BIG)
    plan = p.decide(st, "auto")
    assert plan is not None
    st.view = plan.view_from(st.view)
    assert p.decide(st, "auto") is None


# -- entry truncation -------------------------------------------------------------------------------------------
def test_large_output_is_cut_on_entry_to_its_first_fifth_and_last_four_fifths() -> None:
    """fileUtils.ts ``formatTruncatedToolOutput``: ``headChars = Math.floor(maxChars * 0.2)``, ``tailChars = maxChars -
    headChars``, "Output too large. Showing first H and last T characters. For full output see: <file>", and
    ``... [N characters omitted] ...`` between."""
    text = "A" * 10_000 + "B" * 10_000 + "C" * 30_000
    out = GeminiCli().bound_tool_result(Part("tool_result", text, call_id="c7", name="run_shell_command"))
    head, rest = out.text.split("\n", 1)
    assert head == (
        "Output too large. Showing first 8,000 and last 32,000 characters. "
        "For full output see: .gemini/tmp/tool-outputs/run_shell_command_c7.txt"
    )
    assert rest == "A" * 8_000 + "\n\n... [10,000 characters omitted] ...\n\n" + "B" * 2_000 + "C" * 30_000
    assert out.original_bytes == 50_000
    short = Part("tool_result", "x" * 40_000, call_id="c8", name="run_shell_command")
    assert GeminiCli().bound_tool_result(short) is short
    off = GeminiCli(GeminiCliConfig(truncate_threshold=0))
    assert off.bound_tool_result(Part("tool_result", text, call_id="c9")).text == text  # "0 ... to disable"


# -- deviations and properties -------------------------------------------------------------------------------------
def test_known_deviation_revert_resolution_happens() -> None:
    """Gemini CLI has no notion of reverts: a revert of a change that compression already summarised stays in the
    view without it (declared in ``known_deviations``)."""
    c = conv(
        sys("S"),
        user("Edit the config.", id="u1"),
        asst("Editing.", calls=["c1"], parts=[change("ch1", "edit config.toml")], id="a1"),
        tool("c1", "x" * 7200, id="t1"),
        asst("Edited.", id="a2"),
        user("Now something else.", id="u2"),
        asst("Sure.", id="a3"),
        user("Actually undo that edit.", revert("ch1", "undo"), id="u3"),
        asst("Reverting.", id="a4"),
    )
    assert GeminiCli.known_deviations == frozenset({"revert-resolution"})
    res, _, _ = run_capture(GeminiCli(), c, C4)
    assert compaction_records(res)
    assert {v.invariant for v in res.violations} == {"revert-resolution"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conversations(window=8_000, max_turns=30))
def test_compressions_open_on_a_user_message_after_the_acknowledgement(c) -> None:  # type: ignore[no-untyped-def]
    """On generated conversations, every compression opens its tail on a real user message and places the
    acknowledgement right after the snapshot; the masking bound never moves back; every compaction shrinks."""
    p = GeminiCli(MASKING)
    eng = Engine(p, c, RunConfig(model=small_model(8_000), tokenizer="chars4"))
    res = eng.run()
    msgs = eng.ledger.messages
    bound = 0
    for rec in compaction_records(res):
        if rec.mode == "compress":
            first = msgs[rec.view.start] if rec.view.start < len(msgs) else None
            assert first is None or (first.role == "user" and first.command is None)
            assert [x.text for x in rec.view.injected] == [ACKNOWLEDGEMENT]
        now = next((e.before for e in rec.view.edits if e.rule == mask_rule()), 0)
        assert now >= bound
        bound = now
        assert rec.tokens_after < rec.tokens_before
    assert {v.invariant for v in res.violations} <= GeminiCli.known_deviations


def test_a_compress_command_after_a_finished_turn_is_not_kept_in_the_history() -> None:
    """Gemini CLI's ``/compress`` is a client command: it never enters the model's history. Compressing a history
    that ends on a reply without calls compresses everything, and the kept part starts after the command (the
    property test below found the command kept as the first message of the new history, on this conversation)."""
    read = [call(f"c{k}", "read", '{"q": "alpha"}') for k in range(1, 5)]
    c = conv(
        sys("s"),
        user("a"),
        asst(calls=read),
        tools({"c1": "a FACT1", "c2": "a", "c3": "a", "c4": "a"}, name="read"),
        asst(("alpha " * 23)[:136]),
        compact_cmd(),
        user("s"),
        compact_cmd(),
    )
    res = run(GeminiCli(MASKING), c, RunConfig(model=small_model(8_000), tokenizer="chars4"))
    starts = [r.view.start for r in compaction_records(res) if r.mode == "compress"]
    assert starts and all(c.messages[s].command is None for s in starts if s < len(c.messages)), starts
