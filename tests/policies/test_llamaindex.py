"""The llamaindex-summary-buffer policy (``policies/llamaindex.py``): LlamaIndex's ``ChatSummaryMemoryBuffer``.

Each test names the ``llama-index-core`` 0.14.25 code it checks (``llama_index/core/memory/
chat_summary_memory_buffer.py`` unless it says otherwise). Decisions are driven on a state built with
:func:`tests.builders.state_of`; runs use the engine with the ``chars4`` tokenizer. The conformance suite
(``tests/conformance/test_conformance_llama_index_core.py``) compares the same behaviour with LlamaIndex's own
``get()``.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.llamaindex import (
    SUMMARY_PROMPT,
    LlamaIndexSummaryBuffer,
    LlamaIndexSummaryBufferConfig,
    contents,
)
from sim.core.conversation import Conversation
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Messages, Summary, View, layout
from sim.replay.engine import Engine, RunConfig
from tests.builders import Draft, asst, call, change, compaction_records, conv, revert, state_of, sys, tool, user

MODEL = ModelConfig(context_window=4_000, output_reserve=500)  # token limit 3,000 by default
C4 = RunConfig(model=MODEL, tokenizer="chars4")
ANSWER = "It reads the file, checks each key and reports what is missing. " * 6  # 390 characters: 98 tokens


def turns(n: int, first: int = 0) -> list[Draft]:
    """``n`` user questions each answered in text (ids ``u<k>``, ``a<k>``)."""
    out: list[Draft] = []
    for k in range(first, first + n):
        out += [user(f"Question {k}: what does module {k} do?", id=f"u{k}"), asst(f"Module {k}: {ANSWER}", id=f"a{k}")]
    return out


def loop(tag: str, steps: int, size: int = 400, final: bool = True) -> list[Draft]:
    """An agent run: the user's message, ``steps`` calls without text and their results, and a final reply."""
    out: list[Draft] = [user(f"Task {tag}: fix the parser.", id=f"u{tag}")]
    for s in range(steps):
        out += [asst("", [call(f"c{tag}{s}")], id=f"a{tag}{s}"), tool(f"c{tag}{s}", "r" * size, id=f"t{tag}{s}")]
    if final:
        out.append(asst(f"Done with {tag}.", id=f"f{tag}"))
    return out


def chat(*drafts: Draft) -> Conversation:
    return conv(sys("You are an agent.", id="sys"), *drafts)


def tokens(c: Conversation, ids: list[str]) -> int:
    """The policy's count of the named messages (a quarter of each content, rounded up)."""
    policy = LlamaIndexSummaryBuffer()
    return sum(policy.tokens(t) for m in c.messages if m.id in ids for t in contents(m))


def limited(limit: int, **kw: object) -> LlamaIndexSummaryBuffer:
    return LlamaIndexSummaryBuffer(LlamaIndexSummaryBufferConfig(token_limit=limit, **kw))  # type: ignore[arg-type]


def after(policy: LlamaIndexSummaryBuffer, c: Conversation, view: View | None = None) -> list[str]:
    """Ids of what the policy sends for the whole of ``c``: ``SUMMARY`` for a new summary, ``summary`` for one kept."""
    state = state_of(policy, c, MODEL, view=view)
    plan = policy.decide(state, "auto")
    v = plan.view_from(state.view) if plan is not None else state.view
    out = ["SUMMARY"] if plan is not None and plan.summarize else ["summary"] if v.summary is not None else []
    for item in layout(v, len(c.messages), True):
        if isinstance(item, Messages):
            out += [c.messages[i].id for i in range(item.a, item.b) if i > 0]
    return out


# -- configuration -----------------------------------------------------------------------------------------------
def test_defaults() -> None:
    """``from_defaults(llm=...)``: ``int(llm.metadata.context_window * DEFAULT_TOKEN_LIMIT_RATIO)``, 0.75."""
    policy = LlamaIndexSummaryBuffer()
    cfg = policy.config
    assert (cfg.token_limit, cfg.token_limit_ratio, cfg.count_initial_tokens, cfg.summarize) == (
        None,
        0.75,
        False,
        True,
    )
    assert policy.limit(state_of(policy, chat(*turns(1)), MODEL)) == 3_000  # of the window, not the input budget
    assert policy.when == frozenset({"user_turn", "response"})


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"token_limit": "0"}, "token_limit=0"),
        ({"token_limit_ratio": "1.5"}, "token_limit_ratio"),
        ({"chars_per_token": "0"}, "chars_per_token"),
    ],
)
def test_bad_configs_raise(params: dict[str, str], says: str) -> None:
    """``validate_memory``: "Token limit for full-text messages must be set and greater than 0"."""
    with pytest.raises(InvalidConfig, match=says):
        make_policy("llamaindex-summary-buffer", params)


def test_content_counts_text_blocks_only() -> None:
    """``_token_count_for_messages``: ``str(m.content)``; a message without text blocks counts ``"None"``; tool
    calls and thinking are not text blocks; each result of a tool message is a ChatMessage of its own."""
    c = chat(
        user("hi", id="u"),
        asst("", [call("c1"), call("c2")], thinking="hmm", id="a"),
        Draft("tool", tool("c1", "one").parts + tool("c2", "three").parts, "t"),
    )
    assert [contents(m) for m in c.messages[1:]] == [["hi"], ["None"], ["one", "three"]]


# -- when it triggers ----------------------------------------------------------------------------------------------
def test_at_the_limit_everything_stays() -> None:
    """The walk keeps a message while ``count + its tokens <= token_limit``: exactly at the limit, all fit."""
    c = chat(*turns(4), user("And module 9?", id="next"))
    total = tokens(c, [m.id for m in c.messages[1:]])
    assert after(limited(total), c) == [m.id for m in c.messages[1:]]
    assert limited(total).decide(state_of(limited(total), c, MODEL), "auto") is None


def test_one_token_over_the_limit_summarises_the_oldest_turn() -> None:
    """One token short: the walk stops at the oldest message; the kept part would start on ``a0``, an assistant
    message, which moves to the summarised side with it (``_handle_assistant_and_tool_messages``)."""
    c = chat(*turns(4), user("And module 9?", id="next"))
    total = tokens(c, [m.id for m in c.messages[1:]])
    assert after(limited(total - 1), c) == ["SUMMARY", "u1", "a1", "u2", "a2", "u3", "a3", "next"]


def test_the_view_after_a_summary() -> None:
    """``get()`` returns ``[summary, *full_text]``: one summary of everything older, in front; the summariser is
    asked to write a concise summary of the conversation (our wording of ``SUMMARIZE_PROMPT``)."""
    c = chat(*turns(6), user("And module 9?", id="next"))
    limit = tokens(c, ["u4", "a4", "u5", "a5", "next"]) + 10
    policy = limited(limit)
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    assert plan is not None and plan.summarize and plan.start == c.index()["u4"]
    assert plan.summary_request.prompt == SUMMARY_PROMPT and plan.summary_request.wrapper == "{summary}"
    assert plan.summary_request.role == "user"  # LlamaIndex: a system message (see the module's differences)
    assert plan.spans == () and plan.edits is None


def test_a_walk_stopping_inside_a_tool_loop_keeps_from_the_next_user_message() -> None:
    """The verbatim part may not start with an assistant or tool message: the rest of the interrupted run goes to the
    summary too, so the kept part starts with the next run's user message."""
    c = chat(*loop("A", 3), *loop("B", 3), user("Now the CLI.", id="next"))
    keep = ["tB1", "aB2", "tB2", "fB", "next"]
    assert after(limited(tokens(c, keep) + 5), c) == ["SUMMARY", "next"]
    assert after(limited(tokens(c, ["uB", "aB0", "tB0", *keep[1:], "aB1", "tB1"]) + 5), c)[:2] == ["SUMMARY", "uB"]


def test_not_asked_inside_a_tool_loop() -> None:
    """Agent workflows call ``memory.aget()`` at a run's start and after ``finalize``; the tool loop lives in a
    scratchpad outside the memory (``function_agent.py``), so nothing is compacted mid-loop."""
    policy = limited(50)
    c = chat(*loop("A", 3), *loop("B", 3, final=False))  # ends on a tool result
    assert policy.decide(state_of(policy, c, MODEL), "auto") is None
    c = chat(*loop("A", 3), *loop("B", 3, final=False), asst("", [call("more")], id="more"))  # ends on a call
    assert policy.decide(state_of(policy, c, MODEL), "auto") is None
    assert policy.asked_at(state_of(policy, c, MODEL), "request") is False


def test_asked_again_at_the_end_of_a_run() -> None:
    """``finalize`` puts the scratchpad into the memory and ``get()`` runs again: a final reply (no tool calls) is
    a point where the memory compacts, before the next user message arrives."""
    policy = limited(600)
    c = chat(*loop("A", 3), *loop("B", 3))
    state = state_of(policy, c, MODEL)
    assert policy.asked_at(state, "response")
    plan = policy.decide(state, "auto")
    assert plan is not None and c.messages[plan.start].id == "uB"


def test_the_last_user_message_stays() -> None:
    """Our difference: at the end of a run over the limit, LlamaIndex summarises the whole run (its kept part holds
    no user message); the harness keeps the run's user message and what follows."""
    policy = limited(150)
    c = chat(*loop("A", 3), *loop("B", 3))
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    assert plan is not None and c.messages[plan.start].id == "uB"


def test_an_earlier_summary_that_alone_does_not_fit_stays_as_it_is() -> None:
    """``_summarize_oldest_chat_history``: "Only summarize if there is new information": with only the previous
    summary left over, it is returned unchanged and no LLM call is made."""
    c = chat(*turns(3), user("And module 9?", id="next"))
    earlier = View(start=1, summary=Summary("The user asked about modules 0 to 4. " * 20, through=1))
    policy = limited(tokens(c, [m.id for m in c.messages[1:]]))
    assert after(policy, c, earlier) == ["summary", "u0", "a0", "u1", "a1", "u2", "a2", "next"]


def test_an_earlier_summary_is_summarised_again_with_the_overflow() -> None:
    """The summary is the store's first message: when the walk stops later, it is summarised with the rest."""
    c = chat(*turns(3), user("And module 9?", id="next"))
    earlier = View(start=1, summary=Summary("The user asked about modules 0 to 4.", through=1))
    assert after(limited(tokens(c, ["u1", "a1", "u2", "a2", "next"])), c, earlier) == [
        "SUMMARY",
        "u1",
        "a1",
        "u2",
        "a2",
        "next",
    ]


def test_count_initial_tokens_counts_the_system_prompt_first() -> None:
    """``count_initial_tokens``: the walk starts from ``initial_token_count`` (here the system prompt's tokens)."""
    c = conv(sys("S" * 400, id="sys"), *turns(4), user("And module 9?", id="next"))
    limit = tokens(c, ["u1", "a1", "u2", "a2", "u3", "a3", "next"])
    assert after(limited(limit), c)[:2] == ["SUMMARY", "u1"]
    assert after(limited(limit, count_initial_tokens=True), c)[:2] == ["SUMMARY", "u2"]


def test_without_an_llm_what_does_not_fit_is_dropped() -> None:
    """``get()``: ``if self.llm is None ...: updated_history = chat_history_full_text``."""
    c = chat(*turns(4), user("And module 9?", id="next"))
    policy = limited(tokens(c, ["u2", "a2", "u3", "a3", "next"]), summarize=False)
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    assert plan is not None and not plan.summarize and plan.mode == "drop"
    assert after(policy, c) == ["u2", "a2", "u3", "a3", "next"]


def test_a_summary_that_would_not_shrink_the_view_is_skipped() -> None:
    """Our difference: a one-message overflow is shorter than any summary; LlamaIndex writes it anyway."""
    c = chat(user("hi", id="u0"), asst("hello", id="a0"), *turns(2, 1), user("And module 9?", id="next"))
    policy = limited(tokens(c, ["u1", "a1", "u2", "a2", "next"]))
    assert policy.split(state_of(policy, c, MODEL)) == c.index()["u1"]
    assert policy.decide(state_of(policy, c, MODEL), "auto") is None


def test_a_pending_turn_is_not_summarised() -> None:
    """Our addition: nothing of an unresolved pending turn is summarised (the harness's contract)."""
    c = chat(*turns(2), user("Deploy it.", id="u9"), asst("May I deploy?", id="ask", pending=True), *turns(3, 3))
    policy = limited(200)
    plan = policy.decide(state_of(policy, c, MODEL), "auto")
    assert plan is not None and plan.start == c.index()["u9"]


def test_manual_and_overflow_do_nothing() -> None:
    """LlamaIndex has no ``/compact`` and no compact-and-retry on a provider error."""
    c = chat(*turns(6), user("And module 9?", id="next"))
    policy = limited(100)
    state = state_of(policy, c, MODEL)
    assert policy.decide(state, "manual") is None and policy.decide(state, "overflow") is None
    assert policy.retry_on_overflow == 0


# -- runs ----------------------------------------------------------------------------------------------------------
def test_a_run_compacts_only_at_run_boundaries_and_keeps_turns_whole() -> None:
    """Compactions happen before a run's first model call or after its final reply; each kept part starts on a user
    message; the summary is regenerated (one summary, in front)."""
    drafts: list[Draft] = []
    for k in range(8):
        drafts += loop(f"R{k}", 3, size=600)
    c = chat(*drafts)
    res = Engine(limited(900), c, C4).run()
    records = compaction_records(res)
    assert len(records) >= 4
    for r in records:
        assert c.messages[r.view.start].role == "user" and r.view.summary is not None and r.view.spans == ()
    assert res.violations == []


def test_a_change_whose_revert_stays_is_summarised() -> None:
    """Known deviation ``revert-resolution``: LlamaIndex has no reverts; the change is summarised like any message."""
    first = [user("Task A: fix the parser.", change("ch1", "edit a.py"), id="uA"), asst("Edited a.py.", id="fA")]
    c = chat(*first, *turns(3), user("Undo the parser edit.", revert("ch1"), id="undo"), asst("Reverted.", id="ok"))
    res = Engine(limited(320), c, C4).run()
    assert compaction_records(res)
    assert "revert-resolution" in res.summary["violations_by_invariant"]
