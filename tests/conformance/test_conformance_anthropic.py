"""``anthropic-sdk-compaction`` against the Python SDK's own client-side compaction, case by case
(``conformance/anthropic``: anthropic 0.125.0, ``BetaToolRunner._check_and_compact`` and ``__run__``).

The golden file holds what the SDK did on each scripted input (``conformance/anthropic/generate.py`` says what
is recorded). Here the same messages become a ``Conversation`` (tool results as ``tool`` messages, the response
as the last assistant message with its recorded ``output_tokens``), the provider reports the response's
prompt (``input + cache_creation + cache_read``) for the request it answered, and our policy decides right
after the response, as the engine asks it. Its plan is described in the golden file's shape and compared:
whether it compacts, the messages the summary is made from (in order), the prompt, the messages after.

One difference is structural and checked on every compacting case rather than listed: the SDK drops the
response that triggered the compaction and asks the model again from the summary (its tool calls never run);
a replay has one scripted reply per request, so ours keeps that reply after the summary as the stand-in for the
model's new answer (``AnthropicSDKCompaction``'s docstring). ``KNOWN`` lists the cases that still differ, with
the reason; the test checks they still do, so a fix is noticed.

The golden file's ``long`` section is the runner's own loop over each long conversation of ``conformance/long/``
(threshold a quarter of its size, usage counted as the engine counts): after every response, whether it compacted and
from which messages; ours decides after the same responses on the runner's own state (``test_long_decisions``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies import make_policy
from policies.anthropic_api import SDK_SUMMARY_PROMPT, AnthropicSDKCompaction, SDKCompactionConfig
from policies.base import Plan
from sim.core.conversation import Conversation, Message, Part, Usage
from sim.core.model import REQUEST_OVERHEAD, ModelConfig
from sim.core.view import Messages, Summary, View, layout
from tests.builders import state_of
from tests.conformance import long

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "conformance" / "anthropic.json"
DOC = json.loads(GOLDEN.read_text())
CASES = {c["name"]: c for c in DOC["cases"]}
MODEL = ModelConfig(context_window=200_000, output_reserve=8_192)

KNOWN = {
    "tiny_history": "the SDK compacts whenever the usage reaches the threshold, even a one-line history whose "
    "summary is longer than it; ours skips a compaction that would not shrink the view (the compaction-shrinks "
    "invariant), so it waits: with the default 100,000-token threshold the history is that large",
    "caller_appended_response_with_text": "a caller that appends the response to the runner's messages itself makes "
    "the SDK summarise it, stripped of its tool_use blocks; in a log the response is the last message, which ours "
    "keeps after the summary and never summarises (the runner's own loop appends only after the check, so only "
    "such a caller meets this; when the response is all tool_use the SDK drops it, and the two agree)",
}


def test_golden_file_names_the_package_and_version() -> None:
    assert DOC["package"] == "anthropic" and DOC["version"] == "0.125.0"
    assert len(DOC["cases"]) >= 12


# -- the case's messages as ours --------------------------------------------------------------------------------
def to_message(m: dict[str, Any], names: dict[str, str], usage: Usage | None = None) -> Message:
    blocks = m["content"]
    if m["role"] == "user" and blocks and all(b["type"] == "tool_result" for b in blocks):
        parts = tuple(
            Part("tool_result", b["content"], call_id=b["tool_use_id"], name=names[b["tool_use_id"]]) for b in blocks
        )
        return Message(name_of(m), "tool", parts)
    parts_: list[Part] = []
    for b in blocks:
        if b["type"] == "text":
            parts_.append(Part("text", b["text"]))
        elif b["type"] == "thinking":
            parts_.append(Part("thinking", b["thinking"]))
        elif b["type"] == "tool_use":
            names[b["id"]] = b["name"]
            parts_.append(Part("tool_call", call_id=b["id"], name=b["name"], args=json.dumps(b["input"])))
    return Message(name_of(m), m["role"], tuple(parts_), usage=usage)


def name_of(m: dict[str, Any]) -> str:
    """The golden file's name of a message: its id, or ``results:<ids>`` for a message of tool results."""
    blocks = m["content"]
    if m["role"] == "user" and blocks and all(b["type"] == "tool_result" for b in blocks):
        return "results:" + ",".join(b["tool_use_id"] for b in blocks)
    return str(m["id"])


def conversation(history: list[dict[str, Any]], response: dict[str, Any]) -> Conversation:
    """System prompt (the API's ``system``, apart from the messages), the history, then the response. A history
    that ends with an assistant message holds the response already (a caller appended it): in a log the response
    is that message, so it takes its place and its id."""
    names: dict[str, str] = {}
    rid = response["id"]
    if history and history[-1]["role"] == "assistant":
        history, rid = history[:-1], history[-1]["id"]
    msgs = [Message("sys", "system", (Part("text", "You are a careful coding agent."),))]
    msgs += [to_message(m, names) for m in history]
    usage = Usage(output_tokens=response["usage"]["output_tokens"])
    msgs.append(to_message({"id": rid, "role": "assistant", "content": response["content"]}, names, usage))
    return Conversation("case", tuple(msgs))


def prompt_tokens(response: dict[str, Any]) -> int:
    u = response["usage"]
    return int(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"])


def decide(policy: AnthropicSDKCompaction, c: Conversation, response: dict[str, Any]) -> Plan | None:
    """Our policy right after ``response``: the provider reported its prompt for the request it answered."""
    return policy.decide(state_of(policy, c, MODEL, context=prompt_tokens(response)), "auto")


def described(plan: Plan | None, c: Conversation, settings: dict[str, Any]) -> dict[str, Any]:
    """Our plan in the golden file's shape, plus ``kept`` (what stays verbatim after the summary)."""
    ids = [m.id for m in c.messages[1:]]
    if plan is None:  # the runner's messages as they were: the response is appended after the check
        return {"triggered": False, "messages_after": ids[:-1]}
    custom = settings.get("summary_prompt")
    assert plan.summary_request.prompt in (SDK_SUMMARY_PROMPT, custom)
    return {
        "triggered": True,
        "summary_request": [*ids[: plan.start - 1], "prompt"],
        "prompt": "custom" if custom is not None and plan.summary_request.prompt == custom else "default",
        "messages_after": [f"summary:{plan.summary_request.role}"],
        "kept": ids[plan.start - 1 :],
    }


# -- check cases: one decision right after a response ----------------------------------------------------------
CHECK = [n for n, c in CASES.items() if c["input"]["kind"] == "check"]


@pytest.mark.parametrize("name", CHECK)
def test_check_case(name: str) -> None:
    case = CASES[name]["input"]
    policy = make_policy("anthropic-sdk-compaction", case["settings"])
    assert isinstance(policy, AnthropicSDKCompaction)
    c = conversation(case["history"], case["response"])
    ours = described(decide(policy, c, case["response"]), c, case["settings"])
    ignored = ("prompt_role", "summary_model_is_the_runners")
    want = {k: v for k, v in CASES[name]["expected"].items() if k not in ignored}
    if ours["triggered"]:
        # the structural difference: the response stays as the stand-in for the model's new answer
        assert ours.pop("kept") == [c.messages[-1].id]
        assert CASES[name]["expected"]["prompt_role"] == "user"  # the SDK sends its prompt as a user message
        assert CASES[name]["expected"]["summary_model_is_the_runners"]  # as ours: the run's model
    if name in KNOWN:
        assert ours != want, f"{name} now agrees: remove it from KNOWN"
    else:
        assert ours == want


# -- loop cases: the runner's own loop over a script -----------------------------------------------------------
LOOP = [n for n, c in CASES.items() if c["input"]["kind"] == "loop"]


def replayed(case: dict[str, Any]) -> list[tuple[dict[str, Any], Conversation]]:
    """The script as our replay holds it, cut right after each response: the response with its results after it
    (the scripted tool answers), as the log has them when the next request is made."""
    history = list(case["messages"])
    out = []
    for r in case["responses"]:
        out.append((r, conversation(history, r)))
        history.append({"id": r["id"], "role": "assistant", "content": r["content"]})
        uses = [b for b in r["content"] if b["type"] == "tool_use"]
        if uses:
            answers = case["tool_results"]
            results = [{"type": "tool_result", "tool_use_id": b["id"], "content": answers[b["name"]]} for b in uses]
            history.append({"id": "results", "role": "user", "content": results})
    return out


@pytest.mark.parametrize("name", LOOP)
def test_loop_case(name: str) -> None:
    case, want = CASES[name]["input"], CASES[name]["expected"]
    policy = AnthropicSDKCompaction(SDKCompactionConfig(**case["settings"]))
    requests: list[list[str]] = []
    compacted: list[str] = []
    first: dict[str, Any] = {}
    for r, c in replayed(case):
        requests.append([m.id for m in c.messages[1:-1]])  # the request this response answered
        plan = decide(policy, c, r)
        if plan is not None:
            compacted.append(r["id"])
            first = described(plan, c, case["settings"])
            break
    # the same response triggers it, from the same messages, and the requests before it were the same
    assert compacted == want["compacted_after"][:1]
    assert first["summary_request"] == want["summary_requests"][0]
    assert requests == want["requests"][: len(requests)]
    # after it the SDK asks again from the summary alone and never runs the response's tool calls; the replay
    # keeps the response (and the scripted results that follow it) in their place
    assert want["requests"][len(requests)] == ["summary:user"]
    assert first["messages_after"] == ["summary:user"] and first["kept"] == [compacted[0]]
    dropped = [b for r in case["responses"] if r["id"] == compacted[0] for b in r["content"] if b["type"] == "tool_use"]
    assert all(f"{b['name']}({next(iter(b['input'].values()))})" not in want["tools_run"] for b in dropped)


def test_agreement_is_what_the_report_says() -> None:
    """The count the closing note gives: every case but the ``KNOWN`` ones agrees."""
    assert (len(DOC["cases"]) - len(KNOWN), len(DOC["cases"])) == (16, 18)


# -- long conversations (conformance/long/), model call by model call ------------------------------------------
LONG = DOC["long"]


def sdk_names(c: Conversation, view: View, n: int) -> list[str]:
    """What ``view`` sends of the first ``n`` messages (the system prompt apart), named as the generator names the
    SDK's messages: ``summary``, a message's id, and a run of tool messages (the SDK's one message of results) by
    their ids joined with ``+``."""
    out: list[str] = []
    tool_run = False
    for item in layout(view, n, True):
        if isinstance(item, Summary):
            out.append("summary")
            tool_run = False
            continue
        assert isinstance(item, Messages)
        for i in range(max(item.a, 1), item.b):
            m = c.messages[i]
            if m.role == "tool" and tool_run:
                out[-1] += "+" + m.id
            else:
                out.append(m.id)
            tool_run = m.role == "tool"
    return out


def long_replay(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[int]]:
    """Our policy after every response the SDK's runner received in the long run, decided on the runner's own state
    (the view carried from the SDK's previous decision: after a compaction, its summary and the response it asked
    again for). Gives ours and the SDK's decisions for the responses to the conversation's requests, and, per
    decision, our count of the request next to the count the SDK was reported (``input_tokens``)."""
    c = long.to_conversation(long.by_name(entry["conversation"]))
    index = {m.id: i for i, m in enumerate(c.messages)}
    policy = AnthropicSDKCompaction(SDKCompactionConfig(context_token_threshold=entry["threshold"]))
    view, ours, theirs, counts = View(), [], [], []
    for d in entry["calls"]:
        if d["reask"]:
            continue  # the SDK's request from the summary alone: the replay keeps the response (test_long_reasks)
        i = index[d["at"]]
        before = state_of(policy, Conversation(c.id, c.messages[:i]), MODEL, view=view)
        counts.append(before.view_size()[0] + REQUEST_OVERHEAD)
        assert " ".join(sdk_names(c, view, i)) == d["request"], f"not the SDK's state at {d['at']}"
        state = state_of(policy, Conversation(c.id, c.messages[: i + 1]), MODEL, context=d["input_tokens"], view=view)
        plan = policy.decide(state, "auto")
        mine: dict[str, Any] = {"at": d["at"], "compacted": plan is not None}
        if plan is not None:
            assert plan.start == i  # the response stays, the stand-in for the model's answer to the summary
            mine["summary_request"] = " ".join([*sdk_names(c, view, i), "prompt"])  # all the request held
        ours.append(mine)
        theirs.append({k: d[k] for k in ("at", "summary_request") if k in d} | {"compacted": "summary_request" in d})
        if "summary_request" in d:
            view = View(start=i, summary=Summary(entry["fake_summary"]))
    return ours, theirs, counts


@pytest.mark.parametrize("entry", LONG, ids=[e["conversation"] for e in LONG])
def test_long_counts(entry: dict[str, Any]) -> None:
    """The count the generator's stand-in reported for every request of the long run is the engine's count of the
    same view (so the SDK decided on the usage our replay reports)."""
    _, _, counts = long_replay(entry)
    assert counts == [d["input_tokens"] for d in entry["calls"] if not d["reask"]]


@pytest.mark.parametrize("entry", LONG, ids=[e["conversation"] for e in LONG])
def test_long_reasks(entry: dict[str, Any]) -> None:
    """After each compaction the SDK asks again from the summary alone (the response's tool uses never run) and does
    not compact again; the replay keeps that response after the summary instead (the structural difference)."""
    calls = entry["calls"]
    for k, d in enumerate(calls):
        assert d["reask"] == (k > 0 and "summary_request" in calls[k - 1])
        if d["reask"]:
            assert d["request"] == "summary" and "summary_request" not in d and d["at"] == calls[k - 1]["at"]
    assert sum(d["reask"] for d in calls) >= 3


@pytest.mark.parametrize("entry", LONG, ids=[e["conversation"] for e in LONG])
def test_long_decisions(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """After every response of a long conversation: whether ours compacts where the SDK's runner does, and from the
    same messages (the summary request)."""
    ours, theirs, _ = long_replay(entry)
    share = long.agreement(ours, theirs)
    differ = [a["at"] for a, b in zip(ours, theirs, strict=True) if a != b]
    with capsys.disabled():
        print(
            f"\nanthropic compaction_control {entry['conversation']}: {share:.1%} of {len(ours)} responses agree "
            f"({sum(t['compacted'] for t in theirs)} compactions)"
        )
    assert not differ, f"undocumented differences at {differ}"
