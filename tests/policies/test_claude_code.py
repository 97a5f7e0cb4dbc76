"""Claude Code: when auto-compact fires, what the view holds after it, the breaker, and microcompact."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from policies import make_policy
from policies.claude_code import (
    MICROCOMPACT_PLACEHOLDER,
    SUMMARY_WRAPPER,
    ClaudeCode,
    ClaudeCodeConfig,
    ClaudeCodeMicrocompact,
    MicrocompactConfig,
)
from sim.core.conversation import Message, Part
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.retention import SummariserConfig
from sim.core.tokenizers import get_tokenizer
from sim.replay.engine import RunConfig, run
from tests.builders import (
    asst,
    call,
    compact_cmd,
    conv,
    fact,
    run_capture,
    state_of,
    sys,
    text_of,
    tool,
    tool_contents,
    user,
)

MODEL = ModelConfig(context_window=200_000, output_reserve=32_000)


def _read(cid: str, path: str) -> object:
    return call(cid, "Read", json.dumps({"file_path": path}))


def _session(n_files: int = 7, size: int = 400) -> object:
    """A user task, then one Read of each of ``n_files`` files (f0.py ... newest last), then an answer."""
    drafts = [sys("You are Claude Code."), user("Refactor the billing module.")]
    for i in range(n_files):
        drafts += [asst(calls=[_read(f"r{i}", f"src/f{i}.py")]), tool(f"r{i}", f"CONTENT{i} " * size, name="Read")]
    drafts += [asst("Done reading.")]
    return conv(*drafts)


def test_threshold_is_window_minus_summary_reserve_minus_buffer() -> None:
    st = state_of(ClaudeCode(), _session(), MODEL)
    assert ClaudeCode().threshold(st) == 200_000 - 20_000 - 13_000  # 167,000: where both recordings compacted
    assert ClaudeCode(ClaudeCodeConfig(max_output_tokens=8_000)).threshold(st) == 200_000 - 8_000 - 13_000
    lowered = ClaudeCode(ClaudeCodeConfig(autocompact_pct=50)).threshold(st)
    assert lowered == (200_000 - 20_000) // 2  # the override can lower the threshold...
    assert ClaudeCode(ClaudeCodeConfig(autocompact_pct=99)).threshold(st) == 167_000  # ...never raise it


def test_fires_at_the_threshold_on_its_estimate_and_not_below() -> None:
    c = _session()
    assert ClaudeCode().decide(state_of(ClaudeCode(), c, MODEL, context=166_999), "auto") is None
    plan = ClaudeCode().decide(state_of(ClaudeCode(), c, MODEL, context=167_000), "auto")
    assert plan is not None and plan.summarize


def test_the_view_after_is_the_summary_then_the_five_newest_files() -> None:
    c = _session(n_files=7)
    st = state_of(ClaudeCode(), c, MODEL, context=170_000)
    plan = ClaudeCode().decide(st, "auto")
    assert plan is not None
    assert plan.start == len(c.messages)  # nothing raw is kept: the summary stands for everything
    assert plan.summary_request.role == "user" and plan.summary_request.wrapper == SUMMARY_WRAPPER
    assert plan.summary_request.max_tokens == 20_000
    labels = [x.label for x in plan.injected or ()]
    assert labels == [f"file:src/f{i}.py" for i in (6, 5, 4, 3, 2)]  # most recent first, at most 5
    assert all(x.role == "user" and "CONTENT" in x.text for x in plan.injected or ())


def test_a_file_over_its_token_cap_comes_back_as_its_path() -> None:
    c = _session(n_files=2, size=3_000)  # 3,000 x 9 characters: about 6,750 tokens, over the 5,000 cap
    plan = ClaudeCode().decide(state_of(ClaudeCode(), c, MODEL, context=170_000), "auto")
    assert plan is not None
    assert [x.label for x in plan.injected or ()] == ["file-path:src/f1.py", "file-path:src/f0.py"]
    assert all("CONTENT" not in x.text for x in plan.injected or ())


def test_memory_text_is_reinjected_first() -> None:
    cc = ClaudeCode(ClaudeCodeConfig(memory_text="# CLAUDE.md\nUse tabs."))
    plan = cc.decide(state_of(cc, _session(n_files=6), MODEL, context=170_000), "auto")
    assert plan is not None and plan.injected is not None
    assert plan.injected[0].label == "memory" and "Use tabs." in plan.injected[0].text


def test_what_a_recording_cannot_show_comes_back_as_a_placeholder_of_its_size() -> None:
    """``unseen_reattached_tokens`` re-attaches one placeholder after the files (a token trace has no files to
    re-attach), about that many tokens by the run's tokenizer; by default nothing."""
    cc = ClaudeCode(ClaudeCodeConfig(unseen_reattached_tokens=3_000))
    plan = cc.decide(state_of(cc, _session(n_files=20, size=2_000), MODEL, context=170_000), "auto")
    assert plan is not None and plan.injected is not None and plan.injected[-1].label == "unseen"
    assert 3_000 <= get_tokenizer("cl100k_base").count(plan.injected[-1].text) <= 3_020
    plain = ClaudeCode().decide(
        state_of(ClaudeCode(), _session(n_files=20, size=2_000), MODEL, context=170_000), "auto"
    )
    assert plain is not None and all(x.label != "unseen" for x in plain.injected or ())
    with pytest.raises(InvalidConfig, match="unseen_reattached_tokens"):
        ClaudeCodeConfig(unseen_reattached_tokens=-1)


@pytest.mark.parametrize("restore_files", [5, 0])
def test_a_run_renders_summary_then_files_and_keeps_the_facts_of_the_files(restore_files: int) -> None:
    # A 24K window with the constants scaled down (as csim check scales them), so a short script compacts;
    # a summariser that keeps no artifact, so only a re-attached file can keep the file's fact visible.
    small = ModelConfig(context_window=24_000, output_reserve=2_000)
    cfg = ClaudeCodeConfig(buffer_tokens=2_000, summary_reserve=2_000, restore_file_tokens=2_000)
    drafts = [sys("You are Claude Code."), user("Refactor the billing module.")]
    for i in range(16):
        drafts += [asst(calls=[_read(f"r{i}", f"src/f{i}.py")]), tool(f"r{i}", f"KEY{i} " + "x" * 6_000, name="Read")]
    drafts += [asst("Done.")]
    facts = [fact("k13", "artifact", "KEY13", "m29", needed_at=["m33"])]  # in f13.py; needed by the last request
    config = RunConfig(model=small, tokenizer="chars4", summariser=SummariserConfig(keep_artifact=0.0))
    policy = ClaudeCode(replace(cfg, restore_files=restore_files))
    res, captured, _ = run_capture(policy, conv(*drafts, facts=facts), config)
    assert [c["turn"] for c in res.compactions] == [14]  # at 19,848 + the next file: over 24,000 - 2,000 - 2,000
    body = next(c for c in captured if c.view.summary is not None).rendered
    assert text_of(body[1]["content"]).startswith("This session is being continued from a previous conversation")
    visible = [r["visible"] for r in res.fact_rows if r["fact"] == "k13"]
    if restore_files:
        assert "Contents of src/f13.py" in text_of(body[2]["content"])  # the newest file, right after the summary
        assert visible == [True]  # the fact survives in the re-attached file
    else:
        assert len(body) == 2 and visible == [False]
    assert {v.invariant for v in res.violations} <= {"live-turn"}


def test_the_live_turn_is_summarised_a_known_deviation() -> None:
    small = ModelConfig(context_window=24_000, output_reserve=2_000)
    cfg = ClaudeCodeConfig(buffer_tokens=2_000, summary_reserve=2_000)
    drafts = [sys("s"), user("task")] + [
        d for i in range(10) for d in (asst(calls=[f"c{i}"]), tool(f"c{i}", "y" * 8_000))
    ]
    res = run(ClaudeCode(cfg), conv(*drafts, asst("ok")), RunConfig(model=small))
    assert res.compactions
    assert "live-turn" in {v.invariant for v in res.violations}
    assert "live-turn" in ClaudeCode.known_deviations


def test_manual_compact_summarises_at_once_below_the_threshold() -> None:
    c = conv(sys("s"), user("task " * 400), asst("answer " * 400), compact_cmd())
    st = state_of(ClaudeCode(), c, MODEL, context=3_000)
    assert ClaudeCode().decide(st, "auto") is None
    plan = ClaudeCode().decide(st, "manual")
    assert plan is not None and plan.summarize and plan.start == 4


def test_breaker_stops_auto_compact_after_three_failed_summaries() -> None:
    small = ModelConfig(context_window=24_000, output_reserve=2_000)
    cfg = ClaudeCodeConfig(buffer_tokens=2_000, summary_reserve=2_000)
    drafts = [sys("s"), user("task")] + [
        d for i in range(14) for d in (asst(calls=[f"c{i}"]), tool(f"c{i}", "y" * 8_000))
    ]
    failing = RunConfig(model=small, summariser=SummariserConfig(failure_rate=1.0))
    res = run(ClaudeCode(cfg), conv(*drafts, asst("ok")), failing)
    failed = [r for r in res.rows if r["request_kind"] == "summariser"]
    assert len(failed) == 3  # three attempts, then the breaker holds; the reactive retry on overflow is separate
    st = state_of(ClaudeCode(cfg), conv(*drafts), small, context=23_000)
    st.failed_in_a_row = 3
    assert ClaudeCode(cfg).decide(st, "auto") is None
    assert ClaudeCode(cfg).decide(st, "manual") is not None


def test_reactive_compaction_retries_once_on_overflow() -> None:
    assert ClaudeCode().retry_on_overflow == 1
    plan = ClaudeCode().decide(state_of(ClaudeCode(), _session(), MODEL, context=10_000), "overflow")
    assert plan is not None and plan.summarize  # below the threshold by its estimate, the provider said no


def test_a_compact_call_the_provider_rejects_is_sent_again_on_less(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result that carries the view past the window leaves the fork no room: the compact call goes alone, with the
    newest pieces that fit the window less the buffer, and its instruction on top overflows. Claude Code sends it
    again on fewer of the oldest messages (``MAX_PTL_RETRIES`` = 3): the first request is rejected, the next one,
    a piece shorter, is the summary; with no retries the compaction fails and the run overflows."""
    small = ModelConfig(context_window=24_000, output_reserve=2_000)
    cfg = ClaudeCodeConfig(buffer_tokens=100, summary_reserve=2_000)  # less room than the instruction takes
    drafts = [sys("s"), user("task")] + [
        d for i in range(60) for d in (asst(calls=[f"c{i}"]), tool(f"c{i}", f"part {i} " + "y " * 300))
    ]
    drafts += [asst(calls=["big"]), tool("big", "z " * 9_000), asst("ok")]
    res = run(ClaudeCode(cfg), conv(*drafts), RunConfig(model=small))
    calls = [r for r in res.rows if r["request_kind"] == "summariser"]
    assert [bool(r["error"]) for r in calls] == [True, False] and calls[1]["context_tokens"] < calls[0][
        "context_tokens"
    ]
    assert "prompt-too-long" in calls[0]["error"] and res.summary["finish_reason"] == "completed"
    monkeypatch.setattr("policies.claude_code.PTL_RETRIES", 0)
    res = run(ClaudeCode(cfg), conv(*drafts), RunConfig(model=small))
    assert all(r["error"] for r in res.rows if r["request_kind"] == "summariser")
    assert res.summary["finish_reason"] == "context-overflow"


def test_microcompact_clears_old_results_of_compactable_tools_only() -> None:
    drafts = [sys("s"), user("task")]
    for i in range(8):
        drafts += [asst(calls=[_read(f"r{i}", f"f{i}")]), tool(f"r{i}", f"file {i} " * 300, name="Read")]
    drafts += [asst(calls=[call("t0", "Task")]), tool("t0", "subagent report " * 300, name="Task"), asst("ok")]
    c = conv(*drafts)
    mc = ClaudeCodeMicrocompact()
    plan = mc.decide(state_of(mc, c, MODEL, context=20_000), "auto")
    assert plan is not None and plan.mode == "microcompact" and not plan.summarize
    res, captured, _ = run_capture(mc, c, RunConfig(model=MODEL))
    contents = tool_contents(captured[-1].rendered)
    assert sorted(k for k, v in contents.items() if v == MICROCOMPACT_PLACEHOLDER) == ["r0", "r1", "r2"]
    assert all(contents[f"r{i}"].startswith(f"file {i}") for i in range(3, 8))  # the newest 5 Read results
    assert contents["t0"].startswith("subagent report")  # Task is not a compactable tool
    assert not res.violations


def test_microcompact_config_is_validated() -> None:
    with pytest.raises(InvalidConfig, match="keep_recent"):
        MicrocompactConfig(keep_recent=0)
    with pytest.raises(InvalidConfig, match="autocompact_pct"):
        ClaudeCodeConfig(autocompact_pct=0)
    p = make_policy("claude-code-microcompact", {"tools": "Read,Grep", "keep_recent": "2"})
    assert p.config.tools == ("Read", "Grep") and p.config.keep_recent == 2


RECORDED = Path(os.environ.get("CSIM_RECORDED") or Path(__file__).resolve().parents[2].parent / "shared" / "recorded")
SESSIONS = ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", "258c7280-ae70-4798-800f-63464d01a85d")


def test_the_recorded_sessions_compact_where_claude_code_compacted(tmp_path: Path) -> None:
    """Each long recorded session, replayed whole under claude-code with a calibration fitted on the other one
    (held out), compacts within one request of where the real session compacted: 258c7280 at it, fa812bfe at the
    request after, as ``csim fidelity``'s segment check finds (the estimate there, 166,899 of the last usage with
    its output plus 99 for the tool result after it, falls 2 tokens short of 167,000; the client counted 167,117).
    The recorded summary is not sent (it once was, and carried the replay over the trigger a request early)."""
    folder = RECORDED / "claude-code"
    if not all((folder / f"{s}.jsonl").is_file() for s in SESSIONS):
        pytest.skip(f"recorded Claude Code sessions not found in {folder} (set CSIM_RECORDED to their folder)")
    from sim import api
    from sim.cli.main import main
    from sim.formats import read

    for sid, other in (SESSIONS, SESSIONS[::-1]):
        cal = tmp_path / f"cal-{other}.json"
        assert main(["calibrate", str(folder / f"{other}.jsonl"), "--format", "claude-code", "--out", str(cal)]) == 0
        path = folder / f"{sid}.jsonl"
        out = tmp_path / f"run-{sid}"
        args = ["run", "--policy", "claude-code", "--conversation", str(path), "--format", "claude-code"]
        args += ["--window", "200000", "--output-reserve", "32000", "--calibration", str(cal), "--out", str(out)]
        assert main(args) == 0
        conv = read(path, "claude-code").conversations[0]
        recorded = [sum(m.role == "assistant" for m in conv.messages[: c["index"]]) for c in conv.meta["compactions"]]
        ours = api.load(out).compactions["turn"].tolist()
        assert recorded == [126 if sid == SESSIONS[0] else 102], (sid, recorded)
        assert ours[:1] == [recorded[0] + (1 if sid == SESSIONS[0] else 0)], (sid, ours, recorded)


def test_reattached_files_take_the_newest_content_a_read_or_a_write_shows() -> None:
    """Claude Code re-attaches the files it used last with their content (read back from disk); a replay takes
    the newest the conversation shows: a read's result, or what a write wrote. An edited file comes back with
    the read before the edit, one bigger than the per-file limit as its path only, and only the five newest."""
    from policies.claude_code import reattached_files

    def call(cid: str, name: str, args: dict[str, str]) -> Message:
        return Message(f"a{cid}", "assistant", (Part("tool_call", call_id=cid, name=name, args=json.dumps(args)),))

    def result(cid: str, text: str) -> Message:
        return Message(f"t{cid}", "tool", (Part("tool_result", text, call_id=cid),))

    msgs = [
        call("0", "Read", {"file_path": "old.py"}),
        result("0", "old"),
        call("1", "Read", {"file_path": "a.py"}),
        result("1", "alpha v1"),
        call("2", "Write", {"file_path": "b.py", "content": "beta written"}),
        result("2", "File created"),
        call("3", "Edit", {"file_path": "a.py", "old_string": "v1", "new_string": "v2"}),
        result("3", "The file a.py has been updated."),
        call("4", "Read", {"file_path": "big.py"}),
        result("4", "x" * 30_000),
        *(m for k in range(5, 8) for m in (call(str(k), "Read", {"file_path": f"f{k}.py"}), result(str(k), f"f{k}"))),
    ]
    got = {f.label: f.text for f in reattached_files(msgs, 0, ClaudeCodeConfig())}
    assert set(got) == {"file:f7.py", "file:f6.py", "file:f5.py", "file-path:big.py", "file:a.py"}
    assert got["file:a.py"].endswith("alpha v1")
    more = reattached_files(msgs[:6], 0, ClaudeCodeConfig())
    assert [f.text.splitlines()[-1] for f in more] == ["beta written", "alpha v1", "old"]
