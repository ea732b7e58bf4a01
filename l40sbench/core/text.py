"""Text every layer prints: durations in the studies' style and tables, plain and Markdown; `Log`, the
callback that prints a progress line."""

from __future__ import annotations

from collections.abc import Callable, Sequence

Log = Callable[[str], None]


def format_duration(seconds: float | None) -> str:
    """The article's style: 54.982s, 1m21.964s.

    >>> format_duration(81.964)
    '1m21.964s'
    """
    if seconds is None:
        return "-"
    # Round to the printed millisecond first, so 59.9996 s is 1m00.000s, not 60.000s.
    minutes, rest = divmod(round(seconds, 3), 60.0)
    return f"{int(minutes)}m{rest:06.3f}s" if minutes else f"{rest:.3f}s"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table, columns padded so it also reads as plain text."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(3, *(len(row[i]) for row in cells)) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)
