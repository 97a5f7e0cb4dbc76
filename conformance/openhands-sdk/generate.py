"""Run the OpenHands SDK's own ``LLMSummarizingCondenser`` on every case of ``cases.py``; write the golden file.

Runs in ``.venv-conformance/openhands-sdk`` (``requirements.txt``; the SDK needs Python 3.12 or newer), never in
the project's environment:

    .venv-conformance/openhands-sdk/bin/python conformance/openhands-sdk/generate.py

Each case's messages become SDK events (``SystemPromptEvent``, ``MessageEvent``, one ``ActionEvent`` per tool call
sharing the message's ``llm_response_id``, one ``ObservationEvent`` per result); an earlier condensation
(``prior``) is a ``Condensation`` event in the history, a request a ``CondensationRequest``. ``View.from_events``
builds the view and ``condense(view, agent_llm=...)`` is called once, as the agent calls it before an LLM call.
The summaries come from the SDK's own ``TestLLM`` (``openhands.sdk.testing``), which returns scripted replies;
the agent LLM is a ``TestLLM`` too, whose ``max_input_tokens`` is set far above every case, so only the case's
``max_tokens`` caps the tokens (counted by the SDK itself, through litellm's offline tokenizer).

Writes ``tests/golden/conformance/openhands-sdk.json``: per case, whether it condensed, the requirement
(``condensation_requirement``), the forgotten event ids, the summary's offset, and the events of the view after
the condensation in order (``SUMMARY`` for a summary). Its ``long`` section: every ``condense`` call the agent makes
over each long conversation of ``conformance/long/`` (:func:`long_run`).
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from openhands.sdk.context.condenser import LLMSummarizingCondenser
from openhands.sdk.context.condenser.utils import get_total_token_count
from openhands.sdk.context.view import View
from openhands.sdk.event import ActionEvent, Condensation, CondensationRequest, MessageEvent, ObservationEvent
from openhands.sdk.event.condenser import CondensationSummaryEvent
from openhands.sdk.event.llm_convertible import SystemPromptEvent
from openhands.sdk.llm import Message, MessageToolCall, TextContent, ThinkingBlock
from openhands.sdk.testing import TestLLM
from openhands.sdk.tool.builtins.think import ThinkObservation

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "openhands-sdk.json"
FAKE_SUMMARY = "FAKE SUMMARY"
AGENT_MAX_INPUT = 10_000_000


def event_ids(m: dict[str, Any]) -> list[str]:
    """The ids of the events message ``m`` becomes (``cases.py``)."""
    n = len(m.get("calls") or ()) if m["role"] == "assistant" else len(m.get("results") or ())
    if m["role"] in ("system", "user") or n <= 1:
        return [m["id"]]
    return [f"{m['id']}.{k}" for k in range(n)]


def to_events(m: dict[str, Any]) -> list[Any]:
    ids = event_ids(m)
    if m["role"] == "system":
        return [SystemPromptEvent(id=ids[0], system_prompt=TextContent(text=m["text"]), tools=[])]
    if m["role"] == "user":
        msg = Message(role="user", content=[TextContent(text=m["text"])])
        return [MessageEvent(id=ids[0], source="user", llm_message=msg)]
    if m["role"] == "assistant" and not m["calls"]:
        msg = Message(role="assistant", content=[TextContent(text=m["text"])])
        return [MessageEvent(id=ids[0], source="agent", llm_message=msg)]
    if m["role"] == "assistant":
        out = []
        for k, (eid, c) in enumerate(zip(ids, m["calls"], strict=True)):
            first = k == 0
            out.append(
                ActionEvent(
                    id=eid,
                    thought=[TextContent(text=m["text"])] if first and m["text"] else [],
                    thinking_blocks=[ThinkingBlock(thinking=m["thinking"])] if first and m.get("thinking") else [],
                    action=None,
                    tool_name=c["name"],
                    tool_call_id=c["id"],
                    tool_call=MessageToolCall(id=c["id"], name=c["name"], arguments=c["args"], origin="completion"),
                    llm_response_id=f"resp-{m['id']}",
                )
            )
        return out
    return [
        ObservationEvent(
            id=eid,
            observation=ThinkObservation.from_text(r["text"]),
            action_id=f"action-of-{r['id']}",
            tool_name=r["name"],
            tool_call_id=r["id"],
        )
        for eid, r in zip(ids, m["results"], strict=True)
    ]


def summary_llm(replies: int = 8) -> TestLLM:
    reply = Message(role="assistant", content=[TextContent(text=FAKE_SUMMARY)])
    return TestLLM.from_messages([reply] * replies, usage_id="condenser")


def run(case: dict[str, Any]) -> dict[str, Any]:
    s = case["settings"]
    history: list[Any] = []
    for m in case["input"]:
        history.extend(to_events(m))
    if s["prior"] is not None:
        forgot = {eid for m in case["input"] if m["id"] in s["prior"]["forgot"] for eid in event_ids(m)}
        at = max(i for i, e in enumerate(history) if e.id in forgot) + 1
        prior = Condensation(
            id="prior",
            forgotten_event_ids=forgot,
            summary="PRIOR SUMMARY",
            summary_offset=s["prior"]["offset"],
            llm_response_id="prior-resp",
        )
        history.insert(at, prior)
    if s["request"]:
        history.append(CondensationRequest(id="request"))
    view = View.from_events(history)
    condenser = LLMSummarizingCondenser(
        llm=summary_llm(),
        max_size=s["max_size"],
        keep_first=s["keep_first"],
        max_tokens=s["max_tokens"],
        minimum_progress=s["minimum_progress"],
    )
    agent_llm = TestLLM.from_messages([], usage_id="agent", max_input_tokens=AGENT_MAX_INPUT)
    requirement = condenser.condensation_requirement(view, agent_llm=agent_llm)
    before = [_name(e) for e in view.events]
    result = condenser.condense(view, agent_llm=agent_llm)
    expected: dict[str, Any] = {
        "requirement": None if requirement is None else requirement.value,
        "view_before": before,
        "events_before": len(view),
    }
    if isinstance(result, Condensation):
        after = result.apply(list(view.events))
        expected.update(
            condensed=True,
            forgotten=sorted(_name_id(view, eid) for eid in result.forgotten_event_ids),
            summary_offset=result.summary_offset,
            summary=result.summary,
            view_after=[_name(e) for e in after],
        )
    else:
        expected.update(condensed=False, forgotten=[], summary_offset=None, summary=None, view_after=before)
    return {"name": case["name"], "input": case["input"], "settings": s, "expected": expected}


def _name(e: Any) -> str:
    return "SUMMARY" if isinstance(e, CondensationSummaryEvent) else str(e.id)


def _name_id(view: View, eid: str) -> str:
    return next((_name(e) for e in view.events if e.id == eid), eid)


# -- long conversations (conformance/long/): the condenser before every LLM call, as the agent runs it -------------
def case_messages(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """A long conversation in this folder's form (``cases.py``): the system prompt first, each result's ``id`` its
    call's."""
    out: list[dict[str, Any]] = [{"id": "system", "role": "system", "text": conv["system"]}]
    for m in conv["messages"]:
        if m["role"] == "tool":
            results = [{"id": r["call_id"], "name": r["name"], "text": r["text"]} for r in m["results"]]
            out.append({"id": m["id"], "role": "tool", "results": results})
        else:
            out.append(m)
    return out


#: The long runs: ``events`` with ``max_size`` a quarter of the conversation's events (``keep_first`` the SDK's 2);
#: ``tokens`` with ``max_tokens`` a third of the whole conversation's tokens, counted by the SDK (``max_size`` its 240);
#: ``default-agent`` as ``default_condenser()`` makes it for the default agent (``max_size`` 80, ``keep_first`` 4).
LONG_RUNS = ("events", "tokens", "default-agent")
#: Condensations the agent may chain before one LLM call: each ends the step, and the next step condenses again.
MAX_ROUNDS = 4


def long_run(conv: dict[str, Any], run_name: str) -> dict[str, Any]:
    """The conversation's events appended one by one, and before every LLM call (each assistant message) what the
    agent does (``agent.py``: ``prepare_llm_messages(state.view, condenser=...)``): ``condense(view, agent_llm)`` on
    the view of the whole history; a ``Condensation`` is appended to the history and the step ends, so the next step
    condenses again, until a view comes back. Each ``condense`` call is one decision: the requirement, and for a
    condensation the events it forgot (``SUMMARY`` for the previous summary) and where the summary went."""
    msgs = case_messages(conv)
    agent_llm = TestLLM.from_messages([], usage_id="agent", max_input_tokens=AGENT_MAX_INPUT)
    every = [e for m in msgs for e in to_events(m)]
    events = sum(1 for m in msgs for _ in event_ids(m))
    if run_name == "events":
        settings: dict[str, Any] = {"max_size": events // 4}
    elif run_name == "tokens":
        settings = {"max_tokens": get_total_token_count(every, agent_llm) // 3}
    else:
        settings = {"max_size": 80, "keep_first": 4}
    condenser = LLMSummarizingCondenser(llm=summary_llm(10_000), **settings)
    history: list[Any] = []
    decisions = []
    for m in msgs:
        if m["role"] == "assistant":
            for k in range(MAX_ROUNDS):
                view = View.from_events(history)
                requirement = condenser.condensation_requirement(view, agent_llm=agent_llm)
                result = condenser.condense(view, agent_llm=agent_llm)
                decision: dict[str, Any] = {
                    "at": m["id"],
                    "round": k,
                    "events": len(view),
                    "requirement": None if requirement is None else requirement.value,
                }
                if not isinstance(result, Condensation):
                    decisions.append({**decision, "condensed": False})
                    break
                forgotten = sorted(_name_id(view, eid) for eid in result.forgotten_event_ids)
                decisions.append(
                    {**decision, "condensed": True, "forgotten": forgotten, "summary_offset": result.summary_offset}
                )
                history.append(result.model_copy(update={"id": f"condensation-{len(decisions)}"}))
        history.extend(to_events(m))
    return {"conversation": conv["name"], "run": run_name, "settings": settings, "decisions": decisions}


def main() -> None:
    out = {
        "package": "openhands-sdk",
        "version": version("openhands-sdk"),
        "cases": [run(c) for c in CASES],
        "long": [long_run(conv, name) for name in LONG_RUNS for conv in load()],
    }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    print(f"wrote {GOLDEN} ({len(out['cases'])} cases, openhands-sdk {out['version']})")


if __name__ == "__main__":
    main()
