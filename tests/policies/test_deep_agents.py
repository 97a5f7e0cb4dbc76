"""The deep-agents policy (``policies/deep_agents.py``): Deep Agents' ``SummarizationMiddleware``.

Each test names the ``deepagents`` code it checks (``libs/deepagents/deepagents/middleware/summarization.py`` at
``23b83ad5``). Decisions are driven on a state built with :func:`tests.builders.state_of`; runs use the engine with
the ``chars4`` tokenizer.
"""

from __future__ import annotations

import json

import pytest

from policies import make_policy
from policies.deep_agents import (
    HISTORY_PATH,
    TRUNCATED_ARGS,
    DeepAgents,
)
from policies.langchain import fraction_tokens
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
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
    thinking_rejection,
    tool,
    user,
)

MODEL = ModelConfig(context_window=10_000, output_reserve=1_000)  # input budget 9,000: trigger 7,650, keep 900


def steps(n: int, size: int = 800, first: int = 0, name: str = "read", args: str = '{"path": "a.py"}') -> list[Draft]:
    out: list[Draft] = []
    for k in range(first, first + n):
        out += [asst(f"step {k}", [call(f"c{k}", name, args)], id=f"a{k}"), tool(f"c{k}", "r" * size, id=f"t{k}")]
    return out


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are a deep agent.", id="sys"), user("Refactor the parser.", id="task"), *drafts)


def test_defaults() -> None:
    """``compute_summarization_defaults`` with a model profile: trigger and truncation at ``("fraction", 0.85)``, keep
    ``("fraction", 0.10)``; ``max_length`` 2,000; LangChain's 4,000-token trim."""
    cfg = DeepAgents().config
    assert (cfg.trigger, cfg.keep, cfg.truncate_trigger, cfg.truncate_keep) == (
        "fraction:0.85",
        "fraction:0.1",
        "fraction:0.85",
        "fraction:0.1",
    )
    assert (cfg.max_arg_length, cfg.trim_tokens_to_summarize) == (2_000, 4_000)
    assert DeepAgents().retry_on_overflow == 1
    with pytest.raises(InvalidConfig):
        make_policy("deep-agents", {"keep": "fraction:2"})


def test_triggers_at_085_of_the_input_budget() -> None:
    """``_should_summarize``: the count (system message included) reaches ``int(max_input_tokens * 0.85)``."""
    c = chat(*steps(40))
    policy = DeepAgents()
    for n in range(10, 40):
        state = state_of(policy, chat(*steps(n)), MODEL)
        if policy.count(state) >= fraction_tokens(state, 0.85):
            below = state_of(policy, chat(*steps(n - 1)), MODEL)
            assert policy.decide(below, "auto") is None
            assert policy.decide(state, "auto") is not None
            break
    else:
        pytest.fail(f"{len(c.messages)} messages never reach the trigger")


def test_keeps_the_newest_tenth_and_names_the_history_file() -> None:
    """The kept messages fit 0.10 of the input budget (LangChain's token keep, the cut moved back to the AI message of
    a tool message); the summary message names ``/conversation_history/{session}.md``; the task stays (our
    difference, as ``langchain-summarization``)."""
    c = chat(*steps(40))
    policy = DeepAgents()
    state = state_of(policy, c, MODEL)
    plan = policy.decide(state, "auto")
    assert plan is not None and plan.summarize and plan.summary_request.role == "user"
    assert c.messages[plan.start].role == "assistant"
    kept = policy.count(state) - policy.count(state_of(policy, conv(*c.messages[: plan.start]), MODEL))
    assert kept <= fraction_tokens(state, 0.1) + 10
    path = HISTORY_PATH.format(session=DeepAgents.session(state))
    assert path.startswith("/conversation_history/session_") and path in plan.summary_request.wrapper
    assert plan.summary_request.wrapper.startswith("You are in the middle of a conversation that has been summarized.")
    assert "<summary>\n{summary}\n</summary>" in plan.summary_request.wrapper
    assert plan.pinned == (c.index()["task"],)


def test_old_write_file_arguments_are_truncated_first() -> None:
    """``_truncate_args``: at the truncation trigger, ``write_file``/``edit_file`` calls before the keep window with a
    string argument over 2,000 characters are shortened; the count is taken again, and under the trigger no summary is
    made."""
    big = json.dumps({"path": "a.py", "content": "x" * 6_000})
    drafts = steps(3, first=0, name="write_file", args=big) + steps(14, first=3)
    c = chat(*drafts)
    policy = DeepAgents()
    state = state_of(policy, c, MODEL)
    assert policy.count(state) >= fraction_tokens(state, 0.85)
    plan = policy.decide(state, "auto")
    assert plan is not None and not plan.summarize and plan.mode == "truncate-args"
    assert plan.edits is not None and plan.edits[-1].rule.text == TRUNCATED_ARGS
    after = plan.view_from(state.view)
    assert policy.count(state, after.edits) < fraction_tokens(state, 0.85)


def test_short_arguments_are_left_alone() -> None:
    """Only arguments over ``max_length`` are truncated: calls of other tools, or with short arguments, stay."""
    c = chat(*steps(40, name="write_file", args='{"path": "a.py", "content": "short"}'))
    policy = DeepAgents()
    state = state_of(policy, c, MODEL)
    assert policy.truncated_edits(state) == state.view.edits
    plan = policy.decide(state, "auto")
    assert plan is not None and plan.summarize


def test_each_string_argument_is_measured_alone() -> None:
    """``_truncate_tool_call`` measures each string argument, not the call's arguments together: an ``edit_file`` call
    whose ``old_string`` and ``new_string`` are 1,200 characters each (2,400 together, each under ``max_length``) is
    not truncated, so at the trigger the middleware summarises (as Deep Agents did on the long ``coding-1-parallel``
    conversation, where such an edit made the policy truncate instead)."""
    args = json.dumps({"file_path": "a.py", "old_string": "o" * 1_200, "new_string": "n" * 1_200})
    assert len(args) > 2_000
    c = chat(*steps(3, first=0, name="edit_file", args=args), *steps(22, first=3))
    policy = DeepAgents()
    state = state_of(policy, c, MODEL)
    assert policy.count(state) >= fraction_tokens(state, 0.85)
    assert policy.truncated_edits(state) == state.view.edits
    plan = policy.decide(state, "auto")
    assert plan is not None and plan.summarize


def test_a_context_length_error_summarises_below_the_trigger() -> None:
    """``wrap_model_call``: a ``ContextOverflowError`` below the trigger falls back to summarising and calls again."""
    c = chat(*steps(12))
    policy = DeepAgents()
    state = state_of(policy, c, MODEL)
    assert policy.decide(state, "auto") is None
    plan = policy.decide(state, "overflow")
    assert plan is not None and plan.summarize
    assert policy.decide(state, "manual") is None


def test_a_run_summarises_and_regenerates() -> None:
    """Each later summary summarises the previous one with the new span (it is the effective list's first message)."""
    res = Engine(DeepAgents(), chat(*steps(80), asst("done")), RunConfig(model=MODEL, tokenizer="chars4")).run()
    records = compaction_records(res)
    assert len(records) >= 2 and all(r.view.summary is not None for r in records)
    assert res.violations == []


def test_a_summarised_change_leaves_its_revert_unresolved() -> None:
    """Known deviation ``revert-resolution``: Deep Agents has no reverts."""
    first = [asst("edit", [call("e0")], parts=[change("ch1", "edit a.py")], id="edit"), tool("e0", "ok", id="te")]
    c = chat(*first, *steps(40), user("Undo the edit.", revert("ch1"), id="undo"), asst("Undone.", id="ok"))
    res = Engine(DeepAgents(), c, RunConfig(model=MODEL, tokenizer="chars4")).run()
    assert "revert-resolution" in res.summary["violations_by_invariant"]


def test_a_live_thinking_tool_loop_may_be_cut_inside() -> None:
    """Known deviation ``atomic-units``: LangChain's cut keeps an AI message with its tool messages, nothing more, so
    inside the live loop it drops the reply whose thinking opened it; Anthropic rejects the kept replies' request."""
    loop: list[Draft] = []
    for k in range(40):
        loop += [asst("", [call(f"k{k}")], thinking="plan" if k == 0 else None, id=f"k{k}"), tool(f"k{k}", "r" * 800)]
    c = chat(*loop)
    plan = DeepAgents().decide(state_of(DeepAgents(), c, MODEL), "auto")
    assert plan is not None and plan.start > c.index()["k0"]
    assert thinking_rejection(DeepAgents(), c, plan, MODEL) is not None
