"""Content kinds: prose, code and JSON, the kinds a provider's tokenizer and ours split differently.

Claude's tokenizer spends more tokens than cl100k_base on code than on prose (fitted on the shared Claude Code
main sessions: 1.20 provider tokens per engine token of code, 0.98 of prose, 0.86 of JSON), so one ratio over a
whole prompt is right only for that prompt's mix. The calibration (:mod:`sim.calibration.fit`) fits one ratio per
kind where that predicts better than one ratio, and what the simulator writes (a summary, a placeholder, a
truncated tool result) is estimated with the ratio of its own kind.

The kind of a text is decided by looking at it, cheaply and deterministically:

- ``json``: it parses as a JSON object or array (and a tool call's arguments always are);
- ``code``: at least three non-blank lines, half or more of which look like code (numbered lines as file-reading
  tools print them, indented lines, lines ending in a bracket, brace, semicolon or ``=``, or opening with a
  keyword, decorator or comment marker);
- ``prose``: everything else, and the thinking of a reply.

A message's framing (the engine's per-message and per-part overheads, tool names) counts as prose: the
provider's framing tokens are no more code than the words around them, and a separate ratio for them fitted no
better held out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Literal

from sim.core.conversation import Message
from sim.core.model import MESSAGE_OVERHEAD, PART_OVERHEAD

Kind = Literal["prose", "code", "json"]
KINDS: tuple[Kind, ...] = ("prose", "code", "json")

_CODE_LINE = re.compile(
    r"^\s*\d+[→\t]"  # a numbered line, as Read / cat -n print files
    r"|^(?: {2,}|\t)\S"  # indented
    r"|[{};=()\[\]]\s*$"  # ends like a statement or a block
    r"|^\s*(?:def |class |import |from |return |function |const |let |var |if |for |while |#include|@|//|#)"
)
#: Lines of a text looked at to decide its kind: enough to judge, and a long tool result costs no more.
_SAMPLE_LINES = 200
#: :data:`_CODE_LINE` over many lines at once (joined by newlines): one match per line that looks like code, found in
#: one pass (a search per line cost most of the calibration's reading of a long session). Its whitespace stops at
#: the newline, so a match never runs into the next line; a test holds the two to the same count.
_CODE_LINES = re.compile(
    r"^(?:[^\S\n]*\d+[→\t]|(?: {2,}|\t)\S|[^\S\n]*(?:def |class |import |from |return |function |const |let |var "
    r"|if |for |while |#include|@|//|#)).*$"
    r"|^.*[{};=()\[\]][^\S\n]*$",
    re.MULTILINE,
)


def kind_of(text: str) -> Kind:
    """The kind of ``text`` (see the module docstring)."""
    s = text.lstrip()
    if s[:1] in ("{", "["):
        try:
            json.loads(s)
            return "json"
        except ValueError:
            pass
    lines = [line for line in text.splitlines()[:_SAMPLE_LINES] if line.strip()]
    if len(lines) < 3:
        return "prose"
    need = (len(lines) + 1) // 2  # code when half or more look like it: stop counting once they do
    for found, _ in enumerate(_CODE_LINES.finditer("\n".join(lines)), 1):
        if found >= need:
            return "code"
    return "prose"


def message_kinds(m: Message, count: Callable[[str], int]) -> tuple[int, int, int]:
    """``m``'s tokens by kind (prose, code, JSON) as the engine counts it (``count``: the run's tokenizer); they
    add up to the engine's count of the message, framing included (a test holds them together)."""
    out = {"prose": MESSAGE_OVERHEAD, "code": 0, "json": 0}
    for p in m.parts:
        if p.text:
            out["prose" if p.kind == "thinking" else kind_of(p.text)] += count(p.text)
        if p.kind in ("tool_call", "tool_result"):
            out["prose"] += PART_OVERHEAD + count(p.name or "")
            out["json"] += count(p.args or "")
        elif p.kind in ("change", "revert", "command"):
            out["prose"] += PART_OVERHEAD
    return out["prose"], out["code"], out["json"]
