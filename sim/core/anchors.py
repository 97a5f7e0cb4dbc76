"""Usage-anchored accounting: each recorded message's size as the provider counted it.

A recording with provider usage has had every prompt counted already. The request answered by reply ``r``
holds everything before ``r``; so the prompt of one request minus the prompt of the one before it is the
provider's count of what was appended between them: the earlier reply (now in the history) and the user and
tool messages after it. :func:`anchor` shares each such difference among those messages in proportion to the
calibration's estimate of each (so a long tool result takes most of it, and parallel results split it), and
derives the session's fixed overhead (the system prompt and tool schemas the transcript does not hold) from its
first request: its prompt minus the estimate of the messages before it.

What the provider never counted is estimated with the calibration (``fixed + per_message x messages +
per_call_id_token x call-id tokens + scale x tokens``, per message its ``scale``, ``per_message`` and
``per_call_id_token`` for the ids of the tool calls and results it holds): messages after the last recorded
request, messages between two requests whose prompts did not grow (a recording that restarted, stripped content,
or compacted), and, in the engine, every text the simulator creates (summaries, placeholders, injected messages,
truncation envelopes, the status line). :attr:`Anchors.estimated` says how many messages were estimated.

Streamed duplicates are one message already (the importer merges records of one response id); a reply whose
response id reappears after a user message (``api_id_repeated``) repeats an earlier usage and anchors nothing.
Requests without usage are gaps: the difference across the gap covers every message in it. After a recorded
compaction (a later segment, :func:`sim.core.counting.segments`) the prompt starts over from the summary, so
each segment is anchored on its own. The overhead is the first segment's; each later segment's own (its first
request's prompt minus the estimate of the messages before it) is in :attr:`Anchors.segment_overheads`, for a
replay of that segment alone (``csim fidelity``), and :meth:`Anchors.estimated_first` is what the first request
of a later segment comes to when its overhead is estimated instead (the first segment's plus the calibration's
``after_compaction``): the figure that says how well what a compaction leaves is estimated.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from sim.core.conversation import Message
from sim.core.counting import Coefficients
from sim.core.kinds import Kind
from sim.core.model import MESSAGE_OVERHEAD


@dataclass(frozen=True)
class Anchors:
    """Provider-counted sizes of a recording's messages, the prompt's fixed overhead, and how to estimate the rest.

    Attributes:
        overhead: provider tokens of each prompt outside its messages (system prompt, tools, framing).
        sizes: message id -> provider tokens of that message, for the messages the usage covers.
        coefficients: the calibration that estimates everything else.
        estimated: recorded messages sized by the calibration (no usage covered them).
        conversation: the recording's id (the anchors belong to it).
    """

    overhead: int
    sizes: Mapping[str, int] = field(default_factory=dict)
    coefficients: Coefficients = field(default_factory=lambda: Coefficients(0.0, 0.0, 1.0))
    estimated: int = 0
    conversation: str = ""
    #: per segment: (its overhead, or None without usage; the estimate of its messages before its first request)
    segment_overheads: tuple[tuple[int | None, int], ...] = ()
    #: message id -> the calibration's estimate, for the recorded messages no usage covered
    estimated_sizes: Mapping[str, int] = field(default_factory=dict)
    #: per segment: the estimate of what the client re-attached after the compaction that opened it (0: none)
    reattached: tuple[int, ...] = ()

    def for_segment(self, k: int) -> Anchors:
        """These anchors with segment ``k``'s own overhead, to replay that segment alone."""
        own = self.segment_overheads[k][0] if k < len(self.segment_overheads) else None
        return replace(self, overhead=self.overhead if own is None else own)

    def estimated_first(self, k: int) -> int | None:
        """The first request of segment ``k`` with its overhead estimated: the first segment's overhead, the
        calibration's ``after_compaction`` for a later segment, and the estimate of the messages before it."""
        if k >= len(self.segment_overheads) or self.segment_overheads[k][0] is None:
            return None
        after = self.coefficients.after_compaction if k > 0 else 0.0
        back = self.reattached[k] if k < len(self.reattached) else 0
        return math.floor(self.overhead + after + back + self.segment_overheads[k][1] + 0.5)

    def estimate(self, raw_tokens: int, id_tokens: int = 0) -> int:
        """The provider's count of one message the engine counts as ``raw_tokens`` (framing included) whose tool
        calls and results carry ids of ``id_tokens`` tokens (:func:`sim.core.view.call_id_tokens`)."""
        c = self.coefficients
        return max(0, math.floor(c.scale * raw_tokens + c.per_message + c.per_call_id_token * id_tokens + 0.5))

    def scale(self, raw_tokens: int, kind: Kind | None = None) -> int:
        """The provider's count of a piece of text (no message of its own) the engine counts as ``raw_tokens``,
        at the ratio of its ``kind`` when given (:mod:`sim.core.kinds`)."""
        ratio = self.coefficients.scale if kind is None else self.coefficients.ratio(kind)
        return max(0, math.floor(ratio * raw_tokens + 0.5))

    def estimate_text(self, text_tokens: int, kind: Kind) -> int:
        """The provider's count of a message of its own holding a text of ``kind`` the engine counts as
        ``text_tokens`` (its framing, :data:`~sim.replay.model.MESSAGE_OVERHEAD`, counted as prose)."""
        c = self.coefficients
        x = c.ratio(kind) * text_tokens + c.ratio("prose") * MESSAGE_OVERHEAD + c.per_message
        return max(0, math.floor(x + 0.5))

    def message_tokens(self, m: Message, raw_tokens: int, id_tokens: int = 0) -> int:
        """``m``'s provider size: anchored when the usage covered it, else estimated (``raw_tokens`` and
        ``id_tokens`` as :meth:`estimate` takes them)."""
        size = self.sizes.get(m.id)
        return self.estimate(raw_tokens, id_tokens) if size is None else size


def anchor(
    segments: Sequence[Sequence[Message]],
    raw_tokens: Callable[[Message], int],
    coefficients: Coefficients,
    cid: str = "",
    id_tokens: Callable[[Message], int] = lambda m: 0,
) -> Anchors:
    """Anchors for a recording cut into ``segments`` (see the module docstring); ``raw_tokens`` is the engine's
    count of a message, framing included, and ``id_tokens`` its count of the message's call ids (for a
    calibration's ``per_call_id_token``; none by default)."""
    sizes: dict[str, int] = {}
    estimated = 0
    guessed: dict[str, int] = {}
    overhead: int | None = None
    per_segment: list[tuple[int | None, int]] = []
    probe = Anchors(0, {}, coefficients)
    for seg in segments:
        est = [probe.estimate(raw_tokens(m), id_tokens(m)) for m in seg]
        anchors = [
            (i, m.usage.prompt_tokens)
            for i, m in enumerate(seg)
            if m.role == "assistant"
            and m.usage is not None
            and m.usage.prompt_tokens > 0
            and not m.meta.get("api_id_repeated")
        ]
        if not anchors:
            estimated += len(seg)
            per_segment.append((None, 0))
            continue
        first, prompt = anchors[0]
        own = max(0, prompt - sum(est[:first]))
        per_segment.append((own, sum(est[:first])))
        if overhead is None:
            overhead = own
        estimated += first + len(seg) - anchors[-1][0]  # before the first request, and from the last reply on
        for (a, pa), (b, pb) in zip(anchors, anchors[1:], strict=False):
            share = _share(pb - pa, est[a:b])
            if share is None:
                estimated += b - a
                continue
            for m, n in zip(seg[a:b], share, strict=True):
                sizes[m.id] = n
    for seg in segments:
        guessed.update((m.id, probe.estimate(raw_tokens(m), id_tokens(m))) for m in seg if m.id not in sizes)
    return Anchors(overhead or 0, sizes, coefficients, estimated, cid, tuple(per_segment), guessed)


def _share(total: int, weights: Sequence[int]) -> list[int] | None:
    """``total`` split in proportion to ``weights`` in whole tokens that add up to it exactly (largest
    remainders, ties to the earlier message); None when there is nothing to split or nothing grew."""
    whole = sum(weights)
    if total <= 0 or whole <= 0:
        return None
    exact = [total * w / whole for w in weights]
    out = [math.floor(x) for x in exact]
    left = total - sum(out)
    for i in sorted(range(len(out)), key=lambda k: (out[k] - exact[k], k))[:left]:
        out[i] += 1
    return out


#: Without a calibration, what the simulator writes is counted as the engine counts it.
IDENTITY = Coefficients(0.0, 0.0, 1.0)
