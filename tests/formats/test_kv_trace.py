"""kv-trace importer: token-level traces (kv-cache-tester JSON) as conversations of placeholders of recorded size.

The real traces are ``../shared/recorded/kv-cache-traces`` (skipped, saying why, when absent); the small trace
these tests check field by field is written by the tests themselves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policies import make_policy
from sim.calibration.fit import replay_counts
from sim.cli.main import main
from sim.core.conversation import Conversation, Message, Usage, validate
from sim.core.counting import compaction_cuts, segments, stand_ins
from sim.core.errors import FormatError
from sim.core.log import MessageAppended
from sim.core.model import ModelConfig
from sim.core.tokenizers import get_tokenizer
from sim.formats import ImportResult, read
from sim.formats.kv_trace import MAX_TOKENS, MIN_DROP, _arguments, placeholder
from sim.replay.anchoring import anchors_for
from sim.replay.engine import RunConfig, run
from sim.sweep.results import load_results
from tests.formats.conftest import recorded_root
from tests.formats.test_formats_recorded import _round_trip

COUNT = get_tokenizer("cl100k_base").count

#: Recorded compactions per trace of the sample, as the hash chain shows them (the other 22 traces have none).
COMPACTIONS = {
    "trace_0003": 8,
    "trace_0004": 2,
    "trace_0009": 6,
    "trace_0010": 3,
    "trace_0013": 1,
    "trace_0014": 2,
    "trace_0017": 5,
    "trace_0018": 3,
    "trace_0020": 7,
    "trace_0023": 1,
    "trace_0024": 1,
    "trace_0027": 1,
    "trace_0029": 2,
    "trace_0035": 2,
    "trace_0039": 1,
}
#: Falls of ``in`` that are no compaction (a prompt rewritten after an idle gap, 1-7% smaller): request index.
DROPS = {"trace_0004": [71], "trace_0033": [43], "trace_0035": [61]}


@pytest.fixture(scope="module")
def sample() -> dict[str, tuple[dict[str, Any], ImportResult]]:
    """Every trace of the sample, raw and imported strictly (once for the module: 26 MB of JSON)."""
    root = recorded_root() / "kv-cache-traces"
    if not root.is_dir():
        pytest.skip(f"recorded traces not found at {root} (set CSIM_RECORDED to the recorded folder)")
    return {p.stem: (json.loads(p.read_text("utf-8")), read(p, "kv-trace")) for p in sorted(root.glob("*.json"))}


def _sessions(raw: dict[str, Any], cid: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(conversation id, its request records) of a raw trace and of its subagents, in the importer's order."""
    own = [r for r in raw["requests"] if r["type"] != "subagent"]
    subs = [s for r in raw["requests"] if r["type"] == "subagent" for s in _sessions(r, f"{cid}/{r['agent_id']}")]
    return [(cid, own), *subs]


def _replies(conv: Conversation) -> list[Any]:
    return [m for m in conv.messages if m.role == "assistant"]


# --- the recorded sample -------------------------------------------------------------------------------------


def test_every_recorded_trace_imports_strictly(sample: dict[str, tuple[dict[str, Any], ImportResult]]) -> None:
    assert len(sample) == 37  # and the folder's LICENSE: 38 files
    n_convs = n_replies = 0
    for name, (raw, result) in sample.items():
        assert result.skipped == [], name
        expected = _sessions(raw, raw["id"])
        assert [c.id for c in result.conversations] == [cid for cid, _ in expected]
        for conv, (_, records) in zip(result.conversations, expected, strict=True):
            assert validate(conv) == []
            assert conv.meta["source"] == "kv-trace" and conv.meta["sizes_only"] is True
            assert conv.meta["provider"] == "anthropic" and conv.meta["trace_id"] == name
            replies = _replies(conv)
            assert [(m.usage.input_tokens, m.usage.output_tokens) for m in replies] == [
                (r["in"], r["out"]) for r in records
            ]
            assert [m.meta.get("model") for m in replies] == [r["model"] for r in records]
            n_convs, n_replies = n_convs + 1, n_replies + len(replies)
    assert (n_convs, n_replies) == (48, 3244)


def test_sizes_are_the_recorded_counts(sample: dict[str, tuple[dict[str, Any], ImportResult]]) -> None:
    """Each message's placeholder counts what the trace gives it; what a request added is its ``in`` less the
    previous request's ``in`` and ``out``; the system prompt and the tools count their recorded sizes."""
    for _, result in sample.values():
        for conv in result.conversations:
            tools = conv.tools[0]
            assert COUNT(tools.name) + COUNT(tools.description) + COUNT(tools.parameters) == conv.meta["tool_tokens"]
            assert conv.messages[0].role == "system"
            assert COUNT(conv.messages[0].text) == conv.meta["system_tokens"]
            base = conv.meta["system_tokens"] + conv.meta["tool_tokens"]
            prev: Usage | None = None
            added, compacted = 0, False
            for m in conv.messages:
                if m.usage is None:
                    assert COUNT(m.parts[0].text) == m.meta["tokens"]
                    added, compacted = added + m.meta["tokens"], compacted or "compact_boundary" in m.meta
                    continue
                counts = [COUNT(p.args or "") if p.kind == "tool_call" else COUNT(p.text) for p in m.parts]
                assert sum(counts) == m.usage.output_tokens or "{}" in [p.args for p in m.parts]
                if prev is None:
                    assert added == conv.meta["system_tokens"] + max(0, m.usage.input_tokens - base)
                elif compacted:
                    assert added == max(0, m.usage.input_tokens - base)
                else:
                    assert added == max(0, m.usage.input_tokens - prev.input_tokens - prev.output_tokens)
                prev, added, compacted = m.usage, 0, False


def test_recorded_compactions(sample: dict[str, tuple[dict[str, Any], ImportResult]]) -> None:
    """15 of the 37 sessions compact, 45 times in all; no subagent does. Each compaction is where the chain
    falls back to the system and tool blocks while ``in`` falls, and cuts the session into a segment."""
    found = {}
    for name, (_, result) in sample.items():
        main_conv, *subagents = result.conversations
        assert all(c.meta["compactions"] == [] for c in subagents)
        assert [d["request"] for d in main_conv.meta["prompt_drops"]] == DROPS.get(name, [])
        assert all(d["idle_seconds"] > 1500 for d in main_conv.meta["prompt_drops"])
        marks = main_conv.meta["compactions"]
        if marks:
            found[name] = len(marks)
        base = main_conv.meta["system_tokens"] + main_conv.meta["tool_tokens"]
        for mark in marks:
            summary = main_conv.messages[mark["index"]]
            assert summary.role == "user" and summary.meta["compact_summary"] is True
            boundary = summary.meta["compact_boundary"]
            assert boundary == {k: mark[k] for k in ("trigger", "pre_tokens", "post_tokens", "shared_prefix_tokens")}
            assert boundary["post_tokens"] <= (1 - MIN_DROP) * boundary["pre_tokens"]
            assert boundary["shared_prefix_tokens"] <= base + 8192
            assert summary.meta["tokens"] == boundary["post_tokens"] - base
            before = main_conv.messages[mark["index"] - 1]
            assert before.role in ("tool", "assistant")  # an open call is answered before the summary
        assert len(segments(main_conv)) == len(marks) + 1
    assert found == COMPACTIONS
    assert (len(found), sum(found.values())) == (15, 45)


def test_recorded_subagents(sample: dict[str, tuple[dict[str, Any], ImportResult]]) -> None:
    subagents = [c for _, r in sample.values() for c in r.conversations if c.meta["subagent"]]
    assert len(subagents) == 11
    for sub in subagents:
        (parent,) = [c for _, r in sample.values() for c in r.conversations if c.id == sub.meta["parent"]]
        assert sub.id == f"{parent.id}/{sub.meta['agent_id']}" and sub.id in parent.meta["subagents"]
        assert sub.meta["subagent_type"] == "Explore" and sub.meta["status"] == "completed"
        named = [m for m in parent.messages if sub.id in m.meta.get("subagents", ())]
        assert all(m.role == "tool" for m in named)
    # the three subagents trace_0010 runs one after another are answered by one tool message
    (t10,) = [r for name, (_, r) in sample.items() if name == "trace_0010"]
    lists = [m.meta["subagents"] for m in t10.conversations[0].messages if "subagents" in m.meta]
    assert ["trace_0010/agent_002", "trace_0010/agent_003", "trace_0010/agent_004"] in lists


def test_anchored_replay_under_none_reproduces_each_recorded_in(
    sample: dict[str, tuple[dict[str, Any], ImportResult]],
) -> None:
    """Each segment (the whole session when it does not compact) replayed under ``none`` with usage-anchored
    accounting: every agent request's context_tokens is the recorded ``in``, exactly, except after the three
    falls of ``in`` that are no compaction, where the script keeps a history the recording had shrunk (up to
    8.4%, trace_0035 after request 61)."""
    exact = off = 0
    worst = 0.0
    for _, result in sample.values():
        for conv in result.conversations:
            anchors = anchors_for(conv, None)
            for k, seg in enumerate(segments(conv)):
                rows = replay_counts(seg, anchors=anchors.for_segment(k))
                first_t = _replies(seg)[0].meta["t"]
                for m, row in zip(_replies(seg), rows, strict=True):
                    assert row["time_seconds"] == pytest.approx(m.meta["t"] - first_t)
                    error = (row["context_tokens"] - m.usage.input_tokens) / m.usage.input_tokens
                    after_drop = any(m.meta["request"] >= d for d in DROPS.get(conv.id, []))
                    if error == 0:
                        exact += 1
                        continue
                    assert after_drop and 0 < error < 0.09, (conv.id, m.id, error)
                    off, worst = off + 1, max(worst, error)
    assert (exact, off) == (3145, 99)
    assert 0.08 < worst < 0.085


def test_claude_code_replays_every_compacting_trace_to_its_end(
    sample: dict[str, tuple[dict[str, Any], ImportResult]],
) -> None:
    """Each trace that compacts, replayed whole under ``claude-code`` at its defaults: the run completes (a compact
    call too long for the window is sent again on less; trace_0003 and trace_0029 overflowed without it), and its
    agent requests' prompt tokens come to within 15% of the recorded ones in all (9.5% under on the sample: the
    placeholders of the recorded compactions' results are not sent, and what Claude Code re-attached is not in a
    trace)."""
    recorded = sent = 0
    for cid in COMPACTIONS:
        [conv] = [c for c in sample[cid][1].conversations if c.id == cid]
        result = run(make_policy("claude-code"), conv, RunConfig())
        assert result.summary["finish_reason"] == "completed", cid
        recorded += sum(m.usage.input_tokens for m in _replies(conv))
        sent += sum(r["context_tokens"] for r in result.rows if r["request_kind"] == "agent")
    assert -0.15 < sent / recorded - 1 < 0


def test_csim_run_reports_the_recorded_in(sample: dict[str, Any], tmp_path: Path) -> None:
    """``csim run --policy none`` on a trace that does not compact: each agent request is its recorded ``in``."""
    path = recorded_root() / "kv-cache-traces" / "trace_0001.json"
    args = ["run", "--policy", "none", "--conversation", str(path), "--format", "kv-trace", "--window", "1000000"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    frame = load_results(tmp_path).requests
    agent = frame[frame["request_kind"] == "agent"].sort_values("turn")
    raw, _ = sample["trace_0001"]
    assert agent["context_tokens"].tolist() == [r["in"] for r in raw["requests"]]


def test_a_recorded_trace_survives_the_native_format(
    sample: dict[str, tuple[dict[str, Any], ImportResult]], tmp_path: Path
) -> None:
    _round_trip(tmp_path, sample["trace_0010"][1].conversations)  # compactions, subagents, prompt rewrites


# --- placeholders --------------------------------------------------------------------------------------------

SIZES = [*range(0, 1500), 4096, 12974, 65536, 99999, 200_000]
LABELS = ["", "r0 text", "r12.tool tool_result 5 tokens", "system system prompt 4243 tokens", "x]y", "é!", "a b "]


@pytest.mark.parametrize("label", LABELS)
def test_placeholders_count_exactly_their_tokens(label: str) -> None:
    for n in SIZES:
        assert COUNT(placeholder(n, label)) == n, (n, label)
    assert placeholder(50, label) == placeholder(50, label)  # deterministic
    if label:
        assert placeholder(50, label).startswith(f"[{label}]")


def test_tool_call_arguments_count_exactly_their_tokens() -> None:
    for n in range(0, 1500):
        args = _arguments(n, f"r7 tool_use {n} tokens")
        assert COUNT(args) == n or (args == "{}" and n < 16)  # an object holding a labelled placeholder, or {}
        assert isinstance(json.loads(args), dict)


# --- a hand-made trace -----------------------------------------------------------------------------------------


def _request(
    t: float,
    tokens_in: int,
    out: int,
    blocks: list[int],
    inputs: list[str],
    outputs: list[str],
    stop: str,
    api: float = 1.0,
    think: float = 0.0,
) -> dict[str, Any]:
    """One request record, as kv-cache-tester writes them."""
    fields = {"t": t, "type": "n", "model": "claude-opus-4-5", "in": tokens_in, "out": out, "hash_ids": blocks}
    return fields | {"input_types": inputs, "output_types": outputs, "stop": stop, "api_time": api, "think_time": think}


def _trace() -> dict[str, Any]:
    """A session of five requests: a tool call that starts a subagent, a user turn, a compaction, one more turn."""
    sub = {
        "t": 3.0, "type": "subagent", "agent_id": "agent_001", "subagent_type": "Explore", "status": "completed",
        "duration_ms": 4000, "system_tokens": 50, "tool_tokens": 60, "models": ["claude-haiku-4-5"],
        "requests": [
            _request(0.0, 300, 30, [101, 102, 103, 104], ["text"], ["text", "tool_use"], "tool_use"),
            _request(2.0, 400, 10, [101, 102, 103, 104, 105, 106], ["tool_result"], ["text"], "end_turn", 1.0, 1.0),
        ],
    }  # fmt: skip
    return {
        "id": "hand", "models": ["claude-opus-4-5"], "block_size": 64, "tool_tokens": 200, "system_tokens": 100,
        "requests": [
            _request(0.0, 500, 40, list(range(1, 8)), ["text"], ["thinking", "tool_use"], "tool_use", 2.0),
            sub,
            _request(10.0, 800, 60, list(range(1, 13)), ["tool_result"], ["text"], "end_turn", 3.0, 5.0),
            _request(100.0, 1000, 20, list(range(1, 16)), ["text"], ["text", "tool_use"], "tool_use", 1.0, 87.0),
            _request(130.0, 450, 10, [1, 2, 3, 4, 200, 201, 202], ["text"], ["text"], "end_turn", 1.0, 29.0),
            _request(140.0, 520, 10, [1, 2, 3, 4, 200, 201, 202, 203], ["text"], ["text"], "end_turn", 1.0, 9.0),
        ],
    }  # fmt: skip


def _write(tmp_path: Path, doc: Any, name: str = "hand.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1), encoding="utf-8")
    return path


def _shape(conv: Conversation) -> list[tuple[Any, ...]]:
    """Each message: id, role, its parts' kinds, its size (inputs) or usage (replies), call ids, and timestamp."""
    out = []
    for m in conv.messages:
        size = (m.usage.input_tokens, m.usage.output_tokens) if m.usage else m.meta["tokens"]
        calls = tuple(p.call_id for p in m.parts if p.call_id)
        out.append((m.id, m.role, tuple(p.kind for p in m.parts), size, calls, m.meta["timestamp"][11:23]))
    return out


def test_hand_made_trace_field_by_field(tmp_path: Path) -> None:
    result = read(_write(tmp_path, _trace()), "auto")
    assert result.skipped == []
    main_conv, sub = result.conversations
    assert (main_conv.id, sub.id) == ("hand", "hand/agent_001")
    assert _shape(main_conv) == [
        ("system", "system", ("text",), 100, (), "00:00:00.000"),
        ("r0.user", "user", ("text",), 200, (), "00:00:00.000"),  # 500 less the system prompt and the tools
        ("r0", "assistant", ("thinking", "tool_call"), (500, 40), ("r0.call",), "00:00:02.000"),
        ("r2.tool", "tool", ("tool_result",), 260, ("r0.call",), "00:00:10.000"),  # 800 - 500 - 40
        ("r2", "assistant", ("text",), (800, 60), (), "00:00:13.000"),
        ("r3.user", "user", ("text",), 140, (), "00:01:40.000"),  # 1000 - 800 - 60
        ("r3", "assistant", ("text", "tool_call"), (1000, 20), ("r3.call",), "00:01:41.000"),
        ("r4.tool", "tool", ("tool_result",), 0, ("r3.call",), "00:02:10.000"),  # went into the summary
        ("r4.summary", "user", ("text",), 150, (), "00:02:10.000"),  # 450 less the system prompt and the tools
        ("r4", "assistant", ("text",), (450, 10), (), "00:02:11.000"),
        ("r5.user", "user", ("text",), 60, (), "00:02:20.000"),  # 520 - 450 - 10
        ("r5", "assistant", ("text",), (520, 10), (), "00:02:21.000"),
    ]
    by_id = {m.id: m for m in main_conv.messages}
    boundary = {"trigger": None, "pre_tokens": 1020, "post_tokens": 450, "shared_prefix_tokens": 256}
    assert by_id["r4.summary"].meta["compact_boundary"] == boundary
    assert by_id["r4.summary"].meta["compact_summary"] is True
    assert by_id["r4.tool"].meta["synthetic"] == "compacted"
    assert by_id["r2.tool"].meta["subagents"] == ["hand/agent_001"]
    assert by_id["r2"].meta["shared_prefix_tokens"] == 7 * 64 and by_id["r0"].meta["shared_prefix_tokens"] is None
    assert dict(by_id["r3"].meta) | {"timestamp": None} == {
        "request": 3,
        "model": "claude-opus-4-5",
        "t": 100.0,
        "api_time": 1.0,
        "think_time": 87.0,
        "streaming": False,
        "stop": "tool_use",
        "input_types": ["text"],
        "output_types": ["text", "tool_use"],
        "shared_prefix_tokens": 12 * 64,
        "provable_prefix_tokens": 12 * 64,
        "timestamp": None,
    }
    # what some earlier request began with: all a cache could have read (r0 had none before it)
    assert "provable_prefix_tokens" not in by_id["r0"].meta
    assert [by_id[r].meta["provable_prefix_tokens"] for r in ("r2", "r4", "r5")] == [7 * 64, 4 * 64, 7 * 64]
    assert COUNT(by_id["r0"].parts[0].text) == 20 and COUNT(by_id["r0"].parts[1].args or "") == 20
    assert by_id["r0.user"].parts[0].text.startswith("[r0.user text 200 tokens] pad pad")
    assert main_conv.meta["compactions"] == [{"index": 8, "request": 4, **boundary}]
    assert main_conv.meta["subagents"] == ["hand/agent_001"] and main_conv.meta["prompt_drops"] == []
    assert main_conv.meta["models"] == ["claude-opus-4-5"] and main_conv.meta["provider"] == "anthropic"
    assert (main_conv.meta["system_tokens"], main_conv.meta["tool_tokens"], main_conv.meta["requests"]) == (100, 200, 5)
    (tool,) = main_conv.tools
    assert COUNT(tool.name) + COUNT(tool.description) + COUNT(tool.parameters) == 200
    assert _shape(sub) == [
        ("system", "system", ("text",), 50, (), "00:00:03.000"),  # the subagent's clock starts at its t
        ("r0.user", "user", ("text",), 190, (), "00:00:03.000"),
        ("r0", "assistant", ("text", "tool_call"), (300, 30), ("r0.call",), "00:00:04.000"),
        ("r1.tool", "tool", ("tool_result",), 70, ("r0.call",), "00:00:05.000"),
        ("r1", "assistant", ("text",), (400, 10), (), "00:00:06.000"),
    ]
    assert sub.meta["parent"] == "hand" and sub.meta["parent_request"] == 1 and sub.meta["subagent"] is True
    assert (sub.meta["agent_id"], sub.meta["subagent_type"], sub.meta["t"]) == ("agent_001", "Explore", 3.0)
    # each segment replayed under none, anchored on the recorded usage, reproduces every recorded in
    for conv in (main_conv, sub):
        anchors = anchors_for(conv, None)
        rows = [r for k, seg in enumerate(segments(conv)) for r in replay_counts(seg, anchors=anchors.for_segment(k))]
        assert [r["context_tokens"] for r in rows] == [m.usage.input_tokens for m in _replies(conv)]
    assert [s.messages[0].id for s in segments(main_conv)] == ["system", "r4.summary"]
    _round_trip(tmp_path, result.conversations)


def test_a_replay_leaves_out_the_placeholder_of_a_recorded_compaction(tmp_path: Path) -> None:
    """A replay of the whole trace compacts as its policy does: the placeholder the importer sizes as all that
    followed the system prompt and tools after the recorded compaction (the recorded client's own result) is not
    sent on top of the history it stood for. A segment that opens with it, as csim fidelity replays what followed
    the compaction, starts with it."""
    main_conv, _ = read(_write(tmp_path, _trace()), "auto").conversations
    [cut] = compaction_cuts(main_conv)
    assert stand_ins(main_conv) == {cut} and main_conv.messages[cut].meta["compact_summary"]
    result = run(make_policy("none"), main_conv, RunConfig(model=ModelConfig(context_window=1_000_000)))
    sent = [ev.message.id for ev in result.log if isinstance(ev, MessageAppended)]
    assert main_conv.messages[cut].id not in sent and len(sent) == len(main_conv.messages) - 1
    agent = [r["context_tokens"] for r in result.rows if r["request_kind"] == "agent"]
    assert agent[3] < agent[2] + 20 + main_conv.messages[cut].meta["tokens"]  # the history, then what came after
    seg = segments(main_conv)[1]
    assert stand_ins(seg) == frozenset() and seg.messages[0] is main_conv.messages[cut]
    # a text recording's summary at a recorded compaction (Claude Code's, Codex's) is the recorded client's result
    # too; a conversation that opens with one (after its system prompt) starts there
    text = Conversation("t", main_conv.messages, meta={**main_conv.meta, "sizes_only": False})
    assert stand_ins(text) == {cut}
    opened = Conversation("o", (main_conv.messages[0], *main_conv.messages[cut:]), meta=dict(text.meta))
    assert opened.messages[1].meta["compact_summary"] and stand_ins(opened) == frozenset()
    # a Responses body's compaction item follows the user messages the compaction kept, not what it replaced: sent
    summary = main_conv.messages[cut]
    item = Message(summary.id, "user", summary.parts, meta={"compact_summary": True})
    unlisted = {k: v for k, v in text.meta.items() if k != "compactions"}
    body = Conversation("b", (*main_conv.messages[:cut], item, *main_conv.messages[cut + 1 :]), meta=unlisted)
    assert stand_ins(body) == frozenset()
    codex = Conversation("c", body.messages, meta={**unlisted, "compactions": [{"index": cut, "line": 9}]})
    assert stand_ins(codex) == {cut}  # a rollout's compacted record, listed by the importer


def test_the_provable_prefix_is_the_longest_any_earlier_request_began_with(tmp_path: Path) -> None:
    """A prompt that diverged from the one before it may still repeat an older one: the proof reaches back to it."""
    requests = [
        _request(0.0, 400, 10, [1, 2, 3, 4, 5], ["text"], ["text"], "end_turn"),
        _request(10.0, 420, 10, [1, 2, 9, 10, 11], ["text"], ["text"], "end_turn"),  # a side request
        _request(20.0, 500, 10, [1, 2, 3, 4, 5, 6, 7], ["text"], ["text"], "end_turn"),  # the main one again
    ]
    doc = {"id": "side", "models": ["claude-opus-4-5"], "block_size": 64, "tool_tokens": 50, "system_tokens": 50}
    (conv,) = read(_write(tmp_path, doc | {"requests": requests}), "kv-trace").conversations
    replies = _replies(conv)
    assert [m.meta.get("shared_prefix_tokens") for m in replies] == [None, 2 * 64, 2 * 64]
    assert [m.meta.get("provable_prefix_tokens") for m in replies] == [None, 2 * 64, 5 * 64]


def test_without_hashes_a_fall_of_in_is_still_a_compaction(tmp_path: Path) -> None:
    doc = _trace()
    for r in doc["requests"]:
        r.pop("hash_ids", None)
    (conv, _) = read(_write(tmp_path, doc), "kv-trace").conversations
    assert [c["request"] for c in conv.meta["compactions"]] == [4]
    assert conv.meta["compactions"][0]["shared_prefix_tokens"] is None


def test_a_rewritten_prompt_that_shrinks_a_little_is_no_compaction(tmp_path: Path) -> None:
    doc = _trace()
    doc["requests"][4] = _request(130.0, 900, 10, [1, 2, 3, 4, 200], ["text"], ["text"], "end_turn", 1.0, 1600.0)
    doc["requests"][5] = _request(140.0, 950, 10, [1, 2, 3, 4, 200, 201], ["text"], ["text"], "end_turn")
    (conv, _) = read(_write(tmp_path, doc), "kv-trace").conversations
    assert conv.meta["compactions"] == []
    assert conv.meta["prompt_drops"] == [{"request": 4, "before": 1000, "after": 900, "idle_seconds": 1600.0}]
    # the call before it has no result in the recording (its input is text only): one of no size answers it
    assert [m.id for m in conv.messages][-6:] == ["r3", "r4.tool", "r4.user", "r4", "r5.user", "r5"]
    assert conv.messages[-5].meta["synthetic"] == "no-result" and conv.messages[-4].meta["tokens"] == 0


# --- bad input -------------------------------------------------------------------------------------------------


def _damaged(change: Any) -> dict[str, Any]:
    doc = _trace()
    change(doc)
    return doc


BAD = [
    ("missing-in", lambda d: d["requests"][2].pop("in"), "request 2", "'in'"),
    ("out-not-a-number", lambda d: d["requests"][3].update(out="many"), "request 3", "'out' should be an integer"),
    ("in-out-of-range", lambda d: d["requests"][2].update({"in": MAX_TOKENS + 1}), "request 2", "from 0 to"),
    ("negative-t", lambda d: d["requests"][5].update(t=-1), "request 5", "'t' should be from 0"),
    ("hash-id-not-an-integer", lambda d: d["requests"][3]["hash_ids"].append("x"), "request 3", "'hash_ids'"),
    ("types-not-a-list", lambda d: d["requests"][2].update(input_types="text"), "request 2", "'input_types'"),
    ("request-not-an-object", lambda d: d["requests"].insert(2, [1, 2]), "request 2", "should be an object"),
    ("subagent-without-requests", lambda d: d["requests"][1].pop("requests"), "request 1", "'requests'"),
    ("subagent-request", lambda d: d["requests"][1]["requests"][1].pop("out"), "(request 1) request 1", "'out'"),
    ("system-size-not-an-integer", lambda d: d.update(system_tokens="4k"), "the document", "'system_tokens'"),
]


@pytest.mark.parametrize(("change", "record", "problem"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_record_is_an_error_naming_it_or_a_skip(tmp_path: Path, change: Any, record: str, problem: str) -> None:
    path = _write(tmp_path, _damaged(change))
    with pytest.raises(FormatError) as info:
        read(path, "kv-trace")
    assert str(info.value).startswith(str(path)) and record in str(info.value) and problem in str(info.value)
    result = read(path, "kv-trace", lenient=True)
    assert len(result.skipped) == 1 and record in result.skipped[0].reason
    assert all(validate(c) == [] for c in result.conversations)
    assert result.conversations[0].id == "hand" and len(_replies(result.conversations[0])) >= 4


def test_lenient_skip_of_a_request_folds_it_into_the_next(tmp_path: Path) -> None:
    """A request skipped leaves the one after it to carry what both added; the calls still pair."""
    path = _write(tmp_path, _damaged(lambda d: d["requests"][2].pop("in")))
    conv = read(path, "kv-trace", lenient=True).conversations[0]
    assert [m.id for m in conv.messages][:6] == ["system", "r0.user", "r0", "r3.tool", "r3.user", "r3"]
    # request 3 added 1000 - 500 - 40; its input is text, so r0's call gets a result of no size
    assert [conv.messages[i].meta["tokens"] for i in (3, 4)] == [0, 460]
    assert conv.messages[3].meta["synthetic"] == "no-result"


def test_truncated_trace_names_the_request_it_breaks_off_in(tmp_path: Path) -> None:
    text = json.dumps(_trace(), indent=1)
    path = _write(tmp_path, text[: text.index('"t": 100.0') + 5])  # inside request 3
    with pytest.raises(FormatError) as info:
        read(path, "kv-trace")
    assert str(info.value).startswith(f"{path}:") and "breaks off in request 3" in str(info.value)
    result = read(path, "kv-trace", lenient=True)
    (skip,) = result.skipped
    assert "request 3" in skip.reason and "kept" in skip.reason
    main_conv, sub = result.conversations
    assert [m.id for m in _replies(main_conv)] == ["r0", "r2"] and len(_replies(sub)) == 2


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty file"),
        ("[]", "the document is list"),
        ('{"block_size": 64, "requests": 5}', "without a 'requests' list"),
        ('{"block_size": 64, "system_tokens": 1', "breaks off in the header"),
        ('{"block_size": 64, "requests": []}', "no request to import"),
    ],
    ids=["empty", "list", "requests-not-a-list", "truncated-header", "no-requests"],
)
def test_not_a_trace_is_an_error_in_strict_mode(tmp_path: Path, text: str, problem: str) -> None:
    path = _write(tmp_path, text, "t.json")
    with pytest.raises(FormatError) as info:
        read(path, "kv-trace")
    assert problem in str(info.value)
