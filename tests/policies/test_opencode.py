"""The ``opencode`` policy (``policies/opencode.py``): opencode's session compaction and prune.

Each test names what it checks in ``sst/opencode@31e22f65`` (``packages/opencode/src/session/compaction.ts``,
``overflow.ts``, ``prompt.ts``). Decisions are driven on states built with :func:`tests.builders.state_of` (``context``
sets the last request's usage exactly; its reply counts 0 tokens); runs use the engine with the ``chars4`` tokenizer.
The small model has an 8,000-token window and 1,000 tokens of output, so ``usable`` is 8,000 − 1,000 − 1,000 = 6,000
and the kept tail's budget is the 2,000-token floor.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.base import Policy
from policies.opencode import (
    CONTINUE_TEXT,
    OVERFLOW_NOTE,
    PRUNED,
    REQUEST_TEXT,
    Opencode,
    OpencodeConfig,
)
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Summary
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
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
    shown_ids,
    state_of,
    sys,
    text_of,
    tool,
    user,
)

SMALL = small_model()  # 8,000 tokens, 1,000 for output
C4 = RunConfig(model=SMALL, tokenizer="chars4")


def turn(k: int, size: int = 400, *, tool_name: str = "grep") -> list[Draft]:
    """One user turn: the request, a tool step of ``size`` characters of output, the final answer."""
    return [
        user(f"request {k}", id=f"u{k}"),
        asst(f"step {k}", [call(f"c{k}", tool_name)], id=f"a{k}"),
        tool(f"c{k}", f"out {k} " + "r" * size, name=tool_name, id=f"t{k}"),
        asst(f"done {k}", id=f"d{k}"),
    ]


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are opencode."), *drafts)


def planned(policy: Policy, c: Conversation, trigger: str = "auto", **kw: object) -> list[str] | None:  # type: ignore[type-arg]
    """What the policy's plan would send (with a stand-in summary), or None when it does nothing."""
    state = state_of(policy, c, SMALL, **kw)  # type: ignore[arg-type]
    plan = policy.decide(state, trigger)  # type: ignore[arg-type]
    if plan is None:
        return None
    view = plan.view_from(state.view)
    return shown_ids(c, view.with_(summary=Summary("s")) if plan.summarize else view)


# -- configuration -------------------------------------------------------------------------------------------------
def test_usable_and_tail_budget_follow_overflow_ts_and_compaction_ts() -> None:
    """``usable = context − maxOutputTokens − min(20_000, maxOutputTokens)``, maxOutputTokens = min(model, 32,000): the
    catalogue's example, 200K with 32K output, gives 148,000; the tail's budget is ``clamp(floor(0.25 × usable),
    2,000, 15,000)``."""
    c = chat(*turn(1))
    big = state_of(Opencode(), c, ModelConfig(context_window=200_000, output_reserve=32_000))
    assert Opencode().usable(big) == 148_000 and Opencode().preserve_budget(big) == 15_000
    capped = state_of(Opencode(), c, ModelConfig(context_window=200_000, output_reserve=64_000))
    assert Opencode().usable(capped) == 200_000 - 32_000 - 20_000  # max output capped at OUTPUT_TOKEN_MAX
    small = state_of(Opencode(), c, SMALL)
    assert Opencode().usable(small) == 6_000 and Opencode().preserve_budget(small) == 2_000
    mid = state_of(Opencode(), c, ModelConfig(context_window=40_000, output_reserve=4_000))
    assert Opencode().preserve_budget(mid) == (40_000 - 8_000) // 4  # 8,000: inside the clamp
    assert Opencode(OpencodeConfig(reserved=0)).usable(small) == 7_000  # compaction.reserved
    assert Opencode(OpencodeConfig(preserve_recent_tokens=123)).preserve_budget(small) == 123


def test_defaults_and_bad_configs() -> None:
    """``compaction.auto`` defaults to true and ``compaction.prune`` is off at this commit
    (``if (!cfg.compaction?.prune) return``); ``PRUNE_PROTECT`` 40,000, ``PRUNE_MINIMUM`` 20,000; no ``tail_turns``."""
    cfg = Opencode().config
    assert (cfg.auto, cfg.prune, cfg.prune_protect, cfg.prune_minimum, cfg.tail_turns) == (
        True,
        False,
        40_000,
        20_000,
        None,
    )
    with pytest.raises(InvalidConfig, match="reserved=-1"):
        make_policy("opencode", {"reserved": "-1"})


# -- trigger -------------------------------------------------------------------------------------------------------
def test_compacts_when_the_last_step_reaches_usable() -> None:
    """``isOverflow``: ``count >= usable`` with count the last finished assistant message's tokens (input + output +
    cache); checked before every step. Just below: nothing; at and above: a compaction."""
    c = chat(*turn(1), *turn(2), user("request 3", id="u3"))
    assert planned(Opencode(), c, context=5_999) is None
    assert planned(Opencode(), c, context=6_000) is not None
    assert planned(Opencode(), c, context=7_000) is not None
    assert planned(Opencode(OpencodeConfig(auto=False)), c, context=7_000) is None  # compaction.auto = false


def test_after_a_compaction_the_summary_is_the_last_finished_message_and_never_triggers() -> None:
    """prompt.ts: ``lastFinished.summary !== true`` — right after a compaction the check does not fire again."""
    c = chat(*turn(1, 2_000), *turn(2, 2_000), *turn(3, 2_000), *turn(4, 2_000), user("request 5", id="u5"))
    state = state_of(Opencode(), c, SMALL, context=6_500)
    plan = Opencode().decide(state, "auto")
    assert plan is not None
    state.view_at_last_request = state.view  # the request the usage belongs to saw the view before compacting
    state.view = plan.view_from(state.view).with_(summary=Summary("s"))
    assert Opencode().last_step_tokens(state) is None and Opencode().decide(state, "auto") is None


# -- the view after compaction -------------------------------------------------------------------------------------
def test_view_is_request_summary_kept_turns_and_continue() -> None:
    """``filterCompacted``: ``[compaction request, summary, ...tail from tail_start_id, continuation]``; the request
    renders as "What did we do so far?", the summary is an assistant message, and auto-compaction appends the
    synthetic "Continue if you have next steps…" user message. ``select`` keeps whole turns, newest first, while
    they fit the 2,000-token budget (turn 4 of ~530 tokens and the new turn 5); turn 3, of ~2,030, does not fit and
    is split (``splitTurn``): its final answer d3 fits what is left."""
    c = chat(*turn(1, 8_000), *turn(2, 8_000), *turn(3, 8_000), *turn(4, 2_000), user("request 5", id="u5"))
    sent = planned(Opencode(), c, context=6_000)
    assert sent == [
        "m0",
        REQUEST_TEXT,
        "<summary>",
        "d3",
        "u4",
        "a4",
        "t4",
        "d4",
        "u5",
        CONTINUE_TEXT,
    ]
    assert REQUEST_TEXT == "What did we do so far?"
    assert CONTINUE_TEXT == (
        "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
    )


def test_engine_run_renders_the_anchored_layout() -> None:
    """A run: the compaction is made before the request that crosses, the summary reaches the model as an assistant
    message between the compaction request and the kept tail, and the next compaction folds the previous summary in
    (the engine gives the summariser the previous summary: opencode's ``<prior-summary>``)."""
    c = chat(*(d for k in range(1, 25) for d in turn(k, 2_400)))
    res, captured, _ = run_capture(Opencode(), c, C4)
    recs = compaction_records(res)
    assert len(recs) >= 2 and all(r.mode == "summarize" and r.trigger == "auto" for r in recs)
    assert {v.invariant for v in res.violations} <= {"live-turn"}
    after = next(cap for cap in captured if cap.view is recs[0].view)
    roles = [m["role"] for m in after.rendered]
    texts = [text_of(m.get("content", "")) for m in after.rendered]
    assert roles[:3] == ["system", "user", "assistant"] and texts[1] == REQUEST_TEXT
    assert recs[0].view.summary is not None and recs[0].view.summary.role == "assistant"
    assert CONTINUE_TEXT in texts
    assert recs[1].view.summary is not None and recs[1].summarised[0] <= recs[0].view.start


def test_a_turn_that_does_not_fit_is_split_at_a_later_message() -> None:
    """``splitTurn``: the first turn that does not fit may keep its messages from a later one whose suffix fits; the
    user message that opened it is then summarised (known deviation ``live-turn``)."""
    big = [
        user("request 2", id="u2"),
        asst("step a", [call("ca")], id="aa"),
        tool("ca", "x" * 22_000, id="ta"),
        asst("step b", [call("cb")], id="ab"),
        tool("cb", "y" * 2_000, id="tb"),
        asst("step c", [call("cc")], id="ac"),
        tool("cc", "z" * 2_000, id="tc"),
    ]
    c = chat(*turn(1, 400), *big)
    sent = planned(Opencode(), c, context=6_000)
    assert sent == ["m0", REQUEST_TEXT, "<summary>", "ab", "tb", "ac", "tc", CONTINUE_TEXT]
    res = Engine(Opencode(), chat(*turn(1, 400), *big, asst("end")), C4).run()
    assert len(compaction_records(res)) == 1
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_nothing_fits_and_everything_is_summarised() -> None:
    """``if (!keep || keep.start === 0)``: no tail; the head is the whole history."""
    c = chat(*turn(1, 400), user("request 2", id="u2"), asst("big", [call("cz")], id="az"), tool("cz", "z" * 20_000))
    assert planned(Opencode(), c, context=6_000) == ["m0", REQUEST_TEXT, "<summary>", CONTINUE_TEXT]


def test_a_tail_that_would_be_the_whole_history_summarises_everything() -> None:
    """``keep.start === 0``: when every turn fits, opencode still summarises them all (no tail)."""
    c = chat(*turn(1, 100), *turn(2, 100), user("request 3", id="u3"))
    sent = planned(Opencode(OpencodeConfig(preserve_recent_tokens=50_000)), c, context=6_000)
    assert sent == ["m0", REQUEST_TEXT, "<summary>", CONTINUE_TEXT]


def test_tail_turns_limits_the_kept_turns() -> None:
    """``compaction.tail_turns``: only the newest N turns may be kept; ``<= 0`` keeps none."""
    c = chat(*turn(1, 100), *turn(2, 100), *turn(3, 100), user("request 4", id="u4"))
    one = planned(Opencode(OpencodeConfig(tail_turns=1)), c, context=6_000)
    assert one == ["m0", REQUEST_TEXT, "<summary>", "u4", CONTINUE_TEXT]
    none = planned(Opencode(OpencodeConfig(tail_turns=0)), c, context=6_000)
    assert none == ["m0", REQUEST_TEXT, "<summary>", CONTINUE_TEXT]


def test_manual_compact_has_no_continuation_and_drops_the_command() -> None:
    """``/compact`` creates the compaction request (``auto: false``): the request is the marker, not history, and no
    "Continue…" message follows."""
    c = chat(*turn(1, 8_000), *turn(2, 400), compact_cmd(id="cmd"))
    assert planned(Opencode(), c, "manual") == ["m0", REQUEST_TEXT, "<summary>", "d1", "u2", "a2", "t2", "d2"]


def test_overflow_replays_the_last_user_message() -> None:
    """``processCompaction`` with ``overflow``: the history stops before the last user message, which is replayed
    after the compaction (what followed it is dropped); no "Continue…" message. With no earlier user message there
    is nothing to replay: a plain compaction whose continuation opens with the note on the provider's size limit."""
    c = chat(
        *turn(1, 8_000), *turn(2, 400), user("request 3", id="u3"), asst("s", [call("cx")], id="ax"), tool("cx", "x")
    )
    sent = planned(Opencode(), c, "overflow")
    assert sent == ["m0", REQUEST_TEXT, "<summary>", "d1", "u2", "a2", "t2", "d2", "u3"]
    only = chat(user("request 1", id="u1"), asst("s", [call("cx")], id="ax"), tool("cx", "x" * 30_000))
    assert planned(Opencode(), only, "overflow") == [
        "m0",
        REQUEST_TEXT,
        "<summary>",
        OVERFLOW_NOTE + CONTINUE_TEXT,
    ]
    assert Opencode().retry_on_overflow == 1


def test_unresolved_pending_turn_stays() -> None:
    """Our contract: nothing of an unresolved pending turn is summarised."""
    c = chat(*turn(1, 4_000), user("deploy?", id="u2"), asst("May I deploy?", id="ask", pending=True))
    c = conv(*c.messages, user("meanwhile: docs", id="u3"), asst("r", [call("cq")], id="aq"), tool("cq", "q" * 12_000))
    sent = planned(Opencode(), c, context=6_000)
    assert sent is not None and sent[sent.index("<summary>") + 1 :][:3] == ["u2", "ask", "u3"]


def test_known_deviation_revert_resolution() -> None:
    """opencode has no notion of reverts: the tail is chosen by turns and tokens, so a change can be summarised while
    the revert of it stays in view."""
    c = chat(
        user("edit", change("ch1", "edit a.py"), id="u1"),
        asst("edited", [call("c1")], id="a1"),
        tool("c1", "e" * 24_000, id="t1"),
        asst("ok", id="d1"),
        user("undo it", revert("ch1"), id="u2"),
        asst("reverting"),
    )
    res = Engine(Opencode(), c, C4).run()
    assert compaction_records(res) and "revert-resolution" in res.summary["violations_by_invariant"]


# -- prune ---------------------------------------------------------------------------------------------------------
def prune_chat(sizes: list[int], *, tool_name: str = "grep") -> Conversation:
    """Turns with one output of each size, then the next user message (prune runs when a turn has ended)."""
    drafts = [d for k, s in enumerate(sizes, 1) for d in turn(k, s, tool_name=tool_name)]
    return chat(*drafts, user("next", id="next"))


def prune_view(c: Conversation, config: OpencodeConfig) -> list[str]:
    """Ids of the messages whose outputs read ``[Old tool result content cleared]`` after the policy's plan."""
    pol = Opencode(config)
    state = state_of(pol, c, SMALL)
    plan = pol.decide(state, "auto")
    if plan is None:
        return []
    view = plan.view_from(state.view)
    return [m.id for i, m in enumerate(c.messages) if any(r.text == PRUNED for r in view.rules_at(i)) and m.results]


def test_prune_is_off_by_default() -> None:
    """compaction.ts ``if (!cfg.compaction?.prune) return``."""
    assert prune_view(prune_chat([80_000] * 5), OpencodeConfig()) == []


def test_prune_protects_the_last_two_turns_and_40k_then_needs_more_than_20k() -> None:
    """``prune``: the last two user turns are skipped; of the older outputs, newest first, the first 40,000 tokens are
    kept and the rest pruned when they total more than 20,000 (chars/4: 80,000 characters = 20,000 tokens)."""
    on = OpencodeConfig(prune=True)
    # Turns 4 and 5 are the last two finished turns. Turns 3 and 2 hold 20,002.5 + 19,752.5 tokens (within the
    # 40,000); turn 1's output crosses the line, so it is pruned, and its 20,002.5 tokens are more than 20,000.
    assert prune_view(prune_chat([80_000, 79_000, 80_000, 10, 10]), on) == ["t1"]
    # The output that crosses the line is pruned too (``if (total <= PRUNE_PROTECT) continue`` only spares those
    # within it): here turn 2's, so turns 1 and 2 go.
    assert prune_view(prune_chat([80_000, 80_000, 80_000, 10, 10]), on) == ["t1", "t2"]
    # 19,752.5 tokens beyond the protection: not more than 20,000, nothing is pruned.
    assert prune_view(prune_chat([79_000, 79_000, 80_000, 10, 10]), on) == []
    assert prune_view(prune_chat([10, 79_000, 80_000, 10, 10]), on) == []


def test_prune_never_touches_the_skill_tool() -> None:
    """``PRUNE_PROTECTED_TOOLS = ["skill"]``: skipped, and not counted."""
    on = OpencodeConfig(prune=True)
    assert prune_view(prune_chat([80_000, 80_000, 80_000, 10, 10], tool_name="skill"), on) == []


def test_prune_stops_at_what_is_already_pruned() -> None:
    """``if (part.state.time.compacted) break loop``: a second prune only reaches outputs newer than the first."""
    on = OpencodeConfig(prune=True)
    c = prune_chat([80_000, 80_000, 80_000, 10, 10])
    pol = Opencode(on)
    state = state_of(pol, c, SMALL)
    plan = pol.decide(state, "auto")
    assert plan is not None
    state.view = plan.view_from(state.view)
    assert pol.decide(state, "auto") is None
