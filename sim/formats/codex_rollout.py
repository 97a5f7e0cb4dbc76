"""Importer of Codex CLI session rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Facts of the format, read from the openai/codex repository:

- ``codex-rs/protocol/src/protocol.rs``: each line is a ``RolloutLine`` ``{timestamp, type, payload}``
  where ``type``/``payload`` is the ``RolloutItem`` tagged union: ``session_meta`` (``SessionMeta``:
  ``id``, ``timestamp``, ``cwd``, ``originator``, ``cli_version``, ``instructions`` or
  ``base_instructions``, ``model_provider``), ``response_item`` (a Responses API item),
  ``compacted`` (``CompactedItem {message, replacement_history?}``), ``turn_context``
  (``TurnContextItem``: ``cwd``, ``model``, approval and sandbox policy) and ``event_msg``
  (``EventMsg``, tagged by ``type``). A ``token_count`` event carries
  ``info: {total_token_usage, last_token_usage, model_context_window}`` (or null), each a
  ``TokenUsage {input_tokens, cached_input_tokens, output_tokens, reasoning_output_tokens,
  total_tokens}``; ``input_tokens`` includes the cached ones.
- ``codex-rs/protocol/src/models.rs``: ``ResponseItem`` is ``message``, ``reasoning``,
  ``local_shell_call``, ``function_call``, ``function_call_output`` (output a string or a list of
  content items), ``custom_tool_call``/``custom_tool_call_output``, ``web_search_call``,
  ``ghost_snapshot``, ``compaction``.

Mapping: response items are folded by :class:`sim.formats.openai_responses.ItemFolder`, keeping one
assistant message per model response (a response's calls and their outputs can interleave in the
file: Codex records each call next to its output); a ``token_count`` event closes the response and
its ``last_token_usage`` becomes that message's usage (a repeated event with an unchanged total is
ignored). Other events (``user_message``, ``agent_message``, ``agent_reasoning``, ``exec_command_*``)
repeat what the response items hold and are counted in meta. A ``compacted`` line is a compaction:
its summary becomes a ``user`` message marked ``compact_summary``, listed in ``meta["compactions"]``.
``ghost_snapshot`` items (git snapshots the harness takes, never sent to the model) are skipped.
Calls left without an output (an interrupted turn) are repaired with an aborted result.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation, Part, Usage
from sim.core.errors import InvalidConfig
from sim.formats import FORMATS, ImportResult, sniffer
from sim.formats._common import BadRecord, Draft, Issues, check, get, pair_calls, read_jsonl
from sim.formats._json_records import compact_head
from sim.formats.openai_responses import ItemFolder

_EXPECTED = "a Codex CLI rollout (JSONL, one {timestamp, type, payload} record per line)"
_KINDS = frozenset({"session_meta", "response_item", "compacted", "turn_context", "event_msg"})


def codex_usage(raw: Any, what: str) -> Usage:
    """A Codex ``TokenUsage`` as ours: the cached tokens are taken out of ``input_tokens``."""
    check(raw, dict, what)
    total_in = get(raw, "input_tokens", int, what, 0)
    cached = get(raw, "cached_input_tokens", int, what, 0)
    if cached > total_in:
        raise BadRecord(f"{what} has cached_input_tokens {cached} above input_tokens {total_in}")
    return Usage(total_in - cached, get(raw, "output_tokens", int, what, 0), cached, 0)


@FORMATS.register("codex-rollout", "Codex CLI session rollout JSONL (response items, token_count usage, compactions)")
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read one rollout file as one conversation."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    state = _Rollout()
    for line, obj in read_jsonl(path, issues, _EXPECTED):
        with issues.record(line, "record"):
            state.add(obj, line)
    conv = state.finish(path, issues)
    if conv is not None:
        result.conversations.append(conv)
    return result


class _Rollout:
    """The rollout being read: folded items, session facts, and what the events said."""

    def __init__(self) -> None:
        self.folder = ItemFolder(merge_after_outputs=True)
        self.meta: dict[str, Any] = {"source": "codex-rollout"}
        self.models: set[str] = set()
        self.events: Counter[str] = Counter()
        self.last_total: Any = None
        self.unattached = 0
        self.ids: set[str] = set()

    def add(self, obj: Any, line: int) -> None:
        check(obj, dict, "record")
        kind = get(obj, "type", str, "record")
        payload = get(obj, "payload", dict, f"{kind} record")
        if kind == "session_meta":
            self._session(payload)
        elif kind == "response_item":
            if payload.get("type") == "ghost_snapshot":
                self.events["ghost_snapshot"] += 1
                return
            self.folder.add(payload, f"l{line}", line, f"response_item (line {line})")
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self.models.add(payload["model"])
        elif kind == "event_msg":
            self._event(payload, line)
        elif kind == "compacted":
            message = get(payload, "message", str, "compacted record")
            self.folder.close()
            self.folder.drafts.append(
                Draft(
                    f"l{line}",
                    "user",
                    [Part("text", message)],
                    line,
                    f"compaction summary (line {line})",
                    meta={"compact_summary": True},
                )
            )
        else:
            raise BadRecord(f"record type {kind!r} is not one of {', '.join(sorted(_KINDS))}")

    def _session(self, payload: dict[str, Any]) -> None:
        sid = get(payload, "id", str, "session_meta payload")
        if "id" in self.meta:
            raise BadRecord(f"a second session_meta (id {sid!r}); a rollout holds one session")
        instructions = payload.get("instructions", payload.get("base_instructions"))
        if isinstance(instructions, dict):
            instructions = instructions.get("text")
        if instructions is not None:
            check(instructions, str, "session_meta instructions")
        self.meta["id"] = sid
        for key in ("cli_version", "originator", "cwd", "model_provider"):
            if isinstance(payload.get(key), str):
                self.meta[key] = payload[key]
        if instructions and not self.folder.drafts:
            self.folder.instructions(instructions, None, "session_meta instructions")

    def _event(self, payload: dict[str, Any], line: int) -> None:
        kind = get(payload, "type", str, "event_msg payload")
        self.events[kind] += 1
        if kind != "token_count":
            return
        info = get(payload, "info", dict, "token_count event", None)
        if info is None:
            return
        total = info.get("total_token_usage")
        usage = codex_usage(get(info, "last_token_usage", dict, "token_count info"), "last_token_usage")
        if total is not None and total == self.last_total:
            return  # the same count again (Codex repeats it on rate-limit updates)
        self.last_total = total
        target = self.folder.close()
        if target is None or target.usage is not None:
            self.unattached += 1
            return
        target.usage = usage
        window = info.get("model_context_window")
        if isinstance(window, int):
            self.meta["model_context_window"] = window

    def finish(self, path: Path, issues: Issues) -> Conversation | None:
        drafts = pair_calls(self.folder.drafts, issues, "repair")
        cid = self.meta.pop("id", None) or path.stem
        self.meta.update(
            {
                "models": sorted(self.models),
                "events": dict(sorted(self.events.items())),
                "compactions": [
                    {"index": i, "line": d.line} for i, d in enumerate(drafts) if d.meta.get("compact_summary")
                ],
                "unattached_token_counts": self.unattached,
            }
        )
        if not drafts:
            issues.problem(None, "the rollout holds no response items", _EXPECTED)
            return None
        try:
            return Conversation(cid, tuple(d.build() for d in drafts), (), tuple(self.folder.tools), self.meta)
        except InvalidConfig as exc:
            issues.problem(None, str(exc))
            return None


@sniffer("codex-rollout")
def sniff(path: Path, head: bytes) -> bool:
    """JSONL whose records are ``{timestamp, type, payload}`` with a RolloutItem type."""
    compact = compact_head(head.split(b"\n", 1)[0])
    return compact[:1] == b"{" and b'"payload":' in compact and any(f'"type":"{k}"'.encode() in compact for k in _KINDS)
