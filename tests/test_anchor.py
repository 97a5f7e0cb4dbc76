"""Usage-anchored accounting (sim.core.anchors): a replay of a recording reproduces its recorded prompts,
what no usage covers is estimated and counted, and repeated or missing usage anchors nothing."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from policies import make_policy
from sim.core.anchors import _share, anchor
from sim.core.conversation import Conversation, Message, Part, Usage
from sim.core.counting import Calibration, Coefficients, HeldOut
from sim.core.view import call_id_tokens
from sim.replay.anchoring import anchors_for
from sim.replay.engine import RunConfig, run
from tests.builders import asst, conv, sys, tool, user

COEF = Coefficients(fixed=5_000.0, per_message=4.0, scale=1.2)
CAL = Calibration(
    "anthropic", "claude-code", "cl100k_base", COEF, 10, HeldOut("conversation", 0, 0, 0.0, 0.0, 0.0, 0.0), "", ""
)


@given(st.integers(-5, 10_000), st.lists(st.integers(0, 500), min_size=1, max_size=12))
def test_a_difference_is_shared_in_whole_tokens_that_add_up_to_it(total: int, weights: list[int]) -> None:
    out = _share(total, weights)
    if total <= 0 or sum(weights) == 0:
        assert out is None
        return
    assert out is not None and sum(out) == total and len(out) == len(weights)
    for n, w in zip(out, weights, strict=True):
        assert abs(n - total * w / sum(weights)) < 1  # each within a token of its proportional share


def _recorded(prompts: list[int | None], repeated: frozenset[int] = frozenset()) -> Conversation:
    """A tool loop whose k-th reply recorded ``prompts[k]`` prompt tokens (None: no usage)."""
    drafts = [sys("You are an agent."), user("Fix the bug in app.py, please.")]
    for k in range(len(prompts)):
        drafts.append(asst(f"step {k}", calls=[f"c{k}"]))
        drafts.append(tool(f"c{k}", f"result {k}: " + "lorem ipsum " * (20 + 7 * k)))
    c = conv(*drafts, id="rec")
    msgs = list(c.messages)
    replies = [i for i, m in enumerate(msgs) if m.role == "assistant"]
    for k, i in enumerate(replies):
        meta = {"api_id_repeated": True} if k in repeated else {}
        p = prompts[k]
        msgs[i] = replace(msgs[i], usage=Usage(input_tokens=p) if p is not None else None, meta=meta)
    return replace(c, messages=tuple(msgs))


def _prompts(c: Conversation, anchors: object) -> list[int]:
    r = run(make_policy("none"), c, RunConfig(run_status="off", anchors=anchors))  # type: ignore[arg-type]
    return [row["context_tokens"] for row in r.rows if row["request_kind"] == "agent"]


def test_a_replay_reproduces_every_recorded_prompt() -> None:
    prompts = [9_000, 9_600, 10_400, 11_900, 12_000, 13_500]
    c = _recorded(prompts)  # type: ignore[arg-type]
    a = anchors_for(c, CAL)
    assert _prompts(c, a) == prompts
    # the overhead is the first prompt less the estimate of the two messages before it; those two, and the last
    # reply and its result (after the last request), are estimated
    assert a.estimated == 4 and 0 < a.overhead < prompts[0]


def test_gaps_and_repeated_usage_anchor_nothing_but_the_span_across_them_is_exact() -> None:
    prompts = [9_000, None, 10_400, 10_400, 12_000]
    c = _recorded(prompts, repeated=frozenset({3}))  # type: ignore[arg-type]
    got = _prompts(c, anchors_for(c, CAL))
    assert [got[0], got[2], got[4]] == [9_000, 10_400, 12_000]
    assert 9_000 < got[1] < 10_400 and 10_400 < got[3] < 12_000


def test_a_prompt_that_did_not_grow_leaves_its_messages_estimated_and_counted() -> None:
    c = _recorded([9_000, 12_000, 11_000, 13_000])  # type: ignore[arg-type]
    a = anchors_for(c, CAL)
    assert a.estimated == 4 + 2  # and the two messages between the requests at 12,000 and 11,000
    got = _prompts(c, a)
    assert got[:2] == [9_000, 12_000] and got[3] - got[2] == 2_000


def test_what_the_simulator_writes_is_estimated_on_top_of_anchored_messages() -> None:
    """A clearing policy's placeholders are estimated: the prompt after clearing is the anchored prompt less
    the cleared results' anchored shares plus the placeholders' estimates; never more than without clearing."""
    prompts = [9_000 + 1_500 * k for k in range(12)]
    c = _recorded(prompts)  # type: ignore[arg-type]
    a = anchors_for(c, CAL)
    cfg = RunConfig(run_status="off", anchors=a)
    cleared = run(make_policy("anthropic-clear-tool-uses", {"trigger_tokens": "15000"}), c, cfg)
    rows = [row["context_tokens"] for row in cleared.rows if row["request_kind"] == "agent"]
    assert cleared.summary["compaction_count"] > 0
    assert all(x <= p for x, p in zip(rows, prompts, strict=True)) and rows[-1] < prompts[-1]
    assert rows[:4] == prompts[:4]  # below the trigger nothing is cleared: the recorded prompts


def test_a_result_bounded_on_entry_is_sized_by_what_is_sent_not_by_the_recorded_usage() -> None:
    """A tool result the policy bounds as it enters the log (smolagents' truncation) no longer weighs what the
    provider counted for the whole result: each bounded result takes its recorded share down in proportion, so
    every prompt after the first result is lower than recorded, by more with each result bounded; a bound no
    result reaches gives the recorded prompts. (Before, the bounded result kept its recorded size, and on a
    recording the bound changed nothing: issue 34.)"""
    prompts = [9_000 + 1_500 * k for k in range(8)]
    c = _recorded(prompts)  # type: ignore[arg-type]
    cfg = RunConfig(run_status="off", anchors=anchors_for(c, CAL))

    def agent(r: object) -> list[int]:
        return [row["context_tokens"] for row in r.rows if row["request_kind"] == "agent"]  # type: ignore[attr-defined]

    assert agent(run(make_policy("smolagents", {"max_length": 100_000}), c, cfg)) == prompts
    bounded = agent(run(make_policy("smolagents", {"max_length": 120}), c, cfg))
    assert bounded[0] == prompts[0]  # no result yet
    drops = [p - b for p, b in zip(prompts, bounded, strict=True)]
    assert all(later > earlier > 0 for earlier, later in zip(drops[1:], drops[2:], strict=False)), drops
    # the later results are mostly cut away (120 characters and the note kept of up to 838): a good part of the
    # growth the recording shows after the first request was theirs (3,962 of 10,500 tokens, measured)
    assert drops[-1] > 0.3 * (prompts[-1] - prompts[0]), drops


def test_anchor_needs_usage_to_anchor_anything() -> None:
    msgs = [Message("u", "user", (Part("text", "hi"),)), Message("a", "assistant", (Part("text", "hello"),))]
    a = anchor([msgs], lambda m: 10, COEF)
    assert a.sizes == {} and a.estimated == 2 and a.overhead == 0 and a.segment_overheads == ((None, 0),)


def test_what_no_usage_covers_is_estimated_with_its_call_ids_framed() -> None:
    """With a calibration that frames by call ids, a message no usage covers is estimated with the ids of the
    tool calls and results it holds: the last reply's call and its result, after the last request."""
    c = _recorded([9_000, 9_600])  # type: ignore[arg-type]
    framed = Coefficients(fixed=5_000.0, per_message=0.0, scale=1.2, per_call_id_token=1.25)
    a = anchor([c.messages], lambda m: 10, framed, id_tokens=lambda m: call_id_tokens(m, lambda _id: 16))
    last_reply, last_result = c.messages[-2], c.messages[-1]
    assert [a.estimated_sizes[m.id] for m in (last_reply, last_result)] == [32, 32]  # 1.2 x 10 + 1.25 x 16
    assert [a.message_tokens(m, 10, 16) for m in (last_reply, last_result)] == [32, 32]
    assert a.message_tokens(c.messages[0], 10) == 12  # the system prompt: no tool call
