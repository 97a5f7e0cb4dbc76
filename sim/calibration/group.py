"""One group's requests as arrays, read once, and the fit on them.

:class:`Group` is the fit of :mod:`sim.calibration.fit` (its docstring says what is fitted and why) on arrays of a
group's requests (:class:`Rows`) and of each later request paired with the first of its segment (:class:`Pairs`),
so that a fit on every conversation but one costs array work, not a pass of Python over the rows. The figures are
those of a fit on the rows themselves: the same values in the same order into ``lstsq``, and the same
element-wise arithmetic, each row's dot product with the ratios being ``np.dot``'s (:func:`rowdot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sim.calibration.features import Sample
from sim.calibration.normal import per_conversation, solve
from sim.core.counting import Coefficients, Framing
from sim.core.errors import InvalidConfig
from sim.core.kinds import KINDS

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
#: conversation's, and the held-out choice of a ratio per kind (:meth:`Group.kinds_carry`) cannot test it: leaving
#: that conversation out leaves nothing to fit it on. (The pydantic-ai cassettes: a code ratio fitted on one session's
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


def rowdot(kinds: np.ndarray, ratios: Sequence[float]) -> np.ndarray:
    """Each row's ``np.dot(ratios, row)``, bit for bit: ``np.matmul`` of each 1x3 row by the 3x1 ratios runs the
    same dot product, where a matrix product or ``einsum`` would add the three terms otherwise."""
    r = np.array(ratios, dtype=float)[:, None]
    out: np.ndarray = np.matmul(np.ascontiguousarray(kinds, dtype=float).reshape(-1, 1, 3), r)[:, 0, 0]
    return out


def _taken(arrays: dict[str, np.ndarray], keep: np.ndarray) -> dict[str, np.ndarray]:
    """Each array's rows where ``keep`` is true: the same values as ``v[keep]``, gathered by index (``np.take``, the
    fast gather) once the mask is read."""
    index = np.flatnonzero(keep)
    return {k: np.take(v, index, axis=0) for k, v in arrays.items()}


class Rows:
    """Requests as arrays, one row each, in the order given; ``at`` numbers their conversations."""

    def __init__(self, rows: Sequence[Sample], at: dict[str, int]) -> None:
        self.conv = np.array([at[s.conversation] for s in rows], dtype=np.intp)
        self.segment = np.array([s.segment for s in rows], dtype=np.int64)
        self.recorded = np.array([s.recorded for s in rows], dtype=float)
        self.messages = np.array([s.messages for s in rows], dtype=np.int64)
        self.id_tokens = np.array([s.id_tokens for s in rows], dtype=np.int64)
        self.chars = np.array([s.chars for s in rows], dtype=np.int64)
        self.head = np.array([s.head for s in rows], dtype=np.int64)
        self.summarised = np.array([s.summarised for s in rows], dtype=bool)
        self.kinds = np.array([s.kinds for s in rows], dtype=np.int64).reshape(-1, 3)
        self.reattached = np.array([s.reattached for s in rows], dtype=np.int64).reshape(-1, 3)
        self.reattached_messages = np.array([s.reattached_messages for s in rows], dtype=np.int64)

    def take(self, keep: np.ndarray) -> Rows:
        """The requests where ``keep`` (a mask) is true, in order."""
        out = object.__new__(Rows)
        out.__dict__.update(_taken(vars(self), keep))
        return out

    def frames(self, framing: Framing) -> np.ndarray:
        return self.id_tokens if framing == "call_id" else self.messages


class Pairs:
    """Each later request of a segment paired with the segment's first, as arrays: what the request added."""

    def __init__(self, pairs: Sequence[tuple[Sample, Sample]], at: dict[str, int]) -> None:
        self.conv = np.array([at[b.conversation] for _, b in pairs], dtype=np.intp)
        self.y = np.array([b.recorded for _, b in pairs], dtype=float)
        self.anchor = np.array([a.recorded for a, _ in pairs], dtype=float)
        self.dy = self.y - self.anchor
        self.messages = np.array([b.messages - a.messages for a, b in pairs], dtype=float)
        self.id_tokens = np.array([b.id_tokens - a.id_tokens for a, b in pairs], dtype=float)
        self.tokens = np.array([b.tokens - a.tokens for a, b in pairs], dtype=float)
        dk = [[bk - ak for ak, bk in zip(a.kinds, b.kinds, strict=True)] for a, b in pairs]
        self.kinds = np.array(dk, dtype=float).reshape(-1, 3)
        self.chars = np.array([b.chars - a.chars for a, b in pairs], dtype=float)

    def take(self, keep: np.ndarray) -> Pairs:
        """The requests where ``keep`` (a mask) is true, in order."""
        out = object.__new__(Pairs)
        out.__dict__.update(_taken(vars(self), keep))
        return out

    def frames(self, framing: Framing) -> np.ndarray:
        return self.id_tokens if framing == "call_id" else self.messages


def predict_rows(r: Rows, c: Coefficients) -> np.ndarray:
    """:func:`sim.calibration.fit.predict` on arrays."""
    back = r.summarised.astype(np.int64)
    text = rowdot(r.kinds + r.reattached * back[:, None], [c.ratio(k) for k in KINDS]) + c.scale * r.head
    framing = c.per_message * (r.messages + r.reattached_messages * back) + c.per_call_id_token * r.id_tokens
    out: np.ndarray = c.fixed + framing + text + c.after_compaction * back
    return out


def anchored_errors(p: Pairs, c: Coefficients) -> np.ndarray:
    """Each later request predicted from the first of its segment and the estimate of what was appended since."""
    framing = c.per_message * p.messages + c.per_call_id_token * p.id_tokens
    guess = p.anchor + framing + rowdot(p.kinds, [c.ratio(k) for k in KINDS])
    out: np.ndarray = np.abs(guess - p.y) / p.y
    return out


def baseline_errors(p: Pairs, ratio: Any) -> np.ndarray:
    """The chars baseline anchored the same way: what was appended, as a ratio of characters."""
    out: np.ndarray = np.abs(p.anchor + ratio * p.chars - p.y) / p.y
    return out


#: The columns of the fit on growth, as :class:`Group` keeps each conversation's sums of their products: what a
#: request added in messages, in call-id tokens, in tokens, in each kind's tokens, and in recorded tokens.
_GROWTH = ("messages", "call_id", "tokens", "prose", "code", "json", "recorded")
_FRAME_COLUMN: dict[Framing, int] = {"message": 0, "call_id": 1}
_TOKENS, _KIND0, _TARGET = 2, 3, 6


class Group:
    """One group's rows as arrays, read once; fits on all but one conversation (``exclude``) are array work.

    :meth:`fit` is the fit of the comment above, done on the arrays exactly as on the rows: the same values in
    the same order into :func:`_lstsq` and the same element-wise arithmetic (:func:`rowdot`), so its figures are
    those of a fit on the rows.
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
        self.r = Rows(self.rows, at)
        self.design = _absolute_design(self.rows, False).reshape(-1, 4)
        self.design_base = _absolute_design(self.rows, True).reshape(-1, 2)
        segs = _segments_of(self.rows)
        self.p = Pairs([(seg[0], s) for seg in segs.values() for s in seg[1:]], at)
        self.f = Rows([seg[0] for seg in segs.values()], at)  # fixed and after_compaction are medians over these
        # each conversation's sums, for the fits behind a choice
        p = self.p
        growth = np.column_stack([p.messages, p.id_tokens, p.tokens, p.kinds, p.dy]).reshape(-1, 7)
        self.gram, self.nonzero = per_conversation(growth, p.y, p.conv, n)
        whole = np.column_stack([self.design, self.r.recorded]).reshape(-1, 5)
        self.whole_gram, self.whole_nonzero = per_conversation(whole, self.r.recorded, self.r.conv, n)
        self.kind_totals = np.zeros((n, 3))
        np.add.at(self.kind_totals, p.conv, np.abs(p.kinds))
        self.growth = np.column_stack([p.messages, p.id_tokens, p.kinds]).reshape(-1, 5)
        self.n_pairs = np.bincount(p.conv, minlength=n)
        self.n_rows = np.bincount(self.r.conv, minlength=n)
        self.grew = (self.nonzero[:, _KIND0:_TARGET] > 0).astype(np.int64)  # which kinds grew in each
        self._loo: dict[tuple[int | None, bool, Framing], float | None] = {}
        self._totals: dict[int, np.ndarray] = {}
        self._fits: dict[tuple[int | None, bool, Framing], Coefficients] = {}
        self._taken: tuple[int, Pairs] | None = None
        self._scaled: tuple[tuple[int | None, Framing], tuple[Any, Any]] | None = None

    def pairs_without(self, exclude: int | None) -> int:
        return int(self.n_pairs.sum() - (0 if exclude is None else self.n_pairs[exclude]))

    def rows_without(self, exclude: int | None) -> int:
        return int(self.n_rows.sum() - (0 if exclude is None else self.n_rows[exclude]))

    def _pairs_without(self, exclude: int | None) -> Pairs:
        """The pairs of every conversation but ``exclude``: kept for the fold's fits, taken once per fold."""
        if exclude is None:
            return self.p
        if self._taken is None or self._taken[0] != exclude:
            self._taken = (exclude, self.p.take(self.p.conv != exclude))
        return self._taken[1]

    def _keep(self, conv: np.ndarray, exclude: int | None) -> Any:
        return slice(None) if exclude is None else conv != exclude

    # --- the fits whose figures are kept: as on the rows ---------------------------------------------------------

    def fit(self, exclude: int | None, by_kind: bool | None = None, framing: Framing | None = None) -> Coefficients:
        """The fit on every conversation but ``exclude`` (see :func:`sim.calibration.fit.fit`)."""
        if framing is None:
            framing = self.framing_of(exclude)
        if by_kind is None:
            by_kind = self.kinds_carry(exclude, framing)
        key = (exclude, by_kind, framing)
        if key not in self._fits:
            self._fits[key] = self._fit(exclude, by_kind, framing)
        return self._fits[key]

    def _fit(self, exclude: int | None, by_kind: bool, framing: Framing) -> Coefficients:
        p = self._pairs_without(exclude)
        y = p.y
        if len(y) < 2:
            return self.whole_prompts(exclude)
        per_frame, scale = self._growth_fit(exclude, framing)
        if scale <= 0:  # what the requests added does not track what they were billed (hidden content moves more)
            return self.whole_prompts(exclude)
        # the kinds' token counts are whole numbers, so their sums over the conversations kept are exact, in any order
        totals = self._without(self.kind_totals, exclude)
        grew_in = self._without(self.grew, exclude)
        own = [
            i
            for i in range(3)
            if by_kind and grew_in[i] >= MIN_KIND_CONVERSATIONS and totals[i] >= MIN_KIND_SHARE * totals.sum()
        ]
        ratios = [float(scale)] * 3
        kind_scales: tuple[float, float, float] | None = None
        mean = float(scale)
        if own:  # the kinds too rare to fit take the one ratio; the others are fitted with the framing term
            dy, dk = p.dy, p.kinds
            rest = dy - scale * dk[:, [i for i in range(3) if i not in own]].sum(axis=1)
            c = _lstsq(np.column_stack([p.frames(framing), dk[:, own]]), rest, 1.0 / y)
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

    def _growth_fit(self, exclude: int | None, framing: Framing) -> tuple[Any, Any]:
        """``per_frame`` and the one ``scale``, fitted on what each request added (every conversation but
        ``exclude``): the first step of :meth:`_fit`, shared by its fits with and without a ratio per kind."""
        key = (exclude, framing)
        if self._scaled is None or self._scaled[0] != key:
            p = self._pairs_without(exclude)
            per_frame, scale = _lstsq(np.column_stack([p.frames(framing), p.tokens]), p.dy, 1.0 / p.y)
            self._scaled = (key, (per_frame, scale))
        return self._scaled[1]

    def _overheads(
        self, exclude: int | None, framing: Framing, per_frame: float, ratios: list[float], mean: float
    ) -> tuple[float, float]:
        """``fixed``, the median over conversations of what the first request of their first segment leaves over,
        and ``after_compaction``, that over what the first request after a compaction leaves (with what the client
        re-attached), beyond its conversation's own fixed."""
        f = self.f if exclude is None else self.f.take(self.f.conv != exclude)

        def content(kinds: np.ndarray, frames: np.ndarray) -> np.ndarray:
            out: np.ndarray = per_frame * frames + rowdot(kinds, ratios) + mean * f.head
            return out

        first = f.segment == 0
        own = f.recorded - content(f.kinds, f.frames(framing))
        own = own[first]
        fixed = float(np.median(own)) if own.size else 0.0
        own_fixed = np.full(len(self.names), fixed)
        own_fixed[f.conv[first]] = own
        back_frames = f.frames(framing) + (f.reattached_messages if framing == "message" else 0)
        left = f.recorded - own_fixed[f.conv] - content(f.kinds + f.reattached, back_frames)
        left = left[(f.segment > 0) & f.summarised]
        return fixed, float(np.median(left)) if left.size else 0.0

    def whole_prompts(self, exclude: int | None) -> Coefficients:
        """The whole-prompt fit (:func:`sim.calibration.fit.fit_coefficients`) on every conversation but
        ``exclude``."""
        keep = self._keep(self.r.conv, exclude)
        y = self.r.recorded[keep]
        if len(y) < 2:
            raise InvalidConfig(f"need at least 2 recorded requests with usage to fit, got {len(y)}")
        fixed, per_message, scale, after = (float(x) for x in _lstsq(self.design[keep], y, 1.0 / y))
        return Coefficients(fixed, per_message, scale, after)

    def baseline_ratio(self, exclude: int | None) -> Any:
        """The chars baseline on growth: a ratio of characters, fitted on every conversation but ``exclude``."""
        p = self._pairs_without(exclude)
        [ratio] = _lstsq(p.chars.reshape(-1, 1), p.dy, 1.0 / p.y)
        return ratio

    def baseline_whole(self, exclude: int | None) -> np.ndarray:
        """The chars baseline on whole prompts (``fit_coefficients`` with ``baseline``) without ``exclude``."""
        keep = self._keep(self.r.conv, exclude)
        y = self.r.recorded[keep]
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
        each predicted by the fit on the others without ``exclude``, anchored on its segments' first requests.

        Asked for one conversation left out, it is worked out for every one at once (the held-out evaluation asks
        for each in turn), and with a ratio per kind, for one ratio too (:meth:`kinds_carry` compares the two)."""
        key = (exclude, by_kind, framing)
        if key not in self._loo:
            batch: list[int | None] = [None] if exclude is None else list(range(len(self.names)))
            for chunk in _chunks(batch, max(1, _MAX_SYSTEMS // max(1, len(self.names)))):
                one, kinds = self._loo_of(chunk, by_kind, framing)
                for e, value in zip(chunk, one, strict=True):
                    self._loo[(e, False, framing)] = value
                for e, value in zip(chunk, kinds, strict=True) if kinds is not None else ():
                    self._loo[(e, True, framing)] = value
        return self._loo[key]

    def _without(self, stats: np.ndarray, exclude: int | None) -> np.ndarray:
        """``stats`` summed over every conversation but ``exclude``."""
        key = id(stats)
        total = self._totals.get(key)
        if total is None:
            total = self._totals[key] = stats.sum(axis=0)
        return total if exclude is None else total - stats[exclude]

    def _held(self, exclude: int | None) -> np.ndarray | None:
        """The conversations :meth:`loo` predicts with ``exclude`` left out, or None where it has no value."""
        held = np.flatnonzero(self.n_pairs > 0)
        held = held[held != exclude] if exclude is not None else held
        if len(held) < 2:
            return None
        held = held[self.pairs_without(exclude) - self.n_pairs[held] >= 2]  # a fit on growth needs two requests
        return held if held.size else None

    def _loo_of(
        self, excludes: Sequence[int | None], by_kind: bool, framing: Framing
    ) -> tuple[list[float | None], list[float | None] | None]:
        """:meth:`loo` of each of ``excludes`` with one ratio, and (``by_kind``) with a ratio per kind. The fits of
        all of them, one per (exclude, conversation held out), are solved together, each from its own normal
        equations and as it would be solved alone (:func:`~sim.calibration.normal.solve` solves each system by
        itself)."""
        helds = [self._held(e) for e in excludes]
        which = [i for i, h in enumerate(helds) if h is not None]
        one: list[float | None] = [None] * len(excludes)
        kinds: list[float | None] | None = [None] * len(excludes) if by_kind else None
        held_of = [h for h in helds if h is not None]
        if not held_of:
            return one, kinds
        # the systems: each exclude's (position in ``which``) and the conversation it holds out
        at = np.repeat(np.arange(len(which)), [len(h) for h in held_of])
        held = np.concatenate(held_of)
        ex = [excludes[i] for i in which]

        def without(stats: np.ndarray) -> np.ndarray:  # each system's stats: all but its exclude and its held-out one
            base = np.stack([self._without(stats, e) for e in ex])
            out: np.ndarray = np.take(base, at, axis=0) - np.take(stats, held, axis=0)
            return out

        gram, nonzero = without(self.gram), without(self.nonzero)
        f = _FRAME_COLUMN[framing]
        cols = [f, _TOKENS]
        per_frame, scale = solve(gram[:, cols][:, :, cols], gram[:, cols, _TARGET], nonzero[:, cols] > 0).T
        coef = np.zeros((len(held), 5))
        coef[:, f], coef[:, 2:] = per_frame, scale[:, None]
        whole = scale <= 0  # as the fit: whole prompts, where growth does not track what was billed
        if whole.any():
            g, active = without(self.whole_gram)[whole], without(self.whole_nonzero)[whole] > 0
            c = solve(g[:, :4, :4], g[:, :4, 4], active[:, :4])
            coef[whole] = np.column_stack([c[:, 1], np.zeros(len(c)), c[:, 2], c[:, 2], c[:, 2]])
        self._predicted(coef, held_of, which, one)
        if kinds is None:
            return one, kinds
        grew_in, totals = without(self.grew), without(self.kind_totals)
        own = (grew_in >= MIN_KIND_CONVERSATIONS) & (totals >= MIN_KIND_SHARE * totals.sum(axis=1)[:, None])
        own &= (scale > 0)[:, None]
        code = own @ np.array([1, 2, 4])  # the kinds each fit gives a ratio of their own, as one number
        for pattern in np.unique(code[code > 0]).tolist():
            rows = np.flatnonzero(code == pattern)
            mine = [i for i in range(3) if pattern >> i & 1]
            cols = [f] + [_KIND0 + i for i in mine]
            others = [_KIND0 + i for i in range(3) if i not in mine]
            g = gram[rows]
            rhs = g[:, cols, _TARGET] - scale[rows, None] * g[:, cols][:, :, others].sum(axis=2)
            c = solve(g[:, cols][:, :, cols], rhs, nonzero[rows][:, cols] > 0)
            ok = ((c[:, 1:] >= RATIO_RANGE[0]) & (c[:, 1:] <= RATIO_RANGE[1])).all(axis=1)
            coef[rows[ok], f] = c[ok, 0]
            coef[np.ix_(rows[ok], 2 + np.array(mine, dtype=np.intp))] = c[ok, 1:]
        self._predicted(coef, held_of, which, kinds)
        return one, kinds

    def _predicted(
        self, coef: np.ndarray, held_of: list[np.ndarray], which: list[int], out: list[float | None]
    ) -> None:
        """Into ``out[which[j]]``: the mean relative error of the requests of the conversations ``held_of[j]``, each
        predicted by its own fit (the rows of ``coef``, in turn). Every request is predicted at once, on the arrays
        as they are, and those held out are picked after, in their order."""
        p, table, start = self.p, np.zeros((len(self.names), 5)), 0
        for i, held in zip(which, held_of, strict=True):
            table[:] = 0.0
            table[held] = coef[start : start + len(held)]
            start += len(held)
            guess = p.anchor + np.einsum("ij,ij->i", self.growth, np.take(table, p.conv, axis=0))
            err = np.abs(guess - p.y) / p.y
            member = np.zeros(len(self.names), dtype=bool)
            member[held] = True
            out[i] = float(np.mean(err[np.take(member, p.conv)]))


#: How many fits :meth:`Group.loo` solves in one batch, at most (about 400 bytes of arrays each).
_MAX_SYSTEMS = 20_000


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
