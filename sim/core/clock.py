"""Simulated time: when each message of a conversation happens, in seconds since the conversation began.

Nothing here reads a clock. Time comes from one of two places:

* **Recordings** carry a timestamp per record. :func:`recorded_times` turns ISO-8601 timestamps into seconds
  since the first one. A missing timestamp takes the previous time (carried forward; before the first present
  one, 0) and is counted in :attr:`Timeline.missing`; a timestamp earlier than the one before it (clock skew,
  records written out of order) is held at the previous time and counted in :attr:`Timeline.backwards`, so
  simulated time never runs backwards.
* **Synthetic conversations** get seeded durations from :func:`synthetic_times`: a pure function of the
  messages' roles, output-token counts and tool kinds, the run's integer seed and :class:`ClockParams`. Its
  randomness comes only from ``numpy.random.SeedSequence([seed, CLOCK_KEY, stream])``, one stream each for
  model time, tool time, think time and idle gaps; each stream is consumed in message order, so the times of a
  conversation's first ``k`` messages do not depend on what follows them.

``times[i]`` is when message ``i`` is complete and in the log. A model request made after message ``i`` starts
at ``times[i]``: that is the ``now_seconds`` a cache model (:mod:`sim.core.cache`) is given. The conversation
opens at 0 with its first message that is not a system message (system messages before it are at 0 too). A
system message takes no time; a user message follows the previous one after the user's think time, plus, with
a small probability, a long absence; an assistant message takes the time to its first token plus a time per
output token; a tool message takes the latencies of its tool results, run one after another (Claude Code runs
some read-only tools in parallel; we take the sequential reading, the longer of the two).

Defaults of :class:`ClockParams` and where they come from. "Recorded" means measured on the two long Claude
Code sessions in ``../shared/recorded/claude-code`` (Claude Code 2.1.39, Opus 4.6; deduplicated by message id;
tool latency from the ``tool_use`` record to its ``tool_result``):

* ``first_token_seconds=2.0``: Artificial Analysis' time to first token, 1.80 s for Claude Sonnet 4.5 and
  2.67 s for Opus 4.1 (as tabulated at lattice.uptownhr.com/claude-opus-4-5/speed-analysis); the recorded
  requests' fixed part (time not explained by output tokens at 0.015-0.025 s/token) is 2.1-3.4 s.
* ``seconds_per_output_token=0.02`` (50 tokens/s): Artificial Analysis' output speed, 63 tokens/s for Sonnet
  4.5 and 45 for Opus 4.1 (same table); recorded replies of more than 500 tokens: median 0.02 s per token.
* ``model_sigma=0.3``: spread of a model call around that (log-normal); a project choice.
* Tool latency, log-normal (median seconds, sigma) by :data:`ToolKind`. Medians are recorded where the sessions
  have them: ``read`` 0.01 s (Read, n=75), ``search`` 0.3 s (Grep n=17, Glob n=19), ``edit`` 0.3 s (Edit n=85,
  Write n=25), ``shell`` 2.2 s (Bash n=155, upper quartile 7.9 s), ``build`` 45 s (test and compile commands
  in Bash: 32-63 s), ``agent`` 60 s (sub-agent Task calls: 33-63 s, n=3). ``web`` 3 s and ``other`` 1 s are
  project choices (no recorded calls). Sigmas follow the recorded quartiles (upper quartile / median =
  exp(0.674 sigma)): 0.5 for read, search, build and agent, 1.0 for edit and other, 1.5 for shell (the
  recorded spread is wider still: commit hooks took three minutes), 0.8 for web.
* ``think_median_seconds=150``, ``think_sigma=1.0``: time from the assistant's last message to the user's next
  one; the recorded sessions have six such gaps, 1 s to 572 s with median 151 s. With sigma 1 about a quarter
  of user turns come more than five minutes after the last reply, past Anthropic's default cache TTL; the
  sigma is a project choice.
* ``away_probability=0.05``, ``away_median_seconds=3600``, ``away_sigma=0.5``: with probability 5% per user
  turn the user is away for about an hour (log-normal, so some absences pass the 1-hour TTL and some do not).
  A project choice: the recordings are too few to measure it.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, get_args

from sim.core.conversation import Message
from sim.core.errors import FormatError, InvalidConfig

if TYPE_CHECKING:
    import numpy as np

Role = Literal["system", "user", "assistant", "tool"]
ToolKind = Literal["read", "search", "edit", "shell", "build", "web", "agent", "other"]
TOOL_KINDS: tuple[str, ...] = get_args(ToolKind)
#: Second component of every clock SeedSequence, so its streams differ from other users of the run seed.
CLOCK_KEY = int.from_bytes(hashlib.sha256(b"sim.core.clock").digest()[:8], "big")
_MODEL, _TOOL, _THINK, _AWAY = range(4)  # streams; _AWAY + 1 is the absences' lengths

DEFAULT_TOOL_LATENCY: dict[str, tuple[float, float]] = {
    "read": (0.01, 0.5),
    "search": (0.3, 0.5),
    "edit": (0.3, 1.0),
    "shell": (2.2, 1.5),
    "build": (45.0, 0.5),
    "web": (3.0, 0.8),
    "agent": (60.0, 0.5),
    "other": (1.0, 1.0),
}


# -- recorded timestamps ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timeline:
    """Seconds since the first timestamp, one per record, and how many records needed repair."""

    seconds: tuple[float, ...]
    missing: int = 0
    backwards: int = 0


def _parse(stamp: str | datetime, source: str, index: int) -> datetime:
    if isinstance(stamp, datetime):
        dt = stamp
    else:
        try:
            dt = datetime.fromisoformat(stamp.strip())
        except ValueError:
            raise FormatError(
                source, None, f"record {index}: timestamp {stamp!r} is not ISO 8601", "e.g. 2026-02-11T20:36:45.618Z"
            ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)  # a naive timestamp is read as UTC
    return dt


def recorded_times(stamps: Sequence[str | datetime | None], source: str = "timestamps") -> Timeline:
    """Seconds since the first present timestamp; missing ones (``None`` or blank) carry the previous time.

    ``source`` names the file in the error raised for a malformed timestamp.
    """
    out: list[float] = []
    origin: datetime | None = None
    prev = 0.0
    missing = backwards = 0
    for i, stamp in enumerate(stamps):
        if stamp is None or (isinstance(stamp, str) and not stamp.strip()):
            missing += 1
            out.append(prev)
            continue
        t = _parse(stamp, source, i)
        if origin is None:
            origin = t
        s = (t - origin).total_seconds()  # exact to the microsecond, unlike differences of epoch floats
        if s < prev:
            backwards += 1
            s = prev
        out.append(s)
        prev = s
    return Timeline(tuple(out), missing, backwards)


# -- synthetic durations ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Step:
    """What the clock needs of one message: who wrote it, how many tokens the model generated (assistant), and
    the kinds of the tool results it carries (tool; one entry per result, empty counts as one ``other``)."""

    role: Role
    output_tokens: int = 0
    tools: tuple[ToolKind, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant", "tool"):
            raise InvalidConfig(f"Step role={self.role!r} must be system, user, assistant or tool")
        if self.output_tokens < 0:
            raise InvalidConfig(f"Step output_tokens={self.output_tokens!r} must be >= 0")
        for k in self.tools:
            if k not in TOOL_KINDS:
                raise InvalidConfig(f"Step tool kind {k!r} is not one of {', '.join(TOOL_KINDS)}")


@dataclass(frozen=True)
class ClockParams:
    """Durations for synthetic conversations; the module docstring gives each default's source."""

    first_token_seconds: float = 2.0
    seconds_per_output_token: float = 0.02
    model_sigma: float = 0.3
    tool_latency: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_TOOL_LATENCY))
    think_median_seconds: float = 150.0
    think_sigma: float = 1.0
    away_probability: float = 0.05
    away_median_seconds: float = 3600.0
    away_sigma: float = 0.5

    def __post_init__(self) -> None:
        for name in ("first_token_seconds", "seconds_per_output_token", "model_sigma", "think_sigma", "away_sigma"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise InvalidConfig(f"ClockParams {name}={v!r} must be a finite number >= 0")
        for name in ("think_median_seconds", "away_median_seconds"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise InvalidConfig(f"ClockParams {name}={v!r} must be a finite number > 0")
        if not 0 <= self.away_probability <= 1:
            raise InvalidConfig(f"ClockParams away_probability={self.away_probability!r} must be in [0, 1]")
        unknown = set(self.tool_latency) - set(TOOL_KINDS)
        absent = set(TOOL_KINDS) - set(self.tool_latency)
        if unknown or absent:
            raise InvalidConfig(
                f"ClockParams tool_latency must give every tool kind ({', '.join(TOOL_KINDS)}); "
                f"unknown: {sorted(unknown)}, missing: {sorted(absent)}"
            )
        for kind, (median, sigma) in self.tool_latency.items():
            if not (median > 0 and math.isfinite(median) and sigma >= 0 and math.isfinite(sigma)):
                raise InvalidConfig(
                    f"ClockParams tool_latency[{kind!r}]=({median!r}, {sigma!r}) needs median > 0, sigma >= 0"
                )

    def model_seconds(self, output_tokens: int) -> float:
        """The median duration of a model call that generates ``output_tokens``: for calls the script does not
        hold (a summariser request), which take no draw from the seeded streams."""
        return self.first_token_seconds + output_tokens * self.seconds_per_output_token


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise InvalidConfig(f"seed={seed!r} is not allowed: the seed must be an integer >= 0")
    return int(seed)


def _gen(seed: int, stream: int) -> np.random.Generator:
    # numpy only when a clock draws (a replay of a recording keeps its recorded times): its import is a fifth of a
    # short replay's time.
    import numpy as np

    return np.random.default_rng(np.random.SeedSequence([seed, CLOCK_KEY, stream]))


def _normals(seed: int, stream: int, n: int) -> list[float]:
    return list(map(float, _gen(seed, stream).standard_normal(n)))


def synthetic_times(steps: Sequence[Step], seed: int, params: ClockParams | None = None) -> tuple[float, ...]:
    """When each message is complete, in seconds since the first; the same steps and seed give the same times."""
    seed = _check_seed(seed)
    p = params if params is not None else ClockParams()
    n_model = sum(1 for s in steps if s.role == "assistant")
    n_tool = sum(max(1, len(s.tools)) for s in steps if s.role == "tool")
    n_user = sum(1 for s in steps if s.role == "user")
    z_model = _normals(seed, _MODEL, n_model)
    z_tool = _normals(seed, _TOOL, n_tool)
    z_think = _normals(seed, _THINK, n_user)
    # Two streams for absences (whether, how long), so each array is a prefix of a longer conversation's.
    away_u = list(map(float, _gen(seed, _AWAY).random(n_user)))
    z_away = _normals(seed, _AWAY + 1, n_user)
    latency = p.tool_latency
    times: list[float] = []
    now = 0.0
    im = it = iu = 0
    started = False  # a user message that only follows system messages opens the conversation: no think time
    for s in steps:
        if s.role == "assistant":
            base = p.first_token_seconds + s.output_tokens * p.seconds_per_output_token
            dt = base * math.exp(p.model_sigma * z_model[im])
            im += 1
        elif s.role == "tool":
            dt = 0.0
            for kind in s.tools or ("other",):
                median, sigma = latency[kind]
                dt += median * math.exp(sigma * z_tool[it])
                it += 1
        elif s.role == "user":
            dt = p.think_median_seconds * math.exp(p.think_sigma * z_think[iu])
            if away_u[iu] < p.away_probability:
                dt += p.away_median_seconds * math.exp(p.away_sigma * z_away[iu])
            iu += 1
        else:
            dt = 0.0
        if started:
            now += dt
        started = started or s.role != "system"
        times.append(now)
    return tuple(times)


# -- tool kinds -----------------------------------------------------------------------------------------------
_BUILD = re.compile(
    r"\b(?:py\.?test|unittest|tox|nox|make|cmake|ninja|bazel|cargo\s+(?:test|build|check)|go\s+(?:test|build)|"
    r"npm\s+(?:test|run|ci|install)|yarn|pnpm|gradle|mvn|jest|vitest|tsc|mix\s+(?:test|compile)|"
    r"dotnet\s+(?:test|build)|docker\s+build|pip\s+install|uv\s+(?:sync|pip)|tests?)\b"
)


def classify_tool(name: str, args: str = "") -> ToolKind:
    """The latency class of a tool call from its name (and, for shells and editors, its arguments' text).

    Names are matched case-insensitively by what they contain: web tools before searches (``WebSearch``),
    editors by their command (``str_replace_editor`` with ``view`` reads), shells by whether the command runs
    tests or a build.
    """
    n = name.lower()
    words = set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()))
    a = args.lower()

    def has(*keys: str) -> bool:  # short keys must be whole words ("ls" is not in "tools")
        return any((k in n) if len(k) > 3 else (k in words) for k in keys)

    if has("web", "fetch", "browse", "http", "url"):
        return "web"
    if has("task", "agent"):
        return "agent"
    if has("editor"):
        return "read" if re.search(r"\bview\b", a) else "edit"
    if has("edit", "write", "replace", "patch", "create", "insert"):
        return "edit"
    if has("grep", "glob", "search", "find", "list", "ls"):
        return "search"
    if has("read", "view", "cat", "open"):
        return "read"
    if has("bash", "shell", "exec", "run", "terminal", "command", "cmd"):
        return "build" if _BUILD.search(a) else "shell"
    return "other"


def message_times(messages: Sequence[Message], seed: int, output_tokens: Callable[[Message], int]) -> tuple[float, ...]:
    """When each message is complete, in seconds (this module): the recording's timestamps when its
    messages carry them (``meta["timestamp"]``), else seeded synthetic durations from the run's seed.

    A request answered by message ``k`` starts at ``times[k - 1]``."""
    stamps = [m.meta.get("timestamp") for m in messages]
    if any(stamps):
        return recorded_times(stamps).seconds
    calls = {p.call_id: (p.name or "", p.args or "") for m in messages for p in m.calls if p.call_id}
    steps = [
        Step(
            m.role,
            output_tokens(m) if m.role == "assistant" else 0,
            tuple(classify_tool(*calls.get(p.call_id or "", (p.name or "", ""))) for p in m.results)
            if m.role == "tool"
            else (),
        )
        for m in messages
    ]
    return synthetic_times(steps, seed)
