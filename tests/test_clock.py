"""The simulated clock: recorded timestamps to seconds, and seeded synthetic durations."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.core.cache import Block, cache_model, chain
from sim.core.clock import (
    DEFAULT_TOOL_LATENCY,
    TOOL_KINDS,
    ClockParams,
    Step,
    classify_tool,
    recorded_times,
    synthetic_times,
)
from sim.core.errors import FormatError, InvalidConfig

RECORDED = Path(__file__).resolve().parents[2] / "shared" / "recorded" / "claude-code"
STILL = ClockParams(
    model_sigma=0,
    think_sigma=0,
    away_probability=0,
    tool_latency={k: (m, 0.0) for k, (m, _) in DEFAULT_TOOL_LATENCY.items()},
)


# -- recorded ----------------------------------------------------------------------------------------------------
def test_iso_timestamps_become_seconds_since_the_first() -> None:
    tl = recorded_times(["2026-02-11T20:36:45.618Z", "2026-02-11T20:36:47.925Z", "2026-02-11T21:36:45.618+01:00"])
    assert tl.seconds == (0.0, 2.307, 2.307)  # the third is the first instant again: held, not negative
    assert (tl.missing, tl.backwards) == (0, 1)


def test_missing_timestamps_carry_forward_and_are_counted() -> None:
    tl = recorded_times([None, "", "2026-02-11T20:00:00Z", None, "2026-02-11T20:05:00Z", "  "])
    assert tl.seconds == (0.0, 0.0, 0.0, 0.0, 300.0, 300.0)
    assert tl.missing == 4
    assert recorded_times([None, None]).seconds == (0.0, 0.0)
    assert recorded_times([]).seconds == ()


def test_naive_timestamps_and_datetimes_are_utc() -> None:
    tl = recorded_times(["2026-02-11T20:00:00", datetime(2026, 2, 11, 20, 1, tzinfo=UTC), "2026-02-11T20:02:00Z"])
    assert tl.seconds == (0.0, 60.0, 120.0)


def test_a_malformed_timestamp_names_the_file_and_record() -> None:
    with pytest.raises(FormatError, match=r"session\.jsonl: record 1: timestamp 'yesterday'"):
        recorded_times(["2026-02-11T20:00:00Z", "yesterday"], source="session.jsonl")


def test_recorded_claude_code_session() -> None:
    path = RECORDED / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    if not path.exists():
        pytest.skip(f"recorded sessions not present at {RECORDED}")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    tl = recorded_times([r.get("timestamp") for r in records], source=path.name)
    assert tl.missing == sum(1 for r in records if "timestamp" not in r) > 0
    assert list(tl.seconds) == sorted(tl.seconds)
    assert 3600 < tl.seconds[-1] < 24 * 3600  # a session of some hours


# -- synthetic -----------------------------------------------------------------------------------------------------
def _steps() -> list[Step]:
    return [
        Step("system"),
        Step("user"),
        Step("assistant", 400),
        Step("tool", tools=("read", "search")),
        Step("assistant", 120),
        Step("tool", tools=("build",)),
        Step("assistant", 900),
        Step("user"),
        Step("assistant", 50),
    ]


def test_same_seed_same_times_other_seed_other_times() -> None:
    assert synthetic_times(_steps(), 7) == synthetic_times(_steps(), 7)
    assert synthetic_times(_steps(), 7) != synthetic_times(_steps(), 8)


def test_no_global_random_state_is_read_or_consumed() -> None:
    np.random.seed(1)
    random.seed(1)
    before = (np.random.get_state()[1].copy(), random.getstate())  # type: ignore[index]
    a = synthetic_times(_steps(), 3)
    np.random.seed(2)
    random.seed(2)
    assert synthetic_times(_steps(), 3) == a
    np.random.seed(1)
    random.seed(1)
    synthetic_times(_steps(), 3)
    assert (np.random.get_state()[1] == before[0]).all() and random.getstate() == before[1]  # type: ignore[index]


def test_durations_without_spread_are_the_medians() -> None:
    t = synthetic_times(_steps(), 0, STILL)
    gaps = [b - a for a, b in zip(t, t[1:], strict=False)]
    assert t[0] == t[1] == 0.0  # the system prompt and the opening user message: the conversation starts
    assert gaps[1] == pytest.approx(STILL.model_seconds(400)) == pytest.approx(2.0 + 400 * 0.02)
    assert gaps[2] == pytest.approx(0.01 + 0.3)  # read then search, one after the other
    assert gaps[4] == pytest.approx(45.0)  # a build
    assert gaps[6] == pytest.approx(150.0)  # the user thinks


def test_an_absent_user_adds_an_hour() -> None:
    away = ClockParams(model_sigma=0, think_sigma=0, away_probability=1, away_sigma=0)
    t = synthetic_times([Step("user"), Step("assistant", 0), Step("user")], 5, away)
    assert t[2] - t[1] == pytest.approx(150.0 + 3600.0)
    assert synthetic_times([Step("user")], 5, away) == (0.0,)  # the opening message waits for nobody


def test_absences_are_rare_and_think_times_spread() -> None:
    steps = [s for _ in range(2000) for s in (Step("user"), Step("assistant", 100))]
    t = synthetic_times(steps, 11)
    user_gaps = [t[i] - t[i - 1] for i in range(2, len(t), 2)]
    long = sum(1 for g in user_gaps if g > 1200)  # absences (5%) and think times past 20 min (~2%)
    assert 0.03 < long / len(user_gaps) < 0.09
    past_5m = sum(1 for g in user_gaps if g > 300) / len(user_gaps)
    assert 0.2 < past_5m < 0.35


@given(
    roles=st.lists(st.sampled_from(["system", "user", "assistant", "tool"]), max_size=40),
    seed=st.integers(0, 2**32),
    extra=st.integers(0, 10),
)
def test_times_never_decrease_and_a_prefix_keeps_its_times(roles: list[str], seed: int, extra: int) -> None:
    steps = [Step(r, 100 if r == "assistant" else 0, ("shell",) if r == "tool" else ()) for r in roles]  # type: ignore[arg-type]
    t = synthetic_times(steps, seed)
    assert len(t) == len(steps)
    assert all(b >= a for a, b in zip(t, t[1:], strict=False))
    more = steps + [Step("user"), Step("assistant", 10), Step("tool", tools=("read", "edit"))] * extra
    assert synthetic_times(more, seed)[: len(steps)] == t


def test_bad_inputs_are_clear_errors() -> None:
    with pytest.raises(InvalidConfig, match="seed"):
        synthetic_times([Step("user")], -1)
    with pytest.raises(InvalidConfig, match="role"):
        Step("robot")  # type: ignore[arg-type]
    with pytest.raises(InvalidConfig, match="tool kind"):
        Step("tool", tools=("teleport",))  # type: ignore[arg-type]
    with pytest.raises(InvalidConfig, match="away_probability"):
        ClockParams(away_probability=1.5)
    with pytest.raises(InvalidConfig, match="missing"):
        ClockParams(tool_latency={"read": (1.0, 0.5)})
    with pytest.raises(InvalidConfig, match="think_median_seconds"):
        ClockParams(think_median_seconds=0)


@pytest.mark.parametrize(
    ("name", "args", "kind"),
    [
        ("Read", "", "read"),
        ("Grep", "", "search"),
        ("Glob", "", "search"),
        ("Edit", "", "edit"),
        ("Write", "", "edit"),
        ("Bash", '{"command": "git status"}', "shell"),
        ("Bash", '{"command": "uv run pytest -x"}', "build"),
        ("Bash", '{"command": "mix compile --force"}', "build"),
        ("WebSearch", "", "web"),
        ("WebFetch", "", "web"),
        ("Task", "", "agent"),
        ("str_replace_editor", '{"command": "view", "path": "a.py"}', "read"),
        ("str_replace_editor", '{"command": "str_replace"}', "edit"),
        ("execute_bash", '{"command": "npm test"}', "build"),
        ("get_reservation_details", "", "other"),
        ("list_tools", "", "search"),
    ],
)
def test_tool_kinds(name: str, args: str, kind: str) -> None:
    assert classify_tool(name, args) == kind
    assert kind in TOOL_KINDS


# -- clock and cache together ------------------------------------------------------------------------------------
def test_an_absence_past_the_ttl_costs_a_rewrite_that_the_one_hour_ttl_avoids() -> None:
    """Requests start when the message before them is complete; the gap is what the TTL is measured against."""
    steps = [Step("user"), Step("assistant", 200), Step("user"), Step("assistant", 200)]
    params = ClockParams(model_sigma=0, think_sigma=0, think_median_seconds=600)  # ten minutes to answer
    t = synthetic_times(steps, 1, params)
    usages = {}
    for ttl in ("5m", "1h"):
        m = cache_model("anthropic", "claude-sonnet-4-5")
        first = [Block(chain(0, "system"), 5000, True, ttl)]  # type: ignore[arg-type]
        m.request(first, t[0])
        usages[ttl] = m.request(first, t[2])
    assert usages["5m"].read == 0 and usages["5m"].write_5m == 5000
    assert usages["1h"].read == 5000
