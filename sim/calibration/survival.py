"""What real summaries keep: the probes of each recorded compaction's span that its recorded summary still holds.

A recording that kept its compactions (Claude Code's ``isCompactSummary`` message, a Codex compacted item, any
message an importer marks ``meta["compact_summary"]``) holds the ground truth the mock summariser's keep rates are
a guess at: the span the summary replaced, the summary's own text, and what the session used afterwards. For each
such summary this module takes the probes mined from the recording (:func:`sim.formats.probes.mine_probes`, the
same facts retention measures) that the summarised span established or carried, and asks whether the summary
holds each one verbatim (retention matches text, so a paraphrase counts as lost, as it does in a replay), by kind,
by age at the compaction and by round (the first, second, ... recorded summary of the conversation), and whether
the probe was needed after the compaction (a loss that mattered).

The span of a summary is everything from the previous recorded summary (or the start) up to it: Claude Code and
Codex summarise the whole history they hold, and the previous summary is part of it (so a probe that survived one
summary is in the span of the next, and a second round tests it again).
This is issue 28's first item, observed survival; the fitted retention model built on it is not written yet.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sim.core.conversation import Conversation, Fact
from sim.formats.probes import mine_probes


@dataclass(frozen=True)
class Survived:
    """One probe of one recorded summary's span: whether the summary kept it."""

    conversation: str
    summary: str  # id of the summary message
    round: int  # 1 for the conversation's first recorded summary
    fact: str
    kind: str
    age_messages: int  # messages from the probe's source to the summary
    needed_after: bool  # needed at a message after the summary
    kept: bool  # the summary's text holds the probe's text verbatim
    shape: str = ""  # an artifact's shape (:func:`shape_of`): path, command, number or identifier


def shape_of(text: str) -> str:
    """What an artifact looks like, in the categories published measurements use (file paths, commands, measured
    numbers): a whole command (it has a space), a number, a path (a slash, or a file name), else an identifier."""
    if " " in text:
        return "command"
    if re.fullmatch(r"[\d.,]+", text):
        return "number"
    if "/" in text or (re.search(r"\.[a-z][a-z0-9]{0,4}$", text) and not re.search(r"\.[A-Z]", text)):
        return "path"  # a slash, or a file name (a lowercase extension; "Plug.Conn" is a module)
    return "identifier"


def summaries_of(conv: Conversation) -> list[int]:
    """Indices of the recorded summaries (messages an importer marked ``compact_summary``), in order."""
    return [i for i, m in enumerate(conv.messages) if m.meta.get("compact_summary")]


def observed_survival(conv: Conversation, facts: Iterable[Fact] | None = None) -> list[Survived]:
    """For each recorded summary of ``conv``, a row per probe its span established or carried (``facts``: the
    conversation's own when it has some, else its mined probes)."""
    marks = summaries_of(conv)
    if not marks:
        return []
    probes = tuple(facts) if facts is not None else (conv.facts or mine_probes(conv))
    index = {m.id: i for i, m in enumerate(conv.messages)}
    out: list[Survived] = []
    start = 0
    for k, s in enumerate(marks, start=1):
        text = conv.messages[s].text
        for f in probes:
            src = index.get(f.source)
            if src is None or src >= s:
                continue
            carried = [index[c] for c in f.carriers if c in index]
            if not (start <= src or any(start <= c < s for c in carried)):
                continue  # established before the previous summary and not carried since: that one's business
            out.append(
                Survived(
                    conv.id,
                    conv.messages[s].id,
                    k,
                    f.id,
                    f.kind,
                    s - src,
                    any(index.get(n, -1) > s for n in f.needed_at),
                    bool(f.text) and f.text in text,
                    shape_of(f.text) if f.kind == "artifact" else "",
                )
            )
        start = s
    return out


def by_kind(rows: Iterable[Survived], key: str = "kind") -> dict[str, dict[str, Any]]:
    """Per kind (or per artifact shape, ``key="shape"``): probes in the spans, how many the summaries kept, and the
    same for those needed afterwards."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        group = getattr(r, key)
        if not group:
            continue
        d = out.setdefault(group, {"probes": 0, "kept": 0, "needed_after": 0, "kept_needed_after": 0})
        d["probes"] += 1
        d["kept"] += r.kept
        d["needed_after"] += r.needed_after
        d["kept_needed_after"] += r.kept and r.needed_after
    for d in out.values():
        d["kept_share"] = d["kept"] / d["probes"]
        d["kept_needed_after_share"] = d["kept_needed_after"] / d["needed_after"] if d["needed_after"] else None
    return dict(sorted(out.items()))


__all__ = ["Survived", "by_kind", "observed_survival", "shape_of", "summaries_of"]
