"""tau-bench importer: stable ids and task meta on top of the OpenAI-chat reading it reuses."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from sim.core.conversation import validate
from sim.core.errors import FormatError
from sim.formats import read
from tests.formats.test_formats_recorded import _round_trip, need


def test_recorded_airline_results(recorded: Path, tmp_path: Path) -> None:
    path = need(recorded / "tau-bench" / "gpt-4o-airline.json")
    result = read(path, "tau-bench")
    assert result.skipped == []
    convs = result.conversations
    tasks = json.loads(path.read_text(encoding="utf-8"))
    assert [c.id for c in convs] == [f"tau-{t['task_id']}-{t['trial']}" for t in tasks]
    assert len(set(c.id for c in convs)) == 200
    assert [c.meta["reward"] for c in convs] == [t["reward"] for t in tasks]
    assert sum(len(m.calls) for c in convs for m in c.messages) == 1164
    roles = collections.Counter(m.role for c in convs for m in c.messages)
    assert roles == {"assistant": 2454, "user": 1490, "tool": 1164, "system": 200}
    assert all(m.usage is None for c in convs for m in c.messages), "tau-bench records no usage"
    # the same messages as the generic OpenAI-chat reading, only the identity differs
    generic = read(path, "openai-chat").conversations
    assert [c.messages for c in convs] == [g.messages for g in generic]
    _round_trip(tmp_path, convs)


def test_golden_ids_and_meta(golden: Path) -> None:
    convs = read(golden / "tau_bench.json", "tau-bench").conversations
    assert [c.id for c in convs] == ["tau-7-0", "tau-7-1", "tau-8-0"]
    assert [c.meta["reward"] for c in convs] == [1.0, 0.0, 1.0]
    assert all(c.meta["source"] == "tau-bench" and validate(c) == [] for c in convs)


def _task(task_id: object = 1, trial: object = 0, **extra: object) -> dict[str, object]:
    task: dict[str, object] = {
        "task_id": task_id,
        "trial": trial,
        "reward": 1.0,
        "traj": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
    }
    task.update(extra)
    return task


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (_task(task_id=None), "task_id"),
        (_task(trial="first"), "trial"),
        ({"task_id": 5, "trial": 0, "reward": 1.0}, "traj"),
        (_task(2, reward="high"), "reward"),
        (_task(3, traj=[{"role": "tool", "tool_call_id": "x", "content": "orphan"}]), "answers no call"),
        (_task(0, 0), "appears twice"),
        ("not a task", "should be an object"),
    ],
)
def test_bad_task_is_an_error_or_a_skip(tmp_path: Path, bad: object, problem: str) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps([_task(0, 0), bad, _task(9, 0)]), encoding="utf-8")
    with pytest.raises(FormatError) as info:
        read(path, "tau-bench")
    assert problem in str(info.value)
    result = read(path, "tau-bench", lenient=True)
    ids = [c.id for c in result.conversations]
    assert ids[0] == "tau-0-0" and ids[-1] == "tau-9-0" and len(result.skipped) >= 1


@pytest.mark.parametrize(
    "data",
    [b"", b"[]", b'[{"task_id": 0, "traj": [', b'{"messages": []}', b'[{"role": "user", "content": "x"}]'],
    ids=["empty", "empty-list", "truncated", "one-conversation", "message-list"],
)
def test_not_tau_bench_results_stop(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(data)
    for lenient in (False, True):
        with pytest.raises(FormatError):
            read(path, "tau-bench", lenient=lenient)
