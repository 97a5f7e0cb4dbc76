"""Where a policy compacts on a recorded session against where the session did (sim/calibration/where_compacts.py),
and ``csim fidelity``'s report of it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sim.calibration import files
from sim.calibration import where_compacts as wc
from sim.cli.main import main
from sim.core.conversation import Conversation, Message, Part, Usage
from sim.core.model import ModelConfig
from sim.formats import native, read
from sim.replay.anchoring import anchors_for

#: claude-code's trigger on this window: 100,000 - min(32,000, 20,000) - 13,000.
WINDOW, TRIGGER = ModelConfig(context_window=100_000), 67_000


def _session(prompts: list[int], output: int, result: str, trigger: str | None = "auto") -> Conversation:
    """A recorded session: replies with the provider's usage at ``prompts`` (each ``output`` tokens), each asking
    for a tool whose result is ``result``; a recorded compaction after the last, then one more turn."""
    msgs = [Message("u", "user", (Part("text", "Go through the loader."),))]
    for k, p in enumerate(prompts):
        call = Part("tool_call", call_id=f"c{k}", name="Read", args=json.dumps({"file_path": f"f{k}.py"}))
        msgs.append(Message(f"a{k}", "assistant", (call,), usage=Usage(cache_read_tokens=p, output_tokens=output)))
        msgs.append(Message(f"t{k}", "tool", (Part("tool_result", result, call_id=f"c{k}", name="Read"),)))
    boundary = {"trigger": trigger, "pre_tokens": prompts[-1] + output}
    summary = Part("text", "This session is being continued from a previous conversation. Summary: the loader.")
    msgs.append(Message("s", "user", (summary,), meta={"compact_summary": True, "compact_boundary": boundary}))
    msgs.append(Message("b", "assistant", (Part("text", "Done."),), usage=Usage(cache_read_tokens=20_000)))
    return Conversation("rec", tuple(msgs), meta={"source": "kv-trace"})


def _check(conv: Conversation, **params: str) -> list[wc.TriggerCheck]:
    return wc.check(conv, "claude-code", params, WINDOW, anchors=anchors_for(conv, None))


SHORT = "x = 1\n" * 40  # 240 characters: 60 tokens by Claude Code's chars/4


def test_a_trigger_crossed_by_the_last_reply_compacts_at_the_recorded_request() -> None:
    """The prompt before the compaction and its reply reach the trigger (66,900 + 200 + 60): claude-code compacts
    where the session did; on a 200K window it would not yet, and with a lower trigger it compacts turns before."""
    conv = _session([50_000, 58_000, 66_900], 200, SHORT)
    first, last = _check(conv)
    assert (first.recorded, first.policy, first.offset, first.trigger) == (3, 3, 0, "auto")
    assert (last.recorded, last.trigger) == (None, "")  # the segment after the compaction ends the session
    assert wc.figures([first, last])["within_one"] == 1
    later = wc.check(conv, "claude-code", {}, ModelConfig(), anchors=anchors_for(conv, None))
    assert later[0].policy is None and wc.figures(later)["later"] == 1
    earlier = _check(conv, autocompact_pct="60")  # 48,000: before the request of 50,000
    assert earlier[0].offset is not None and earlier[0].offset < -1
    assert wc.figures(earlier)["earlier"] == 1


def test_the_reply_before_the_trigger_counts_by_its_output_tokens() -> None:
    """Claude Code's estimate counts the last reply by the output tokens the provider reported (a reply of thinking
    and a call is far more than its text's chars/4): 66,500 + 800 + 60 reaches 67,000; the reply's text alone
    (its call's arguments, a few dozen tokens) would not."""
    conv = _session([50_000, 58_000, 66_500], 800, SHORT)
    assert _check(conv)[0].offset == 0


def test_a_trigger_the_estimate_misses_by_a_little_fires_at_the_next_request() -> None:
    """The estimate counts a tool result at chars/4, the provider at its tokens: a result of 600 digits spaced
    apart is 300 by the estimate and 1,200 by count. 66,400 + 200 + 300 is under the trigger, the prompt as sent (and
    so the next request's estimate) is over it: claude-code compacts one request after the session did."""
    digits = "1 " * 600
    [first, _] = _check(_session([50_000, 58_000, 66_400], 200, digits))
    assert (first.recorded, first.policy, first.offset) == (3, 4, 1)


def test_how_a_compaction_was_triggered_is_read_from_the_recording() -> None:
    conv = _session([50_000], 100, SHORT, trigger="manual")
    assert wc.recorded_trigger(conv, 3) == "manual"
    silent = _session([50_000], 100, SHORT, trigger=None)
    assert wc.recorded_trigger(silent, 3) == "not recorded"
    msgs = list(silent.messages)
    msgs[2] = Message("t0", "tool", msgs[2].parts, meta={"synthetic": "compacted"})  # a trace's open call
    mid = Conversation("rec", tuple(msgs), meta=silent.meta)
    assert wc.recorded_trigger(mid, 3) == "mid-turn"
    [check, _] = wc.check(mid, "claude-code", {}, WINDOW, anchors=anchors_for(mid, None))
    assert (
        check.automatic and not wc.check(conv, "claude-code", {}, WINDOW, anchors=anchors_for(conv, None))[0].automatic
    )


def test_csim_fidelity_reports_where_the_policy_compacts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Claude Code recordings are checked against claude-code unless --policy says otherwise; a misspelt policy
    fails before any replay, with the name it may have meant."""
    conv = _session([*range(30_000, 66_000, 4_000), 66_900], 200, SHORT)
    path = native.write(conv, tmp_path / "rec.jsonl")
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(path), "--format", "native", "--split", "alternate", "--out", str(cal)]) == 0
    capsys.readouterr()
    args = ["fidelity", str(path), "--format", "native", "--calibration", str(cal), "--window", "100000"]
    assert main([*args, "--policy", "claude-code", "--out", str(tmp_path / "fid")]) == 0
    out = capsys.readouterr().out
    assert "auto, claude-code compacts after turn 10 (the same request)" in out
    assert "within one request of 1 of 1 automatic compactions" in out
    [summary] = json.loads((tmp_path / "fid" / "summary.json").read_text())
    assert summary["policy_trigger"]["within_one"] == 1 and summary["policy_trigger"]["window"] == 100_000
    assert "more than that window holds" not in out
    assert main([*args[:-1], "60000", "--policy", "claude-code"]) == 0  # the session sent 66,900: not its window
    assert "the session sent a prompt of 66,900 tokens, more than that window holds" in capsys.readouterr().out
    assert main([*args, "--policy", "none"]) == 0
    assert "claude-code" not in capsys.readouterr().out  # a native recording has no policy of its own
    assert main([*args, "-P", "autocompact_pct=80"]) == 2
    assert "give --policy NAME" in capsys.readouterr().err
    assert main([*args, "--policy", "claude-cod"]) == 2
    said = capsys.readouterr()
    assert "Did you mean 'claude-code'?" in said.err and "rec:" not in said.out


RECORDED = Path(os.environ.get("CSIM_RECORDED") or Path(__file__).resolve().parents[1].parent / "shared" / "recorded")
SESSIONS = {"fa812bfe-b295-4cca-9c2f-fdf01028cb46": 1, "258c7280-ae70-4798-800f-63464d01a85d": 0}


def test_claude_code_compacts_within_one_request_of_the_recorded_sessions(tmp_path: Path) -> None:
    """Each long recorded Claude Code session, its segment replayed alone with a calibration fitted on the other
    session (held out): claude-code compacts at the recorded request (258c7280: Claude Code's estimate there,
    166,759 + 301 output + 34, is its preTokens exactly) or at the one after it (fa812bfe: the estimate is one
    token under the trigger, the prompt as sent over it)."""
    folder = RECORDED / "claude-code"
    if not all((folder / f"{s}.jsonl").is_file() for s in SESSIONS):
        pytest.skip(f"recorded Claude Code sessions not found in {folder} (set CSIM_RECORDED to their folder)")
    for sid, offset in SESSIONS.items():
        [other] = set(SESSIONS) - {sid}
        cal_path = tmp_path / f"cal-{other}.json"
        assert (
            main(["calibrate", str(folder / f"{other}.jsonl"), "--format", "claude-code", "--out", str(cal_path)]) == 0
        )
        cal = files.choose(files.load(cal_path), "anthropic", "claude-code", "main")
        conv = read(folder / f"{sid}.jsonl", "claude-code").conversations[0]
        checks = wc.check(conv, "claude-code", {}, ModelConfig(), cal, anchors_for(conv, cal))
        assert [(c.trigger, c.offset) for c in checks if c.recorded is not None] == [("auto", offset)], sid
