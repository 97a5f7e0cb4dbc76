"""Google ADK's EventsCompactionConfig as policies: ``adk-sliding`` and ``adk-token``.

Each test names the rule of ``google-adk`` 2.13.0 it shows (``apps/compaction.py``, ``apps/_configs.py``,
``flows/llm_flows/context/_compaction.py``; catalogue §B8). Decisions are driven on states built with
:func:`tests.builders.state_of`; a decision's view is applied with a stand-in summary as the engine would
apply it; whole runs use the ``chars4`` tokenizer.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from policies.adk import (
    MAX_TOOL_CONTENT_CHARS,
    SUMMARY_LABEL,
    ADKCompaction,
    ADKConfig,
    ADKSliding,
    ADKSlidingConfig,
    ADKToken,
    ADKTokenConfig,
    contents_chars,
    ranges_of,
)
from policies.base import Plan
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import Injected, Messages, Summary, View, layout
from sim.replay.engine import RunConfig, run
from tests.builders import Draft, asst, call, compaction_records, conv, state_of, sys, tool, user

C4 = RunConfig(model=ModelConfig(), tokenizer="chars4")


def chat(turns: int, *, size: int = 3, then: str | None = "Next question.") -> Conversation:
    """``turns`` invocations of a question and a text answer, then (``then``) the next user message."""
    d: list[Draft] = [sys("You are a travel agent.")]
    for k in range(turns):
        d.append(user(f"Question {k}: what should we see on day {k}?", id=f"u{k}"))
        d.append(asst(f"Answer {k}: " + "Visit the temples early. " * size, id=f"a{k}"))
    if then is not None:
        d.append(user(then, id="next"))
    return conv(*d)


def loop(steps: int, *, size: int = 200, thinking: bool = False) -> Conversation:
    """One invocation: the task, then ``steps`` rounds of a call and its result (live: no answer yet)."""
    d: list[Draft] = [sys("You are a travel agent."), user("Plan the trip to Kyoto.", id="task")]
    for s in range(steps):
        think = "Which search next?" if thinking and s == 0 else None
        d.append(asst(f"Searching {s}.", [f"c{s}"], thinking=think, id=f"a{s}"))
        d.append(tool(f"c{s}", f"result {s} " + "x" * size, id=f"t{s}"))
    return conv(*d)


def sliding(**kw: Any) -> ADKSliding:
    return ADKSliding(ADKSlidingConfig(**kw))


def token(**kw: Any) -> ADKToken:
    return ADKToken(ADKTokenConfig(**kw))


def apply(state: RunState, plan: Plan, text: str = "S") -> View:
    """The view the engine makes of ``plan`` when the summariser writes ``text``."""
    return replace(plan.view_from(state.view), summary=Summary(text, through=plan.start, role="assistant"))


def sent(c: Conversation, view: View) -> list[str]:
    """What the request holds after the system prompt: message ids, and summaries as ``summary <text>``."""
    out: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Messages):
            out += [c.messages[k].id for k in range(item.a, item.b) if k > 0]
        elif isinstance(item, (Injected, Summary)):
            out.append(f"summary {item.text} ({item.role})")
    return out


def prefix(c: Conversation, n: int) -> Conversation:
    return Conversation(c.id, c.messages[:n])


# -- config --------------------------------------------------------------------------------------------------
def test_defaults() -> None:
    """ADK's fields have no defaults; adk-sliding takes the docs' example (interval 3, overlap 1), adk-token ours."""
    assert (ADKSlidingConfig().compaction_interval, ADKSlidingConfig().overlap_size) == (3, 1)
    assert ADKSlidingConfig().token_threshold is None
    assert (ADKTokenConfig().token_threshold, ADKTokenConfig().event_retention_size) == (100_000, 5)
    assert ADKTokenConfig().compaction_interval is None


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"compaction_interval": 0, "overlap_size": 1}, "greater than 0"),
        ({"compaction_interval": 2, "overlap_size": -1}, ">= 0"),
        ({"token_threshold": 0, "event_retention_size": 1}, "greater than 0"),
        ({"token_threshold": 10, "event_retention_size": -1}, ">= 0"),
        ({"compaction_interval": 2}, "set together"),
        ({"token_threshold": 10}, "set together"),
        ({}, "at least one trigger"),
    ],
)
def test_config_rejects_what_adk_rejects(kw: dict[str, int], says: str) -> None:
    """``EventsCompactionConfig``: ``Field(gt=0)``/``Field(ge=0)``; each pair set together; one pair at least."""
    with pytest.raises(InvalidConfig, match=says):
        ADKConfig(**kw)


# -- sliding window ------------------------------------------------------------------------------------------
def test_sliding_waits_for_the_interval() -> None:
    """ "Compaction triggers once ``compaction_interval`` new invocations have completed": two completed
    invocations (the third has just begun) are not enough; three are."""
    pol = sliding()
    assert pol.decide(state_of(pol, chat(2)), "auto") is None
    c = chat(3)
    st = state_of(pol, c)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.mode == "sliding-window"
    assert sent(c, apply(st, plan)) == ["summary S (assistant)", "next"]
    assert ranges_of(apply(st, plan)) == [(1, 7)]


def test_sliding_runs_only_after_an_invocation() -> None:
    """The Runner compacts after an invocation completes: not in the middle of one (here: the request after a
    reply, with no new user message)."""
    pol = sliding()
    c = chat(3, then=None)
    assert pol.decide(state_of(pol, c), "auto") is None
    assert pol.decide(state_of(pol, chat(3)), "manual") is None  # ADK has no manual compaction
    assert pol.decide(state_of(pol, chat(3)), "overflow") is None  # nor a compact-and-retry


def test_sliding_overlap_keeps_both_summaries() -> None:
    """Docs example ``compaction_interval=2, overlap_size=1``: invocations 1-2 are summarised; after 4, the window
    is 2-4. Neither range contains the other, so both summaries are sent, each at its range's end, and the raw
    events of both ranges are not."""
    pol = sliding(compaction_interval=2, overlap_size=1)
    c = chat(4)
    u2 = next(i for i, m in enumerate(c.messages) if m.id == "u2")
    first = state_of(pol, prefix(c, u2 + 1))
    plan1 = pol.decide(first, "auto")
    assert plan1 is not None
    v1 = apply(first, plan1, "S1")
    second = state_of(pol, c, view=v1)
    plan2 = pol.decide(second, "auto")
    assert plan2 is not None
    v2 = apply(second, plan2, "S2")
    assert ranges_of(v2) == [(1, 5), (3, 9)]  # u0..a1, then u1..a3: the overlap is invocation 1
    assert sent(c, v2) == ["summary S1 (assistant)", "summary S2 (assistant)", "next"]
    assert [x.label for x in v2.injected] == [SUMMARY_LABEL]


def test_sliding_range_that_contains_an_earlier_one_replaces_it() -> None:
    """``_get_compaction_ranges``: "a containing range supersedes its contained ranges". With interval 1 and
    overlap 1 the second window (invocations 0-1, clamped at the first) contains the first (invocation 0)."""
    pol = sliding(compaction_interval=1, overlap_size=1)
    c = chat(2)
    u1 = next(i for i, m in enumerate(c.messages) if m.id == "u1")
    st1 = state_of(pol, prefix(c, u1 + 1))
    v1 = apply(st1, pol.decide(st1, "auto") or pytest.fail("no compaction"), "S1")
    st2 = state_of(pol, c, view=v1)
    v2 = apply(st2, pol.decide(st2, "auto") or pytest.fail("no compaction"), "S2")
    assert ranges_of(v2) == [(1, 5)]
    assert sent(c, v2) == ["summary S2 (assistant)", "next"]


def test_sliding_skips_a_range_not_worth_compacting() -> None:
    """``_is_range_worth_compacting``: a range that removes no more characters than the latest summary has is not
    summarised (the previous summary stands in for the size of the next)."""
    pol = sliding(compaction_interval=2, overlap_size=1)
    c = chat(4, size=1)
    u2 = next(i for i, m in enumerate(c.messages) if m.id == "u2")
    st1 = state_of(pol, prefix(c, u2 + 1))
    long_summary = "S" * 2_000
    v1 = apply(st1, pol.decide(st1, "auto") or pytest.fail("no compaction"), long_summary)
    assert pol.decide(state_of(pol, c, view=v1), "auto") is None
    v1_short = apply(st1, pol.decide(st1, "auto") or pytest.fail("no compaction"), "S")
    assert pol.decide(state_of(pol, c, view=v1_short), "auto") is not None


def test_sliding_summary_is_a_model_message_with_tool_content_cut() -> None:
    """``LlmEventSummarizer``: the summary content is forced to role ``model`` (an assistant message here); each tool
    call's arguments and response reach the summariser cut to 2,000 characters (per message here)."""
    plan = sliding().decide(state_of(sliding(), chat(3)), "auto")
    assert plan is not None
    assert plan.summarize and plan.summary_request.role == "assistant"
    assert plan.summary_request.clip_chars == MAX_TOOL_CONTENT_CHARS


def test_sliding_whole_run() -> None:
    """A run of nine invocations with the defaults (3, 1): compactions after invocations 3, 6 and 9, each
    covering three new invocations and one before; every request holds the summaries and the live turn."""
    c = chat(9, size=20)
    res = run(sliding(), c, C4)
    recs = compaction_records(res)
    assert [r.mode for r in recs] == ["sliding-window"] * 2  # after 3 and 6; the 9th completes with the run
    assert ranges_of(recs[-1].view) == [(1, 7), (5, 13)]
    assert not [v for v in res.violations if v.invariant != "revert-resolution"]


# -- token threshold -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("reported", "fires"), [(999, False), (1_000, True), (1_001, True)])
def test_token_threshold_boundary(reported: int, fires: bool) -> None:
    """``prompt_token_count < config.token_threshold`` returns: at the threshold it compacts (the provider's
    reported prompt count of the newest model call)."""
    pol = token(token_threshold=1_000, event_retention_size=2)
    st = state_of(pol, loop(4), context=reported)
    assert (pol.decide(st, "auto") is not None) == fires
    assert pol.over_trigger(st) == fires


def test_token_count_falls_back_to_chars_over_4() -> None:
    """No reported count since the last compaction: ``_estimate_prompt_token_count``, the characters of the
    request's contents (the system instruction is not among them) over 4, each function call and response counted as
    ``_count_chars_in_content`` counts it: the name and ``json.dumps`` of the arguments or of ``{"result": output}``."""
    pol = token(token_threshold=1_000, event_retention_size=2)
    c = loop(4)
    st = state_of(pol, c)
    chars = 0
    for m in c.messages[1:]:
        for p in m.parts:
            if p.kind == "tool_call":
                chars += len(p.name or "") + (len(json.dumps(json.loads(p.args))) if p.args and p.args != "{}" else 0)
            elif p.kind == "tool_result":
                chars += len(p.name or "") + len(json.dumps({"result": p.text}))
            else:
                chars += len(p.text)
    assert pol.prompt_token_count(st) == chars // 4


def tool_heavy(steps: int, lines: int = 40) -> Conversation:
    """One invocation of ``steps`` calls whose outputs are many short lines with quotes (a listing, a JSON log):
    JSON escapes every newline and quote, so ADK counts such a session well over its raw characters."""
    d: list[Draft] = [sys("You are a travel agent."), user("Plan the trip to Kyoto.", id="task")]
    for s in range(steps):
        d.append(asst(f"Searching {s}.", [call(f"c{s}", "search", '{"q":"kyoto ' + str(s) + '"}')], id=f"a{s}"))
        body = "\n".join(f'{{"hotel": "h{s}-{i}", "note": "a \\"quiet\\" room"}}' for i in range(lines))
        d.append(tool(f"c{s}", body, id=f"t{s}"))
    return conv(*d)


def test_estimate_counts_json_escapes_of_a_tool_heavy_session() -> None:
    """A session of many-line, quoted tool outputs: ADK's estimate (JSON of each response) is more than 10% over the
    raw characters over 4, and a threshold between the two compacts, as ADK does (the estimate of csim before it
    counted JSON was the raw one, and did not compact)."""
    c = tool_heavy(6)
    pol = token(token_threshold=10, event_retention_size=2)
    st = state_of(pol, c)
    raw = (st.chars_in_view() - st.messages[0].chars) // 4
    estimate = pol.prompt_token_count(st)
    assert estimate > 1.1 * raw
    between = token(token_threshold=(raw + estimate) // 2, event_retention_size=2)
    assert between.decide(state_of(between, c), "auto") is not None


def test_post_invocation_estimate_leaves_out_the_new_user_message() -> None:
    """``Runner._run_post_invocation_compaction`` runs before the next user message is appended: with no reported
    count, its estimate leaves that message out. Under the threshold without it and over with it, the post-invocation
    point does nothing and the request processor compacts before the model call, with the message counted."""
    base = chat(4, then=None)
    big = "Now compare every ryokan we saw so far, one by one, with prices and the walk to the station. " * 8
    c = conv(*base.messages, user(big, id="next"))
    pol0 = token(token_threshold=10**6, event_retention_size=2)
    st0 = state_of(pol0, c)
    without = contents_chars(st0, st0.view, len(c.messages) - 1) // 4
    with_it = pol0.prompt_token_count(st0)
    assert with_it - without >= len(big) // 4 - 1
    pol = token(token_threshold=without + 1, event_retention_size=2)
    plan = pol.decide(state_of(pol, c), "auto")
    assert plan is not None and plan.mode == "token-threshold"  # not the post-invocation compaction


def test_a_second_compaction_before_the_same_model_call() -> None:
    """Both pairs set: after an invocation the sliding window compacts (post-invocation), then before the next model
    call the request processor finds the estimate (no count reported since that compaction) still over the threshold
    and compacts again; asked once more, the policy declines."""
    pol = ADKCompaction(ADKConfig(compaction_interval=2, overlap_size=0, token_threshold=100, event_retention_size=0))
    assert pol.recheck_after_compaction
    c = conv(*chat(2, then=None).messages, user("Compare the two ryokan we liked, with prices. " * 9, id="next"))
    st0 = state_of(pol, c)
    assert contents_chars(st0, st0.view, len(c.messages) - 1) // 4 < 100  # the post-invocation token check: under
    first = pol.decide(state_of(pol, c), "auto")
    assert first is not None and first.mode == "sliding-window"
    st = state_of(pol, c)
    view = apply(st, first, "S1" + "." * 300)
    second = pol.decide(state_of(pol, c, view=view), "auto")
    assert second is not None and second.mode == "token-threshold"
    st2 = state_of(pol, c, view=view)
    third = pol.decide(state_of(pol, c, view=apply(st2, second, "S2")), "auto")
    assert third is None


def test_token_keeps_the_newest_events() -> None:
    """Over the threshold: every event since the last compaction but the newest ``event_retention_size`` is
    summarised (here mid tool loop, before a model call: the request processor)."""
    pol = token(token_threshold=1_000, event_retention_size=2)
    c = loop(4)
    st = state_of(pol, c, context=5_000)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.mode == "token-threshold"
    assert sent(c, apply(st, plan)) == ["summary S (assistant)", "a3", "t3"]


def test_token_split_moves_earlier_for_a_response() -> None:
    """``_safe_token_compaction_split_index``: a kept function response keeps its call, so the split moves
    earlier (3 kept would start at a result; the call before it is kept too)."""
    pol = token(token_threshold=1_000, event_retention_size=3)
    c = loop(4)
    st = state_of(pol, c, context=5_000)
    plan = pol.decide(st, "auto")
    assert plan is not None
    assert sent(c, apply(st, plan)) == ["summary S (assistant)", "a2", "t2", "a3", "t3"]


def test_token_nothing_when_retention_covers_everything() -> None:
    """``len(candidate_events) <= event_retention_size``: nothing to compact."""
    pol = token(token_threshold=1_000, event_retention_size=9)
    assert pol.decide(state_of(pol, loop(4), context=5_000), "auto") is None


def test_token_rolling_summary_replaces_the_previous_one() -> None:
    """``_events_to_compact_for_token_threshold``: the latest summary is the seed, with its start timestamp, so the
    new range contains the old one and only the new summary is sent."""
    pol = token(token_threshold=1_000, event_retention_size=2)
    c = loop(6)
    st1 = state_of(pol, prefix(c, 10), context=5_000)  # system, task, a0 t0 ... a3 t3
    v1 = apply(st1, pol.decide(st1, "auto") or pytest.fail("no compaction"), "S1")
    assert ranges_of(v1) == [(1, 8)]
    st2 = state_of(pol, c, view=v1, context=5_000)
    plan2 = pol.decide(st2, "auto")
    assert plan2 is not None
    v2 = apply(st2, plan2, "S2")
    assert ranges_of(v2) == [(1, 12)]
    assert sent(c, v2) == ["summary S2 (assistant)", "a5", "t5"]
    assert not v2.injected


def test_token_post_invocation_runs_before_the_new_user_message() -> None:
    """The Runner tries token compaction after the invocation, before the next user message exists: that message
    is not among the events counted or compacted."""
    pol = token(token_threshold=1_000, event_retention_size=1)
    c = conv(*loop(2).messages, asst("Done.", id="done"), user("Thanks. And day two?", id="next"))
    st = state_of(pol, c, context=5_000)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.mode == "token-threshold-post-invocation"
    assert sent(c, apply(st, plan)) == ["summary S (assistant)", "done", "next"]


def test_token_deviation_live_turn() -> None:
    """Known deviation ``live-turn``: retention counts events, not turns, so a long tool loop summarises the user
    message that started it."""
    c = loop(8, size=2_000)
    res = run(token(token_threshold=2_000, event_retention_size=2), c, C4)
    assert compaction_records(res)
    assert any(v.invariant == "live-turn" for v in res.violations)


def test_token_deviation_atomic_units() -> None:
    """Known deviation ``atomic-units``: the split keeps each response with its call, but may fall inside a tool
    loop opened with thinking (Anthropic's atomic unit)."""
    c = loop(8, size=2_000, thinking=True)
    res = run(token(token_threshold=2_000, event_retention_size=2), c, C4)
    assert any(v.invariant == "atomic-units" for v in res.violations)


def adk_sliding_grows() -> Conversation:
    """Three one-word invocations, then the next question: with an interval of 3 and no overlap the first
    compaction summarises them into a longer summary."""
    short = [x for k in range(3) for x in (user(f"q{k}", id=f"u{k}"), asst("ok", id=f"a{k}"))]
    return conv(sys("You are a travel agent."), *short, user("next", id="next"), asst("ok", id="done"))


def test_deviation_compaction_shrinks() -> None:
    """Known deviation ``compaction-shrinks``: ADK appends a summary even when it is longer than what it replaced
    ("Compaction grew the request by %d characters": it only logs it); its only guard compares the range with the
    previous summary, and the first compaction has none."""
    res = run(sliding(compaction_interval=3, overlap_size=0), adk_sliding_grows(), C4)
    recs = compaction_records(res)
    assert recs and recs[0].tokens_after >= recs[0].tokens_before
    assert any(v.invariant == "compaction-shrinks" for v in res.violations)


def adk_token_grows() -> Conversation:
    """A tiny first step, then three large results: at 4,000 prompt tokens with 5 events kept (``adk-token`` in the
    8K window of ``tests/test_properties.py``), only the tiny step is compacted, into a longer summary."""
    d: list[Draft] = [sys("sys"), user("q", id="m1"), asst(calls=["c1"], id="m2"), tool("c1", "x", id="m3")]
    for k, c in enumerate(("c2", "c3", "c4")):
        d += [asst(calls=[c], id=f"m{4 + 2 * k}"), tool(c, "x " * 4_000, id=f"m{5 + 2 * k}")]
    return conv(*d, asst("ok", id="m10"))


def test_token_deviation_compaction_shrinks() -> None:
    """Known deviation ``compaction-shrinks`` for the token trigger too: the first compaction has no earlier summary
    to weigh the range against, so a range of a few short events is summarised however short it is."""
    pol = token(token_threshold=4_000, event_retention_size=5)
    res = run(
        pol,
        adk_token_grows(),
        RunConfig(model=ModelConfig(context_window=8_000, output_reserve=1_000), tokenizer="chars4"),
    )
    assert any(v.invariant == "compaction-shrinks" for v in res.violations)


def test_both_pairs_token_first() -> None:
    """ "Token-threshold compaction takes precedence": with both pairs set and the count over the threshold, the
    post-invocation compaction is the token one."""
    pol = ADKCompaction(ADKConfig(compaction_interval=3, overlap_size=1, token_threshold=100, event_retention_size=2))
    st = state_of(pol, chat(3), context=500)
    plan = pol.decide(st, "auto")
    assert plan is not None and plan.mode == "token-threshold-post-invocation"
    under = pol.decide(state_of(pol, chat(3), context=50), "auto")
    assert under is not None and under.mode == "sliding-window"
