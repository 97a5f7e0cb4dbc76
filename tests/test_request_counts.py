"""The counts-only replay (sim.replay.counts) gives the full replay's counts: turn, prompt tokens, messages in view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from policies import make_policy
from sim.calibration.features import counting_config, replay_counts
from sim.core.counting import segments
from sim.core.errors import InvalidRequest
from sim.core.view import View
from sim.formats.importing import recorded_conversations
from sim.replay.counts import request_counts
from sim.replay.engine import run
from sim.replay.request import RequestBuilder
from sim.scenarios import scenario_conversation

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")
KEYS = ("turn", "context_tokens", "messages_in_view", "error")
SOURCES = [
    ("claude-code", "claude-code"),
    ("openhands", "auto"),
    ("pydantic-ai-cassettes", "auto"),
    ("swe-agent", "auto"),
]


def _same(conv) -> int:  # type: ignore[no-untyped-def]
    checked = 0
    for seg in segments(conv):
        if not any(m.role == "assistant" for m in seg.messages):
            continue
        full = [{k: r[k] for k in KEYS} for r in replay_counts(seg, cache="off")]
        assert replay_counts(seg, cache="off", counts_only=True) == full, conv.id
        checked += len(full)
    return checked


@pytest.mark.parametrize(("folder", "fmt"), SOURCES)
def test_the_counts_are_the_full_replays_on_the_shared_recordings(folder: str, fmt: str) -> None:
    if not (RECORDED / folder).is_dir():
        pytest.skip(f"no shared recordings at {RECORDED / folder}")
    convs, _ = recorded_conversations(str(RECORDED / folder), fmt, True)
    assert sum(_same(c) for c in convs) > 0


def test_the_counts_are_the_full_replays_on_scenarios() -> None:
    for name in ("coding-agent", "research-agent", "support-chat"):
        assert _same(scenario_conversation(name, 0, {})) > 0


def test_a_request_the_provider_refuses_ends_the_counts_as_it_ends_the_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mock provider refusing the third request (as it refuses a broken tool pairing): both replays stop there
    with the same error row."""
    real = RequestBuilder.validate

    def refuse_the_third(self: RequestBuilder, view: View, status: str | None) -> None:
        if self.ledger.messages and sum(m.role == "assistant" for m in self.ledger.messages) == 2:
            raise InvalidRequest("tool call c9 has no result")
        real(self, view, status)

    monkeypatch.setattr(RequestBuilder, "validate", refuse_the_third)
    conv = scenario_conversation("coding-agent", 0, {})
    config = counting_config(cache="off")
    full = [
        {k: r[k] for k in KEYS} for r in run(make_policy("none"), conv, config).rows if r["request_kind"] == "agent"
    ]
    assert len(full) == 3 and full[-1]["error"] == "invalid-request: tool call c9 has no result"
    assert request_counts(conv, config) == full
