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
from tests.conformance import long
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


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG: list[dict[str, Any]] = GOLDEN["long"]


def long_decisions(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Our policy before every model call of a long conversation (the system prompt first, as the generator passes
    it), each decision made on LangMem's state: the running summary and the messages after the last one it summarised
    (so one difference does not cascade). Per call: whether we summarise, and the first message we keep. Also each
    decision's class of difference (``""`` where none is documented): ``batch-cut`` where LangMem's cut lands on a
    parallel batch's first ToolMessage and keeps the batch's other results without their call (the hand-made
    ``batch-cut-inside``), and ours moves past them to the next message."""
    c = long.to_conversation(long.by_name(entry["conversation"]), one_result_per_message=True)
    policy = LangMem(LangMemConfig(**entry["settings"]))
    index = {m.id: k for k, m in enumerate(c.messages)}
    theirs = {d["at"]: d for d in entry["decisions"]}
    view, out, classes = View(), [], []
    summary = SUMMARY_WRAPPER.format(summary="summary of the new messages")
    for i, prefix in long.prefixes(c):
        state = state_of(policy, prefix, view=view)
        plan = policy.decide(state, "auto")
        at = c.messages[i].id
        kept = prefix.messages[plan.start].id if plan is not None and plan.start < i else None
        out.append({"at": at, "summarised": plan is not None, "kept_from": kept})
        classes.append("batch-cut" if plan is not None and batch_cut(c, theirs[at], plan.start) else "")
        if theirs[at]["summarised"]:
            start = index[theirs[at]["kept_from"]] if theirs[at]["kept_from"] is not None else i
            view = View(start=start, summary=Summary(summary, through=start))
    return out, classes


def batch_cut(c: Conversation, theirs: dict[str, Any], ours: int) -> bool:
    """Whether LangMem kept results whose call it summarised, from ``theirs['kept_from']`` up to our cut ``ours``, and
    nothing else: every message in between is a tool message answering a call of a message before it was kept."""
    if not theirs["summarised"] or theirs["kept_from"] is None:
        return False
    index = c.index()
    k = index[theirs["kept_from"]]
    summarised_calls = {p.call_id for m in c.messages[:k] for p in m.calls}
    between = c.messages[k:ours]
    return bool(between) and all(
        m.role == "tool" and all(p.call_id in summarised_calls for p in m.parts) for m in between
    )


@pytest.mark.parametrize("entry", LONG, ids=[f"{e['conversation']}-{e['settings']['max_tokens']}" for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every model call of a long conversation: the same decision as ``summarize_messages`` (summarised, and the first
    message after the summarised ones; None where it summarised every message, the last user message too), or a
    documented ``batch-cut``."""
    ours, classes = long_decisions(entry)
    theirs = entry["decisions"]
    assert sum(d["summarised"] for d in theirs) >= 2
    share = long.agreement(ours, theirs)
    differ = [k for k, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    undocumented = [(ours[k], theirs[k]) for k in differ if not classes[k]]
    with capsys.disabled():
        print(
            f"\nlangmem {entry['conversation']} max_tokens {entry['settings']['max_tokens']}: {share:.1%} of "
            f"{len(ours)} model calls agree, {1 - len(undocumented) / len(ours):.1%} with documented differences "
            f"({', '.join(classes[k] for k in differ) or 'none'})"
        )
    assert not undocumented, f"{len(undocumented)} undocumented differences (ours, theirs): {undocumented[:3]}"
