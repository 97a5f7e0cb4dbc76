"""Lone UTF-16 surrogates in recordings: found where JSON is parsed, refused (strict) or replaced (lenient).

Text decoded from UTF-8 never holds a surrogate code point, but JSON can: ``"\\ud800"`` is valid JSON and
parses to a one-character string that cannot be encoded back to UTF-8, so it would fail much later, when
a run hashes the conversation or the native writer saves it. Every reader therefore passes what it parsed
through :func:`mend_surrogates`, which decides once for all formats: strict mode refuses the file naming
the line of the escape, lenient mode replaces each lone surrogate with U+FFFD and lists the repair.
:func:`surrogate_at` is the last check :func:`sim.formats.read` makes of every importer's output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sim.core.conversation import Conversation
from sim.core.errors import FormatError

if TYPE_CHECKING:
    from sim.formats._common import Issues

#: A UTF-16 surrogate code point. Text decoded from UTF-8 never holds one; JSON can (``"\\ud800"`` is valid
#: JSON), and a string holding one cannot be written back as UTF-8, so every reader mends or refuses it here.
_SURROGATE = re.compile("[\ud800-\udfff]")
#: A ``\\uD8xx``-``\\uDFxx`` escape, with the run of backslashes before it (an even run is an escaped backslash).
_SURROGATE_ESCAPE = re.compile(r"(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})")
SURROGATE_PROBLEM = "a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair) is not text"
SURROGATE_HINT = "fix the string, or pass --lenient to replace each one with U+FFFD"


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (a lone one: a parsed pair is one character)."""
    return _SURROGATE.search(text) is not None


def mend_surrogates(value: Any, issues: Issues, line: int | None, text: str | None = None) -> Any:
    """``value`` (parsed JSON) with no lone surrogate left: strict mode refuses one, naming its line (found in
    ``text``, the JSON it was parsed from, when ``line`` is None); lenient mode replaces each with U+FFFD
    and lists the repair. With ``text``, a value whose JSON has no surrogate escape costs one regex search.
    """
    if text is not None and (r"\u" not in text or next(_lone_escapes(text), None) is None):
        return value
    if not _walk_strings(value, fix=False):
        return value
    if line is None and text is not None:
        pos = next(_lone_escapes(text), None)
        line = None if pos is None else text.count("\n", 0, pos) + 1
    if not issues.lenient:
        raise FormatError(issues.path, line, SURROGATE_PROBLEM, SURROGATE_HINT)
    issues.repaired(line, "lone UTF-16 surrogates replaced by U+FFFD")
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    _walk_strings(value, fix=True)
    return value


def _lone_escapes(text: str) -> Iterator[int]:
    """Positions of the surrogate escapes in JSON ``text`` that do not pair up (a high one, then a low one)."""
    pending: tuple[int, int] | None = None  # the last high surrogate escape: (start, end)
    for m in _SURROGATE_ESCAPE.finditer(text):
        if len(m.group(1)) % 2 == 0:
            continue  # "\\\\ud800": an escaped backslash, then plain letters
        start = m.start() + len(m.group(1)) - 1
        high = m.group(2)[1].lower() in "89ab"
        if pending is not None:
            if not high and start == pending[1]:
                pending = None
                continue
            yield pending[0]
            pending = None
        if high:
            pending = (start, m.end())
        else:
            yield start
    if pending is not None:
        yield pending[0]


def _walk_strings(value: Any, *, fix: bool) -> bool:
    """Whether a string (or key) of ``value`` holds a surrogate; with ``fix``, replace each with U+FFFD in
    place. Iterative: a JSON value may nest as deep as the parser allowed."""
    found = False
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            bad_keys = [k for k in node if isinstance(k, str) and has_surrogate(k)]
            if bad_keys and not fix:
                return True
            found = found or bool(bad_keys)
            for k in bad_keys:
                node[_SURROGATE.sub("\ufffd", k)] = node.pop(k)
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        elif isinstance(node, str):
            return has_surrogate(node)
        else:
            continue
        for k, v in items:
            if isinstance(v, str):
                if has_surrogate(v):
                    if not fix:
                        return True
                    found = True
                    node[k] = _SURROGATE.sub("\ufffd", v)
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return found


def surrogate_at(conversation: Conversation) -> str | None:
    """Where a string of ``conversation`` still holds a lone surrogate ("message 'm3'"), or None: the check
    :func:`sim.formats.read` makes of every importer's output, whatever the reader missed."""
    c = conversation
    if has_surrogate(c.id) or _walk_strings([dict(c.meta)], fix=False):
        return "its id or meta"
    for t in c.tools:
        if any(has_surrogate(x) for x in (t.name, t.description, t.parameters)):
            return f"tool {t.name!r}"
    for m in c.messages:
        texts = [m.id, *m.resolves]
        for p in m.parts:
            texts.extend(x for x in (p.text, p.call_id, p.name, p.args, p.ref) if x)
        if any(has_surrogate(x) for x in texts) or _walk_strings([dict(m.meta)], fix=False):
            return f"message {m.id!r}"
    for f in c.facts:
        if any(has_surrogate(x) for x in (f.id, f.text, f.source, *f.needed_at)):
            return f"fact {f.id!r}"
    return None
