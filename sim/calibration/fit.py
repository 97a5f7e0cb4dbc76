"""Token calibration: map the simulator's prompt count to what the provider reports.

The model's values (:class:`~sim.core.counting.Coefficients`, :class:`~sim.core.counting.Calibration`) are
:mod:`sim.core.counting`; this module has the fit and the held-out evaluation, which change together when a term is
added; the features they read (:class:`~sim.calibration.features.Sample`) are :mod:`sim.calibration.features`.
Saving, loading and choosing a fit are :mod:`sim.calibration.files`.

Ground truth is the usage recorded with each reply: ``prompt_tokens = input + cache_read + cache_write``
(:class:`sim.core.conversation.Usage`). For every recorded request, the simulator's side is the prompt *as
the engine counts it*: :mod:`sim.calibration.features` replays the conversation through the engine itself (policy
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

What it costs: the evaluation leaves each conversation out, and each of those fits makes its choices (framing, a
ratio per kind) by leaving out each other conversation in turn, so a group of ``n`` conversations asks for about
``4 n^2`` fits. Each conversation's requests are read into arrays once (:class:`_Group`). The fits whose figures
are saved and reported (one per conversation left out) are done on those arrays exactly as on the rows (the same
numbers in the same order into ``lstsq``), so the figures are those of a fit on the rows themselves. The fits
behind a choice only compare errors; they are solved from each conversation's sums of the weighted normal
equations (``sum w^2 x x^T`` over its requests, :mod:`sim.calibration.normal`): leaving conversations out is a
subtraction, and all the fits of one choice are a few batched solves. What Python does per request is then done once;
what remains of the ``n^2`` is array work: the small solves, and a pass over the requests' arrays per fold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sim.calibration.features import Sample, replay_counts, samples
from sim.calibration.normal import per_conversation, solve
from sim.core.counting import (
    SPLITS,
    Calibration,
    Coefficients,
    Framing,
    HeldOut,
    agent_of,
    opens_with_summary,
    segments,
)
from sim.core.errors import InvalidConfig
from sim.core.kinds import KINDS

__all__ = [
    "MIN_KIND_CONVERSATIONS",
    "MIN_KIND_SHARE",
    "RATIO_RANGE",
    "Calibration",
    "Coefficients",
    "HeldOut",
    "Sample",
    "agent_of",
    "calibrate",
    "fit",
    "fit_coefficients",
    "held_out",
    "opens_with_summary",
    "predict",
    "relative_errors",
    "replay_counts",
    "samples",
    "segments",
]

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
    return _Group(rows).fit(None, by_kind, framing)


def _frames(s: Sample, framing: Framing) -> int:
    return s.id_tokens if framing == "call_id" else s.messages


#: The columns of the fit on growth, as :class:`_Group` keeps each conversation's sums of their products: what a
#: request added in messages, in call-id tokens, in tokens, in each kind's tokens, and in recorded tokens.
_GROWTH = ("messages", "call_id", "tokens", "prose", "code", "json", "recorded")
_FRAME_COLUMN: dict[Framing, int] = {"message": 0, "call_id": 1}
_TOKENS, _KIND0, _TARGET = 2, 3, 6


class _Group:
    """One group's rows as arrays, read once; fits on all but one conversation (``exclude``) are array work.

    :meth:`fit` is the fit of the comment above, done on the arrays exactly as on the rows: the same values in
    the same order into :func:`_lstsq` and the same element-wise arithmetic, so its figures are those of a fit on
    the rows (each row's dot product with the ratios is ``np.dot``'s, through ``np.matmul`` of 1x3 by 3x1).
    :meth:`loo` is what its choices compare, each other conversation predicted by a fit on the rest, solved from
    the per-conversation sums of the weighted normal equations (:func:`sim.calibration.normal.per_conversation`).
    """

    def __init__(self, rows: Sequence[Sample]) -> None:
        self.rows = list(rows)
        self.names = sorted({s.conversation for s in self.rows})
        at = {c: i for i, c in enumerate(self.names)}
        n = len(self.names)
        self.rows_of: list[list[Sample]] = [[] for _ in range(n)]
        for s in self.rows:
            self.rows_of[at[s.conversation]].append(s)
        self.row_conv = np.array([at[s.conversation] for s in self.rows], dtype=np.intp)
        self.recorded = np.array([s.recorded for s in self.rows], dtype=float)
        self.design = _absolute_design(self.rows, False).reshape(-1, 4)
        self.design_base = _absolute_design(self.rows, True).reshape(-1, 2)
        segs = _segments_of(self.rows)
        pairs = [(seg[0], s) for seg in segs.values() for s in seg[1:]]
        self.pair_conv = np.array([at[b.conversation] for _, b in pairs], dtype=np.intp)
        self.y = np.array([b.recorded for _, b in pairs], dtype=float)
        self.anchor = np.array([a.recorded for a, _ in pairs], dtype=float)
        self.dy = self.y - self.anchor
        self.df = {f: np.array([_frames(b, f) - _frames(a, f) for a, b in pairs], dtype=float) for f in _FRAME_COLUMN}
        self.dt = np.array([b.tokens - a.tokens for a, b in pairs], dtype=float)
        dk = [[bk - ak for ak, bk in zip(a.kinds, b.kinds, strict=True)] for a, b in pairs]
        self.dk = np.array(dk, dtype=float).reshape(-1, 3)
        self.dchars = np.array([b.chars - a.chars for a, b in pairs], dtype=float)
        # the first request of each segment, what fixed and after_compaction are the medians over
        firsts = [(k, seg[0]) for (_, k), seg in segs.items()]
        self.first_conv = np.array([at[a.conversation] for _, a in firsts], dtype=np.intp)
        self.first_k = np.array([k for k, _ in firsts], dtype=np.int64)
        self.first_recorded = np.array([a.recorded for _, a in firsts], dtype=float)
        self.first_summarised = np.array([a.summarised for _, a in firsts], dtype=bool)
        self.first_head = np.array([a.head for _, a in firsts], dtype=np.int64)
        self.first_kinds = np.array([a.kinds for _, a in firsts], dtype=float).reshape(-1, 3)
        self.first_back = np.array(
            [[x + r for x, r in zip(a.kinds, a.reattached, strict=True)] for _, a in firsts], dtype=float
        ).reshape(-1, 3)
        self.first_frames = {f: np.array([_frames(a, f) for _, a in firsts], dtype=np.int64) for f in _FRAME_COLUMN}
        back_messages = np.array([a.reattached_messages for _, a in firsts], dtype=np.int64)
        self.first_back_frames = {"message": self.first_frames["message"] + back_messages}
        self.first_back_frames["call_id"] = self.first_frames["call_id"]
        # each conversation's sums, for the fits behind a choice
        growth = np.column_stack([self.df["message"], self.df["call_id"], self.dt, self.dk, self.dy]).reshape(-1, 7)
        self.gram, self.nonzero = per_conversation(growth, self.y, self.pair_conv, n)
        whole = np.column_stack([self.design, self.recorded]).reshape(-1, 5)
        self.whole_gram, self.whole_nonzero = per_conversation(whole, self.recorded, self.row_conv, n)
        self.kind_totals = np.zeros((n, 3))
        np.add.at(self.kind_totals, self.pair_conv, np.abs(self.dk))
        self.growth = np.column_stack([self.df["message"], self.df["call_id"], self.dk]).reshape(-1, 5)
        self.n_pairs = np.bincount(self.pair_conv, minlength=n)
        self.n_rows = np.bincount(self.row_conv, minlength=n)
        self.grew = (self.nonzero[:, _KIND0:_TARGET] > 0).astype(np.int64)  # which kinds grew in each
        self._loo: dict[tuple[int | None, bool, Framing], float | None] = {}
        self._totals: dict[int, np.ndarray] = {}

    def pairs_without(self, exclude: int | None) -> int:
        return int(self.n_pairs.sum() - (0 if exclude is None else self.n_pairs[exclude]))

    def rows_without(self, exclude: int | None) -> int:
        return int(self.n_rows.sum() - (0 if exclude is None else self.n_rows[exclude]))

    def _keep(self, conv: np.ndarray, exclude: int | None) -> Any:
        return slice(None) if exclude is None else conv != exclude

    # --- the fits whose figures are kept: as on the rows ---------------------------------------------------------

    def fit(self, exclude: int | None, by_kind: bool | None = None, framing: Framing | None = None) -> Coefficients:
        """The fit on every conversation but ``exclude`` (see :func:`fit`)."""
        if framing is None:
            framing = self.framing_of(exclude)
        if by_kind is None:
            by_kind = self.kinds_carry(exclude, framing)
        keep = self._keep(self.pair_conv, exclude)
        y = self.y[keep]
        if len(y) < 2:
            return self.whole_prompts(exclude)
        dy, df, dk = self.dy[keep], self.df[framing][keep], self.dk[keep]
        per_frame, scale = _lstsq(np.column_stack([df, self.dt[keep]]), dy, 1.0 / y)
        if scale <= 0:  # what the requests added does not track what they were billed (hidden content moves more)
            return self.whole_prompts(exclude)
        totals = np.abs(dk).sum(axis=0)
        conv = self.pair_conv[keep]
        grew_in = [int(np.count_nonzero(np.bincount(conv[dk[:, i] != 0], minlength=1))) for i in range(3)]
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
        fixed, after = self._overheads(exclude, framing, per_frame, ratios, mean)
        if framing == "call_id":
            return Coefficients(fixed, 0.0, mean, after, kind_scales, per_frame)
        return Coefficients(fixed, per_frame, mean, after, kind_scales)

    def _overheads(
        self, exclude: int | None, framing: Framing, per_frame: float, ratios: list[float], mean: float
    ) -> tuple[float, float]:
        """``fixed``, the median over conversations of what the first request of their first segment leaves over,
        and ``after_compaction``, that over what the first request after a compaction leaves (with what the client
        re-attached), beyond its conversation's own fixed."""
        keep = np.ones(len(self.first_conv), dtype=bool) if exclude is None else self.first_conv != exclude
        r = np.array(ratios, dtype=float)[:, None]

        def content(kinds: np.ndarray, frames: np.ndarray, head: np.ndarray) -> np.ndarray:
            text = np.matmul(np.ascontiguousarray(kinds)[:, None, :], r)[:, 0, 0]  # each row's np.dot(ratios, kinds)
            out: np.ndarray = per_frame * frames + text + mean * head
            return out

        first = keep & (self.first_k == 0)
        own = self.first_recorded[first] - content(
            self.first_kinds[first], self.first_frames[framing][first], self.first_head[first]
        )
        fixed = float(np.median(own)) if own.size else 0.0
        later = keep & (self.first_k > 0) & self.first_summarised
        own_fixed = np.full(len(self.names), fixed)
        own_fixed[self.first_conv[first]] = own
        left = (
            self.first_recorded[later]
            - own_fixed[self.first_conv[later]]
            - content(self.first_back[later], self.first_back_frames[framing][later], self.first_head[later])
        )
        return fixed, float(np.median(left)) if left.size else 0.0

    def whole_prompts(self, exclude: int | None) -> Coefficients:
        """The whole-prompt fit (:func:`fit_coefficients`) on every conversation but ``exclude``."""
        keep = self._keep(self.row_conv, exclude)
        y = self.recorded[keep]
        if len(y) < 2:
            raise InvalidConfig(f"need at least 2 recorded requests with usage to fit, got {len(y)}")
        fixed, per_message, scale, after = (float(x) for x in _lstsq(self.design[keep], y, 1.0 / y))
        return Coefficients(fixed, per_message, scale, after)

    def baseline_ratio(self, exclude: int | None) -> Any:
        """The chars baseline on growth: a ratio of characters, fitted on every conversation but ``exclude``."""
        keep = self._keep(self.pair_conv, exclude)
        y = self.y[keep]
        [ratio] = _lstsq(self.dchars[keep].reshape(-1, 1), self.dy[keep], 1.0 / y)
        return ratio

    def baseline_whole(self, exclude: int | None) -> np.ndarray:
        """The chars baseline on whole prompts (:func:`fit_coefficients` with ``baseline``)."""
        keep = self._keep(self.row_conv, exclude)
        y = self.recorded[keep]
        return _lstsq(self.design_base[keep], y, 1.0 / y)

    # --- the choices: each other conversation predicted by a fit on the rest -------------------------------------

    def framing_of(self, exclude: int | None) -> Framing:
        """``call_id`` where framing per token of the call ids predicts each conversation better than per message
        (one ratio, fitted without it), else ``message``. Anthropic's tool_use and tool_result blocks carry the
        call's id, which the engine does not count (the pydantic-ai cassettes: 1.04 tokens per cl100k_base token
        of the ids, about 20 a block)."""
        if not (self.nonzero[:, _FRAME_COLUMN["call_id"]].sum() - self._of(self.nonzero, exclude)[1]):
            return "message"  # no tool call or result was added: nothing to fit it on
        ids, message = self.loo(exclude, False, "call_id"), self.loo(exclude, False, "message")
        return "call_id" if ids is not None and message is not None and ids < message else "message"

    def kinds_carry(self, exclude: int | None, framing: Framing = "message") -> bool:
        """Whether a ratio per kind predicts each conversation better than one ratio, fitted without it."""
        kinds, one = self.loo(exclude, True, framing), self.loo(exclude, False, framing)
        return kinds is not None and one is not None and kinds < one

    def _of(self, stats: np.ndarray, exclude: int | None) -> np.ndarray:
        return np.zeros(stats.shape[1:], dtype=stats.dtype) if exclude is None else stats[exclude]

    def loo(self, exclude: int | None, by_kind: bool, framing: Framing) -> float | None:
        """Mean relative error of each conversation but ``exclude`` (with two or more requests in a segment),
        each predicted by the fit on the others without ``exclude``, anchored on its segments' first requests."""
        key = (exclude, by_kind, framing)
        if key not in self._loo:
            self._loo[key] = self._loo_of(exclude, by_kind, framing)
        return self._loo[key]

    def _without(self, stats: np.ndarray, exclude: int | None) -> np.ndarray:
        """``stats`` summed over every conversation but ``exclude``."""
        key = id(stats)
        total = self._totals.get(key)
        if total is None:
            total = self._totals[key] = stats.sum(axis=0)
        return total if exclude is None else total - stats[exclude]

    def _loo_of(self, exclude: int | None, by_kind: bool, framing: Framing) -> float | None:
        n = len(self.names)
        held = np.flatnonzero(self.n_pairs > 0)
        held = held[held != exclude] if exclude is not None else held
        if len(held) < 2:
            return None
        held = held[self.pairs_without(exclude) - self.n_pairs[held] >= 2]  # a fit on growth needs two requests
        if not held.size:
            return None
        gram = self._without(self.gram, exclude) - self.gram[held]  # each fit's normal equations: all but one
        nonzero = self._without(self.nonzero, exclude) - self.nonzero[held]
        f = _FRAME_COLUMN[framing]
        cols = [f, _TOKENS]
        per_frame, scale = solve(gram[:, cols][:, :, cols], gram[:, cols, _TARGET], nonzero[:, cols] > 0).T
        ratios = np.repeat(scale[:, None], 3, axis=1)
        if by_kind:
            grew_in = self._without(self.grew, exclude) - self.grew[held]
            totals = self._without(self.kind_totals, exclude) - self.kind_totals[held]
            own = (grew_in >= MIN_KIND_CONVERSATIONS) & (totals >= MIN_KIND_SHARE * totals.sum(axis=1)[:, None])
            own &= (scale > 0)[:, None]
            for pattern in {tuple(row) for row in own.tolist() if any(row)}:
                which = np.flatnonzero((own == pattern).all(axis=1))
                kinds = [i for i in range(3) if pattern[i]]
                cols = [f] + [_KIND0 + i for i in kinds]
                others = [_KIND0 + i for i in range(3) if not pattern[i]]
                g = gram[which]
                rhs = g[:, cols, _TARGET] - scale[which, None] * g[:, cols][:, :, others].sum(axis=2)
                c = solve(g[:, cols][:, :, cols], rhs, nonzero[which][:, cols] > 0)
                ok = ((c[:, 1:] >= RATIO_RANGE[0]) & (c[:, 1:] <= RATIO_RANGE[1])).all(axis=1)
                per_frame[which[ok]] = c[ok, 0]
                ratios[np.ix_(which[ok], np.array(kinds, dtype=np.intp))] = c[ok, 1:]
        coef = np.zeros((len(held), 5))
        coef[:, _FRAME_COLUMN[framing]], coef[:, 2:] = per_frame, ratios
        whole = scale <= 0  # as the fit: whole prompts, where growth does not track what was billed
        if whole.any():
            g = self._without(self.whole_gram, exclude) - self.whole_gram[held[whole]]
            active = self._without(self.whole_nonzero, exclude) - self.whole_nonzero[held[whole]] > 0
            c = solve(g[:, :4, :4], g[:, :4, 4], active[:, :4])
            coef[whole] = np.column_stack([c[:, 1], np.zeros(len(c)), c[:, 2], c[:, 2], c[:, 2]])
        where = np.full(n, -1)
        where[held] = np.arange(len(held))
        at = where[self.pair_conv]
        pick = at >= 0
        guess = self.anchor[pick] + np.einsum("ij,ij->i", self.growth[pick], coef[at[pick]])
        y = self.y[pick]
        return float(np.mean(np.abs(guess - y) / y))


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


def _baseline_errors(test: Sequence[Sample], firsts: dict[tuple[str, int], Sample], ratio: Any) -> np.ndarray:
    """The chars baseline anchored as :func:`_anchored_errors`: what was appended, as a ratio of characters."""
    out = []
    for s in test:
        a = firsts[(s.conversation, s.segment)]
        if a is not s:
            out.append(abs(a.recorded + ratio * (s.chars - a.chars) - s.recorded) / s.recorded)
    return np.array(out, dtype=float)


def _folds(g: _Group, split: str) -> tuple[str, list[tuple[_Group, int | None, list[Sample]]]]:
    """The held-out folds: (the group the fit reads, the conversation it leaves out, the requests held out)."""
    if split == "conversation" and len(g.names) >= 2:
        return "conversation", [(g, c, test) for c, test in enumerate(g.rows_of)]
    index: dict[str, int] = {}
    train: list[Any] = []
    test: list[Any] = []
    for s in g.rows:
        k = index.get(s.conversation, 0)
        index[s.conversation] = k + 1
        (train if k % 2 == 0 else test).append(s)
    return "alternate", [(_Group(train), None, test)]


def _pct(e: np.ndarray) -> tuple[float, float]:
    return float(np.median(e)), float(np.percentile(e, 90))


def held_out(rows: Sequence[Sample], split: str = "conversation", by_kind: bool | None = None) -> HeldOut:
    """Held-out median and p90 relative error of the model (``by_kind`` as :func:`fit` takes it) and of the
    chars baseline (see :class:`HeldOut`)."""
    return _held_out(_Group(rows), split, by_kind)


def _held_out(g: _Group, split: str, by_kind: bool | None) -> HeldOut:
    if split not in SPLITS:
        raise InvalidConfig(f"split {split!r} must be one of {', '.join(SPLITS)}")
    rows = g.rows
    used, folds = _folds(g, split)
    firsts = {key: seg[0] for key, seg in _segments_of(rows).items()}
    anchored = len(g.y) >= 2
    errs: dict[str, list[np.ndarray]] = {"model": [], "one": [], "base": [], "abs": []}
    n_fit = 0
    for train, exclude, test in folds:
        if train.rows_without(exclude) < 2 or not test:
            continue
        if anchored and train.pairs_without(exclude) < 2:
            continue
        c = train.fit(exclude, by_kind)
        errs["abs"].append(np.abs(predict(test, c) - [s.recorded for s in test]) / [s.recorded for s in test])
        if anchored:
            errs["model"].append(_anchored_errors(test, firsts, c))
            errs["one"].append(_anchored_errors(test, firsts, train.fit(exclude, by_kind=False)))
            errs["base"].append(_baseline_errors(test, firsts, train.baseline_ratio(exclude)))
        else:
            errs["base"].append(relative_errors(test, train.baseline_whole(exclude), baseline=True))
        n_fit = max(n_fit, train.rows_without(exclude))
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
        g = _Group(group)
        c = g.fit(None)
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
                provider, fmt, tokenizer, rounded, len(group), _held_out(g, split, None), fitted_on, checksum, agent
            )
        )
    return out
