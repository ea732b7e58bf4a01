"""The signals that stop a command as Ctrl-C does: SIGTERM (how a spot instance is taken back, `kill`, a study
ending its step) and SIGHUP (the terminal closed) raise Stopped, a KeyboardInterrupt, in the main thread, so every
path that saves what it measured on Ctrl-C saves it on these too, and `what()` names the signal in its one line.
Installed by the process's entry (cli.run) only: a library caller keeps its own handlers."""

from __future__ import annotations

import signal

STOPPING = (signal.SIGTERM, signal.SIGHUP)
_received: dict = {"name": None}


class Stopped(KeyboardInterrupt):
    """A stop by SIGTERM or SIGHUP (its name is the message)."""


def _stop(number: int, frame) -> None:
    name = signal.Signals(number).name
    _received["name"] = name
    signal.signal(number, signal.SIG_DFL)  # a second one ends the process at once, as it would have
    raise Stopped(name)


def install() -> None:
    for number in STOPPING:
        signal.signal(number, _stop)


def signal_name() -> str:
    """The signal that stopped the command: SIGTERM or SIGHUP where one did, else SIGINT (Ctrl-C)."""
    return _received["name"] or "SIGINT"


def what() -> str:
    """How the one line names the stop: "interrupted" (Ctrl-C), "stopped by SIGTERM", "stopped by SIGHUP"."""
    return "interrupted" if _received["name"] is None else f"stopped by {_received['name']}"
