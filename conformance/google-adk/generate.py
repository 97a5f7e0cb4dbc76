"""Run Google ADK's own event compaction on every case of ``cases.py`` and write the golden file.

Runs in ``.venv-conformance/google-adk`` (``requirements.txt``), never in the project's environment:

    .venv-conformance/google-adk/bin/python conformance/google-adk/generate.py

Each case is replayed as an ADK session: events are appended in order (one invocation id per user message, the
timestamp of an event its position), and at the points where ADK compacts, its own functions run:
``_run_compaction_for_sliding_window`` (the Runner's post-invocation compaction, token threshold first) before each
user message after the first, and ``_run_compaction_for_token_threshold_config`` (the request processor) before each
model call. No network and no model: the summariser is a stand-in ``BaseEventsSummarizer`` that writes
``summary_chars`` characters naming the compaction (``S1``, ``S2``...; ADK's ``LlmEventSummarizer`` would call the
agent's model) and returns the event ADK's own summariser returns (a ``model``-role content, the range of the events
it was given). Recorded per case: each compaction (at which message, the first and last event it summarised, whether
the previous summary was its seed) and the request contents at the end (``_process_compaction_events``: the event
ids and summaries sent, in order). Writes ``tests/golden/conformance/google-adk.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.apps.compaction import (
    _estimate_prompt_token_count,
    _run_compaction_for_sliding_window,
    _run_compaction_for_token_threshold_config,
)
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.flows.llm_flows.context._compaction import _process_compaction_events
from google.adk.sessions.session import Session
from google.genai import types

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "long"))
from cases import CASES  # noqa: E402
from conversations import load, model_calls  # noqa: E402

GOLDEN = HERE.parents[1] / "tests" / "golden" / "conformance" / "google-adk.json"
AGENT = "agent"


class StandIn(BaseEventsSummarizer):
    """Summarises without a model: ``S<k>`` padded to ``chars`` characters; records what it was given."""

    def __init__(self, chars: int) -> None:
        self.chars = chars
        self.calls: list[list[Event]] = []

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        if not events:
            return None
        self.calls.append(list(events))
        label = f"S{len(self.calls)}"
        text = label + "." * max(0, self.chars - len(label))
        content = types.Content(role="model", parts=[types.Part(text=text)])
        compaction = EventCompaction(
            start_timestamp=events[0].timestamp, end_timestamp=events[-1].timestamp, compacted_content=content
        )
        return Event(author="user", actions=EventActions(compaction=compaction), invocation_id=Event.new_id())


class Sessions:
    """The one method of a session service the compaction code calls."""

    async def append_event(self, session: Session, event: Event) -> Event:
        session.events.append(event)
        return event


def to_event(m: dict[str, Any], invocation: str, ts: float) -> Event:
    if m["role"] == "user":
        content = types.Content(role="user", parts=[types.Part(text=m["text"])])
        return Event(id=m["id"], author="user", invocation_id=invocation, timestamp=ts, content=content)
    if m["role"] == "assistant":
        parts = [types.Part(text=m["text"])] if m["text"] else []
        parts += [
            types.Part(function_call=types.FunctionCall(id=c["id"], name=c["name"], args=json.loads(c["args"])))
            for c in m["calls"]
        ]
        usage = (
            types.GenerateContentResponseUsageMetadata(prompt_token_count=m["usage"])
            if m.get("usage") is not None
            else None
        )
        return Event(
            id=m["id"],
            author=AGENT,
            invocation_id=invocation,
            timestamp=ts,
            content=types.Content(role="model", parts=parts),
            usage_metadata=usage,
        )
    parts = [
        types.Part(
            function_response=types.FunctionResponse(id=r["call_id"], name=r["name"], response={"result": r["text"]})
        )
        for r in m["results"]
    ]
    content = types.Content(role="user", parts=parts)
    return Event(id=m["id"], author=AGENT, invocation_id=invocation, timestamp=ts, content=content)


def config_of(settings: dict[str, Any], summarizer: StandIn) -> EventsCompactionConfig:
    fields = ("compaction_interval", "overlap_size", "token_threshold", "event_retention_size")
    return EventsCompactionConfig(summarizer=summarizer, **{k: settings[k] for k in fields if k in settings})


async def run(case: dict[str, Any]) -> dict[str, Any]:
    settings = case["settings"]
    summarizer = StandIn(settings.get("summary_chars", 2))
    config = config_of(settings, summarizer)
    agent = LlmAgent(name=AGENT, model="gemini-2.5-flash")
    app = App(name="conformance", root_agent=agent, events_compaction_config=config)
    session = Session(id="s", app_name="conformance", user_id="u", events=[])
    service = Sessions()
    compactions: list[dict[str, Any]] = []
    ids = {}
    invocation = ""
    token = config.token_threshold is not None

    def record(at: str, point: str) -> None:
        while len(summarizer.calls) > len(compactions):
            given = summarizer.calls[len(compactions)]
            seeded = given[0].id not in ids.values()
            raw = [e.id for e in given if e.id in ids.values()]
            compactions.append(
                {"at": at, "point": point, "first": raw[0], "last": raw[-1], "events": len(raw), "seeded": seeded}
            )

    for k, m in enumerate(case["input"]):
        if m["role"] == "user" and invocation:
            async for event in _run_compaction_for_sliding_window(app, session, service):  # type: ignore[arg-type]
                session.events.append(event)
            record(m["id"], "post-invocation")
        if m["role"] == "assistant" and token:
            await _run_compaction_for_token_threshold_config(
                config=config,
                session=session,
                session_service=service,
                agent=agent,
                agent_name=AGENT,  # type: ignore[arg-type]
            )
            record(m["id"], "request")
        if m["role"] == "user":
            invocation = f"inv-{m['id']}"
        event = to_event(m, invocation, float(k + 1))
        ids[k] = event.id
        session.events.append(event)
    contents = []
    for e in _process_compaction_events(session.events, AGENT):
        if e.actions and e.actions.compaction:
            text = e.content.parts[0].text if e.content and e.content.parts else ""
            contents.append("summary " + text.rstrip("."))
        else:
            contents.append(e.id)
    return {"compactions": compactions, "contents": contents}


# -- long conversations (conformance/long/) ------------------------------------------------------------------------
def long_counts(conv: dict[str, Any]) -> dict[str, Any]:
    """``_estimate_prompt_token_count`` of the session's events before each model call (no compaction)."""
    msgs = conv["messages"]
    events, invocation = [], ""
    for k, m in enumerate(msgs):
        if m["role"] == "user":
            invocation = f"inv-{m['id']}"
        events.append(to_event(m, invocation, float(k + 1)))
    counts = [
        _estimate_prompt_token_count(events=events[:i], current_branch=None, agent_name=AGENT) or 0
        for i in model_calls(msgs)
    ]
    return {"conversation": conv["name"], "counts": counts}


def long_runs(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The session replayed through ADK's compaction as the cases are, no usage reported (so every token check
    estimates): token threshold at a quarter of the whole session's estimate, keeping 5 events; the docs' sliding
    window (every 3 invocations, overlap 1)."""
    whole = long_counts(conv)["counts"][-1]
    settings = (
        ("token", {"token_threshold": max(1, whole // 4), "event_retention_size": 5}),
        ("sliding", {"compaction_interval": 3, "overlap_size": 1}),
    )
    return [
        {
            "conversation": conv["name"],
            "kind": kind,
            "settings": st,
            "expected": asyncio.run(run({"input": conv["messages"], "settings": st})),
        }
        for kind, st in settings
    ]


def main() -> None:
    out = []
    for case in CASES:
        out.append({**case, "expected": asyncio.run(run(case))})
    convs = load()
    long = {"counts": [long_counts(c) for c in convs], "runs": [r for c in convs for r in long_runs(c)]}
    golden = {"package": "google-adk", "version": version("google-adk"), "cases": out, "long": long}
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {GOLDEN} (google-adk {golden['version']})")


if __name__ == "__main__":
    main()
