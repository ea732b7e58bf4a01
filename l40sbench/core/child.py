"""Runs one child process (a sweep configuration, a runtime's timing) under a time limit and a memory cap.

The cap is what makes out-of-memory reproducible on a machine without a GPU.
It is enforced twice where the kernel allows: a cgroup memory limit (v2
memory.max or v1 memory.limit_in_bytes, in a cgroup made under this
process's own, with swap shut off beside it), and always a watchdog thread that reads the child's resident
set from /proc every 20 ms and kills it when it passes the cap. An
address-space limit (RLIMIT_AS) would not do: TensorFlow reserves several GB of
address space it never touches.
"""

from __future__ import annotations

import ctypes
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from l40sbench.errors import first_line

POLL_SECONDS = 0.02
PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass(frozen=True)
class Outcome:
    """How a child ended. `over_memory` is True when the cap ended it (watchdog or cgroup)."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    over_memory: bool
    peak_rss_mb: float
    enforcement: str


def error_line(outcome: Outcome) -> str | None:
    """The error a child died of: its last 'SomethingError: ...' line on stderr, None when it printed none."""
    return last_error(outcome.stderr)


def last_error(text: str) -> str | None:
    """The last 'SomethingError: ...' line of a process's output, None when it printed none."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line.split(":", 1)[0]]
    return first_line(errors[-1]) if errors else None


def resident_mb(pid: int) -> float | None:
    """The process's resident set (VmRSS) in MiB, None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


class _Cgroup:
    """A memory-limited cgroup under this process's own, or None when the kernel does not let us make one."""

    def __init__(self, path: Path, version: int):
        self.path = path
        self.version = version

    @classmethod
    def create(cls, limit_bytes: int) -> _Cgroup | None:
        name = f"l40sbench-{os.getpid()}-{time.monotonic_ns()}"
        from l40sbench.core.memory import CGROUPS

        for version, root, limit_file, _ in CGROUPS:
            own = _own_cgroup(version)
            if own is None or not (root / own.lstrip("/")).is_dir():
                continue
            path = root / own.lstrip("/") / name
            try:
                path.mkdir()
            except OSError:
                continue
            if not (path / limit_file).exists():  # not a cgroup filesystem (or no memory controller here)
                _remove_plain_dir(path)
                continue
            try:
                (path / limit_file).write_text(str(limit_bytes))
                _no_swap(path, version, limit_bytes)
                return cls(path, version)
            except OSError:
                path.rmdir()
        return None

    def enter(self) -> None:
        """Moves the calling process (the child, before exec) into the cgroup."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def oom_killed(self) -> bool:
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def remove(self) -> None:
        for _ in range(50):  # the kernel frees the cgroup a moment after its last process exits
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)


def _no_swap(path: Path, version: int, limit_bytes: int) -> None:
    """No swap for the child: at its cap it is killed as out of memory, not swapped into a slow "ok" row.

    v2: memory.swap.max 0. v1: memory and swap together (memsw) capped at the memory cap, and
    swappiness 0. A kernel without swap accounting has neither file, and then no swap to limit.
    """
    if version == 2:
        if (path / "memory.swap.max").exists():
            (path / "memory.swap.max").write_text("0")
        return
    (path / "memory.swappiness").write_text("0")
    if (path / "memory.memsw.limit_in_bytes").exists():
        (path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))


def _remove_plain_dir(path: Path) -> None:
    for item in path.iterdir():
        item.unlink()
    path.rmdir()


def _own_cgroup(version: int) -> str | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (version == 2 and controllers == "") or (version == 1 and "memory" in controllers.split(",")):
            return path
    return None


def run(command: list[str], *, timeout_s: float | None, memory_limit_mb: float | None,
        env: dict | None = None, try_cgroup: bool = True,
        tick: tuple[float, Callable[[], None]] | None = None, cwd: Path | None = None) -> Outcome:
    """Runs command to completion, the time limit or the memory cap, whichever comes first.

    try_cgroup=False leaves the cap to the watchdog alone (what a machine without
    a writable cgroup gets; the tests use it to check that path here). tick=(seconds, call)
    calls call() every that many seconds while the child runs (progress for the user).
    """
    cgroup = _Cgroup.create(int(memory_limit_mb * 2**20)) if memory_limit_mb and try_cgroup else None
    enforcement = "none" if not memory_limit_mb else (
        f"cgroup v{cgroup.version} + watchdog" if cgroup else "watchdog")
    started = time.perf_counter()
    def before_exec() -> None:
        _die_with_parent()
        if cgroup:
            cgroup.enter()

    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
        preexec_fn=before_exec, start_new_session=True,
    )
    state = {"peak": 0.0, "over": False}
    stop = threading.Event()

    next_tick = started + (tick[0] if tick else math.inf)

    def watch() -> None:
        nonlocal next_tick
        while not stop.wait(POLL_SECONDS):
            rss = resident_mb(process.pid)
            if rss is None:
                return
            if time.perf_counter() >= next_tick:
                next_tick += tick[0]
                tick[1]()
            state["peak"] = max(state["peak"], rss)
            if memory_limit_mb and rss > memory_limit_mb:
                state["over"] = True
                _kill(process)
                return

    watchdog = threading.Thread(target=watch, daemon=True)
    watchdog.start()
    timed_out = False
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(process)
        stdout, stderr = process.communicate()
    except BaseException:  # Ctrl-C in the parent: the child goes too, then the parent stops
        _kill(process)
        process.communicate()
        raise
    finally:
        stop.set()
        watchdog.join()
        over = state["over"] or bool(cgroup and cgroup.oom_killed())
        if cgroup:
            cgroup.remove()
    return Outcome(process.returncode, stdout, stderr, time.perf_counter() - started, timed_out, over,
                   state["peak"], enforcement)


def _die_with_parent() -> None:
    """Asks Linux to SIGKILL this (child) process when the sweep that started it dies, even by SIGKILL."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
