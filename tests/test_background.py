"""Background compaction (``Policy.timing``, ``sim.replay.background``): the summary is made from the view at the start,
swapped in later with what came since kept verbatim after it, and the staleness and its cache write are measured."""

from __future__ import annotations

from dataclasses import replace

import pytest

from policies import make_policy
from policies.base import Plan, Trigger
from policies.copilot import CopilotInfiniteSessions
from sim.core.conversation import Conversation
from sim.core.log import CompactionCreated, MessageAppended, RequestSent
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.replay import background
from sim.replay.engine import RunConfig, RunResult, run
from tests.builders import asst, call, compact_cmd, conv, request_turn, sys, tool, user, user_turns

CONFIG = RunConfig(model=ModelConfig(context_window=8_000, output_reserve=500), tokenizer="chars4")


class ForegroundCopilot(CopilotInfiniteSessions):
    """The same decisions, made at once: what the background timing is compared with."""

    timing = "foreground"


def chat(turns: int, size: int = 1_600, *extra: object) -> Conversation:
    drafts = [d for k in range(1, turns + 1) for d in request_turn(k, size)]
    return conv(sys("You are Copilot.", id="sys"), *drafts, *extra)  # type: ignore[arg-type]


def events(r: RunResult, kind: type) -> list:
    return [e for e in r.log if isinstance(e, kind)]


def appended_before(r: RunResult, cid: str) -> int:
    """The log's length when compaction ``cid``'s summariser request was made (its start)."""
    n = 0
    for e in r.log:
        if isinstance(e, MessageAppended):
            n = e.index + 1
        elif isinstance(e, RequestSent) and e.request_kind == "summariser" and e.compaction_id == cid:
            return n
    raise AssertionError(f"no summariser request for {cid}")


def test_the_summary_is_made_at_the_start_and_lands_later_with_what_came_since_verbatim() -> None:
    r = run(make_policy("copilot-infinite-sessions"), chat(30), CONFIG)
    landed = events(r, CompactionCreated)
    assert landed and not r.violations
    for c in landed:
        s = c.staleness
        assert s is not None and s.started_turn < c.turn and s.messages >= 1 and s.tokens > 0
        at_start = appended_before(r, c.id)
        summariser = next(e for e in events(r, RequestSent) if e.compaction_id == c.id)
        assert summariser.turn == s.started_turn
        # everything that came in since the start follows the summary, unedited
        assert c.view.start <= at_start and c.view.summary is not None and c.view.summary.through <= at_start
        assert all(e.before <= at_start for e in c.view.edits)
    rows = r.compactions
    assert [row["stale_messages"] for row in rows] == [c.staleness.messages for c in landed]


def test_the_first_landed_view_is_the_one_made_at_once_at_the_start() -> None:
    """Background and foreground decide alike; the first summary is the same view, made at the same turn, and the
    background one lands later, stale by the messages between."""
    c = chat(30)
    bg = events(run(make_policy("copilot-infinite-sessions"), c, CONFIG), CompactionCreated)[0]
    fg = events(run(ForegroundCopilot(), c, CONFIG), CompactionCreated)[0]
    assert fg.staleness is None and bg.staleness is not None
    assert bg.staleness.started_turn == fg.turn < bg.turn
    assert bg.view == fg.view
    assert bg.tokens_after > fg.tokens_after


def test_the_stale_tail_is_written_to_the_cache_again() -> None:
    """The first request after a landing writes the new prefix, stale tail included: more than the foreground's."""
    # a window large enough that the prompts pass the provider's minimum cacheable length
    c = chat(30, 8_000)
    cfg = replace(CONFIG, model=ModelConfig(context_window=40_000, output_reserve=2_000), cache="provider")
    bg = run(make_policy("copilot-infinite-sessions"), c, cfg).compactions[0]
    fg = run(ForegroundCopilot(), c, cfg).compactions[0]
    assert bg["stale_tokens"] > 0 and bg["cost_usd"] > fg["cost_usd"]


def test_at_buffer_exhaustion_the_next_request_waits_for_it() -> None:
    pol = make_policy(
        "copilot-infinite-sessions", {"background_compaction_threshold": "0.8", "buffer_exhaustion_threshold": "0.8"}
    )
    # tool loops: the next request follows a tool result within seconds, before the summary is done
    r = run(pol, conv(sys("You are Copilot.", id="sys"), *user_turns(6, steps=10, size=400)), CONFIG)
    landed = events(r, CompactionCreated)
    assert landed
    for c in landed:
        assert c.staleness is not None and c.turn == c.staleness.started_turn + 1 and c.staleness.waited_seconds >= 0
    assert any(c.staleness.waited_seconds > 0 for c in landed)


class NeverBlocks(CopilotInfiniteSessions):
    """Copilot's background compaction without its buffer-exhaustion block."""

    def must_wait(self, state: RunState) -> bool:
        return False


def test_a_request_that_would_not_fit_waits_for_it_rather_than_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never blocking by its own estimate, the client still waits when the prompt would not fit the window (here for a
    summary that takes 1,000 seconds)."""
    monkeypatch.setattr(background, "SUMMARY_SECONDS", 1_000.0)
    pol = NeverBlocks(replace(CopilotInfiniteSessions().config, background_compaction_threshold=0.7))
    base = conv(sys("You are Copilot.", id="sys"), *user_turns(2, steps=12, size=1_000))
    at = appended_before(run(pol, base, CONFIG), "c1")  # the reply whose request started it is message ``at``
    msgs = list(base.messages)
    result = msgs[at + 1]  # that reply's tool result, seconds later: made too large to send with the history
    msgs[at + 1] = replace(result, parts=(replace(result.parts[0], text="z" * 8_000),))
    c = Conversation("too-long", tuple(msgs), base.facts)
    assert run(make_policy("none"), c, CONFIG).summary["finish_reason"] == "context-overflow"
    r = run(pol, c, CONFIG)
    assert r.summary["finish_reason"] == "completed" and r.summary["overflows"] == 0
    landed = events(r, CompactionCreated)[0]
    assert landed.staleness is not None and landed.staleness.messages == 2 and landed.staleness.waited_seconds > 900


def test_a_compact_command_drops_the_one_under_way() -> None:
    """``/compact`` right after a background start: that summary never lands (its request stays billed)."""
    c = chat(30)
    first = events(run(make_policy("copilot-infinite-sessions"), c, CONFIG), CompactionCreated)[0]
    at = appended_before(run(make_policy("copilot-infinite-sessions"), c, CONFIG), first.id)
    msgs = list(c.messages)
    cut = at + 1  # after the reply that followed the start
    cmd = conv(compact_cmd(id="cmd"), user("go on", id="goon")).messages
    c2 = Conversation("with-compact", tuple(msgs[:cut]) + cmd + tuple(msgs[cut:]), c.facts)
    r = run(make_policy("copilot-infinite-sessions"), c2, CONFIG)
    made = {e.compaction_id for e in events(r, RequestSent) if e.request_kind == "summariser"}
    landed = {e.id: e for e in events(r, CompactionCreated)}
    assert first.id in made and first.id not in landed
    assert any(e.trigger == "manual" for e in landed.values())


def test_the_results_tables_and_the_run_page_say_how_stale_each_landed() -> None:
    import pandas as pd

    from sim import api
    from sim.report import run_page

    kw = {"scenario": "research-agent", "window": 200_000, "output_reserve": 8_000, "probes": False}
    for policy, in_background in (("copilot-infinite-sessions", True), ("claude-code", False)):
        res = api.run(policy, **kw)
        comps = res.compactions
        assert len(comps)
        steps = pd.DataFrame({"compaction": list(comps["compaction_id"])})
        page = run_page.compaction_costs(res, comps["run_key"].iloc[0], steps)
        if in_background:
            assert comps["started_turn"].notna().all() and (comps["started_turn"] < comps["turn"]).all()
            assert (comps["stale_tokens"] > 0).all()
            assert list(page["stale_messages"]) == list(comps["stale_messages"])
        else:  # made at once: the columns are empty, and the run page leaves them out
            assert comps["started_turn"].isna().all() and "stale_messages" not in page.columns


class TakesTheLiveTurn(CopilotInfiniteSessions):
    """Copilot's trigger, with a summary of everything so far, the live turn included (as Mastra's buffers take)."""

    def decide(self, state: RunState, trigger: Trigger) -> Plan | None:
        if trigger == "overflow" or (trigger == "auto" and not self.over_trigger(state)):
            return None
        return Plan(start=len(state), summarize=True, mode="checkpoint")


def test_a_summary_that_would_take_a_turn_raised_pending_since_is_dropped() -> None:
    """Started mid-turn, the summary takes the live turn; its reply then asks the user (an unresolved pending turn), so
    landing it would compact a pending turn: it is dropped, its request billed."""
    d = [sys("s", id="sys"), user("a", id="u1"), asst("", [call("c1", "read")], id="a1")]
    d += [tool("c1", "z" * 27_000, name="read", id="t1"), asst("Shall I go on?", pending=True, id="ask")]
    d += [user("not yet", id="u2"), asst("", [call("c2", "read")], id="a2"), tool("c2", "b", name="read", id="t2")]
    d += [asst("done", id="d2")]
    r = run(TakesTheLiveTurn(), conv(*d), replace(CONFIG, deep_checks=True))
    made = {e.compaction_id for e in events(r, RequestSent) if e.request_kind == "summariser"}
    landed = {e.id for e in events(r, CompactionCreated)}
    assert "c1" in made and "c1" not in landed
    assert "protected-span" not in {v.invariant for v in r.violations}
