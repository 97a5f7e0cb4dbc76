"""Provider prompt caches: which prompt tokens of a request are read from cache, written to it, or neither.

One module because the providers' models share one small entry store, one block and usage type and one
registry, and the sources and numbers each rests on read best side by side (the docstring below is most of it).

The engine turns each rendered request into :class:`Block` values in render order (for Anthropic: every tool
definition, every system block, every content block of every message) and asks the run's :class:`CacheModel`
what the provider would bill: :meth:`CacheModel.request` returns a :class:`CacheUsage` (uncached, read,
5-minute write, 1-hour write tokens, which sum to the prompt) and updates the model's entries. Time enters only
as the request's start time in seconds (``now_seconds``, from :mod:`sim.core.clock`); nothing reads a clock.

Block identity. ``Block.key`` stands for the whole prefix up to and including the block: the caller chains
content hashes (:func:`chain`), so equal keys mean an identical prefix, and a changed block changes the key of
every block after it. That is how a provider's cache sees a prompt: a cumulative hash of everything before.

Models (chosen by :func:`cache_model` from the provider and model name; registry :data:`CACHE_MODELS`):

``anthropic`` -- explicit ``cache_control`` breakpoints. Source: Anthropic, "Prompt caching",
https://platform.claude.com/docs/en/build-with-claude/prompt-caching (read in the docs mirror
llms-txt-archive/anthropic-platform at 7967a16b, August 2026). Taken from it:

* At most 4 breakpoints per request (``MAX_BREAKPOINTS``); the API answers more with a 400, so do we
  (:class:`~sim.core.errors.InvalidRequest`).
* A breakpoint writes exactly one entry, for the prefix ending at its block; nothing is written at earlier
  positions.
* Reads look back from each breakpoint over at most 20 positions, the breakpoint itself counting as the
  first (``LOOKBACK_BLOCKS``); with no hit in that window the search resumes at the next earlier breakpoint.
  The hit (position ``A``) is the longest such prefix, read at the read rate.
* Billing with mixed TTLs: ``A`` = the highest hit, ``B`` = the highest 1-hour breakpoint after ``A`` (or
  ``A``), ``C`` = the last breakpoint. Read ``A``; 1-hour write ``B - A``; 5-minute write ``C - B``; what
  follows ``C`` is uncached input. A 1-hour breakpoint after a 5-minute one is a 400 ("longer TTL must appear
  before shorter TTLs").
* TTL 5 minutes (300 s), refreshed at no cost each time the cached content is used; ``"1h"`` is 3,600 s.
  The lifetime runs from the *start* of the request that writes or reads, so ``now_seconds`` is the request's
  start time. An entry written at ``t`` with TTL ``T`` is live for ``now < t + T`` (a request exactly ``T``
  later misses: the docs give no rule for the boundary, we pick the strict one).
* Minimum cacheable prompt length (a breakpoint whose prefix is shorter writes nothing, without error):
  512 tokens for Opus 5, Fable 5, Mythos 5; 2,048 for Mythos Preview and Opus 4.7; 4,096 for Opus 4.6 and 4.5;
  1,024 for Opus 4.8, Sonnet 5, Sonnet 4.6, Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4; 4,096 for Haiku 4.5; 2,048
  for Haiku 3.5. Older models, from the earlier version of the same page (quoted in
  anthropics/anthropic-sdk-python#1194): 1,024 for Sonnet 3.7, 2,048 for Haiku 3; and 1,024 for Sonnet 3.5 and
  Opus 3 (TrueFoundry's copy of that table, docs.truefoundry.com/gateway/chat-completions-prompt-caching). A
  model newer than the table takes the nearest earlier version of its family (Haiku 5.5 -> Haiku 4.5); an
  unrecognised Claude name takes 1,024. Issue #1194 reports Sonnet 4.6 caching only from 2,048 in practice; we
  follow the docs (1,024).

  Readings we chose where the page is silent: (1) a read refreshes every live entry that is a prefix of what
  was read, not only the entry hit ("refreshed each time the cached content is used"; the prefix of a hit *is*
  used). The recorded Claude Code sessions in ``../shared/recorded/claude-code`` cannot tell the readings
  apart: their system prefix is warm before the session starts (the first request of fa812bfe reads 17,842
  tokens; after a 12-minute gap in a 5-minute-TTL session a request still reads the 21,496-token prefix), so
  other sessions keep it alive; an engine reproducing them should pre-warm that prefix (one request on the
  system blocks before the first, its usage discarded). (2) A refresh extends an entry by its own TTL.
  (3) Entries are per model instance; the engine keeps one cache model per model name, as the provider keeps
  caches per model. Not modelled: workspace isolation, concurrent requests (an entry is usable only once the
  first response begins), thinking-block stripping, automatic caching (express it as a breakpoint on the last
  block).

``openai`` -- two regimes by model. Source: OpenAI, "Prompt caching",
https://developers.openai.com/api/docs/guides/prompt-caching (docs mirror llms-txt-archive/openai-platform at
25f7cbb7) and its earlier edition (developers.openai.com/docs/guides/prompt-caching, "Legacy APIs"):

* Models before GPT-5.6 (gpt-4o and newer; gpt-4, gpt-4-turbo and gpt-3.5 do not cache): automatic, no write
  charge (writes count as uncached input). A request's cached tokens are its longest prefix that a live earlier
  prompt shares, rounded down to the implicit breakpoint interval: 128 tokens (cached tokens are rounded "down to
  the nearest multiple of 128"; "model-dependent intervals" are not given), 2,048 for GPT-5.5 ("spaced at
  regular 2,048-token intervals"); and none below 1,024 tokens ("enabled automatically for prompts that are
  1024 tokens or longer"; the current page says the minimum "varies by request settings" for these models, and
  we keep 1,024). OpenAI's hidden system tokens are not counted: the engine's prompt is what it sees.
  Retention: ``in_memory`` entries live "around 5 to 10 minutes of inactivity, up to one hour" (we take 300 s
  of inactivity, the documented low end, so a hit we predict is one the docs promise as typical); ``24h``
  "typically ... around 30 minutes and can retain them for up to 24 hours" (we take 1,800 s). ``24h`` is the
  default for organisations without Zero Data Retention on the models that support it (gpt-5.5, gpt-5.5-pro,
  gpt-5.4, gpt-5.2, gpt-5.1-codex-max, gpt-5.1, gpt-5.1-codex, gpt-5.1-codex-mini, gpt-5.1-chat-latest, gpt-5,
  gpt-5-codex, gpt-4.1); others default to ``in_memory``. Pass ``retention=`` to choose.
* GPT-5.6 and later: an implicit breakpoint at the end of the latest eligible message (a user message, the
  last tool response of a group, the last of the initial developer messages) writes one entry, at 1.25x the
  input rate (reported here as ``write_5m``, the model's standard cache-write rate); lookups try that
  breakpoint, up to 20 earlier eligible message endings, and the end of the initial developer messages (we take
  the first eligible boundary as that end), longest first; cached tokens are exact; minimum 1,024 tokens; an
  entry lives 30 minutes (1,800 s) after its latest write or reuse. Mark eligible message endings with
  ``Block.breakpoint``; with none marked, the last block is the implicit breakpoint. Explicit breakpoints
  (``prompt_cache_breakpoint``) are not modelled.
* Not modelled (both regimes): machine routing and overflow above 15 requests a minute, ``prompt_cache_key``.

``gemini`` -- implicit caching, Gemini 2.5 and newer (earlier models: none). Source: Google, "Context caching",
https://ai.google.dev/gemini-api/docs/caching (page last updated 2026-10-13). Minimum input tokens: 2,048 for
Gemini 2.5 Flash and 2.5 Pro, 4,096 for Gemini 3.x (3.1 Pro Preview, 3.5 to 3.8 Flash) and Gemini 4; an
earlier edition listed 2.5 Flash at 1,024, 2.5 Pro at 4,096 and 3 Flash Preview at 1,024: we follow the
current one. No write charge: Vertex AI's context cache overview
(docs.cloud.google.com/gemini-enterprise-agent-platform/models/context-cache/context-cache-overview) bills the
tokens that create an implicit cache "at the standard input token price". Neither page states how long an
implicit entry lives (Vertex: in memory until capacity is reclaimed, at most 24 hours after creation) or its
granularity: project choices are 300 s of inactivity (``idle_ttl_seconds``) and block granularity, unrounded.

``none`` -- caching off (``--cache off``): every token uncached.

Granularity everywhere is the block: a block that changes loses its whole prefix match, even where the
provider would still match its first tokens.
"""

from __future__ import annotations

import copy as _copy
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, count
from operator import attrgetter
from typing import Any, Literal, TypeVar

from sim.core.errors import InvalidConfig, InvalidRequest, UnknownName
from sim.core.registry import Registry

TTL = Literal["5m", "1h"]
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}
MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
#: Anthropic minimum cacheable prompt length by family and version: the nearest version at or below wins.
ANTHROPIC_MIN_TOKENS: dict[str, tuple[tuple[tuple[int, int], int], ...]] = {
    "opus": (((3, 0), 1024), ((4, 0), 1024), ((4, 1), 1024), ((4, 5), 4096), ((4, 6), 4096), ((4, 7), 2048),
             ((4, 8), 1024), ((5, 0), 512)),
    "sonnet": (((3, 5), 1024), ((3, 7), 1024), ((4, 0), 1024), ((4, 5), 1024), ((4, 6), 1024), ((5, 0), 1024)),
    "haiku": (((3, 0), 2048), ((3, 5), 2048), ((4, 5), 4096)),
    "fable": (((5, 0), 512),),
    "mythos": (((5, 0), 512),),
}  # fmt: skip
ANTHROPIC_DEFAULT_MIN_TOKENS = 1024
MYTHOS_PREVIEW_MIN_TOKENS = 2048
OPENAI_MIN_TOKENS = 1024
OPENAI_STEP = 128
OPENAI_GPT55_STEP = 2048
OPENAI_RETENTION_SECONDS: dict[str, float] = {"in_memory": 300.0, "24h": 1800.0}
OPENAI_EXTENDED_RETENTION = frozenset(
    ["gpt-5.5", "gpt-5.5-pro", "gpt-5.4", "gpt-5.2", "gpt-5.1-codex-max", "gpt-5.1", "gpt-5.1-codex",
     "gpt-5.1-codex-mini", "gpt-5.1-chat-latest", "gpt-5", "gpt-5-codex", "gpt-4.1"]
)  # fmt: skip
OPENAI_LOOKUP_MESSAGES = 20  # eligible message endings tried before the implicit breakpoint (GPT-5.6+)
OPENAI_BREAKPOINT_TTL = 1800.0  # GPT-5.6+: 30 minutes after the latest write or reuse
GEMINI_25_MIN_TOKENS = 2048
GEMINI_3_MIN_TOKENS = 4096
GEMINI_IDLE_TTL = 300.0  # project choice: the docs give none


def chain(prev_key: int, content: object) -> int:
    """The key of a block whose content identity is ``content`` following a block keyed ``prev_key``.

    Start a request with ``prev_key=0``. ``content`` must be hashable (a content hash, a tuple of ids); equal
    chains give equal keys, so equal keys at equal positions mean an identical prefix.
    """
    return hash((prev_key, content))


@dataclass(frozen=True, slots=True)
class Block:
    """One piece of a request's prompt, in render order.

    ``key`` identifies the prefix ending here (see :func:`chain`); ``tokens`` is the block's token count.
    ``breakpoint``: Anthropic ``cache_control`` on this block; for OpenAI GPT-5.6 and later, an eligible
    message ending (the last one is the implicit breakpoint); ignored by the other models. ``ttl`` is the
    breakpoint's Anthropic TTL.
    """

    key: int
    tokens: int
    breakpoint: bool = False
    ttl: TTL = "5m"

    def __post_init__(self) -> None:
        if self.tokens < 0:
            raise InvalidConfig(f"Block tokens={self.tokens!r} must be >= 0")
        if self.ttl not in TTL_SECONDS:
            raise InvalidConfig(f"Block ttl={self.ttl!r} must be '5m' or '1h'")


@dataclass(frozen=True, slots=True)
class CachePlacement:
    """Where a client puts Anthropic ``cache_control`` breakpoints, and with which TTL (None: no breakpoint).

    ``system``: on the last block of the system prompt (on the tool definitions when there is none), so the
    stable prefix has its own entry and survives a compaction that rewrites everything after it. ``last``: on
    the last block of the conversation the request sends (before a run-status line, which changes every
    request), so each request reads what the one before wrote. The default is Anthropic's own advice for
    multi-turn conversations ("Prompt caching": cache the system prompt and mark the final block of the final
    message, so the conversation is cached incrementally) with the default 5-minute TTL. A policy declares its
    client's placement as ``Policy.cache_placement``.
    """

    system: TTL | None = "5m"
    last: TTL | None = "5m"

    def __post_init__(self) -> None:
        for name in ("system", "last"):
            if getattr(self, name) not in (None, *TTL_SECONDS):
                raise InvalidConfig(f"CachePlacement {name}={getattr(self, name)!r} must be '5m', '1h' or None")
        if self.system == "5m" and self.last == "1h":
            raise InvalidConfig("CachePlacement: a 1h breakpoint cannot follow a 5m one (Anthropic answers 400)")


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """A request's input tokens by how they are billed; the four parts sum to the prompt.

    ``write_5m`` is priced at the model's standard cache-write rate (Anthropic's 5-minute write, OpenAI
    GPT-5.6+'s write); ``write_1h`` at Anthropic's 1-hour rate. Providers without a write charge report their
    writes as ``uncached``.
    """

    uncached: int = 0
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0

    @property
    def written(self) -> int:
        return self.write_5m + self.write_1h

    @property
    def total(self) -> int:
        return self.uncached + self.read + self.write_5m + self.write_1h

    def fitted(self, tokens: int) -> CacheUsage:
        """This bill for a prompt of ``tokens``: the cached parts as they are (capped at the prompt), the uncached
        end taking the difference. A run's cache blocks are its own counts and agree with the request's, except
        with a calibration (its whole-request rounding and ``after_compaction`` term) and under a policy that
        rewrote the log behind the engine's back (``log-append-only`` reports that)."""
        if self.total == tokens:
            return self
        cached = min(self.read + self.write_5m + self.write_1h, tokens)
        read = min(self.read, cached)
        w1 = min(self.write_1h, cached - read)
        return CacheUsage(tokens - cached, read, cached - read - w1, w1)

    def __add__(self, other: CacheUsage) -> CacheUsage:
        return CacheUsage(
            self.uncached + other.uncached,
            self.read + other.read,
            self.write_5m + other.write_5m,
            self.write_1h + other.write_1h,
        )


@dataclass(frozen=True, slots=True)
class Prompt:
    """A request's blocks as the models read them, in columns: what an engine keeps between requests.

    ``keys[i]`` and ``cum[i]`` are block ``i``'s key and the prompt's tokens through it; ``marks`` are the
    indices (ascending) of the blocks with ``breakpoint`` set, and ``ttls`` their TTLs. The sequences are read,
    never changed, and only near the marks and the end, so billing a request costs O(marks x lookback), not
    O(blocks) (the implicit prefix caches store every prefix, a C-speed O(blocks) update).
    """

    keys: Sequence[int]
    cum: Sequence[int]
    marks: Sequence[int] = ()
    ttls: Sequence[TTL] = ()

    @classmethod
    def of(cls, blocks: Sequence[Block]) -> Prompt:
        marks = list(compress(count(), map(_BREAKPOINT, blocks)))
        return cls(
            list(map(_KEY, blocks)), list(accumulate(map(_TOKENS, blocks))), marks, [blocks[i].ttl for i in marks]
        )

    @property
    def total(self) -> int:
        return self.cum[-1] if self.cum else 0


_M = TypeVar("_M", bound="CacheModel")
_KEY = attrgetter("key")  # C-speed field access: a request has thousands of blocks
_TOKENS = attrgetter("tokens")
_BREAKPOINT = attrgetter("breakpoint")


class CacheModel:
    """A provider's prompt cache for one model: its live entries and the rules that bill a request."""

    family: str = ""

    def __init__(self, model: str, min_tokens: int) -> None:
        self.model = model
        self.min_tokens = min_tokens
        # key -> (expires_at, ttl_seconds): an entry is live while now < expires_at.
        self._entries: dict[int, tuple[float, float]] = {}
        self._purge_at = 4096

    def request(self, blocks: Sequence[Block], now_seconds: float) -> CacheUsage:
        """Bill one request sent at ``now_seconds`` (its start) and update the entries."""
        return self.bill(Prompt.of(blocks), now_seconds)

    def bill(self, prompt: Prompt, now_seconds: float) -> CacheUsage:
        """:meth:`request` on a prompt kept in columns (:class:`Prompt`)."""
        raise NotImplementedError

    def copy(self: _M) -> _M:
        """An independent copy (for lockstep forks): requests on one never change the other."""
        new = _copy.copy(self)
        new._entries = dict(self._entries)
        return new

    def live_entries(self, now_seconds: float) -> int:
        """How many entries are live at ``now_seconds`` (for reports and tests)."""
        return sum(1 for exp, _ in self._entries.values() if now_seconds < exp)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, min_tokens={self.min_tokens})"

    # -- shared helpers ------------------------------------------------------------------------------
    def _live(self, key: int, now: float) -> bool:
        e = self._entries.get(key)
        return e is not None and now < e[0]

    def _refresh_prefix(self, keys: Sequence[int], upto: int, near: Sequence[int], now: float) -> None:
        """A read of the prefix ending at block ``upto`` uses the entries inside it: refresh the live ones the
        lookup can reach (at ``upto``, and at or before it within the lookback of each position in ``near``:
        this request's breakpoints or lookup positions), so a request costs O(near x lookback), not O(prompt)."""
        entries = self._entries
        positions = {upto}
        for p in near:
            positions.update(range(max(p - LOOKBACK_BLOCKS + 1, 0), min(p, upto) + 1))
        for j in positions:
            e = entries.get(keys[j])
            if e is not None and now < e[0]:
                entries[keys[j]] = (max(e[0], now + e[1]), e[1])

    def _purge(self, now: float) -> None:
        """Drop dead entries once the table has doubled since the last purge (bounded memory, amortised O(1))."""
        if len(self._entries) >= self._purge_at:
            self._entries = {k: v for k, v in self._entries.items() if now < v[0]}
            self._purge_at = max(4096, 2 * len(self._entries))


def _check_now(now: float) -> None:
    if not math.isfinite(now):
        raise InvalidConfig(f"now_seconds={now!r} must be a finite number of seconds")


class NoCache(CacheModel):
    """Caching off: every prompt token is uncached input."""

    family = "none"

    def __init__(self, model: str = "") -> None:
        super().__init__(model, 0)

    def bill(self, prompt: Prompt, now_seconds: float) -> CacheUsage:
        _check_now(now_seconds)
        return CacheUsage(uncached=prompt.total)


class AnthropicCache(CacheModel):
    """Anthropic's explicit breakpoints: writes at breakpoints, reads looking back 20 blocks from each."""

    family = "anthropic"

    def bill(self, prompt: Prompt, now_seconds: float) -> CacheUsage:
        now = now_seconds
        _check_now(now)
        keys, cum, bps, ttls = prompt.keys, prompt.cum, prompt.marks, prompt.ttls
        total = prompt.total
        if len(bps) > MAX_BREAKPOINTS:
            raise InvalidRequest(
                f"a maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided; this request has "
                f"{len(bps)} (at blocks {list(bps)})"
            )
        seen_5m = False
        for i, ttl in zip(bps, ttls, strict=True):
            if ttl == "5m":
                seen_5m = True
            elif seen_5m:
                raise InvalidRequest(
                    f"cache_control ttl '1h' at block {i} follows a '5m' breakpoint: longer TTLs must come first"
                )
        if not bps:
            return CacheUsage(uncached=total)
        self._purge(now)
        hit = -1
        for bp in reversed(bps):
            for j in range(bp, max(bp - LOOKBACK_BLOCKS, -1), -1):
                if self._live(keys[j], now):
                    hit = j
                    break
            if hit >= 0:
                break
        read = cum[hit] if hit >= 0 else 0
        if hit >= 0:
            self._refresh_prefix(keys, hit, bps, now)
        written = [(bp, ttl) for bp, ttl in zip(bps, ttls, strict=True) if bp > hit and cum[bp] >= self.min_tokens]
        if not written:
            return CacheUsage(uncached=total - read, read=read)
        one_hour = [bp for bp, ttl in written if ttl == "1h"]
        b_pos = cum[one_hour[-1]] if one_hour else read
        c_pos = cum[written[-1][0]]
        for bp, ttl in written:
            seconds = TTL_SECONDS[ttl]
            self._entries[keys[bp]] = (now + seconds, seconds)
        return CacheUsage(uncached=total - c_pos, read=read, write_5m=c_pos - b_pos, write_1h=b_pos - read)


class ImplicitPrefixCache(CacheModel):
    """Automatic prefix caching (OpenAI before GPT-5.6, Gemini): every prompt is stored, writes are free.

    A request reads its longest prefix shared with a live earlier prompt, rounded down to ``step`` tokens,
    and nothing below ``min_tokens``. Storing a prompt refreshes all of its prefixes.
    """

    def __init__(self, model: str, min_tokens: int, step: int, idle_ttl_seconds: float, family: str) -> None:
        super().__init__(model, min_tokens)
        if step < 1:
            raise InvalidConfig(f"step={step!r} must be >= 1")
        if not idle_ttl_seconds > 0:
            raise InvalidConfig(f"idle_ttl_seconds={idle_ttl_seconds!r} must be > 0")
        self.step = step
        self.idle_ttl_seconds = float(idle_ttl_seconds)
        self.family = family

    def bill(self, prompt: Prompt, now_seconds: float) -> CacheUsage:
        now = now_seconds
        _check_now(now)
        self._purge(now)
        entries, keys = self._entries, prompt.keys
        hit = -1
        # Every stored prompt stores all its prefixes with the same expiry, so liveness only falls along a
        # chain: the first live key from the end is the longest live prefix.
        for j in range(len(keys) - 1, -1, -1):
            e = entries.get(keys[j])
            if e is not None and now < e[0]:
                hit = j
                break
        total = prompt.total
        shared = prompt.cum[hit] if hit >= 0 else 0
        read = shared // self.step * self.step
        if read < self.min_tokens:
            read = 0
        ttl = self.idle_ttl_seconds
        entries.update(dict.fromkeys(keys, (now + ttl, ttl)))
        return CacheUsage(uncached=total - read, read=read)


class OpenAIBreakpointCache(CacheModel):
    """OpenAI GPT-5.6 and later, implicit mode: one charged write at the latest eligible message ending."""

    family = "openai"

    def bill(self, prompt: Prompt, now_seconds: float) -> CacheUsage:
        now = now_seconds
        _check_now(now)
        keys, cum = prompt.keys, prompt.cum
        if not cum:
            return CacheUsage()
        total = cum[-1]
        self._purge(now)
        eligible = list(prompt.marks[-(OPENAI_LOOKUP_MESSAGES + 1) :]) or [len(keys) - 1]
        implicit = eligible[-1]
        lookups = eligible[::-1]
        first = prompt.marks[0] if prompt.marks else implicit
        if first not in lookups:
            lookups.append(first)
        hit = next((j for j in lookups if self._live(keys[j], now)), -1)
        read = cum[hit] if hit >= 0 else 0
        if hit >= 0:
            self._refresh_prefix(keys, hit, [j for j in lookups if j <= hit], now)
        write = 0
        if implicit > hit and cum[implicit] >= self.min_tokens:
            write = cum[implicit] - read
            self._entries[keys[implicit]] = (now + OPENAI_BREAKPOINT_TTL, OPENAI_BREAKPOINT_TTL)
        return CacheUsage(uncached=total - read - write, read=read, write_5m=write)


# -- model names ------------------------------------------------------------------------------------------
def _base_name(model: str) -> str:
    """Lower case, without a routing prefix (``anthropic/``, ``anthropic.``) or a Bedrock/Vertex suffix."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = re.sub(r"^(?:[a-z-]+\.)*(?=claude)", "", name)
    name = re.sub(r"(?:-v\d+(?::\d+)?|@\d+)$", "", name)
    return name


def anthropic_min_tokens(model: str) -> int:
    """Anthropic's minimum cacheable prompt length for ``model`` (see the module docstring for the table)."""
    name = _base_name(model)
    family = next((f for f in ANTHROPIC_MIN_TOKENS if f in name), None)
    if family is None:
        return ANTHROPIC_DEFAULT_MIN_TOKENS
    if family == "mythos" and "preview" in name:
        return MYTHOS_PREVIEW_MIN_TOKENS
    nums = [int(x) for x in re.findall(r"\d+", name) if len(x) <= 2][:2]
    version = (nums[0], nums[1] if len(nums) > 1 else 0) if nums else (99, 0)
    table = ANTHROPIC_MIN_TOKENS[family]
    chosen = table[0][1]
    for v, tokens in table:
        if v <= version:
            chosen = tokens
    return chosen


def _version(name: str, prefix: str) -> tuple[int, int] | None:
    m = re.match(rf"(?:ft:)?{prefix}-(\d+)(?:\.(\d+))?", name)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else None


def anthropic_cache(model: str) -> CacheModel:
    """Anthropic's cache for ``model`` (Claude 2 and earlier: no caching)."""
    name = _base_name(model)
    if re.match(r"claude-(?:v1|2|instant)", name):
        return NoCache(model)
    return AnthropicCache(model, anthropic_min_tokens(model))


def openai_cache(model: str, retention: str | None = None) -> CacheModel:
    """OpenAI's cache for ``model``: GPT-5.6+ breakpoints, implicit prefixes before, none before gpt-4o.

    ``retention`` (``in_memory`` or ``24h``) applies to models before GPT-5.6; default: the model's
    documented default for an organisation without Zero Data Retention.
    """
    name = re.sub(r"-\d{4}-\d{2}-\d{2}$", "", _base_name(model))
    version = _version(name, "gpt")
    if version is not None and version >= (5, 6):
        if retention is not None:
            raise InvalidConfig(f"retention={retention!r} does not apply to {model!r}: GPT-5.6+ entries live 30 min")
        return OpenAIBreakpointCache(model, OPENAI_MIN_TOKENS)
    if re.match(r"(?:ft:)?gpt-(?:3\.5|4(?![o.]))", name):
        return NoCache(model)
    if retention is None:
        retention = "24h" if name in OPENAI_EXTENDED_RETENTION else "in_memory"
    if retention not in OPENAI_RETENTION_SECONDS:
        raise InvalidConfig(f"retention={retention!r} must be one of {sorted(OPENAI_RETENTION_SECONDS)}")
    step = OPENAI_GPT55_STEP if version == (5, 5) else OPENAI_STEP
    return ImplicitPrefixCache(model, OPENAI_MIN_TOKENS, step, OPENAI_RETENTION_SECONDS[retention], "openai")


def gemini_cache(model: str, idle_ttl_seconds: float = GEMINI_IDLE_TTL) -> CacheModel:
    """Gemini's implicit cache for ``model`` (2.5 and newer; earlier models do not cache implicitly)."""
    version = _version(_base_name(model), "gemini")
    if version is None or version < (2, 5):
        return NoCache(model)
    min_tokens = GEMINI_25_MIN_TOKENS if version < (3, 0) else GEMINI_3_MIN_TOKENS
    return ImplicitPrefixCache(model, min_tokens, 1, idle_ttl_seconds, "gemini")


CacheFactory = Callable[..., CacheModel]
CACHE_MODELS: Registry[CacheFactory] = Registry("cache model")
CACHE_MODELS.add("anthropic", anthropic_cache, "explicit cache_control breakpoints, 5m/1h TTL, 20-block lookback")
CACHE_MODELS.add("openai", openai_cache, "automatic prefix caching (GPT-5.6+: implicit breakpoint, charged writes)")
CACHE_MODELS.add("gemini", gemini_cache, "implicit prefix caching, Gemini 2.5 and newer")
CACHE_MODELS.add("none", NoCache, "caching off: every prompt token uncached")

#: Provider ids (genai-prices' among them) that name a cache family of another name.
PROVIDER_FAMILY = {"google": "gemini", "google-vertex": "gemini", "vertex": "gemini"}


def family_of(provider: str, model: str) -> str:
    """The cache family serving ``model`` at ``provider``: the model's maker wins (Claude on Vertex caches as
    Anthropic documents), then the provider id."""
    if provider == "none":
        return "none"
    name = _base_name(model)
    if name.startswith("claude"):
        return "anthropic"
    if re.match(r"(?:ft:)?(?:gpt-|chatgpt-|o\d|codex-)", name):
        return "openai"
    if name.startswith("gemini"):
        return "gemini"
    return PROVIDER_FAMILY.get(provider, provider)


def cache_model(provider: str, model: str, **options: Any) -> CacheModel:
    """A fresh cache for ``model`` served by ``provider`` (``"none"``: caching off).

    ``options`` go to the family's factory (``retention=`` for OpenAI, ``idle_ttl_seconds=`` for Gemini). An
    unknown provider raises :class:`~sim.core.errors.UnknownName` with the closest name.
    """
    family = family_of(provider, model)
    try:
        factory = CACHE_MODELS.get(family)
    except UnknownName:
        raise UnknownName("cache provider", provider, [*CACHE_MODELS.names(), *PROVIDER_FAMILY]) from None
    return factory(model, **options)
