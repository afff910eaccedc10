"""Names of the bound release, resolved when used: importing a runtime module binds no library.

Runtime modules keep tables of enum members (mode names -> members). Built at import, they would
load the library there and hold the members of whichever release was bound first; `EnumMap` keeps
member *names* and looks the member up in the bound release at each use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from ._generated import api

M = TypeVar("M")


def member(enum: str, name: str) -> Any:
    """`api.<enum>.<name>` of the bound release."""
    return getattr(getattr(api, enum), name)


class EnumMap(Mapping[str, M], Generic[M]):
    """key -> member of `api.<enum>` of the bound release (the member is looked up at each access)."""

    __slots__ = ("enum", "names", "_prefix")

    def __init__(self, enum: str, names: Mapping[str, str] | None = None, *, prefix: str | None = None) -> None:
        """`names`: key -> member name; with `prefix`, also every member, keyed by its lower-cased name without it."""
        self.enum = enum
        self.names: Mapping[str, str] | None = dict(names) if names is not None else None
        self._prefix = prefix

    def _table(self) -> Mapping[str, str]:
        if self._prefix is None:
            return self.names or {}
        cls = getattr(api, self.enum)
        return {**{m.name.removeprefix(self._prefix).lower(): m.name for m in cls}, **(self.names or {})}

    def __getitem__(self, key: str) -> M:
        name = self._table()[key]
        result: M = member(self.enum, name)
        return result

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())
