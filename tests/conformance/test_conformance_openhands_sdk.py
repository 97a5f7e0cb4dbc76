"""``openhands-summarizing`` against the OpenHands SDK's own ``LLMSummarizingCondenser`` (conformance/openhands-sdk).

The golden file holds what ``openhands-sdk`` (its version inside) did on each scripted event list: the view it
saw (event ids in order), the condensation requirement (none, soft, hard), whether it condensed, which events it
forgot, where it put the summary (its ``TestLLM`` wrote it) and the view after. Here the same list becomes a
``Conversation`` (an earlier condensation becomes the state's view, with its summary at the same offset), and our
policy decides on it with the trigger the case asks for (``manual`` for a ``CondensationRequest``). Our view is
read as OpenHands events (``policies.openhands.events_in``: one per call, one per result).

Every aspect is compared; a case where we knowingly differ is listed in ``KNOWN`` with the reason, and the test
checks that it still differs, so a fix is noticed. ``test_agreement_summary`` prints the tally.

The ``long`` section holds every ``condense`` call the SDK's agent made over the long conversations of
``conformance/long/``; ``test_long_decisions`` decides on the SDK's own view at each call and compares.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from policies.openhands import EventView, OpenHandsSummarizing, SummarizingConfig, events_in
from sim.core.conversation import Conversation, Message
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import Messages, Summary, View, layout, spans_of
from tests.builders import Draft, asst, call, conv, state_of, sys, tool, tools, user
from tests.conformance import long

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "openhands-sdk.json"
DATA: dict[str, Any] = json.loads(GOLDEN.read_text())
CASES: list[dict[str, Any]] = DATA["cases"]
# The agent LLM's input limit is far above every case on both sides: only max_tokens caps the tokens.
MODEL = ModelConfig(context_window=10_000_000)
ASPECTS = ("view_before", "requirement", "condensed", "forgotten", "summary_offset", "view_after")

# Where we knowingly differ: case -> (the aspects that differ, why). Every other case agrees on every aspect.
LIVE = frozenset({"forgotten", "summary_offset", "view_after"})
KNOWN: dict[str, tuple[frozenset[str], str]] = {
    "events-long-live-turn-loses-last-user-message": (
        LIVE,
        "the SDK forgets the last user message (m2) with the span: its forgetting end rounds up past it; we pin it "
        "after the head, before the summary (policies.openhands.live_user: the harness's live-turn invariant), so "
        "it is not forgotten and the summary sits one event later",
    ),
    "events-keep-first-0-keeps-system": (
        LIVE,
        "keep_first 0: the SDK forgets the task (m1), the only and so the last user message; we pin it (live_user)",
    ),
    "request-minimum-progress-hard-reset": (
        LIVE,
        "the hard context reset summarises every event after the system prompt, the task (the last user message) "
        "too; we keep it pinned (live_user), so the summary is at offset 2, not 1",
    ),
    "request-too-short-hard-reset": (
        LIVE,
        "as request-minimum-progress-hard-reset: the hard reset's view is system, task, summary here",
    ),
}


# -- the same input as a Conversation and a state ---------------------------------------------------------------
def draft(m: dict[str, Any]) -> Draft:
    if m["role"] == "system":
        return sys(m["text"], id=m["id"])
    if m["role"] == "user":
        return user(m["text"], id=m["id"])
    if m["role"] == "assistant":
        calls = [call(c["id"], c["name"], c["args"]) for c in m["calls"]]
        return asst(m["text"], calls, thinking=m.get("thinking"), id=m["id"])
    results = m["results"]
    if len(results) == 1:
        return tool(results[0]["id"], results[0]["text"], name=results[0]["name"], id=m["id"])
    return tools({r["id"]: r["text"] for r in results}, name=results[0]["name"], id=m["id"])


def event_names(m: Message) -> list[str]:
    """The ids the generator gives this message's events (``conformance/openhands-sdk/cases.py``)."""
    k = events_in(m)
    return [m.id] if m.role in ("system", "user") or k <= 1 else [f"{m.id}.{j}" for j in range(k)]


def names(state: RunState, view: View) -> list[str]:
    out: list[str] = []
    for it in layout(view, len(state), state.has_system):
        if isinstance(it, Messages):
            for i in range(it.a, it.b):
                out.extend(event_names(state.messages[i]))
        else:
            out.append("SUMMARY")
    return out


def setup(case: dict[str, Any]) -> tuple[OpenHandsSummarizing, RunState]:
    s = case["settings"]
    policy = OpenHandsSummarizing(
        SummarizingConfig(
            max_size=s["max_size"],
            keep_first=s["keep_first"],
            max_tokens=s["max_tokens"],
            minimum_progress=s["minimum_progress"],
        )
    )
    c: Conversation = conv(*(draft(m) for m in case["input"]))
    view = None
    if s["prior"] is not None:
        ids = [m.id for m in c.messages]
        forgot = sorted(ids.index(i) for i in s["prior"]["forgot"])
        start = forgot[-1] + 1
        view = View(
            start=start,
            spans=spans_of(i for i in range(1, start) if i not in forgot),
            summary=Summary("PRIOR SUMMARY", through=start, compaction_id="prior"),
        )
    return policy, state_of(policy, c, MODEL, view=view, tokenizer="cl100k_base")


def ours(case: dict[str, Any]) -> dict[str, Any]:
    policy, st = setup(case)
    trigger = "manual" if case["settings"]["request"] else "auto"
    reasons = policy.reasons(st, EventView(st), trigger)
    requirement = None if not reasons else ("hard" if reasons & {"tokens", "request"} else "soft")
    before = names(st, st.view)
    plan = policy.decide(st, trigger)
    if plan is None:
        return {
            "view_before": before,
            "requirement": requirement,
            "condensed": False,
            "forgotten": [],
            "summary_offset": None,
            "view_after": before,
        }
    after_view = plan.view_from(st.view)
    if plan.summarize:
        after_view = after_view.with_(summary=Summary("NEW SUMMARY"))
    after = names(st, after_view)
    forgotten = sorted(set(before) - set(after) | ({"SUMMARY"} if "SUMMARY" in before and plan.summarize else set()))
    return {
        "view_before": before,
        "requirement": requirement,
        "condensed": True,
        "forgotten": forgotten,
        "summary_offset": after.index("SUMMARY") if "SUMMARY" in after else None,
        "view_after": after,
    }


def differing(case: dict[str, Any]) -> frozenset[str]:
    got, want = ours(case), case["expected"]
    return frozenset(a for a in ASPECTS if got[a] != want[a])


# -- the tests ----------------------------------------------------------------------------------------------------
def test_golden_file_names_the_package_and_enough_cases() -> None:
    assert DATA["package"] == "openhands-sdk" and DATA["version"]
    assert len(CASES) >= 12
    assert {c["name"] for c in CASES} >= set(KNOWN)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_agrees_with_the_sdk(case: dict[str, Any]) -> None:
    diff = differing(case)
    if case["name"] in KNOWN:
        aspects, why = KNOWN[case["name"]]
        assert diff == aspects, f"known difference changed ({why}): now {sorted(diff)}"
    else:
        got = ours(case)
        assert not diff, {a: (got[a], case["expected"][a]) for a in diff}


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    agree = sum(1 for c in CASES if not differing(c))
    with capsys.disabled():
        print(f"\nopenhands-sdk {DATA['version']}: {agree}/{len(CASES)} cases agree on every aspect")
    assert agree == len(CASES) - len(KNOWN)


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG: list[dict[str, Any]] = DATA["long"]


def long_view(c: Conversation, n: int, sdk: list[str]) -> View:
    """The SDK's view (event names in order, ``SUMMARY`` for its summary) over the first ``n`` messages as our view:
    the messages before the summary pinned (the ``keep_first`` head), the summary, the tail from the first message
    after it. Every message is in the SDK's view whole or not at all (the forgetting range is cut at manipulation
    indices), and the tail runs to the end."""
    shown = set(sdk)
    at = sdk.index("SUMMARY") if "SUMMARY" in sdk else None
    head = set(sdk[:at]) if at is not None else shown
    kept, pinned = [], []
    for i, m in enumerate(c.messages[:n]):
        names_ = event_names(m)
        inside = [x in shown for x in names_]
        assert all(inside) or not any(inside), f"{m.id} is in the SDK's view in part"
        if all(inside):
            kept.append(i)
            if at is not None and names_[0] in head:
                pinned.append(i)
    if at is None:
        assert kept == list(range(n)), "without a summary the SDK's view is the whole history"
        return View()
    start = next((i for i in kept if i not in pinned), n)
    assert kept == pinned + list(range(start, n)), "the SDK's view is a head, the summary and a tail"
    return View(start=start, spans=spans_of(pinned), summary=Summary(FAKE_SUMMARY, through=start))


FAKE_SUMMARY = "FAKE SUMMARY"


def long_decisions(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Our condenser at every ``condense`` call the SDK made over a long conversation (before each LLM call, again
    after each condensation), each on the SDK's own view at that call, so one difference does not cascade; and each
    decision's documented class of difference (``""`` where none)."""
    conv_ = long.by_name(entry["conversation"])
    c = long.to_conversation(conv_)
    s = entry["settings"]
    policy = OpenHandsSummarizing(
        SummarizingConfig(
            max_size=s.get("max_size", 240), keep_first=s.get("keep_first", 2), max_tokens=s.get("max_tokens")
        )
    )
    index = {m.id: i for i, m in enumerate(c.messages)}
    sdk: list[str] = []  # the SDK's view: event names
    upto = 0
    out, classes = [], []
    for d in entry["decisions"]:
        n = index[d["at"]]
        for m in c.messages[upto:n]:
            sdk += event_names(m)
        upto = n
        prefix = Conversation(c.id, c.messages[:n])
        st = state_of(policy, prefix, MODEL, view=long_view(c, n, sdk), tokenizer="cl100k_base")
        ev = EventView(st)
        reasons = policy.reasons(st, ev, "auto")
        requirement = None if not reasons else ("hard" if reasons & {"tokens", "request"} else "soft")
        plan = policy.decide(st, "auto")
        mine: dict[str, Any] = {"at": d["at"], "round": d["round"], "events": ev.total, "requirement": requirement}
        if plan is None:
            mine["condensed"] = False
        else:
            before = names(st, st.view)
            after = names(st, plan.view_from(st.view).with_(summary=Summary("NEW SUMMARY")))
            folded = {"SUMMARY"} if "SUMMARY" in before else set()
            mine.update(
                condensed=True,
                forgotten=sorted(set(before) - set(after) | folded),
                summary_offset=after.index("SUMMARY"),
            )
        out.append(mine)
        classes.append(long_class(st, mine, d))
        if d["condensed"]:  # the SDK's view from here on
            gone = set(d["forgotten"])
            sdk = [x for x in sdk if x not in gone]
            sdk.insert(d["summary_offset"], "SUMMARY")
    return out, classes


def long_class(st: RunState, mine: dict[str, Any], theirs: dict[str, Any]) -> str:
    """The documented class of a decision that differs from the SDK's (``""`` where none applies): ``live-user``
    where both condense the same way but the SDK's forgetting range, rounded up to a manipulation index, takes the
    last user message with it and we keep it pinned after the head (:func:`policies.openhands.live_user`, as in the
    hand-made ``events-long-live-turn-loses-last-user-message``), so the summary sits one event later."""
    if mine == theirs or not (mine["condensed"] and theirs["condensed"]):
        return ""
    lu = st.last_user_index
    last_user = st.messages[lu].id if lu >= 0 else None
    same = all(mine[k] == theirs[k] for k in ("at", "round", "events", "requirement"))
    if (
        same
        and set(theirs["forgotten"]) - set(mine["forgotten"]) == {last_user}
        and set(mine["forgotten"]) < set(theirs["forgotten"])
        and mine["summary_offset"] == theirs["summary_offset"] + 1
    ):
        return "live-user"
    return ""


@pytest.mark.parametrize("entry", LONG, ids=[f"{e['run']}-{e['conversation']}" for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every ``condense`` call of a long conversation: the same view size, requirement and condensation (the events
    forgotten, where the summary goes) as the SDK's condenser."""
    ours_, classes = long_decisions(entry)
    theirs = entry["decisions"]
    share = long.agreement(ours_, theirs)
    differ = [k for k, (a, b) in enumerate(zip(ours_, theirs, strict=True)) if a != b]
    undocumented = [(ours_[k], theirs[k]) for k in differ if not classes[k]]
    counted = 1 - len(undocumented) / len(ours_)
    tally = ", ".join(f"{k} {v}" for k, v in sorted(Counter(classes[k] for k in differ if classes[k]).items()))
    condensed = sum(1 for d in theirs if d["condensed"])
    with capsys.disabled():
        print(
            f"\nopenhands-sdk {entry['run']} {entry['conversation']}: {share:.1%} of {len(ours_)} condense calls agree "
            f"({condensed} condensations), {counted:.1%} with documented differences ({tally or 'none'})"
        )
    assert not undocumented, f"undocumented differences: {undocumented[:2]}"
