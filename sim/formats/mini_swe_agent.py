"""Importer of mini-swe-agent trajectories (``*.traj.json``, ``trajectory_format: "mini-swe-agent-1"``).

mini-swe-agent saves a run as one JSON object (``minisweagent/run/utils/save.py``, ``save_traj``; in
2.x ``DefaultAgent.serialize``): ``info`` (``exit_status``, ``submission``, ``model_stats`` with
``instance_cost`` and ``api_calls``, ``mini_version``, ``config``), ``messages`` (the agent's message
list, exactly what the model is sent) and ``trajectory_format`` (``"mini-swe-agent-1"``; 2.x writes
``"mini-swe-agent-1.1"``). Each assistant message carries ``extra.response``, the LiteLLM
``ModelResponse`` of that call with its ``usage`` (``models/litellm_model.py``); observations carry
``extra.raw_output`` and ``extra.returncode``. Facts from ``SWE-agent/mini-swe-agent``.

The mapping: the first ``system`` message opens the conversation; ``user`` messages (the task,
observations, format-error feedback) stay ``user``; ``assistant`` messages become assistant text
plus any ``tool_calls`` (2.x tool-call mode) with the call's recorded usage; ``tool`` messages
(2.x) answer them by ``tool_call_id``. The ``exit`` message 2.x appends at the end was never sent to
a model: it is left out and its status kept in meta. Usage is read with
:func:`sim.formats.usage.any_usage`; a message without ``extra.response.usage`` gets none.
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
    shown,
)
from sim.formats._json_records import read_object_with_list
from sim.formats.usage import any_usage

_EXPECTED = (
    "a mini-swe-agent trajectory: a JSON object with 'messages' and 'trajectory_format': 'mini-swe-agent-1' (or 1.x)"
)
_FORMAT_PREFIX = "mini-swe-agent-1"


@FORMATS.register("mini-swe-agent", "mini-swe-agent .traj.json (messages with per-call usage in extra.response)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read one mini-swe-agent trajectory as one conversation."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    doc, lines = read_object_with_list(path, issues, "messages", _EXPECTED)
    version = doc.get("trajectory_format")
    if not (isinstance(version, str) and version.startswith(_FORMAT_PREFIX)):
        problem = f"trajectory_format is {shown(version)}, not {_FORMAT_PREFIX!r} or 1.x"
        raise issues.fatal(lines.of("trajectory_format") or 1, problem, _EXPECTED)
    drafts: list[Draft] = []
    call_names: dict[str, str] = {}
    exits: list[str] = []
    for i, raw in enumerate(doc["messages"]):
        what = f"messages[{i}]"
        with issues.record(lines.of("messages", i), what):
            check(raw, dict, what)
            if raw.get("role") == "exit":
                exits.append(str(raw.get("content") or ""))
                continue
            drafts.append(_message(raw, i, not drafts, call_names, what))
            drafts[-1].line = lines.of("messages", i)
    if not drafts:
        raise issues.fatal(1, "'messages' holds no message to import", _EXPECTED)
    meta: dict[str, Any] = {"source": "mini-swe-agent", "trajectory_format": version}
    with issues.record(lines.of("info"), "info"):
        meta.update(_info(doc))
    if exits:
        meta["exit_messages"] = len(exits)
    drafts = pair_calls(drafts, issues, "report")
    cid = doc["instance_id"] if isinstance(doc.get("instance_id"), str) and doc["instance_id"] else _stem(path)
    try:
        conv = Conversation(cid, tuple(d.build() for d in drafts), (), (), meta)
    except InvalidConfig as exc:
        issues.problem(None, str(exc))
        return result
    result.conversations.append(conv)
    return result


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".traj.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _message(raw: dict[str, Any], i: int, first: bool, call_names: dict[str, str], what: str) -> Draft:
    role = get(raw, "role", str, what)
    mid = f"m{i}"
    extra = get(raw, "extra", dict, what, {})
    meta: dict[str, Any] = {}
    if isinstance(extra.get("interrupt_type"), str):
        meta["interrupt_type"] = extra["interrupt_type"]
    if isinstance(extra.get("returncode"), int) and not isinstance(extra.get("returncode"), bool):
        meta["returncode"] = extra["returncode"]
    if role == "system":
        if first:
            return Draft(mid, "system", content_parts(raw.get("content"), what), label=what)
        meta["source_role"] = "system"
        return Draft(mid, "user", content_parts(raw.get("content"), what), label=what, meta=meta)
    if role == "user":
        return Draft(mid, "user", content_parts(raw.get("content"), what), label=what, meta=meta)
    if role == "assistant":
        return _assistant(raw, extra, mid, call_names, what, meta)
    if role == "tool":
        cid = get(raw, "tool_call_id", str, what)
        text = "\n".join(p.text for p in content_parts(raw.get("content"), what))
        part = Part("tool_result", text, call_id=cid, name=call_names.get(cid))
        return Draft(mid, "tool", [part], label=what, meta=meta)
    raise BadRecord(f"{what} role {role!r} is not one of system, user, assistant, tool, exit")


def _assistant(
    raw: dict[str, Any], extra: dict[str, Any], mid: str, call_names: dict[str, str], what: str, meta: dict[str, Any]
) -> Draft:
    parts: list[Part] = []
    reasoning = raw.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(Part("thinking", reasoning))
    calls = get(raw, "tool_calls", list, what, [])
    parts.extend(p for p in content_parts(raw.get("content"), what) if p.text or not calls)
    for k, call in enumerate(calls):
        cwhat = f"{what} tool_calls[{k}]"
        check(call, dict, cwhat)
        fn = get(call, "function", dict, cwhat)
        name = get(fn, "name", str, f"{cwhat} function")
        args = get(fn, "arguments", (str, dict), f"{cwhat} function", "")
        cid = get(call, "id", str, cwhat)
        call_names[cid] = name
        text_args = args if isinstance(args, str) else dumps_args(args)
        parts.append(Part("tool_call", call_id=cid, name=name, args=text_args))
    response = get(extra, "response", dict, f"{what} extra", None)
    usage = None
    if response is not None:
        usage = any_usage(response.get("usage"), f"{what} extra.response")
        if isinstance(response.get("model"), str):
            meta["model"] = response["model"]
    cost = extra.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        meta["cost"] = cost
    return Draft(mid, "assistant", parts, label=what, usage=usage, meta=meta)


def _info(doc: dict[str, Any]) -> dict[str, Any]:
    info = get(doc, "info", dict, "the trajectory", {})
    out: dict[str, Any] = {}
    stats = get(info, "model_stats", dict, "info", None)
    if stats is not None:
        out["recorded_totals"] = {
            k: v for k, v in sorted(stats.items()) if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
    for key in ("exit_status", "mini_version"):
        if isinstance(info.get(key), str):
            out[key] = info[key]
    config = info.get("config")
    if isinstance(config, dict) and isinstance(config.get("model"), dict):
        name = config["model"].get("model_name")
        if isinstance(name, str):
            out["model_name"] = name
    return out


@sniffer("mini-swe-agent")
def sniff(path: Path, head: bytes) -> bool:
    """Its ``trajectory_format`` in the head, or a ``.traj.json`` file holding an object with ``messages``.

    ``trajectory_format`` is written last, so in a long file only the name gives it away.
    """
    text = head.lstrip()
    if text[:1] != b"{" or path.suffix == ".jsonl":
        return False
    compact = text.replace(b" ", b"").replace(b"\n", b"")
    if b'"format":"csim-conversation"' in text.split(b"\n", 1)[0].replace(b" ", b""):
        return False  # our own format, whose meta may quote the trajectory_format
    if b'"trajectory_format":"mini-swe-agent-1' in compact:
        return True
    return path.name.endswith(".traj.json") and b'"messages":[' in compact
