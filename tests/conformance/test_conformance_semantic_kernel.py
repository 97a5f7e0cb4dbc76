"""Our Semantic Kernel policy against SK's own ``ChatHistoryTruncationReducer``, case by case
(``conformance/semantic-kernel/``).

The golden file holds what ``semantic-kernel`` (its version inside) kept when ``reduce()`` ran once on each
scripted history (system message included, as an SK ``ChatHistory`` holds it), and whether it reduced. Here the
same history becomes a ``Conversation``, our policy decides on it, and the messages its view sends are compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.base import Plan
from policies.semantic_kernel import (
    SemanticKernelSummarization,
    SemanticKernelSummarizationConfig,
    SemanticKernelTruncation,
    SemanticKernelTruncationConfig,
)
from sim.core.conversation import Conversation
from sim.core.view import Messages, Summary, View, layout
from tests.builders import Draft, asst, call, conv, state_of, sys, tool, user

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "semantic-kernel.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]

# Where we knowingly differ: case -> why. Every other case keeps exactly what SK keeps.
KNOWN: dict[str, str] = {
    "sum-tools-left-out": "with function content left out, SK skips the assistant messages holding calls from the "
    "summariser's input; the engine leaves out only the results, so the calls' messages (a0, a1, ...) are shown",
}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    drafts: list[Draft] = []
    for m in msgs:
        if m.get("summary"):
            continue  # the view's summary (run_case)
        if m["role"] == "system":
            drafts.append(sys(m["text"], id=m["id"]))
        elif m["role"] == "user":
            drafts.append(user(m["text"], id=m["id"]))
        elif m["role"] == "assistant":
            drafts.append(asst(m["text"], [call(c["id"], c["name"], c["args"]) for c in m["calls"]], id=m["id"]))
        else:
            drafts.append(tool(m["call_id"], m["text"], name=m["name"], id=m["id"]))
    return conv(*drafts)


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    s = dict(case["settings"])
    s.pop("use_single_summary", None)  # no difference with a system message (the policy's docstring)
    if case["kind"] == "truncation":
        policy: Any = SemanticKernelTruncation(SemanticKernelTruncationConfig(**s))
    else:
        policy = SemanticKernelSummarization(SemanticKernelSummarizationConfig(**s))
    c = conversation(case["input"])
    prior = next((m for m in case["input"] if m.get("summary")), None)
    view = View(start=1, summary=Summary(prior["text"], through=1, role="assistant")) if prior else None
    state = state_of(policy, c, view=view)
    plan: Plan | None = policy.decide(state, "auto")
    after = plan.view_from(state.view) if plan is not None else state.view
    if plan is not None and plan.summarize:  # the engine puts the new summary in place of the old
        after = after.with_(summary=Summary("FAKE SUMMARY", role=plan.summary_request.role))
    has_system = c.messages[0].role == "system"
    kept: list[str] = []
    for item in layout(after, len(c.messages), has_system):
        if isinstance(item, Messages):
            kept += [c.messages[i].id for i in range(item.a, item.b)]
        elif isinstance(item, Summary):
            new = plan is not None and plan.summarize
            kept.append(f"SUMMARY {item.role}: FAKE SUMMARY" if new else "summary")
    out: dict[str, Any] = {"reduced": plan is not None, "kept": kept}
    if case["kind"] == "summarization":
        shown: list[str] = []
        if plan is not None:
            shown = ["summary"] if prior else []
            for m in c.messages[state.view.start : plan.start]:
                if m.role == "system" or (m.role == "tool" and plan.summary_request.drop_tool_outputs):
                    continue
                shown.append(m.id)
        out["summariser_input"] = shown
    return out


def test_golden_file_names_the_package_and_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["package"] == "semantic-kernel" and golden["version"].count(".") == 2
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours, theirs = run_case(case), case["expected"]
    if case["name"] in KNOWN:
        assert ours != theirs, f"{case['name']} now agrees: drop it from KNOWN"
    else:
        assert ours == theirs


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases keeping what SK keeps, per policy (printed with ``-s``)."""
    lines = []
    for kind in ("truncation", "summarization"):
        cases = [c for c in CASES if c["kind"] == kind]
        agree = sum(1 for c in cases if run_case(c) == c["expected"])
        assert agree + sum(1 for c in cases if c["name"] in KNOWN) == len(cases)
        lines.append(f"semantic-kernel-{kind}: {agree}/{len(cases)} cases agree")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
