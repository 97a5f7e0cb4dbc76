"""Importer of tau-bench results: a JSON list of tasks, each with the conversation it produced.

tau-bench (``sierra-research/tau-bench``) writes its runs as ``[{task_id, trial, reward, info, traj}]``
(``historical_trajectories/*.json``): ``traj`` is the OpenAI chat message list of one attempt at one
task (system prompt, simulated user, assistant with ``tool_calls``, ``tool`` results). The messages are
read by :mod:`sim.formats.openai_chat`, whose functions this module calls rather than repeats; what
this format adds is the task's identity: each conversation's id is ``tau-<task_id>-<trial>``, stable
across runs, and ``task_id``, ``trial`` and ``reward`` are in its meta. The files hold no usage and no
tool schemas, so none are invented.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import BadRecord, Issues, check, get
from sim.formats.openai_chat import _conversation, _Source, _sources

_EXPECTED = "tau-bench results: a JSON list of {task_id, trial, reward, info, traj}"


@FORMATS.register("tau-bench", "tau-bench results JSON (one conversation per task and trial, with reward)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read every task of a tau-bench results file, one conversation per task and trial."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    sources = _sources(path, issues)
    if path.suffix == ".jsonl" or any(s.label.startswith("line ") for s in sources):
        raise issues.fatal(1, "the file is JSONL; tau-bench writes one JSON list", _EXPECTED)
    if len(sources) == 1 and sources[0].label in ("the conversation", "the message list"):
        raise issues.fatal(1, "the document is not a list of tasks", _EXPECTED)
    seen: set[str] = set()
    for src in sources:
        cid, meta = "", dict[str, object]()
        with issues.record(src.line, src.label):
            cid, meta = _identity(src)
            if cid in seen:
                raise BadRecord(f"{src.label}: task {meta['task_id']!r} trial {meta['trial']!r} appears twice")
        if not cid:
            continue
        conv = _conversation(src, issues)
        if conv is None:
            continue
        seen.add(cid)
        result.conversations.append(dataclasses.replace(conv, id=cid, meta={**conv.meta, **meta}))
    return result


def _identity(src: _Source) -> tuple[str, dict[str, Any]]:
    """The stable id ``tau-<task_id>-<trial>`` and the task's meta; a task without them is malformed."""
    value = check(src.value, dict, src.label)
    if "traj" not in value:
        raise BadRecord(f"{src.label} has no 'traj' (the task's messages)")
    task_id = get(value, "task_id", (int, str), src.label)
    trial = get(value, "trial", int, src.label)
    reward = value.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        raise BadRecord(f"{src.label} 'reward' should be a number, got {type(reward).__name__}")
    meta = {"source": "tau-bench", "task_id": task_id, "trial": trial, "reward": reward}
    return f"tau-{task_id}-{trial}", meta


@sniffer("tau-bench")
def sniff(path: Path, head: bytes) -> bool:
    """A JSON list of objects carrying ``task_id`` and ``traj``."""
    compact = head.lstrip().replace(b" ", b"").replace(b"\n", b"")
    return compact.startswith(b"[{") and b'"task_id":' in compact[:400] and b'"traj":' in head
