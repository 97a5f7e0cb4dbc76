"""Our Semantic Kernel policy against SK's own ``ChatHistoryTruncationReducer``, case by case
(``conformance/semantic-kernel/``).

The golden file holds what ``semantic-kernel`` (its version inside) kept when ``reduce()`` ran once on each
scripted history (system message included, as an SK ``ChatHistory`` holds it), and whether it reduced. Here the
same history becomes a ``Conversation``, our policy decides on it, and the messages its view sends are compared.
"""

from __future__ import annotations

import json
from collections import Counter
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
from tests.conformance import long

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


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["long"]


def long_decisions(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Our reducer before every model call of a long conversation (one tool message per result, as SK's kernel adds
    them), each decision made on SK's own history at that call: the view starts where SK's reducer left its history
    (with the summary it wrote, for the summarization reducer), so one difference does not cascade. Also each
    decision's documented class of difference (``""`` where none)."""
    c = long.to_conversation(long.by_name(entry["conversation"]), one_result_per_message=True)
    s = entry["settings"]
    summarizing = entry["run"] == "summarization"
    policy: Any = (
        SemanticKernelSummarization(SemanticKernelSummarizationConfig(**s))
        if summarizing
        else SemanticKernelTruncation(SemanticKernelTruncationConfig(**s))
    )
    index = {m.id: k for k, m in enumerate(c.messages)}
    view, out, classes = View(start=1), [], []
    for (i, prefix), theirs in zip(long.prefixes(c), entry["decisions"], strict=True):
        state = state_of(policy, prefix, view=view)
        plan = policy.decide(state, "auto")
        first = plan.start if plan is not None else view.start
        kept = prefix.messages[first].id if first < len(prefix.messages) else None
        mine = {"at": c.messages[i].id, "kept_from": kept}
        if summarizing:
            mine["summarized"] = plan is not None and plan.summarize
        out.append(mine)
        classes.append(long_class(policy, state, plan, theirs) if summarizing else "")
        if theirs["reduced"]:  # SK's history from here on
            start = index[theirs["kept_from"]] if theirs["kept_from"] is not None else i
            summary = Summary("FAKE SUMMARY", through=start, role="assistant") if summarizing else None
            view = View(start=start, summary=summary)
    return out, classes


#: What a decision is: the first message the history keeps after it, and whether a new summary was written. (SK's
#: ``reduce()`` also returns the reducer when its safe index is the history's first message, changing nothing.)
DECISION = ("at", "kept_from", "summarized")


def long_class(policy: SemanticKernelSummarization, state: Any, plan: Plan | None, theirs: dict[str, Any]) -> str:
    """The documented class of a summarization decision that differs from SK's (``""`` where none applies):
    ``not-shrinking`` where SK summarises and keeps from the same message as the reduction we would make, which we
    skip only because its summary would not shrink the view (our ``plan_shrinks``; SK writes it anyway);
    ``summary-only`` where SK, its history still over the target with the safe index on its first message after the
    summary, summarises the previous summary alone again and keeps the rest as it was, and we have nothing new to
    summarise."""
    if plan is not None or not theirs["summarized"]:
        return ""
    msgs = state.messages
    would = policy.reduction(state)
    if would is not None and would.start < len(msgs) and msgs[would.start].id == theirs["kept_from"]:
        return "not-shrinking"
    view = state.view
    if would is None and view.summary is not None and msgs[view.start].id == theirs["kept_from"]:
        return "summary-only"
    return ""


@pytest.mark.parametrize("entry", LONG, ids=[f"{e['run']}-{e['conversation']}" for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Before every model call of a long conversation: the same decision as SK's reducer (whether it reduced, and the
    first message it kept after the system message and the summary)."""
    ours, classes = long_decisions(entry)
    theirs = [{k: d[k] for k in DECISION if k in d} for d in entry["decisions"]]
    share = long.agreement(ours, theirs)
    differ = [k for k, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    undocumented = [(ours[k], theirs[k]) for k in differ if not classes[k]]
    counted = 1 - len(undocumented) / len(ours)
    tally = ", ".join(f"{k} {v}" for k, v in sorted(Counter(classes[k] for k in differ if classes[k]).items()))
    with capsys.disabled():
        print(
            f"\nsemantic-kernel {entry['run']} {entry['conversation']}: {share:.1%} of {len(ours)} model calls agree, "
            f"{counted:.1%} with documented differences ({tally or 'none'})"
        )
    assert not undocumented, f"undocumented differences: {undocumented[:3]}"
