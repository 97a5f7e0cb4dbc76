"""Our Aider policy against Aider's own ``ChatSummary.summarize`` (``aider/history.py``), case by case
(``conformance/aider-chat/``).

The golden file holds what ``aider-chat`` (its version inside) returned for each scripted ``done_messages`` list,
with a stand-in model reporting each message's token count: whether the history was too big, which messages it kept
after the summary, and whether "Ok." followed. Here the same list is checked twice: the split function
(:func:`policies.aider.summary_split`) on the same token counts, and the policy itself on a ``Conversation`` whose
messages have those token counts in the engine, followed by a new user message (the point where Aider applies the
summary).

The ``long`` section: ``summarize`` at every user turn of each long conversation of ``conformance/long/``, on Aider's
own ``done_messages`` (``max_chat_history_tokens`` a quarter of its size); ours decides on the same done_messages and
each difference is counted by its documented class (``test_long_decisions``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from policies.aider import OK, SUMMARY_PREFIX, Aider, AiderConfig, Item, summary_split
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import Injected, Messages, Summary, View, layout
from tests.builders import Draft, asst, conv, state_of, sys, user
from tests.conformance import long

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "aider-chat.json"
DATA = json.loads(GOLDEN.read_text())
CASES: list[dict[str, Any]] = DATA["cases"]
MODEL = ModelConfig(context_window=200_000, output_reserve=8_192)

# Where we knowingly differ: case -> why. Every other case keeps exactly what Aider keeps. (None at present: the
# clipped head of "head-clipped-for-the-summariser" changes only what the summariser is shown, not what is kept.)
KNOWN: dict[str, str] = {}


def expected_taken(case: dict[str, Any]) -> int | None:
    """How many leading messages Aider's summary replaced (None: not too big, nothing changed)."""
    exp = case["expected"]
    if not exp["triggered"]:
        return None
    ids = [m["id"] for m in case["input"]]
    rest = [k for k in exp["kept"] if k in ids]
    return ids.index(rest[0]) if rest else len(ids)


def test_golden_file_names_the_package_and_version() -> None:
    assert DATA["package"] == "aider-chat" and DATA["version"] == "0.86.2"
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_split_matches_summarize_real(case: dict[str, Any]) -> None:
    """``summarize_real`` on the same token counts: the same number of messages replaced by the summary."""
    s = case["settings"]
    items = [Item(m["tokens"], m["role"], i) for i, m in enumerate(case["input"])]
    assert summary_split(items, s["max_tokens"], s["summary_tokens"]) == expected_taken(case)


class _StandInSized(Aider):
    """The policy with the summary's size the stand-in model reports (Aider knows it once the summary is written)."""

    size = 0

    def summary_tokens(self, state: RunState) -> int:
        return self.size


def conversation(case: dict[str, Any], overhead: int) -> Conversation:
    drafts: list[Draft] = [sys("S", id="system")]
    for m in case["input"]:
        text = m["id"] + " " + "x" * (4 * (m["tokens"] - overhead) - len(m["id"]) - 1)
        drafts.append(user(text, id=m["id"]) if m["role"] == "user" else asst(text, id=m["id"]))
    drafts.append(user("next request", id="next"))
    return conv(*drafts)


def message_overhead() -> int:
    """Tokens the engine counts for a message beyond its text's chars/4 (measured, not assumed)."""
    probe = conv(sys("S"), user("x" * 400, id="p"), user("next", id="n"))
    state = state_of(Aider(), probe, MODEL)
    (item,) = Aider().done_items(state)
    return item.tokens - 100


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_policy_keeps_what_aider_keeps(case: dict[str, Any]) -> None:
    """The policy on the same history: the kept messages after the summary, and "Ok." when Aider adds it."""
    if case["name"] in KNOWN:
        pytest.skip(KNOWN[case["name"]])
    s = case["settings"]
    c = conversation(case, message_overhead())
    policy = _StandInSized(AiderConfig(max_chat_history_tokens=s["max_tokens"]))
    policy.size = s["summary_tokens"]
    state = state_of(policy, c, MODEL)
    assert [x.tokens for x in policy.done_items(state)] == [m["tokens"] for m in case["input"]]
    plan = policy.decide(state, "auto")
    exp = case["expected"]
    if not exp["triggered"]:
        assert plan is None
        return
    assert plan is not None
    view = plan.view_from(state.view).with_(summary=Summary("s"))
    sent: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Summary):
            sent.append("SUMMARY user")
        elif isinstance(item, Injected):
            sent.append("OK" if item.text == OK else item.text)
        elif isinstance(item, Messages):
            sent += [c.messages[i].id for i in range(item.a, item.b)]
    assert sent == ["system", *exp["kept"], "next"]


# -- long conversations (conformance/long/), user turn by user turn --------------------------------------------
LONG = DATA["long"]


class _Uncut(_StandInSized):
    """The policy with a split allowed anywhere, between an assistant's calls and their results too (as Aider, which
    has no tool calls, splits): recognises the ``unit`` class of difference."""

    def done_items(self, state: RunState) -> list[Item]:
        return [replace(x, cut=True) for x in super().done_items(state)]


def decision(policy: Aider, state: RunState, at: str) -> dict[str, Any]:
    """``policy``'s decision in the golden file's shape: too big or not, and what follows the summary before the
    newest user message (ids, ``OK`` for an "Ok.")."""
    plan = policy.decide(state, "auto")
    kept = None
    if plan is not None:
        lu = state.last_user_index
        view = plan.view_from(state.view).with_(summary=Summary("new"))
        shown: list[str] = []
        for item in layout(view, lu, True):
            if isinstance(item, Injected):
                shown.append("OK" if item.text == OK else item.text)
            elif isinstance(item, Messages):
                shown += [state.messages[i].id for i in range(max(item.a, 1), item.b)]
        kept = " ".join(shown)
    return {"at": at, "triggered": policy.over_trigger(state), "kept": kept}


def without_inner_ok(d: dict[str, Any]) -> dict[str, Any]:
    """Aider's decision with every "Ok." but a last one left out of what it kept."""
    if d["kept"] is None:
        return d
    kept = d["kept"].split()
    return {**d, "kept": " ".join([k for k in kept[:-1] if k != "OK"] + kept[-1:])}


def difference_class(ours: dict[str, Any], uncut: dict[str, Any], theirs: dict[str, Any]) -> str:
    """Why ours differs from Aider's decision, if documented: ``inner-ok`` (Aider's tail keeps an earlier "Ok.", the
    view cannot), ``unit`` (Aider's split falls between an assistant's calls and their results: ours moves it back
    to the previous cut; with the split allowed there, ours is Aider's), or both; ``""`` when undocumented."""
    inner = without_inner_ok(theirs)
    if ours == inner != theirs:
        return "inner-ok"
    if uncut == theirs:
        return "unit"
    if uncut == inner != theirs:
        return "unit, inner-ok"
    return ""


def aiders_view(kept: str, index: dict[str, int], lu: int, summary: Summary) -> View:
    """Aider's ``done_messages`` after ``summarize`` (``kept``: what followed its summary) as a view before the
    user message at ``lu``: the summary, the kept messages as spans, each "Ok." before the span after it."""
    spans: list[tuple[int, int]] = []
    injected: list[Injected] = []
    run: list[int] = []
    for k in [*kept.split(), "END"]:
        if k in ("OK", "END") and run:
            spans.append((run[0], run[-1] + 1))
            run = []
        if k == "OK":
            injected.append(Injected(OK, role="assistant", label="ok", slot=len(spans)))
        elif k != "END":
            assert not run or index[k] == run[-1] + 1, kept
            run.append(index[k])
    last = len(spans)  # an "Ok." after the last span stands before the tail
    injected = [replace(x, slot=None) if x.slot == last else x for x in injected]
    return View(start=lu, spans=tuple(spans), summary=summary, summary_slot=0, injected=tuple(injected))


def long_replay(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Our policy at the first request after every user message but the first of a long conversation, decided on
    Aider's own ``done_messages`` (the view carried from Aider's previous decision: its summary, the messages it kept,
    its "Ok."s), with the summary's size the stand-in reports. Gives our decisions in the golden file's shape and,
    per decision, its documented difference class (``""``: none)."""
    c = long.to_conversation(long.by_name(entry["conversation"]))
    index = {m.id: i for i, m in enumerate(c.messages)}
    cfg = AiderConfig(max_chat_history_tokens=entry["max_tokens"])
    policy, uncut = _StandInSized(cfg), _Uncut(cfg)
    policy.size = uncut.size = entry["summary_tokens"]
    summary = Summary(SUMMARY_PREFIX + entry["fake_summary"])
    view, ours, classes = View(), [], []
    for d in entry["decisions"]:
        lu = index[d["at"]]
        state = state_of(policy, Conversation(c.id, c.messages[: lu + 1]), MODEL, view=view)
        mine = decision(policy, state, d["at"])
        ours.append(mine)
        classes.append(difference_class(mine, decision(uncut, state, d["at"]), d) if mine != d else "")
        if d["triggered"]:  # Aider's result becomes the next decision's done_messages
            view = aiders_view(d["kept"], index, lu, summary)
    return ours, classes


@pytest.mark.parametrize("entry", LONG, ids=[e["conversation"] for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """At every user turn of a long conversation: whether the history is too big and what follows the summary (the
    kept tail, "Ok."), as Aider's ``ChatSummary.summarize`` decided on the same done_messages."""
    ours, classes = long_replay(entry)
    theirs = entry["decisions"]
    share = long.agreement(ours, theirs)
    differ = [k for k, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    undocumented = [(ours[k], theirs[k]) for k in differ if not classes[k]]
    with capsys.disabled():
        print(
            f"\naider-chat {entry['conversation']}: {share:.1%} of {len(ours)} user turns agree "
            f"({sum(d['triggered'] for d in theirs)} summaries; differences: "
            f"{'; '.join(classes[k] for k in differ) or 'none'})"
        )
    assert not undocumented, f"undocumented differences: {undocumented}"
