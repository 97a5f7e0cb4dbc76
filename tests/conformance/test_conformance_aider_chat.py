"""Our Aider policy against Aider's own ``ChatSummary.summarize`` (``aider/history.py``), case by case
(``conformance/aider-chat/``).

The golden file holds what ``aider-chat`` (its version inside) returned for each scripted ``done_messages`` list,
with a stand-in model reporting each message's token count: whether the history was too big, which messages it kept
after the summary, and whether "Ok." followed. Here the same list is checked twice: the split function
(:func:`policies.aider.summary_split`) on the same token counts, and the policy itself on a ``Conversation`` whose
messages have those token counts in the engine, followed by a new user message (the point where Aider applies the
summary).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies.aider import OK, Aider, AiderConfig, Item, summary_split
from sim.core.conversation import Conversation
from sim.core.model import ModelConfig
from sim.core.state import RunState
from sim.core.view import Injected, Messages, Summary, layout
from tests.builders import Draft, asst, conv, state_of, sys, user

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
