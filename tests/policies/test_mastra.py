"""The ``mastra-observational-memory`` policy (``policies/mastra.py``)."""

from __future__ import annotations

import pytest

from policies._tail import message_tokens
from policies.mastra import MastraObservationalMemory, MastraObservationalMemoryConfig
from sim.core.conversation import Conversation, Part
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Summary
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
from tests.builders import (
    asst,
    call,
    compaction_records,
    conv,
    request_turn,
    shown_ids,
    state_of,
    sys,
    thinking_loop,
    tool,
    tool_steps,
    tools,
    user,
)
from tests.policies.reverts import SMALL, shows_revert_resolution


def sync(**kw: int) -> MastraObservationalMemory:
    """Mastra with ``bufferTokens: false``: every observation synchronous, at the threshold."""
    return MastraObservationalMemory(MastraObservationalMemoryConfig(buffering=False, **kw))  # type: ignore[arg-type]


def buffered(**kw: int) -> MastraObservationalMemory:
    return MastraObservationalMemory(MastraObservationalMemoryConfig(**kw))  # type: ignore[arg-type]


def test_defaults() -> None:
    pol = MastraObservationalMemory()
    cfg = pol.config
    assert (cfg.message_tokens, cfg.observation_tokens, cfg.buffering, cfg.buffer_activation) == (
        30_000,
        40_000,
        True,
        0.8,
    )
    assert pol.timing == "background" and sync().timing == "foreground"
    with pytest.raises(InvalidConfig):
        MastraObservationalMemoryConfig(buffer_activation=0)


def test_first_step_observes_the_user_message_and_keeps_it() -> None:
    """At a turn's first step (the user's message is the newest) Mastra observes that message too and keeps it in the
    prompt (``ObservationStep.prepare`` preserves the step's input); it counts no longer after."""
    pol = sync(message_tokens=2_000)
    c = conv(sys("s", id="sys"), *(d for k in range(1, 8) for d in request_turn(k, 1_600)), user("next", id="next"))
    st = state_of(pol, c, ModelConfig())
    assert pol.unobserved_tokens(st) == message_tokens(st, 1, len(c.messages)) >= 2_000  # "next" counted
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.start == st.last_user_index == pol.observed_end(st) - 1
    after = plan.view_from(st.view).with_(summary=Summary("o", through=plan.start))
    assert shown_ids(c, after) == ["sys", "<summary>", "next"]
    st.view = after
    assert pol.counted_from(st) == len(c.messages) and pol.unobserved_tokens(st) == 0
    default = sync()
    assert default.decide(state_of(default, c, ModelConfig()), "auto") is None  # under 30,000
    # a buffer lands at a later call: it takes the user's message with the rest, as Mastra's chunk does
    plan = buffered(message_tokens=2_000).decide(st := state_of(pol, c, ModelConfig()), "auto")
    assert plan is not None and plan.start == len(c.messages)


def test_mid_loop_observes_the_live_turn() -> None:
    """Mid tool loop Mastra observes every unobserved message, the user's message and the newest results included: the
    tool step that takes the count over the threshold is observed with the rest, and the request is the observations."""
    pol = sync(message_tokens=2_000)
    c = conv(sys("s", id="sys"), user("task", id="u"), *tool_steps(6, size=1_600))
    st = state_of(pol, c, ModelConfig())
    before_live = message_tokens(st, 1, st.last_user_index)
    assert before_live == 0 and pol.unobserved_tokens(st) >= 2_000
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.start == len(c.messages) == pol.observed_end(st)
    assert shown_ids(c, plan.view_from(st.view).with_(summary=Summary("o"))) == ["sys", "<summary>"]
    waiting = conv(sys("s"), user("task"), *tool_steps(6, size=1_600), asst("next", [call("c9")]))
    assert pol.decide(state_of(pol, waiting, ModelConfig()), "auto") is None  # a call without its result: deferred


def test_a_buffer_starts_at_the_activation_share_and_lands_at_the_threshold() -> None:
    """With buffering a buffer of every unobserved message starts at ``buffer_activation`` of the threshold (the part
    Mastra's activation takes, keeping the rest raw) and the call at the threshold waits for it; synchronously nothing
    happens before the threshold."""
    pol, plain = buffered(message_tokens=2_000), sync(message_tokens=2_000)
    c = conv(sys("s"), user("task"), *tool_steps(8, size=880))  # 1,7xx tokens: over 0.8 of 2,000, under 2,000
    st = state_of(pol, c, ModelConfig())
    assert 1_600 <= pol.unobserved_tokens(st) < 2_000
    assert pol.over_trigger(st) and not pol.must_wait(st) and not plain.over_trigger(st)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.start == len(c.messages) and plain.decide(st, "auto") is None
    more = conv(sys("s"), user("task"), *tool_steps(10, size=880))
    assert pol.must_wait(state_of(pol, more, ModelConfig()))


def test_engine_run_and_known_deviations() -> None:
    """A tool loop observed mid-turn: the live turn leaves the view (declared ``live-turn``, nothing else broken); with
    Anthropic thinking on, the next request opens from the observations (the reply opens a turn afresh), so a loop
    whose first reply alone thinks is not cut inside (no ``atomic-units``)."""
    pol = sync(message_tokens=3_000)
    c = conv(sys("s", id="sys"), *(d for k in range(1, 40) for d in request_turn(k, 1_600)))
    res = Engine(pol, c, SMALL).run()
    assert compaction_records(res) and {v.invariant for v in res.violations} == {"live-turn"}
    assert all(pol.declared(v.invariant) for v in res.violations)
    looped = conv(sys("s"), user("task"), *thinking_loop(30, size=1_200), asst("done"))
    run = Engine(pol, looped, RunConfig(model=ModelConfig(provider="anthropic"))).run()
    assert compaction_records(run) and {v.invariant for v in run.violations} == {"live-turn"}
    assert shows_revert_resolution(pol)


def test_buffered_run_lands_stale_and_keeps_a_thinking_loop_whole() -> None:
    """Buffered, each observation is made at the start and lands later with what came since verbatim after it (its
    staleness); inside a tool loop whose first reply alone thinks, a buffer stops before that reply, so no request
    opens the loop with a later step (no ``atomic-units``)."""
    pol = buffered(message_tokens=3_000)
    res = Engine(pol, conv(sys("s"), *(d for k in range(1, 40) for d in request_turn(k, 1_600))), SMALL).run()
    landed = compaction_records(res)
    assert landed and all(c.staleness is not None and c.staleness.messages >= 1 for c in landed)
    assert {v.invariant for v in res.violations} <= {"live-turn"}
    looped = conv(sys("s"), user("early " * 2_000), asst("ok"), user("task"), *thinking_loop(30, size=1_200))
    run = Engine(pol, conv(*looped.messages, asst("done")), RunConfig(model=ModelConfig(provider="anthropic"))).run()
    starts = [c.view.start for c in compaction_records(run)]
    lu = 3  # the loop's user message; its first reply, which thinks, is at 4
    assert starts and all(s <= lu + 1 for s in starts) and "atomic-units" not in {v.invariant for v in run.violations}


def test_a_buffer_whose_turn_turns_pending_is_dropped() -> None:
    """csim check's protected-span (853 examples, shrunk to 8 messages): a buffer started mid-turn took the live turn,
    whose reply then asked the user (pending); landing it would compact a pending turn, so the engine drops it."""
    d = [sys("s"), user("a"), asst("", [call("c1", "read"), call("c2", "read"), call("c3", "read")])]
    d += [tools({"c1": "a", "c2": "a", "c3": "z" * 5_420}, name="read"), asst("Shall I go on? " * 2, pending=True)]
    d += [user("b"), asst("", [call("c4", "read")]), tool("c4", "b", name="read")]
    pol = buffered(message_tokens=1_200, observation_tokens=1_600)
    r = Engine(pol, conv(*d), RunConfig(model=small_model(8_000), deep_checks=True)).run()
    assert "protected-span" not in {v.invariant for v in r.violations}


def test_a_revert_does_not_hold_observation_back() -> None:
    """A revert of an older change with a large result after it (csim check's compaction-loop, issue 32): the
    Observer observes every unobserved message before the live turn, so the view fits after the compaction."""
    from policies.mastra import MastraObservationalMemory, MastraObservationalMemoryConfig
    from sim.core.model import ModelConfig
    from sim.replay.engine import Engine, RunConfig
    from tests.builders import asst, call, change, conv, revert, sys, tool, user

    def words(n: int) -> str:
        return " ".join(f"w{i % 97}" for i in range(n))

    d = [sys("You are a coding agent."), user("fix the flaky test")]
    for k in range(4):
        d += [asst(f"look {k}", [call(f"a{k}", "read")]), tool(f"a{k}", words(100), name="read")]
    d += [user("and the docs"), asst("Shall I rewrite the docs page?", pending=True, id="ask")]
    d += [user("first the changelog"), asst("editing", [call("e1", "edit")], parts=[change("ch1")])]
    d += [tool("e1", "ok", name="edit"), asst("reading", [call("big", "read")]), tool("big", words(2000), name="read")]
    d += [user("fine"), asst("noted")]
    d += [user("undo that edit, then yes", revert("ch1"), resolves=["ask"]), asst("reverting", [call("e2", "edit")])]
    d += [tool("e2", "ok", name="edit"), user("thanks"), asst("done")]
    pol = MastraObservationalMemory(MastraObservationalMemoryConfig(message_tokens=1200, observation_tokens=1600))
    model = ModelConfig(context_window=8_000, output_reserve=1_000)
    r = Engine(pol, conv(*d), RunConfig(model=model, tokenizer="chars4")).run()
    assert "compaction-loop" not in {v.invariant for v in r.violations}


def test_pending_turns_kept_verbatim_do_not_hold_the_trigger() -> None:
    """csim check's compaction-loop at commit 7832614 (18 messages, shrunk): three pending answers (m4, m6, m8) make
    the harness keep everything from m4's turn on, and a 6,495-character result sits in that span. Counted as
    unobserved, it held the view over the trigger, so each turn observed again the little that was new. Mastra
    counts the messages it would observe (``getUnobservedMessages`` feeds both the count and the Observer), so ours
    counts only what the Observer may take: after an observation nothing counted is left."""
    from sim.replay.engine import Engine, RunConfig
    from sim.replay.strategies import _text, small_model
    from tests.builders import asst, call, fact, tool, tools

    def read(cid: str, word: str) -> Part:
        return call(cid, "read", f'{{"q": "{word}"}}')

    d = [sys("s"), user("a"), asst("", [read("c1", "alpha"), read("c2", "alpha")])]
    d += [tools({"c1": "a FACT1", "c2": "a"}, name="read"), asst(_text("alpha", 232), pending=True, id="m4")]
    d += [user("r"), asst(_text("river", 113) + " FACT2", pending=True, id="m6"), user("s")]
    d += [asst(_text("stone", 299) + " FACT3", pending=True, id="m8"), user("c"), asst("", [read("c3", "cloud")])]
    d += [tool("c3", _text("cloud", 6495), name="read"), user("m", resolves=["m4"]), asst("", [read("c4", "maple")])]
    d += [tool("c4", "m", name="read"), user("e", resolves=["m6"]), asst("", [read("c5", "ember")])]
    d += [tool("c5", "e", name="read")]
    facts = [fact("f1", "recall", "FACT1", "m3", ["m7"]), fact("f2", "recall", "FACT2", "m6", ["m14"])]
    facts.append(fact("f3", "recall", "FACT3", "m8"))
    pol = MastraObservationalMemory(MastraObservationalMemoryConfig(message_tokens=1200, observation_tokens=1600))
    c = conv(*d, facts=facts)
    r = Engine(pol, c, RunConfig(model=small_model(8000), deep_checks=True)).run()
    assert not r.violations  # before: compaction-loop at turn 6
    st = state_of(pol, Conversation(c.id, c.messages[:16]), small_model(8000))
    assert st.protected_from == 7 and pol.observed_end(st) == 7  # m7 on is kept whole: m8 is still pending
    assert pol.unobserved_tokens(st) < 1200 < message_tokens(st, 0, 15)  # the big result is kept, not counted
