"""Token calibration: map the simulator's prompt count to what the provider reports.

Ground truth is the usage recorded with each reply: ``prompt_tokens = input + cache_read + cache_write``
(:class:`sim.core.conversation.Usage`). For every recorded request, the simulator's side is the prompt *as
the engine counts it*: this module replays the conversation through the engine itself (policy
``none``, no status line, a window too large to overflow) and reads each agent request's
``context_tokens`` and ``messages_in_view`` from the run's rows. There is no second counting scheme:
the features are exactly the numbers the engine later calibrates (``RunConfig.calibration``).

Model, fitted per group (provider, format, agent)::

    provider_tokens ~ fixed + per_message * messages + scale * engine_tokens + after_compaction * [summarised]

- ``fixed``: what the recording leaves out and every request carries: the agent's system prompt and
  tool definitions (FORMATS.md: 18-33K tokens for Claude Code).
- ``per_message``: framing the provider adds per message beyond the engine's own overhead.
- ``scale``: the provider's tokenizer against ours (Claude's tokenizer yields more tokens than
  cl100k_base on the same text).
- ``after_compaction``: tokens the agent re-attaches after it compacts and the recording does not
  hold (Claude Code re-reads recently used files and its todo list into the first post-compaction
  prompt; the Anthropic engineering post on context engineering says it keeps "the five most recently
  accessed files"). The indicator is 1 when the prompt holds a compaction summary.

The agent is ``subagent`` for a subagent's own transcript (``meta["subagent"]``), ``compaction`` for
Claude Code's summarising call (``agent-acompact-*``), else ``main``: each has its own system prompt
and tool set, hence its own ``fixed``, and is fitted apart (a group needs 3 or more requests).

Fitting is weighted least squares with weights ``1 / recorded`` (numpy ``lstsq``): the residual that
is minimised is the relative error, which is what the targets are stated in.

Held-out evaluation (``split``):

- ``conversation`` (default): leave one conversation out. Each conversation's requests are predicted
  by a fit on the other conversations of the group, and the held-out errors are pooled. This is the
  honest question, "does the fit carry to a session it has not seen", and it is deterministic. A group
  with a single conversation falls back to ``alternate``.
- ``alternate``: within each conversation, even-numbered requests fit and odd-numbered ones are held
  out. Neighbouring requests share almost all of their prompt, so this is optimistic; it is there for
  groups of one conversation and for comparison.

The saved coefficients are fitted on all requests of the group; the errors saved with them are the
held-out ones. The chars baseline (``fixed + scale * characters``, same weights, same split) is
computed and reported alongside.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sim.core.conversation import Conversation
from sim.core.errors import CsimError, InvalidConfig

Split = Literal["conversation", "alternate"]
SPLITS = ("conversation", "alternate")

#: The engine replays recordings for calibration with this window: large enough that no recorded prompt
#: is ever rejected, so every recorded request gets its feature row.
REPLAY_WINDOW = 1_000_000_000


@dataclass(frozen=True)
class Coefficients:
    """The fitted model; see the module docstring."""

    fixed: float
    per_message: float
    scale: float
    after_compaction: float = 0.0


@dataclass(frozen=True)
class HeldOut:
    """Held-out relative errors (fractions) of the calibrated model and of the chars baseline."""

    split: str
    n_fit: int
    n_held_out: int
    median: float
    p90: float
    baseline_median: float
    baseline_p90: float


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
        if not all(math.isfinite(x) for x in (c.fixed, c.per_message, c.scale, c.after_compaction)):
            raise InvalidConfig(f"calibration {self.key}: coefficients must be finite numbers, got {c}")
        if c.scale <= 0:
            raise InvalidConfig(f"calibration {self.key}: scale {c.scale!r} must be positive")

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.format}/{self.agent}"

    def apply(self, tokens: int, messages: int, summarised: bool = False) -> int:
        """The provider's count predicted from the engine's ``tokens`` and ``messages`` of one request."""
        c = self.coefficients
        x = c.fixed + c.per_message * messages + c.scale * tokens + (c.after_compaction if summarised else 0.0)
        return max(0, math.floor(x + 0.5))


# --- features ------------------------------------------------------------------------------------


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


def opens_with_summary(conv: Conversation) -> bool:
    """The conversation starts from a compaction summary (a segment after a recorded compaction)."""
    return any(m.meta.get("compact_summary") or "compact_boundary" in m.meta for m in conv.messages[:2])


def segments(conv: Conversation) -> list[Conversation]:
    """The conversation cut at its recorded compactions; each later segment starts with the summary message.

    The message after a ``compact_boundary`` carries ``meta["compact_boundary"]`` (the Claude Code
    importer marks it); the provider's prompt after a compaction holds that message and what follows,
    not the history before it, so each segment is replayed on its own.
    """
    cuts = [i for i, m in enumerate(conv.messages) if i > 0 and "compact_boundary" in m.meta]
    bounds = [0, *cuts, len(conv.messages)]
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


_FORMAT_PROVIDER = {
    "claude-code": "anthropic",
    "anthropic-messages": "anthropic",
    "codex": "openai",
    "openai-responses": "openai",
    "tau-bench": "openai",
}


def replay_counts(
    conv: Conversation,
    tokenizer: str = "cl100k_base",
    calibration: Calibration | None = None,
    probe_end: bool = False,
    cache_ttl: str = "policy",
    anchors: Any = None,
) -> list[dict[str, Any]]:
    """The engine's agent-request rows for ``conv`` replayed under ``none`` (one per assistant message).

    ``probe_end`` appends one synthetic assistant reply so the last row is a request holding the whole
    conversation (the prompt at the moment of a compaction that follows it). ``cache_ttl`` is the run's
    (:class:`~sim.core.config.RunConfig`): the TTL the recorded client wrote its cache entries with.
    ``anchors`` (:class:`sim.calibration.anchor.Anchors`): count the recorded messages as the provider did.
    """
    from policies.base import make_policy
    from sim.core.conversation import Message, Part
    from sim.replay.engine import RunConfig, run
    from sim.replay.model import ModelConfig

    if probe_end:
        probe = Message(f"{conv.id}~probe", "assistant", (Part("text", "(probe)"),))
        conv = Conversation(conv.id, (*conv.messages, probe), (), conv.tools, conv.meta)
    config = RunConfig(
        model=ModelConfig(context_window=REPLAY_WINDOW),
        run_status="off",
        tokenizer=tokenizer,
        calibration=calibration,
        cache_ttl=cache_ttl,  # type: ignore[arg-type]
        accounting="counted",  # what the calibration is fitted to and applied on, unless anchors are given
        anchors=anchors,
    )
    result = run(make_policy("none"), conv, config)
    rows = [r for r in result.rows if r["request_kind"] == "agent"]
    replies = [m for m in conv.messages if m.role == "assistant"]
    bad = [r for r in rows if r["error"]]
    if bad or len(rows) != len(replies):
        why = bad[0]["error"] if bad else f"finish reason {result.summary['finish_reason']}"
        raise CsimError(
            f"conversation {conv.id!r}: the replay made {len(rows)} agent requests for "
            f"{len(replies)} assistant messages ({why})"
        )
    return rows


def samples(conversations: Iterable[Conversation], fmt: str, tokenizer: str = "cl100k_base") -> list[Sample]:
    """Every recorded request with usage, with the engine's features; reset at recorded compactions."""
    out: list[Sample] = []
    for conv in conversations:
        provider = provider_of(conv, _FORMAT_PROVIDER.get(fmt, "unknown"))
        agent = agent_of(conv)
        for k, seg in enumerate(segments(conv)):
            if not any(m.role == "assistant" and m.usage for m in seg.messages):
                continue
            rows = iter(replay_counts(seg, tokenizer))
            summarised = opens_with_summary(seg)
            chars = 0
            for m in seg.messages:
                if m.role == "assistant":
                    row = next(rows)
                    usage = m.usage
                    if usage is not None and usage.prompt_tokens > 0 and not m.meta.get("api_id_repeated"):
                        out.append(
                            Sample(
                                conv.id,
                                k,
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
                            )
                        )
                chars += m.chars
    return out


# --- fitting -------------------------------------------------------------------------------------


def _design(rows: Sequence[Sample], baseline: bool) -> np.ndarray:
    if baseline:
        return np.array([[1.0, s.chars] for s in rows], dtype=float)
    return np.array([[1.0, s.messages, s.tokens, float(s.summarised)] for s in rows], dtype=float)


def fit_coefficients(rows: Sequence[Sample], baseline: bool = False) -> np.ndarray:
    """Weighted least squares (weights 1/recorded): minimises the sum of squared relative errors."""
    if len(rows) < 2:
        raise InvalidConfig(f"need at least 2 recorded requests with usage to fit, got {len(rows)}")
    x = _design(rows, baseline)
    y = np.array([s.recorded for s in rows], dtype=float)
    w = 1.0 / y
    coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
    return coef


def relative_errors(rows: Sequence[Sample], coef: np.ndarray, baseline: bool = False) -> np.ndarray:
    y = np.array([s.recorded for s in rows], dtype=float)
    out: np.ndarray = np.abs(_design(rows, baseline) @ coef - y) / y
    return out


def _folds(rows: Sequence[Sample], split: str) -> tuple[str, list[tuple[list[Sample], list[Sample]]]]:
    convs = sorted({s.conversation for s in rows})
    if split == "conversation" and len(convs) >= 2:
        return "conversation", [
            ([s for s in rows if s.conversation != c], [s for s in rows if s.conversation == c]) for c in convs
        ]
    index: dict[str, int] = {}
    train: list[Any] = []
    test: list[Any] = []
    for s in rows:
        k = index.get(s.conversation, 0)
        index[s.conversation] = k + 1
        (train if k % 2 == 0 else test).append(s)
    return "alternate", [(train, test)]


def held_out(rows: Sequence[Sample], split: str = "conversation") -> HeldOut:
    """Held-out median and p90 relative error of the model and of the chars baseline."""
    if split not in SPLITS:
        raise InvalidConfig(f"split {split!r} must be one of {', '.join(SPLITS)}")
    used, folds = _folds(rows, split)
    errs: list[np.ndarray] = []
    base: list[np.ndarray] = []
    n_fit = 0
    for train, test in folds:
        if len(train) < 2 or not test:
            continue
        errs.append(relative_errors(test, fit_coefficients(train)))
        base.append(relative_errors(test, fit_coefficients(train, baseline=True), baseline=True))
        n_fit = max(n_fit, len(train))
    if not errs:
        raise InvalidConfig(f"too few recorded requests ({len(rows)}) for a held-out evaluation")
    e, b = np.concatenate(errs), np.concatenate(base)
    return HeldOut(
        used,
        n_fit,
        int(e.size),
        float(np.median(e)),
        float(np.percentile(e, 90)),
        float(np.median(b)),
        float(np.percentile(b, 90)),
    )


def calibrate(
    rows: Sequence[Sample], *, tokenizer: str, fitted_on: str, checksum: str, split: str = "conversation"
) -> list[Calibration]:
    """One calibration per (provider, format, agent) group of ``rows``, sorted by key."""
    groups: dict[tuple[str, str, str], list[Sample]] = {}
    for s in rows:
        groups.setdefault((s.provider, s.format, s.agent), []).append(s)
    out = []
    for (provider, fmt, agent), group in sorted(groups.items()):
        if len(group) < 3:
            continue
        coef = fit_coefficients(group)
        out.append(
            Calibration(
                provider,
                fmt,
                tokenizer,
                Coefficients(*(float(round(c, 6)) for c in coef)),
                len(group),
                held_out(group, split),
                fitted_on,
                checksum,
                agent,
            )
        )
    return out


# --- files ---------------------------------------------------------------------------------------


def save(calibrations: Sequence[Calibration], path: str | Path) -> Path:
    """Write calibrations as JSON (sorted keys, stable bytes)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    body = {"calibrations": [asdict(c) for c in calibrations]}
    p.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return p


def load(path: str | Path) -> list[Calibration]:
    """Calibrations saved by :func:`save`."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
        items = raw["calibrations"]
        return [
            Calibration(**{**d, "coefficients": Coefficients(**d["coefficients"]), "errors": HeldOut(**d["errors"])})
            for d in items
        ]
    except OSError as exc:
        raise InvalidConfig(f"calibration file {str(p)!r} cannot be read: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidConfig(f"{p}: not a calibration file written by csim calibrate ({exc})") from None


def choose(
    calibrations: Sequence[Calibration],
    provider: str | None = None,
    fmt: str | None = None,
    agent: str = "main",
    where: str = "the calibration file",
) -> Calibration:
    """The one calibration for a run: the only one, else the one matching provider, format and agent."""
    if len(calibrations) == 1:
        return calibrations[0]
    pick = [
        c
        for c in calibrations
        if c.agent == agent and (provider is None or c.provider == provider) and (fmt is None or c.format == fmt)
    ]
    if len(pick) == 1:
        return pick[0]
    keys = ", ".join(c.key for c in calibrations) or "(none)"
    raise InvalidConfig(
        f"{where} holds {len(calibrations)} calibrations ({keys}); {len(pick)} match provider "
        f"{provider!r}, format {fmt!r}, agent {agent!r}: keep one group in the file "
        "(csim calibrate --group) or pass the run's --provider/--format to match exactly one"
    )


def load_for_run(path: str | Path, provider: str | None = None, fmt: str | None = None) -> Calibration:
    return choose(load(path), provider, fmt, where=str(path))


def load_for_source(
    path: str | Path, provider: str | None, kind: str, name: str = "", fmt: str = "auto"
) -> Calibration:
    """The fit in ``path`` for runs over one source (``csim run`` and ``csim sweep`` alike): matched to the
    provider and the source's format: a dataset's own, a recording's when given (any when detected),
    any for a synthetic scenario."""
    source_format: str | None = None
    if kind == "dataset":
        from sim.formats.datasets import get_dataset

        source_format = get_dataset(name).format
    elif kind == "conversation" and fmt != "auto":
        source_format = fmt
    return load_for_run(path, provider, source_format)


def checksum_of(paths: Iterable[Path]) -> str:
    """SHA-256 over the files' own SHA-256 digests, in sorted path order."""
    from sim.formats.datasets import sha256_of

    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(f"{p.name}:{sha256_of(p)}\n".encode())
    return h.hexdigest()


@dataclass
class Report:
    """What ``csim calibrate`` prints and saves."""

    calibrations: list[Calibration] = field(default_factory=list)
    skipped_conversations: int = 0

    def render(self) -> str:
        lines = []
        for c in self.calibrations:
            e, k = c.errors, c.coefficients
            lines.append(
                f"{c.key} [{c.tokenizer}]: n fit {c.n}, n held out {e.n_held_out} (split {e.split}); "
                f"calibrated median {e.median:.2%} p90 {e.p90:.2%}; chars baseline median {e.baseline_median:.2%} "
                f"p90 {e.baseline_p90:.2%}\n    fixed {k.fixed:,.0f} + {k.per_message:.2f}/message + "
                f"{k.scale:.4f} x tokens + {k.after_compaction:,.0f} after a compaction"
            )
        if not lines:
            lines.append("no group had 3 or more recorded requests with usage: nothing to fit")
        return "\n".join(lines)
