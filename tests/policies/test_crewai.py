"""The crewai policy (``policies/crewai.py``): CrewAI's ``respect_context_window`` and deferred tool results.

Each test names the ``crewai`` 1.15.30 code it checks. Decisions are driven on a state built with
:func:`tests.builders.state_of`; runs use the engine with the ``chars4`` tokenizer.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.crewai import SUMMARY_TEMPLATE, CrewAI, CrewAIConfig, deferred_reference
from sim.core.conversation import Conversation, Part
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
from tests.builders import Draft, asst, call, change, compaction_records, conv, revert, state_of, sys, tool, user


def steps(n: int, size: int = 400, thinking: bool = False) -> list[Draft]:
    out: list[Draft] = []
    for k in range(n):
        out += [asst(f"step {k}", [call(f"c{k}", args='{"q": "x"}')], thinking="t" if thinking else None, id=f"a{k}")]
        out.append(tool(f"c{k}", "r" * size, id=f"t{k}"))
    return out


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are a crew agent.", id="sys"), user("Write the report.", id="task"), *drafts)


def window_for(usable: int) -> ModelConfig:
    """A model whose ``int(window * 0.85)`` is ``usable``."""
    w = usable * 100 // 85
    while int(w * 0.85) < usable:
        w += 1
    assert int(w * 0.85) == usable
    return ModelConfig(context_window=w, output_reserve=1)


def test_defaults() -> None:
    """``Agent.respect_context_window`` and ``use_better_compaction`` default True; 0.85 of the window is usable."""
    cfg = CrewAI().config
    assert (cfg.respect_context_window, cfg.use_better_compaction, cfg.usable_window_tokens) == (True, True, 170_000)
    assert CrewAI().retry_on_overflow == 1
    with pytest.raises(InvalidConfig, match="usable_window_tokens"):
        make_policy("crewai", {"usable_window_tokens": "0"})


def test_the_count_is_a_quarter_of_the_text() -> None:
    """``get_input_tokens_count``'s fallback: ``(characters + 3) // 4`` of every message's text content (the system
    prompt included; tool calls are not text)."""
    c = chat(*steps(2, size=101))
    text = sum(len(p.text) for m in c.messages for p in m.parts if p.kind in ("text", "tool_result"))
    names = sum(len(p.name or "") for m in c.messages for p in m.parts if p.kind == "tool_result")  # ours: see estimate
    state = state_of(CrewAI(), c)
    assert CrewAI().estimate(state) == (text + names + 3) // 4


def test_triggers_only_over_the_usable_window() -> None:
    """``is_context_window_overflowing_threshold``: ``input_tokens > get_context_window_size()``, strictly."""
    c = chat(*steps(12))
    count = CrewAI().estimate(state_of(CrewAI(), c))
    assert CrewAI().decide(state_of(CrewAI(), c, window_for(count)), "auto") is None
    plan = CrewAI().decide(state_of(CrewAI(), c, window_for(count - 1)), "auto")
    assert plan is not None


def test_everything_but_the_system_prompt_is_summarised() -> None:
    """``summarize_messages``: the system messages stay; every other message, the task included, becomes one user
    message "<summary>...</summary> Continue the task..." (en.json ``summary``)."""
    c = chat(*steps(12))
    plan = CrewAI().decide(state_of(CrewAI(), c, window_for(850)), "auto")
    assert plan is not None and plan.start == len(c.messages) and plan.summarize
    assert plan.summary_request.role == "user" and plan.summary_request.wrapper == SUMMARY_TEMPLATE
    assert plan.summary_request.wrapper.startswith("<summary>\n{summary}\n</summary>\n\nContinue the task")
    assert plan.summary_request.input_newest_tokens == CrewAI().chunk_budget(state_of(CrewAI(), c, window_for(850)))


def test_a_lone_user_message_is_left_alone() -> None:
    """``_summarize_context_before_llm_call`` returns when the only non-system message is a user message."""
    c = conv(sys("You are a crew agent."), user("x " * 2_000, id="task"))
    assert CrewAI().decide(state_of(CrewAI(), c, window_for(850)), "auto") is None


def test_a_context_length_error_summarises_too() -> None:
    """``handle_context_length``: on the provider's error, summarise (below the threshold too) and call again;
    without ``respect_context_window``, CrewAI raises ``SystemExit``: nothing to retry with."""
    c = chat(*steps(3))
    state = state_of(CrewAI(), c)
    assert CrewAI().decide(state, "auto") is None
    assert CrewAI().decide(state, "overflow") is not None
    off = CrewAI(CrewAIConfig(respect_context_window=False))
    assert off.decide(state, "overflow") is None and off.retry_on_overflow == 0
    assert CrewAI().decide(state, "manual") is None


def test_an_open_thinking_tool_loop_is_summarised_with_the_rest() -> None:
    """CrewAI summarises everything but the system prompt, mid tool loop too; the summary ends the request."""
    loop = [asst("", [call("k0")], thinking="plan", id="k0"), tool("k0", "s" * 400), asst("", [call("k1")], id="k1")]
    c = chat(*steps(12), user("Go on.", id="u2"), *loop, tool("k1", "s" * 400))
    plan = CrewAI().decide(state_of(CrewAI(), c, window_for(850)), "auto")
    assert plan is not None and plan.start == len(c.messages)


def test_a_run_loses_the_task_to_the_summary() -> None:
    """Known deviation ``live-turn``: the user's task is summarised with the rest."""
    c = chat(*steps(12), asst("Report written.", id="done"))
    res = Engine(CrewAI(), c, RunConfig(model=ModelConfig(context_window=1_500, output_reserve=200))).run()
    assert compaction_records(res)
    assert "live-turn" in res.summary["violations_by_invariant"]


def test_a_summarised_change_leaves_its_revert_unresolved() -> None:
    """Known deviation ``revert-resolution``: CrewAI has no reverts."""
    c = chat(asst("edit", [call("e")], parts=[change("ch1")], id="edit"), tool("e", "ok"), *steps(10))
    c = conv(*c.messages, user("Undo the edit.", revert("ch1"), id="undo"), asst("Undone.", id="ok"))
    res = Engine(CrewAI(), c, RunConfig(model=ModelConfig(context_window=1_500, output_reserve=200))).run()
    assert "revert-resolution" in res.summary["violations_by_invariant"]


# -- deferred tool results -----------------------------------------------------------------------------------------
def result(text: str, *, is_error: bool = False) -> Part:
    return Part("tool_result", text, call_id="c1", name="search", is_error=is_error)


def test_a_result_over_a_quarter_of_the_usable_window_is_deferred() -> None:
    """``_prepare_tool_result_for_context``: over ``0.25 * get_context_window_size()`` tokens (its own
    ``(characters + 3) // 4``), the result becomes a reference to a file with a preview of its first 10 lines."""
    policy = CrewAI(CrewAIConfig(usable_window_tokens=1_000))  # deferred over 250 tokens: 1,000 characters
    text = "".join(f"line {i:03d} of the output\n" for i in range(60))  # 1,440 characters
    part = policy.bound_tool_result(result(text))
    assert part.text == deferred_reference(result(text), 1_000) and part.original_bytes == len(text)
    assert "line 009" in part.text and "line 010" not in part.text  # the first 10 lines
    assert "60 lines" in part.text and len(part.text) < len(text)
    at = "x" * 1_000
    assert policy.bound_tool_result(result(at)).text == at  # (1,000 + 3) // 4 = 250: not over
    assert policy.bound_tool_result(result(text, is_error=True)).text == text  # a failure is kept as it is
    off = CrewAI(CrewAIConfig(usable_window_tokens=1_000, use_better_compaction=False))
    assert off.bound_tool_result(result(text)).text == text and off.bound_key() is None


def test_the_preview_is_at_most_2000_characters() -> None:
    """``TOOL_RESULT_PREVIEW_MAX_CHARS``: a preview of long lines is cut at 2,000 characters."""
    text = ("y" * 900 + "\n") * 20
    ref = deferred_reference(result(text), 170_000)
    preview = ("y" * 900 + "\n") * 3
    assert preview[:2_000] + "\n[Preview cut short" in ref and preview[:2_001] not in ref
