"""The one exception type that means "the user can fix this"."""


class UserError(Exception):
    """A problem with the user's input (path, file, flag value).

    The CLI turns it into one line on stderr and exit code 2; anything else
    that escapes is a bug and may show a traceback.
    """
