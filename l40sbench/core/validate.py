"""Range checks for config dataclasses, with messages that show the bad value."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def require_at_least(config: object, names: Iterable[str], minimum: int) -> None:
    """Raises ValueError naming the first field below `minimum` (None means unset and passes)."""
    for name in names:
        value = getattr(config, name)
        if value is not None and value < minimum:
            raise ValueError(f"{name} must be >= {minimum}. Received: {name}={value}")


def require_one_of(config: object, name: str, choices: Sequence[str]) -> None:
    value = getattr(config, name)
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}. Received: {name}={value!r}")
