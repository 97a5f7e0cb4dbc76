"""Provider prompt-cache models: each documented rule as an example, and properties every model keeps."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.core.cache import (
    CACHE_MODELS,
    LOOKBACK_BLOCKS,
    AnthropicCache,
    Block,
    CacheModel,
    CacheUsage,
    ImplicitPrefixCache,
    NoCache,
    OpenAIBreakpointCache,
    anthropic_min_tokens,
    cache_model,
    chain,
    family_of,
)
from sim.core.errors import InvalidConfig, InvalidRequest, UnknownName

SONNET = "claude-sonnet-4-5"  # minimum 1,024


def blocks(
    tokens: Sequence[int],
    bps: Sequence[int] = (),
    ttl: dict[int, str] | None = None,
    contents: Sequence[object] | None = None,
) -> list[Block]:
    """Blocks with chained keys; content i defaults to its index (so equal lists give equal keys)."""
    key, out = 0, []
    ids = list(contents) if contents is not None else list(range(len(tokens)))
    for i, t in enumerate(tokens):
        key = chain(key, (ids[i], t))
        out.append(Block(key, t, i in bps, (ttl or {}).get(i, "5m")))  # type: ignore[arg-type]
    return out


def anthropic(model: str = SONNET) -> CacheModel:
    return cache_model("anthropic", model)


# -- Anthropic: TTL --------------------------------------------------------------------------------------------
def test_repeat_within_ttl_reads_the_prefix_up_to_the_breakpoint() -> None:
    m = anthropic()
    req = blocks([1000, 1000, 1000, 200], bps=[2])
    assert m.request(req, 0) == CacheUsage(uncached=200, write_5m=3000)
    assert m.request(req, 299) == CacheUsage(uncached=200, read=3000)


@pytest.mark.parametrize("later", [300, 301, 3600])
def test_repeat_after_the_ttl_misses_and_rewrites(later: float) -> None:
    m = anthropic()
    req = blocks([3000, 100], bps=[0])
    m.request(req, 0)
    assert m.request(req, later) == CacheUsage(uncached=100, write_5m=3000)


def test_each_read_refreshes_the_ttl() -> None:
    m = anthropic()
    req = blocks([3000, 100], bps=[0])
    m.request(req, 0)
    for t in (250, 500, 750, 1000):  # each 250 s after the last use, 1,000 s after the write
        assert m.request(req, t).read == 3000


def test_one_hour_ttl_outlives_five_minutes_and_bills_the_one_hour_rate() -> None:
    m = anthropic()
    req = blocks([3000, 100], bps=[0], ttl={0: "1h"})
    assert m.request(req, 0) == CacheUsage(uncached=100, write_1h=3000)
    assert m.request(req, 3000).read == 3000  # 50 minutes idle
    assert m.request(req, 3000 + 3600) == CacheUsage(uncached=100, write_1h=3000)  # an hour idle: gone


def test_mixed_ttls_bill_one_hour_up_to_the_last_1h_breakpoint_and_5m_after_it() -> None:
    m = anthropic()
    req = blocks([2000, 500, 800, 300, 50], bps=[0, 3], ttl={0: "1h"})
    # A = 0 (no hit), B = 2,000 (the 1h breakpoint), C = 3,600 (the last breakpoint).
    assert m.request(req, 0) == CacheUsage(uncached=50, write_1h=2000, write_5m=1600)
    # Ten minutes later the 5m tail entry is gone, the 1h system entry is not: A = B = 2,000.
    assert m.request(req, 600) == CacheUsage(uncached=50, read=2000, write_5m=1600)


def test_a_one_hour_breakpoint_after_a_five_minute_one_is_rejected() -> None:
    with pytest.raises(InvalidRequest, match="longer TTLs must come first"):
        anthropic().request(blocks([2000, 2000], bps=[0, 1], ttl={1: "1h"}), 0)


# -- Anthropic: breakpoints -----------------------------------------------------------------------------------
def test_at_most_four_breakpoints() -> None:
    m = anthropic()
    m.request(blocks([2000] * 5, bps=[0, 1, 2, 3]), 0)  # four is fine
    with pytest.raises(InvalidRequest, match=r"maximum of 4 blocks with cache_control"):
        m.request(blocks([2000] * 5, bps=[0, 1, 2, 3, 4]), 0)


def test_no_breakpoint_no_caching() -> None:
    m = anthropic()
    req = blocks([5000, 5000])
    assert m.request(req, 0) == m.request(req, 1) == CacheUsage(uncached=10_000)


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("claude-sonnet-4-5", 1024),
        ("claude-sonnet-4-6", 1024),
        ("claude-opus-4-6", 4096),
        ("claude-opus-4-7", 2048),
        ("claude-opus-5", 512),
        ("claude-haiku-4-5", 4096),
        ("claude-3-5-haiku-latest", 2048),
        ("claude-3-haiku", 2048),
        ("claude-3-7-sonnet-latest", 1024),
        ("claude-haiku-5-5", 4096),  # newer than the table: its family's latest documented minimum
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", 1024),
    ],
)
def test_minimum_cacheable_prefix_per_model(model: str, minimum: int) -> None:
    assert anthropic_min_tokens(model) == minimum
    short, enough = blocks([minimum - 1, 10], bps=[0]), blocks([minimum, 10], bps=[0], contents=["a", "b"])
    m = anthropic(model)
    assert m.request(short, 0) == CacheUsage(uncached=minimum + 9)  # silently not cached
    assert m.request(short, 1) == CacheUsage(uncached=minimum + 9)
    assert m.request(enough, 2) == CacheUsage(uncached=10, write_5m=minimum)
    assert m.request(enough, 3) == CacheUsage(uncached=10, read=minimum)


def test_a_short_first_breakpoint_is_skipped_and_a_later_one_still_writes() -> None:
    m = anthropic()
    assert m.request(blocks([500, 700, 10], bps=[0, 1]), 0) == CacheUsage(uncached=10, write_5m=1200)


def test_lookback_window_is_twenty_blocks_counting_the_breakpoint() -> None:
    """The docs' example: breakpoints at blocks 10, 15, then 35 (1-based): the turn-2 entry is 21 back."""
    m = anthropic()
    tokens = [200] * 35
    m.request(blocks(tokens[:10], bps=[9]), 0)
    assert m.request(blocks(tokens[:15], bps=[14]), 1).read == 2000
    assert m.request(blocks(tokens[:35], bps=[34]), 2).read == 0
    m2 = anthropic()
    m2.request(blocks(tokens[:15], bps=[14]), 0)
    both = m2.request(blocks(tokens[:35], bps=[14, 34]), 1)  # a second breakpoint starts a window there
    assert both == CacheUsage(read=3000, write_5m=4000)
    assert LOOKBACK_BLOCKS == 20
    m3 = anthropic()
    m3.request(blocks(tokens[:15], bps=[14]), 0)
    assert m3.request(blocks(tokens[:34], bps=[33]), 1).read == 3000  # 20 positions back: still found


def test_a_breakpoint_on_a_block_that_changes_never_reads() -> None:
    """The docs' common mistake: a timestamp block carries the breakpoint; move it one block back and it reads."""
    bad, good = anthropic(), anthropic()
    for t in range(5):
        static = [1000] * 5
        on_changing = blocks([*static, 20], bps=[5], contents=[0, 1, 2, 3, 4, f"now={t}"])
        on_static = blocks([*static, 20], bps=[4], contents=[0, 1, 2, 3, 4, f"now={t}"])
        assert bad.request(on_changing, t).read == 0
        assert good.request(on_static, t).read == (5000 if t else 0)


def test_a_changed_middle_block_invalidates_everything_after_it() -> None:
    m = anthropic()
    sys_tokens, msgs = 3000, [800] * 10
    req1 = blocks([sys_tokens, *msgs], bps=[0, 10])
    assert m.request(req1, 0) == CacheUsage(write_5m=11_000)
    edited = blocks([sys_tokens, *msgs], bps=[0, 10], contents=[0, 1, 2, 3, "cleared", 5, 6, 7, 8, 9, 10])
    # Only the system breakpoint's entry still matches; everything from the edited block on is rewritten.
    assert m.request(edited, 10) == CacheUsage(read=3000, write_5m=8000)


def test_a_read_refreshes_the_entries_inside_the_prefix_it_read() -> None:
    """After 20 minutes of requests every minute, a compaction still reads the system prompt (5m TTL)."""
    m = anthropic()
    system = [20_000]
    turns: list[int] = []
    for minute in range(20):
        turns += [500, 500]
        m.request(blocks(system + turns, bps=[0, len(turns)]), 60 * minute)
    compacted = blocks([*system, 3000], bps=[0, 1], contents=[0, "summary"])
    assert m.request(compacted, 60 * 20) == CacheUsage(read=20_000, write_5m=3000)


def _clearing_run(batch_tokens: int) -> CacheUsage:
    """A tool loop of 30 turns under a clearing policy that keeps the newest 3 results.

    ``batch_tokens=0``: the boundary moves every request (clear whatever is older than the newest 3).
    Otherwise clear only when at least ``batch_tokens`` of results are clearable (``clear_at_least``).
    Breakpoints as Claude Code places them: the system prompt and the last block.
    """
    m = anthropic()
    results: list[int] = []  # token count of each tool result (cleared ones become 10-token placeholders)
    cleared = 0  # results [0, cleared) are cleared
    total = CacheUsage()
    for turn in range(30):
        results.append(2000)
        clearable = len(results) - 3 - cleared
        if clearable > 0 and clearable * 2000 >= batch_tokens:
            cleared += clearable
        tokens, ids = [10_000], ["system"]
        for i, r in enumerate(results):
            tokens += [100, 10 if i < cleared else r]  # tool call, tool result
            ids += [f"call{i}", f"cleared{i}" if i < cleared else f"result{i}"]
        total += m.request(blocks(tokens, bps=[0, len(tokens) - 1], contents=ids), 20 * turn)
    return total


def test_a_moving_clearing_boundary_writes_more_than_a_batched_one() -> None:
    moving, batched = _clearing_run(0), _clearing_run(20_000)
    assert moving.written > 2 * batched.written
    assert moving.read < batched.read


# -- OpenAI ------------------------------------------------------------------------------------------------------
def test_openai_caches_from_1024_tokens_in_128_token_steps_without_a_write_charge() -> None:
    m = cache_model("openai", "gpt-4o")
    assert isinstance(m, ImplicitPrefixCache)
    short = blocks([1000, 23])  # 1,023 tokens
    assert m.request(short, 0) == m.request(short, 1) == CacheUsage(uncached=1023)
    exact = blocks([1024], contents=["x"])
    assert m.request(exact, 2) == CacheUsage(uncached=1024)  # first time: stored, not charged
    assert m.request(exact, 3) == CacheUsage(read=1024)
    grown = blocks([1000, 300, 50], contents=["p", "q", "r"])
    m.request(grown, 4)
    more = blocks([1000, 300, 70], contents=["p", "q", "s"])  # shares 1,300 tokens
    assert m.request(more, 5) == CacheUsage(uncached=1370 - 1280, read=1280)


def test_openai_retention_by_model_and_option() -> None:
    req = blocks([5000])
    in_memory = cache_model("openai", "gpt-4o")  # not in the extended-retention list
    in_memory.request(req, 0)
    assert in_memory.request(req, 299).read == 4992
    assert in_memory.request(req, 299 + 300).read == 0
    extended = cache_model("openai", "gpt-4.1")  # extended retention: 24h by default without ZDR
    extended.request(req, 0)
    assert extended.request(req, 1799).read == 4992
    assert extended.request(req, 1799 + 1800).read == 0
    forced = cache_model("openai", "gpt-4.1", retention="in_memory")
    forced.request(req, 0)
    assert forced.request(req, 400).read == 0
    with pytest.raises(InvalidConfig, match="retention"):
        cache_model("openai", "gpt-4o", retention="forever")


def test_gpt55_hits_in_2048_token_steps() -> None:
    m = cache_model("openai", "gpt-5.5")
    req = blocks([5000])
    m.request(req, 0)
    assert m.request(req, 1) == CacheUsage(uncached=5000 - 4096, read=4096)


def test_models_before_gpt4o_do_not_cache() -> None:
    for model in ("gpt-4-turbo", "gpt-4", "gpt-3.5-turbo"):
        assert isinstance(cache_model("openai", model), NoCache)


def test_gpt56_writes_at_the_latest_eligible_message_and_charges_it() -> None:
    m = cache_model("openai", "gpt-6-sol")
    assert isinstance(m, OpenAIBreakpointCache)
    # system 2,000 | user 500 | assistant 300 | user 400: eligible endings after system and each user message.
    first = blocks([2000, 500, 300, 400], bps=[0, 1, 3])
    assert m.request(first, 0) == CacheUsage(write_5m=3200)
    second = blocks([2000, 500, 300, 400, 250, 600], bps=[0, 1, 3, 5])
    assert m.request(second, 60) == CacheUsage(read=3200, write_5m=850)
    # Exact, not rounded; 30 minutes after the latest reuse the entry is gone.
    assert m.request(second, 60 + 1799) == CacheUsage(read=4050)
    assert m.request(second, 60 + 1799 + 1800) == CacheUsage(write_5m=4050)
    with pytest.raises(InvalidConfig, match="GPT-5.6"):
        cache_model("openai", "gpt-5.6-luna", retention="24h")


def test_gpt56_looks_back_over_twenty_earlier_message_endings() -> None:
    tokens = [2000] + [100] * 30
    m = cache_model("openai", "gpt-5.6-sol")
    m.request(blocks(tokens[:6], bps=range(6)), 0)  # entry at block 5
    # 21 later eligible endings plus the first: block 5 is the 22nd from the end, and not the first.
    later = blocks(tokens[:27], bps=range(27))
    assert m.request(later, 1).read == 0  # the first ending is tried too, but nothing was ever written there
    m2 = cache_model("openai", "gpt-5.6-sol")
    m2.request(blocks(tokens[:6], bps=range(6)), 0)
    assert m2.request(blocks(tokens[:26], bps=range(26)), 1).read == 2500  # 21st from the end: found


# -- Gemini and none -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "minimum"), [("gemini-2.5-flash", 2048), ("gemini-2.5-pro", 2048), ("gemini-3.5-flash", 4096)]
)
def test_gemini_implicit_minimum_and_no_write_charge(model: str, minimum: int) -> None:
    m = cache_model("google", model)
    assert m.min_tokens == minimum
    below, at = blocks([minimum - 1]), blocks([minimum], contents=["x"])
    m.request(below, 0)
    assert m.request(below, 1) == CacheUsage(uncached=minimum - 1)
    assert m.request(at, 2) == CacheUsage(uncached=minimum)
    assert m.request(at, 3) == CacheUsage(read=minimum)  # exact, no rounding


def test_gemini_before_25_has_no_implicit_cache() -> None:
    assert isinstance(cache_model("google", "gemini-2.0-flash"), NoCache)


def test_none_bills_everything_uncached() -> None:
    m = cache_model("none", "claude-sonnet-4-5")
    req = blocks([5000, 5000], bps=[0, 1])
    assert m.request(req, 0) == m.request(req, 1) == CacheUsage(uncached=10_000)


# -- choosing a model ------------------------------------------------------------------------------------------
def test_the_model_maker_decides_the_family_then_the_provider() -> None:
    assert family_of("google", "claude-opus-4-6") == "anthropic"  # Claude on Vertex
    assert family_of("azure", "gpt-4o") == "openai"
    assert family_of("google", "gemini-2.5-pro") == "gemini"
    assert family_of("none", "gpt-4o") == "none"
    assert isinstance(cache_model("anthropic", "claude-opus-4-6"), AnthropicCache)
    assert set(CACHE_MODELS.names()) == {"anthropic", "openai", "gemini", "none"}


def test_unknown_provider_suggests_the_closest() -> None:
    with pytest.raises(UnknownName, match="Did you mean 'anthropic'"):
        cache_model("anthropc", "some-model")


def test_bad_inputs_are_clear_errors() -> None:
    with pytest.raises(InvalidConfig, match="tokens"):
        Block(1, -1)
    with pytest.raises(InvalidConfig, match="ttl"):
        Block(1, 1, True, "10m")  # type: ignore[arg-type]
    with pytest.raises(InvalidConfig, match="now_seconds"):
        anthropic().request(blocks([10]), float("nan"))


# -- properties ------------------------------------------------------------------------------------------------
MODELS = [
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-opus-4-6"),
    ("openai", "gpt-4o"),
    ("openai", "gpt-5.5"),
    ("openai", "gpt-6-sol"),
    ("google", "gemini-2.5-flash"),
    ("none", "claude-sonnet-4-5"),
]
GAPS = [0, 1, 60, 299, 300, 301, 1799, 1800, 3599, 3600, 7200]


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[list[Block], float]]:
    """A few requests over a prompt that grows, is edited in the middle, truncated or repeated, at chosen gaps.

    Contents come from a small alphabet so prefixes repeat; breakpoints are at most four, 1h ones first.
    """
    prompt = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3000)), min_size=1, max_size=20))
    out: list[tuple[list[Block], float]] = []
    now = 0.0
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["same", "append", "edit", "truncate"]))
        if op == "append":
            prompt = prompt + draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3000)), max_size=15))
        elif op == "edit":
            i = draw(st.integers(0, len(prompt) - 1))
            prompt = [*prompt[:i], (draw(st.integers(0, 3)), draw(st.integers(0, 3000))), *prompt[i + 1 :]]
        elif op == "truncate" and len(prompt) > 1:
            prompt = prompt[: draw(st.integers(1, len(prompt) - 1))]
        bps = sorted(draw(st.sets(st.integers(0, len(prompt) - 1), max_size=4)))
        n_1h = draw(st.integers(0, len(bps)))
        ttl = {bp: "1h" for bp in bps[:n_1h]}
        now += draw(st.sampled_from(GAPS))
        req = blocks([t for _, t in prompt], bps=bps, ttl=ttl, contents=[c for c, _ in prompt])
        out.append((req, now))
    return out


def _replay(model: CacheModel, session: Sequence[tuple[list[Block], float]]) -> list[CacheUsage]:
    return [model.request(req, now) for req, now in session]


@pytest.mark.parametrize(("provider", "model"), MODELS)
@given(session=sessions())
def test_parts_are_non_negative_and_sum_to_the_prompt(provider: str, model: str, session: list) -> None:
    m = cache_model(provider, model)
    for (req, _), usage in zip(session, _replay(m, session), strict=True):
        assert min(usage.uncached, usage.read, usage.write_5m, usage.write_1h) >= 0
        assert usage.total == sum(b.tokens for b in req)
        assert usage.read <= usage.total


@pytest.mark.parametrize(("provider", "model"), MODELS)
@given(session=sessions())
def test_same_requests_same_usage(provider: str, model: str, session: list) -> None:
    assert _replay(cache_model(provider, model), session) == _replay(cache_model(provider, model), session)


@pytest.mark.parametrize(("provider", "model"), MODELS)
@given(session=sessions(), other=sessions())
def test_a_copy_is_independent(provider: str, model: str, session: list, other: list) -> None:
    cut = len(session) // 2
    original = cache_model(provider, model)
    _replay(original, session[:cut])
    fork = original.copy()
    t0 = session[cut - 1][1] if cut else 0.0
    shifted = [(req, t0 + now) for req, now in other]
    fork_usage = _replay(fork, shifted)  # the fork goes its own way first ...
    assert _replay(original, session[cut:]) == _replay(cache_model(provider, model), session)[cut:]
    fresh = cache_model(provider, model)
    _replay(fresh, session[:cut])
    assert fork_usage == _replay(fresh, shifted)  # ... and is what a fresh model with the same past does


def _cacheable(m: CacheModel, req: list[Block]) -> int:
    """What a repeat of ``req`` can read at most, by each model's rule."""
    cum, total = [], 0
    for b in req:
        total += b.tokens
        cum.append(total)
    if isinstance(m, NoCache):
        return 0
    if isinstance(m, AnthropicCache):
        bps = [i for i, b in enumerate(req) if b.breakpoint]
        return cum[bps[-1]] if bps and cum[bps[-1]] >= m.min_tokens else 0
    if isinstance(m, OpenAIBreakpointCache):
        last = max((i for i, b in enumerate(req) if b.breakpoint), default=len(req) - 1)
        return cum[last] if cum[last] >= m.min_tokens else 0
    assert isinstance(m, ImplicitPrefixCache)
    rounded = total // m.step * m.step
    return rounded if rounded >= m.min_tokens else 0


@pytest.mark.parametrize(("provider", "model"), MODELS)
@given(session=sessions(), gap=st.sampled_from([0, 1, 60, 299]))
def test_an_identical_request_within_the_ttl_reads_everything_cacheable(
    provider: str, model: str, session: list, gap: int
) -> None:
    m = cache_model(provider, model)
    _replay(m, session)
    req, now = session[-1]
    assert m.request(req, now + gap).read == _cacheable(m, req)
