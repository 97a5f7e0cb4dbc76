"""Forked summariser requests (``Policy.summary_call``): a client that sends its agent request with the summary
instruction appended (Claude Code) reads the conversation's cached prefix; a separate summariser prompt, and any
summariser request with caching off, is priced uncached as it always was."""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.claude_code import ClaudeCode
from sim.core.conversation import Conversation, Message, Part
from sim.core.cost import Pricer
from sim.core.model import ModelConfig
from sim.replay.engine import RunConfig, RunResult, run
from tests.test_engine import agent_loop

CONFIG = RunConfig(model=ModelConfig(context_window=60_000), tokenizer="chars4")


class SeparateClaudeCode(ClaudeCode):
    """``claude-code`` with its summariser request sent as a prompt of its own."""

    summary_call = "separate"


def _summariser(r: RunResult) -> list[dict[str, object]]:
    return [row for row in r.rows if row["request_kind"] == "summariser"]


def test_claude_codes_compaction_reads_its_prompt_from_the_cache_and_costs_a_fraction_of_a_separate_one() -> None:
    conv = agent_loop(120, result_chars=2_000)
    fork, separate = run(make_policy("claude-code"), conv, CONFIG), run(SeparateClaudeCode(), conv, CONFIG)
    assert [(c["turn"], c["tokens_after"]) for c in fork.compactions] == [
        (c["turn"], c["tokens_after"]) for c in separate.compactions
    ]
    rows, before = _summariser(fork), _summariser(separate)
    assert len(rows) == len(before) >= 2
    rates = Pricer("claude-sonnet-4-5", "anthropic").rates()
    for row, old in zip(rows, before, strict=True):
        read, w5, w1 = row["cache_read_tokens"], row["cache_write_5m_tokens"], row["cache_write_1h_tokens"]
        assert isinstance(read, int) and isinstance(w5, int) and isinstance(w1, int)
        context = row["context_tokens"]
        assert isinstance(context, int) and read > 0.9 * context  # the conversation, read from the cache
        assert old["cache_read_tokens"] == 0  # the separate prompt shares nothing
        # Priced as an agent request is: uncached input, reads, writes at their TTL's rate, output.
        uncached = context - read - w5 - w1
        out = row["output_tokens"]
        assert isinstance(out, int)
        expected = (uncached * rates[0] + out * rates[1] + read * rates[2] + w5 * rates[3] + w1 * rates[4]) / 1e6
        assert row["cost_usd"] == pytest.approx(expected, rel=1e-9)
        assert isinstance(old["cost_usd"], float) and row["cost_usd"] < 0.25 * old["cost_usd"]
    s, s_old = fork.summary, separate.summary
    assert s["summariser_cost_usd"] == pytest.approx(sum(row["cost_usd"] for row in rows))  # type: ignore[misc]
    assert s["summariser_cost_usd"] < 0.25 * s_old["summariser_cost_usd"]
    assert s["cache_read_tokens"] - s_old["cache_read_tokens"] >= sum(row["cache_read_tokens"] for row in rows)  # type: ignore[misc]
    for c, c_old in zip(fork.compactions, separate.compactions, strict=True):  # each compaction's cost carries it
        assert c["cost_usd"] < c_old["cost_usd"]
    assert s["total_cost_usd"] < s_old["total_cost_usd"]


def test_with_caching_off_a_fork_is_priced_as_a_separate_request_was() -> None:
    conv = agent_loop(120, result_chars=2_000)
    off = RunConfig(model=ModelConfig(context_window=60_000), tokenizer="chars4", cache="off")
    fork, separate = run(make_policy("claude-code"), conv, off), run(SeparateClaudeCode(), conv, off)
    assert fork.compactions and fork.rows == separate.rows and fork.compactions == separate.compactions
    same = {"run_id", "policy", "params_hash"}
    assert {k: v for k, v in fork.summary.items() if k not in same} == {
        k: v for k, v in separate.summary.items() if k not in same
    }
    assert all(row["cache_read_tokens"] == 0 for row in _summariser(fork))


def test_a_separate_summariser_request_is_billed_as_before() -> None:
    """Main's numbers at 9898d14, before summariser requests could be forked: ``codex`` (separate) and
    ``claude-code`` made separate bill exactly what ``codex`` and ``claude-code`` billed then. Since the fitted
    retention model (issue 28) the summaries' texts differ, so claude-code's two summariser requests write
    slightly different outputs (0.082824 then, 0.082839 now) and the second reads a previous summary one token
    longer; the context of the first, what forking changes, is the same."""
    conv = agent_loop(120, result_chars=2_000)
    codex = run(make_policy("codex"), conv, CONFIG)
    assert codex.summary["compaction_count"] == 1
    assert (codex.summary["total_cost_usd"], codex.summary["summariser_cost_usd"]) == (1.1303817, 0.142095)
    cc = run(SeparateClaudeCode(), conv, CONFIG)
    assert (cc.summary["total_cost_usd"], cc.summary["summariser_cost_usd"]) == (0.9781653, 0.166083)
    assert [(row["context_tokens"], row["cost_usd"]) for row in _summariser(cc)] == [
        (27288, 0.082839),
        (27428, 0.083244),
    ]


def _session(gap_minutes: int) -> Conversation:
    """Two exchanges a minute apart, then ``/compact`` ``gap_minutes`` after the last reply."""

    def at(minute: int) -> dict[str, object]:
        return {"timestamp": f"2026-01-01T{minute // 60:02d}:{minute % 60:02d}:00Z"}

    msgs = [Message("s", "system", (Part("text", "You are terse. " * 400),))]
    for k in range(3):
        msgs.append(Message(f"u{k}", "user", (Part("text", f"question {k}: " + "lorem ipsum " * 600),), meta=at(2 * k)))
        msgs.append(
            Message(f"a{k}", "assistant", (Part("text", f"answer {k}: " + "dolor " * 300),), meta=at(2 * k + 1))
        )
    msgs.append(Message("c", "user", (Part("command", name="compact"),), meta=at(5 + gap_minutes)))
    return Conversation("away", tuple(msgs))


@pytest.mark.parametrize("gap_minutes", [2, 120])
def test_a_fork_reads_what_the_cache_still_holds_when_it_is_sent(gap_minutes: int) -> None:
    """``/compact`` two minutes after the last reply reads the conversation; two hours after it (past the 1-hour TTL
    of every entry), nothing: the fork writes its prompt again, as anthropics/claude-code#88755 describes a cold
    fork ("re-bills the whole conversation as a cache write"). The request is billed when the command arrives."""
    r = run(make_policy("claude-code"), _session(gap_minutes), RunConfig())
    [row] = _summariser(r)
    assert row["time_seconds"] == (5 + gap_minutes) * 60
    read, written, context = row["cache_read_tokens"], row["cache_write_1h_tokens"], row["context_tokens"]
    assert isinstance(read, int) and isinstance(written, int) and isinstance(context, int)
    last = [x for x in r.rows if x["request_kind"] == "agent"][-1]
    if gap_minutes < 60:
        assert read == last["context_tokens"]  # the whole prefix the last request wrote
    else:
        assert read == 0 and written > 0.9 * context
    assert r.compactions and r.compactions[0]["cost_usd"] >= row["cost_usd"]
