"""Command line: argument parsing and talking to the user, nothing else.

One module per command, each with `add(subparsers)` (its parser) and the function it runs; the
flags several commands share live in `common`. Each command builds a config and calls one library
function. TensorFlow is imported only inside the commands that train, so --help starts instantly.
"""

from __future__ import annotations

import argparse
import os
import sys

from l40sbench.backends.gpu_gate import SET_BY_CHOICE, TF_LOG_DEFAULT, TF_LOG_VARIABLE
from l40sbench.cli import classify, compare, cost, datasets, detect, env, infer, report, study, synthetic
from l40sbench.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, Parser, log
from l40sbench.errors import UserError

# In the order `--help` lists them.
COMMANDS = (env, study, classify, detect, synthetic, cost, compare, report, infer, datasets)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="l40sbench",
        description=(
            "Honest fine-tuning and inference timings for image models, measured the same way on "
            "every machine. Results go to results/<run-id>/result.json and result.csv."
        ),
    )
    from l40sbench import __version__

    parser.add_argument("--version", action="version", version=f"l40sbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    from l40sbench.core.startup import CommandClock

    CommandClock.start()  # time to first step counts from here (and from the process's start before it)
    os.environ.setdefault(TF_LOG_VARIABLE, TF_LOG_DEFAULT)
    args = build_parser().parse_args(argv)
    before = {name: os.environ.get(name) for name in SET_BY_CHOICE}  # one command's device choice, not the next's
    try:
        return args.func(args)
    except UserError as exc:
        print(f"l40sbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a full disk where no command said more (classify and detect say what they kept)
        from l40sbench.core.records import disk_full, full_disk_line

        if not disk_full(exc):
            raise
        print(f"l40sbench: error: {full_disk_line(exc, None)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        from l40sbench.core.stops import what

        log(what())
        return EXIT_INTERRUPTED
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run() -> None:
    """The console script and `python -m l40sbench`: main(), then the process's exit.

    After an interrupt (Ctrl-C, SIGTERM, SIGHUP: core.stops) everything measured is on disk, but TensorFlow's own threads (an input pipeline's,
    a training loop's) may still be running: tearing the interpreter down under them can abort the process
    (SIGABRT instead of exit 130, under load). So an interrupted
    run leaves at once, its output flushed.
    """
    from l40sbench.core import stops
    from l40sbench.core.startup import CommandClock

    CommandClock.whole_process = True  # this process runs this one command: its start counts
    stops.install()  # SIGTERM and SIGHUP stop it as Ctrl-C does: what was measured is saved
    code = main()
    if code == EXIT_INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
