"""The ``kimi-cli`` policy (``policies/kimi_cli.py``): Kimi CLI's ``SimpleCompaction``.

Each test names what it checks in ``MoonshotAI/kimi-cli@4a550eff`` (``src/kimi_cli/soul/compaction.py``,
``kimisoul.py``, ``config.py``). Decisions are driven on states built with :func:`tests.builders.state_of`
(``context``: the last step's usage, its reply 0 tokens, nothing appended since).
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.kimi_cli import SUMMARY_WRAPPER, KimiCli, KimiCliConfig
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
    request_turn,
    revert,
    shown_ids,
    state_of,
    sys,
    thinking_rejection,
    tool,
    user,
)

BIG = ModelConfig(context_window=200_000, output_reserve=8_192)
SMALL = small_model()
C4 = RunConfig(model=SMALL, tokenizer="chars4")
SCALED = KimiCliConfig(reserved_context_size=2_000)  # csim check's scaling of the 50,000 reserve to 8,000 tokens


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are Kimi.", id="sys"), *drafts)


def planned(
    c: Conversation, policy: KimiCli, trigger: str = "auto", model: ModelConfig = BIG, **kw: object
) -> list[str] | None:
    state = state_of(policy, c, model, **kw)  # type: ignore[arg-type]
    plan = policy.decide(state, trigger)  # type: ignore[arg-type]
    if plan is None:
        return None
    return shown_ids(c, plan.view_from(state.view).with_(summary=Summary("s")))


def test_defaults_and_config_bounds() -> None:
    """config.py: ``compaction_trigger_ratio`` 0.85 (``ge=0.5, le=0.99``), ``reserved_context_size`` 50,000;
    ``SimpleCompaction(max_preserved_messages=2)``."""
    cfg = KimiCli().config
    assert (cfg.compaction_trigger_ratio, cfg.reserved_context_size, cfg.max_preserved_messages) == (0.85, 50_000, 2)
    with pytest.raises(InvalidConfig, match="compaction_trigger_ratio=0.3"):
        make_policy("kimi-cli", {"compaction_trigger_ratio": "0.3"})


def test_reserve_fires_first_on_a_200k_window() -> None:
    """``should_auto_compact``: ``token_count + 50,000 >= 200,000`` fires at 150,000, before ``0.85 x 200,000``."""
    c = chat(*request_turn(1), *request_turn(2), user("request 3", id="u3"))
    assert planned(c, KimiCli(), context=149_999) is None
    assert planned(c, KimiCli(), context=150_000) is not None


def test_ratio_fires_when_the_reserve_is_small() -> None:
    """With a 1,000 reserve the ratio decides: at 170,000 tokens (0.85), not one below."""
    policy = KimiCli(KimiCliConfig(reserved_context_size=1_000))
    c = chat(*request_turn(1), *request_turn(2), user("request 3", id="u3"))
    assert planned(c, policy, context=169_999) is None
    assert planned(c, policy, context=170_000) is not None


def test_pending_messages_count_at_chars_over_four() -> None:
    """``token_count_with_pending``: the last step's ``usage.total`` plus ``estimate_text_tokens`` of what was appended
    after it (a 4,000-character tool result: 1,000 tokens)."""
    c = chat(*request_turn(1), user("request 2", id="u2"), asst("s", [call("cx")], id="ax"))
    state = state_of(KimiCli(), c, BIG, context=149_000)
    state.messages_at_last_request -= 1  # the reply "ax" answered the last request: counted in its usage
    assert KimiCli().token_count(state) == 149_000
    c2 = conv(*c.messages, tool("cx", "x" * 4_000, id="tx"))
    state = state_of(KimiCli(), c2, BIG, context=149_000)
    state.messages_at_last_request -= 2  # ... and its result came after it
    assert KimiCli().token_count(state) == 149_000 + (4_000 + len("grep")) // 4
    assert KimiCli().decide(state, "auto") is not None


def test_keeps_the_last_two_user_or_assistant_messages_with_their_tool_results() -> None:
    """``prepare``: from the end, the 2nd user/assistant message on is preserved (tool messages ride along); the
    rest is summarised into one user message with the "Previous context has been compacted" prefix."""
    c = chat(*request_turn(1), *request_turn(2), user("request 3", id="u3"))
    assert planned(c, KimiCli(), context=160_000) == ["sys", "<summary>", "d2", "u3"]
    loop = chat(
        *request_turn(1), user("request 2", id="u2"), asst("s", [call("cx")], id="ax"), tool("cx", "x", id="tx")
    )
    assert planned(loop, KimiCli(), context=160_000) == ["sys", "<summary>", "u2", "ax", "tx"]
    assert SUMMARY_WRAPPER.startswith("<system>Previous context has been compacted. Here is the compaction output:")
    state = state_of(KimiCli(), c, BIG, context=160_000)
    plan = KimiCli().decide(state, "auto")
    assert plan is not None and plan.edits is not None  # the summariser reads text parts only (TextPart)
    ((edit,),) = [plan.edits]
    assert edit.rule.kinds == frozenset({"thinking", "tool_call"}) and edit.before == plan.start


def test_fewer_than_two_messages_compacts_nothing() -> None:
    """``if n_preserved < self.max_preserved_messages``: nothing to compact."""
    c = chat(user("only", id="u1"))
    assert planned(c, KimiCli(), context=190_000) is None


def test_manual_compact() -> None:
    """``/compact``: the same preparation, at once (the command is not in Kimi's history)."""
    c = chat(*request_turn(1), *request_turn(2), compact_cmd(id="cmd"))
    assert planned(c, KimiCli(), "manual") == ["sys", "<summary>", "a2", "t2", "d2", "cmd"]


def test_engine_run_and_the_summary_message() -> None:
    """``compact``: the compacted history opens with a user message, ``system(COMPACTION_OUTPUT_PREFIX)`` then the
    summary."""
    res = Engine(KimiCli(SCALED), chat(*(d for k in range(1, 25) for d in request_turn(k, 2_000))), C4).run()
    recs = compaction_records(res)
    assert recs and recs[0].view.summary is not None and recs[0].view.summary.role == "user"
    assert recs[0].view.summary.text.startswith("<system>Previous context has been compacted.")


def test_known_deviation_live_turn_in_a_tool_loop() -> None:
    """Two steps into a tool loop, the two newest user/assistant messages are the loop's replies: the user message
    that started it is summarised."""
    c = chat(
        *request_turn(1),
        user("fix it", id="u2"),
        *(d for k in range(14) for d in (asst(f"s{k}", [call(f"x{k}")]), tool(f"x{k}", "y" * 2_000))),
    )
    sent = planned(c, KimiCli(SCALED), model=SMALL, context=7_000)
    assert sent is not None and "u2" not in sent
    res = Engine(KimiCli(SCALED), conv(*c.messages, asst("done")), C4).run()
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_known_deviation_atomic_units_in_a_live_thinking_loop() -> None:
    """Kimi counts messages, not loops: the kept messages may start inside the live tool loop, after the reply whose
    thinking opened it; without interleaved thinking Anthropic rejects the request."""
    for interleaved in (False, True):
        steps = [
            d
            for k in range(4)
            for d in (
                asst(f"s{k}", [call(f"x{k}")], thinking=f"t{k}" if interleaved or k == 0 else None, id=f"s{k}"),
                tool(f"x{k}", "y" * 1_500),
            )
        ]
        c = chat(user("fix it", id="u1"), *steps)
        plan = KimiCli(SCALED).decide(state_of(KimiCli(SCALED), c, SMALL, context=7_000), "auto")
        assert plan is not None and plan.start > c.index()["s0"]
        assert (thinking_rejection(KimiCli(SCALED), c, plan, SMALL) is None) is interleaved


def kept_pair_over_trigger() -> Conversation:
    """A tool loop of 3,000-token results: the two kept steps alone pass the trigger of the 8,000-token window (for
    ``test_properties.HAND_BUILT``)."""
    steps = [d for k in range(5) for d in (asst(f"s{k}", [call(f"x{k}")]), tool(f"x{k}", "y" * 12_000))]
    return chat(user("read them all", id="u1"), *steps, asst("done"))


def test_known_deviation_compaction_loop() -> None:
    """When the two kept messages alone are over the trigger, Kimi compacts again before the next step: each
    12,000-character result is 3,000 tokens, two of them pass the scaled trigger (8,000 - 2,000)."""
    res = Engine(KimiCli(SCALED), kept_pair_over_trigger(), C4).run()
    assert len(compaction_records(res)) >= 2
    assert "compaction-loop" in res.summary["violations_by_invariant"]


def test_known_deviation_revert_resolution() -> None:
    """Kimi has no notion of reverts: the kept messages are counted from the end, so a change can be summarised while
    its revert stays in view."""
    c = chat(
        user("edit it", change("ch1", "edit a.py"), id="u0"),
        asst("edited", [call("c0")], id="a0"),
        tool("c0", "e" * 24_000, id="t0"),
        asst("ok", id="d0"),
        user("undo that", revert("ch1"), id="undo"),
        asst("undone"),
    )
    res = Engine(KimiCli(SCALED), c, C4).run()
    assert compaction_records(res) and "revert-resolution" in res.summary["violations_by_invariant"]
