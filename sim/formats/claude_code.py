"""Importer of Claude Code session transcripts (``~/.claude/projects/*/<session>.jsonl``).

Claude Code's transcripts are the richest public recordings of real compaction: they hold every
message of a long session, the provider's usage for every reply, and a ``compact_boundary`` record
where the session was compacted, followed by the summary that replaced the history. What the
simulator needs is the message script, so this importer:

- skips bookkeeping records (``progress``, ``file-history-snapshot``, ``queue-operation``,
  ``summary``, and ``system`` records other than ``compact_boundary``) and counts them in meta;
- skips subagent records (``isSidechain: true``) of a main session file, counting them; a file that
  holds nothing but sidechain records is a subagent transcript and is read as one;
- merges the lines of one API response (one content block per line, all repeating ``message.id``)
  into one assistant message, taking usage from the response's last line (the earlier lines can
  carry placeholder ``output_tokens``); a response's later blocks can arrive after the results of its
  earlier tool calls, and still belong to the same message;
- turns user records holding ``tool_result`` blocks into ``tool`` messages, user text into ``user``
  messages, and a slash command (``<command-name>/compact</command-name>``) into a ``command`` part;
- marks the message after a ``compact_boundary`` with ``meta["compact_boundary"]``, lists the
  compactions in the conversation's meta, and marks the summary (``isCompactSummary``) message;
- marks a user message that reports a finished background task (its text opens with
  ``<task-notification>``) with ``meta["task_notification"]``: the client re-sends its history there in a
  form the prompt cache does not match (see :mod:`sim.replay.caching`);
- repairs calls left without a result (an interrupted tool use) with an aborted result, listing
  each repair in ``ImportResult.skipped``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation, Part
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import BadRecord, Draft, Issues, check, get, pair_calls, read_jsonl
from sim.formats.anthropic_messages import assistant_parts, block_text
from sim.formats.usage import anthropic_usage

_EXPECTED = "a Claude Code session transcript (JSONL, one record per line with 'type', 'uuid', 'message')"
_BOOKKEEPING = frozenset({"progress", "file-history-snapshot", "queue-operation", "summary"})
_COMMAND_NAME = re.compile(r"<command-name>\s*/?(.*?)\s*</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)


@FORMATS.register("claude-code", "Claude Code session JSONL (split responses merged, compactions kept)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read one Claude Code transcript as one conversation."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    records = list(read_jsonl(path, issues, _EXPECTED))
    session = _Session(path, subagent=_is_subagent_file(records))
    for line, obj in records:
        with issues.record(line, "record"):
            session.add(obj, line)
    conv = session.finish(issues)
    if conv is not None:
        result.conversations.append(conv)
    return result


def _is_subagent_file(records: list[tuple[int, Any]]) -> bool:
    """A file whose every message record is a sidechain is a subagent's own transcript."""
    flags = [
        obj.get("isSidechain") is True
        for _, obj in records
        if isinstance(obj, dict) and obj.get("type") in ("user", "assistant")
    ]
    return bool(flags) and all(flags)


@dataclass
class _Session:
    """The transcript being read: drafts so far, and what merging and marking need to remember."""

    path: Path
    subagent: bool
    drafts: list[Draft] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    by_api_id: dict[str, Draft] = field(default_factory=dict)
    open_assistant: Draft | None = None
    boundary: dict[str, Any] | None = None
    call_names: dict[str, str] = field(default_factory=dict)
    skipped_types: Counter[str] = field(default_factory=Counter)
    unknown_types: set[str] = field(default_factory=set)
    sidechains: int = 0
    session_id: str | None = None
    agent_id: str | None = None
    version: str | None = None
    models: set[str] = field(default_factory=set)

    # --- dispatch -----------------------------------------------------------------------------

    def add(self, obj: Any, line: int) -> None:
        """Take one record; parsing finishes before any state changes, so a bad record leaves no trace."""
        check(obj, dict, "record")
        kind = get(obj, "type", str, "record")
        if kind == "system":
            self._system(obj)
        elif kind not in ("user", "assistant"):
            self.skipped_types[kind] += 1
            if kind not in _BOOKKEEPING:  # newer than this importer: say so in meta, do not fail
                self.unknown_types.add(kind)
        elif obj.get("isSidechain") is True and not self.subagent:
            self.sidechains += 1
        elif kind == "assistant":
            self._assistant(obj, line)
        else:
            self._user(obj, line)

    def _system(self, obj: dict[str, Any]) -> None:
        subtype = obj.get("subtype")
        if subtype != "compact_boundary":
            self.skipped_types[f"system:{subtype}"] += 1
            return
        meta = get(obj, "compactMetadata", dict, "compact_boundary record", {})
        self.boundary = {"trigger": meta.get("trigger"), "pre_tokens": meta.get("preTokens")}

    def _note_source(self, obj: dict[str, Any]) -> None:
        if self.session_id is None and isinstance(obj.get("sessionId"), str):
            self.session_id = obj["sessionId"]
        if self.agent_id is None and isinstance(obj.get("agentId"), str):
            self.agent_id = obj["agentId"]
        if self.version is None and isinstance(obj.get("version"), str):
            self.version = obj["version"]

    def _push(self, draft: Draft) -> None:
        """Append a new message, giving it a pending compaction mark."""
        if draft.id in self.ids:
            raise BadRecord(f"uuid {draft.id!r} appears twice")
        if self.boundary is not None:
            draft.meta["compact_boundary"] = self.boundary
            self.boundary = None
        self.ids.add(draft.id)
        self.drafts.append(draft)

    # --- assistant ----------------------------------------------------------------------------

    def _assistant(self, obj: dict[str, Any], line: int) -> None:
        uuid = get(obj, "uuid", str, "assistant record")
        what = f"assistant record {uuid}"
        message = get(obj, "message", dict, what)
        api_id = get(message, "id", str, f"{what} message")
        parts = assistant_parts(message.get("content"), what)
        usage = anthropic_usage(message.get("usage"), what)
        model = message.get("model")
        self._note_source(obj)
        for p in parts:
            if p.kind == "tool_call":
                self.call_names[p.call_id or ""] = p.name or ""
        if isinstance(model, str) and not model.startswith("<"):
            self.models.add(model)
        same = self.by_api_id.get(api_id)
        if same is not None and same is self.open_assistant:
            same.parts.extend(parts)
            same.usage = usage or same.usage
            same.meta["records"] += 1
            return
        meta: dict[str, Any] = {"api_id": api_id, "line": line, "records": 1}
        if isinstance(model, str):
            meta["model"] = model
        raw_usage = message.get("usage")
        creation = raw_usage.get("cache_creation") if isinstance(raw_usage, dict) else None
        one_hour = creation.get("ephemeral_1h_input_tokens") if isinstance(creation, dict) else None
        if isinstance(one_hour, int) and one_hour > 0:  # of the cache writes, those with the 1-hour TTL
            meta["cache_write_1h"] = one_hour
        if isinstance(obj.get("timestamp"), str):
            meta["timestamp"] = obj["timestamp"]
        if same is not None:
            meta["api_id_repeated"] = True  # the id reappears after a user message: kept apart
        draft = Draft(uuid, "assistant", parts, line, f"assistant message {uuid} (line {line})", usage, meta)
        self._push(draft)
        self.by_api_id.setdefault(api_id, draft)
        self.open_assistant = draft

    # --- user ---------------------------------------------------------------------------------

    def _user(self, obj: dict[str, Any], line: int) -> None:
        uuid = get(obj, "uuid", str, "user record")
        what = f"user record {uuid}"
        message = get(obj, "message", dict, what)
        content = message.get("content")
        meta: dict[str, Any] = {"line": line}
        if isinstance(obj.get("timestamp"), str):
            meta["timestamp"] = obj["timestamp"]
        if obj.get("isMeta") is True:
            meta["is_meta"] = True
        if obj.get("isCompactSummary") is True:
            meta["compact_summary"] = True
        if _opens_with(content, "<task-notification>"):
            meta["task_notification"] = True
        if isinstance(content, str):
            drafts = [
                Draft(
                    uuid,
                    "user",
                    [_text_or_command(content)],
                    line,
                    f"user message {uuid} (line {line})",
                    meta=meta,
                )
            ]
        else:
            drafts = self._user_blocks(check(content, list, f"{what} content"), uuid, line, meta, what)
        self._note_source(obj)
        for d in drafts:
            self._push(d)
            if d.role == "user":
                self.open_assistant = None

    def _user_blocks(self, blocks: list[Any], uuid: str, line: int, meta: dict[str, Any], what: str) -> list[Draft]:
        """Tool results become one tool message; any other blocks a user message after it."""
        results: list[Part] = []
        others: list[Part] = []
        for k, block in enumerate(blocks):
            bwhat = f"{what} content[{k}]"
            check(block, dict, bwhat)
            if block.get("type") == "tool_result":
                results.append(self._result(block, bwhat))
            else:
                others.append(Part("text", block_text(block, bwhat)))
        drafts: list[Draft] = []
        if results:
            drafts.append(Draft(uuid, "tool", results, line, f"tool results {uuid} (line {line})", meta=dict(meta)))
        if others or not results:
            uid = f"{uuid}~text" if results else uuid
            drafts.append(Draft(uid, "user", others, line, f"user message {uuid} (line {line})", meta=meta))
        return drafts

    def _result(self, block: dict[str, Any], what: str) -> Part:
        cid = get(block, "tool_use_id", str, what)
        content = block.get("content")
        if content is None or isinstance(content, str):
            text = content or ""
        else:
            text = "\n".join(block_text(b, f"{what} content") for b in check(content, list, f"{what} content"))
        is_error = get(block, "is_error", bool, what, False)
        return Part("tool_result", text, call_id=cid, name=self.call_names.get(cid), is_error=is_error)

    # --- the conversation ---------------------------------------------------------------------

    def finish(self, issues: Issues) -> Conversation | None:
        """Repair open calls, locate the compactions, and build the conversation."""
        drafts = pair_calls(self.drafts, issues, "repair")
        compactions = [
            {"index": i, **d.meta["compact_boundary"]} for i, d in enumerate(drafts) if "compact_boundary" in d.meta
        ]
        if self.boundary is not None:  # a compaction with nothing after it
            compactions.append({"index": len(drafts), **self.boundary})
        meta: dict[str, Any] = {
            "source": "claude-code",
            "session_id": self.session_id,
            "subagent": self.subagent,
            "version": self.version,
            "models": sorted(self.models),
            "sidechain_records": self.sidechains,
            "skipped_records": dict(sorted(self.skipped_types.items())),
            "compactions": compactions,
        }
        if self.agent_id is not None:
            meta["agent_id"] = self.agent_id
        if self.unknown_types:
            meta["unknown_record_types"] = sorted(self.unknown_types)
        cid = self.session_id or self.path.stem
        if self.subagent and self.agent_id:
            cid = f"{cid}/agent-{self.agent_id}"
        try:
            return Conversation(cid, tuple(d.build() for d in drafts), (), (), meta)
        except InvalidConfig as exc:
            issues.problem(None, str(exc))
            return None


# --- blocks ----------------------------------------------------------------------------------


def _opens_with(content: object, tag: str) -> bool:
    """Whether a user record's content (a string, or one of its text blocks) opens with ``tag``."""
    texts = [b.get("text") for b in content if isinstance(b, dict)] if isinstance(content, list) else [content]
    return any(isinstance(t, str) and t.lstrip().startswith(tag) for t in texts)


def _text_or_command(content: str) -> Part:
    """A slash command's record as a ``command`` part (name without the slash, text the arguments)."""
    if content.lstrip().startswith("<command-"):
        name = _COMMAND_NAME.search(content)
        if name and name.group(1):
            args = _COMMAND_ARGS.search(content)
            return Part("command", args.group(1).strip() if args else "", name=name.group(1))
    return Part("text", content)


@sniffer("claude-code")
def sniff(path: Path, head: bytes) -> bool:
    """JSONL whose records carry Claude Code's session keys."""
    first = head.lstrip()[:1]
    return first == b"{" and b'"sessionId"' in head and (b'"parentUuid"' in head or b'"uuid"' in head)
