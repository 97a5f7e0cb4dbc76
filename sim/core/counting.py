"""How a provider counts a prompt, as values: the fitted coefficients that map the engine's count to the
provider's (:class:`Coefficients`, :class:`Calibration` with its held-out errors), and how a recording splits at
its recorded compactions into segments that are counted on their own (:func:`segments`).

The model and why it is fitted as it is are :mod:`sim.calibration.fit`'s docstring; usage-anchored sizes are
:mod:`sim.core.anchors`. Everything here is a value or a pure function of a conversation, so the engine, the
policies and the calibration all read it without depending on each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from sim.core.conversation import Conversation
from sim.core.errors import CsimError, InvalidConfig
from sim.core.kinds import KINDS, Kind

Split = Literal["conversation", "alternate"]


#: What the provider frames beyond the engine's own count: each message, or the tool calls' and results' ids
#: (:func:`fit`).
Framing = Literal["message", "call_id"]


SPLITS = ("conversation", "alternate")


#: The engine replays recordings for calibration with this window: large enough that no recorded prompt
#: is ever rejected, so every recorded request gets its feature row.
REPLAY_WINDOW = 1_000_000_000


@dataclass(frozen=True)
class Coefficients:
    """The fitted model; see the module docstring. ``kind_scales``: provider tokens per engine token of prose,
    code and JSON (:mod:`sim.core.kinds`), fitted where conversations have two or more requests; ``scale``
    is then their mean over the fitted content, for a prompt whose mix is not known."""

    fixed: float
    per_message: float
    scale: float
    after_compaction: float = 0.0
    kind_scales: tuple[float, float, float] | None = None
    per_call_id_token: float = 0.0

    def ratio(self, kind: Kind) -> float:
        """Provider tokens per engine token of text of ``kind``."""
        return self.scale if self.kind_scales is None else self.kind_scales[KINDS.index(kind)]


@dataclass(frozen=True)
class HeldOut:
    """Held-out relative errors (fractions) of the calibrated model and of the chars baseline.

    ``anchored`` (conversations with two or more requests): each request is predicted from the first request
    of its segment plus the estimate of what was appended since, so ``median`` and ``p90`` measure the
    estimated text alone, as usage-anchored accounting uses it; ``one_ratio_*`` is the same with one ratio for
    all kinds, and the baseline is anchored too. ``absolute_*``: the whole prompt, ``fixed`` and
    ``after_compaction`` included, as a run that counts everything reports it. Without anchors (every
    conversation holds one request) ``median`` and ``p90`` are the absolute ones.
    """

    split: str
    n_fit: int
    n_held_out: int
    median: float
    p90: float
    baseline_median: float
    baseline_p90: float
    anchored: bool = False
    one_ratio_median: float | None = None
    one_ratio_p90: float | None = None
    absolute_median: float | None = None
    absolute_p90: float | None = None


@dataclass(frozen=True)
class Calibration:
    """A fitted calibration for one (provider, format, agent); part of ``RunConfig`` when a run uses it."""

    provider: str
    format: str
    tokenizer: str
    coefficients: Coefficients
    n: int
    errors: HeldOut
    fitted_on: str
    checksum: str
    agent: str = "main"

    def __post_init__(self) -> None:
        c = self.coefficients
        kinds = c.kind_scales or ()
        numbers = (c.fixed, c.per_message, c.per_call_id_token, c.scale, c.after_compaction, *kinds)
        if not all(math.isfinite(x) for x in numbers):
            raise InvalidConfig(f"calibration {self.key}: coefficients must be finite numbers, got {c}")
        if c.scale <= 0 or any(x <= 0 for x in kinds) or len(kinds) not in (0, len(KINDS)):
            raise InvalidConfig(
                f"calibration {self.key}: scale {c.scale!r} and the kind scales {c.kind_scales!r} (prose, code, "
                "JSON) must be positive"
            )

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.format}/{self.agent}"

    def apply(self, tokens: int, messages: int, summarised: bool = False, id_tokens: int = 0) -> int:
        """The provider's count predicted from the engine's ``tokens``, ``messages`` and ``id_tokens`` (the tokens
        of its tool calls' and results' ids, :func:`sim.core.view.call_id_tokens`) of one request."""
        c = self.coefficients
        x = c.fixed + c.per_message * messages + c.per_call_id_token * id_tokens + c.scale * tokens
        x += c.after_compaction if summarised else 0.0
        return max(0, math.floor(x + 0.5))


def opens_with_summary(conv: Conversation) -> bool:
    """The conversation starts from a compaction summary (a segment after a recorded compaction)."""
    return any(m.meta.get("compact_summary") or "compact_boundary" in m.meta for m in conv.messages[:2])


def compaction_cuts(conv: Conversation) -> list[int]:
    """The indices of the messages a recorded compaction opens a segment with (``meta["compact_boundary"]``)."""
    return [i for i, m in enumerate(conv.messages) if i > 0 and "compact_boundary" in m.meta]


def stand_ins(conv: Conversation) -> frozenset[int]:
    """The messages a replay of the whole of ``conv`` leaves out: the recorded client's own compaction results.

    Those are the summaries (``meta["compact_summary"]``) the importer found as a recorded compaction, at a
    ``compact_boundary`` (:func:`compaction_cuts`: Claude Code's summary; a token-level trace's placeholder for
    everything its client sent after the system prompt and tools, 11K to 108K tokens on the shared sample) or listed
    in ``meta["compactions"]`` (Codex's ``compacted`` record), with history before them. A replay compacts as its
    policy does: sent, such a result would sit on top of the history it replaced, and every policy would keep what
    the client's summary kept. One a conversation opens with (after its system prompt at most) stays: a segment that
    ``csim fidelity`` or the calibration replays from a recorded compaction starts there. So does a Responses
    request body's compaction item, which follows the user messages that compaction kept, not what it replaced."""
    listed = conv.meta.get("compactions")
    at = set(compaction_cuts(conv))
    if isinstance(listed, list):
        at.update(c["index"] for c in listed if isinstance(c, dict) and isinstance(c.get("index"), int))
    msgs = conv.messages
    first = next((i for i, m in enumerate(msgs) if m.role != "system"), len(msgs))  # history starts here
    return frozenset(i for i in at if first < i < len(msgs) and msgs[i].meta.get("compact_summary"))


def segments(conv: Conversation) -> list[Conversation]:
    """The conversation cut at its recorded compactions; each later segment starts with the summary message.

    The message after a ``compact_boundary`` carries ``meta["compact_boundary"]`` (the Claude Code
    importer marks it); the provider's prompt after a compaction holds that message and what follows,
    not the history before it, so each segment is replayed on its own.
    """
    bounds = [0, *compaction_cuts(conv), len(conv.messages)]
    out = []
    for k, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)):
        if a == b:
            continue
        msgs = conv.messages[a:b]
        try:
            out.append(
                Conversation(
                    f"{conv.id}#{k}" if len(bounds) > 2 else conv.id,
                    msgs,
                    (),
                    conv.tools,
                    {**dict(conv.meta), "segment": k},
                )
            )
        except InvalidConfig as exc:
            raise CsimError(
                f"conversation {conv.id!r}: segment {k} (messages {a}..{b - 1}) is not replayable on its own: {exc}"
            ) from None
    return out


def agent_of(conv: Conversation) -> str:
    """``main``, ``subagent``, or ``compaction`` (Claude Code's summarising call, ``agent-acompact-*``)."""
    if not conv.meta.get("subagent"):
        return "main"
    return "compaction" if str(conv.meta.get("agent_id", "")).startswith("acompact") else "subagent"


def provider_of(conv: Conversation, default: str = "unknown") -> str:
    """The provider that served a recording: ``meta["provider"]``, else guessed from the model names."""
    p = conv.meta.get("provider")
    if isinstance(p, str) and p:
        return p
    models = [str(x) for x in conv.meta.get("models", ()) or ()]
    models += [str(m.meta["model"]) for m in conv.messages[:50] if m.meta.get("model")]
    for name in models:
        low = name.lower()
        if "claude" in low or "anthropic" in low:
            return "anthropic"
        if low.startswith(("gpt", "o1", "o3", "o4", "openai")) or "/gpt" in low:
            return "openai"
        if "deepseek" in low:
            return "deepseek"
        if "gemini" in low:
            return "google"
    return default


#: The provider a format's recordings were served by, where the format says so.
_FORMAT_PROVIDER = {
    "claude-code": "anthropic",
    "anthropic-messages": "anthropic",
    "codex": "openai",
    "openai-responses": "openai",
    "tau-bench": "openai",
}


def format_provider(fmt: str) -> str:
    """The provider that serves recordings of format ``fmt`` (``unknown`` when the format does not say)."""
    return _FORMAT_PROVIDER.get(fmt, "unknown")


__all__ = [
    "REPLAY_WINDOW",
    "SPLITS",
    "Calibration",
    "Coefficients",
    "Framing",
    "HeldOut",
    "Split",
    "agent_of",
    "compaction_cuts",
    "format_provider",
    "opens_with_summary",
    "provider_of",
    "segments",
    "stand_ins",
]
