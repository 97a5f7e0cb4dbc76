"""Our ``vercel-prune-messages`` against the Vercel AI SDK's own ``pruneMessages``, case by case (``conformance/ai/``).

The golden file holds what the npm package ``ai`` (its version inside) returned from ``pruneMessages`` on each
scripted message list: the messages sent, in order, each with its parts (``reasoning``, ``text``,
``tool-call:<id>``, ``tool-result:<id>``). Here the same list becomes a ``Conversation`` after a system prompt (the
AI SDK takes the system prompt apart, as its ``system`` option), our policy decides on it once, and the view it
leaves is written the same way (consecutive tool messages joined into one, as the SDK holds a step's results) and
compared, message by message and part by part.

The ``long`` section: ``pruneMessages`` before every model call of each long conversation of ``conformance/long/``
(three settings: the reference page's example, the window a quarter of the conversation's messages, the array form
for its most called tool), each call's returned list digested; ours decides on the same history and its sent list is
digested alike (``test_long_decisions``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from policies.vercel_ai import VercelPruneMessages, VercelPruneMessagesConfig
from sim.core.conversation import Conversation, Part
from sim.core.view import Messages, edited, layout
from tests.builders import state_of
from tests.conformance import long

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "ai.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]

# Where we knowingly differ: case -> why. Every other case sends exactly what the AI SDK sends.
KNOWN: dict[str, str] = {
    "empty-messages-kept": "emptyMessages: 'keep' sends a tool message and an assistant message emptied by the pruning "
    "with no content; the view never sends a message without parts, so the policy models 'remove' only",
}

KINDS = {"thinking": "reasoning", "text": "text", "tool_call": "tool-call", "tool_result": "tool-result"}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    return long.to_conversation({"system": "You are a coding agent.", "messages": msgs})


def config_for(settings: dict[str, Any]) -> VercelPruneMessagesConfig:
    """The SDK's options as our config; an option left out takes the function's default (not the policy's).
    ``emptyMessages`` has no counterpart: the policy always removes emptied messages (see ``KNOWN``)."""
    tool_calls: Any = settings.get("toolCalls", "none")
    tools = None
    if isinstance(tool_calls, list):
        [entry] = tool_calls or [{"type": "none"}]
        tool_calls, tools = entry["type"], entry.get("tools")
    return VercelPruneMessagesConfig(
        reasoning=settings.get("reasoning", "none"),
        tool_calls=tool_calls,
        tools=None if tools is None else tuple(tools),
    )


def part_name(p: Part) -> str:
    kind = KINDS[p.kind]
    return f"{kind}:{p.call_id}" if p.call_id else kind


def run_case(case: dict[str, Any]) -> list[dict[str, Any]]:
    """What our policy sends after the system prompt, as the golden file writes it."""
    policy = VercelPruneMessages(config_for(case["settings"]))
    c = conversation(case["input"])
    state = state_of(policy, c)
    plan = policy.decide(state, "auto")
    view = plan.view_from(state.view) if plan is not None else state.view
    sent: list[dict[str, Any]] = []
    for item in layout(view, len(c.messages), True):
        assert isinstance(item, Messages), "pruneMessages adds nothing"
        for i in range(max(item.a, 1), item.b):
            m = edited(c.messages[i], item.rules)
            if m is None:
                continue  # emptyMessages: 'remove'
            parts = [part_name(p) for p in m.parts]
            if m.role == "tool" and sent and sent[-1]["role"] == "tool":
                sent[-1]["parts"] += parts
            else:
                sent.append({"role": m.role, "id": None if m.role == "tool" else m.id, "parts": parts})
    return sent


def test_golden_file_names_the_package_and_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["package"] == "ai" and golden["function"] == "pruneMessages"
    assert (
        golden["version"]
        == json.loads((GOLDEN.parents[3] / "conformance/ai/package.json").read_text())["dependencies"]["ai"]
    )
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours = run_case(case)
    if case["name"] in KNOWN:
        assert ours != case["expected"]["view"], f"{case['name']} now agrees: drop it from KNOWN"
    else:
        assert ours == case["expected"]["view"]


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases sending what the AI SDK sends (printed with ``-s``)."""
    agree = sum(1 for c in CASES if run_case(c) == c["expected"]["view"])
    assert agree + len(KNOWN) == len(CASES)
    with capsys.disabled():
        print(f"\nvercel-prune-messages: {agree}/{len(CASES)} cases agree")


# -- long conversations (conformance/long/), model call by model call ------------------------------------------
LONG = json.loads(GOLDEN.read_text())["long"]


def digest(view: list[dict[str, Any]]) -> dict[str, Any]:
    """A sent list as the generator digests what ``pruneMessages`` returned: messages, parts, a hash of the whole."""
    text = json.dumps(view, sort_keys=True)
    return {
        "messages": len(view),
        "parts": sum(len(m["parts"]) for m in view),
        "view": hashlib.sha256(text.encode()).hexdigest()[:16],
    }


@pytest.mark.parametrize("entry", LONG, ids=[f"{e['conversation']}-{e['run']}" for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Before every model call of a long conversation (``pruneMessages`` in ``prepareStep``, on the whole history so
    far): ours sends exactly the messages and parts the AI SDK returned."""
    conv_ = long.by_name(entry["conversation"])
    msgs = conv_["messages"]
    index = {m["id"]: i for i, m in enumerate(msgs)}
    ours = []
    for d in entry["calls"]:
        sent = run_case({"input": msgs[: index[d["at"]]], "settings": entry["settings"]})
        ours.append({"at": d["at"], "sdk_messages": d["sdk_messages"], **digest(sent)})
    share = long.agreement(ours, entry["calls"])
    with capsys.disabled():
        print(
            f"\nai pruneMessages {entry['conversation']} {entry['run']}: {share:.1%} of {len(ours)} model calls agree"
        )
    assert share == 1.0, [(a, b) for a, b in zip(ours, entry["calls"], strict=True) if a != b][:3]


def test_long_runs_prune() -> None:
    """The long runs exercise the pruning: the returned lists leave tool content out (fewer parts than the history
    holds) at most calls of every run."""
    for e in LONG:
        conv_ = long.by_name(e["conversation"])
        index = {m["id"]: i for i, m in enumerate(conv_["messages"])}
        pruned = 0
        for d in e["calls"]:
            before = conv_["messages"][: index[d["at"]]]
            parts = sum(
                1 if m["role"] == "user" else len(m.get("calls", ())) + len(m.get("results", ())) + bool(m.get("text"))
                for m in before
            )
            pruned += d["parts"] < parts
        assert pruned >= len(e["calls"]) // 2, (e["conversation"], e["run"], pruned)
