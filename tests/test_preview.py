"""``csim preview`` and ``sim.api.compact``: one compaction as the run makes it, and the facts it loses are exactly
those the run then reports not visible at their next needs."""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from policies import make_policy
from sim import api
from sim.cli.main import main
from sim.core.conversation import Conversation, Fact
from sim.core.errors import CsimError, InvalidConfig, UnknownName
from sim.core.invariants import ranges
from sim.replay import model as wire
from sim.replay.engine import run as engine_run
from sim.replay.preview import NoCompaction, Preview, preview, with_compact_command
from sim.scenarios import scenario_conversation

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("CSIM_RECORDED") or ROOT.parent / "shared" / "recorded")

#: (scenario, scenario parameters, policy, policy parameters, run options): each compacts, most lose facts.
CASES = [
    ("coding-agent", {}, "cloudflare-os", {}, {}),
    ("research-agent", {"turns": "60"}, "claude-code", {}, {"window": 30_000}),
    ("support-chat", {"turns": "300"}, "autogen-buffered", {}, {}),
    ("support-chat", {"turns": "400"}, "langchain-summarization", {}, {"window": 20_000}),
    ("coding-agent", {}, "swe-agent-masking", {}, {}),
    ("research-agent", {"turns": "60"}, "sliding-window", {}, {"window": 30_000}),
]


@functools.cache
def _run(case: int) -> Any:
    s, sp, pol, pp, ro = CASES[case]
    return api.run(pol, pp, scenario=s, scenario_params=sp, **ro)


@functools.cache
def _preview(case: int, at: int | None = None) -> Preview:
    s, sp, pol, pp, ro = CASES[case]
    return api.compact(None, pol, pp, scenario=s, scenario_params=sp, at=at, **ro)


def _check_against_run(p: Preview, conv: Conversation, comps: pd.DataFrame, facts: pd.DataFrame) -> int:
    """The preview is the run's compaction, and every fact row judged between it and the next compaction shows
    the fact as the preview's view after does; returns how many rows of lost facts were checked."""
    comps = comps.reset_index(drop=True)
    k = comps.index[comps["compaction_id"] == p.compaction_id][0]
    row = comps.loc[k]
    assert (row["turn"], row["tokens_before"], row["tokens_after"]) == (p.request, p.tokens_before, p.tokens_after)
    assert row["trigger"] == p.trigger and row["mode"] == p.mode
    fates = {f.id: f for f in p.facts}
    # the run's own record of what the compaction lost (the compactions table's facts_lost), restricted to facts
    # needed later, is the preview's
    run_lost = {x for x in str(row["facts_lost"]).split(",") if x}
    assert run_lost & set(fates) == {f.id for f in p.lost}
    nxt = comps.loc[k + 1, "turn"] if k + 1 < len(comps) else float("inf")
    window = facts[(facts["turn"] >= p.request) & (facts["turn"] < nxt)]
    established = set(p.message_ids)
    source = {f.id: f.source for f in conv.facts}
    checked_lost = 0
    for _, r in window.iterrows():
        if source[r["fact"]] not in established:
            continue  # established after the compaction: not the preview's business
        fate = fates[r["fact"]]  # every fact established before and judged later is in the preview
        assert bool(r["visible"]) == fate.visible_after, (r["fact"], r["turn"])
        checked_lost += fate.lost
    # every lost fact whose next need falls before the next compaction was judged there, not visible
    judged = set(window["fact"])
    position = {m.id: i for i, m in enumerate(conv.messages)}
    for f in p.lost:
        if f.id not in judged:
            assert nxt != float("inf") or position[f.needed_at] >= position[p.message_ids[-1]]
    return checked_lost


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_the_lost_facts_are_those_the_run_reports_lost_at_their_next_needs(case: int) -> None:
    s, sp, pol, _, _ = CASES[case]
    conv = scenario_conversation(s, 0, sp)
    r = _run(case)
    first = _preview(case)
    checked = _check_against_run(first, conv, r.compactions, r.facts)
    assert first.compaction_id == r.compactions.sort_values("turn", kind="stable").iloc[0]["compaction_id"]
    # --at a later request: the first compaction at or after it, the earlier ones made as the run made them
    later = r.compactions[r.compactions["turn"] > first.request]
    if len(later):
        at = int(later.iloc[0]["turn"])
        p = _preview(case, at)
        assert p.request == at and p.compaction_id == later.iloc[0]["compaction_id"]
        checked += _check_against_run(p, conv, r.compactions, r.facts)
    if pol in ("cloudflare-os", "langchain-summarization"):
        assert first.lost and checked > 0  # the check is not vacuous where facts are lost


def test_the_preview_says_what_it_keeps_removes_and_sends() -> None:
    p = _preview(0)  # coding-agent, cloudflare-os: the /compact halfway summarises
    assert p.act == "summarised" and p.summary and p.summary_tokens > 0
    assert p.tokens_after < p.tokens_before
    kept = {i for a, b in p.kept for i in range(a, b)}
    removed = {i for a, b in p.removed for i in range(a, b)}
    before = {i for a, b in ranges(p.view_before, p.messages) for i in range(a, b)} - {0}
    assert kept | removed == before | kept and not kept & removed
    # the context is the system prompt, the summary, then the kept messages, as the wire format sends them
    ids = [m.id for m in p.context]
    assert ids[0] == p.message_ids[0] and ids[1].startswith("summary-")
    gone = {e.index for e in p.edited if e.action == "dropped"}  # the /compact command: a message left empty
    sent = [p.message_ids[0], *(p.message_ids[i] for i in sorted(kept - gone))]
    assert gone == {p.messages - 1} and [i for i in ids if not i.startswith("summary-")] == sent
    wire.validate_anthropic(p.request_messages)
    by_kind = p.facts_by_kind()
    assert sum(v["lost"] for v in by_kind.values()) == len(p.lost)
    assert {k: len(v) for k, v in p.lost_by_kind().items()} == {k: v["lost"] for k, v in by_kind.items() if v["lost"]}
    json.dumps(p.to_dict())
    s, sp, pol, pp, ro = CASES[0]
    assert api.compact(None, pol, pp, scenario=s, scenario_params=sp, **ro) == p  # deterministic


def test_api_compact_takes_a_list_of_messages_and_a_policy_object() -> None:
    conv = scenario_conversation("support-chat", 0, {"turns": "300"})
    p = api.compact(list(conv.messages), make_policy("autogen-buffered"))
    ref = _preview(2)  # the same conversation by scenario name
    assert (p.request, p.tokens_before, p.tokens_after, p.kept) == (
        ref.request,
        ref.tokens_before,
        ref.tokens_after,
        ref.kept,
    )
    assert p.facts == ()  # a bare list of messages carries no facts
    assert len(p.context) == 1 + sum(b - a for a, b in p.kept)  # the system prompt and the newest messages
    p2 = api.compact(conv, "autogen-buffered", {"buffer_size": 3}, provider="openai")
    wire.validate_openai(p2.request_messages)
    assert sum(b - a for a, b in p2.kept) == 3
    with pytest.raises(InvalidConfig, match="carries its parameters"):
        api.compact(conv, make_policy("autogen-buffered"), {"buffer_size": 3})
    with pytest.raises(InvalidConfig, match="not both"):
        api.compact(conv, "none", scenario="coding-agent")


@pytest.mark.parametrize("policy", ["claude-code", "codex"])
def test_a_manual_compaction_is_the_one_a_compact_command_there_makes(policy: str) -> None:
    conv = scenario_conversation("coding-agent", 0, {})
    with_command, turn = with_compact_command(conv, 20)
    added = [m for m in with_command.messages if m.command == "compact"]
    assert turn >= 20 and len(with_command.messages) == len(conv.messages) + 1
    assert [m.id for m in added if m not in conv.messages] == [f"preview-compact-{turn}"]
    p = api.compact(conv, policy, at=20, manual=True)
    assert (p.request, p.trigger) == (turn, "manual") and p.act == "summarised"
    r = engine_run(make_policy(policy), with_command)
    rows = pd.DataFrame(r.fact_rows, columns=["turn", "fact", "kind", "visible", "age_messages"])
    _check_against_run(p, with_command, pd.DataFrame(r.compactions), rows)
    if policy == "claude-code":
        assert any(x.startswith("file") for x in p.injected)  # the re-attached files
    with pytest.raises(NoCompaction, match="declines a manual compaction"):
        api.compact(conv, "sliding-window", at=20, manual=True)
    with pytest.raises(InvalidConfig, match="give --at REQUEST"):
        api.compact(conv, policy, manual=True)


def test_the_errors_say_what_to_do() -> None:
    conv = scenario_conversation("coding-agent", 0, {})
    with pytest.raises(UnknownName, match="Did you mean 'cloudflare-os'"):
        api.compact(conv, "cloudflar-os")
    with pytest.raises(
        InvalidConfig, match=r"request 500 is past the end: .* has 60 agent requests \(numbered 0 to 59"
    ):
        api.compact(conv, "cloudflare-os", at=500)
    with pytest.raises(NoCompaction, match="never compacts by design"):
        api.compact(conv, "none")
    with pytest.raises(NoCompaction, match=r"peaked at [\d,]+ tokens at request \d+.*-P trigger_tokens=") as exc:
        api.compact(conv, "anthropic-clear-tool-uses")  # its 100,000-token trigger is never reached
    assert "--window" in str(exc.value)
    last = int(_run(0).compactions["turn"].max())
    with pytest.raises(
        NoCompaction, match=f"its last compaction was c\\d+ at request {last} \\(--at {last} shows it\\)"
    ):
        api.compact(conv, "cloudflare-os", at=last + 1)


def test_the_command_line_prints_the_preview_and_its_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preview", "--scenario", "coding-agent", "--policy", "cloudflare-os"]) == 0
    out = capsys.readouterr().out
    p = _preview(0)
    assert f"compaction {p.compaction_id} before request {p.request} of 60" in out
    assert f"{p.tokens_before:,} -> {p.tokens_after:,}" in out
    for f in p.lost:
        assert f"lost {f.id} ({f.kind})" in out
    assert main(["preview", "--scenario", "coding-agent", "--policy", "cloudflare-os", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(p.to_dict()))
    assert main(["preview", "--scenario", "coding-agent", "--policy", "cloudflare-os", "--at", "500"]) == 2
    assert "past the end" in capsys.readouterr().err
    assert main(["preview", "--policy", "cloudflare-os"]) == 2
    assert "give exactly one of SESSION" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["preview", "--help"])
    assert "--at REQUEST" in capsys.readouterr().out


#: One small recording per shared format: (folder, file, policy, parameters, conversation id or None).
RECORDINGS = [
    ("claude-code", "tool_heavy.jsonl", "autogen-buffered", {}, None),
    ("swe-agent", "demonstrations__function_calling_simple.traj", "autogen-buffered", {}, None),
    ("tau-bench", "gpt-4o-airline.json", "autogen-buffered", {}, "tau-1-0"),
    ("openhands", "runtime_trajs/basic_interactions.json", "autogen-buffered", {"buffer_size": 2}, None),
    (
        "openhands",
        "llm_data/nonfncall-llm-logs/litellm_proxy__deepseek__deepseek-chat-1757015068.723.json",
        "autogen-buffered",
        {"buffer_size": 2},
        None,
    ),
    ("kv-cache-traces", "trace_0026.json", "autogen-buffered", {"buffer_size": 2}, None),
    (
        "pydantic-ai-cassettes",
        "models_cassettes_test_anthropic_test_anthropic_mixed_strict_tool_run.yaml",
        "autogen-buffered",
        {"buffer_size": 2},
        "models_cassettes_test_anthropic_test_anthropic_mixed_strict_tool_run-2",
    ),
]


def test_a_recording_read_as_the_wrong_format_names_the_right_one(capsys: pytest.CaptureFixture[str]) -> None:
    path = RECORDED / "swe-agent" / "crypto__eps.traj"
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared recordings live in ../shared/recorded (or $CSIM_RECORDED)")
    assert main(["preview", str(path), "--format", "claude-code", "--policy", "cloudflare-os"]) == 2
    assert "give --format swe-agent" in capsys.readouterr().err


def _recorded(path: Path, cid: str | None = None) -> tuple[Conversation, Any]:
    """The recording's conversation and the run config a run of it gets (as ``api.compact`` reads it)."""
    conv, config, _ = api.one_conversation(
        scenario=None,
        scenario_params=None,
        path=path,
        format="auto",
        lenient=False,
        conversation_id=cid,
        seed=0,
        run_options={},
    )
    return conv, config


@pytest.mark.parametrize(("folder", "name", "policy", "params", "cid"), RECORDINGS, ids=[r[1][:24] for r in RECORDINGS])
def test_a_shared_recording_of_each_format_previews_as_its_run_compacts(
    folder: str, name: str, policy: str, params: dict[str, Any], cid: str | None
) -> None:
    path = RECORDED / folder / name
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared recordings live in ../shared/recorded (or $CSIM_RECORDED)")
    p = api.compact(path, policy, params, conversation_id=cid)
    conv, config = _recorded(path, cid)
    assert cid is None or p.conversation == cid
    r = engine_run(make_policy(policy, params), conv, config)
    comps = pd.DataFrame(r.compactions)
    facts = pd.DataFrame(r.fact_rows, columns=["turn", "fact", "kind", "visible", "age_messages"])
    _check_against_run(p, conv, comps, facts)
    assert p.tokens_after < p.tokens_before and p.removed
    wire.validate_anthropic(p.request_messages)


def test_a_recording_that_does_not_exist_is_a_clear_error() -> None:
    with pytest.raises(CsimError, match="does not exist"):
        api.compact("no/such/session.jsonl", "cloudflare-os")


def test_the_readme_shows_the_output_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Previewing a compaction") :]
    command, shown = re.findall(r"```sh\n(.*?)\n```\n```\n(.*?)```", section, flags=re.S)[0]
    assert command.startswith("csim preview ")
    assert main(shlex.split(command)[1:]) == 0
    assert capsys.readouterr().out == shown


def test_facts_on_a_recording_are_judged_as_on_a_scenario() -> None:
    """Facts of one's own on a recording (in place of its mined probes) are previewed and lost as the run then
    judges them, since the preview reads ``conversation.facts`` whatever made them."""
    path = RECORDED / "swe-agent" / "crypto__eps.traj"
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared recordings live in ../shared/recorded (or $CSIM_RECORDED)")
    conv, config = _recorded(path)
    msgs = conv.messages
    half = len(msgs) // 2
    late = [m.id for m in msgs[half:] if m.role in ("user", "tool")]
    facts = tuple(
        Fact(f"p{i}", "recall", m.parts[0].text.strip()[:40], m.id, (late[i % len(late)],))
        for i, m in enumerate(msgs[2:half])  # the observations after the task
        if m.role in ("user", "tool") and m.parts[0].text.strip()
    )
    assert len(facts) >= 3
    conv = replace(conv, facts=facts)
    config = replace(config, model=replace(config.model, context_window=5_000, output_reserve=500))
    r = engine_run(make_policy("sliding-window"), conv, config)
    comps = pd.DataFrame(r.compactions)
    rows = pd.DataFrame(r.fact_rows, columns=["turn", "fact", "kind", "visible", "age_messages"])
    lost = 0
    for turn in sorted(set(comps["turn"])):  # each compaction of the run, previewed with --at
        p = preview(make_policy("sliding-window"), conv, config, at=int(turn))
        lost += _check_against_run(p, conv, comps, rows)
    assert lost > 0  # dropping old messages loses what only they showed, and the run then says so


def test_a_recording_of_several_conversations_previews_the_first_and_says_so() -> None:
    path = (
        RECORDED / "pydantic-ai-cassettes" / "models_cassettes_test_anthropic_test_anthropic_mixed_strict_tool_run.yaml"
    )
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared recordings live in ../shared/recorded (or $CSIM_RECORDED)")
    first = path.stem + "-0"
    warned = pytest.warns(UserWarning, match=f"holds 3 conversations .* previewing the first, '{first}'")
    with warned, pytest.raises(NoCompaction, match=f"request of '{first}' \\(1 agent request replayed"):
        api.compact(path, "autogen-buffered", {"buffer_size": 1})  # one request: nothing to compact yet
    with pytest.raises(UnknownName, match="unknown conversation id .*Did you mean"):
        api.compact(path, "autogen-buffered", conversation_id=path.stem + "-9")
