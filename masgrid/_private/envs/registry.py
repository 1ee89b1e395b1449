"""Name registries whose answers never depend on what a process happened to import.

A registry maps config names (`protocol=groupchat`, `backend=serve`, a schedule) to what
implements them. Implementations register themselves when their module is imported, which
is convenient but fragile: a Ray worker that never imported the SIMAS package would not
know `groupchat`. So every registry also holds a table *name -> providing module*, and a
lookup imports the module that provides a name before answering (lazily: only the one it
needs). Listing the names imports every provider, so the list is always complete.

An unknown name raises `UnknownName`, a KeyError (mapping semantics) that is also a
ValueError (what config validation catches), whose message lists the known names.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError, ValueError):
    """A name no provider registers; the message lists the names that exist."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, known
        self.message = f"unknown {kind} {name!r}; known: {', '.join(known) or '(none)'}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return self.message


class Registry(Mapping[str, T], Generic[T]):
    """A read-only mapping name -> implementation with explicit, lazy provider loading.

    `providers` maps each known name to the module whose import registers it. Names
    registered by modules outside the table still resolve once imported, but nothing in
    masgrid relies on that: every built-in name has a provider entry (a test checks it).
    """

    def __init__(self, kind: str, providers: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.providers: dict[str, str] = dict(providers or {})
        self._entries: dict[str, T] = {}

    def register(self, name: str, value: T) -> T:
        self._entries[name] = value
        return value

    def _load(self, name: str) -> None:
        module = self.providers.get(name)
        if module is not None and name not in self._entries:
            importlib.import_module(module)

    def load_all(self) -> None:
        for name in list(self.providers):
            self._load(name)

    def __getitem__(self, name: str) -> T:
        if name not in self._entries:
            self._load(name)
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.kind, name, self.names()) from None

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self[name]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self.load_all()
        return len(self._entries)

    def names(self) -> list[str]:
        self.load_all()
        return sorted(self._entries)

    def loaded(self) -> list[str]:
        """The names registered so far in this process, without loading anything (tests)."""
        return sorted(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, loaded={self.loaded()})"


__all__ = ["Registry", "UnknownName"]
