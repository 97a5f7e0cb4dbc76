"""Prompt caching in runs (sim.replay.caching): blocks kept between requests equal blocks built afresh, every
request's cache bill sums to its prompt, the switch, the placements, and what a moving clearing bound costs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies import make_policy
from policies.baselines import NoCompaction
from sim.core.cache import CachePlacement
from sim.core.clock import message_times
from sim.core.conversation import Conversation, Message, Part
from sim.core.cost import Pricer
from sim.core.counting import Coefficients
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.core.view import Messages, Rule, edit_parts, layout
from sim.replay.caching import RequestCache
from sim.replay.engine import Engine, RunConfig, run
from sim.replay.strategies import conversations, small_model, views
from tests.test_engine import agent_loop

_RULES = (
    Rule(kinds=frozenset({"thinking"}), action="drop"),
    Rule(kinds=frozenset({"tool_result"}), text="[cleared]"),
    Rule(kinds=frozenset({"tool_result"}), action="truncate", max_tokens=5),
    Rule(kinds=frozenset({"tool_call", "tool_result"}), tools=frozenset({"read"}), action="drop"),
)


def _fresh(engine: Engine, calibration: Coefficients | None = None) -> RequestCache:
    return RequestCache(
        engine.cache._new_model,
        engine.cache.placement,
        engine.ledger,
        engine.has_system,
        engine.measure.message_blocks,
        engine.tok.count,
        calibration,
    )


#: Framing by call ids only, so the provider's count of a prefix is the engine's plus 25 a token of the ids it sends.
_PER_ID = Coefficients(0.0, 0.0, 1.0, 0.0, per_call_id_token=25.0)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_blocks_kept_between_requests_equal_blocks_built_afresh(data: st.DataObject) -> None:
    """However views change between requests (spans, summaries, edits moving), the kept blocks are the
    blocks a new cache builds for the same view, and they sum to the view's tokens; with a calibration framing
    by call ids, to those plus the ids of the tool calls and results the view sends (dropped ones not)."""
    c = data.draw(conversations(max_turns=10))
    eng = Engine(NoCompaction(), c, RunConfig(model=small_model(), tokenizer="chars4"))
    kept, kept_framed = _fresh(eng), _fresh(eng, _PER_ID)
    for step in range(data.draw(st.integers(1, 6))):
        for m in c.messages[len(eng.ledger.messages) : len(eng.ledger.messages) + data.draw(st.integers(1, 8))]:
            eng.append(m)
        view = data.draw(views(len(eng.ledger.messages), _RULES, summaries=3), label=f"view {step}")
        for cache, cal in ((kept, None), (kept_framed, _PER_ID)):
            cache.usage(view, 7, False, None, 0, 0.0, "claude-sonnet-4-5")
            new = _fresh(eng, cal)
            new.usage(view, 7, False, None, 0, 0.0, "claude-sonnet-4-5")
            assert (cache._keys, cache._cum, cache._eligible) == (new._keys, new._cum, new._eligible)
        assert kept._cum[-1] == 7 + eng.view_tokens(view)
        ids = sum(  # the ids of the tool calls and results the view's edited messages hold
            eng.tok.count(p.call_id or "")
            for item in layout(view, len(eng.ledger.messages), eng.has_system)
            if isinstance(item, Messages)
            for m in eng.ledger.messages[item.a : item.b]
            for p in edit_parts(m, item.rules)
            if p is not None and p.kind in ("tool_call", "tool_result")
        )
        assert kept_framed._cum[-1] == 7 + eng.view_tokens(view) + 25 * ids


@pytest.mark.parametrize(
    "name", ["none", "claude-code", "anthropic-clear-tool-uses", "inspect-edit", "codex", "codex-remote"]
)
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_every_request_is_billed_in_parts_that_sum_to_its_prompt(
    name: str, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each agent request's cache blocks, and each forked summariser request's (``summary_call`` ``fork``:
    claude-code, codex-remote), sum to its prompt tokens exactly (the engine would otherwise bill the difference as
    uncached), reads and writes are parts of it, and a long tool loop reads most of it."""
    totals: list[int] = []
    usage = RequestCache.usage

    def recording(self: RequestCache, *args: object, **kwargs: object) -> object:
        out = usage(self, *args, **kwargs)  # type: ignore[arg-type]
        totals.append(out.total)
        return out

    monkeypatch.setattr(RequestCache, "usage", recording)
    model = ModelConfig(provider=provider, context_window=60_000)  # type: ignore[arg-type]
    params = {"trigger_tokens": "20000"} if name == "anthropic-clear-tool-uses" else {}
    r = run(make_policy(name, params), agent_loop(120, result_chars=2_000), RunConfig(model=model, tokenizer="chars4"))
    assert name == "none" or r.summary["compaction_count"] > 0
    fork = make_policy(name, params).summary_call == "fork"
    cached = [row for row in r.rows if row["billed"] and (row["request_kind"] != "summariser" or fork)]
    assert cached and totals == [row["context_tokens"] for row in cached]
    assert any(row["request_kind"] == "summariser" for row in cached) == fork
    for row in r.rows:
        parts = row["cache_read_tokens"] + row["cache_write_5m_tokens"] + row["cache_write_1h_tokens"]
        assert 0 <= parts <= row["context_tokens"]
    assert r.summary["cache_hit_share"] > 0.5


def test_cache_off_prices_every_prompt_token_as_input() -> None:
    conv = agent_loop(40)
    cached = run(NoCompaction(), conv, RunConfig())
    off = run(NoCompaction(), conv, RunConfig(cache="off"))
    assert off.summary["cache_read_tokens"] == off.summary["cache_write_tokens"] == 0
    assert off.summary["cumulative_input_tokens"] == cached.summary["cumulative_input_tokens"]
    # Sonnet: input 3, output 15 $/MTok; uncached, the bill is exactly that.
    expected = (off.summary["cumulative_input_tokens"] * 3 + off.summary["cumulative_output_tokens"] * 15) / 1e6
    assert off.summary["total_cost_usd"] == pytest.approx(expected)
    assert cached.summary["total_cost_usd"] < off.summary["total_cost_usd"] / 3
    with pytest.raises(InvalidConfig, match="cache"):
        RunConfig(cache="on")  # type: ignore[arg-type]


def test_claude_code_writes_with_the_one_hour_ttl_and_the_default_placement_with_five_minutes() -> None:
    conv = agent_loop(30)
    cc = run(make_policy("claude-code", {}), conv, RunConfig())
    default = run(NoCompaction(), conv, RunConfig())
    assert sum(r["cache_write_1h_tokens"] for r in cc.rows) > 0
    assert sum(r["cache_write_5m_tokens"] for r in cc.rows) == 0
    assert sum(r["cache_write_1h_tokens"] for r in default.rows) == 0
    assert sum(r["cache_write_5m_tokens"] for r in default.rows) > 0
    with pytest.raises(InvalidConfig, match="1h breakpoint cannot follow"):
        CachePlacement(system="5m", last="1h")


def test_a_clearing_bound_that_moves_every_request_pays_more_in_writes_than_clear_at_least() -> None:
    """Anthropic's context-editing docs: clearing invalidates the cached prefix from the clear point, and
    ``clear_at_least`` is there so a clearing is worth the rewrite. Recomputed from the raw history each
    request (catalogue §B2a, §B7b), the bound of the default moves with every new tool result, so every
    request rewrites from the newly cleared result on. Under the stop-after reading the bound stays once
    enough is cleared. Under the gate reading the gate, measured on the raw prompt, stays open once it has
    opened: it batches nothing, and pays what the default pays."""
    conv = agent_loop(120, result_chars=2_000)
    config = RunConfig(tokenizer="chars4")
    base = {"trigger_tokens": "20000"}
    every = run(make_policy("anthropic-clear-tool-uses", base), conv, config)
    stop = {**base, "clear_at_least": "10000", "clear_at_least_mode": "stop-after"}
    batched = run(make_policy("anthropic-clear-tool-uses", stop), conv, config)
    gate = run(make_policy("anthropic-clear-tool-uses", {**base, "clear_at_least": "10000"}), conv, config)
    assert every.summary["finish_reason"] == batched.summary["finish_reason"] == "completed"
    assert len(every.compactions) > 10 * len(batched.compactions) > 0
    assert every.summary["cache_write_tokens"] > 1.5 * batched.summary["cache_write_tokens"]
    assert gate.summary["cache_write_tokens"] == every.summary["cache_write_tokens"]


def test_requests_start_at_simulated_times_that_never_run_backwards() -> None:
    r = run(NoCompaction(), agent_loop(30), RunConfig(seed=3))
    times = [row["time_seconds"] for row in r.rows]
    assert times == sorted(times) and times[-1] > 0
    again = run(NoCompaction(), agent_loop(30), RunConfig(seed=4))
    assert [row["time_seconds"] for row in again.rows] != times  # time comes from the seed


def test_recorded_timestamps_set_the_clock() -> None:
    def msg(i: int, role: str, stamp: str | None) -> Message:
        return Message(f"m{i}", role, (Part("text", "x"),), meta={"timestamp": stamp} if stamp else {})  # type: ignore[arg-type]

    msgs = [msg(0, "user", "2026-01-01T00:00:00Z"), msg(1, "assistant", "2026-01-01T00:00:30Z")]
    msgs += [msg(2, "user", None), msg(3, "assistant", "2026-01-01T01:00:00Z")]
    assert message_times(msgs, 0, lambda m: 1) == (0.0, 30.0, 30.0, 3600.0)


def test_an_hour_away_past_the_ttl_rewrites_the_prefix() -> None:
    """A user away longer than the TTL comes back to a cold cache: that request reads nothing. The first request
    reads only the system prompt, warm from the agent's other sessions; the others read what the one before
    wrote."""

    def msg(i: int, role: str, minute: float) -> Message:
        stamp = f"2026-01-01T{int(minute // 60):02d}:{int(minute % 60):02d}:00Z"
        text = f"turn {i}: " + "lorem ipsum dolor " * 600
        return Message(f"m{i}", role, (Part("text", text),), meta={"timestamp": stamp})  # type: ignore[arg-type]

    system = Message("s", "system", (Part("text", "You are terse. " * 400),))
    minutes = [0, 1, 2, 3, 4, 5, 70, 71]  # the user comes back after 65 minutes
    msgs = [system, *(msg(k, "user" if k % 2 == 0 else "assistant", m) for k, m in enumerate(minutes))]
    r = run(NoCompaction(), Conversation("away", tuple(msgs)), RunConfig())
    rows = [row for row in r.rows if row["request_kind"] == "agent"]
    assert [row["cache_read_tokens"] > 0 for row in rows] == [True, True, True, False]
    assert rows[0]["cache_read_tokens"] < rows[1]["cache_read_tokens"] < rows[2]["cache_read_tokens"]
    assert rows[-1]["cache_write_5m_tokens"] == rows[-1]["context_tokens"] - rows[-1]["cache_read_tokens"]


@pytest.mark.parametrize("cache", ["provider", "off"])
def test_cost_components_add_up_to_the_total(cache: str) -> None:
    conv = agent_loop(60, result_chars=2_000)
    r = run(make_policy("claude-code", {}), conv, RunConfig(model=ModelConfig(context_window=40_000), cache=cache))  # type: ignore[arg-type]
    s = r.summary
    parts = s["cost_input_usd"] + s["cost_cache_read_usd"] + s["cost_cache_write_usd"] + s["cost_output_usd"]
    assert parts == pytest.approx(s["total_cost_usd"], rel=1e-9)
    assert 0 < s["summariser_cost_usd"] < s["total_cost_usd"]
    if cache == "off":
        assert s["cost_cache_read_usd"] == s["cost_cache_write_usd"] == 0


def test_a_compaction_costs_its_summary_and_the_rewrite_and_pays_back_in_requests() -> None:
    """claude-code on a long loop: each compaction's cost is its summariser call plus (write - read) rate on the
    writes of the first request after it; its payback is the first k with k x (tokens removed x read rate) >= cost."""
    conv = agent_loop(240, result_chars=2_000)
    r = run(make_policy("claude-code", {}), conv, RunConfig(model=ModelConfig(context_window=60_000)))
    _, _, r_cr, _, r_cw1h = Pricer("claude-sonnet-4-5", "anthropic").rates()
    summaries = {row["compaction_id"]: row["cost_usd"] for row in r.rows if row["request_kind"] == "summariser"}
    agents = [row for row in r.rows if row["request_kind"] == "agent" and row["billed"]]
    assert len(r.compactions) >= 2 and any(c["payback_requests"] for c in r.compactions)
    for c in r.compactions:
        first = next(row for row in agents if row["turn"] >= c["turn"])
        rewrite = first["cache_write_1h_tokens"] * (r_cw1h - r_cr) / 1e6  # claude-code writes with the 1h TTL
        assert c["cost_usd"] == pytest.approx(summaries[c["compaction_id"]] + rewrite, rel=1e-9)
        saved = (c["tokens_before"] - c["tokens_after"]) * r_cr / 1e6
        later = sum(1 for row in agents if row["turn"] >= c["turn"])
        k = -(-c["cost_usd"] // saved)
        assert c["payback_requests"] == (int(k) if k <= later else None)
    assert r.summary["compaction_cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in r.compactions))


def test_openai_prefix_caching_reads_what_the_recorded_gpt_4o_request_read() -> None:
    """The one shared recording with OpenAI ``cached_tokens`` (an OpenHands trajectory on gpt-4o-2024-08-06, 35 s
    after the request before it): its recorded 2,304 cached tokens are the 1,024-minimum, 128-step prefix the
    simulated cache reads. The earlier replies name no model: they are the recording's model."""
    from sim.formats import read
    from tests.test_fidelity import RECORDED

    path = RECORDED / "openhands" / "runtime_trajs" / "basic_interactions.json"
    if not path.is_file():
        pytest.skip(f"recorded OpenHands trajectory not found at {path} (set CSIM_RECORDED to its folder)")
    conv = read(path, "openhands-events").conversations[0]
    [recorded] = [m.usage for m in conv.messages if m.usage is not None]
    r = run(NoCompaction(), conv, RunConfig())
    rows = [row for row in r.rows if row["request_kind"] == "agent"]
    assert {row["model"] for row in rows} == {"gpt-4o-2024-08-06"}
    assert rows[-1]["context_tokens"] == recorded.prompt_tokens  # anchored on the recorded usage
    assert rows[-1]["cache_read_tokens"] == recorded.cache_read_tokens == 2_304


def test_a_task_notification_rewrites_everything_after_the_system_prompt_once() -> None:
    """Claude Code re-sends its conversation unmatched when a background task's notification arrives
    (anthropics/claude-code#64901): that request reads only the system prompt and writes the rest, and the
    requests after it read what it wrote. The same conversation without the mark reads on as before."""

    def conversation(marked: bool) -> Conversation:
        system = Message("s", "system", (Part("text", "You are terse. " * 400),))
        msgs = [system]
        for k in range(6):
            meta = {"task_notification": True} if marked and k == 3 else {}
            text = ("<task-notification>done</task-notification> " if k == 3 else "") + "lorem ipsum " * 300
            msgs.append(Message(f"u{k}", "user", (Part("text", f"{k}: {text}"),), meta=meta))  # type: ignore[arg-type]
            msgs.append(Message(f"a{k}", "assistant", (Part("text", f"reply {k} " + "dolor " * 200),)))
        return Conversation("notify", tuple(msgs))

    def reads(marked: bool) -> list[tuple[int, int, int]]:
        r = run(NoCompaction(), conversation(marked), RunConfig())
        rows = [row for row in r.rows if row["request_kind"] == "agent"]
        return [(row["cache_read_tokens"], row["cache_write_5m_tokens"], row["context_tokens"]) for row in rows]

    plain, marked = reads(False), reads(True)
    assert plain[:3] == marked[:3]  # before the notification nothing differs
    system_only = marked[0][0]  # the first request reads the system prompt, warm from other sessions
    read, written, prompt = marked[3]
    assert read == system_only and written == prompt - read  # the notification request: the system prompt only
    assert plain[3][0] > 2 * system_only  # unmarked, it reads the conversation the request before wrote
    for (r, _, _), (_, _, before) in zip(marked[4:], marked[3:-1], strict=True):
        assert r >= before - 1  # the requests after it read what the one before them wrote
    assert sum(w for _, w, _ in marked) > sum(w for _, w, _ in plain)
