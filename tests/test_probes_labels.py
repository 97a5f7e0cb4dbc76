"""The probe extractor against hand labels: per-kind precision and recall, with floors that were measured.

How the labels were made (``tests/golden/probes/labels.json``; ids, digests and offsets only, never text):

* **Artifacts**, on the two long Claude Code sessions: every fourth assistant message from the third on (39 of
  ``fa812bfe…``, 38 of ``258c7280…``). For each, a liberal list of candidates was printed (every token of its
  text and tool-call argument values that is not a plain lowercase word, the tails of its paths, the pieces of
  its shell commands) that a user or tool message had told before, not the message just before it, and that no
  assistant message had written first. A reader then kept those that name something of *this* conversation's
  world the agent had to remember: the project's paths, modules, functions, fields, CSS classes, header names,
  issue and task ids, distinctive values. Language keywords, standard-library and framework names
  (``GenServer``, ``Plug.Conn``, ``ExUnit.Case``), English words and variable expressions were left out. A
  qualified name may be matched by its parts, a path by its tails, a module attribute without its ``@``.
* **Decisions**: every assistant message of the two sessions that runs ``git commit``; the subject of a new
  commit is the label (a repeated subject or an amend has none).
* **Constraints**: every user message of the two sessions (one rule in all: "continue until all are done") and
  of twelve tau-bench conversations (the simulated customer's requirements and preferences: dates, class,
  cheapest or fastest, which payment first, what they do not want; requests and confirmations without a
  condition, questions about policy, and what the customer lacks are not rules). A mined rule matches a label
  when the two sentence spans share at least half of the shorter one.

Split: the extractor was tuned on ``fa812bfe…`` and tau-bench conversations 0-2 ("tune") and then measured once on
``258c7280…`` and tau-bench 3-11 ("test"); the floors below are those measurements rounded down, and the README
table (section "Recorded conversations") shows both.
"""

from __future__ import annotations

import pytest

from tests.probes_eval import RECORDED, label_sets, score

#: (precision, recall) floors per split and kind, a little under what was measured (README table).
FLOORS = {
    "tune": {"artifact": (0.78, 0.93), "decision": (1.0, 1.0), "constraint": (0.85, 0.85)},
    "test": {"artifact": (0.68, 0.75), "decision": (1.0, 1.0), "constraint": (0.63, 0.65)},
}


def test_the_labels_hold_no_text() -> None:
    for s in label_sets():
        for gold in s.get("artifact", {}).values():
            assert all(len(d) == 64 and int(d, 16) >= 0 for g in gold for d in g)
        for gold in s.get("decision", {}).values():
            assert all(len(d) == 64 for d in gold)
        for spans in s["constraint"].values():
            assert all(isinstance(a, int) and isinstance(b, int) and a < b for a, b in spans)
    n = sum(len(s.get("artifact", {})) + len(s.get("decision", {})) + len(s["constraint"]) for s in label_sets())
    assert n >= 100


@pytest.mark.parametrize("split", ["tune", "test"])
def test_precision_and_recall_per_kind_stay_above_what_was_measured(split: str) -> None:
    if not (RECORDED / "claude-code").exists() or not (RECORDED / "tau-bench").exists():
        pytest.skip(f"{RECORDED} is absent (the shared recordings live in ../shared/recorded)")
    got = score(split)
    for kind, (p_floor, r_floor) in FLOORS[split].items():
        c = got[kind]
        assert c["labels"] > 0 and c["predicted"] > 0, (kind, c)
        precision, recall = c["correct"] / c["predicted"], c["found"] / c["labels"]
        assert precision >= p_floor and recall >= r_floor, (split, kind, round(precision, 3), round(recall, 3), c)
