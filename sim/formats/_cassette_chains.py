"""The calls of one agent run in a cassette: which interaction re-sends an earlier one's whole request, and
whether a request shows all it holds as text (see :mod:`sim.formats.vcr_cassette`, which reads the cassette)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

from sim.core.conversation import Conversation

#: Request keys that do not change what the provider counts as the prompt.
_SAMPLING = frozenset(
    {
        "max_tokens",
        "max_output_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "top_k",
        "stream",
        "stream_options",
        "metadata",
        "store",
        "seed",
        "n",
        "user",
        "service_tier",
    }
)
#: What a request may hold for its text to be all the provider counts, by wire format: message or item types,
#: content block types, and tool types (None: a tool without ``type``, as Anthropic's client tools are).
_TEXT_ONLY: dict[str, tuple[set[str], set[str], set[str | None]]] = {
    "anthropic": ({"user", "assistant"}, {"text", "tool_use", "tool_result"}, {None, "custom"}),
    "openai-responses": (
        {"message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"},
        {"input_text", "output_text", "text"},
        {"function", "custom"},
    ),
    "openai-chat": ({"system", "developer", "user", "assistant", "tool"}, {"text"}, {"function"}),
}


class Chains:
    """Links each interaction to the earlier one of the same file whose whole request its request begins with
    (the rules are in :mod:`sim.formats.vcr_cassette`). A request's messages are hashed prefix by prefix, so each is
    read once."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.seen: dict[tuple[str, int, bytes], tuple[str, int | None]] = {}  # (head, length, digest) -> (id, chain)

    def place(self, conv: Conversation, kind: str, body: dict[str, Any]) -> Conversation:
        """``conv`` with its session, and its links when its request continues an earlier one."""
        meta: dict[str, Any] = {"session": self.session}
        items = body.get("input" if kind == "openai-responses" else "messages")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        if isinstance(items, list):
            meta |= self._link(conv.id, conv.meta["interaction"], kind, body, items)
        return replace(conv, meta={**conv.meta, **meta})

    def _link(self, cid: str, index: int, kind: str, body: dict[str, Any], items: list[Any]) -> dict[str, Any]:
        head = json.dumps(
            {k: v for k, v in body.items() if k not in _SAMPLING and k not in ("input", "messages")},
            sort_keys=True,
            default=str,
        )
        hashes = [b""]  # the digest of each prefix of ``items``, each item read once
        for item in items:
            hashes.append(hashlib.sha256(hashes[-1] + json.dumps(item, sort_keys=True, default=str).encode()).digest())
        text_only = _text_only(kind, body, items)
        out: dict[str, Any] = {}
        for n in range(len(items) - 1, 0, -1):
            earlier = self.seen.get((head, n, hashes[n]))
            if earlier is not None:
                out["continues"] = earlier[0]
                if text_only and earlier[1] is not None:
                    out["chain"] = earlier[1]
                break
        self.seen[(head, len(items), hashes[-1])] = (cid, out.get("chain", index) if text_only else None)
        return out


def _text_only(kind: str, body: dict[str, Any], items: list[Any]) -> bool:
    """Whether the provider counts nothing in this request that its text does not show (:data:`_TEXT_ONLY`)."""
    if kind not in _TEXT_ONLY:
        return False
    types, blocks, tools = _TEXT_ONLY[kind]
    if any(not isinstance(t, dict) or t.get("type") not in tools for t in body.get("tools") or ()):
        return False
    responses = kind == "openai-responses"
    for item in items:
        if not isinstance(item, dict):
            return False
        what = (item.get("type") or ("message" if "role" in item else None)) if responses else item.get("role")
        if what not in types:
            return False
        if what == "message" or not responses:
            content = item.get("content")
            if content is not None and not isinstance(content, str) and not _blocks_text_only(content, blocks):
                return False
        elif not isinstance(item.get("output", ""), str):
            return False
    return True


def _blocks_text_only(content: Any, blocks: set[str]) -> bool:
    if not isinstance(content, list):
        return False
    for block in content:
        if not isinstance(block, dict) or block.get("type") not in blocks:
            return False
        inner = block.get("content")  # an Anthropic tool_result's own blocks
        if inner is not None and not isinstance(inner, str) and not _blocks_text_only(inner, {"text"}):
            return False
    return True
