"""Our LlamaIndex policy against ``ChatSummaryMemoryBuffer.get()``, case by case (``conformance/llama-index-core/``).

The golden file holds what ``llama-index-core`` (its version inside) returned from ``get()`` on each scripted chat
store, with its own ``MockLLM`` as the summariser and a tokenizer that counts a quarter of the characters: the
messages returned, in order (``SUMMARY`` for a new summary, ``summary`` for an earlier one it kept), and whether the
LLM was called. Here the same messages become a ``Conversation`` after the agent's system prompt (kept apart from
the memory by LlamaIndex's agents); an earlier summary in the store becomes the view's summary; our policy decides
once, and the view it leaves is compared, message by message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.helpers import smallest_summary_chars
from policies.llamaindex import LlamaIndexSummaryBuffer, LlamaIndexSummaryBufferConfig
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.view import Messages, Summary, View, layout
from tests.builders import case_conversation, state_of
from tests.conformance import long
from tests.conformance.agreement import judge

GOLDEN_PATH = Path(__file__).parents[1] / "golden" / "conformance" / "llama-index-core.json"
GOLDEN: dict[str, Any] = json.loads(GOLDEN_PATH.read_text())
CASES: list[dict[str, Any]] = GOLDEN["cases"]
MOCK_WINDOW = 3_900  # MockLLM's metadata: llama_index.core.constants.DEFAULT_CONTEXT_WINDOW

# Where we knowingly differ: case -> why. Every other case returns exactly what LlamaIndex returns.
KNOWN: dict[str, str] = {
    "runs-end-of-run-turn-over-limit": "the run's user message stays in view (the harness's contract); LlamaIndex "
    "summarises the whole run when it is over the limit",
    "user-message-over-the-limit": "the user's message stays in view; LlamaIndex summarises it when it alone is over "
    "the limit",
}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    # its system messages are the summary the view holds (run_case), not messages of the log
    return case_conversation([m for m in msgs if m["role"] != "system"], GOLDEN["system"])


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    s = case["settings"]
    cfg = LlamaIndexSummaryBufferConfig(
        token_limit=None if s["default_limit"] else s["token_limit"],  # None: 0.75 of the model's window
        count_initial_tokens=s.get("count_initial_tokens", False),
        summarize=s.get("llm", True),
    )
    policy = LlamaIndexSummaryBuffer(cfg)
    msgs = case["input"]
    earlier = msgs[0]["text"] if msgs and msgs[0]["role"] == "system" else None
    c = conversation(msgs)
    view = View(start=1, summary=Summary(earlier, through=1)) if earlier is not None else None
    state = state_of(policy, c, ModelConfig(context_window=MOCK_WINDOW, output_reserve=1), view=view)
    plan = policy.decide(state, "auto")
    after = plan.view_from(state.view) if plan is not None else state.view
    sent: list[str] = []
    if plan is not None and plan.summarize:
        sent.append("SUMMARY")
    elif after.summary is not None:
        sent.append("summary")
    for item in layout(after, len(c.messages), True):
        if isinstance(item, Messages):
            sent += [c.messages[i].id for i in range(item.a, item.b) if i > 0]
    return {"view": sent, "summarised": plan is not None and plan.summarize}


def test_golden_file_names_the_package_and_version() -> None:
    assert GOLDEN["package"] == "llama-index-core" and GOLDEN["version"].count(".") == 2
    assert len(CASES) >= 20
    assert {c["expected"]["summarised"] for c in CASES} == {True, False}


def test_the_default_limit_is_three_quarters_of_the_window() -> None:
    """``from_defaults(llm=...)``: ``int(context_window * DEFAULT_TOKEN_LIMIT_RATIO)``; MockLLM's window is 3,900."""
    defaults = [c for c in CASES if c["settings"]["default_limit"]]
    assert defaults and all(c["settings"]["token_limit"] == 2_925 for c in defaults)
    c = conversation(defaults[0]["input"])
    state = state_of(LlamaIndexSummaryBuffer(), c, ModelConfig(context_window=MOCK_WINDOW, output_reserve=1))
    assert LlamaIndexSummaryBuffer().limit(state) == 2_925


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours = run_case(case)
    judge(case["name"], ours, case["expected"], KNOWN)


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases returning what LlamaIndex returns (printed with ``-s``)."""
    agree = sum(1 for c in CASES if run_case(c) == c["expected"])
    assert agree + len(KNOWN) == len(CASES)
    with capsys.disabled():
        print(f"\nllamaindex-summary-buffer: {agree}/{len(CASES)} cases agree")


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG: list[dict[str, Any]] = GOLDEN["long"]


def long_decisions(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Our policy at every point the engine asks it (after a user message; after a reply without tool calls), each
    decision made on the memory's own state: a summary and the messages it kept at the previous ``get()``, then every
    message put since. The summary is as long as the shortest one the engine's mock summariser writes (a run's view
    holds such a summary; LlamaIndex's decision does not depend on its summary's length, as the walk reaches it last,
    but our ``plan_shrinks`` weighs the new summary against it). Per point: whether we summarise, and the first
    message kept verbatim. Also each decision's class of difference (``""`` where none is documented):
    ``last-user``, where LlamaIndex summarises the last user message (the run's turn alone is over the limit: the
    hand-made ``runs-end-of-run-turn-over-limit``) and the verbatim part we keep starts at it. (With LlamaIndex's own
    eight-word summary in the view instead, a quarter of support-0's get() calls differ, 108 and 95 of 400: there
    LlamaIndex summarises the few messages over the limit at each call, and our ``plan_shrinks`` refuses a summary of
    ours, charged at 1.5 times the shortest the mock summariser writes, in place of them and the eight words.)"""
    c = long.to_conversation(long.by_name(entry["conversation"]))
    policy = LlamaIndexSummaryBuffer(LlamaIndexSummaryBufferConfig(token_limit=entry["token_limit"]))
    index = {m.id: k for k, m in enumerate(c.messages)}
    view, out, classes = View(start=1), [], []
    for d in entry["decisions"]:
        k = index[d["at"]]
        prefix = Conversation(c.id, c.messages[: k + 1])
        state = state_of(policy, prefix, view=view)
        assert policy.asked_at(state, "request" if d["point"] == "user_turn" else "response")
        plan = policy.decide(state, "auto")
        start = plan.start if plan is not None else view.start
        out.append(
            {
                "at": d["at"],
                "point": d["point"],
                "summarised": plan is not None and plan.summarize,
                "kept_from": prefix.messages[start].id if start <= k else None,
            }
        )
        theirs_start = index[d["kept_from"]] if d["kept_from"] is not None else k + 1
        lu = state.last_user_index
        classes.append("last-user" if out[-1]["kept_from"] == prefix.messages[lu].id and lu < theirs_start else "")
        if d["summarised"]:
            summary = Summary("s" * smallest_summary_chars(state), through=theirs_start)
            view = View(start=theirs_start, summary=summary)
    return out, classes


@pytest.mark.parametrize("entry", LONG, ids=[f"{e['conversation']}-{e['token_limit']}" for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every ``get()`` of a long conversation: the same decision as ``ChatSummaryMemoryBuffer`` (summarised, and the
    first message kept verbatim), or a documented ``last-user``."""
    ours, classes = long_decisions(entry)
    theirs = entry["decisions"]
    assert sum(d["summarised"] for d in theirs) >= 3
    share = long.agreement(ours, theirs)
    differ = [k for k, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    undocumented = [(ours[k], theirs[k]) for k in differ if not classes[k]]
    with capsys.disabled():
        print(
            f"\nllama-index-core {entry['conversation']} token_limit {entry['token_limit']}: {share:.1%} of "
            f"{len(ours)} get() calls agree, {1 - len(undocumented) / len(ours):.1%} with documented differences "
            f"({', '.join(classes[k] for k in differ) or 'none'})"
        )
    assert not undocumented, f"{len(undocumented)} undocumented differences (ours, theirs): {undocumented[:3]}"
