"""Our ``strands-*`` policies against Strands Agents' own conversation managers (``conformance/strands-agents/``).

The golden file holds, for each scripted history, the messages a manager left (``summary`` for its summary), which
had tool results truncated, and the error it raised. Here the same history is a conversation after a system prompt;
``after-invocation`` cases get the next user message too (our policy applies the window at the next invocation's
first request, as ``apply_management`` ran before it), ``overflow`` cases ask the policy after a provider overflow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.strands import (
    StrandsSlidingWindow,
    StrandsSlidingWindowConfig,
    StrandsSummarizing,
    StrandsSummarizingConfig,
)
from sim.core.conversation import Conversation
from sim.core.view import Messages, Summary, View, edit_parts, layout
from tests.builders import case_conversation, conv, state_of, user
from tests.conformance import long
from tests.conformance.agreement import judge

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "strands-agents.json"
DOC = json.loads(GOLDEN.read_text())
CASES: list[dict[str, Any]] = DOC["cases"]
# Where we knowingly differ: case -> why.
KNOWN: dict[str, str] = {
    "summarizing-split-moves-past-results": "not-shrinking: the five messages summarised are shorter than the "
    "smallest summary the mock summariser writes, so our plan_shrinks refuses it (Strands writes it anyway); the "
    "split itself (moved past nothing here, at a1 whose results follow) is Strands'",
}


def ours(case: dict[str, Any]) -> dict[str, Any]:
    s = case["settings"]
    if case["manager"] == "sliding":
        pol: Any = StrandsSlidingWindow(StrandsSlidingWindowConfig(**s))
    else:
        pol = StrandsSummarizing(StrandsSummarizingConfig(**s))
    c = case_conversation(case["input"], "You are a Strands agent.")
    after = case["point"] == "after-invocation"
    if after:
        c = conv(*c.messages, user("next", id="next"))
    st = state_of(pol, c)
    plan = pol.decide(st, "auto" if after else "overflow")
    view = (
        st.view
        if plan is None
        else plan.view_from(st.view).with_(summary=Summary("SUMMARY") if plan.summarize else None)
    )
    sent: list[str] = []
    truncated: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Summary):
            sent.append("summary")
        elif isinstance(item, Messages):
            for i in range(item.a, item.b):
                m = c.messages[i]
                sent.append(m.id)
                shown = edit_parts(m, item.rules)
                if any(
                    p is not None and q.kind == "tool_result" and p.text != q.text
                    for p, q in zip(shown, m.parts, strict=True)
                ):
                    truncated.append(m.id)
    sent = [x for x in sent if x not in ("system", "next")]
    error = None
    if plan is None and case["point"] == "overflow":
        error = "Cannot summarize: insufficient messages for summarization"
    return {"messages": sent, "truncated": truncated, "error": error}


def test_golden_file_names_the_package_and_version() -> None:
    assert DOC["package"] == "strands-agents" and DOC["version"] == "1.62.0"
    assert {c["manager"] for c in CASES} == {"sliding", "summarizing"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    judge(case["name"], ours(case), case["expected"], KNOWN)


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG = DOC["long"]


@pytest.mark.parametrize("entry", LONG, ids=[e["conversation"] for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """After every invocation of a long conversation (the log holding a tool message per result, Strands a batch's
    results as one message): the first message the sliding window leaves, ours decided on Strands' own previous state
    (the view starts where Strands' history started)."""
    c = long.to_conversation(long.by_name(entry["conversation"]))
    index = {m.id: i for i, m in enumerate(c.messages)}
    pol = StrandsSlidingWindow()
    start, agree = 1, 0
    for d in entry["decisions"]:
        k = index[d["at"]]
        prefix = Conversation(c.id, c.messages[: k + 1])
        st = state_of(pol, prefix, view=View(start=start))
        plan = pol.decide(st, "auto")
        first = prefix.messages[plan.start if plan is not None else start].id
        agree += first == d["first"]
        start = index[d["first"]] if d["first"] is not None else start
    n = len(entry["decisions"])
    with capsys.disabled():
        print(f"\nstrands-agents sliding {entry['conversation']}: {agree / n:.1%} of {n} invocations agree")
    assert agree == n
