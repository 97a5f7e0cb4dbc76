"""Our AutoGen policies against AutoGen's own model contexts, case by case (``conformance/autogen-core/``).

The golden file holds what ``autogen-core`` (its version inside) returned from ``get_messages()`` of a
``BufferedChatCompletionContext``, ``HeadAndTailChatCompletionContext`` or ``TokenLimitedChatCompletionContext``
holding each scripted message list: the messages sent, in order, with the "Skipped n messages." placeholder where
AutoGen put it. Here the same list becomes a ``Conversation`` after a system prompt (the agent keeps its system
message apart from the context), our policy decides on it, and the view it leaves is compared, message by message.

The token-limited context counted with an offline client that counts what the engine counts with ``chars4``
(``generate.py``), so our count must equal the recorded one exactly, and the cases test AutoGen's loop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.autogen import (
    AutoGenBuffered,
    AutoGenBufferedConfig,
    AutoGenHeadAndTail,
    AutoGenHeadAndTailConfig,
    AutoGenTokenLimited,
    AutoGenTokenLimitedConfig,
)
from policies.base import Policy
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.view import Injected, Messages, layout
from tests.builders import case_conversation, state_of

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "autogen-core.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]

# Where we knowingly differ: case -> why. Every other case sends exactly what AutoGen sends.
KNOWN: dict[str, str] = {}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    return case_conversation(msgs, "You are a coding agent.")


def policy_for(case: dict[str, Any]) -> Policy[Any]:
    s = case["settings"]
    if case["kind"] == "buffered":
        return AutoGenBuffered(AutoGenBufferedConfig(**s))
    if case["kind"] == "head_and_tail":
        return AutoGenHeadAndTail(AutoGenHeadAndTailConfig(**s))
    return AutoGenTokenLimited(AutoGenTokenLimitedConfig(token_limit=s.get("token_limit")))


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """What our policy sends after the system prompt, as the golden file writes it; and our count."""
    policy = policy_for(case)
    c = conversation(case["input"])
    window = case["settings"].get("window")  # the fake client's limit: the model's window
    model = ModelConfig(context_window=window, output_reserve=1) if window else ModelConfig()
    state = state_of(policy, c, model)
    plan = policy.decide(state, "auto")
    view = plan.view_from(state.view) if plan is not None else state.view
    sent: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Messages):
            sent += [c.messages[i].id for i in range(item.a, item.b) if i > 0]
        elif isinstance(item, Injected):
            sent.append(f"INJECTED UserMessage: {item.text}" if item.role == "user" else item.text)
    tokens = AutoGenTokenLimited().context_tokens(state, state.view)
    return {"view": sent, "tokens": tokens}


def test_golden_file_names_the_package_and_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["package"] == "autogen-core" and golden["version"].count(".") == 2
    assert {c["kind"] for c in CASES} == {"buffered", "head_and_tail", "token_limited"}
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours = run_case(case)
    assert ours["tokens"] == case["expected"]["tokens"], "the offline client's count is the engine's chars4 count"
    if case["name"] in KNOWN:
        assert ours["view"] != case["expected"]["view"], f"{case['name']} now agrees: drop it from KNOWN"
    else:
        assert ours["view"] == case["expected"]["view"]


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases sending what AutoGen sends, per policy (printed with ``-s``)."""
    lines = []
    for kind, name in (
        ("buffered", "autogen-buffered"),
        ("head_and_tail", "autogen-head-and-tail"),
        ("token_limited", "autogen-token-limited"),
    ):
        cases = [c for c in CASES if c["kind"] == kind]
        agree = sum(1 for c in cases if run_case(c)["view"] == c["expected"]["view"])
        lines.append(f"{name}: {agree}/{len(cases)} cases agree")
        assert agree + sum(1 for c in cases if c["name"] in KNOWN) == len(cases)
    with capsys.disabled():
        print("\n" + "\n".join(lines))
