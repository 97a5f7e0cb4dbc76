"""The calibration's features: each recorded request with usage, as the engine counts its prompt.

For every recorded request, the simulator's side is the prompt *as the engine counts it*: the conversation is
replayed through the engine itself (policy ``none``, no status line, a window too large to overflow) and each agent
request's ``context_tokens`` and ``messages_in_view`` are read from the run's rows. There is no second counting
scheme: the features are exactly the numbers the engine later calibrates (``RunConfig.calibration``). The model
fitted on them, and why, is :mod:`sim.calibration.fit`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from policies import make_policy
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Message, Part
from sim.core.counting import (
    REPLAY_WINDOW,
    Calibration,
    agent_of,
    format_provider,
    opens_with_summary,
    provider_of,
    segments,
)
from sim.core.errors import CsimError
from sim.core.kinds import message_kinds
from sim.core.model import ModelConfig
from sim.core.tokenizers import get_tokenizer
from sim.core.view import call_id_tokens
from sim.replay.anchoring import reattached
from sim.replay.counts import request_counts
from sim.replay.engine import run


@dataclass(frozen=True)
class Sample:
    """One recorded request: the engine's count of its prompt, and the provider's."""

    conversation: str
    segment: int
    turn: int
    message_id: str
    tokens: int  # the engine's context_tokens, uncalibrated
    messages: int  # messages_in_view
    summarised: bool  # the prompt holds a compaction summary
    chars: int  # characters of the messages before the request (the baseline's feature)
    recorded: int  # provider prompt tokens
    provider: str
    format: str
    agent: str
    kinds: tuple[int, int, int] = (0, 0, 0)  # the engine's tokens of the messages before it, by kind
    #: what the client re-attaches after the compaction that opened this segment, estimated from the history
    #: before it (Claude Code's files): engine tokens by kind, and how many messages
    reattached: tuple[int, int, int] = (0, 0, 0)
    reattached_messages: int = 0  # (what Claude Code re-attaches is text: no tool calls)
    id_tokens: int = 0  # tokens of the call ids of the tool calls and results in the messages before it

    @property
    def head(self) -> int:
        """The engine's tokens outside the messages (framing and tool definitions)."""
        return self.tokens - sum(self.kinds)


def counting_config(
    tokenizer: str = "cl100k_base",
    calibration: Calibration | None = None,
    cache_ttl: str = "policy",
    anchors: Any = None,
    cache: str = "provider",
) -> RunConfig:
    """The run config of :func:`replay_counts`: a window no recorded request overflows, no status line."""
    return RunConfig(
        model=ModelConfig(context_window=REPLAY_WINDOW),
        run_status="off",
        tokenizer=tokenizer,
        calibration=calibration,
        cache=cache,  # type: ignore[arg-type]
        cache_ttl=cache_ttl,  # type: ignore[arg-type]
        accounting="counted",  # what the calibration is fitted to and applied on, unless anchors are given
        anchors=anchors,
    )


def with_probe(conv: Conversation) -> Conversation:
    """``conv`` with one synthetic assistant reply appended: its request holds the whole conversation (the prompt
    at the moment of a compaction that follows it)."""
    probe = Message(f"{conv.id}~probe", "assistant", (Part("text", "(probe)"),))
    return Conversation(conv.id, (*conv.messages, probe), (), conv.tools, conv.meta)


def replay_counts(
    conv: Conversation,
    tokenizer: str = "cl100k_base",
    calibration: Calibration | None = None,
    probe_end: bool = False,
    cache_ttl: str = "policy",
    anchors: Any = None,
    cache: str = "provider",
    counts_only: bool = False,
) -> list[dict[str, Any]]:
    """The engine's agent-request rows for ``conv`` replayed under ``none`` (one per assistant message).

    ``probe_end`` appends one synthetic assistant reply so the last row is a request holding the whole
    conversation (the prompt at the moment of a compaction that follows it). ``cache_ttl`` is the run's
    (:class:`~sim.core.config.RunConfig`): the TTL the recorded client wrote its cache entries with.
    ``anchors`` (:class:`sim.core.anchors.Anchors`): count the recorded messages as the provider did. ``cache``
    ``off`` leaves the prompt cache out (what the fit reads, the size of each prompt, is the same either way).
    ``counts_only``: rows of only ``turn``, ``context_tokens``, ``messages_in_view`` and ``error``, from
    :func:`sim.replay.counts.request_counts` (the same counts without billing, timing, the cache and the log).
    """
    if probe_end:
        conv = with_probe(conv)
    config = counting_config(tokenizer, calibration, cache_ttl, anchors, cache)
    if counts_only:
        rows, finish = request_counts(conv, config), "completed"
    else:
        result = run(make_policy("none"), conv, config)
        rows = [r for r in result.rows if r["request_kind"] == "agent"]
        finish = result.summary["finish_reason"]
    replies = [m for m in conv.messages if m.role == "assistant"]
    bad = [r for r in rows if r["error"]]
    if bad or len(rows) != len(replies):
        why = bad[0]["error"] if bad else f"finish reason {finish}"
        raise CsimError(
            f"conversation {conv.id!r}: the replay made {len(rows)} agent requests for "
            f"{len(replies)} assistant messages ({why})"
        )
    return rows


def samples(conversations: Iterable[Conversation], fmt: str, tokenizer: str = "cl100k_base") -> list[Sample]:
    """Every recorded request with usage, with the engine's features; reset at recorded compactions."""
    count = get_tokenizer(tokenizer).count
    out: list[Sample] = []
    for conv in conversations:
        provider = provider_of(conv, format_provider(fmt))
        agent = agent_of(conv)
        session, chain = _session_of(conv)
        start = 0
        for k, seg in enumerate(segments(conv)):
            history, start = conv.messages[:start], start + len(seg.messages)
            if not any(m.role == "assistant" and m.usage for m in seg.messages):
                continue
            rows = iter(replay_counts(seg, tokenizer, cache="off", counts_only=True))
            summarised = opens_with_summary(seg)
            back = reattached(history, fmt) if k else ()
            back_kinds = _sum_kinds(back, count)
            chars = ids = prose = code = js = 0
            for m in seg.messages:
                if m.role == "assistant":
                    row = next(rows)
                    usage = m.usage
                    if usage is not None and usage.prompt_tokens > 0 and not m.meta.get("api_id_repeated"):
                        out.append(
                            Sample(
                                session,
                                k if chain is None else chain,
                                row["turn"],
                                m.id,
                                row["context_tokens"],
                                row["messages_in_view"],
                                summarised,
                                chars,
                                usage.prompt_tokens,
                                provider,
                                fmt,
                                agent,
                                (prose, code, js),
                                back_kinds,
                                len(back),
                                ids,
                            )
                        )
                chars += m.chars
                ids += call_id_tokens(m, count)
                p, c, j = message_kinds(m, count)
                prose, code, js = prose + p, code + c, js + j
    return out


def _session_of(conv: Conversation) -> tuple[str, int | None]:
    """The session a conversation's requests belong to, and the segment they fall in when it is not the
    conversation's own: a cassette's interactions are one conversation each, its file the session, and those of one
    chain whose requests show all they hold as text (:mod:`sim.formats.vcr_cassette`) one segment, anchored on
    the chain's first; any other interaction a segment of its own."""
    session, chain = conv.meta.get("session"), conv.meta.get("chain", conv.meta.get("interaction"))
    if not isinstance(session, str) or not isinstance(chain, int):
        return conv.id, None
    return session, chain


def _sum_kinds(messages: Sequence[Message], count: Callable[[str], int]) -> tuple[int, int, int]:
    prose = code = js = 0
    for m in messages:
        p, c, j = message_kinds(m, count)
        prose, code, js = prose + p, code + c, js + j
    return prose, code, js
