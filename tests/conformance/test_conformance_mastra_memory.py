"""Our ``mastra-observational-memory`` against Mastra's own ``ObservationalMemory`` (npm ``@mastra/memory``), decision
by decision (``conformance/mastra-memory/``).

The golden file holds, for each scripted run and each long conversation, what Mastra decided before every model call:
its count of the unobserved messages and its threshold (``getStatus``), whether it observed (``observe``), which
messages, and whether its Reflector ran after. Here our policy decides on the same messages, in the state Mastra was
in (the messages Mastra had observed before that call left the view, its observations standing in for them), so one
difference does not carry on to the next call. A Mastra message holds its tool calls' results, so a tool message counts
as the assistant message that called it.

Each decision agrees, or differs for one of the declared reasons (:func:`classify`):

* ``tokenizer``: the same messages (the unobserved ones, the live turn included) counted on either side of the
  threshold, the two counts within a quarter of each other: Mastra estimates with ``tokenx``, the engine with its own
  tokenizer (chars/4 here), so near the threshold one observes and the other not.
* ``not-shrinking``: Mastra observes and we do not, because our summary would not shrink the view (``plan_shrinks``:
  the engine's smallest summary is longer than the few messages observed; Mastra writes it anyway).

Where Mastra observes at a turn's first step, the user's message is observed with the rest and stays in that step's
prompt; ours keeps it in the view as the tail's start and counts it observed (``MastraObservationalMemory.cut``), so
the observed sets compare equal.

The Reflector is not separately modelled (the Observer's prompt asks to condense grown observations): its trigger is
checked on Mastra's own record, that it ran exactly when the observations after an observation reached
``observationTokens`` (``>=``, ``ReflectorRunner.maybeReflect``), the rule the policy's docstring states.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.helpers import plan_shrinks
from policies.mastra import WRAPPER, MastraObservationalMemory, MastraObservationalMemoryConfig
from sim.core.conversation import Conversation
from sim.core.state import RunState
from sim.core.view import Summary, View
from tests.builders import state_of
from tests.conformance import long

ROOT = Path(__file__).parents[2]
GOLDEN = ROOT / "tests" / "golden" / "conformance" / "mastra-memory.json"
DOC: dict[str, Any] = json.loads(GOLDEN.read_text())
CASES: list[dict[str, Any]] = DOC["cases"]
LONG: list[dict[str, Any]] = DOC["long"]
CLASSES = ("agree", "tokenizer", "not-shrinking")


def owners(c: Conversation) -> list[str]:
    """Each message's Mastra id: a tool message is the assistant message whose calls it answers."""
    out: list[str] = []
    for m in c.messages:
        out.append(out[-1] if m.role == "tool" and out else m.id)
    return out


def mastra_state(pol: MastraObservationalMemory, prefix: Conversation, observed: set[str], text: str) -> RunState:
    """The state Mastra decided in: the messages it had observed out of the view, its observations before the rest."""
    ids = owners(prefix)
    start = 1
    while start < len(ids) and ids[start] in observed:
        start += 1
    view = (
        View(start=start, summary=Summary(WRAPPER.format(summary=text), through=start, role="user")) if text else None
    )
    return state_of(pol, prefix, view=view)


def classify(st: RunState, pol: MastraObservationalMemory, d: dict[str, Any]) -> tuple[str, list[str]]:
    """Our decision on ``st`` against Mastra's ``d``: the class, and the messages we observed (Mastra ids)."""
    plan = pol.decide(st, "auto")
    ids = owners(Conversation("c", st.messages))
    end = pol.observed_end(st)
    if plan is not None:  # the kept tail starts where the observed messages end, or at a first step's user message
        assert plan.start in (end, st.last_user_index), (plan.start, end)
    ours = list(dict.fromkeys(ids[i] for i in range(pol.counted_from(st), end))) if plan else []
    theirs: list[str] = d.get("observed", [])
    if bool(plan) == d["observe"] and ours == theirs:
        return "agree", ours
    threshold, counted = d["threshold"], pol.unobserved_tokens(st)
    near = abs(counted - d["pending"]) <= 0.25 * d["pending"] + 10
    if near and (counted >= threshold) != (d["pending"] >= threshold):
        return "tokenizer", ours
    raw = pol.observation(st)
    if d["observe"] and counted >= threshold and raw is not None and not plan_shrinks(st, raw):
        return "not-shrinking", [ids[i] for i in range(pol.counted_from(st), end)]
    return "undeclared", ours


def replay(c: Conversation, settings: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, int]:
    """Every decision of one run, counted by class; asserts Mastra's Reflector rule on the way."""
    pol = MastraObservationalMemory(
        MastraObservationalMemoryConfig(settings["messageTokens"], settings["observationTokens"])
    )
    index = {m.id: i for i, m in enumerate(c.messages)}
    observed: set[str] = set()
    text = ""
    counts = dict.fromkeys((*CLASSES, "undeclared"), 0)
    for d in decisions:
        prefix = Conversation(c.id, c.messages[: index[d["at"]]])
        kind, _ = classify(mastra_state(pol, prefix, observed, text), pol, d)
        counts[kind] += 1
        if d["observe"]:
            assert d["reflected"] == (d["reflect_asked_at"] >= settings["observationTokens"]), d["at"]
            observed |= set(d["observed"])
            text = d.get("observations", text)
    return counts


def run_conversation(entry: dict[str, Any]) -> Conversation:
    return long.to_conversation({"system": "You are a coding agent.", "messages": entry["messages"]})


def test_golden_file_names_the_package_and_version() -> None:
    pinned = json.loads((ROOT / "conformance" / "mastra-memory" / "package.json").read_text())["dependencies"]
    assert DOC["package"] == "@mastra/memory" and DOC["version"] == pinned["@mastra/memory"] == "1.31.0"
    assert DOC["core"] == pinned["@mastra/core"]
    assert len(CASES) >= 10 and len(LONG) == 4


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    counts = replay(run_conversation(case), case["settings"], case["expected"]["decisions"])
    assert counts["undeclared"] == 0, counts


@pytest.mark.parametrize("entry", LONG, ids=[e["conversation"] for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Before every model call of a long conversation (Observer at a quarter of its size, Reflector at 200 tokens)."""
    c = long.to_conversation(long.by_name(entry["conversation"]))
    counts = replay(c, entry["settings"], entry["decisions"])
    n = sum(counts.values())
    with capsys.disabled():
        print(f"\nmastra-memory {entry['conversation']}: {counts['agree'] / n:.1%} of {n} calls agree, {counts}")
    assert counts["undeclared"] == 0, counts


def test_agreement_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """Every decision of every run, by class (printed with ``-s``); each declared class is seen, none undeclared."""
    total = dict.fromkeys((*CLASSES, "undeclared"), 0)
    runs = [(run_conversation(c), c["settings"], c["expected"]["decisions"]) for c in CASES]
    runs += [(long.to_conversation(long.by_name(e["conversation"])), e["settings"], e["decisions"]) for e in LONG]
    observed = sum(d["observe"] for _, _, ds in runs for d in ds)
    reflected = sum(d.get("reflected", False) for _, _, ds in runs for d in ds)
    for c, settings, decisions in runs:
        for k, v in replay(c, settings, decisions).items():
            total[k] += v
    n = sum(total.values())
    with capsys.disabled():
        print(f"\nmastra-memory: {total['agree']}/{n} agree, {total}; observed {observed}, reflected {reflected}")
    assert total["undeclared"] == 0 and all(total[k] for k in CLASSES) and reflected > 0
