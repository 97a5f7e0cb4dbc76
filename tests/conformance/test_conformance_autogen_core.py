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
from sim.core.conversation import Conversation, Message
from sim.core.model import ModelConfig
from sim.core.view import Injected, Messages, View, layout
from tests.builders import case_conversation, state_of
from tests.conformance import long

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "autogen-core.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["cases"]

# Where we knowingly differ: case -> why. Every other case sends exactly what AutoGen sends.
KNOWN: dict[str, str] = {}


def conversation(msgs: list[dict[str, Any]], one_result_per_message: bool = False) -> Conversation:
    """The case's messages after a system prompt; ``one_result_per_message``: a batch's results one tool message each
    (``<id>.<j>``), as recordings and the scenarios hold them."""
    if one_result_per_message:
        flat: list[dict[str, Any]] = []
        for m in msgs:
            if m["role"] == "tool" and len(m["results"]) > 1:
                flat += [{**m, "id": f"{m['id']}.{j}", "results": [r]} for j, r in enumerate(m["results"])]
            else:
                flat.append(m)
        msgs = flat
    return case_conversation(msgs, "You are a coding agent.")


def autogen_id(message_id: str) -> str:
    """The id of the AutoGen message a log message belongs to (``t3.1`` is part of ``t3``)."""
    return message_id.split(".")[0]


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
    c = conversation(case["input"], case.get("log") == "one-result-per-message")
    window = case["settings"].get("window")  # the fake client's limit: the model's window
    model = ModelConfig(context_window=window, output_reserve=1) if window else ModelConfig()
    state = state_of(policy, c, model)
    plan = policy.decide(state, "auto")
    view = plan.view_from(state.view) if plan is not None else state.view
    sent: list[str] = []
    for item in layout(view, len(c.messages), True):
        if isinstance(item, Messages):
            sent += [autogen_id(c.messages[i].id) for i in range(item.a, item.b) if i > 0]
        elif isinstance(item, Injected):
            sent.append(f"INJECTED UserMessage: {item.text}" if item.role == "user" else item.text)
    tokens = AutoGenTokenLimited().context_tokens(state, state.view)
    return {"view": list(dict.fromkeys(sent)), "tokens": tokens}


def test_golden_file_names_the_package_and_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["package"] == "autogen-core" and golden["version"].count(".") == 2
    assert {c["kind"] for c in CASES} == {"buffered", "head_and_tail", "token_limited"}
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    ours = run_case(case)
    if case.get("log") != "one-result-per-message":  # split, the log's messages each carry their own framing
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


# -- long conversations (conformance/long/), decision by decision ------------------------------------------------
LONG = json.loads(GOLDEN.read_text())["long"]


def compact(view: list[int | str]) -> str:
    """The generator's form of a view: runs of AutoGen message positions, an injected message's text in place."""
    runs: list[str] = []
    start = prev = None
    for x in [*view, None]:
        if isinstance(x, int) and prev is not None and x == prev + 1:
            prev = x
            continue
        if start is not None:
            runs.append(f"{start}-{prev}")
        start = prev = x if isinstance(x, int) else None
        if isinstance(x, str):
            runs.append(x)
    return ",".join(runs)


def merged(c: Conversation) -> Conversation:
    """``c`` with each run of tool messages as one tool message holding the run's results (the shape AutoGen stores)."""
    msgs: list[Message] = []
    for m in c.messages:
        if m.role == "tool" and msgs and msgs[-1].role == "tool":
            msgs[-1] = Message(msgs[-1].id, "tool", msgs[-1].parts + m.parts)
        else:
            msgs.append(m)
    return Conversation(c.id, tuple(msgs))


def long_replay(run: dict[str, Any], carried: bool = True, shape: str = "split") -> list[dict[str, Any]]:
    """Our policy before every model call of the long conversation, the log holding one tool message per result, the
    view carried from call to call (``carried``; else each call decides on the whole history, which is the state
    AutoGen's stateless ``get_messages`` decides on); each view in AutoGen's positions (a run of tool messages one
    message). ``shape`` ``merged``: the log holds each batch's results in one tool message instead."""
    c = long.to_conversation(long.by_name(run["conversation"]))
    if shape == "merged":
        c = merged(c)
    policy = policy_for({"kind": run["kind"], "settings": run["settings"]})
    position, k = {}, -1
    for i, m in enumerate(c.messages[1:], start=1):
        if not (m.role == "tool" and c.messages[i - 1].role == "tool"):
            k += 1
        position[i] = k
    view, out = View(), []
    for i, prefix in long.prefixes(c):
        if not carried:
            view = View()
        plan = policy.decide(state_of(policy, prefix, view=view), "auto")
        if plan is not None:
            view = plan.view_from(view)
        sent: list[int | str] = []
        for item in layout(view, i, True):
            if isinstance(item, Messages):
                sent += [position[j] for j in range(max(item.a, 1), item.b)]
            elif isinstance(item, Injected):
                sent.append(item.text)
        out.append({"at": c.messages[i].id, "view": compact(list(dict.fromkeys(sent)))})
    return out


@pytest.mark.parametrize("run", LONG, ids=[f"{r['kind']}-{r['conversation']}" for r in LONG])
def test_long_decisions(run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every model call of a long conversation whose log holds a tool message per result: the same messages sent as
    AutoGen's ``get_messages()`` on the messages an agent stores (a batch's results one), each decision made on the
    state AutoGen decides on. The buffered and head-and-tail contexts' views only move forward, so the view carried
    through the run agrees too; the token-limited context recomputes its middle from the whole list, which moves
    right as the list grows and brings back what an earlier call left out, and a simulated view never brings a
    message back and stays as it is under the limit (the documented difference, ``middle-moves``): carried, it
    agrees on fewer calls, printed beside."""
    decided = long_replay(run, carried=False)
    share = long.agreement(decided, run["decisions"])
    # Documented (``framing``): a decision that differs only because the log holds a batch's results in several tool
    # messages, each counted with its own framing where AutoGen's stand-in client counts one (token-limited only):
    # the same decision on the log in AutoGen's shape agrees.
    whole = long_replay(run, carried=False, shape="merged")
    framing = [a["at"] for a, b, m in zip(decided, run["decisions"], whole, strict=True) if a != b and m == b]
    counted = share + len(framing) / len(decided)
    carried = long.agreement(long_replay(run), run["decisions"])
    with capsys.disabled():
        print(
            f"\nautogen {run['kind']} {run['conversation']}: {share:.1%} of {len(decided)} decisions agree, "
            f"{counted:.1%} with {len(framing)} framing; {carried:.1%} with the view carried"
        )
    assert counted == 1.0
    if run["kind"] != "token_limited":
        assert carried == 1.0
