"""Probes mined from a recording: the facts a recorded conversation establishes and needs again, found without a model.

A synthetic scenario knows its facts because it wrote them; a recording does not, so without this module its
``facts`` are empty and retention cannot be measured on the users' own sessions. :func:`mine_probes` reads the
script alone (deterministic, no model, no randomness) and returns :class:`~sim.core.conversation.Fact` values with
``mined=True``, of three families:

**Artifacts** (kind ``artifact``): identifiers the environment or the user gave the agent and the agent used
again later. A candidate is a token of one of these shapes (:data:`ARTIFACT_SHAPES`): a file path (with a slash
and an extension, or absolute), a URL, a dotted module or symbol (``Spotter.Services.Tmux``), a snake_case or
camelCase identifier, an issue or ticket id (``spotter-a0y.1``), a hexadecimal id or hash (seven or more hex
digits with a letter and a digit), a UUID, a distinctive number (four or more digits, years left out), and a
whole shell command the agent runs that appeared verbatim earlier. Its *source* is the earliest message that
carries it, and it is a probe only when that message is a user or tool message: an identifier the agent coined
first (a file it created) is its own, not something it was told. Each later assistant message that uses the token
(in its text or in a tool call's arguments) is a *use*.

The need of a use is judged at the request that *produced* the using message: the engine judges a fact at the
first agent request at or after the message listed in ``needed_at`` enters the log, and an assistant message is
appended after the request that produced it, so ``needed_at`` names the message just before the use (the last
thing the model saw before it replied). A use whose immediately preceding message already holds the token is not
a need (the model just read it again: nothing had to be remembered), nor is a use that the source immediately
precedes.

Trivial tokens are left out: common words (:data:`COMMON`), tokens shorter than :data:`MIN_CHARS`, tokens of
the system prompt (always in view), line-number prefixes of file reads, and tokens that occur in more than
:data:`MAX_SHARE` of the messages (boilerplate such as the working directory's root). A conversation with more
than :data:`MAX_ARTIFACTS` artifact probes keeps those with the most uses (ties by first use), and each probe keeps
at most :data:`MAX_NEEDS` needs (evenly spread, first and last kept), so a huge session stays cheap.

**Constraints** (kind ``constraint``): rules the user states, one sentence each: a sentence of a user message (not
a recorded summary, not a client notification, :data:`CLIENT_TEXT`) or of a memory file the agent read
(``CLAUDE.md``, ``AGENTS.md`` and the like, :data:`MEMORY_FILES`) that states a rule or a preference: "don't",
"never", "always", "only", "must", "make sure", "avoid", "should", "prefer", "instead", "I want", "I need", "until",
"without", "the same", a superlative ("cheapest", "fastest"), "X first", "no X" (:data:`RULE_WORDS`), and is not
what the speaker lacks or forgot, a guess or a question (:data:`NOT_RULES`). A rule is needed at every later
agent request; that is thinned (:func:`schedule`) to the first request of every later user turn, every
:data:`EVERY`-th later request and the last one, which keeps the count linear in turns while still probing the long
tool loops between user turns; a rule keeps at most :data:`MAX_NEEDS` needs (evenly spread, the last kept) and
a message at most :data:`MAX_RULES` rules. The system prompt's rules are not probes: the system prompt is never
compacted (an invariant), so they would only count as retained, every time. A memory file injected as user text
(``CLAUDE.md`` in a ``<system-reminder>``) is a user message and its rules are probes.

**Decisions and goal state** (kinds ``decision`` and ``continuation``), where the recording marks them: the
subject line of a commit message (``git commit -m``) and the first line of a plan (``ExitPlanMode``) are
decisions; each item of a todo list (``TodoWrite``) is a continuation (what is still to do). They are needed on
the same :func:`schedule` as constraints, from the request after the call on.

Every probe also lists its *carriers*: the other messages, up to its last need, that hold its text verbatim (a
later re-read of the file, the agent's own earlier use, a recorded summary that restates it). Retention counts a
probe as visible when its source or any carrier is visible with the text intact, or a summary carries it.

Mined text must appear verbatim in a part of the source and of each carrier (its text, or a tool call's JSON
arguments), because retention matches text; a candidate that JSON escaping changes is left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import replace
from itertools import accumulate

from sim.core.conversation import Conversation, Fact, Message

#: Shortest artifact token kept.
MIN_CHARS = 5
#: A token in more than this share of the messages is boilerplate, not a fact.
MAX_SHARE = 0.25
#: Caps that keep mining and judging a huge session cheap.
MAX_ARTIFACTS = 600
MAX_NEEDS = 32
MAX_RULES = 12  # rules kept per message (the first ones): a long instruction template is not a hundred probes
#: A rule or decision is needed at every later user turn's first request and every EVERY-th later request.
EVERY = 25

MEMORY_FILES = ("CLAUDE.md", "AGENTS.md", "GEMINI.md", "CONVENTIONS.md", ".cursorrules", "copilot-instructions.md")
RULE_WORDS = re.compile(
    r"\b(?:don['’]?t|do not|never|always|only|must(?: not)?|make sure|ensure|avoid|should(?: not)?|shouldn['’]?t|"
    r"prefer|instead|rather than|required?|not allowed|cannot|can['’]?t|want|need|until|without|same|"
    r"(?:cheap|fast|quick|small|larg|earl|lat)(?:est|iest)|(?<!the )first|no \w+)\b",
    re.IGNORECASE,
)
#: What reads like a rule and is not: what the speaker lacks or forgot, a guess, a question.
NOT_RULES = re.compile(
    r"\b(?:(?:don['’]?t|do not|didn['’]?t|can['’]?t|cannot) (?:remember|have|know|recall|find|see|locate)|"
    r"must have|no problem|no worries)\b|\?\s*$",
    re.IGNORECASE,
)
#: A user message the client wrote, not the user: a command's echo, an interruption, a notification.
CLIENT_TEXT = ("<local-command", "<command-", "[Request interrupted", "<task-notification>", "<bash-")
ARTIFACT_SHAPES: dict[str, str] = {
    "url": r"https?://[^\s\"'`<>()\[\]{}]+[^\s\"'`<>()\[\]{}.,;:!?]",
    "path": r"(?<![\w@.-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w@+-]+(?:\.[A-Za-z0-9]{1,8})+(?![\w/])"
    r"|(?<![\w.-])/(?:[\w.@+-]+/)+[\w.@+-]+",
    "uuid": r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
    "module": r"\b[A-Z][A-Za-z0-9]+(?:\.[A-Z][A-Za-z0-9]+)+\b",
    "dotted": r"\b[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*){2,}\b",
    "kebab": r"(?<![\w-])[a-z][a-z0-9]*(?:-[a-z0-9]+){2,}(?![\w.-])",
    "issue": r"\b[a-z][a-z0-9]{2,}-[a-z0-9]*\d[a-z0-9]*(?:\.\d+)*\b",
    "hex": r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b",
    "snake": r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+[?!]?(?:/\d)?",
    "camel": r"\b(?:[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b",
    "number": r"(?<![\w.])\d{4,}(?:\.\d+)?(?![\w.])",
}
_SHAPES = "|".join(f"(?P<{k}>{v})" for k, v in ARTIFACT_SHAPES.items())
#: The shapes, tried only where one can begin: every shape but the URL begins after no word character (a ``\b`` or a
#: lookbehind says so), and the URL with its ``h``; inside a word one test fails instead of eleven. A property test
#: holds it to the bare alternation.
_TOKEN = re.compile(rf"(?:(?<!\w)|(?=h))(?:{_SHAPES})")
#: What every shape holds somewhere (a slash, dot, underscore, hyphen or digit, or a capital after a lower-case letter
#: or digit: camelCase): a chunk without any is passed over without the shapes. A property test holds it.
_MAY_HOLD = re.compile(r"[/._\d-]|[a-z0-9][A-Z]")
_PLAIN = re.compile(r"[\"'(\[]*[A-Za-z][a-z]*[\"').,;:!?\]]*")  # a plain word: no shape can match inside it
_LINE_NUMBER = re.compile(r"^\s*\d+→", re.MULTILINE)  # a file read's line prefixes ("    12→")
_SENTENCE = re.compile(r"[^\n.!?]+(?:[.!?](?=\s|$)|$)", re.MULTILINE)
_COMMIT = re.compile(r"git commit\b[^\n]*?-m\s+(?:\"\$\(cat <<'?EOF'?\n)?[\"']?([^\n\"']{8,})")
#: Tokens of an artifact's shape that name nothing the conversation established: tool-schema words, brand names.
COMMON = frozenset(
    {
        "file_path", "old_string", "new_string", "replace_all", "run_in_background", "subagent_type",
        "GitHub", "JavaScript", "TypeScript", "OpenAI", "ChatGPT", "PostgreSQL", "macOS",
    }
)  # fmt: skip


def mine_probes(conversation: Conversation) -> tuple[Fact, ...]:
    """The probes of ``conversation`` (see the module docstring), in a fixed order: artifacts, then rules, then
    decisions, each by source position. Same conversation, same probes."""
    msgs = conversation.messages
    system = msgs[0].text if msgs and msgs[0].role == "system" else ""
    facts = [*_artifacts(msgs, system), *_rules(msgs), *_decisions(msgs)]
    seen: set[str] = set()
    out: list[Fact] = []
    for f in facts:
        if f.needed_at and f.id not in seen:
            seen.add(f.id)
            out.append(f)
    return tuple(out)


def with_probes(conversation: Conversation) -> Conversation:
    """``conversation`` with its mined probes as facts, when it has no facts of its own (a recording); a
    conversation that has facts (a scenario, a native file written with them) is returned as it is."""
    if conversation.facts or conversation.meta.get("sizes_only"):  # a token trace's placeholders say nothing
        return conversation
    probes = mine_probes(conversation)
    if not probes:
        return conversation
    return replace(conversation, facts=probes)


# -- what a message holds -----------------------------------------------------------------------------------


def holdings(m: Message) -> list[str]:
    """The texts of ``m`` a fact can be matched in: visible text parts and tool calls' JSON arguments."""
    out = [p.text for p in m.parts if p.kind != "thinking" and p.text]
    out.extend(p.args for p in m.parts if p.kind == "tool_call" and p.args)
    return out


def _holds(m: Message, text: str) -> bool:
    return any(text in h for h in holdings(m))


def _arg_values(args: str) -> list[str]:
    """The string values of a tool call's JSON arguments (nested too), in order."""
    try:
        value = json.loads(args)
    except ValueError:
        return [args]
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


class _Scanner:
    """Artifact candidates of texts (shapes of :data:`ARTIFACT_SHAPES`), trivial ones left out, for one mining.

    No shape spans whitespace, so a text is scanned chunk by distinct chunk, and plain words (most of any prose or
    output) are passed over without running the shapes on them: a long tool result costs its distinct words, not its
    characters times the shapes. What a text, and a chunk, holds is kept for the mining: a session repeats both (a
    quarter of its texts, half its chunks), and the shapes are most of the mining's time."""

    def __init__(self) -> None:
        self._texts: dict[str, frozenset[str]] = {}
        self._chunks: dict[str, tuple[str, ...]] = {}

    def tokens(self, text: str) -> frozenset[str]:
        got = self._texts.get(text)
        if got is None:
            words = set((_LINE_NUMBER.sub(" ", text) if "→" in text else text).split())
            out: set[str] = set()
            chunks = self._chunks
            for chunk in words:
                # The commonest plain word (letters, lower case after the first) without the regex; the rest of
                # _PLAIN's words (quoted, punctuated) go through it.
                if len(chunk) < MIN_CHARS or (chunk.isalpha() and chunk.isascii() and chunk[1:].islower()):
                    continue
                found = chunks.get(chunk)
                if found is None:
                    plain = _PLAIN.fullmatch(chunk) or not _MAY_HOLD.search(chunk)
                    found = chunks[chunk] = () if plain else _shapes(chunk)
                out.update(found)
            got = self._texts[text] = frozenset(out)
        return got

    def uses(self, m: Message) -> set[str]:
        """What an assistant message uses: the candidates of its texts and its calls' arguments, and its commands."""
        texts = [p.text for p in m.parts if p.kind == "text" and p.text]
        texts.extend(v for p in m.calls if p.args for v in _arg_values(p.args))
        return set().union(*(self.tokens(t) for t in texts)) | _commands(m) if texts else set()


def _shapes(chunk: str) -> tuple[str, ...]:
    out = []
    for mt in _TOKEN.finditer(chunk):
        tok = mt.group(0).rstrip(".,:;")
        if len(tok) < MIN_CHARS or tok in COMMON:
            continue
        if mt.lastgroup == "number" and 1900 <= float(tok) <= 2100:
            continue
        out.append(tok)
    return tuple(out)


def _commands(m: Message) -> set[str]:
    """The shell commands an assistant message runs (each ``&&``/``;``/``|`` piece), for whole-command probes."""
    out: set[str] = set()
    for p in m.calls:
        if not p.args or (p.name or "").lower() not in ("bash", "shell", "run_command", "execute_bash"):
            continue
        for v in _arg_values(p.args)[:1]:
            for piece in re.split(r"\s*(?:&&|\|\||;|\|)\s*|\n", v):
                piece = piece.strip()
                if len(piece) >= 8 and " " in piece and not piece.startswith(("cd ", "echo ")):
                    out.add(piece)
    return out


def _fid(kind: str, text: str, source: str) -> str:
    digest = hashlib.sha256((source + "\0" + text).encode()).hexdigest()[:12]
    return f"probe:{kind}:{digest}"


# -- artifacts ----------------------------------------------------------------------------------------------


def _artifacts(msgs: tuple[Message, ...], system: str) -> list[Fact]:
    n = len(msgs)
    toks: list[set[str]] = []  # per message: what it tells (a user or tool message) or uses (an assistant's)
    first: dict[str, int] = {}  # token -> its first message; negative when the agent coined it
    held = [holdings(m) for m in msgs]  # each message's texts, built once: the searches below ask again and again
    scan = _Scanner()
    # Each message's texts joined by NUL, and the user and tool messages' joined in order with where each starts:
    # one search in C instead of one per text (a token holding a NUL is searched text by text).
    joined = ["\0".join(h) for h in held]
    told = [j for j, m in enumerate(msgs) if m.role in ("user", "tool")]
    told_text = "\0".join(joined[j] for j in told)
    starts = list(accumulate((len(joined[j]) + 1 for j in told[:-1]), initial=0))

    def has(j: int, t: str) -> bool:  # _holds(msgs[j], t)
        return t in joined[j] if "\0" not in t else any(t in h for h in held[j])

    def first_told(t: str, before: int) -> int | None:
        """The first user or tool message before ``before`` that holds ``t``."""
        if "\0" in t:
            return next((j for j in told if j < before and has(j, t)), None)
        at = told_text.find(t)
        j = told[bisect_right(starts, at) - 1] if at >= 0 else None
        return j if j is not None and j < before else None

    for i, m in enumerate(msgs):
        if m.role in ("user", "tool"):
            hs = held[i]
            toks.append(set().union(*(scan.tokens(h) for h in hs)) if hs else set())
            if m.meta.get("compact_summary"):
                continue  # a summary restates; it carries, never establishes
            for t in toks[i]:
                first.setdefault(t, i)
        elif m.role == "assistant":
            raw = scan.uses(m)
            toks.append({_told_tail(t, first) for t in raw})
            for t in raw - toks[i]:  # a path used in full that only a tail of was told: the full form is coined
                first.setdefault(t, -1 - i)
            for t in toks[i]:
                if " " in t:  # a whole command: told verbatim earlier?
                    src = first_told(t, i)
                    first.setdefault(t, src if src is not None else -1 - i)
                first.setdefault(t, -1 - i)  # coined by the agent: never a probe
        else:
            toks.append(set())
    holders: dict[str, list[int]] = {}
    for i, ts in enumerate(toks):
        for t in ts:
            holders.setdefault(t, []).append(i)
    facts: list[tuple[int, int, Fact]] = []
    for t, at in holders.items():
        src = first.get(t, -1)
        if src < 0 or len(at) > max(4, MAX_SHARE * n) or (system and t in system) or not has(src, t):
            continue
        uses = [a for a in at if msgs[a].role == "assistant" and a - 1 > src]
        needs = _spread([a - 1 for a in uses if not has(a - 1, t)], MAX_NEEDS)
        if not needs:
            continue
        last = needs[-1]
        carriers = tuple(msgs[i].id for i in at if i != src and i <= last and has(i, t))
        fact = Fact(
            _fid("artifact", t, msgs[src].id),
            "artifact",
            t,
            msgs[src].id,
            tuple(msgs[i].id for i in needs),
            mined=True,
            carriers=carriers,
        )
        facts.append((-len(needs), src, fact))
    kept = sorted(facts, key=lambda x: (x[0], x[1], x[2].text))[:MAX_ARTIFACTS]
    return [f for _, _, f in sorted(kept, key=lambda x: (x[1], x[2].text))]


def _told_tail(t: str, first: dict[str, int]) -> str:
    """A path the agent uses, as it was told: its longest tail (on ``/`` boundaries, two segments or more) that a
    user or tool message gave before, so ``/home/u/repo/lib/a.ex`` is a use of ``lib/a.ex`` read in a listing."""
    if "/" not in t or first.get(t, -1) >= 0 or " " in t:
        return t
    segs = t.split("/")
    for k in range(1, len(segs) - 1):
        tail = "/".join(segs[k:])
        if first.get(tail, -1) >= 0:
            return tail
    return t


def _spread(xs: list[int], cap: int) -> list[int]:
    """At most ``cap`` of ``xs``, evenly spaced, first and last kept (deterministic)."""
    if len(xs) <= cap:
        return xs
    return [xs[round(k * (len(xs) - 1) / (cap - 1))] for k in range(cap)]


# -- rules, decisions, goal state ---------------------------------------------------------------------------


def schedule(msgs: tuple[Message, ...], after: int) -> list[int]:
    """Where a rule or decision established at ``after`` is needed: the message before the first request of
    every later user turn, before every :data:`EVERY`-th later request (counted from ``after``), and before the
    last request (the end of the task must still honour it)."""
    out: list[int] = []
    k = 0
    last = max((i - 1 for i in range(after + 2, len(msgs)) if msgs[i].role == "assistant"), default=-1)
    for i in range(after + 1, len(msgs) - 1):
        if msgs[i + 1].role != "assistant":
            continue
        k += 1
        if msgs[i].role == "user" or k % EVERY == 0 or i == last:
            out.append(i)
    return out


def _memory_file(msgs: tuple[Message, ...], i: int) -> bool:
    """Whether tool message ``i`` holds a memory file's content (the call that read it names the file)."""
    m = msgs[i]
    if m.role != "tool":
        return False
    ids = {p.call_id for p in m.results}
    j = i - 1
    while j >= 0 and msgs[j].role == "tool":
        j -= 1
    if j < 0:
        return False
    return any(p.call_id in ids and any(f in (p.args or "") for f in MEMORY_FILES) for p in msgs[j].calls)


def _sentences(text: str) -> Iterable[str]:
    for mt in _SENTENCE.finditer(text):
        s = mt.group(0).strip().lstrip("-*•> ").strip()
        if 12 <= len(s) <= 300 and RULE_WORDS.search(s) and not NOT_RULES.search(s):
            yield s


def _rules(msgs: tuple[Message, ...]) -> list[Fact]:
    out: list[Fact] = []
    for i, m in enumerate(msgs):
        stated = m.role == "user" and not m.meta.get("compact_summary") and not m.text.lstrip().startswith(CLIENT_TEXT)
        if not (stated or _memory_file(msgs, i)):
            continue
        if m.command is not None:
            continue
        needs = schedule(msgs, i)
        if not needs:
            continue
        needs = _spread(needs, MAX_NEEDS)
        for text in list(dict.fromkeys(s for h in holdings(m) for s in _sentences(h)))[:MAX_RULES]:
            if not _holds(m, text):
                continue
            carriers = tuple(msgs[j].id for j in range(i + 1, needs[-1] + 1) if _holds(msgs[j], text))
            ids = tuple(msgs[j].id for j in needs)
            out.append(Fact(_fid("constraint", text, m.id), "constraint", text, m.id, ids, True, carriers))
    return out


def _decision_texts(m: Message) -> list[tuple[str, str]]:
    """``(kind, text)`` of the decisions and goal state an assistant message's tool calls record."""
    out: list[tuple[str, str]] = []
    for p in m.calls:
        name = (p.name or "").lower()
        if not p.args:
            continue
        try:
            value = json.loads(p.args)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        if name in ("todowrite", "update_plan", "todo_write"):
            items = value.get("todos") or value.get("plan") or []
            for item in items if isinstance(items, list) else []:
                text = item.get("content") or item.get("step") if isinstance(item, dict) else None
                if isinstance(text, str) and len(text.strip()) >= 8:
                    out.append(("continuation", text.strip()))
        elif name == "exitplanmode" and isinstance(value.get("plan"), str):
            line = next((x.strip("# ").strip() for x in value["plan"].splitlines() if x.strip("# ").strip()), "")
            if len(line) >= 8:
                out.append(("decision", line))
        elif isinstance(value.get("command"), str):
            for mt in _COMMIT.finditer(value["command"]):
                out.append(("decision", mt.group(1).strip()))
    return out


def _decisions(msgs: tuple[Message, ...]) -> list[Fact]:
    out: list[Fact] = []
    seen: set[str] = set()
    for i, m in enumerate(msgs):
        if m.role != "assistant":
            continue
        for kind, text in _decision_texts(m):
            if text in seen or not _holds(m, text):
                continue
            seen.add(text)
            needs = _spread(schedule(msgs, i), MAX_NEEDS)
            if not needs:
                continue
            carriers = tuple(msgs[j].id for j in range(i + 1, needs[-1] + 1) if _holds(msgs[j], text))
            ids = tuple(msgs[j].id for j in needs)
            out.append(Fact(_fid(kind, text, m.id), kind, text, m.id, ids, True, carriers))  # type: ignore[arg-type]
    return out


__all__ = ["ARTIFACT_SHAPES", "holdings", "mine_probes", "schedule", "with_probes"]
