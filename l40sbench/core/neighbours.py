"""Who else used the machine while a phase was timed: other processes' CPU time (from /proc), the share of
CPU time the hypervisor gave to other tenants (steal, /proc/stat), and the other processes on the run's GPUs
(NVML, through the telemetry source). Read at each phase's start and end; the arithmetic is pure.

Two-speed epochs once measured on this kind of machine (65 and 120 s in one run, nothing else running in the
VM) came from one or the other; the record names which.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
# A process that took a tenth of the machine's CPU time during a phase (wall x cores; 0.2 of a core on two)
# slows a run that uses every core by about as much: past the few per cent quiet epochs drift here.
NEIGHBOUR_CPU_SHARE = 0.10
# Steal on a quiet host of this kind was 0.6 % of CPU time over 84 minutes; 5 % is eight times that, the size
# of slowdown the stability rules otherwise read as noise (docs/trust.md).
STEAL_SHARE = 0.05
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_line(stat_text: str) -> list[int]:
    """The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal (ticks)."""
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            return [int(v) for v in line.split()[1:9]]
    return []


def steal_share(before: list[int], after: list[int]) -> float | None:
    """Steal's share of the CPU time that passed between two cpu lines (the eighth field over all eight)."""
    if len(before) < 8 or len(after) < 8:
        return None
    deltas = [b - a for a, b in zip(before, after)]
    total = sum(deltas)
    return deltas[7] / total if total > 0 else None


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    name: str
    cpu_ticks: int
    started: int  # ticks after boot: with the pid, who it is (a kernel worker renames itself as it works)


def parse_stat(text: str) -> Process | None:
    """/proc/PID/stat: the name sits in parentheses and may hold spaces; utime and stime are fields 14 and 15,
    starttime field 22."""
    try:
        head, rest = text.rsplit(")", 1)
        pid, name = head.split(" (", 1)
        fields = rest.split()  # from field 3 on
        return Process(int(pid), int(fields[1]), name, int(fields[11]) + int(fields[12]), int(fields[19]))
    except (ValueError, IndexError):
        return None


def processes(root: Path = PROC) -> dict[int, Process]:
    found = {}
    for entry in root.iterdir() if root.is_dir() else ():
        if entry.name.isdigit():
            try:
                process = parse_stat((entry / "stat").read_text())
            except OSError:  # it ended while being read
                continue
            if process is not None:
                found[process.pid] = process
    return found


def own_tree(found: dict[int, Process], me: int) -> set[int]:
    """`me` and its descendants: the run's own processes (its runtime and LoadGen children)."""
    mine, grew = {me}, True
    while grew:
        grew = False
        for p in found.values():
            if p.ppid in mine and p.pid not in mine:
                mine.add(p.pid)
                grew = True
    return mine


def busy_others(before: dict[int, Process], after: dict[int, Process], mine: set[int]) -> dict[int, tuple]:
    """pid -> (name, CPU seconds) of every other process that used CPU between the two snapshots (one born in
    between counts all its time)."""
    used = {}
    for pid, p in after.items():
        if pid in mine:
            continue
        earlier = before.get(pid)
        ticks = p.cpu_ticks - (earlier.cpu_ticks if earlier is not None and earlier.started == p.started else 0)
        if ticks > 0:
            used[pid] = (p.name, ticks / TICKS)
    return used


@dataclass
class Snapshot:
    seconds: float
    cpu: list[int]
    processes: dict[int, Process]
    gpu_processes: list[dict] = field(default_factory=list)


class Watch:
    """Snapshots at a phase's start and end, and what happened between them (`between`)."""

    def __init__(self, gpu_processes: Callable[[], list[dict]] | None = None, root: Path = PROC,
                 cores: int | None = None, me: int | None = None):
        self._gpu, self._root = gpu_processes, root
        self._cores = cores or os.cpu_count() or 1
        self._me = os.getpid() if me is None else me

    def snapshot(self, seconds: float) -> Snapshot:
        try:
            stat = (self._root / "stat").read_text()
        except OSError:
            stat = ""
        gpu: list[dict] = []
        if self._gpu is not None:
            try:
                gpu = self._gpu()
            except Exception as exc:  # NVML may refuse the process list (permissions, MIG): say so, run on
                gpu = [{"error": f"{type(exc).__name__}: {exc}"}]
        return Snapshot(seconds, cpu_line(stat), processes(self._root), gpu)

    def between(self, start: Snapshot, end: Snapshot) -> dict:
        """The phase's neighbours: steal share, other processes' CPU time (those over NEIGHBOUR_CPU_SHARE of the
        machine named), the other processes seen on the run's GPUs, and the reasons they make it unstable."""
        mine = own_tree(end.processes, self._me) | own_tree(start.processes, self._me)
        capacity = max(end.seconds - start.seconds, 1e-9) * self._cores
        others = busy_others(start.processes, end.processes, mine)
        named = sorted(((pid, name, cpu) for pid, (name, cpu) in others.items()
                        if cpu >= NEIGHBOUR_CPU_SHARE * capacity), key=lambda x: -x[2])
        steal = steal_share(start.cpu, end.cpu)
        # one entry per process and board, though the window's two ends both saw it
        gpu = list({(p["pid"], p.get("board")): p for p in start.gpu_processes + end.gpu_processes
                    if "pid" in p and p["pid"] not in mine}.values())
        seen_here = [p for p in gpu if (self._root / str(p["pid"])).exists()]
        block = {"cpu_seconds_others": sum(cpu for _, cpu in others.values()),
                 "cpu_share_others": sum(cpu for _, cpu in others.values()) / capacity,
                 "steal_share": steal,
                 "busy_processes": [{"pid": pid, "name": name, "cpu_seconds": cpu, "share": cpu / capacity}
                                    for pid, name, cpu in named],
                 "gpu_processes": gpu, "limits": {"neighbour_cpu_share": NEIGHBOUR_CPU_SHARE,
                                                  "steal_share": STEAL_SHARE}}
        errors = [p["error"] for p in start.gpu_processes + end.gpu_processes if "error" in p]
        if errors:
            block["gpu_processes_error"] = errors[0]
        reasons = [f"{name} (pid {pid}) used {100 * cpu / capacity:.0f} % of the machine's CPU time"
                   for pid, name, cpu in named]
        if steal is not None and steal >= STEAL_SHARE:
            reasons.append(f"the hypervisor gave {100 * steal:.0f} % of the CPU time to other tenants (steal)")
        reasons += [f"pid {p['pid']} on GPU {p['board']} ({p.get('memory_mb') or 0:.0f} MB)" for p in
                    {p["pid"]: p for p in seen_here}.values()]
        if len(gpu) > len(seen_here):
            block["gpu_processes_note"] = ("processes NVML lists whose pid this process cannot see (another PID "
                                           "namespace, as in containers): recorded, not judged, since one may be "
                                           "this run itself")
        return {**block, "reasons": reasons}
