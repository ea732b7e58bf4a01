"""The one exception type that means "the user can fix this"."""


class UserError(Exception):
    """A problem with the user's input (path, file, flag value).

    The CLI turns it into one line on stderr and exit code 2; anything else
    that escapes is a bug and may show a traceback.
    """


def first_line(text: object, limit: int = 300) -> str:
    """The first non-blank line of a message, at most `limit` characters ("" when there is none)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0][:limit] if lines else ""


def said(exc: BaseException) -> str:
    """What an exception says, in one line: its message's first line, or its type's name where it has none."""
    return first_line(exc) or type(exc).__name__


def named(exc: BaseException) -> str:
    """An exception's type and, where it has one, its message's first line: "OSError: disk full"."""
    return f"{type(exc).__name__}: {first_line(exc)}" if first_line(exc) else type(exc).__name__
