"""The mock provider: renders a view in a provider's wire format and rejects what the provider rejects.

No model is called. The reply to an agent request is the scripted assistant message; what this module
models is the provider's side of the contract:

* the request body, in OpenAI chat (``messages`` with ``tool_calls`` and ``role: tool``) or Anthropic
  messages (``system`` apart, ``tool_use`` blocks answered by ``tool_result`` blocks in the next user
  message) form;
* the provider's validation: a tool result whose call is not in the message right before it, a call
  whose result is missing, or a prompt that with the output reserve exceeds the window, each raise a
  typed :class:`~sim.core.errors.ProviderError`, as the real API answers with a 400.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.core.conversation import Message, Part
from sim.core.errors import InvalidRequest, PromptTooLong
from sim.core.model import ModelConfig, fits_window


def _part_openai(p: Part) -> str:
    if p.kind == "change":
        return f"[change {p.ref}] {p.text}".rstrip()
    if p.kind == "revert":
        return f"[revert {p.ref}] {p.text}".rstrip()
    if p.kind == "command":
        return f"/{p.name} {p.text}".rstrip()
    return p.text


def render_message_openai(m: Message) -> list[dict[str, Any]]:
    """One log message (as the view edits it) as OpenAI chat messages (a tool message becomes one message
    per result)."""
    if m.role == "tool":
        return [{"role": "tool", "tool_call_id": p.call_id, "content": p.text} for p in m.parts]
    text = "\n".join(t for p in m.parts if p.kind not in ("tool_call", "thinking") and (t := _part_openai(p)))
    out: dict[str, Any] = {"role": m.role, "content": text}
    calls = [
        {"id": p.call_id, "type": "function", "function": {"name": p.name or "", "arguments": p.args or "{}"}}
        for p in m.parts
        if p.kind == "tool_call"
    ]
    if calls:
        out["tool_calls"] = calls
    return [out]


def render_message_anthropic(m: Message) -> dict[str, Any]:
    """One log message (as the view edits it) as an Anthropic message (role tool becomes a user message of
    tool_result blocks)."""
    blocks: list[dict[str, Any]] = []
    for p in m.parts:
        if p.kind == "tool_result":
            blocks.append({"type": "tool_result", "tool_use_id": p.call_id, "content": p.text, "is_error": p.is_error})
        elif p.kind == "tool_call":
            blocks.append({"type": "tool_use", "id": p.call_id, "name": p.name or "", "input": p.args or "{}"})
        elif p.kind == "thinking":
            blocks.append({"type": "thinking", "thinking": p.text})
        else:
            blocks.append({"type": "text", "text": _part_openai(p)})
    return {"role": "user" if m.role == "tool" else m.role, "content": blocks}


class OpenAIValidator:
    """OpenAI chat's message rules, checked one message at a time so a request that only grew since the
    last one is checked in O(new messages). ``copy`` forks the state to check a trailing extra."""

    def __init__(self) -> None:
        self.expected: set[str] = set()
        self.i = 0

    def copy(self) -> OpenAIValidator:
        v = OpenAIValidator()
        v.expected, v.i = set(self.expected), self.i
        return v

    def feed(self, msg: dict[str, Any]) -> None:
        i, self.i = self.i, self.i + 1
        role = msg["role"]
        if role == "tool":
            cid = msg.get("tool_call_id")
            if cid not in self.expected:
                raise InvalidRequest(
                    f"messages[{i}]: tool message with tool_call_id {cid!r} does not answer a tool call of the "
                    "preceding assistant message (OpenAI: 'messages with role tool must be a response to a "
                    "preceding message with tool_calls')"
                )
            self.expected.discard(cid)
            return
        if self.expected:
            raise InvalidRequest(
                f"messages[{i}]: tool calls {sorted(self.expected)} have no tool message answering them "
                "(OpenAI: 'an assistant message with tool_calls must be followed by tool messages')"
            )
        if role == "system" and i != 0:
            raise InvalidRequest(f"messages[{i}]: a system message after the first position")
        for call in msg.get("tool_calls", ()):
            self.expected.add(call["id"])

    def finish(self) -> None:
        if self.expected:
            raise InvalidRequest(f"the request ends with tool calls {sorted(self.expected)} that have no result")


class AnthropicValidator:
    """Anthropic's rules, streamed: consecutive same-role messages merge (as the API merges them), each
    assistant ``tool_use`` must be answered by ``tool_result`` blocks in the very next user message."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.role: str | None = None
        self.results: set[str] = set()
        self.uses: set[str] = set()
        self.i = -1

    def copy(self) -> AnthropicValidator:
        v = AnthropicValidator()
        v.pending, v.role, v.i = set(self.pending), self.role, self.i
        v.results, v.uses = set(self.results), set(self.uses)
        return v

    def feed(self, msg: dict[str, Any]) -> None:
        if msg["role"] == "system":
            return  # the system prompt travels apart from the messages
        if msg["role"] != self.role:
            self._close()
            self.role, self.results, self.uses, self.i = msg["role"], set(), set(), self.i + 1
        for b in msg["content"]:
            if b["type"] == "tool_result":
                self.results.add(b["tool_use_id"])
            elif b["type"] == "tool_use":
                self.uses.add(b["id"])

    def _close(self) -> None:
        if self.role is None:
            return
        i = self.i
        if self.role == "user":
            stray = self.results - self.pending
            if stray:
                raise InvalidRequest(
                    f"messages[{i}]: tool_result blocks {sorted(stray)} have no corresponding tool_use block in "
                    "the previous message (Anthropic: 'unexpected tool_use_id found in tool_result blocks')"
                )
            if self.pending - self.results:
                raise InvalidRequest(
                    f"messages[{i}]: tool_use ids {sorted(self.pending - self.results)} have no tool_result block "
                    "immediately after them (Anthropic: 'tool_use ids were found without tool_result blocks')"
                )
            self.pending = set()
        else:
            if self.pending:
                raise InvalidRequest(
                    f"messages[{i}]: tool_use ids {sorted(self.pending)} are followed by another assistant message "
                    "instead of their tool_result blocks"
                )
            self.pending = set(self.uses)

    def finish(self) -> None:
        self._close()
        self.role = None
        if self.pending:
            raise InvalidRequest(f"the request ends with tool_use ids {sorted(self.pending)} that have no result")


def validate_openai(messages: Sequence[dict[str, Any]]) -> None:
    """Raise InvalidRequest where OpenAI chat would: results must follow their calls, calls need results."""
    v = OpenAIValidator()
    for m in messages:
        v.feed(m)
    v.finish()


def validate_anthropic(messages: Sequence[dict[str, Any]]) -> None:
    """Raise InvalidRequest where Anthropic would: each tool_use answered in the very next user message."""
    v = AnthropicValidator()
    for m in messages:
        v.feed(m)
    v.finish()


def check_window(prompt_tokens: int, config: ModelConfig, max_output: int | None = None) -> None:
    """Raise PromptTooLong when the prompt plus the output cap does not fit the window."""
    reserve = config.output_reserve if max_output is None else max_output
    if not fits_window(prompt_tokens, config, max_output):
        raise PromptTooLong(
            f"prompt is too long: {prompt_tokens} tokens + {reserve} reserved for output > "
            f"{config.context_window} maximum",
            prompt_tokens,
            config.context_window,
        )
