"""The command line end to end: run, list, check, errors; outputs byte-identical across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sim.cli import main

ROOT = Path(__file__).resolve().parents[1]
RUN = [
    "run",
    "--policy",
    "cloudflare-os",
    "-P",
    "trigger_ratio=0.8",
    "--scenario",
    "coding-agent",
    "--seed",
    "3",
    "--window",
    "60000",
    "--output-reserve",
    "2000",
    "-S",
    "huge_prob=0",
]


def test_run_writes_requests_run_json_and_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--out", str(tmp_path)]) == 0
    frame = pd.read_parquet(tmp_path / "requests.parquet")
    assert {
        "run_id",
        "policy",
        "params_hash",
        "conversation",
        "turn",
        "request_kind",
        "context_tokens",
        "output_tokens",
        "cost_usd",
        "compaction_id",
        "messages_in_view",
        "facts_needed",
        "facts_visible",
        "violations",
    } <= set(frame.columns)
    assert set(frame["request_kind"]) <= {"agent", "summariser", "grace"}
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["seed"] == 3 and doc["tokenizer"] == "cl100k_base"
    assert doc["policy"] == {"policy": "cloudflare-os", "params": {"trigger_ratio": 0.8, "tail_ratio": 0.3}}
    assert doc["versions"]["tiktoken"] and doc["config"]["model"]["context_window"] == 60000
    summary = doc["summary"]
    for key in (
        "peak_context_tokens",
        "cumulative_input_tokens",
        "total_cost_usd",
        "compactions",
        "retention_by_kind",
        "overflows",
        "finish_reason",
        "violation_count",
    ):
        assert key in summary
    agent = frame[frame["request_kind"] == "agent"]
    assert summary["agent_requests"] == (agent["error"] == "").sum()
    header = json.loads((tmp_path / "log.jsonl").read_text().splitlines()[0])
    assert header["format"] == "csim-log" and header["schema_version"] == 2
    assert "wrote" in capsys.readouterr().out


def test_outputs_are_byte_identical_twice_and_in_another_process(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([*RUN, "--out", str(a)]) == 0
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [sys.executable, "-m", "sim", *RUN, "--out", str(b)], check=True, cwd=ROOT, env=env, capture_output=True
    )
    for name in ("requests.parquet", "run.json", "log.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_run_on_a_recorded_conversation(tmp_path: Path) -> None:
    src = ROOT / "tests" / "golden" / "formats" / "openai_chat.json"
    assert (
        main(["run", "--policy", "none", "--conversation", str(src), "--format", "openai-chat", "--out", str(tmp_path)])
        == 0
    )
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["source"]["format"] == "openai-chat" and doc["runs"]


@pytest.mark.parametrize("what", ["policies", "scenarios", "formats", "tokenizers"])
def test_list(what: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", what]) == 0
    out = capsys.readouterr().out
    expected = {
        "policies": "cloudflare-os",
        "scenarios": "coding-agent",
        "formats": "claude-code",
        "tokenizers": "cl100k_base",
    }[what]
    assert expected in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--policy", "cloudflare", "--scenario", "coding-agent", "--out", "x"], "Did you mean 'cloudflare-os'"),
        (
            ["run", "--policy", "cloudflare-os", "-P", "trigger_rato=0.8", "--scenario", "coding-agent", "--out", "x"],
            "Did you mean 'trigger_ratio'",
        ),
        (
            ["run", "--policy", "cloudflare-os", "-P", "trigger_ratio", "--scenario", "coding-agent", "--out", "x"],
            "is not name=value",
        ),
        (
            ["run", "--policy", "cloudflare-os", "--scenario", "coding-agnet", "--out", "x"],
            "Did you mean 'coding-agent'",
        ),
        (["run", "--policy", "none", "--conversation", "missing.jsonl", "--out", "x"], "does not exist"),
        (["run", "--policy", "none", "--out", "x"], "exactly one of"),
    ],
)
def test_user_mistakes_are_one_clear_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_malformed_recording_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u1"}\n{not json\n')
    assert (
        main(
            [
                "run",
                "--policy",
                "none",
                "--conversation",
                str(bad),
                "--format",
                "claude-code",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "bad.jsonl:2" in err


def test_check_passes_for_a_bundled_policy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--policy", "none", "--examples", "15"]) == 0
    assert "15 examples" in capsys.readouterr().out
