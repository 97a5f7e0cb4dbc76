"""The semantic-kernel-* policies (``policies/semantic_kernel.py``): Semantic Kernel's history reducers.

Each test names the ``semantic-kernel`` 1.45.0 file it checks (``semantic_kernel/contents/history_reducer/``).
Decisions are driven on a state built with :func:`tests.builders.state_of`; runs use the engine with the
``chars4`` tokenizer. The conformance suite (``tests/conformance/test_conformance_semantic_kernel.py``) compares
the same behaviour with SK's own ``reduce()``.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.semantic_kernel import (
    SemanticKernelSummarization,
    SemanticKernelSummarizationConfig,
    SemanticKernelTruncation,
    SemanticKernelTruncationConfig,
)
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.view import Messages, View, layout
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
    state_of,
    sys,
    thinking_loop,
    thinking_rejection,
    tool,
    user,
)

C4 = RunConfig(model=small_model(), tokenizer="chars4")


def turns(k: int, *, first: int = 0, steps: int = 0, thinking: bool = False) -> list[Draft]:
    """``k`` user turns (``u<j>``), each with ``steps`` tool rounds (``a<j>_<s>``, ``t<j>_<s>``), a reply ``r<j>``."""
    out: list[Draft] = []
    for j in range(first, first + k):
        out.append(user(f"question {j}", id=f"u{j}"))
        for s in range(steps):
            think = f"think {j}.{s}" if thinking else None
            out.append(asst(f"step {s}", [call(f"c{j}_{s}")], thinking=think, id=f"a{j}_{s}"))
            out.append(tool(f"c{j}_{s}", "r" * 80, id=f"t{j}_{s}"))
        out.append(asst(f"answer {j} " + "x" * 80, id=f"r{j}"))
    return out


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are an agent.", id="sys"), *drafts)


def after(policy: SemanticKernelTruncation, c: Conversation) -> list[str]:
    state = state_of(policy, c)
    plan = policy.decide(state, "auto")
    view = plan.view_from(state.view) if plan is not None else state.view
    return shown(c, view)


def shown(c: Conversation, view: View) -> list[str]:
    return [
        c.messages[i].id
        for item in layout(view, len(c.messages), True)
        if isinstance(item, Messages)
        for i in range(item.a, item.b)
    ]


def sk(target: int = 10, threshold: int = 0) -> SemanticKernelTruncation:
    return SemanticKernelTruncation(SemanticKernelTruncationConfig(target_count=target, threshold_count=threshold))


def test_defaults_and_validation() -> None:
    cfg = SemanticKernelTruncation().config
    assert (cfg.target_count, cfg.threshold_count) == (10, 0)  # threshold_count: SK's default
    with pytest.raises(InvalidConfig, match="target_count=0 must be greater than 0"):
        make_policy("semantic-kernel-truncation", {"target_count": "0"})
    with pytest.raises(InvalidConfig, match="threshold_count=-1"):
        make_policy("semantic-kernel-truncation", {"threshold_count": "-1"})


def test_truncation_keeps_target_count_with_the_system_message() -> None:
    """``chat_history_truncation_reducer.py``: 13 messages, target 4: the system message and the newest 3."""
    c = chat(*turns(6))
    assert after(sk(4), c) == ["sys", "r4", "u5", "r5"]


def test_truncation_waits_for_target_plus_threshold() -> None:
    c = chat(*turns(6))  # 13 messages with the system message
    assert sk(8, 5).decide(state_of(sk(), c), "auto") is None
    assert sk(8, 4).decide(state_of(sk(), c), "auto") is not None


def test_truncation_prefers_a_user_message_within_the_threshold() -> None:
    """``locate_safe_reduction_index``: the cut moves back to a user message at most ``threshold`` earlier."""
    c = chat(*turns(6))
    assert after(sk(6, 2), c) == ["sys", "u3", "r3", "u4", "r4", "u5", "r5"]
    assert after(sk(6, 0), c) == ["sys", "r3", "u4", "r4", "u5", "r5"]


def test_truncation_never_splits_a_call_from_its_result() -> None:
    """A cut on a result or a call moves back to the first message of the chain of calls and results."""
    c = chat(*turns(4, steps=2))
    assert after(sk(6), c) == ["sys", "a3_0", "t3_0", "a3_1", "t3_1", "r3"]
    assert after(sk(7), c) == ["sys", "u3", "a3_0", "t3_0", "a3_1", "t3_1", "r3"]


def test_truncation_is_a_rewrite_reduced_again_from_what_is_left() -> None:
    """Every reduction works on the history the previous one left; the view only moves forward."""
    res = Engine(sk(6), chat(*turns(8)), C4).run()
    starts = [r.view.start for r in compaction_records(res)]
    assert len(starts) >= 4 and starts == sorted(set(starts))
    assert all(r.view.summary is None and r.view.spans == () for r in compaction_records(res))


def test_truncation_drops_the_user_message_of_a_long_tool_loop() -> None:
    """Known deviation ``live-turn``: the chain walk stops at the loop's first call, after its user message."""
    c = chat(*turns(1, steps=8))
    assert after(sk(6), c)[:3] == ["sys", "a0_0", "t0_0"]
    res = Engine(sk(6), c, C4).run()
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_truncation_cuts_at_a_loops_closing_reply_and_keeps_a_live_loop_whole() -> None:
    """SK counts messages: the cut may land on the reply that closes a turn's thinking tool loop, which Anthropic
    accepts (the loop is over, its thinking may go); a live loop's cut moves back to its first call, so the thinking
    that opened it stays (no ``atomic-units``)."""
    c = chat(*turns(3, steps=1, thinking=True))
    plan = sk(6).decide(state_of(sk(), c), "auto")  # 13 messages: the newest 5 after the system message start at r1
    assert plan is not None and c.messages[plan.start].id == "r1"
    assert thinking_rejection(sk(), c, plan) is None
    live = chat(user("question", id="u0"), *thinking_loop(20))
    plan = sk(6).decide(state_of(sk(), live), "auto")
    assert plan is not None and plan.start == live.index()["a1"]
    assert thinking_rejection(sk(), live, plan) is None


def test_truncation_drops_a_change_whose_revert_stays() -> None:
    """Known deviation ``revert-resolution``: SK has no reverts."""
    c = chat(user("go", id="u0"), asst("edit", [call("e")], parts=[change("ch1")], id="edit"), tool("e", "ok"))
    c = conv(*c.messages, *turns(3, first=1), user("undo that", revert("ch1"), id="undo"))
    sent = after(sk(4), c)
    assert "undo" in sent and "edit" not in sent


def test_truncation_keeps_a_pending_turn() -> None:
    """Our addition: the cut never passes the start of an unresolved pending turn."""
    c = chat(*turns(2), user("Deploy it.", id="dep"), asst("May I deploy?", id="ask", pending=True))
    c = conv(*c.messages, *turns(4, first=5))
    assert after(sk(4), c)[:3] == ["sys", "dep", "ask"]


# -- ChatHistorySummarizationReducer ------------------------------------------------------------------------------
def sks(target: int = 10, threshold: int = 0, **kw: bool) -> SemanticKernelSummarization:
    cfg = SemanticKernelSummarizationConfig(target_count=target, threshold_count=threshold, **kw)
    return SemanticKernelSummarization(cfg)


def test_summarization_defaults() -> None:
    cfg = SemanticKernelSummarization().config
    assert (cfg.target_count, cfg.threshold_count, cfg.include_function_content_in_summary) == (10, 0, False)
    with pytest.raises(InvalidConfig, match="target_count=0"):
        make_policy("semantic-kernel-summarization", {"target_count": "0"})


def test_summarization_summarises_before_the_safe_index() -> None:
    """``chat_history_summarization_reducer.py``: 13 messages, target 6, threshold 2: the cut is the user message
    u3 (as truncation's); what is before it is summarised into an assistant message after the system prompt."""
    c = chat(*turns(6))
    state = state_of(sks(), c)
    plan = sks(6, 2).decide(state, "auto")
    assert plan is not None and plan.summarize and plan.summary_request.role == "assistant"
    assert c.messages[plan.start].id == "u3" and plan.summary_request.drop_tool_outputs
    assert sks(6, 7).decide(state, "auto") is None  # 13 <= 6 + 7


def test_summarization_counts_the_summary_and_folds_it_in() -> None:
    """The summary is one of the history's messages; the next reduction summarises it again with the new span."""
    res = Engine(sks(6), chat(*turns(10)), C4).run()
    records = compaction_records(res)
    assert len(records) >= 2
    assert all(r.view.summary is not None and r.view.summary.role == "assistant" for r in records)
    starts = [r.view.start for r in records]
    assert starts == sorted(set(starts))


def test_summarization_with_only_function_content_before_the_cut_does_nothing() -> None:
    """``extract_range`` leaves out calls and results: a span of nothing else is no reduction, unless
    ``include_function_content_in_summary``."""
    c = chat(asst("look", [call("c0")], id="a0"), tool("c0", "r" * 2_000, id="t0"), asst("found it", id="r0"))
    c = conv(*c.messages, *turns(2, first=1))  # sys a0 t0 r0 u1 r1 u2 r2: target 6 cuts at r0
    state = state_of(sks(), c)
    assert sks(6).decide(state, "auto") is None
    plan = sks(6, include_function_content_in_summary=True).decide(state, "auto")
    assert plan is not None and c.messages[plan.start].id == "r0" and not plan.summary_request.drop_tool_outputs
