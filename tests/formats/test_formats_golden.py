"""Golden tests: small inputs the project wrote itself, imported and compared byte for byte.

Each input under ``tests/golden/formats/`` has an ``*.expected.jsonl`` beside it holding what the
importer must produce, written in the native format. After an intended change of an importer, run
with ``CSIM_UPDATE_GOLDEN=1`` to rewrite the expected files, and review their diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.formats import read
from sim.formats.native import dumps
from tests.formats._golden import check_golden

CASES = [
    ("openai_chat.json", "openai-chat"),
    ("claude_code.jsonl", "claude-code"),
    ("native.jsonl", "native"),
    ("swe_agent.traj", "swe-agent"),
    ("swe_agent_fc.traj", "swe-agent"),
    ("mini_swe_agent.traj.json", "mini-swe-agent"),
    ("mini_swe_agent_toolcall.traj.json", "mini-swe-agent"),
    ("openhands_events.json", "openhands-events"),
    ("openhands_eval.jsonl", "openhands-eval"),
    ("openhands_llm.json", "openhands-llm"),
    ("tau_bench.json", "tau-bench"),
    ("anthropic_messages.jsonl", "anthropic-messages"),
    ("openai_responses.json", "openai-responses"),
    ("codex_rollout.jsonl", "codex-rollout"),
    ("vcr_cassette.yaml", "vcr-cassette"),
    ("kv_trace.json", "kv-trace"),
]


def _expected_path(golden: Path, name: str) -> Path:
    return golden / (name.split(".")[0] + ".expected.jsonl")


@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_import_matches_golden(golden: Path, name: str, fmt: str) -> None:
    check_golden(golden / name, fmt)


@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_expected_files_read_back_as_themselves(golden: Path, name: str, fmt: str) -> None:
    """The expected files are native files: reading and writing one again changes no byte."""
    expected_path = _expected_path(golden, name)
    assert expected_path.exists(), f"{expected_path} is missing; run with CSIM_UPDATE_GOLDEN=1 to create it"
    again = read(expected_path, "native")
    assert "".join(dumps(c) for c in again.conversations).encode("utf-8") == expected_path.read_bytes()
    assert again.conversations == read(golden / name, fmt).conversations


def test_golden_claude_code_structure(golden: Path) -> None:
    """What the hand-written transcript was built to exercise is really there."""
    result = read(golden / "claude_code.jsonl", "claude-code")
    (conv,) = result.conversations
    first = conv.messages[1]
    assert first.role == "assistant" and first.meta["records"] == 5
    assert [p.kind for p in first.parts] == ["text", "thinking", "text", "tool_call", "tool_call"]
    assert first.usage is not None and first.usage.output_tokens == 187  # the last line's, not the placeholder
    assert conv.meta["sidechain_records"] == 1
    assert conv.meta["skipped_records"]["progress"] == 1
    (comp,) = conv.meta["compactions"]
    assert comp == {"index": 10, "trigger": "manual", "pre_tokens": 15420}
    assert conv.messages[10].meta["compact_summary"] is True
    assert conv.messages[9].command == "compact"
    assert [s.reason.split(":")[0] for s in result.skipped] == ["repaired"]
