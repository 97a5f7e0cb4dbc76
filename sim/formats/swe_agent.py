"""Importer of SWE-agent trajectories (``*.traj``: one JSON object per run).

A ``.traj`` file holds ``trajectory`` (one step per action: thought, action, observation),
``history`` (the messages as the model saw them) and ``info`` (``exit_status``, ``submission``,
``model_stats``). The script to replay is ``history``: SWE-agent stores there what it sent and
received, role by role (``sweagent/types.py``, ``HistoryItem``: ``role``, ``content`` as a string or
a block list, ``message_type``, and optionally ``agent``, ``is_demo``, ``thought``, ``action``,
``tool_calls``, ``tool_call_ids``, ``thinking_blocks``). Facts from ``SWE-agent/SWE-agent`` and its
sample trajectories in ``tests/test_data/trajectories`` and ``trajectories/demonstrations``.

The mapping:

- ``system`` opens the conversation; a later ``system`` entry becomes a ``user`` message;
- ``user`` entries (the task, observations in text-action mode, demonstrations) are ``user``
  messages; ``is_demo`` is kept in the message's meta;
- ``assistant`` entries are assistant messages: ``thinking_blocks`` as thinking, ``content`` as text
  and, in function-calling mode, ``tool_calls`` as calls. In text-action mode (no ``tool_calls``)
  the action lives in the text, as the model wrote it;
- ``tool`` entries answer the calls named in ``tool_call_ids``; a ``tool`` entry without them answers
  no call and is an error (strict) or skipped (lenient).

SWE-agent records no per-request usage, only run totals: ``info.model_stats`` (``tokens_sent``,
``tokens_received``, ``api_calls``, ``instance_cost``) is kept in the conversation's meta as
``recorded_totals``, and no message gets a ``usage``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation, Part
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import (
    BadRecord,
    Draft,
    Issues,
    check,
    content_parts,
    dumps_args,
    get,
    pair_calls,
)
from sim.formats._json_records import read_object_with_list

_EXPECTED = "a SWE-agent trajectory: a JSON object with a 'history' list of {role, content} messages"
_STATS = ("tokens_sent", "tokens_received", "api_calls", "instance_cost", "total_cost")


@FORMATS.register("swe-agent", "SWE-agent .traj JSON (history; text actions or function calls; run totals)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read one SWE-agent trajectory as one conversation."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    doc, lines = read_object_with_list(path, issues, "history", _EXPECTED)
    if not doc["history"]:
        raise issues.fatal(1, "'history' is empty: no message to import", _EXPECTED)
    drafts: list[Draft] = []
    call_names: dict[str, str] = {}
    for i, raw in enumerate(doc["history"]):
        what = f"history[{i}]"
        with issues.record(lines.of("history", i), what):
            drafts.append(_entry(raw, i, not drafts, call_names, what))
            drafts[-1].line = lines.of("history", i)
    meta: dict[str, Any] = {"source": "swe-agent"}
    with issues.record(lines.of("info"), "info"):
        meta.update(_info(doc))
    meta["function_calling"] = any(d.role == "tool" for d in drafts)
    meta["demo_messages"] = sum(1 for d in drafts if d.meta.get("is_demo"))
    agents = sorted({str(d.meta["agent"]) for d in drafts if "agent" in d.meta})
    meta["agents"] = agents
    if isinstance(doc.get("trajectory"), list):
        meta["trajectory_steps"] = len(doc["trajectory"])
    drafts = pair_calls(drafts, issues, "report")
    try:
        conv = Conversation(path.stem, tuple(d.build() for d in drafts), (), (), meta)
    except InvalidConfig as exc:
        issues.problem(None, str(exc))
        return result
    result.conversations.append(conv)
    return result


def _entry(raw: Any, i: int, first: bool, call_names: dict[str, str], what: str) -> Draft:
    """One history entry as a draft; shape errors raise, so a bad entry leaves nothing behind."""
    check(raw, dict, what)
    role = get(raw, "role", str, what)
    mid = f"h{i}"
    meta: dict[str, Any] = {}
    for key in ("message_type", "agent"):
        if isinstance(raw.get(key), str):
            meta[key] = raw[key]
    if raw.get("is_demo") is True:
        meta["is_demo"] = True
    if role == "system":
        if first:
            return Draft(mid, "system", content_parts(raw.get("content"), what), label=what, meta=meta)
        meta["source_role"] = "system"
        return Draft(mid, "user", content_parts(raw.get("content"), what), label=what, meta=meta)
    if role == "user":
        return Draft(mid, "user", content_parts(raw.get("content"), what), label=what, meta=meta)
    if role == "assistant":
        return _assistant(raw, mid, call_names, what, meta)
    if role == "tool":
        return _tool(raw, mid, call_names, what, meta)
    raise BadRecord(f"{what} role {role!r} is not one of system, user, assistant, tool")


def _assistant(raw: dict[str, Any], mid: str, call_names: dict[str, str], what: str, meta: dict[str, Any]) -> Draft:
    parts: list[Part] = []
    for k, block in enumerate(get(raw, "thinking_blocks", list, what, [])):
        bwhat = f"{what} thinking_blocks[{k}]"
        check(block, dict, bwhat)
        parts.append(Part("thinking", get(block, "thinking", str, bwhat, "")))
    parts.extend(p for p in content_parts(raw.get("content"), what) if p.text or not raw.get("tool_calls"))
    for k, call in enumerate(get(raw, "tool_calls", list, what, [])):
        cwhat = f"{what} tool_calls[{k}]"
        check(call, dict, cwhat)
        fn = get(call, "function", dict, cwhat)
        name = get(fn, "name", str, f"{cwhat} function")
        args = get(fn, "arguments", (str, dict), f"{cwhat} function", "")
        cid = get(call, "id", str, cwhat)
        call_names[cid] = name
        text_args = args if isinstance(args, str) else dumps_args(args)
        parts.append(Part("tool_call", call_id=cid, name=name, args=text_args))
    if isinstance(raw.get("action"), str) and not raw.get("tool_calls"):
        meta["action"] = raw["action"]
    return Draft(mid, "assistant", parts, label=what, meta=meta)


def _tool(raw: dict[str, Any], mid: str, call_names: dict[str, str], what: str, meta: dict[str, Any]) -> Draft:
    """An observation answering the calls in ``tool_call_ids`` (the text goes to the first of them)."""
    ids = [check(c, str, f"{what} tool_call_ids entry") for c in get(raw, "tool_call_ids", list, what)]
    if not ids:
        raise BadRecord(f"{what} is a tool message with an empty 'tool_call_ids': it answers no call")
    text = "\n".join(p.text for p in content_parts(raw.get("content"), what))
    parts = [
        Part("tool_result", text if k == 0 else "", call_id=cid, name=call_names.get(cid)) for k, cid in enumerate(ids)
    ]
    return Draft(mid, "tool", parts, label=what, meta=meta)


def _info(doc: dict[str, Any]) -> dict[str, Any]:
    """Run totals and outcome from ``info``; only numbers are taken from ``model_stats``."""
    info = get(doc, "info", dict, "the trajectory", {})
    out: dict[str, Any] = {}
    stats = get(info, "model_stats", dict, "info", None)
    if stats is not None:
        out["recorded_totals"] = {
            k: stats[k] for k in _STATS if isinstance(stats.get(k), (int, float)) and not isinstance(stats.get(k), bool)
        }
    if isinstance(info.get("exit_status"), str):
        out["exit_status"] = info["exit_status"]
    if isinstance(info.get("submission"), str):
        out["has_submission"] = bool(info["submission"])
    return out


@sniffer("swe-agent")
def sniff(path: Path, head: bytes) -> bool:
    """A ``.traj`` file holding a JSON object, or an object with SWE-agent's ``trajectory`` and ``history``."""
    text = head.lstrip()
    if text[:1] != b"{" or b'"trajectory_format"' in head or path.suffix == ".jsonl":
        return False
    if path.suffix == ".traj":
        return True
    compact = text.replace(b" ", b"").replace(b"\n", b"")
    return (
        b'"history":[' in compact
        and b'"message_type":' in compact
        and (b'"trajectory":[' in compact or b'"environment":' in compact)
    )
