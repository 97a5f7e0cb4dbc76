"""Requests are priced at their own time (issue 33, item 6): a recorded request at its timestamp, as the provider
billed it on the day; a request without a date (synthetic, scripted, a trace on a clock from the Unix epoch) at the
fixed, stated ``PRICE_DATE``. Checked against ``genai_prices.calc_price`` with ``genai_request_timestamp``."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from genai_prices import Usage, calc_price, data_snapshot

from sim.core import cost
from sim.core.conversation import Conversation, Message, Part
from sim.core.cost import PRICE_DATE, Pricer
from sim.replay.billing import price_epoch, price_time
from tests.test_fidelity import _held_out_replay

OPUS = "claude-opus-4-6"  # lost its long-context tier on 2026-03-13: a prompt over 200K cost more before


def _calc(model: str, at: datetime, i: int, o: int, cr: int = 0, cw: int = 0, cw1h: int = 0) -> float:
    usage = Usage(input_tokens=i, output_tokens=o, cache_read_tokens=cr, cache_write_tokens=cw + cw1h)
    if cw1h:
        usage = Usage(
            input_tokens=i,
            output_tokens=o,
            cache_read_tokens=cr,
            cache_write_tokens=cw + cw1h,
            cache_write_1h_tokens=cw1h,
        )
    return float(calc_price(usage, model_ref=model, provider_id="anthropic", genai_request_timestamp=at).total_price)


@pytest.mark.parametrize("model", [OPUS, "claude-sonnet-4-5", "claude-haiku-4-5"])
@pytest.mark.parametrize("day", ["2026-02-11", "2026-03-12", "2026-03-13", "2026-06-01"])
def test_pricer_at_a_date_is_calc_price_at_that_date(model: str, day: str) -> None:
    at = datetime.fromisoformat(day).replace(hour=23, minute=59, tzinfo=UTC)
    rng = random.Random(f"{model}{day}")
    pricer = Pricer(model, "anthropic")
    for _ in range(40):
        i = rng.choice([rng.randint(1, 199_999), rng.randint(200_001, 900_000)])
        cr, cw, cw1h = (rng.randint(0, i // 3) for _ in range(3))
        o = rng.randint(0, 30_000)
        want = _calc(model, at, i, o, cr, cw, cw1h)
        assert pricer.cost(i, o, cr, cw, cw1h, at) == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert sum(pricer.split(i, o, cr, cw, cw1h, at)) == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_the_date_changes_the_price_where_the_table_does() -> None:
    pricer = Pricer(OPUS, "anthropic")
    before, after = datetime(2026, 2, 11, tzinfo=UTC), datetime(2026, 3, 13, tzinfo=UTC)
    long = (300_000, 2_000)
    assert pricer.cost(*long, at=before) > pricer.cost(*long, at=after)  # the long-context tier, until 2026-03-13
    assert pricer.cost(*long) == pricer.cost(*long, at=PRICE_DATE)  # no date: the fixed one


def test_the_active_price_is_the_one_genai_prices_chooses() -> None:
    """For every dated model of the table, at times across three years and both sides of midnight UTC: the price
    :mod:`sim.core.cost` chooses is the one ``ModelInfo.get_prices`` does, as read from the library and as kept
    between processes (written to JSON and read back), with the same rates."""
    snap = data_snapshot.get_snapshot()
    days = [datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=d, hours=h) for d in range(0, 1200, 37) for h in (3, 15)]
    checked = kinds = 0
    for provider in snap.providers:
        for model in provider.models:
            if not isinstance(model.prices, list):
                continue
            read = cost._read(model)
            kept = cost._decode(json.loads(json.dumps(cost._encode(read))))
            assert read.keep, (provider.id, model.id)  # every constraint is a kind the kept file can hold
            kinds += any(p.when and p.when[0] == "time" for p in read.periods)
            for at in days:
                for entry in (read, kept):
                    index = cost._choose(entry, at)
                    assert model.prices[index].prices is model.get_prices(at), (provider.id, model.id, at)
                    assert entry.periods[index].rates == cost._base_rates(model.get_prices(at))
                checked += 1
            if _findable(model.id, provider.id):
                assert cost._active(model.id, provider.id, days[-1]) == cost._choose(read, days[-1])
    assert checked > 100 and kinds > 0  # time-of-day prices (off-peak) are among them


def _findable(model: str, provider: str) -> bool:
    try:
        return cost._model_info(model, provider).id == model
    except Exception:  # noqa: BLE001 - a model the table finds under another id
        return False


def _message(i: int, role: str, stamp: str | None) -> Message:
    meta = {"timestamp": stamp} if stamp else {}
    return Message(f"m{i}", role, (Part("text", text=f"message {i}"),), meta=meta)  # type: ignore[arg-type]


def test_a_recording_is_dated_from_its_first_timestamp_and_a_trace_from_the_epoch_is_not() -> None:
    dated = Conversation("c", (_message(0, "user", None), _message(1, "user", "2026-02-11T20:36:45.618Z")))
    epoch = price_epoch(dated)
    assert epoch == datetime(2026, 2, 11, 20, 36, 45, 618000, tzinfo=UTC)
    assert price_time(epoch, 3600) == epoch + timedelta(hours=1)
    trace = Conversation("t", (_message(0, "user", "1970-01-01T00:00:12.000000+00:00"),))
    assert price_epoch(trace) is None and price_time(None, 99) == PRICE_DATE
    assert price_epoch(Conversation("s", (_message(0, "user", None),))) is None


@pytest.mark.parametrize("session", ["258c7280-ae70-4798-800f-63464d01a85d", "fa812bfe-b295-4cca-9c2f-fdf01028cb46"])
def test_fidelity_prices_recorded_usage_at_each_requests_own_time(session: str) -> None:
    """``csim fidelity``'s recorded cost of a shared Claude Code session is ``calc_price`` of each request's recorded
    usage at that request's own time (when the message before its reply was complete), summed."""
    conv, res = _held_out_replay(session)
    index = {m.id: i for i, m in enumerate(conv.messages)}
    want = Decimal(0)
    for row in res.rows:
        i = index[row["message_id"]]
        m, before = conv.messages[i], conv.messages[i - 1]
        at = datetime.fromisoformat(str(before.meta["timestamp"]).replace("Z", "+00:00"))
        assert m.usage is not None
        one_hour = min(int(m.meta.get("cache_write_1h", 0)), m.usage.cache_write_tokens)
        usage = Usage(
            input_tokens=m.usage.prompt_tokens,
            output_tokens=m.usage.output_tokens,
            cache_read_tokens=m.usage.cache_read_tokens,
            cache_write_tokens=m.usage.cache_write_tokens,
            **({"cache_write_1h_tokens": one_hour} if one_hour else {}),
        )
        model = str(m.meta.get("model"))
        want += calc_price(usage, model_ref=model, provider_id="anthropic", genai_request_timestamp=at).total_price
    got = res.cache_summary()["recorded_cost_usd"]
    assert got == pytest.approx(float(want), rel=1e-6)
    assert len(res.rows) > 100


def test_a_run_bills_each_request_at_its_own_time() -> None:
    """Billing prices a request made ``t`` seconds into a dated recording at the recording's start plus ``t``."""
    from sim.core.budgets import Budgets, BudgetTracker
    from sim.core.cache import CacheUsage
    from sim.core.model import ModelConfig
    from sim.replay.billing import Billing

    conv = Conversation("c", (_message(0, "user", "2026-03-12T23:00:00Z"), _message(1, "user", "2026-03-13T01:00:00Z")))
    billing = Billing(ModelConfig(name=OPUS), conv, {})
    tracker = BudgetTracker(Budgets())
    usage = CacheUsage(uncached=300_000)
    first = billing.charge(tracker, 300_000, 1_000, usage, at=0.0)  # 2026-03-12 23:00: the long-context tier
    second = billing.charge(tracker, 300_000, 1_000, usage, at=7200.0)  # 2026-03-13 01:00: one price
    assert first == pytest.approx(_calc(OPUS, datetime(2026, 3, 12, 23, tzinfo=UTC), 300_000, 1_000), rel=1e-12)
    assert second == pytest.approx(_calc(OPUS, datetime(2026, 3, 13, 1, tzinfo=UTC), 300_000, 1_000), rel=1e-12)
    assert first > second
