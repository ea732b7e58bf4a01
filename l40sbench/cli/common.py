"""How every command talks and where it writes: one-line argparse errors, the exit codes, the log line, a
renamed flag's notice, a config's error as one line, the run id and its output folder. The flags are in
run_flags (data, run, runtimes), device_flags (where it computes) and values (their types); a classify or
detect run's folder and summary in runs.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import sys
import tempfile
from pathlib import Path

from l40sbench.errors import UserError

EXIT_FAILED = 1  # the command could not finish (a full disk): what it measured is kept
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (exit 2) instead of usage + error."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Renamed(argparse.Action):
    """An old spelling of a flag, kept for one release: it sets the new flag's value and says so in one line.
    Hidden from --help, where only the one name per idea shows (tests/test_cli.py checks them)."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        self.new = new  # no default of its own: the new flag's stands, whichever was added first
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        log(f"notice: {option_string} is now {self.new}, its name on every command; {option_string} goes in the "
            "next release")
        setattr(namespace, self.dest, values)


def run_id(task: str, base: str) -> str:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{task}-{base}"


def prepare_output_dir(path: Path) -> None:
    """Results go to a directory that can be made and written now, before any data is read."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UserError(f"cannot write results to {path}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def output_dir_for(path: Path):
    """prepare_output_dir for a run, and the folders it made removed again at the end where the run left
    them empty: a run refused after the check (bad data, a backend missing) leaves no folder behind."""
    made = [folder for folder in (path, *path.parents) if not folder.exists()]  # deepest first
    prepare_output_dir(path)
    try:
        yield path
    finally:
        for folder in made:
            with contextlib.suppress(OSError):  # only an empty folder can be removed
                folder.rmdir()


def make_config(cls, **values):
    try:
        return cls(**values)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def figure(value) -> str:
    return "-" if value is None else f"{value:.4g}" if abs(value) < 1000 else f"{value:.1f}"
