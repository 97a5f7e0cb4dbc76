"""What the model sees at one request: a fold over the log, never a rewrite of it.

A :class:`View` is a small immutable value that names positions in the log:

* **spans**: a few closed ranges ``[a, b)`` of kept messages (the first user message, a kept window),
  and ``start``, where the open-ended kept tail begins;
* **a summary** standing in for what is not kept, with its role and its place among the spans
  (``summary_slot``: before ``spans[slot]``, the tail counting as the last span);
* **edits**: typed changes to the parts of messages before a bound, each a position-free
  :class:`Rule` (which part kinds, which tools, what to do: a placeholder, a drop, a truncation)
  plus the bound ``before``. A part takes the first rule of the view that selects it;
* **injected** messages: content the policy adds that is not in the log (re-attached files,
  re-injected instructions, an acknowledgement), each at a slot like the summary.

Every compaction record in the log carries the whole view it produces, so the view at any point is
the view of the newest compaction before it (:func:`fold`), and a run can resume from any record.

:func:`layout` is the one place that says in which order a view renders; request rendering, token
counts, fact visibility, the summariser's input and the invariants all go through it. Edits only
ever reach messages before their bound, which is at most the log's length when the view was made,
so messages appended later are never edited and sizes stay prefix sums (see ``sim.core.state.Ledger``).
"""

from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Generic, Literal, NamedTuple, TypeVar

from sim.core.conversation import PART_KINDS, Message, Part
from sim.core.errors import InvalidConfig

DEFAULT_PLACEHOLDER = "[tool result cleared by compaction]"
DEFAULT_MARKER = "[... {n} tokens truncated ...]"
Action = Literal["placeholder", "drop", "truncate"]
#: ``(text, max_tokens, head_share, marker) -> text``: a tokenizer's truncation (``CountingTokenizer.truncate``).
TruncateFn = Callable[[str, int, float, str], str]
Role = Literal["user", "assistant"]
_PART_KINDS = frozenset(PART_KINDS)


@dataclass(frozen=True, slots=True)
class Rule:
    """Which parts of a message an edit touches and what it does to them; no position.

    Attributes:
        kinds: part kinds selected (``tool_result``, ``tool_call``, ``thinking``, ``text``...).
        tools: only parts of these tools (by the part's ``name``); None selects every tool. Parts
            without a tool name (text, thinking) are selected only when this is None.
        exclude_tools: never parts of these tools (Anthropic's ``exclude_tools``).
        action: ``placeholder`` replaces the content (a tool call's input, any other part's text)
            with ``text``; ``drop`` removes the part (a message left empty is not sent);
            ``truncate`` keeps ``max_tokens`` tokens of the text, ``head_share`` of them from the
            start and the rest from the end, with ``text`` between (``{n}``: tokens cut).
        text: the placeholder (``{lines}`` in it: the replaced text's line count, as SWE-agent's "Old
            environment output: (N lines omitted)"), or the truncation marker (a truncate rule left with the default
            placeholder gets :data:`DEFAULT_MARKER`).
    """

    kinds: frozenset[str] = frozenset({"tool_result"})
    tools: frozenset[str] | None = None
    exclude_tools: frozenset[str] = frozenset()
    action: Action = "placeholder"
    text: str = DEFAULT_PLACEHOLDER
    max_tokens: int = 0
    head_share: float = 0.5

    def __post_init__(self) -> None:
        if not self.kinds or not self.kinds <= _PART_KINDS:
            raise InvalidConfig(
                f"Rule kinds {sorted(self.kinds)} must be a non-empty subset of {', '.join(PART_KINDS)}"
            )
        if self.action not in ("placeholder", "drop", "truncate"):
            raise InvalidConfig(f"Rule action {self.action!r} must be 'placeholder', 'drop' or 'truncate'")
        if self.action == "truncate" and self.text == DEFAULT_PLACEHOLDER:
            object.__setattr__(self, "text", DEFAULT_MARKER)
        if self.action == "truncate" and (self.max_tokens < 1 or not 0.0 <= self.head_share <= 1.0):
            raise InvalidConfig(
                f"a truncate rule needs max_tokens >= 1 (got {self.max_tokens}) and 0 <= head_share "
                f"<= 1 (got {self.head_share})"
            )

    def placeholder_for(self, p: Part) -> str:
        """The placeholder text that replaces ``p`` (``{lines}`` filled with the line count of what it replaces)."""
        if "{lines}" not in self.text:
            return self.text
        old = p.args or "" if p.kind == "tool_call" else p.text
        return self.text.replace("{lines}", str(len(old.splitlines())))

    def selects(self, p: Part) -> bool:
        if p.kind not in self.kinds:
            return False
        if self.tools is not None and (p.name is None or p.name not in self.tools):
            return False
        return not (p.name is not None and p.name in self.exclude_tools)


@dataclass(frozen=True, slots=True)
class Edit:
    """A :class:`Rule` applied to the messages before index ``before``."""

    rule: Rule
    before: int


@functools.cache
def standard_rule(placeholder: str = DEFAULT_PLACEHOLDER) -> Rule:
    """The commonest rule: tool results replaced by ``placeholder`` (a ``Plan``'s ``cleared_through``)."""
    return Rule(text=placeholder)


def clear_results(before: int, placeholder: str = DEFAULT_PLACEHOLDER) -> Edit:
    """The commonest edit: tool results before ``before`` replaced by ``placeholder``."""
    return Edit(standard_rule(placeholder), before)


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary standing in for messages that left the view.

    Attributes:
        text: the summary as the model sees it (already wrapped by the policy's wrapper).
        facts: ids of facts the summary retains.
        through: messages before this index are covered (summarised or earlier summaries).
        compaction_id: the compaction that produced it.
        role: the role of the message that carries it.
        rounds: per retained fact, how many summaries it has been through, this one included (the mock
            summariser's draw is keyed by the fact and its round: ``sim.replay.summariser``).
    """

    text: str
    facts: frozenset[str] = frozenset()
    through: int = 0
    compaction_id: str = ""
    role: Role = "user"
    rounds: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Injected:
    """A message the policy adds that is not in the log, counted and priced like any other.

    ``slot`` places it like the summary (before ``spans[slot]``; None: right before the tail), after
    the summary of the same slot unless ``before_summary``. ``facts``: ids of facts it carries; a fact
    whose text appears in ``text`` is shown anyway (a re-attached file shows what the file showed).
    """

    text: str
    role: Role = "user"
    slot: int | None = None
    before_summary: bool = False
    facts: frozenset[str] = frozenset()
    label: str = ""


@dataclass(frozen=True, slots=True)
class View:
    """The model-visible state, as positions into the log's messages."""

    start: int = 0
    spans: tuple[tuple[int, int], ...] = ()
    summary: Summary | None = None
    summary_slot: int | None = None
    edits: tuple[Edit, ...] = ()
    injected: tuple[Injected, ...] = ()
    placeholder: str = DEFAULT_PLACEHOLDER
    checkpoint: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    # Derived once, for the hot paths (rules_at on every message validated, cleared_through in every decision).
    _bounds: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _rules: tuple[tuple[Rule, ...], ...] = field(init=False, repr=False, compare=False)
    _cleared: int = field(init=False, repr=False, compare=False)
    _reach: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bounds = tuple(sorted({e.before for e in self.edits}))
        rules = tuple(tuple(e.rule for e in self.edits if lo < e.before) for lo in (-1, *bounds))
        std = standard_rule(self.placeholder)
        object.__setattr__(self, "_bounds", bounds)
        object.__setattr__(self, "_rules", rules)
        object.__setattr__(self, "_cleared", next((e.before for e in self.edits if e.rule == std), 0))
        object.__setattr__(self, "_reach", max((self.start, *(b for _, b in self.spans))))
        if any(a >= b for a, b in self.spans) or any(
            x[1] > y[0] for x, y in zip(self.spans, self.spans[1:], strict=False)
        ):
            raise InvalidConfig(
                f"a view's spans must be sorted, disjoint ranges (a, b) with a < b, got {self.spans[:8]}"
                f"{'...' if len(self.spans) > 8 else ''}: build them with spans_of"
            )

    @classmethod
    def of(
        cls,
        start: int = 0,
        cleared_through: int = 0,
        pinned: Iterable[int] = (),
        summary: Summary | None = None,
        placeholder: str = DEFAULT_PLACEHOLDER,
    ) -> View:
        """The classic view: a kept tail from ``start``, single pinned messages, results cleared before a bound."""
        return cls(
            start=start,
            spans=spans_of(p for p in pinned if p < start),
            summary=summary,
            edits=(clear_results(cleared_through, placeholder),) if cleared_through > 0 else (),
            placeholder=placeholder,
        )

    def shows(self, index: int) -> bool:
        """Whether message ``index`` is in the view (possibly edited). The system prompt is always shown;
        :func:`layout` puts it first whatever the view says."""
        if index >= self.start:
            return True
        k = bisect_right(self.spans, index, key=_span_start) - 1  # spans are sorted and disjoint (spans_of)
        return k >= 0 and index < self.spans[k][1]

    @property
    def reach(self) -> int:
        """The first message index past every span and the tail's start: from a log this long on, what the view
        keeps of it before the tail is fixed (the log is append-only)."""
        return self._reach

    @property
    def pinned(self) -> tuple[int, ...]:
        """The messages of the closed spans, one by one."""
        return tuple(i for a, b in self.spans for i in range(a, b))

    @property
    def cleared_through(self) -> int:
        """The bound of the view's standard edit (tool results replaced by its placeholder), 0 if none."""
        return self._cleared

    def is_cleared(self, index: int) -> bool:
        """Whether message ``index``'s tool results are replaced by the standard placeholder."""
        return index < self.cleared_through

    def rules_at(self, index: int) -> tuple[Rule, ...]:
        """The rules that reach message ``index``, in the view's order (the first that selects a part wins)."""
        if not self._bounds or index >= self._bounds[-1]:
            return ()
        return self._rules[bisect_right(self._bounds, index)]

    def with_(self, **changes: object) -> View:
        return replace(self, **changes)  # type: ignore[arg-type]


def _span_start(span: tuple[int, int]) -> int:
    return span[0]


def spans_of(indices: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """Sorted indices as the fewest half-open ranges."""
    out: list[list[int]] = []
    for i in sorted(set(indices)):
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return tuple((a, b) for a, b in out)


class Messages(NamedTuple):
    """Log messages ``[a, b)`` in the layout, all edited by ``rules``."""

    a: int
    b: int
    rules: tuple[Rule, ...]


Item = Messages | Summary | Injected


def _split(a: int, b: int, view: View) -> Iterator[Messages]:
    """``[a, b)`` cut where the set of rules that reach a message changes."""
    bounds = view._bounds[bisect_right(view._bounds, a) : bisect_left(view._bounds, b)]  # sorted: a < x < b
    lo = a
    for hi in [*bounds, b]:
        if hi > lo:
            yield Messages(lo, hi, view.rules_at(lo))
        lo = hi


T = TypeVar("T")


class ByView(Generic[T]):
    """Values made of the last few views asked about, by identity and a key: a view is immutable, so what is made
    of it stays true, and each is held while here, so its id is not reused. The oldest goes first past ``kept``."""

    def __init__(self, kept: int = 8) -> None:
        self._kept = kept
        self._values: dict[tuple[int, object], tuple[View, T]] = {}

    def get(self, view: View, key: object, make: Callable[[], T]) -> T:
        """``make()`` for ``view`` and ``key``, made once while it is here."""
        hit = self._values.get((id(view), key))
        if hit is None or hit[0] is not view:
            if len(self._values) >= self._kept:
                del self._values[next(iter(self._values))]
            hit = self._values[(id(view), key)] = (view, make())
        return hit[1]


#: Recent views' layouts up to their tail: a request lays its view out several times (rendering, counts, validation,
#: its final turn) and a view may hold thousands of spans (openai-agents-session keeps every user message), while the
#: tail is all that grows.
_HEADS: ByView[tuple[Item, ...]] = ByView()
#: Below this many spans a layout is cheaper to make again than to look up.
_HEAD_SPANS = 16


def layout(view: View, n: int, has_system: bool) -> list[Item]:
    """The view in render order: the system prompt (message 0 when ``has_system``, never edited), then
    for each slot the injected messages placed before its summary, the summary, the other injected
    messages of that slot, and the slot's span; the last slot's span is the tail ``[start, n)``.
    O(spans + edits + injected) once per view; after that, while ``n`` reaches past the view's spans, the part
    before the tail is reused and a layout costs a copy of it and the tail's split."""
    if len(view.spans) < _HEAD_SPANS or n < max(view.reach, 1):
        return _layout(view, n, has_system)
    head = _HEADS.get(view, has_system, lambda: tuple(_layout(view, view.reach, has_system, tail=False)))
    return [*head, *_split(max(view.start, 1 if has_system else 0), n, view)]


def _layout(view: View, n: int, has_system: bool, tail: bool = True) -> list[Item]:
    """:func:`layout` made afresh; without ``tail``, everything before the tail's messages."""
    out: list[Item] = []
    lo = 1 if has_system else 0
    if has_system and n:
        out.append(Messages(0, 1, ()))
    ranges = [*view.spans, (view.start, n)]
    last = len(ranges) - 1
    summary_slot = last if view.summary_slot is None else min(view.summary_slot, last)
    by_slot: dict[int, list[Injected]] = {}  # once per layout, not once per span: a view may hold thousands
    for x in view.injected:
        by_slot.setdefault(last if x.slot is None else min(x.slot, last), []).append(x)
    plain = not view._bounds  # no edits: each range is one item, without splitting it
    for k, (a, b) in enumerate(ranges):
        if by_slot or summary_slot == k:
            slot_injected = by_slot.get(k, [])
            out.extend(x for x in slot_injected if x.before_summary)
            if view.summary is not None and summary_slot == k:
                out.append(view.summary)
            out.extend(x for x in slot_injected if not x.before_summary)
        if tail or k < last:
            a, b = max(a, lo), min(b, n)
            if plain:
                if b > a:
                    out.append(Messages(a, b, ()))
            else:
                out.extend(_split(a, b, view))
    return out


def rule_for(p: Part, rules: tuple[Rule, ...]) -> Rule | None:
    """The rule that edits part ``p``: the first of ``rules`` that selects it."""
    return next((r for r in rules if r.selects(p)), None)


def edit_parts(m: Message, rules: tuple[Rule, ...], truncate: TruncateFn | None = None) -> tuple[Part | None, ...]:
    """Each part of ``m`` as ``rules`` leave it (None: dropped), aligned with ``m.parts``."""
    if not rules:
        return m.parts
    out: list[Part | None] = []
    for p in m.parts:
        rule = rule_for(p, rules)
        if rule is None:
            out.append(p)
        elif rule.action == "drop":
            out.append(None)
        elif rule.action == "placeholder":
            text = rule.placeholder_for(p)
            out.append(replace(p, args=text) if p.kind == "tool_call" else replace(p, text=text))
        else:
            cut = (truncate or truncate_chars4)(p.text, rule.max_tokens, rule.head_share, rule.text)
            out.append(replace(p, text=cut))
    return tuple(out)


#: Part kinds a provider frames as tool blocks: each carries its call id (Anthropic's tool_use ``id`` and
#: tool_result ``tool_use_id``, OpenAI's ``call_id``), which the engine's count leaves out (a calibration's
#: ``per_call_id_token``, :mod:`sim.calibration.fit`).
TOOL_BLOCK_KINDS = frozenset({"tool_call", "tool_result"})


def call_id_tokens(m: Message, count: Callable[[str], int], rules: tuple[Rule, ...] = ()) -> int:
    """Tokens (by ``count``) of the call ids of the tool calls and results ``m`` sends under ``rules`` (a dropped
    one is not sent; one cleared or truncated is, id and all)."""
    n = 0
    for p in m.parts:
        if p.kind in TOOL_BLOCK_KINDS:
            rule = rule_for(p, rules) if rules else None
            if rule is None or rule.action != "drop":
                n += count(p.call_id or "")
    return n


def edited(m: Message, rules: tuple[Rule, ...], truncate: TruncateFn | None = None) -> Message | None:
    """``m`` as the view shows it under ``rules``; None when every part is dropped (the message is not sent)."""
    if not rules:
        return m
    parts = edit_parts(m, rules, truncate)
    if parts == m.parts:
        return m
    kept = tuple(p for p in parts if p is not None)
    if not kept:
        return None
    return Message(m.id, m.role, kept, m.pending, m.resolves, m.usage, m.meta)


def truncate_chars4(text: str, max_tokens: int, head_share: float, marker: str) -> str:
    """Truncation at four characters a token (the ``chars4`` tokenizer's, and the fallback without one)."""
    keep = 4 * max_tokens
    if len(text) <= keep:
        return text
    head = round(keep * head_share)
    cut = -(-(len(text) - keep) // 4)
    return text[:head] + marker.replace("{n}", str(cut)) + (text[len(text) - (keep - head) :] if keep > head else "")


def edited_chars(m: Message, rules: tuple[Rule, ...], truncate: TruncateFn | None = None) -> int:
    """Characters of ``m`` as ``rules`` leave it, as a client measures them: an untouched part counts its
    text, arguments and name; a part replaced by a placeholder counts the placeholder only; a truncated
    part its name, arguments and what is left of its text; a dropped part nothing."""
    if not rules:
        return m.chars
    total = 0
    for p in m.parts:
        rule = rule_for(p, rules)
        if rule is None:
            total += p.chars
        elif rule.action == "placeholder":
            total += len(rule.placeholder_for(p))
        elif rule.action == "truncate":
            cut = (truncate or truncate_chars4)(p.text, rule.max_tokens, rule.head_share, rule.text)
            total += p.chars - len(p.text) + len(cut)
    return total


def fold(events: Iterable[object], initial: View | None = None) -> View:
    """The view after ``events``: the view of the newest compaction record, or ``initial`` (the run's first
    view: the empty view with the policy's placeholder) when nothing was compacted yet."""
    view = initial if initial is not None else View()
    for ev in events:
        v = getattr(ev, "view", None)
        if getattr(ev, "kind", None) == "compaction" and isinstance(v, View):
            view = v
    return view
