"""Token calibration: map the simulator's prompt count to what the provider reports.

The model's values (:class:`~sim.core.counting.Coefficients`, :class:`~sim.core.counting.Calibration`) are
:mod:`sim.core.counting`; this module has their features (:class:`Sample`), the fit and the held-out evaluation,
which change together when a term is added. Saving, loading and choosing a fit are :mod:`sim.calibration.files`.

Ground truth is the usage recorded with each reply: ``prompt_tokens = input + cache_read + cache_write``
(:class:`sim.core.conversation.Usage`). For every recorded request, the simulator's side is the prompt *as
the engine counts it*: this module replays the conversation through the engine itself (policy
``none``, no status line, a window too large to overflow) and reads each agent request's
``context_tokens`` and ``messages_in_view`` from the run's rows. There is no second counting scheme:
the features are exactly the numbers the engine later calibrates (``RunConfig.calibration``).

Model, fitted per group (provider, format, agent)::

    provider_tokens ~ fixed + framing + sum over kinds(ratio[kind] * engine_tokens[kind])
                      + scale * head + after_compaction * [summarised]
    framing = per_message * messages, or per_call_id_token * tokens of the tool calls' and results' ids

- ``ratio[kind]``: the provider's tokenizer against ours, per content kind (prose, code, JSON:
  :mod:`sim.core.kinds`); Claude's tokenizer spends more tokens than cl100k_base on code. ``scale`` is
  their mean over the fitted content, used where a prompt's mix is not known (``head``: the engine's framing
  and tool definitions, and a whole prompt counted in one number by ``Calibration.apply``).
- ``per_message``: framing the provider adds per message beyond the engine's own overhead; or
  ``per_call_id_token``, per token of the ids of the tool calls and results (each tool_use and tool_result block
  Anthropic receives carries the call's id, ``toolu_`` and 24 characters, about 20 cl100k_base tokens, and the
  engine's count leaves ids out). On the pydantic-ai cassettes, whose prompts are a few hundred tokens, a
  per-message term misses by 5-34%, a constant per tool block by 2.3% median (an id is 17 to 21 tokens), and the
  ids' tokens at the fitted 1.04 each by 1.9%. A fit takes the one that predicts its own conversations better
  held out (:func:`fit`); the other is 0.
- ``fixed``: what the recording leaves out and every request carries: the agent's system prompt and
  tool definitions (FORMATS.md: 18-33K tokens for Claude Code).
- ``after_compaction``: what comes back after the client compacts, beyond what :func:`reattached` estimates
  from the history (Claude Code re-attaches the five most recently used files, read back from disk: their
  newest content the transcript shows stands in), such as hook output and the todo list. The indicator is 1
  when the prompt holds a compaction summary.

Why the ratios are fitted on differences: the system prompt, tool schemas and hidden context differ by session
and client version, and none of them is in a transcript, so a fit of whole prompts puts each session's own
overhead into the ratios and does not carry to another session (fitted on two Claude Code sessions, 6-12%
median error on three others). What a request added since the first request of its segment is text the
transcript does hold; the ratios and ``per_message`` are fitted on that, and ``fixed`` and ``after_compaction``
are the medians of what the first requests leave over. A ratio per kind is kept only where it predicts the
group's own conversations better than one ratio, each by a fit on the others (:func:`fit`). A group whose
conversations hold one request each has nothing to difference and is fitted on whole prompts. A cassette's
interactions are one conversation each, but the calls of one agent run whose requests show all they hold as text
are linked by the importer (``meta["session"]``, ``meta["chain"]``): its file is the session and the run one
segment (:func:`_session_of`), so those are anchored too and held out by file.

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

Each held-out request is predicted from the first request of its segment plus the estimate of what was appended
since (:class:`HeldOut`): the error of estimated text, as usage-anchored accounting (:mod:`sim.core.anchors`)
uses the calibration; whole-prompt errors are reported beside it. The saved coefficients are fitted on all
requests of the group; the errors saved with them are the held-out ones. The chars baseline (a ratio of
characters, same weights, same split) is computed and reported alongside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies import make_policy
from sim.core.config import RunConfig
from sim.core.conversation import Conversation, Message, Part
from sim.core.counting import (
    REPLAY_WINDOW,
    SPLITS,
    Calibration,
    Coefficients,
    Framing,
    HeldOut,
    agent_of,
    format_provider,
    opens_with_summary,
    provider_of,
    segments,
)
from sim.core.errors import CsimError, InvalidConfig
from sim.core.kinds import KINDS, message_kinds
from sim.core.model import ModelConfig
from sim.core.tokenizers import get_tokenizer
from sim.core.view import call_id_tokens
from sim.replay.anchoring import reattached
from sim.replay.engine import run

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
    ``anchors`` (:class:`sim.core.anchors.Anchors`): count the recorded messages as the provider did.
    """
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
            rows = iter(replay_counts(seg, tokenizer))
            summarised = opens_with_summary(seg)
            back = reattached(history, fmt) if k else ()
            chars = ids = 0
            kinds = np.zeros(3, dtype=np.int64)
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
                                (int(kinds[0]), int(kinds[1]), int(kinds[2])),
                                _sum_kinds(back, count),
                                len(back),
                                ids,
                            )
                        )
                chars += m.chars
                ids += call_id_tokens(m, count)
                kinds += message_kinds(m, count)
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


# --- fitting -------------------------------------------------------------------------------------
#
# Two fits share one reading of the data. Where a segment of a conversation holds two or more recorded requests,
# the ratios are fitted on what each request added since the segment's first: the overhead the transcript does
# not hold (system prompt, tool schemas, hidden context) is the same in both and drops out, so no per-session
# constant is fitted into the ratios. ``fixed`` and ``after_compaction`` are then the medians of what the first
# requests leave over. A group whose conversations hold one request each has nothing to difference and is fitted
# on the whole prompts, as ``fixed + per_message x messages + scale x tokens``.

#: A kind is fitted its own ratio when it is at least this share of the content the fit sees; rarer, it takes the
#: one ratio (a column of near zeros has no ratio to recover).
MIN_KIND_SHARE = 0.02
#: ... and when it grew in at least this many conversations. A ratio fitted on one conversation is that
#: conversation's, and the held-out choice of a ratio per kind (:func:`fit`) cannot test it: leaving that
#: conversation out leaves nothing to fit it on. (The pydantic-ai cassettes: a code ratio fitted on one session's
#: validation errors missed another session's code by 5.4%, against 0.3% with one ratio.)
MIN_KIND_CONVERSATIONS = 2
#: What a ratio per kind may be: provider tokens per cl100k_base token of one kind of text. Two BPE tokenizers do
#: not differ by more than this on any kind (Claude's and cl100k_base: 0.86 to 1.20 on the Claude Code sessions);
#: a fitted ratio outside says the kind's column took up something else (the framing of the tool calls whose
#: JSON it is), and the fit keeps one ratio for all.
RATIO_RANGE = (0.5, 2.0)


def _lstsq(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Least squares minimising ``sum((weight * (x @ c - y))^2)``."""
    coef, *_ = np.linalg.lstsq(x * weight[:, None], y * weight, rcond=None)
    return np.asarray(coef, dtype=float)


def _segments_of(rows: Sequence[Sample]) -> dict[tuple[str, int], list[Sample]]:
    out: dict[tuple[str, int], list[Sample]] = {}
    for s in rows:
        out.setdefault((s.conversation, s.segment), []).append(s)
    return out


def _growth(rows: Sequence[Sample]) -> list[tuple[Sample, Sample]]:
    """(first request of its segment, later request) for every later request."""
    return [(seg[0], s) for seg in _segments_of(rows).values() for s in seg[1:]]


def _absolute_design(rows: Sequence[Sample], baseline: bool) -> np.ndarray:
    if baseline:
        return np.array([[1.0, s.chars] for s in rows], dtype=float)
    return np.array([[1.0, s.messages, s.tokens, float(s.summarised)] for s in rows], dtype=float)


def fit_coefficients(rows: Sequence[Sample], baseline: bool = False) -> np.ndarray:
    """The whole-prompt fit (``fixed, per_message, scale, after_compaction``; the baseline's ``fixed, scale`` of
    characters), weighted least squares with weights 1/recorded: minimises the squared relative errors."""
    if len(rows) < 2:
        raise InvalidConfig(f"need at least 2 recorded requests with usage to fit, got {len(rows)}")
    y = np.array([s.recorded for s in rows], dtype=float)
    return _lstsq(_absolute_design(rows, baseline), y, 1.0 / y)


def relative_errors(rows: Sequence[Sample], coef: np.ndarray, baseline: bool = False) -> np.ndarray:
    y = np.array([s.recorded for s in rows], dtype=float)
    out: np.ndarray = np.abs(_absolute_design(rows, baseline) @ coef - y) / y
    return out


def fit(rows: Sequence[Sample], by_kind: bool | None = None, framing: Framing | None = None) -> Coefficients:
    """The calibration of one group (see the comment above). ``by_kind``: a ratio per kind (True), one for all
    text (False), or (None) a ratio per kind only where that predicts better within ``rows``, each conversation
    by a fit on the others (mean relative error): three ratios need more data than one, and a few dozen
    requests are better served by one; and a kind has its own ratio only where it grew in two or more
    conversations (:data:`MIN_KIND_CONVERSATIONS`). ``framing``: what the provider adds beyond the engine's own
    count, per message (``per_message``) or per token of the tool calls' and results' ids (``per_call_id_token``),
    or (None) the one that predicts better within ``rows``, judged the same way."""
    if framing is None:
        framing = _framing_of(rows)
    if by_kind is None:
        by_kind = _kinds_carry(rows, framing)
    return _fit(rows, by_kind, framing)


def _loo_errors(rows: Sequence[Sample], by_kind: bool, framing: Framing) -> float | None:
    """Mean relative error of each conversation of ``rows`` predicted by a fit on the others (None: too few)."""
    firsts = {key: seg[0] for key, seg in _segments_of(rows).items()}
    convs = sorted({b.conversation for _, b in _growth(rows)})
    errs: list[np.ndarray] = []
    for conv in convs if len(convs) >= 2 else ():
        train = [s for s in rows if s.conversation != conv]
        if len(_growth(train)) < 2:
            continue
        test = [s for s in rows if s.conversation == conv]
        errs.append(_anchored_errors(test, firsts, _fit(train, by_kind, framing)))
    return float(np.mean(np.concatenate(errs))) if errs else None


def _kinds_carry(rows: Sequence[Sample], framing: Framing = "message") -> bool:
    """Whether a ratio per kind predicts each conversation of ``rows`` better than one ratio, fitted without it."""
    kinds, one = _loo_errors(rows, True, framing), _loo_errors(rows, False, framing)
    return kinds is not None and one is not None and kinds < one


def _framing_of(rows: Sequence[Sample]) -> Framing:
    """``call_id`` where framing per token of the call ids predicts each conversation of ``rows`` better than per
    message (one ratio, fitted without it), else ``message``. Anthropic's tool_use and tool_result blocks carry the
    call's id, which the engine does not count (the pydantic-ai cassettes: 1.04 tokens per cl100k_base token of
    the ids, about 20 a block)."""
    if not any(b.id_tokens != a.id_tokens for a, b in _growth(rows)):
        return "message"  # no tool call or result was added: nothing to fit it on
    ids, message = _loo_errors(rows, False, "call_id"), _loo_errors(rows, False, "message")
    return "call_id" if ids is not None and message is not None and ids < message else "message"


def _frames(s: Sample, framing: Framing) -> int:
    return s.id_tokens if framing == "call_id" else s.messages


def _fit(rows: Sequence[Sample], by_kind: bool, framing: Framing = "message") -> Coefficients:
    pairs = _growth(rows)
    if len(pairs) < 2:
        fixed, per_message, scale, after = (float(x) for x in fit_coefficients(rows))
        return Coefficients(fixed, per_message, scale, after)
    y = np.array([b.recorded for _, b in pairs], dtype=float)
    dy = y - [a.recorded for a, _ in pairs]
    df = np.array([_frames(b, framing) - _frames(a, framing) for a, b in pairs], dtype=float)
    dt = np.array([b.tokens - a.tokens for a, b in pairs], dtype=float)
    per_frame, scale = _lstsq(np.column_stack([df, dt]), dy, 1.0 / y)
    if scale <= 0:  # what the requests added does not track what they were billed (hidden content moves more)
        fixed, per_message, scale, after = (float(x) for x in fit_coefficients(rows))
        return Coefficients(fixed, per_message, scale, after)
    dk = np.array([[bk - ak for ak, bk in zip(a.kinds, b.kinds, strict=True)] for a, b in pairs], dtype=float)
    totals = np.abs(dk).sum(axis=0)
    grew_in = [len({b.conversation for (_, b), row in zip(pairs, dk, strict=True) if row[i]}) for i in range(3)]
    own = [
        i
        for i in range(3)
        if by_kind and grew_in[i] >= MIN_KIND_CONVERSATIONS and totals[i] >= MIN_KIND_SHARE * totals.sum()
    ]
    ratios = [float(scale)] * 3
    kind_scales: tuple[float, float, float] | None = None
    mean = float(scale)
    if own:  # the kinds too rare to fit take the one ratio; the others are fitted with the framing term
        rest = dy - scale * dk[:, [i for i in range(3) if i not in own]].sum(axis=1)
        c = _lstsq(np.column_stack([df, dk[:, own]]), rest, 1.0 / y)
        if all(RATIO_RANGE[0] <= r <= RATIO_RANGE[1] for r in c[1:]):  # else one ratio for all (see RATIO_RANGE)
            per_frame = c[0]
            for i, r in zip(own, c[1:], strict=True):
                ratios[i] = float(r)
            kind_scales = (ratios[0], ratios[1], ratios[2])
            mean = float(np.dot(ratios, totals) / totals.sum())
    per_frame = float(per_frame)

    def content(s: Sample, kinds: Sequence[int], frames: int) -> float:
        return per_frame * frames + float(np.dot(ratios, kinds)) + mean * s.head

    firsts = {key: seg[0] for key, seg in _segments_of(rows).items()}
    own_fixed = {
        conv: a.recorded - content(a, a.kinds, _frames(a, framing)) for (conv, k), a in firsts.items() if k == 0
    }
    fixed = float(np.median(list(own_fixed.values()))) if own_fixed else 0.0
    left_after = [
        a.recorded
        - own_fixed.get(conv, fixed)
        - content(
            a,
            [x + r for x, r in zip(a.kinds, a.reattached, strict=True)],
            _frames(a, framing) + (a.reattached_messages if framing == "message" else 0),
        )
        for (conv, k), a in firsts.items()
        if k > 0 and a.summarised
    ]
    after = float(np.median(left_after)) if left_after else 0.0
    if framing == "call_id":
        return Coefficients(fixed, 0.0, mean, after, kind_scales, per_frame)
    return Coefficients(fixed, per_frame, mean, after, kind_scales)


def predict(rows: Sequence[Sample], c: Coefficients) -> np.ndarray:
    """The whole prompt of each request, as a run that counts everything reports it: after a compaction with
    what the client re-attached (estimated) and ``after_compaction``."""
    ratios = [c.ratio(k) for k in KINDS]
    out = []
    for s in rows:
        back = int(s.summarised)
        kinds = [k + r * back for k, r in zip(s.kinds, s.reattached, strict=True)]
        messages = s.messages + s.reattached_messages * back
        text = float(np.dot(ratios, kinds)) + c.scale * s.head
        framing = c.per_message * messages + c.per_call_id_token * s.id_tokens
        out.append(c.fixed + framing + text + c.after_compaction * back)
    return np.array(out, dtype=float)


def _anchored_errors(rows: Sequence[Sample], firsts: dict[tuple[str, int], Sample], c: Coefficients) -> np.ndarray:
    """Each request predicted from the first of its segment and the estimate of what was appended since."""
    ratios = [c.ratio(k) for k in KINDS]
    out = []
    for s in rows:
        a = firsts[(s.conversation, s.segment)]
        if a is s:
            continue
        dk = [b - x for x, b in zip(a.kinds, s.kinds, strict=True)]
        framing = c.per_message * (s.messages - a.messages) + c.per_call_id_token * (s.id_tokens - a.id_tokens)
        guess = a.recorded + framing + float(np.dot(ratios, dk))
        out.append(abs(guess - s.recorded) / s.recorded)
    return np.array(out, dtype=float)


def _baseline_anchored(
    train: Sequence[Sample], test: Sequence[Sample], firsts: dict[tuple[str, int], Sample]
) -> np.ndarray:
    """The chars baseline anchored the same way: what was appended, as a ratio of characters."""
    pairs = _growth(train)
    y = np.array([b.recorded for _, b in pairs], dtype=float)
    dy = y - [a.recorded for a, _ in pairs]
    [ratio] = _lstsq(np.array([[b.chars - a.chars] for a, b in pairs], dtype=float), dy, 1.0 / y)
    out = []
    for s in test:
        a = firsts[(s.conversation, s.segment)]
        if a is not s:
            out.append(abs(a.recorded + ratio * (s.chars - a.chars) - s.recorded) / s.recorded)
    return np.array(out, dtype=float)


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


def _pct(e: np.ndarray) -> tuple[float, float]:
    return float(np.median(e)), float(np.percentile(e, 90))


def held_out(rows: Sequence[Sample], split: str = "conversation", by_kind: bool | None = None) -> HeldOut:
    """Held-out median and p90 relative error of the model (``by_kind`` as :func:`fit` takes it) and of the
    chars baseline (see :class:`HeldOut`)."""
    if split not in SPLITS:
        raise InvalidConfig(f"split {split!r} must be one of {', '.join(SPLITS)}")
    used, folds = _folds(rows, split)
    firsts = {key: seg[0] for key, seg in _segments_of(rows).items()}
    anchored = len(_growth(rows)) >= 2
    errs: dict[str, list[np.ndarray]] = {"model": [], "one": [], "base": [], "abs": []}
    n_fit = 0
    for train, test in folds:
        if len(train) < 2 or not test:
            continue
        if anchored and len(_growth(train)) < 2:
            continue
        c = fit(train, by_kind)
        errs["abs"].append(np.abs(predict(test, c) - [s.recorded for s in test]) / [s.recorded for s in test])
        if anchored:
            errs["model"].append(_anchored_errors(test, firsts, c))
            errs["one"].append(_anchored_errors(test, firsts, fit(train, by_kind=False)))
            errs["base"].append(_baseline_anchored(train, test, firsts))
        else:
            errs["base"].append(relative_errors(test, fit_coefficients(train, baseline=True), baseline=True))
        n_fit = max(n_fit, len(train))
    if not errs["abs"]:
        raise InvalidConfig(f"too few recorded requests ({len(rows)}) for a held-out evaluation")
    absolute = _pct(np.concatenate(errs["abs"]))
    e = np.concatenate(errs["model"]) if anchored else np.concatenate(errs["abs"])
    if e.size == 0:
        raise InvalidConfig(f"too few recorded requests ({len(rows)}) for a held-out evaluation")
    median, p90 = _pct(e)
    base_median, base_p90 = _pct(np.concatenate(errs["base"]))
    one = _pct(np.concatenate(errs["one"])) if anchored else None
    return HeldOut(
        used,
        n_fit,
        int(e.size),
        median,
        p90,
        base_median,
        base_p90,
        anchored,
        one[0] if one else None,
        one[1] if one else None,
        *absolute,
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
        c = fit(group)
        rounded = Coefficients(
            round(c.fixed, 6),
            round(c.per_message, 6),
            round(c.scale, 6),
            round(c.after_compaction, 6),
            None
            if c.kind_scales is None
            else (round(c.kind_scales[0], 6), round(c.kind_scales[1], 6), round(c.kind_scales[2], 6)),
            round(c.per_call_id_token, 6),
        )
        out.append(
            Calibration(
                provider, fmt, tokenizer, rounded, len(group), held_out(group, split), fitted_on, checksum, agent
            )
        )
    return out
