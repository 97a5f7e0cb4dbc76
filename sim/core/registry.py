"""One small registry type, used once per kind: policies, scenarios, formats, tokenizers.

A registry maps a name to a constructor and a one-line description. A miss raises
:class:`~sim.core.errors.UnknownName` with the closest name ("did you mean"). Registries are filled at
import time by the modules that define the entries; there is no global mutable state beyond these
module-level dicts, which are only written while the package imports. A registry may be given a ``discover``
hook that imports the module defining a name on first asking (``discover(name)``), or every module (``None``)
before it lists or misses: the policies do that, so a run imports only the policy it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from sim.core.errors import InvalidConfig, UnknownName

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered thing: its name, the object (usually a factory), and a one-line summary."""

    name: str
    obj: T
    summary: str
    defaults: str = ""


class Registry(Generic[T]):
    """Names to entries for one kind of thing."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}
        self._discover: Callable[[str | None], None] | None = None
        self._complete = True

    def discover_with(self, discover: Callable[[str | None], None]) -> None:
        """Fill the registry on demand: ``discover(name)`` imports what registers ``name`` (if anything does),
        ``discover(None)`` everything."""
        self._discover, self._complete = discover, False

    def _all(self) -> dict[str, Entry[T]]:
        if not self._complete and self._discover is not None:
            self._discover(None)
            self._complete = True
        return self._entries

    def add(self, name: str, obj: T, summary: str, defaults: str = "") -> T:
        """Register ``obj`` under ``name``; a second registration of the same name is an error."""
        if name in self._entries:
            raise InvalidConfig(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = Entry(name, obj, summary, defaults)
        return obj

    def register(self, name: str, summary: str = "", defaults: str = "") -> Callable[[T], T]:
        """Decorator form of :meth:`add`; the summary defaults to the first docstring line."""

        def deco(obj: T) -> T:
            doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
            return self.add(name, obj, summary or (doc[0] if doc else ""), defaults)

        return deco

    def get(self, name: str) -> T:
        """The object registered as ``name``; raises UnknownName with a suggestion on a miss."""
        if name not in self._entries and not self._complete and self._discover is not None:
            self._discover(name)
        try:
            return self._entries[name].obj
        except KeyError:
            raise UnknownName(self.kind, name, self._all()) from None

    def entry(self, name: str) -> Entry[T]:
        self.get(name)
        return self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._all())

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._all()

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self._entries[n] for n in self.names())

    def __len__(self) -> int:
        return len(self._all())
