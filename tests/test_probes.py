"""Probes mined from recordings (sim/formats/probes.py) and how retention judges them (sim/replay/retention.py)."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies import make_policy
from sim.core.conversation import Conversation, Fact, Message, Part
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.formats import native, probes
from sim.formats.importing import recorded_conversations
from sim.formats.probes import MAX_NEEDS, mine_probes, schedule, with_probes
from sim.replay.engine import RunConfig, run
from sim.sweep.grid import conversations_of
from sim.sweep.spec import spec_from_flags

RECORDED = Path(__file__).resolve().parents[1].parent / "shared" / "recorded"
LONG = ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", "258c7280-ae70-4798-800f-63464d01a85d")
SMALL = ModelConfig(context_window=60_000, output_reserve=500)
PATH = "lib/app/session_store.ex"


def _call(cid: str, name: str, **args: str) -> Part:
    return Part("tool_call", call_id=cid, name=name, args=json.dumps(args, sort_keys=True))


def _session(filler: int = 3, carrier: bool = False, user_rule: str = "") -> Conversation:
    """A user asks, a listing tells a path, the agent works on other things, then reads the path."""
    msgs = [Message("u0", "user", (Part("text", "Fix the crash in the session store." + user_rule),))]
    msgs += [
        Message("a0", "assistant", (_call("c0", "Bash", command="ls -R lib"),)),
        Message("t0", "tool", (Part("tool_result", f"lib/app.ex\n{PATH}\nlib/app/other_file.ex", call_id="c0"),)),
    ]
    for k in range(1, filler + 1):
        text = f"Looking at {PATH} next." if carrier and k == 1 else "Checking something else."
        msgs.append(Message(f"a{k}", "assistant", (Part("text", text), _call(f"c{k}", "Bash", command=f"echo {k}"))))
        msgs.append(Message(f"t{k}", "tool", (Part("tool_result", f"output {k} " + "x" * 400, call_id=f"c{k}"),)))
    n = filler + 1
    msgs.append(Message(f"a{n}", "assistant", (_call(f"c{n}", "Read", file_path=PATH),)))
    msgs.append(Message(f"t{n}", "tool", (Part("tool_result", "defmodule App.SessionStore do", call_id=f"c{n}"),)))
    msgs.append(Message(f"a{n + 1}", "assistant", (Part("text", "Done."),)))
    return Conversation("s", tuple(msgs))


def _artifact(conv: Conversation, text: str) -> Fact:
    return next(f for f in mine_probes(conv) if f.kind == "artifact" and f.text == text)


# -- the extractor on hand-built conversations ----------------------------------------------------------------


def test_an_artifact_is_told_once_and_needed_at_the_request_that_produced_its_use() -> None:
    conv = _session()
    f = _artifact(conv, PATH)
    assert (f.source, f.mined) == ("t0", True)
    # the use is a4 (the Read); the request that produced it is the one after t3, so the need is t3
    assert f.needed_at == ("t3",)
    assert conv.messages[conv.index()["t3"] + 1].id == "a4"


def test_a_use_right_after_the_telling_or_of_a_coined_token_is_no_need() -> None:
    msgs = (
        Message("u0", "user", (Part("text", "Go."),)),
        Message("a0", "assistant", (_call("c0", "Bash", command="ls"),)),
        Message("t0", "tool", (Part("tool_result", PATH, call_id="c0"),)),
        Message("a1", "assistant", (_call("c1", "Read", file_path=PATH),)),  # reads what it just saw
        Message("t1", "tool", (Part("tool_result", "ok", call_id="c1"),)),
        Message("a2", "assistant", (_call("c2", "Write", file_path="lib/made_up/new_module.ex", content="x"),)),
        Message("t2", "tool", (Part("tool_result", "created lib/made_up/new_module.ex", call_id="c2"),)),
        Message("a3", "assistant", (Part("text", "Wrote it."),)),
        Message("t3x", "user", (Part("text", "Thanks."),)),
        Message("a4", "assistant", (_call("c4", "Read", file_path="lib/made_up/new_module.ex"),)),
        Message("t4", "tool", (Part("tool_result", "x", call_id="c4"),)),
    )
    texts = {f.text for f in mine_probes(Conversation("c", msgs))}
    assert PATH not in texts  # only ever used right after it was told
    assert "lib/made_up/new_module.ex" not in texts  # the agent coined it


def test_trivial_tokens_and_the_system_prompt_are_left_out() -> None:
    conv = _session()
    system = Message("sys", "system", (Part("text", f"You work on {PATH}."),))
    with_system = Conversation("s", (system, *conv.messages))
    assert PATH not in {f.text for f in mine_probes(with_system)}
    assert all(len(f.text) >= 5 for f in mine_probes(conv))
    assert "1" not in {f.text for f in mine_probes(conv)}


def test_carriers_are_the_other_messages_holding_the_text_up_to_the_last_need() -> None:
    f = _artifact(_session(carrier=True), PATH)
    assert "a1" in f.carriers and "t0" not in f.carriers  # the agent's own mention carries it; the source is apart


def test_a_user_rule_is_needed_at_later_user_turns_and_the_last_request() -> None:
    conv = _session(filler=30, user_rule=" Don't touch the public API.")
    rule = next(f for f in mine_probes(conv) if f.kind == "constraint")
    assert (rule.text, rule.source) == ("Don't touch the public API.", "u0")
    ix = conv.index()
    needs = [ix[n] for n in rule.needed_at]
    assert needs == schedule(conv.messages, 0)
    assert len(needs) >= 2 and needs[-1] == len(conv.messages) - 2  # every 25th request, and the last one
    assert all(conv.messages[i + 1].role == "assistant" for i in needs)
    forgot = _session(user_rule=" I don't remember the file name.")
    assert not [f for f in mine_probes(forgot) if f.kind == "constraint"]


def test_commits_and_todo_items_are_decisions_and_goal_state() -> None:
    msgs = [Message("u0", "user", (Part("text", "Ship it."),))]
    commit = "git commit -m \"$(cat <<'EOF'\nfix: keep sessions across restarts\n\nBody.\nEOF\n)\""
    todo = [{"content": "Write the migration for sessions", "status": "pending"}]
    todo_call = Part("tool_call", call_id="c1", name="TodoWrite", args=json.dumps({"todos": todo}))
    msgs += [
        Message("a0", "assistant", (_call("c0", "Bash", command=commit),)),
        Message("t0", "tool", (Part("tool_result", "[main 1a2b3c4] fix", call_id="c0"),)),
        Message("a1", "assistant", (todo_call,)),
        Message("t1", "tool", (Part("tool_result", "ok", call_id="c1"),)),
        Message("u1", "user", (Part("text", "Next?"),)),
        Message("a2", "assistant", (Part("text", "Migration."),)),
    ]
    got = {(f.kind, f.text, f.source, f.needed_at) for f in mine_probes(Conversation("d", tuple(msgs)))}
    assert ("decision", "fix: keep sessions across restarts", "a0", ("u1",)) in got
    assert ("continuation", "Write the migration for sessions", "a1", ("u1",)) in got


def test_mining_is_deterministic_and_ids_are_stable() -> None:
    rule = " Always run the tests first."
    first, again = mine_probes(_session(6, True, rule)), mine_probes(_session(6, True, rule))
    assert first == again and [f.id for f in first] == [f.id for f in again]
    assert len({f.id for f in first}) == len(first)
    assert all(f.id.startswith(f"probe:{f.kind}:") for f in first)


def test_needs_per_probe_are_capped_evenly() -> None:
    msgs = [Message("u0", "user", (Part("text", "Go."),))]
    msgs += [Message("a0", "assistant", (_call("c0", "Bash", command="ls"),))]
    msgs += [Message("t0", "tool", (Part("tool_result", PATH, call_id="c0"),))]
    for k in range(1, 3 * MAX_NEEDS):
        msgs.append(Message(f"a{k}", "assistant", (_call(f"c{k}", "Read", file_path=PATH if k % 2 == 0 else "x"),)))
        msgs.append(Message(f"t{k}", "tool", (Part("tool_result", f"r{k}", call_id=f"c{k}"),)))
    f = _artifact(Conversation("cap", tuple(msgs)), PATH)
    assert len(f.needed_at) == MAX_NEEDS
    assert f.needed_at[0] == "t1" and f.needed_at[-1] == msgs[-5].id  # first and last use kept (a94, after t93)


def test_with_probes_keeps_scripted_facts_and_fills_empty_ones() -> None:
    conv = _session()
    mined = with_probes(conv)
    assert mined.facts == mine_probes(conv) and mined.facts
    scripted = replace(conv, facts=(Fact("f", "artifact", PATH, "t0", ("t3",)),))
    assert with_probes(scripted) is scripted


def test_carriers_must_name_messages() -> None:
    conv = _session()
    with pytest.raises(InvalidConfig, match="carrier 'nope'"):
        replace(conv, facts=(Fact("f", "artifact", PATH, "t0", ("t3",), carriers=("nope",)),))


def test_mined_facts_round_trip_through_the_native_format(tmp_path: Path) -> None:
    conv = with_probes(_session(carrier=True))
    path = tmp_path / "c.jsonl"
    path.write_text(native.dumps(conv))
    (back,) = native.read(path).conversations
    assert back.facts == conv.facts and any(f.carriers for f in back.facts) and all(f.mined for f in back.facts)
    plain = replace(conv, facts=(Fact("f", "artifact", PATH, "t0", ("t3",)),))
    assert '"mined"' not in native.dumps(plain) and '"carriers"' not in native.dumps(plain)


def test_recordings_get_probes_unless_turned_off(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(native.dumps(_session()))
    on = spec_from_flags([("none", [])], conversations=[str(path)])
    off = spec_from_flags([("none", [])], conversations=[str(path)], probes=False)
    (src_on,), (src_off,) = on.sources, off.sources
    assert (
        src_on.probes and not src_off.probes and src_off.plain()["probes"] is False and "probes" not in src_on.plain()
    )
    (_, c_on), (_, c_off) = next(conversations_of(src_on, [0])), next(conversations_of(src_off, [0]))
    assert c_on.facts and not c_off.facts


# -- retention of mined probes --------------------------------------------------------------------------------


def _judged(conv: Conversation, policy: str, **params: str) -> list[dict[str, object]]:
    res = run(make_policy(policy, params), conv, RunConfig(model=SMALL, tokenizer="chars4"))
    return res.fact_rows


def test_a_masked_source_loses_the_probe_and_a_visible_carrier_keeps_it() -> None:
    bare, carried = with_probes(_session(filler=4)), with_probes(_session(filler=4, carrier=True))
    fid = _artifact(bare, PATH).id
    rows = [r for r in _judged(bare, "swe-agent-masking", n="2") if r["fact"] == fid]
    assert [r["visible"] for r in rows] == [False]  # the listing was masked before the Read
    assert [r["visible"] for r in _judged(bare, "none") if r["fact"] == fid] == [True]
    cid = _artifact(carried, PATH).id
    last = [r for r in _judged(carried, "swe-agent-masking", n="2") if r["fact"] == cid][-1]
    assert last["visible"] is True  # the agent's own mention (a text part, never masked) carries it


def test_a_mined_probe_is_visible_in_a_summary_that_holds_its_text() -> None:
    from sim.core.state import Ledger
    from sim.core.view import Summary, View
    from sim.replay.reactions import Reactions
    from sim.replay.retention import Retention

    conv = with_probes(_session())
    f = _artifact(conv, PATH)
    ledger = Ledger()
    ret = Retention(conv, {}, ledger, Reactions(), False, lambda t, n, r, p: t)
    empty = View(spans=())
    assert not ret.visible_in(f, replace(empty, summary=Summary("nothing of it")))
    assert ret.visible_in(f, replace(empty, summary=Summary(f"the crash is in {PATH}")))
    assert not ret.visible_in(replace(f, mined=False), replace(empty, summary=Summary(f"in {PATH}")))


# -- the long Claude Code sessions ---------------------------------------------------------------------------


@functools.cache
def _long(name: str) -> Conversation:
    path = RECORDED / "claude-code" / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared recordings live in ../shared/recorded)")
    (conv,), _ = recorded_conversations(path, "claude-code")
    return with_probes(conv)


@pytest.mark.parametrize("name", LONG)
def test_each_long_session_has_at_least_a_hundred_needs(name: str) -> None:
    conv = _long(name)
    needs = {k: sum(len(f.needed_at) for f in conv.facts if f.kind == k) for k in ("artifact", "decision")}
    assert needs["artifact"] >= 100 and needs["decision"] >= 10, needs
    assert all(f.mined for f in conv.facts)


def test_a_claude_code_replay_of_a_long_session_has_a_defined_retention_recall() -> None:
    conv = _long(LONG[0])
    res = run(make_policy("claude-code"), conv, RunConfig(tokenizer="chars4"))
    s = res.summary
    assert s["facts_needed"] >= 100 and 0.0 < s["retention_recall"] <= 1.0, s
    assert {r["kind"] for r in res.fact_rows} >= {"artifact", "decision"}


def test_memory_file_rules_are_probes_and_the_system_prompts_are_not() -> None:
    rule = "Never commit generated files."
    msgs = (
        Message("sys", "system", (Part("text", "Always answer in English."),)),
        Message("u0", "user", (Part("text", "Start."),)),
        Message("a0", "assistant", (_call("c0", "Read", file_path="/repo/CLAUDE.md"),)),
        Message("t0", "tool", (Part("tool_result", f"# Rules\n- {rule}", call_id="c0"),)),
        Message("a1", "assistant", (_call("c1", "Bash", command="make"),)),
        Message("t1", "tool", (Part("tool_result", "ok", call_id="c1"),)),
        Message("a2", "assistant", (Part("text", "Built."),)),
    )
    rules = [(f.text, f.source) for f in mine_probes(Conversation("m", msgs)) if f.kind == "constraint"]
    assert rules == [(rule, "t0")]
    traced = replace(_session(), meta={"sizes_only": True})  # a token trace's placeholders
    assert with_probes(traced) is traced


def test_a_recorded_summary_carries_a_probe_but_a_replay_does_not_send_it() -> None:
    """The recording's own summary restates the path, so mining lists it as a carrier; but a replay compacts as its
    policy does and leaves the recorded client's summary out (:func:`sim.core.counting.stand_ins`), so a policy that
    masked the listing has lost the path: the recorded summary does not keep it for the policy."""
    base = _session(filler=4)
    k = base.index()["t2"] + 1
    summary = Message(
        "sum",
        "user",
        (Part("text", f"Summary so far: the crash is in {PATH}."),),
        meta={"compact_summary": True, "compact_boundary": {"trigger": "auto"}},
    )
    conv = with_probes(replace(base, messages=(*base.messages[:k], summary, *base.messages[k:])))
    f = _artifact(conv, PATH)
    assert f.source == "t0" and "sum" in f.carriers  # a summary carries, never establishes
    rows = [r for r in _judged(conv, "swe-agent-masking", n="2") if r["fact"] == f.id]
    assert [r["visible"] for r in rows] == [False]  # the listing is masked, and the summary is not sent
    assert [r["visible"] for r in _judged(conv, "none") if r["fact"] == f.id] == [True]


_CHUNK_CHARS = st.sampled_from(list("abcxyzABCXYZ0123456789/._-@+~:?!,;()[]\"'`<>{}éß→"))


@given(st.lists(_CHUNK_CHARS, min_size=1, max_size=40).map("".join))
def test_a_chunk_the_shapes_match_holds_what_every_shape_holds(chunk: str) -> None:
    """The scanner passes over a chunk without a slash, dot, underscore, hyphen, digit or inner capital: that must
    never lose a candidate the shapes would find (and a plain word never has one)."""
    if probes._shapes(chunk):
        assert probes._MAY_HOLD.search(chunk), chunk
        assert not probes._PLAIN.fullmatch(chunk), chunk


def test_the_scanner_finds_what_each_chunk_scanned_alone_finds() -> None:
    text = "Read src/app/main.py and  FooBar.Baz   then 1234567 or 2024; deadbeef12 my_var kebab-case-name plain Words"
    want = {t for chunk in text.split() for t in probes._shapes(chunk)}
    assert probes._Scanner().tokens(text) == want and "src/app/main.py" in want and "my_var" in want


@given(
    st.lists(
        _CHUNK_CHARS | st.sampled_from(["http://", "https://x.io/", "ab_c", "Foo.Bar", "1a2b3c4d", "-x-"]), max_size=30
    ).map("".join)
)
def test_the_guarded_shapes_find_what_the_bare_alternation_finds(text: str) -> None:
    bare = re.compile(probes._SHAPES)
    assert [(m.span(), m.lastgroup) for m in probes._TOKEN.finditer(text)] == [
        (m.span(), m.lastgroup) for m in bare.finditer(text)
    ]
