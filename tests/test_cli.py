"""The command line end to end: run, list, check, errors; outputs byte-identical across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.cli.main import ENDS_AT_ONCE, main
from sim.sweep.results import load_results, stored_log

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


def test_run_is_a_one_configuration_sweep_with_its_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--out", str(tmp_path)]) == 0
    res = load_results(tmp_path)
    assert res.kind == "sweep" and len(res.runs) == 1
    run = res.runs.iloc[0]
    assert run["config"] == "cloudflare-os trigger_ratio=0.8" and run["seed"] == 3
    manifest = res.manifest
    assert manifest["spec"]["run"]["window"] == 60000 and manifest["spec"]["run"]["tokenizer"] == "cl100k_base"
    assert manifest["versions"]["tiktoken"] and manifest["spec"]["seeds"] == [3]
    frame = res.requests
    assert set(frame["request_kind"]) <= {"agent", "summariser", "grace"}
    agent = frame[frame["request_kind"] == "agent"]
    assert run["agent_requests"] == (agent["error"] == "").sum()
    assert run["compaction_count"] == len(res.compactions) > 0
    # the run's log is kept, and its requests are the table's rows
    log = stored_log(tmp_path, run["run_key"])
    assert log is not None
    sent = [e for e in log[1] if e["kind"] == "request"]
    assert [e["context_tokens"] for e in sent] == frame["context_tokens"].tolist()
    assert "wrote" in capsys.readouterr().out
    # the same command again reuses the finished run: a sweep resumes
    assert main([*RUN, "--out", str(tmp_path)]) == 0
    assert len(load_results(tmp_path).runs) == 1


def test_a_command_that_ends_at_once_says_everything_first(tmp_path: Path) -> None:
    """``python -m sim run`` ends its process without tearing the interpreter down (sim.cli.main.entry): what it
    printed, to a pipe, arrives whole, the status is the command's, and the results read back; an error is still
    status 2 with its message, and a command that runs notebooks is not in the set."""
    out = tmp_path / "r"
    done = subprocess.run(
        [sys.executable, "-m", "sim", *RUN, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("violations, logs)") and "agent requests" in done.stdout
    assert "runs done" in done.stderr and len(load_results(out).runs) == 1
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "run",
            "--policy",
            "no-such",
            "--scenario",
            "coding-agent",
            "--out",
            str(tmp_path / "s"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("csim: error: unknown policy 'no-such'")
    assert {"cmd_report", "cmd_demo"}.isdisjoint(ENDS_AT_ONCE) and "cmd_run" in ENDS_AT_ONCE
    profile = tmp_path / "run.prof"  # under a profiler the process ends the usual way: the profile is written
    argv = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "sim", *RUN, "--out", str(tmp_path / "p")]
    assert subprocess.run(argv, cwd=ROOT, capture_output=True, check=False).returncode == 0
    assert profile.stat().st_size > 0


def test_outputs_are_byte_identical_twice_and_in_another_process(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([*RUN, "--out", str(a)]) == 0
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [sys.executable, "-m", "sim", *RUN, "--out", str(b)], check=True, cwd=ROOT, env=env, capture_output=True
    )
    files = sorted(p.relative_to(a) for p in (a / "parts").rglob("*.json*"))
    assert {"runs.json.gz", "requests.json.gz", "logs.json.gz", "part.json"} <= {f.name for f in files}
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_run_on_a_recorded_conversation(tmp_path: Path) -> None:
    src = ROOT / "tests" / "golden" / "formats" / "openai_chat.json"
    assert (
        main(["run", "--policy", "none", "--conversation", str(src), "--format", "openai-chat", "--out", str(tmp_path)])
        == 0
    )
    res = load_results(tmp_path)
    assert res.manifest["spec"]["sources"][0]["format"] == "openai-chat" and len(res.runs) >= 1


@pytest.mark.parametrize(
    ("golden", "fmt"), [("claude_code.jsonl", "claude-code"), ("codex_rollout.jsonl", "codex-rollout")]
)
def test_a_run_says_the_recordings_own_compaction_is_left_out(
    golden: str, fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording that compacted (Claude Code's summary, Codex's ``compacted`` record) is replayed without its
    summary, and the run says so, in its line and in the runs table."""
    src = ROOT / "tests" / "golden" / "formats" / golden
    args = ["run", "--policy", "none", "--conversation", str(src), "--format", fmt, "--out", str(tmp_path)]
    assert main([*args, "--window", "1000000"]) == 0
    out = capsys.readouterr().out
    assert "note: the recording's own compaction is left out" in out and "the policy's" in out
    res = load_results(tmp_path)
    runs = res.runs
    assert runs["recorded_compactions_left_out"].tolist() == [1] and runs["compaction_count"].tolist() == [0]
    from sim.report import run_page

    page = run_page.overview(res, runs["run_key"].iloc[0]).set_index("what")["value"]
    assert page["compactions"] == "0 (the policy's; the recording's own 1 left out)"


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


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    """``csim compare DIR | head``: when the reader closes the pipe, csim stops quietly (status 0, nothing on
    stderr) instead of printing a BrokenPipeError traceback."""
    import subprocess
    import sys

    code = (
        "import sim.cli.main as m\n"
        "m.cmd_list = lambda args: [print('x' * 100) for _ in range(100_000)] and 0\n"  # 10 MB, past any pipe buffer
        "raise SystemExit(m.main(['list', 'policies']))\n"
    )
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(10) == b"x" * 10
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
