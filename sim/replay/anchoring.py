"""Anchors for a recording: its messages at the sizes its recorded usage gives them (:mod:`sim.core.anchors` says
how), measured with the run's own counting (:class:`sim.replay.measure.Counted`), and what the recorded client
re-attached after each of its compactions.

Claude Code re-attaches the files it read most recently after it compacts (read back from disk; the newest
content the transcript shows stands in for them, :func:`policies.claude_code.reattached_files`); the other
recorded formats show what came back in the transcript itself, so nothing is estimated for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from policies.claude_code import ClaudeCodeConfig, reattached_files
from sim.core.anchors import IDENTITY, Anchors, anchor
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Message, Part
from sim.core.counting import Calibration, segments
from sim.core.kinds import KINDS, message_kinds
from sim.core.tokenizers import CountingTokenizer, get_tokenizer, memoised
from sim.core.view import call_id_tokens
from sim.replay.measure import Counted


def reattached(history: Sequence[Message], fmt: str) -> tuple[Message, ...]:
    """What the recorded client re-attached after compacting ``history``, as messages the engine can count:
    Claude Code's recently used files; nothing for the other formats, whose recordings show what came back."""
    if fmt != "claude-code" or not history:
        return ()
    files = reattached_files(history, 0, ClaudeCodeConfig())
    return tuple(Message(f"~reattached{i}", "user", (Part("text", f.text),)) for i, f in enumerate(files))


def anchors_for(conv: Conversation, calibration: Calibration | None, tokenizer: str | None = None) -> Anchors:
    """:func:`sim.core.anchors.anchor` for a recording, its messages counted with the calibration's tokenizer (or
    ``tokenizer``); without a calibration the rest is counted, not estimated."""
    tok = get_tokenizer(tokenizer or (calibration.tokenizer if calibration is not None else "cl100k_base"))
    counted = Counted(tok, 0)
    parts = [seg.messages for seg in segments(conv)]
    coefficients = calibration.coefficients if calibration is not None else IDENTITY
    anchors = anchor(parts, counted.raw_tokens, coefficients, conv.id, lambda m: call_id_tokens(m, tok.count))
    # what the client re-attached after each recorded compaction, estimated from the history before it
    source, start = str(conv.meta.get("source", "")), 0
    ratios = [coefficients.ratio(kind) for kind in KINDS]
    back = []
    for k, seg in enumerate(parts):
        came_back = reattached(conv.messages[:start], source) if k else ()
        back.append(
            sum(
                math.floor(sum(r * n for r, n in zip(ratios, message_kinds(m, tok.count), strict=True)) + 0.5)
                + math.floor(coefficients.per_message + 0.5)
                for m in came_back
            )
        )
        start += len(seg)
    return replace(anchors, reattached=tuple(back))


def run_anchors(conversation: Conversation, config: RunConfig, tok: CountingTokenizer) -> Anchors | None:
    """The anchors a run over ``conversation`` uses: the config's own, else, for a recording with usage under
    ``accounting="anchored"``, derived once per conversation, tokenizer and calibration in a worker (memoised in
    ``tok``); None for a conversation without usage (a synthetic scenario) or a counted run."""
    if config.anchors is not None:
        return config.anchors
    if config.accounting != "anchored" or not any(m.usage for m in conversation.messages):
        return None
    cal = config.calibration
    key = ("anchors", config.tokenizer, cal)
    return memoised(tok.derived, conversation, key, lambda c: anchors_for(c, cal, config.tokenizer))


__all__ = ["anchors_for", "reattached", "run_anchors"]
