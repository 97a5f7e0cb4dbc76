"""Scoring the probe extractor against the hand labels of ``tests/golden/probes/labels.json``.

The labels were made by reading the recordings (the protocol is in ``tests/test_probes_labels.py``); they hold
message ids, SHA-256 digests and offsets, never text. This module reads the recordings from ``../shared``,
mines them, and counts, per split and kind, the mined probes at the labelled messages that match a label
(precision) and the labels that a mined probe matches (recall).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation, Fact
from sim.formats.importing import recorded_conversations
from sim.formats.probes import mine_probes

LABELS = Path(__file__).parent / "golden" / "probes" / "labels.json"
RECORDED = Path(__file__).resolve().parents[1].parent / "shared" / "recorded"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def conversations(recording: str, fmt: str) -> dict[str, Conversation]:
    convs, _ = recorded_conversations(RECORDED / recording, fmt)
    return {c.id: c for c in convs}


@functools.cache
def mined(recording: str, fmt: str, cid: str | None) -> tuple[Conversation, tuple[Fact, ...]]:
    convs = conversations(recording, fmt)
    conv = convs[cid] if cid is not None else next(iter(convs.values()))
    return conv, mine_probes(conv)


def label_sets() -> list[dict[str, Any]]:
    sets: list[dict[str, Any]] = json.loads(LABELS.read_text())["sets"]
    return sets


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Two sentence spans are the same rule when they share at least half of the shorter one."""
    shared = min(a[1], b[1]) - max(a[0], b[0])
    return shared > 0 and 2 * shared >= min(a[1] - a[0], b[1] - b[0])


def _predictions(conv: Conversation, facts: tuple[Fact, ...]) -> Iterator[tuple[str, str, Fact]]:
    """``(kind, message id, fact)``: an artifact at each message that uses it (the one after each need), a rule or
    decision at its source."""
    ix = conv.index()
    for f in facts:
        if f.kind == "artifact":
            for n in f.needed_at:
                yield "artifact", conv.messages[ix[n] + 1].id, f
        else:
            yield f.kind, f.source, f


def score(split: str) -> dict[str, dict[str, int]]:
    """Per kind: predictions, correct predictions, labels, labels found; over the sets of ``split``."""
    out: dict[str, dict[str, int]] = {}
    for s in label_sets():
        if s["split"] != split:
            continue
        conv, facts = mined(s["recording"], s["format"], s.get("conversation"))
        by_id = {m.id: m for m in conv.messages}
        pred: dict[tuple[str, str], list[Fact]] = {}
        for kind, mid, f in _predictions(conv, facts):
            pred.setdefault((kind, mid), []).append(f)
        for kind in ("artifact", "decision", "constraint"):
            c = out.setdefault(kind, {"predicted": 0, "correct": 0, "labels": 0, "found": 0})
            for mid, gold in s.get(kind, {}).items():
                got = pred.get((kind, mid), [])
                if kind == "artifact":
                    accepted = [set(g) for g in gold]
                    hits = [any(digest(f.text) in g for g in accepted) for f in got]
                    found = [any(digest(f.text) in g for f in got) for g in accepted]
                elif kind == "decision":
                    hits = [digest(f.text) in gold for f in got]
                    found = [any(digest(f.text) == g for f in got) for g in gold]
                else:
                    text = by_id[mid].text
                    spans = [(k, k + len(f.text)) for f in got if (k := text.find(f.text)) >= 0]
                    hits = [any(_overlap(p, (a, b)) for a, b in gold) for p in spans]
                    found = [any(_overlap(p, (a, b)) for p in spans) for a, b in gold]
                c["predicted"] += len(hits)
                c["correct"] += sum(hits)
                c["labels"] += len(found)
                c["found"] += sum(found)
    return out


def table() -> str:
    """The per-kind precision and recall of both splits, as the README shows it."""
    rows = ["| kind | split | labels | mined | precision | recall |", "| --- | --- | --- | --- | --- | --- |"]
    for split in ("tune", "test"):
        for kind, c in score(split).items():
            p = c["correct"] / c["predicted"] if c["predicted"] else float("nan")
            r = c["found"] / c["labels"] if c["labels"] else float("nan")
            rows.append(f"| {kind} | {split} | {c['labels']} | {c['predicted']} | {p:.2f} | {r:.2f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
