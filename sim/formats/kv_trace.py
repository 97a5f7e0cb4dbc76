"""Importer of token-level traces of agent sessions (``--format kv-trace``): sizes and timing, no text.

The KV-cache benchmark suite ``callanjfox/kv-cache-tester`` publishes traces of real Claude Code sessions (its
``docs/trace_replay_tester.md`` describes them; ``../shared/recorded/FORMATS.md`` the sample). A trace is a JSON
object: ``id``, ``models``, ``block_size``, ``tool_tokens`` and ``system_tokens`` (the sizes of the tool definitions
and the system prompt), and ``requests``, each with ``t`` (when it was sent, seconds since the session began),
``type`` (``n``/``s``: without or with streaming), ``model``, ``in`` and ``out`` (the provider's count of its prompt
and its reply), ``hash_ids`` (an id per ``block_size`` tokens of the prompt: equal ids, equal content up to there),
``input_types``/``output_types`` (the kinds of content new in the prompt and in the reply), ``stop``, ``api_time``
(how long it took) and ``think_time`` (the client's delay before it); ``type: subagent`` is a nested session.

There is no text, so every message's content is a **placeholder** (:func:`placeholder`): a deterministic text,
labelled with the message's id, that counts exactly the tokens the trace gives it with the default tokenizer
(``cl100k_base``). Its words mean nothing: a policy that needs text (facts, paths, a summary's substance) has none
to work on, which ``meta["sizes_only"]`` says. The sizes:

- a ``system`` message of ``system_tokens`` opens the conversation, and one :class:`Tool` counts ``tool_tokens``
  (name, description and parameters); the first user message holds the rest of the first prompt;
- each reply is an ``assistant`` message carrying the recorded usage, ``Usage(input_tokens=in,
  output_tokens=out)`` (a trace has no cache split), with a ``thinking``, ``text`` and ``tool_call`` part as
  ``output_types`` (or ``stop: tool_use``) say, ``out`` split evenly among them (untyped: one text part);
- what a request added (its ``in`` less the previous ``in`` and ``out``) is a ``tool`` message answering the
  previous reply's call (one per reply: parallel calls cannot be told apart) and, after a reply without a call
  or beside the results when ``input_types`` has ``text``, a ``user`` message, sharing it evenly. Usage-anchored
  accounting (:mod:`sim.calibration.anchor`) then gives every request exactly its ``in``;
- a **recorded compaction** is a request sharing with the one before it no more than the system and tool blocks
  (plus :data:`PREFIX_SLACK_TOKENS`; without hashes, on the fall alone) while ``in`` falls by :data:`MIN_DROP` or
  more. The open call gets a result of no size (its content went into the summarising call, which a trace does
  not hold), and the prompt beyond the system and tools becomes one user message marked, as the Claude Code
  importer marks its compactions, ``meta["compact_summary"]`` and ``meta["compact_boundary"]`` (``pre_tokens``:
  the last prompt and reply before it; ``post_tokens``: the new prompt; ``trigger``: not recorded), so
  :func:`sim.calibration.fit.segments` cuts there. Other falls of ``in`` are listed in ``meta["prompt_drops"]``:
  the script keeps its history there, so a replay stays above the recording after one;
- a subagent is a conversation of its own, ``<parent id>/<agent_id>``, after its parent's, with ``meta["parent"]``;
  the parent's tool message answering the call that started it lists it in ``meta["subagents"]``;
- each reply's meta keeps ``shared_prefix_tokens`` (the prompt's leading blocks equal to the previous request's) and
  ``provable_prefix_tokens`` (the longest leading run of blocks some earlier request of the session began with: all
  a prompt cache could have read for it, since a cache reads only content it was sent; ``csim fidelity`` checks the
  cache model's reads against it);
- a request's new messages are stamped (``meta["timestamp"]``) at its ``t``, its reply at ``t + api_time`` (or the
  next request's ``t``, if sooner: ``meta["reply_ends_clipped"]`` counts them), on a clock from the Unix epoch (a
  trace has no wall-clock time; :func:`sim.core.clock.recorded_times` counts from the first stamp); a subagent's
  clock starts at its entry's ``t``. A document that does not parse is an error naming the request where it breaks
  off; lenient mode keeps the requests before it and lists the break as skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation, Message, Part, Role, Tool, Usage
from sim.core.errors import EncodingUnavailable, InvalidConfig
from sim.core.tokenizers import get_tokenizer
from sim.formats import FORMATS, ImportResult, Skipped, sniffer
from sim.formats._common import BadRecord, Issues, check, clip, decode_document, get, read_bytes, shown
from sim.formats._json_records import compact_head, document_lines
from sim.formats._surrogates import mend_surrogates

_EXPECTED = "a kv-cache-tester trace: a JSON object with 'block_size', 'system_tokens', 'tool_tokens', 'requests'"
_HINT = "a request is {t, type, in, out, hash_ids, ...}; a subagent {type: 'subagent', t, agent_id, requests}"
#: What a placeholder repeats: one cl100k_base token after a space or a ``]``, and four characters, so a
#: chars/4 estimate of a placeholder is its token count too.
FILLER = " pad"
TOKENIZER = "cl100k_base"
#: A compaction's prompt is at least this much smaller than the one before it. In the sample, the falls of ``in``
#: whose chain broke within the system and tool blocks (and the slack) go to 0.17-0.83 of the prompt before, or to
#: 0.93 and above (three, each after an idle gap of 25 minutes to 21 hours: a prompt rewritten, its history kept).
MIN_DROP = 0.15
#: How far past the system and tool blocks a compaction's shared prefix may reach: in the sample it reaches up to
#: 5,678 tokens past them (trace_0010: the start of the history, re-sent unchanged).
PREFIX_SLACK_TOKENS = 8192
#: A count (``in``, ``out``, the system and tool sizes) above this is refused: no model's window comes near it.
MAX_TOKENS = 10_000_000
#: The placeholder tokens one file may make (no numbers in it can exhaust memory): 34 times the sample's most (1.49M).
MAX_FILE_TOKENS = 50_000_000
#: A time (``t``, ``api_time``, ...) above this many seconds (31 years) is refused.
MAX_SECONDS = 1e9
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_REPLY_KINDS = ("thinking", "text", "tool_use")
_SUBAGENT_KEYS = ("subagent_type", "status", "duration_ms", "total_tokens", "tool_use_count")


# --- placeholders, and the records they are sized from ---------------------------------------------------


def _tokens(text: str) -> int | None:
    """Tokens of ``text`` by :data:`TOKENIZER`; None when that encoding is not installed (then no labels)."""
    try:
        return get_tokenizer(TOKENIZER).count(text)
    except EncodingUnavailable:
        return None


def placeholder(tokens: int, label: str = "") -> str:
    """A deterministic stand-in for ``tokens`` tokens of content: ``[label]`` then :data:`FILLER` repeated,
    counting exactly ``tokens`` by :data:`TOKENIZER` (the filler alone when the label would not fit).

    Example:
        >>> placeholder(3)
        ' pad pad pad'
        >>> placeholder(8, "r1 text")
        '[r1 text] pad pad pad pad'
    """
    if tokens <= 0:
        return ""
    head = f"[{label}]"
    n = _tokens(head) if label else None
    return head + FILLER * (tokens - n) if n is not None and n <= tokens else FILLER * tokens


def _arguments(tokens: int, label: str) -> str:
    """A tool call's arguments: a JSON object whose one string is a placeholder, counting ``tokens`` in all
    (``{}`` when even the smallest such object would be more)."""
    n = _tokens(json.dumps({"input": f"[{label}]{FILLER}"}))
    if n is None or tokens < n:
        return "{}"
    return json.dumps({"input": f"[{label}]{FILLER * (tokens - n + 1)}"})


def _split(total: int, ways: int) -> list[int]:
    """``total`` (at least 0) in ``ways`` whole shares as even as can be, the larger ones first."""
    q, r = divmod(max(0, total), ways)
    return [q + (1 if k < r else 0) for k in range(ways)]


@dataclass(frozen=True)
class _Request:
    """One request of a trace, checked; ``meta`` is what its reply's meta keeps of it."""

    index: int
    t: float
    tokens_in: int
    tokens_out: int
    hash_ids: tuple[int, ...] | None
    input_types: tuple[str, ...]
    output_types: tuple[str, ...]
    stop: str
    api_time: float | None
    meta: dict[str, Any]

    @property
    def makes_call(self) -> bool:
        """The reply asked for a tool: a ``tool_use`` block, or a ``tool_use`` stop whose block was not typed."""
        return "tool_use" in self.output_types or self.stop == "tool_use"


@dataclass(frozen=True)
class _Subagent:
    """A ``type: subagent`` entry: a nested session of the same shape, started at ``t``."""

    t: float
    agent_id: str
    raw: dict[str, Any]


def _count(raw: dict[str, Any], key: str, what: str, default: int | None = None) -> int:
    value: int = get(raw, key, int, what) if default is None else get(raw, key, int, what, default)
    if not 0 <= value <= MAX_TOKENS:
        raise BadRecord(f"{what} {key!r} should be from 0 to {MAX_TOKENS:,}, got {value}")
    return value


def _seconds(raw: dict[str, Any], key: str, what: str, required: bool = False) -> float | None:
    value = get(raw, key, (int, float), what) if required else get(raw, key, (int, float), what, None)
    if value is not None and not 0 <= value <= MAX_SECONDS:  # NaN and infinities fail this too
        raise BadRecord(f"{what} {key!r} should be from 0 to {MAX_SECONDS:.0e} seconds, got {shown(value)}")
    return None if value is None else float(value)


def _types(raw: dict[str, Any], key: str, what: str) -> tuple[str, ...]:
    return tuple(check(x, str, f"{what} {key}[{k}]") for k, x in enumerate(get(raw, key, list, what, [])))


def _entry(raw: Any, index: int, what: str) -> _Request | _Subagent:
    """One entry of a ``requests`` list, checked whole before anything is built from it."""
    check(raw, dict, what)
    kind = get(raw, "type", str, what)
    t = _seconds(raw, "t", what, required=True) or 0.0
    if kind == "subagent":
        get(raw, "requests", list, what)
        return _Subagent(t, get(raw, "agent_id", str, what), raw)
    ids = get(raw, "hash_ids", list, what, None)
    bad = next((x for x in ids if type(x) is not int), None) if ids is not None else None
    if bad is not None:
        raise BadRecord(f"{what} 'hash_ids' should hold integers, got {type(bad).__name__} {shown(bad)}")
    inputs, outputs = _types(raw, "input_types", what), _types(raw, "output_types", what)
    stop, api_time = get(raw, "stop", str, what, ""), _seconds(raw, "api_time", what)
    meta: dict[str, Any] = {"request": index, "model": get(raw, "model", str, what, None), "t": t}
    meta.update(api_time=api_time, think_time=_seconds(raw, "think_time", what), streaming=kind == "s", stop=stop)
    meta.update(input_types=list(inputs), output_types=list(outputs), ttft=_seconds(raw, "ttft", what))
    meta = {k: v for k, v in meta.items() if v is not None or k in ("api_time", "think_time")}
    hashes, tokens = None if ids is None else tuple(ids), (_count(raw, "in", what), _count(raw, "out", what))
    return _Request(index, t, *tokens, hashes, inputs, outputs, stop, api_time, meta)


def _shared_blocks(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """How many leading block ids ``a`` and ``b`` share (slice comparisons in a binary search)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[:mid] == b[:mid] else (lo, mid)
    return lo


class _Prefixes:
    """The block-id prefixes of a session's requests so far, as a trie: how long a prefix of a new request the hashes
    prove was sent before in the session, in time linear in the blocks (a cache can only read content it was sent)."""

    def __init__(self) -> None:
        self.root: dict[int, dict[Any, Any]] = {}

    def longest(self, ids: tuple[int, ...]) -> int:
        """How many leading blocks of ``ids`` some earlier request began with."""
        node, n = self.root, 0
        for x in ids:
            nxt = node.get(x)
            if nxt is None:
                break
            node, n = nxt, n + 1
        return n

    def add(self, ids: tuple[int, ...]) -> None:
        node = self.root
        for x in ids:
            node = node.setdefault(x, {})


# --- one session -------------------------------------------------------------------------------------------


@dataclass
class _Budget:
    """The placeholder tokens a file may still make (:data:`MAX_FILE_TOKENS`); past them the import stops."""

    issues: Issues
    left: int = MAX_FILE_TOKENS

    def take(self, tokens: int) -> None:
        self.left -= tokens
        if self.left < 0:
            problem = f"its sizes add up to more than {MAX_FILE_TOKENS:,} tokens of placeholders"
            raise self.issues.fatal(None, problem, "split the trace, or check its 'in' and 'out' counts")


@dataclass
class _Session:
    """A session's conversation being built, request by request; a subagent is a session of its own."""

    system_tokens: int
    tool_tokens: int
    block_size: int
    origin: float
    budget: _Budget
    messages: list[Message] = field(default_factory=list)
    prev: _Request | None = None
    open_call: Part | None = None
    spawned: list[str] = field(default_factory=list)  # subagents not yet named by a tool message
    subagents: list[str] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    drops: list[dict[str, Any]] = field(default_factory=list)
    clock: float = 0.0
    clipped: int = 0  # replies whose t + api_time passed the next request's t: stamped at that t instead
    held: int = 0  # requests whose t is before the previous one's: held at the previous time
    prefixes: _Prefixes = field(default_factory=_Prefixes)

    def add(self, req: _Request) -> None:
        """Append what ``req`` added to the prompt, then its reply."""
        prev, shared = self.prev, None
        if prev is None:
            if self.system_tokens:
                self._text("system", "system", self.system_tokens, req, "system prompt")
            first = req.tokens_in - self.system_tokens - self.tool_tokens
            self._text(f"r{req.index}.user", "user", first, req, input_types=list(req.input_types))
        else:
            self.held += req.t < prev.t
            if req.t < self.clock:  # the reply cannot have ended after the next request began
                last = self.messages[-1]
                self.clock, self.clipped = max(prev.t, req.t), self.clipped + 1
                self.messages[-1] = replace(last, meta={**last.meta, "timestamp": self._iso(self.clock)})
            if prev.hash_ids is not None and req.hash_ids is not None:
                shared = _shared_blocks(prev.hash_ids, req.hash_ids) * self.block_size
            fell = req.tokens_in <= (1 - MIN_DROP) * prev.tokens_in
            if fell and (shared is None or shared <= self.system_tokens + self.tool_tokens + PREFIX_SLACK_TOKENS):
                self._compaction(prev, req, shared)
            else:
                self._inputs(prev, req, shared)
        provable = None
        if req.hash_ids is not None and prev is not None:
            provable = self.prefixes.longest(req.hash_ids) * self.block_size
        if req.hash_ids is not None:
            self.prefixes.add(req.hash_ids)
        self._reply(req, shared, provable)
        self.prev = req

    def _iso(self, at: float) -> str:
        return (_EPOCH + timedelta(seconds=self.origin + at)).isoformat(timespec="microseconds")

    def _push(self, mid: str, role: Role, parts: tuple[Part, ...], at: float, usage: Usage | None, **meta: Any) -> None:
        """Append a message stamped at ``at`` seconds, or at the previous stamp if that is later."""
        self.clock = max(self.clock, at)
        meta["timestamp"] = self._iso(self.clock)
        self.messages.append(Message(mid, role, parts, usage=usage, meta=meta))

    def _text(self, mid: str, role: Role, tokens: int, req: _Request, kind: str = "text", **meta: Any) -> None:
        tokens = max(0, tokens)
        self.budget.take(tokens)
        part = Part("text", placeholder(tokens, f"{mid} {kind} {tokens} tokens"))
        self._push(mid, role, (part,), req.t, None, request=req.index, tokens=tokens, **meta)

    def _result(self, req: _Request, tokens: int, **meta: Any) -> None:
        call, mid = self.open_call, f"r{req.index}.tool"
        if call is None:
            return
        self.budget.take(tokens)
        text = placeholder(tokens, f"{mid} tool_result {tokens} tokens")
        if self.spawned:
            meta["subagents"], self.spawned = self.spawned, []
        part = Part("tool_result", text, call_id=call.call_id, name=call.name)
        self._push(mid, "tool", (part,), req.t, None, request=req.index, tokens=tokens, **meta)
        self.open_call = None

    def _compaction(self, prev: _Request, req: _Request, shared: int | None) -> None:
        self._result(req, 0, synthetic="compacted")  # answered before the summary: each segment is a valid script
        pre, post = prev.tokens_in + prev.tokens_out, req.tokens_in
        boundary = {"trigger": None, "pre_tokens": pre, "post_tokens": post, "shared_prefix_tokens": shared}
        self.compactions.append({"index": len(self.messages), "request": req.index, **boundary})
        rest = req.tokens_in - self.system_tokens - self.tool_tokens
        marks = {"compact_summary": True, "compact_boundary": boundary, "input_types": list(req.input_types)}
        self._text(f"r{req.index}.summary", "user", rest, req, "compaction summary", **marks)

    def _inputs(self, prev: _Request, req: _Request, shared: int | None) -> None:
        """The messages between two replies: results of the open call, a user message, or both."""
        if req.tokens_in < prev.tokens_in:
            drop = {"request": req.index, "before": prev.tokens_in, "after": req.tokens_in}
            self.drops.append({**drop, "idle_seconds": req.meta.get("think_time")})
        intact = shared is None or prev.hash_ids is None or shared >= (len(prev.hash_ids) - 1) * self.block_size
        types, calling = req.input_types, self.open_call is not None
        text = not calling or ("text" in types and (intact or "tool_result" not in types))
        sized = calling and ("tool_result" in types or not text)  # the result holds content the trace shows
        shares = _split(req.tokens_in - prev.tokens_in - prev.tokens_out, int(sized) + int(text))
        if sized:
            self._result(req, shares.pop(0))
        else:  # no result in the recording (an interrupted call): one of no size
            self._result(req, 0, synthetic="no-result")
        if text:
            self._text(f"r{req.index}.user", "user", shares[0], req, input_types=list(types))

    def _reply(self, req: _Request, shared: int | None, provable: int | None) -> None:
        mid = f"r{req.index}"
        kinds = [k for k in _REPLY_KINDS if k in req.output_types or (k == "tool_use" and req.makes_call)] or ["text"]
        parts: list[Part] = []
        self.budget.take(req.tokens_out)
        for kind, n in zip(kinds, _split(req.tokens_out, len(kinds)), strict=True):
            label = f"{mid} {kind} {n} tokens"
            if kind == "tool_use":
                parts.append(Part("tool_call", call_id=f"{mid}.call", name="tool", args=_arguments(n, label)))
            else:
                parts.append(Part("thinking" if kind == "thinking" else "text", placeholder(n, label)))
        end = req.t + (req.api_time or 0.0)
        usage = Usage(req.tokens_in, req.tokens_out)
        extra = {} if provable is None else {"provable_prefix_tokens": min(provable, req.tokens_in)}
        self._push(mid, "assistant", tuple(parts), end, usage, **req.meta, shared_prefix_tokens=shared, **extra)
        self.open_call = next((p for p in parts if p.kind == "tool_call"), None)

    def tools(self) -> tuple[Tool, ...]:
        """One tool whose name, description and parameters count ``tool_tokens``."""
        if not self.tool_tokens:
            return ()
        rest = self.tool_tokens - (_tokens("tool_definitions") or 0) - (_tokens("{}") or 0)
        return (Tool("tool_definitions", placeholder(rest, f"tool definitions {self.tool_tokens} tokens"), "{}"),)


# --- the document ------------------------------------------------------------------------------------------


def _skip(text: str, pos: int, more: str = "") -> int:
    """The first position from ``pos`` on holding neither whitespace nor one of ``more``."""
    while pos < len(text) and (text[pos] in " \t\r\n" or text[pos] in more):
        pos += 1
    return pos


def _salvage(text: str, stop: int) -> tuple[dict[str, Any], str]:
    """What of a document failing to parse at ``stop`` comes before it: the top-level members and the
    ``requests`` ending before it; and where it fails ("request 3", "the header", a member after the requests)."""
    dec, doc = json.JSONDecoder(), dict[str, Any]()
    where, pos = "the header", _skip(text, 0) + 1
    if not text.startswith("{", pos - 1):
        return doc, where
    try:
        while not text.startswith("}", pos := _skip(text, pos, ",")):
            key, pos = dec.raw_decode(text, pos)
            if not text.startswith(":", pos := _skip(text, pos)):
                return doc, where
            pos = _skip(text, pos + 1)
            if key != "requests" or not text.startswith("[", pos):
                where = "the header" if "requests" not in doc else f"member {key!r}"
                value, pos = dec.raw_decode(text, pos)
                if pos > stop:
                    return doc, where
                doc[str(key)] = value
                continue
            items: list[Any] = []
            doc["requests"], pos = items, pos + 1
            while not text.startswith("]", pos := _skip(text, pos, ",")):
                where = f"request {len(items)}"
                value, pos = dec.raw_decode(text, pos)
                if pos > stop:
                    return doc, where
                items.append(value)
            pos += 1
    except (json.JSONDecodeError, IndexError, RecursionError, ValueError):
        return doc, where
    return doc, "what follows the document"


def _document(path: Path, issues: Issues) -> tuple[dict[str, Any], list[int]]:
    """The trace as a dict, and the line each request starts on (1 where unknown: a one-line file)."""
    text = decode_document(read_bytes(path, _EXPECTED), issues)
    salvaged = False
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        doc, where = _salvage(text, exc.pos)
        problem = f"invalid JSON at column {exc.colno} ({exc.msg}): the document breaks off in {where}"
        if not issues.lenient or "requests" not in doc:
            hint = "the file may be truncated; --lenient keeps the requests before the break"
            raise issues.fatal(exc.lineno, problem, hint) from None
        issues.skipped.append(Skipped(str(path), exc.lineno, clip(f"{problem}; the requests before it are kept")))
        salvaged = True
    except (RecursionError, ValueError) as exc:  # too deep, or an integer past the interpreter's digit limit
        raise issues.fatal(None, f"invalid JSON: {clip(str(exc), 80)}", _EXPECTED) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("requests"), list):
        shape = type(doc).__name__ if not isinstance(doc, dict) else "an object without a 'requests' list"
        raise issues.fatal(1, f"the document is {shape}", _EXPECTED)
    doc = mend_surrogates(doc, issues, None, text)
    starts = [] if salvaged or "\n" not in text.strip() else document_lines(text).lists.get("requests", [])
    return doc, [starts[k] if k < len(starts) else 1 for k in range(len(doc["requests"]))]


@dataclass
class _Reader:
    """Reads sessions into ``out``, each followed by its subagents', sending problems to ``issues``."""

    issues: Issues
    out: list[Conversation]
    budget: _Budget

    def header(self, raw: dict[str, Any], key: str, kinds: type, what: str, default: Any) -> Any:
        """A session's field; a bad one is an error (strict) or its default, listed as skipped (lenient)."""
        value = default
        with self.issues.record(None, what):
            value = _count(raw, key, what, default) if kinds is int else get(raw, key, kinds, what, default)
            if key == "block_size" and value < 1:
                raise BadRecord(f"{what} 'block_size' should be at least 1, got {value}")
        return value

    def session(
        self, raw: dict[str, Any], cid: str, what: str, lines: list[int], origin: float, meta: dict[str, Any]
    ) -> None:
        """One session (the file's, or a subagent's): its conversation, then its subagents' conversations."""
        h = self.header
        tokens = h(raw, "system_tokens", int, what, 0), h(raw, "tool_tokens", int, what, 0)
        session = _Session(*tokens, h(raw, "block_size", int, what, 64), origin, self.budget)
        self.budget.take(session.tool_tokens)
        models = [m for m in h(raw, "models", list, what, []) if isinstance(m, str)]
        children = _Reader(self.issues, [], self.budget)
        for i, entry in enumerate(raw["requests"]):
            rwhat = f"{'' if what == 'the document' else what + ' '}request {i}"
            parsed: _Request | _Subagent | None = None
            with self.issues.record(lines[i], rwhat, _HINT):
                parsed = _entry(entry, i, rwhat)
                if isinstance(parsed, _Subagent) and f"{cid}/{parsed.agent_id}" in session.subagents:
                    raise BadRecord(f"{rwhat}: agent_id {parsed.agent_id!r} appears twice in this session")
            if isinstance(parsed, _Request):
                session.add(parsed)
            elif isinstance(parsed, _Subagent):
                sid = f"{cid}/{parsed.agent_id}"
                sub = {"subagent": True, "agent_id": parsed.agent_id, "parent": cid, "parent_request": i}
                sub.update(t=parsed.t, trace_id=meta.get("trace_id"))
                sub.update((k, parsed.raw[k]) for k in _SUBAGENT_KEYS if k in parsed.raw)
                nested = [lines[i]] * len(parsed.raw["requests"])
                sub_what = f"subagent {parsed.agent_id!r} (request {i})"
                children.session(parsed.raw, sid, sub_what, nested, origin + parsed.t, sub)
                session.spawned.append(sid)
                session.subagents.append(sid)
        if session.messages:
            self._conversation(session, cid, what, models, meta)
        else:
            self.issues.problem(lines[0] if lines else None, f"{what}: no request to import", _HINT)
        self.out.extend(children.out)

    def _conversation(self, s: _Session, cid: str, what: str, models: list[str], meta: dict[str, Any]) -> None:
        models += sorted({str(m.meta["model"]) for m in s.messages if m.meta.get("model")} - set(models))
        info: dict[str, Any] = {"source": "kv-trace", "sizes_only": True, "subagent": False, "models": models}
        info.update(system_tokens=s.system_tokens, tool_tokens=s.tool_tokens, block_size=s.block_size)
        info.update(requests=sum(m.role == "assistant" for m in s.messages), compactions=s.compactions)
        info.update(prompt_drops=s.drops, subagents=s.subagents, **meta)
        if any("claude" in m.lower() for m in models):
            info["provider"] = "anthropic"
        info.update({k: v for k, v in (("reply_ends_clipped", s.clipped), ("timestamps_held", s.held)) if v})
        try:
            self.out.append(Conversation(cid, tuple(s.messages), (), s.tools(), info))
        except InvalidConfig as exc:  # not expected (the calls pair by construction); reported, not lost
            self.issues.problem(None, f"{what}: {exc}")


@FORMATS.register("kv-trace", "token-level traces (kv-cache-tester JSON): sizes, timing, block hashes; no text")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read one trace: the session's conversation, then one per subagent (see the module docstring)."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    doc, lines = _document(path, issues)
    cid: str = doc["id"] if isinstance(doc.get("id"), str) and doc["id"] else path.stem
    meta: dict[str, Any] = {"trace_id": cid, **{k: doc[k] for k in ("hash_id_scope", "totals") if k in doc}}
    _Reader(issues, result.conversations, _Budget(issues)).session(doc, cid, "the document", lines, 0.0, meta)
    return result


@sniffer("kv-trace")
def sniff(path: Path, head: bytes) -> bool:
    """A JSON object with a trace's keys: ``block_size``, a ``requests`` list, and the system or tool sizes."""
    c = compact_head(head)
    sizes = b'"system_tokens":' in c or b'"tool_tokens":' in c
    return c.startswith(b"{") and b'"block_size":' in c and b'"requests":[' in c and sizes
