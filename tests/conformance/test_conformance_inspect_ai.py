"""Our inspect-* policies against inspect_ai's own compaction, case by case (``conformance/inspect-ai``).

The golden file holds what inspect_ai's strategies and handler did on each scripted input
(``conformance/inspect-ai/generate.py`` says what is recorded and how). Here the same input becomes a
``Conversation``, our policy compacts it (``compact`` cases: one forced compaction of the whole list;
``handler`` cases: the engine replays the script, compacting when the policy says), and the views are
described in the same shape and compared. Cases where we knowingly differ are listed in ``KNOWN`` with the
reason; the test checks that they still differ, so a fix is noticed.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from policies import make_policy
from policies.base import Plan, Policy
from sim.core.conversation import Conversation, Message, Part
from sim.core.errors import UnknownName
from sim.core.invariants import minus, ranges
from sim.core.log import CompactionCreated
from sim.core.model import ModelConfig
from sim.core.view import Injected, Messages, Summary, View, edit_parts, layout
from sim.replay.engine import RunConfig
from tests.builders import run_capture, state_of
from tests.conformance import long

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "conformance" / "inspect-ai.json"
DOC = json.loads(GOLDEN.read_text())
CASES = {c["name"]: c for c in DOC["cases"]}

KNOWN = {
    "edit_memory_content_args": "inspect's clear_memory_content rewrites the file_text argument of memory() calls "
    "to '(content saved to memory)'; a view edits whole parts, so the call's arguments stay (not modelled)",
    "edit_keep_tool_inputs_false": "keep_tool_inputs=False turns a call into text in its assistant message and "
    "deletes the result; a view cannot turn a call into text, so the parameter does not exist here",
    "handler_edit_insufficient": "inspect raises 'Compaction insufficient' and the sample ends; a policy cannot end "
    "a run, so ours makes no plan and the run goes on until the provider rejects the prompt",
}


def expand(text: str | dict[str, Any]) -> str:
    """``cases.expand``: a filler ``{"fill": tag, "chars": n}`` as exactly ``n`` characters."""
    if isinstance(text, str):
        return text
    tag, n = text["fill"], text["chars"]
    body = f"{tag}: " + " ".join(f"{tag}-line{i} value={i * 7 % 97}" for i in range(n // 10 + 1))
    return body[:n]


def to_message(m: dict[str, Any]) -> Message:
    text = expand(m.get("text", ""))
    if m["role"] == "tool":
        return Message(m["id"], "tool", (Part("tool_result", text, call_id=m["call_id"], name=m["name"]),))
    parts = [Part("thinking", m["thinking"])] if "thinking" in m else []
    if text:
        parts.append(Part("text", text))
    parts += [
        Part("tool_call", call_id=c["id"], name=c["name"], args=json.dumps(c["args"])) for c in m.get("calls", [])
    ]
    return Message(m["id"], m["role"], tuple(parts))


def conversation(case: dict[str, Any]) -> Conversation:
    return Conversation(case["name"], tuple(to_message(m) for m in case["input"]["messages"]))


def body_free(text: str) -> str:
    """A summary's text with the summariser's own words replaced by ``<body>``."""
    a, b = text.index("<summary>\n") + len("<summary>\n"), text.rindex("\n</summary>")
    return text[:a] + "<body>" + text[b:]


def describe(msgs: list[Message], view: View, originals: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages ``view`` sends, in the golden file's shape."""
    out: list[dict[str, Any]] = []
    for item in layout(view, len(msgs), msgs[0].role == "system"):
        if isinstance(item, Summary):
            out.append({"summary": True, "role": item.role, "text": body_free(item.text)})
        elif isinstance(item, Injected):
            out.append({"injected": item.text, "role": item.role})
        elif isinstance(item, Messages):
            for i in range(item.a, item.b):
                shown = edit_parts(msgs[i], item.rules)
                if all(p is None for p in shown):
                    continue
                out.append(_message(msgs[i], shown, originals[msgs[i].id]))
    return out


def _message(m: Message, shown: tuple[Part | None, ...], orig: dict[str, Any]) -> dict[str, Any]:
    d: dict[str, Any] = {"id": m.id, "role": m.role}
    kept = [p for p in shown if p is not None]
    text = "".join(p.text for p in kept if p.kind == "text")
    if m.role == "tool":
        d["call"] = orig["call_id"]
        d["result"] = "=" if kept[0].text == expand(orig["text"]) else kept[0].text
        return d
    if text or orig.get("text"):
        d["text"] = "=" if text == expand(orig.get("text", "")) else text
    if m.role == "assistant":
        if "thinking" in orig:
            d["thinking"] = "kept" if any(p.kind == "thinking" for p in kept) else "dropped"
        calls = {c["id"]: json.dumps(c["args"]) for c in orig.get("calls", [])}
        if calls:
            d["calls"] = [
                {"id": p.call_id, "args": "=" if p.args == calls[p.call_id] else p.args}
                for p in kept
                if p.kind == "tool_call"
            ]
    return d


def summarised(msgs: list[Message], before: View, after: View) -> list[str]:
    """What a summarising compaction gave the summariser: the previous summary, then the messages that left."""
    left = [msgs[i].id for a, b in minus(ranges(before, len(msgs)), ranges(after, len(msgs))) for i in range(a, b)]
    return (["summary"] if before.summary is not None else []) + [x for x in left if x != msgs[0].id]


def policy_for(case: dict[str, Any]) -> Policy[Any]:
    params = dict(case["settings"]["policy_params"])
    if isinstance(params.get("exclude_tools"), list):
        params["exclude_tools"] = tuple(params["exclude_tools"])
    return make_policy(case["settings"]["policy"], params)


def ours_compact(case: dict[str, Any]) -> dict[str, Any]:
    """One forced compaction of the case's messages (the strategy's ``compact()``)."""
    policy = policy_for(case)
    conv = conversation(case)
    st = state_of(policy, conv, ModelConfig(context_window=1_000_000, output_reserve=8_192))
    plan: Plan | None = policy.decide(st, "overflow")
    view = st.view if plan is None else plan.view_from(st.view)
    if plan is not None and plan.summarize:
        view = view.with_(
            summary=Summary(plan.summary_request.wrapper.replace("{summary}", "x"), role=plan.summary_request.role)
        )
    originals = {m["id"]: m for m in case["input"]["messages"]}
    out: dict[str, Any] = {"compacted": True, "view": describe(list(conv.messages), view, originals)}
    if plan is not None and plan.summarize:
        out["summarised"] = summarised(list(conv.messages), st.view, view)
    return out


def ours_handler(case: dict[str, Any]) -> dict[str, Any]:
    """The engine replaying the script: per agent request, whether the policy compacted before it, the view."""
    window = case["settings"]["window"]
    config = RunConfig(
        model=ModelConfig(context_window=window, output_reserve=min(8_192, window // 16)), tokenizer="chars4"
    )
    conv = conversation(case)
    result, captured, engine = run_capture(policy_for(case), conv, config)
    msgs = list(engine.ledger.messages)
    originals = {m["id"]: m for m in case["input"]["messages"]}
    records = [e for e in result.log if isinstance(e, CompactionCreated)]
    by_turn = {r.turn: r for r in records}
    previous = View()
    requests = []
    replies = [m for m in conv.messages if m.role == "assistant"]
    for turn, (reply, cap) in enumerate(zip(replies, captured, strict=False)):
        req: dict[str, Any] = {"before": reply.id, "compacted": turn in by_turn}
        n = next(i for i, m in enumerate(msgs) if m.id == reply.id)
        req["view"] = describe(msgs[:n], cap.view, originals)
        if turn in by_turn and by_turn[turn].view.summary is not None:
            req["summarised"] = summarised(msgs[:n], previous, by_turn[turn].view)
        if turn in by_turn:
            previous = by_turn[turn].view
        requests.append(req)
    return {"requests": requests}


def ours(case: dict[str, Any]) -> dict[str, Any]:
    return ours_handler(case) if case["settings"]["mode"] == "handler" else ours_compact(case)


def comparable(expected: dict[str, Any]) -> dict[str, Any]:
    """The golden record without inspect's token counts (they document margins; they are not compared)."""
    if "requests" not in expected:
        return expected
    return {"requests": [{k: v for k, v in r.items() if k != "tokens"} for r in expected["requests"]]}


def test_golden_file_names_the_package_and_version() -> None:
    assert DOC["package"] == "inspect-ai"
    assert DOC["version"] == "0.3.261"
    assert len(CASES) >= 12 and set(KNOWN) <= set(CASES)


@pytest.mark.parametrize("name", [n for n in CASES if n not in KNOWN])
def test_case_agrees(name: str) -> None:
    case = CASES[name]
    assert ours(case) == comparable(case["expected"])


@pytest.mark.parametrize("name", list(KNOWN))
def test_known_difference_still_differs(name: str) -> None:
    case = CASES[name]
    try:
        got = ours(case)
    except UnknownName:  # the parameter does not exist here: still different
        return
    assert got != comparable(case["expected"]), f"{name} now agrees: remove it from KNOWN ({KNOWN[name]})"


def test_agreement_per_policy() -> None:
    """Cases agreeing / cases, per policy (each agreeing case is checked by ``test_case_agrees``)."""
    total: Counter[str] = Counter(c["settings"]["policy"] for c in CASES.values())
    known: Counter[str] = Counter(CASES[n]["settings"]["policy"] for n in KNOWN)
    agreement = {p: (total[p] - known[p], total[p]) for p in total}
    assert agreement == {
        "inspect-edit": (15, 18),
        "inspect-trim": (9, 9),
        "inspect-summary": (3, 3),
        "inspect-auto": (1, 1),
    }


# -- long conversations (conformance/long/), request by request ---------------------------------------------------
LONG = DOC["long"]


def long_case(entry: dict[str, Any]) -> dict[str, Any]:
    """The generator's handler case of a long conversation: the system prompt, one tool message per result."""
    conv = long.by_name(entry["conversation"])
    msgs: list[dict[str, Any]] = [{"id": "m0", "role": "system", "text": conv["system"]}]
    for m in conv["messages"]:
        if m["role"] == "tool":
            for j, r in enumerate(m["results"]):
                rid = m["id"] if len(m["results"]) == 1 else f"{m['id']}.{j}"
                msgs.append({"id": rid, "role": "tool", "call_id": r["call_id"], "name": r["name"], "text": r["text"]})
        elif m["role"] == "assistant":
            calls = [{"id": c["id"], "name": c["name"], "args": json.loads(c["args"])} for c in m["calls"]]
            msgs.append({"id": m["id"], "role": "assistant", "text": m["text"], **({"calls": calls} if calls else {})})
        else:
            msgs.append({"id": m["id"], "role": "user", "text": m["text"]})
    return {"name": f"long_{entry['strategy']}_{entry['conversation']}", "input": {"messages": msgs}, **entry}


def digest(request: dict[str, Any]) -> dict[str, Any]:
    """The generator's digest of one request (whether it compacted, messages and cleared results sent, the view's
    hash)."""
    view = request["view"]
    cleared = sum(1 for v in view if v.get("role") == "tool" and v.get("result") != "=")
    text = json.dumps(view, sort_keys=True)
    return {
        "before": request["before"],
        "compacted": request["compacted"],
        "messages": len(view),
        "cleared": cleared,
        "view": hashlib.sha256(text.encode()).hexdigest()[:16],
    }


@pytest.mark.parametrize("entry", LONG, ids=[f"{e['strategy']}-{e['conversation']}" for e in LONG])
def test_long_requests(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Every request of a long conversation replayed through the engine: the same view as inspect's handler sends
    (compacted or not, every message and cleared result). Where inspect raises "Compaction insufficient" (the sample
    ends), ours makes no plan and goes on (``insufficient``, the documented difference of
    ``handler_edit_insufficient``):
    that request counts as documented and the comparison stops there, as inspect's run does."""
    theirs = entry["requests"]
    ours = [digest(r) for r in ours_handler(long_case(entry))["requests"]][: len(theirs)]
    documented = sum(1 for r in theirs if "error" in r)
    agree = sum(1 for a, b in zip(ours, theirs, strict=True) if a == b)
    with capsys.disabled():
        print(
            f"\ninspect {entry['strategy']} {entry['conversation']}: {agree / len(theirs):.1%} of {len(theirs)} "
            f"requests agree, {(agree + documented) / len(theirs):.1%} with {documented} insufficient"
        )
    assert agree + documented == len(theirs)
