"""The synthetic scenarios: valid scripts for every seed, deterministic across processes, facts that
point at real text, parameters that do what they say, and spec files that agree with the code."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.conversation import FACT_KINDS, Conversation, validate
from sim.core.errors import EncodingUnavailable, InvalidConfig
from sim.scenarios import SCENARIOS, _load, generate
from sim.scenarios._common import STYLES, defaults_of, filler, scenario_rng

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "datasets" / "scenarios"
NAMES = ("coding-agent", "research-agent", "support-chat")

# One digest, used here and in a fresh interpreter: canonical JSON of the whole dataclass tree.
DIGEST_SRC = """
import dataclasses, hashlib, json
def digest(conv):
    blob = json.dumps(dataclasses.asdict(conv), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
"""
_ns: dict[str, Any] = {}
exec(DIGEST_SRC, _ns)  # noqa: S102 - our own constant source, shared with the subprocess
digest = _ns["digest"]


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    _load()


def results(conv: Conversation) -> list[int]:
    """Characters of every tool result."""
    return [len(p.text) for m in conv.messages if m.role == "tool" for p in m.parts]


def check_facts(conv: Conversation) -> None:
    index = conv.index()
    for f in conv.facts:
        src = conv.messages[index[f.source]]
        assert any(f.text in p.text for p in src.parts if p.kind in ("text", "tool_result")), (f, src.id)
        assert f.needed_at, f"fact {f.id} is never needed"
        for n in f.needed_at:
            assert index[n] > index[f.source], (f.id, n)
            assert conv.messages[index[n]].role in ("user", "tool"), (f.id, n)


# -- registry and spec files ------------------------------------------------------------------------
def test_all_scenarios_registered() -> None:
    assert set(NAMES) <= set(SCENARIOS.names())


@pytest.mark.parametrize("name", NAMES)
def test_spec_file_params_equal_generator_defaults(name: str) -> None:
    spec = tomllib.loads((SPECS / f"{name}.toml").read_text(encoding="utf-8"))
    assert spec["scenario"]["name"] == name
    assert spec["scenario"]["description"].strip()
    defaults = defaults_of(SCENARIOS.get(name))
    assert spec["params"] == defaults
    assert {k: type(v) for k, v in spec["params"].items()} == {k: type(v) for k, v in defaults.items()}


@pytest.mark.parametrize("name", NAMES)
def test_registry_defaults_text_matches_signature(name: str) -> None:
    text = SCENARIOS.entry(name).defaults
    parsed = dict(item.strip().split("=") for item in text.split(","))
    defaults = defaults_of(SCENARIOS.get(name))
    assert list(parsed) == list(defaults)
    assert {k: type(defaults[k])(v) for k, v in parsed.items()} == defaults


# -- validity -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_valid_for_seeds_0_to_19(name: str) -> None:
    for seed in range(20):
        conv = generate(name, seed)
        assert validate(conv) == [], (name, seed)
        check_facts(conv)
        assert conv.messages[0].role == "system"
        assert conv.messages[1].role == "user"
        last = conv.messages[-1]
        assert last.role == "assistant" and not last.calls and last.text


@pytest.mark.parametrize("name", NAMES)
def test_system_prompt_is_a_few_hundred_tokens(name: str) -> None:
    system = generate(name, 0).messages[0].text
    assert 800 <= len(system) <= 4000  # about 200 to 1,000 tokens


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_any_seed_gives_a_valid_script(name: str, seed: int) -> None:
    conv = generate(name, seed)
    assert validate(conv) == []
    index = conv.index()
    for f in conv.facts:
        assert all(index[n] > index[f.source] for n in f.needed_at)


# -- determinism ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_conversation(name: str) -> None:
    a, b = generate(name, 3), generate(name, 3)
    assert a == b
    assert digest(a) == digest(b)


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_bytes_in_another_process(name: str) -> None:
    """A fresh interpreter with a different string-hash salt builds the same conversations."""
    seeds = (0, 11)
    code = DIGEST_SRC + (
        f"from sim.scenarios import generate\nprint(' '.join(digest(generate({name!r}, s)) for s in {seeds!r}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "4242"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == [digest(generate(name, s)) for s in seeds]


@pytest.mark.parametrize("name", NAMES)
def test_different_seeds_differ(name: str) -> None:
    digests = {digest(generate(name, s)) for s in range(5)}
    assert len(digests) == 5


def test_same_seed_differs_between_scenarios() -> None:
    """Each scenario mixes its name into the seed, so their streams are not the same draws."""
    a = scenario_rng("coding-agent", 5).random()
    b = scenario_rng("research-agent", 5).random()
    assert a != b


# -- facts ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_every_fact_kind_present(name: str) -> None:
    for seed in range(10):
        kinds = {f.kind for f in generate(name, seed).facts}
        assert kinds == set(FACT_KINDS), (name, seed, kinds)


@pytest.mark.parametrize("name", NAMES)
def test_fact_ids_unique(name: str) -> None:
    conv = generate(name, 1)
    ids = [f.id for f in conv.facts]
    assert len(ids) == len(set(ids))


def test_early_constraints_needed_late_in_support_chat() -> None:
    conv = generate("support-chat", 0)
    index = conv.index()
    n = len(conv.messages)
    early = [f for f in conv.facts if f.kind == "constraint" and index[f.source] < 10]
    assert early
    assert all(max(index[x] for x in f.needed_at) > n * 0.8 for f in early)


def test_research_findings_needed_at_the_report() -> None:
    conv = generate("research-agent", 0)
    before_report = conv.messages[-2].id
    findings = [f for f in conv.facts if f.kind in ("recall", "artifact") and f.source.startswith("m")]
    cited = [f for f in findings if before_report in f.needed_at]
    assert len(cited) >= len(findings) * 0.5


# -- parameters -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("turns", [1, 2, 7, 30, 90])
def test_turns_is_the_number_of_assistant_messages_in_agent_scenarios(turns: int) -> None:
    for name in ("coding-agent", "research-agent"):
        conv = generate(name, 2, turns=turns)
        assert sum(m.role == "assistant" for m in conv.messages) == turns, name
        assert validate(conv) == []


@pytest.mark.parametrize("turns", [1, 2, 7, 30, 120])
def test_turns_is_the_number_of_user_messages_in_support_chat(turns: int) -> None:
    conv = generate("support-chat", 2, turns=turns)
    assert sum(m.role == "user" for m in conv.messages) == turns
    assert validate(conv) == []


@pytest.mark.parametrize("name", NAMES)
def test_more_turns_longer_conversation(name: str) -> None:
    short = generate(name, 0, turns=20)
    long = generate(name, 0, turns=200)
    assert len(long.messages) > 3 * len(short.messages)


def _coding(**params: Any) -> list[Conversation]:
    return [generate("coding-agent", s, **params) for s in range(4)]


def test_coding_compact_at() -> None:
    def compacts(c: Conversation) -> list[int]:
        return [i for i, m in enumerate(c.messages) if m.command == "compact"]

    for c in _coding(compact_at=-1):
        assert compacts(c) == []
    for c in _coding(compact_at=0.5):
        (i,) = compacts(c)
        (part,) = c.messages[i].parts
        assert part.kind == "command" and part.name == "compact" and part.text == ""
        before = sum(m.role == "assistant" for m in c.messages[:i])
        assert before == 30
    late = _coding(compact_at=0.9)
    assert all(sum(m.role == "assistant" for m in c.messages[: compacts(c)[0]]) == 54 for c in late)


def test_coding_thinking_prob() -> None:
    def thinking(c: Conversation) -> int:
        return sum(p.kind == "thinking" for m in c.messages for p in m.parts)

    assert all(thinking(c) == 0 for c in _coding(thinking_prob=0.0))
    assert sum(thinking(c) for c in _coding(thinking_prob=0.9)) > sum(thinking(c) for c in _coding())


def test_coding_parallel_prob() -> None:
    def batches(c: Conversation) -> int:
        return sum(len(m.calls) > 1 for m in c.messages)

    assert all(batches(c) == 0 for c in _coding(parallel_prob=0.0))
    many = _coding(parallel_prob=1.0)
    assert all(batches(c) >= 3 for c in many)
    for c in many:  # every call of a batch is answered by its own tool message, right after
        for i, m in enumerate(c.messages):
            if len(m.calls) > 1:
                answered = [p.call_id for t in c.messages[i + 1 : i + 1 + len(m.calls)] for p in t.results]
                assert answered == [p.call_id for p in m.calls]


def test_coding_reverts_point_at_earlier_changes() -> None:
    seen_revert = False
    for c in _coding(revert_prob=0.3):
        changes: dict[str, int] = {}
        for i, m in enumerate(c.messages):
            for p in m.parts:
                if p.kind == "change":
                    assert p.ref not in changes
                    changes[p.ref or ""] = i
                elif p.kind == "revert":
                    seen_revert = True
                    assert p.ref in changes and changes[p.ref] < i
                    assert p.ref in m.text  # the message says which change it reverts
    assert seen_revert
    for c in _coding(revert_prob=0.0):
        assert not any(p.kind == "revert" for m in c.messages for p in m.parts)


def test_coding_pending_messages_are_resolved_later() -> None:
    seen = 0
    for c in _coding(pending_prob=0.3):
        index = c.index()
        resolved = {r: i for i, m in enumerate(c.messages) for r in m.resolves}
        for i, m in enumerate(c.messages):
            if m.pending:
                seen += 1
                assert m.role == "assistant" and m.calls
                assert "approval requested" in c.messages[i + 1].text
                assert m.id in resolved and resolved[m.id] > i
                assert c.messages[resolved[m.id]].role == "user"
        assert all(index[r] < i for i, m in enumerate(c.messages) for r in m.resolves)
    assert seen > 0
    assert all(not m.pending for c in _coding(pending_prob=0.0) for m in c.messages)


def test_coding_huge_results() -> None:
    huge = max(max(results(c)) for c in _coding(huge_prob=0.5, huge_tokens=20000))
    small = max(max(results(c)) for c in _coding(huge_prob=0.0))
    assert huge > 20000 * 2.5  # characters: a 20,000-token result is far longer than 50,000 characters
    assert small < huge


def test_research_result_median_scales_pages() -> None:
    def median_fetch(c: Conversation) -> float:
        return statistics.median(len(p.text) for m in c.messages for p in m.results if p.name == "fetch_page")

    low = generate("research-agent", 0, result_tokens_median=500, huge_prob=0.0)
    high = generate("research-agent", 0, result_tokens_median=5000, huge_prob=0.0)
    assert median_fetch(high) > 5 * median_fetch(low)


def test_support_tool_prob() -> None:
    def tool_messages(c: Conversation) -> int:
        return sum(m.role == "tool" for m in c.messages)

    assert all(tool_messages(generate("support-chat", s, tool_prob=0.0)) == 0 for s in range(4))
    for s in range(4):
        assert tool_messages(generate("support-chat", s, tool_prob=0.8)) > 2.5 * max(
            tool_messages(generate("support-chat", s)), 1
        )


@pytest.mark.parametrize(
    "name,param,value",
    [
        ("coding-agent", "turns", 0),
        ("coding-agent", "turns", 2.5),
        ("coding-agent", "parallel_prob", 1.5),
        ("coding-agent", "huge_prob", -0.1),
        ("coding-agent", "huge_tokens", 10),
        ("coding-agent", "revert_prob", float("nan")),
        ("coding-agent", "compact_at", 1.2),
        ("coding-agent", "compact_at", -0.5),
        ("coding-agent", "pending_prob", "0.1"),
        ("coding-agent", "thinking_prob", True),
        ("research-agent", "turns", -3),
        ("research-agent", "result_tokens_median", 0),
        ("research-agent", "huge_prob", 2.0),
        ("research-agent", "huge_tokens", 0),
        ("support-chat", "turns", 0),
        ("support-chat", "tool_prob", -1.0),
    ],
)
def test_invalid_parameter_is_named(name: str, param: str, value: object) -> None:
    with pytest.raises(InvalidConfig, match=param) as exc:
        generate(name, 0, **{param: value})
    assert "allowed" in str(exc.value)


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameter_and_bad_seed_are_refused(name: str) -> None:
    with pytest.raises(InvalidConfig, match="turn"):
        generate(name, 0, turn=5)
    with pytest.raises(InvalidConfig, match="seed"):
        generate(name, -1)


def test_int_accepted_for_float_parameter() -> None:
    assert generate("coding-agent", 0, turns=6, compact_at=-1) == generate("coding-agent", 0, turns=6, compact_at=-1.0)


def test_cli_string_parameters_are_coerced() -> None:
    from sim.scenarios import scenario_conversation

    conv = scenario_conversation("coding-agent", 1, {"turns": "12", "compact_at": "-1"})
    assert sum(m.role == "assistant" for m in conv.messages) == 12
    assert conv == generate("coding-agent", 1, turns=12, compact_at=-1.0)


def test_overrides_change_the_conversation_id() -> None:
    assert generate("support-chat", 4).id == "support-chat-seed4"
    assert generate("support-chat", 4, turns=10).id != generate("support-chat", 4, turns=11).id


# -- sizes ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["coding-agent", "research-agent"])
def test_result_sizes_are_heavy_tailed(name: str) -> None:
    sizes = [n for s in range(4) for n in results(generate(name, s))]
    assert max(sizes) > 10 * statistics.median(sizes)


def test_coding_result_median_is_about_600_tokens() -> None:
    sizes = [
        n for c in _coding() for m in c.messages for p in m.results if p.name != "edit_file" for n in [len(p.text)]
    ]
    median_tokens = statistics.median(sizes) / 4
    assert 300 <= median_tokens <= 1200


def test_filler_token_counts_are_close_to_the_request() -> None:
    from sim.core.tokenizers import get_tokenizer

    try:
        tok = get_tokenizer("cl100k_base")
        tok.count("probe")
    except EncodingUnavailable as exc:
        pytest.skip(str(exc))
    rng = scenario_rng("filler-test", 0)
    for style in STYLES:
        n = tok.count(filler(rng, style, 3000))
        assert 0.8 * 3000 <= n <= 1.2 * 3000, (style, n)


def test_digest_covers_meta_and_facts() -> None:
    """The cross-process check would be weak if the digest ignored facts or parameters."""
    conv = generate("support-chat", 0, turns=5)
    plain = dataclasses.asdict(conv)
    assert plain["facts"] and plain["meta"]["params"]["turns"] == 5
    json.dumps(plain)  # plain JSON values only: nothing falls back to a repr
    assert digest(dataclasses.replace(conv, facts=conv.facts[:-1])) != digest(conv)
    assert digest(dataclasses.replace(conv, meta={})) != digest(conv)
