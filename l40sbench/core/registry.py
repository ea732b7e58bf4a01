"""A tiny name -> spec registry, one per kind of model."""

from __future__ import annotations

import fnmatch
from typing import Generic, TypeVar

from l40sbench.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        if name in self._items:
            raise KeyError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item
        return item

    def names(self, pattern: str = "*") -> list[str]:
        return sorted(n for n in self._items if fnmatch.fnmatch(n, pattern))

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise UserError(
                f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}"
            ) from None
