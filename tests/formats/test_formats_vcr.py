"""The vcr-cassette importer: one conversation per model call, usage from JSON and SSE, skips with reasons."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from sim.core.conversation import Usage, validate
from sim.core.errors import FormatError
from sim.formats import detect, read
from tests.builders import ANTHROPIC_RUN, cassette
from tests.formats._golden import check_golden

FMT = "vcr-cassette"


def test_golden(golden: Path) -> None:
    result = check_golden(golden / "vcr_cassette.yaml", FMT)
    anth, chat, resp, sse = result.conversations
    assert [m.role for m in anth.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert anth.messages[-1].usage == Usage(88, 14, 512, 0) and anth.tools[0].name == "get_weather"
    assert chat.messages[-1].usage == Usage(180, 11, 1920, 0) and chat.messages[-1].calls[0].name == "greet"
    assert resp.messages[0].text == "Use the calculator." and resp.messages[-1].usage == Usage(310, 22, 0, 0)
    assert sse.messages[-1].text == "One, two, three." and sse.messages[-1].usage == Usage(12, 9, 0, 0)
    assert [c.meta["provider"] for c in result.conversations] == ["anthropic", "openai", "openai", "anthropic"]
    reasons = [(s.line, s.reason) for s in result.skipped]
    assert reasons[0][1] == "interaction 4: GET example.com/sample.pdf is not a model call"
    assert reasons[1][1].startswith("interaction 5: response status 400: messages: first message")
    assert all(line is not None for line, _ in reasons)


def test_broken_yaml_names_its_line(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("interactions:\n- request:\n    uri: [unclosed\n", encoding="utf-8")
    for lenient in (False, True):
        with pytest.raises(FormatError, match=r"c\.yaml:\d+: invalid YAML"):
            read(p, FMT, lenient=lenient)


def test_bad_interaction_strict_and_lenient(tmp_path: Path, golden: Path) -> None:
    text = (golden / "vcr_cassette.yaml").read_text(encoding="utf-8")
    p = tmp_path / "c.yaml"
    p.write_text(text.replace("uri: https://api.openai.com/v1/chat/completions", "uri: 7", 1), encoding="utf-8")
    with pytest.raises(FormatError, match=r"c\.yaml:62: interaction 1: request 'uri' should be a string"):
        read(p, FMT)
    result = read(p, FMT, lenient=True)
    assert [c.id for c in result.conversations] == ["c-0", "c-2", "c-3"]


def test_recorded_cassettes(recorded: Path) -> None:
    """Every cassette is detected; each model call with a 2xx JSON or SSE reply is a conversation with usage."""
    folder = recorded / "pydantic-ai-cassettes"
    if not folder.is_dir():
        pytest.skip(f"{folder} is not present")
    files = sorted(folder.glob("*.yaml"))
    start = time.perf_counter()
    per = Counter()
    for f in files:
        assert detect(f) == FMT, f
        result = read(f, FMT, lenient=True)
        for c in result.conversations:
            assert validate(c) == []
            per[c.meta["provider"], "conversations"] += 1
            per[c.meta["provider"], "usage"] += c.messages[-1].usage is not None
    elapsed = time.perf_counter() - start
    assert len(files) >= 400 and per["anthropic", "conversations"] >= 200 and per["openai", "conversations"] >= 300
    assert per["anthropic", "usage"] == per["anthropic", "conversations"]
    assert per["openai", "usage"] >= per["openai", "conversations"] - 10
    print(f"{len(files)} cassettes, {dict(per)}, {elapsed:.1f} s")


def test_a_call_that_resends_an_earlier_one_is_linked_to_it(tmp_path: Path) -> None:
    """An agent run's calls each re-send the previous prompt with more appended: linked as one chain (calibration
    anchors each on the chain's first) while the request shows everything it holds as text; an image appended
    still continues the chain but leaves it, and so does everything after; another system prompt starts anew."""
    task, call, result, image = ANTHROPIC_RUN
    head = {"model": "claude-sonnet-4-5", "system": "Be brief.", "tools": [{"name": "add", "input_schema": {}}]}
    bodies = [
        {**head, "max_tokens": 100, "messages": [task]},
        {**head, "max_tokens": 200, "messages": [task, call, result]},  # max_tokens does not change the prompt
        {**head, "max_tokens": 100, "messages": [task, call, result, image]},
        {**head, "max_tokens": 100, "messages": [task, call, result, image, call, result]},
        {**head, "system": "Be long.", "max_tokens": 100, "messages": [task, call, result]},
    ]
    convs = read(cassette(tmp_path, bodies), FMT).conversations
    links = [(c.meta.get("continues"), c.meta.get("chain")) for c in convs]
    assert links == [(None, None), ("agent_run-0", 0), ("agent_run-1", None), ("agent_run-2", None), (None, None)]
    assert {c.meta["session"] for c in convs} == {"agent_run"}


def test_server_tools_and_thinking_leave_the_chain(tmp_path: Path) -> None:
    """What the provider counts otherwise than the body's text (a hosted tool's definitions, earlier thinking)
    keeps a call out of the anchored chain."""
    task = {"role": "user", "content": "Search."}
    thought = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}
    more = {"role": "user", "content": "Go on."}
    web = {"model": "m", "tools": [{"type": "web_search_20250305", "name": "web_search"}]}
    bodies = [
        {**web, "messages": [task]},
        {**web, "messages": [task, {"role": "assistant", "content": "ok"}, more]},
        {"model": "m", "messages": [task]},
        {"model": "m", "messages": [task, thought, more]},
    ]
    convs = read(cassette(tmp_path, bodies), FMT).conversations
    assert [(c.meta.get("continues"), c.meta.get("chain")) for c in convs] == [
        (None, None),
        ("agent_run-0", None),
        (None, None),
        ("agent_run-2", None),
    ]
