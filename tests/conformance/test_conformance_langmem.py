"""Our LangMem policy against ``langmem.short_term.summarize_messages``, case by case (``conformance/langmem/``).

The golden file holds what ``langmem`` (its version inside) returned for each scripted history, with a fake chat
model as the summariser and a token counter that counts what the policy counts: the messages returned for the LLM,
in order (``SUMMARY`` for a new summary message, ``summary`` for the running one passed in), and whether the model
was called. Here the same history becomes a ``Conversation`` (a case without a system message gets none); a running
summary becomes the view's summary, with the messages it covers out of the view; our policy decides once, and the
view it leaves is compared, message by message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.langmem import SUMMARY_WRAPPER, LangMem, LangMemConfig
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.view import Messages, Summary, View, layout
from tests.builders import case_conversation, state_of
from tests.conformance.agreement import judge

GOLDEN_PATH = Path(__file__).parents[1] / "golden" / "conformance" / "langmem.json"
GOLDEN: dict[str, Any] = json.loads(GOLDEN_PATH.read_text())
CASES: list[dict[str, Any]] = GOLDEN["cases"]

# Where we knowingly differ: case -> why. Every other case returns exactly what LangMem returns.
KNOWN: dict[str, str] = {
    "batch-cut-inside": "the cut lands among a parallel batch's ToolMessages: LangMem leaves the batch's other results "
    "without their call (a provider rejects that); ours moves past them",
}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    return case_conversation(msgs)


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    policy = LangMem(LangMemConfig(**case["settings"]))
    c = conversation(case["input"])
    view = None
    if case["summarised_through"] is not None:
        start = c.index()[case["summarised_through"]] + 1
        view = View(start=start, summary=Summary(SUMMARY_WRAPPER.format(summary=case["summary"]), through=start))
    has_system = c.messages[0].role == "system"
    state = state_of(policy, c, ModelConfig(), view=view)
    plan = policy.decide(state, "auto")
    after = plan.view_from(state.view) if plan is not None else state.view
    sent = ["system"] if has_system else []
    if plan is not None:
        sent.append("SUMMARY")
    elif after.summary is not None:
        sent.append("summary")
    for item in layout(after, len(c.messages), has_system):
        if isinstance(item, Messages):
            sent += [c.messages[i].id for i in range(item.a, item.b) if not (has_system and i == 0)]
    return {"view": sent, "summarised": plan is not None}


def test_golden_file_names_the_package_and_version() -> None:
    assert GOLDEN["package"] == "langmem" and GOLDEN["version"].count(".") == 2
    assert len(CASES) >= 15
    assert {c["expected"]["summarised"] for c in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours = run_case(case)
    judge(case["name"], ours, case["expected"], KNOWN)


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases returning what LangMem returns (printed with ``-s``)."""
    agree = sum(1 for c in CASES if run_case(c) == c["expected"])
    assert agree + len(KNOWN) == len(CASES)
    with capsys.disabled():
        print(f"\nlangmem: {agree}/{len(CASES)} cases agree")
