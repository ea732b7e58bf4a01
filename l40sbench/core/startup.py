"""Time to first step: from the command's start (and the process's, where it was started for this one
command) to the first training step, by part: what a rented machine bills before any work the studies time."""

from __future__ import annotations

import time
from collections.abc import Callable

from l40sbench.core.timing import Clock


def process_age_seconds(stat: str = "/proc/self/stat", uptime: str = "/proc/uptime") -> float | None:
    """Seconds since this process started (Linux's /proc, 10 ms resolution); None where it cannot be read."""
    import os
    from pathlib import Path

    try:
        started_ticks = int(Path(stat).read_text().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        return float(Path(uptime).read_text().split()[0]) - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class CommandClock:
    """When the running command began: `start()` where the CLI's main() is entered; where the process was
    started for this one command (`whole_process`: the console script, `python -m l40sbench`), also the
    process's age then, the interpreter's start and the CLI's imports. Startup reads both."""

    started: float | None = None
    before_main_seconds: float | None = None
    whole_process = False

    @classmethod
    def start(cls, clock: Clock = time.perf_counter) -> None:
        cls.started = clock()
        cls.before_main_seconds = process_age_seconds() if cls.whole_process else None


class Startup:
    """The time from the command's start (CommandClock) to the first training step, by part: what a rented
    machine bills before any work that the studies time. mark(part) ends a part; finish() sums them."""

    def __init__(self, clock: Clock = time.perf_counter):
        self._clock = clock
        self._last = CommandClock.started if CommandClock.started is not None else self._clock()
        self.parts: dict[str, float] = {}
        if CommandClock.before_main_seconds is not None:
            self.parts["the interpreter's start and the CLI's imports"] = CommandClock.before_main_seconds
        self.mark("flags and checks")
        self.block: dict = {}

    def mark(self, part: str) -> None:
        """Ends `part` now (a part named twice adds up)."""
        now = self._clock()
        self.parts[part] = self.parts.get(part, 0.0) + now - self._last
        self._last = now

    def finish(self, log: Callable[[str], None]) -> None:
        total = sum(self.parts.values())
        began = ("the process's start (/proc/self/stat)" if CommandClock.before_main_seconds is not None
                 else "the CLI's main() (called in a process started for other work: its start is not counted)")
        self.block = {"seconds": total, "parts_seconds": dict(self.parts), "from": began}
        log(f"time to first step: {total:.1f} s (" + ", ".join(f"{name} {seconds:.1f}"
                                                             for name, seconds in self.parts.items()) + ")")
