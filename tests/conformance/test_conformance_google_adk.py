"""Our ADK policies against Google ADK's own event compaction, case by case (``conformance/google-adk/``).

The golden file holds what ``google-adk`` (its version inside) did when each scripted session was replayed through
its own compaction functions: every compaction (at which message, the first and last event summarised, whether the
previous summary was the seed) and the request contents at the end (event ids and summaries, in order). Here the
same events become a ``Conversation`` after a system prompt; our policy is asked before each model call, as the
engine asks it, and each plan is applied with a stand-in summary of the same text, so the comparison covers the
selection logic: when, which range, which summaries survive, what is sent.

Where ADK compacts after an invocation, before the next user message is appended, ours decides at the next
invocation's first model call with that message excluded; the test files such a compaction under the user
message, as the golden file does.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from policies.adk import ADKCompaction, ADKConfig, ranges_of
from sim.core.conversation import Conversation
from sim.core.view import Injected, Messages, Summary, View, layout
from tests.builders import case_conversation, state_of
from tests.conformance.agreement import judge

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "google-adk.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]
FIELDS = ("compaction_interval", "overlap_size", "token_threshold", "event_retention_size")

# Where we knowingly differ: case -> why. Every other case compacts and sends exactly what ADK does.
KNOWN: dict[str, str] = {}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    return case_conversation(msgs, "You are a travel agent.")


def replay(case: dict[str, Any]) -> dict[str, Any]:
    """Our policy over the case's session: each compaction as the golden file records it, and the contents sent
    at the end."""
    settings = case["settings"]
    policy = ADKCompaction(ADKConfig(**{k: settings[k] for k in FIELDS if k in settings}))
    msgs = case["input"]
    full = conversation(msgs)
    chars = settings.get("summary_chars", 2)
    view = View()
    compactions: list[dict[str, Any]] = []
    last_at = -1  # index (in ``msgs``) of the message before which the newest compaction happened
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        prefix = Conversation(full.id, full.messages[: i + 1])
        usage = [j for j in range(i) if msgs[j]["role"] == "assistant" and msgs[j].get("usage") is not None]
        # ADK reads the newest reported count that came after the newest compaction; else it estimates.
        context = msgs[usage[-1]]["usage"] if usage and usage[-1] >= last_at else None
        state = state_of(policy, prefix, view=view, context=context)
        before = ranges_of(view)
        plan = policy.decide(state, "auto")
        if plan is None:
            continue
        label = f"S{len(compactions) + 1}"
        text = label + "." * max(0, chars - len(label))
        after = plan.view_from(view)
        view = replace(after, summary=Summary(text, through=plan.start, role="assistant"))
        new = ranges_of(view)[-1]
        post = plan.mode in ("sliding-window", "token-threshold-post-invocation")
        seeded = plan.mode != "sliding-window" and bool(before)
        first = before[-1][1] if seeded else new[0]
        at = i - 1 if post else i  # post-invocation: filed under the user message, as ADK runs it before it
        last_at = at
        compactions.append(
            {
                "at": msgs[at]["id"],
                "point": "post-invocation" if post else "request",
                "first": full.messages[first].id,
                "last": full.messages[new[1] - 1].id,
                "events": new[1] - first,
                "seeded": seeded,
            }
        )
    contents: list[str] = []
    for item in layout(view, len(full.messages), True):
        if isinstance(item, Messages):
            contents += [full.messages[k].id for k in range(item.a, item.b) if k > 0]
        elif isinstance(item, (Injected, Summary)):
            contents.append("summary " + item.text.rstrip("."))
    return {"compactions": compactions, "contents": contents}


def test_golden_file_names_the_package_and_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["package"] == "google-adk" and golden["version"].count(".") == 2
    assert {c["kind"] for c in CASES} == {"sliding", "token", "both"}
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours = replay(case)
    judge(case["name"], ours, case["expected"], KNOWN)


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Cases compacting and sending what ADK does, per kind (printed with ``-s``)."""
    lines = []
    for kind in ("sliding", "token", "both"):
        cases = [c for c in CASES if c["kind"] == kind]
        agree = sum(1 for c in cases if replay(c) == c["expected"])
        lines.append(f"google-adk {kind}: {agree}/{len(cases)} cases agree")
        assert agree + sum(1 for c in cases if c["name"] in KNOWN) == len(cases)
    with capsys.disabled():
        print("\n" + "\n".join(lines))
