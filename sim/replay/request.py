"""Requests as the provider receives them: rendering the view, and the provider's validation.

Rendering memoises each message's wire form (a message renders the same on every request), and
validation keeps the validator's state between requests while the view keeps its structure, so a
request that only grew costs O(new messages). A compaction that changes the structure resumes from the
newest saved validator state before the first place the two layouts differ, so a policy that edits only
recent messages (inspect's CompactionEdit moving its bounds) re-validates what changed, not the whole log.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from sim.core.conversation import Message
from sim.core.model import ModelConfig
from sim.core.state import Ledger
from sim.core.tokenizers import memoised
from sim.core.view import Edit, Item, Messages, Rule, TruncateFn, View, edited, layout, rule_for
from sim.replay import model as wire


def flat_pieces(m: Message) -> list[str]:
    """A message (as the view edits it) as plain text for the summariser, in pieces whose concatenation is
    the text: tool calls and results inline, error flags kept (without the flag a summariser could
    describe a failed operation as a success). Part texts stay whole pieces, so counting the pieces
    reuses the counts the agent's requests already made."""
    out = [f"{'assistant' if m.role == 'assistant' else 'user'}: "]
    first = True
    for p in m.parts:
        if p.kind == "tool_result":
            label = "error" if p.is_error else "result"
            piece = [f"[{p.name or 'tool'} {label} ", p.text, "]"]
        elif p.kind == "tool_call":
            piece = [f"[{p.name} ", p.args or "{}", "]"]
        elif p.kind in ("change", "revert"):
            piece = [f"[{p.kind} {p.ref}] ", p.text]
        elif p.kind == "command":
            piece = [f"/{p.name} ", p.text]
        elif p.text:
            piece = [p.text]
        else:
            continue
        if not first:
            out.append("\n")
        out.extend(piece)
        first = False
    return out


def head_pieces(pieces: list[str], n: int) -> list[str]:
    """The pieces of ``"".join(pieces)[:n]``: whole pieces from the start, the last one cut."""
    out: list[str] = []
    for p in pieces:
        if n <= 0:
            break
        out.append(p[:n])
        n -= len(p)
    return out


def tail_pieces(pieces: list[str], n: int) -> list[str]:
    """The pieces of ``"".join(pieces)[-n:]``: whole pieces from the end, the first one cut."""
    out: list[str] = []
    for p in reversed(pieces):
        if n <= 0:
            break
        out.append(p[-n:] if len(p) > n else p)
        n -= len(p)
    out.reverse()
    return out


def _same_structure(a: View, b: View) -> bool:
    """Views that differ at most in edits that keep every part (placeholders, truncations) send the same
    roles, calls and results, so a provider validates them alike."""
    if a is b:
        return True
    return (
        a.start == b.start
        and a.spans == b.spans
        and a.summary is b.summary
        and a.summary_slot == b.summary_slot
        and a.injected == b.injected
        and _drops(a) == _drops(b)
    )


def _drops(v: View) -> tuple[Edit, ...]:
    return tuple(e for e in v.edits if e.rule.action == "drop")


#: Layout units (log messages, summaries, injected messages) between two saved validator states.
CHECKPOINT_EVERY = 64


def _units(item: Item) -> int:
    return item.b - item.a if isinstance(item, Messages) else 1


def common_units(old: list[Item], new: list[Item]) -> int:
    """How many leading layout units (one per log message, summary or injected message) ``old`` and
    ``new`` render alike, conservatively: a range whose rules differ counts as differing from its start."""
    k = 0
    for a, b in zip(old, new, strict=False):  # the shorter layout ends the comparison
        if a == b:
            k += _units(a)
            continue
        if isinstance(a, Messages) and isinstance(b, Messages) and a.a == b.a and a.rules == b.rules:
            k += min(a.b, b.b) - a.a
        break
    return k


def _starts_with_thinking(m: Message) -> bool:
    """Whether ``m``'s first part that says something (not blank text) is thinking."""
    first = next((p for p in m.parts if p.kind != "text" or p.text.strip()), None)
    return first is not None and first.kind == "thinking"


@dataclass(frozen=True)
class FinalTurn:
    """How a request ends: ``mid_turn``, inside an assistant turn (its trailing user message carries tool
    results); ``opening``, the log index of the turn's first assistant message (None: none in it); ``after_item``,
    an assistant-role message the simulator wrote (a summary) sits right before that one; ``fresh``, the request
    ends with a user message of words or with what the simulator wrote, so the reply to it opens a turn afresh."""

    mid_turn: bool
    opening: int | None
    after_item: bool
    fresh: bool


def _text_of(m: Message) -> str:
    """``m.text`` without joining a one-part message's only text (the same string object, so comparing it with the
    text the run began with is a pointer test until someone edits it)."""
    parts = m.parts
    if len(parts) == 1 and parts[0].kind != "thinking":
        return parts[0].text
    return m.text


class RequestBuilder:
    """Renders views of one run's log (through :func:`sim.core.view.layout`) and validates them as the configured
    provider would."""

    def __init__(
        self,
        ledger: Ledger,
        model: ModelConfig,
        has_system: bool,
        memo: dict[tuple[int, object], tuple[object, Any]] | None = None,
        truncate: TruncateFn | None = None,
    ) -> None:
        self.ledger, self.model, self.has_system = ledger, model, has_system
        self.truncate = truncate
        # Renderings by message object, shareable between the runs of a worker (see
        # CountingTokenizer.derived): a message renders the same in every run and every request.
        self._memo = {} if memo is None else memo
        self._val_view: View | None = None
        self._val: wire.AnthropicValidator | wire.OpenAIValidator = self._new_validator()
        self._val_upto = 0
        # Validator states after 0, CHECKPOINT_EVERY, 2 * CHECKPOINT_EVERY, ... layout units of the
        # validated view (never mutated once saved, so copies of this builder may share them).
        self._checkpoints: list[wire.AnthropicValidator | wire.OpenAIValidator] = []
        self._fed = 0  # layout units fed to ``_val``
        self._sys_checked: tuple[View, str | None] | None = None
        self._turn: tuple[tuple[View, int, bool], FinalTurn] | None = None

    def _new_validator(self) -> wire.AnthropicValidator | wire.OpenAIValidator:
        return wire.AnthropicValidator() if self.model.provider == "anthropic" else wire.OpenAIValidator()

    def copy(self, ledger: Ledger) -> RequestBuilder:
        """This builder, validation state included, over ``ledger`` (a copy of this one's)."""
        other = copy.copy(self)
        other.ledger, other._val = ledger, self._val.copy()
        other._checkpoints = list(self._checkpoints)
        return other

    def reset(self) -> None:
        """Forget the validation state (after a rejected request)."""
        self._val_view = None

    def message(self, i: int, rules: tuple[Rule, ...]) -> Message | None:
        """Message ``i`` as ``rules`` edit it (None: nothing of it is sent), memoised per message object."""
        m = self.ledger.messages[i]
        if not rules:
            return m
        return memoised(self._memo, m, ("edited", rules), lambda m: edited(m, rules, self.truncate))

    def _rendered(self, i: int, rules: tuple[Rule, ...]) -> list[dict[str, Any]]:
        """Message ``i`` in the wire format, memoised per message object."""
        m = self.ledger.messages[i]
        key = (id(m), (self.model.provider, rules))
        hit = self._memo.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]  # type: ignore[no-any-return]
        e = self.message(i, rules)
        if e is None:
            r: list[dict[str, Any]] = []
        elif self.model.provider == "anthropic":
            r = [wire.render_message_anthropic(e)]
        else:
            r = wire.render_message_openai(e)
        self._memo[key] = (m, r)
        return r

    def _text_message(self, role: str, text: str) -> dict[str, Any]:
        if self.model.provider == "anthropic":
            return {"role": role, "content": [{"type": "text", "text": text}]}
        return {"role": role, "content": text}

    def _render_items(self, items: list[Item]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for item in items:
            if isinstance(item, Messages):
                for i in range(item.a, item.b):
                    out += self._rendered(i, item.rules)
            else:
                out.append(self._text_message(item.role, item.text))
        return out

    def render(self, view: View, status: str | None = None) -> list[dict[str, Any]]:
        """The whole request's messages (system first) in the configured wire format."""
        out = self._render_items(layout(view, len(self.ledger.messages), self.has_system))
        if status:
            out.append(self._text_message("user", status))
        return out

    def validate(self, view: View, status: str | None) -> None:
        """The provider's validation of the request, in O(new messages) while the view is unchanged.

        The validator's state after what was validated is kept between requests; a compaction that changes
        the request's structure starts it over. Messages appended since are past every edit's bound.
        """
        n = len(self.ledger.messages)
        if self._val_view is None or not _same_structure(self._val_view, view):
            self._revalidate(view, n)
        else:
            for i in range(self._val_upto, n):
                self._feed_unit(self._rendered(i, view.rules_at(i)))
        self._val_upto = n
        final = self._val.copy()
        if status:
            final.feed(self._text_message("user", status))
        final.finish()

    def _feed_unit(self, rendered: list[dict[str, Any]]) -> None:
        for m in rendered:
            self._val.feed(m)
        self._fed += 1
        if self._fed % CHECKPOINT_EVERY == 0:
            self._checkpoints.append(self._val.copy())

    def _revalidate(self, view: View, n: int) -> None:
        """Validate ``view`` from the newest saved state before its first difference from the last view."""
        new = layout(view, n, self.has_system)
        keep = 0
        if self._val_view is not None and self._checkpoints:
            same = common_units(layout(self._val_view, n, self.has_system), new)
            keep = min(same // CHECKPOINT_EVERY, len(self._checkpoints) - 1)
        if keep:
            del self._checkpoints[keep + 1 :]
            self._val = self._checkpoints[keep].copy()
        else:
            self._checkpoints = [self._new_validator()]
            self._val = self._checkpoints[0].copy()
        self._fed, skip = keep * CHECKPOINT_EVERY, keep * CHECKPOINT_EVERY
        for item in new:
            size = _units(item)
            if skip >= size:
                skip -= size
                continue
            if isinstance(item, Messages):
                for i in range(item.a + skip, item.b):
                    self._feed_unit(self._rendered(i, item.rules))
            else:
                self._feed_unit([self._text_message(item.role, item.text)])
            skip = 0
        self._val_view = view

    def final_turn(self, view: View) -> FinalTurn:
        """The shape of the request for ``view`` at its end (:class:`FinalTurn`). A turn runs from a user message
        of words (a user message, or a user-role summary or injected message) to the next one; tool results do not
        end it (Anthropic's tool loop is one assistant turn). Walking back from the end costs the length of the
        final turn, once per view and user message (memoised)."""
        n = len(self.ledger.messages)
        key = (view, self.ledger.last_user, bool(n) and self.ledger.messages[-1].role == "tool")
        if self._turn is not None and self._turn[0][0] is view and self._turn[0][1:] == key[1:]:
            return self._turn[1]
        msgs = self.ledger.messages
        items = layout(view, n, self.has_system)
        fresh = bool(items) and not isinstance(items[-1], Messages)  # ends with what the simulator wrote
        mid_turn, trailing, opening, after_item = False, True, None, False
        for item in reversed(items):
            if isinstance(item, Messages):
                for i in range(item.b - 1, item.a - 1, -1):
                    role = msgs[i].role
                    if role == "tool":
                        mid_turn = mid_turn or trailing
                        continue
                    if role in ("user", "system"):
                        fresh = fresh or (trailing and role == "user")
                        return self._remember(key, FinalTurn(mid_turn, opening, after_item, fresh))
                    trailing, opening, after_item = False, i, False
            elif item.role == "user":
                if not trailing:
                    return self._remember(key, FinalTurn(mid_turn, opening, after_item, fresh))
            else:  # an assistant-role summary or injected message: it merges with an assistant message after it
                trailing = False
                after_item = after_item or opening is not None
        return self._remember(key, FinalTurn(mid_turn, opening, after_item, fresh))

    def _remember(self, key: tuple[View, int, bool], turn: FinalTurn) -> FinalTurn:
        self._turn = (key, turn)
        return turn

    def thinking_problem(self, view: View) -> str | None:
        """Why Anthropic would reject the request for ``view`` for its thinking, or None: with thinking on, while
        an assistant turn is in progress the turn's opening assistant message must start with its thinking block,
        unmodified ("When thinking is enabled, a final assistant message must start with a thinking block"; the
        extended-thinking docs, "Preserving thinking blocks"). A reply that opened a turn afresh (``Ledger.openers``:
        its request ended with a user message of words, or with what the simulator wrote, a summary the model
        answers from) stands for what the model wrote then, thinking included; a scripted reply that was a later
        step of a loop did not open one, and a request that opens its final turn with it (a cut inside the live
        tool loop) is rejected, as the API rejects it, when the turn opened with thinking in the log (a turn the
        recording shows without it ran without). An assistant-role summary right before it merges with it into one
        message that starts with the summary's text."""
        if not self.ledger.thinking:
            return None
        turn = self.final_turn(view)
        if not turn.mid_turn or turn.opening is None or turn.opening in self.ledger.openers:
            return None
        msgs = self.ledger.messages
        k = turn.opening  # the turn's own opening in the log: thinking binds a turn that opened with it
        while k > 0 and msgs[k - 1].role in ("tool", "assistant"):
            k -= 1
        while k < turn.opening and msgs[k].role != "assistant":
            k += 1
        if k != turn.opening and not _starts_with_thinking(msgs[k]):
            return None
        m = msgs[turn.opening]
        first = next((p for p in m.parts if p.kind != "text" or p.text.strip()), None)
        rules = view.rules_at(turn.opening)
        if turn.after_item:
            what = "follows an assistant-role message the simulator wrote, so their merged message starts with text"
        elif first is None or first.kind != "thinking":
            what = "starts with no thinking block"
        elif rules and rule_for(first, rules) is not None:
            what = "has its thinking block edited"
        else:
            return None
        return (
            f"message {turn.opening} ({m.id!r}) opens the request's final assistant turn, which is still in "
            f"progress, and {what} (Anthropic: a final assistant message must start with an unmodified thinking "
            "block)"
        )

    def system_problem(self, view: View) -> str | None:
        """Why the request's first message is not the byte-identical system prompt, or None."""
        if not self.has_system:
            return None
        if _text_of(self.ledger.messages[0]) != self.ledger.first_text:  # the log's copy replaced or edited in place
            return "the system prompt sent differs from the one the run began with"
        if self._sys_checked is not None and self._sys_checked[0] is view:  # views are immutable
            return self._sys_checked[1]
        problem = self._system_problem(view)
        self._sys_checked = (view, problem)
        return problem

    def _system_problem(self, view: View) -> str | None:
        items = layout(view, len(self.ledger.messages), self.has_system)
        head = self._render_items(items[:1])
        first = head[0] if head else None
        if first is None or first.get("role") != "system":
            return "the first message of the request is not the system prompt"
        content = first["content"]
        sent = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
        if sent != self.ledger.messages[0].text:
            return "the system prompt sent differs from the recorded one"
        return None
