"""Every checkable claim of ``seeds/effect-agent-context-management.md``, one test each.

Each docstring quotes the seed sentence it checks, verbatim. Where the seed is silent and
``reference/compaction-systems.md`` section 0(b) (the real source read) states the detail, the
docstring quotes that too and says so.

Runs use the ``chars4`` tokenizer so that the seed's chars/4 estimate and the provider's count can be
reasoned about exactly; boundary tests drive :meth:`EffectAgent.decide` on a state whose context
estimate is set exactly (:func:`tests.builders.state_of`).
"""

from __future__ import annotations

import itertools
import json
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim.replay.compaction as compaction_mod
from policies.baselines import NoCompaction
from policies.effect_agent import (
    PLACEHOLDER,
    SUMMARY_WRAPPER,
    EffectAgent,
    EffectAgentConfig,
    message_tokens,
    prompt_spans,
    prompt_tokens,
    view_tokens,
)
from policies.helpers import floor_index
from sim.core.budgets import Budgets
from sim.core.conversation import Tool
from sim.core.cost import Pricer
from sim.core.log import BudgetWarned, CompactionCreated, MessageAppended, RunFinished, encode_event
from sim.core.model import DEFAULT_MODEL, MESSAGE_OVERHEAD, ModelConfig
from sim.core.retention import SummariserConfig
from sim.core.view import View, fold
from sim.replay.engine import RunConfig, run
from sim.replay.model import render_message_anthropic
from sim.replay.strategies import conversations, small_model
from tests.builders import (
    asst,
    compaction_records,
    conv,
    envelope,
    fact,
    log_messages,
    run_capture,
    state_of,
    sys,
    text_of,
    tool,
    tool_contents,
    tools,
    user,
)

C4 = RunConfig(tokenizer="chars4")
# Where a test sets a token budget from a reference run's usage, the status line is off: with it on, the line
# itself names the budget and so changes every prompt's size.
OFF = {"tokenizer": "chars4", "run_status": "off"}
C4_OFF = RunConfig(**OFF)
STATUS_RE = re.compile(
    r"^<run-status>turn (\d+)/12 · tool-calls (\d+)/24 · tokens (\d+)/200000 · "
    r"last-context (\d+) · elapsed (\d+)s/300s"
    r"(?: · WARNING: approaching limits — converge and deliver your final result now\.)?"
    r"</run-status>$"
)
KEEP_ALL = SummariserConfig(
    keep_constraint=1.0, keep_decision=1.0, keep_continuation=1.0, keep_artifact=1.0, keep_recall=1.0
)


def policy(**kw) -> EffectAgent:
    return EffectAgent(EffectAgentConfig(**kw))


def grep_chat(
    n: int,
    size: int = 400,
    *,
    answer: str = "The config is loaded in src/app.py.",
    think: str = "",
    calls_per_turn: int = 1,
    tools=(),
    facts=(),
):
    """A grep-and-read agent: one task, ``n`` rounds of calls and results of ``size`` characters, an
    answer."""
    drafts = [sys("You are a research agent."), user("Find where the config is loaded.", id="task")]
    for i in range(n):
        ids = [f"c{i}" if calls_per_turn == 1 else f"c{i}_{j}" for j in range(calls_per_turn)]
        drafts.append(asst(f"grep {i}" + think, calls=ids, id=f"a{i}"))
        for cid in ids:
            drafts.append(tool(cid, f"hit {i} " + "r" * (size - 6), id=f"t{cid}"))
    drafts.append(asst(answer, id="answer"))
    return conv(*drafts, tools=tools, facts=facts)


def agent_rows(res):
    return [r for r in res.rows if r["request_kind"] == "agent" and not r["error"]]


def estimates(c, res) -> list[int]:
    """The estimate before each agent request of ``res`` (a run without compaction), as the real
    ``nextContextEstimate`` makes it (issue 11, item 7): the JSON estimate (``estimateMessageTokens``) of the
    whole view before the first, then the last request's prompt plus its output plus the JSON estimate of the
    messages since it (the reply among them)."""
    agent = agent_rows(res)
    positions = [i for i, m in enumerate(c.messages) if m.role == "assistant"]
    out, prev = [], 0
    for k, p in enumerate(positions[: len(agent)]):
        new = sum(message_tokens(m) for m in c.messages[prev:p])
        last = agent[k - 1] if k else None
        out.append(new if last is None else last["context_tokens"] + last["output_tokens"] + new)
        prev = p
    return out


# -- defaults ------------------------------------------------------------------------------------------------
def test_default_tool_result_bound_is_50_kib():
    """Seed: "toolResultBounds: ToolResultBounds.make({ maxBytes: 50 * 1024 }), // the default" """
    assert EffectAgentConfig().max_bytes == 50 * 1024


def test_default_run_status_is_appended():
    """Seed: "runStatus: "appended", // the default"

    With the default run configuration every request of an effect-agent run ends with the status line.
    """
    _res, captured, _ = run_capture(EffectAgent(), grep_chat(3), C4)
    assert EffectAgent.run_status is True and RunConfig().run_status == "auto"
    assert captured and all(text_of(c.rendered[-1]["content"]).startswith("<run-status>") for c in captured)


def test_default_keep_recent_tokens_is_20000():
    """Seed: "compaction: CompactionPolicy.make({ keepRecentTokens: 20_000 }), // the default" """
    assert EffectAgentConfig().keep_recent_tokens == 20_000


def test_default_on_exhaustion_is_final_answer():
    """Seed: "onExhaustion: "final-answer", // the default" """
    assert Budgets().on_exhaustion == "final-answer"


def test_default_mode_is_prune_then_summarize():
    """Seed: "2. Summarize runs only if pruning was not enough (mode "prune-then-summarize", the default)." """
    assert EffectAgentConfig().mode == "prune-then-summarize"


def test_context_token_limit_unset_never_compacts():
    """Seed: "When contextTokenLimit is set, the engine estimates the next call's context at every pre-Turn
    seam"

    Reference 0(b): "`contextTokenLimit` **unset ⇒ no compaction**". Unset by default; the policy declines at
    any size, and a run that grows past the window never compacts.
    """
    assert EffectAgentConfig().context_token_limit is None
    p = EffectAgent()
    st = state_of(p, grep_chat(8), context=10**9)
    for trigger in ("auto", "manual", "overflow"):
        assert p.decide(st, trigger) is None
    res = run(p, grep_chat(40, size=4000), RunConfig(model=ModelConfig(context_window=20_000), tokenizer="chars4"))
    assert res.compactions == [] and compaction_records(res) == []


# -- tool-result bounds --------------------------------------------------------------------------------------
def test_result_within_the_bound_passes_byte_identical():
    """Seed: "A result within the bound passes through byte-identical."

    A result whose JSON encoding is exactly ``max_bytes`` bytes (two-byte characters included) enters the log
    and the request unchanged. (Issue 11, item 9: the real ``applyToolResultBounds`` measures the encoded
    result, its quotes included; this test measured the raw text before.)
    """
    text = "é" * 300 + "x" * 398  # 600 + 398 = 998 bytes, 1000 encoded
    assert len(json.dumps(text, ensure_ascii=False).encode()) == 1000
    c = conv(sys("s"), user("go"), asst(calls=["c1"]), tool("c1", text, id="res"), asst("done"))
    res, captured, _ = run_capture(policy(max_bytes=1000), c, C4)
    logged = next(m for m in log_messages(res) if m.id == "res")
    assert logged == c.messages[3]
    assert logged.parts[0].text.encode() == text.encode() and logged.parts[0].original_bytes is None
    assert tool_contents(captured[-1].rendered)["c1"] == text


def test_oversized_result_becomes_the_canonical_envelope():
    """Seed: "An oversized one becomes the canonical envelope: { "truncatedToolResult": true, "originalBytes":
    412887, "head": "…first half of the byte budget…", "tail": "…last half…" }"

    One byte over a 1,000-byte bound (the result's JSON encoding, 1,001 bytes): the envelope has exactly those
    four keys and the encoded size; head and tail are a prefix and a suffix of the encoded text, equal in size,
    and the whole envelope fits the bound. (Issue 11, item 9: the real envelope fits ``maxBytes`` as encoded;
    this test expected two raw 500-byte halves, which made every envelope larger than the bound.)
    """
    text = "".join(chr(ord("a") + i % 26) for i in range(999))
    encoded = json.dumps(text)
    c = conv(sys("s"), user("go"), asst(calls=["c1"]), tool("c1", text, id="res"), asst("done"))
    res = run(policy(max_bytes=1000), c, C4)
    part = next(m for m in log_messages(res) if m.id == "res").parts[0]
    env = json.loads(part.text)
    assert set(env) == {"truncatedToolResult", "originalBytes", "head", "tail"}
    assert env["truncatedToolResult"] is True
    assert env["originalBytes"] == 1001 == part.original_bytes
    assert encoded.startswith(env["head"]) and encoded.endswith(env["tail"])
    assert abs(len(env["head"]) - len(env["tail"])) <= 1
    assert 990 <= len(part.text.encode()) <= 1000


def test_model_and_journal_see_the_same_envelope_and_replay_is_consistent():
    """Seed: "The model sees the envelope, the journal records the same envelope, and replay stays
    consistent."

    The request carries exactly the text the log recorded, and replaying the run gives the same log bytes.
    """
    text = "line of a very long diff\n" * 400  # 10,000 bytes
    c = conv(sys("s"), user("go"), asst(calls=["c1"]), tool("c1", text, id="res"), asst("done"))
    res, captured, _ = run_capture(policy(max_bytes=2048), c, C4)
    logged = next(m for m in log_messages(res) if m.id == "res").parts[0].text
    assert envelope(logged) is not None
    assert tool_contents(captured[-1].rendered)["c1"] == logged
    again = run(policy(max_bytes=2048), c, C4)
    assert [encode_event(e) for e in again.log] == [encode_event(e) for e in res.log]


def test_default_bound_is_50_kib_per_result_and_can_be_raised():
    """Seed: "The default is 50 KiB per result; raise it deliberately for agents whose single results must be
    large."

    A result encoding to 51,200 bytes passes under the default, one encoding to 51,201 becomes an envelope
    of at most 51,200 bytes whose halves are about equal; a raised bound lets the larger one through. (Issue
    11, item 9: sizes are of the JSON-encoded result, and the envelope fits the bound.)
    """

    def logged(p, size):
        c = conv(sys("s"), user("go"), asst(calls=["c1"]), tool("c1", "z" * size, id="res"), asst("done"))
        return next(m for m in log_messages(run(p, c, C4)) if m.id == "res").parts[0].text

    assert logged(EffectAgent(), 51_198) == "z" * 51_198
    big = logged(EffectAgent(), 51_199)
    env = envelope(big)
    assert env is not None and env["originalBytes"] == 51_201 and len(big.encode()) <= 51_200
    assert abs(len(env["head"].encode()) - len(env["tail"].encode())) <= 1
    assert len(env["head"].encode()) > 25_500
    assert logged(policy(max_bytes=100 * 1024), 51_199) == "z" * 51_199


def test_results_are_bounded_exactly_once_at_the_settle_seam():
    """Seed: "Every application Tool result, including MCP results, passes through toolResultBounds exactly
    once at the settle seam, before it enters history or durable records."

    Each result passes the bound once, though it is sent with many later requests; the logged envelope wraps
    the raw result, not an earlier envelope.
    """
    seen: dict[str, int] = {}

    class Counting(EffectAgent):
        def bound_tool_result(self, part):
            seen[part.call_id] = seen.get(part.call_id, 0) + 1
            return super().bound_tool_result(part)

    c = grep_chat(6, size=3000)
    res = run(Counting(EffectAgentConfig(max_bytes=1024)), c, C4)
    assert seen == {f"c{i}": 1 for i in range(6)}
    for m in log_messages(res):
        if m.role == "tool":
            env = envelope(m.parts[0].text)
            assert env is not None and env["head"].startswith('"hit ') and env["originalBytes"] == 3002


def test_an_oversized_diff_no_longer_costs_its_full_size_on_later_calls():
    """Seed: "One oversized git diff no longer costs its full size on every subsequent call for the rest of
    the conversation."

    A 400,010-byte diff read at the first turn: every later request is smaller than without the bound by
    exactly the diff's tokens less the envelope's, which is over 80% of the diff.
    """
    diff = "+ added line\n" * 30_770
    drafts = [sys("s"), user("review the change"), asst(calls=["d"]), tool("d", diff, id="diff")]
    for i in range(5):
        drafts += [asst(f"note {i}", calls=[f"c{i}"]), tool(f"c{i}", "ok")]
    c = conv(*drafts, asst("looks good"))
    big = RunConfig(model=ModelConfig(context_window=1_000_000), tokenizer="chars4", run_status="off")
    res = run(EffectAgent(), c, big)
    bounded, bare = agent_rows(res), agent_rows(run(NoCompaction(), c, big))
    env = next(m for m in log_messages(res) if m.id == "diff").parts[0].text
    saved = math.ceil(len(diff) / 4) - math.ceil(len(env) / 4)
    assert saved > 0.8 * len(diff) / 4
    assert len(bounded) == len(bare) == 7
    assert bounded[0]["context_tokens"] == bare[0]["context_tokens"]
    for b, n in zip(bounded[1:], bare[1:], strict=True):
        assert n["context_tokens"] - b["context_tokens"] == saved


# -- the run-status line -------------------------------------------------------------------------------------
BUDGETS = Budgets(max_turns=12, max_tool_calls=24, token_budget=200_000, max_duration=300)


def test_each_request_ends_with_one_derived_run_status_line():
    """Seed: "With runStatus: "appended" (the default), each outgoing request ends with one derived line:
    <run-status>turn 3/12 · tool-calls 11/24 · tokens 84210/200000 · last-context 23480 · elapsed
    74s/300s</run-status>"

    Turn k's line says ``turn k/12``, the tool calls made so far, the tokens charged so far, the previous
    request's context, and the whole seconds of the run's simulated clock when the request starts (the
    ``time_seconds`` of its row), over the seed's ``maxDuration: "5 minutes"``.
    """
    c = grep_chat(5, calls_per_turn=2)
    res, captured, _ = run_capture(EffectAgent(), c, RunConfig(tokenizer="chars4", budgets=BUDGETS))
    rows = agent_rows(res)
    assert len(captured) == len(rows) == 6
    for k, (cap, row) in enumerate(zip(captured, rows, strict=True)):
        last = cap.rendered[-1]
        assert last["role"] == "user" and text_of(last["content"]) == cap.status
        assert sum("<run-status>" in text_of(m["content"]) for m in cap.rendered) == 1
        m = STATUS_RE.match(cap.status)
        assert m, cap.status
        turn, calls, tokens, last_ctx, elapsed = map(int, m.groups())
        assert elapsed == int(row["time_seconds"])
        assert turn == k + 1
        assert calls == 2 * k
        assert tokens == sum(r["context_tokens"] + r["output_tokens"] for r in res.rows[: res.rows.index(row)])
        assert last_ctx == (rows[k - 1]["context_tokens"] if k else 0)


def test_last_context_is_the_live_context_of_the_most_recent_call():
    """Seed: "lastInputTokens is the number to watch. It is the Run's actual context size, the quantity
    contextTokenLimit bounds."

    The status line's ``last-context`` and the state the policy estimates from both hold the previous
    request's prompt size.
    """
    c = grep_chat(4)
    res, captured, eng = run_capture(EffectAgent(), c, C4)
    rows = agent_rows(res)
    for k in range(1, len(rows)):
        assert f"last-context {rows[k - 1]['context_tokens']}" in captured[k].status
    assert eng.state.last_input_tokens == rows[-1]["context_tokens"]


def test_wrap_up_warning_past_80_percent():
    """Seed: "Past 80% of any dimension it appends a wrap-up warning, so the model converges instead of
    starting new work it cannot finish."

    With five turns allowed, the fourth request (turn 4 of 5, 80%) carries the warning; the first three do not.
    The real ``formatRunStatus`` warns when ``turn * 5 >= maxTurns * 4`` for the current turn, with the text
    " · WARNING: approaching limits — converge and deliver your final result now." inside the tag (issue 11:
    this test expected our own wording from the fifth request before).
    """
    _res, captured, _ = run_capture(
        EffectAgent(), grep_chat(4), RunConfig(tokenizer="chars4", budgets=Budgets(max_turns=5))
    )
    assert len(captured) == 5
    assert all("WARNING" not in c.status for c in captured[:3])
    assert re.fullmatch(
        r"<run-status>turn 4/5 · tool-calls 3/unbounded · tokens \d+/unbounded · last-context \d+"
        r" · elapsed \d+s/unbounded"
        r" · WARNING: approaching limits — converge and deliver your final result now\.</run-status>",
        captured[3].status,
    )
    assert "WARNING" in captured[4].status


def test_run_status_is_never_persisted():
    """Seed: "The message is derived at prompt-assembly time and is never persisted: canonical history stays
    append-only, and replays are unaffected."

    No logged message holds a status line, and the log's messages are the same with the line on or off.
    """
    c = grep_chat(5)
    on = run(EffectAgent(), c, C4)
    off = run(EffectAgent(), c, RunConfig(tokenizer="chars4", run_status="off"))
    for res in (on, off):
        assert not any("<run-status>" in p.text for m in log_messages(res) for p in m.parts)
    assert log_messages(on) == log_messages(off) == list(c.messages)


def test_run_status_off():
    """Seed: "Set runStatus: "off" for prompt-sensitive evaluations."

    With it off, requests end with the script's last message, and each is smaller by exactly the status
    message.
    """
    c = grep_chat(4)
    on, cap_on, _ = run_capture(EffectAgent(), c, C4)
    off, cap_off, _ = run_capture(EffectAgent(), c, RunConfig(tokenizer="chars4", run_status="off"))
    assert all(cap.status is None for cap in cap_off)
    assert all("<run-status>" not in text_of(m["content"]) for cap in cap_off for m in cap.rendered)
    for a, b, cap in zip(agent_rows(on), agent_rows(off), cap_on, strict=True):
        assert a["context_tokens"] - b["context_tokens"] == MESSAGE_OVERHEAD + math.ceil(len(cap.status) / 4)


# -- warnings and exhaustion ---------------------------------------------------------------------------------
def test_budget_warning_once_per_dimension():
    """Seed: "Crossing 80% of a configured budget emits one BudgetWarning Run Event per dimension."

    Ten turns and twenty tool calls allowed, two calls a turn: each warning comes once, after the eighth turn
    (16 calls), though the ninth is above 80% too; dimensions without a limit, or under 80%, never warn.
    """
    c = grep_chat(8, calls_per_turn=2)
    res = run(EffectAgent(), c, RunConfig(tokenizer="chars4", budgets=Budgets(max_turns=10, max_tool_calls=20)))
    warned = [(e.dimension, e.turn) for e in res.log if isinstance(e, BudgetWarned)]
    assert sorted(warned) == [("tool-calls", 8), ("turns", 8)]
    # twelve turns allowed over eleven requests: above 80% from the tenth on, warned once; 20 of 100 calls:
    # never warned
    res = run(
        EffectAgent(),
        grep_chat(10, calls_per_turn=2),
        RunConfig(tokenizer="chars4", budgets=Budgets(max_turns=12, max_tool_calls=100)),
    )
    warned = [(e.dimension, e.turn) for e in res.log if isinstance(e, BudgetWarned)]
    assert warned == [("turns", 10)] and res.summary["finish_reason"] == "completed"


def _soft_landing(res, c, exhausted_at_turn: int):
    """Common checks of a final-answer exhaustion at the reply of agent request ``exhausted_at_turn``."""
    assert res.summary["finish_reason"] == "budget-exhausted"
    kinds = [r["request_kind"] for r in res.rows]
    assert kinds.count("grace") == 1 and kinds[-1] == "grace"
    assert kinds.count("agent") == exhausted_at_turn
    logged = log_messages(res)
    reply = logged[-3]
    settled, final = logged[-2], logged[-1]
    assert reply.role == "assistant" and reply.calls
    assert settled.role == "tool" and [p.call_id for p in settled.parts] == [p.call_id for p in reply.calls]
    assert all(p.is_error for p in settled.parts)
    assert final.role == "assistant" and not final.calls
    synthetic = [e.synthetic for e in res.log if isinstance(e, MessageAppended)]
    assert synthetic[-2:] == [True, True] and not any(synthetic[:-2])
    # the over-budget batch's scripted results never ran
    script_results = {m.id for m in c.messages if m.role == "tool"}
    assert not script_results & {m.id for m in logged[-2:]}


def test_turn_exhaustion_soft_lands_with_one_grace_turn():
    """Seed: "Turn and Tool Call exhaustion soft-land as described in Agent definitions: the over-budget batch
    settles synthetically, tool use is forbidden, and one grace Turn produces the final answer."

    Three turns allowed; the third reply asks for more tools. Its calls settle synthetically, and one grace
    request without tools produces the answer. The grace request is the same size whether or not the agent has
    tools, while its other requests carry the tool schemas.
    """
    schema = (Tool("grep", "search the repository", '{"type":"object","properties":{"q":{"type":"string"}}}'),)
    cfgs = RunConfig(tokenizer="chars4", budgets=Budgets(max_turns=3))
    with_tools = run(EffectAgent(), grep_chat(6, tools=schema), cfgs)
    without = run(EffectAgent(), grep_chat(6), cfgs)
    for res in (with_tools, without):
        _soft_landing(res, grep_chat(6), 3)
        assert res.summary["exhausted"] == "turns"
    grace = [r["context_tokens"] for r in with_tools.rows if r["request_kind"] == "grace"]
    assert grace == [r["context_tokens"] for r in without.rows if r["request_kind"] == "grace"]
    assert agent_rows(with_tools)[0]["context_tokens"] > agent_rows(without)[0]["context_tokens"]


def test_tool_call_exhaustion_soft_lands_with_one_grace_turn():
    """Seed: "Turn and Tool Call exhaustion soft-land as described in Agent definitions: the over-budget batch
    settles synthetically, tool use is forbidden, and one grace Turn produces the final answer."

    Three tool calls allowed, two per turn: the second batch goes over, settles synthetically, and one grace
    turn answers.
    """
    c = grep_chat(5, calls_per_turn=2)
    res = run(EffectAgent(), c, RunConfig(tokenizer="chars4", budgets=Budgets(max_tool_calls=3)))
    _soft_landing(res, c, 2)
    assert res.summary["exhausted"] == "tool-calls"


def test_a_batch_within_the_tool_call_budget_runs():
    """Seed: "Turn and Tool Call exhaustion soft-land as described in Agent definitions: the over-budget batch
    settles synthetically, tool use is forbidden, and one grace Turn produces the final answer."

    Also "maxToolCalls: 24". One tool call allowed and one made: that batch is not over the budget, so its
    result is the real one and the run completes with its answer.
    """
    c = conv(sys("s"), user("go"), asst("grep", calls=["c1"]), tool("c1", "hit", id="res"), asst("done", id="done"))
    res = run(EffectAgent(), c, RunConfig(tokenizer="chars4", budgets=Budgets(max_tool_calls=1)))
    assert "res" in {m.id for m in log_messages(res)}
    assert res.summary["finish_reason"] == "completed"


def _interim_chat():
    """Two rounds; the first ends with a text answer; the second makes a batch of two calls, then one."""
    return conv(
        sys("You are a research agent."),
        user("Find where the config is loaded."),
        asst("grep", calls=["c1"]),
        tool("c1", "hit " + "r" * 396),
        asst("It is in src/app.py.", id="ans"),
        user("Now find the tests."),
        asst("grep", calls=["c2", "c2b"]),
        tools({"c2": "hit " + "r" * 396, "c2b": "hit " + "q" * 396}),
        asst("read", calls=["c3"]),
        tool("c3", "hit " + "r" * 396),
        asst("They are in tests/."),
    )


def _cumulative_after_agent(res) -> list[int]:
    """Tokens charged through each agent request (summariser requests included)."""
    out, total = [], 0
    for r in res.rows:
        if r["billed"]:
            total += r["context_tokens"] + r["output_tokens"]
        if r["request_kind"] == "agent" and not r["error"]:
            out.append(total)
    return out


def test_token_breach_on_an_answer_completes_the_run_directly():
    """Seed: "when cumulative usage crosses tokenBudget, a breaching response that already carries a decodable
    answer completes the Run directly"

    The budget is crossed exactly by the request whose reply is a text answer: the run completes there, with
    no grace turn.
    """
    c = _interim_chat()
    ref = run(EffectAgent(), c, C4_OFF)
    budget = _cumulative_after_agent(ref)[1]
    res = run(EffectAgent(), c, RunConfig(**OFF, budgets=Budgets(token_budget=budget)))
    assert res.summary["finish_reason"] == "budget-exhausted" and res.summary["exhausted"] == "tokens"
    assert [r["request_kind"] for r in res.rows] == ["agent", "agent"]
    assert log_messages(res)[-1].id == "ans"
    # one token more and the run goes on past that answer
    more = run(EffectAgent(), c, RunConfig(**OFF, budgets=Budgets(token_budget=budget + 1)))
    assert len(agent_rows(more)) > 2


def test_token_breach_without_an_answer_takes_at_most_one_grace_turn():
    """Seed: "and otherwise the Run takes at most one constrained grace Turn (toolChoice: "none", or only the
    Definition-owned completion Tool; its usage is charged once and cannot re-trigger the breach)."

    The budget is crossed by a request whose reply asks for tools: one grace turn, charged once, and the run
    ends although the grace turn is over the budget too.
    """
    c = _interim_chat()
    ref = run(EffectAgent(), c, C4_OFF)
    budget = _cumulative_after_agent(ref)[2]
    res = run(EffectAgent(), c, RunConfig(**OFF, budgets=Budgets(token_budget=budget)))
    assert res.summary["finish_reason"] == "budget-exhausted" and res.summary["exhausted"] == "tokens"
    grace = [r for r in res.rows if r["request_kind"] == "grace"]
    assert len(grace) == 1 and grace[0]["billed"] and res.rows[-1] is grace[0]
    assert res.summary["cumulative_input_tokens"] == sum(r["context_tokens"] for r in res.rows if r["billed"])
    assert res.summary["cumulative_input_tokens"] + res.summary["cumulative_output_tokens"] > budget


@pytest.mark.parametrize(
    "dimension,budgets",
    [
        ("turns", Budgets(max_turns=2)),
        ("tool-calls", Budgets(max_tool_calls=2)),  # the batch of two after one call goes over
        ("tokens", None),
    ],
)
def test_exhausted_names_the_exhausted_dimension(dimension, budgets):
    """Seed: "RunCompleted { finishReason: "budget-exhausted", exhausted: "tokens", // or "turns" |
    "tool-calls" }"

    Also "exhausted names the exhausted dimension." The run's summary and its final log event agree.
    """
    c = _interim_chat()
    if budgets is None:
        budgets = Budgets(token_budget=_cumulative_after_agent(run(EffectAgent(), c, C4_OFF))[2])
    res = run(EffectAgent(), c, RunConfig(**OFF, budgets=budgets))
    assert (res.summary["finish_reason"], res.summary["exhausted"]) == ("budget-exhausted", dimension)
    fin = res.log[len(res.log) - 1]
    assert isinstance(fin, RunFinished)
    assert (fin.finish_reason, fin.exhausted) == ("budget-exhausted", dimension)


@pytest.mark.parametrize("dimension", ["turns", "tool-calls", "tokens"])
def test_fail_keeps_every_dimension_fail_fast(dimension):
    """Seed: "onExhaustion: "fail" keeps every dimension fail-fast for pipelines that must never accept a
    truncated answer. No declared application Handler, including a completion Tool, starts after the breach."

    The run fails at the breaching reply: no grace turn, no synthetic settlement, none of the breaching
    batch's tool results enters the log, and no request follows.
    """
    c = _interim_chat()
    limits = {
        "turns": {"max_turns": 3},
        "tool-calls": {"max_tool_calls": 2},
        "tokens": {"token_budget": _cumulative_after_agent(run(EffectAgent(), c, C4_OFF))[2]},
    }[dimension]
    res = run(EffectAgent(), c, RunConfig(**OFF, budgets=Budgets(on_exhaustion="fail", **limits)))
    assert (res.summary["finish_reason"], res.summary["exhausted"]) == ("budget-failed", dimension)
    assert [r["request_kind"] for r in res.rows] == ["agent"] * 3
    logged = log_messages(res)
    assert logged[-1].role == "assistant" and logged[-1].calls
    assert not any(e.synthetic for e in res.log if isinstance(e, MessageAppended))


def test_cost_breach_always_fails():
    """Seed: "Duration and cost breaches always fail typed because a grace call would extend the wall-clock
    limit or increase the bill."

    Under ``final-answer``, a cost breach fails with no grace turn.
    """
    c = _interim_chat()
    ref = run(EffectAgent(), c, C4_OFF)
    spent = ref.rows[0]["cost_usd"] + ref.rows[1]["cost_usd"]
    res = run(EffectAgent(), c, RunConfig(**OFF, budgets=Budgets(cost_budget=spent * 0.999)))
    assert (res.summary["finish_reason"], res.summary["exhausted"]) == ("budget-failed", "cost")
    assert "grace" not in [r["request_kind"] for r in res.rows]
    assert len(res.rows) == 2


def test_duration_breach_always_fails():
    """Seed: "Duration and cost breaches always fail typed because a grace call would extend the wall-clock
    limit or increase the bill."

    The run's simulated clock (each request's ``time_seconds``) against ``max_duration``: the first request that
    starts at or past the limit is the last, the run fails with ``duration`` exhausted and takes no grace turn.
    """
    c = _interim_chat()
    ref = run(EffectAgent(), c, C4_OFF)
    start = ref.rows[1]["time_seconds"]
    assert start > 0
    res = run(EffectAgent(), c, RunConfig(**OFF, budgets=Budgets(max_duration=start)))
    assert (res.summary["finish_reason"], res.summary["exhausted"]) == ("budget-failed", "duration")
    assert "grace" not in [r["request_kind"] for r in res.rows]
    assert len(res.rows) == 2


# -- the three token quantities ------------------------------------------------------------------------------
def test_token_budget_is_cumulative_input_plus_output_of_every_call():
    """Seed: "tokenBudget: 200_000, // cumulative input+output across the Run"

    Also "tokenBudget is cumulative and charges the full prompt of every call." and "The summarization call's
    usage is charged like any other." The tokens the status line reports before each request are the sum of
    every earlier call's full prompt and output, the summariser's included.
    """
    c = grep_chat(10, size=1200)
    p = policy(context_token_limit=2_500, keep_recent_tokens=600, mode="summarize")
    res, captured, _ = run_capture(p, c, RunConfig(tokenizer="chars4", budgets=BUDGETS))
    assert any(r["request_kind"] == "summariser" for r in res.rows)
    rows = agent_rows(res)
    for cap, row in zip(captured, rows, strict=True):
        before = res.rows[: res.rows.index(row)]
        tokens = int(STATUS_RE.match(cap.status.split("\n")[0]).group(3))
        assert tokens == sum(r["context_tokens"] + r["output_tokens"] for r in before if r["billed"])


def test_summariser_usage_counts_toward_token_exhaustion():
    """Seed: "The summarization call's usage is charged like any other."

    A token budget that only the summariser's usage pushes over at a given turn exhausts the run at that turn.
    """
    c = grep_chat(12, size=1200)
    p = policy(context_token_limit=2_500, keep_recent_tokens=600, mode="summarize")
    ref = run(p, c, C4_OFF)
    kinds = [r["request_kind"] for r in ref.rows]
    k = kinds.index("summariser")
    with_sum = _cumulative_after_agent(ref)
    turn = sum(1 for r in ref.rows[:k] if r["request_kind"] == "agent")  # the agent request after the summariser
    without_sum = with_sum[turn] - ref.rows[k]["context_tokens"] - ref.rows[k]["output_tokens"]
    budget = with_sum[turn]
    assert without_sum < budget and with_sum[turn - 1] < budget
    res = run(p, c, RunConfig(**OFF, budgets=Budgets(token_budget=budget, on_exhaustion="fail")))
    assert res.summary["exhausted"] == "tokens"
    assert len(agent_rows(res)) == turn + 1


def test_token_budget_grows_quadratically_with_history():
    """Seed: "It grows quadratically with history and stops runaway Runs rather than measuring completed
    work."

    Without compaction each round adds the same amount to the prompt, so the cumulative tokens' second
    differences are constant.
    """
    res = run(NoCompaction(), grep_chat(10), RunConfig(tokenizer="chars4", model=ModelConfig(context_window=10**6)))
    cum = _cumulative_after_agent(res)[1:-1]  # rounds of identical shape
    d1 = [b - a for a, b in itertools.pairwise(cum)]
    d2 = [b - a for a, b in itertools.pairwise(d1)]
    assert len(set(d2)) == 1 and d2[0] > 0


def test_a_grep_and_read_agent_pays_for_a_larger_prompt_every_call():
    """Seed: "A grep-and-read agent adds another Tool result to each request, pays for the larger prompt on
    every later call, and may exceed its budget or the model's context window before it answers."

    Without context management each request is larger than the last until the window rejects one and the run
    ends without its answer.
    """
    res = run(
        NoCompaction(),
        grep_chat(30, size=2000),
        RunConfig(tokenizer="chars4", model=ModelConfig(context_window=12_000, output_reserve=2_000)),
    )
    ctx = [r["context_tokens"] for r in res.rows]
    assert all(b > a for a, b in itertools.pairwise(ctx))
    assert res.summary["finish_reason"] == "context-overflow"
    assert "answer" not in {m.id for m in log_messages(res)}


def test_cumulative_input_is_many_multiples_of_the_live_context():
    """Seed: "Cumulative inputTokens will be many multiples of it on any long Run."

    Also "usage.inputTokens; // cumulative input (total, including cached)". Over a long compacting run the
    cumulative input is the sum of every billed prompt and many times the last one.
    """
    res = run(policy(context_token_limit=4_000, keep_recent_tokens=1_000), grep_chat(60, size=1200), C4)
    cum = res.summary["cumulative_input_tokens"]
    assert cum == sum(r["context_tokens"] for r in res.rows if r["billed"])
    assert cum >= 10 * agent_rows(res)[-1]["context_tokens"]


# -- compaction trigger --------------------------------------------------------------------------------------
def test_compaction_triggers_when_the_estimate_reaches_the_limit():
    """Seed: "When contextTokenLimit is set, the engine estimates the next call's context at every pre-Turn
    seam (the last provider-reported input plus a conservative estimate of newly appended parts). Crossing the
    limit triggers compaction, synchronously, per CompactionPolicy:"

    The estimate before the last request is the previous request's prompt and output plus the JSON estimate of
    what came since (``estimates``). A limit one below it compacts before that request; a limit equal to it
    does not compact at all: the real check is ``estimate > contextTokenLimit`` (``packages/engine/src/index.ts``,
    the pre-Turn seam). (Issue 11, items 6 and 7: this test expected ``>=`` and chars/4 before.)
    """
    c = grep_chat(6)
    ref = run(EffectAgent(), c, C4)
    est = estimates(c, ref)
    assert all(e < est[-1] for e in est[:-1])
    hit = run(policy(context_token_limit=est[-1] - 1, keep_recent_tokens=250), c, C4)
    assert [(x["turn"], x["trigger"]) for x in hit.compactions] == [(6, "auto")]
    assert agent_rows(hit)[6]["context_tokens"] < agent_rows(ref)[6]["context_tokens"]
    miss = run(policy(context_token_limit=est[-1], keep_recent_tokens=250), c, C4)
    assert miss.compactions == []


def test_estimate_of_new_parts_is_conservative():
    """Seed: "the last provider-reported input plus a conservative estimate of newly appended parts"

    The real ``nextContextEstimate`` (issue 11, item 7): the new message counts as ceil(UTF-8 bytes of its JSON
    / 4) (``estimateMessageTokens``), framing included, so a nine-character result costs more than three
    tokens; a limit one below the estimate triggers, a limit equal to it does not (``>``, item 6).
    """
    c = grep_chat(6)
    st = state_of(EffectAgent(), c, context=1_000)
    st.messages_at_last_request -= 1  # the newest message (a tool result) arrived after the last call
    new = c.messages[-1]
    est = 1_000 + message_tokens(new)
    assert message_tokens(new) > math.ceil(new.chars / 4)
    assert EffectAgent.estimate(st) == est
    assert policy(context_token_limit=est - 1, keep_recent_tokens=250).decide(st, "auto") is not None
    assert policy(context_token_limit=est, keep_recent_tokens=250).decide(st, "auto") is None


# -- prune ---------------------------------------------------------------------------------------------------
def _pruned(mode="prune", keep=250, n=6, size=400):
    c = grep_chat(n, size=size)
    ref = run(EffectAgent(), c, C4)
    limit = estimates(c, ref)[-1] - 1
    res, captured, eng = run_capture(policy(context_token_limit=limit, keep_recent_tokens=keep, mode=mode), c, C4)
    return c, ref, res, captured, eng


def test_prune_replaces_old_tool_results_with_the_placeholder():
    """Seed: "1. Prune replaces application Tool results older than the protected keepRecentTokens tail with
    "[tool result cleared by compaction]"."

    Six results of 100 tokens of content (166 by the real ``estimateMessageTokens``: Effect's JSON of the message,
    its type-id keys included) and a 340-token tail: the two newest stay verbatim, the four older read exactly the
    placeholder. (Issue 11: the real ``choosePruneBound`` weighs each tool message by its JSON estimate; issue 35:
    the JSON is Effect's own, 33 tokens more a message than the JSON this test counted before, with a 300-token
    tail.)
    """
    assert PLACEHOLDER == "[tool result cleared by compaction]"
    assert {message_tokens(m) for m in grep_chat(6).messages if m.role == "tool"} == {166}
    c, _, res, captured, _ = _pruned(keep=340)
    assert [x["mode"] for x in res.compactions] == ["prune"]
    shown = tool_contents(captured[-1].rendered)
    originals = {m.parts[0].call_id: m.parts[0].text for m in c.messages if m.role == "tool"}
    assert [k for k, v in shown.items() if v == "[tool result cleared by compaction]"] == [
        "c0",
        "c1",
        "c2",
        "c3",
    ]
    assert shown["c4"] == originals["c4"] and shown["c5"] == originals["c5"]


def test_prune_keeps_structure_and_pairing_and_spends_no_model_call():
    """Seed: "Message structure and call/result pairing are preserved; no model call is spent."

    The pruned request has the same messages, roles and call ids as it would have had unpruned; only result
    texts differ. No summariser request is made and the provider accepts the request.
    """
    c, _ref, res, captured, _ = _pruned()
    _, ref_cap, _ = run_capture(EffectAgent(), c, C4)
    after, before = captured[-1].rendered[:-1], ref_cap[-1].rendered[:-1]  # the status lines differ
    assert len(after) == len(before)
    for a, b in zip(after, before, strict=True):
        assert a["role"] == b["role"]
        assert [(x["type"], x.get("id"), x.get("tool_use_id")) for x in a["content"]] == [
            (x["type"], x.get("id"), x.get("tool_use_id")) for x in b["content"]
        ]
    assert "summariser" not in [r["request_kind"] for r in res.rows]
    assert res.summary["finish_reason"] == "completed" and res.violations == []


def test_default_keep_recent_tokens_protects_20000_tokens_of_results():
    """Seed: "keepRecentTokens (default 20k) is the verbatim tail that survives a compaction."

    With the default, results of 8,000 tokens: the newest two (16,000) survive a prune, the third would go
    past 20,000 and is cleared with everything older.
    """
    c = grep_chat(5, size=32_000)
    ref = run(EffectAgent(), c, C4)
    limit = estimates(c, ref)[-1] - 1  # the trigger is ``>`` (issue 11, item 6)
    _res, captured, _ = run_capture(policy(context_token_limit=limit, mode="prune"), c, C4)
    shown = tool_contents(captured[-1].rendered)
    assert [k for k, v in shown.items() if v == PLACEHOLDER] == ["c0", "c1", "c2"]
    assert shown["c3"] != PLACEHOLDER and shown["c4"] != PLACEHOLDER


# -- summarize -----------------------------------------------------------------------------------------------
def mixed_chat(n: int, text: int = 600, size: int = 1200):
    """Assistant reasoning and tool results both grow the prompt: pruning alone cannot keep up."""
    drafts = [sys("You are a research agent."), user("Find where the config is loaded.", id="task")]
    for i in range(n):
        drafts += [
            asst(f"step {i}: " + "w" * text, calls=[f"c{i}"], id=f"a{i}"),
            tool(f"c{i}", f"hit {i} " + "r" * (size - 6), id=f"t{i}"),
        ]
    return conv(*drafts, asst("The config is loaded in src/app.py.", id="answer"))


def _wordy_chat(n=8):
    """Long assistant texts, short results: pruning frees little."""
    drafts = [sys("You are a research agent."), user("Find where the config is loaded.", id="task")]
    for i in range(n):
        drafts += [
            asst(f"thinking aloud {i} " + "w" * 1200, calls=[f"c{i}"], id=f"a{i}"),
            tool(f"c{i}", f"hit {i} " + "r" * 60, id=f"t{i}"),
        ]
    return conv(*drafts, asst("The config is loaded in src/app.py.", id="answer"))


def test_summarize_runs_only_if_pruning_was_not_enough():
    """Seed: "2. Summarize runs only if pruning was not enough (mode "prune-then-summarize", the default)."

    Where clearing old results brings the estimate under the limit, no summariser call is made; where it
    cannot (the context is mostly the assistant's own text), the summariser runs. (Results of 800 characters: the
    check after the prune is the JSON estimate of the whole view, above the anchored one by Effect's framing of
    every message, and clearing four 400-character results does not make up for it.)
    """
    _, _, enough, _, _ = _pruned(mode="prune-then-summarize", size=800)
    assert [x["mode"] for x in enough.compactions] == ["prune"]
    assert "summariser" not in [r["request_kind"] for r in enough.rows]

    c = _wordy_chat()
    # One token over the limit: at exactly the limit, a prune that frees nothing already counts as enough.
    limit = estimates(c, run(EffectAgent(), c, C4))[-1] - 1
    res = run(policy(context_token_limit=limit, keep_recent_tokens=250), c, C4)
    assert [x["mode"] for x in res.compactions] in (["summarize"], ["prune+summarize"])
    assert [r["request_kind"] for r in res.rows].count("summariser") == 1


def test_pruning_that_reaches_exactly_the_limit_is_enough():
    """Seed: "2. Summarize runs only if pruning was not enough (mode "prune-then-summarize", the default)."

    Reference 0(b): "If estimate ≤ limit after prune, stop." The real ``compactContext`` decides it on a fresh
    JSON estimate of the whole pruned view (``estimatePromptTokens(buildCompactedView(...))``), whatever the
    anchored estimate was (issue 11, item 8; this test subtracted the freed characters / 4 from the anchored
    estimate before). A limit equal to the pruned view's estimate stops after the prune; one token less goes on
    to summarise.
    """
    c = conv(*mixed_chat(8).messages[:-1])  # the state before the answer's request
    probe_policy = policy(context_token_limit=100, keep_recent_tokens=250, mode="prune")
    st = state_of(probe_policy, c, context=50_000)
    probe = probe_policy.decide(st, "auto")
    assert probe is not None and probe.cleared_through > 0
    after = view_tokens(st, probe.view_from(st.view))
    enough = policy(context_token_limit=after, keep_recent_tokens=250).decide(st, "auto")
    assert enough is not None and enough.summarize is False and enough.mode == "prune"
    short = policy(context_token_limit=after - 1, keep_recent_tokens=250).decide(st, "auto")
    assert short is not None and short.summarize and short.cleared_through == probe.cleared_through


def _summarized(keep=250, **kw):
    c = _wordy_chat()
    limit = estimates(c, run(EffectAgent(), c, C4))[-1] - 1
    p = policy(context_token_limit=limit, keep_recent_tokens=keep, mode="summarize")
    return (c,) + run_capture(p, c, RunConfig(tokenizer="chars4", **kw))


def test_summarize_is_one_metered_call_on_the_runs_model():
    """Seed: "One metered call on the Run's model summarizes the goal, constraints, progress, decisions, next
    steps, and context."

    One summariser request per summarising compaction, billed at the run's model's prices, answering with the
    six sections.
    """
    _c, res, _captured, _eng = _summarized()
    (rec,) = compaction_records(res)
    calls = [r for r in res.rows if r["request_kind"] == "summariser"]
    assert len(calls) == 1 and calls[0]["compaction_id"] == rec.id and calls[0]["billed"]
    m = ModelConfig()
    assert (
        calls[0]["cost_usd"]
        == Pricer(m.name or DEFAULT_MODEL, m.price_provider).cost(calls[0]["context_tokens"], calls[0]["output_tokens"])
        > 0
    )
    text = rec.view.summary.text
    for section in ("Goal", "Constraints", "Progress", "Decisions", "Next Steps", "Context"):
        assert section in text


def test_view_is_instruction_prefix_then_summary_then_kept_tail():
    """Seed: "The model-visible view becomes instruction prefix + summary + the kept recent tail."

    The request after the compaction: the system prompt and the run's input (the first user message), the
    summary as a user message, the log's messages from the cut on exactly as logged, and the status line. The
    real ``buildCompactedView`` (``packages/engine/src/compaction.ts``) renders the protected instruction/input
    block in place before the summary (issue 11, item 5; this test expected the input summarised away).
    """
    c, _res, captured, eng = _summarized()
    after = captured[-1]
    view = after.view
    assert view.summary is not None and view.summary.text.startswith(SUMMARY_WRAPPER.split("{")[0])
    r = after.rendered
    assert r[0]["role"] == "system" and text_of(r[0]["content"]) == c.messages[0].text
    msgs = eng.ledger.messages
    assert r[1] == render_message_anthropic(msgs[1]) and msgs[1].id == "task"
    assert r[2] == {"role": "user", "content": [{"type": "text", "text": view.summary.text}]}
    assert r[3:-1] == [render_message_anthropic(msgs[i]) for i in range(view.start, len(msgs) - 1)]
    assert text_of(r[-1]["content"]) == after.status


def test_kept_recent_tail_is_keep_recent_tokens_to_within_one_message():
    """Seed: "keepRecentTokens (default 20k) is the verbatim tail that survives a compaction."

    Reference 0(b): "cut where the newest messages sum to `keepRecentTokens`, moved down past tool messages".
    The verbatim tail differs from ``keep_recent_tokens`` by less than one message, and starts on a whole
    unit.
    """
    for keep in (250, 400, 700):
        c, _res, captured, eng = _summarized(keep=keep)
        view = captured[-1].view
        st = eng.state
        n = len(captured[-1].rendered) - 4 + view.start  # system, input, summary and status besides the tail
        tail = st.chars(view.start, n) / 4
        biggest = max(m.chars for m in c.messages[1:]) / 4
        assert abs(tail - keep) < biggest
        assert st.can_cut(view.start)


def test_kept_recent_tail_holds_at_least_keep_recent_tokens():
    """Seed: "keepRecentTokens (default 20k) is the verbatim tail that survives a compaction."

    Reference 0(b): "cut where the newest messages sum to `keepRecentTokens`, moved down past tool messages";
    the real ``chooseSummarizeCut`` accumulates the newest messages until they reach ``keepRecentTokens``.
    Expected: the verbatim tail after a summary holds at least ``keep_recent_tokens``, by the real weights
    (``estimateMessageTokens``, the JSON estimate; issue 11: chars/4 of content before).
    """
    # newest first: result 17.5, reasoning 305.75, result 17.5, reasoning 305.75 (646.5), result 17.5 (664)
    c = _wordy_chat()
    p = policy(context_token_limit=100, keep_recent_tokens=650, mode="summarize")
    st = state_of(p, conv(*c.messages[:-1]), context=10_000)
    plan = p.decide(st, "auto")
    assert plan is not None and plan.summarize
    assert sum(message_tokens(m) for m in st.messages[plan.start :]) >= 650


def test_kept_recent_tail_is_never_empty():
    """Seed: "The model-visible view becomes instruction prefix + summary + the kept recent tail."

    When the newest tool result alone is larger than ``keep_recent_tokens``, the tail still keeps it with its
    call (expected: the cut at the assistant message that made the call).
    """
    drafts = list(grep_chat(6).messages[:-1]) + [
        asst("read the big file", calls=["big"], id="abig"),
        tool("big", "B" * 4000, id="tbig"),
    ]
    c = conv(*drafts)
    p = policy(context_token_limit=100, keep_recent_tokens=250, mode="summarize")
    st = state_of(p, c, context=10_000)
    plan = p.decide(st, "auto")
    assert plan is not None
    assert plan.start == c.index()["abig"]


def test_raise_or_lower_keep_recent_tokens():
    """Seed: "Raise it for agents whose recent Tool results are load-bearing; lower it for chatty ones."

    A larger ``keep_recent_tokens`` never keeps less: the prune bound and the summary cut both move older.
    """
    c = conv(*grep_chat(12).messages[:-1])
    prune_bounds, cuts = [], []
    for keep in (100, 200, 400, 800, 1600):
        st = state_of(EffectAgent(), c, context=10_000)
        pr = policy(context_token_limit=1_000, keep_recent_tokens=keep, mode="prune").decide(st, "auto")
        su = policy(context_token_limit=1_000, keep_recent_tokens=keep, mode="summarize").decide(st, "auto")
        prune_bounds.append(pr.cleared_through if pr else 0)
        cuts.append(su.start if su else 0)
    assert prune_bounds == sorted(prune_bounds, reverse=True) and prune_bounds[0] > prune_bounds[-1]
    assert cuts == sorted(cuts, reverse=True) and cuts[0] > cuts[-1]


def test_summaries_are_incremental(monkeypatch):
    """Seed: "Covered records render as the summary or with cleared Tool results on every later Attempt and
    every later Run of the same Conversation."

    Reference 0(b): "only the newly covered span (from last `summarizedThrough`) + previous summary is sent
    (incremental)". The second summary covers only the messages since the first cut; the first span reaches it
    only through the first summary: a detail the first summary dropped is not offered again.
    """
    facts = [
        fact("k", "constraint", "Find where the config is loaded", "task"),
        fact("x", "recall", "hit 0 ", "t0"),
        fact("y", "recall", "hit 5 ", "t5"),
    ]
    c = conv(*mixed_chat(20).messages, facts=facts)
    seen: list[set[str]] = []
    real = compaction_mod.summarise

    def spy(**kw):
        seen.append({f.id for f in kw["candidates"]})
        return real(**kw)

    monkeypatch.setattr(compaction_mod, "summarise", spy)
    keep = SummariserConfig(keep_constraint=1.0, keep_recall=0.0)
    res = run(
        policy(context_token_limit=2_500, keep_recent_tokens=600, mode="summarize"),
        c,
        RunConfig(tokenizer="chars4", summariser=keep),
    )
    recs = compaction_records(res)
    assert len(recs) >= 2
    first, second = recs[0], recs[1]
    idx = c.index()
    assert second.summarised == (first.view.start, second.view.start)
    assert first.summarised[1] > idx["t0"] and first.view.start <= idx["t5"] < second.view.start
    # The run's input (the task, fact k) is never covered: it stays in the view before the summary (issue 11,
    # item 5; this test expected it among the summariser's candidates before).
    assert seen[0] >= {"x"} and "k" not in seen[0] and "x" not in first.view.summary.facts
    assert seen[1] == {"y"}
    assert all(r.view.shows(idx["task"]) for r in recs)


def test_cleared_through_bound_is_monotone():
    """Seed: "Covered records render as the summary or with cleared Tool results on every later Attempt and
    every later Run of the same Conversation."

    Reference 0(b): "Bound is monotone (`clearedThrough`)." A prune never lowers an existing bound, and over a
    long run the cleared bound and the view's start only grow.
    """
    c = conv(*grep_chat(10).messages[:-1])
    high = len(c.messages) - 3
    view = View.of(cleared_through=high, placeholder=PLACEHOLDER)
    # Everything past the bound is inside the protected recent window: nothing to prune, and no plan lowers it.
    p = policy(context_token_limit=100, keep_recent_tokens=10_000, mode="prune")
    assert p.decide(state_of(p, c, context=10_000, view=view), "auto") is None
    # A short recent window: the prune moves the bound, upwards only.
    p = policy(context_token_limit=100, keep_recent_tokens=100, mode="prune")
    plan = p.decide(state_of(p, c, context=10_000, view=view), "auto")
    assert plan is not None and plan.cleared_through is not None and plan.cleared_through > high
    res = run(policy(context_token_limit=3_000, keep_recent_tokens=800), mixed_chat(40), C4)
    recs = compaction_records(res)
    assert len(recs) >= 3
    assert [r.view.cleared_through for r in recs] == sorted(r.view.cleared_through for r in recs)
    assert [r.view.start for r in recs] == sorted(r.view.start for r in recs)


def test_covered_records_render_compacted_on_every_later_request():
    """Seed: "Covered records render as the summary or with cleared Tool results on every later Attempt and
    every later Run of the same Conversation."

    After each compaction, every later request shows the cleared results as the placeholder and none of the
    summarised messages.
    """
    c = mixed_chat(40)
    res, captured, eng = run_capture(policy(context_token_limit=3_000, keep_recent_tokens=800), c, C4)
    assert len(res.compactions) >= 2
    msgs = eng.ledger.messages
    for rec in compaction_records(res):
        later = [
            cap
            for cap in captured
            if cap.view.start >= rec.view.start and cap.view.cleared_through >= rec.view.cleared_through
        ]
        assert later
        for cap in later:
            shown = tool_contents(cap.rendered)
            for i in range(max(rec.view.start, cap.view.start), rec.view.cleared_through):
                if msgs[i].role == "tool":
                    assert shown[msgs[i].parts[0].call_id] == PLACEHOLDER
            for i in range(1, rec.view.start):
                for p in msgs[i].parts:
                    if p.kind == "tool_result":
                        assert p.call_id not in shown
    # every request after the first compaction is one of those
    first = compaction_records(res)[0].view
    idx_first = next(i for i, cap in enumerate(captured) if cap.view == first)
    assert all(cap.view.start >= first.start for cap in captured[idx_first:])


# -- view, not rewrite ---------------------------------------------------------------------------------------
def test_compaction_is_a_view_never_a_rewrite():
    """Seed: "Compaction is a view, never a rewrite. Official history and the canonical Conversation Log are
    untouched; a CompactionPerformed event reports each reduction."

    After prunes and summaries the log holds every scripted message unchanged, its events were never
    rewritten, and each compaction is one event reporting a smaller prompt.
    """
    c = mixed_chat(40)
    res = run(policy(context_token_limit=3_000, keep_recent_tokens=800), c, C4)
    recs = compaction_records(res)
    assert {r.mode for r in recs} >= {"prune"} and any(r.view.summary for r in recs)
    assert log_messages(res) == list(c.messages)
    assert res.log.verify() is None
    assert len(recs) == res.summary["compaction_count"]
    assert all(r.tokens_after < r.tokens_before for r in recs)


def test_compaction_record_is_appended_and_folded():
    """Seed: "In the durable assemblies (DN and DC) each compaction also appends a canonical CompactionCreated
    record, and the journal projection folds it."

    Folding the log gives the engine's view, and folding up to each record gives that record's view.
    """
    res, _captured, eng = run_capture(policy(context_token_limit=3_000, keep_recent_tokens=800), mixed_chat(40), C4)
    assert fold(res.log) == eng.state.view
    events = list(res.log)
    recs = [k for k, e in enumerate(events) if isinstance(e, CompactionCreated)]
    assert len(recs) >= 2
    for k in recs:
        assert fold(events[: k + 1]) == events[k].view


# -- provider overflow ---------------------------------------------------------------------------------------
SMALL = ModelConfig(context_window=4_000, output_reserve=1_000)


def test_provider_overflow_compacts_and_retries_once():
    """Seed: "If a provider still rejects a prompt as too long, the engine classifies the rejection, compacts,
    and issues at most one framework-level retry."

    The limit is set too high to trigger before the window does. The first rejected request is followed by an
    overflow compaction and one retry, which succeeds; each turn retries at most once.
    """
    c = grep_chat(12, size=2000)
    res = run(
        policy(context_token_limit=10**9, keep_recent_tokens=250),
        c,
        RunConfig(model=SMALL, tokenizer="chars4"),
    )
    assert res.summary["finish_reason"] == "completed"
    kinds = [(r["request_kind"], bool(r["error"])) for r in res.rows]
    first = kinds.index(("agent", True))
    assert "prompt-too-long" in res.rows[first]["error"]
    assert res.compactions[0]["trigger"] == "overflow"
    assert kinds[first + 1 :].index(("agent", False)) >= 0
    per_turn: dict[int, int] = {}
    for r in res.rows:
        if r["request_kind"] == "agent" and r["error"]:
            per_turn[r["turn"]] = per_turn.get(r["turn"], 0) + 1
    assert per_turn and max(per_turn.values()) == 1


def test_second_rejection_fails_typed_with_context_overflow():
    """Seed: "A second rejection, or overflow with no contextTokenLimit configured, fails typed with
    ContextOverflowError instead of an opaque provider error."

    The newest result alone is too big for the window: the compacted retry is rejected again and the run ends
    with ``context-overflow`` after exactly two rejections and one compaction.
    """
    drafts = list(grep_chat(4, size=400).messages[:-1]) + [
        asst("read", calls=["big"]),
        tool("big", "B" * 14_000),
        asst("done"),
    ]
    res = run(
        policy(context_token_limit=10**9, keep_recent_tokens=250, mode="prune"),
        conv(*drafts),
        RunConfig(model=SMALL, tokenizer="chars4"),
    )
    assert res.summary["finish_reason"] == "context-overflow"
    errors = [r for r in res.rows if r["error"]]
    assert len(errors) == 2 and all("prompt-too-long" in r["error"] for r in errors)
    assert errors[0]["turn"] == errors[1]["turn"]
    assert [x["trigger"] for x in res.compactions] == ["overflow"]


def test_overflow_without_a_limit_fails_typed_without_retry():
    """Seed: "A second rejection, or overflow with no contextTokenLimit configured, fails typed with
    ContextOverflowError instead of an opaque provider error."

    With no limit there is no compaction and no retry: one rejection ends the run with ``context-overflow``.
    """
    res = run(EffectAgent(), grep_chat(12, size=2000), RunConfig(model=SMALL, tokenizer="chars4"))
    assert res.summary["finish_reason"] == "context-overflow"
    assert [bool(r["error"]) for r in res.rows].count(True) == 1 and res.rows[-1]["error"]
    assert res.compactions == []


# -- sizing --------------------------------------------------------------------------------------------------
def test_limit_below_a_200k_window_leaves_room_for_output_and_summary():
    """Seed: "Set contextTokenLimit below the model's window to leave room for output and the summary. For a
    200k-token window, start between 150k and 170k."

    With a 200,000-token window and a limit of 160,000, a long agent run prunes and summarises without a
    single rejected request, agent or summariser.
    """
    drafts = [sys("You are a research agent."), user("Audit the repository.")]
    for i in range(100):
        drafts += [asst(f"reading part {i}. " + "n" * 10_000, calls=[f"c{i}"]), tool(f"c{i}", "x" * 32_000)]
    c = conv(*drafts, asst("Audit done."))
    res = run(policy(context_token_limit=160_000), c, C4)
    assert res.summary["finish_reason"] == "completed"
    assert res.summary["overflows"] == 0 and not any(r["error"] for r in res.rows)
    modes = {x["mode"] for x in res.compactions}
    assert "prune" in modes and modes & {"summarize", "prune+summarize"}
    assert res.summary["peak_context_tokens"] <= ModelConfig().input_budget


# -- the kept tail found by bisection is the one the seed's walk finds ------------------------------------
def _sum(msgs, i, cleared_through):  # type: ignore[no-untyped-def]
    """The JSON estimate of the Prompt messages from log index ``i`` on, results before ``cleared_through``
    cleared."""
    return prompt_tokens(msgs[i:], cleared_through - i)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conv=conversations(), keep=st.integers(0, 3_000), data=st.data())
def test_summary_cut_is_the_newest_message_that_reaches_keep_recent_tokens(
    conv: object, keep: int, data: st.DataObject
) -> None:
    """``chooseSummarizeCut``: walking from the newest Prompt message (a batch's tool messages are one), the cut is
    the first at which the kept estimates reach ``keepRecentTokens``, moved down off a tool message to the assistant
    message that made its calls; the floor when they never do. (Issue 11: the walk weighs ``estimateMessageTokens``;
    this test compared a bisection on chars/4 with a walk before.)"""
    seen: list[bool] = []

    class Probe(EffectAgent):
        def decide(self, state, trigger):  # type: ignore[no-untyped-def]
            cleared = data.draw(st.integers(0, len(state)), label="cleared_through")
            cut, lo = self._summary_cut(state, keep, cleared), floor_index(state)
            spans = prompt_spans(state.messages, lo, len(state))
            starts = [a for a, _ in spans]
            reached = [a for a in starts if _sum(state.messages, a, cleared) >= keep]
            if not reached:
                seen.append(cut == lo)
            else:
                at = max(reached)  # the newest Prompt message at which the tail reaches it
                seen.append(cut == (at - 1 if state.messages[at].role == "tool" and at > lo else at))
            return super().decide(state, trigger)

    policy = Probe(EffectAgentConfig(context_token_limit=4_800, keep_recent_tokens=2_000, max_bytes=4_096))
    run(policy, conv, RunConfig(model=small_model(), tokenizer="chars4"))  # type: ignore[arg-type]
    assert all(seen)
