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
subtraction, and the fits of one choice, for every fold at once, are a few batched solves. What Python does per
request is then done once; what remains of the ``n^2`` is array work: the small solves, and a pass over the
requests' arrays per fold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sim.calibration.features import Sample, replay_counts, samples
from sim.calibration.group import (
    MIN_KIND_CONVERSATIONS,
    MIN_KIND_SHARE,
    RATIO_RANGE,
    Group,
    Pairs,
    Rows,
    _absolute_design,
    _lstsq,
    _segments_of,
    anchored_errors,
    baseline_errors,
    predict_rows,
)
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
    return Group(rows).fit(None, by_kind, framing)


def predict(rows: Sequence[Sample], c: Coefficients) -> np.ndarray:
    """The whole prompt of each request, as a run that counts everything reports it: after a compaction with
    what the client re-attached (estimated) and ``after_compaction``."""
    return predict_rows(Rows(rows, {s.conversation: 0 for s in rows}), c)


#: A held-out fold: the group a fit reads, the conversation it leaves out, and the requests held out (as rows, and
#: paired with the first request of their segment in the whole group).
Fold = tuple[Group, int | None, Rows, Pairs]


def _folds(g: Group, split: str) -> tuple[str, list[Fold]]:
    if split == "conversation" and len(g.names) >= 2:
        return "conversation", [(g, c, g.r.take(g.r.conv == c), g.p.take(g.p.conv == c)) for c in range(len(g.names))]
    index: dict[str, int] = {}
    train: list[Any] = []
    test: list[Any] = []
    for s in g.rows:
        k = index.get(s.conversation, 0)
        index[s.conversation] = k + 1
        (train if k % 2 == 0 else test).append(s)
    firsts = {key: seg[0] for key, seg in _segments_of(g.rows).items()}
    pairs = [(firsts[(s.conversation, s.segment)], s) for s in test]
    at = {c: i for i, c in enumerate(g.names)}
    return "alternate", [(Group(train), None, Rows(test, at), Pairs([(a, b) for a, b in pairs if a is not b], at))]


def _pct(e: np.ndarray) -> tuple[float, float]:
    return float(np.median(e)), float(np.percentile(e, 90))


def held_out(rows: Sequence[Sample], split: str = "conversation", by_kind: bool | None = None) -> HeldOut:
    """Held-out median and p90 relative error of the model (``by_kind`` as :func:`fit` takes it) and of the
    chars baseline (see :class:`HeldOut`)."""
    return _held_out(Group(rows), split, by_kind)


def _held_out(g: Group, split: str, by_kind: bool | None) -> HeldOut:
    if split not in SPLITS:
        raise InvalidConfig(f"split {split!r} must be one of {', '.join(SPLITS)}")
    used, folds = _folds(g, split)
    anchored = len(g.p.y) >= 2
    errs: dict[str, list[np.ndarray]] = {"model": [], "one": [], "base": [], "abs": []}
    n_fit = 0
    for train, exclude, test, test_pairs in folds:
        if train.rows_without(exclude) < 2 or not len(test.recorded):
            continue
        if anchored and train.pairs_without(exclude) < 2:
            continue
        c = train.fit(exclude, by_kind)
        errs["abs"].append(np.abs(predict_rows(test, c) - test.recorded) / test.recorded)
        if anchored:
            errs["model"].append(anchored_errors(test_pairs, c))
            errs["one"].append(anchored_errors(test_pairs, train.fit(exclude, by_kind=False)))
            errs["base"].append(baseline_errors(test_pairs, train.baseline_ratio(exclude)))
        else:
            design = np.column_stack([np.ones(len(test.recorded)), test.chars])
            errs["base"].append(np.abs(design @ train.baseline_whole(exclude) - test.recorded) / test.recorded)
        n_fit = max(n_fit, train.rows_without(exclude))
    if not errs["abs"]:
        raise InvalidConfig(f"too few recorded requests ({len(g.rows)}) for a held-out evaluation")
    absolute = _pct(np.concatenate(errs["abs"]))
    e = np.concatenate(errs["model"]) if anchored else np.concatenate(errs["abs"])
    if e.size == 0:
        raise InvalidConfig(f"too few recorded requests ({len(g.rows)}) for a held-out evaluation")
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
        g = Group(group)
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
