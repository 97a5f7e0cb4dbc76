"""OpenHands evaluation output (``output.jsonl``): the hand-written golden, usage by response id, bad lines.

There is no evaluation output in ``../shared/recorded``; ``tests/golden/formats/openhands_eval.jsonl`` was
written by us from ``EvalOutput`` and ``Metrics.get()`` in ``All-Hands-AI/OpenHands`` (see the importer's
docstring): a function-calling instance, an instance that never ran, and one in the older pairs form.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sim.core.conversation import validate
from sim.core.errors import FormatError
from sim.formats import SNIFFERS, _load, detect, read


def _lines(golden: Path) -> list[dict[str, Any]]:
    text = (golden / "openhands_eval.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _write(tmp_path: Path, docs: list[Any]) -> Path:
    path = tmp_path / "output.jsonl"
    path.write_text("".join((d if isinstance(d, str) else json.dumps(d)) + "\n" for d in docs), encoding="utf-8")
    return path


def test_each_instance_is_a_conversation_with_usage_by_response_id(golden: Path) -> None:
    result = read(golden / "openhands_eval.jsonl", "openhands-eval")
    assert [c.id for c in result.conversations] == ["acme__widget-7", "acme__widget-11"]
    (skip,) = result.skipped  # the instance that never ran: named by its line, with its error
    assert skip.line == 2 and "'acme__widget-9' has no history" in skip.reason and "sandbox" in skip.reason
    conv = result.conversations[0]
    assert validate(conv) == []
    replies = [m for m in conv.messages if m.role == "assistant"]
    assert [m.meta["response_id"] for m in replies] == ["resp-001", "resp-002", "resp-003"]
    u1, u2, u3 = (m.usage for m in replies)
    # metrics.token_usages wins over the response's own usage, which lacks the cache write (2100 = 10 + 2090)
    assert u1 is not None and (u1.input_tokens, u1.cache_write_tokens, u1.output_tokens) == (10, 2090, 64)
    assert u2 is not None and (u2.prompt_tokens, u2.cache_read_tokens, u2.cache_write_tokens) == (2380, 2090, 280)
    # no token_usages entry for resp-003: the model_response usage stays (OpenAI's cached_tokens read)
    assert u3 is not None and (u3.input_tokens, u3.cache_read_tokens) == (180, 2300)
    assert conv.meta["replies_with_token_usages"] == 2 and conv.meta["token_usages_without_reply"] == 1
    assert [len(m.calls) for m in replies] == [2, 1, 1]
    assert conv.meta["skipped_events"] == {"action:recall": 1, "observation:recall": 1}
    assert conv.meta["model_name"] == "anthropic/claude-sonnet-4-20250514"


def test_old_history_pairs_are_flattened(golden: Path) -> None:
    conv = read(golden / "openhands_eval.jsonl", "openhands-eval").conversations[1]
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    assert conv.messages[2].text == "1.4.2" and conv.meta["resolved"] is True


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda d: d["history"][4].pop("id"), "instance 'acme__widget-7' event [4]"),
        (lambda d: d["history"][6].update(source=7), "instance 'acme__widget-7' event 6"),
        (
            lambda d: d["metrics"]["token_usages"][1].update(prompt_tokens=-1),
            "metrics.token_usages[1]: 'prompt_tokens' is negative",
        ),
        (lambda d: d["metrics"]["token_usages"][0].update(cache_read_tokens=9999), "above prompt_tokens"),
    ],
    ids=["event-without-id", "bad-source", "negative-count", "reads-above-prompt"],
)
def test_a_bad_part_of_an_instance_names_file_line_and_record(
    golden: Path, tmp_path: Path, damage: Any, problem: str
) -> None:
    first, missing, pairs = _lines(golden)
    damage(first)
    path = _write(tmp_path, [pairs, first])  # the damaged instance on line 2
    with pytest.raises(FormatError) as info:
        read(path, "openhands-eval")
    assert info.value.path == str(path) and info.value.line == 2 and problem in info.value.problem
    result = read(path, "openhands-eval", lenient=True)
    assert [c.id for c in result.conversations] == ["acme__widget-11", "acme__widget-7"]  # the rest is kept
    assert problem in result.skipped[0].reason and all(s.line == 2 for s in result.skipped)
    assert all(s.reason.startswith("repaired") for s in result.skipped[1:])  # a call that lost its result


def test_lenient_skips_what_cannot_be_an_instance(golden: Path, tmp_path: Path) -> None:
    first, _, pairs = _lines(golden)
    path = _write(tmp_path, [first, '{"instance_id": "x", "history": [', [1, 2], {"history": []}, first, pairs])
    with pytest.raises(FormatError) as info:
        read(path, "openhands-eval")
    assert info.value.line == 2 and "invalid JSON" in info.value.problem
    result = read(path, "openhands-eval", lenient=True)
    assert [c.id for c in result.conversations] == ["acme__widget-7", "acme__widget-11"]
    reasons = {s.line: s.reason for s in result.skipped}
    assert sorted(reasons) == [2, 3, 4, 5]
    assert "should be an object" in reasons[3] and "'instance_id'" in reasons[4]
    assert "'acme__widget-7' appears again (first on line 1)" in reasons[5]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"instance_id":"a__b-1","test_result":{"git_patch":"diff', True),  # cut mid-line, as auto shows it
        (b'{"instance_id": "a__b-1", "instruction": "x", "history": [{"id": 0', True),
        (b'{"instance_id": "a__b-1", "model_patch": "diff", "model_name_or_path": "m"}\n', False),  # predictions
        (b'{"a__b-1": {"instance_id": "a__b-1", "model_patch": ""}}', False),  # mini-swe-agent preds.json
        (b'{"info": {}, "messages": [], "instance_id": "a", "trajectory_format": "mini-swe-agent-1.1"}', False),
        (b'[{"instance_id": "a", "test_result": {}}]', False),
    ],
)
def test_sniffer_on_heads(head: bytes, expected: bool, tmp_path: Path) -> None:
    path = tmp_path / "output.jsonl"
    path.write_bytes(head)
    _load()
    assert SNIFFERS["openhands-eval"](path, head) is expected
    if expected:  # and no other format claims it
        assert detect(path) == "openhands-eval"


def test_scored_copy_without_history_is_recognised_and_gives_no_conversation(tmp_path: Path) -> None:
    """``output.swebench_eval.jsonl``: the same lines with a report and no history; each instance is listed."""
    scored = [
        {"instance_id": f"acme__widget-{k}", "test_result": {"report": {"resolved": k == 1}}, "metadata": None}
        for k in (1, 2)
    ]
    path = _write(tmp_path, scored)
    assert detect(path) == "openhands-eval"
    result = read(path, "openhands-eval")  # strict: not an error, nothing to replay
    assert result.conversations == []
    assert [(s.line, "has no history" in s.reason) for s in result.skipped] == [(1, True), (2, True)]
