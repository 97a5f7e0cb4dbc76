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
from tests.conformance import long
from tests.conformance.agreement import judge

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "google-adk.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]
FIELDS = ("compaction_interval", "overlap_size", "token_threshold", "event_retention_size")

# Where we knowingly differ: case -> why. Every other case compacts and sends exactly what ADK does.
KNOWN: dict[str, str] = {}


def conversation(msgs: list[dict[str, Any]]) -> Conversation:
    return case_conversation(msgs, "You are a travel agent.")


def asked_at(i: int, last_at: int) -> bool:
    """Whether the newest compaction happened at this very point (before model call ``i``, or under the user message
    right before it): then no count has been reported since, and ADK estimates."""
    return last_at in (i, i - 1)


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
        # Asked again after each compaction (recheck_after_compaction), until the policy declines: the post-invocation
        # compaction and then the request processor's, before the same model call.
        for _ in range(len(msgs) if policy.recheck_after_compaction else 1):
            # ADK reads the newest reported count that came after the newest compaction; else it estimates.
            context = msgs[usage[-1]]["usage"] if usage and usage[-1] >= last_at and not asked_at(i, last_at) else None
            state = state_of(policy, prefix, view=view, context=context)
            before = ranges_of(view)
            plan = policy.decide(state, "auto")
            if plan is None:
                break
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


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG = json.loads(GOLDEN.read_text())["long"]


@pytest.mark.parametrize("entry", LONG["counts"], ids=[e["conversation"] for e in LONG["counts"]])
def test_long_estimate(entry: dict[str, Any]) -> None:
    """``_estimate_prompt_token_count`` of the events before every model call of a long, tool-heavy session (no count
    reported): ours equal to the token, so well within 1%."""
    c = long.to_conversation(long.by_name(entry["conversation"]))
    policy = ADKCompaction(ADKConfig(token_threshold=1, event_retention_size=1))
    ours = [policy.prompt_token_count(state_of(policy, prefix)) for _, prefix in long.prefixes(c)]
    assert max(abs(a - b) / b for a, b in zip(ours, entry["counts"], strict=True) if b) <= 0.01
    assert ours == entry["counts"]


def per_call(msgs: list[dict[str, Any]], compactions: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The compactions filed before each model call (post-invocation ones under the user message before it)."""
    owner, pending = {}, []
    for m in msgs:
        pending.append(m["id"])
        if m["role"] == "assistant":
            owner.update({x: m["id"] for x in pending})
            pending = []
    calls = [m["id"] for m in msgs if m["role"] == "assistant"]
    return [[x for x in compactions if owner.get(x["at"]) == a] for a in calls]


@pytest.mark.parametrize("run", LONG["runs"], ids=[f"{r['kind']}-{r['conversation']}" for r in LONG["runs"]])
def test_long_decisions(run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every model call of a long session: the same compactions before it as ADK's (range, point, seed), and the same
    request contents at the end."""
    msgs = long.by_name(run["conversation"])["messages"]
    ours = replay({"input": msgs, "settings": run["settings"]})
    a, b = per_call(msgs, ours["compactions"]), per_call(msgs, run["expected"]["compactions"])
    share = long.agreement(a, b)
    with capsys.disabled():
        n = len(run["expected"]["compactions"])
        name = f"{run['kind']} {run['conversation']}"
        print(f"\ngoogle-adk {name}: {share:.1%} of {len(a)} model calls agree ({n} compactions)")
    assert share == 1.0
    assert ours["contents"] == run["expected"]["contents"]
