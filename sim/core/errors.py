"""The one exception tree of compaction-sim.

Every error a user can cause derives from :class:`CsimError`; the CLI prints its message and exits
with status 2 instead of a traceback. Messages name the thing that was wrong (file, line, record,
parameter), show the value with ``!r``, and say what to do instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class CsimError(Exception):
    """Base of every error compaction-sim raises on purpose."""


class InvalidConfig(CsimError, ValueError):
    """A configuration value is out of range or of the wrong type."""


class UnknownName(CsimError, KeyError):
    """A registry lookup missed. The message lists what exists and suggests the closest name."""

    def __init__(self, kind: str, name: str, available: Iterable[str]) -> None:
        names = sorted(available)
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        super().__init__(f"unknown {kind} {name!r}.{hint} Available: {', '.join(names) or '(none)'}.")
        self.kind, self.name = kind, name

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class FormatError(CsimError, ValueError):
    """A recorded conversation could not be read. Names file, line or record, and what was expected."""

    def __init__(self, path: str, line: int | None, problem: str, hint: str = "") -> None:
        where = f"{path}:{line}" if line is not None else path
        message = f"{where}: {problem}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)
        self.path, self.line, self.problem = path, line, problem


class ProviderError(CsimError):
    """The mock provider rejected a request, as the real provider would."""

    kind = "invalid-request"


class InvalidRequest(ProviderError):
    """The request breaks the provider's message rules (e.g. a tool result without its call)."""


class PromptTooLong(ProviderError):
    """The prompt plus the output reserve does not fit the context window."""

    kind = "prompt-too-long"

    def __init__(self, message: str, prompt_tokens: int, limit: int) -> None:
        super().__init__(message)
        self.prompt_tokens, self.limit = prompt_tokens, limit


class EncodingUnavailable(CsimError):
    """A tokenizer's data is not installed; the message says which package provides it."""


class InvariantViolation(CsimError):
    """Raised in ``--strict`` mode at the first broken invariant."""
