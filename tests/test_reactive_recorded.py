"""The reactive agent on a recorded session (issue 34, item 3): what a policy loses of the probes mined from it
(:mod:`sim.formats.probes`) changes the trajectory as a scripted fact's loss does, and the cost column carries it.

A lost artifact that came in a tool result is read again (an extra request whose call is the recorded one, and a
result with the recorded result's text); a lost decision or rule is recalled wrongly with ``wrong_recall`` (an error,
repaired with ``repair_rate``), else its work is redone. ``vercel-prune-messages`` prunes before nearly every
request, so on a long Claude Code session it loses artifacts, decisions and the user's words alike.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest

from policies import make_policy
from sim import api
from sim.core.log import MessageAppended
from sim.replay.engine import RunResult
from sim.replay.engine import run as engine_run

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")
SESSION = RECORDED / "claude-code" / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
POLICY = "vercel-prune-messages"


def _session() -> Path:
    if not SESSION.exists():
        pytest.skip(f"{SESSION} is absent: the shared recordings live in ../shared/recorded (or $CSIM_RECORDED)")
    return SESSION


@functools.cache
def _runs() -> tuple[Any, Any]:
    path = _session()
    return tuple(api.run(POLICY, {}, conversation=path, agent=a).runs.iloc[0] for a in ("scripted", "reactive"))  # type: ignore[return-value]


@functools.cache
def _reactive_run() -> RunResult:
    conv, config, _ = api.one_conversation(
        scenario=None,
        scenario_params=None,
        path=_session(),
        format="auto",
        lenient=False,
        conversation_id=None,
        seed=0,
        run_options={"agent": "reactive"},
    )
    return engine_run(make_policy(POLICY), conv, config)


def test_what_the_policy_loses_costs_extra_requests_errors_and_tasks() -> None:
    scripted, reactive = _runs()
    assert scripted.facts_needed >= 100 and scripted.reacquisitions == scripted.extra_requests == 0
    assert reactive.reacquisitions > 0 and reactive.errors > 0 and reactive.repeated_work > 0
    assert reactive.extra_requests >= reactive.reacquisitions
    assert reactive.extra_cost_usd > 0
    # the cost column includes what the loss costs: the extra requests, and the longer prompts after them
    assert reactive.total_cost_usd >= scripted.total_cost_usd + reactive.extra_cost_usd * 0.5
    assert reactive.task_success < scripted.task_success == 1.0
    assert reactive.retention_recall > scripted.retention_recall  # what is read again is visible at its need


def test_a_lost_artifact_is_read_again_with_the_recorded_text() -> None:
    result = _reactive_run()
    appended = [e.message for e in result.log if isinstance(e, MessageAppended)]
    by_id = {m.id: m for m in appended}
    rereads = [m for m in appended if "~re" in m.id and m.id.endswith("-result")]
    assert rereads
    recorded_texts = {p.text for m in appended if "~re" not in m.id for p in m.results}
    for m in rereads:
        assert by_id[m.id.removesuffix("-result")].calls  # the extra request's reply is the call
        assert all(p.text in recorded_texts for p in m.results)  # the recorded result's text, as it was
