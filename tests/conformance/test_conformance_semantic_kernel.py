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

from policies.semantic_kernel import SemanticKernelTruncation, SemanticKernelTruncationConfig
from sim.core.conversation import Conversation
from sim.core.view import Messages, layout
from tests.builders import Draft, asst, call, conv, state_of, sys, tool, user

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "semantic-kernel.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]

# Where we knowingly differ: case -> why. Every other case keeps exactly what SK keeps.
KNOWN: dict[str, str] = {}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    drafts: list[Draft] = []
    for m in msgs:
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
    policy = SemanticKernelTruncation(SemanticKernelTruncationConfig(**case["settings"]))
    c = conversation(case["input"])
    state = state_of(policy, c)
    plan = policy.decide(state, "auto")
    view = plan.view_from(state.view) if plan is not None else state.view
    has_system = c.messages[0].role == "system"
    kept = [
        c.messages[i].id
        for item in layout(view, len(c.messages), has_system)
        if isinstance(item, Messages)
        for i in range(item.a, item.b)
    ]
    return {"reduced": plan is not None, "kept": kept}


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
    """Cases keeping what SK keeps (printed with ``-s``)."""
    agree = sum(1 for c in CASES if run_case(c) == c["expected"])
    assert agree + len(KNOWN) == len(CASES)
    with capsys.disabled():
        print(f"\nsemantic-kernel-truncation: {agree}/{len(CASES)} cases agree")
