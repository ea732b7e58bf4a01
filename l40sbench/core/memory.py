"""Memory, measured and available, in one convention for every record: the most any one device held at once
(a GPU: its allocator's peak; the CPU: the process's peak resident set, what the kernel's out-of-memory killer
counts), and what a run may use here (a GPU's memory, or the host RAM available now within its cgroup)."""

from __future__ import annotations

import resource
from pathlib import Path

PEAK_MEMORY = "the most any one device held at once (GPU: its allocator's peak; CPU: the process's peak resident set)"
# The memory controller's root, limit and usage files, cgroup v2 then v1 (core.child makes its children's there)
CGROUPS = ((2, Path("/sys/fs/cgroup"), "memory.max", "memory.current"),
           (1, Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes", "memory.usage_in_bytes"))
CGROUP_FILES = tuple(root / limit for _, root, limit, _ in CGROUPS)
CGROUP_USED = tuple(root / used for _, root, _, used in CGROUPS)


def host_peak_mb() -> float:
    """This process's peak resident set, MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def block(device_peak_mb: float | None) -> dict:
    """A record's `memory` block: the device allocator's peak where the backend keeps one (a GPU), else this
    process's peak resident set, and which of the two it counts."""
    if device_peak_mb:
        return {"peak_mb": round(device_peak_mb, 1), "counts": "the GPU allocator's peak on the busiest device"}
    return {"peak_mb": round(host_peak_mb(), 1), "counts": "the process's peak resident set (host RAM)"}


def _number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # cgroup v2 writes "max" for no limit


def host_available_mb(meminfo: Path = Path("/proc/meminfo"), cgroup_files=CGROUP_FILES,
                      cgroup_used=CGROUP_USED) -> tuple[float, str]:
    """What a new process may hold here before the kernel kills it, MiB, and where that figure comes from:
    MemAvailable, or less where this process's cgroup caps memory (a container's limit)."""
    fields = {}
    for line in meminfo.read_text().splitlines():
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0]) / 1024 if rest.split() else 0.0
    available = fields.get("MemAvailable", fields.get("MemTotal", 0.0))
    said = f"host RAM available now ({available / 1024:.1f} of {fields.get('MemTotal', 0.0) / 1024:.1f} GiB)"
    for limit_file, used_file in zip(cgroup_files, cgroup_used):
        limit = _number(limit_file)
        if limit is not None and limit < 2**60:
            left = (limit - (_number(used_file) or 0)) / 2**20
            if left < available:
                return left, f"the container's memory limit ({limit / 2**30:.1f} GiB, {left / 1024:.1f} GiB left)"
    return available, said
