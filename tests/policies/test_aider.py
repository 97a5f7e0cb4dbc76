"""The ``aider`` policy (``policies/aider.py``): Aider's ``ChatSummary`` of the finished exchanges.

Each test names what it checks in ``Aider-AI/aider@5dc9490b`` (``aider/history.py``, ``aider/models.py``,
``aider/coders/base_coder.py``). Decisions are driven on states built with :func:`tests.builders.state_of`; runs use
the engine with the ``chars4`` tokenizer. ``tests/conformance/test_conformance_aider_chat.py`` compares the split with
``aider-chat``'s own ``ChatSummary.summarize``.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.aider import OK, SUMMARY_PREFIX, Aider, AiderConfig
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Injected, Summary, View
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
from tests.builders import (
    Draft,
    asst,
    call,
    change,
    compaction_records,
    conv,
    revert,
    shown_ids,
    state_of,
    sys,
    tool,
    user,
)

SMALL = small_model()  # 8,000 tokens: the budget is the 1,024 floor
C4 = RunConfig(model=SMALL, tokenizer="chars4")


def exchange(k: int, size: int = 400) -> list[Draft]:
    """One finished exchange: the user's request and the assistant's answer, ``size`` characters each."""
    return [user(f"u{k} " + "q" * size, id=f"u{k}"), asst(f"a{k} " + "a" * size, id=f"a{k}")]


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are aider.", id="sys"), *drafts)


def planned(policy: Aider, c: Conversation, model: ModelConfig = SMALL) -> list[str] | None:
    state = state_of(policy, c, model)
    plan = policy.decide(state, "auto")
    if plan is None:
        return None
    return shown_ids(c, plan.view_from(state.view).with_(summary=Summary("s")))


def test_budget_is_a_sixteenth_of_the_input_clamped_to_1k_8k() -> None:
    """models.py: ``max_chat_history_tokens = min(max(max_input_tokens / 16, 1024), 8192)``."""
    c = chat(*exchange(1))
    for window, budget in ((8_000, 1_024), (64_000, 4_000), (200_000, 8_192)):
        state = state_of(Aider(), c, ModelConfig(context_window=window, output_reserve=1_000))
        assert Aider().max_tokens(state) == budget
    state = state_of(Aider(), c, SMALL)
    assert Aider(AiderConfig(max_chat_history_tokens=300)).max_tokens(state) == 300  # --max-chat-history-tokens
    assert Aider(AiderConfig(max_input_tokens=128_000)).max_tokens(state) == 8_000
    with pytest.raises(InvalidConfig, match="max_chat_history_tokens=0"):
        make_policy("aider", {"max_chat_history_tokens": "0"})


def test_triggers_only_when_done_messages_are_over_the_budget() -> None:
    """``too_big``: ``total > max_tokens`` over the done messages (the current exchange is not counted)."""
    c = chat(*(d for k in range(1, 7) for d in exchange(k)), user("next", id="next"))
    state = state_of(Aider(), c, SMALL)
    total = sum(x.tokens for x in Aider().done_items(state))
    assert Aider(AiderConfig(max_chat_history_tokens=total)).decide(state, "auto") is None  # at: not too big
    assert Aider(AiderConfig(max_chat_history_tokens=total - 1)).decide(state, "auto") is not None  # just above
    assert Aider(AiderConfig(max_chat_history_tokens=total + 1)).decide(state, "auto") is None  # below


def test_view_is_summary_as_user_then_tail_under_half_the_budget() -> None:
    """``summarize_real``: the tail is the newest messages under half the budget (512 of 1,024 tokens: two 110-token
    exchanges); the rewritten history is ``[user: "I spoke to you previously about a number of things.\\n" + summary,
    *tail]`` and, ending on an assistant message, gets no "Ok."."""
    c = chat(*(d for k in range(1, 11) for d in exchange(k)), user("next", id="next"))
    sent = planned(Aider(), c)
    assert sent is not None and sent[:2] == ["sys", "<summary>"] and sent[-1] == "next"
    tail = sent[2:-1]
    assert tail and tail[0].startswith("u") and tail[-1] == "a10" and OK not in sent
    assert SUMMARY_PREFIX == "I spoke to you previously about a number of things.\n"


def test_everything_summarised_gets_an_ok() -> None:
    """``summarize``: ``if messages[-1]["role"] != "assistant": append {"role": "assistant", "content": "Ok."}`` —
    when the newest exchange alone is over half the budget, the tail is empty and the summary is followed by "Ok."."""
    c = chat(*exchange(1), *exchange(2), *exchange(3), *exchange(4, 2_400), user("next", id="next"))
    assert planned(Aider(), c) == ["sys", "<summary>", OK, "next"]


def test_the_current_exchange_is_never_summarised_and_asked_once_per_exchange() -> None:
    """base_coder.py: only ``done_messages`` are summarised, after an exchange (``move_back_cur_messages``); a long
    tool loop in the current exchange (``cur_messages``) is not touched, and mid-loop nothing is decided."""
    done = [d for k in range(1, 11) for d in exchange(k)]
    loop = [user("fix it", id="cur"), asst("run", [call("c1")], id="ac"), tool("c1", "r" * 20_000, id="tc")]
    c = chat(*done, *loop)
    assert planned(Aider(), c) is None  # mid tool loop: the summary was applied at the exchange's first request
    c = chat(*done, *loop[:1])
    sent = planned(Aider(), c)
    assert sent is not None and sent[-1] == "cur"


def test_engine_run_writes_the_summary_as_a_user_message_with_the_prefix() -> None:
    """``summarize_all``: ``prompts.summary_prefix + summary`` as a ``user`` message; a run of 15 exchanges over the
    1,024-token budget summarises without breaking an invariant."""
    res = Engine(Aider(), chat(*(d for k in range(1, 16) for d in exchange(k))), C4).run()
    recs = compaction_records(res)
    assert recs and all(r.view.summary is not None for r in recs)
    summary = recs[0].view.summary
    assert summary is not None and summary.role == "user" and summary.text.startswith(SUMMARY_PREFIX)
    assert res.violations == []


def test_no_compact_command() -> None:
    """Aider has no ``/compact``: the manual trigger does nothing."""
    c = chat(*(d for k in range(1, 11) for d in exchange(k)), user("next", id="next"))
    assert Aider().decide(state_of(Aider(), c, SMALL), "manual") is None


def test_known_deviation_revert_resolution() -> None:
    """Aider has no notion of reverts: the tail is chosen by tokens, so a change can be summarised while its revert
    stays in view."""
    c = chat(
        user("edit it", change("ch1", "edit a.py"), id="u0"),
        asst("edited", id="a0"),
        *(d for k in range(1, 10) for d in exchange(k)),
        user("undo that edit", revert("ch1"), id="undo"),
        asst("undone"),
    )
    res = Engine(Aider(), c, C4).run()
    assert compaction_records(res) and "revert-resolution" in res.summary["violations_by_invariant"]


def test_done_messages_keep_the_order_the_view_sends() -> None:
    """``summarize`` appends "Ok." after the kept tail when it ends on a user message, so Aider's next
    ``done_messages`` are ``[summary, *tail, "Ok.", *the next exchange]``, the order the view sends; the split is
    decided on that order, not with "Ok." moved up to the summary. Here the kept tail ``u2 a2 u2x a2x u2b`` ends on a
    user message and the next exchange (``u3 a3``, 510 tokens) is just under half the 1,024-token budget: Aider's walk
    stops at "Ok." (5 tokens more reach 512), the head ends on it (an assistant message) and the tail is ``u3 a3``.
    With "Ok." counted first, the walk reached ``u2b`` and kept it too."""
    tail = [user("u2 " + "q" * 2_000, id="u2"), asst("a2", id="a2"), user("u2x", id="u2x"), asst("a2x", id="a2x")]
    c = chat(*exchange(1), *tail, user("u2b", id="u2b"), *exchange(3, 1_000), user("next", id="next"))
    ok = Injected(OK, role="assistant", label="ok")
    view = View(start=8, spans=((3, 8),), summary=Summary(SUMMARY_PREFIX + "s"), summary_slot=0, injected=(ok,))
    state = state_of(Aider(), c, SMALL, view=view)
    items = Aider().done_items(state)
    ids = [c.messages[x.index].id if x.index is not None else x.role for x in items]
    assert ids == ["user", "u2", "a2", "u2x", "a2x", "u2b", "assistant", "u3", "a3"]
    assert sum(x.tokens for x in items[-2:]) == 510 and items[-3].tokens == 5
    plan = Aider().decide(state, "auto")
    assert plan is not None and [c.messages[i].id for i in plan.pinned] == ["u3", "a3"]


def test_the_recursion_assumes_a_summary_as_long_as_the_one_it_folds_in() -> None:
    """``summarize_real`` recurses when the summary it wrote and the tail are not under the budget; ours decides
    before the summary is written, on a size: the mock summariser writes its model's typical length, so the summary
    it folds in (here about 700 tokens) is the guess, not the shortest it could write (about 40). The tail
    ``u5 a5 u6 a6`` (420 tokens) fits with 40 but not with 700, so everything is summarised (then "Ok.")."""
    c = chat(*(d for k in range(1, 7) for d in exchange(k)), user("next", id="next"))
    view = View(start=1, summary=Summary(SUMMARY_PREFIX + "s" * 2_750))
    state = state_of(Aider(), c, SMALL, view=view)
    items = Aider().done_items(state)
    assert items[0].tokens >= 700 and sum(x.tokens for x in items[-4:]) == 420
    plan = Aider().decide(state, "auto")
    assert plan is not None and plan.pinned == () and plan.injected is not None and plan.injected[0].text == OK
