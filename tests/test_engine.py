"""The engine on small hand-built scripts: replay, views as folds of the log, retention, budgets."""

from __future__ import annotations

import pytest

from policies import make_policy
from sim.core.budgets import Budgets
from sim.core.conversation import Conversation, Fact, Message, Part
from sim.core.log import CompactionCreated, MessageAppended, RequestSent
from sim.core.model import ModelConfig
from sim.core.view import fold
from sim.replay.engine import RunConfig, run

SMALL = ModelConfig(context_window=4_000, output_reserve=500)


def agent_loop(
    turns: int, result_chars: int = 1_200, *, fact_needed_late: bool = True, user_every: int | None = None
) -> Conversation:
    """A tool loop of ``turns`` reads; with ``user_every``, the user says "Continue." after every that many
    results, so a policy that decides once per user turn (cloudflare-os) gets to decide."""
    msgs = [
        Message("s", "system", (Part("text", "You are a careful agent."),)),
        Message("u0", "user", (Part("text", "Fix the failing test. Never edit vendor/."),)),
    ]
    for t in range(turns):
        msgs.append(
            Message(
                f"a{t}",
                "assistant",
                (Part("text", f"step {t}"), Part("tool_call", call_id=f"c{t}", name="read", args="{}")),
            )
        )
        body = f"file_{t}.py " + ("lorem ipsum dolor " * (result_chars // 18))
        msgs.append(Message(f"t{t}", "tool", (Part("tool_result", body, call_id=f"c{t}", name="read"),)))
        if user_every and (t + 1) % user_every == 0 and t + 1 < turns:
            msgs.append(Message(f"k{t}", "user", (Part("text", "Continue."),)))
    msgs.append(Message("u1", "user", (Part("text", "Which file did you read first?"),)))
    msgs.append(Message("end", "assistant", (Part("text", "file_0.py"),)))
    facts = (
        Fact("f-constraint", "constraint", "Never edit vendor/.", "u0", ("u1",) if fact_needed_late else ()),
        Fact("f-first", "recall", "file_0.py", "t0", ("u1",)),
    )
    return Conversation("loop", tuple(msgs), facts)


def test_none_replays_every_reply_and_overflows_where_the_window_ends() -> None:
    short = run(make_policy("none"), agent_loop(3), RunConfig(model=SMALL))
    assert short.summary["finish_reason"] == "completed"
    assert short.summary["agent_requests"] == 4  # one per scripted assistant message
    long = run(make_policy("none"), agent_loop(30), RunConfig(model=SMALL))
    assert long.summary["finish_reason"] == "context-overflow"
    last = long.rows[-1]
    assert last["error"].startswith("prompt-too-long") and last["context_tokens"] + 500 > 4_000


@pytest.mark.parametrize(
    "name, params",
    [
        ("sliding-window", {}),
        ("cloudflare-os", {}),
        # effect-agent's summariser sees the covered results uncleared (collectCoveredMessages takes the source), so
        # the span it summarises at a 2,500 limit outgrows this 4,000-token window: a lower limit summarises sooner
        ("effect-agent", {"context_token_limit": "2000", "keep_recent_tokens": "800"}),
    ],
)
def test_compacting_policies_finish_and_the_log_folds_to_the_view(name: str, params: dict) -> None:
    # cloudflare-os decides once per user turn, as Workshop does (issue 11): a single 30-step tool loop outgrows
    # the window before it is asked, so the user says "Continue." every 3 steps
    conv = agent_loop(30, user_every=3 if name == "cloudflare-os" else None)
    res = run(make_policy(name, params), conv, RunConfig(model=SMALL, deep_checks=True))
    assert res.summary["finish_reason"] == "completed", res.summary
    assert res.summary["compaction_count"] >= 1
    unexpected = [v for v in res.violations if v.invariant not in type(make_policy(name, params)).known_deviations]
    assert not unexpected, unexpected
    compactions = [e for e in res.log if isinstance(e, CompactionCreated)]
    assert fold(res.log) == compactions[-1].view
    appended = [e for e in res.log if isinstance(e, MessageAppended)]
    assert [e.index for e in appended] == list(range(len(appended)))
    assert {e.message.id for e in appended} >= {m.id for m in conv.messages}  # nothing dropped from the log
    assert all(c["tokens_after"] < c["tokens_before"] for c in res.compactions)


def test_retention_counts_a_fact_kept_only_in_the_summary() -> None:
    from sim.core.retention import SummariserConfig

    keep_all = SummariserConfig(keep_constraint=1.0, keep_recall=1.0)
    drop_all = SummariserConfig(
        keep_constraint=0.0, keep_recall=0.0, keep_decision=0.0, keep_artifact=0.0, keep_continuation=0.0
    )
    conv = agent_loop(30, user_every=3)  # cloudflare-os decides at user turns
    kept = run(make_policy("cloudflare-os"), conv, RunConfig(model=SMALL, summariser=keep_all))
    lost = run(make_policy("cloudflare-os"), conv, RunConfig(model=SMALL, summariser=drop_all))
    assert kept.summary["retention_recall"] == 1.0
    assert lost.summary["retention_recall"] == 0.0
    assert lost.summary["retention_by_kind"]["constraint"] == {"needed": 1, "visible": 0, "recall": 0.0}


def test_summariser_calls_are_requests_and_are_charged() -> None:
    res = run(make_policy("cloudflare-os"), agent_loop(30, user_every=3), RunConfig(model=SMALL))
    summ = [r for r in res.rows if r["request_kind"] == "summariser"]
    assert summ and all(r["cost_usd"] > 0 and r["output_tokens"] > 0 for r in summ)
    assert len([e for e in res.log if isinstance(e, RequestSent)]) == len(res.rows)
    assert res.summary["total_cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in res.rows))


def test_failed_summary_leaves_the_view_unchanged() -> None:
    from sim.core.retention import SummariserConfig

    res = run(
        make_policy("cloudflare-os"),
        agent_loop(30, user_every=3),
        RunConfig(model=SMALL, summariser=SummariserConfig(failure_rate=1.0)),
    )
    assert res.summary["compaction_count"] == 0
    # Workshop's overflow fails the turn, not the chat (overflow_fails_turn): the run goes on
    assert res.summary["finish_reason"] == "completed" and res.summary["failed_turns"] > 0
    assert not [v for v in res.violations if v.invariant == "failed-summary-unchanged"]


def test_budget_final_answer_takes_one_grace_turn_without_tools() -> None:
    res = run(make_policy("none"), agent_loop(10), RunConfig(budgets=Budgets(max_turns=3)))
    assert res.summary["finish_reason"] == "budget-exhausted" and res.summary["exhausted"] == "turns"
    kinds = [r["request_kind"] for r in res.rows]
    assert kinds == ["agent", "agent", "agent", "grace"]


def test_budget_fail_stops_at_once() -> None:
    res = run(make_policy("none"), agent_loop(10), RunConfig(budgets=Budgets(max_tool_calls=2, on_exhaustion="fail")))
    assert (res.summary["finish_reason"], res.summary["exhausted"]) == ("budget-failed", "tool-calls")
    assert [r["request_kind"] for r in res.rows] == ["agent", "agent", "agent"]  # the third call goes over


def test_same_inputs_same_results() -> None:
    conv = agent_loop(30, user_every=3)
    a = run(make_policy("cloudflare-os"), conv, RunConfig(model=SMALL, seed=7))
    b = run(make_policy("cloudflare-os"), conv, RunConfig(model=SMALL, seed=7))
    assert a.rows == b.rows and a.summary == b.summary
    assert [e for e in a.log] == [e for e in b.log]


def test_openai_wire_format_runs_too() -> None:
    cfg = RunConfig(model=ModelConfig(context_window=4_000, output_reserve=500, provider="openai"), deep_checks=True)
    res = run(make_policy("cloudflare-os"), agent_loop(30, user_every=3), cfg)
    assert res.summary["finish_reason"] == "completed"
    assert not [v for v in res.violations if v.invariant == "tool-pairing"]


@pytest.mark.parametrize(("with_system", "expected"), [(True, 1), (False, 0)])
def test_protected_from_without_a_user_message_starts_after_the_system_prompt(with_system: bool, expected: int) -> None:
    """Workshop's ``findProtectedFromSequence`` falls back to the chat's first message, and its chat log has
    no system prompt: so here the protected span starts at the first message after ours, never at it."""
    from sim.core.state import Ledger, RunState

    msgs = ([Message("s", "system", (Part("text", "sys"),))] if with_system else []) + [
        Message("a", "assistant", (Part("text", "May I deploy?"),), pending=True),
        Message("b", "assistant", (Part("text", "waiting"),)),
    ]
    ledger = Ledger()
    for m in msgs:
        ledger.append(m, m.chars, 1)
    state = RunState(ledger, SMALL)
    assert state.protected_from == expected
    ledger.append(Message("u", "user", (Part("text", "yes"),), resolves=("a",)), 3, 1)
    assert state.protected_from is None


@pytest.mark.parametrize(
    ("scenario", "policy", "params"),
    [
        ("coding-agent", "cloudflare-os", {}),  # research-agent overflows: cloudflare-os decides at user turns
        ("research-agent", "effect-agent", {"context_token_limit": "60000"}),
        ("coding-agent", "effect-agent", {"context_token_limit": "30000"}),
    ],
)
def test_facts_lost_per_compaction_equal_a_check_of_every_fact(scenario, policy, params, monkeypatch) -> None:
    import sim.replay.engine as engine_module
    from policies import make_policy
    from sim.replay.retention import Retention
    from sim.scenarios import scenario_conversation

    conv = scenario_conversation(scenario, 1, {})
    fast = engine_module.run(make_policy(policy, params), conv)

    def every_fact(self, before, after):  # type: ignore[no-untyped-def]
        return ",".join(
            sorted(
                f.id
                for f in self.facts
                if f.source in self.ledger.index and self.visible_in(f, before) and not self.visible_in(f, after)
            )
        )

    monkeypatch.setattr(Retention, "lost", every_fact)
    slow = engine_module.run(make_policy(policy, params), conv)
    assert fast.compactions, "the case must compact"
    assert [c["facts_lost"] for c in fast.compactions] == [c["facts_lost"] for c in slow.compactions]
    assert any(c["facts_lost"] for c in fast.compactions)


def _overflowing_turn() -> Conversation:
    """A first turn of six reads whose seventh result overflows SMALL's window, then a second turn, which fits once
    the first is compacted."""
    msgs = [
        Message("s", "system", (Part("text", "You are a careful agent."),)),
        Message("u0", "user", (Part("text", "Read the logs."),)),
    ]
    for k, size in enumerate([450] * 6 + [2_300]):  # about 2,000 tokens, then 1,700 more: past 3,500 of input
        call = Part("tool_call", call_id=f"c{k}", name="read", args="{}")
        msgs.append(Message(f"a{k}", "assistant", (Part("text", f"read {k}"), call)))
        body = f"log {k}: " + "lorem ipsum dolor " * (size * 4 // 18)
        msgs.append(Message(f"t{k}", "tool", (Part("tool_result", body, call_id=f"c{k}", name="read"),)))
    msgs += [
        Message("a7", "assistant", (Part("text", "more"), Part("tool_call", call_id="c7", name="read", args="{}"))),
        Message("t7", "tool", (Part("tool_result", "short", call_id="c7", name="read"),)),
        Message("a8", "assistant", (Part("text", "the last log says short"),)),
        Message("u1", "user", (Part("text", "Now say hello."),)),
        Message("a9", "assistant", (Part("text", "hello"),)),
    ]
    facts = (Fact("f-short", "recall", "short", "t7", ("u1",)),)
    return Conversation("overflowing-turn", tuple(msgs), facts)


def test_an_overflow_fails_the_turn_where_the_client_survives_it() -> None:
    """Workshop (cloudflare-os, overflow_fails_turn) ends the turn and goes on at the next user message; a client
    that does not (none) ends the run there."""
    conv = _overflowing_turn()
    survived = run(make_policy("cloudflare-os"), conv, RunConfig(model=SMALL))
    ended = run(make_policy("none"), conv, RunConfig(model=SMALL))
    assert ended.summary["finish_reason"] == "context-overflow" and ended.summary["failed_turns"] == 0
    assert survived.summary["finish_reason"] == "completed" and survived.summary["failed_turns"] == 1
    appended = [e.message.id for e in survived.log if isinstance(e, MessageAppended)]
    assert "t6" in appended and not {"a7", "t7", "a8"} & set(appended)  # the failed reply and its turn never happened
    assert appended[-2:] == ["u1", "a9"]
    agent = [r for r in survived.rows if r["request_kind"] == "agent"]
    assert agent[-2]["error"].startswith("prompt-too-long") and not agent[-1]["error"]
    assert survived.summary["compaction_count"] == 1  # at the next user message, the pre-turn check compacts
    # the fact the skipped result gave is needed at u1 but was never seen; the first task failed, the second not
    assert survived.summary["retention_recall"] == 0.0 and survived.summary["task_success"] == 0.5
